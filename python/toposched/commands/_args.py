"""Argument types shared by the subcommands (not itself a command: the name starts with _).

Each type checks its value completely when the command line is read, before any work:
a bad value is a usage error (exit status 2) naming the flag (docs/reliability.md).
"""

from __future__ import annotations

import argparse

from ..limits import MAX_COUNT, SEED_MAX


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    """An integer of at least 1 and below 2^31, for argparse ``type=``."""
    v = _whole(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    if v >= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be below 2^31, got {v}")
    return v


def seed(text: str) -> int:
    """A random seed: 0 to 2^64 - 1 (what the engine's generators take)."""
    v = _whole(text)
    if not 0 <= v <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2^64 - 1, got {v}")
    return v


def switches(text: str) -> str:
    """Slurm ``--switches`` as ``N`` or ``N@SECONDS``, checked, kept as written."""
    from ..simulate import parse_switches

    try:
        parse_switches(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def output_dir(text: str) -> str:
    """A directory name for results: not empty (the check that it can be written, and
    holds nothing else, runs before the work: files.check_output_dir)."""
    if text.strip() == "":
        raise argparse.ArgumentTypeError("expected a directory name, got an empty one")
    return text

"""Argument types shared by the subcommands (not itself a command: the name starts with _)."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer of at least 1, for argparse ``type=``."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v

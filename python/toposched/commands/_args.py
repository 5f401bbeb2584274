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


def add_run_options(parser: argparse.ArgumentParser, *, seed_help: str = "seed of the random policy (default: 0)") -> None:
    """The engine and policy settings every replay command accepts (simulate, compare):
    one definition, so no command silently lacks one. Resolved by :func:`run_options`.

    Flags whose value a ``--profile`` may set default to None here: an explicit flag
    overrides the profile, the profile overrides RunConfig's default."""
    from ..profiles import PROFILES

    g = parser.add_argument_group("engine and policy settings (docs/semantics.md)")
    g.add_argument("--profile", choices=tuple(PROFILES), help="set a published system's values at once; flags given override it (flux-sc18: the SC18 flux plugin = --queue-depth 128 --flux-window --reserved-tiers-always --leaf-order flux-topo --tie-break name)")
    g.add_argument("--queue-order", metavar="MODULE:CLASS", help="reorder the queue at every pass with a QueueOrder written in Python (docs/python-policies.md)")
    g.add_argument("--seed", type=seed, help=seed_help)
    g.add_argument("--leaf-order", choices=("flux-topo", "paper"), help="isolated: T3 leaf order (default: flux-topo, the published code)")
    g.add_argument("--tie-break", choices=("name", "index"), help="isolated: how equal availabilities are ordered (default: name)")
    g.add_argument("--slurm-profile", choices=("current", "classic", "select-linear", "cons-tres"), help="slurm-tree: leaf choice of Slurm 21.08+ select/cons_tres (current, default), 17.02 (classic), 22.05 select/linear (select-linear) or 22.05 select/cons_tres (cons-tres)")
    g.add_argument("--switches", type=switches, metavar="N[@SECONDS]", help="Slurm --switches for every job: wait up to SECONDS (default 300) for an allocation on at most N leaves")
    g.add_argument("--flux-window", action="store_const", const=True, help="easy+isolated: reservation window as the flux plugin records it (+2 s, inclusive)")
    g.add_argument("--reserved-tiers-always", action="store_const", const=True, help="easy+isolated: reserved leaves/pods closed to spanning jobs even if they end before the reservation")
    g.add_argument("--queue-depth", type=positive_int, help="consider at most this many queued jobs per pass (default: all; the flux plugin used 128)")
    g.add_argument("--event-order", choices=("per-instant", "per-event"), help="per-instant (default): at each instant all ends, then all submits, then one pass; per-event: a pass after each submit, then after each end in start order (the pyss simulator's order)")
    g.add_argument("--network", metavar="SPEC", help="network interference model: job ends follow predicted slowdowns (bins | random | column:NAME | KEY=VALUE,... | spec.json; docs/network.md)")
    kill = g.add_mutually_exclusive_group()
    kill.add_argument("--run-on", dest="kill_at_limit", action="store_const", const=False, help="let jobs run past their requested time (default: killed at it, unless the SWF header says AllowOveruse: yes)")
    kill.add_argument("--kill-at-limit", dest="kill_at_limit", action="store_const", const=True, help="kill jobs at their requested time even when the log's header says AllowOveruse: yes")
    g.add_argument("--check-invariants", action="store_true", help="check the interference-free invariant after every pass (isolated, or a policy written in Python)")


#: RunConfig fields set from flags of :func:`add_run_options` (flag dest -> field).
_RUN_FIELDS = {
    "queue_order": "queue_order",
    "leaf_order": "leaf_order",
    "tie_break": "tie_break",
    "slurm_profile": "slurm_profile",
    "switches": "switches",
    "flux_window": "flux_window",
    "reserved_tiers_always": "reserved_tiers_always",
    "queue_depth": "queue_depth",
    "event_order": "event_order",
    "network": "network",
    "kill_at_limit": "kill_at_walltime",
    "check_invariants": "check_interference_free",
}


def run_options(args: argparse.Namespace) -> dict:
    """RunConfig fields (without queue and alloc) from the flags of :func:`add_run_options`:
    the profile's values, then every flag actually given."""
    from ..profiles import profile_settings

    out = profile_settings(args.profile)
    for dest, name in _RUN_FIELDS.items():
        value = getattr(args, dest)
        if value is not None and not (dest == "check_invariants" and value is False):
            out[name] = value
    out["seed"] = args.seed if args.seed is not None else 0
    return out
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

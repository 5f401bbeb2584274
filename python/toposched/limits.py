"""The documented limits every input is checked against (docs/reliability.md).

They exist so that a bad value stops a run with one clear line naming it, before it can
make a replay of centuries, an array of gigabytes or an overflow in the engine.
"""

from __future__ import annotations

from ._core import NORMALIZE_LIMITS as _NATIVE

# The limits a log's values are checked against are defined once, in Rust
# (crates/toposched-io/src/limits.rs), where the native normalize applies them; the
# Python readers take the same values from there.

#: Earliest and latest absolute time a log may give (Unix seconds): 1970-01-01 up to,
#: not including, 2200-01-01 UTC.
EPOCH_MIN_S: int = _NATIVE["EPOCH_MIN_S"]
EPOCH_MAX_S: int = _NATIVE["EPOCH_MAX_S"]

#: Longest span of submit times, and longest run or requested time, of one log unless
#: ``--allow-long-span``: 50 years (real logs cover a few years; a value beyond this is
#: almost always a corrupt field, e.g. a year typed 2300).
MAX_SPAN_S: int = _NATIVE["MAX_SPAN_S"]

#: With ``--allow-long-span``: the whole time window.
MAX_SPAN_LONG_S: int = _NATIVE["MAX_SPAN_LONG_S"]

#: Largest time any field may hold (the engine's own limit, 2^53 s).
MAX_TIME_S: int = _NATIVE["MAX_TIME_S"]

#: Counts (processors, nodes) must be below this (2^31).
MAX_COUNT: int = _NATIVE["MAX_COUNT"]

#: Job ids, and any integer a reader takes from a log, must fit a signed 64-bit integer.
MAX_INT64 = 2**63 - 1

#: Largest fabric ``fattree:`` parameters may describe (nodes), and largest single
#: parameter: bigger than any machine built (the largest have about 160,000 nodes), small
#: enough to fit in memory (a 1,000,000-node fabric takes about 500 MB and 3 s to build).
MAX_FABRIC_NODES = 1_000_000

#: ``--seed`` range: what the engine's random generators take (unsigned 64-bit).
SEED_MAX = 2**64 - 1


def years(seconds: int) -> str:
    """A span in years, for messages."""
    return f"{seconds / (365.25 * 86_400):.1f} years"

#: Slurm's default cap on the wait of ``--switches=N@WAIT`` (SchedulerParameters
#: ``max_switch_wait``): the wait when none is given, in ``--switches`` and in sacct logs.
SLURM_MAX_SWITCH_WAIT_S = 300

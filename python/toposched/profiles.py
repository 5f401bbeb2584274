"""Named sets of engine and policy settings (``--profile NAME``): the values a published
system used, set at once. A flag given on the command line overrides its profile value.

``flux-sc18`` is the SC18 paper's flux-sched plugin (branch ``topo`` of the authors'
flux-sched, research/allocation-algorithms.md §2.6): it looks at the first 128 queued jobs
per pass, records the reservation window 2 s after the expected end with an inclusive
overlap test, and closes the reservation's leaves/pods to spanning backfill jobs whatever
their end time. Its T3 leaf order is the published code's (``flux-topo``), ties broken
by name.
"""

from __future__ import annotations

from typing import Any

PROFILES: dict[str, dict[str, Any]] = {
    "flux-sc18": {
        "queue_depth": 128,
        "flux_window": True,
        "reserved_tiers_always": True,
        "leaf_order": "flux-topo",
        "tie_break": "name",
    },
}


def profile_settings(name: str | None) -> dict[str, Any]:
    """The RunConfig fields a profile sets ({} for None)."""
    if name is None:
        return {}
    from .errors import InputError

    if name not in PROFILES:
        raise InputError("--profile", f"unknown profile {name!r}; known: {', '.join(PROFILES)}")
    return dict(PROFILES[name])


#: The flag of each RunConfig field a profile may set.
PROFILE_FLAGS = {
    "queue_depth": "--queue-depth",
    "flux_window": "--flux-window",
    "reserved_tiers_always": "--reserved-tiers-always",
    "leaf_order": "--leaf-order",
    "tie_break": "--tie-break",
}


def profile_flags(name: str | None) -> dict[str, Any]:
    """The flags a profile stands for, with their values (True for a switch): what the
    commands check, as if given, against the policies of the run."""
    return {PROFILE_FLAGS[k]: v for k, v in profile_settings(name).items()}

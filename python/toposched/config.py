"""RunConfig: the policies and engine settings of one replay (all recorded in the summary),
and the options it passes to the core's policy registry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import InputError


@dataclass(frozen=True)
class RunConfig:
    """Policies and engine settings of one replay (all recorded in the summary)."""

    queue: str = "easy"
    #: A built-in name, ``"module:Class"``, or an AllocationPolicy instance.
    alloc: Any = "linear"
    #: None (submit order), ``"module:Class"`` or a QueueOrder instance.
    queue_order: Any = None
    seed: int = 0
    #: Kill jobs at their requested time. None (default): yes, unless the log says jobs
    #: could run past it (SWF header ``AllowOveruse: yes``); the summary says which applied.
    kill_at_walltime: bool | None = None
    queue_depth: int | None = None
    #: ``"per-instant"`` (default) or ``"per-event"`` (pyss's order; docs/semantics.md).
    event_order: str = "per-instant"
    leaf_order: str = "flux-topo"
    tie_break: str = "name"
    slurm_profile: str = "current"
    #: Slurm ``--switches=N@WAIT`` for every job ("N" or "N@SECONDS"); per-job values in
    #: the workload's ``max_leaves``/``switch_wait_s`` extra columns take precedence.
    switches: str | None = None
    flux_window: bool = False
    reserved_tiers_always: bool = False
    check_interference_free: bool = False
    record_reservations: bool = False
    utilization_step_s: int = 60
    #: Network model closed loop (``--network SPEC``, docs/network.md); None = off.
    network: str | None = None
    #: Options of registered policies that have no field above (option name -> value; the
    #: names are those of ``toposched.registry.options()``), e.g. a new policy's. Left out
    #: of the summary and of sweep run ids when empty.
    policy_options: dict[str, Any] = field(default_factory=dict)


def policy_options(config: RunConfig) -> dict[str, Any]:
    """The options the run's own queue and allocation policies take, from RunConfig's
    fields (``leaf_order``, ``seed``, ...) or ``policy_options``. An entry of
    ``policy_options`` that the run's policies do not declare is an error naming the policy
    it belongs to."""
    from . import registry

    alloc = config.alloc if isinstance(config.alloc, str) else None
    for name in config.policy_options:
        o = registry.option(name)
        if o is None:
            known = ", ".join(x.name for x in registry.options())
            raise InputError("policy_options", f"unknown policy option {name!r}; options are: {known}")
        if o.policy not in (config.queue, alloc):
            raise InputError(o.flag, f"an option of the {'queue' if o.kind == 'queue' else 'allocation'} policy {o.policy}, which this run does not use")
    out: dict[str, Any] = {}
    for o in registry.options_of((config.queue, alloc)):
        if o.name in config.policy_options:
            value = config.policy_options[o.name]
        else:
            value = getattr(config, o.name, None)
        if value is not None:
            out[o.name] = value
    return out

"""RunConfig: the policies and engine settings of one replay (all recorded in the summary),
and the options it passes to the core's policy registry."""

from __future__ import annotations

import numbers
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

    def __post_init__(self) -> None:
        """The engine settings' types and ranges, as their flags check them: from Python,
        kill_at_walltime="no" was true, queue_depth=0 ran, and a negative queue depth was
        reported as a bad --seed. Policy options are checked by their policies."""
        from .limits import MAX_COUNT, SEED_MAX

        def whole(name: str, lo: int, hi: int, flag: str) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise InputError("RunConfig", f"expected a whole number, got {v!r} (as {flag} takes it)", field=name)
            if not lo <= int(v) <= hi:
                raise InputError("RunConfig", f"must be between {lo} and {hi}, got {v} (as {flag} takes it)", field=name)
            # a NumPy integer (seed=np.int64(3), from np.arange) was taken, then refused by
            # the engine as "expected a bool, number or string" or by json when written
            object.__setattr__(self, name, int(v))

        whole("seed", 0, SEED_MAX, "--seed")
        if self.queue_depth is not None:
            whole("queue_depth", 1, MAX_COUNT - 1, "--queue-depth")
        whole("utilization_step_s", 1, MAX_COUNT - 1, "utilization_step_s")
        for name in ("kill_at_walltime", "flux_window", "reserved_tiers_always", "check_interference_free", "record_reservations"):
            v = getattr(self, name)
            if _numpy_scalar(v) and isinstance(v.item(), bool):
                object.__setattr__(self, name, v.item())
            elif not isinstance(v, bool) and not (name == "kill_at_walltime" and v is None):
                raise InputError("RunConfig", f"expected True or False, got {v!r}", field=name)
        for name in ("queue", "event_order", "leaf_order", "tie_break", "slurm_profile"):
            if not isinstance(getattr(self, name), str):
                raise InputError("RunConfig", f"expected a string, got {getattr(self, name)!r}", field=name)
        if self.event_order not in ("per-instant", "per-event"):
            raise InputError("RunConfig", f"expected 'per-instant' or 'per-event', got {self.event_order!r}", field="event_order")
        for name in ("switches", "network"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, str):
                raise InputError("RunConfig", f"expected a string or None, got {v!r}", field=name)
        if isinstance(self.network, str) and self.network.replace(",", "").strip() == "":
            # as --network refuses it: an empty spec read as "no model" ran without a word
            raise InputError("RunConfig", f"expected a network SPEC (bins, random, heavy, column:NAME, KEY=VALUE,... or a spec file), got {self.network!r}; None runs without the model", field="network")
        if isinstance(self.queue_order, str) and ":" not in self.queue_order or isinstance(self.queue_order, (bool, int, float)):
            # a name such as "sjf" reached the engine, which refused it as an internal error
            raise InputError("RunConfig", f"expected None, a 'module:Class' string or a QueueOrder instance (docs/python-policies.md), got {self.queue_order!r}; the queue policy itself is queue=", field="queue_order")
        if not isinstance(self.policy_options, dict):
            raise InputError("RunConfig", f"expected a dict of option name -> value, got {self.policy_options!r}", field="policy_options")
        given = self.policy_options.get("seed", self.seed)
        if given != self.seed and not (_numpy_scalar(given) and given.item() == self.seed):
            # the policy's option won and the summary recorded both: one seed, given once
            raise InputError("RunConfig", f"seed={self.seed} and policy_options['seed']={given!r} disagree (the policy ran with the second, the summary recorded both): give the seed once, as RunConfig(seed=...)", field="policy_options")
        if any(_numpy_scalar(v) for v in self.policy_options.values()):
            # NumPy scalars as the Python values they hold (the engine takes bool, int, float, str)
            object.__setattr__(self, "policy_options", {k: v.item() if _numpy_scalar(v) else v for k, v in self.policy_options.items()})


def _numpy_scalar(v: Any) -> bool:
    """A NumPy scalar (np.int64(3), np.True_), told without importing NumPy."""
    return type(v).__module__ == "numpy" and callable(getattr(v, "item", None))


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
            why = registry.check_type(o, value)
            if why is not None:
                raise InputError(o.flag, why)
            if o.type == "integer" and isinstance(value, int) and not isinstance(value, bool):
                why = registry.check_integer(o, value)
                if why is not None:  # else the engine refuses it naming no flag
                    raise InputError(o.flag, why)
            elif o.type == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
                why = registry.check_number(o, float(value))
                if why is not None:  # the schema's range, as the flag and a sweep file check it
                    raise InputError(o.flag, why)
            out[o.name] = value
    weights = [o for o in registry.options_of((config.queue, alloc)) if "priority_weight_" in o.name and out.get(o.name)]
    if config.queue_order is not None and weights:
        # the two orders were mixed: the multifactor order won only in the passes at which
        # a priority recalculation fell, the Python order in all the others
        raise InputError("--queue-order", f"replaces the queue's priority order, so {weights[0].flag} {out[weights[0].name]} would apply only at some passes; give one or the other")
    return out

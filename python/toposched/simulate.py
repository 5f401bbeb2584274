"""Run one replay: build the native Simulation from a RunConfig, step it, and hand its
outcome to :mod:`toposched.results` (tables, summary, files).

>>> from toposched.simulate import RunConfig, simulate
>>> from toposched.topology import load_fabric
>>> from toposched.workload.model import Workload
>>> import numpy as np
>>> w = Workload(columns={"job_id": np.array([1, 2]), "submit_s": np.array([0, 0]),
...     "nodes": np.array([4, 3]), "walltime_s": np.array([100, 100]),
...     "runtime_s": np.array([50, 80]), "procs": np.array([4, 3]), "line": np.array([1, 2])},
...     source="inline", format="test")
>>> r = simulate(w, load_fabric("toy18"), RunConfig(queue="easy", alloc="isolated"))
>>> r.jobs.column("start_s").to_pylist(), r.jobs.column("alloc_class").to_pylist()
([0, 0], [2, 1])
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from .config import RunConfig, policy_options
from .errors import InputError, SimulationError, ToposchedError
from .limits import SLURM_MAX_SWITCH_WAIT_S
from .results import BSLD_TAU_S, SIZE_BINS, Outcome, SimResult, collect
from .topology import Fabric
from .workload.model import ID_COLUMNS, Workload

#: Re-exported: RunConfig and policy_options live in toposched.config, SimResult and the
#: outcome tables in toposched.results (one module per concept; no import cycle with
#: aslogged, which produces the same Outcome record).
__all__ = ["BSLD_TAU_S", "SIZE_BINS", "RunConfig", "SimResult", "kill_at_walltime", "parse_switches", "policy_options", "simulate"]


def simulate(
    workload: Workload,
    fabric: Fabric,
    config: RunConfig = RunConfig(),
    *,
    progress: Callable[[int, int], None] | None = None,
    down_nodes: list[int] | None = None,
) -> SimResult:
    """Replay ``workload`` on ``fabric``.

    ``progress(submitted, total)`` is called between chunks of work. A KeyboardInterrupt
    stops the replay where it is: the result then holds the jobs finished so far and its
    summary says ``"complete": false``.
    """
    # the documented call is simulate(read_trace(path), load_fabric(name), RunConfig(...)):
    # a path, a preset name or a dict there ended in an AttributeError ('str' object has
    # no attribute 'settings')
    if not isinstance(workload, Workload):
        raise TypeError(f"simulate(): workload must be a Workload (toposched.workload.read_trace(path)), got {type(workload).__name__} {workload!r:.60}")
    if not isinstance(fabric, Fabric):
        raise TypeError(f"simulate(): fabric must be a Fabric (toposched.topology.load_fabric(name)), got {type(fabric).__name__} {fabric!r:.60}")
    if not isinstance(config, RunConfig):
        raise TypeError(f"simulate(): config must be a RunConfig (toposched.simulate.RunConfig(queue=..., alloc=...)), got {type(config).__name__} {config!r:.60}")
    down_nodes = checked_down_nodes(down_nodes, fabric)
    if config.alloc == "as-logged":
        from . import aslogged

        if config.network:
            raise InputError("--network", "as-logged replays the log's own start and end times; the network model cannot move them")
        if down_nodes:  # it was ignored: the log's own node lists may name them
            raise InputError("down_nodes", "as-logged replays the log's own node lists; nodes cannot be taken out of them")

        return aslogged.replay_as_logged(workload, fabric, config)
    from . import _core

    from . import policies, registry

    kill, kill_rule = kill_at_walltime(workload, config)
    config = replace(config, kill_at_walltime=kill)
    if config.network and not kill:
        check_overrun(config.network, kill_rule)
    # a policy written in Python and registered under a name runs as its module:Class
    target = registry.python_target(config.alloc) if isinstance(config.alloc, str) else None
    alloc = policies.resolve(target or config.alloc, fabric)
    policies.check_methods(alloc, "select", "nodes, free")
    order = policies.resolve(config.queue_order, fabric) if config.queue_order is not None else None
    if order is not None:
        policies.check_methods(order, "key", "job_id, submit_s, nodes, walltime_s, now_s")
    options = policy_options(config)  # before the construction: its errors name their flag
    sim = new_simulation(_core, fabric, workload, config, options, alloc, order, down_nodes)
    network = None
    if config.network:
        from .network_spec import attach_network

        network = attach_network(sim, workload, config.network)
    total = len(workload)
    complete = True
    try:
        chunk = 20_000
        while not sim.step(chunk):
            if progress is not None:
                progress(sim.submitted, total)
        if progress is not None:
            progress(total, total)
    except KeyboardInterrupt:
        complete = False
    except RuntimeError as exc:
        raise _step_error(workload, _python_select_hint(str(exc), alloc, workload)) from None
    result = collect(Outcome.of_simulation(sim, network), workload, fabric, config, complete)
    result.summary["policy"]["kill_at_walltime_rule"] = kill_rule
    record_down_nodes(result.summary, down_nodes)
    return result


def checked_down_nodes(down_nodes: Any, fabric: Fabric) -> list[int] | None:
    """``down_nodes`` as node ids of ``fabric`` (sorted, each once), or one clear error: -1
    was reported as "a policy option is too large", a name as a TypeError."""
    if down_nodes is None:
        return None
    if isinstance(down_nodes, (str, bytes)) or not hasattr(down_nodes, "__iter__"):
        raise InputError("down_nodes", f"expected a list of node ids (0 to {fabric.n_nodes - 1}), got {down_nodes!r:.60}")
    ids = []
    for n in down_nodes:
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or not 0 <= int(n) < fabric.n_nodes:
            raise InputError("down_nodes", f"{n!r:.40} is not a node id of fabric {fabric.name} (0 to {fabric.n_nodes - 1})")
        ids.append(int(n))
    return sorted(set(ids))


def record_down_nodes(summary: dict[str, Any], down_nodes: list[int] | None) -> None:
    """summary.json says which nodes the run took out (none: as before, no key)."""
    if down_nodes:
        summary["fabric"]["down_nodes"] = down_nodes


def _python_select_hint(message: str, alloc: Any, workload: Workload) -> str:
    """The engine's "jobs still queued when nothing was left running (first: row R)" with
    an allocation policy written in Python: its select answered None for that job on the
    empty machine. Name the job as the log does, and the likely cause."""
    m = re.search(r"still queued when nothing was left running \(first: row (\d+)\)", message)
    if m is None or isinstance(alloc, str) or int(m.group(1)) >= len(workload):
        return message
    row = int(m.group(1))
    nodes = int(workload.columns["nodes"][row])
    return (
        f"{message} (job {int(workload.columns['job_id'][row])}, line {int(workload.columns['line'][row])} of the log, {nodes} node{'s' if nodes != 1 else ''}: "
        f"{type(alloc).__name__}.select({nodes}, free) answered None with every node free; a forgotten return? "
        "A size it can never place is for fits_ever(nodes) to refuse)"
    )


def _step_error(workload: Workload, message: str) -> ToposchedError:
    """An error the engine stopped the replay with. A queue policy refusing a job of the
    log ("queue slurm: job row 0 asks for partition 1; the partitions option defines 2")
    is bad input: it names the log's file and line and the option's flag; anything else
    (a policy written in Python, a caught panic) stays a SimulationError."""
    p = re.match(r"queue (slurm|slurm-bf): partition \d+ names node \d+, the fabric has", message)
    if p:  # a partitions option naming nodes off the fabric: it named no flag
        return InputError("settings", message, hint=f"set with --{'sched-' if p.group(1) == 'slurm-bf' else ''}partitions")
    m = re.match(r"queue ([\w-]+): job row (\d+) ", message)
    if not m or int(m.group(2)) >= len(workload):
        return SimulationError(message)
    line = int(workload.columns["line"][int(m.group(2))])
    from .registry import option

    names = re.findall(r"\bthe (\w+) option\b", message)
    prefix = "sched_" if m.group(1) == "slurm-bf" else ""
    flags = [opt.flag for name in names if (opt := option(prefix + name) or option(name)) is not None]
    return InputError(workload.source, message, line=line if line > 0 else None, hint=f"set with {', '.join(flags)}" if flags else None)


def _construction_error(workload: Workload, message: str) -> InputError:
    """A refusal of the native simulation's constructor: a job row of the log (the file and
    line are named), else a setting (a policy's option out of its range, say: the flag that
    sets it is named, not the log)."""
    if re.match(r"job row \d+ ", message):
        return _input_error(workload, message)
    from .registry import option

    # every option the message names ("leaf_cap must be ...", "priority_weight_age=5 is ...")
    flags = [opt.flag for name in re.findall(r"\b([a-z][a-z0-9_]*)\b", message) if "_" in name and (opt := option(name)) is not None]
    hint = f" (set with {', '.join(dict.fromkeys(flags))})" if flags else ""
    return InputError("settings", message + hint)


def _input_error(workload: Workload, message: str) -> InputError:
    """The engine's refusal of a job row, as an error naming the log's file and line."""
    m = re.match(r"job row (\d+) \(id [^)]*\): field '(\w+)'", message)
    if m and int(m.group(1)) < len(workload):
        line = int(workload.columns["line"][int(m.group(1))])
        return InputError(workload.source, message, line=line if line > 0 else None)
    return InputError(workload.source, message)


def new_simulation(
    _core: Any, fabric: Fabric, workload: Workload, config: RunConfig, options: dict[str, Any], alloc: Any, order: Any, down_nodes: list[int] | None
) -> Any:
    """The native Simulation of ``workload`` (the whole log, or a streamed replay's first
    chunk) under ``config``; its refusals as one-line errors naming the log's line or the
    setting's flag."""
    try:
        return _native_simulation(_core, fabric, workload, config, options, alloc, order, down_nodes)
    except ValueError as exc:
        raise _construction_error(workload, str(exc)) from None
    except OverflowError as exc:
        # RunConfig checks its own fields (seed, queue depth) when it is made: what is left
        # is a policy option beyond the engine's integer, which the error does not name
        raise InputError("settings", f"a number is out of range ({exc}): {_integer_options(options)}") from None
    except RuntimeError as exc:
        raise SimulationError(str(exc)) from None


def _integer_options(options: dict[str, Any]) -> str:
    """The whole-number policy options of a run and their flags, for an overflow message."""
    from .registry import option

    given = []
    for name, value in sorted(options.items()):
        if isinstance(value, int) and not isinstance(value, bool):
            opt = option(name)
            given.append(f"{opt.flag if opt is not None else name} {value}")
    return "one of the policy options given is too large: " + ", ".join(given) if given else "a policy option is too large"


def _native_simulation(
    _core: Any, fabric: Fabric, workload: Workload, config: RunConfig, options: dict[str, Any], alloc: Any, order: Any, down_nodes: list[int] | None
) -> Any:
    cols = workload.columns
    return _core.Simulation(
        fabric.core,
        cols["job_id"],
        cols["submit_s"],
        cols["nodes"],
        cols["walltime_s"],
        cols["runtime_s"],
        queue=config.queue,
        alloc=alloc,
        options=options,
        queue_order=order,
        kill_at_walltime=bool(config.kill_at_walltime),
        queue_depth=config.queue_depth,
        record_reservations=config.record_reservations,
        check_interference_free=config.check_interference_free,
        event_order=config.event_order,
        down=down_nodes,
        **_switch_columns(workload, config),
        # who submitted it where (Workload's id columns): what priority/multifactor reads
        **{c: cols[c] for c in ID_COLUMNS if c in cols},
    )


def kill_at_walltime(workload: Workload, config: RunConfig) -> tuple[bool, str]:
    """Whether jobs are killed at their requested time in this run, and why."""
    if config.kill_at_walltime is not None:
        flag = "--kill-at-limit" if config.kill_at_walltime else "--run-on"
        return config.kill_at_walltime, f"set by the run's settings ({flag})"
    if workload.settings.get("allow_overuse"):
        return False, "the log's header says AllowOveruse: yes (jobs ran past their requested time on that machine); --kill-at-limit forces the kill"
    return True, "default: jobs are killed at their requested time (--run-on lets them run on)"


def check_overrun(network: Any, kill_rule: str) -> None:
    """``overrun=kill`` in a run whose jobs are not killed at their limit: the engine kills
    nothing then, so jobs the prediction pushes past their limit ran on while the summary
    said ``overrun: kill``. Refused, naming both settings."""
    from .network_spec import NetworkSpec, parse_network_spec

    spec = network if isinstance(network, NetworkSpec) else parse_network_spec(str(network))
    if spec.overrun == "kill":
        raise InputError(
            "--network",
            f"overrun=kill kills the jobs the predicted slowdown pushes past their limit, but this run kills no job at its limit ({kill_rule}): "
            "drop overrun=kill, or give --kill-at-limit",
        )


#: Slurm's default cap on the switch wait (SchedulerParameters=max_switch_wait).
MAX_SWITCH_WAIT_S = SLURM_MAX_SWITCH_WAIT_S  # one value, in limits.py


def parse_switches(text: str) -> tuple[int, int]:
    """``N`` or ``N@SECONDS`` (Slurm also accepts ``N@MM:SS`` etc.; give seconds here)."""
    count, _, wait = text.partition("@")
    try:
        n = int(count)
        w = int(wait) if wait else MAX_SWITCH_WAIT_S
    except ValueError:
        raise ValueError(f"switches must look like N or N@SECONDS, got {text!r}") from None
    if n < 1 or w < 0:
        raise ValueError(f"switches must have N >= 1 and a wait >= 0, got {text!r}")
    if n >= 2**31 or w > 2**40:
        raise ValueError(f"switches out of range (N below 2^31, wait at most 2^40 s), got {text!r}")
    return n, w


def _switch_columns(workload: Workload, config: RunConfig) -> dict[str, np.ndarray]:
    """Per-job (max leaves, wait) arrays for the engine, or nothing when unused."""
    n = len(workload)
    leaves = np.zeros(n, np.int64)
    wait = np.zeros(n, np.int64)
    if config.switches:
        leaves[:], wait[:] = parse_switches(config.switches)
    per_job = workload.extra.get("max_leaves")
    if isinstance(per_job, np.ndarray) and len(per_job) == n:
        given = per_job > 0
        leaves[given] = per_job[given]
        w = workload.extra.get("switch_wait_s")
        wait[given] = w[given] if isinstance(w, np.ndarray) else MAX_SWITCH_WAIT_S
    if not leaves.any():
        return {}
    return {"max_leaves": leaves, "switch_wait_s": wait}



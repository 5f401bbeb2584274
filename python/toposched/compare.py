"""Compare allocation policies and speedup scenarios on one workload and one fabric.

``run_compare`` reads the log once, applies the transforms, and replays the result under
every (allocation policy, scenario) pair of the plan in parallel worker processes. Each
run is an ordinary ``toposched simulate`` output directory ``OUT/runs/<alloc>__<scenario>/``
(written by :meth:`toposched.simulate.SimResult.write`); ``OUT/compare.json`` lists them
with their summaries, in plan order. Same inputs, same seed: byte-identical files.

The plan (:func:`plan_runs`): every allocation policy runs scenario ``none``; the
topology-aware policies (every policy but ``linear`` and ``random``) also run every other
scenario, as in the SC18 paper, where the speedups model the benefit of isolation.

Workers are started with the ``spawn`` method (the native core may hold threads, so
``fork`` is avoided) and each receives the transformed workload once, pickled, when it
starts (measured faster than each worker re-reading and re-transforming the log: pickling
Thunder's 118,791 jobs takes 0.01 s of CPU, against 0.14 s to read and transform them); a
worker applies the scenario itself and writes its run directory.
"""

from __future__ import annotations

import json
import os
import re
import time
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, fields
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable

from . import __version__
from .errors import InputError, ToposchedError
from .files import write_atomic as _atomic
from .simulate import RunConfig, simulate
from .transforms import SCENARIOS, apply_scenario, apply_transforms
from .workload.model import Workload
from . import registry

#: Built-in allocation policies (``toposched simulate --alloc``); ``module:Class`` names a
#: policy written in Python. Policies in NO_SCENARIOS run scenario ``none`` only: the
#: topology-oblivious ones, and ``as-logged`` (the log's own schedule, not a policy).
ALLOCS: tuple[str, ...] = (*registry.alloc_names(), "as-logged")
NO_SCENARIOS: frozenset[str] = frozenset(a for a in ALLOCS if not registry.topology_aware(a))
QUEUES: tuple[str, ...] = registry.queue_names()  # the engine's own list

DEFAULT_ALLOCS: tuple[str, ...] = ("linear", "isolated")
DEFAULT_SCENARIOS: tuple[str, ...] = SCENARIOS


def topology_aware(alloc: str) -> bool:
    """Whether the speedup scenarios apply to runs of ``alloc`` (every policy but
    ``linear``, ``random`` and ``as-logged``; a ``module:Class`` policy counts as aware)."""
    return registry.topology_aware(alloc)


def run_name(alloc: str, scenario: str) -> str:
    """The run's directory name under ``runs/`` (``mymod:Pack`` becomes ``mymod-Pack``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", alloc) + f"__{scenario}"


def _dedupe(items: list[str] | tuple[str, ...]) -> list[str]:
    seen: list[str] = []
    for x in items:
        if x not in seen:
            seen.append(x)
    return seen


def plan_runs(allocs: list[str] | tuple[str, ...], scenarios: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """The (alloc, scenario) pairs to run, in output order: allocs as given; for each,
    the scenarios as given, ``none`` always (first if it was not listed), the others only
    for topology-aware policies. Unknown names raise :class:`InputError`."""
    allocs = _dedupe([a.strip() if ":" in a else a.strip().lower() for a in allocs if a.strip()])
    scenarios = _dedupe([s.strip().lower() for s in scenarios if s.strip()])
    expected = ", ".join(ALLOCS) + " or module:Class"
    if not allocs:
        raise InputError("--allocs", "no allocation policy given; expected some of " + expected)
    for a in allocs:
        if a not in ALLOCS and ":" not in a:
            raise InputError("--allocs", f"unknown allocation policy {a!r}; expected some of {expected}")
    names = [run_name(a, "x") for a in allocs]
    if len(set(names)) < len(names):
        raise InputError("--allocs", "two policies would write to the same run directory: " + ", ".join(allocs))
    for s in scenarios:
        if s not in SCENARIOS:
            raise InputError("--scenarios", f"unknown scenario {s!r}; expected some of {', '.join(SCENARIOS)}")
    if "none" not in scenarios:
        scenarios.insert(0, "none")
    plan = []
    for a in allocs:
        for s in scenarios:
            if s == "none" or topology_aware(a):
                plan.append((a, s))
    return plan


@dataclass
class CompareResult:
    """What :func:`run_compare` wrote."""

    out_dir: Path
    document: dict[str, Any]  # the content of compare.json
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per run (not in compare.json)
    read_s: float = 0.0
    total_s: float = 0.0

    @property
    def compare_json(self) -> Path:
        return self.out_dir / "compare.json"


# --------------------------------------------------------------------------- workers

_STATE: dict[str, Any] = {}


def _init_worker(workload: Workload, system: str, lenient: bool) -> None:
    import signal

    from .topology import load_fabric

    # Ctrl-C is the parent's business: it cancels the runs not started and lets the
    # running ones finish, so no run directory is left half-written.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _STATE["workload"] = workload
    _STATE["fabric"] = load_fabric(system, lenient=lenient)


class RunError(ToposchedError):
    """A run of the comparison stopped on an error of its input or policy (the message
    names the run). Built from one string, so it crosses process boundaries."""


def _run_one(alloc: str, scenario: str, config: RunConfig, out_dir: str) -> tuple[str, str, dict[str, Any], float]:
    t0 = time.perf_counter()
    name = run_name(alloc, scenario)
    try:
        w = apply_scenario(_STATE["workload"], scenario, config.seed)
        result = simulate(w, _STATE["fabric"], config)
        result.write(Path(out_dir) / "runs" / name)
    except (KeyboardInterrupt, SystemExit):
        raise
    except ToposchedError as exc:
        raise RunError(f"run {name}: {exc}") from None
    except BaseException as exc:  # noqa: BLE001 - a bug, or a panic of the core: keep its traceback
        # Not every exception survives pickling (the core's PanicException does not), so
        # send the worker's traceback as text.
        import traceback

        raise RuntimeError(f"run {name} failed: {type(exc).__name__}: {exc}\n{traceback.format_exc()}") from None
    return alloc, scenario, result.summary, time.perf_counter() - t0


# --------------------------------------------------------------------------- driver


def load_workload(
    trace: str | Path,
    *,
    transforms: list[str] | tuple[str, ...] = (),
    fabric_nodes: int | None = None,
    format: str | None = None,
    lenient: bool = False,
) -> Workload:
    """Read ``trace`` and apply ``transforms`` (``cap``/``drop`` alone use ``fabric_nodes``)."""
    from .workload import read_trace

    w = read_trace(trace, format=format, lenient=lenient)
    w = apply_transforms(w, list(transforms), fabric_nodes=fabric_nodes)
    if len(w) == 0:
        raise InputError(str(trace), "no jobs left to replay after the transforms " + ", ".join(transforms))
    return w


def run_compare(
    trace: str | Path,
    system: str,
    out_dir: str | Path,
    *,
    allocs: list[str] | tuple[str, ...] = DEFAULT_ALLOCS,
    scenarios: list[str] | tuple[str, ...] = DEFAULT_SCENARIOS,
    queue: str = "easy",
    transforms: list[str] | tuple[str, ...] = (),
    seed: int = 0,
    jobs: int | None = None,
    format: str | None = None,
    lenient: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
    network: str | None = None,
    run_options: dict[str, Any] | None = None,
) -> CompareResult:
    """Run the comparison and write ``out_dir/runs/*/`` and ``out_dir/compare.json``.

    ``jobs`` worker processes (default ``os.cpu_count()``, never more than the runs;
    1 runs everything in this process). ``progress(done, total, run_name)`` is called
    once with ``done == 0`` when the runs start, then after each finished run. Any previous ``compare.json`` in ``out_dir`` is removed
    first, so an interrupted comparison never leaves one that reads as a result.
    ``run_options``: further RunConfig fields for every run (what ``simulate`` accepts:
    queue depth, flux window, event order, ...); its ``seed`` and ``network`` win over the
    keywords of the same name.
    """
    from .topology import load_fabric

    t_start = time.perf_counter()
    options = dict(run_options or {})
    seed = options.pop("seed", seed)
    network = options.pop("network", network)
    bad = sorted(set(options) - {f.name for f in fields(RunConfig)} | set(options) & {"queue", "alloc"})
    if bad:
        raise InputError("run_options", f"not settings of a run: {', '.join(bad)}")
    if queue not in QUEUES:
        raise InputError("--queue", f"unknown queue policy {queue!r}; expected one of {', '.join(QUEUES)}")
    plan = plan_runs(allocs, scenarios)
    fabric = load_fabric(system, lenient=lenient)  # fail early on a bad --system
    workload = load_workload(trace, transforms=transforms, fabric_nodes=fabric.n_nodes, format=format, lenient=lenient)
    read_s = time.perf_counter() - t_start

    out = Path(out_dir)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "compare.json").unlink(missing_ok=True)

    # With --network, every run (baselines included) predicts interference, so the cost of
    # isolation (waiting) and its benefit (faster jobs) show in the same numbers.
    # Options of newer policies (policy_options) go to the runs whose policies declare them.
    def own(a: str) -> dict[str, Any]:
        given = options.get("policy_options")
        if not given:
            return options
        mine = {k: v for k, v in given.items() if getattr(registry.option(k), "policy", None) in (queue, a)}
        return {**options, "policy_options": mine}

    configs = {a: RunConfig(queue=queue, alloc=a, seed=seed, network=network, **own(a)) for a, _ in plan}
    summaries: dict[tuple[str, str], dict[str, Any]] = {}
    seconds: dict[str, float] = {}
    n_workers = max(1, min(jobs or os.cpu_count() or 1, len(plan)))

    def done(a: str, s: str, summary: dict[str, Any], secs: float) -> None:
        summaries[(a, s)] = summary
        seconds[run_name(a, s)] = secs
        if progress is not None:
            progress(len(summaries), len(plan), run_name(a, s))

    if progress is not None:
        progress(0, len(plan), "")
    if n_workers == 1:
        _STATE["workload"] = workload
        _STATE["fabric"] = fabric
        try:
            for a, s in plan:
                done(*_run_one(a, s, configs[a], str(out)))
                if not summaries[(a, s)]["complete"]:  # simulate() stopped on Ctrl-C
                    raise KeyboardInterrupt
        finally:
            _STATE.clear()
    else:
        ctx = get_context("spawn")
        with ProcessPoolExecutor(n_workers, mp_context=ctx, initializer=_init_worker, initargs=(workload, system, lenient)) as pool:
            futures = [pool.submit(_run_one, a, s, configs[a], str(out)) for a, s in plan]
            try:
                pending = set(futures)
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
                    for f in finished:
                        done(*f.result())  # re-raises a worker's error
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise

    document: dict[str, Any] = {
        "toposched_version": __version__,
        "trace": str(trace),
        "system": system,
        "queue": queue,
        "transforms": list(workload.settings.get("transforms", [])),
        "seed": seed,
        "network": network,
        "run_options": options,
        "allocs": _dedupe([a for a, _ in plan]),
        "scenarios": _dedupe([s for _, s in plan]),
        "runs": [
            {
                "alloc": a,
                "scenario": s,
                "topology_aware": topology_aware(a),
                "dir": f"runs/{run_name(a, s)}",
                "summary": summaries[(a, s)],
            }
            for a, s in plan
        ],
    }
    _atomic(out / "compare.json", lambda p: Path(p).write_text(json.dumps(document, indent=1, sort_keys=False) + "\n"))
    return CompareResult(out, document, seconds, read_s, time.perf_counter() - t_start)


# --------------------------------------------------------------------------- reporting


def build_report(out_dir: Path) -> Path | None:
    """Build ``out_dir/report.html`` with :func:`toposched.reporting.build_compare_report`
    when that module is available; None when it is not (or builds nothing)."""
    try:
        from .reporting import build_compare_report  # type: ignore[import-not-found, attr-defined]
    except ModuleNotFoundError as exc:
        if exc.name in ("toposched.reporting", f"{__package__}.reporting"):
            return None
        raise
    except ImportError:
        return None
    path = build_compare_report(Path(out_dir))
    return Path(path) if path is not None else None


def summary_table(document: dict[str, Any]):
    """A rich table, one row per run: mean wait, mean bounded slowdown, mean utilization
    (%), makespan, mean APH of multi-node jobs. Times in one unit per column, chosen by
    magnitude (toposched.units) and named in the header."""
    from rich import box
    from rich.table import Table

    from .report import _fmt
    from .units import duration_unit

    runs = document["runs"]
    fabric = runs[0]["summary"]["fabric"] if runs else {"name": document["system"], "nodes": "?"}
    title = f"{Path(document['trace']).name} on {fabric['name']} ({fabric['nodes']} nodes), {document['queue']}"
    if document["transforms"]:
        title += f" ({', '.join(document['transforms'])})"
    waits = [r["summary"]["wait_s"]["mean"] for r in runs if r["summary"]["wait_s"]["mean"] is not None]
    spans = [r["summary"]["makespan_s"] for r in runs if r["summary"]["makespan_s"] is not None]
    wu, wd = duration_unit(max(waits, default=0))
    mu, md = duration_unit(max(spans, default=0))
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, title=title, title_justify="left", caption=f"means over the replayed jobs: wait ({wu}), bounded slowdown (10 s threshold), utilization (% of nodes busy); makespan ({mu}); APH of jobs >= 2 nodes; sped up: jobs the scenario shortened", caption_justify="left")
    t.add_column("policy", no_wrap=True)
    t.add_column("scenario", no_wrap=True)
    for head in (f"wait {wu}", "bsld", "util %", f"makespan {mu}", "APH", "sped up"):
        t.add_column(head, justify="right", no_wrap=True)
    previous = None
    for r in runs:
        s = r["summary"]
        util = s["utilization"]["mean"]
        wait_mean = s["wait_s"]["mean"]
        mk = s["makespan_s"]
        t.add_row(
            r["alloc"] if r["alloc"] != previous else "",
            r["scenario"],
            _fmt(None if wait_mean is None else wait_mean / wd, 1 if wd > 1 else 0),
            _fmt(s["bounded_slowdown"]["mean"], 2),
            _fmt(None if util is None else 100 * util, 1),
            _fmt(None if mk is None else mk / md, 1 if md > 1 else 0),
            _fmt(s["aph"]["mean"], 3),
            f"{s['input']['repairs'].get('scenario_sped_up', 0):,}",
        )
        previous = r["alloc"]
    return t

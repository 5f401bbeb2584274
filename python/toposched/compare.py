"""Compare allocation policies and speedup scenarios on one workload and one fabric.

``run_compare`` checks the log and its transforms, then replays it under every (allocation
policy, scenario) pair of the plan as a sweep (:func:`run_matrix`, through
:func:`toposched.sweep.runner.run_sweep`): each run is an ordinary ``toposched simulate``
output directory ``OUT/runs/<alloc>__<scenario>/`` (written by
:meth:`toposched.simulate.SimResult.write`) plus the sweep's ``spec.json`` and
``run.json`` marker, published whole; a re-run skips the runs already complete with the
same settings, and ``OUT`` is a catalog (``toposched runs OUT``). ``OUT/compare.json``
lists the runs with their summaries, in plan order. Same inputs, same seed:
byte-identical summaries.

The plan (:func:`plan_runs`): every allocation policy runs scenario ``none``; the
topology-aware policies (every policy but ``linear`` and ``random``) also run every other
scenario, as in the SC18 paper, where the speedups model the benefit of isolation.

The runs go to a local pool of ``spawn``-started worker processes (Dask when asked);
each worker reads and transforms the log once and keeps it for its next runs, applies
the scenario itself and writes its run directory.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from . import __version__
from .errors import InputError, ToposchedError, require_list
from .files import write_atomic as _atomic
from .simulate import RunConfig
from .transforms import SCENARIOS, transforms_for_replay
from .workload.model import Workload
from . import registry

if TYPE_CHECKING:
    from rich.table import Table

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


def checks_interference_free(alloc: str) -> bool:
    """Whether ``--check-invariants`` applies to the runs of ``alloc``: isolated promises
    interference-free placements, and a policy written in Python may (and is checked);
    the others share switches by design, so that their runs, checked, would fail."""
    return alloc == "isolated" or ":" in alloc


def invariant_check_settings(allocs: list[str] | tuple[str, ...], options: dict[str, Any], flag: str) -> None:
    """Refuse ``check_interference_free`` when no run's policy promises it (``flag`` names
    the allocation flag in the message), as simulate refuses it for such a policy."""
    if options.get("check_interference_free") and not any(checks_interference_free(a) for a in allocs):
        raise InputError("--check-invariants", f"has no effect with {flag} {','.join(allocs)}; it applies to isolated, or a policy written in Python")


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
    require_list("plan_runs", "allocs", allocs)
    require_list("plan_runs", "scenarios", scenarios)
    allocs = _dedupe([a.strip() if ":" in a else a.strip().lower() for a in allocs if a.strip()])
    scenarios = _dedupe([s.strip().lower() for s in scenarios if s.strip()])
    # read now, not at import: a policy registered since (registry.register) is one too
    known = (*registry.alloc_names(), "as-logged")
    expected = ", ".join(known) + " or module:Class"
    if not allocs:
        raise InputError("--allocs", "no allocation policy given; expected some of " + expected)
    for a in allocs:
        if a not in known and ":" not in a:
            raise InputError("--allocs", f"unknown allocation policy {a!r}; expected some of {expected}")
    names = [run_name(a, "x") for a in allocs]
    if len(set(names)) < len(names):
        raise InputError("--allocs", "two policies would write to the same run directory: " + ", ".join(allocs))
    if not scenarios:
        # an empty list is most likely a shell variable left empty; it would run only
        # `none`, which is what `--scenarios none` says
        raise InputError("--scenarios", f"no scenario given; expected some of {', '.join(SCENARIOS)} (none: no speedup)")
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


# --------------------------------------------------------------------------- the run matrix


class RunError(ToposchedError):
    """A run of the comparison stopped on an error of its input or policy (the message
    names the run)."""


@dataclass(frozen=True)
class RunSpec:
    """One run of a matrix: its directory name under ``runs/``, the speedup scenario applied
    to the workload, and the run's settings."""

    name: str
    scenario: str
    config: RunConfig


def _sweep_runs(trace: str | Path, system: str, specs: list[RunSpec], *, transforms: list[str] | tuple[str, ...], format: str | None, lenient: bool) -> list[Any]:
    """The matrix as sweep runs (:class:`toposched.sweep.spec.RunSpec`): the specification
    a sweep file with this one workload, fabric and seed gives each run (so the catalog
    reads it), published under the run's own name (``runs/linear__none``)."""
    from dataclasses import asdict

    from .sweep.spec import RunSpec as SweepRun
    from .sweep.spec import policy_code_sha256, run_id_of, sha256_file
    from .topology import PRESETS
    from .transforms import parse_transform
    from .workload import detect_format

    path = Path(trace).resolve()
    name = re.sub(r"\.(swf|log|txt|csv)$", "", re.sub(r"(\.gz)?$", "", path.name))
    workload = {
        "name": name,
        "trace": str(path),
        "trace_sha256": sha256_file(path),
        "format": format or detect_format(path),
        # the reader's defaults, as a sweep file without a reader table gives them
        "reader": {"lenient": lenient, "cores_per_node": None, "size_field": "auto", "missing_walltime": "runtime", "missing_runtime": "skip"},
        "transforms": [parse_transform(t).text for t in transforms],
    }
    fabric: dict[str, Any] = {"name": system, "kind": "preset", "system": system, "lenient": lenient}
    if system not in PRESETS:
        if system.lower().startswith("fattree"):
            fabric["kind"] = "fattree"
        elif Path(system).is_file():
            conf = Path(system).resolve()
            fabric.update(name=conf.name, kind="topology.conf", system=str(conf), conf_sha256=sha256_file(conf))
    runs = []
    network_sha256: dict[str, str] = {}
    for spec in specs:
        config = asdict(spec.config)
        if not config.get("policy_options"):
            config.pop("policy_options", None)
        scenario: dict[str, Any] = {"speedup": spec.scenario, "seed": spec.config.seed}
        if spec.config.network is not None:
            scenario["network"] = spec.config.network
            # a spec file's contents, not only its name, make the run (resuming after an
            # edit of the file runs again)
            if spec.config.network not in network_sha256:
                from .network_spec import parse_network_spec

                network_sha256[spec.config.network] = parse_network_spec(spec.config.network).file_sha256
            if network_sha256[spec.config.network]:
                scenario["network_sha256"] = network_sha256[spec.config.network]
        doc: dict[str, Any] = {"toposched_version": __version__, "workload": workload, "fabric": fabric, "scenario": scenario, "config": config}
        code = {k: policy_code_sha256(config.get(k)) for k in ("alloc", "queue_order")}
        code = {k: v for k, v in code.items() if v is not None}
        if code:
            doc["policy_code_sha256"] = code
        doc = json.loads(json.dumps(doc))  # plain JSON types, own copies
        runs.append(SweepRun(run_id_of(doc), doc, dir_name=spec.name))
    return runs


def check_jobs(func: str, jobs: object) -> None:
    """Refuse a worker count the command line would (--jobs 0): the pool took 0 as "every
    core" and a negative count as 1, silently."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"{func}(): jobs must be a whole number >= 1 (worker processes; None: the machine's cores), got {jobs!r}")


def run_matrix(
    trace: str | Path,
    system: str,
    specs: list[RunSpec],
    out_dir: str | Path,
    *,
    transforms: list[str] | tuple[str, ...] = (),
    format: str | None = None,
    lenient: bool = False,
    jobs: int | None = None,
    dask: bool = False,
    scheduler: str | None = None,
    scheduler_file: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    name: str = "compare",
    locked: bool = False,
) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
    """Run every spec on the trace (read with ``format``/``lenient``, then ``transforms``)
    as a sweep (:func:`toposched.sweep.runner.run_sweep`): each run is published whole as
    ``out_dir/runs/<name>/`` with its ``run.json`` marker, a run already complete with the
    same settings is skipped, and ``out_dir`` gets a catalog (``toposched runs``). ``jobs``
    worker processes on this machine (default ``os.cpu_count()``, never more than the runs;
    1 runs everything in this process), or Dask with ``dask``/``scheduler``/``scheduler_file``.
    Returns the summaries and wall seconds by run name. ``progress(done, total, name)`` is
    called once with ``done`` the runs already complete, then after each run. A failed
    run raises :class:`RunError` once every run has been tried; Ctrl-C raises
    KeyboardInterrupt. ``locked``: the caller holds ``out_dir``'s lock
    (:class:`toposched.sweep.layout.SweepLock`). Shared by ``compare`` and ``frontier``."""
    from .sweep.layout import RUNS, run_status
    from .sweep.runner import run_sweep
    from .sweep.spec import Sweep

    names = [s.name for s in specs]
    if len(set(names)) < len(names):
        raise InputError("runs", "two runs would write to the same run directory: " + ", ".join(names))
    out = Path(out_dir).resolve()
    runs = _sweep_runs(trace, system, specs, transforms=transforms, format=format, lenient=lenient)
    name_of = {r.run_id: r.dir for r in runs}

    def marker(r: Any) -> dict[str, Any] | None:
        m = run_status(out / RUNS / r.dir)
        return m if m is not None and m["status"] == "complete" and m.get("run_id") == r.run_id else None

    done = [sum(marker(r) is not None for r in runs)]
    if progress is not None:
        progress(done[0], len(runs), "")

    def on_result(res: dict[str, Any]) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], len(runs), name_of.get(res["run_id"], res["run_id"]))

    sweep = Sweep(path=out / f"{name}.json", name=name, description=f"toposched {name}", out=out, runs=runs, text="")
    outcome = run_sweep(
        sweep,
        out,
        scheduler=scheduler,
        scheduler_file=scheduler_file,
        workers=None if (scheduler or scheduler_file) else jobs,
        dask=dask,
        progress=False,
        report=False,
        on_result=on_result,
        locked=locked,
    )
    if outcome.interrupted:
        raise KeyboardInterrupt
    if outcome.failed:
        first = min(outcome.failed, key=lambda f: names.index(f[0].dir))
        more = f" (and {len(outcome.failed) - 1} more failed runs)" if len(outcome.failed) > 1 else ""
        raise RunError(f"run {first[0].dir}: {first[1]}{more}; traceback in {out / RUNS / first[0].dir / 'error.txt'}")
    summaries: dict[str, dict[str, Any]] = {}
    seconds: dict[str, float] = {}
    for r in runs:
        m = marker(r)
        if m is None:  # not expected: run_sweep said every run completed
            raise RunError(f"run {r.dir}: no complete run in {out / RUNS / r.dir}")
        summaries[r.dir] = json.loads((out / RUNS / r.dir / "summary.json").read_text(encoding="utf-8"))
        seconds[r.dir] = float(m.get("elapsed_s") or 0.0)
    return summaries, seconds


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

    require_list("load_workload", "transforms", transforms)
    w = read_trace(trace, format=format, lenient=lenient)
    return transforms_for_replay(w, list(transforms), fabric_nodes=fabric_nodes, source=str(trace))


def _check_allocs_here(plan: list[tuple[str, str]], workload: Workload, fabric: Any) -> None:
    """What would fail every run of a policy fails here, once, before any run: as-logged
    on a log without node lists, a policy written in Python that does not import or lacks
    select (each run failed on its own, with its traceback file)."""
    from . import policies

    for alloc in _dedupe([a for a, _ in plan]):
        if alloc == "as-logged":
            from .aslogged import map_hosts, refuse_node_transforms

            refuse_node_transforms(workload)
            map_hosts(workload, fabric)
        elif ":" in alloc:
            policies.check_methods(policies.resolve(alloc, fabric), "select", "nodes, free")


def run_compare(
    trace: str | Path,
    system: str | Path,
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
    dask: bool = False,
    scheduler: str | None = None,
    scheduler_file: str | None = None,
) -> CompareResult:
    """Run the comparison and write ``out_dir/runs/*/`` and ``out_dir/compare.json``.

    The runs go through the sweep runner (:func:`run_matrix`): ``jobs`` worker processes
    (default ``os.cpu_count()``, never more than the runs; 1 runs everything in this
    process), or Dask with ``dask``/``scheduler``/``scheduler_file``; a run already
    complete in ``out_dir`` with the same settings is kept, not run again.
    ``progress(done, total, run_name)`` is called once when the runs start (``done``: those
    already complete), then after each finished run. Any previous ``compare.json`` in
    ``out_dir`` is removed first, so an interrupted comparison never leaves one that reads
    as a result.
    ``run_options``: further RunConfig fields for every run (what ``simulate`` accepts:
    queue depth, flux window, event order, ...); its ``seed`` and ``network`` win over the
    keywords of the same name.
    """
    from .topology import load_fabric

    t_start = time.perf_counter()
    for name, value in (("allocs", allocs), ("scenarios", scenarios), ("transforms", transforms)):
        require_list("run_compare", name, value)
    check_jobs("run_compare", jobs)
    # a topology.conf as a Path: recorded as the string it names (the run specifications
    # and compare.json hold strings)
    system = str(system) if isinstance(system, Path) else system
    from .files import refuse_file_out

    refuse_file_out(out_dir, "compare")
    options = dict(run_options or {})
    seed = options.pop("seed", seed)
    network = options.pop("network", network)
    if network is not None:
        RunConfig(network=network)  # an empty spec is refused, as --network "" is (None: no model)
    if network:
        from .network_spec import parse_network_spec

        parse_network_spec(network)  # a bad --network stops here, before any run, not in a worker
    bad = sorted(set(options) - {f.name for f in fields(RunConfig)} | set(options) & {"queue", "alloc"})
    if bad:
        raise InputError("run_options", f"not settings of a run: {', '.join(bad)}")
    if queue not in QUEUES:
        raise InputError("--queue", f"unknown queue policy {queue!r}; expected one of {', '.join(QUEUES)}")
    plan = plan_runs(allocs, scenarios)
    if network and any(a == "as-logged" for a, _ in plan):  # else its run alone fails, in a worker
        raise InputError("--network", "as-logged replays the log's own start and end times; the network model cannot move them (leave as-logged out of --allocs, or --network out)")
    invariant_check_settings(_dedupe([a for a, _ in plan]), options, "--allocs")
    fabric = load_fabric(system, lenient=lenient)  # fail early on a bad --system
    from .policies import check_python_policies

    check_python_policies(_dedupe([a for a, _ in plan]), options.get("queue_order"))  # and a module:Class that does not load
    workload = load_workload(trace, transforms=transforms, fabric_nodes=fabric.n_nodes, format=format, lenient=lenient)
    _check_allocs_here(plan, workload, fabric)
    if network:
        from .network_spec import check_spec_on

        check_spec_on(workload, network)  # a spec the log cannot take: here, not in every run
        from .simulate import check_overrun, kill_at_walltime

        kill, kill_rule = kill_at_walltime(workload, RunConfig(kill_at_walltime=options.get("kill_at_walltime")))
        if not kill:
            check_overrun(network, kill_rule)  # here, not in every run
    read_s = time.perf_counter() - t_start

    out = Path(out_dir)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    from .sweep.layout import SweepLock

    # the directory's lock before compare.json goes: a second compare started on DIR meanwhile
    # stops at the lock, not after deleting the first one's compare.json
    with SweepLock(out.resolve()):
        (out / "compare.json").unlink(missing_ok=True)

        # With --network, every run (baselines included) predicts interference, so the cost of
        # isolation (waiting) and its benefit (faster jobs) show in the same numbers.
        # Options of newer policies (policy_options) go to the runs whose policies declare them.
        # --check-invariants goes to the runs whose policies promise interference-free
        # placements: the baseline (linear) shares switches by design and failed, checked.
        def own(a: str) -> dict[str, Any]:
            mine: dict[str, Any] = dict(options)
            if mine.get("check_interference_free") and not checks_interference_free(a):
                mine["check_interference_free"] = False
            given = options.get("policy_options")
            if given:
                mine["policy_options"] = {k: v for k, v in given.items() if getattr(registry.option(k), "policy", None) in (queue, a)}
            return mine

        configs = {a: RunConfig(queue=queue, alloc=a, seed=seed, network=network, **own(a)) for a, _ in plan}
        specs = [RunSpec(run_name(a, sc), sc, configs[a]) for a, sc in plan]
        by_name, seconds = run_matrix(
            trace, system, specs, out, transforms=transforms, format=format, lenient=lenient, jobs=jobs,
            dask=dask, scheduler=scheduler, scheduler_file=scheduler_file, progress=progress, locked=True,
        )
        summaries = {(a, sc): by_name[run_name(a, sc)] for a, sc in plan}

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


def build_report(out_dir: Path) -> Path:
    """Build ``out_dir/report.html`` (:func:`toposched.reporting.build_compare_report`)."""
    from .reporting import build_compare_report

    return Path(build_compare_report(Path(out_dir)))


class _PolicyName:
    """A policy name in a table cell that, short of room, breaks after its hyphens (then,
    a part still too long, anywhere): rich's own wrapping breaks at spaces only."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.parts = re.findall(r"[^-]*-|[^-]+$", name) or [name]

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        return Measurement(max(len(p) for p in self.parts), len(self.name))

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        lines = [""]
        for part in self.parts:
            if lines[-1] and len(lines[-1]) + len(part) > options.max_width:
                lines.append("")
            lines[-1] += part
        yield Text("\n".join(lines), overflow="fold")


def summary_table(document: dict[str, Any]) -> Table:
    """A rich table, one row per run: mean wait, mean bounded slowdown, mean utilization
    (%), makespan, mean APH of multi-node jobs. Times in one unit per column, chosen by
    magnitude (toposched.units) and named in the header."""
    from rich import box
    from rich.table import Table

    from .reporting.terminal import fmt_number as _fmt
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
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, title=title, title_justify="left", caption=f"means over the replayed jobs: wait ({wu}), bounded slowdown (10 s threshold), utilization (% of nodes busy); makespan ({mu}); APH of jobs >= 2 nodes; sped up: jobs of the workload the scenario shortened, never-placed ones included", caption_justify="left")
    rows = []
    previous = None
    for r in runs:
        s = r["summary"]
        util = s["utilization"]["mean"]
        wait_mean = s["wait_s"]["mean"]
        mk = s["makespan_s"]
        rows.append([
            r["alloc"] if r["alloc"] != previous else "",
            r["scenario"],
            _fmt(None if wait_mean is None else wait_mean / wd, 1 if wd > 1 else 0),
            _fmt(s["bounded_slowdown"]["mean"], 2),
            _fmt(None if util is None else 100 * util, 1),
            _fmt(None if mk is None else mk / md, 1 if md > 1 else 0),
            _fmt(s["aph"]["mean"], 3),
            f"{s['input']['repairs'].get('scenario_sped_up', 0):,}",
        ])
        previous = r["alloc"]
    # numbers and the headers naming their units are never cut ("1,110.…", "wait…"): each
    # such column is as wide as its widest cell; a long policy name wraps instead, after a
    # hyphen ("least-" over "interference"; it was cut anywhere: "least-interfere" / "nce")
    t.add_column("policy", overflow="fold")
    rows = [[_PolicyName(row[0]) if row[0] else "", *row[1:]] for row in rows]
    for i, head in enumerate(("scenario", f"wait {wu}", "bsld", "util %", f"makespan {mu}", "APH", "sped up"), start=1):
        width = max([len(head)] + [len(row[i]) for row in rows])
        t.add_column(head, justify="left" if i == 1 else "right", no_wrap=True, min_width=width)
    for row in rows:
        t.add_row(*row)
    return t

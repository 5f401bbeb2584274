"""The frontier: what each allocation policy (and each setting of its knobs) costs in
utilization and buys in interference, on one workload.

``run_frontier`` expands a policy grid (:func:`expand_grid`: ``capped:leaf_cap=1+2+4``
is three runs) and replays the workload twice per point through compare's run matrix
(:func:`toposched.compare.run_matrix`, the sweep runner: the same workers, run
directories published whole, complete runs skipped on a re-run, a catalog):

* **open loop** (``runs/<point>__open/``, no network model, logged run times): what the
  policy's placement constraints cost, as the SC18 paper measured it: busy utilization
  (node-seconds held over the fabric's node-seconds between the first submit and the last
  end) and mean wait. Nothing slows a job here, so a policy cannot look busier by slowing
  its jobs down: this is the cost axis;
* **closed loop** (``runs/<point>__net/``, ``--network SPEC``): what sharing costs under
  the network model: ``interference_node_s``, node-seconds lost to predicted slowdown
  (``sum nodes * (end - start) * (1 - 1 / slowdown)``); ``useful_utilization``, each
  job's node-seconds divided by its slowdown over the fabric's; busy utilization; mean
  wait and makespan as the model predicts them.

Each point is then put against the baseline policy (``linear`` by default): utilization
lost (points of open-loop busy utilization below the baseline's), share of the
baseline's interference removed, closed-loop wait ratio, useful utilization gained. The
Pareto front is taken on (utilization lost, interference node-seconds), both to be small:
a point is on it when no other point is at least as good on both and better on one
(:func:`pareto_front`).

Outputs in ``out_dir``: ``runs/`` (simulate's files, two directories per point),
``frontier.json`` (the settings and every point, in grid order) and ``frontier.csv``
(one row per point); the HTML page (``frontier.html``) is built by
:mod:`toposched.reporting.frontier`. Same inputs, same seed: byte-identical files.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from . import __version__, registry
from .compare import RunSpec, check_jobs, checks_interference_free, invariant_check_settings, load_workload, run_matrix
from .config import RunConfig
from .errors import InputError, require_list
from .files import write_text_atomic

#: Targets of issue 18 ("isolation's benefit at almost no utilization cost"): a point meets
#: the target when it removes at least this share of the baseline's interference ...
TARGET_INTERFERENCE_REMOVED = 0.90
#: ... keeps its busy utilization within this many points of the baseline's ...
TARGET_UTILIZATION_POINTS = 1.0
#: ... and its mean wait within this factor of the baseline's, and beats both the baseline
#: and ``isolated`` (when run) on useful utilization.
TARGET_WAIT_RATIO = 1.05


@dataclass(frozen=True)
class GridPoint:
    """One policy setting of the grid: the allocation policy and its options."""

    alloc: str
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """How a person reads it: ``capped(leaf_cap=2,pod_cap=1)``, or the bare name."""
        if not self.options:
            return self.alloc
        return f"{self.alloc}(" + ",".join(f"{k}={_show(v)}" for k, v in self.options) + ")"

    @property
    def name(self) -> str:
        """The run's directory name: ``capped-leaf_cap-2-pod_cap-1``."""
        parts = [self.alloc] + [f"{k}-{_show(v)}" for k, v in self.options]
        return re.sub(r"[^A-Za-z0-9_.-]", "-", "-".join(parts))


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


#: Policies of the default grid, when registered: the oblivious and the SC18 baselines,
#: Slurm's tree best-fit, and the policies (with knob grids) written to sit between them.
DEFAULT_GRID: tuple[str, ...] = (
    "linear",
    "random",
    "slurm-tree",
    "isolated",
    "capped:leaf_cap=2+4,pod_cap=1+2",
    "jigsaw",
    "least-interference",
    "adaptive:slowdown_threshold=0+0.05,isolation_wait_s=3600+86400",
)


def default_grid() -> list[str]:
    """:data:`DEFAULT_GRID` less the policies this build does not register."""
    names = set(registry.alloc_names())
    return [item for item in DEFAULT_GRID if item.split(":", 1)[0] in names]


def _typed(option: registry.PolicyOption, text: str, item: str) -> Any:
    flag = "--policies"
    where = f"{item!r}: option {option.name}"
    if option.type == "integer":
        try:
            value = int(text)
        except ValueError:
            raise InputError(flag, f"{where}: expected an integer, got {text!r}") from None
        why = registry.check_integer(option, value)
        if why is not None:
            raise InputError(flag, f"{where}: {why}")
        return value
    if option.type == "number":
        try:
            number = float(text)
        except ValueError:
            raise InputError(flag, f"{where}: expected a number, got {text!r}") from None
        if not math.isfinite(number):
            raise InputError(flag, f"{where}: expected a finite number, got {text!r}")
        why = registry.check_number(option, number)
        if why is not None:
            raise InputError(flag, f"{where}: {why}")
        return number
    if option.type == "boolean":
        if text.lower() in ("true", "yes", "1"):
            return True
        if text.lower() in ("false", "no", "0"):
            return False
        raise InputError(flag, f"{where}: expected true or false, got {text!r}")
    if option.choices is not None and text not in option.choices:
        raise InputError(flag, f"{where}: expected one of {', '.join(option.choices)}, got {text!r}")
    return text


def expand_grid(items: Sequence[str]) -> list[GridPoint]:
    """The grid's points, in the order given: each item is ``NAME`` or
    ``NAME:OPTION=V1+V2+...,OPTION2=...`` (every combination of the listed values, the
    last option varying fastest). Names and options are the registry's; values are checked
    against the option's type. A point listed twice is run once.

    >>> [p.label for p in expand_grid(["linear", "isolated:leaf_order=flux-topo+paper"])]
    ['linear', 'isolated(leaf_order=flux-topo)', 'isolated(leaf_order=paper)']
    """
    require_list("expand_grid", "items", items)
    names = registry.alloc_names()
    points: list[GridPoint] = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        name, _, rest = item.partition(":")
        name = name.strip().lower()
        if "," in name:
            # compare's --allocs takes A,B; no policy name holds a comma
            spaced = " ".join(p.strip() for p in item.split(",", name.count(",")) if p.strip())
            raise InputError(
                "--policies", f"{item!r}: give one item per policy, separated by spaces (--policies {spaced}), not commas; a comma separates a policy's options (NAME:OPTION=V1+V2,OPTION2=...)"
            )
        if name not in names:
            if rest and "=" not in rest:
                # mypolicies:FewLeaves: ':' here starts a point's options; a policy written
                # in Python takes part by its registered name
                raise InputError(
                    "--policies",
                    f"{item!r}: a policy written in Python takes part in a frontier by a registered name "
                    f"(toposched.registry.register({item!r}, name=...) or the toposched.policies entry point; docs/python-policies.md), "
                    f"as NAME:OPTION=... here gives a policy's options",
                )
            raise InputError("--policies", f"unknown allocation policy {name!r} in {item!r}; expected one of {', '.join(names)}")
        declared = {o.name: o for o in registry.options_of([name])}
        axes: list[tuple[str, list[Any]]] = []
        for part in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, values = part.partition("=")
            key = key.strip().replace("-", "_")
            if not eq or not values.strip():
                raise InputError("--policies", f"{item!r}: expected OPTION=VALUE[+VALUE...], got {part!r}")
            if key not in declared:
                known = ", ".join(declared) or "none"
                raise InputError("--policies", f"{item!r}: {name} has no option {key!r} (its options: {known})")
            if any(k == key for k, _ in axes):
                raise InputError("--policies", f"{item!r}: option {key} given twice")
            axes.append((key, [_typed(declared[key], v.strip(), item) for v in values.split("+")]))
        combos: list[tuple[tuple[str, Any], ...]] = [()]
        for key, typed_values in axes:
            combos = [c + ((key, v),) for c in combos for v in typed_values]
        rank = {key: i for i, key in enumerate(declared)}
        for combo in combos:
            # a point's options in the policy's own order: "tie_break=..,leaf_order=.." is
            # the point "leaf_order=..,tie_break=.." (one run directory, run once), as
            # the same setting written in either order
            point = GridPoint(name, tuple(sorted(combo, key=lambda kv: rank[kv[0]])))
            if point not in points:
                points.append(point)
    if not points:
        raise InputError("--policies", "no allocation policy given")
    taken: dict[str, GridPoint] = {}
    for p in points:
        if p.name in taken:
            raise InputError("--policies", f"{taken[p.name].label} and {p.label} would write to the same run directory {p.name}")
        taken[p.name] = p
    return points


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For each (x, y) point, both to be minimized, whether no other point dominates it
    (is <= on both and < on one). Equal points are both on the front. Sort and sweep:
    O(n log n).

    >>> pareto_front([(0, 5), (1, 1), (2, 2), (0, 5), (3, 0)])
    [True, True, False, True, True]
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    on = [False] * len(points)
    best_y = math.inf  # smallest y among points with a strictly smaller x
    i = 0
    while i < len(order):
        # points sharing this x: only those with the group's smallest y can be on the front,
        # and only when that y beats every point of smaller x
        j = i
        x = points[order[i]][0]
        while j < len(order) and points[order[j]][0] == x:
            j += 1
        group_best = points[order[i]][1]
        if group_best < best_y:
            for k in range(i, j):
                if points[order[k]][1] == group_best:
                    on[order[k]] = True
        best_y = min(best_y, group_best)
        i = j
    return on


@dataclass
class FrontierResult:
    """What :func:`run_frontier` wrote."""

    out_dir: Path
    document: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)
    total_s: float = 0.0


def _metrics(open_loop: dict[str, Any], closed: dict[str, Any]) -> dict[str, Any]:
    net = closed.get("network") or {}
    return {
        "open_busy_utilization": open_loop["utilization"]["mean"],
        "open_wait_mean_s": open_loop["wait_s"]["mean"],
        "open_makespan_s": open_loop["makespan_s"],
        "busy_utilization": net.get("busy_utilization"),
        "useful_utilization": net.get("useful_utilization"),
        "interference_node_s": net.get("interference_node_s"),
        "mean_slowdown": (net.get("slowdown") or {}).get("mean"),
        "wait_mean_s": closed["wait_s"]["mean"],
        "makespan_s": closed["makespan_s"],
        "jobs": closed["jobs"]["replayed"],
        "complete": bool(open_loop["complete"] and closed["complete"]),
    }


def _relative(point: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    def diff_points(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else 100.0 * (b - a)

    i, i0 = point["interference_node_s"], base["interference_node_s"]
    w, w0 = point["wait_mean_s"], base["wait_mean_s"]
    return {
        # points of busy utilization below the baseline's (negative: above it)
        "utilization_lost_pts": diff_points(point["open_busy_utilization"], base["open_busy_utilization"]),
        "interference_removed": None if i is None or not i0 else 1.0 - i / i0,
        "wait_ratio": None if w is None or not w0 else w / w0,
        "useful_gain_pts": diff_points(base["useful_utilization"], point["useful_utilization"]),
    }


def _meets_target(row: dict[str, Any], useful_to_beat: list[float]) -> bool:
    rel = row["vs_baseline"]
    if None in (rel["interference_removed"], rel["utilization_lost_pts"], rel["wait_ratio"], row["useful_utilization"]):
        return False
    return bool(
        rel["interference_removed"] >= TARGET_INTERFERENCE_REMOVED
        and rel["utilization_lost_pts"] <= TARGET_UTILIZATION_POINTS
        and rel["wait_ratio"] <= TARGET_WAIT_RATIO
        and all(row["useful_utilization"] > u for u in useful_to_beat)
    )


def run_frontier(
    trace: str | Path,
    system: str | Path,
    out_dir: str | Path,
    *,
    policies: Sequence[str] | None = None,
    baseline: str = "linear",
    queue: str = "easy",
    network: str = "bins",
    transforms: Sequence[str] = (),
    seed: int = 0,
    jobs: int | None = None,
    format: str | None = None,
    lenient: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
    run_options: dict[str, Any] | None = None,
    dask: bool = False,
    scheduler: str | None = None,
    scheduler_file: str | None = None,
) -> FrontierResult:
    """Run every point of the grid (default :func:`default_grid`) with the network model
    ``network`` on, write ``frontier.json`` and ``frontier.csv`` in ``out_dir``, and return
    them. ``baseline`` (a bare policy name) is added to the grid when missing.
    ``run_options``: further RunConfig fields for every run (as ``compare`` takes them);
    ``jobs``, ``dask``, ``scheduler``, ``scheduler_file``: where the runs go
    (:func:`toposched.compare.run_matrix`)."""
    from .topology import load_fabric

    t0 = time.perf_counter()
    require_list("run_frontier", "policies", policies)
    require_list("run_frontier", "transforms", transforms)
    check_jobs("run_frontier", jobs)
    # a topology.conf as a Path: recorded as the string it names (the run specifications
    # and frontier.json hold strings)
    system = str(system) if isinstance(system, Path) else system
    from .files import refuse_file_out

    refuse_file_out(out_dir, "frontier")
    if not network:
        raise InputError("--network", "the frontier needs the network model: give a SPEC (bins, heavy, ...; docs/network.md)")
    if queue not in registry.queue_names():
        raise InputError("--queue", f"unknown queue policy {queue!r}; expected one of {', '.join(registry.queue_names())}")
    points = expand_grid(list(policies) if policies is not None else default_grid())
    base_point = GridPoint(baseline.strip().lower())
    if ":" in base_point.alloc and base_point.alloc.partition(":")[0] in registry.alloc_names():
        # else "unknown allocation policy 'capped:leaf_cap=1'" for a policy it knows
        raise InputError("--baseline", f"takes a policy's bare name (run with its default options), got {baseline!r}; list the point with --policies to compare with it")
    if base_point.alloc not in registry.alloc_names():
        raise InputError("--baseline", f"unknown allocation policy {baseline!r}; expected one of {', '.join(registry.alloc_names())}")
    if base_point not in points:
        points.insert(0, base_point)
    options = dict(run_options or {})
    seed = options.pop("seed", seed)
    network = options.pop("network", None) or network
    if network is not None:
        RunConfig(network=network)  # an empty spec is refused, as --network "" is
    if network:
        from .network_spec import parse_network_spec

        parse_network_spec(network)  # a bad --network stops here, before any run, not in a worker
    invariant_check_settings(list(dict.fromkeys(p.alloc for p in points)), options, "--policies")
    fabric = load_fabric(system, lenient=lenient)
    from .policies import check_python_policies

    check_python_policies(list(dict.fromkeys(p.alloc for p in points)), options.get("queue_order"))  # before the log is read
    workload = load_workload(trace, transforms=list(transforms), fabric_nodes=fabric.n_nodes, format=format, lenient=lenient)
    if network:
        from .network_spec import check_spec_on

        check_spec_on(workload, network)  # a spec the log cannot take: here, not in every run
        from .simulate import check_overrun, kill_at_walltime

        kill, kill_rule = kill_at_walltime(workload, RunConfig(kill_at_walltime=options.get("kill_at_walltime")))
        if not kill:
            check_overrun(network, kill_rule)  # here, not in every run
    # the settings of each run: the shared ones, then the point's own policy options; each
    # point runs without the network model (its cost) and with it (its interference)
    specs = []
    shared_policy_options = options.pop("policy_options", None) or {}
    for p in points:
        # options given for every run go to the runs whose policies declare them
        mine = {k: v for k, v in shared_policy_options.items() if getattr(registry.option(k), "policy", None) in (queue, p.alloc)}
        # --check-invariants only where the policy promises it (the baseline, linear, fails it)
        checked = {"check_interference_free": False} if options.get("check_interference_free") and not checks_interference_free(p.alloc) else {}
        # a point's own seed (random:seed=0+1) is the run's seed: RunConfig takes it once
        own = {**mine, **dict(p.options)}
        point_seed = own.pop("seed") if "seed" in dict(p.options) else seed
        config = RunConfig(queue=queue, alloc=p.alloc, seed=point_seed, network=None, **{**options, **checked}, policy_options=own)
        specs.append(RunSpec(p.name + "__open", "none", config))
        specs.append(RunSpec(p.name + "__net", "none", replace(config, network=network)))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from .sweep.layout import SweepLock

    # the directory's lock before the files go (as compare: a second frontier started on
    # DIR meanwhile stops at the lock, not after deleting the first one's frontier.json)
    with SweepLock(out.resolve()):
        for stale in ("frontier.json", "frontier.csv"):
            (out / stale).unlink(missing_ok=True)
        summaries, seconds = run_matrix(
            trace, system, specs, out, transforms=list(transforms), format=format, lenient=lenient, jobs=jobs,
            dask=dask, scheduler=scheduler, scheduler_file=scheduler_file, progress=progress, name="frontier", locked=True,
        )

        rows = [
            {"policy": p.label, "alloc": p.alloc, "options": dict(p.options), "dirs": [f"runs/{p.name}__open", f"runs/{p.name}__net"], **_metrics(summaries[p.name + "__open"], summaries[p.name + "__net"])}
            for p in points
        ]
        base = rows[points.index(base_point)]
        for row in rows:
            row["vs_baseline"] = _relative(row, base)
        usable = [r for r in rows if r["interference_node_s"] is not None and r["vs_baseline"]["utilization_lost_pts"] is not None]
        front = pareto_front([(r["vs_baseline"]["utilization_lost_pts"], r["interference_node_s"]) for r in usable])
        for r in rows:
            r["on_front"] = False
        for r, on in zip(usable, front):
            r["on_front"] = on
        beat = [r["useful_utilization"] for r in rows if r["alloc"] in (base_point.alloc, "isolated") and not r["options"] and r["useful_utilization"] is not None]
        for r in rows:
            r["meets_target"] = r is not base and _meets_target(r, beat)
        document: dict[str, Any] = {
            "toposched_version": __version__,
            "trace": str(trace),
            "system": system,
            "fabric_nodes": fabric.n_nodes,
            "queue": queue,
            "network": network,
            "transforms": list(workload.settings.get("transforms", [])),
            "seed": seed,
            "run_options": options,
            "baseline": base["policy"],
            "target": {
                "interference_removed_at_least": TARGET_INTERFERENCE_REMOVED,
                "utilization_lost_pts_at_most": TARGET_UTILIZATION_POINTS,
                "wait_ratio_at_most": TARGET_WAIT_RATIO,
                "useful_utilization_above": [r["policy"] for r in rows if r["alloc"] in (base_point.alloc, "isolated") and not r["options"]],
            },
            "points": rows,
        }
        write_text_atomic(out / "frontier.json", json.dumps(document, indent=1) + "\n")
        write_text_atomic(out / "frontier.csv", frontier_csv(document))
        return FrontierResult(out, document, seconds, time.perf_counter() - t0)


CSV_COLUMNS = (
    "policy", "open_busy_utilization", "open_wait_mean_s", "busy_utilization", "useful_utilization", "interference_node_s", "mean_slowdown", "wait_mean_s", "makespan_s",
    "utilization_lost_pts", "interference_removed", "wait_ratio", "useful_gain_pts", "on_front", "meets_target",
)


def frontier_csv(document: dict[str, Any]) -> str:
    """``frontier.csv``: one row per point, the columns of :data:`CSV_COLUMNS`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in document["points"]:
        flat = {**r, **r["vs_baseline"]}
        w.writerow(["" if flat[c] is None else flat[c] for c in CSV_COLUMNS])
    return buf.getvalue()

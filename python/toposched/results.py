"""The outcome of a replay and what is made of it: the plain :class:`Outcome` record that
both the engine path (:func:`toposched.simulate.simulate`) and the as-logged path
(:mod:`toposched.aslogged`) produce, and :func:`collect`, which turns it into the job,
utilization and skipped tables and the summary of a :class:`SimResult`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import __version__
from .config import RunConfig
from .files import write_atomic as _atomic
from .topology import Fabric
from .workload.model import Workload

#: Bounded-slowdown threshold (seconds), as in Feitelson's definition.
BSLD_TAU_S = 10

#: Job-size bins of the summary: (label, smallest, largest nodes).
SIZE_BINS: tuple[tuple[str, int, int], ...] = (
    ("1", 1, 1),
    ("2-4", 2, 4),
    ("5-16", 5, 16),
    ("17-64", 17, 64),
    ("65-128", 65, 128),
    ("129-256", 129, 256),
    ("257-512", 257, 512),
    ("513-1024", 513, 1024),
    (">1024", 1025, 2**62),
)



@dataclass
class Outcome:
    """Per-job results of a replay, in job-row order (what ``_core.Simulation.results()``
    returns: ``status`` 0 pending / 1 running / 2 done / 3 skipped, ``start_s``, ``end_s``,
    ``alloc_class``, ``killed``, ``aph``, ``node_offsets``, ``node_ids``), the jobs that
    could never run, the number of scheduling passes and the recorded reservations."""

    results: dict[str, np.ndarray]
    skipped: list[tuple[int, str]]
    passes: int = 0
    reservations: dict[str, np.ndarray] = field(default_factory=dict)
    #: The native simulation, when the network model ran in it (its per-job network
    #: results are read from it); None otherwise.
    native: Any = None

    @classmethod
    def of_simulation(cls, sim: Any) -> Outcome:
        """The outcome of a stepped ``_core.Simulation``."""
        return cls(results=sim.results(), skipped=sim.skipped(), passes=int(sim.passes), reservations=sim.reservations(), native=sim)


@dataclass
class SimResult:
    """A finished (or interrupted) replay."""

    workload: Workload
    fabric: Fabric
    config: RunConfig
    jobs: pa.Table
    utilization: pa.Table
    skipped: pa.Table
    summary: dict[str, Any]
    reservations: dict[str, np.ndarray] = field(default_factory=dict)

    def __repr__(self) -> str:
        from .units import fmt_duration, fmt_percent

        s = self.summary
        pol = s.get("policy", {})
        name = Path(str(s.get("input", {}).get("source", "workload"))).name
        done = "" if s.get("complete", True) else ", interrupted"
        return (
            f"SimResult({name} on {self.fabric.name}, {pol.get('queue')}+{pol.get('alloc')}, {len(self.jobs):,} jobs, "
            f"util {fmt_percent(s.get('utilization', {}).get('mean'))}, mean wait {fmt_duration(s.get('wait_s', {}).get('mean'))}{done})"
        )

    def _repr_html_(self) -> str:
        import html

        from .units import fmt_duration, fmt_percent

        s = self.summary
        rows = [
            ("run", repr(self).removeprefix("SimResult(").removesuffix(")")),
            ("makespan", fmt_duration(s.get("makespan_s"))),
            ("utilization", fmt_percent(s.get("utilization", {}).get("mean"))),
            ("wait (mean / median / p95)", " / ".join(fmt_duration(s["wait_s"].get(k)) for k in ("mean", "median", "p95"))),
            ("bounded slowdown (mean)", f"{s['bounded_slowdown']['mean']:.2f}" if s["bounded_slowdown"].get("mean") is not None else "-"),
            ("jobs never placed", f"{s['jobs']['skipped_never_fit']:,}"),
        ]
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
        return f"<table><caption>toposched result</caption>{body}</table>"

    def to_pandas(self) -> Any:
        """jobs.parquet's table as a pandas DataFrame (needs pandas: ``pip install
        toposched[pandas]``)."""
        try:
            import pandas  # noqa: F401
        except ModuleNotFoundError:
            raise ModuleNotFoundError("to_pandas needs pandas: pip install 'toposched[pandas]'") from None
        return self.jobs.to_pandas()

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Write jobs.parquet, utilization.parquet, skipped.parquet, summary.json and
        fabric.json into ``out_dir``. Each file appears whole or not at all (written under
        a temporary name, then renamed)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "jobs": out / "jobs.parquet",
            "utilization": out / "utilization.parquet",
            "skipped": out / "skipped.parquet",
            "summary": out / "summary.json",
            "fabric": out / "fabric.json",
        }
        _atomic(paths["jobs"], lambda p: pq.write_table(self.jobs, p))
        _atomic(paths["utilization"], lambda p: pq.write_table(self.utilization, p))
        _atomic(paths["skipped"], lambda p: pq.write_table(self.skipped, p))
        fabric_text = json.dumps(self.fabric.describe(), indent=1) + "\n"
        summary_text = json.dumps(self.summary, indent=2, sort_keys=True) + "\n"
        _atomic(paths["fabric"], lambda p: _write_text(p, fabric_text))
        _atomic(paths["summary"], lambda p: _write_text(p, summary_text))
        return paths


def _write_text(path: str, text: str) -> None:
    Path(path).write_text(text)


def _stats(x: np.ndarray) -> dict[str, float | None]:
    if len(x) == 0:
        return {"mean": None, "median": None, "p95": None, "max": None}
    return {
        "mean": float(np.mean(x)),
        "median": float(np.median(x)),
        "p95": float(np.percentile(x, 95)),
        "max": float(np.max(x)),
    }


def collect(sim: Outcome, workload: Workload, fabric: Fabric, config: RunConfig, complete: bool) -> SimResult:
    """Tables and summary of a replay from its :class:`Outcome`."""
    r = sim.results
    cols = workload.columns
    done = r["status"] == 2
    idx = np.flatnonzero(done)
    start = r["start_s"][idx]
    end = r["end_s"][idx]
    submit = cols["submit_s"][idx]
    nodes = cols["nodes"][idx]
    wait = start - submit
    run = end - start
    bsld = np.maximum((wait + run) / np.maximum(run, BSLD_TAU_S), 1.0)
    offsets = r["node_offsets"]
    node_ids = r["node_ids"]
    # Node lists of the finished jobs only: gather their slices.
    lens = (offsets[1:] - offsets[:-1])[idx]
    new_offsets = np.zeros(len(idx) + 1, dtype=np.int32)
    np.cumsum(lens, out=new_offsets[1:])
    if len(idx) == len(done):
        flat = node_ids  # every job finished (a complete run): nothing to filter
    else:
        all_lens = offsets[1:] - offsets[:-1]
        flat = node_ids[np.repeat(done, all_lens)]
    node_list = pa.ListArray.from_arrays(pa.array(new_offsets, pa.int32()), pa.array(flat, pa.int32()))
    leaf_of = fabric.core.leaf_of_nodes()
    pod_of_leaf = fabric.core.pod_of_leaves()
    leaves_used, pods_used = _span_counts(new_offsets, flat, leaf_of, pod_of_leaf)
    jobs = pa.table(
        {
            "job_id": pa.array(cols["job_id"][idx]),
            "submit_s": pa.array(submit),
            "start_s": pa.array(start),
            "end_s": pa.array(end),
            "wait_s": pa.array(wait),
            "nodes": pa.array(nodes),
            "walltime_s": pa.array(cols["walltime_s"][idx]),
            "runtime_s": pa.array(run),
            "log_runtime_s": pa.array(cols["runtime_s"][idx]),
            "killed": pa.array(r["killed"][idx]),
            "bounded_slowdown": pa.array(bsld),
            "aph": pa.array(r["aph"][idx], mask=np.isnan(r["aph"][idx])),
            "alloc_class": pa.array(r["alloc_class"][idx]),
            "leaves": pa.array(leaves_used),
            "pods": pa.array(pods_used),
            "node_ids": node_list,
        }
    )
    net_summary = None
    if config.network:
        from .network import network_columns

        net_cols, net_summary = network_columns(sim.native, idx, workload, config.network)
        # jobs the predicted slowdown stretched past their limit (overrun=run-on)
        net_summary["jobs_past_limit"] = int(np.sum((end - start) > cols["walltime_s"][idx]))
        for name, values in net_cols.items():
            jobs = jobs.append_column(name, pa.array(values))
        # Utilization counts a slowed job's nodes as busy for its whole (longer) run; the
        # useful part is its run time over its slowdown (what the work took alone).
        node_s = nodes * (end - start)
        slow = np.asarray(net_cols["net_slowdown"], dtype=float)
        useful = np.where(np.isfinite(slow) & (slow > 0), node_s / np.where(slow > 0, slow, 1.0), node_s)
        span = fabric.n_nodes * max(int(end.max()) - int(cols["submit_s"][0]), 1) if len(idx) else 1
        net_summary["busy_utilization"] = float(node_s.sum() / span)
        net_summary["useful_utilization"] = float(useful.sum() / span)
    skipped_rows = [row for row, _ in sim.skipped]
    skipped_reasons = [why for _, why in sim.skipped]
    skipped = pa.table(
        {
            "job_id": pa.array(cols["job_id"][skipped_rows] if skipped_rows else np.zeros(0, np.int64)),
            "submit_s": pa.array(cols["submit_s"][skipped_rows] if skipped_rows else np.zeros(0, np.int64)),
            "nodes": pa.array(cols["nodes"][skipped_rows] if skipped_rows else np.zeros(0, np.int64)),
            "reason": pa.array(skipped_reasons, pa.string()),
        }
    )
    step = config.utilization_step_s
    if len(idx):
        t0 = int(cols["submit_s"][0])
        t1 = int(end.max())
        busy = busy_nodes(start, end, nodes, t0, t1, step)
    else:
        t0, t1, busy = 0, -1, np.zeros(0, np.int64)
    times = t0 + step * np.arange(len(busy), dtype=np.int64)
    util = busy / max(fabric.n_nodes, 1)
    utilization = pa.table({"time_s": pa.array(times), "busy_nodes": pa.array(busy), "utilization": pa.array(util)})
    summary = _summary(workload, fabric, config, jobs, skipped, util, t0, t1, complete, sim)
    if net_summary is not None:
        summary["network"] = net_summary
    reservations = sim.reservations if config.record_reservations else {}
    return SimResult(workload, fabric, config, jobs, utilization, skipped, summary, reservations)


def busy_nodes(start: np.ndarray, end: np.ndarray, nodes: np.ndarray, t0: int, t1: int, step: int) -> np.ndarray:
    from . import _core

    return _core.busy_nodes_sampled(
        np.ascontiguousarray(start, np.int64), np.ascontiguousarray(end, np.int64), np.ascontiguousarray(nodes, np.int64), t0, t1, step
    )


def _span_counts(offsets: np.ndarray, flat: np.ndarray, leaf_of: np.ndarray, pod_of_leaf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct leaves and pods per job. Node lists are ascending and ids leaf-major, so a
    new leaf (pod) starts wherever the leaf (pod) changes along the list: count the
    changes with one cumulative sum and read it at the job boundaries."""
    n_jobs = len(offsets) - 1
    if len(flat) == 0:
        return np.zeros(n_jobs, np.int32), np.zeros(n_jobs, np.int32)
    leaf = leaf_of[flat]
    pod = pod_of_leaf[leaf]
    out = []
    for key in (leaf, pod):
        # c[k] = changes between neighbours at positions 1..k-1, so a job [s, e) has
        # c[e] - c[s+1] changes inside it, plus one leaf (pod) to start with.
        c = np.zeros(len(flat) + 1, np.int64)
        np.cumsum(key[1:] != key[:-1], out=c[2:])
        start, end = offsets[:-1], offsets[1:]
        inside = c[end] - c[np.minimum(start + 1, len(flat))]
        out.append(np.where(end > start, inside + 1, 0).astype(np.int32))
    return out[0], out[1]


def _policy_block(config: RunConfig) -> dict[str, Any]:
    """The run's settings as JSON: policy objects written as their names."""
    from .policies import describe

    block = {f.name: getattr(config, f.name) for f in fields(config)}
    if not block["policy_options"]:
        del block["policy_options"]  # summaries of runs without such options stay as they were
    block["alloc"] = describe(config.alloc)
    block["queue_order"] = describe(config.queue_order)
    return block


def _summary(
    workload: Workload,
    fabric: Fabric,
    config: RunConfig,
    jobs: pa.Table,
    skipped: pa.Table,
    util: np.ndarray,
    t0: int,
    t1: int,
    complete: bool,
    sim: Outcome,
) -> dict[str, Any]:
    wait = jobs.column("wait_s").to_numpy()
    bsld = jobs.column("bounded_slowdown").to_numpy()
    nodes = jobs.column("nodes").to_numpy()
    aph = jobs.column("aph").to_numpy(zero_copy_only=False)
    aph = np.asarray(aph, dtype=float)
    by_size = []
    for label, lo, hi in SIZE_BINS:
        m = (nodes >= lo) & (nodes <= hi)
        if not m.any():
            continue
        a = aph[m]
        by_size.append(
            {
                "bin": label,
                "min_nodes": lo,
                "max_nodes": min(hi, int(nodes[m].max())),
                "jobs": int(m.sum()),
                "wait_s": _stats(wait[m]),
                "bounded_slowdown": _stats(bsld[m]),
                "aph": _stats(a[~np.isnan(a)]),
            }
        )
    reasons: dict[str, int] = {}
    for why in skipped.column("reason").to_pylist():
        key = why.split(";")[0]
        reasons[key] = reasons.get(key, 0) + 1
    killed = int(np.sum(jobs.column("killed").to_numpy())) if len(jobs) else 0
    over = int(np.sum(workload["runtime_s"] > workload["walltime_s"]))
    fab = fabric.describe()
    return {
        "toposched_version": __version__,
        "complete": complete,
        "input": workload.describe(),
        "fabric": {k: fab[k] for k in ("name", "source", "levels", "nodes", "leaves", "pods", "nodes_per_leaf", "max_pod_nodes", "uplinks_per_leaf", "uplinks_per_l2", "notes")},
        "policy": _policy_block(config),
        "jobs": {
            "in_workload": len(workload),
            "replayed": len(jobs),
            "skipped_never_fit": len(skipped),
            "runtime_over_walltime": over,
            "killed_at_walltime": killed,
        },
        "skipped_reasons": dict(sorted(reasons.items())),
        "first_submit_s": int(t0) if len(jobs) else None,
        "last_end_s": int(t1) if len(jobs) else None,
        "makespan_s": int(t1 - t0) if len(jobs) else None,
        "utilization": {"mean": float(np.mean(util)) if len(util) else None, "step_s": config.utilization_step_s, "samples": int(len(util))},
        "wait_s": _stats(wait),
        "bounded_slowdown": _stats(bsld),
        "aph": _stats(aph[~np.isnan(aph)]),
        "by_size": by_size,
        "scheduling_passes": int(sim.passes),
    }

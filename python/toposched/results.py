"""The outcome of a replay and what is made of it: the plain :class:`Outcome` record that
both the engine path (:func:`toposched.simulate.simulate`) and the as-logged path
(:mod:`toposched.aslogged`) produce, and :func:`collect`, which turns it into the job and
skipped tables, the utilization series and the summary of a :class:`SimResult`."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from . import __version__, parquet_out, summary_stats
from .config import RunConfig
from .files import RESULT_FILES, file_mode, foreign_entries, replace_dir
from .files import write_atomic as _atomic
from .nodelists import NODE_RANGES, span_counts
from .topology import Fabric
from .utilization import SampledUtilization, UtilizationSeries
from .workload.model import Workload

if TYPE_CHECKING:
    # The tables are made only when asked for (SimResult.jobs, .skipped): writing the
    # files needs no PyArrow, whose import is a sixth of a small log's whole command
    import pyarrow as pa

#: Bounded-slowdown threshold (seconds), as in Feitelson's definition.
BSLD_TAU_S = 10

#: Job-size bins of the summary (label, smallest, largest nodes): defined with the
#: statistics that use them.
SIZE_BINS = summary_stats.SIZE_BINS



@dataclass
class Outcome:
    """Per-job results of a replay, in job-row order (what ``_core.Simulation.results()``
    returns: ``status`` 0 pending / 1 running / 2 done / 3 skipped, ``start_s``, ``end_s``,
    ``alloc_class``, ``killed``, ``aph`` and the node lists as ranges, ``range_offsets``,
    ``range_first``, ``range_count``: see :mod:`toposched.nodelists`), the jobs that
    could never run, the number of scheduling passes and the recorded reservations."""

    results: dict[str, np.ndarray]
    skipped: list[tuple[int, str]]
    passes: int = 0
    reservations: dict[str, np.ndarray] = field(default_factory=dict)
    #: The network model as attached to the replay (:class:`toposched.network_spec.ReplayNetwork`:
    #: its spec, its traffic and the native simulation its results are read from); None
    #: when the model was off.
    network: Any = None

    @classmethod
    def of_simulation(cls, sim: Any, network: Any = None) -> Outcome:
        """The outcome of a stepped ``_core.Simulation`` (``network``: what
        :func:`toposched.network_spec.attach_network` returned, if it ran). The engine's own
        copy of the per-job results is freed once they are here (memory per job)."""
        return cls(results=sim.results(release=True), skipped=sim.skipped(), passes=int(sim.passes), reservations=sim.reservations(), network=network)


@dataclass
class SimResult:
    """A finished (or interrupted) replay.

    ``jobs`` and ``skipped`` (jobs.parquet's and skipped.parquet's rows) are PyArrow
    tables made at their first use from the columns the replay collected (``finished``,
    ``never_ran``): :meth:`write` writes the files from those columns directly."""

    workload: Workload
    fabric: Fabric
    config: RunConfig
    #: jobs.parquet's columns (``jobs`` is their table)
    finished: FinishedJobs
    #: busy nodes over time, as changes (sampled only when written: see utilization.py)
    utilization_series: SampledUtilization
    #: skipped.parquet's columns (``skipped`` is their table)
    never_ran: SkippedJobs
    summary: dict[str, Any]
    reservations: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def jobs(self) -> pa.Table:
        """One row per finished job (jobs.parquet's table)."""
        return self.finished.table

    @property
    def skipped(self) -> pa.Table:
        """The jobs that could never run, with the reason (skipped.parquet's table)."""
        return self.never_ran.table

    def __repr__(self) -> str:
        from .units import fmt_duration, fmt_percent

        s = self.summary
        pol = s.get("policy", {})
        name = Path(str(s.get("input", {}).get("source", "workload"))).name
        done = "" if s.get("complete", True) else ", interrupted"
        return (
            f"SimResult({name} on {self.fabric.name}, {pol.get('queue')}+{pol.get('alloc')}, {self.finished.n_rows:,} jobs, "
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

    @property
    def utilization(self) -> pa.Table:
        """Every utilization sample as one table (memory in proportion to the time span)."""
        return self.utilization_series.table()

    def run_id(self) -> str:
        """An id of this result: a hash of its summary and schedule, so the same inputs give
        the same id (outputs stay byte-identical) and two different runs do not."""
        h = hashlib.sha256()
        summary = {k: v for k, v in self.summary.items() if k != "run_id"}
        h.update(json.dumps(summary, sort_keys=True, default=str).encode())
        # the arrays themselves (buffer protocol: no copies of the node lists), each whole
        # (the stream's _run_id reads the same bytes back from its file)
        f = self.finished.columns
        for a in (f["job_id"], f["start_s"], f["end_s"], f["range_offsets"], f["range_first"], f["range_count"]):
            h.update(np.ascontiguousarray(a))  # type: ignore[arg-type]  # ndarray has the buffer protocol (numpy types it for 3.12+)
        return h.hexdigest()[:16]

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Write jobs.parquet, utilization.parquet, skipped.parquet, summary.json and
        fabric.json into ``out_dir``, all carrying the same run id (summary.json's
        ``run_id``, the Parquet files' metadata ``toposched.run_id``, fabric.json's
        ``run_id``), which ``toposched check`` compares.

        The directory is replaced as a whole (files.replace_dir): the files are written
        into a staging directory beside it, which then takes its place. A directory that
        holds other files as well (a sweep's run directory) gets each file atomically
        instead, summary.json last."""
        run_id = self.run_id()
        self.summary["run_id"] = run_id
        return write_result(
            out_dir,
            run_id,
            lambda p: self.finished.write(p, run_id.encode()),
            self.utilization_series,
            lambda p: self.never_ran.write(p, run_id.encode()),
            self.fabric,
            self.summary,
        )


def write_result(
    out_dir: str | Path,
    run_id: str,
    write_jobs: Callable[[str], object],
    utilization: SampledUtilization,
    write_skipped: Callable[[str], object],
    fabric: Fabric,
    summary: dict[str, Any],
) -> dict[str, Path]:
    """The files of :meth:`SimResult.write` (its docstring says how they are written):
    ``write_jobs(path)`` and ``write_skipped(path)`` write jobs.parquet and
    skipped.parquet (with the run id in their metadata); the whole and the streamed
    replay (toposched.stream) both write through here."""
    out = Path(out_dir)

    file_mode()  # the umask read once, here: its fallback (no /proc) is not thread-safe

    def write_files(d: Path) -> None:
        # jobs.parquet on a second thread, beside the other files: Arrow encodes and
        # writes without the interpreter lock, so on two cores the two largest files
        # take the time of the longer (each file's bytes are the same either way)
        # row groups of 2^17 jobs: the writer buffers one group's encoded node lists
        # (runs up to 131,072 jobs give the same file as one group)
        jobs = _Background(lambda: _atomic(d / "jobs.parquet", write_jobs))
        try:
            _atomic(d / "utilization.parquet", lambda p: _write_utilization(utilization, p, run_id.encode()))
            _atomic(d / "skipped.parquet", write_skipped)
            fabric_doc = {"run_id": run_id, **fabric.describe()}
            fabric_text = json.dumps(fabric_doc, indent=1) + "\n"
            summary_text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
            _atomic(d / "fabric.json", lambda p: _write_text(p, fabric_text))
        finally:
            jobs.join()  # its error first, as when it was written first
        _atomic(d / "summary.json", lambda p: _write_text(p, summary_text))  # last

    if out.is_dir() and foreign_entries(out):
        write_files(out)
    else:
        replace_dir(out, write_files)
    return {name.split(".")[0]: out / name for name in RESULT_FILES}


class _Background:
    """``work()`` on a thread of its own; :meth:`join` waits and raises what it raised."""

    def __init__(self, work: Callable[[], object]) -> None:
        import threading

        self._error: BaseException | None = None

        def run() -> None:
            try:
                work()
            except BaseException as exc:  # noqa: BLE001 - handed to the joining thread
                self._error = exc

        self._thread = threading.Thread(target=run, name="toposched-write")
        self._thread.start()

    def join(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


#: Rows per row group of jobs.parquet (bounds the writer's buffers: memory per job). The
#: native writer's (toposched-io parquet.rs JOBS_ROW_GROUP), which also holds every file's
#: encodings (dictionary only where values are few; delta-encoded node ranges and sample
#: times; snappy).
JOBS_ROW_GROUP = 1 << 17



def _write_utilization(series: SampledUtilization, path: str, run_id: bytes) -> None:
    """utilization.parquet a chunk (one row group) at a time, without holding the whole
    series: in Rust for the whole replay's series, from the sample arrays otherwise (the
    streamed replay's samples; the same file either way)."""
    if isinstance(series, UtilizationSeries):
        series.write(path, parquet_out.file_metadata(None, run_id))
        return
    _write_sample_arrays(series, path, run_id)


def _write_sample_arrays(series: SampledUtilization, path: str, run_id: bytes) -> None:
    w = parquet_out.TableWriter(path, "utilization", parquet_out.file_metadata(None, run_id))
    n = 0
    for times, busy, util in series.arrays():
        w.write_columns([("time_s", times, None, True), ("busy_nodes", busy, None, True), ("utilization", util, None, True)])
        n += 1
    if not n:  # no sample: the schema alone
        empty = np.zeros(0, np.int64)
        w.write_columns([("time_s", empty, None, True), ("busy_nodes", empty, None, True), ("utilization", np.zeros(0, np.float64), None, True)])
    w.close()


def _write_text(path: str, text: str) -> None:
    Path(path).write_text(text)


#: jobs.parquet's columns, in order (the node lists last: NODE_RANGES, made of
#: range_offsets, range_first and range_count).
JOB_COLUMNS = (
    "job_id", "submit_s", "start_s", "end_s", "wait_s", "nodes", "walltime_s", "runtime_s", "log_runtime_s",
    "killed", "bounded_slowdown", "aph", "alloc_class", "leaves", "pods",
)


@dataclass(eq=False)
class FinishedJobs:
    """jobs.parquet's rows for the finished jobs among some rows of a replay (``columns``:
    the native collect's arrays, crates/toposched-io/src/collect.rs), and the columns the
    utilization and the summary are made of. ``extra`` holds columns added after them
    (the network model's), written after the node lists."""

    columns: dict[str, Any]
    killed: int
    extra: list[tuple[str, Any]] = field(default_factory=list)
    _table: Any = field(default=None, init=False, repr=False, compare=False)

    @property
    def start(self) -> np.ndarray:
        return self.columns["start_s"]  # type: ignore[no-any-return]

    @property
    def end(self) -> np.ndarray:
        return self.columns["end_s"]  # type: ignore[no-any-return]

    @property
    def nodes(self) -> np.ndarray:
        return self.columns["nodes"]  # type: ignore[no-any-return]

    @property
    def wait(self) -> np.ndarray:
        return self.columns["wait_s"]  # type: ignore[no-any-return]

    @property
    def bsld(self) -> np.ndarray:
        return self.columns["bounded_slowdown"]  # type: ignore[no-any-return]

    @property
    def aph(self) -> np.ndarray:
        """NaN: no APH (a null in the table)."""
        return self.columns["aph"]  # type: ignore[no-any-return]

    @property
    def n_rows(self) -> int:
        return len(self.columns["job_id"])

    @property
    def table(self) -> pa.Table:
        """The rows as a PyArrow table (made once, at the first use)."""
        if self._table is None:
            import pyarrow as pa

            from .nodelists import ranges_array

            f = self.columns
            arrays = {name: pa.array(f[name], mask=np.isnan(f[name])) if name == "aph" else pa.array(f[name]) for name in JOB_COLUMNS}
            arrays[NODE_RANGES] = ranges_array(f["range_offsets"], f["range_first"], f["range_count"])
            for name, values in self.extra:
                arrays[name] = pa.array(values)
            self._table = pa.table(arrays)
        return self._table

    def write(self, path: str, run_id: bytes) -> None:
        """jobs.parquet with ``run_id`` in its metadata: from the columns themselves (no
        table made), the same file as ``parquet_out.write_table`` of :attr:`table`."""
        if self.extra:  # columns of any type: through the table, which types them
            parquet_out.write_table(path, "jobs", self.table, run_id, JOBS_ROW_GROUP)
            return
        f = self.columns
        cols: list[parquet_out.Column] = []
        for name in JOB_COLUMNS:
            values = f[name]
            valid = None
            if name == "aph":
                nan = np.isnan(values)
                valid = ~nan if nan.any() else None  # a null where the job has no APH
            cols.append((name, values, valid, True))
        cols.append((NODE_RANGES, (f["range_offsets"], f["range_first"], f["range_count"]), None, True))
        w = parquet_out.TableWriter(path, "jobs", parquet_out.file_metadata(None, run_id), JOBS_ROW_GROUP)
        w.write_columns(cols)
        w.close()


@dataclass(eq=False)
class SkippedJobs:
    """skipped.parquet's rows: the jobs that could never run and why."""

    job_id: np.ndarray
    submit_s: np.ndarray
    nodes: np.ndarray
    reasons: list[str]
    _table: Any = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def of_rows(cls, cols: dict[str, np.ndarray], rows: list[int], reasons: list[str]) -> SkippedJobs:
        """The jobs at ``rows`` of ``cols`` and why each never ran."""

        def take(name: str) -> np.ndarray:
            return np.ascontiguousarray(cols[name][rows]) if rows else np.zeros(0, np.int64)

        return cls(take("job_id"), take("submit_s"), take("nodes"), list(reasons))

    @property
    def table(self) -> pa.Table:
        if self._table is None:
            import pyarrow as pa

            self._table = pa.table(
                {"job_id": pa.array(self.job_id), "submit_s": pa.array(self.submit_s), "nodes": pa.array(self.nodes), "reason": pa.array(self.reasons, pa.string())}
            )
        return self._table

    def write(self, path: str, run_id: bytes) -> None:
        w = parquet_out.TableWriter(path, "skipped", parquet_out.file_metadata(None, run_id))
        w.write_columns([("job_id", self.job_id, None, True), ("submit_s", self.submit_s, None, True), ("nodes", self.nodes, None, True), ("reason", self.reasons, None, True)])
        w.close()


def _row_arrays(r: dict[str, np.ndarray], cols: dict[str, np.ndarray]) -> Any:
    """The engine's outcome arrays and the same rows' job columns as the native collect
    functions take them (three groups, each array contiguous, of its type)."""

    def i64(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=np.int64)

    return (
        (np.ascontiguousarray(r["status"], dtype=np.int8), i64(r["start_s"]), i64(r["end_s"]), np.ascontiguousarray(r["alloc_class"], dtype=np.int8), np.ascontiguousarray(r["killed"], dtype=np.bool_)),
        (np.ascontiguousarray(r["aph"], dtype=np.float64), i64(r["range_offsets"]), np.ascontiguousarray(r["range_first"], dtype=np.uint32), np.ascontiguousarray(r["range_count"], dtype=np.uint32)),
        tuple(i64(cols[c]) for c in ("job_id", "submit_s", "nodes", "walltime_s", "runtime_s")),
    )


def _finished_of(f: dict[str, Any]) -> FinishedJobs:
    """jobs.parquet's rows from the native finished jobs' columns."""
    return FinishedJobs(f, int(f["killed_count"]))


def finished_jobs(r: dict[str, np.ndarray], cols: dict[str, np.ndarray], fabric: Fabric) -> FinishedJobs:
    """The rows of ``r`` (the engine's results arrays: ``results()`` of a whole replay, or
    one ``drain()`` of a streamed one) whose job is done, as jobs.parquet's rows, in row
    order; ``cols`` are the same rows' workload columns. The columns (wait, run time,
    bounded slowdown, leaves and pods spanned, node ranges) are made in Rust
    (crates/toposched-io/src/collect.rs); here they become the table."""
    from . import _core

    return _finished_of(_core.finished_jobs(fabric.core, _row_arrays(r, cols)))


def collect(sim: Outcome, workload: Workload, fabric: Fabric, config: RunConfig, complete: bool) -> SimResult:
    """Tables and summary of a replay from its :class:`Outcome`."""
    from . import _core

    r = sim.results
    cols = workload.columns
    # the finished jobs' columns, the utilization's step function and the summary's
    # statistics, in Rust (toposched-io collect_replay: the streamed replay makes the same
    # from its drains, so both write the same summary)
    native = _core.collect_replay(fabric.core, _row_arrays(r, cols), config.utilization_step_s, fabric.n_nodes)
    part = _finished_of(native["finished"])
    idx = native["finished"]["rows"]
    start, end, nodes = part.start, part.end, part.nodes
    net_summary = None
    if sim.network is not None:
        from .network_spec import network_columns

        net_cols, net_summary = network_columns(sim.network, idx)
        # jobs the predicted slowdown stretched past their limit (overrun=run-on): not those
        # whose logged run time was past it already (--run-on lets them run on, slowed or not)
        limit = cols["walltime_s"][idx]
        net_summary["jobs_past_limit"] = int(np.sum(((end - start) > limit) & (cols["runtime_s"][idx] <= limit)))
        part.extra += list(net_cols.items())
        # Utilization counts a slowed job's nodes as busy for its whole (longer) run; the
        # useful part is its run time over its slowdown (what the work took alone).
        node_s = nodes * (end - start)
        slow = np.asarray(net_cols["net_slowdown"], dtype=float)
        useful = np.where(np.isfinite(slow) & (slow > 0), node_s / np.where(slow > 0, slow, 1.0), node_s)
        span = fabric.n_nodes * max(int(end.max()) - int(cols["submit_s"][0]), 1) if len(idx) else 1
        net_summary["busy_utilization"] = float(node_s.sum() / span)
        net_summary["useful_utilization"] = float(useful.sum() / span)
        # node-seconds lost to predicted slowdown (busy minus useful; toposched frontier's axis)
        net_summary["interference_node_s"] = float(node_s.sum() - useful.sum())
    skipped_rows = [row for row, _ in sim.skipped]
    skipped = SkippedJobs.of_rows(cols, skipped_rows, [why for _, why in sim.skipped])
    t0, t1 = int(native["t0"]), int(native["t1"])
    utilization = UtilizationSeries(native["change_s"], native["busy"], t0, t1, config.utilization_step_s, fabric.n_nodes)
    stats = native["statistics"]
    summary = summary_of(
        workload.describe(),
        over_walltime=int(np.sum(workload["runtime_s"] > workload["walltime_s"])),
        fabric=fabric,
        config=config,
        replayed=part.n_rows,
        killed=part.killed,
        skipped_reasons=skipped.reasons,
        stats=stats,
        util=utilization,
        t0=t0,
        t1=t1,
        complete=complete,
        passes=sim.passes,
    )
    if net_summary is not None:
        summary["network"] = net_summary
    reservations = sim.reservations if config.record_reservations else {}
    return SimResult(workload, fabric, config, part, utilization, skipped, summary, reservations)


def _span_counts(roff: np.ndarray, first: np.ndarray, count: np.ndarray, leaf_of: np.ndarray, pod_of_leaf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct leaves and pods per job (int32), from its ascending node ranges
    (:func:`toposched.nodelists.span_counts`: Rust's, crates/toposched-io/src/collect.rs)."""
    return span_counts(roff, first, count, leaf_of, pod_of_leaf)


def _policy_block(config: RunConfig) -> dict[str, Any]:
    """The run's settings as JSON: policy objects written as their names."""
    from .policies import describe

    block = {f.name: getattr(config, f.name) for f in fields(config)}
    if not block["policy_options"]:
        del block["policy_options"]  # summaries of runs without such options stay as they were
    block["alloc"] = describe(config.alloc)
    block["queue_order"] = describe(config.queue_order)
    return block


def summary_of(
    input_block: dict[str, Any],
    *,
    over_walltime: int,
    fabric: Fabric,
    config: RunConfig,
    replayed: int,
    killed: int,
    skipped_reasons: list[str],
    stats: dict[str, Any],
    util: SampledUtilization,
    t0: int,
    t1: int,
    complete: bool,
    passes: int,
) -> dict[str, Any]:
    """summary.json (without its run id) of a replay, from what both the whole and the
    streamed replay gather: the input's description (``Workload.describe()``), jobs
    whose log run time exceeds their request, the finished jobs' count, kills and
    statistics (:mod:`toposched.summary_stats`), the skipped jobs' reasons, the
    utilization and its span ``t0``..``t1``."""
    reasons: dict[str, int] = {}
    for why in skipped_reasons:
        key = why.split(";")[0]
        reasons[key] = reasons.get(key, 0) + 1
    fab = fabric.describe()
    return {
        "toposched_version": __version__,
        "complete": complete,
        "input": input_block,
        "fabric": {k: fab[k] for k in ("name", "source", "levels", "nodes", "leaves", "pods", "nodes_per_leaf", "max_pod_nodes", "uplinks_per_leaf", "uplinks_per_l2", "notes")},
        "policy": _policy_block(config),
        "jobs": {
            "in_workload": input_block["jobs"],
            "replayed": replayed,
            "skipped_never_fit": len(skipped_reasons),
            "runtime_over_walltime": over_walltime,
            "killed_at_walltime": killed,
        },
        "skipped_reasons": dict(sorted(reasons.items())),
        "first_submit_s": int(t0) if replayed else None,
        "last_end_s": int(t1) if replayed else None,
        "makespan_s": int(t1 - t0) if replayed else None,
        "utilization": {"mean": util.mean(), "step_s": config.utilization_step_s, "samples": util.n_samples},
        "wait_s": stats["wait_s"],
        "bounded_slowdown": stats["bounded_slowdown"],
        "aph": stats["aph"],
        "by_size": stats["by_size"],
        "scheduling_passes": int(passes),
    }

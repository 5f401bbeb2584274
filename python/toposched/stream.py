"""A streamed replay (``toposched simulate --stream``): the log read a chunk of jobs at a
time, the native engine fed chunk by chunk, finished jobs written as they leave it, so
memory stays bounded however long the log (issue 17 point 2).

The loop: read a chunk (:class:`toposched.workload.swf_stream.SwfStream`), read the next
one too, step the engine up to the next chunk's first submit (``step_until``: no instant
at or after it is handled, ARCHITECTURE.md rule 12), ``drain`` the rows that are final,
``append`` the next chunk, and so on; then step to the end. Each drain's finished jobs
become jobs.parquet rows (:func:`toposched.results.finished_jobs`, the whole replay's
code) buffered into row groups of ``JOBS_ROW_GROUP`` rows, written to a temporary file;
their statistics go to :class:`toposched.summary_stats.SummaryStats`, their busy nodes to
:class:`toposched.utilization.BusySamples`. At the end the summary is made (the medians
and p95s read the temporary file back, group by group), the run id hashed from it and
the temporary file exactly as :meth:`SimResult.run_id` hashes the whole tables, and the
run id patched into the temporary file's footer (:func:`_patch_run_id`), which becomes
jobs.parquet.

The files are those of the whole replay, byte for byte (tests/test_stream_simulate.py):
the engine handles the same instants in the same order (rule 12), rows leave it in row
order, and every file and statistic is made by the same code on the same values.

Memory: two chunks of the log, the rows the engine holds (queued and running jobs and
the finished ones behind the oldest unfinished), one row group of jobs, the skipped
jobs, and the utilization samples from the oldest held row's submit on (4 bytes each;
earlier ones are final and written to a file beside the temporary jobs file).

Refused (one line naming ``--stream``): what needs the whole log at once: ``--network``
(traffic is drawn for the whole log), the ``slurm``/``slurm-bf`` queues (fair share),
``--alloc as-logged``, ``--transform``, logs other than SWF, policies written in Python,
recorded reservations.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import signal
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import parquet_out
from . import results as res
from .config import RunConfig, policy_options
from .errors import InputError, SimulationError
from .nodelists import NODE_RANGES, table_ranges
from .startup import column_numpy
from .summary_stats import COLUMNS as STAT_COLUMNS
from .summary_stats import SummaryStats
from .topology import Fabric
from .utilization import BusySamples
from .workload.model import ID_COLUMNS, Workload
from .workload.swf_stream import SwfStream

__all__ = ["DEFAULT_CHUNK_JOBS", "StreamedRun", "check_streamable", "simulate_stream"]

#: Jobs per chunk of the log (``--stream-chunk-jobs``).
DEFAULT_CHUNK_JOBS = 100_000

#: Queue policies the engine cannot stream (QueuePolicy::whole_log_only).
_WHOLE_LOG_QUEUES = ("slurm", "slurm-bf")


@dataclass
class StreamedRun:
    """What a streamed replay wrote: its summary (with the run id) and the files."""

    summary: dict[str, Any]
    paths: dict[str, Path]


def check_streamable(config: RunConfig, *, format: str | None = None, transforms: list[str] | None = None) -> None:
    """Refuse, with one line naming --stream, a run the streamed replay cannot make."""

    def refuse(what: str, why: str) -> None:
        raise InputError("--stream", f"cannot be used with {what}: {why}; replay without --stream")

    if config.network:
        refuse("--network", "the network model draws every job's traffic from the whole log up front")
    if config.queue in _WHOLE_LOG_QUEUES:
        refuse(f"--queue {config.queue}", "its fair share reads the whole log up front")
    if config.alloc == "as-logged":
        refuse("--alloc as-logged", "it replays the log's own schedule, which needs no engine")
    if not isinstance(config.alloc, str) or ":" in config.alloc or config.queue_order is not None:
        refuse("a policy written in Python", "it may read any job of the log")
    from . import registry

    if isinstance(config.alloc, str) and registry.python_target(config.alloc) is not None:
        refuse(f"--alloc {config.alloc}", "a policy written in Python may read any job of the log")
    if config.record_reservations:
        refuse("recorded reservations", "they are kept for the whole log")
    if transforms:
        refuse("--transform", "transforms change the whole log before the replay")
    if format not in (None, "swf"):
        refuse(f"--format {format}", "only SWF logs are read in chunks")


def simulate_stream(
    trace: str | Path,
    fabric: Fabric,
    config: RunConfig,
    out_dir: str | Path,
    *,
    chunk_jobs: int = DEFAULT_CHUNK_JOBS,
    read_options: dict[str, Any] | None = None,
    progress: Callable[[int, int | None], None] | None = None,
    down_nodes: list[int] | None = None,
    format: str | None = None,
) -> StreamedRun:
    """Replay the SWF log ``trace`` on ``fabric`` streamed, writing the results into
    ``out_dir`` (as :meth:`SimResult.write`; the same files as ``simulate`` then
    ``write``). ``read_options`` are read_swf's (lenient, cores_per_node, ...).
    ``progress(submitted, None)`` is called between steps. A KeyboardInterrupt stops
    the replay: the files then hold the jobs finished so far and the summary says
    ``"complete": false``. ``format``: ``"swf"``, or None to detect it (only SWF
    streams: an extended log with node lists, say, is refused)."""
    check_streamable(config, format=format)
    from .workload import detect_format

    fmt = format or detect_format(trace)
    if fmt != "swf":
        raise InputError("--stream", f"cannot be used with this log ({fmt}): only SWF logs are read in chunks; replay without --stream")
    stream = SwfStream(trace, chunk_rows=chunk_jobs, **(read_options or {}))
    out = Path(out_dir)
    parent = out.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    from .files import _staging_prefix

    # named as a staging directory: one a killed run leaves is removed by a later run's
    # files.replace_dir, as its staging directory would be
    with tempfile.TemporaryDirectory(prefix=f"{_staging_prefix(out.name)}{os.getpid()}-stream-", dir=parent) as tmp:
        run = _Run(stream, fabric, config, Path(tmp) / "jobs.parquet", down_nodes)
        complete = run.replay(progress)
        return run.write(out, complete)


class _Run:
    """The state of one streamed replay."""

    def __init__(self, stream: SwfStream, fabric: Fabric, config: RunConfig, jobs_path: Path, down_nodes: list[int] | None) -> None:
        self.stream = stream
        self.fabric = fabric
        self.config = config
        from .simulate import checked_down_nodes

        self.down_nodes = checked_down_nodes(down_nodes, fabric)
        self.jobs_path = jobs_path
        self.writer: parquet_out.TableWriter | None = None
        self.schema: pa.Schema | None = None  # jobs.parquet's, as the tables give it
        self.replayed = 0
        self.killed = 0
        self.stats = SummaryStats()
        self.util: BusySamples | None = None
        self.skipped_cols: list[dict[str, np.ndarray]] = []
        self.skipped_reasons: list[str] = []
        self.held: list[tuple[int, dict[str, np.ndarray]]] = []  # (first row, columns) not drained yet
        self.over_walltime = 0
        self.appended = 0  # rows given to the engine
        self.passes = 0
        self.kill_rule = ""
        self.sim: Any = None
        self.empty: pa.Table | None = None  # jobs.parquet's schema, for a run without finished jobs
        self._closed = False  # the temporary jobs file has its footer
        self._check: Callable[[], None] = lambda: None  # raises KeyboardInterrupt once ^C was pressed

    # -- the replay

    def replay(self, progress: Callable[[int, int | None], None] | None) -> bool:
        chunks = self.stream.chunks()
        first = next(chunks, None)
        self._start(first)  # (a ^C before the engine exists ends the command, as the whole replay's reading)
        complete = True
        # ^C is taken between steps only (a flag, checked at points where every finished
        # job is either still in the engine or fully accounted for): one in the middle of
        # a drain would lose the jobs it had taken out of the engine
        stop = {"asked": False}

        def ask_stop(signum: int, frame: Any) -> None:
            stop["asked"] = True

        def check() -> None:
            if stop["asked"]:
                raise KeyboardInterrupt

        self._check = check
        previous = signal.signal(signal.SIGINT, ask_stop) if threading.current_thread() is threading.main_thread() else None
        try:
            nxt = next(chunks, None) if first is not None else None
            while nxt is not None:
                check()
                self._step(int(nxt["submit_s"][0]), progress)
                self._drain()
                self._append(nxt)
                check()
                nxt = next(chunks, None)
            check()
            self._step(None, progress)
            self._drain()
        except KeyboardInterrupt:
            complete = False
            self._interrupted()
        except RuntimeError as exc:
            raise SimulationError(str(exc)) from None
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        self.passes = int(self.sim.passes)
        return complete

    def _start(self, first: Workload | None) -> None:
        from . import _core, policies
        from .simulate import kill_at_walltime, new_simulation

        if first is None:  # no job to replay: an engine with none, as the whole replay's
            first = Workload(columns={c: np.zeros(0, np.int64) for c in ("job_id", "submit_s", "nodes", "walltime_s", "runtime_s", "procs", "line")}, source=self.stream.path, format="swf", settings=self.stream.settings)
        kill, self.kill_rule = kill_at_walltime(first, self.config)
        self.config = replace(self.config, kill_at_walltime=kill)
        config = self.config
        alloc = policies.resolve(config.alloc, self.fabric)
        options = policy_options(config)
        # record_reservations and queue_order are refused above (refusals), so the
        # engine is the whole replay's
        self.sim = new_simulation(_core, self.fabric, first, config, options, alloc, None, self.down_nodes)
        cols = first.columns
        spill = self.jobs_path.parent / "utilization.changes"
        self.util = BusySamples(int(cols["submit_s"][0]) if len(first) else 0, config.utilization_step_s, self.fabric.n_nodes, spill)
        self._hold(first)

    def _hold(self, w: Workload) -> None:
        cols = {c: w.columns[c] for c in ("job_id", "submit_s", "nodes", "walltime_s", "runtime_s", "line")}
        self.over_walltime += int(np.sum(cols["runtime_s"] > cols["walltime_s"]))
        self.held.append((self.appended, cols))
        self.appended += len(cols["job_id"])

    def _append(self, w: Workload) -> None:
        from .simulate import _switch_columns

        cols = w.columns
        try:
            self.sim.append(
                cols["job_id"], cols["submit_s"], cols["nodes"], cols["walltime_s"], cols["runtime_s"],
                **_switch_columns(w, self.config),
                **{c: cols[c] for c in ID_COLUMNS if c in cols},
            )
        except ValueError as exc:
            raise _append_error(w, int(self.sim.n_jobs), str(exc)) from None
        self._hold(w)

    def _step(self, before_s: int | None, progress: Callable[[int, int | None], None] | None) -> None:
        while not self.sim.step_until(before_s, max_instants=20_000):
            self._check()
            if progress is not None:
                progress(int(self.sim.submitted), None)
        if progress is not None:
            progress(int(self.sim.submitted), None)

    def _rows(self, first: int, n: int) -> dict[str, np.ndarray]:
        """The workload columns of rows ``first .. first + n`` (held since appended)."""
        parts = []
        for base, cols in self.held:
            a, b = max(first - base, 0), min(first + n - base, len(cols["job_id"]))
            if a < b:
                parts.append({c: v[a:b] for c, v in cols.items()})
        if len(parts) == 1:
            return parts[0]
        return {c: np.concatenate([p[c] for p in parts]) if parts else np.zeros(0, np.int64) for c in ("job_id", "submit_s", "nodes", "walltime_s", "runtime_s", "line")}

    def _forget(self, end: int) -> None:
        """Rows before ``end`` are drained: their columns are no longer needed."""
        while self.held and self.held[0][0] + len(self.held[0][1]["job_id"]) <= end:
            self.held.pop(0)

    def _drain(self) -> None:
        d = self.sim.drain()
        first = int(d["first_row"])
        n = len(d["status"])
        self._take(d, first, n, d["skipped"])
        self._forget(first + n)
        # every job not drained yet, or still to come, is submitted at or after the oldest
        # held row's submit (or the next chunk's first): samples before it are final
        oldest = int(self.held[0][1]["submit_s"][first + n - self.held[0][0]]) if self.held else self.sim.input_end
        if oldest is not None and self.util is not None:
            self.util.final_before(-((self.util.t0 - oldest) // self.util.step_s))
        _release()

    def _interrupted(self) -> None:
        """The jobs finished so far: the drained ones and those done in the window."""
        try:
            d = self.sim.drain()
            self._take(d, int(d["first_row"]), len(d["status"]), d["skipped"])
            first = int(self.sim.first_row)
            r = self.sim.results()
            self._take(r, first, len(r["status"]), self.sim.skipped())
        except KeyboardInterrupt:  # a second ^C: what was taken so far
            pass

    def _take(self, r: dict[str, np.ndarray], first: int, n: int, skipped: list[tuple[int, str]]) -> None:
        cols = self._rows(first, n)
        if skipped:
            rows = [row - first for row, _ in skipped]
            self.skipped_cols.append({c: cols[c][rows] for c in ("job_id", "submit_s", "nodes")})
            self.skipped_reasons += [why for _, why in skipped]
        part = res.finished_jobs(r, cols, self.fabric)
        if self.empty is None:
            self.empty = part.table.slice(0, 0)
        if not len(part.table):
            return
        self.replayed += len(part.table)
        self.killed += part.killed
        assert self.util is not None
        self.util.add(part.start, part.end, part.nodes)
        self.stats.add({"wait_s": part.wait, "bounded_slowdown": part.bsld, "aph": part.aph, "nodes": part.nodes})
        self._write_rows(part.table)

    def _write_rows(self, table: pa.Table) -> None:
        """Finished jobs into the temporary jobs file: the native writer holds them until
        a row group (res.JOBS_ROW_GROUP rows) is full, so the file's row groups are the
        whole replay's whatever the drains' sizes."""
        if self.writer is None:
            self.schema = table.schema
            # the run id is known at the end only: a stand-in of its length, patched then
            self.writer = parquet_out.TableWriter(self.jobs_path, "jobs", parquet_out.file_metadata(table.schema.metadata, _RUN_ID_STAND_IN), res.JOBS_ROW_GROUP)
        self.writer.write_table(table)

    # -- the files

    def _groups(self, columns: list[str] | None = None) -> Iterator[pa.Table]:
        """The finished jobs again, a row group at a time."""
        if not self._closed:
            return
        with pq.ParquetFile(str(self.jobs_path)) as f:
            for i in range(f.num_row_groups):
                yield f.read_row_group(i, columns=columns)
                _release()

    def write(self, out: Path, complete: bool) -> StreamedRun:
        if self.writer is None:
            # (no job finished: an empty table, of the whole replay's schema)
            assert self.empty is not None
            self._write_rows(self.empty)
        assert self.writer is not None
        self.writer.close()
        self._closed = True
        # the tables' own schema: one read back names a list's items "element", where the
        # whole replay's (Arrow's) say "item", which jobs.parquet's metadata records
        schema = self.schema
        assert schema is not None

        def stat_chunks() -> Iterator[dict[str, np.ndarray]]:
            for g in self._groups(list(STAT_COLUMNS)):
                yield {c: column_numpy(g.column(c)) for c in STAT_COLUMNS}

        stats = self.stats.finish(stat_chunks)
        assert self.util is not None
        if not self.replayed:
            self.util.t0, self.util.t1 = 0, -1
        skipped = res.SkippedJobs.of_rows(
            {c: np.concatenate([p[c] for p in self.skipped_cols]) if self.skipped_cols else np.zeros(0, np.int64) for c in ("job_id", "submit_s", "nodes")},
            list(range(len(self.skipped_reasons))),
            self.skipped_reasons,
        )
        summary = res.summary_of(
            self.stream.describe(),
            over_walltime=self.over_walltime,
            fabric=self.fabric,
            config=self.config,
            replayed=self.replayed,
            killed=self.killed,
            skipped_reasons=self.skipped_reasons,
            stats=stats,
            util=self.util,
            t0=self.util.t0,
            t1=self.util.t1,
            complete=complete,
            passes=self.passes,
        )
        summary["policy"]["kill_at_walltime_rule"] = self.kill_rule
        from .simulate import record_down_nodes

        record_down_nodes(summary, self.down_nodes)
        run_id = self._run_id(summary)
        summary["run_id"] = run_id

        def write_jobs(path: str) -> None:
            if _patch_run_id(self.jobs_path, run_id.encode()):
                try:
                    os.replace(self.jobs_path, path)
                except OSError:  # another file system (the temporary directory is beside --out)
                    shutil.copyfile(self.jobs_path, path)
                return
            # the footer was not as expected: encode the row groups again (same bytes)
            w = parquet_out.TableWriter(path, "jobs", parquet_out.file_metadata(schema.metadata, run_id.encode()), res.JOBS_ROW_GROUP)
            for g in self._groups():
                w.write_table(g.cast(schema))
            w.close()

        paths = res.write_result(out, run_id, write_jobs, self.util, lambda p: skipped.write(p, run_id.encode()), self.fabric, summary)
        return StreamedRun(summary, paths)

    def _run_id(self, summary: dict[str, Any]) -> str:
        """SimResult.run_id of the same summary and jobs: the summary, then each column
        of job ids, start and end times, then the node ranges' offsets, firsts and
        counts, every array whole (SHA-256 reads them as one stream of bytes)."""
        h = hashlib.sha256()
        h.update(json.dumps({k: v for k, v in summary.items() if k != "run_id"}, sort_keys=True, default=str).encode())
        for name in ("job_id", "start_s", "end_s"):
            for g in self._groups([name]):
                for chunk in g.column(name).chunks:
                    h.update(np.ascontiguousarray(column_numpy(chunk)))  # type: ignore[arg-type]  # ndarray has the buffer protocol
        for k in range(3):  # range offsets (continued across groups), firsts, counts
            base = 0
            for i, g in enumerate(self._groups([NODE_RANGES])):
                a = table_ranges(g)[k]
                if k == 0:
                    a = a + base if i == 0 else a[1:] + base
                    base = int(a[-1])
                h.update(np.ascontiguousarray(a))  # type: ignore[arg-type]  # ndarray has the buffer protocol
        return h.hexdigest()[:16]


def _release() -> None:
    """Hand the memory Arrow's allocator keeps after a chunk back to the system: it keeps
    freed blocks for reuse (mimalloc, jemalloc), which made a streamed replay's memory
    creep up by tens of MiB with every pass over the written row groups."""
    pa.default_memory_pool().release_unused()


#: What the temporary jobs file carries as its run id until the run id is known: as long
#: as one (16 characters), not hexadecimal, so it cannot be mistaken for one.
_RUN_ID_STAND_IN = b"run-id-not-known"


def _patch_run_id(path: Path, run_id: bytes) -> bool:
    """Put ``run_id`` in place of the stand-in in the Parquet footer of ``path``: the
    metadata value itself and the Arrow schema the footer keeps (base64 of its IPC
    form, which holds the value as plain bytes). Both are as long as before, so the
    file becomes the one written with the run id from the start, byte for byte. False
    (nothing changed) when the footer does not hold each exactly once."""
    assert len(run_id) == len(_RUN_ID_STAND_IN)
    arrow = pq.ParquetFile(str(path)).metadata.metadata.get(b"ARROW:schema")
    with open(path, "r+b") as f:
        f.seek(-8, os.SEEK_END)
        size = int.from_bytes(f.read(4), "little")
        f.seek(-8 - size, os.SEEK_END)
        footer = f.read(size)
        if arrow is None or base64.b64encode(base64.b64decode(arrow)) != arrow:
            return False
        schema = base64.b64decode(arrow)
        if schema.count(_RUN_ID_STAND_IN) != 1 or footer.count(arrow) != 1:
            return False
        new_arrow = base64.b64encode(schema.replace(_RUN_ID_STAND_IN, run_id))
        patched = footer.replace(arrow, new_arrow)
        if patched.count(_RUN_ID_STAND_IN) != 1 or len(new_arrow) != len(arrow):
            return False
        patched = patched.replace(_RUN_ID_STAND_IN, run_id)
        f.seek(-8 - size, os.SEEK_END)
        f.write(patched)
    return True


def _append_error(w: Workload, first_row: int, message: str) -> InputError:
    """The engine's refusal of an appended row, naming the log's file and line (its rows
    are numbered from the first of the whole replay)."""
    m = re.match(r"job row (\d+) ", message)
    if m and 0 <= int(m.group(1)) - first_row < len(w):
        line = int(w.columns["line"][int(m.group(1)) - first_row])
        return InputError(w.source, message, line=line if line > 0 else None)
    return InputError(w.source, message)

"""Running a sweep: one task per run (a local process pool, or Dask), each run's directory
published whole.

Layout of a sweep directory ``DIR``::

    DIR/sweep.toml           the sweep file of the last start (a copy)
    DIR/plan.json            that sweep's run ids, in matrix order, with their labels
    DIR/runs/<run_id>/       one complete run: spec.json, jobs.parquet, utilization.parquet,
                             skipped.parquet, summary.json, fabric.json, run.json
                             (a failed run: spec.json, error.txt, run.json)
    DIR/runs/.tmp-*          a run being written (removed at the next start)
    DIR/catalog.duckdb       every run's specification and summary metrics (driver only)
    DIR/report.html          figures across the matrix

**Atomicity.** A worker writes a run into ``runs/.tmp-<run_id>-<random>/``, writes
``run.json`` (the marker) last, then renames the whole directory to ``runs/<run_id>``:
a run directory either does not exist or is complete. A run is *done* when
``runs/<run_id>/run.json`` says ``"status": "complete"``; a failed run is tried again at
the next start. A killed sweep leaves at most ``.tmp-*`` directories, which the next start
removes (a lock file, ``DIR/.lock``, keeps two drivers off the same directory).

**Keys.** ``run_id`` hashes the run's whole specification (see :mod:`.spec`) including the
trace's SHA-256 and the toposched version: changing anything that can change a result
gives a new run; re-running the same sweep skips every complete run.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import socket
import sys
import time
import traceback
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Generator

from .. import __version__
from ..errors import ToposchedError
from .layout import MARKER, RUNS, TMP_PREFIX, SweepLock, run_status
from .spec import RunSpec, Sweep, sha256_file
from ..files import RESULT_FILES, is_atomic_temp
from ..files import file_mode as _file_mode
from ..files import write_text_atomic as _write_atomic


__all__ = ["SweepOutcome", "execute_run", "run_status", "run_sweep", "clean_stale", "SweepLock"]


# ----------------------------------------------------------------------------- files


def _fix_modes(directory: Path) -> None:
    """Files made with mkstemp are 0600; give a run's files the usual mode, so that the
    others who share a sweep directory can read them."""
    mode = _file_mode()
    for p in directory.iterdir():
        if p.is_file():
            os.chmod(p, mode)


def _json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def _is_complete(run_dir: Path, run_id: str | None = None) -> bool:
    """Whether ``run_dir`` holds a complete run (of ``run_id``, when given: a directory
    named by the caller, as compare's ``runs/linear__none``, may hold an older run of other
    settings, which is to be replaced)."""
    m = run_status(run_dir)
    if m is None or m["status"] != "complete" or (run_id is not None and m.get("run_id") != run_id):
        return False
    # a marker beside a file since deleted (by hand, a disk cleaner) is a damaged run, to be
    # run again: kept, it ended a compare with "summary.json: No such file or directory"
    return all((run_dir / name).is_file() for name in ("spec.json", *RESULT_FILES))


def _publish(tmp: Path, final: Path, run_id: str | None = None) -> str:
    """Rename the finished ``tmp`` directory to ``final``. If ``final`` already holds a
    complete run of ``run_id`` (another worker got there first), keep it and drop ``tmp``;
    if it holds a failed run or another run, replace it. Returns the status left in
    ``final``."""
    try:
        os.rename(tmp, final)
        return _status(final)
    except OSError as exc:
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise
    if _is_complete(final, run_id):
        shutil.rmtree(tmp, ignore_errors=True)
        return "complete"
    old = final.parent / f"{TMP_PREFIX}old-{final.name}-{uuid.uuid4().hex[:8]}"
    os.rename(final, old)
    os.rename(tmp, final)
    shutil.rmtree(old, ignore_errors=True)
    return _status(final)


def _status(run_dir: Path) -> str:
    """The finished run's status ("complete" or "failed", the only ones run_status returns);
    "complete" when it has no marker."""
    marker = run_status(run_dir)
    return "complete" if marker is None else str(marker["status"])


# ----------------------------------------------------------------------------- one run (on a worker)


@lru_cache(maxsize=4)
def _read_cached(trace: str, sha: str, fmt: str, reader_json: str) -> Any:
    """Read a trace once per worker process, after checking its content is the one the
    run's key was computed from."""
    from ..workload import read_trace

    actual = sha256_file(trace)
    if actual != sha:
        raise ToposchedError(f"{trace}: the file changed since the sweep was planned (sha256 {actual[:12]}..., expected {sha[:12]}...); start the sweep again")
    options = {k: v for k, v in json.loads(reader_json).items() if v is not None}
    return read_trace(trace, format=fmt, **options)


@lru_cache(maxsize=4)
def _transformed_cached(trace: str, sha: str, fmt: str, reader_json: str, transforms: tuple[str, ...], fabric_nodes: int) -> Any:
    """The trace read (once per worker) and transformed (once per worker and transforms):
    a compare's runs all share one transformed workload."""
    w = _read_cached(trace, sha, fmt, reader_json)
    if transforms:
        from ..transforms import apply_transforms

        w = apply_transforms(w, list(transforms), fabric_nodes=fabric_nodes)
    return w


def _build_inputs(spec: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The workload (read, transformed, sped up), the fabric and the RunConfig of a run."""
    from ..simulate import RunConfig
    from ..topology import load_fabric

    wl = spec["workload"]
    fab = spec["fabric"]
    if fab["kind"] == "topology.conf" and fab.get("conf_sha256") and sha256_file(fab["system"]) != fab["conf_sha256"]:
        raise ToposchedError(f"{fab['system']}: the file changed since the sweep was planned; start the sweep again")
    from .spec import _network_file_sha256, policy_code_sha256

    net, net_sha = spec["scenario"].get("network"), spec["scenario"].get("network_sha256")
    actual = _network_file_sha256(net) if net and net_sha else ""
    if actual and actual != net_sha:
        # a network spec file (or its bins table) edited while the sweep runs, as a trace
        # can be ("": it does not read here; the run itself says why)
        raise ToposchedError(f"{net}: the network spec's file changed since the sweep was planned; start the sweep again")
    for key, planned in (spec.get("policy_code_sha256") or {}).items():
        # as for the trace: a policy written in Python edited while the sweep runs gave
        # results under the run id of its code as planned (editing a policy gives new run
        # ids, docs/sweeps.md), kept and skipped as such by every later start
        target = spec["config"].get(key)
        if policy_code_sha256(target) != planned:
            raise ToposchedError(f"{target}: the policy's source file changed since the sweep was planned; start the sweep again")
    fabric = load_fabric(fab["system"], lenient=bool(fab.get("lenient")))
    w = _transformed_cached(wl["trace"], wl["trace_sha256"], wl["format"], json.dumps(wl["reader"], sort_keys=True), tuple(wl["transforms"]), fabric.n_nodes)
    from ..transforms import apply_scenario

    # "none" too: the run's summary and jobs then say which scenario it ran, as every run
    # of compare's always did (a compare is a sweep: same specification, same files)
    w = apply_scenario(w, spec["scenario"]["speedup"], spec["scenario"]["seed"])
    config = RunConfig(**spec["config"])
    return w, fabric, config


def execute_run(task: dict[str, Any]) -> dict[str, Any]:
    """Run one sweep run and publish its directory; never raises for a failing run.

    ``task``: ``{"run_id", "spec", "runs_dir"}`` and optionally ``"dir"``, the directory's
    name under ``runs_dir`` (default: the run id). Returns ``{"run_id", "status",
    "error", "elapsed_s", "skipped"}``; ``status`` is ``"complete"`` or ``"failed"``
    (the traceback is in the run's ``error.txt``)."""
    from ..startup import keep_pandas_unloaded

    keep_pandas_unloaded()  # in a fresh worker, pyarrow's first array would import pandas (0.5 s)
    from ..simulate import simulate

    run_id = task["run_id"]
    spec = task["spec"]
    runs_dir = Path(task["runs_dir"])
    name = task.get("dir") or run_id
    final = runs_dir / name
    if _is_complete(final, run_id):
        return {"run_id": run_id, "status": "complete", "error": None, "elapsed_s": 0.0, "skipped": True}
    runs_dir.mkdir(parents=True, exist_ok=True)
    tmp = runs_dir / f"{TMP_PREFIX}{name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    status, error = "complete", None
    timings: dict[str, float] = {}
    try:
        (tmp / "spec.json").write_text(_json(spec), encoding="utf-8")
        _register_python_policies(task)
        if spec.get("toposched_version") != __version__:
            raise ToposchedError(
                f"this worker runs toposched {__version__} but the sweep was planned with {spec.get('toposched_version')}: "
                "install the same version on the workers as on the machine that starts the sweep"
            )
        w, fabric, config = _build_inputs(spec)
        timings["prepare_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        result = simulate(w, fabric, config)
        timings["simulate_s"] = time.perf_counter() - t1
        if not result.summary.get("complete", True):  # Ctrl-C reached the worker: not a result
            shutil.rmtree(tmp, ignore_errors=True)
            return {"run_id": run_id, "status": "interrupted", "error": "interrupted", "elapsed_s": time.perf_counter() - t0, "skipped": False}
        result.write(tmp)
    except Exception as exc:  # noqa: BLE001 - a failing run is recorded, the sweep goes on
        status = "failed"
        error = f"{type(exc).__name__}: {exc}"
        try:
            (tmp / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
        except BaseException:
            _remove_unpublished(tmp)
            raise
    elapsed = time.perf_counter() - t0
    marker = {
        "run_id": run_id,
        "status": status,
        "error": error,
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "elapsed_s": round(elapsed, 4),
        **{k: round(v, 4) for k, v in timings.items()},
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "toposched_version": __version__,
    }
    try:
        _fix_modes(tmp)
        _write_atomic(tmp / MARKER, _json(marker))  # the marker last: the run is whole
        status = _publish(tmp, final, run_id)
    except BaseException:
        _remove_unpublished(tmp)
        raise
    return {"run_id": run_id, "status": status, "error": error, "elapsed_s": elapsed, "skipped": False}


def _remove_unpublished(tmp: Path) -> None:
    """Remove a run's temporary directory that could not be published (a full disk: its
    error.txt or its marker could not be written). Left, every such run kept a
    ``.tmp-*`` directory (two, with the driver's record of the failure) on the full disk
    until the next start."""
    shutil.rmtree(tmp, ignore_errors=True)


def record_lost_run(runs_dir: Path, run: RunSpec, error: str, details: str, since: float | None = None) -> None:
    """A run whose task itself died (worker killed, unpicklable, ...): the driver writes
    its failed directory, the same way a worker would. A record the worker wrote itself
    (complete, or failed after ``since``, the start of this execution) is kept: it holds
    the run's real result or error."""
    final = runs_dir / run.dir
    if _is_complete(final, run.run_id):
        return
    if since is not None and run_status(final) is not None:
        try:
            if (final / MARKER).stat().st_mtime >= since:
                return
        except OSError:
            pass
    tmp = runs_dir / f"{TMP_PREFIX}{run.dir}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        (tmp / "spec.json").write_text(_json(run.spec), encoding="utf-8")
        (tmp / "error.txt").write_text(details, encoding="utf-8")
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        marker = {"run_id": run.run_id, "status": "failed", "error": error, "started_at": now, "finished_at": now, "elapsed_s": 0.0, "host": socket.gethostname(), "pid": os.getpid(), "toposched_version": __version__}
        _write_atomic(tmp / MARKER, _json(marker))
        _publish(tmp, final, run.run_id)
    except BaseException:
        _remove_unpublished(tmp)
        raise


# ----------------------------------------------------------------------------- the driver


def clean_stale(out: Path) -> list[str]:
    """Remove what a killed sweep can leave: ``runs/.tmp-*`` directories, temporary
    catalog and report files. Call only while holding the lock. Returns what was removed.

    A directory of ``runs/`` without a marker is kept: toposched never publishes one (a
    run is renamed into place with its marker), so it is someone else's -- a ``toposched
    simulate --out DIR/runs/NAME``, notes. They were deleted, whole, by the first sweep
    started on DIR. (A run whose directory has a damaged marker is run again, and its
    directory replaced then.)"""
    removed = []
    runs = out / RUNS
    if runs.is_dir():
        for p in sorted(runs.iterdir()):
            if p.name.startswith(TMP_PREFIX):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                removed.append(str(p))
            elif is_atomic_temp(p.name) and p.is_file():
                p.unlink(missing_ok=True)
                removed.append(str(p))
    # (a user's own .notes.tmp was removed too: only write_atomic's own temporary files go)
    for p in sorted(q for q in out.glob(".*.tmp") if is_atomic_temp(q.name) and q.is_file()) + sorted(out.glob(".catalog-*")):
        p.unlink(missing_ok=True)
        removed.append(str(p))
    return removed


@dataclass
class SweepOutcome:
    """What a sweep did: runs planned, skipped (already complete), finished now, failed."""

    out: Path
    planned: int
    skipped: int
    completed: int
    failed: list[tuple[RunSpec, str]] = field(default_factory=list)
    cleaned: list[str] = field(default_factory=list)
    interrupted: bool = False
    elapsed_s: float = 0.0
    report: Path | None = None
    catalog: Path | None = None


def _write_plan(out: Path, sweep: Sweep) -> None:
    plan = {
        "sweep": sweep.name,
        "description": sweep.description,
        "source": str(sweep.path),
        "toposched_version": __version__,
        "runs": [{"run_id": r.run_id, **({"dir": f"{RUNS}/{r.dir}"} if r.dir_name else {}), **r.labels} for r in sweep.runs],
    }
    _write_atomic(out / "plan.json", _json(plan))
    if sweep.text:  # a compare's matrix has no sweep file
        _write_atomic(out / "sweep.toml", sweep.text)


def _make_client(scheduler: str | None, scheduler_file: str | None, workers: int | None) -> tuple[Any, Any]:
    import logging

    from distributed import Client, LocalCluster

    if scheduler or scheduler_file:
        where = scheduler or f"the scheduler file {scheduler_file}"
        address = scheduler or _scheduler_file_address(str(scheduler_file))
        try:
            client = Client(address, timeout="30s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ToposchedError(f"cannot reach the Dask scheduler at {where}: {type(exc).__name__}: {exc}") from None
        return client, None
    n = workers or os.cpu_count() or 1
    # The cluster starts with SIGINT blocked in this thread: its worker processes (and the
    # thread that runs its event loop and starts them) inherit the mask, so Ctrl-C stops
    # the driver, which closes the cluster, instead of a traceback from every worker. A
    # Ctrl-C meanwhile is kept and interrupts the driver once the cluster is up, which is
    # then closed (_sigint_deferred): it was ignored (SIG_IGN), and the sweep ran to its
    # end and exited 0.
    import dask

    cluster = None
    try:
        # A run whose worker process dies (killed by the OS for memory, a crash) is not
        # handed by Dask to worker after worker (each attempt would kill one): the driver
        # tries it once more itself (_execute), then records it as failed with the cause.
        # One task at a time per worker thread (saturation 1.0), so that a dying worker
        # takes as few neighbours with it as possible.
        with _sigint_deferred(), dask.config.set({"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}):
            cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                scheduler_port=0,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        return Client(cluster), cluster
    except BaseException:
        if cluster is not None:
            _close_quietly(cluster)
        raise


def _close_quietly(closable: Any) -> None:
    """Close a Dask client or cluster, even during a second Ctrl-C: its processes must not
    outlive the driver."""
    with _sigint_blocked():
        try:
            closable.close(timeout=10)
        except Exception:  # noqa: BLE001 - closing what may already be broken
            pass


def _scheduler_file_address(path: str, wait_s: float = 30.0) -> str:
    """The scheduler's address from its ``--scheduler-file``, waiting up to ``wait_s`` for
    the file to appear (a scheduler started at the same time). Dask's Client read it
    itself: a file that never came was waited for for ever, ten times a second, and one
    that is not a scheduler file ended in an AssertionError ("internal error")."""
    end = time.monotonic() + wait_s
    while not os.path.exists(path):
        if time.monotonic() > end:
            raise ToposchedError(
                f"{path}: no such scheduler file (waited {wait_s:g} s for the Dask scheduler to write it; "
                f"start one with `dask scheduler --scheduler-file {path}`, or give --scheduler ADDRESS)"
            )
        time.sleep(0.1)
    problem = ""
    for _ in range(20):  # a file being written: read it again a moment later
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except OSError as exc:
            raise ToposchedError(f"{path}: cannot read the scheduler file: {exc.strerror or exc}") from None
        except ValueError:
            problem = "not JSON"
        else:
            address = doc.get("address") if isinstance(doc, dict) else None
            if isinstance(address, str) and address:
                return address
            problem = "no \"address\" in it"
        time.sleep(0.05)
    raise ToposchedError(f"{path}: not a Dask scheduler file ({problem}; `dask scheduler --scheduler-file {path}` writes one)")


def run_sweep(
    sweep: Sweep,
    out: str | Path,
    *,
    scheduler: str | None = None,
    scheduler_file: str | None = None,
    workers: int | None = None,
    console: Any = None,
    progress: bool = True,
    report: bool = True,
    catalog_every_s: float = 30.0,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    dask: bool = False,
    locked: bool = False,
) -> SweepOutcome:
    """Run every run of ``sweep`` not yet complete in ``out`` and rebuild the catalog and
    the report. A failing run is recorded and reported; the others go on.

    The runs go to a pool of ``workers`` processes on this machine (default: its cores),
    or, with ``dask`` or a ``scheduler`` / ``scheduler_file``, to Dask (a local cluster of
    ``workers`` processes, or the scheduler given). Either way each run publishes its
    directory whole (:func:`execute_run`). ``locked``: the caller holds ``out``'s
    :class:`SweepLock` (compare and frontier, which replace their own files in ``out``)."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        # as --workers 0 is: the pool took 0 as "every core" and a negative count as 1
        raise ValueError(f"run_sweep(): workers must be a whole number >= 1 (None: the machine's cores), got {workers!r}")
    use_dask = bool(dask or scheduler or scheduler_file)
    from rich.console import Console

    from .catalog import build_catalog

    console = console or Console(stderr=True)
    t_start = time.perf_counter()
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    runs_dir = out / RUNS
    runs_dir.mkdir(exist_ok=True)
    with _sigterm_as_interrupt(), (contextlib.nullcontext() if locked else SweepLock(out)):
        cleaned = clean_stale(out)
        pending = [r for r in sweep.runs if not _is_complete(runs_dir / r.dir, r.run_id)]
        outcome = SweepOutcome(out=out, planned=len(sweep.runs), skipped=len(sweep.runs) - len(pending), completed=0, cleaned=cleaned)
        _write_plan(out, sweep)
        outcome.catalog = build_catalog(out)
        if pending:
            try:
                _execute(pending, runs_dir, outcome, console, use_dask, scheduler, scheduler_file, workers, progress, catalog_every_s, on_result)
            except KeyboardInterrupt:
                outcome.interrupted = True
            # what is on disk is what counts (an interrupt can come before a result is read)
            outcome.completed = sum(_is_complete(runs_dir / r.dir, r.run_id) for r in pending)
            if not outcome.interrupted:
                # every run has its result, and no task is running any more: what a worker
                # that died mid-run left (its .tmp-* directory, a partial jobs.parquet) goes
                # now, not at the next start (a sweep that succeeded may have none). After
                # an interrupt a run on a remote Dask worker may still be writing.
                clean_stale(out)
        outcome.catalog = _catalog_or_warning(out, console)
        if report:
            from ..reporting.sweep import write_report

            try:
                outcome.report = write_report(out)
            except Exception as exc:  # noqa: BLE001 - the runs are safe; say why there is no report
                console.print(f"[yellow]warning:[/] no report: {type(exc).__name__}: {exc}")
    outcome.elapsed_s = time.perf_counter() - t_start
    return outcome


class _sigterm_as_interrupt:
    """SIGTERM (a batch system's stop, `kill`) handled as Ctrl-C meanwhile, in the main
    thread: the runs not started are cancelled, the finished ones kept, the sweep can be
    resumed. It ended the driver at once (Python's default), which left a Dask cluster's
    processes and the catalog behind, said nothing, and exited -15."""

    def __enter__(self) -> None:
        def stop(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt

        try:
            self.previous: Any = signal.signal(signal.SIGTERM, stop)
        except ValueError:  # not the main thread
            self.previous = None

    def __exit__(self, *exc: Any) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


def _catalog_or_warning(out: Path, console: Any) -> Path | None:
    """Rebuild the catalog once runs have finished; if it cannot be written (a full disk),
    say so and go on: the runs are safe on disk, and `toposched runs` rebuilds it. (The
    error ended the sweep: the runs still to do were not started, and the finished ones'
    outcome was never printed.)"""
    from rich.markup import escape

    from .catalog import build_catalog

    try:
        return build_catalog(out)
    except OSError as exc:
        console.print(f"[yellow]warning:[/] {escape(str(exc.filename))}: {escape(str(exc.strerror or exc))} (`toposched runs {escape(str(out))}` builds it again)", highlight=False, soft_wrap=True)
        return None


def _task(run: RunSpec, runs_dir: Path) -> dict[str, Any]:
    from .. import registry

    task: dict[str, Any] = {"run_id": run.run_id, "spec": run.spec, "runs_dir": str(runs_dir)}
    if run.dir_name:
        task["dir"] = run.dir_name
    # A policy written in Python and registered in this process (registry.register) is
    # unknown to a worker process, whose run failed with 'unknown allocation policy': the
    # task carries its module:Class, and the worker registers it under the same name.
    alloc = run.spec.get("config", {}).get("alloc")
    entry = registry._PYTHON.get(alloc) if isinstance(alloc, str) else None
    if entry is not None and entry.python:
        task["python_policies"] = {alloc: entry.python}
    return task


def _register_python_policies(task: dict[str, Any]) -> None:
    """Register in this (worker) process the policies the driver registered for the run."""
    from .. import registry

    for name, target in (task.get("python_policies") or {}).items():
        # not only when the name is unknown here: an installed entry point of that name
        # (another class) ran in the worker in place of the driver's registered one
        if registry.python_target(name) != target:
            registry.register(target, name=name)


def _lost(runs_dir: Path, run: RunSpec, exc: BaseException | None, err: str | None, since: float) -> dict[str, Any]:
    """A run whose task died: record it as failed (record_lost_run) and say so."""
    err = err or f"{type(exc).__name__}: {exc}"
    try:
        record_lost_run(runs_dir, run, err, "".join(traceback.format_exception(exc)) if exc is not None else err + "\n", since=since)
    except OSError:
        pass
    return {"run_id": run.run_id, "status": "failed", "error": err, "elapsed_s": 0.0, "skipped": False}


def _ignore_sigint() -> None:
    # Ctrl-C is the driver's business: it cancels the runs not started and lets the
    # running ones finish (each publishes a whole directory or nothing).
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker_init(driver_pid: int) -> None:
    """Initializer of a pool worker (_pool_round). Ctrl-C is ignored (_ignore_sigint); the
    worker was started with SIGINT blocked (_sigint_blocked), so that a Ctrl-C while it
    started (importing toposched) printed no KeyboardInterrupt traceback of its own:
    ignoring the signal drops one pending, then it is unblocked.

    A worker whose driver is gone (killed with SIGKILL, or SIGTERM, which Python does not
    catch) stops: it waited for work forever otherwise, one idle process per core left
    behind by every killed sweep. A run it was writing is a ``.tmp-*`` directory, which
    the next start removes."""
    _ignore_sigint()
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _exit_with_driver(driver_pid)


def _exit_with_driver(driver_pid: int) -> None:
    """End this process when its parent ``driver_pid`` ends: at once on Linux (the kernel's
    parent-death signal), else within half a second (a thread watching the parent)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) == 0:
                if os.getppid() != driver_pid:  # gone before the signal was asked for
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass
    import threading

    def watch() -> None:
        while os.getppid() == driver_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="toposched-driver-watch", daemon=True).start()


class _sigint_blocked:
    """SIGINT blocked in this thread meanwhile: a worker process started then (the pool
    starts them as tasks are submitted) inherits the mask, and gets a Ctrl-C only once
    its initializer ignores it. A Ctrl-C meanwhile reaches the driver when it is done."""

    def __enter__(self) -> None:
        self.old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if hasattr(signal, "pthread_sigmask") else None

    def __exit__(self, *exc: Any) -> None:
        if self.old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self.old)


class _sigint_deferred(_sigint_blocked):
    """SIGINT blocked in this thread (as _sigint_blocked: what starts meanwhile inherits
    the mask) and, in the main thread, a Ctrl-C that another thread receives meanwhile, or
    a SIGTERM (_sigterm_as_interrupt), kept, not raised: KeyboardInterrupt is raised once
    the block is done. (Raised inside Dask's LocalCluster while it started, it left a
    cluster half made, which Dask's own exit hook failed to close, with a traceback.)"""

    def __enter__(self) -> None:
        self.got: list[int] = []
        self.previous: dict[int, Any] = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self.previous[sig] = signal.signal(sig, lambda signum, frame: self.got.append(signum))
            except ValueError:  # not the main thread: no handler of ours runs here anyway
                break
        super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        for sig, previous in self.previous.items():
            # the handlers back before the mask: a Ctrl-C pending in this thread comes now
            signal.signal(sig, previous)
        try:
            super().__exit__(*exc)  # a pending Ctrl-C runs the restored handler here
        finally:
            if self.got and exc[0] is None:
                raise KeyboardInterrupt


_Results = Generator[tuple[RunSpec, dict[str, Any]], None, None]


def _local_results(pending: list[RunSpec], runs_dir: Path, workers: int | None, since: float) -> _Results:
    """Run ``pending`` in a pool of ``workers`` processes on this machine (default: its
    cores, never more than the runs; 1 runs them in this process), yielding each run's
    result as it finishes. Workers are started with ``spawn`` (the native core may hold
    threads, so ``fork`` is avoided); each reads and transforms a workload once
    (``_transformed_cached``) and keeps it for its next runs.

    A worker that dies (killed for memory, a crash) breaks the pool, and the runs then in
    flight cannot be told apart: each is tried once more alone, in a fresh one-worker pool
    (a run that kills its worker again is recorded as failed; a neighbour gives its own
    result), and the runs not started go on in a fresh pool, as Dask does (_dask_results)."""
    n = max(1, min(workers or os.cpu_count() or 1, len(pending)))
    if n == 1:
        for run in pending:
            try:
                res = execute_run(_task(run, runs_dir))
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - a panic of the core: record it
                res = _lost(runs_dir, run, exc, None, since)
            yield run, res
        return
    todo = list(pending)
    while todo:
        suspects, todo = yield from _pool_round(todo, runs_dir, n, since)
        for run in suspects:
            again, _ = yield from _pool_round([run], runs_dir, 1, since)
            if again:
                err = ("the worker process died while running this run, twice (killed by the system, e.g. for "
                       "lack of memory, or crashed); it is not tried again")
                yield run, _lost(runs_dir, run, None, err, since)


def _pool_round(runs: list[RunSpec], runs_dir: Path, n: int, since: float) -> Generator[tuple[RunSpec, dict[str, Any]], None, tuple[list[RunSpec], list[RunSpec]]]:
    """Run ``runs`` in a fresh pool of ``n`` spawned processes, at most ``n`` in flight
    (so that a run in flight is a run on a worker), yielding each result. Returns, if a
    worker died, the runs in flight then and those not started; else two empty lists."""
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool
    from multiprocessing import get_context

    todo = list(runs)
    inflight: dict[Future[dict[str, Any]], RunSpec] = {}
    with ProcessPoolExecutor(n, mp_context=get_context("spawn"), initializer=_worker_init, initargs=(os.getpid(),)) as pool:
        try:
            while todo or inflight:
                try:
                    while todo and len(inflight) < n:
                        with _sigint_blocked():
                            fut = pool.submit(execute_run, _task(todo[0], runs_dir))
                        inflight[fut] = todo[0]
                        todo.pop(0)
                except BrokenProcessPool:
                    return list(inflight.values()), todo
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                broken: list[RunSpec] = []
                for fut in finished:
                    run = inflight.pop(fut)
                    try:
                        res = fut.result()
                    except BrokenProcessPool:
                        broken.append(run)
                        continue
                    except Exception as exc:  # noqa: BLE001 - the task itself failed (unpicklable, a panic, ...)
                        res = _lost(runs_dir, run, exc, None, since)
                    yield run, res
                if broken:  # the pool is gone, and every run in flight with it
                    return broken + list(inflight.values()), todo
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return [], []


def _dask_results(
    pending: list[RunSpec], runs_dir: Path, scheduler: str | None, scheduler_file: str | None, workers: int | None, since: float
) -> _Results:
    """Run ``pending`` as Dask tasks (a local cluster of ``workers`` processes, or the
    scheduler given), yielding each run's result as it finishes."""
    from distributed import as_completed

    by_id = {r.run_id: r for r in pending}
    client, cluster = _make_client(scheduler, scheduler_file, workers)
    futures = []
    try:
        for r in pending:
            futures.append(client.submit(execute_run, _task(r, runs_dir), key=f"toposched-run-{r.run_id}-{uuid.uuid4().hex[:6]}", pure=False, retries=0))
        key_to_id = {f.key: r.run_id for f, r in zip(futures, pending)}
        retried: set[str] = set()
        completed = as_completed(futures)
        for fut in completed:
            run_id = key_to_id[fut.key]
            run = by_id[run_id]
            try:
                res = fut.result()
            except Exception as exc:  # noqa: BLE001 - the task died (worker lost, ...)
                if type(exc).__name__ == "KilledWorker" and run_id not in retried:
                    # The worker died while this run was on it: this run killed it, or
                    # shared the worker with the one that did. Try it once more, alone
                    # on a fresh worker: a neighbour then gives its own result.
                    retried.add(run_id)
                    again = client.submit(execute_run, _task(run, runs_dir), key=f"toposched-run-{run_id}-{uuid.uuid4().hex[:6]}", pure=False, retries=0)
                    key_to_id[again.key] = run_id
                    futures.append(again)
                    completed.add(again)
                    continue
                err = None
                if type(exc).__name__ == "KilledWorker":
                    err = (
                        "the worker process died while running this run, twice (killed by the system, e.g. for "
                        f"lack of memory, or crashed); it is not tried again ({type(exc).__name__}: {exc})"
                    )
                res = _lost(runs_dir, run, exc, err, since)
            yield run, res
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    finally:
        _close_quietly(client)
        if cluster is not None:
            _close_quietly(cluster)
        sys.stderr.flush()


def _execute(
    pending: list[RunSpec],
    runs_dir: Path,
    outcome: SweepOutcome,
    console: Any,
    use_dask: bool,
    scheduler: str | None,
    scheduler_file: str | None,
    workers: int | None,
    show_progress: bool,
    catalog_every_s: float,
    on_result: Callable[[dict[str, Any]], None] | None,
) -> None:
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    since = time.time()
    results = _dask_results(pending, runs_dir, scheduler, scheduler_file, workers, since) if use_dask else _local_results(pending, runs_dir, workers, since)
    columns = [
        TextColumn("[bold]sweep"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("runs  [red]{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    last_catalog = time.monotonic()
    try:
        with Progress(*columns, console=console, disable=not show_progress, transient=False) as bar:
            task_id = bar.add_task("sweep", total=len(pending), failed=0)
            for run, res in results:
                if res["status"] == "complete":
                    outcome.completed += 1
                elif res["status"] == "interrupted":
                    raise KeyboardInterrupt
                else:
                    outcome.failed.append((run, res.get("error") or "failed"))
                    bar.console.print(
                        f"[red]run {run.dir} failed[/]: {escape(run.describe())}\n  {escape(str(res.get('error')))}\n  traceback: {escape(str(runs_dir / run.dir / 'error.txt'))}",
                        highlight=False,
                        soft_wrap=True,
                    )
                bar.update(task_id, advance=1, failed=len(outcome.failed))
                if on_result is not None:
                    on_result(res)
                if time.monotonic() - last_catalog > catalog_every_s:
                    _catalog_or_warning(runs_dir.parent, bar.console)
                    last_catalog = time.monotonic()
    finally:
        results.close()  # stops the workers: the pool, or the Dask client and cluster

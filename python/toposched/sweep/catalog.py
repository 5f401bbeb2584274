"""The catalog of a sweep directory: ``DIR/catalog.duckdb``.

Built from the run directories alone (``runs/<run_id>/spec.json``, ``run.json``,
``summary.json``), so it always says what is on disk. Only the driver writes it (never a
worker), and it is written whole: into a temporary file, then renamed over the old one, so
a reader never sees it half-built.

Tables and views (columns listed in docs/sweeps.md):

* ``runs``: one row per run directory, complete or failed: the run's specification
  (workload, transforms with one ``t_<kind>`` column per transform kind, fabric, taper,
  policies, scenario, seed, every RunConfig field) and its summary metrics.
* ``jobs``: a view over every complete run's ``jobs.parquet``, with ``run_id``.
* ``utilization``: a view over every complete run's ``utilization.parquet``, with ``run_id``.
"""

from __future__ import annotations

import errno
import json
import os
import uuid
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa

from .layout import MARKER, RUNS, run_status

CATALOG = "catalog.duckdb"

__all__ = ["CATALOG", "DEFAULT_COLUMNS", "build_catalog", "catalog_rows", "left_out", "query", "query_runs", "unlisted"]

#: Columns ``toposched runs`` shows unless told otherwise.
DEFAULT_COLUMNS = (
    "run_id",
    "status",
    "workload",
    "transforms",
    "fabric",
    "taper",
    "queue",
    "alloc",
    "speedup",
    "seed",
    "network",  # present when a run has a network setting; tells apart runs that differ by it only
    "wait_mean_s",
    "bsld_mean",
    "utilization",
    "aph_mean",
    "makespan_s",
)

# (column, arrow type); values come from _row().
_FIXED: list[tuple[str, pa.DataType]] = [
    ("run_id", pa.string()),
    ("status", pa.string()),
    ("error", pa.string()),
    ("in_plan", pa.bool_()),
    ("plan_index", pa.int64()),
    ("workload", pa.string()),
    ("trace", pa.string()),
    ("trace_sha256", pa.string()),
    ("format", pa.string()),
    ("reader", pa.string()),
    ("transforms", pa.string()),
    ("fabric", pa.string()),
    ("system", pa.string()),
    ("fabric_kind", pa.string()),
    ("fabric_nodes", pa.int64()),
    ("leaves", pa.int64()),
    ("pods", pa.int64()),
    ("nodes_per_leaf", pa.int64()),
    ("uplinks_per_leaf", pa.int64()),
    ("taper", pa.float64()),
    ("queue", pa.string()),
    ("alloc", pa.string()),
    ("speedup", pa.string()),
    ("seed", pa.uint64()),  # 0 to 2^64 - 1, as --seed takes it
]
_METRICS: list[tuple[str, pa.DataType]] = [
    ("jobs", pa.int64()),
    ("replayed", pa.int64()),
    ("skipped_never_fit", pa.int64()),
    ("killed_at_walltime", pa.int64()),
    ("makespan_s", pa.int64()),
    ("utilization", pa.float64()),
    ("wait_mean_s", pa.float64()),
    ("wait_median_s", pa.float64()),
    ("wait_p95_s", pa.float64()),
    ("wait_max_s", pa.float64()),
    ("bsld_mean", pa.float64()),
    ("bsld_median", pa.float64()),
    ("bsld_p95", pa.float64()),
    ("bsld_max", pa.float64()),
    ("aph_mean", pa.float64()),
    ("aph_median", pa.float64()),
    ("aph_p95", pa.float64()),
    ("aph_max", pa.float64()),
    ("passes", pa.int64()),
    ("elapsed_s", pa.float64()),
    ("prepare_s", pa.float64()),
    ("simulate_s", pa.float64()),
    ("host", pa.string()),
    ("finished_at", pa.timestamp("s")),  # UTC
    ("toposched_version", pa.string()),
    ("dir", pa.string()),
]
_STATS = {"wait": "wait_s", "bsld": "bounded_slowdown", "aph": "aph"}


def _num(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def _fattree_param(system: str, key: str) -> int | None:
    if not system.lower().startswith("fattree:"):
        return None
    for item in system.split(":", 1)[1].split(","):
        k, _, v = item.partition("=")
        if k.strip().upper() == key:
            try:
                return int(v)
            except ValueError:
                return None
    return None


def _read_object(path: Path) -> dict[str, Any] | str:
    """A JSON object from ``path``, or why it cannot be had (a few words)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"{path.name}: missing"
    except (OSError, ValueError):
        return f"{path.name}: not readable JSON"
    return data if isinstance(data, dict) else f"{path.name}: not a JSON object"


def _row(run_dir: Path, marker: dict[str, Any], plan: dict[str, int]) -> dict[str, Any] | str:
    """The run's catalog row, or why the directory cannot give one (a damaged run)."""
    spec = _read_object(run_dir / "spec.json")
    if isinstance(spec, str):
        return spec
    summary: dict[str, Any] = {}
    if marker["status"] == "complete":
        read = _read_object(run_dir / "summary.json")
        if isinstance(read, str):
            return read
        summary = read
        from ..files import RESULT_FILES

        # a result file since deleted (by hand, a disk cleaner): the run was listed as
        # complete while the jobs and utilization views silently left its rows out (the
        # runner runs such a run again, runner._is_complete)
        gone = next((name for name in RESULT_FILES if not (run_dir / name).is_file()), None)
        if gone is not None:
            return f"{gone}: missing"
    try:
        return _row_of(run_dir, marker, plan, spec, summary)
    except (KeyError, TypeError, AttributeError) as exc:
        # spec.json or summary.json of another shape (hand-edited, another program's)
        return f"spec.json or summary.json: not as toposched writes them ({type(exc).__name__}: {exc})"


def _row_of(run_dir: Path, marker: dict[str, Any], plan: dict[str, int], spec: dict[str, Any], summary: dict[str, Any]) -> dict[str, Any]:
    wl, fab, sc, cfg = spec["workload"], spec["fabric"], spec["scenario"], spec["config"]
    sf = summary.get("fabric", {})
    k = sf.get("nodes_per_leaf")
    w1 = sf.get("uplinks_per_leaf")
    if not sf and fab.get("kind") == "fattree":  # failed run: what the parameters say
        k = _fattree_param(fab["system"], "K")
        w1 = _fattree_param(fab["system"], "W1") or k
    finished = marker.get("finished_at")
    # A sweep's run directory is named by its run id; a compare's by its alloc and scenario
    # (runs/linear__none): the marker holds the run id either way.
    run_id = str(marker.get("run_id") or run_dir.name)
    row: dict[str, Any] = {
        "run_id": run_id,
        "status": marker["status"],
        "error": marker.get("error"),
        "in_plan": run_id in plan,
        "plan_index": plan.get(run_id),
        "workload": wl["name"],
        "trace": wl["trace"],
        "trace_sha256": wl["trace_sha256"],
        "format": wl["format"],
        "reader": json.dumps(wl["reader"], sort_keys=True),
        "transforms": " ".join(wl["transforms"]),
        "fabric": fab["name"],
        "system": fab["system"],
        "fabric_kind": fab.get("kind"),
        "fabric_nodes": sf.get("nodes"),
        "leaves": sf.get("leaves"),
        "pods": sf.get("pods"),
        "nodes_per_leaf": k,
        "uplinks_per_leaf": w1,
        "taper": (k / w1) if k and w1 else None,
        "queue": cfg["queue"],
        "alloc": cfg["alloc"],
        "speedup": sc["speedup"],
        "seed": sc["seed"],
        "jobs": summary.get("jobs", {}).get("in_workload"),
        "replayed": summary.get("jobs", {}).get("replayed"),
        "skipped_never_fit": summary.get("jobs", {}).get("skipped_never_fit"),
        "killed_at_walltime": summary.get("jobs", {}).get("killed_at_walltime"),
        "makespan_s": summary.get("makespan_s"),
        "utilization": summary.get("utilization", {}).get("mean"),
        "passes": summary.get("scheduling_passes"),
        "elapsed_s": marker.get("elapsed_s"),
        "prepare_s": marker.get("prepare_s"),
        "simulate_s": marker.get("simulate_s"),
        "host": marker.get("host"),
        "finished_at": _timestamp(finished),
        "toposched_version": spec.get("toposched_version"),
        "dir": f"{RUNS}/{run_dir.name}",
    }
    for short, key in _STATS.items():
        st = summary.get(key) or {}
        for stat in ("mean", "median", "p95", "max"):
            row[f"{short}_{stat}" + ("_s" if short == "wait" else "")] = st.get(stat)
    if "network" in sc:
        row["network"] = sc["network"]
    for key, value in cfg.items():
        if key not in ("queue", "alloc", "seed", "network"):
            row[f"cfg:{key}"] = value
    # each policy option a run sets gets a column of its own too (leaf_cap = 3), beside the
    # policy_options JSON: a [run] leaf_cap axis could only be told apart with json_extract
    taken = {n for n, _ in _FIXED + _METRICS}
    for key, value in (cfg.get("policy_options") or {}).items():
        if f"cfg:{key}" not in row and key not in taken:
            row[f"cfg:{key}"] = value
    for t in wl["transforms"]:
        kind, _, arg = t.partition(":")
        if not arg and kind in ("cap", "drop"):
            # a bare cap/drop takes the fabric's node count (cap:1296 in the summary's
            # transforms): left empty, a query on t_cap missed the run
            row[f"t_{kind}"] = float(sf["nodes"]) if isinstance(sf.get("nodes"), int) else None
            continue
        if kind == "days":
            # days:N@S: the window's length in t_days and its first day in t_days_start,
            # numbers both (t_days held "30@60", a string, so that with one such run in
            # DIR `--where "t_days = 30"` ended in a conversion error)
            length, _, start = arg.partition("@")
            row["t_days"] = _num(length)
            row["t_days_start"] = _num(start) if start else 0.0
            continue
        row[f"t_{kind}"] = _num(arg) if arg else arg
    return row


def _timestamp(text: str | None) -> Any:
    if not text:
        return None
    from datetime import datetime, timezone

    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None
    if t.tzinfo is not None:
        t = t.astimezone(timezone.utc).replace(tzinfo=None)
    return t


def _plan(out: Path) -> dict[str, int]:
    try:
        plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
        return {r["run_id"]: i for i, r in enumerate(plan["runs"])}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def catalog_rows(out: str | Path) -> list[dict[str, Any]]:
    """One dict per finished run directory of ``out`` (complete or failed), plan order
    first, then by run id."""
    out = Path(out)
    runs = out / RUNS
    plan = _plan(out)
    rows = []
    if runs.is_dir():
        for d in sorted(runs.iterdir()):
            if d.name.startswith(".") or not d.is_dir():
                continue
            marker = run_status(d)
            if marker is None:
                continue
            row = _row(d, marker, plan)
            if not isinstance(row, str):  # a damaged run: left_out() says why
                rows.append(row)
    rows.sort(key=lambda r: (r["plan_index"] is None, r["plan_index"] if r["plan_index"] is not None else 0, r["run_id"]))
    return rows


def left_out(out: str | Path) -> list[tuple[str, str]]:
    """The run directories of ``out`` that hold a marker (``run.json``) but are not in its
    catalog, with why: a damaged run (a complete run without its summary.json or another result file, a spec.json
    that is not toposched's). ``toposched runs`` names them, so that a run does not vanish
    from the listing unseen. A directory that the catalog merely does not list yet (a
    sweep running on ``out``) is not named."""
    import duckdb

    out = Path(out).resolve()
    runs = out / RUNS
    path = out / CATALOG
    if not runs.is_dir() or not path.exists():
        return []
    con = duckdb.connect(str(path), read_only=True)
    try:
        listed = {r[0] for r in con.execute("SELECT dir FROM runs").fetchall()}
    finally:
        con.close()
    plan = _plan(out)
    found = []
    for d in sorted(runs.iterdir()):
        if d.name.startswith(".") or not d.is_dir() or f"{RUNS}/{d.name}" in listed or not (d / MARKER).exists():
            continue
        marker = run_status(d)
        if marker is None:
            found.append((f"{RUNS}/{d.name}", f"{MARKER}: not a finished run's marker (status complete or failed)"))
            continue
        why = _row(d, marker, plan)
        if isinstance(why, str):
            found.append((f"{RUNS}/{d.name}", why))
    return found


def _infer(values: list[Any]) -> pa.DataType:
    present = [v for v in values if v is not None]
    if not present:
        return pa.string()
    if all(isinstance(v, bool) for v in present):
        return pa.bool_()
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        # a whole number beyond 64 bits (a failed run's setting) is kept as its text
        if all(-(2**63) <= v < 2**63 for v in present):
            return pa.int64()
        if all(0 <= v < 2**64 for v in present):
            return pa.uint64()
        return pa.string()
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pa.float64()
    return pa.string()


def _fits(v: Any, typ: pa.DataType) -> bool:
    try:
        pa.array([v], type=typ)
    except OverflowError:
        return False
    return True


def _table(rows: list[dict[str, Any]], out: Path = Path(".")) -> pa.Table:
    extra = sorted({k for r in rows for k in r} - {n for n, _ in _FIXED + _METRICS})
    net = [k for k in extra if k == "network"]
    cfg = [k for k in extra if k.startswith("cfg:")]
    tfs = [k for k in extra if k.startswith("t_")]
    cols: dict[str, pa.Array] = {}

    def add(name: str, key: str, typ: pa.DataType | None) -> None:
        vals = [r.get(key) for r in rows]
        typ = typ or _infer(vals)
        if typ == pa.string():
            vals = [None if v is None else (v if isinstance(v, str) else json.dumps(v) if isinstance(v, (dict, list)) else str(v)) for v in vals]
        try:
            cols[name] = pa.array(vals, type=typ)
        except OverflowError:  # written by an older version that let such a value through
            bad = next(r for r in rows if not _fits(r.get(key), typ))
            from ..errors import InputError

            raise InputError(str(out / bad["dir"] / "spec.json"), f"{name} {bad.get(key)} does not fit the catalog's column ({typ}); remove that run directory", field=name) from None

    for name, typ in _FIXED:
        add(name, name, typ)
        if name == "seed":
            for k in net:
                add(k, k, pa.string())
            for k in tfs:
                add(k, k, None)
    for k in cfg:
        add(k[4:], k, None)
    for name, typ in _METRICS:
        add(name, name, typ)
    return pa.table(cols)


def _views(con: Any, rows: list[dict[str, Any]], out: Path) -> None:
    for view, fname in (("jobs", "jobs.parquet"), ("utilization", "utilization.parquet")):
        paths = [str((out / r["dir"] / fname).resolve()) for r in rows if r["status"] == "complete" and (out / r["dir"] / fname).exists()]
        if not paths:
            # no complete run (yet): an empty view, so that `SELECT count(*) FROM jobs` says
            # 0 rather than "Table with name jobs does not exist! Did you mean pg_constraint"
            con.execute(f"CREATE VIEW {view} AS SELECT CAST(NULL AS VARCHAR) AS run_id WHERE false")
            continue
        listing = "[" + ", ".join(_sql_str(p) for p in paths) + "]"
        pattern = f"/{RUNS}/([^/]+)/{fname.replace('.', '[.]')}$"
        # the directory's name is not always the run id (a compare's runs/linear__none):
        # map one to the other
        dirs = ", ".join(f"({_sql_str(r['dir'].rpartition('/')[2])}, {_sql_str(r['run_id'])})" for r in rows if r["status"] == "complete")
        con.execute(
            f"CREATE VIEW {view} AS SELECT d.run_id, p.* EXCLUDE (filename) "
            f"FROM read_parquet({listing}, filename = true, union_by_name = true) AS p "
            f"JOIN (VALUES {dirs}) AS d(dir_name, run_id) ON regexp_extract(p.filename, '{pattern}', 1) = d.dir_name"
        )


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def build_catalog(out: str | Path) -> Path:
    """(Re)build ``out/catalog.duckdb`` from the run directories; returns its path."""
    out = Path(out).resolve()
    rows = catalog_rows(out)
    table = _table(rows, out)
    final = out / CATALOG
    tmp = out / f".catalog-{uuid.uuid4().hex[:12]}.duckdb"
    # The runs table goes to DuckDB through a Parquet file, not `con.register`: registering
    # an Arrow table makes DuckDB import pyarrow.dataset and pandas (half a second).
    staged = tmp.with_suffix(".runs.parquet")
    try:
        _write_catalog(table, rows, out, staged, tmp, final)
    finally:
        for p in (tmp, Path(str(tmp) + ".wal"), staged):
            if p.exists():
                p.unlink()
    return final


def _write_catalog(table: pa.Table, rows: list[dict[str, Any]], out: Path, staged: Path, tmp: Path, final: Path) -> None:
    """Write the catalog into ``tmp`` and rename it to ``final``. A write that fails (a
    full disk, a read-only directory) is an OSError naming ``final``: Arrow's and
    DuckDB's own messages ("Error writing bytes to file. Detail: [errno 28] No space left
    on device") name no file."""
    import duckdb
    import pyarrow.parquet as pq

    if final.is_dir():
        # os.replace named the temporary file: ".catalog-39daefe3e7b9.duckdb: Is a directory"
        raise IsADirectoryError(errno.EISDIR, "is a directory, where the catalog goes; remove it", str(final))
    try:
        pq.write_table(table, staged)
        con = duckdb.connect(str(tmp))
        try:
            # Parquet has no seconds unit: finished_at comes back in ms, and is cast back
            con.execute(
                f"CREATE TABLE runs AS SELECT * REPLACE (CAST(finished_at AS TIMESTAMP_S) AS finished_at) FROM read_parquet({_sql_str(str(staged))})"
            )
            _views(con, rows, out)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, final)
    except (OSError, duckdb.IOException) as exc:
        if isinstance(exc, OSError) and exc.filename:
            raise
        code = getattr(exc, "errno", None) or errno.EIO
        raise OSError(code, f"cannot write the catalog: {getattr(exc, 'strerror', None) or exc}", str(final)) from exc


def unlisted(out: str | Path) -> int:
    """How many finished run directories of ``out`` its catalog does not list yet: not 0
    while a sweep runs on ``out`` (its driver alone writes the catalog, every 30 s and at
    its end), or when ``out`` cannot be written."""
    import duckdb

    out = Path(out).resolve()
    runs = out / RUNS
    if not runs.is_dir() or not (out / CATALOG).exists():
        return 0
    on_disk = {f"{RUNS}/{d.name}" for d in runs.iterdir() if d.is_dir() and not d.name.startswith(".") and run_status(d) is not None}
    try:
        con = duckdb.connect(str(out / CATALOG), read_only=True)
        try:
            listed = {r[0] for r in con.execute("SELECT dir FROM runs").fetchall()}
        finally:
            con.close()
    except duckdb.Error:
        return 0
    plan = _plan(out)
    # a damaged run directory is never listed: left_out() names it
    return sum(1 for d in sorted(on_disk - listed) if not isinstance(_row(out / d, run_status(out / d) or {}, plan), str))


def _is_stale(out: Path, path: Path) -> bool:
    """True when the run directories are not the ones the catalog lists."""
    import duckdb

    runs = out / RUNS
    on_disk = {f"{RUNS}/{d.name}" for d in runs.iterdir() if d.is_dir() and not d.name.startswith(".") and (d / MARKER).exists()} if runs.is_dir() else set()
    try:
        con = duckdb.connect(str(path), read_only=True)
        try:
            listed = {r[0] for r in con.execute("SELECT dir FROM runs").fetchall()}
            views = [r[0] or "" for r in con.execute("SELECT sql FROM duckdb_views() WHERE view_name IN ('jobs', 'utilization')").fetchall()]
        finally:
            con.close()
        # The views read each run's Parquet files by absolute path: a catalog built before
        # DIR was moved, renamed or copied (or reached by another path, on another
        # machine's mount) read the old place's files -- "No files found", or silently
        # the original's runs from a copy
        here = _sql_str(f"{out / RUNS}/")[:-1]
        if any("read_parquet(" in v and here not in v for v in views):
            return True
    except duckdb.Error:
        # not a catalog DuckDB can read (damaged, cut short by a full disk, written by a
        # DuckDB of another storage version): it is built from the run directories, so
        # build it again, rather than end with "SQL error: IO Error: ... is not a valid
        # DuckDB database file"
        return True
    return on_disk != listed


def _rebuild_unless_running(out: Path, path: Path) -> None:
    """Rebuild the catalog when no sweep holds the directory's lock; while a sweep runs,
    its driver alone writes the catalog (every 30 s and at its end)."""
    from ..errors import InputError, ToposchedError
    from .layout import SweepLock

    if not (out / RUNS).is_dir() and not path.exists():
        raise ToposchedError(f"{out}: not a sweep directory (no {RUNS}/ and no {CATALOG})")
    try:
        with SweepLock(out):
            build_catalog(out)
    except InputError:
        raise  # a run directory the catalog cannot hold: the old catalog would hide it
    except (ToposchedError, OSError):  # a sweep is running, or DIR is not ours to write
        if not path.exists():
            raise


def query(out: str | Path, sql: str, params: Sequence[Any] | None = None, *, rebuild: bool = False) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run ``sql`` on ``out/catalog.duckdb`` (built first when missing, stale or when
    ``rebuild``); returns (column names, rows)."""
    import duckdb

    out = Path(out).resolve()
    path = out / CATALOG
    if rebuild or not path.exists() or _is_stale(out, path):
        _rebuild_unless_running(out, path)
    con = duckdb.connect(str(path), read_only=True)
    try:
        cur = con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        if not any("WITH TIME ZONE" in str(d[1]) for d in cur.description):
            return names, cur.fetchall()
        # DuckDB's own conversion of a TIMESTAMPTZ needs pytz, which is not a dependency
        # (the query failed "Required module 'pytz'"); Arrow's gives the same aware
        # datetimes with zoneinfo. Only such queries take this path: Arrow turns some
        # other types into other Python values (an INTERVAL, a HUGEINT).
        got = cur.arrow()
        table = got.read_all() if hasattr(got, "read_all") else got  # a reader since DuckDB 1.4
        return names, _rows(table)
    finally:
        con.close()


def _rows(table: Any) -> list[tuple[Any, ...]]:
    """The rows of an Arrow table, by position: a query's column names may repeat."""
    cols = [c.to_pylist() for c in table.columns]
    return list(zip(*cols)) if cols else []


def query_runs(
    out: str | Path,
    *,
    where: str | None = None,
    columns: Sequence[str] | None = None,
    order_by: str | None = None,
    limit: int | None = None,
    rebuild: bool = False,
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The ``runs`` table filtered by an SQL ``where`` clause, showing ``columns``
    (names or SQL expressions; default :data:`DEFAULT_COLUMNS` that exist)."""
    if columns:
        select = ", ".join(columns)
    else:
        names, _ = query(out, "SELECT * FROM runs LIMIT 0", rebuild=rebuild)
        rebuild = False
        select = ", ".join(c for c in DEFAULT_COLUMNS if c in names)
    sql = f"SELECT {select} FROM runs"
    if where:
        sql += f" WHERE {where}"
    sql += f" ORDER BY {order_by}" if order_by else " ORDER BY plan_index NULLS LAST, run_id"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return query(out, sql, rebuild=rebuild)

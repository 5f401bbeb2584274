"""Re-check a schedule from its per-job output alone (jobs.parquet + fabric.json).

Independent of the engine: it reads only the start/end times and node lists the run
wrote, so it can audit any run, including ones made by older versions.

Checks:
* the five result files are there, readable, and carry the same run id (a directory
  mixing files of two runs is refused), and jobs.parquet holds as many jobs as
  summary.json says were replayed;
* every job starts at or after its submit time, and ends at or after its start;
* no node is held by two jobs at the same instant (intervals are ``[start, end)``);
* with ``interference_free=True``, invariants I1 and I2 of the SC18 policy (brief §2.10):
  every leaf hosts at most one running job that spans several leaves, every pod at most
  one running job that spans several pods.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .errors import InputError
from .nodelists import NODE_IDS, NODE_RANGES, has_node_lists, lists_from_ranges, node_column, table_ranges


class Problems(list[str]):
    """The problems found, at most ``limit`` shown per kind, each truncated kind followed by
    an "and N more" line; ``total`` counts every problem, shown or not."""

    total: int = 0

    def add(self, lines: list[str], count: int, what: str) -> None:
        self.extend(lines)
        if count > len(lines):
            self.append(f"... and {count - len(lines):,} more {what} ({count:,} in all)")
        self.total += count


def _overlaps(key: np.ndarray, start: np.ndarray, end: np.ndarray, job: np.ndarray, what: str, limit: int) -> tuple[list[str], int]:
    """Intervals that start while an earlier interval of the same key still holds it (the
    first ``limit``, each with the one holding the key longest, and how many in all).
    Sorted by (key, start), each is compared with the latest-ending interval before it of
    its key, not only its neighbour: a job holding a node across several short ones
    overlaps each of them (a neighbour-only pass reported the first and counted 1)."""
    keep = end > start  # zero-length intervals hold nothing
    key, start, end, job = key[keep], start[keep], end[keep], job[keep]
    order = np.lexsort((start, key))
    key, start, end, job = key[order], start[order], end[order], job[order]
    n = len(key)
    if n < 2:
        return [], 0
    # the latest end among the intervals of key[i] up to i, in one running maximum: each
    # end replaced by its rank (< n), offset by its key's group number times n, so that a
    # group's values exceed every earlier group's (group * n + rank < n^2 < 2^63)
    ends, rank = np.unique(end, return_inverse=True)
    group = np.cumsum(np.concatenate([[0], key[1:] != key[:-1]])).astype(np.int64)
    latest = ends[np.maximum.accumulate(group * n + rank.astype(np.int64)) - group * n]
    bad = np.flatnonzero((key[1:] == key[:-1]) & (start[1:] < latest[:-1])) + 1
    lines = []
    for i in bad[:limit].tolist():
        first = int(np.searchsorted(key, key[i]))  # the holder: the earlier interval of the key ending last
        h = first + int(np.argmax(end[first:i]))
        lines.append(f"{what} {int(key[i])} held by jobs {int(job[h])} [{int(start[h])}, {int(end[h])}) and {int(job[i])} [{int(start[i])}, {int(end[i])})")
    return lines, len(bad)


def _ranges_never_shared(range_offsets: np.ndarray, first: np.ndarray, count: np.ndarray, start: np.ndarray, end: np.ndarray) -> bool:
    """True when no node is held by two jobs (or twice by one) at the same instant, decided
    on the node ranges without expanding them: jobs in start order, the held ranges kept
    as disjoint sorted intervals, those of jobs ended by then (``end <= start``) released
    first; a new range must meet none of them. Memory follows the running jobs' ranges,
    not the node entries (Curie with nodes = processors: 1.9 M ranges for 225 M nodes)."""
    import heapq
    from bisect import bisect_left, bisect_right

    lo: list[int] = []  # first node of each held interval, sorted
    hi: list[int] = []  # one past its last node
    ends: list[tuple[int, int]] = []  # (end time, first node) of each held interval
    roff = range_offsets.tolist()
    firsts = first.tolist()
    counts = count.tolist()
    starts = start.tolist()
    stops = end.tolist()
    for j in sorted(range(len(starts)), key=starts.__getitem__):
        s, e = starts[j], stops[j]
        if e <= s or roff[j] == roff[j + 1]:
            continue  # holds nothing
        while ends and ends[0][0] <= s:
            i = bisect_left(lo, heapq.heappop(ends)[1])
            del lo[i], hi[i]
        for k in range(roff[j], roff[j + 1]):
            f = firsts[k]
            g = f + counts[k]
            i = bisect_right(lo, f)
            if (i and hi[i - 1] > f) or (i < len(lo) and lo[i] < g):
                return False
            lo.insert(i, f)
            hi.insert(i, g)
            heapq.heappush(ends, (e, f))
    return True


def check_schedule(jobs: Any, fabric: Any, *, interference_free: bool = False, limit: int = 10) -> Problems:
    """Problems found in a schedule (empty when it is sound): the first ``limit`` of each
    kind, an "and N more" line for each kind cut short, and ``.total`` for all of them.

    ``jobs`` is a jobs table (``SimResult.jobs``, jobs.parquet) or a SimResult; ``fabric``
    a :class:`~toposched.topology.Fabric` or its description (``Fabric.describe()``,
    fabric.json)."""
    # check_schedule(result, fabric) ended in AttributeError ('SimResult' object has no
    # attribute 'column') or TypeError ('Fabric' object is not subscriptable)
    if hasattr(jobs, "finished") and hasattr(jobs, "jobs") and not isinstance(jobs, pa.Table):
        jobs = jobs.jobs
    if not isinstance(fabric, dict) and callable(getattr(fabric, "describe", None)):
        fabric = fabric.describe()  # a Fabric (not imported here: check's start-up)
    if not isinstance(jobs, pa.Table):
        raise TypeError(f"check_schedule(): jobs must be a jobs table (SimResult.jobs, or jobs.parquet read with pyarrow), got {type(jobs).__name__}")
    if not isinstance(fabric, dict) or not all(isinstance(fabric.get(k), list) for k in ("node_leaf", "leaf_pod")):
        raise TypeError(f"check_schedule(): fabric must be a Fabric or its description (Fabric.describe(), fabric.json), got {type(fabric).__name__} {fabric!r:.60}")
    problems = Problems()
    # a missing value would read as NaN and pass every comparison below
    for name in ("job_id", "submit_s", "start_s", "end_s"):
        nulls = jobs.column(name).null_count
        if nulls:
            problems.add([f"{nulls:,} job(s) have no {name}: the other checks need every value"], nulls, f"jobs without {name}")
    if problems:
        return problems
    job_id = jobs.column("job_id").to_numpy()
    submit = jobs.column("submit_s").to_numpy()
    start = jobs.column("start_s").to_numpy()
    end = jobs.column("end_s").to_numpy()
    early = np.flatnonzero(start < submit)
    problems.add([f"job {int(job_id[i])} starts at {int(start[i])}, before its submit {int(submit[i])}" for i in early[:limit]], len(early), "jobs starting before their submit")
    backwards = np.flatnonzero(end < start)
    problems.add([f"job {int(job_id[i])} ends at {int(end[i])}, before its start {int(start[i])}" for i in backwards[:limit]], len(backwards), "jobs ending before their start")
    ranges = table_ranges(jobs) if len(jobs) else (np.zeros(1, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.uint32))
    range_offsets, first, count = ranges
    job_of_range = np.repeat(np.arange(len(job_id)), np.diff(range_offsets))
    # every node on the fabric (else the leaf and pod lookups below fail too)
    n_nodes = len(fabric["node_leaf"])
    if isinstance(fabric.get("nodes"), int) and fabric["nodes"] != n_nodes:
        problems.add([f"fabric.json says {fabric['nodes']:,} nodes but gives the leaf of {n_nodes:,}"], 1, "fabric descriptions at odds")
    outside = np.unique(job_of_range[first.astype(np.int64) + count.astype(np.int64) > n_nodes])
    problems.add(
        [f"job {int(job_id[i])} holds nodes beyond the fabric's {n_nodes:,} (ids 0 to {n_nodes - 1:,})" for i in outside[:limit]],
        len(outside),
        "jobs holding nodes not on the fabric",
    )
    if "nodes" in jobs.column_names:
        listed = np.bincount(job_of_range, weights=count, minlength=len(job_id)).astype(np.int64)
        column = jobs.column("nodes")
        known = np.ones(len(job_id), dtype=bool)
        if column.null_count:  # read as NaN, they failed as an internal error
            problems.add([f"{column.null_count:,} job(s) have no nodes value: their node lists are not compared with it"], column.null_count, "jobs without nodes")
            known = column.is_valid().to_numpy(zero_copy_only=False)
            column = column.fill_null(0)
        said = column.to_numpy(zero_copy_only=False)
        differ = np.flatnonzero(known & (listed != said))
        problems.add(
            [f"job {int(job_id[i])} lists {int(listed[i]):,} nodes, but its nodes column says {int(said[i]):,}" for i in differ[:limit]],
            len(differ),
            "jobs whose node list and node count differ",
        )
    if len(outside):
        return problems
    if not interference_free and _ranges_never_shared(*ranges, start, end):
        return problems  # no node held twice: shown on the ranges, nodes never expanded
    # one entry per node: exact per-node reports (and the leaf and pod invariants)
    offsets, nodes = lists_from_ranges(*ranges)
    per_job = offsets[1:] - offsets[:-1]
    jrow = np.repeat(np.arange(len(job_id)), per_job)
    problems.add(*_overlaps(nodes, start[jrow], end[jrow], job_id[jrow], "node", limit), "nodes held by two jobs at once")
    if interference_free:
        leaf_of = np.asarray(fabric["node_leaf"])
        pod_of_leaf = np.asarray(fabric["leaf_pod"])
        leaf = leaf_of[nodes]
        pod = pod_of_leaf[leaf]
        for level, key in (("leaf", leaf), ("pod", pod)):
            # distinct (job, key) pairs and how many keys each job spans
            pairs = np.unique(np.stack([jrow, key]), axis=1)
            spans = np.bincount(pairs[0], minlength=len(job_id))
            spanning = spans[pairs[0]] > 1
            j, k = pairs[0][spanning], pairs[1][spanning]
            problems.add(*_overlaps(k, start[j], end[j], job_id[j], f"{level} (two spanning jobs on)", limit), f"{level}s shared by two spanning jobs")
    return problems


def check_run_dir(out_dir: str | Path, *, interference_free: bool = False) -> Problems:
    """:func:`check_schedule` on the files a run wrote, after checking that they are all
    there, readable, and of one run (the same run id in every file).

    Raises:
        InputError: a missing, unreadable or corrupt file (the directory is not a result).
    """
    out = Path(out_dir)
    if not out.is_dir():
        raise InputError(str(out), "is not a directory written by toposched simulate")
    ids = run_ids(out)
    problems = Problems()
    if len(set(ids.values())) > 1:
        listed = ", ".join(f"{name}: {rid or 'none'}" for name, rid in ids.items())
        problems.add([f"the files are not all from one run (run ids {listed}): the directory mixes two runs"], 1, "mixed runs")
    jobs = _read_parquet(out / "jobs.parquet")
    counts = _read_json(out / "summary.json").get("jobs")
    replayed = counts.get("replayed") if isinstance(counts, dict) else None  # other versions' summaries: not compared
    if isinstance(replayed, int) and not isinstance(replayed, bool) and replayed != jobs.num_rows:
        # rows lost or added (a jobs.parquet filtered and written back with its metadata):
        # the run id alone did not tell, and the schedule passed as OK
        problems.add([f"summary.json says {replayed:,} jobs replayed, jobs.parquet holds {jobs.num_rows:,}: the files do not agree"], 1, "files at odds")
    fabric = _read_json(out / "fabric.json")
    for key in ("node_leaf", "leaf_pod"):
        if not isinstance(fabric.get(key), list):
            raise InputError(str(out / "fabric.json"), f"has no {key} list: not a fabric.json written by toposched")
    _check_fabric_maps(out / "fabric.json", fabric["node_leaf"], fabric["leaf_pod"])
    missing = [c for c in ("job_id", "submit_s", "start_s", "end_s") if c not in jobs.column_names]
    if not has_node_lists(jobs.column_names):
        missing.append("node_ranges")
    if missing:
        raise InputError(str(out / "jobs.parquet"), f"lacks columns {missing}: not a jobs.parquet written by toposched")
    _check_column_types(out / "jobs.parquet", jobs.schema)
    _check_node_ids(out / "jobs.parquet", jobs)
    found = check_schedule(jobs, fabric, interference_free=interference_free)
    problems.extend(found)
    problems.total += found.total
    return problems


def _check_column_types(path: Path, schema: pa.Schema) -> None:
    """The columns the checks read hold whole numbers, and the node lists are lists of
    node ids or of (first, count) ranges: a string start_s, or a node_ranges column of
    another shape, failed in the comparisons as an internal error."""
    wrong = [f"{c} ({schema.field(c).type})" for c in ("job_id", "submit_s", "start_s", "end_s", "nodes") if c in schema.names and not pa.types.is_integer(schema.field(c).type)]
    name = node_column(schema.names)
    typ = schema.field(name).type
    value = typ.value_type if pa.types.is_list(typ) or pa.types.is_large_list(typ) else None
    if name == NODE_RANGES:
        fields = {value.field(i).name: value.field(i).type for i in range(value.num_fields)} if value is not None and pa.types.is_struct(value) else {}
        shaped = all(k in fields and pa.types.is_integer(fields[k]) for k in ("first", "count"))
    else:
        shaped = value is not None and pa.types.is_integer(value)
    if not shaped:
        wrong.append(f"{name} ({typ})")
    if wrong:
        raise InputError(str(path), f"columns of the wrong type: {', '.join(wrong)}: not a jobs.parquet written by toposched")


def _check_node_ids(path: Path, jobs: pa.Table) -> None:
    """The node ids of a node_ids column (files before node ranges) are ids, 0 to 2^32 - 1,
    none missing: one off that range failed as "internal error: ValueError: node ids must
    be in [0, 2^32)", a null as the same after a NumPy cast warning."""
    if node_column(jobs.column_names) != NODE_IDS:
        return
    column = jobs.column(NODE_IDS)
    row0 = 0
    for chunk in column.chunks:
        lengths = np.asarray(chunk.value_lengths().fill_null(0), dtype=np.int64)
        values = chunk.flatten()  # the listed ids of the chunk's rows, in row order
        valid = np.asarray(values.is_valid(), dtype=bool)
        ids = np.asarray(values.fill_null(0), dtype=np.int64)
        bad = np.flatnonzero(~valid | (ids < 0) | (ids >= 2**32))
        if len(bad):
            i = int(bad[0])
            row = row0 + int(np.searchsorted(np.cumsum(lengths), i, side="right"))
            job = jobs.column("job_id")[row].as_py()
            what = f"node id {int(ids[i])}" if valid[i] else "a missing node id"
            raise InputError(str(path), f"job {job} lists {what}, not a node id (0 to 2^32 - 1): the file is damaged", field=NODE_IDS)
        row0 += len(chunk)


def _check_fabric_maps(path: Path, node_leaf: list[Any], leaf_pod: list[Any]) -> None:
    """Every node's leaf and every leaf's pod a whole number >= 0, every node's leaf one
    that leaf_pod has: the leaf and pod lookups index with them (a damaged map failed there
    as an IndexError, and a negative leaf counted from the end without a word)."""
    for key, values in (("node_leaf", node_leaf), ("leaf_pod", leaf_pod)):
        bad = next((i for i, v in enumerate(values) if type(v) is not int or v < 0), None)
        if bad is not None:
            raise InputError(str(path), f"{key}[{bad}] is {values[bad]!r}, not a whole number >= 0: the file is damaged", field=key)
    beyond = next((i for i, leaf in enumerate(node_leaf) if leaf >= len(leaf_pod)), None)
    if beyond is not None:
        raise InputError(
            str(path), f"leaf {node_leaf[beyond]} of node {beyond} is not in leaf_pod ({len(leaf_pod)} leaves): the file is damaged", field="node_leaf"
        )


def runs_held(out: Path, name: str = "jobs.parquet") -> list[str]:
    """The run directories under ``out/runs`` holding ``name``, sorted: a sweep's, compare's
    or frontier's directory, whose runs are the results (empty for any other directory)."""
    return sorted(d.name for d in (out / "runs").iterdir() if (d / name).exists()) if (out / "runs").is_dir() else []


def run_ids(out: Path) -> dict[str, str | None]:
    """The run id each result file carries (None for files of versions before run ids).
    Files of older versions carry none at all, and are accepted as one run."""
    from .files import RESULT_FILES

    ids: dict[str, str | None] = {}
    missing = [name for name in RESULT_FILES if not (out / name).exists()]
    if missing:
        runs = runs_held(out, missing[0])
        if runs:
            # a sweep's, compare's or frontier's directory: its runs are the results
            raise InputError(
                str(out), f"holds runs, not one run's results: check each, e.g. toposched check {out / 'runs' / runs[0]} ({len(runs)} runs in {out / 'runs'})"
            )
        if (out / "run" / missing[0]).exists() and not (out / "runs").exists():
            # a contention analysis's directory: its replay is kept in OUT/run/
            raise InputError(str(out), f"holds a replay in run/, not one run's results: toposched check {out / 'run'}")
        if len(missing) == 1:
            raise InputError(str(out / missing[0]), "is missing: not a complete result directory")
        # every one named (the first alone was, and the next check found the next)
        raise InputError(str(out), f"{', '.join(missing)} are missing: not a complete result directory")
    for name in RESULT_FILES:
        path = out / name
        rid: Any
        if name.endswith(".parquet"):
            meta = _read_parquet_schema(path).metadata or {}
            rid = meta.get(b"toposched.run_id")
            try:
                rid = rid.decode() if rid else None
            except UnicodeDecodeError:
                pass  # refused below
        else:
            rid = _read_json(path).get("run_id")
        if rid is not None and not isinstance(rid, str):
            # a list failed as "internal error: TypeError: unhashable type", bytes not
            # UTF-8 as a UnicodeDecodeError
            raise InputError(str(path), f"run_id is {rid!r:.60}, not a run id (a string): the file is damaged")
        ids[name] = rid
    if all(v is None for v in ids.values()):
        return {}
    return ids


def _first_line(exc: BaseException) -> str:
    """An exception's message on one line: PyArrow's can go on with the whole schema
    (a column named twice: 21 lines for one problem)."""
    text = str(exc).strip()
    return text.splitlines()[0].rstrip(" :") if text else type(exc).__name__


def _read_parquet_schema(path: Path) -> pa.Schema:
    try:
        return pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(str(path), f"is not a readable Parquet file: {_first_line(exc)}") from None


def _read_parquet(path: Path) -> pa.Table:
    names = _read_parquet_schema(path).names
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # else PyArrow's "Multiple matches for FieldRef.Name(start_s) in <the schema>"
        raise InputError(str(path), f"has columns named twice: {', '.join(twice)}: not a jobs.parquet written by toposched")
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(str(path), f"is not a readable Parquet file: {_first_line(exc)}") from None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:  # "internal error: RecursionError" on "[[[[...]]]]"
        raise InputError(str(path), "is not readable JSON: nested too deeply") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"is not readable JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(str(path), "is not a JSON object")
    return doc

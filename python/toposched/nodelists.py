"""Node lists of jobs.parquet: every reader goes through here.

jobs.parquet stores each job's nodes as ``node_ranges``, a ``list<struct<first: uint32,
count: uint32>>``: runs of consecutive node ids in the list's order (ascending for every
list toposched writes), so job j holds ``first, first + 1, ..., first + count - 1`` for
each of its ranges in turn. Files written before that stored ``node_ids``, a
``list<int32>`` with one entry per node; they read the same through this module.

Why ranges: a job's nodes are mostly long runs of consecutive ids, and one id per node
grows with fabric x jobs (CEA-Curie with nodes = processors, 93,312 nodes: 225 M ids, 388
MB in jobs.parquet and most of a 6 GB peak). Ranges cost a few entries per job.

In memory the lists are CSR arrays: ranges as ``(range_offsets, first, count)`` (job j's
ranges are ``range_offsets[j]:range_offsets[j+1]``), ids as ``(offsets, ids)``.

>>> import numpy as np
>>> r = ranges_from_lists(np.array([0, 5, 6, 6]), np.array([0, 1, 2, 7, 8, 4]))
>>> [a.tolist() for a in r]
[[0, 2, 3, 3], [0, 7, 4], [3, 2, 1]]
>>> [a.tolist() for a in lists_from_ranges(*r)]
[[0, 5, 6, 6], [0, 1, 2, 7, 8, 4]]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .startup import column_numpy

if TYPE_CHECKING:
    import pyarrow as pa

#: The column of jobs.parquet that holds node lists as ranges (written since issue 17).
NODE_RANGES = "node_ranges"
#: The column older files hold instead: one int32 id per node.
NODE_IDS = "node_ids"


def __getattr__(name: str) -> Any:
    """``RANGE_TYPE`` (one range) and ``NODE_RANGES_TYPE`` (the column), made at their
    first use: a replay writes its files without importing PyArrow (toposched.results)."""
    if name not in ("RANGE_TYPE", "NODE_RANGES_TYPE"):  # importlib asks for __path__ & co.
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import pyarrow as pa

    range_type = pa.struct([pa.field("first", pa.uint32(), nullable=False), pa.field("count", pa.uint32(), nullable=False)])
    types = {"RANGE_TYPE": range_type, "NODE_RANGES_TYPE": pa.list_(pa.field("item", range_type, nullable=False))}
    globals().update(types)  # made once
    return types[name]

Ranges = tuple[np.ndarray, np.ndarray, np.ndarray]


def ranges_from_lists(offsets: Any, ids: Any) -> Ranges:
    """CSR node lists (job j holds ``ids[offsets[j]:offsets[j+1]]``, any order, repeats
    allowed) as maximal runs of consecutive ids in list order: ``(range_offsets int64,
    first uint32, count uint32)``. :func:`lists_from_ranges` gives the lists back exactly."""
    off = np.asarray(offsets, dtype=np.int64)
    x = np.asarray(ids, dtype=np.int64)
    n = len(x)
    if n and (x.min() < 0 or x.max() > np.iinfo(np.uint32).max):
        raise ValueError("node ids must be in [0, 2^32)")
    # a range starts at every entry that does not continue the previous one, and at every
    # job's first entry
    new = np.ones(n, dtype=bool)
    if n > 1:
        np.not_equal(x[1:], x[:-1] + 1, out=new[1:])
    starts_of_jobs = off[:-1][off[:-1] < off[1:]]
    new[starts_of_jobs] = True
    where = np.flatnonzero(new)
    first = x[where].astype(np.uint32)
    count = np.diff(np.append(where, n)).astype(np.uint32)
    range_offsets = np.searchsorted(where, off, side="left").astype(np.int64)
    return range_offsets, first, count


def lists_from_ranges(range_offsets: Any, first: Any, count: Any) -> tuple[np.ndarray, np.ndarray]:
    """Ranges back to CSR node lists ``(offsets int64, ids int64)``."""
    roff = np.asarray(range_offsets, dtype=np.int64)
    f = np.asarray(first, dtype=np.int64)
    c = np.asarray(count, dtype=np.int64)
    ends = np.zeros(len(c) + 1, dtype=np.int64)
    np.cumsum(c, out=ends[1:])
    total = int(ends[-1])
    # entry i of range k is first[k] + (i - ends[k])
    ids = np.arange(total, dtype=np.int64) + np.repeat(f - ends[:-1], c)
    return ends[roff], ids


def ranges_array(range_offsets: Any, first: Any, count: Any) -> pa.ListArray:
    """The ``node_ranges`` column of CSR ranges."""
    import pyarrow as pa

    roff = np.asarray(range_offsets)
    if len(roff) and int(roff[-1]) >= 2**31:
        raise ValueError(f"{int(roff[-1]):,} node ranges: more than a list column holds (2^31)")
    values = pa.StructArray.from_arrays(
        [pa.array(np.asarray(first, dtype=np.uint32), pa.uint32()), pa.array(np.asarray(count, dtype=np.uint32), pa.uint32())],
        fields=list(__getattr__("RANGE_TYPE")),
    )
    return pa.ListArray.from_arrays(pa.array(roff, pa.int32()), values, type=__getattr__("NODE_RANGES_TYPE"))


def ranges_array_of_lists(lists: list[list[int]]) -> pa.ListArray:
    """The ``node_ranges`` column of per-job Python lists."""
    off = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=off[1:])
    ids = np.fromiter((n for x in lists for n in x), dtype=np.int64, count=int(off[-1]))
    return ranges_array(*ranges_from_lists(off, ids))


def node_column(names: Any) -> str:
    """Which node-list column a jobs table (or file schema) with these column names has."""
    names = list(names)
    if NODE_RANGES in names:
        return NODE_RANGES
    if NODE_IDS in names:
        return NODE_IDS
    raise KeyError(f"no node list column ({NODE_RANGES} or {NODE_IDS})")


def has_node_lists(names: Any) -> bool:
    """True when a jobs table with these column names holds node lists."""
    return NODE_RANGES in names or NODE_IDS in names


def file_node_column(path: str | Path) -> str:
    """:func:`node_column` of a jobs.parquet file, from its schema only."""
    import pyarrow.parquet as pq

    return node_column(pq.read_schema(path).names)


def _chunk_ranges(name: str, chunk: Any) -> Ranges:
    """One chunk of a node-list column as CSR ranges, read from its buffers: no copy of
    the column, and no pyarrow.compute (``flatten`` imports it: 0.1 s of a command)."""
    off = np.asarray(column_numpy(chunk.offsets), dtype=np.int64)
    base = int(off[0])
    values = chunk.values.slice(base, int(off[-1]) - base)  # the chunk's own entries
    off = off - base
    if name == NODE_RANGES:
        # a struct's field() is its child with the struct's offset and length applied
        return off, column_numpy(values.field("first")), column_numpy(values.field("count"))
    return ranges_from_lists(off, column_numpy(values))


def table_ranges(table: pa.Table) -> Ranges:
    """The node lists of a jobs table (either column) as CSR ranges."""
    name = node_column(table.column_names)
    parts = [_chunk_ranges(name, c) for c in table.column(name).chunks]
    if len(parts) == 1:
        return parts[0]
    roffs = [np.zeros(1, np.int64)]
    total = 0
    for roff, first, _ in parts:
        roffs.append(roff[1:] + total)
        total += len(first)
    empty = np.zeros(0, np.uint32)
    return np.concatenate(roffs), np.concatenate([p[1] for p in parts] + [empty]).astype(np.uint32), np.concatenate([p[2] for p in parts] + [empty]).astype(np.uint32)


def table_lists(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The node lists of a jobs table (either column) as CSR ``(offsets, ids)``, int64."""
    return lists_from_ranges(*table_ranges(table))


def node_lists(table: pa.Table) -> list[list[int]]:
    """Every job's node list as a Python list (small tables: tests, reports, snapshots)."""
    off, ids = table_lists(table)
    flat = ids.tolist()
    bounds = off.tolist()
    return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def span_counts(range_offsets: np.ndarray, first: np.ndarray, count: np.ndarray, leaf_of: np.ndarray, pod_of_leaf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct leaves and pods of every job (int32), from ascending ranges (each of at
    least one node). Ids are leaf-major (a leaf's nodes are consecutive, pods hold
    consecutive leaves), so a range [a, b] touches the leaves numbered rank(a) .. rank(b),
    where rank counts the distinct leaves up to a node; a job's next range shares a leaf
    with the previous one only where one ends and the other starts. Work in proportion to
    the ranges, not the nodes; done in Rust (crates/toposched-io/src/collect.rs)."""
    from . import _core

    return _core.span_counts(
        np.ascontiguousarray(range_offsets, dtype=np.int64),
        np.ascontiguousarray(first, dtype=np.uint32),
        np.ascontiguousarray(count, dtype=np.uint32),
        np.ascontiguousarray(leaf_of, dtype=np.uint32),
        np.ascontiguousarray(pod_of_leaf, dtype=np.uint32),
    )

"""Node lists as ranges (jobs.parquet's ``node_ranges``, issue 17): ranges give back the
exact lists, whatever their order or repeats; old files (``node_ids``) read the same; the
span counts from ranges equal the distinct leaves and pods of the expanded lists; the
engine's ranges are the lists it used to hand over."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from toposched.check import check_run_dir
from toposched.nodelists import (
    NODE_IDS,
    NODE_RANGES,
    lists_from_ranges,
    node_lists,
    ranges_array,
    ranges_array_of_lists,
    ranges_from_lists,
    span_counts,
    table_lists,
    table_ranges,
)

ids_lists = st.lists(st.lists(st.one_of(st.integers(0, 30), st.integers(0, 2**32 - 1)), max_size=40), max_size=12)


def csr(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([len(x) for x in lists], out=off[1:])
    return off, np.array([n for x in lists for n in x], dtype=np.int64)


@settings(deadline=None)  # a loaded shared machine: time is not what is tested
@given(ids_lists)
def test_ranges_round_trip_to_the_exact_lists(lists: list[list[int]]) -> None:
    off, ids = csr(lists)
    roff, first, count = ranges_from_lists(off, ids)
    assert first.dtype == count.dtype == np.uint32 and roff.dtype == np.int64
    assert (count >= 1).all()
    # maximal runs: two neighbouring ranges of one job never continue each other
    for j in range(len(lists)):
        a, b = roff[j], roff[j + 1]
        assert sum(int(c) for c in count[a:b]) == len(lists[j])
        assert all(int(first[k]) + int(count[k]) != int(first[k + 1]) for k in range(a, b - 1))
    back_off, back_ids = lists_from_ranges(roff, first, count)
    assert back_off.tolist() == off.tolist() and back_ids.tolist() == ids.tolist()
    # through the Arrow column and a jobs.parquet-like table
    table = pa.table({"job_id": pa.array(range(len(lists)), pa.int64()), NODE_RANGES: ranges_array_of_lists(lists)})
    assert node_lists(table) == lists
    old = pa.table({"job_id": pa.array(range(len(lists)), pa.int64()), NODE_IDS: pa.array(lists, pa.list_(pa.int64()))})
    assert node_lists(old) == lists
    assert [a.tolist() for a in table_ranges(old)] == [a.tolist() for a in table_ranges(table)]


def test_a_sliced_and_chunked_column_reads_as_its_rows() -> None:
    lists = [[0, 1, 2], [], [7], [3, 4, 9, 10], [5]]
    col = ranges_array_of_lists(lists)
    table = pa.Table.from_batches([pa.record_batch([col[:2]], names=[NODE_RANGES]), pa.record_batch([col[2:]], names=[NODE_RANGES])])
    assert node_lists(table) == lists
    assert node_lists(table.slice(1, 3)) == lists[1:4]
    off, ids = table_lists(table.slice(3))
    assert off.tolist() == [0, 4, 5] and ids.tolist() == [3, 4, 9, 10, 5]


def test_the_column_type_is_list_of_first_count_structs() -> None:
    col = ranges_array(np.array([0, 2]), np.array([0, 5], np.uint32), np.array([3, 1], np.uint32))
    assert col.type == pa.list_(pa.field("item", pa.struct([pa.field("first", pa.uint32(), False), pa.field("count", pa.uint32(), False)]), False))
    assert col.to_pylist() == [[{"first": 0, "count": 3}, {"first": 5, "count": 1}]]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(1, 5), min_size=1, max_size=4), min_size=1, max_size=4),
    st.lists(st.lists(st.booleans(), max_size=80), max_size=8),
)
def test_span_counts_equal_distinct_leaves_and_pods(pods: list[list[int]], picks: list[list[bool]]) -> None:
    """Uneven leaves and pods; each job any ascending set of nodes (reference: Python sets
    of the expanded list)."""
    sizes = [s for pod in pods for s in pod]
    leaf_of = np.repeat(np.arange(len(sizes)), sizes)
    pod_of_leaf = np.repeat(np.arange(len(pods)), [len(p) for p in pods])
    n = len(leaf_of)
    lists = [[i for i in range(n) if i < len(p) and p[i]] for p in picks]
    leaves, pods_used = span_counts(*ranges_from_lists(*csr(lists)), leaf_of, pod_of_leaf)
    assert leaves.tolist() == [len({int(leaf_of[i]) for i in x}) for x in lists]
    assert pods_used.tolist() == [len({int(pod_of_leaf[leaf_of[i]]) for i in x}) for x in lists]


def test_engine_results_are_ranges_of_the_allocated_nodes(tmp_path: Path) -> None:
    """The engine hands over ranges; expanded, they are the nodes of each job, disjoint
    among jobs running together (independent check: check_run_dir re-reads the file)."""
    from toposched.simulate import RunConfig, simulate
    from toposched.topology import load_fabric
    from toposched.workload import read_trace

    trace = Path(__file__).parent / "data" / "atlas-window-120.swf"
    for alloc in ("linear", "random", "isolated"):
        r = simulate(read_trace(str(trace)), load_fabric("cab"), RunConfig(alloc=alloc, seed=3))
        lists = node_lists(r.jobs)
        assert [len(x) for x in lists] == r.jobs.column("nodes").to_pylist()
        assert all(x == sorted(set(x)) for x in lists)
        r.write(tmp_path / alloc)
        assert check_run_dir(tmp_path / alloc, interference_free=alloc == "isolated") == []
        back = pq.read_table(tmp_path / alloc / "jobs.parquet")
        assert NODE_IDS not in back.column_names and node_lists(back) == lists


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(-1, 6), st.lists(st.integers(0, 9), max_size=6)), max_size=8))
def test_check_on_ranges_agrees_with_the_per_node_check(jobs: list[tuple[int, int, list[int]]]) -> None:
    """toposched check decides "no node held twice at once" on ranges; reference: every
    (node, job) entry compared pairwise in plain Python."""
    from toposched.check import _ranges_never_shared

    start = np.array([s for s, _, _ in jobs], dtype=np.int64)
    end = np.array([s + d for s, d, _ in jobs], dtype=np.int64)
    lists = [x for _, _, x in jobs]
    entries = [(n, j) for j, x in enumerate(lists) for n in x if end[j] > start[j]]
    shared = any(
        a[0] == b[0] and max(start[a[1]], start[b[1]]) < min(end[a[1]], end[b[1]])
        for i, a in enumerate(entries) for b in entries[i + 1 :]
    )
    assert _ranges_never_shared(*ranges_from_lists(*csr(lists)), start, end) == (not shared)

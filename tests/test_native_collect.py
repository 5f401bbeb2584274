"""The collection of a replay's results in Rust (crates/toposched-io: summary.rs, exact.rs)
against the Python implementation it replaced, kept as the independent reference
(tests/summary_stats_reference.py): random chunks (empty ones, NaN and infinite values,
no APH, one job, ties at the median, huge values), every split, kept keys or selection
passes. Summaries compared by their JSON text, as summary.json holds them."""

from __future__ import annotations

import json

import numpy as np
import summary_stats_reference as ref
from hypothesis import given, settings
from hypothesis import strategies as st

import toposched.summary_stats as ss


def _json(d: dict) -> str:
    # summary.json's own serialization (NaN written as NaN); -0.0 and 0.0 differ in it
    return json.dumps(d, indent=2, sort_keys=True)


def _chunks(cols: dict[str, np.ndarray], cuts: list[int]) -> list[dict[str, np.ndarray]]:
    n = len(cols["nodes"])
    bounds = sorted({0, n, *(c % (n + 1) for c in cuts)})
    parts = [{k: v[a:b] for k, v in cols.items()} for a, b in zip(bounds, bounds[1:])]
    # empty chunks between them too (a drain may finish no job)
    empty = {k: v[:0] for k, v in cols.items()}
    return [empty, *[p for part in parts for p in (part, empty)]]


def _both(cols, cuts, keep_rows: int, gather: int, keep_all: bool) -> tuple[str, str]:
    chunks = _chunks(cols, cuts)
    saved = ss.KEEP_ROWS, ss.GATHER_KEYS, ref.KEEP_ROWS, ref.GATHER_KEYS
    ss.KEEP_ROWS = ref.KEEP_ROWS = keep_rows
    ss.GATHER_KEYS = ref.GATHER_KEYS = gather
    try:
        got = ss.summary_stats(lambda: chunks, keep_all=keep_all)
        want = ref.summary_stats(lambda: chunks, keep_all=keep_all)
    finally:
        ss.KEEP_ROWS, ss.GATHER_KEYS, ref.KEEP_ROWS, ref.GATHER_KEYS = saved
    return _json(got), _json(want)


ints = st.integers(-(2**63), 2**63 - 1) | st.integers(-3, 3) | st.sampled_from([0, 2**63 - 1, -(2**63), 10**6])
floats = (
    st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0.0, -0.0, 1.0, 1.5, 5e-324, -5e-324, 1e308, -1e308, float("inf"), float("nan")])
    | st.floats(1.0, 1e4)
)
sizes = st.sampled_from([0, 1, 2, 3, 4, 5, 16, 17, 64, 65, 128, 129, 512, 1024, 1025, 5000, 2**62, 2**62 + 1, -1])


@st.composite
def job_columns(draw, max_size=40, values=floats):
    n = draw(st.integers(0, max_size))
    # a few distinct values repeated: ties at the median and the p95
    pool = draw(st.lists(values, min_size=1, max_size=4))
    vals = st.sampled_from(pool) | values
    cols = {
        "wait_s": np.array(draw(st.lists(st.sampled_from([0, 5, 5, 7]) | ints, min_size=n, max_size=n)), dtype=np.int64),
        "bounded_slowdown": np.array(draw(st.lists(vals, min_size=n, max_size=n)), dtype=np.float64),
        "aph": np.array(draw(st.lists(vals | st.just(float("nan")), min_size=n, max_size=n)), dtype=np.float64),
        "nodes": np.array(draw(st.lists(sizes, min_size=n, max_size=n)), dtype=np.int64),
    }
    cuts = draw(st.lists(st.integers(0, max_size), max_size=6))
    return cols, cuts


@settings(max_examples=300, deadline=None)
@given(job_columns(), st.sampled_from([0, 3, 10**9]), st.sampled_from([0, 2, 10**9]), st.booleans())
def test_summary_statistics_are_the_python_implementations(data, keep_rows: int, gather: int, keep_all: bool) -> None:
    cols, cuts = data
    got, want = _both(cols, cuts, keep_rows, gather, keep_all)
    assert got == want


@settings(max_examples=40, deadline=None)
@given(job_columns(max_size=3000, values=st.floats(0.0, 1e6) | st.sampled_from([1.0, 2.5])), st.sampled_from([0, 100]), st.sampled_from([0, 50, 10**9]))
def test_larger_runs_select_by_passes_as_python_did(data, keep_rows: int, gather: int) -> None:
    cols, cuts = data
    got, want = _both(cols, cuts, keep_rows, gather, False)
    assert got == want


def test_one_job_and_no_job() -> None:
    for n in (0, 1):
        cols = {"wait_s": np.full(n, 42, np.int64), "bounded_slowdown": np.full(n, 1.0), "aph": np.full(n, np.nan), "nodes": np.full(n, 3, np.int64)}
        got, want = _both(cols, [], 0, 0, False)
        assert got == want
        assert json.loads(got)["by_size"] == ([] if n == 0 else json.loads(want)["by_size"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=60))
def test_exact_float_sum_is_the_python_implementations(values: list[float]) -> None:
    x = np.array(values, dtype=np.float64)
    assert ss.exact_float_sum(x) == ref.exact_float_sum(x)


# ---------------------------------------------------------------- finished jobs' columns


@st.composite
def outcomes(draw):
    """A fabric (uneven leaves in pods) and random engine outcomes on it: any status, times
    (huge ones too), kills, APH or none, ascending node ranges for started jobs."""
    pods = draw(st.lists(st.lists(st.integers(1, 5), min_size=1, max_size=4), min_size=1, max_size=3))
    n_nodes = sum(sum(p) for p in pods)
    n = draw(st.integers(0, 25))
    times = st.integers(-1, 10**6) | st.sampled_from([0, 2**40, 2**62])
    status, start, end, klass, killed, aph, lists = [], [], [], [], [], [], []
    for _ in range(n):
        s = draw(st.sampled_from([0, 1, 2, 2, 2, 3]))
        status.append(s)
        a = draw(times)
        start.append(a if s in (1, 2) else -1)
        end.append(a + draw(st.integers(0, 10**5)) if s == 2 else -1)
        klass.append(draw(st.integers(0, 3)) if s in (1, 2) else 0)
        killed.append(draw(st.booleans()) if s == 2 else False)
        aph.append(draw(st.floats(0, 6) | st.just(float("nan"))))
        picks = draw(st.lists(st.booleans(), min_size=n_nodes, max_size=n_nodes)) if s in (1, 2) else []
        lists.append([i for i, p in enumerate(picks) if p])
    cols = {
        "job_id": np.array(draw(st.lists(st.integers(-(2**40), 2**40), min_size=n, max_size=n)), np.int64),
        "submit_s": np.array([min(t, 10**6) if t >= 0 else 0 for t in start], np.int64) - np.array(draw(st.lists(st.integers(0, 10**4), min_size=n, max_size=n)), np.int64),
        "nodes": np.array(draw(st.lists(st.integers(0, 3000), min_size=n, max_size=n)), np.int64),
        "walltime_s": np.array(draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n)), np.int64),
        "runtime_s": np.array(draw(st.lists(st.integers(-1, 10**6), min_size=n, max_size=n)), np.int64),
    }
    return pods, status, start, end, klass, killed, aph, lists, cols


@settings(max_examples=200, deadline=None)
@given(outcomes())
def test_finished_jobs_are_the_python_implementations(data) -> None:
    import collect_reference as cref

    from toposched import _core
    from toposched.nodelists import ranges_from_lists
    from toposched.results import finished_jobs

    pods, status, start, end, klass, killed, aph, lists, cols = data
    topo = _core.Topology.from_leaf_sizes("t", 3 if len(pods) > 1 else 2, pods)
    fabric = _FabricLike(topo)
    off = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([len(x) for x in lists], out=off[1:])
    flat = np.array([i for x in lists for i in x], np.int64)
    roff, first, count = ranges_from_lists(off, flat)
    r = {
        "status": np.array(status, np.int8),
        "start_s": np.array(start, np.int64),
        "end_s": np.array(end, np.int64),
        "alloc_class": np.array(klass, np.int8),
        "killed": np.array(killed, bool),
        "aph": np.array(aph, np.float64),
        "range_offsets": roff,
        "range_first": first,
        "range_count": count,
    }
    got = finished_jobs(r, cols, fabric)
    want = cref.finished_jobs(r, cols, fabric)
    assert got.table.schema.equals(want.table.schema, check_metadata=True)
    assert got.table.equals(want.table)
    for name in ("start", "end", "nodes", "wait", "bsld"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert got.aph.dtype == want.aph.dtype and np.array_equal(got.aph, want.aph, equal_nan=True)
    assert got.killed == want.killed


class _FabricLike:
    """What finished_jobs reads of a Fabric: its core topology."""

    def __init__(self, core) -> None:
        self.core = core


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(1, 5), min_size=1, max_size=4), min_size=1, max_size=4),
    st.lists(st.lists(st.booleans(), max_size=80), max_size=8),
)
def test_span_counts_are_the_python_implementations(pods: list[list[int]], picks: list[list[bool]]) -> None:
    import collect_reference as cref

    from toposched.nodelists import ranges_from_lists
    from toposched.results import _span_counts

    sizes = [s for pod in pods for s in pod]
    leaf_of = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    pod_of_leaf = np.repeat(np.arange(len(pods), dtype=np.int32), [len(p) for p in pods])
    n = len(leaf_of)
    lists = [[i for i in range(n) if i < len(p) and p[i]] for p in picks]
    off = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([len(x) for x in lists], out=off[1:])
    ranges = ranges_from_lists(off, np.array([i for x in lists for i in x], np.int64))
    got = _span_counts(*ranges, leaf_of, pod_of_leaf)
    want = cref._span_counts(*ranges, leaf_of, pod_of_leaf)
    assert [a.dtype for a in got] == [a.dtype for a in want]
    assert [a.tolist() for a in got] == [a.tolist() for a in want]


# ---------------------------------------------------------------- utilization samples


@st.composite
def busy_jobs(draw, max_jobs=30):
    n = draw(st.integers(0, max_jobs))
    start = np.array(draw(st.lists(st.integers(-50, 5000) | st.just(0), min_size=n, max_size=n)), np.int64)
    start.sort()  # a streamed replay adds jobs in batches of rising start
    end = start + np.array(draw(st.lists(st.integers(0, 3000), min_size=n, max_size=n)), np.int64)
    nodes = np.array(draw(st.lists(st.integers(1, 2**20) | st.sampled_from([1, 2**31 - 1]), min_size=n, max_size=n)), np.int64)
    return start, end, nodes


@settings(max_examples=200, deadline=None)
@given(busy_jobs(), st.integers(-20, 200), st.integers(-1, 9000), st.sampled_from([1, 7, 60, 3600]), st.sampled_from([1, 16, 999, 2**31 - 1]))
def test_series_are_the_python_implementations(jobs, t0: int, span: int, step: int, n_nodes: int) -> None:
    import utilization_reference as uref

    from toposched.utilization import UtilizationSeries

    start, end, nodes = jobs
    t1 = t0 + span
    got = UtilizationSeries.from_jobs(start, end, nodes, t0, t1, step, n_nodes)
    want = uref.UtilizationSeries.from_jobs(start, end, nodes, t0, t1, step, n_nodes)
    assert got.change_s.tolist() == want.change_s.tolist() and got.busy.tolist() == want.busy.tolist()
    m = want.n_samples
    assert got.n_samples == m
    for k0, k1 in ((0, m), (m // 3, m), (1, 2), (m, m), (5, 3)):
        assert got.busy_at(k0, k1).tolist() == want.busy_at(k0, k1).tolist()
    g, w = got.mean(), want.mean()
    assert (g is None and w is None) or (g is not None and w is not None and g.hex() == w.hex())
    if m:
        assert g == float(np.mean(want.busy_at(0, m) / max(n_nodes, 1)))  # np.mean itself, bit for bit


def test_long_series_mean_is_numpys() -> None:
    """Spans of several chunks of samples (pairwise halves across chunk ends)."""
    from toposched.utilization import CHUNK_SAMPLES, UtilizationSeries

    rng = np.random.default_rng(5)
    for n_samples in (129, 1000, CHUNK_SAMPLES + 12_345, 3 * CHUNK_SAMPLES + 7):
        start = np.sort(rng.integers(0, n_samples * 60, 400))
        end = start + rng.integers(0, 10**6, 400)
        nodes = rng.integers(1, 50, 400)
        t1 = (n_samples - 1) * 60
        s = UtilizationSeries.from_jobs(start, end, nodes, 0, t1, 60, 7)
        assert s.mean() == float(np.mean(s.busy_at(0, s.n_samples) / 7))


@settings(max_examples=100, deadline=None)
@given(busy_jobs(max_jobs=60), st.integers(0, 100), st.sampled_from([1, 7, 60]), st.sampled_from([None, 1, 37]), st.lists(st.integers(0, 60), max_size=5))
def test_busy_samples_are_the_python_implementations(tmp_path_factory, jobs, t0: int, step: int, spill_samples: int | None, cuts: list[int]) -> None:
    """Jobs added in batches, samples before the next batch's first start declared final
    (written out past ``spill_samples``): every sample, the spill point and the mean."""
    import utilization_reference as uref

    from toposched.utilization import BusySamples

    start, end, nodes = jobs
    d = tmp_path_factory.mktemp("busy")
    runs = []
    for impl, name in ((BusySamples, "got"), (uref.BusySamples, "want")):
        saved = impl.SPILL_SAMPLES
        if spill_samples is not None:
            impl.SPILL_SAMPLES = spill_samples
        try:
            b = impl(t0, step, 2**31 - 1, None if spill_samples is None else d / name)
            n = len(start)
            bounds = sorted({0, n, *(c % (n + 1) for c in cuts)})
            bases = []
            for a, z in zip(bounds, bounds[1:]):
                b.add(start[a:z], end[a:z], nodes[a:z])
                if z < n:
                    b.final_before(-((t0 - int(start[z])) // step))
                bases.append(b._base)
            m = b.n_samples
            runs.append((b.t1, m, bases, b.busy_at(0, m).tolist(), b.busy_at(m // 2, m).tolist(), b.mean()))
        finally:
            impl.SPILL_SAMPLES = saved
    assert runs[0] == runs[1]


@settings(max_examples=150, deadline=None)
@given(outcomes(), st.sampled_from([1, 60, 3600]))
def test_whole_replay_collection_is_the_python_chain(data, step: int) -> None:
    """collect_replay (finished jobs, utilization from the first submit to the last end,
    statistics with every key kept) against the Python pieces it replaced, chained as
    results.collect chained them."""
    import collect_reference as cref
    import summary_stats_reference as sref
    import utilization_reference as uref

    from toposched import _core
    from toposched.nodelists import ranges_from_lists
    from toposched.results import _row_arrays

    pods, status, start, end, klass, killed, aph, lists, cols = data
    topo = _core.Topology.from_leaf_sizes("t", 3 if len(pods) > 1 else 2, pods)
    off = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([len(x) for x in lists], out=off[1:])
    roff, first, count = ranges_from_lists(off, np.array([i for x in lists for i in x], np.int64))
    r = {
        "status": np.array(status, np.int8), "start_s": np.array(start, np.int64), "end_s": np.array(end, np.int64),
        "alloc_class": np.array(klass, np.int8), "killed": np.array(killed, bool), "aph": np.array(aph, np.float64),
        "range_offsets": roff, "range_first": first, "range_count": count,
    }
    n_nodes = sum(sum(p) for p in pods)
    got = _core.collect_replay(topo, _row_arrays(r, cols), step, n_nodes)
    part = cref.finished_jobs(r, cols, _FabricLike(topo))
    t0, t1 = (int(cols["submit_s"][0]), int(part.end.max())) if len(part.end) else (0, -1)
    series = uref.UtilizationSeries.from_jobs(part.start, part.end, part.nodes, t0, t1, step, n_nodes)
    stats = sref.summary_stats(lambda: [{"wait_s": part.wait, "bounded_slowdown": part.bsld, "aph": part.aph, "nodes": part.nodes}], keep_all=True)
    assert (got["t0"], got["t1"]) == (t0, t1)
    assert got["change_s"].tolist() == series.change_s.tolist() and got["busy"].tolist() == series.busy.tolist()
    assert _json(got["statistics"]) == _json(stats)
    assert got["finished"]["rows"].tolist() == np.flatnonzero(r["status"] == 2).tolist()

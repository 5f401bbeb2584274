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

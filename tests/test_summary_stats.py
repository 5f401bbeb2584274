"""The summary's statistics computed from chunks (toposched.summary_stats) against
independent references: NumPy's median, percentile and max, and means from exact
fractions, on random arrays split into random chunks. The selection re-reads the chunks,
so any split must give the same bits as one chunk."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import toposched.summary_stats as ss
from toposched.summary_stats import SIZE_BINS, exact_float_sum, summary_stats


def _bits(v: float | None) -> bytes | None:
    """Bits of a statistic; zeros compared by value (summary_stats documents that a zero
    statistic is always 0.0: NumPy's partition may leave either of two equal zeros)."""
    if v is None:
        return None
    if math.isnan(v):
        return b"nan"
    return struct.pack("<d", 0.0 if v == 0 else v)


def _exact_mean(x: np.ndarray) -> float:
    """The reference mean: the exact sum as a Fraction, one rounding."""
    if x.dtype.kind == "f":
        if np.isnan(x).any():
            return float("nan")
        inf = x[np.isinf(x)]
        if len(inf):
            return float("nan") if (inf > 0).any() and (inf < 0).any() else float(inf[0])
    total = sum((Fraction(v) for v in x.tolist()), Fraction(0))
    return float(total / len(x))


def _reference(x: np.ndarray) -> dict[str, bytes | None]:
    if len(x) == 0:
        return {"mean": None, "median": None, "p95": None, "max": None}
    with np.errstate(all="ignore"):  # NumPy's interpolation overflows near the float limit, as the code's does
        return {
            "mean": _bits(_exact_mean(x)),
            "median": _bits(float(np.median(x))),
            "p95": _bits(float(np.percentile(x, 95))),
            "max": _bits(float(np.max(x))),
        }


def _split(n: int, cuts: list[int]) -> list[tuple[int, int]]:
    bounds = sorted({0, n, *(c % (n + 1) for c in cuts)})
    return list(zip(bounds, bounds[1:])) or [(0, 0)]


def _run(wait: np.ndarray, bsld: np.ndarray, aph: np.ndarray, nodes: np.ndarray, cuts: list[int], keep: int | None = None, gather: int | None = None) -> dict:
    """summary_stats over the rows split at ``cuts``; ``keep``/``gather`` override
    KEEP_ROWS and GATHER_KEYS (0: every statistic by counting passes, 16 bits each)."""
    parts = _split(len(nodes), cuts)
    saved = ss.KEEP_ROWS, ss.GATHER_KEYS
    if keep is not None:
        ss.KEEP_ROWS = keep
    if gather is not None:
        ss.GATHER_KEYS = gather

    def chunks():
        for a, b in parts:
            yield {"wait_s": wait[a:b], "bounded_slowdown": bsld[a:b], "aph": aph[a:b], "nodes": nodes[a:b]}

    try:
        return summary_stats(chunks)
    finally:
        ss.KEEP_ROWS, ss.GATHER_KEYS = saved


def _check(out: dict, wait: np.ndarray, bsld: np.ndarray, aph: np.ndarray, nodes: np.ndarray) -> None:
    def got(d):
        return {k: _bits(d[k]) for k in ("mean", "median", "p95", "max")}

    assert got(out["wait_s"]) == _reference(wait)
    assert got(out["bounded_slowdown"]) == _reference(bsld)
    assert got(out["aph"]) == _reference(aph[~np.isnan(aph)])
    want_bins = []
    for label, lo, hi in SIZE_BINS:
        m = (nodes >= lo) & (nodes <= hi)
        if m.any():
            want_bins.append((label, int(m.sum()), min(hi, int(nodes[m].max()))))
            b = next(b for b in out["by_size"] if b["bin"] == label)
            assert got(b["wait_s"]) == _reference(wait[m])
            assert got(b["bounded_slowdown"]) == _reference(bsld[m])
            a = aph[m]
            assert got(b["aph"]) == _reference(a[~np.isnan(a)])
    assert [(b["bin"], b["jobs"], b["max_nodes"]) for b in out["by_size"]] == want_bins


ints = st.integers(-(2**62), 2**62) | st.integers(-3, 3) | st.sampled_from([0, 0, 0, 2**63 - 1, -(2**63)])
floats = (
    st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0.0, -0.0, 1.0, 1.5, 5e-324, -5e-324, 1e308, -1e308])
    | st.floats(1.0, 1e4)
)
finite = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, -0.0, 1.0, 5e-324])


@st.composite
def columns(draw, values=floats, max_size=40):
    n = draw(st.integers(0, max_size))
    wait = np.array(draw(st.lists(ints, min_size=n, max_size=n)), dtype=np.int64)
    bsld = np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=np.float64)
    aph = np.array(draw(st.lists(values | st.just(float("nan")), min_size=n, max_size=n)), dtype=np.float64)
    nodes = np.array(draw(st.lists(st.sampled_from([1, 2, 4, 5, 17, 64, 100, 1024, 1025, 5000]), min_size=n, max_size=n)), dtype=np.int64)
    cuts = draw(st.lists(st.integers(0, max_size), max_size=6))
    keep = draw(st.sampled_from([0, 10**9]))
    gather = draw(st.sampled_from([0, 2, 10**9]))
    return wait, bsld, aph, nodes, cuts, keep, gather


@settings(max_examples=200, deadline=None)
@given(columns())
def test_statistics_are_numpys_and_exact_means(cols) -> None:
    wait, bsld, aph, nodes, cuts, keep, gather = cols
    _check(_run(wait, bsld, aph, nodes, cuts, keep, gather), wait, bsld, aph, nodes)


@settings(max_examples=200, deadline=None)
@given(columns(values=finite, max_size=12))
def test_any_split_gives_the_same_bits(cols) -> None:
    wait, bsld, aph, nodes, cuts, keep, gather = cols
    whole = _run(wait, bsld, aph, nodes, [])
    assert repr(_run(wait, bsld, aph, nodes, cuts, keep, gather)) == repr(whole)
    assert repr(_run(wait, bsld, aph, nodes, list(range(len(nodes))), keep, gather)) == repr(whole)  # chunks of one row


def test_long_runs_of_one_value_and_sizes_0_1_2() -> None:
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 3, 20_001, 20_000):
        wait = np.where(rng.random(n) < 0.7, 0, rng.integers(0, 10**6, n)).astype(np.int64)
        bsld = np.maximum(wait / 7.0 + 1.0, 1.0)
        aph = np.where(rng.random(n) < 0.3, np.nan, rng.random(n))
        nodes = rng.integers(1, 3000, n).astype(np.int64)
        cuts = rng.integers(0, n + 1, 5).tolist()
        _check(_run(wait, bsld, aph, nodes, cuts), wait, bsld, aph, nodes)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, max_size=50))
def test_exact_float_sum_is_the_fraction_sum(values: list[float]) -> None:
    want = sum((Fraction(v) for v in values), Fraction(0))
    assert Fraction(exact_float_sum(np.array(values, dtype=np.float64)), 2**1126) == want


def test_known_values() -> None:
    """A hand-worked example: p95 at index 0.95 * 5 = 4.75 of 1,2,3,4,5,100 is 5 + 0.75 * 95."""
    wait = np.array([5, 1, 4, 2, 3, 100], dtype=np.int64)
    out = _run(wait, wait.astype(float), np.full(6, np.nan), np.ones(6, np.int64), [2])
    assert out["wait_s"] == {"mean": 115 / 6, "median": 3.5, "p95": 76.25, "max": 100.0}
    assert out["aph"] == {"mean": None, "median": None, "p95": None, "max": None}
    assert out["by_size"][0]["bin"] == "1" and out["by_size"][0]["jobs"] == 6


def test_large_runs_select_by_passes() -> None:
    """Beyond KEEP_ROWS the keys are not kept: the radix passes (counting, then gathering
    small buckets) must find the same order statistics."""
    rng = np.random.default_rng(3)
    n = 5000
    wait = np.where(rng.random(n) < 0.6, 0, rng.integers(-5, 10**9, n)).astype(np.int64)
    bsld = np.maximum(wait / 7.0 + 1.0, 1.0)
    aph = np.where(rng.random(n) < 0.3, np.nan, rng.standard_normal(n) * 1e6)
    nodes = rng.integers(0, 3000, n).astype(np.int64)
    cuts = rng.integers(0, n + 1, 9).tolist()
    for keep, gather in ((100, 10), (100, 0), (10**9, 10**9)):
        _check(_run(wait, bsld, aph, nodes, cuts, keep, gather), wait, bsld, aph, nodes)


def test_keep_all_is_the_same_as_passes() -> None:
    """The whole replay keeps every key (keep_all); the streamed one selects by passes over
    the rows beyond KEEP_ROWS: the same statistics, bit for bit."""
    rng = np.random.default_rng(11)
    n = 3000
    chunk = {
        "wait_s": np.where(rng.random(n) < 0.5, 0, rng.integers(0, 10**7, n)).astype(np.int64),
        "bounded_slowdown": 1.0 + rng.exponential(30.0, n),
        "aph": np.where(rng.random(n) < 0.2, np.nan, rng.random(n) * 4),
        "nodes": rng.integers(1, 2000, n).astype(np.int64),
    }
    saved = ss.KEEP_ROWS
    ss.KEEP_ROWS = 10
    try:
        by_passes = summary_stats(lambda: [chunk])
        kept = summary_stats(lambda: [chunk], keep_all=True)
    finally:
        ss.KEEP_ROWS = saved
    assert repr(kept) == repr(by_passes)

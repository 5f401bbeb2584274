"""The summary's statistics (results._stats) against NumPy's own median and percentile,
bit for bit: summary.json must not change when the way they are computed does."""

from __future__ import annotations

import math
import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from toposched.results import _median, _stats


def _bits(v: float) -> bytes:
    return b"nan" if math.isnan(v) else struct.pack("<d", v)


ints = st.lists(st.integers(-(2**62), 2**62) | st.integers(-3, 3), min_size=1, max_size=60)
floats = st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1.0, 1.5]), min_size=1, max_size=60)


@settings(max_examples=400, deadline=None)
@given(ints)
def test_median_of_integers_is_numpys(values: list[int]) -> None:
    x = np.array(values, dtype=np.int64)
    assert _bits(_median(x)) == _bits(float(np.median(x)))


@settings(max_examples=400, deadline=None)
@given(floats)
def test_median_of_floats_is_numpys(values: list[float]) -> None:
    x = np.array(values, dtype=np.float64)
    assert _bits(_median(x)) == _bits(float(np.median(x)))


def test_median_of_long_runs_of_one_value() -> None:
    """The case the two-position partition is for (most waits 0), odd and even lengths."""
    rng = np.random.default_rng(7)
    for n in (200_001, 200_000):
        x = np.where(rng.random(n) < 0.7, 0, rng.integers(0, 10**6, n)).astype(np.int64)
        assert _median(x) == float(np.median(x))
        y = x / 7.0 + 1.0
        assert _bits(_median(y)) == _bits(float(np.median(y)))


def test_stats_keys_and_values() -> None:
    x = np.array([5, 1, 4, 2, 3, 100], dtype=np.int64)
    assert _stats(x) == {"mean": 19.166666666666668, "median": 3.5, "p95": 76.25, "max": 100.0}  # p95: index 4.75 of 1,2,3,4,5,100
    assert _stats(np.zeros(0, np.int64)) == {"mean": None, "median": None, "p95": None, "max": None}

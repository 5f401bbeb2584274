"""normalize() runs natively (crates/toposched-io/src/normalize.rs): on random raw columns
it gives exactly what the former Python implementation (tests/normalize_reference.py, kept
unchanged as the reference) gave: every column, the repair and skip counts in the same
order, the settings with their out-of-range examples, the extra columns, the streamed
submit span, and the same error (class, file, line, field, text)."""

from __future__ import annotations

import calendar

import normalize_reference as ref
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from toposched import limits
from toposched.errors import TraceFormatError
from toposched.workload import normalize as normalize_module
from toposched.workload.normalize import RAW_COLUMNS, NormalizeSettings, check_ranges, normalize

# Values near every limit the rules compare with, from both sides.
_EDGES = [
    ref.MAX_SPAN_S,
    ref.MAX_SPAN_LONG_S,
    ref.MAX_TIME_S,
    ref.MAX_COUNT,
    ref.MAX_ID,
    ref.EPOCH_MAX_S - 10**9,
]
_NEAR = sorted({e + d for e in _EDGES for d in (-1, 0, 1)})
_SMALL = st.sampled_from([-1, -1, 0, 1, 2, 3, 4, 5, 7, 8, 16, 100, 3600])
_VALUE = st.one_of(
    _SMALL,
    _SMALL,
    _SMALL,
    st.sampled_from(_NEAR),
    st.sampled_from([-2, -(2**63), 2**63 - 1, 2**32 - 1, -(2**31)]),
    st.integers(-(2**63), 2**63 - 1),
)
# Submits: mostly small with ties (the sort), sometimes far: around the 50-year and
# 230-year distance from small submits (the outlier rule, whose median is small here)
# and around the window's end.
_SUBMIT = st.one_of(
    st.integers(-2, 12),
    st.integers(-2, 12),
    st.integers(-2, 12),
    st.integers(ref.MAX_SPAN_S - 2, ref.MAX_SPAN_S + 14),
    st.integers(ref.MAX_SPAN_LONG_S - 2, ref.MAX_SPAN_LONG_S + 14),
    _VALUE,
)

_FIELD_NAMES = {"submit_s": "submit time (field 2)", "runtime_s": "run time (field 4)", "walltime_s": "requested time (field 9)", "procs_alloc": "allocated processors (field 5)", "procs_req": "requested processors (field 8)", "nodes_alloc": "NNodes"}


@st.composite
def _raw(draw, n_max=24):
    n = draw(st.integers(0, n_max))
    cols = {}
    for c in RAW_COLUMNS[:-1]:
        # a column is tame (small values) or wild (values near every limit): one wild
        # value in every column would stop nearly every read at its first rule
        values = _SUBMIT if c == "submit_s" else _VALUE if draw(st.booleans()) else _SMALL
        cols[c] = np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=np.int64)
    cols["line"] = np.array(draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n)), dtype=np.int64)
    if n and draw(st.booleans()):
        # a reader's columns are views of one table (not contiguous), like swf._raw_columns
        table = np.stack([cols[c] for c in RAW_COLUMNS], axis=1)
        cols = {c: table[:, k] for k, c in enumerate(RAW_COLUMNS)}
    return cols


_SETTINGS = st.builds(
    NormalizeSettings,
    cores_per_node=st.sampled_from([1, 1, 2, 3, 4, 128, 2**40]),
    size_field=st.sampled_from(["auto", "allocated", "requested"]),
    missing_walltime=st.one_of(st.just("runtime"), st.sampled_from([1, 3600, 2**53])),
    missing_runtime=st.sampled_from(["skip", "zero"]),
)
_ORIGIN = st.one_of(
    st.none(),
    st.sampled_from([0, 1, 10**9, ref.EPOCH_MAX_S - 5, ref.EPOCH_MAX_S + 3, -5, -(10**9), 2**70, -(2**70), 2**200]),
)
_COUNTS = st.sampled_from([{}, {"malformed_line": 2}, {"submit_unsorted": 1, "size_from_requested": 3}, {"out_of_range": 1}])


def _extra(draw, n):
    extra: dict = {}
    for name in draw(st.lists(st.sampled_from(["user_id", "qos_id", "logged_start_s", "note", "partition_id"]), unique=True)):
        if name == "note":
            extra[name] = "a value, not a column"
        elif name == "logged_start_s":
            extra[name] = list(range(n)) if draw(st.booleans()) else np.arange(n, dtype=np.int64) * 10
        else:
            extra[name] = np.array(draw(st.lists(st.sampled_from([-2, -1, 0, 5, ref.MAX_ID, ref.MAX_ID + 1, 2**40]), min_size=n, max_size=n)), dtype=np.int64)
    return extra


def _run(fn, raw, **kw):
    try:
        return "ok", fn(raw, **kw)
    except TraceFormatError as e:
        return "error", e


def _same_workload(got, want):
    assert list(got.columns) == list(want.columns)
    for c in want.columns:
        assert got.columns[c].dtype == want.columns[c].dtype == np.int64, c
        assert got.columns[c].tolist() == want.columns[c].tolist(), c
    assert list(got.repairs.items()) == list(want.repairs.items())
    assert list(got.skipped.items()) == list(want.skipped.items())
    assert got.settings == want.settings
    assert list(got.settings) == list(want.settings)
    assert list(got.extra) == list(want.extra)
    for k, v in want.extra.items():
        g = got.extra[k]
        assert type(g) is type(v), k
        assert (g.tolist() if isinstance(g, np.ndarray) else g) == (v.tolist() if isinstance(v, np.ndarray) else v), k
    assert (got.source, got.format, got.records, got.time_origin_epoch_s, got.header, got.names) == (
        want.source,
        want.format,
        want.records,
        want.time_origin_epoch_s,
        want.header,
        want.names,
    )


def _same_error(got, want):
    assert type(got) is type(want) is TraceFormatError
    assert (str(got), got.path, got.line, got.field, got.message, got.hint) == (str(want), want.path, want.line, want.field, want.message, want.hint)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    data=st.data(),
    raw=_raw(),
    norm=_SETTINGS,
    origin=_ORIGIN,
    lenient=st.booleans(),
    allow_long_span=st.booleans(),
    named=st.booleans(),
    repairs=_COUNTS,
    skipped=_COUNTS,
    span=st.one_of(st.none(), st.just([]), st.tuples(st.integers(0, 20), st.integers(0, ref.MAX_SPAN_S)).map(sorted)),
)
def test_native_normalize_is_the_python_one(data, raw, norm, origin, lenient, allow_long_span, named, repairs, skipped, span):
    n = len(raw["job_id"])
    extra = _extra(data.draw, n)
    kw = dict(
        source="logs/x.swf",
        fmt="swf",
        settings=norm,
        records=n + 3,
        repairs=dict(repairs),
        skipped=dict(skipped),
        header={"MaxNodes": "4"},
        time_origin_epoch_s=origin,
        extra=extra,
        settings_note={"note": 1},
        lenient=lenient,
        allow_long_span=allow_long_span,
        field_names=_FIELD_NAMES if named else None,
        names={"user_id": ["a"]},
    )
    span_ref = list(span) if span is not None else None
    span_got = list(span) if span is not None else None
    want = _run(ref.normalize, raw, submit_span=span_ref, **kw)
    got = _run(normalize, raw, submit_span=span_got, **kw)
    assert got[0] == want[0], (got, want)
    if want[0] == "error":
        _same_error(got[1], want[1])
    else:
        _same_workload(got[1], want[1])
        assert len(got[1]) + sum(got[1].skipped.values()) - sum(skipped.values()) == n
    assert span_got == span_ref


@settings(max_examples=400, deadline=None)
@given(raw=_raw(), origin=_ORIGIN, lenient=st.booleans(), allow_long_span=st.booleans(), named=st.booleans(), examples=st.sampled_from([None, [], ["line 1: x"], ["e"] * 5]))
def test_native_check_ranges_is_the_python_one(raw, origin, lenient, allow_long_span, named, examples):
    kw = dict(source="x.log", time_origin_epoch_s=origin, lenient=lenient, allow_long_span=allow_long_span, field_names=_FIELD_NAMES if named else {})
    ex_ref = list(examples) if examples is not None else None
    ex_got = list(examples) if examples is not None else None
    want = _run(ref.check_ranges, raw, examples=ex_ref, **kw)
    got = _run(check_ranges, raw, examples=ex_got, **kw)
    assert got[0] == want[0]
    if want[0] == "error":
        _same_error(got[1], want[1])
    else:
        assert got[1].dtype == want[1].dtype == np.bool_
        assert got[1].tolist() == want[1].tolist()
    assert ex_got == ex_ref


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 30), min_size=1, max_size=6), submits=st.lists(st.one_of(st.integers(0, 50), st.sampled_from([ref.MAX_SPAN_S, ref.MAX_SPAN_S + 40, ref.MAX_SPAN_LONG_S])), min_size=1, max_size=120), lenient=st.booleans(), allow_long_span=st.booleans())
@example(sizes=[1, 1], submits=[0, ref.MAX_SPAN_S + 1], lenient=True, allow_long_span=False)
def test_streamed_chunks_carry_the_same_span(sizes, submits, lenient, allow_long_span):
    """A log normalized a chunk at a time (SwfStream): the span list carried from chunk to
    chunk, and the error when it grows past the limit, are the reference's."""
    span_ref: list[int] = []
    span_got: list[int] = []
    pos = 0
    for k in sizes * 20:
        part = submits[pos : pos + k]
        if not part:
            break
        m = len(part)
        raw = {c: np.full(m, 1, dtype=np.int64) for c in RAW_COLUMNS}
        raw["submit_s"] = np.array(part, dtype=np.int64)
        raw["line"] = np.arange(pos + 1, pos + m + 1)
        kw = dict(source="s.swf", fmt="swf", settings=NormalizeSettings(), records=m, lenient=lenient, allow_long_span=allow_long_span)
        want = _run(ref.normalize, raw, submit_span=span_ref, **kw)
        got = _run(normalize, raw, submit_span=span_got, **kw)
        assert got[0] == want[0]
        assert span_got == span_ref
        if want[0] == "error":
            _same_error(got[1], want[1])
            break
        _same_workload(got[1], want[1])
        pos += m


def test_the_limits_are_the_documented_ones():
    """toposched.limits takes its values from Rust (one definition): they are the
    documented ones, computed here independently."""
    assert limits.EPOCH_MIN_S == 0
    assert limits.EPOCH_MAX_S == calendar.timegm((2200, 1, 1, 0, 0, 0))
    assert limits.MAX_SPAN_S == 50 * 365 * 86_400
    assert limits.MAX_SPAN_LONG_S == limits.EPOCH_MAX_S - limits.EPOCH_MIN_S
    assert limits.MAX_TIME_S == 2**53
    assert limits.MAX_COUNT == 2**31
    assert normalize_module.MAX_ID == 2**32 - 2 and normalize_module._MAX_EXAMPLES == 5
    assert all(type(v) is int for v in (limits.EPOCH_MIN_S, limits.EPOCH_MAX_S, limits.MAX_SPAN_S, limits.MAX_SPAN_LONG_S, limits.MAX_TIME_S, limits.MAX_COUNT))


def test_columns_of_unequal_length_are_refused():
    raw = {c: np.zeros(3, dtype=np.int64) for c in RAW_COLUMNS}
    raw["procs_req"] = np.zeros(2, dtype=np.int64)
    with pytest.raises(ValueError, match="procs_req"):
        normalize(raw, source="x", fmt="t", settings=NormalizeSettings(), records=3)


def test_the_output_columns_are_new_contiguous_arrays():
    raw = {c: np.ones(4, dtype=np.int64) for c in RAW_COLUMNS}
    raw["submit_s"] = np.array([3, 1, 2, 0])
    w = normalize(raw, source="x", fmt="t", settings=NormalizeSettings(), records=4)
    assert w["submit_s"].tolist() == [0, 1, 2, 3]
    for c, a in w.columns.items():
        assert a.flags.c_contiguous and a.flags.writeable, c
        assert not np.shares_memory(a, raw["submit_s"]), c


def test_flags_are_taken_for_their_truth_as_before():
    """lenient / allow_long_span given as 1 or NumPy booleans (the Python rules only asked
    whether they were true)."""
    raw = {c: np.ones(2, dtype=np.int64) for c in RAW_COLUMNS}
    raw["runtime_s"] = np.array([1, ref.MAX_SPAN_S + 1])
    w = normalize(raw, source="x", fmt="t", settings=NormalizeSettings(), records=2, lenient=1)
    assert w.skipped == {"out_of_range": 1}
    w = normalize(raw, source="x", fmt="t", settings=NormalizeSettings(), records=2, allow_long_span=np.bool_(True))
    assert len(w) == 2

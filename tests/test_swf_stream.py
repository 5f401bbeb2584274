"""The SWF log read in chunks (toposched.workload.swf_stream, `simulate --stream`) against
the whole read (read_swf): every bundled trace, at chunk sizes 1, 7 and 1000, gives the
same jobs in the same order (every column) and the same description (records, repairs,
skipped, settings); fuzzed logs give the same jobs or the same one-line error; what a
chunk cannot do (reorder, find outliers by the median, a header after the jobs) is
refused with one line that names --stream."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE_TRACE, TRACES
from test_fuzz_readers import mutated
from toposched.errors import TraceFormatError
from toposched.workload import read_trace
from toposched.workload import swf_stream
from toposched.workload.swf import read_swf
from toposched.workload.swf_stream import SwfStream

SWF_TRACES = sorted(p for p in TRACES.glob("*.swf.gz") if "wagap" not in p.name) + [EXAMPLE_TRACE]


def _streamed(path: Path, chunk_rows: int, **options) -> tuple[list, SwfStream]:
    s = SwfStream(path, chunk_rows=chunk_rows, **options)
    return list(s.chunks()), s


def _assert_same(parts: list, s: SwfStream, w) -> None:
    assert all(len(p) for p in parts)
    for c, v in w.columns.items():
        got = np.concatenate([p.columns[c] for p in parts]) if parts else np.zeros(0, np.int64)
        np.testing.assert_array_equal(got, v, err_msg=c)
    for c, v in w.extra.items():
        if isinstance(v, np.ndarray):
            got = np.concatenate([p.extra[c] for p in parts]) if parts else v[:0]  # no job read: no part
            np.testing.assert_array_equal(got, v, err_msg=c)
    assert s.describe() == w.describe()


@pytest.mark.parametrize("path", SWF_TRACES, ids=lambda p: p.name.split("-")[0] + "-" + p.name.split("-")[1])
@pytest.mark.parametrize("chunk_rows", [1, 7, 1000])
def test_bundled_traces_read_the_same(path: Path, chunk_rows: int) -> None:
    w = read_trace(path, format="swf")
    parts, s = _streamed(path, chunk_rows)
    _assert_same(parts, s, w)


def test_options_and_lenient_read_the_same(tmp_path: Path) -> None:
    path = TRACES / "SDSC-SP2-1998-4.2-cln.first6564lines.swf.gz"
    options = dict(cores_per_node=3, size_field="requested", missing_walltime=600, missing_runtime="zero", lenient=True)
    _assert_same(*_streamed(path, 13, **options), read_swf(path, **options))


def test_small_blocks_carriage_returns_and_bom(tmp_path: Path, monkeypatch) -> None:
    """Blocks of 5 bytes: lines, "\\r\\n" pairs and a byte-order mark split across blocks."""
    text = gzip.decompress((TRACES / "HPC2N-2002-2.2-cln.first1031lines.swf.gz").read_bytes())
    lines = text.split(b"\n")[:120]
    for name, data in (
        ("crlf", b"\xef\xbb\xbf" + b"\r\n".join(lines)),
        ("cr", b"\r".join(lines)),
        ("mixed", b"\r\n".join(lines[:60]) + b"\r" + b"\n".join(lines[60:])),
    ):
        p = tmp_path / f"{name}.swf"
        p.write_bytes(data)
        monkeypatch.setattr(swf_stream, "_BLOCK_BYTES", 5)
        _assert_same(*_streamed(p, 4), read_swf(p))


FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@FUZZ
@given(data=mutated("swf"), chunk_rows=st.sampled_from([1, 3, 50]), lenient=st.booleans())
def test_fuzzed_logs_read_the_same_or_fail_the_same(data: bytes, chunk_rows: int, lenient: bool, tmp_path: Path) -> None:
    """One to three mutations of real records: the same jobs, or the same error word for
    word, unless the streamed read stopped first at a refusal of its own (naming
    --stream)."""
    p = tmp_path / "log.swf"
    p.write_bytes(data)
    try:
        w = read_swf(p, lenient=lenient)
    except TraceFormatError as exc:
        with pytest.raises(TraceFormatError) as got:
            _streamed(p, chunk_rows, lenient=lenient)
        assert str(got.value) == str(exc) or "--stream" in str(got.value)
        return
    try:
        parts, s = _streamed(p, chunk_rows, lenient=lenient)
    except TraceFormatError as exc:
        assert "--stream" in str(exc), exc
        return
    _assert_same(parts, s, w)


def _swf(rows: list[tuple[int, int]], header: str = "; MaxNodes: 8\n; MaxProcs: 8\n") -> str:
    return header + "".join(f"{j} {t} 0 50 2 -1 -1 2 100 -1 1 1 1 1 1 1 -1 -1\n" for j, t in rows)


@pytest.mark.parametrize("chunk_rows", [1, 2, 100])
def test_out_of_order_log_is_refused_with_its_line(tmp_path: Path, chunk_rows: int) -> None:
    p = tmp_path / "unsorted.swf"
    p.write_text(_swf([(1, 10), (2, 20), (3, 20), (4, 15), (5, 30)]))
    assert read_swf(p).repairs == {"submit_unsorted": 1}  # the whole read sorts it
    with pytest.raises(TraceFormatError) as exc:
        _streamed(p, chunk_rows)
    assert str(exc.value).startswith(f"{p}:6:") and "earlier than" in str(exc.value) and "without --stream" in str(exc.value)
    assert "\n" not in str(exc.value)


def test_ties_and_dropped_rows_are_in_order(tmp_path: Path) -> None:
    """Equal submits in file order are in order; a job left out (unknown submit -1) does
    not count."""
    p = tmp_path / "ties.swf"
    p.write_text(_swf([(1, 10), (2, 10), (3, -1), (4, 10), (5, 11)]))
    _assert_same(*_streamed(p, 2), read_swf(p))


def test_long_span_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "span.swf"
    p.write_text(_swf([(1, 10), (2, 20), (3, 60 * 365 * 86400)]))
    with pytest.raises(TraceFormatError, match=r"span\.swf:5: .*span more than .*without --stream"):
        _streamed(p, 1)


def test_header_after_the_jobs_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "late.swf"
    p.write_text(_swf([(1, 10), (2, 20)], header="") + "; MaxProcs: 64\n; MaxNodes: 8\n" + _swf([(3, 30)], header=""))
    assert read_swf(p).settings["cores_per_node"] == 8  # the whole read uses it for every job
    with pytest.raises(TraceFormatError, match=r"late\.swf:3: field 'MaxProcs': .*sets MaxNodes, MaxProcs, .*without --stream"):
        _streamed(p, 1)
    # refused when read, before the jobs after it (and the log's end) are: a streamed
    # replay is not run to its end to be refused there
    s = SwfStream(p, chunk_rows=1)
    blocks = iter([p.read_bytes()[:45], p.read_bytes()[45:]])  # job 1; then job 2, the late lines, job 3
    seen = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(swf_stream, "_blocks", lambda path: blocks)
        with pytest.raises(TraceFormatError, match="late.swf:3: field 'MaxProcs'"):
            for w in s.chunks():
                seen += w["job_id"].tolist()
    assert seen == [1]
    # a note (not a setting) after the jobs is fine
    q = tmp_path / "note.swf"
    q.write_text(_swf([(1, 10)]) + "; Note: hello\n" + _swf([(2, 20)], header=""))
    _assert_same(*_streamed(q, 1), read_swf(q))


def test_empty_and_malformed_logs_fail_as_the_whole_read(tmp_path: Path) -> None:
    for name, text in (("empty.swf", "; MaxNodes: 4\n"), ("bad.swf", "1 2 3\n")):
        p = tmp_path / name
        p.write_text(text)
        for lenient in (False, True):
            with pytest.raises(TraceFormatError) as whole:
                read_swf(p, lenient=lenient)
            with pytest.raises(TraceFormatError) as got:
                _streamed(p, 5, lenient=lenient)
            assert str(got.value) == str(whole.value)


def test_module_doctest() -> None:
    import doctest

    assert doctest.testmod(swf_stream).failed == 0


@pytest.mark.parametrize("chunk_rows", [1, 2, 100])
def test_repeated_job_number_is_refused(tmp_path: Path, chunk_rows: int) -> None:
    """The whole read compares a repeated job number's records (tests/test_swf.py); the
    stream keeps only the numbers seen and refuses, naming the line and --stream."""
    p = tmp_path / "rep.swf"
    p.write_text(_swf([(1, 0), (2, 10), (3, 20), (2, 30)]))
    assert read_swf(p).repairs == {"duplicate_job_id": 1}
    with pytest.raises(TraceFormatError, match=r"rep\.swf:6: field 'job_number': job number 2 is that of an earlier record.*without --stream"):
        _streamed(p, chunk_rows)
    # numbers not in order, without repeats, and unknown numbers (-1) stream as a whole read
    p.write_text(_swf([(5, 0), (-1, 1), (1, 2), (-1, 3), (3, 4), (2, 5), (4, 6)]))
    _assert_same(*_streamed(p, chunk_rows), read_swf(p))

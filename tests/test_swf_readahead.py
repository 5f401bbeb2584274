"""The native read-ahead (``_core.SwfReadAhead`` through :mod:`toposched.readahead`)
changes nothing but when the work is done: ``read_swf`` after ``prefetch`` gives the
Workload (every column, repairs, skips, settings, header) or the one-line error that
``read_swf`` alone gives, on every SWF log the repository ships and on generated logs
(plain, gzip, multi-member gzip, broken gzip, CRLF, lone CR, BOM, comments in the body,
extended fields, bad tokens, strict and lenient); a file changed in between is read
again; and on plain logs the reader really takes the chunks parsed ahead."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from toposched import _core, readahead, swf_layout
from toposched.errors import TraceFormatError
from toposched.workload import swf
from toposched.workload.swf import read_swf

from conftest import DATA, EXAMPLE_TRACE, HPC2N, KTH
from test_swf import TRICKY, assert_same_workload, rec

# Every SWF log the repository ships, the broken ones of the regression corpus included.
LOGS = sorted(p for p in DATA.rglob("*") if p.name.endswith((".swf", ".swf.gz"))) + [EXAMPLE_TRACE]


def _outcome(path: Path, ahead: bool, **options):
    """read_swf's Workload, or its error as (class, the one line, line, field); with
    ``ahead``, after a read-ahead that has finished (or not: ``wait=False``)."""
    wait = options.pop("wait", True)
    if ahead:
        readahead.prefetch(path)
        started = readahead._PREFETCHED.get(str(path))
        assert started is not None and isinstance(started[1], _core.SwfReadAhead)
        if wait:
            started[1].wait()
    try:
        return read_swf(path, **options)
    except TraceFormatError as e:
        return (type(e).__name__, str(e), e.line, e.field)
    finally:
        assert str(path) not in readahead._PREFETCHED  # the reader took it


def _assert_same(a, b) -> None:
    if isinstance(a, tuple) or isinstance(b, tuple):
        assert a == b
    else:
        assert_same_workload(a, b)
        assert (a.source, a.format) == (b.source, b.format)


def _body_chunk_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the chunks read_swf parses itself (not taken from the read-ahead)."""
    calls: list[int] = []
    real = swf._body_chunk

    def counted(chunk: bytes, line_no: int, col: swf._Collector) -> int:
        calls.append(line_no)
        return real(chunk, line_no, col)

    monkeypatch.setattr(swf, "_body_chunk", counted)
    return calls


def _chunk_bytes(n: int):
    """Set the chunk size of the reader and of the read-ahead (one constant, two names:
    swf._CHUNK_BYTES is the reader's alias of swf_layout.CHUNK_BYTES)."""
    old = swf._CHUNK_BYTES, swf_layout.CHUNK_BYTES
    swf._CHUNK_BYTES = swf_layout.CHUNK_BYTES = n

    def restore() -> None:
        swf._CHUNK_BYTES, swf_layout.CHUNK_BYTES = old

    return restore


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in LOGS])
@pytest.mark.parametrize("lenient", [False, True])
def test_every_shipped_log_reads_the_same_ahead(path: Path, lenient: bool) -> None:
    _assert_same(_outcome(path, True, lenient=lenient), _outcome(path, False, lenient=lenient))


def test_plain_logs_take_every_chunk_parsed_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a test that cannot fail: on a plain log the reader parses no chunk itself
    after a read-ahead, and does parse them all without one."""
    restore = _chunk_bytes(4096)  # KTH's 6,000 lines: ~100 chunks
    try:
        calls = _body_chunk_calls(monkeypatch)
        plain = _outcome(KTH, False)
        n_chunks = len(calls)
        calls.clear()
        ahead = _outcome(KTH, True)
        assert n_chunks > 50 and calls == []
        _assert_same(ahead, plain)
        # not waiting for the thread: the reader waits in take()
        assert_same_workload(_outcome(HPC2N, True, wait=False), _outcome(HPC2N, False))
    finally:
        restore()


def test_chunks_cut_elsewhere_are_read_by_the_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-ahead that cut other chunks than the reader (here: another chunk size)
    leaves every chunk to the reader, with the same result."""
    calls = _body_chunk_calls(monkeypatch)
    monkeypatch.setattr(swf_layout, "CHUNK_BYTES", 5000)  # the read-ahead's
    monkeypatch.setattr(swf, "_CHUNK_BYTES", 7000)  # the reader's
    ahead = _outcome(KTH, True)
    assert len(calls) > 50
    monkeypatch.setattr(swf_layout, "CHUNK_BYTES", 7000)
    calls.clear()
    _assert_same(ahead, _outcome(KTH, True))
    assert calls == []


@pytest.mark.parametrize("inflate_bytes", [None, 4093, 1 << 30])
def test_chunks_parsed_ahead_are_read_swf_s_chunks(inflate_bytes: int | None) -> None:
    """The read-ahead cuts where read_swf cuts: its first chunk starts after read_swf's
    header block, each ends at a line end at or past the chunk size, the last at the end,
    and what it parsed is what swf_plain_chunk gives on those bytes; whatever the blocks
    the gzip log is inflated in while it parses (default 1 MiB, small, the whole log)."""
    data = gzip.decompress(HPC2N.read_bytes())
    blocks = {} if inflate_bytes is None else {"inflate_bytes": inflate_bytes}
    ahead = _core.SwfReadAhead(str(HPC2N), 2000, list(swf_layout.USED), swf_layout.N_FIELDS, swf_layout.MAX_FAST_DIGITS, **blocks)
    taken = ahead.take(chunks=True)
    assert taken is not None and taken[0] == data
    col = swf._Collector("x", False)
    start, _ = swf._header_block(data, 0, 1, col)
    for begin, end, parsed in taken[1]:
        assert begin == start
        newline = data.find(b"\n", begin + 2000)
        assert end == (len(data) if newline < 0 else newline + 1)
        expect = _core.swf_plain_chunk(data[begin:end], list(swf_layout.USED), swf_layout.N_FIELDS, swf_layout.MAX_FAST_DIGITS)
        assert parsed is not None and expect is not None
        assert (parsed[0].tolist(), parsed[1].tolist(), parsed[2]) == (expect[0].tolist(), expect[1].tolist(), expect[2])
        start = end
    assert start == len(data) and len(taken[1]) > 10
    assert ahead.take(chunks=True) is None  # taken once


def test_broken_gzip_gives_the_same_one_line_error(tmp_path: Path) -> None:
    whole = KTH.read_bytes()  # gzip
    truncated = tmp_path / "truncated.swf.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    corrupted = tmp_path / "corrupted.swf.gz"
    flipped = bytearray(whole)
    flipped[len(whole) // 2] ^= 0x55
    corrupted.write_bytes(bytes(flipped))
    for path in (truncated, corrupted):
        readahead.prefetch(path)  # no error here: it comes where the reader asks
        got = _outcome(path, True)
        assert got == _outcome(path, False)
        assert got[0] == "TraceFormatError" and got[1].startswith(f"{path}: corrupt gzip data: "), got
        assert "\n" not in got[1]


def test_a_file_changed_after_the_read_ahead_is_read_again(tmp_path: Path) -> None:
    log = tmp_path / "log.swf"
    log.write_text(rec(1, 10) + "\n" + rec(2, 20) + "\n")
    readahead.prefetch(log)
    readahead._PREFETCHED[str(log)][1].wait()  # it has read the first version
    st_before = log.stat()
    log.write_text(rec(3, 30) + "\n" + rec(4, 40) + "\n")  # the same size
    os.utime(log, ns=(st_before.st_atime_ns, st_before.st_mtime_ns + 1_000_000))
    assert read_swf(log)["job_id"].tolist() == [3, 4]
    readahead.prefetch(log)
    log.write_text(rec(5, 50) + "\n")  # another size, maybe while the thread reads
    assert read_swf(log)["job_id"].tolist() == [5]


def test_discard_take_and_cancel(tmp_path: Path) -> None:
    log = tmp_path / "log.swf"
    log.write_text(rec(1) + "\n")
    readahead.prefetch(log)
    readahead.discard_prefetched(log)
    assert not readahead._PREFETCHED
    args = (str(log), 1 << 20, list(swf_layout.USED), swf_layout.N_FIELDS, swf_layout.MAX_FAST_DIGITS)
    ahead = _core.SwfReadAhead(*args)
    ahead.wait()
    ahead.cancel()
    assert ahead.take(chunks=True) is None  # dropped
    taken = _core.SwfReadAhead(*args).take(chunks=False)
    assert taken == (log.read_bytes(), [])
    # take() hands over once
    ahead = _core.SwfReadAhead(*args)
    taken = ahead.take(chunks=True)
    assert taken is not None and taken[0] == log.read_bytes() and len(taken[1]) == 1
    assert ahead.take(chunks=True) is None
    # a file that cannot be read ahead: None, and the reader reports it itself
    assert _core.SwfReadAhead(str(tmp_path / "missing.swf"), *args[1:]).take(chunks=True) is None
    assert _core.SwfReadAhead(str(tmp_path), *args[1:]).take(chunks=True) is None


def test_without_the_native_read_ahead_prefetch_reads_on_the_calling_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An extension built before SwfReadAhead: prefetch reads and inflates at once, and
    the reader gets those bytes (or that error) as before."""
    monkeypatch.setattr(readahead, "_native_read_ahead", lambda path: None)
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(KTH.read_bytes()[:-40])
    for path in (KTH, cut):
        readahead.prefetch(path)
        got = readahead._PREFETCHED[str(path)][1]
        assert isinstance(got, (bytes, TraceFormatError))
        try:
            first = read_swf(path)
        except TraceFormatError as e:
            first = (type(e).__name__, str(e), e.line, e.field)
        _assert_same(first, _outcome(path, False))


def test_non_regular_files_are_left_to_the_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.swf"
    os.mkfifo(fifo)
    readahead.prefetch(fifo)
    assert not readahead._PREFETCHED
    readahead.prefetch(tmp_path / "missing.swf")
    assert not readahead._PREFETCHED
    with pytest.raises(TraceFormatError, match="no such file"):
        read_swf(tmp_path / "missing.swf")


@pytest.mark.parametrize("text", [b"", b"\n\n", b"\xef\xbb\xbf; Version: 2\n"])
def test_logs_without_records(tmp_path: Path, text: bytes) -> None:
    log = tmp_path / "empty.swf"
    log.write_bytes(text)
    got = _outcome(log, True)
    assert got == _outcome(log, False) and "no job records found" in got[1]


def test_simulate_reports_the_fabric_before_a_broken_log(tmp_path: Path, capsys) -> None:
    from toposched.cli import main

    broken = tmp_path / "broken.swf.gz"
    broken.write_bytes(gzip.compress(HPC2N.read_bytes())[:200])
    assert main(["simulate", "--trace", str(broken), "--system", "nosuch", "--out", str(tmp_path / "a"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and "gzip" not in err
    assert main(["simulate", "--trace", str(broken), "--system", "cab", "--out", str(tmp_path / "b"), "--quiet"]) == 2
    assert "corrupt gzip data" in capsys.readouterr().err
    assert not readahead._PREFETCHED


# ------------------------------------------------------------------ generated logs

_PLAIN_RECORD = st.builds(lambda j, s: rec(j, s), st.integers(0, 10**6), st.integers(0, 10**6))
_LINE = st.one_of(
    _PLAIN_RECORD,
    _PLAIN_RECORD,
    _PLAIN_RECORD.map(lambda r: r + " {1,2} q_1d"),  # extended SWF
    st.lists(TRICKY, min_size=16, max_size=19).map(" ".join),  # bad tokens, short or long lines
    st.sampled_from(["", "   ", "; Note: in the body", ";", "\t; MaxNodes: 8"]),
)
_HEADER = st.sampled_from(["", "; Version: 2.2\n; MaxNodes: 4\n; MaxProcs: 16\n;\n", "; UnixStartTime: 1000\n\n"])


@st.composite
def _log_bytes(draw) -> bytes:
    # half the logs plain records only: the ones whose chunks the reader takes
    lines = draw(st.lists(_LINE if draw(st.booleans()) else _PLAIN_RECORD, max_size=30))
    ends = draw(st.sampled_from(["\n", "\r\n", "lone-cr"]))
    if ends == "lone-cr":  # old Mac line ends here and there
        text = "".join(line + draw(st.sampled_from(["\n", "\r", "\r\n"])) for line in lines)
    else:
        text = ends.join(lines) + (ends if draw(st.booleans()) else "")
    data = (draw(_HEADER) + text).encode()
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    how = draw(st.sampled_from(["plain"] * 3 + ["gzip", "multi"] * 2 + ["zero-padded", "trailing", "truncated", "corrupt"]))
    if how == "plain":
        return data
    if how == "multi":  # members as `cat a.gz b.gz` makes them
        cut = draw(st.integers(0, len(data)))
        return gzip.compress(data[:cut]) + gzip.compress(data[cut:])
    packed = gzip.compress(data)
    if how == "zero-padded":  # gzip.decompress accepts it (tape blocks)
        return packed + b"\0" * draw(st.integers(1, 9))
    if how == "trailing":
        return packed + draw(st.sampled_from([b"x", b"\x1f", b"\x1f\x8b", b"junk after the member"]))
    if how == "truncated":
        return packed[: draw(st.integers(2, len(packed) - 1))]
    if how == "corrupt":
        at = draw(st.integers(10, len(packed) - 1))
        return packed[:at] + bytes([packed[at] ^ draw(st.integers(1, 255))]) + packed[at + 1 :]
    return packed


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_log_bytes(), chunk=st.sampled_from([40, 300, 1 << 20]), lenient=st.booleans())
def test_generated_logs_read_the_same_ahead(tmp_path: Path, data: bytes, chunk: int, lenient: bool) -> None:
    log = tmp_path / "gen.swf"
    log.write_bytes(data)
    restore = _chunk_bytes(chunk)
    calls: list[int] = []
    real = swf._body_chunk
    swf._body_chunk = lambda *a: calls.append(0) or real(*a)  # type: ignore[assignment]
    try:
        options = {"lenient": lenient, "cores_per_node": 1, "missing_runtime": "zero"}
        ahead = _outcome(log, True, **options)
        ahead_calls = len(calls)
        _assert_same(ahead, _outcome(log, False, **options))
    finally:
        restore()
        swf._body_chunk = real
    event("some chunks parsed ahead" if ahead_calls < len(calls) - ahead_calls else "no chunk parsed ahead")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_log_bytes(), chunk=st.sampled_from([1, 40, 300]), block=st.integers(1, 64))
def test_chunks_cut_while_inflating_are_the_whole_logs(tmp_path: Path, data: bytes, chunk: int, block: int) -> None:
    """A gzip log inflated in blocks of a few bytes while its chunks are cut and parsed
    gives what it gives inflated whole first: the same bytes, the same chunks, or the same
    refusal (None: the reader then reads the file itself)."""
    log = tmp_path / "gen.swf"
    log.write_bytes(data)
    args = (str(log), chunk, list(swf_layout.USED), swf_layout.N_FIELDS, swf_layout.MAX_FAST_DIGITS)

    def taken(inflate_bytes: int):
        got = _core.SwfReadAhead(*args, inflate_bytes=inflate_bytes).take(chunks=True)
        if got is None:
            return None
        return got[0], [(a, b, None if p is None else (p[0].tolist(), p[1].tolist(), p[2])) for a, b, p in got[1]]

    assert taken(block) == taken(1 << 30)


def test_only_swf_logs_are_read_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The read-ahead parses SWF: a sacct or PBS log is left to its reader (its thread was
    started for any log), whether --format says so or the reader's guess would; an SWF
    log is read ahead by its name (no read) or, named otherwise, by its first line."""
    from conftest import PBS_SAMPLE, SLURM
    from toposched.workload import detect_format

    started: list[str] = []
    real = readahead._native_read_ahead
    monkeypatch.setattr(readahead, "_native_read_ahead", lambda p: started.append(p) or real(p))
    sacct = SLURM / "xdmod_ub-hpc_sacct-parsable2_accounting-logs.log"
    swf_text = KTH.read_bytes()  # gzip
    cases = {
        sacct: False,
        PBS_SAMPLE: False,
        tmp_path / "sacct.gz": False,
        tmp_path / "jobs.log": True,  # SWF with a name that does not say so
        tmp_path / "jobs.gz": True,
        tmp_path / "bare.txt": True,  # no header: a record first
        tmp_path / "bom.txt": True,
        KTH: True,
    }
    (tmp_path / "sacct.gz").write_bytes(gzip.compress(sacct.read_bytes()))
    (tmp_path / "jobs.log").write_bytes(gzip.decompress(swf_text))
    (tmp_path / "jobs.gz").write_bytes(swf_text)
    (tmp_path / "bare.txt").write_text("\n\n" + rec(1) + "\n")
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbf; Version: 2\n" + rec(1).encode() + b"\n")
    for path, is_swf in cases.items():
        started.clear()
        readahead.prefetch(path)
        assert bool(started) == is_swf, path
        assert (str(path) in readahead._PREFETCHED) == is_swf
        readahead.discard_prefetched(path)
        assert (detect_format(path) in ("swf", "swf-nodes")) == is_swf, path
    # --format decides without a look at the file
    for fmt, is_swf in (("sacct", False), ("pbs", False), ("swf", True), ("swf-nodes", True)):
        started.clear()
        readahead.prefetch(KTH, format=fmt)
        assert bool(started) == is_swf
        readahead.discard_prefetched(KTH)
    # and simulate on a sacct log starts none
    from toposched.cli import main

    started.clear()
    assert main(["simulate", "--trace", str(sacct), "--system", "cab", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert started == []
    assert main(["simulate", "--trace", str(tmp_path / "jobs.log"), "--system", "cab", "--out", str(tmp_path / "o2"), "--quiet"]) == 0
    assert started == [str(tmp_path / "jobs.log")]

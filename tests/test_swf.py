"""Tests of the SWF reader (toposched.workload.swf) on the real logs the repository ships
(job by job against a plain reference reader, tests/swf_reference.py) and on small
hand-written files, including a Hypothesis round trip and fast-path/slow-path agreement."""

from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toposched.errors import TraceFormatError
from toposched.workload import read_trace, swf
from toposched.workload.swf import FIELD_NAMES, parse_header_line, read_swf

from conftest import (
    CTC, CURIE, EXAMPLE_TRACE, HPC2N, HPC2N_SUBSET, KTH, LANL_CM5, NASA, RICC, SDSC_BLUE, SDSC_SP2, THUNDER, WAGAP,
)
from swf_reference import read_reference, text_lines

# Every SWF log the repository ships (tests/data/traces: the header and first lines of 10
# archive logs, two Alea files whole; the bundled Atlas log whole) -> cores per node its
# header gives (MaxProcs // MaxNodes; 1 without a header). The same checks on the 13 whole
# logs, with the record counts of SOURCES.md: validation/test_whole_logs.py.
SHIPPED_CPN = {
    KTH: 1, SDSC_SP2: 1, THUNDER: 4, CTC: 1, CURIE: 16, RICC: 1, LANL_CM5: 1, HPC2N: 1, SDSC_BLUE: 8, NASA: 1,
    HPC2N_SUBSET: 1, WAGAP: 1, EXAMPLE_TRACE: 8,
}
SHIPPED = [pytest.param(p, id=p.name.split(".first")[0].removesuffix(".swf.gz")) for p in SHIPPED_CPN]


@lru_cache(maxsize=None)
def load(path: Path):
    """Each trace is read once per test session."""
    return read_swf(path)


@lru_cache(maxsize=None)
def reference(path: Path):
    return read_reference(path, SHIPPED_CPN[path])


# --------------------------------------------------------------------------- real traces


@pytest.mark.parametrize("path", SHIPPED)
def test_trace_matches_a_plain_reference_reader_job_by_job(path: Path) -> None:
    w, ref = load(path), reference(path)
    assert w.format == "swf"
    assert w.settings["cores_per_node"] == SHIPPED_CPN[path]
    assert w.records == ref.records
    assert w.skipped == ref.skipped and "malformed_line" not in w.skipped
    assert len(w) + sum(w.skipped.values()) == w.records
    repairs = dict(size_from_requested=ref.size_from_requested, walltime_from_runtime=ref.walltime_from_runtime,
                   nodes_rounded_up=ref.nodes_rounded_up)
    assert w.repairs == {k: v for k, v in repairs.items() if v}
    # Replay order (submit, then file order) and every value the engine uses, job by job.
    expected = list(zip(*ref.jobs))
    for i, column in enumerate(["submit_s", "line", "job_id", "nodes", "walltime_s", "runtime_s", "procs"]):
        assert w[column].tolist() == list(expected[i]), column
    assert np.all(w["nodes"] >= 1) and np.all(w["walltime_s"] >= 1) and np.all(w["runtime_s"] >= 0)
    # Run time is not clipped to the limit.
    assert int((w["runtime_s"] > w["walltime_s"]).sum()) == ref.overrun
    for key in ("logged_start_s", "status", "partition", "queue", "user"):
        assert len(w.extra[key]) == len(w)


@pytest.mark.parametrize("path", SHIPPED)
def test_trace_line_numbers_point_at_the_record(path: Path) -> None:
    w = load(path)
    lines = text_lines(path)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(w), size=50, replace=False).tolist() + [0, len(w) - 1]:
        toks = lines[int(w["line"][i]) - 1].split()
        assert int(toks[0]) == w["job_id"][i]
        assert int(toks[1]) == w["submit_s"][i]
        assert int(toks[3]) == w["runtime_s"][i] or int(toks[3]) < 0


def test_kth_header() -> None:
    w = load(KTH)
    assert w.header["MaxNodes"] == "100"
    assert w.header["UnixStartTime"] == "843480031"
    assert w.time_origin_epoch_s == 843480031
    assert w.settings["cores_per_node_from"] == "header MaxProcs/MaxNodes"


def test_cores_per_node_from_header() -> None:
    assert load(EXAMPLE_TRACE).settings["cores_per_node"] == 8  # 9216/1152
    assert load(THUNDER).settings["cores_per_node"] == 4  # 4008/1002
    assert load(SDSC_BLUE).settings["cores_per_node"] == 8  # 1152/144
    curie = load(CURIE)
    assert curie.settings["cores_per_node"] == 16  # floor(93312/5544)
    assert curie.repairs["nodes_rounded_up"] > 0
    # CTC's MaxNodes is annotated text; its leading integer (338) still counts: 338/338.
    ctc = load(CTC)
    assert ctc.header["MaxNodes"] == "338 (batch partition; 512 total)"
    assert ctc.settings["cores_per_node"] == 1
    ricc = load(RICC)  # no header at all
    assert ricc.header == {}
    assert ricc.settings["cores_per_node"] == 1
    assert ricc.settings["cores_per_node_from"] == "default"
    assert ricc.time_origin_epoch_s is None


def test_curie_unusual_header() -> None:
    h = load(CURIE).header
    assert h["MaxNodes"] == "5544" and h["MaxProcs"] == "93312"
    assert h["UnixStartTime"] == "1296571124"
    # Repeated keys keep every value; indented lines continue the previous one.
    assert h["Partition"].splitlines()[:2] == ["1  test", "2  parallel"]
    assert len(h["Partition"].splitlines()) == 33
    assert "see: http://www-hpc.cea.fr/en/complexe/tgcc-curie.htm" in h["Note"]
    assert "see" not in h


def test_documented_repairs_and_skips() -> None:
    """The quirks SOURCES.md lists, on the shipped files (whole-log counts: validation/)."""
    atlas = load(EXAMPLE_TRACE)  # whole
    assert atlas.repairs["walltime_from_runtime"] > 0  # 8,233 requested times are -1
    assert np.all(atlas.extra["logged_start_s"] == -1)  # wait is -1 for every job
    # Thunder's submit inversions all involve its all-unknown records (submit, run time
    # and size -1), which are skipped for their size before sorting.
    thunder = load(THUNDER)
    assert thunder.skipped["unknown_size"] > 0 and "submit_unsorted" not in thunder.repairs
    assert thunder.repairs["walltime_from_runtime"] > 0
    assert load(SDSC_BLUE).skipped["unknown_runtime"] > 0
    assert load(SDSC_SP2).skipped["unknown_runtime"] > 0
    nasa = load(NASA)  # requested time -1 everywhere
    assert nasa.repairs["walltime_from_runtime"] == len(nasa) == nasa.records
    assert load(HPC2N_SUBSET).skipped["unknown_runtime"] == 25  # whole
    # CTC: requested processors are -1 everywhere, allocated ones are always there.
    assert "size_from_requested" not in load(CTC).repairs


def test_extended_swf_wagap() -> None:
    w = load(WAGAP)  # whole
    assert w.header == {}
    assert w.settings["extended_fields_ignored"] == 17_900
    assert int(w["submit_s"].min()) == 1_356_996_147  # absolute epoch, no header
    assert set(np.unique(w.extra["partition"]).tolist()) == {1}


@pytest.mark.parametrize("path", [pytest.param(KTH, id="KTH"), pytest.param(HPC2N_SUBSET, id="hpc2n-subset"), pytest.param(WAGAP, id="wagap")])
def test_slow_path_agrees_with_fast_path(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = load(path)
    monkeypatch.setattr(swf, "_fast_chunk", lambda *a: None)
    slow = read_swf(path)
    assert_same_workload(fast, slow)


def assert_same_workload(a, b) -> None:
    for c in a.columns:
        np.testing.assert_array_equal(a[c], b[c], err_msg=c)
    for k, v in a.extra.items():
        np.testing.assert_array_equal(v, b.extra[k], err_msg=k)
    assert (a.records, a.repairs, a.skipped, a.header, a.settings, a.time_origin_epoch_s) == (
        b.records,
        b.repairs,
        b.skipped,
        b.header,
        b.settings,
        b.time_origin_epoch_s,
    )


# ----------------------------------------------------------------------- small files


def rec(job: int = 1, submit: int = 0, wait: int = 5, run: int = 100, procs: int = 4, req_time: int = 200, **kw) -> str:
    """One 18-field SWF line; keyword overrides by field name (e.g. status="1")."""
    f = [job, submit, wait, run, procs, -1, -1, procs, req_time, -1, 1, 7, 3, -1, 2, 1, -1, -1]
    for name, value in kw.items():
        f[FIELD_NAMES.index(name)] = value
    return " ".join(str(x) for x in f)


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode())
    return p


HEADER = "; Version: 2.2\n; MaxNodes: 4\n; MaxProcs: 16\n; UnixStartTime: 1000\n;\n"


def test_small_file_values(tmp_path: Path) -> None:
    p = write(tmp_path, HEADER + rec(1, 10, wait=5) + "\n" + rec(2, 3, wait=-1, status="0", user_id="9") + "\n")
    w = read_swf(p)
    assert w.records == 2 and len(w) == 2
    assert w.time_origin_epoch_s == 1000
    assert w.settings["cores_per_node"] == 4
    assert w["job_id"].tolist() == [2, 1]  # sorted by submit
    assert w["line"].tolist() == [7, 6]
    assert w["nodes"].tolist() == [1, 1]
    assert w["procs"].tolist() == [4, 4]
    assert w.extra["logged_start_s"].tolist() == [-1, 15]
    assert w.extra["status"].tolist() == [0, 1]
    assert w.extra["user"].tolist() == [9, 7]
    assert w.extra["queue"].tolist() == [2, 2]
    assert w.extra["partition"].tolist() == [1, 1]
    # the id columns: user 12, group 13 (the account), queue 15 (the QOS), partition 16
    assert w["user_id"].tolist() == [9, 7] and w["account_id"].tolist() == [3, 3]
    assert w["qos_id"].tolist() == [2, 2] and w["partition_id"].tolist() == [1, 1]
    assert w.repairs == {"submit_unsorted": 1}


def test_options_pass_through(tmp_path: Path) -> None:
    p = write(tmp_path, HEADER + rec(1, run=-1, req_time=-1) + "\n" + rec(2, procs=6) + "\n")
    w = read_swf(p, cores_per_node=2, missing_runtime="zero", missing_walltime=60, size_field="requested")
    assert w.settings["cores_per_node_from"] == "option"
    assert w.settings["cores_per_node"] == 2
    assert w.repairs["runtime_set_zero"] == 1 and w.repairs["walltime_set_default"] == 1
    assert w["nodes"].tolist() == [2, 3]
    assert w["walltime_s"].tolist() == [60, 200]
    assert read_trace(p).settings["cores_per_node"] == 4  # the dispatcher reaches us


def test_header_only_cpn_edge_cases(tmp_path: Path) -> None:
    p = write(tmp_path, "; MaxProcs: 16\n" + rec() + "\n")  # MaxNodes missing: no ratio
    assert read_swf(p).settings["cores_per_node_from"] == "default"
    p = write(tmp_path, "; MaxNodes: 32\n; MaxProcs: 16\n; UnixStartTime: 5\n" + rec() + "\n")
    w = read_swf(p)
    assert w.settings["cores_per_node"] == 1  # max(1, 16 // 32)
    assert w.settings["cores_per_node_from"] == "header MaxProcs/MaxNodes"
    assert w.time_origin_epoch_s == 5


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("; MaxNodes: abc", "field 'MaxNodes': expected a positive integer below 2^31 (a note may follow it), got 'abc' (--cores-per-node N"),
        ("; MaxNodes: 0", "field 'MaxNodes': expected a positive integer"),
        (";MaxProcs:", "field 'MaxProcs': expected a positive integer below 2^31 (a note may follow it), got ''"),
        # an internal error (OverflowError) on the way into the job table
        ("; MaxProcs: 99999999999999999999999", "field 'MaxProcs': expected a positive integer below 2^31 (a note may follow it), got '99999999999999999999999'"),
        ("; MaxProcs: 2147483648", "field 'MaxProcs': expected a positive integer below 2^31"),
        # read as 1 and 9, silently: not an integer followed by a note
        ("; MaxNodes: 1e1", "field 'MaxNodes': expected a positive integer below 2^31 (a note may follow it), got '1e1'"),
        ("; MaxNodes: 9.5", "field 'MaxNodes': expected a positive integer below 2^31 (a note may follow it), got '9.5'"),
        ("; UnixStartTime: soon", "field 'UnixStartTime': expected an integer (Unix time of submit time 0), got 'soon' (--lenient reads the log without it)"),
        ("; AllowOveruse: maybe", "field 'AllowOveruse': expected yes or no, got 'maybe' (--lenient"),
    ],
)
def test_header_fields_used_must_read(tmp_path: Path, line: str, message: str) -> None:
    """A header value the reader uses but cannot read is one line naming its line, field and
    way out, not a silent default (it would change every job's size, or the time origin);
    --lenient reads the log without it and lists it in settings["header_ignored"]; a value
    not used (MaxNodes with --cores-per-node, an unused key) is not looked at."""
    good = {"MaxNodes": "; MaxNodes: 4", "MaxProcs": "; MaxProcs: 16", "UnixStartTime": "; UnixStartTime: 1000", "AllowOveruse": "; AllowOveruse: no"}
    key = line.lstrip("; ").split(":")[0]
    header = [good[k] for k in good if k != key] + [line, "; Note: anything at all", "; MaxJobs: many"]
    p = write(tmp_path, "\n".join(header) + "\n" + rec() + "\n" + rec(2, 5) + "\n")
    with pytest.raises(TraceFormatError) as exc:
        read_swf(p)
    assert str(exc.value).startswith(f"{p}:4: {message}")
    w = read_swf(p, lenient=True)
    assert w.settings["header_ignored"] == [f"line 4: field {key}: {exc.value.message}"]
    assert len(w) == 2 and w.skipped == {}
    if key.startswith("Max"):
        w = read_swf(p, cores_per_node=2)  # the pair is not used: nothing to say
        assert w.settings["cores_per_node_from"] == "option" and "header_ignored" not in w.settings
    else:
        assert w.settings["cores_per_node"] == 4
    # --stream stops at the same line
    from toposched.workload.swf_stream import SwfStream

    with pytest.raises(TraceFormatError) as streamed:
        list(SwfStream(p).chunks())
    assert str(streamed.value) == str(exc.value)


def test_gzip_file_reads_like_plain(tmp_path: Path) -> None:
    text = HEADER + "\n".join(rec(i, i * 10) for i in range(1, 50)) + "\n"
    plain = write(tmp_path, text)
    gz = tmp_path / "t.swf.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert_same_workload(read_swf(plain), read_swf(gz))


def test_truncated_line_strict_and_lenient(tmp_path: Path) -> None:
    short = " ".join(rec(2).split()[:9])  # cut after requested_time
    p = write(tmp_path, HEADER + rec(1) + "\n\n" + short + "\n" + rec(3) + "\n")
    with pytest.raises(TraceFormatError) as ei:
        read_swf(p)
    e = ei.value
    assert (e.line, e.field) == (8, "requested_memory")
    assert e.message == "expected 18 fields, found 9 (truncated line?)"
    assert str(e) == f"{p}:8: field 'requested_memory': expected 18 fields, found 9 (truncated line?) (--lenient skips and counts such records)"
    w = read_swf(p, lenient=True)
    assert w.records == 3 and len(w) == 2
    assert w.skipped == {"malformed_line": 1}
    assert w.settings["lenient_examples"] == [
        "line 8: field requested_memory: expected 18 fields, found 9 (truncated line?)"
    ]


def test_text_in_numeric_field(tmp_path: Path) -> None:
    p = write(tmp_path, HEADER + rec(1) + "\n" + rec(2, run="abc") + "\n")
    with pytest.raises(TraceFormatError) as ei:
        read_swf(p)
    assert (ei.value.line, ei.value.field) == (7, "run_time")
    assert ei.value.message == "expected a number, got 'abc'"
    w = read_swf(p, lenient=True)
    assert len(w) == 1 and w.skipped == {"malformed_line": 1}
    assert w.settings["lenient_examples"] == ["line 7: field run_time: expected a number, got 'abc'"]


@pytest.mark.parametrize("token", ["nan", "inf", "1_000", "0x10", "--1", "1-2", "1.2.3", "-", "."])
def test_not_a_number(tmp_path: Path, token: str) -> None:
    p = write(tmp_path, rec(1) + "\n" + rec(2, used_memory=token) + "\n")
    with pytest.raises(TraceFormatError, match="expected a number") as ei:
        read_swf(p)
    assert (ei.value.line, ei.value.field) == (2, "used_memory")


def test_decimal_values(tmp_path: Path) -> None:
    # Integral decimals and decimal ignored fields are fine ...
    ok = rec(1, requested_time="3600.0", average_cpu_time="12.75", requested_memory="0.5") + "\n"
    ok += rec(2, submit="+10", run_time="-1.000", wait_time=".0", used_memory="-.5e1") + "\n"
    w = read_swf(write(tmp_path, ok), missing_runtime="zero")
    assert w["walltime_s"].tolist() == [3600, 200]
    assert w["submit_s"].tolist() == [0, 10]
    assert w.extra["logged_start_s"].tolist() == [5, 10]
    assert w.repairs["runtime_set_zero"] == 1
    # ... a fraction in a field we use is not rounded silently.
    p = write(tmp_path, ok + rec(3, requested_time="3600.5") + "\n")
    with pytest.raises(TraceFormatError) as ei:
        read_swf(p)
    assert (ei.value.line, ei.value.field) == (3, "requested_time")
    assert ei.value.message == "expected an integer, got '3600.5'"
    assert read_swf(p, lenient=True, missing_runtime="zero").skipped == {"malformed_line": 1}


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("1e3", "expected an integer, got '1e3' (an integer is written in digits, without an exponent)"),
        ("3.6E3", "expected an integer, got '3.6E3' (an integer is written in digits, without an exponent)"),
        ("100.5", "expected an integer, got '100.5'"),
        # through a float this was 1.0, an integer: accepted as 1 while 100.5 was refused
        ("1.0000000000000001", "expected an integer, got '1.0000000000000001'"),
    ],
)
def test_kept_fields_are_integers_as_written(tmp_path: Path, token: str, message: str) -> None:
    """One rule for the fields we keep: an integer in digits (a zero fraction at most), as
    the SWF standard writes them; a fraction or an exponent is refused with the same kind
    of line (no archive log writes either there: only field 6 holds decimals)."""
    p = write(tmp_path, rec(1) + "\n" + rec(2, run_time=token) + "\n")
    with pytest.raises(TraceFormatError) as ei:
        read_swf(p)
    assert (ei.value.line, ei.value.field, ei.value.message) == (2, "run_time", message)
    assert str(ei.value).endswith("(--lenient skips and counts such records)")
    assert len(read_swf(p, lenient=True)) == 1
    # an ignored field only has to be a number
    assert len(read_swf(write(tmp_path, rec(1, average_cpu_time=token) + "\n"))) == 1
    # exact digits, not a float: 2^53 + 1 written with a zero fraction keeps its last digit
    w = read_swf(write(tmp_path, rec(9007199254740993, wait_time="0.00") + "\n"))
    assert w["job_id"].tolist() == [9007199254740993]


def test_huge_integers(tmp_path: Path) -> None:
    big = 2**62 + 1  # 19 digits: exact through the slow path, not rounded via float
    p = write(tmp_path, rec(1, job_number=big) + "\n")
    assert read_swf(p)["job_id"].tolist() == [big]
    p = write(tmp_path, rec(1, job_number=2**63) + "\n")
    with pytest.raises(TraceFormatError, match="out of range") as ei:
        read_swf(p)
    assert ei.value.field == "job_number"


@pytest.mark.parametrize("text", ["", "\n\n  \n", HEADER, HEADER + "\n; Note: nothing\n"])
def test_no_records(tmp_path: Path, text: str) -> None:
    p = write(tmp_path, text)
    for lenient in (False, True):
        with pytest.raises(TraceFormatError) as ei:
            read_swf(p, lenient=lenient)
        assert ei.value.message == "no job records found"
        assert ei.value.line is None


def test_only_malformed_records(tmp_path: Path) -> None:
    p = write(tmp_path, "1 2 3\n")
    with pytest.raises(TraceFormatError, match="no valid job records"):
        read_swf(p, lenient=True)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file"):
        read_swf(tmp_path / "nope.swf")


def test_extended_fields_comments_blanks_crlf(tmp_path: Path) -> None:
    lines = [
        "; Version: 2.2",
        rec(1) + " {1,2,3} q_1d 1:ppn=4",
        "",
        "; Note: a comment between records",
        "   " + rec(2, 5),
        "\t" + rec(3, 7).replace(" ", "\t  "),
        rec(4, 9),
    ]
    for sep, name in (("\n", "lf.swf"), ("\r\n", "crlf.swf"), ("\r", "cr.swf")):
        w = read_swf(write(tmp_path, sep.join(lines), name))  # no final newline
        assert w["job_id"].tolist() == [1, 2, 3, 4]
        assert w["line"].tolist() == [2, 5, 6, 7]
        assert w.header == {"Version": "2.2", "Note": "a comment between records"}
        assert w.settings["extended_fields_ignored"] == 1


def test_errors_deep_in_a_multi_chunk_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(swf, "_CHUNK_BYTES", 256)  # many chunks
    body = [rec(i, i) for i in range(1, 400)]
    body[300] = rec(301, 301, queue_number="q")
    p = write(tmp_path, HEADER + "\n".join(body) + "\n")
    with pytest.raises(TraceFormatError) as ei:
        read_swf(p)
    assert (ei.value.line, ei.value.field) == (5 + 301, "queue_number")
    w = read_swf(p, lenient=True)
    assert w.records == 399 and len(w) == 398
    assert w["line"].tolist() == [5 + i for i in range(1, 400) if i != 301]


def test_lenient_examples_capped(tmp_path: Path) -> None:
    p = write(tmp_path, "\n".join([rec(1)] + ["x"] * 8) + "\n")
    w = read_swf(p, lenient=True)
    assert w.skipped == {"malformed_line": 8}
    assert len(w.settings["lenient_examples"]) == 5
    assert w.settings["lenient_examples"][0] == "line 2: field submit_time: expected 18 fields, found 1 (truncated line?)"


def test_strict_reports_the_first_error(tmp_path: Path) -> None:
    p = write(tmp_path, rec(1) + "\n" + rec(2, wait_time="w") + "\n" + "1 2\n")
    with pytest.raises(TraceFormatError) as ei:
        read_swf(p)
    assert (ei.value.line, ei.value.field) == (2, "wait_time")


def test_parse_header_line() -> None:
    assert parse_header_line("; MaxNodes: 338 (batch partition; 512 total)") == (
        "MaxNodes",
        "338 (batch partition; 512 total)",
    )
    assert parse_header_line("; StartTime: Tue Feb 01 15:38:44 CET 2011") == (
        "StartTime",
        "Tue Feb 01 15:38:44 CET 2011",
    )
    assert parse_header_line("; Queue:  1  ") == ("Queue", "1")
    assert parse_header_line("; Key:") == ("Key", "")
    assert parse_header_line(";              http://www.cs.huji.ac.il/") is None
    assert parse_header_line(";\tsee: http://x") is None  # indented: a continuation
    assert parse_header_line(";         submit<=2012-02-03 00:00:00 (272392 jobs removed)") is None
    assert parse_header_line(";") is None


# ------------------------------------------------------------------------- properties

VALUE = st.integers(min_value=-1, max_value=10**12)
RECORD = st.fixed_dictionaries(
    {
        "job": st.integers(min_value=0, max_value=10**9),
        # within the documented limits (docs/reliability.md: 50-year span; tests/test_reliability.py goes beyond)
        "submit": st.integers(min_value=0, max_value=10**9),
        "wait": VALUE,
        "run": st.integers(min_value=0, max_value=10**9),
        "procs": st.integers(min_value=1, max_value=10**6),
        "req_procs": VALUE,
        "req_time": st.integers(min_value=1, max_value=10**9),
        "status": st.integers(min_value=-1, max_value=5),
        "user": VALUE,
        "queue": VALUE,
        "partition": VALUE,
        "cpu": st.one_of(VALUE, st.floats(min_value=0, max_value=1e6).map(lambda x: f"{x:.2f}")),
        "spaces": st.sampled_from([" ", "  ", "\t", " \t "]),
        "indent": st.sampled_from(["", " ", "    "]),
        "blank_before": st.booleans(),
    }
)


def render(r: dict) -> str:
    f = [r["job"], r["submit"], r["wait"], r["run"], r["procs"], r["cpu"], -1, r["req_procs"], r["req_time"],
         -1, r["status"], r["user"], 5, -1, r["queue"], r["partition"], -1, -1]
    return ("\n" if r["blank_before"] else "") + r["indent"] + r["spaces"].join(str(x) for x in f)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    records=st.lists(RECORD, min_size=1, max_size=40, unique_by=lambda r: r["job"]),  # SWF numbers jobs uniquely
    header=st.booleans(),
    chunk=st.sampled_from([64, 300, 1 << 20]),
    final_newline=st.booleans(),
)
def test_round_trip(tmp_path: Path, records: list[dict], header: bool, chunk: int, final_newline: bool) -> None:
    text = (HEADER if header else "") + "\n".join(render(r) for r in records) + ("\n" if final_newline else "")
    p = write(tmp_path, text, "prop.swf")
    lines_before = HEADER.count("\n") if header else 0
    line_of = []
    line = lines_before
    for r in records:
        line += 2 if r["blank_before"] else 1
        line_of.append(line)
    order = sorted(range(len(records)), key=lambda i: records[i]["submit"])  # stable

    old = swf._CHUNK_BYTES
    swf._CHUNK_BYTES = chunk
    try:
        w = read_swf(p, cores_per_node=1)
        real_fast = swf._fast_chunk
        swf._fast_chunk = lambda *a: None
        try:
            slow = read_swf(p, cores_per_node=1)
        finally:
            swf._fast_chunk = real_fast
    finally:
        swf._CHUNK_BYTES = old

    assert w.records == len(records) and len(w) == len(records)
    assert w.skipped == {}
    expect = {
        "job_id": [records[i]["job"] for i in order],
        "submit_s": [records[i]["submit"] for i in order],
        "runtime_s": [records[i]["run"] for i in order],
        "walltime_s": [records[i]["req_time"] for i in order],
        "procs": [records[i]["procs"] for i in order],
        "nodes": [records[i]["procs"] for i in order],
        "line": [line_of[i] for i in order],
    }
    for c, v in expect.items():
        assert w[c].tolist() == v, c
    assert w.extra["status"].tolist() == [records[i]["status"] for i in order]
    assert w.extra["user"].tolist() == [records[i]["user"] for i in order]
    assert w.extra["queue"].tolist() == [records[i]["queue"] for i in order]
    assert w.extra["partition"].tolist() == [records[i]["partition"] for i in order]
    assert w.extra["logged_start_s"].tolist() == [
        records[i]["submit"] + records[i]["wait"] if records[i]["wait"] >= 0 else -1 for i in order
    ]
    assert_same_workload(w, slow)


TRICKY = st.sampled_from(
    ["0", "-1", "-0", "007", "12", "1.", "1.0", "-1.000", "2.50", ".5", "-.5", "1e3", "1E3", "2.0e0", ".0", "-.00", "+1.0",
     "1.0000000000000001", "9007199254740993.0", "+1", "abc", "1-2",
     "1.2.3", "-", ".", "--1", "1234567890123456789", "99999999999999999999", ";x", "{1,2}"]
)
LINE = st.one_of(
    st.lists(TRICKY, min_size=18, max_size=18),
    st.lists(TRICKY, min_size=0, max_size=21),
    st.lists(st.sampled_from(["1", "-1", "3.0", "8"]), min_size=18, max_size=19),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINE, min_size=1, max_size=12), chunk=st.sampled_from([40, 1 << 20]))
def test_fast_and_slow_paths_agree_on_anything(tmp_path: Path, lines: list[list[str]], chunk: int) -> None:
    """Whatever the input, the fast path must decide exactly like the reference path."""
    p = write(tmp_path, "\n".join(" ".join(t) for t in lines) + "\n", "fuzz.swf")

    def outcome(lenient: bool):
        try:
            return read_swf(p, lenient=lenient, cores_per_node=1, missing_runtime="zero")
        except TraceFormatError as e:
            return (e.line, e.field, e.message)

    old, real_fast = swf._CHUNK_BYTES, swf._fast_chunk
    swf._CHUNK_BYTES = chunk
    try:
        fast = [outcome(False), outcome(True)]
        swf._fast_chunk = lambda *a: None
        slow = [outcome(False), outcome(True)]
    finally:
        swf._CHUNK_BYTES, swf._fast_chunk = old, real_fast
    for f, s in zip(fast, slow):
        if isinstance(f, tuple) or isinstance(s, tuple):
            assert f == s
        else:
            assert_same_workload(f, s)


@pytest.mark.parametrize(
    "options",
    [{"cores_per_node": 0}, {"cores_per_node": 2.5}, {"size_field": "both"}, {"missing_runtime": "drop"},
     {"missing_walltime": 0}],
)
def test_bad_options_fail_before_reading(tmp_path: Path, options: dict) -> None:
    with pytest.raises(ValueError) as ei:
        read_swf(tmp_path / "not-even-there.swf", **options)
    assert not isinstance(ei.value, TraceFormatError)  # (which is a ValueError too)


def test_id_columns_reach_the_engine_and_bad_ids_are_unknown(tmp_path: Path) -> None:
    # an id the engine cannot hold (beyond 32 bits, or below -1) is unknown (-1), counted
    p = write(tmp_path, HEADER + rec(1, 0, group_id="4294967295") + "\n" + rec(2, 1, queue_number="-5") + "\n" + rec(3, 2, user_id="11") + "\n")
    w = read_swf(p)
    assert w["account_id"].tolist() == [-1, 3, 3] and w["qos_id"].tolist() == [2, -1, 2]
    assert w.repairs["id_out_of_range"] == 2
    # the engine refuses what a reader would never give, naming the row and the field
    from toposched import _core
    from toposched.topology import load_fabric

    cols = [w[c] for c in ("job_id", "submit_s", "nodes", "walltime_s", "runtime_s")]
    _core.Simulation(load_fabric("toy18").core, *cols, account_id=w["account_id"])
    with pytest.raises(ValueError, match=r"job row 1 \(id 2\): field 'qos_id' out of range: 4294967295"):
        _core.Simulation(load_fabric("toy18").core, *cols, qos_id=np.array([1, 2**32 - 1, 0], dtype=np.int64))


def test_repeated_job_numbers_are_counted(tmp_path: Path) -> None:
    """A job number an earlier record has: the same record again (a repeated line, logs
    put together) is left out as duplicate_record, as sacct and PBS do; another job with
    that number is kept and counted as repair duplicate_job_id. -1 is unknown, not an id."""
    lines = [rec(1), rec(2, submit=10), rec(1), rec(1, submit=20, run=50), rec(-1, submit=30), rec(-1, submit=30), rec(3, submit=40)]
    p = write(tmp_path, HEADER + "\n".join(lines) + "\n")
    for chunk in (1 << 20, 60):  # the fast path, and chunks of about one line
        old = swf._CHUNK_BYTES
        swf._CHUNK_BYTES = chunk
        try:
            w = read_swf(p)
        finally:
            swf._CHUNK_BYTES = old
        assert (w.records, len(w)) == (7, 6)
        assert w.skipped == {"duplicate_record": 1}
        assert w.repairs == {"duplicate_job_id": 1}
        assert w["job_id"].tolist() == [1, 2, 1, -1, -1, 3]
        assert w["line"].tolist() == [6, 7, 9, 10, 11, 12]  # the header is 5 lines; line 8 repeats line 6


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("JobID|JobIDRaw|Submit|Start\n100|100|2021-01-01T00:00:00|2021-01-01T00:10:00\n",
         "1: this is a Slurm sacct log (fields separated by '|', a 'JobID|...' header), not SWF: pass --format sacct"),
        ("; Version: 2\n\n4103947|4103947|ub-hpc|general-compute|qos\n", "3: this is a Slurm sacct log (fields separated by '|'), not SWF: pass --format sacct"),
        ("01/26/2016 00:00:37;E;3.srv;queue=q qtime=100\n",
         "1: this is a PBS/Torque accounting log ('MM/DD/YYYY HH:MM:SS;T;job id;...'), not SWF: pass --format pbs"),
    ],
)
def test_other_formats_read_as_swf_name_their_format(tmp_path: Path, text: str, message: str) -> None:
    """A sacct or PBS log read as SWF (--format swf, or a .swf name) says which --format to
    pass, in strict and lenient mode and streamed, not "--lenient skips such records"."""
    from toposched.workload.swf_stream import SwfStream

    p = write(tmp_path, text, "log.swf")
    for read in (lambda: read_swf(p), lambda: read_swf(p, lenient=True), lambda: read_trace(p), lambda: list(SwfStream(p).chunks())):
        with pytest.raises(TraceFormatError) as exc:
            read()
        assert str(exc.value) == f"{p}:{message}"
    # an SWF record with a stray '|' is still a field error of that record
    p = write(tmp_path, rec(1, run_time="10|0") + "\n" + rec(2) + "\n")
    with pytest.raises(TraceFormatError, match=r":1: field 'run_time': expected a number, got '10\|0' \(--lenient"):
        read_swf(p)
    assert len(read_swf(p, lenient=True)) == 1


def test_read_trace_names_an_unknown_option_as_its_own(tmp_path):
    """read_trace(path, cores=4) said "read_swf() got an unexpected keyword argument
    'cores'" (a function the user did not call), and the swf-nodes reader's own options
    given for a sacct log "read_sacct() got ...": it now names read_trace, the option, the
    one probably meant and the options the log's reader takes."""
    p = tmp_path / "t.swf"
    p.write_text("1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 1 -1 -1\n")
    with pytest.raises(TypeError) as e:
        read_trace(p, cores=4)
    assert str(e.value).startswith("read_trace(): unknown option 'cores' for a swf log (did you mean cores_per_node?); options are: "), e.value
    assert "lenient" in str(e.value) and "allow_long_span" in str(e.value)
    assert len(read_trace(p, cores_per_node=4, allow_long_span=True)) == 1


@pytest.mark.parametrize("kw", [{"lenient": "no"}, {"lenient": 0.0}, {"allow_long_span": "false"}, {"lenient": None}])
def test_a_true_false_option_that_is_not_a_bool_is_refused_before_the_read(tmp_path, kw):
    """read_trace(p, lenient="no") read the log leniently ("no" is truthy): a malformed
    record was skipped where the caller asked for the strict read. Refused, as the other
    reading options are, with ValueError before the file is read."""
    p = tmp_path / "missing.swf"  # never read: the option is refused first
    name, value = next(iter(kw.items()))
    for read in (read_trace, read_swf):
        with pytest.raises(ValueError, match=rf"^{name} must be True or False, got {value!r}$"):
            read(p, **kw)
    assert read_trace(EXAMPLE_TRACE, lenient=np.bool_(False), allow_long_span=True).records > 0

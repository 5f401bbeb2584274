"""Odd but plausible log files, each a regression test of a defect found by reading them:
a byte-order mark, UTF-16, Latin-1 names, carriage-return line ends, sacct dumps put
together, an unclosed PBS quote, corrupt gzip. Where a test compares tables, the
reference is the same log read without the oddity (the plain file's own read)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from conftest import KTH, PBS_SAMPLE, SLURM, WAGAP

from toposched.cli import main
from toposched.errors import TraceFormatError
from toposched.workload import detect_format, read_trace
from toposched.workload.pbs import _split_message
from toposched.workload.swf_nodes import read_alea_machines
from toposched.workload.swf_stream import SwfStream

BOM = b"\xef\xbb\xbf"


def _same_table(a, b) -> None:  # type: ignore[no-untyped-def]
    assert len(a) == len(b) and a.records == b.records
    assert a.repairs == b.repairs and a.skipped == b.skipped
    for col in ("job_id", "submit_s", "nodes", "walltime_s", "runtime_s", "user_id", "account_id", "qos_id", "partition_id"):
        assert a[col].tolist() == b[col].tolist(), col
    assert a.names == b.names


def test_format_guess_skips_byte_order_mark(tmp_path: Path) -> None:
    """A byte-order mark before the first line does not hide its format from the guess
    (it hid a PBS date, a header-less SWF record and an extended SWF's ';' header)."""
    swf = gzip.decompress(KTH.read_bytes())
    records = b"\n".join(ln for ln in swf.split(b"\n") if ln.strip() and not ln.startswith(b";")) + b"\n"
    wagap = gzip.decompress(WAGAP.read_bytes())
    cases = {
        "pbs.log": (PBS_SAMPLE.read_bytes(), "pbs"),
        "bare.log": (records, "swf"),  # no header, a name that does not say SWF
        "wagap.log": (b"; Computer: wagap\n" + wagap, "swf-nodes"),
        "wagap.swf": (b"; Computer: wagap\n" + wagap, "swf-nodes"),
        "sacct.log": ((SLURM / "ubccr_ub-hpc_sacct-P-all_dump2110.log").read_bytes(), "sacct"),
    }
    for name, (data, fmt) in cases.items():
        plain, bom = tmp_path / ("plain-" + name), tmp_path / ("bom-" + name)
        plain.write_bytes(data)
        bom.write_bytes(BOM + data)
        assert detect_format(plain) == fmt, name
        assert detect_format(bom) == fmt, name
    _same_table(read_trace(tmp_path / "bom-pbs.log"), read_trace(tmp_path / "plain-pbs.log"))
    _same_table(read_trace(tmp_path / "bom-bare.log"), read_trace(tmp_path / "plain-bare.log"))
    bom_wagap = read_trace(tmp_path / "bom-wagap.log", cores_per_node=12)
    assert bom_wagap.format == "swf-nodes"
    _same_table(bom_wagap, read_trace(tmp_path / "plain-wagap.log", cores_per_node=12))


def test_sacct_byte_order_mark_keeps_first_column(tmp_path: Path) -> None:
    """A byte-order mark before a sacct header does not rename its first column: the
    dump's first column, Account, was silently lost (every account_id -1)."""
    src = SLURM / "ubccr_ub-hpc_sacct-P-all_dump2110.log"
    assert src.read_bytes().startswith(b"Account|")
    bom = tmp_path / "bom.log"
    bom.write_bytes(BOM + src.read_bytes())
    plain = read_trace(src)
    assert plain.names["account_id"] == ["account001"]  # the reference: the file as shipped
    _same_table(read_trace(bom), plain)
    # a required first column was refused instead ("the header has no JobIDRaw column")
    text = (
        "JobIDRaw|Submit|Start|End|ElapsedRaw|Timelimit|NNodes\n"
        "7|2021-01-01T00:00:00|2021-01-01T00:10:00|2021-01-01T01:10:00|3600|02:00:00|2\n"
    )
    (tmp_path / "plain2.log").write_text(text)
    (tmp_path / "bom2.log").write_bytes(BOM + text.encode())
    plain2 = read_trace(tmp_path / "plain2.log")
    assert (plain2["job_id"].tolist(), plain2["nodes"].tolist(), plain2["runtime_s"].tolist()) == ([7], [2], [3600])
    _same_table(read_trace(tmp_path / "bom2.log"), plain2)


def test_empty_log_without_a_format_says_empty(tmp_path: Path) -> None:
    """An empty or blank file whose name does not say SWF: "no job records found", as
    with --format, not "cannot tell the log's format; pass --format", which cannot help."""
    for name, data in (("empty.log", b""), ("blank.log", b"\n \n\t\n"), ("bom.log", BOM + b"\n"), ("empty.gz", gzip.compress(b""))):
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(TraceFormatError, match=r"no job records found") as ei:
            read_trace(p)
        assert "--format" not in str(ei.value)
        for fmt in ("swf", "sacct", "pbs"):  # each reader, told the format, says so too
            with pytest.raises(TraceFormatError, match=r"no job records found"):
                read_trace(p, format=fmt)


def test_names_not_utf8_stay_distinct(tmp_path: Path) -> None:
    """Two Latin-1 names that differ only in a non-ASCII letter are two users / apps (they
    became one: both bytes were replaced by U+FFFD), spelled with \\xNN for those bytes."""
    header = "JobIDRaw|Submit|Start|End|ElapsedRaw|Timelimit|NNodes|User|JobName"
    rows = [f"{i}|2021-01-01T00:0{i}:00|2021-01-01T00:10:00|2021-01-01T01:10:00|3600|02:00:00|1|{u}|{n}" for i, u, n in ((1, "jos\xe9", "r\xe9sum"), (2, "jos\xe8", "r\xe8sum"), (3, "jos\xe9", "plain"))]
    sacct = tmp_path / "latin1.log"
    sacct.write_bytes("\n".join([header, *rows, ""]).encode("latin-1"))
    w = read_trace(sacct)
    assert w.names["user_id"] == ["jos\\xe9", "jos\\xe8"] and w["user_id"].tolist() == [0, 1, 0]
    assert w.names["app"] == ["r\\xe9sum", "r\\xe8sum", "plain"] and w.extra["app"].tolist() == [0, 1, 2]
    # PBS: the shipped sample's first two distinct users' names made Latin-1
    lines = PBS_SAMPLE.read_bytes().split(b"\n")
    users = [ln.split(b"user=")[1].split(b" ")[0] for ln in lines if b"user=" in ln]
    a, b = users[0], next(u for u in users if u != users[0])
    data = PBS_SAMPLE.read_bytes().replace(b"user=" + a + b" ", b"user=\xe9" + b" ").replace(b"user=" + b + b" ", b"user=\xe8" + b" ")
    pbs = tmp_path / "latin1-pbs.log"
    pbs.write_bytes(data)
    plain, odd = read_trace(PBS_SAMPLE), read_trace(pbs)
    assert odd["user_id"].tolist() == plain["user_id"].tolist()  # as many users, the same jobs each
    assert set(odd.names["user_id"]) >= {"\\xe9", "\\xe8"}


def test_pbs_unclosed_quote_does_not_swallow_the_record() -> None:
    """A value opening a quote it never closes (a Torque job name is not quoted, so
    jobname="x is a name) ran to the end of the record: the attributes after it were lost
    and then repaired (run time from end - start, walltime from the run time)."""
    got = _split_message('jobname="abc Resource_List.walltime=01:00:00 resources_used.walltime=00:30:00 user=u')
    assert got == {"jobname": '"abc', "Resource_List.walltime": "01:00:00", "resources_used.walltime": "00:30:00", "user": "u"}
    # a closed quote still joins the words it holds
    assert _split_message('jobname="a b" user=u') == {"jobname": "a b", "user": "u"}
    assert _split_message('jobname="a b user=u c"') == {"jobname": "a b user=u c"}


def test_sacct_dumps_put_together_repeat_the_header(tmp_path: Path) -> None:
    """`cat jan.log feb.log`: the second header line is not a record (it was refused as a
    job id 'JobIDRaw', or with --lenient counted as a malformed record); a header naming
    other columns is refused even with --lenient, which read the second dump's values
    under the first dump's columns."""
    header = "JobIDRaw|Submit|Start|End|ElapsedRaw|Timelimit|NNodes"

    def rec(i: int, nodes: int, elapsed: int) -> str:
        return f"{i}|2021-01-0{i}T00:00:00|2021-01-0{i}T00:10:00|2021-01-0{i}T01:10:00|{elapsed}|02:00:00|{nodes}"

    jan, feb = [header, rec(1, 2, 3600), rec(2, 3, 3600)], [header, rec(3, 4, 1800)]
    whole = tmp_path / "all.log"
    whole.write_text("\n".join(jan + feb) + "\n")
    one = tmp_path / "one.log"  # the reference: the same jobs under one header
    one.write_text("\n".join(jan + feb[1:]) + "\n")
    w, ref = read_trace(whole), read_trace(one)
    _same_table(w, ref)
    assert w.records == 3 and w.settings["repeated_header_lines"] == 1
    assert "repeated_header_lines" not in ref.settings
    # the second dump printed with its columns in another order: same count, other meaning
    other = tmp_path / "other.log"
    swapped = "JobIDRaw|Submit|Start|End|ElapsedRaw|Timelimit|NNodes".split("|")
    swapped[4], swapped[6] = swapped[6], swapped[4]
    other.write_text("\n".join(jan + ["|".join(swapped), "3|2021-01-03T00:00:00|2021-01-03T00:10:00|2021-01-03T01:10:00|4|02:00:00|1800"]) + "\n")
    for lenient in (False, True):
        with pytest.raises(TraceFormatError, match=r"other\.log:4: a header naming other columns than line 1's") as ei:
            read_trace(other, lenient=lenient)
        assert ei.value.line == 4


def test_pbs_lone_carriage_returns_end_lines(tmp_path: Path) -> None:
    """A PBS log with lone carriage-return line ends (or a mix) reads as with "\\n": it was
    one line, the records run together into the first one's attributes (an error about
    its qtime, or with --lenient no valid record)."""
    data = PBS_SAMPLE.read_bytes()
    lines = data.rstrip(b"\n").split(b"\n")
    ref = read_trace(PBS_SAMPLE)
    for name, text in (("cr.log", b"\r".join(lines) + b"\r"), ("mixed.log", b"\r".join(lines[:4]) + b"\r\n" + b"\n".join(lines[4:]) + b"\n")):
        p = tmp_path / name
        p.write_bytes(text)
        w = read_trace(p, format="pbs")
        _same_table(w, ref)
        assert w["line"].tolist() == ref["line"].tolist()  # a lone "\r" ends a line, as in an editor


def test_sacct_lone_carriage_return_line_ends(tmp_path: Path) -> None:
    """A sacct log whose every line ends in a lone carriage return reads as with "\\n" (it
    was one line: "no job records found (only a header)")."""
    src = SLURM / "xdmod_ub-hpc_sacct-parsable2_job-arrays.log"  # no header: XDMoD's layout
    header_log = SLURM / "ubccr_ub-hpc_sacct-P-all_dump2110.log"
    for path in (src, header_log):
        p = tmp_path / ("cr-" + path.name)
        p.write_bytes(path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r"))
        assert b"\n" not in p.read_bytes()
        _same_table(read_trace(p, lenient=True), read_trace(path, lenient=True))


def test_alea_machines_file_with_byte_order_mark(tmp_path: Path) -> None:
    """An Alea .machines file saved with a byte-order mark: its first cluster id was
    '\\ufeff0', "expected a number"."""
    src = WAGAP.parent / "alea_wagap-2013.swf.machines"
    bom = tmp_path / "bom.machines"
    bom.write_bytes(BOM + src.read_bytes())
    assert read_alea_machines(bom) == read_alea_machines(src)


def test_utf16_logs_are_named_as_such(tmp_path: Path) -> None:
    """A log saved as UTF-16 (with or without its byte-order mark) is one line saying so,
    from every reader and the format guess; each said something beside the point before
    ("expected 18 fields, found 3 (truncated line?)", "cannot tell the log's format")."""
    sources = {
        "swf": gzip.decompress(KTH.read_bytes())[:4000].rsplit(b"\n", 1)[0] + b"\n",
        "pbs": PBS_SAMPLE.read_bytes(),
        "sacct": (SLURM / "ubccr_ub-hpc_sacct-P-all_dump2110.log").read_bytes(),
    }
    for fmt, data in sources.items():
        for enc in ("utf-16", "utf-16-le", "utf-16-be"):
            text = data.decode("utf-8", errors="strict").encode(enc)
            for name in (f"{fmt}-{enc}.log", f"{fmt}-{enc}.swf"):
                p = tmp_path / name
                p.write_bytes(text)
                for kw in ({}, {"format": fmt}):
                    with pytest.raises(TraceFormatError, match=r"is UTF-16 text .*iconv -f UTF-16 -t UTF-8") as ei:
                        read_trace(p, **kw)
                    assert ei.value.line == 1, (name, kw)
                if fmt == "swf":
                    with pytest.raises(TraceFormatError, match=r"is UTF-16 text"):
                        list(SwfStream(p).chunks())


def test_corrupt_gzip_guess_is_one_line_with_stream(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """gzip data corrupt in its first lines, in a log whose name does not say SWF: the
    format guess raised zlib.error / BadGzipFile, which `simulate --stream` (no
    read_trace around it) printed without the file ("error: unreadable file: ...", or
    "error: Unknown compression method", exit 1). Now the whole and the streamed replay
    say the same line."""
    good = KTH.read_bytes()
    corrupt = good[:12] + b"\x00" * 50 + good[62:]
    cases = {"stored.log": corrupt, "method.log": b"\x1f\x8b" + b"garbage" * 20, "named.swf.gz": corrupt}
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        if not name.endswith(".swf.gz"):
            with pytest.raises(TraceFormatError, match=r"cannot read: "):
                detect_format(p)
        else:  # the look for node lists does not raise: the reader says what is wrong
            assert detect_format(p) == "swf"
        errs = []
        for extra in ([], ["--stream"]):
            code = main(["simulate", "--trace", str(p), "--system", "fattree:K=4,S=2,P=2", "--quiet", "--out", str(tmp_path / "o"), *extra])
            err = capsys.readouterr().err.strip()
            assert code == 2 and len(err.splitlines()) == 1 and err.startswith(f"error: {p}: "), err
            assert ("corrupt gzip data: " if name.endswith(".swf.gz") else "cannot read: ") in err
            errs.append(err)
        assert errs[0] == errs[1]


@pytest.mark.parametrize("digit", ["\u0662", "\uff12", "\u096a"])  # Arabic-Indic 2, fullwidth 2, Devanagari 4
def test_digits_of_other_scripts_are_not_numbers(tmp_path: Path, digit: str) -> None:
    """sacct and PBS read a count, a time or a duration written with another script's
    digits ('٢', which int() reads as 2) as that number, silently; the SWF reader refuses
    them (docs/workloads.md: digits). Now all three say which field holds it."""
    header = "JobIDRaw|Submit|Start|End|ElapsedRaw|Timelimit|NNodes"
    row = {"JobIDRaw": "7", "Submit": "2021-01-01T00:00:00", "Start": "2021-01-01T00:10:00", "End": "2021-01-01T01:10:00",
           "ElapsedRaw": "3600", "Timelimit": "02:00:00", "NNodes": "2"}  # fmt: skip
    for col in ("NNodes", "ElapsedRaw", "Timelimit", "Submit"):
        bad = dict(row)
        bad[col] = bad[col].replace("2", digit, 1) if "2" in bad[col] else digit + bad[col][1:]
        p = tmp_path / f"sacct-{col}.log"
        p.write_text(header + "\n" + "|".join(bad[c] for c in header.split("|")) + "\n", encoding="utf-8")
        with pytest.raises(TraceFormatError) as ei:
            read_trace(p)
        assert (ei.value.line, ei.value.field) == (2, col), str(ei.value)
    plain = PBS_SAMPLE.read_text().split("\n")[2]  # 6464684: nodect-free Torque record
    assert "Resource_List.walltime=" in plain and "qtime=1415579756" in plain
    for attr, old in (("qtime", "qtime=1415579756"), ("Resource_List.nodect", "Resource_List.nodect=1"), ("resources_used.walltime", "resources_used.walltime=02:35:49")):
        assert old in plain, old
        p = tmp_path / f"pbs-{attr}.log"
        p.write_text(plain.replace(old, old[:-1] + digit) + "\n", encoding="utf-8")
        with pytest.raises(TraceFormatError) as ei:
            read_trace(p, format="pbs")
        assert ei.value.field == attr, str(ei.value)
    swf = tmp_path / "x.swf"
    swf.write_text(f"1 0 5 10 {digit} -1 -1 2 100 -1 1 1 1 1 1 1 -1 -1\n", encoding="utf-8")
    with pytest.raises(TraceFormatError) as ei:
        read_trace(swf)
    assert ei.value.field == "allocated_processors"


def test_pbs_node_count_out_of_range_names_where_it_came_from(tmp_path: Path) -> None:
    """A node count beyond 2^31 read from the request (no exec_host in the record) was
    reported as field 'exec_host', which the record does not have: the field named now
    says the count comes from exec_host or, without it, from the request."""
    log = tmp_path / "big.log"
    log.write_text(
        "12/21/2009 15:27:00;E;7.x;user=a group=b jobname=j queue=q ctime=1261424924 qtime=1261424924 etime=1261424924 "
        "start=1261425023 end=1261425123 Resource_List.nodes=99999999999 Resource_List.walltime=01:00:00 resources_used.walltime=00:01:40 Exit_status=0\n"
    )
    with pytest.raises(TraceFormatError) as exc:
        read_trace(log, format="pbs")
    text = str(exc.value)
    assert "99999999999 is out of range" in text and "Resource_List.nodect/nodes/select" in text and ":1:" in text

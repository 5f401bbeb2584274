"""Fuzzing every reader with mutations of real records (issue 13).

Each example takes a real log (SWF records of the bundled Atlas trace; the xdmod sacct
records, header-less and with a header; the xdmod PBS records), mutates it (a field
replaced by an extreme or malformed value, bytes cut or inserted, a line repeated, the
file cut short) and reads and replays it. The property: either a clean input error
(ToposchedError, naming the file) or a sound schedule (every job starts after its submit
and ends after its start, no node held twice, times within the documented window). No
other exception, no abort. Each test is bounded by its example count (no deadline: CI
machines are slow); new crashing inputs found here belong in tests/data/regressions/.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE_TRACE
from toposched.check import check_schedule
from toposched.errors import ToposchedError
from toposched.limits import EPOCH_MAX_S
from toposched.simulate import RunConfig, simulate
from toposched.topology import load_fabric
from toposched.workload import read_trace

DATA = Path(__file__).parent / "data"
FABRIC = load_fabric("fattree:K=16,S=8,P=2")  # 256 nodes

#: Values that broke readers before (issue 13) and their neighbours.
EXTREME = st.sampled_from(
    ["0", "-1", "-2", str(2**31 - 1), str(2**31), str(2**32), str(2**53), str(2**62), str(2**63 - 1), str(2**63), str(2**64),
     str(10**18), "-" + str(2**63), "1e18", "nan", "", "x", "00", "9" * 40, "1.5", "-0",
     "9999-12-31T23:59:59", "0001-01-01T00:00:00", "2300-01-01T00:00:00", "1970-01-01T00:00:00", "2015-02-30T00:00:00",
     "99999-00:00:00", "UNLIMITED", "Unknown", "None assigned", "n[1-99999999]", "12:00:00", "1:99:99"]
)  # fmt: skip


def _swf_text() -> str:
    lines = gzip.decompress(EXAMPLE_TRACE.read_bytes()).decode().splitlines()
    header = [ln for ln in lines[:60] if ln.startswith(";")]
    records = [ln for ln in lines if ln and not ln.startswith(";")][1000:1040]
    return "\n".join(header + records) + "\n"


def _sacct_header_text() -> str:
    names = "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|GID|User|UID|Submit|Eligible|Start|End|Elapsed|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|JobName"
    return names + "\n" + (DATA / "slurm" / "xdmod_ub-hpc_sacct-parsable2_accounting-logs.log").read_text()


SOURCES = {
    "swf": (_swf_text(), " "),
    "sacct": ((DATA / "slurm" / "xdmod_ub-hpc_sacct-parsable2_accounting-logs.log").read_text(), "|"),
    "sacct-header": (_sacct_header_text(), "|"),
    "pbs": ((DATA / "pbs" / "xdmod_pbs-torque_accounting-logs.log").read_text(), " "),
}


@st.composite
def mutated(draw, fmt: str) -> bytes:
    text, sep = SOURCES[fmt]
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["field", "field", "field", "cut", "insert", "repeat", "truncate"]))
        i = draw(st.integers(0, max(len(lines) - 2, 0)))
        line = lines[i]
        if kind == "field":
            parts = line.split(sep)
            j = draw(st.integers(0, len(parts) - 1))
            value = draw(EXTREME)
            if "=" in parts[j] and fmt == "pbs":  # keep the key of key=value
                parts[j] = parts[j].split("=", 1)[0] + "=" + value
            else:
                parts[j] = value
            lines[i] = sep.join(parts)
        elif kind == "cut" and line:
            a = draw(st.integers(0, len(line) - 1))
            b = draw(st.integers(a, min(len(line), a + 20)))
            lines[i] = line[:a] + line[b:]
        elif kind == "insert":
            a = draw(st.integers(0, len(line)))
            junk = draw(st.text(alphabet="0123456789|;=: -+[]x\t\r\x00é", max_size=8))
            lines[i] = line[:a] + junk + line[a:]
        elif kind == "repeat":
            lines.insert(i, line)
        else:  # the file cut short, mid-line
            out = "\n".join(lines)
            return out[: draw(st.integers(0, len(out)))].encode()
    return "\n".join(lines).encode()


def _replay_or_clean_error(path: Path, fmt: str) -> None:
    reader_fmt = "sacct" if fmt.startswith("sacct") else fmt
    try:
        w = read_trace(path, format=reader_fmt, lenient=False)
    except ToposchedError as exc:
        assert str(path) in str(exc)
        return
    # a log that reads is within the documented limits
    if len(w):
        assert (w["nodes"] >= 1).all() and (w["nodes"] < 2**31).all()
        assert (w["runtime_s"] >= 0).all() and (w["walltime_s"] >= 1).all()
        if w.time_origin_epoch_s is not None:
            assert 0 <= w.time_origin_epoch_s + int(w["submit_s"].max()) < EPOCH_MAX_S
    for queue in ("easy", "conservative"):
        try:
            r = simulate(w, FABRIC, RunConfig(queue=queue, alloc="isolated", kill_at_walltime=queue == "easy"))
        except ToposchedError as exc:
            assert "internal error" not in str(exc), exc
            continue
        jobs = r.jobs
        start, end, submit = (jobs.column(c).to_numpy() for c in ("start_s", "end_s", "submit_s"))
        assert (start >= submit).all() and (end >= start).all()
        assert check_schedule(jobs, FABRIC.describe(), interference_free=True) == []
        assert r.summary["utilization"]["samples"] == r.utilization_series.n_samples
        if len(jobs):
            assert 0 <= r.summary["utilization"]["mean"] <= 1


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_unmutated_sources_replay(fmt: str, tmp_path: Path) -> None:
    p = tmp_path / f"log.{fmt}"
    p.write_text(SOURCES[fmt][0])
    reader_fmt = "sacct" if fmt.startswith("sacct") else fmt
    assert len(read_trace(p, format=reader_fmt)) > 0
    _replay_or_clean_error(p, fmt)


@FUZZ
@given(data=mutated("swf"))
def test_fuzz_swf(data: bytes, tmp_path: Path) -> None:
    p = tmp_path / "log.swf"
    p.write_bytes(data)
    _replay_or_clean_error(p, "swf")


@FUZZ
@given(data=mutated("sacct"))
def test_fuzz_sacct_xdmod(data: bytes, tmp_path: Path) -> None:
    p = tmp_path / "log.sacct"
    p.write_bytes(data)
    _replay_or_clean_error(p, "sacct")


@FUZZ
@given(data=mutated("sacct-header"))
def test_fuzz_sacct_header(data: bytes, tmp_path: Path) -> None:
    p = tmp_path / "log.sacct"
    p.write_bytes(data)
    _replay_or_clean_error(p, "sacct-header")


@FUZZ
@given(data=mutated("pbs"))
def test_fuzz_pbs(data: bytes, tmp_path: Path) -> None:
    p = tmp_path / "log.pbs"
    p.write_bytes(data)
    _replay_or_clean_error(p, "pbs")


@FUZZ
@given(data=mutated("swf"), cut=st.integers(10, 2000))
def test_fuzz_gzip(data: bytes, cut: int, tmp_path: Path) -> None:
    """gzip data damaged anywhere: a clean error or the records before the damage."""
    z = bytearray(gzip.compress(data, mtime=0))
    k = min(cut, len(z) - 1)
    z[k] ^= 0xFF
    p = tmp_path / "log.swf.gz"
    p.write_bytes(bytes(z))
    _replay_or_clean_error(p, "swf")

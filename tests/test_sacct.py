"""sacct reader: the real logs in tests/data/slurm, the field rules, and strict vs lenient
handling of bad input with the exact line and field in every message."""

from __future__ import annotations

import calendar
import gzip
from pathlib import Path

import numpy as np
import pytest
from conftest import SLURM

from toposched.errors import TraceFormatError
from toposched.workload import detect_format, read_trace
from toposched.workload.sacct import parse_duration, parse_time, read_sacct

DUMP2101 = "ubccr_ub-hpc_sacct-P-all_dump2101.log"
DUMP2110 = "ubccr_ub-hpc_sacct-P-all_dump2110.log"
MULTILINE = "ubccr_ub-hpc_sacct-P-all_submitline_multiline.log"
XDMOD = "xdmod_ub-hpc_sacct-parsable2_accounting-logs.log"
XDMOD_ARRAYS = "xdmod_ub-hpc_sacct-parsable2_job-arrays.log"

def data(name: str) -> Path:
    """A log of tests/data/slurm."""
    return SLURM / name


HEADER = "JobID|JobIDRaw|Submit|Start|End|Elapsed|Timelimit|NNodes|AllocCPUS|ReqCPUS|NodeList|State|Partition|User|JobName"


def row(
    jobid="100",
    raw=None,
    submit="2021-01-01T00:00:00",
    start="2021-01-01T00:10:00",
    end="2021-01-01T01:10:00",
    elapsed="01:00:00",
    limit="02:00:00",
    nnodes="2",
    cpus="8",
    req="8",
    nodelist="n[01-02]",
    state="COMPLETED",
    partition="batch",
    user="alice",
    name="job",
):
    raw = jobid if raw is None else raw
    return "|".join([jobid, raw, submit, start, end, elapsed, limit, nnodes, cpus, req, nodelist, state, partition, user, name])


def write(tmp_path: Path, *lines: str, header: str | None = HEADER, name: str = "log.txt") -> Path:
    p = tmp_path / name
    body = ([header] if header is not None else []) + list(lines)
    p.write_text("".join(line + "\n" for line in body))
    return p


def epoch(s: str) -> int:
    return calendar.timegm(tuple(int(x) for x in s.replace("T", "-").replace(":", "-").split("-")) + (0, 0, 0))


def accounted(w) -> bool:
    return len(w) + sum(w.skipped.values()) == w.records


# ----------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1-00:00:00", 86400),
        ("2-00:00:00", 172800),
        ("00:30:00", 1800),
        ("3-00:00:22", 259222),
        ("14:20:00", 51600),
        ("05:00", 300),  # MM:SS
        ("00:01.277", 1),  # MM:SS.mmm, fraction dropped
        ("90", 5400),  # minutes
        ("UNLIMITED", -1),
        ("Partition_Limit", -1),
        ("INVALID", -1),
        ("Unknown", -1),
        ("", -1),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["abc", "1-2", "00:61:00", "1:2:3", "-5", "1-00:00"])
def test_parse_duration_refuses(text):
    with pytest.raises(ValueError, match="expected a duration like 1-00:00:00"):
        parse_duration(text)


def test_parse_time():
    assert parse_time("2021-01-06T14:09:15") == 1609942155
    assert parse_time("Unknown") is None and parse_time("None") is None and parse_time("") is None
    for bad in ("2021-01-06 14:09:15", "2021-02-30T00:00:00", "yesterday"):
        with pytest.raises(ValueError, match="expected a time like 2021-01-06T14:09:15"):
            parse_time(bad)


# ----------------------------------------------------------------------------- real files


@pytest.mark.parametrize(
    ("name", "records", "jobs", "skipped"),
    [
        (DUMP2101, 15, 6, {"job_step": 2, "malformed_line": 1, "unknown_runtime": 6}),
        (DUMP2110, 7, 1, {"job_step": 2, "duplicate_record": 4}),
        (MULTILINE, 13, 2, {"job_step": 7, "duplicate_record": 4}),
        (XDMOD, 4, 3, {"unknown_size": 1}),
        (XDMOD_ARRAYS, 6, 6, {}),
    ],
)
def test_real_logs_load(name, records, jobs, skipped):
    # dump2101 ends with a cut-off record, which only lenient reading skips
    w = read_sacct(data(name), lenient=(name == DUMP2101))
    assert w.format == "sacct"
    assert (w.records, len(w), w.skipped) == (records, jobs, skipped)
    assert accounted(w)
    assert np.all(np.diff(w["submit_s"]) >= 0)
    # the origin is the earliest submit of any job record, kept or not
    assert w["submit_s"].min() >= 0
    for key in ("logged_nodelist", "logged_hosts", "state", "partition", "user"):
        assert len(w.extra[key]) == len(w)
    assert len(w.extra["logged_start_s"]) == len(w)
    assert detect_format(data(name)) == "sacct"


def test_dump2101_strict_stops_at_cut_off_record():
    with pytest.raises(TraceFormatError) as info:
        read_sacct(data(DUMP2101))
    err = info.value
    assert (err.line, err.field) == (16, None)
    assert err.message == "the file ends inside this record: it has 74 of the 107 fields"


def test_dump2101_values_and_never_started_jobs():
    w = read_sacct(data(DUMP2101), lenient=True, missing_runtime="zero")
    # the six "None assigned" jobs (cancelled while held) are kept with run time 0 here
    assert len(w) == 12 and w.repairs["runtime_set_zero"] == 6
    never = [i for i in range(len(w)) if w.extra["logged_start_s"][i] == -1]
    assert len(never) == 6
    assert all(w.extra["logged_nodelist"][i] == "" and w.extra["logged_hosts"][i] == [] for i in never)
    # records with '|' inside Constraints ('cpu-a|cpu-b') and JobName ('Job|Name003')
    i = list(w["line"]).index(13)
    assert (w["job_id"][i], w["nodes"][i], w["runtime_s"][i], w["walltime_s"][i]) == (4830975, 1, 259222, 259200)
    assert w.extra["logged_hosts"][i] == [w.extra["logged_nodelist"][i]]
    assert w.extra["state"][i] == "TIMEOUT" and w.extra["partition"][i] == "general-compute"
    assert w.time_origin_epoch_s == epoch("2020-12-18T22:12:16")


def test_multiline_submitline():
    w = read_sacct(data(MULTILINE))
    # job 7957382 is printed 5 times (with different numbers of '|' in its text fields):
    # one job, 4 duplicate records
    assert (w.records, len(w), w.skipped["duplicate_record"]) == (13, 2, 4)
    big = int(np.flatnonzero(w["job_id"] == 9067954)[0])
    assert w["line"][big] == 4
    assert (w["nodes"][big], w["procs"][big], w["runtime_s"][big], w["walltime_s"][big]) == (16, 576, 9600, 18000)
    assert w.extra["logged_nodelist"][big].startswith("cpn-q06-04-[01-02],cpn-q07-04-[01-02],")
    hosts = w.extra["logged_hosts"][big]
    assert len(hosts) == 16
    assert hosts[:4] == ["cpn-q06-04-01", "cpn-q06-04-02", "cpn-q07-04-01", "cpn-q07-04-02"]
    assert hosts[-2:] == ["cpn-u25-20", "cpn-u25-36"]
    # the 2021 jobs come before the 2022 one after sorting; their SubmitLine holds a shell
    # pipeline ('env | grep SLURM | sed ...') and some have '|' in Constraints and JobName
    assert list(w["line"]) == [2, 4]
    assert w.repairs == {}
    small = w["job_id"] == 7957382
    assert set(w["runtime_s"][small]) == {56} and set(w["walltime_s"][small]) == {86400}


def test_xdmod_layout():
    w = read_sacct(data(XDMOD))
    assert w.settings["layout"] == "xdmod"
    assert w.time_origin_epoch_s == epoch("2015-06-26T13:57:00")
    assert list(w["job_id"]) == [4103947, 4107166, 4107219]
    assert list(w["nodes"]) == [32, 3, 4]
    assert list(w["runtime_s"]) == [259200, 252184, 50449]  # 2-22:03:04 = 252184
    assert list(w["walltime_s"]) == [259200, 259200, 51600]
    assert list(w["submit_s"]) == [0, 21265, 23122]  # 19:51:25 and 20:22:22 after 13:57:00
    hosts = w.extra["logged_hosts"][0]
    assert len(hosts) == 32
    assert hosts[7:9] == ["d09n04s01", "d09n04s02"]
    assert hosts[-5:] == ["d13n03", "d13n05", "d13n07", "d13n08", "d13n16"]
    assert w.extra["state"] == ["TIMEOUT", "CANCELLED by 102216", "COMPLETED"]
    assert w.extra["logged_start_s"][0] == epoch("2015-06-28T02:55:50") - w.time_origin_epoch_s
    # the id columns: the file's names numbered in order of first appearance (the fourth
    # record, of unknown size, is skipped after the names were given out)
    assert list(w["account_id"]) == [0, 1, 2] and w.names["account_id"][:3] == ["anon", "dspumpkins", "anonacct"]
    assert list(w["user_id"]) == [0, 1, 2] and w.names["user_id"][:3] == ["unknown", "hanx", "anonuser"]
    assert list(w["qos_id"]) == [0, 0, 0] and w.names["qos_id"] == ["qos"]
    assert list(w["partition_id"]) == [0, 0, 0] and w.names["partition_id"] == ["general-compute"]


def test_xdmod_job_arrays():
    w = read_sacct(data(XDMOD_ARRAYS))
    assert list(w["job_id"]) == [4103947] * 6
    assert list(w["line"]) == [1, 2, 3, 4, 5, 6]


# ----------------------------------------------------------------------------- rules


def test_steps_are_counted_not_kept(tmp_path):
    p = write(
        tmp_path,
        row(),
        row(jobid="100.batch", nnodes="1"),
        row(jobid="100.extern"),
        row(jobid="100.0"),
        row(jobid="101", submit="2021-01-01T00:05:00"),
    )
    w = read_sacct(p)
    assert list(w["job_id"]) == [100, 101]
    assert w.skipped == {"job_step": 3}
    assert w.records == 5 and accounted(w)
    assert list(w["line"]) == [2, 6]


def test_job_array_ids_come_from_jobidraw(tmp_path):
    p = write(tmp_path, row(jobid="4103947_100", raw="4104050"), row(jobid="4103947_[1-3]", raw="4103947"))
    w = read_sacct(p)
    assert list(w["job_id"]) == [4104050, 4103947]


def test_job_array_without_jobidraw_is_refused(tmp_path):
    header = "JobID|Submit|Start|End|Elapsed|Timelimit|NNodes"
    p = write(tmp_path, "4103947_100|2021-01-01T00:00:00|2021-01-01T00:00:01|2021-01-01T00:00:02|00:00:01|01:00:00|1", header=header)
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p)
    assert (info.value.line, info.value.field) == (2, "JobID")
    assert "add JobIDRaw to sacct --format" in info.value.message


def test_fields_and_times(tmp_path):
    p = write(
        tmp_path,
        row(jobid="7", submit="2021-01-01T00:30:00", start="2021-01-01T01:00:00", elapsed="00:10:00", limit="1-00:00:00"),
        row(jobid="8", submit="2021-01-01T00:00:00", start="2021-01-01T00:00:05", elapsed="00:00:30", limit="UNLIMITED",
            nnodes="1", cpus="4", req="2", nodelist="n03", partition="debug", user="bob", state="CANCELLED by 12"),
    )  # fmt: skip
    w = read_sacct(p)
    assert w.time_origin_epoch_s == epoch("2021-01-01T00:00:00")
    assert list(w["job_id"]) == [8, 7]
    assert list(w["submit_s"]) == [0, 1800]
    assert list(w["runtime_s"]) == [30, 600]
    assert list(w["walltime_s"]) == [30, 86400]  # UNLIMITED -> unknown -> run time
    assert w.repairs == {"walltime_from_runtime": 1, "submit_unsorted": 1}
    assert list(w["nodes"]) == [1, 2] and list(w["procs"]) == [4, 8]
    assert list(w.extra["logged_start_s"]) == [5, 3600]
    assert w.extra["logged_nodelist"] == ["n03", "n[01-02]"]
    assert w.extra["logged_hosts"] == [["n03"], ["n01", "n02"]]
    assert w.extra["state"] == ["CANCELLED by 12", "COMPLETED"]
    assert w.extra["partition"] == ["debug", "batch"]
    assert w.extra["user"] == ["bob", "alice"]
    assert list(w["line"]) == [3, 2]


def test_elapsedraw_preferred(tmp_path):
    header = "JobIDRaw|Submit|Start|End|Elapsed|ElapsedRaw|Timelimit|NNodes"
    p = write(tmp_path, "5|2021-01-01T00:00:00|2021-01-01T00:00:00|2021-01-01T00:01:00|00:01:00|61|10|1", header=header)
    w = read_sacct(p)
    assert list(w["runtime_s"]) == [61]
    assert list(w["walltime_s"]) == [600]  # bare minutes


def test_size_from_cpus_when_nnodes_absent(tmp_path):
    header = "JobIDRaw|Submit|Start|End|Elapsed|Timelimit|NCPUS"
    p = write(tmp_path, "5|2021-01-01T00:00:00|2021-01-01T00:00:00|2021-01-01T00:01:00|00:01:00|10|40", header=header)
    w = read_sacct(p, cores_per_node=16)
    assert list(w["nodes"]) == [3] and list(w["procs"]) == [40]
    assert w.repairs == {"nodes_rounded_up": 1}


def test_a_count_past_2_31_names_its_own_field_and_value(tmp_path):
    """AllocCPUS past 2^31 beside NNodes=2 was reported as "field 'NNodes': 2 is out of
    range": the wrong field and a value that is fine."""
    p = write(tmp_path, row(cpus="3000000000"))
    with pytest.raises(TraceFormatError) as err:
        read_sacct(p)
    assert (err.value.line, err.value.field) == (2, "AllocCPUS") and err.value.message.startswith("3000000000 is out of range")
    p = write(tmp_path, row(nnodes="3000000000"))
    with pytest.raises(TraceFormatError) as err:
        read_sacct(p)
    assert (err.value.line, err.value.field) == (2, "NNodes") and err.value.message.startswith("3000000000 is out of range")


def test_never_started_and_still_running(tmp_path):
    p = write(
        tmp_path,
        row(jobid="1"),
        row(jobid="2", start="Unknown", end="Unknown", elapsed="00:00:00", nodelist="None assigned", state="PENDING"),
        row(jobid="3", start="2021-01-01T00:00:09", end="2021-01-01T00:00:09", elapsed="00:00:00", nodelist="None assigned", state="CANCELLED by 5"),
        row(jobid="4", end="Unknown", elapsed="00:20:00", state="RUNNING"),
    )  # fmt: skip
    w = read_sacct(p)
    assert list(w["job_id"]) == [1]
    assert w.skipped == {"unknown_runtime": 3} and accounted(w)
    z = read_sacct(p, missing_runtime="zero")
    assert list(z["runtime_s"]) == [3600, 0, 0, 0]
    assert list(z.extra["logged_start_s"]) == [600, -1, -1, 600]
    # never-started jobs have no node count: their size comes from the CPUs (8 here)
    assert list(z["nodes"]) == [2, 8, 8, 2]


def test_multiline_record_with_pipes(tmp_path):
    header = HEADER + "|SubmitLine|WorkDir"
    p = write(
        tmp_path,
        row(jobid="1") + "|sbatch --wrap='a | b'|/home/a",
        row(jobid="2") + "|sbatch <<EOF\n#!/bin/sh\n\nsrun hostname\nEOF|/home/b",
        row(jobid="3", name="x|y") + "|sbatch c.sh|/home/c",
        header=header,
    )
    w = read_sacct(p)
    assert list(w["job_id"]) == [1, 2, 3]
    assert list(w["line"]) == [2, 3, 8]
    assert w.records == 3


def test_pipes_before_a_line_break_extend_the_record(tmp_path):
    # SubmitLine sits before typed columns (as in --format=ALL): its first line already
    # has more pieces than the header, the record cannot be split there, and is extended
    header = "JobIDRaw|Submit|SubmitLine|Start|End|Elapsed|Timelimit|NNodes"
    times = "2021-01-01T00:00:00|2021-01-01T00:01:00|00:01:00|10|1"
    p = write(
        tmp_path,
        f"1|2021-01-01T00:00:00|sbatch --wrap='a|b|c|d|e|f|g\nh | i'|{times}",
        f"2|2021-01-01T00:00:00|sbatch x.sh|{times}",
        header=header,
    )
    w = read_sacct(p)
    assert list(w["job_id"]) == [1, 2]
    assert list(w["line"]) == [2, 4]
    assert list(w["runtime_s"]) == [60, 60]


def test_pipes_before_a_line_break_in_trailing_text_is_refused(tmp_path):
    # When only text columns follow, a first line with enough '|' reads as a whole
    # record, and the rest of its text cannot be told from a cut-off record: refused,
    # and lenient reading loses no job.
    header = HEADER + "|SubmitLine|WorkDir"
    p = write(
        tmp_path,
        row(jobid="1", name="x|y") + "|sbatch <<EOF\n#!/bin/sh\nsrun a | sort\nEOF|/home/b",
        row(jobid="2") + "|sbatch c.sh|/home/c",
        header=header,
    )
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p)
    assert (info.value.line, info.value.field) == (3, None)
    assert info.value.message.startswith(
        "the record has only 3 of the 17 fields (lines 3-5), and line 6 starts the next record"
    )
    w = read_sacct(p, lenient=True)
    assert list(w["job_id"]) == [1, 2]
    assert w.skipped == {"malformed_line": 1} and w.records == 3


def test_cut_off_line_does_not_swallow_the_next_record(tmp_path):
    cut = row(jobid="2")[:40]
    p = write(tmp_path, row(jobid="1"), cut, row(jobid="3"))
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p)
    assert (info.value.line, info.value.field) == (3, None)
    assert info.value.message.startswith(
        f"the record has only {cut.count('|') + 1} of the 15 fields, and line 4 starts the next record"
    )
    w = read_sacct(p, lenient=True)
    assert list(w["job_id"]) == [1, 3]
    assert w.skipped == {"malformed_line": 1} and w.records == 3


def test_parsable_with_trailing_pipe(tmp_path):
    p = write(tmp_path, row(jobid="1") + "|", row(jobid="2") + "|", header=HEADER + "|")
    w = read_sacct(p)
    assert list(w["job_id"]) == [1, 2]


def test_gzip_crlf_and_blank_lines(tmp_path):
    text = HEADER + "\r\n" + row(jobid="1") + "\r\n\r\n" + row(jobid="2") + "\r\n"
    p = tmp_path / "log.gz"
    p.write_bytes(gzip.compress(text.encode()))
    w = read_sacct(p)
    assert list(w["job_id"]) == [1, 2]
    assert list(w["line"]) == [2, 4]
    assert w.extra["user"] == ["alice", "alice"]


def test_read_trace_dispatches(tmp_path):
    p = write(tmp_path, row())
    assert detect_format(p) == "sacct"
    w = read_trace(p, cores_per_node=4)
    assert w.format == "sacct" and w.settings["cores_per_node"] == 4


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("bad_row", "field", "message"),
    [
        (row(limit="abc"), "Timelimit", "expected a duration like 1-00:00:00, got 'abc'"),
        (row(nnodes="two"), "NNodes", "expected a whole number, got 'two'"),
        (row(cpus="8x"), "AllocCPUS", "expected a whole number, got '8x'"),
        (row(submit="2021-13-01T00:00:00"), "Submit", "expected a time like 2021-01-06T14:09:15, got '2021-13-01T00:00:00'"),
        (row(submit="Unknown"), "Submit", "expected a time like 2021-01-06T14:09:15, got 'Unknown'"),
        (row(start="soon"), "Start", "expected a time like 2021-01-06T14:09:15, got 'soon'"),
        (row(elapsed="1:2"), "Elapsed", "expected a duration like 1-00:00:00, got '1:2'"),
        (row(raw="12a"), "JobIDRaw", "expected an integer job id, got '12a'"),
        (row(nodelist="n[01-"), "NodeList", "bad host list 'n[01-': unbalanced brackets"),
        # a bad value in a record that also has a '|' inside JobName is still named
        (row(limit="abc", name="a|b"), "Timelimit", "expected a duration like 1-00:00:00, got 'abc'"),
    ],
)
def test_bad_value_strict_and_lenient(tmp_path, bad_row, field, message):
    p = write(tmp_path, row(jobid="1"), row(jobid="2"), bad_row, row(jobid="4"))
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p)
    err = info.value
    assert (err.path, err.line, err.field, err.message) == (str(p), 4, field, message)
    assert str(err) == f"{p}:4: field '{field}': {message} (--lenient skips and counts such records)"

    w = read_sacct(p, lenient=True)
    assert list(w["job_id"]) == [1, 2, 4]
    assert w.skipped == {"malformed_line": 1}
    assert w.records == 4 and accounted(w)
    assert w.settings["lenient_examples"] == [f"line 4: field {field}: {message}"]


def test_truncated_record_at_end(tmp_path):
    cut = row(jobid="3")[:40]
    p = write(tmp_path, row(jobid="1"), row(jobid="2"), cut)
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p)
    err = info.value
    assert (err.line, err.field) == (4, None)
    assert err.message == f"the file ends inside this record: it has {cut.count('|') + 1} of the 15 fields"
    w = read_sacct(p, lenient=True)
    assert len(w) == 2 and w.skipped == {"malformed_line": 1} and w.records == 3


def test_too_many_fields_without_text_columns(tmp_path):
    header = "JobIDRaw|Submit|Start|End|Elapsed|Timelimit|NNodes"
    good = "1|2021-01-01T00:00:00|2021-01-01T00:00:00|2021-01-01T00:01:00|00:01:00|10|1"
    p = write(tmp_path, good, good + "|extra", header=header)
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p)
    assert (info.value.line, info.value.field) == (3, None)
    assert info.value.message == "the record has 8 fields where the header has 7"


def test_short_line_joined_with_a_short_next_line(tmp_path):
    header = "JobIDRaw|Submit|Start|End|Elapsed|Timelimit|NNodes|JobName"
    good = "1|2021-01-01T00:00:00|2021-01-01T00:00:00|2021-01-01T00:01:00|00:01:00|10|1|a"
    # two cut lines that together have more fields than the header
    p = write(tmp_path, good, "2|2021-01-01T00:00:00|x", "2021|y|z|w|v|u|t", "3" + good[1:], header=header)
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p)
    assert (info.value.line, info.value.field) == (3, None)
    assert info.value.message.startswith("the record has 9 fields where the header has 8 (lines 3-4), and no way")
    w = read_sacct(p, lenient=True)
    assert w.skipped == {"malformed_line": 1} and len(w) == 2 and w.records == 3


def test_ambiguous_pipe_is_refused(tmp_path):
    # 'x|y' could be JobName='x|y', Partition... or JobName='x', Partition='y': the
    # Partition column sits between two text columns and has no shape to decide.
    header = "JobIDRaw|Submit|Start|End|Elapsed|Timelimit|NNodes|JobName|Partition|Comment"
    head = "1|2021-01-01T00:00:00|2021-01-01T00:00:00|2021-01-01T00:01:00|00:01:00|10|1"
    p = write(tmp_path, head + "|x|y|batch|", header=header)
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p)
    assert (info.value.line, info.value.field) == (2, "Partition")
    assert "could belong to more than one text field (JobName, Comment)" in info.value.message


def test_empty_file(tmp_path):
    p = tmp_path / "empty.log"
    p.write_text("")
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p)
    assert info.value.message == "no job records found (the file is empty)"
    assert info.value.line is None


def test_header_only(tmp_path):
    with pytest.raises(TraceFormatError, match="no job records found"):
        read_sacct(write(tmp_path))


def test_only_steps(tmp_path):
    with pytest.raises(TraceFormatError, match=r"all 2 records are job steps"):
        read_sacct(write(tmp_path, row(jobid="1.batch"), row(jobid="1.0")))


def test_missing_required_column(tmp_path):
    header = HEADER.replace("|Timelimit", "")
    p = write(tmp_path, header=header)
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p)
    assert (info.value.line, info.value.field) == (1, "Timelimit")
    assert info.value.message.startswith("the header has no Timelimit column")


def test_unrecognised_first_line(tmp_path):
    p = write(tmp_path, "foo|bar|baz", header=None)
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p)
    assert info.value.line == 1
    assert "neither a sacct header" in info.value.message


def test_lenient_keeps_five_examples(tmp_path):
    p = write(tmp_path, row(jobid="1"), *[row(jobid=str(i), limit="bad") for i in range(2, 10)])
    w = read_sacct(p, lenient=True)
    assert w.skipped == {"malformed_line": 8}
    assert len(w.settings["lenient_examples"]) == 5
    assert w.settings["lenient_examples"][0] == "line 3: field Timelimit: expected a duration like 1-00:00:00, got 'bad'"


def test_lenient_with_no_valid_job(tmp_path):
    p = write(tmp_path, row(limit="bad"), row(jobid="1.batch"))
    with pytest.raises(TraceFormatError) as info:
        read_sacct(p, lenient=True)
    assert info.value.message == (
        "no valid job records found (1 malformed; first: line 2: field Timelimit: expected a duration "
        "like 1-00:00:00, got 'bad')"
    )


def test_strict_reading_records_no_examples(tmp_path):
    w = read_sacct(write(tmp_path, row()))
    assert "lenient_examples" not in w.settings
    assert w.settings["layout"] == "header"
    assert read_sacct(write(tmp_path, row(), name="b.log"), lenient=True).settings["lenient_examples"] == []


def test_bad_settings_fail_before_reading(tmp_path):
    with pytest.raises(ValueError, match="cores_per_node"):
        read_sacct(tmp_path / "missing.log", cores_per_node=0)


def test_switches_are_read_from_the_submit_line(tmp_path):
    header = "JobIDRaw|Submit|Start|End|Elapsed|Timelimit|NNodes|SubmitLine"
    row = "{}|2021-01-01T00:00:00|2021-01-01T00:00:00|2021-01-01T00:01:00|00:01:00|10|4|{}"
    p = write(
        tmp_path,
        row.format(1, "sbatch --switches=1@10:00 run.sh"),
        row.format(2, "sbatch --switches 2 -N 4 run.sh"),
        row.format(3, "sbatch -N 4 run.sh"),
        header=header,
    )
    w = read_sacct(p)
    assert w.extra["max_leaves"].tolist() == [1, 2, 0]
    assert w.extra["switch_wait_s"].tolist() == [600, 300, 0]
    # and the engine honours them (toposched.simulate reads these columns)
    from toposched.simulate import _switch_columns, RunConfig

    cols = _switch_columns(w, RunConfig())
    assert cols["max_leaves"].tolist() == [1, 2, 0]


def test_repeated_job_ids_are_counted(tmp_path):
    """The same record again is a duplicate_record (left out); another job with an id
    already read (ids wrap, a database reset, two dumps put together) is kept and counted
    as repair duplicate_job_id, as the SWF and PBS readers do; array tasks are not
    repeats (JobID tells them apart even where JobIDRaw does not)."""
    p = write(
        tmp_path,
        row("100"),
        row("100"),
        row("100", submit="2021-02-01T00:00:00", start="2021-02-01T00:10:00", end="2021-02-01T01:10:00"),
        row("200_1", raw="200", submit="2021-03-01T00:00:00", start="2021-03-01T00:10:00", end="2021-03-01T01:10:00"),
        row("200_2", raw="200", submit="2021-03-01T00:00:00", start="2021-03-01T00:10:00", end="2021-03-01T01:10:00"),
    )
    w = read_sacct(p)
    assert (w.records, len(w), w.skipped) == (5, 4, {"duplicate_record": 1})
    assert w.repairs == {"duplicate_job_id": 1}
    assert accounted(w)


@pytest.mark.parametrize(
    ("sep", "said"),
    [(",", "','"), (";", "';'"), ("\t", "tabs"), (" ", "blanks")],
)
def test_a_dump_with_another_delimiter_names_the_fix(tmp_path, sep, said):
    """A dump written with `sacct --delimiter=,` (or sacct's own fixed-width table, without
    -P) is named for what it is, with the sacct option that writes a readable one, both
    read as sacct and when the format is guessed: not "neither a sacct header" or
    "cannot tell the log's format; pass --format", which send a user to the wrong fix."""
    fields = HEADER.split("|")
    if sep == " ":
        lines = ["  ".join(f"{f:>12}" for f in fields), "  ".join("-" * 12 for _ in fields), "  ".join(f"{v:>12}" for v in row().split("|"))]
    else:
        lines = [sep.join(fields), row().replace("|", sep)]
    p = write(tmp_path, *lines, header=None)
    for read in (read_sacct, read_trace):
        with pytest.raises(TraceFormatError) as info:
            read(p)
        assert info.value.line == 1, read
        assert f"separated by {said}, not '|'" in info.value.message, info.value.message
        assert "sacct --parsable2" in info.value.message

"""Tests of the PBS/Torque and PBS Pro accounting reader (toposched.workload.pbs): the
shipped sample (tests/data/pbs) parses fully, every attribute form it holds, duplicates, errors, lenient."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from toposched.errors import TraceFormatError
from toposched.workload import detect_format, read_trace
from toposched.workload.pbs import (
    parse_exec_host,
    parse_exec_vnode,
    parse_pbs_duration,
    parse_resource_spec,
    read_pbs,
)

from conftest import PBS_SAMPLE as SAMPLE


def by_id(w) -> dict[int, int]:
    return {int(j): i for i, j in enumerate(w["job_id"])}


# --------------------------------------------------------------------------- the sample


def test_sample_parses_fully() -> None:
    w = read_pbs(SAMPLE)
    # 9 E records: 8 jobs and the repeat of job 6 (once "6.edge.ccr.buffalo.edu", once "6")
    assert w.records == 9
    assert len(w) == 8
    assert w.skipped == {"duplicate_record": 1}
    assert len(w) + sum(w.skipped.values()) == w.records
    assert w.format == "pbs"
    assert w.settings["record_types_ignored"] == {}
    assert w.time_origin_epoch_s == 1261424924  # qtime of job 6
    assert sorted(w["job_id"].tolist()) == [6, 2994, 2995, 7904, 10711, 10712, 3073070, 6464684]
    # the kept copy of job 6 is the first one, with the full host name in its id
    assert w.extra["log_job_id"][by_id(w)[6]] == "6.edge.ccr.buffalo.edu"
    assert w.repairs == {
        "submit_from_ctime": 1,  # job 7904 has no qtime
        "runtime_from_end_minus_start": 2,  # 7904 and 10712 have no resources_used.walltime
        "nodect_read_as_nodes_spec": 1,  # 10711: nodect=1:ppn=24:gpu=4:...
        "walltime_from_runtime": 1,  # 10711 has no Resource_List.walltime
    }


def test_sample_values() -> None:
    w = read_pbs(SAMPLE)
    r = by_id(w)
    hosts = w.extra["logged_hosts"]
    origin = w.time_origin_epoch_s

    # Torque, one exec_host entry per core: 4 distinct hosts in order of appearance
    i = r[6]
    assert hosts[i] == ["i02n33", "i02n32", "i02n31", "i02n30"]
    assert (w["nodes"][i], w["procs"][i], w["walltime_s"][i], w["runtime_s"][i]) == (4, 32, 4 * 3600, 36 * 60 + 37)
    assert w["submit_s"][i] == 0 and w.extra["logged_start_s"][i] == 1261425023 - origin
    assert w.extra["logged_nodelist"][i].startswith("i02n33/7+i02n33/6+")
    assert w.extra["queue"][i] == "ccr" and w.extra["user"][i] == "jonesm" and w.extra["exit_status"][i] == "0"

    # Torque 2014: 4 cores of one node
    i = r[6464684]
    assert hosts[i] == ["n404"] and w["nodes"][i] == 1 and w["procs"][i] == 4

    # PBS Pro: c1/0*13+... with exec_vnode and select=5:ncpus=13
    i = r[2994]
    assert hosts[i] == ["c1", "c2", "c3", "c4", "c5"]
    assert (w["nodes"][i], w["procs"][i], w["walltime_s"][i], w["runtime_s"][i]) == (5, 65, 163, 0)

    # PBS Pro ranges: c1/0-3+c2/0-7
    i = r[2995]
    assert hosts[i] == ["c1", "c2"] and w["nodes"][i] == 2 and w["procs"][i] == 12

    # no qtime (ctime used), no exec_host, no resources_used.walltime (end - start)
    i = r[7904]
    assert hosts[i] == [] and w.extra["logged_nodelist"][i] == ""
    assert w["submit_s"][i] == 1485451423 - origin
    assert w["runtime_s"][i] == 1485459831 - 1485451424
    assert w["walltime_s"][i] == 96 * 3600 and w["nodes"][i] == 1

    # nodect holding a nodes spec; exec_host range node0703/0-27
    i = r[10711]
    assert hosts[i] == ["node0703"] and w["nodes"][i] == 1 and w["procs"][i] == 28
    assert w["runtime_s"][i] == 2 * 3600 + 20 * 60 + 7 == w["walltime_s"][i]
    assert w.extra["logged_end_s"][i] == 1588146353 - origin

    # anonymised PBS Pro host with brackets; exec_vnode with two vnodes in one chunk
    i = r[3073070]
    assert hosts[i] == ["[hostname_2]"] and w["nodes"][i] == 1 and w["procs"][i] == 48
    assert w["runtime_s"][i] == 10 * 3600 + 66 and w["walltime_s"][i] == 10 * 3600


def test_id_columns_name_user_account_and_queue() -> None:
    """user_id / account_id / partition_id name each job's user, account and queue (as the
    record's attributes give them, read here with a plain regex over the file), by id in
    Workload.names; PBS has no QOS; the group is not taken for an account."""
    w = read_pbs(SAMPLE)
    want: dict[int, dict[str, str]] = {}
    for line in SAMPLE.read_text().splitlines():
        parts = line.split(";", 3)
        if len(parts) == 4 and parts[1] == "E":
            num = int(parts[2].split(".")[0].split("[")[0])
            attrs = dict(re.findall(r"(?:^| )(user|account|queue)=(\S*)", parts[3]))
            want.setdefault(num, attrs)  # the first of duplicate records is kept
    assert len(want) == len(w)
    for i, job in enumerate(w["job_id"].tolist()):
        for column, attr in (("user_id", "user"), ("account_id", "account"), ("partition_id", "queue")):
            k = int(w.columns[column][i])
            got = w.names[column][k] if k >= 0 else ""
            assert got == want[job].get(attr, ""), (job, column)
    assert (w.columns["qos_id"] == -1).all() and "qos_id" not in w.names
    assert (w.columns["account_id"] >= 0).any() and (w.columns["account_id"] == -1).any()


def test_sample_detected_and_read_through_read_trace() -> None:
    assert detect_format(SAMPLE) == "pbs"
    w = read_trace(SAMPLE)
    assert w.format == "pbs" and len(w) == 8


# --------------------------------------------------------------------------- value parsers


@pytest.mark.parametrize(
    "text, hosts, slots",
    [
        ("i02n33/7+i02n33/6+i02n32/7", ["i02n33", "i02n32"], 3),
        ("c1/0*13+c2/0*13", ["c1", "c2"], 26),
        ("c1/0-3+c2/0-7", ["c1", "c2"], 12),
        ("n1/0,2,4-5", ["n1"], 4),
        ("n2+n1+n2", ["n2", "n1"], 3),
        ("node01.cluster.org/0", ["node01.cluster.org"], 1),
    ],
)
def test_parse_exec_host(text: str, hosts: list[str], slots: int) -> None:
    assert parse_exec_host(text) == (hosts, slots)


@pytest.mark.parametrize("text", ["/0", "n1/x", "n1/3-1", "n1/0*", "n1+"])
def test_parse_exec_host_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_exec_host(text)


def test_parse_exec_vnode() -> None:
    assert parse_exec_vnode("(c1:ncpus=13)+(c2:ncpus=13)") == (["c1", "c2"], 26)
    # two vnodes of one host in one chunk: host[1] and host[0] are vnodes of host
    assert parse_exec_vnode("(h[1]:mem=1kb:ncpus=24+h[0]:ngpus=2:ncpus=24)+(g:ncpus=1)") == (["h", "g"], 49)
    with pytest.raises(ValueError):
        parse_exec_vnode("(c1:ncpus=x)")


def test_parse_resource_spec() -> None:
    assert parse_resource_spec("4:ppn=8", "ppn") == (4, 32)
    assert parse_resource_spec("1:ppn=28:gpus=1:default", "ppn") == (1, 28)
    assert parse_resource_spec("n1:ppn=2+n2", "ppn") == (2, 3)
    assert parse_resource_spec("5:ncpus=13", "ncpus") == (5, 65)
    assert parse_resource_spec("2:ncpus=4+ncpus=8:mem=2gb", "ncpus") == (3, 16)
    with pytest.raises(ValueError):
        parse_resource_spec("2:ppn=x", "ppn")


def test_parse_pbs_duration() -> None:
    assert parse_pbs_duration("04:00:00") == 14400
    assert parse_pbs_duration("144:00:00") == 144 * 3600
    assert parse_pbs_duration("1:02:00:00") == 26 * 3600
    assert parse_pbs_duration("90") == 90
    assert parse_pbs_duration("01:30") == 90
    for bad in ("", "1:2:3:4:5", "00:61:00", "1h", "00:00:60"):
        with pytest.raises(ValueError):
            parse_pbs_duration(bad)


# --------------------------------------------------------------------------- small files

E = "01/26/2016 00:00:37;E;{id};queue=q qtime={q} start={s} end={e} exec_host={h} Resource_List.walltime=01:00:00 resources_used.walltime={u}"


def write(tmp_path: Path, lines: list[str], name: str = "acct.log") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def rec(id: str = "1.srv", q: int = 100, s: int = 200, e: int = 300, h: str = "n1/0+n2/0", u: str = "00:01:40") -> str:
    return E.format(id=id, q=q, s=s, e=e, h=h, u=u)


def test_other_record_types_are_counted_not_read(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        [
            "01/26/2016 00:00:01;Q;1.srv;queue=q",
            "01/26/2016 00:00:02;S;1.srv;user=u start=200 exec_host=n1/0",
            "",
            rec(),
            "01/26/2016 00:00:03;D;2.srv;requestor=root@srv",
        ],
    )
    w = read_pbs(p)
    assert (len(w), w.records, w.skipped) == (1, 1, {})
    assert w.settings["record_types_ignored"] == {"D": 1, "Q": 1, "S": 1}
    assert w.extra["logged_hosts"] == [["n1", "n2"]]
    assert w["line"].tolist() == [4]


def test_duplicates_need_same_times(tmp_path: Path) -> None:
    p = write(tmp_path, [rec("7.srv"), rec("7"), rec("7.other", e=301), rec("7[1].srv"), rec("8")])
    w = read_pbs(p)
    # "7" repeats "7.srv"; "7.other" ends at another time; "7[1]" is an array task
    assert w.skipped == {"duplicate_record": 1}
    assert w["job_id"].tolist() == [7, 7, 7, 8]
    assert w.extra["log_job_id"] == ["7.srv", "7.other", "7[1].srv", "8"]
    # "7.other" is another job numbered 7 (numbers wrap, servers restart): kept, counted;
    # the array task 7[1] has a number of its own
    assert w.repairs.get("duplicate_job_id") == 1


def test_job_that_never_started(tmp_path: Path) -> None:
    line = "01/26/2016 00:00:37;E;3.srv;queue=q qtime=100 Resource_List.walltime=01:00:00 Resource_List.nodect=2"
    p = write(tmp_path, [rec(), line, line.replace("3.srv", "4.srv") + " start=0 end=150"])
    w = read_pbs(p)
    assert w.skipped == {"unknown_runtime": 2}  # no start / PBS Pro's start=0
    w = read_pbs(p, missing_runtime="zero")
    assert len(w) == 3 and w.extra["logged_hosts"][1:] == [[], []]
    assert w.extra["logged_start_s"].tolist() == [100, -1, -1]
    assert w["nodes"].tolist() == [2, 2, 2]


def test_hosts_win_over_the_request(tmp_path: Path) -> None:
    # PBS Pro place=pack: select=2 chunks on one host
    line = rec(h="c1/0*4+c1/1*4") + " Resource_List.select=2:ncpus=4 Resource_List.nodect=2"
    w = read_pbs(write(tmp_path, [line]))
    assert w["nodes"].tolist() == [1] and w["procs"].tolist() == [8]
    assert w.repairs["nodes_from_exec_host"] == 1


def test_exec_vnode_when_there_is_no_exec_host(tmp_path: Path) -> None:
    line = rec().replace("exec_host=n1/0+n2/0", "exec_vnode=(a[0]:ncpus=2+a[1]:ncpus=2)+(b:ncpus=4)")
    w = read_pbs(write(tmp_path, [line]))
    assert w.extra["logged_hosts"] == [["a", "b"]] and w["procs"].tolist() == [8]


def test_values_with_blanks_and_quotes(tmp_path: Path) -> None:
    line = rec() + ' jobname="my job name" Resource_List.feature=a b'
    w = read_pbs(write(tmp_path, [line]))
    assert len(w) == 1 and w.extra["logged_hosts"] == [["n1", "n2"]]


def test_gzip(tmp_path: Path) -> None:
    p = tmp_path / "acct.gz"
    p.write_bytes(gzip.compress((rec() + "\n").encode()))
    assert len(read_pbs(p)) == 1


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "line, field, words",
    [
        (rec().replace("Resource_List.walltime=01:00:00", "Resource_List.walltime=1h"), "Resource_List.walltime", "duration"),
        (rec(u="abc"), "resources_used.walltime", "duration"),
        (rec().replace("qtime=100", "qtime=yesterday"), "qtime", "Unix seconds"),
        (rec().replace("start=200", "start=2x"), "start", "Unix seconds"),
        (rec(h="n1/x"), "exec_host", "bad host list"),
        (rec(id="abc.srv"), "job_id", "job id"),
        (rec() + " Resource_List.nodect=two", "Resource_List.nodect", "whole number"),
        (rec() + " Resource_List.nodes=2:ppn=x", "Resource_List.nodes", "ppn"),
        (rec() + " Resource_List.select=2:ncpus=x", "Resource_List.select", "ncpus"),
        (rec().replace("01/26/2016 00:00:37", "13/26/2016 00:00:37"), "datetime", "bad record time"),
    ],
)
def test_errors_name_line_and_field(tmp_path: Path, line: str, field: str, words: str) -> None:
    p = write(tmp_path, [rec("1"), line])
    with pytest.raises(TraceFormatError) as ei:
        read_pbs(p)
    e = ei.value
    assert (e.path, e.line, e.field) == (str(p), 2, field)
    assert words in e.message
    assert str(e).startswith(f"{p}:2: field '{field}': ")
    # lenient: the record is skipped and counted, the message kept
    w = read_pbs(p, lenient=True)
    assert len(w) == 1 and w.skipped == {"malformed_line": 1} and w.records == 2
    assert w.settings["lenient_examples"][0].startswith(f"line 2: field {field}: ")


def test_a_line_that_is_not_pbs(tmp_path: Path) -> None:
    p = write(tmp_path, [rec("1"), "this is not an accounting line", rec("2")])
    with pytest.raises(TraceFormatError, match=r":2: expected a PBS accounting line"):
        read_pbs(p)
    w = read_pbs(p, lenient=True)
    assert (len(w), w.records, w.skipped) == (2, 3, {"malformed_line": 1})


def test_whole_file_problems(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file"):
        read_pbs(tmp_path / "missing.log")
    with pytest.raises(TraceFormatError, match=r"no E \(job end\) records \(the file is empty\)"):
        read_pbs(write(tmp_path, [""], "empty.log"))
    with pytest.raises(TraceFormatError, match=r"only Q=1"):
        read_pbs(write(tmp_path, ["01/26/2016 00:00:01;Q;1.srv;queue=q"], "q.log"))
    with pytest.raises(TraceFormatError, match="no valid job records found"):
        read_pbs(write(tmp_path, [rec(u="x")], "bad.log"), lenient=True)


def test_options_are_checked_before_reading(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="missing_runtime"):
        read_pbs(tmp_path / "missing.log", missing_runtime="drop")  # type: ignore[arg-type]


def test_columns_are_int64_and_sorted(tmp_path: Path) -> None:
    p = write(tmp_path, [rec("2", q=500, s=600, e=700), rec("1", q=100)])
    w = read_pbs(p)
    assert w["job_id"].tolist() == [1, 2]
    assert w.repairs == {"submit_unsorted": 1}
    assert all(w[c].dtype == np.int64 for c in w.columns)
    assert w.extra["logged_start_s"].tolist() == [100, 500]


# ---------------------------------------------------------------- the message's pairs


def _pairs_by_hand(message: str) -> dict[str, str]:
    """An independent statement of the rule for a message without quotes: walk the words;
    one with '=' and a non-empty key opens a pair, any other continues the last value."""
    out: dict[str, str] = {}
    order: list[str] = []
    for word in message.split():
        if "=" in word and not word.startswith("="):
            key = word[: word.index("=")]
            out[key] = word[word.index("=") + 1 :]
            order.append(key)
        elif order:
            out[order[-1]] += " " + word
    return out


def test_split_message_matches_the_rule_by_hand() -> None:
    """``_split_message`` takes one dict() call for the usual record and the general walk
    otherwise: both agree with the rule written out independently, on random messages of
    words with and without '=' (empty keys, empty values, '=' inside values, blank runs)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from toposched.workload.pbs import _split_message

    word = st.text(alphabet="ab=.:-x1 \t", min_size=0, max_size=8)

    @settings(max_examples=400, deadline=None)
    @given(st.lists(word, max_size=8))
    def check(words: list[str]) -> None:
        message = " ".join(words)
        assert _split_message(message) == _pairs_by_hand(message)

    check()
    assert _split_message("user=a Resource_List.neednodes=1:ppn=4 jobname=x y=") == {
        "user": "a", "Resource_List.neednodes": "1:ppn=4", "jobname": "x", "y": ""}
    assert _split_message("jobname=my job user=a") == {"jobname": "my job", "user": "a"}
    assert _split_message('jobname="a b c" user=u') == {"jobname": "a b c", "user": "u"}

"""A job's application for sacct and PBS logs: its name (sacct ``JobName``, PBS ``jobname``),
kept as ``extra["app"]`` codes with their names in ``Workload.names["app"]``, which a
site's ``--network`` rule on ``app`` matches by name (docs/network.md, "A site's own mix").

The references here read the raw text with plain string splitting: sacct records are
split at every '|' and the name is found between two anchors (the job id pair before it,
the Start and Submit times after it), not by the reader's splitting of records; PBS
``E`` records are split at ';' and blanks."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import PBS_SAMPLE, SLURM
from toposched.cli import main
from toposched.workload import read_trace
from toposched.workload.sacct import read_sacct
from toposched.workload.sacct_records import FREE, split_positions

SACCT_LOGS = sorted(p.name for p in SLURM.glob("*.log"))
DUMP2101 = "ubccr_ub-hpc_sacct-P-all_dump2101.log"
JOBID = re.compile(r"\d+(_\S+)?(\.\w+)?")  # 123, 123_4, 123_[1-3], 123.batch
JOBIDRAW = re.compile(r"\d+(\.\w+)?")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|Unknown|None")
XDMOD_NAME_FIELD = 25  # Open XDMoD's shredder layout: JobName is the 26th and last field


class RawRecord:
    """One record of a sacct log as read here: where it starts, its JobID, its name."""

    def __init__(self, line: int, jobid: str, name: str) -> None:
        self.line, self.jobid, self.name = line, jobid, name

    @property
    def is_step(self) -> bool:
        return "." in self.jobid


def _sacct_records_by_hand(path: Path) -> list[RawRecord]:
    """Every complete record of a sacct log (steps included), read with split('|').

    A record goes on to the next line while it has fewer fields than the header; one that
    never gets them (a cut-off record at the end) is no record. With more fields than the
    header, the extra '|' lie in text columns: the job id pair (JobID and JobIDRaw, each
    looking like one) fixes how many lie before the name, the Start and Submit times how many
    lie inside it (the --format=ALL dumps have no other text column between the two)."""
    lines = path.read_text().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    first = lines[0].split("|")
    xdmod = len(first) >= 26 and first[1].strip().isdigit()
    if xdmod:
        n_col, start_at = 26, 0
    else:
        header = [h.strip().lower() for h in first]
        n_col, start_at = len(header), 1
        at = {h: header.index(h) for h in ("jobid", "jobidraw", "jobname", "start", "submit")}
    out = []
    i = start_at
    while i < len(lines):
        first_line = i + 1
        text = lines[i]
        while text.count("|") + 1 < n_col and i + 1 < len(lines):
            i += 1
            text += "\n" + lines[i]
        i += 1
        pieces = text.split("|")
        if len(pieces) < n_col:
            continue  # cut off
        if xdmod:
            out.append(RawRecord(first_line, pieces[0].strip(), "|".join(pieces[XDMOD_NAME_FIELD:]).strip()))
            continue
        extra = len(pieces) - n_col
        before = next(s for s in range(extra + 1)
                      if JOBID.fullmatch(pieces[at["jobid"] + s]) and JOBIDRAW.fullmatch(pieces[at["jobidraw"] + s]))  # fmt: skip
        inside = next(e for e in range(extra - before + 1)
                      if TIME.fullmatch(pieces[at["start"] + before + e]) and TIME.fullmatch(pieces[at["submit"] + before + e]))  # fmt: skip
        first_piece = at["jobname"] + before
        name = "|".join(pieces[first_piece : first_piece + 1 + inside])
        out.append(RawRecord(first_line, pieces[at["jobid"] + before].strip(), name.strip()))
    return out


def _pbs_names_by_hand(path: Path) -> dict[int, str]:
    """The jobname= of every E record of a PBS log, by line."""
    out = {}
    for n, text in enumerate(path.read_text().split("\n"), 1):
        parts = text.split(";", 3)
        if len(parts) == 4 and parts[1] == "E":
            names = [w[len("jobname="):] for w in parts[3].split() if w.startswith("jobname=")]
            out[n] = names[0] if names else ""
    return out


def _distinct(names) -> list[str]:
    return list(dict.fromkeys(n for n in names if n))


def _app_names(w) -> list[str]:
    """Each job's application name as the reader gives it ("" for -1)."""
    return [w.names["app"][k] if k >= 0 else "" for k in w.extra["app"].tolist()]


# ----------------------------------------------------------------------------- readers


@pytest.mark.parametrize("name", SACCT_LOGS)
def test_sacct_app_is_the_jobname_read_by_hand(name):
    """Every job's application is its record's JobName; the names are the distinct names
    of the job records (steps give none; of a repeated record, the first), in file order."""
    path = SLURM / name
    w = read_sacct(path, lenient=True)
    raw = _sacct_records_by_hand(path)
    by_line = {r.line: r for r in raw}
    assert _app_names(w) == [by_line[int(n)].name for n in w["line"]]
    first_of_job: dict[str, RawRecord] = {}
    for r in raw:
        if not r.is_step:
            first_of_job.setdefault(r.jobid, r)
    assert w.names["app"] == _distinct(r.name for r in first_of_job.values())
    assert "jobname_not_located" not in w.settings
    # the reader keeps app through its sort by submit: codes and lines move together
    assert len(w.extra["app"]) == len(w) and w.extra["app"].dtype == np.int64


def test_step_records_create_no_names():
    """The multi-line dump's steps are named batch, extern, bash, iozone: none is a job's
    name, and none appears."""
    path = SLURM / "ubccr_ub-hpc_sacct-P-all_submitline_multiline.log"
    raw = _sacct_records_by_hand(path)
    step_only = {r.name for r in raw if r.is_step} - {r.name for r in raw if not r.is_step}
    assert {"batch", "extern", "bash", "iozone"} <= step_only
    assert not step_only & set(read_trace(path).names["app"])


def test_names_with_pipes_are_whole_and_repeats_give_none():
    """dump2101 names jobs 'Job| Name003' and 'Jo| bNa| me003' (and puts '|' in Constraints
    too): each name whole; dump2110 prints job 7957382 five times, named 'qlogin' first and
    'qlo|gin' later: one job, one name."""
    w = read_sacct(SLURM / DUMP2101, lenient=True)
    assert {"Job| Name003", "Job| Name |003", "Jo| bNa| me003"} <= set(_app_names(w))
    w = read_trace(SLURM / "ubccr_ub-hpc_sacct-P-all_dump2110.log")
    assert w.names["app"] == ["qlogin"] and _app_names(w) == ["qlogin"]


def test_pbs_app_is_the_jobname_read_by_hand():
    w = read_trace(PBS_SAMPLE)
    raw = _pbs_names_by_hand(PBS_SAMPLE)
    assert _app_names(w) == [raw[int(n)] for n in w["line"]]
    assert w.names["app"] == _distinct(raw.values())
    assert len(w.names["app"]) >= 5  # the sample names six applications


def test_no_jobname_column_or_empty_names_are_unknown(tmp_path):
    header = "JobIDRaw|Submit|Start|End|Elapsed|Timelimit|NNodes"
    body = ["1|2021-01-01T00:00:00|2021-01-01T00:00:00|2021-01-01T00:01:00|00:01:00|10|1"]
    p = tmp_path / "noname.log"
    p.write_text("\n".join([header, *body]) + "\n")
    w = read_sacct(p)
    assert w.extra["app"].tolist() == [-1] and w.names["app"] == []
    # an empty (or blank) name is unknown; a header naming JobName twice gives no names
    p.write_text(f"{header}|JobName\n{body[0]}|lammps\n2{body[0][1:]}| \n")
    w = read_sacct(p)
    assert w.extra["app"].tolist() == [0, -1] and w.names["app"] == ["lammps"]
    p.write_text(f"{header}|JobName|JobName\n{body[0]}|lammps|vasp\n")
    assert read_sacct(p).extra["app"].tolist() == [-1]
    q = tmp_path / "pbs.log"
    q.write_text("01/01/2021 00:10:00;E;1.srv;user=a queue=q qtime=1609459200 start=1609459200 end=1609459260 "
                 "Resource_List.walltime=00:10:00 resources_used.walltime=00:01:00 exec_host=n1/0\n")  # fmt: skip
    w = read_trace(q)
    assert w.format == "pbs" and w.extra["app"].tolist() == [-1] and w.names["app"] == []


def test_a_name_in_doubt_is_unknown_and_counted(tmp_path):
    """'x|y|' with JobName followed by Comment: JobName 'x' (Comment 'y|') or 'x|y'
    (Comment ''): the record is read, its application unknown and counted."""
    header = "JobIDRaw|Submit|Start|End|Elapsed|Timelimit|NNodes|JobName|Comment"
    head = "|2021-01-01T00:00:00|2021-01-01T00:00:00|2021-01-01T00:01:00|00:01:00|10|1"
    p = tmp_path / "doubt.log"
    p.write_text(f"{header}\n1{head}|x|y|\n2{head}|x|y\n3{head}|x|\n")
    w = read_sacct(p)
    assert w["job_id"].tolist() == [1, 2, 3]
    assert _app_names(w) == ["", "x", "x"] and w.settings["jobname_not_located"] == 1


# ----------------------------------------------------------------------------- property


_NAME = st.text(alphabet="ab |-_.9", min_size=0, max_size=8)


@settings(max_examples=200, deadline=None)
@given(jobs=st.lists(st.tuples(_NAME, st.lists(_NAME, max_size=3)), min_size=1, max_size=12))
def test_names_round_trip_property(tmp_path_factory, jobs):
    """Any job names (with '|', blanks, empty) and any step names, JobName the log's only
    text column: names[codes[i]] is job i's name, stripped (-1 for a blank one); the
    names are the distinct job names in file order; a step's name appears only when a job
    has it too."""
    header = "JobID|JobIDRaw|Submit|Start|End|Elapsed|Timelimit|NNodes|JobName"
    lines = [header]
    for k, (name, steps) in enumerate(jobs):
        times = f"2021-01-01T00:{k:02d}:00|2021-01-01T00:{k:02d}:00|2021-01-01T01:{k:02d}:00|01:00:00|02:00:00|1"
        lines.append(f"{k}|{k}|{times}|{name}")
        lines.extend(f"{k}.{s}|{k}.{s}|{times}|{step}" for s, step in enumerate(steps))
    p = tmp_path_factory.mktemp("names") / "log.txt"
    p.write_text("\n".join(lines) + "\n")
    w = read_sacct(p)
    want = {k: name.strip() for k, (name, _) in enumerate(jobs)}
    assert _app_names(w) == [want[int(j)] for j in w["job_id"]]
    assert w.names["app"] == _distinct(want.values())
    assert "jobname_not_located" not in w.settings


def _spans_by_enumeration(tokens, kinds, c):
    """Every (first, end) span column ``c`` (free text) takes over all valid splits,
    found by trying every split: typed columns one piece of their shape, text columns
    one piece or more."""
    free = [i for i, k in enumerate(kinds) if k is FREE]
    spare = len(tokens) - len(kinds)
    found = set()
    if spare < 0:
        return found
    for extra in itertools.product(range(spare + 1), repeat=len(free)):
        if sum(extra) != spare:
            continue
        width = [1] * len(kinds)
        for i, e in zip(free, extra):
            width[i] += e
        at, ok, span = 0, True, None
        for col, n in enumerate(width):
            if kinds[col] is not FREE:
                k = kinds[col]
                piece = tokens[at]
                ok = ("\n" not in piece) if k is None else k.fullmatch(piece) is not None
            if col == c:
                span = (at, at + n)
            if not ok:
                break
            at += n
        if ok:
            found.add(span)
    return found


@settings(max_examples=300, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["free", "int", "any"]), min_size=1, max_size=6),
    tokens=st.lists(st.sampled_from(["", "7", "x", "12"]), min_size=1, max_size=8),
)
def test_text_spans_match_an_enumeration_of_every_split_property(kinds, tokens):
    """split_positions' spans of each text column are those of every valid split, listed
    by brute force (at most two are kept: located, or in doubt)."""
    compiled = [FREE if k == "free" else (re.compile(r"\d+") if k == "int" else None) for k in kinds]
    text = [i for i, k in enumerate(compiled) if k is FREE]
    got = split_positions(tokens, compiled, [], text)
    for c in text:
        every = _spans_by_enumeration(tokens, compiled, c)
        if got is None:
            assert not every
            continue
        spans = got[1][c]
        assert len(spans) == min(2, len(every)) and set(spans) <= every


# ----------------------------------------------------------------------------- replays


def _rules_csv(tmp_path: Path, apps: list[str]) -> Path:
    """One rule per application name, then a catch-all."""
    f = tmp_path / "mix.csv"
    rows = ["app,pattern,comm_fraction"] + [f'"{a}",pairs,0.3' for a in apps] + [",stencil3d,0.3"]
    f.write_text("\n".join(rows) + "\n")
    return f


def _replay(tmp_path: Path, trace: Path, mix: Path, *extra: str) -> tuple[dict, dict]:
    out = tmp_path / "run"
    status = main(["simulate", "--trace", str(trace), "--system", "cab", "--out", str(out), "--network", str(mix), "--quiet", *extra])
    assert status == 0
    return pq.read_table(out / "jobs.parquet").to_pydict(), json.loads((out / "summary.json").read_text())["network"]


def _counts_by_hand(names: list[str], apps: list[str]) -> list[int]:
    """Jobs each rule takes: the first rule naming the job's name, else the catch-all."""
    rule = [apps.index(n) if n in apps else len(apps) for n in names]
    return np.bincount(rule, minlength=len(apps) + 1).tolist()


def test_a_sacct_replay_takes_the_jobs_of_each_name(tmp_path):
    """dump2101's replayed jobs: each rule on app takes the jobs with that name, as read
    by hand; a name absent from the log (or held only by jobs left out) takes none."""
    path = SLURM / DUMP2101
    apps = ["JobName003", "Job| Name003", "JobName001", "nosuch"]
    jobs, net = _replay(tmp_path, path, _rules_csv(tmp_path, apps), "--lenient")
    raw = {int(r.jobid): r.name for r in _sacct_records_by_hand(path) if not r.is_step}
    names = [raw[j] for j in jobs["job_id"]]
    assert [b["jobs"] for b in net["bins"]] == _counts_by_hand(names, apps)
    assert [b["jobs"] for b in net["bins"]][:4] == [2, 1, 0, 0]  # JobName001's jobs never ran: left out
    assert [b["app"] for b in net["bins"][:4]] == apps
    assert all(b["max_nodes"] is None for b in net["bins"])


def test_a_pbs_replay_takes_the_jobs_of_each_name(tmp_path):
    apps = ["anonjob", "test-gpu-job-2", "impi-hybrid", "lammps"]
    jobs, net = _replay(tmp_path, PBS_SAMPLE, _rules_csv(tmp_path, apps))
    w = read_trace(PBS_SAMPLE)
    raw = _pbs_names_by_hand(PBS_SAMPLE)
    line_of = {int(j): int(n) for j, n in zip(w["job_id"], w["line"])}
    names = [raw[line_of[j]] for j in jobs["job_id"]]
    counts = [b["jobs"] for b in net["bins"]]
    assert counts == _counts_by_hand(names, apps)
    assert counts[0] >= 2 and counts[3] == 0 and sum(counts) == len(jobs["job_id"])


def test_a_rule_on_app_without_names_is_one_line_per_format(tmp_path, capsys):
    """No JobName column: the error names sacct's JobName column (test_network_spec.py's
    BAD table has SWF's, field 14)."""
    header = "JobIDRaw|Submit|Start|End|Elapsed|Timelimit|NNodes"
    log = tmp_path / "noname.log"
    log.write_text(f"{header}\n1|2021-01-01T00:00:00|2021-01-01T00:00:00|2021-01-01T00:01:00|00:01:00|10|1\n")
    mix = _rules_csv(tmp_path, ["lammps"])
    status = main(["simulate", "--trace", str(log), "--system", "cab", "--out", str(tmp_path / "o"), "--network", str(mix), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert f"{mix}:2: field 'app'" in err[0] and "has no app: the job name, sacct's JobName column, is unknown for every job" in err[0]

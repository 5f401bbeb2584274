"""Sweeps: the matrix from a TOML file, Dask execution, resuming, the catalog, failures.

Kept small (the bundled Atlas log, 10 days of it, on Cab-shaped fabrics) so that the whole
file runs in well under a minute on two cores.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from conftest import EXAMPLE_TRACE, FIRST_FREE_POLICY, KILLING_POLICY, REPO, policy_module
from toposched.cli import main

SWEEP8 = f"""
name = "test-8"
description = "Atlas 10 days, x1 and x2, on Cab with taper 1 and 2, linear and isolated."

[[workloads]]
name = "atlas"
trace = "{EXAMPLE_TRACE}"
transforms = ["days:10", ["scale:1", "scale:2"], "drop"]

[[fabrics]]
name = "cab"
fattree = {{ K = 18, S = 18, P = 4 }}
taper = [1, 2]

[policies]
queue = "easy"
alloc = ["linear", "isolated"]
"""

BAD_CONF = """\
SwitchName=s1 Nodes=n[1-4]
SwitchName=s2 Nodes=n[4-8]
SwitchName=top Switches=s1,s2
"""

#: An SWF trace whose second record is cut short: the sweep file is fine (the trace
#: exists), its runs fail when they read it.
BAD_SWF = "1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n2 10 0 100 4 -1 -1 4 200\n"

#: Catalog columns that depend on where and when a run ran, not on its results.
VOLATILE = {"elapsed_s", "prepare_s", "simulate_s", "host", "finished_at"}


def _cli(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _catalog(out: Path, sql: str = "SELECT * FROM runs ORDER BY run_id"):
    con = duckdb.connect(str(out / "catalog.duckdb"), read_only=True)
    try:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()


def _run_dirs(out: Path) -> list[Path]:
    return sorted(p for p in (out / "runs").iterdir() if not p.name.startswith("."))


def _check_whole(run_dir: Path) -> dict:
    """A complete run directory: every file there and readable; returns its summary."""
    marker = json.loads((run_dir / "run.json").read_text())
    assert marker["status"] == "complete", marker
    summary = json.loads((run_dir / "summary.json").read_text())
    jobs = pq.read_table(run_dir / "jobs.parquet")
    assert len(jobs) == summary["jobs"]["replayed"]
    pq.read_table(run_dir / "utilization.parquet")
    pq.read_table(run_dir / "skipped.parquet")
    json.loads((run_dir / "fabric.json").read_text())
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["config"]["alloc"] == summary["policy"]["alloc"]
    return summary


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def sweep8(tmp_path_factory):
    """The 8-run sweep, run once in a pool of 2 local worker processes (the default executor)."""
    d = tmp_path_factory.mktemp("sweep8")
    toml = d / "sweep8.toml"
    toml.write_text(SWEEP8)
    out = d / "out"
    t0 = time.perf_counter()
    code = main(["sweep", str(toml), "--out", str(out), "--workers", "2", "--quiet"])
    return {"toml": toml, "out": out, "code": code, "elapsed": time.perf_counter() - t0}


def test_sweep_runs_every_run_and_the_catalog_lists_them(sweep8):
    out = sweep8["out"]
    assert sweep8["code"] == 0
    rows = _catalog(out)
    assert len(rows) == 8
    assert {r["status"] for r in rows} == {"complete"}
    assert {(r["alloc"], r["taper"], r["t_scale"]) for r in rows} == {(a, t, s) for a in ("linear", "isolated") for t in (1.0, 2.0) for s in (1.0, 2.0)}
    assert {r["uplinks_per_leaf"] for r in rows} == {18, 9}
    dirs = _run_dirs(out)
    assert [d.name for d in dirs] == sorted(r["run_id"] for r in rows)
    for d in dirs:
        summary = _check_whole(d)
        row = next(r for r in rows if r["run_id"] == d.name)
        assert row["wait_mean_s"] == pytest.approx(summary["wait_s"]["mean"])
        assert row["utilization"] == pytest.approx(summary["utilization"]["mean"])
        assert row["replayed"] == summary["jobs"]["replayed"]
    assert not [p for p in (out / "runs").iterdir() if p.name.startswith(".")]
    plan = json.loads((out / "plan.json").read_text())
    assert [r["run_id"] for r in plan["runs"]] == [r["run_id"] for r in _catalog(out, "SELECT run_id FROM runs ORDER BY plan_index")]
    page = (out / "report.html").read_text()
    assert "Plotly.newPlot" in page and "Against taper" in page and "Against scale" in page
    assert page.count("* plotly.js v") == 1  # plotly.js inlined once
    # larger jobs wait longer: the sweep measured something
    by_scale = defaultdict(list)
    for r in rows:
        by_scale[r["t_scale"]].append(r["wait_mean_s"])
    assert max(by_scale[2.0]) > max(by_scale[1.0])


def test_starting_again_skips_every_complete_run(sweep8, capsys):
    out = sweep8["out"]
    before = {d.name: (d / "run.json").stat().st_mtime_ns for d in _run_dirs(out)}
    t0 = time.perf_counter()
    code, stdout, _ = _cli(["sweep", sweep8["toml"], "--out", out, "--quiet"], capsys)
    assert code == 0
    assert "8 runs, 8 already complete, 0 done now" in stdout
    assert {d.name: (d / "run.json").stat().st_mtime_ns for d in _run_dirs(out)} == before
    assert time.perf_counter() - t0 < 10  # no cluster is started for nothing
    code, stdout, _ = _cli(["sweep", sweep8["toml"], "--out", out, "--dry-run"], capsys)
    assert code == 0 and stdout.count(" complete ") == 8 and "8 complete, 0 to run" in stdout


def test_catalog_sql_examples_of_the_docs_run(sweep8):
    """Every ```sql block of docs/sweeps.md runs on the catalog; the first one agrees with
    the run summaries."""
    from toposched.sweep.catalog import query

    blocks = re.findall(r"```sql\n(.*?)```", (REPO / "docs" / "sweeps.md").read_text(), re.S)
    assert len(blocks) >= 4
    results = []
    for sql in blocks:
        names, rows = query(sweep8["out"], sql)
        results.append((names, rows))
    for names, rows in results[:4]:
        assert rows, names  # the examples have something to show on this sweep
    names, rows = results[0]
    assert names[:2] == ["alloc", "taper"]
    expect = defaultdict(list)
    for d in _run_dirs(sweep8["out"]):
        s = json.loads((d / "summary.json").read_text())
        f = json.loads((d / "fabric.json").read_text())
        expect[(s["policy"]["alloc"], f["nodes_per_leaf"] / f["uplinks_per_leaf"])].append(s["wait_s"]["mean"])
    got = {(r[0], r[1]): r[2] for r in rows}
    assert set(got) == set(expect)
    for k, waits in expect.items():
        assert got[k] == pytest.approx(round(sum(waits) / len(waits) / 3600, 3), abs=1e-3)
    assert results[-1][1] == []  # no failed run here


def test_runs_command_filters_and_formats(sweep8, capsys):
    out = sweep8["out"]
    code, stdout, _ = _cli(["runs", out, "--where", "alloc = 'isolated'", "--format", "json"], capsys)
    assert code == 0
    rows = json.loads(stdout)
    assert len(rows) == 4 and {r["alloc"] for r in rows} == {"isolated"}
    assert {"run_id", "status", "taper", "wait_mean_s", "utilization"} <= set(rows[0])
    code, stdout, _ = _cli(["runs", out, "--columns", "run_id,alloc,round(wait_mean_s, 1) AS w", "--format", "csv"], capsys)
    lines = stdout.strip().splitlines()
    assert code == 0 and lines[0] == "run_id,alloc,w" and len(lines) == 9
    code, stdout, _ = _cli(["runs", out], capsys)
    assert code == 0 and "8 runs" in stdout and "wait_mean_s" in stdout
    # a nested value is a JSON field in CSV, not Python's repr ({'a': 1, 'b': True})
    query = "SELECT {'a': 1, 'b': true, 'c': NULL, 'd': [1.5, 'nan'::DOUBLE]} AS s, [1, 2] AS l"
    code, stdout, _ = _cli(["runs", out, "--sql", query, "--format", "csv"], capsys)
    import csv as csv_module

    header, row = list(csv_module.reader(stdout.splitlines()))
    assert code == 0 and header == ["s", "l"]
    assert json.loads(row[0]) == {"a": 1, "b": True, "c": None, "d": [1.5, None]} and json.loads(row[1]) == [1, 2]
    code, _, err = _cli(["runs", out, "--where", "no_such_column = 1"], capsys)
    assert code == 2 and "SQL error" in err and "no_such_column" in err
    # one line: DuckDB's message spans three or four (the query echoed, a caret under it)
    assert len(err.strip().splitlines()) == 1 and "LINE 1" not in err, err
    with pytest.raises(SystemExit) as usage:  # argparse's usage error
        main(["runs", str(out), "--limit", "-1"])
    err = capsys.readouterr().err
    assert usage.value.code == 2 and err.strip().splitlines() == ["toposched runs: error: argument --limit: must be at least 0, got -1 ('toposched runs --help' lists the options)"], err
    # beyond DuckDB's LIMIT: was "SQL error: Conversion Error: Type INT128 ...", naming no flag
    with pytest.raises(SystemExit) as usage:
        main(["runs", str(out), "--limit", str(2**63)])
    err = capsys.readouterr().err
    assert usage.value.code == 2 and err.strip().splitlines() == [f"toposched runs: error: argument --limit: must be below 2^63, got {2**63} ('toposched runs --help' lists the options)"], err
    assert _cli(["runs", out, "--limit", str(2**63 - 1)], capsys)[0] == 0


@pytest.mark.parametrize("flag", ["--sql", "--where", "--columns", "--order-by"])
def test_runs_refuses_an_empty_query(tmp_path, capsys, flag):
    """--sql '' listed the runs as if no query had been given (and --where '' every run)."""
    code, stdout, err = _cli(["runs", tmp_path, flag, " "], capsys)
    assert code == 2 and stdout == ""
    assert err.startswith(f"error: {flag}: empty; give an SQL ") and err.endswith(f"or leave {flag} out\n"), err


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_runs_into_a_closed_pipe_ends_like_every_command(sweep8, fmt):
    """`toposched runs DIR | head`: 141 and nothing on stderr, as the CLI's boundary does
    for every command (runs had its own handler, which exited 0)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        p = subprocess.run([sys.executable, "-m", "toposched.cli", "runs", str(sweep8["out"]), "--format", fmt], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert p.returncode == 141 and p.stderr == "", p.stderr


def test_failing_run_is_reported_and_the_others_complete(tmp_path, capsys):
    (tmp_path / "bad.swf").write_text(BAD_SWF)
    toml = tmp_path / "fail.toml"
    toml.write_text(
        f"""
[[workloads]]
trace = "{EXAMPLE_TRACE}"
transforms = ["days:5"]
[[workloads]]
trace = "bad.swf"
[[fabrics]]
system = "cab"
[policies]
alloc = ["linear", "isolated"]
"""
    )
    out = tmp_path / "out"
    code, stdout, err = _cli(["sweep", toml, "--out", out, "--workers", "2", "--quiet"], capsys)
    assert code == 1
    assert "4 runs, 0 already complete, 2 done now, 2 failed" in stdout
    # each failure: its specification and its error
    assert err.count("failed: workload=bad fabric=cab") == 2, err
    assert "expected 18 fields, found 9" in err and "error.txt" in err
    rows = _catalog(out)
    assert sorted((r["workload"], r["status"]) for r in rows) == [("LLNL-Atlas-2006-2.1-cln", "complete")] * 2 + [("bad", "failed")] * 2
    for r in rows:
        if r["status"] == "failed":
            assert "TraceFormatError" in r["error"] and "bad.swf:2" in r["error"]
            tb = (out / r["dir"] / "error.txt").read_text()
            assert tb.startswith("Traceback") and "expected 18 fields, found 9" in tb
            assert not (out / r["dir"] / "jobs.parquet").exists()
        else:
            _check_whole(out / r["dir"])
    assert "Failed runs" in (out / "report.html").read_text()
    # a failed run is tried again at the next start (and fails again); the complete ones are kept
    code, stdout, _ = _cli(["sweep", toml, "--out", out, "--workers", "1", "--quiet"], capsys)
    assert code == 1 and "2 already complete, 0 done now, 2 failed" in stdout
    assert len(_catalog(out)) == 4


def test_bad_sweep_file_reports_every_problem_with_its_place(tmp_path, capsys):
    toml = tmp_path / "SWEEP.toml"
    toml.write_text(
        f"""
[[workloads]]
trace = "{EXAMPLE_TRACE}"
[[workloads]]
trace = "{EXAMPLE_TRACE}"
transforms = ["scal:2", ["scale:2", 3]]
reader = {{ cores_per_node = 0, size_feld = "auto" }}
[[workloads]]
trace = "missing.swf"
[[fabrics]]
fattree = {{ K = 18, S = 18, P = 4 }}
taper = [2, 4]
[[fabrics]]
system = ["cab", "nope"]
[policies]
alloc = ["linear", "isolate"]
[scenarios]
seed = [1]
speedup = "ta15"
[run]
queue_depth = 0
alloc = "linear"
"""
    )
    code, _, err = _cli(["sweep", toml, "--out", tmp_path / "o"], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert all(re.match(rf"error: {re.escape(str(toml))}:\d+: ", line) for line in lines), err  # each with its line
    wheres = [re.sub(r"^:\d+: ", "", line[len(f"error: {toml}") :]).split(": ", 1)[0] for line in lines]
    assert wheres == [
        "workloads[1].reader.size_feld",
        "workloads[1].reader.cores_per_node",
        "workloads[1].transforms[0]",
        "workloads[1].transforms[1][1]",
        "workloads[2].trace",
        "fabrics[0].taper",
        "fabrics[1].system[1]",
        "policies.alloc[1]",
        "scenarios.seed",
        "scenarios.speedup",
        "run.queue_depth",
        "run.alloc",
    ], err
    assert "unknown transform 'scal'" in err and "'scal:2'" in err
    assert "did you mean 'seeds'" in err and "did you mean 'size_field'" in err
    assert "taper 4 does not give a whole number of uplinks for K = 18" in err
    assert not (tmp_path / "o").exists()
    # not TOML at all: the line is given
    toml.write_text('[[workloads]]\ntrace = "x"\nname = \n')
    code, _, err = _cli(["sweep", toml], capsys)
    assert code == 2 and err.startswith(f"error: {toml}:3: not valid TOML")


def test_a_topology_conf_that_does_not_load_is_refused_with_the_sweep_file(tmp_path, capsys):
    """A [[fabrics]] system naming a topology.conf that cannot be built passed the sweep
    file's check and failed every one of its runs, each with a traceback; it is now one
    line at the start, naming the field and the file's own line."""
    (tmp_path / "bad.conf").write_text(BAD_CONF)
    toml = tmp_path / "fail.toml"
    toml.write_text(f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\n[[fabrics]]\nsystem = ["cab", "bad.conf"]\n')
    code, stdout, err = _cli(["sweep", toml, "--out", tmp_path / "o"], capsys)
    assert code == 2 and stdout == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {toml}:4: fabrics[0].system[1]: {tmp_path / 'bad.conf'}:2: ") and "already on leaf switch" in line, err
    assert not (tmp_path / "o").exists()
    # lenient = true is the file's own way to load it (first leaf wins): then it plans
    from toposched.sweep import parse_sweep

    sweep = parse_sweep(toml.read_text() + "lenient = true\n", toml, base=tmp_path)
    assert {r.labels["fabric"] for r in sweep.runs} == {"cab", "bad.conf"}


def test_an_exclude_that_can_match_no_run_is_refused(tmp_path):
    """A misspelt value excluded nothing, silently (12 runs of 12); a key that is not an
    axis, likewise."""
    from toposched.sweep import SweepSpecError, parse_sweep

    text = (REPO / "examples" / "sweep-small.toml").read_text()
    base = REPO / "examples"
    ok = parse_sweep(text + '[[exclude]]\nalloc = ["isolated", "isolatd"]\nfabric = "cab"\n', tmp_path / "s.toml", base=base)
    assert len(ok.runs) == 6  # one known value is enough
    with pytest.raises(SweepSpecError, match=r"exclude\[0\]\.alloc: 'isolatd' is not a value of the matrix, so this exclude leaves every run in; the matrix has 'linear', 'isolated'"):
        parse_sweep(text + '[[exclude]]\nalloc = "isolatd"\n', tmp_path / "s.toml", base=base)
    with pytest.raises(SweepSpecError, match=r"exclude\[0\]\.queue_depth: 'queue_depth' is not an axis of this matrix"):
        parse_sweep(text + "[[exclude]]\nqueue_depth = 5\n", tmp_path / "s.toml", base=base)


def test_whole_numbers_beyond_what_a_run_takes_are_refused_by_the_file(tmp_path, capsys):
    """TOML reads whole numbers of any size: a seed of 2^64 or a queue depth of 10^20
    passed the file's checks, failed every run, and the catalog then stopped the sweep
    with an OverflowError traceback."""
    toml = tmp_path / "big.toml"
    toml.write_text(
        f"""
[[workloads]]
trace = "{EXAMPLE_TRACE}"
reader = {{ cores_per_node = 4294967296 }}
[[fabrics]]
system = "cab"
[scenarios]
seeds = [18446744073709551616]
[run]
queue_depth = 99999999999999999999
isolation_wait_s = 9223372036854775808
"""
    )
    code, _, err = _cli(["sweep", toml, "--out", tmp_path / "o", "--dry-run"], capsys)
    assert code == 2, err
    assert f"error: {toml}:8: scenarios.seeds[0]: must be at most 2^64 - 1 (as --seed), got 18446744073709551616" in err
    assert f"error: {toml}:10: run.queue_depth: must be at most 2^31 - 1 (as its flag), got 99999999999999999999" in err
    assert f"error: {toml}:4: workloads[0].reader.cores_per_node: must be at most 2^31 - 1" in err
    assert f"error: {toml}:11: run.isolation_wait_s: must be at most 2^63 - 1" in err
    assert not (tmp_path / "o").exists()


def test_a_seed_above_2_63_runs_and_is_listed(tmp_path, capsys):
    """--seed takes 0 to 2^64 - 1; the catalog's seed column was a signed 64-bit integer,
    so a sweep with seed 2^63 + 5 ran and then failed with an OverflowError traceback. A
    run directory the catalog cannot hold (written by an older version) is named in one
    line, not hidden behind the previous catalog."""
    seed = 2**63 + 5
    toml = tmp_path / "s.toml"
    toml.write_text(f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["days:1"]\n[[fabrics]]\nsystem = "cab"\n[policies]\nalloc = "random"\n[scenarios]\nseeds = [{seed}]\n')
    out = tmp_path / "o"
    code, _, err = _cli(["sweep", toml, "--out", out, "--workers", "1", "--quiet"], capsys)
    assert code == 0, err
    assert [(r["seed"], r["status"]) for r in _catalog(out)] == [(seed, "complete")]
    code, text, err = _cli(["runs", out, "--columns", "seed", "--format", "csv"], capsys)
    assert code == 0 and text.splitlines() == ["seed", str(seed)], err
    (run_dir,) = _run_dirs(out)
    spec = json.loads((run_dir / "spec.json").read_text())
    spec["scenario"]["seed"] = 2**64
    (run_dir / "spec.json").write_text(json.dumps(spec))
    code, _, err = _cli(["runs", out, "--rebuild"], capsys)
    assert code == 2
    assert err.strip() == f"error: {run_dir / 'spec.json'}: field 'seed': seed {2**64} does not fit the catalog's column (uint64); remove that run directory"


def test_describing_a_run_reads_the_defaults_once(monkeypatch):
    """describe() (the --dry-run listing, each failure) built RunConfig's defaults with
    dataclasses.asdict once per field of every run: a dry run of 300,000 runs (3 policies
    x 100,000 seeds) took over 5 minutes, 2 ms a run, most of it there."""
    from toposched.sweep import load_sweep, spec

    sweep = load_sweep(REPO / "examples" / "sweep-small.toml")
    calls = []
    real = spec._config_defaults
    monkeypatch.setattr(spec, "_config_defaults", lambda: calls.append(1) or real())
    lines = [r.describe() for r in sweep.runs]
    assert len(calls) <= len(sweep.runs)
    assert lines[0].startswith("workload=atlas [days:10 scale:1 drop] fabric=cab (fattree:K=18,S=18,P=4,W1=18) queue=easy alloc=linear")


def test_the_example_sweep_file_is_valid():
    from toposched.sweep import load_sweep

    sweep = load_sweep(REPO / "examples" / "sweep-small.toml")
    assert len(sweep.runs) == 12
    assert {r.spec["fabric"]["system"] for r in sweep.runs} == {f"fattree:K=18,S=18,P=4,W1={w}" for w in (18, 9, 6)}
    assert {r.labels["transforms"] for r in sweep.runs} == {"days:10 scale:1 drop", "days:10 scale:2 drop"}


def test_network_axis_only_where_supported(tmp_path):
    from toposched.simulate import RunConfig
    from toposched.sweep import SweepSpecError, parse_sweep

    text = f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\n[[fabrics]]\nsystem = "cab"\n[scenarios]\nnetwork = ["bins"]\n'
    if "network" in RunConfig.__dataclass_fields__:
        sweep = parse_sweep(text, "n.toml")
        assert sweep.runs[0].spec["config"]["network"] == "bins"
        # a spec --network would refuse fails the file, once: it failed every run of the
        # sweep (each with its traceback) while a dry run called the file sound
        with pytest.raises(SweepSpecError, match=r"scenarios.network: 'off': field 'off': expected bins, random, heavy"):
            parse_sweep(text.replace('["bins"]', '["bins", "off"]'), "n.toml")
    else:
        with pytest.raises(SweepSpecError, match=r"scenarios.network: network settings are not supported by this version"):
            parse_sweep(text, "n.toml")


def test_run_ids_follow_the_specification_and_the_trace_content(tmp_path):
    from toposched.sweep import parse_sweep

    def ids(text: str) -> list[str]:
        return [r.run_id for r in parse_sweep(text, tmp_path / "s.toml").runs]

    base = f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["scale:2"]\n[[fabrics]]\nsystem = "cab"\n'
    a = ids(base)
    assert a == ids(base) and len(a) == 1
    assert ids(base.replace("scale:2", "scale:2.0")) == a  # canonical transforms
    assert ids(base + "[run]\nqueue_depth = 128\n") != a
    assert ids(base.replace('"cab"', '"fattree:K=18,S=18,P=4"')) != a
    copy = tmp_path / "copy.swf.gz"
    shutil.copy(EXAMPLE_TRACE, copy)
    b = ids(base.replace(str(EXAMPLE_TRACE), str(copy)))
    assert b != a  # the trace's path is part of the key
    with open(copy, "ab") as fh:
        fh.write(b"\0")
    assert ids(base.replace(str(EXAMPLE_TRACE), str(copy))) != b  # and so is its content


def test_two_logs_under_one_workload_label_are_refused(tmp_path):
    """2019/jobs.swf and 2020/jobs.swf both got the label "jobs": the catalog's workload
    column could not tell their runs apart, [[exclude]] workload = "jobs" left out both,
    and the report averaged the two logs in one panel as if they were seeds. Tables that
    read the same log the same way may share a label (their transforms tell them apart)."""
    from toposched.sweep import SweepSpecError, parse_sweep

    for year, keep in (("2019", 8), ("2020", 5)):
        (tmp_path / year).mkdir()
        (tmp_path / year / "jobs.swf").write_text("".join(f"{i} {i * 10} 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n" for i in range(1, keep)))
    text = '[[workloads]]\ntrace = "2019/jobs.swf"\n[[workloads]]\ntrace = "2020/jobs.swf"\n[[fabrics]]\nsystem = "cab"\n'
    with pytest.raises(SweepSpecError) as info:
        parse_sweep(text, "two.toml", base=tmp_path)
    assert info.value.lines == ["two.toml:4: workloads[1].trace: label 'jobs' is also workloads[0]'s, which reads another log: give each its own name (the catalog, the report and [[exclude]] tell workloads apart by it)"]
    with pytest.raises(SweepSpecError, match=r"two.toml:6: workloads\[1\].name: label 'j' is also workloads\[0\]'s"):
        parse_sweep(text.replace('.swf"\n', '.swf"\nname = "j"\n'), "two.toml", base=tmp_path)
    with pytest.raises(SweepSpecError, match=r"workloads\[1\].trace: .* the same log with another format or reader options"):
        parse_sweep(text.replace("2020/", "2019/").replace('jobs.swf"\n[[f', 'jobs.swf"\nreader = { lenient = true }\n[[f'), "two.toml", base=tmp_path)
    assert len(parse_sweep(text.replace('"\n[[workloads]]', '"\nname = "y2019"\n[[workloads]]'), "two.toml", base=tmp_path).runs) == 2
    same = '[[workloads]]\ntrace = "2019/jobs.swf"\ntransforms = ["scale:1"]\n[[workloads]]\ntrace = "2019/jobs.swf"\ntransforms = ["scale:2"]\n[[fabrics]]\nsystem = "cab"\n'
    assert [r.labels["workload"] for r in parse_sweep(same, "same.toml", base=tmp_path).runs] == ["jobs", "jobs"]


def test_two_fabrics_under_one_label_are_refused_unless_only_their_taper_differs(tmp_path):
    """Two topology.conf files in two directories both got the label "topology.conf" (and
    two tables could be named alike): their runs could not be told apart in the catalog,
    by [[exclude]] or in the report, which averaged the two fabrics in one panel. Fabrics
    that differ by their taper (W1) alone share a label by design (the taper column)."""
    from toposched.sweep import SweepSpecError, parse_sweep

    for d, text in (("a", "SwitchName=s1 Nodes=n[1-4]\nSwitchName=s2 Nodes=n[5-8]\nSwitchName=top Switches=s1,s2\n"), ("b", "SwitchName=s1 Nodes=n[1-8]\n")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "topology.conf").write_text(text)
    wl = f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["drop"]\n'
    with pytest.raises(SweepSpecError) as info:
        parse_sweep(wl + '[[fabrics]]\nsystem = "a/topology.conf"\n[[fabrics]]\nsystem = "b/topology.conf"\n', "f.toml", base=tmp_path)
    assert info.value.lines == [
        f"f.toml:7: fabrics[1].system: label 'topology.conf' is also fabrics[0]'s ({tmp_path / 'a' / 'topology.conf'}), another fabric than {tmp_path / 'b' / 'topology.conf'}: "
        "give each its own name (the catalog, the report and [[exclude]] tell fabrics apart by it; fabrics that differ by their taper alone share one)"
    ]
    with pytest.raises(SweepSpecError, match=r"f.toml:5: fabrics\[0\].name: label 'x' names two fabrics, cab and pinot: "):
        parse_sweep(wl + '[[fabrics]]\nname = "x"\nsystem = ["cab", "pinot"]\n', "f.toml", base=tmp_path)
    # the same file twice, and one fat-tree at several tapers: one label each, as before
    ok = wl + (
        '[[fabrics]]\nsystem = "a/topology.conf"\n[[fabrics]]\nsystem = "a/topology.conf"\nlenient = true\n'
        '[[fabrics]]\nfattree = { K = 18, S = 18, P = 4, W1 = [18, 9] }\n[[fabrics]]\nfattree = { K = 18, S = 18, P = 4 }\ntaper = 3\n'
    )
    assert sorted({r.labels["fabric"] for r in parse_sweep(ok, "f.toml", base=tmp_path).runs}) == ["fattree:K=18,S=18,P=4", "topology.conf"]


def test_a_python_policy_edited_while_the_sweep_runs_fails_its_runs(tmp_path, monkeypatch):
    """The run id holds the SHA-256 of a Python policy's source file, but a run started
    after the file was edited (while the sweep ran) computed with the new code and was
    published under the old code's run id -- kept, and skipped as complete, by every later
    start. Such a run now fails and says why, as a trace edited meanwhile does."""
    from toposched.sweep import parse_sweep
    from toposched.sweep.runner import execute_run

    module = policy_module(tmp_path, monkeypatch, "sweep_edit_policy_mod", FIRST_FREE_POLICY)
    text = f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["days:1"]\n[[fabrics]]\nsystem = "cab"\n[policies]\nalloc = ["sweep_edit_policy_mod:First"]\n'
    run = parse_sweep(text, tmp_path / "p.toml").runs[0]
    task = {"run_id": run.run_id, "spec": run.spec, "runs_dir": str(tmp_path / "runs")}
    module.write_text(module.read_text() + "# edited while the sweep runs\n")
    res = execute_run(task)
    assert res["status"] == "failed", res
    assert res["error"] == "ToposchedError: sweep_edit_policy_mod:First: the policy's source file changed since the sweep was planned; start the sweep again"
    module.write_text(module.read_text().replace("# edited while the sweep runs\n", ""))
    assert execute_run(task)["status"] == "complete"


def test_a_network_file_edited_while_the_sweep_runs_fails_its_runs(tmp_path):
    """A network spec file's SHA-256 is part of the run id, but a run started after the
    file was edited (while the sweep ran) replayed with the new rules under the old run
    id. It now fails and says why."""
    from toposched.sweep import parse_sweep
    from toposched.sweep.runner import execute_run

    (tmp_path / "mix.csv").write_text("max_nodes,pattern,comm_fraction\n1,none,0\n,stencil3d,0.3\n")
    text = f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["days:1"]\n[[fabrics]]\nsystem = "cab"\n[scenarios]\nnetwork = ["bins=mix.csv"]\n'
    run = parse_sweep(text, tmp_path / "n.toml").runs[0]
    task = {"run_id": run.run_id, "spec": run.spec, "runs_dir": str(tmp_path / "runs")}
    (tmp_path / "mix.csv").write_text("max_nodes,pattern,comm_fraction\n1,none,0\n,stencil3d,0.9\n")
    res = execute_run(task)
    assert res["status"] == "failed" and res["error"].endswith("the network spec's file changed since the sweep was planned; start the sweep again"), res


def test_python_policies_are_checked_and_their_code_is_part_of_the_key(tmp_path, monkeypatch):
    from toposched.sweep import SweepSpecError, parse_sweep

    module = policy_module(tmp_path, monkeypatch, "sweep_test_policy_mod", FIRST_FREE_POLICY)
    text = f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\n[[fabrics]]\nsystem = "cab"\n[policies]\nalloc = ["sweep_test_policy_mod:First"]\n'
    first = parse_sweep(text, tmp_path / "p.toml").runs[0]
    assert first.spec["config"]["alloc"] == "sweep_test_policy_mod:First"
    assert first.spec["policy_code_sha256"]["alloc"] == hashlib.sha256(module.read_bytes()).hexdigest()
    module.write_text(module.read_text() + "# edited\n")
    assert parse_sweep(text, tmp_path / "p.toml").runs[0].run_id != first.run_id
    with pytest.raises(SweepSpecError, match=r"policies.alloc\[0\]: policy 'sweep_test_policy_mod:Nope': .* has no 'Nope'"):
        parse_sweep(text.replace(":First", ":Nope"), tmp_path / "p.toml")


def _wait_for(predicate, timeout: float, step: float = 0.01) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def test_sigkill_midway_loses_nothing_and_resume_completes(tmp_path, capsys):
    toml = tmp_path / "kill.toml"
    toml.write_text(
        f"""
[[workloads]]
trace = "{EXAMPLE_TRACE}"
transforms = ["days:60", ["scale:1", "scale:1.5"]]
[[fabrics]]
system = "cab"
[policies]
queue = ["fcfs", "easy"]
alloc = ["linear", "random"]
"""
    )
    out = tmp_path / "out"
    runs = out / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "toposched.cli", "sweep", str(toml), "--out", str(out), "--workers", "1", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        first = lambda: runs.is_dir() and any(not p.name.startswith(".") for p in runs.iterdir())  # noqa: E731
        assert _wait_for(first, 60), proc.communicate(timeout=5)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        # the workers notice their driver is gone and stop; make sure of it
        if not _wait_for(lambda: not _group_alive(proc.pid), 15, 0.1):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stdout.close()
        proc.stderr.close()
    done = _run_dirs(out)
    assert 1 <= len(done) < 8, "the sweep should be killed midway"
    for d in done:  # what the kill left that looks like a result is a whole result
        _check_whole(d)
    # start again: the rest runs, the finished ones are kept as they were
    kept = {d.name: _sha(d / "jobs.parquet") for d in done}
    code, stdout, _ = _cli(["sweep", toml, "--out", out, "--workers", "2", "--quiet"], capsys)
    assert code == 0
    assert f"8 runs, {len(kept)} already complete, {8 - len(kept)} done now" in stdout
    entries = sorted(p.name for p in runs.iterdir())
    assert not [e for e in entries if e.startswith(".")]  # temporary directories cleaned up
    plan = [r["run_id"] for r in json.loads((out / "plan.json").read_text())["runs"]]
    assert entries == sorted(plan) and len(set(plan)) == 8  # every run exactly once
    for d in _run_dirs(out):
        _check_whole(d)
    assert {k: _sha(runs / k / "jobs.parquet") for k in kept} == kept
    rows = _catalog(out)
    assert len(rows) == 8 and len({r["run_id"] for r in rows}) == 8 and {r["status"] for r in rows} == {"complete"}


#: A sweep driver whose Dask cluster, once up, stays "starting" for a while (the test's
#: signal comes then): it writes the file argv[1] when the cluster is up.
_SLOW_CLUSTER_DRIVER = """
import pathlib, sys, time
import distributed
start = distributed.LocalCluster.__init__
def slow(self, *a, **k):
    start(self, *a, **k)
    pathlib.Path(sys.argv[1]).write_text("up")
    time.sleep(4)
distributed.LocalCluster.__init__ = slow
from toposched.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _sweep_toml(tmp_path: Path, scales: str) -> Path:
    toml = tmp_path / "kill.toml"
    toml.write_text(
        f"""
[[workloads]]
trace = "{EXAMPLE_TRACE}"
transforms = ["days:60", [{scales}]]
[[fabrics]]
system = "cab"
[policies]
queue = ["fcfs", "easy"]
alloc = ["linear", "random"]
"""
    )
    return toml


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_dask_cluster_starts_stops_the_sweep_cleanly(tmp_path, sig):
    """Ctrl-C while the local Dask cluster started was ignored (SIG_IGN, so that its
    workers inherit it): the sweep ran to its end and exited 0. SIGTERM then ended the
    driver at once, leaving the cluster's processes behind. Both now stop the sweep once
    the cluster is up, close it, and say so in one line (exit 130)."""
    mark = tmp_path / "cluster-up"
    out = tmp_path / "out"
    argv = ["sweep", str(_sweep_toml(tmp_path, '"scale:1"')), "--out", str(out), "--dask", "--workers", "2", "--quiet", "--no-report"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "python"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_CLUSTER_DRIVER, str(mark), *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a shell's foreground job
    )  # fmt: skip
    try:
        assert _wait_for(mark.exists, 60), proc.communicate(timeout=5)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        gone = _wait_for(lambda: not _group_alive(proc.pid), 15, 0.1)
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    assert (proc.returncode, err.decode()) == (130, "interrupted: finished runs are kept; start the same command again to resume\n")
    assert gone, "the Dask cluster's processes outlived the interrupted sweep"
    assert _run_dirs(out) == []


def test_sigterm_midway_is_an_interrupt_and_resume_completes(tmp_path, capsys):
    """SIGTERM (a batch system's stop) ended the driver at once, exit -15, without a word;
    it is now Ctrl-C: the running runs finish, the finished ones are kept, one line, 130."""
    toml = _sweep_toml(tmp_path, '"scale:1", "scale:1.5"')
    out = tmp_path / "out"
    runs = out / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "toposched.cli", "sweep", str(toml), "--out", str(out), "--workers", "1", "--quiet", "--no-report"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        first = lambda: runs.is_dir() and any(not p.name.startswith(".") for p in runs.iterdir())  # noqa: E731
        assert _wait_for(first, 60), proc.communicate(timeout=5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    assert (proc.returncode, err.decode()) == (130, "interrupted: finished runs are kept; start the same command again to resume\n")
    done = _run_dirs(out)
    assert 1 <= len(done) < 8, "the sweep should be stopped midway"
    for d in done:
        _check_whole(d)
    code, stdout, _ = _cli(["sweep", toml, "--out", out, "--workers", "2", "--quiet", "--no-report"], capsys)
    assert code == 0 and f"8 runs, {len(done)} already complete, {8 - len(done)} done now" in stdout


#: Imported at the start of every Python process of the test's sweep (PYTHONPATH): a pool
#: worker writes down, before it imports anything of toposched, whether SIGINT is blocked.
_SITECUSTOMIZE = """
import os, signal, sys
if "--multiprocessing-fork" in sys.argv and os.environ.get("TOPOSCHED_TEST_MASKS"):
    with open(os.path.join(os.environ["TOPOSCHED_TEST_MASKS"], str(os.getpid())), "w") as f:
        f.write(str(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])))
"""


def test_killed_driver_takes_its_pool_workers_with_it(tmp_path):
    """A sweep driver killed with SIGKILL (or SIGTERM) left its pool workers behind, idle
    for ever (one process per core, and the resource tracker) -- and a worker mid-run went
    on writing into a .tmp directory that the next start removes. They now end with their
    driver. And a worker started with SIGINT unblocked printed a KeyboardInterrupt
    traceback of its own for a Ctrl-C while it imported toposched: workers now start with
    SIGINT blocked, until their initializer ignores it."""
    if not hasattr(signal, "pthread_sigmask"):
        pytest.skip("no pthread_sigmask")
    toml = tmp_path / "kill.toml"
    toml.write_text(
        f"""
[[workloads]]
trace = "{EXAMPLE_TRACE}"
transforms = ["days:60", ["scale:1", "scale:1.5", "scale:2"]]
[[fabrics]]
system = "cab"
[policies]
queue = ["fcfs", "easy"]
alloc = ["linear", "random"]
"""
    )
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    masks = tmp_path / "masks"
    masks.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO / "python"), os.environ.get("PYTHONPATH", "")]), "TOPOSCHED_TEST_MASKS": str(masks)}
    out = tmp_path / "out"
    runs = out / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "toposched.cli", "sweep", str(toml), "--out", str(out), "--workers", "2", "--quiet", "--no-report"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
    )
    try:
        first = lambda: runs.is_dir() and any(not p.name.startswith(".") for p in runs.iterdir())  # noqa: E731
        assert _wait_for(first, 60), proc.communicate(timeout=5)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        gone = _wait_for(lambda: not _group_alive(proc.pid), 10, 0.1)
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stderr.close()
    assert gone, "the pool workers outlived their killed driver"
    started = [m.read_text() for m in masks.iterdir()]
    assert started and started == ["True"] * len(started), started
    assert len(_run_dirs(out)) < 12, "the sweep should be killed midway"


def test_scheduler_and_workers_started_by_hand_give_identical_results(sweep8, tmp_path, capsys):
    """`dask scheduler` and two `dask worker` processes on 127.0.0.1, started by hand; the
    same sweep run there gives the same catalog metrics and the same jobs.parquet bytes."""
    sched_file = tmp_path / "scheduler.json"
    procs = []
    try:
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        assert _wait_for(lambda: sched_file.exists() and sched_file.stat().st_size > 0, 60, 0.1)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for i in range(2):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--nworkers", "1", "--no-dashboard", "--name", f"hand-{i}", "--local-directory", str(tmp_path / f"w{i}")],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    )
            )
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
            worker_pids = set(client.run(os.getpid).values())
        out = tmp_path / "out"
        code, stdout, _ = _cli(["sweep", sweep8["toml"], "--out", out, "--scheduler", address, "--quiet"], capsys)
        assert code == 0 and "8 done now" in stdout
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
    local = {r["run_id"]: r for r in _catalog(sweep8["out"])}
    remote = {r["run_id"]: r for r in _catalog(out)}
    assert set(local) == set(remote) and len(remote) == 8
    for rid, r in remote.items():
        assert {k: v for k, v in r.items() if k not in VOLATILE} == {k: v for k, v in local[rid].items() if k not in VOLATILE}
        assert _sha(out / "runs" / rid / "jobs.parquet") == _sha(sweep8["out"] / "runs" / rid / "jobs.parquet")
        assert _sha(out / "runs" / rid / "summary.json") == _sha(sweep8["out"] / "runs" / rid / "summary.json")
        assert json.loads((out / "runs" / rid / "run.json").read_text())["pid"] in worker_pids  # ran on those workers


def test_runs_names_the_damaged_run_directories_it_leaves_out(sweep8, tmp_path, capsys):
    """A spec.json that is JSON but not toposched's (a list) made `toposched runs` an
    internal error (TypeError); a complete run without its summary.json vanished from the
    listing unseen. Damaged runs are left out of the catalog and named on stderr, one
    line each; the listing goes on with the others."""
    out = tmp_path / "out"
    shutil.copytree(sweep8["out"], out)
    dirs = _run_dirs(out)
    (dirs[0] / "spec.json").write_text("[1]")
    (dirs[1] / "summary.json").unlink()
    (dirs[2] / "spec.json").write_text('{"workload": {}}')
    (dirs[3] / "run.json").write_text("{")
    code, stdout, err = _cli(["runs", out, "--rebuild", "--format", "csv", "--columns", "dir"], capsys)
    assert code == 0, err
    lines = stdout.strip().splitlines()
    assert lines[0] == "dir" and sorted(lines[1:]) == [f"runs/{d.name}" for d in dirs[4:]]
    assert err.strip().splitlines() == [
        f"toposched runs: {out / 'runs' / dirs[0].name} is left out: spec.json: not a JSON object",
        f"toposched runs: {out / 'runs' / dirs[1].name} is left out: summary.json: missing",
        f"toposched runs: {out / 'runs' / dirs[2].name} is left out: spec.json or summary.json: not as toposched writes them (KeyError: 'fabric')",
        f"toposched runs: {out / 'runs' / dirs[3].name} is left out: run.json: not a finished run's marker (status complete or failed)",
    ]
    # the whole sweep's listing says nothing on stderr
    code, _, err = _cli(["runs", sweep8["out"]], capsys)
    assert code == 0 and err == ""


def test_runs_names_a_complete_run_missing_a_result_file(sweep8, tmp_path, capsys):
    """A complete run whose jobs.parquet was deleted stayed in the runs table as complete,
    while the jobs view silently had none of its rows (a per-policy mean over the view
    lost a run without a word). It is a damaged run, as the runner already treats it."""
    out = tmp_path / "out"
    shutil.copytree(sweep8["out"], out)
    dirs = _run_dirs(out)
    (dirs[0] / "jobs.parquet").unlink()
    (dirs[1] / "utilization.parquet").unlink()
    code, stdout, err = _cli(["runs", out, "--rebuild", "--format", "csv", "--columns", "dir"], capsys)
    assert code == 0, err
    assert sorted(stdout.strip().splitlines()[1:]) == [f"runs/{d.name}" for d in dirs[2:]]
    assert err.strip().splitlines() == [
        f"toposched runs: {out / 'runs' / dirs[0].name} is left out: jobs.parquet: missing",
        f"toposched runs: {out / 'runs' / dirs[1].name} is left out: utilization.parquet: missing",
    ]
    code, stdout, _ = _cli(["runs", out, "--format", "csv", "--sql", "SELECT count(DISTINCT run_id) FROM jobs"], capsys)
    assert code == 0 and stdout.strip().splitlines()[1] == str(len(dirs) - 2)


def test_a_bare_cap_or_drop_has_the_fabrics_node_count_in_its_column(tmp_path, capsys):
    """--transform cap (no N: the fabric's node count) left t_cap empty, so a query on
    t_cap missed the run; the summary records the count the run used (cap:1296)."""
    out = tmp_path / "cmp"
    argv = ["compare", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--transform", "days:1", "scale:2", "cap", "drop",
            "--allocs", "linear", "--scenarios", "none", "--jobs", "1", "--no-report", "--quiet", "--out", str(out)]
    assert main([str(a) for a in argv]) == 0
    capsys.readouterr()
    code, stdout, err = _cli(["runs", out, "--format", "csv", "--columns", "transforms,t_days,t_scale,t_cap,t_drop"], capsys)
    assert code == 0, err
    assert stdout.strip().splitlines() == ["transforms,t_days,t_scale,t_cap,t_drop", "days:1 scale:2 cap drop,1.0,2.0,1296.0,1296.0"]
    summary = json.loads((out / "runs" / "linear__none" / "summary.json").read_text())
    assert summary["input"]["settings"]["transforms"] == ["days:1", "scale:2", "cap:1296", "drop:1296"]


def test_a_window_start_has_a_number_column_of_its_own(tmp_path, capsys):
    """days:N@S put "1@1" in t_days: the column became a string one for every run of DIR,
    and `--where "t_days = 1"` ended in "Conversion Error: Could not convert string '1@1'"."""
    toml = tmp_path / "w.toml"
    toml.write_text(f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = [["days:1", "days:1@1"]]\n[[fabrics]]\nsystem = "cab"\n[policies]\nalloc = ["linear"]\n')
    out = tmp_path / "out"
    code, _, err = _cli(["sweep", toml, "--out", out, "--workers", "1", "--quiet", "--no-report"], capsys)
    assert code == 0, err
    code, stdout, err = _cli(["runs", out, "--format", "csv", "--where", "t_days = 1", "--order-by", "t_days_start", "--columns", "transforms,t_days,t_days_start"], capsys)
    assert code == 0, err
    assert stdout.strip().splitlines() == ["transforms,t_days,t_days_start", "days:1,1.0,0.0", "days:1@1,1.0,1.0"]


def test_a_catalog_duckdb_cannot_read_is_built_again(sweep8, tmp_path, capsys):
    """A catalog.duckdb that DuckDB cannot open (damaged, or written by a DuckDB of another
    storage version on a shared directory) ended `toposched runs` with "SQL error: IO
    Error: ... is not a valid DuckDB database file", though the catalog is built from the
    run directories alone. It is built again."""
    out = tmp_path / "out"
    shutil.copytree(sweep8["out"], out)
    (out / "catalog.duckdb").write_bytes(b"not a database" * 100)
    code, stdout, err = _cli(["runs", out, "--format", "csv", "--columns", "status"], capsys)
    assert code == 0, err
    assert stdout.splitlines() == ["status"] + ["complete"] * 8
    assert len(_catalog(out)) == 8


def test_runs_says_when_a_running_sweep_has_not_listed_its_finished_runs_yet(sweep8, tmp_path, capsys):
    """While a sweep runs, its driver alone writes the catalog (every 30 s): `toposched
    runs DIR` printed the catalog of the start ("0 runs") with runs finished on disk, and
    --rebuild did nothing, both silently. It now says how many finished runs the catalog
    does not list yet, and why."""
    from toposched.sweep.catalog import build_catalog
    from toposched.sweep.layout import SweepLock

    out = tmp_path / "out"
    shutil.copytree(sweep8["out"], out)
    keep = _run_dirs(out)[:3]
    moved = tmp_path / "later"
    moved.mkdir()
    for d in _run_dirs(out)[3:]:
        d.rename(moved / d.name)
    build_catalog(out)  # the catalog of a sweep 3 runs in
    for d in moved.iterdir():
        d.rename(out / "runs" / d.name)  # 5 more finish meanwhile
    with SweepLock(out.resolve()):  # the sweep still runs
        for argv in (["runs", out, "--format", "csv", "--columns", "dir"], ["runs", out, "--rebuild", "--format", "csv", "--columns", "dir"]):
            code, stdout, err = _cli(argv, capsys)
            assert code == 0 and len(stdout.splitlines()) == 1 + len(keep)
            assert err == (f"toposched runs: the catalog does not list 5 finished runs yet: a sweep, compare or frontier is working on {out} "
                           f"(it writes the catalog every 30 s and at its end), or {out} cannot be written\n")
    code, stdout, err = _cli(["runs", out, "--format", "csv", "--columns", "dir"], capsys)  # the sweep ended
    assert code == 0 and len(stdout.splitlines()) == 9 and err == ""


def test_a_scheduler_file_that_is_missing_or_not_one_is_one_line(sweep8, tmp_path, capsys):
    """--scheduler-file was read by Dask's Client: a file that never came was waited for
    for ever (ten times a second, the 30 s timeout did not apply), and one that is not a
    scheduler file ended in "internal error: AssertionError". Both are one line now; a
    missing file is waited for 30 s (a scheduler starting at the same time)."""
    for content, why in (("{}", 'no "address" in it'), ("garbage", "not JSON"), ("[1]", 'no "address" in it')):
        f = tmp_path / "scheduler.json"
        f.write_text(content)
        code, _, err = _cli(["sweep", sweep8["toml"], "--out", tmp_path / "out", "--scheduler-file", f, "--quiet"], capsys)
        assert code == 2 and err == f"error: {f}: not a Dask scheduler file ({why}; `dask scheduler --scheduler-file {f}` writes one)\n"
    from toposched.errors import ToposchedError
    from toposched.sweep.runner import _scheduler_file_address

    t0 = time.monotonic()
    with pytest.raises(ToposchedError, match=r"nope.json: no such scheduler file \(waited 0.3 s for the Dask scheduler to write it; start one with"):
        _scheduler_file_address(str(tmp_path / "nope.json"), wait_s=0.3)
    assert time.monotonic() - t0 < 5
    (tmp_path / "late.json").write_text('{"address": "tcp://127.0.0.1:8786"}')
    assert _scheduler_file_address(str(tmp_path / "late.json"), wait_s=0.3) == "tcp://127.0.0.1:8786"


def test_dry_run_says_to_do_of_a_damaged_run_the_start_runs_again(sweep8, tmp_path, capsys):
    """A complete run missing one of its files (deleted by hand, by a disk cleaner) is run
    again by the next start, but --dry-run listed it as complete ("8 complete, 0 to
    run")."""
    out = tmp_path / "out"
    shutil.copytree(sweep8["out"], out)
    damaged = _run_dirs(out)[0]
    (damaged / "jobs.parquet").unlink()
    code, stdout, _ = _cli(["sweep", sweep8["toml"], "--out", out, "--dry-run"], capsys)
    assert code == 0
    assert f"{damaged.name}  to do " in stdout and stdout.strip().splitlines()[-1].startswith("8 runs, 7 complete, 1 to run")
    code, stdout, _ = _cli(["sweep", sweep8["toml"], "--out", out, "--workers", "1", "--quiet", "--no-report"], capsys)
    assert code == 0 and "8 runs, 7 already complete, 1 done now" in stdout


def test_a_worker_that_dies_leaves_no_temporary_directory_behind(tmp_path, capsys, monkeypatch):
    """A worker process that died mid-run (the kernel's OOM killer) left the run's
    .tmp-* directory (and whatever it had written) in runs/ after the sweep ended, until
    some later start on the directory. The sweep now removes them once every run has its
    result."""
    policy_module(tmp_path, monkeypatch, "sweep_killer_mod", KILLING_POLICY, subprocesses=True)
    toml = tmp_path / "kill.toml"
    toml.write_text(f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["days:1"]\n[[fabrics]]\nsystem = "cab"\n[policies]\nalloc = ["linear", "sweep_killer_mod:Kill"]\n')
    out = tmp_path / "out"
    code, stdout, err = _cli(["sweep", toml, "--out", out, "--workers", "2", "--quiet", "--no-report"], capsys)
    assert code == 1 and "2 runs, 0 already complete, 1 done now, 1 failed" in stdout, err
    assert [p.name for p in (out / "runs").iterdir() if p.name.startswith(".")] == []
    assert len(_run_dirs(out)) == 2


def test_the_job_views_follow_a_sweep_directory_that_was_moved(sweep8, tmp_path, capsys):
    """The jobs and utilization views read each run's Parquet files by absolute path: once
    the directory was moved or renamed, `toposched runs DIR --sql "... FROM jobs"` failed
    with "No files found that match the pattern <old path>", and a copy silently read the
    original's files. A catalog built for another place is built again."""
    first = tmp_path / "first"
    shutil.copytree(sweep8["out"], first)
    assert _cli(["runs", first, "--rebuild", "--format", "csv"], capsys)[0] == 0
    moved = tmp_path / "moved"
    first.rename(moved)
    code, stdout, err = _cli(["runs", moved, "--sql", "SELECT count(DISTINCT run_id) AS runs FROM jobs", "--format", "csv"], capsys)
    assert code == 0, err
    assert stdout.splitlines() == ["runs", "8"]
    code, stdout, err = _cli(["runs", moved, "--sql", "SELECT count(*) > 0 AS rows FROM utilization", "--format", "csv"], capsys)
    assert code == 0 and stdout.splitlines() == ["rows", "True"], err
    view = _catalog(moved, "SELECT sql FROM duckdb_views() WHERE view_name = 'jobs'")[0]["sql"]
    assert str(moved / "runs") in view and str(first) + "/" not in view


def test_a_sweep_keeps_the_directories_of_runs_that_are_not_its_own(tmp_path, capsys):
    """A sweep started on a DIR whose runs/ already held other things (a `toposched
    simulate --out DIR/runs/baseline`, a notes directory) deleted every subdirectory
    without a toposched marker, whole, at its start. They are kept, and left out of the
    catalog."""
    out = tmp_path / "study"
    code, _, err = _cli(["simulate", "--trace", EXAMPLE_TRACE, "--transform", "days:1", "--system", "cab", "--out", out / "runs" / "baseline", "--quiet"], capsys)
    assert code == 0, err
    (out / "runs" / "notes").mkdir()
    (out / "runs" / "notes" / "todo.txt").write_text("keep me\n")
    # a user's hidden .tmp files too (any DIR/.*.tmp was removed); a killed write's own
    # temporary file (.NAME.XXXXXXXX.tmp) is removed
    for kept in (out / ".notes.tmp", out / "runs" / ".draft.tmp"):
        kept.write_text("keep me\n")
    (out / ".sweep.json.k3x_9a0q.tmp").write_text("{")
    before = sorted(p.name for p in (out / "runs" / "baseline").iterdir())
    code, stdout, err = _cli(["sweep", _two_run_sweep(tmp_path), "--out", out, "--workers", "1", "--quiet", "--no-report"], capsys)
    assert code == 0 and "2 runs, 0 already complete, 2 done now" in stdout, err
    assert sorted(p.name for p in (out / "runs" / "baseline").iterdir()) == before
    assert (out / "runs" / "notes" / "todo.txt").read_text() == "keep me\n"
    assert (out / ".notes.tmp").read_text() == (out / "runs" / ".draft.tmp").read_text() == "keep me\n"
    assert not (out / ".sweep.json.k3x_9a0q.tmp").exists()
    assert len(_catalog(out)) == 2


def test_a_directory_where_the_catalog_goes_is_named(tmp_path, capsys):
    """A directory named catalog.duckdb in DIR was reported under the name of the
    catalog's temporary file (".catalog-39daefe3e7b9.duckdb: Is a directory")."""
    out = tmp_path / "out"
    (out / "catalog.duckdb").mkdir(parents=True)
    code, _, err = _cli(["sweep", _two_run_sweep(tmp_path), "--out", out, "--workers", "1", "--quiet", "--no-report"], capsys)
    assert code == 2 and err == f"error: {out.resolve() / 'catalog.duckdb'}: is a directory, where the catalog goes; remove it\n"


def test_the_job_views_exist_while_no_run_is_complete(tmp_path, capsys):
    """With every run failed, `toposched runs DIR --sql "SELECT count(*) FROM jobs"` said
    "Table with name jobs does not exist! Did you mean pg_constraint?" though the docs list
    the view; it is there, empty."""
    (tmp_path / "bad.swf").write_text(BAD_SWF)
    toml = tmp_path / "fail.toml"
    toml.write_text('[[workloads]]\ntrace = "bad.swf"\n[[fabrics]]\nsystem = "cab"\n')
    out = tmp_path / "out"
    code, _, _ = _cli(["sweep", toml, "--out", out, "--workers", "1", "--quiet"], capsys)
    assert code == 1
    for view in ("jobs", "utilization"):
        code, stdout, err = _cli(["runs", out, "--sql", f"SELECT count(*) AS n, count(DISTINCT run_id) AS runs FROM {view}", "--format", "json"], capsys)
        assert code == 0 and json.loads(stdout) == [{"n": 0, "runs": 0}], err


def _two_run_sweep(tmp_path: Path) -> Path:
    toml = tmp_path / "two.toml"
    toml.write_text(f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["days:1"]\n[[fabrics]]\nsystem = "cab"\n[policies]\nalloc = ["linear", "isolated"]\n')
    return toml


def test_a_run_that_cannot_be_recorded_leaves_no_temporary_directory(tmp_path, capsys, monkeypatch):
    """On a full disk a run whose marker (or error.txt) could not be written left its
    .tmp-* directory, and the driver's record of the failure a second one: two per run,
    on the full disk, until the next start. They are removed; the runs are reported
    failed and the sweep goes on."""
    import errno

    from toposched.sweep import runner

    real = runner._write_atomic

    def full_disk(path, text):
        if Path(path).name == "run.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, text)

    monkeypatch.setattr(runner, "_write_atomic", full_disk)
    out = tmp_path / "out"
    code, stdout, err = _cli(["sweep", _two_run_sweep(tmp_path), "--out", out, "--workers", "1", "--quiet", "--no-report"], capsys)
    assert code == 1 and "2 runs, 0 already complete, 0 done now, 2 failed" in stdout, err
    assert "No space left on device" in err
    assert sorted(p.name for p in (out / "runs").iterdir()) == []


def test_a_catalog_that_cannot_be_written_does_not_end_the_sweep(tmp_path, capsys, monkeypatch):
    """A catalog that could not be written at the end of a sweep (a full disk) ended the
    command with "error: Error writing bytes to file. Detail: [errno 28] No space left on
    device": no file named, and the sweep's own outcome never printed. (Every 30 s, the
    same error stopped the runs still to do.) It is a warning naming the catalog; the
    outcome is printed and the status is 1."""
    import pyarrow.parquet

    real = pyarrow.parquet.write_table
    calls = []

    def full_disk(table, where, *args, **kwargs):
        if ".catalog-" in str(where):
            calls.append(where)
            if len(calls) > 1:  # the catalog at the start is written; the disk fills up meanwhile
                raise OSError("Error writing bytes to file. Detail: [errno 28] No space left on device")
        return real(table, where, *args, **kwargs)

    monkeypatch.setattr(pyarrow.parquet, "write_table", full_disk)
    out = tmp_path / "out"
    code, stdout, err = _cli(["sweep", _two_run_sweep(tmp_path), "--out", out, "--workers", "1", "--quiet", "--no-report"], capsys)
    assert code == 1
    assert "2 runs, 0 already complete, 2 done now" in stdout
    assert "Traceback" not in err
    assert f"warning: {out.resolve() / 'catalog.duckdb'}: cannot write the catalog: Error writing bytes to file. Detail: [errno 28] No space left on device" in " ".join(err.split())
    assert err.strip().splitlines()[-1] == f"error: the catalog {out}/catalog.duckdb could not be written (see above)"
    assert len(_run_dirs(out)) == 2
    monkeypatch.setattr(pyarrow.parquet, "write_table", real)
    code, stdout, _ = _cli(["runs", out, "--format", "csv", "--columns", "status"], capsys)  # the runs are safe
    assert code == 0 and stdout.splitlines() == ["status", "complete", "complete"]


def test_a_policy_option_axis_is_a_catalog_column(tmp_path, capsys):
    """A [run] leaf_cap = [1, 3] axis reached the catalog only inside the policy_options
    JSON text: `--where "leaf_cap = 3"` was a Binder Error, and the docs' "every other
    RunConfig field" column did not exist. Each option is now a column of its own."""
    toml = tmp_path / "caps.toml"
    toml.write_text(f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["days:1"]\n[[fabrics]]\nsystem = "cab"\n[policies]\nalloc = ["capped", "linear"]\n[run]\nleaf_cap = [1, 3]\n')
    out = tmp_path / "out"
    assert _cli(["sweep", toml, "--out", out, "--workers", "1", "--quiet"], capsys)[0] == 0
    code, stdout, err = _cli(["runs", out, "--columns", "alloc,leaf_cap,policy_options", "--order-by", "alloc, leaf_cap", "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(stdout) == [
        {"alloc": "capped", "leaf_cap": 1, "policy_options": '{"leaf_cap": 1}'},
        {"alloc": "capped", "leaf_cap": 3, "policy_options": '{"leaf_cap": 3}'},
        {"alloc": "linear", "leaf_cap": None, "policy_options": None},
    ]
    code, stdout, _ = _cli(["runs", out, "--where", "leaf_cap = 3", "--columns", "run_id", "--format", "csv"], capsys)
    assert code == 0 and len(stdout.strip().splitlines()) == 2


@pytest.mark.parametrize(
    "value, error",
    [
        ("[0, 0.1]", None),
        ("-1", "run.slowdown_threshold: must be at least 0, got -1"),
        ('"0.1"', "run.slowdown_threshold: expected a number, got a string"),
        ("nan", "run.slowdown_threshold: expected a finite number, got nan"),
    ],
)
def test_a_number_policy_option_in_a_sweep_file_is_a_number(tmp_path, capsys, value, error):
    """A number option ([run] slowdown_threshold = 0.1) was read as a string: the number
    was refused ("expected a string, got a number") and "x" was taken, to fail in every
    run. Now a number, in the range of the option's schema."""
    toml = tmp_path / "t.toml"
    toml.write_text(f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["days:1"]\n[[fabrics]]\nsystem = "cab"\n[policies]\nalloc = ["adaptive"]\n[run]\nslowdown_threshold = {value}\n')
    code, stdout, err = _cli(["sweep", toml, "--out", tmp_path / "out", "--dry-run"], capsys)
    if error is None:
        assert code == 0 and stdout.strip().splitlines()[-1].startswith("2 runs, 0 complete, 2 to run"), err
        assert "policy_options={'slowdown_threshold': 0.1}" in stdout
    else:
        assert code == 2 and err.strip().splitlines() == [f"error: {toml}:9: {error}"], err


def test_runs_json_is_json_whatever_the_query_returns(sweep8, capsys):
    """`toposched runs DIR --sql ... --format json` wrote a DECIMAL (a literal 1.5, a
    ::DECIMAL cast) as the string "1.5" and an infinite double as Infinity, which is not
    JSON (a strict reader refuses the whole output)."""
    sql = "SELECT 1.5 AS x, 2.5::DECIMAL(10, 2) AS d, 'inf'::DOUBLE AS y, 'nan'::DOUBLE AS n, round(avg(wait_mean_s), 1) AS w FROM runs"
    code, stdout, err = _cli(["runs", sweep8["out"], "--sql", sql, "--format", "json"], capsys)
    assert code == 0, err
    rows = json.loads(stdout, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert rows[0]["x"] == 1.5 and rows[0]["d"] == 2.5 and rows[0]["y"] is None and rows[0]["n"] is None
    assert isinstance(rows[0]["w"], float)
    code, stdout, _ = _cli(["runs", sweep8["out"], "--sql", sql, "--format", "csv"], capsys)
    assert code == 0 and stdout.splitlines()[1].split(",")[:4] == ["1.5", "2.5", "inf", ""]


@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_runs_sql_prints_a_timestamp_with_time_zone(sweep8, capsys, fmt):
    """A TIMESTAMPTZ column failed every format with "Required module 'pytz' failed to
    import": DuckDB's own conversion to Python needs pytz, which is not a dependency."""
    sql = "SELECT TIMESTAMPTZ '2024-01-02 03:04:05+00' AS t, TIMESTAMP '2024-01-02 03:04:05' AS naive, count(*) AS n FROM runs"
    code, stdout, err = _cli(["runs", sweep8["out"], "--sql", sql, "--format", fmt], capsys)
    assert code == 0, err
    want = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    if fmt == "json":
        (row,) = json.loads(stdout)
    elif fmt == "csv":
        (row,) = csv.DictReader(io.StringIO(stdout))
    else:
        # the table: one data row, its cells between the box's vertical bars
        line = next(ln for ln in stdout.splitlines() if "2024-01-02T03:04:05" in ln)
        row = dict(zip(["t", "naive", "n"], [c.strip() for c in line.strip("│ ").split("│")]))
    # in the session's time zone, whichever it is: the same instant
    assert datetime.fromisoformat(row["t"]) == want and datetime.fromisoformat(row["t"]).tzinfo is not None
    assert row["naive"] == "2024-01-02T03:04:05" and int(row["n"]) == 8


def test_runs_lists_the_network_setting_that_tells_two_runs_apart(tmp_path, capsys):
    """Two runs that differ only by their network setting were listed as two identical
    rows by default (`network` was not among the default columns)."""
    toml = tmp_path / "net.toml"
    toml.write_text(
        f'[[workloads]]\nname = "atlas"\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["days:1"]\n\n'
        '[[fabrics]]\nsystem = "cab"\n\n[policies]\nalloc = "linear"\n\n[scenarios]\nnetwork = ["bins", "heavy"]\n'
    )
    out = tmp_path / "out"
    assert main(["sweep", str(toml), "--out", str(out), "--workers", "1", "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    code, stdout, _ = _cli(["runs", out, "--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(stdout)))
    assert code == 0 and [r["network"] for r in rows] == ["bins", "heavy"], stdout
    # the rows differ by more than their run ids
    assert len({tuple(v for k, v in r.items() if k != "run_id") for r in rows}) == 2


def test_a_sweep_file_mistake_names_its_line(tmp_path, capsys):
    """Each problem names the file's line of its key (or of the table or array holding it),
    not only its path: a typo in a key of a long file is found without counting tables.
    Expected lines read off the text below by hand."""
    toml = tmp_path / "typo.toml"
    toml.write_text(
        f'name = "t"\n'  # 1
        f"[[workloads]]\n"  # 2
        f'trace = "{EXAMPLE_TRACE}"\n'  # 3
        f"transforms = [\n"  # 4
        f'  "days:1",\n'  # 5
        f'  "scal:2",\n'  # 6
        f"]\n"  # 7
        f"\n"  # 8
        f"[[fabrics]]\n"  # 9
        f'system = "cab"\n'  # 10
        f"[[fabrics]]\n"  # 11
        f'preset = "cab"\n'  # 12
        f"fattree = {{ K = 18, S = 18, P = 4, Q = 1 }}\n"  # 13
        f"[policies]\n"  # 14
        f'alloc = ["linear", "isolate"]\n'  # 15
        f"[scenarios]\n"  # 16
        f"seed = [1]\n"  # 17
    )
    code, _, err = _cli(["sweep", toml, "--out", tmp_path / "o"], capsys)
    lines = err.strip().splitlines()
    got = [(int(m.group(1)), m.group(2)) for m in (re.match(rf"error: {re.escape(str(toml))}:(\d+): ([^:]+): ", x) for x in lines) if m]
    assert code == 2 and len(got) == len(lines), err
    assert got == [
        (4, "workloads[0].transforms[1]"),  # the line of its array's key
        (12, "fabrics[1].preset"),
        (13, "fabrics[1].fattree.Q"),
        (15, "policies.alloc[1]"),
        (17, "scenarios.seed"),
    ], err
    # a sub-table of an array of tables: [workloads.reader] belongs to the last [[workloads]]
    from toposched.sweep import SweepSpecError, parse_sweep

    text = f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\n[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\n[workloads.reader]\ncores_per_nod = 8\n[[fabrics]]\nsystem = "cab"\n'
    with pytest.raises(SweepSpecError) as e:
        parse_sweep(text, "r.toml")
    assert e.value.lines == ["r.toml:6: workloads[1].reader.cores_per_nod: unknown key 'cores_per_nod' (did you mean 'cores_per_node'?); expected one of: lenient, cores_per_node, size_field, missing_walltime, missing_runtime"]


@pytest.mark.parametrize("workers", [0, -2])
def test_run_sweep_refuses_a_worker_count_below_1(tmp_path, workers):
    """--workers 0 is refused by the command line; run_sweep(workers=0) ran on every core
    and workers=-2 on one process, silently."""
    from toposched.sweep import parse_sweep
    from toposched.sweep.runner import run_sweep

    sweep = parse_sweep(f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["days:1"]\n[[fabrics]]\nsystem = "cab"\n', tmp_path / "s.toml")
    with pytest.raises(ValueError, match=r"run_sweep\(\): workers must be a whole number >= 1"):
        run_sweep(sweep, tmp_path / "out", workers=workers, progress=False, report=False)
    assert not (tmp_path / "out").exists()


def test_as_logged_runs_with_the_network_model_are_refused_with_the_file(tmp_path):
    """A sweep crossing alloc as-logged with a network setting passed the file's check and
    every such run failed ("the network model cannot move them"); the file is now refused
    naming the line, unless an [[exclude]] leaves those runs out."""
    from toposched.sweep import SweepSpecError, parse_sweep

    text = (f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\n[[fabrics]]\nsystem = "cab"\n'
            '[policies]\nalloc = ["linear", "as-logged"]\n[scenarios]\nnetwork = ["bins"]\n')
    with pytest.raises(SweepSpecError) as e:
        parse_sweep(text, tmp_path / "s.toml")
    assert [where for where, _ in e.value.problems] == ["policies.alloc[1]"]
    assert e.value.lines[0].startswith(f"{tmp_path / 's.toml'}:6: policies.alloc[1]: as-logged replays the log's own start and end times")
    sweep = parse_sweep(text + '[[exclude]]\nalloc = "as-logged"\nnetwork = "bins"\n', tmp_path / "s.toml")
    assert [r.spec["config"]["alloc"] for r in sweep.runs] == ["linear"]


def test_a_sweep_file_with_a_byte_order_mark_reads(tmp_path, capsys):
    """A sweep file saved with a UTF-8 byte order mark (Windows editors) was 'not valid
    TOML: Invalid statement (column 1)'; --network spec files with one already read."""
    toml = tmp_path / "bom.toml"
    toml.write_bytes(b"\xef\xbb\xbf" + f'[[workloads]]\r\ntrace = "{EXAMPLE_TRACE}"\r\n[[fabrics]]\r\nsystem = "cab"\r\n'.encode())
    code, stdout, err = _cli(["sweep", toml, "--out", tmp_path / "o", "--dry-run"], capsys)
    assert code == 0 and "1 runs, 0 complete, 1 to run" in stdout, (stdout, err)
    toml.write_bytes(b"\xef\xbb\xbf" + f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\n[[fabrics]]\nsytem = "cab"\n'.encode())
    code, _, err = _cli(["sweep", toml, "--dry-run"], capsys)
    assert code == 2 and err.startswith(f"error: {toml}:4: fabrics[0].sytem: unknown key"), err


def test_a_topology_conf_whose_name_starts_with_fattree_is_a_file(tmp_path):
    """system = "fattree-site.conf" was read as fattree:K=.. parameters ("missing
    nodes_per_leaf, ..."), not as the topology.conf beside the sweep file."""
    from toposched.sweep import parse_sweep

    (tmp_path / "fattree-site.conf").write_text("SwitchName=s1 Nodes=n[1-4]\nSwitchName=s2 Nodes=n[5-8]\nSwitchName=top Switches=s1,s2\n")
    text = f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\ntransforms = ["drop"]\n[[fabrics]]\nsystem = "fattree-site.conf"\n'
    runs = parse_sweep(text, "f.toml", base=tmp_path).runs
    assert [r.labels["fabric"] for r in runs] == ["fattree-site.conf"]

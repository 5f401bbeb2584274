"""`toposched compare` as a sweep (issue 11): its runs are published whole with a marker,
a killed comparison started again runs only what is missing and writes the same
compare.json, `toposched runs` lists a comparison's runs, and the number of workers does
not change the result."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import EXAMPLE_TRACE, HPC2N_SUBSET
from toposched.cli import main
from toposched.compare import run_compare

SMALL_FABRIC = "fattree:K=12,S=5,P=2"
# 6 runs: linear none; isolated none, ta10, v1, v2; random none
KILL_OPTS = dict(allocs=["linear", "isolated", "random"], scenarios=["none", "ta10", "v1", "v2"], transforms=["days:60"], seed=3)
KILL_NAMES = ["linear__none", "isolated__none", "isolated__ta10", "isolated__v1", "isolated__v2", "random__none"]


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


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _published(runs: Path) -> list[Path]:
    return sorted(p for p in runs.iterdir() if not p.name.startswith(".")) if runs.is_dir() else []


def test_killed_compare_resumes_running_only_the_missing_runs(tmp_path):
    out = tmp_path / "out"
    runs = out / "runs"
    argv = [sys.executable, "-m", "toposched.cli", "compare", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--out", str(out),
            "--allocs", ",".join(KILL_OPTS["allocs"]), "--scenarios", ",".join(KILL_OPTS["scenarios"]), "--transform", "days:60",
            "--seed", "3", "--jobs", "2", "--no-report", "--quiet"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert _wait_for(lambda: bool(_published(runs)), 120), proc.communicate(timeout=5)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        # the pool's workers notice their driver is gone; make sure of it
        if not _wait_for(lambda: not _group_alive(proc.pid), 15, 0.1):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.stdout.close()
        proc.stderr.close()
    done = _published(runs)
    assert 1 <= len(done) < len(KILL_NAMES), "the comparison should be killed midway"
    assert not (out / "compare.json").exists()
    kept = {}
    for d in done:  # what the kill left that looks like a result is a whole result
        marker = json.loads((d / "run.json").read_text())
        assert marker["status"] == "complete" and d.name in KILL_NAMES
        kept[d.name] = (_sha(d / "run.json"), _sha(d / "jobs.parquet"))

    # started again: the progress callback names every run executed now
    calls: list[tuple[int, int, str]] = []
    again = run_compare(EXAMPLE_TRACE, "cab", out, jobs=1, progress=lambda d, t, n: calls.append((d, t, n)), **KILL_OPTS)
    assert calls[0] == (len(kept), len(KILL_NAMES), "")
    executed = [n for _, _, n in calls[1:]]
    assert sorted(executed) == sorted(set(KILL_NAMES) - set(kept))
    # the kept runs were not run again (their marker records when and where they ran)
    assert {n: (_sha(runs / n / "run.json"), _sha(runs / n / "jobs.parquet")) for n in kept} == kept
    assert sorted(p.name for p in runs.iterdir()) == sorted(KILL_NAMES)  # no temporary directory left

    # the same compare.json as a comparison never interrupted
    fresh = run_compare(EXAMPLE_TRACE, "cab", tmp_path / "fresh", jobs=2, **KILL_OPTS)
    assert (out / "compare.json").read_bytes() == fresh.compare_json.read_bytes()
    assert [r["dir"] for r in again.document["runs"]] == [f"runs/{n}" for n in KILL_NAMES]
    for n in KILL_NAMES:
        assert (runs / n / "jobs.parquet").read_bytes() == (tmp_path / "fresh" / "runs" / n / "jobs.parquet").read_bytes()


def test_runs_command_lists_a_comparisons_runs(tmp_path, capsys):
    out = tmp_path / "cmp"
    r = run_compare(HPC2N_SUBSET, SMALL_FABRIC, out, allocs=["linear", "isolated"], scenarios=["none", "ta10"], transforms=["scale:2"], seed=1, jobs=1)
    capsys.readouterr()
    assert main(["runs", str(out), "--columns", "run_id,status,alloc,speedup,seed,transforms,dir,makespan_s", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    expected = [(x["alloc"], x["scenario"], x["dir"]) for x in r.document["runs"]]
    assert [(row["alloc"], row["speedup"], row["dir"]) for row in rows] == expected  # plan order
    for row, run in zip(rows, r.document["runs"]):
        marker = json.loads((out / run["dir"] / "run.json").read_text())
        assert row["run_id"] == marker["run_id"] and row["status"] == "complete"
        assert row["seed"] == 1 and row["transforms"] == "scale:2"
        assert row["makespan_s"] == run["summary"]["makespan_s"]
    # the jobs view names each job's run by its run id, not by its directory
    assert main(["runs", str(out), "--sql", "SELECT run_id, count(*) AS n FROM jobs GROUP BY run_id ORDER BY run_id", "--format", "json"]) == 0
    counts = {x["run_id"]: x["n"] for x in json.loads(capsys.readouterr().out)}
    assert counts == {row["run_id"]: run["summary"]["jobs"]["replayed"] for row, run in zip(rows, r.document["runs"])}


def test_jobs_1_and_2_write_the_same_compare_json(tmp_path, capsys):
    base = ["compare", "--trace", str(HPC2N_SUBSET), "--system", SMALL_FABRIC, "--allocs", "linear,isolated,random",
            "--scenarios", "none,v2", "--seed", "7", "--no-report", "--quiet"]
    assert main(base + ["--jobs", "1", "--out", str(tmp_path / "one")]) == 0
    assert main(base + ["--jobs", "2", "--out", str(tmp_path / "two")]) == 0
    one = (tmp_path / "one" / "compare.json").read_bytes()
    assert one == (tmp_path / "two" / "compare.json").read_bytes()
    assert [r["dir"] for r in json.loads(one)["runs"]] == ["runs/linear__none", "runs/isolated__none", "runs/isolated__v2", "runs/random__none"]


def test_changed_settings_replace_the_named_runs(tmp_path):
    """A run directory is named by its alloc and scenario, not by its settings: a compare
    started again with another seed runs every run again and replaces the directories."""
    out = tmp_path / "cmp"
    opts = dict(allocs=["linear", "isolated"], scenarios=["none", "v1"], jobs=1)
    first = run_compare(HPC2N_SUBSET, SMALL_FABRIC, out, seed=1, **opts)
    ids = {r["dir"]: json.loads((out / r["dir"] / "run.json").read_text())["run_id"] for r in first.document["runs"]}
    calls: list[str] = []
    second = run_compare(HPC2N_SUBSET, SMALL_FABRIC, out, seed=2, progress=lambda d, t, n: calls.append(n), **opts)
    assert calls[0] == "" and sorted(calls[1:]) == sorted(n.removeprefix("runs/") for n in ids)
    for r in second.document["runs"]:
        marker = json.loads((out / r["dir"] / "run.json").read_text())
        assert marker["run_id"] != ids[r["dir"]]
        assert json.loads((out / r["dir"] / "summary.json").read_text())["policy"]["seed"] == 2 == r["summary"]["policy"]["seed"]
    fresh = run_compare(HPC2N_SUBSET, SMALL_FABRIC, tmp_path / "fresh", seed=2, **opts)
    assert fresh.compare_json.read_bytes() == second.compare_json.read_bytes()


def test_dask_gives_the_same_compare_json_as_the_process_pool(tmp_path):
    """--dask: the runs go to a local Dask cluster; the files are the same."""
    opts = dict(allocs=["linear", "isolated"], scenarios=["none", "v1"], transforms=["scale:2"], seed=4)
    pool = run_compare(HPC2N_SUBSET, SMALL_FABRIC, tmp_path / "pool", jobs=1, **opts)
    dask = run_compare(HPC2N_SUBSET, SMALL_FABRIC, tmp_path / "dask", jobs=2, dask=True, **opts)
    assert dask.compare_json.read_bytes() == pool.compare_json.read_bytes()
    for r in pool.document["runs"]:
        marker = json.loads((tmp_path / "dask" / r["dir"] / "run.json").read_text())
        assert marker["status"] == "complete" and marker["pid"] != os.getpid()  # ran on a Dask worker
        assert (tmp_path / "dask" / r["dir"] / "jobs.parquet").read_bytes() == (tmp_path / "pool" / r["dir"] / "jobs.parquet").read_bytes()


def test_a_complete_run_missing_a_file_is_run_again(tmp_path):
    """A run directory whose marker says complete but whose summary.json (or jobs.parquet)
    was deleted was kept as complete: the comparison then ended with
    "summary.json: No such file or directory" (status 2), and started again, the same.
    Such a run is run again, and the result is the fresh comparison's, byte for byte."""
    out = tmp_path / "cmp"
    opts = dict(allocs=["linear", "isolated"], scenarios=["none", "ta10"], seed=1, jobs=1)
    run_compare(HPC2N_SUBSET, SMALL_FABRIC, out, **opts)
    (out / "runs" / "isolated__ta10" / "summary.json").unlink()
    (out / "runs" / "linear__none" / "jobs.parquet").unlink()
    calls: list[str] = []
    again = run_compare(HPC2N_SUBSET, SMALL_FABRIC, out, progress=lambda d, t, n: calls.append(n), **opts)
    assert calls[0] == "" and sorted(calls[1:]) == ["isolated__ta10", "linear__none"]  # those two only
    fresh = run_compare(HPC2N_SUBSET, SMALL_FABRIC, tmp_path / "fresh", **opts)
    assert again.compare_json.read_bytes() == fresh.compare_json.read_bytes()
    for name in ("isolated__ta10", "linear__none"):
        assert _sha(out / "runs" / name / "jobs.parquet") == _sha(tmp_path / "fresh" / "runs" / name / "jobs.parquet")


def test_a_second_compare_on_a_busy_directory_keeps_the_first_ones_compare_json(tmp_path, capsys):
    """compare deleted DIR/compare.json before it took DIR's lock: a second compare started
    on DIR while the first ran failed on the lock having already deleted the first's file.
    The lock comes first now; the second says so, in one line, and deletes nothing."""
    from toposched.sweep.layout import SweepLock

    out = tmp_path / "out"
    out.mkdir()
    (out / "compare.json").write_text("{}\n")
    with SweepLock(out.resolve()):  # the first compare, still running
        code = main(["compare", "--trace", str(HPC2N_SUBSET), "--system", SMALL_FABRIC, "--allocs", "linear", "--jobs", "1", "--out", str(out), "--quiet", "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and err == f"error: {out.resolve()}: another toposched sweep, compare or frontier is working on this directory (lock {out.resolve() / '.lock'} is held)\n"
    assert (out / "compare.json").read_text() == "{}\n"

"""`toposched compare` and `toposched demo`: the run plan, the output folder, byte-identical
repeats (serial and parallel), the report hook, and the paper's qualitative APH finding."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import EXAMPLE_TRACE, HPC2N_SUBSET
from toposched.cli import main
from toposched.compare import plan_runs, run_compare, run_name
from toposched.errors import InputError
from toposched.policies import AllocationPolicy

SMALL_FABRIC = "fattree:K=12,S=5,P=2"
RUN_FILES = {"jobs.parquet", "utilization.parquet", "skipped.parquet", "summary.json", "fabric.json"}
#: a run directory as the sweep runner publishes it: simulate's files, the run's
#: specification, and its marker (written last; it records when and where, so it differs
#: between two executions)
SWEEP_FILES = {"spec.json", "run.json"}


def files(root: Path) -> dict[str, bytes]:
    """The results of a comparison: compare.json and every run's files but its marker (the
    markers, plan.json, catalog and lock record when and where it ran)."""
    keep = [root / "compare.json"] + [p for p in sorted((root / "runs").rglob("*")) if p.is_file() and p.name != "run.json"]
    return {str(p.relative_to(root)): p.read_bytes() for p in keep}


def test_plan_every_alloc_runs_none_and_only_topology_aware_ones_run_scenarios():
    assert plan_runs(["linear", "isolated"], ["none", "ta10", "v2"]) == [
        ("linear", "none"), ("isolated", "none"), ("isolated", "ta10"), ("isolated", "v2"),
    ]
    # none is always run (first when not listed); order as given; random is oblivious
    assert plan_runs(["isolated", "random", "linear"], ["v1", "ta5"]) == [
        ("isolated", "none"), ("isolated", "v1"), ("isolated", "ta5"), ("random", "none"), ("linear", "none"),
    ]
    assert plan_runs(["linear", "linear"], ["ta5", "none"]) == [("linear", "none")]
    # slurm-tree and Python policies are topology-aware; as-logged is the log's own schedule
    assert plan_runs(["as-logged", "slurm-tree", "mymod:Pack"], ["none", "ta5"]) == [
        ("as-logged", "none"), ("slurm-tree", "none"), ("slurm-tree", "ta5"), ("mymod:Pack", "none"), ("mymod:Pack", "ta5"),
    ]
    assert run_name("mymod:Pack", "ta5") == "mymod-Pack__ta5"
    with pytest.raises(InputError, match="unknown allocation policy 'tree'"):
        plan_runs(["linear", "tree"], ["none"])
    with pytest.raises(InputError, match="unknown scenario 'ta15'"):
        plan_runs(["linear"], ["ta15"])


@pytest.fixture(scope="module")
def hpc2n_pair(tmp_path_factory):
    """The same comparison twice: once in two worker processes, once in this process."""
    trace = HPC2N_SUBSET
    root = tmp_path_factory.mktemp("compare")
    opts = dict(allocs=["linear", "isolated"], scenarios=["none", "ta10", "v1"], transforms=["scale:2"], seed=5)
    a = run_compare(trace, SMALL_FABRIC, root / "a", jobs=2, **opts)
    b = run_compare(trace, SMALL_FABRIC, root / "b", jobs=1, **opts)
    return trace, a, b


def test_compare_writes_run_dirs_and_compare_json(hpc2n_pair):
    trace, a, _ = hpc2n_pair
    out = a.out_dir
    names = ["linear__none", "isolated__none", "isolated__ta10", "isolated__v1"]
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(names)
    for n in names:
        assert {p.name for p in (out / "runs" / n).iterdir()} == RUN_FILES | SWEEP_FILES
    doc = json.loads((out / "compare.json").read_text())
    assert doc == a.document
    assert doc["trace"] == str(trace) and doc["system"] == SMALL_FABRIC and doc["queue"] == "easy"
    assert doc["transforms"] == ["scale:2"] and doc["seed"] == 5
    assert [(r["alloc"], r["scenario"]) for r in doc["runs"]] == [tuple(n.split("__")) for n in names]
    for r in doc["runs"]:
        assert r["dir"] == f"runs/{r['alloc']}__{r['scenario']}"
        on_disk = json.loads((out / r["dir"] / "summary.json").read_text())
        assert r["summary"] == on_disk
        assert on_disk["policy"]["alloc"] == r["alloc"] and on_disk["policy"]["seed"] == 5
        assert on_disk["input"]["settings"]["transforms"] == ["scale:2"]
        assert on_disk["input"]["settings"]["scenario"]["name"] == r["scenario"]
        assert on_disk["complete"] is True
    by = {(r["alloc"], r["scenario"]): r["summary"] for r in doc["runs"]}
    # scenarios reach the topology-aware runs only, and shorten run times there
    assert "scenario_sped_up" not in by[("linear", "none")]["input"]["repairs"]
    assert by[("isolated", "ta10")]["input"]["repairs"]["scenario_sped_up"] > 0
    assert by[("isolated", "v1")]["input"]["repairs"]["scenario_sped_up"] > 0
    assert by[("isolated", "none")]["input"]["repairs"]["transform_scaled_nodes"] > 0
    jobs_none = pq.read_table(out / "runs/isolated__none/jobs.parquet").column("log_runtime_s").to_numpy()
    jobs_ta10 = pq.read_table(out / "runs/isolated__ta10/jobs.parquet").column("log_runtime_s").to_numpy()
    assert jobs_ta10.sum() < jobs_none.sum()


def test_compare_is_byte_identical_serial_and_parallel(hpc2n_pair):
    _, a, b = hpc2n_pair
    fa, fb = files(a.out_dir), files(b.out_dir)
    assert fa.keys() == fb.keys() and len(fa) == 4 * 6 + 1
    for k in fa:
        assert fa[k] == fb[k], k


def test_isolated_keeps_jobs_more_compact_than_linear(hpc2n_pair):
    # SC18's finding: topology-oblivious placement has a higher APH than isolated
    _, a, _ = hpc2n_pair
    by = {(r["alloc"], r["scenario"]): r["summary"] for r in a.document["runs"]}
    assert by[("linear", "none")]["aph"]["mean"] >= by[("isolated", "none")]["aph"]["mean"]
    for b_lin, b_iso in zip(by[("linear", "none")]["by_size"], by[("isolated", "none")]["by_size"]):
        assert b_lin["bin"] == b_iso["bin"]
        if b_lin["aph"]["mean"] is not None:
            assert b_lin["aph"]["mean"] >= b_iso["aph"]["mean"] - 1e-9, b_lin["bin"]


def test_atlas_on_cab_linear_aph_at_least_isolated(tmp_path):
    r = run_compare(EXAMPLE_TRACE, "cab", tmp_path, allocs=["linear", "isolated"], scenarios=["none"], transforms=["days:20"], jobs=1)
    s = {run["alloc"]: run["summary"] for run in r.document["runs"]}
    assert s["linear"]["aph"]["mean"] > s["isolated"]["aph"]["mean"]
    assert s["isolated"]["input"]["skipped"]["transform_outside_window"] > 0


def _fake_reporting(monkeypatch, calls):
    import toposched.reporting as mod

    def build_compare_report(out_dir):
        calls.append(Path(out_dir))
        assert (Path(out_dir) / "compare.json").exists()
        p = Path(out_dir) / "report.html"
        p.write_text("<html></html>")
        return p

    monkeypatch.setattr(mod, "build_compare_report", build_compare_report)


def test_cli_compare_prints_table_and_report(tmp_path, capsys, monkeypatch):
    trace = HPC2N_SUBSET
    calls: list[Path] = []
    _fake_reporting(monkeypatch, calls)
    monkeypatch.setenv("COLUMNS", "150")
    out = tmp_path / "cmp"
    argv = ["compare", "--trace", str(trace), "--system", SMALL_FABRIC, "--allocs", "linear,isolated",
            "--scenarios", "none,ta20", "--transform", "days:30", "cap", "--jobs", "1", "--out", str(out)]
    assert main(argv) == 0
    stdout = capsys.readouterr().out
    for word in ("policy", "scenario", "bsld", "util %", "APH", "linear", "isolated", "ta20", "Verdict:", "Caveats:"):
        assert word in stdout
    # times in one unit per column, named in the header
    assert re.search(r"wait (s|min|h|days)", stdout) and re.search(r"makespan (s|min|h|days)", stdout)
    assert f"report: {out / 'report.html'}" in stdout
    assert calls == [out]
    doc = json.loads((out / "compare.json").read_text())
    assert doc["transforms"] == ["days:30", "cap:120"]  # cap alone: the fabric's 120 nodes
    assert len(doc["runs"]) == 3
    calls.clear()
    assert main(argv + ["--no-report"]) == 0
    assert calls == [] and "report:" not in capsys.readouterr().out


def test_a_report_that_cannot_be_written_is_one_line_and_the_results_are_printed(tmp_path, capsys):
    """A report.html that could not be written (here a directory in its place; a full disk,
    a read-only directory) printed the whole traceback before its error line."""
    out = tmp_path / "cmp"
    (out / "report.html").mkdir(parents=True)
    argv = ["compare", "--trace", str(HPC2N_SUBSET), "--system", SMALL_FABRIC, "--allocs", "linear",
            "--scenarios", "none", "--transform", "days:5", "--jobs", "1", "--out", str(out)]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.err.strip().splitlines()[-1] == f"error: building the report failed: {out / 'report.html'}: is a directory; give a file name"
    assert "linear" in captured.out and (out / "compare.json").is_file()


def test_cli_compare_bad_inputs(tmp_path, capsys):
    trace = HPC2N_SUBSET
    base = ["compare", "--trace", str(trace), "--system", SMALL_FABRIC, "--out", str(tmp_path / "x"), "--no-report"]
    assert main(base + ["--transform", "scale:x"]) == 2
    err = capsys.readouterr().err
    assert "error: --transform: cannot read 'scale:x'" in err and "expected one of" in err
    assert main(base + ["--allocs", "linear,tree"]) == 2
    assert "unknown allocation policy 'tree'" in capsys.readouterr().err
    assert main(base + ["--scenarios", "none,ta15"]) == 2
    assert "unknown scenario 'ta15'" in capsys.readouterr().err
    assert main(base + ["--transform", "days:1@10000"]) == 2
    assert "no jobs left to replay" in capsys.readouterr().err
    assert not (tmp_path / "x" / "compare.json").exists()
    # what would fail every run of a policy fails once, before any run (each run failed
    # on its own, with a traceback file, after the others had run)
    assert main(base + ["--allocs", "linear,as-logged"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("as-logged needs the hosts and start time of every job, and this swf log gives none; node lists come from extended SWF (a {n,n,...} 19th field), sacct (NodeList) and PBS (exec_host) (the format is guessed from the first record: if later records have {n,n,...} node lists, --format swf-nodes reads them)")
    assert main(base + ["--allocs", "linear,no_such_module_here:P"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: policy 'no_such_module_here:P': cannot import module 'no_such_module_here': No module named 'no_such_module_here'"
    assert not (tmp_path / "x" / "runs").exists()


def test_demo_runs_the_bundled_trace(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--no-report", "--jobs", "1"]) == 0
    doc = json.loads((out / "compare.json").read_text())
    # scaled so that cab is busy: as logged, this window barely loads it
    assert doc["system"] == "cab" and doc["transforms"] == ["days:60", "scale:3"]
    assert [(r["alloc"], r["scenario"]) for r in doc["runs"]] == [
        ("linear", "none"), ("isolated", "none"), ("isolated", "ta10"), ("isolated", "v2"),
    ]
    assert Path(doc["trace"]).name == EXAMPLE_TRACE.name
    out_text = capsys.readouterr().out
    assert "linear" in out_text and "Verdict:" in out_text and "points of utilization" in out_text


class BadPolicy(AllocationPolicy):
    """Answers with one node too few (named by import path below, so that the spawned
    workers import it)."""

    fungible = True

    def select(self, nodes, free):
        return [int(x) for x in free[: nodes - 1]] if len(free) >= nodes else None


def test_a_failing_run_stops_the_comparison_with_its_name(tmp_path, capsys):
    trace = HPC2N_SUBSET
    argv = ["compare", "--trace", str(trace), "--system", SMALL_FABRIC, "--allocs", "linear,test_compare:BadPolicy",
            "--scenarios", "none", "--jobs", "2", "--no-report", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error: run test_compare-BadPolicy__none:" in err
    assert not (tmp_path / "compare.json").exists()


def test_an_empty_scenario_list_is_refused(tmp_path) -> None:
    """`--scenarios ""` (a shell variable left empty) ran `none` alone without a word."""
    with pytest.raises(InputError, match=r"^--scenarios: no scenario given; expected some of none, ta5"):
        plan_runs(["linear"], [])
    with pytest.raises(InputError, match="no scenario given"):
        plan_runs(["linear"], [" ", ""])
    assert main(["compare", "--trace", str(Path(__file__).parent / "data" / "atlas-window-120.swf"), "--system", "cab", "--scenarios", "", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("keyword, value", [("allocs", "isolated"), ("scenarios", "none"), ("transforms", "days:1")])
def test_a_bare_string_for_a_list_is_refused_naming_the_keyword(tmp_path, keyword, value):
    """A notebook's run_compare(..., allocs="isolated") read the string one letter at a
    time and stopped with "unknown allocation policy 'i'" (transforms="days:1": "unknown
    transform 'd'"), naming neither the keyword nor the mistake. Refused before the log is
    read; nothing is written."""
    kwargs = {"allocs": ["linear"], "scenarios": ["none"], "jobs": 1, keyword: value}
    with pytest.raises(TypeError) as exc:
        run_compare(EXAMPLE_TRACE, "cab", tmp_path / "c", **kwargs)
    assert str(exc.value) == f"run_compare(): {keyword} must be a list of strings, e.g. {keyword}=[{value!r}], got the string {value!r}"
    assert not (tmp_path / "c").exists()
    with pytest.raises(TypeError, match=r"^plan_runs\(\): allocs must be a list of strings"):
        plan_runs("linear", ["none"])


def test_a_reader_that_leaves_early_still_gets_the_report(tmp_path):
    """`toposched compare ... | head -1`: the summary table was printed before the report
    was built, so the closed pipe ended the command (141) with compare.json but no
    report.html or figures. The report is built first."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "toposched.cli", "compare", "--trace", str(HPC2N_SUBSET), "--system", "fattree:K=12,S=5,P=2",
             "--scenarios", "none", "--jobs", "1", "--out", str(tmp_path)],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=600,
        )
    finally:
        os.close(write_end)
    assert r.returncode == 141 and "error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert (tmp_path / "compare.json").exists() and (tmp_path / "report.html").exists() and any((tmp_path / "figures").iterdir())


def test_check_invariants_applies_to_the_runs_that_promise_it(tmp_path):
    """compare --check-invariants (default allocs linear,isolated) failed: the check went
    to every run, and linear, which shares switches by design, broke it ("interference-free
    invariant broken at t=...: leaf 7 hosts spanning jobs"). It now goes to isolated's runs
    only, and is refused when no run's policy promises it."""
    from toposched.frontier import run_frontier

    opts = dict(allocs=["linear", "isolated"], scenarios=["none"], jobs=1, run_options={"check_interference_free": True})
    r = run_compare(EXAMPLE_TRACE, "cab", tmp_path / "c", transforms=["days:3", "scale:2"], **opts)
    checked = {x["alloc"]: x["summary"]["policy"]["check_interference_free"] for x in r.document["runs"]}
    assert checked == {"linear": False, "isolated": True}
    # linear's placements do share leaves here: checked, its run would have failed
    assert r.document["runs"][0]["summary"]["aph"]["mean"] > r.document["runs"][1]["summary"]["aph"]["mean"]
    with pytest.raises(InputError) as exc:
        run_compare(EXAMPLE_TRACE, "cab", tmp_path / "c2", **{**opts, "allocs": ["linear", "random"]})
    assert str(exc.value) == "--check-invariants: has no effect with --allocs linear,random; it applies to isolated, or a policy written in Python"
    f = run_frontier(EXAMPLE_TRACE, "cab", tmp_path / "f", policies=["isolated"], transforms=["days:3"], jobs=1, run_options={"check_interference_free": True})
    assert [p["policy"] for p in f.document["points"]] == ["linear", "isolated"]
    for run, expected in (("linear__open", False), ("isolated__open", True), ("isolated__net", True)):
        assert json.loads((tmp_path / "f" / "runs" / run / "summary.json").read_text())["policy"]["check_interference_free"] is expected


@pytest.mark.parametrize("command", ["compare", "frontier"])
@pytest.mark.parametrize(
    "rules, expect",
    [
        (None, "field 'column': the workload has no column 'nope'"),  # --network column:nope
        ("app,pattern,comm_fraction\nlammps,a2a,0.3\n,none,0\n", "rules.csv:2: field 'app': this workload (swf) gives app as numbers"),
    ],
)
def test_a_network_spec_the_workload_cannot_take_is_one_line_before_any_run(tmp_path, capsys, command, rules, expect):
    """A --network spec that reads but does not fit the log (a column it lacks, an
    application name where an SWF log numbers them) passed the up-front check and failed
    in every run: a worker's traceback file per run, several lines per failure. It is
    now refused before any run, in the line simulate gives."""
    spec = "column:nope"
    if rules is not None:
        (tmp_path / "rules.csv").write_text(rules)
        spec = str(tmp_path / "rules.csv")
    what = ["--allocs", "linear", "--scenarios", "none"] if command == "compare" else ["--policies", "linear"]
    out = tmp_path / "out"
    code = main([command, "--trace", str(EXAMPLE_TRACE), "--transform", "days:1", "--system", "cab", *what,
                 "--network", spec, "--jobs", "1", "--out", str(out), "--quiet", "--no-report"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and expect in err[0], err
    assert not (out / "runs").exists() or not any((out / "runs").iterdir())


@pytest.mark.parametrize("jobs", [0, -1, 1.5, True])
def test_run_compare_and_run_frontier_refuse_a_worker_count_below_1(tmp_path, jobs):
    """--jobs 0 is refused by the command line, but run_compare(jobs=0) ran on every core
    and jobs=-1 on one process, silently."""
    from toposched.frontier import run_frontier

    with pytest.raises(ValueError, match=r"run_compare\(\): jobs must be a whole number >= 1"):
        run_compare(EXAMPLE_TRACE, "cab", tmp_path / "c", allocs=["linear"], scenarios=["none"], jobs=jobs)
    with pytest.raises(ValueError, match=r"run_frontier\(\): jobs must be a whole number >= 1"):
        run_frontier(EXAMPLE_TRACE, "cab", tmp_path / "f", policies=["linear"], jobs=jobs)
    assert not (tmp_path / "c").exists() and not (tmp_path / "f").exists()


def test_as_logged_with_the_network_model_is_refused_before_any_run(tmp_path, capsys):
    """compare --allocs as-logged,... --network SPEC failed in the as-logged run's worker
    (three lines and a traceback file) after the others had run; the two do not go
    together, so it is now one line naming --network before anything runs."""
    from conftest import WAGAP  # a log with node lists, so that as-logged can run
    from toposched.aslogged import fabric_from_hosts, hosts_of, topology_conf_text
    from toposched.workload import read_trace

    conf = tmp_path / "wagap.conf"
    conf.write_text(topology_conf_text(fabric_from_hosts(hosts_of(read_trace(WAGAP)), 16, name="wagap-44")))
    out = tmp_path / "out"
    code = main(["compare", "--trace", str(WAGAP), "--transform", "days:2", "--system", str(conf), "--allocs", "as-logged,linear",
                 "--scenarios", "none", "--network", "bins", "--jobs", "1", "--out", str(out), "--quiet", "--no-report"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: --network: as-logged replays the log's own start and end times"), err
    assert not out.exists()


@pytest.mark.parametrize("command", ["compare", "frontier"])
def test_an_out_that_is_a_file_is_refused_before_the_log_is_read(tmp_path, capsys, command):
    """`compare --out README.md` read the whole log, then said "README.md: is a file, not a
    directory (in the way of README.md/runs)"; frontier read it too before its refusal.
    Both now refuse at once, in simulate's words."""
    a_file = tmp_path / "notes.md"
    a_file.write_text("x")
    broken = tmp_path / "broken.swf"  # read first, this log would stop the command with its own error
    broken.write_text("; MaxNodes: 16\n; MaxProcs: 16\n1 0 -1 x 4 -1 -1 4 200 -1 1 1 1 -1 1 1 -1 -1\n")
    code = main([command, "--trace", str(broken), "--system", "cab", "--out", str(a_file), "--jobs", "1", "--quiet", "--no-report"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"error: {a_file}: exists and is not a directory; give --out a new directory or an earlier {command} output"], err
    assert a_file.read_text() == "x"


def test_run_compare_and_run_frontier_take_a_path_for_the_fabric(tmp_path):
    """trace and out_dir are str | Path; a topology.conf given as a Path for system failed
    deep in the sweep's run specification ("'PosixPath' object has no attribute 'lower'"),
    after the log was read. It is recorded as the string it names."""
    from conftest import DATA, SLURM
    from toposched.frontier import run_frontier

    conf = SLURM / "ubccr_medium-cluster_topology.conf"
    trace = DATA / "atlas-window-120.swf"
    r = run_compare(trace, conf, tmp_path / "c", allocs=["linear"], scenarios=["none"], jobs=1)
    assert r.document["system"] == str(conf)
    f = run_frontier(trace, conf, tmp_path / "f", policies=["linear"], jobs=1)
    assert (tmp_path / "f" / "frontier.json").exists() and f is not None


@pytest.mark.parametrize("command", ["compare", "frontier"])
def test_an_input_error_is_said_alone_without_a_progress_line(tmp_path, command):
    """compare and frontier logged "comparing: started (? runs)" before reading their
    inputs, so that line came above the error of a missing trace."""
    r = subprocess.run(
        [sys.executable, "-m", "toposched.cli", command, "--trace", str(tmp_path / "nope.swf"), "--system", "cab", "--out", str(tmp_path / "out")],
        capture_output=True, text=True,
    )
    assert (r.returncode, r.stderr) == (2, f"error: {tmp_path / 'nope.swf'}: no such file\n")

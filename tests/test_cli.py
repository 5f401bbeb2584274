"""The command line as a user meets it: the happy path, help, and bad inputs."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from conftest import DATA, EXAMPLE_TRACE, HPC2N_SUBSET, SLURM
from toposched.cli import main

HEADER = "; MaxNodes: 16\n; MaxProcs: 16\n"
GOOD = "1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 1 -1 -1\n2 10 -1 50 2 -1 -1 2 60 -1 1 1 1 -1 1 1 -1 -1\n"


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_simulate_writes_results_and_check_passes(tmp_path, capsys):
    trace = HPC2N_SUBSET
    out = tmp_path / "run"
    code, stdout, _ = run(["simulate", "--trace", str(trace), "--system", "fattree:K=12,S=5,P=2", "--queue", "easy", "--alloc", "isolated", "--out", str(out)], capsys)
    assert code == 0
    assert "replayed" in stdout and "results in" in stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is True
    assert summary["policy"]["alloc"] == "isolated"
    assert summary["input"]["records"] == 3170
    jobs = pq.read_table(out / "jobs.parquet")
    assert len(jobs) == summary["jobs"]["replayed"]
    assert {"job_id", "submit_s", "start_s", "end_s", "wait_s", "nodes", "walltime_s", "runtime_s", "bounded_slowdown", "aph", "alloc_class", "node_ranges"} <= set(jobs.column_names)
    code, stdout, _ = run(["check", str(out), "--interference-free"], capsys)
    assert code == 0 and "schedule OK" in stdout


def test_every_policy_pair_runs_on_the_bundled_trace(tmp_path, capsys):
    for queue in ("fcfs", "easy"):
        for alloc in ("linear", "random", "isolated"):
            code, _, err = run(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--queue", queue, "--alloc", alloc, "--out", str(tmp_path / f"{queue}-{alloc}"), "--quiet"], capsys)
            assert code == 0, err


def test_installed_entry_point_and_help():
    exe = shutil.which("toposched")
    cmd = [exe] if exe else [sys.executable, "-m", "toposched.cli"]
    r = subprocess.run(cmd + ["simulate", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for word in ("--trace", "--system", "--queue", "--alloc", "--out", "fattree:K=", "examples:"):
        assert word in r.stdout
    r = subprocess.run(cmd + ["systems"], capture_output=True, text=True)
    assert r.returncode == 0 and "cab" in r.stdout and "1296 nodes" in r.stdout


@pytest.mark.parametrize(
    "body,expect",
    [
        (GOOD + "3 20 -1 50 2 -1 -1 2\n", [":5:", "requested_time", "18 fields"]),
        (GOOD + "3 20 -1 fifty 2 -1 -1 2 60 -1 1 1 1 -1 1 1 -1 -1\n", [":5:", "run_time", "fifty"]),
        ("", ["no job records"]),
    ],
    ids=["truncated-line", "text-in-numeric-field", "empty-file"],
)
def test_bad_trace_stops_with_file_line_and_field(tmp_path, capsys, body, expect):
    bad = tmp_path / "bad.swf"
    bad.write_text(HEADER + body if body else "")
    code, _, err = run(["simulate", "--trace", str(bad), "--system", "toy18", "--out", str(tmp_path / "o")], capsys)
    assert code == 2
    assert err.startswith("error: ") and str(bad) in err
    for e in expect:
        assert e in err, err
    assert not (tmp_path / "o" / "jobs.parquet").exists()


def _exit_code(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main(argv)
    return done.value.code, capsys.readouterr().err


def test_a_policy_option_the_policy_refuses_names_its_flag(tmp_path, capsys):
    code, err = _exit_code(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--alloc", "adaptive", "--slowdown-threshold", "-1", "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert code == 2
    line = err.strip().splitlines()[-1]
    # refused as the flag is read, against the option's schema minimum (the engine's own
    # refusal, "settings: adaptive: slowdown_threshold must be ... (set with
    # --slowdown-threshold)", came only in the runs: compare's and frontier's had started)
    assert line.startswith("toposched simulate: error: argument --slowdown-threshold: must be at least 0, got -1"), err
    code, err = _exit_code(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--alloc", "least-interference", "--assumed-phi", "5", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "argument --assumed-phi: must be at most 1, got 5" in err, err
    for command in ("compare", "frontier"):
        out = tmp_path / command
        code, err = _exit_code([command, "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--slowdown-threshold", "-1", "--out", str(out), "--quiet"], capsys)
        assert code == 2 and "argument --slowdown-threshold: must be at least 0, got -1" in err and not out.exists(), err


@pytest.mark.parametrize(
    "flags,flag",
    [
        (["--queue", "slurm", "--priority-weight-age", "5000000000"], "--priority-weight-age"),
        # (--bf-window-s 99999999999 was the second case: its range is the schema's now, so
        # argparse refuses it: tests/test_slurm_policies_adversarial.py)
    ],
    ids=["weight-beyond-32-bits"],
)
def test_a_policy_option_out_of_range_names_the_flag_not_the_log(tmp_path, capsys, flags, flag):
    """An option the CLI's schema check lets through but the policy refuses is a setting:
    one line naming the flag, not an error blamed on the trace file."""
    code, _, err = run(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", *flags, "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert code == 2
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: settings: ") and "out of range" in line and f"set with {flag}" in line, err
    assert str(EXAMPLE_TRACE) not in err
    assert not (tmp_path / "o" / "jobs.parquet").exists()


@pytest.mark.parametrize("queue,flag", [("slurm", "--partitions"), ("slurm-bf", "--sched-partitions")])
def test_a_job_in_a_partition_the_option_does_not_define_names_the_line_and_flag(tmp_path, capsys, queue, flag):
    """Was "error: queue slurm: job row 0 asks for partition 1; ..." with neither the log's
    line nor the flag. The window's first record (line 35) is in partition 1."""
    trace = DATA / "atlas-window-120.swf"
    code, _, err = run(["simulate", "--trace", str(trace), "--system", "cab", "--queue", queue, flag, "2=0-10", "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"error: {trace}:35: queue {queue}: job row 0 asks for partition 1; the partitions option defines 2 (set with {flag})"
    ]


def test_lenient_skips_and_counts_malformed_lines(tmp_path, capsys):
    bad = tmp_path / "bad.swf.gz"
    bad.write_bytes(gzip.compress((HEADER + GOOD + "3 20 -1 fifty 2 -1 -1 2 60 -1 1 1 1 -1 1 1 -1 -1\n").encode()))
    code, stdout, _ = run(["simulate", "--trace", str(bad), "--system", "toy18", "--lenient", "--out", str(tmp_path / "o")], capsys)
    assert code == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["input"]["skipped"] == {"malformed_line": 1}
    assert summary["jobs"]["replayed"] == 2


def test_job_larger_than_the_machine_is_reported_and_skipped(tmp_path, capsys):
    trace = tmp_path / "big.swf"
    trace.write_text(HEADER + GOOD + "3 20 -1 50 40 -1 -1 40 60 -1 1 1 1 -1 1 1 -1 -1\n")
    code, stdout, _ = run(["simulate", "--trace", str(trace), "--system", "toy18", "--out", str(tmp_path / "o")], capsys)
    assert code == 0
    skipped = pq.read_table(tmp_path / "o" / "skipped.parquet")
    assert skipped.column("job_id").to_pylist() == [3]
    assert "40 nodes" in skipped.column("reason")[0].as_py()
    assert "not placed" in stdout and "40 nodes" in stdout


def test_topology_conf_with_a_loop_is_refused(tmp_path, capsys):
    conf = tmp_path / "topology.conf"
    conf.write_text("SwitchName=a Switches=b\nSwitchName=b Switches=a\nSwitchName=c Nodes=n[1-4]\n")
    code, _, err = run(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", str(conf), "--out", str(tmp_path / "o")], capsys)
    assert code == 2
    assert str(conf) in err and "loop" in err


def test_real_topology_conf_runs(tmp_path, capsys):
    conf = SLURM / "ubccr_medium-cluster_topology.conf"
    code, _, err = run(["simulate", "--trace", str(HPC2N_SUBSET), "--system", str(conf), "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert code == 0, err
    fabric = json.loads((tmp_path / "o" / "fabric.json").read_text())
    assert fabric["nodes"] == 234 and fabric["levels"] == 2


@pytest.mark.parametrize("system,expect", [("nosuch", "presets are"), ("fattree:K=18,S=x,P=4", "field 'S'"), ("fattree:K=18", "missing")])
def test_bad_system_is_explained(tmp_path, capsys, system, expect):
    code, _, err = run(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", system, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and expect in err, err


@pytest.mark.parametrize("system", ["", " "])
def test_an_empty_system_is_one_line_naming_the_flag(tmp_path, capsys, system):
    """`--system ''` said "error: : not a preset, ...": a location with nothing in it."""
    code, _, err = run(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", system, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err == (f"error: --system: empty ({system!r}): give a preset (toy18, hype, cab, pinot, sim10k, quartz), "
                                 "fattree:K=..,S=..,P=.. parameters, or a topology.conf file\n"), err


@pytest.mark.parametrize("system", ["cab ", "Cab", " CAB", "cab\t"])
def test_a_preset_name_with_a_capital_or_a_blank_is_pointed_at_the_preset(tmp_path, capsys, system):
    """`--system "cab "` (a blank pasted with the name) or `--system Cab` said "error: cab :
    not a preset ..." and listed cab among the presets: the blank invisible, nothing said of
    case. The name is refused still (names are exact), and the message says which preset."""
    code, _, err = run(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", system, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert f"{system!r}" in err and "did you mean 'cab'?" in err, err


@pytest.mark.parametrize(
    "argv, hint",
    [
        # argparse names the required flag the misspelt one was meant to give, not the misspelling
        (["simulate", "--trace", "t.swf", "--sytem", "cab", "--out", "o"], "--sytem is not an option of toposched simulate: did you mean --system?"),
        (["simulate", "--trace", "t.swf", "--system", "cab", "--output", "o"], "--output is not an option of toposched simulate: did you mean --out?"),
        (["simulate", "--log", "t.swf", "--system", "cab", "--out", "o"], "--log is not an option of toposched simulate: did you mean --trace?"),
        (["simulate", "--trace", "t.swf", "--system", "cab", "--out", "o", "--allocation", "isolated"], "--allocation is not an option of toposched simulate: did you mean --alloc?"),
        # compare and sweep name their worker counts differently
        (["sweep", "s.toml", "--jobs", "2"], "--jobs is not an option of toposched sweep: did you mean --workers?"),
        (["compare", "--trace", "t.swf", "--system", "cab", "--out", "o", "--workers", "2"], "--workers is not an option of toposched compare: did you mean --jobs?"),
        # nothing near: argparse's line names the flag, nothing is added
        (["simulate", "--trace", "t.swf", "--system", "cab", "--out", "o", "--frobnicate"], "unrecognized arguments: --frobnicate ('toposched simulate --help'"),
    ],
)
def test_a_misspelt_or_foreign_flag_is_named_with_the_flag_meant(argv, hint, capsys):
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and hint in err, err


def test_an_abbreviated_flag_still_works_and_is_not_called_unknown(tmp_path, capsys):
    code = main(["simulate", "--trace", str(DATA / "atlas-window-120.swf"), "--sys", "cab", "--o", str(tmp_path / "o"), "--quiet"])
    assert code == 0, capsys.readouterr().err


def test_seed_help_and_refusal_name_every_use_of_the_seed(tmp_path, capsys):
    """simulate --help said --seed is the 'seed of the random policy', and --seed with
    --alloc linear was refused as applying 'to --alloc random': neither said where the
    network model's traffic draws take their seed (the spec's seed=, not --seed)."""
    import argparse

    from toposched.commands import simulate as simulate_cmd

    parser = argparse.ArgumentParser()
    simulate_cmd.add_arguments(parser)
    seed_help = next(a.help for a in parser._actions if "--seed" in a.option_strings)
    assert "random policy" in seed_help and "--network random,seed=3" in seed_help, seed_help
    code, _, err = run(["simulate", "--trace", str(DATA / "atlas-window-120.swf"), "--system", "cab", "--seed", "3", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err.strip() == ("error: --seed: has no effect with --queue easy --alloc linear; it applies to --alloc random "
                                         "(the network model's traffic draws take the spec's seed=, e.g. --network random,seed=3)"), err


def test_seed_that_reaches_nothing_is_refused(tmp_path, capsys, monkeypatch):
    """--seed with a policy written in Python, or with --network and a policy that draws
    nothing, was accepted and recorded in summary.json's policy.seed, yet passed to
    nothing: the Python policy gets no seed, and the model's traffic draws take the spec's
    seed= (--network random --seed 1 and --seed 2 drew the same traffic). Refused now."""
    mod = tmp_path / "seedless_policy.py"
    mod.write_text("from toposched.policies import AllocationPolicy\n\nclass First(AllocationPolicy):\n"
                   "    def select(self, nodes, free):\n        ids = [i for i, f in enumerate(free) if f]\n        return ids[:nodes] if len(ids) >= nodes else None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    trace = str(DATA / "atlas-window-120.swf")
    code, _, err = run(["simulate", "--trace", trace, "--system", "cab", "--alloc", "seedless_policy:First", "--seed", "3", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err == ("error: --seed: has no effect with --queue easy --alloc seedless_policy:First; it applies to --alloc random (the network model's traffic "
                                 "draws take the spec's seed=, e.g. --network random,seed=3; a policy written in Python seeds its own generator, docs/python-policies.md)\n"), err
    code, _, err = run(["simulate", "--trace", trace, "--system", "cab", "--network", "random", "--seed", "3", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err.startswith("error: --seed: has no effect with --queue easy --alloc linear; it applies to --alloc random"), err
    code, _, err = run(["simulate", "--trace", trace, "--system", "cab", "--alloc", "random", "--network", "random", "--seed", "3", "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert code == 0, err


def test_a_seed_given_twice_in_a_run_config_is_refused():
    """RunConfig(seed=3, policy_options={"seed": 4}) ran the random policy with 4 and
    recorded both in summary.json: one seed, given once, or one line."""
    from toposched.config import RunConfig
    from toposched.errors import InputError

    for kw in ({"seed": 3, "policy_options": {"seed": 4}}, {"policy_options": {"seed": 4}}):
        with pytest.raises(InputError) as exc:
            RunConfig(alloc="random", **kw)
        seed = kw.get("seed", 0)
        assert str(exc.value) == (f"RunConfig: field 'policy_options': seed={seed} and policy_options['seed']=4 disagree (the policy ran with "
                                  "the second, the summary recorded both): give the seed once, as RunConfig(seed=...)")
    assert RunConfig(alloc="random", seed=4, policy_options={"seed": 4}).seed == 4

"""SWF header fields that change how a log replays (docs/workloads.md, "Header")."""

from __future__ import annotations

import json
import subprocess
import sys

from toposched.simulate import RunConfig, simulate
from toposched.topology import load_fabric
from toposched.workload import read_trace
from toposched.workload.swf import allow_overuse_from_header, node_types_from_header, parse_header_line

RECORDS = """\
1 0 5 100 16 -1 -1 16 60 -1 1 1 1 1 1 1 -1 -1
2 10 5 100 8 -1 -1 8 200 -1 1 1 1 1 1 1 -1 -1
"""


def write(tmp_path, header: str, name="log.swf"):
    p = tmp_path / name
    p.write_text(header + RECORDS)
    return p


def test_header_keys_with_or_without_a_space_after_the_semicolon_and_colon():
    assert parse_header_line(";MaxNodes:184 (6, 171, 7)") == ("MaxNodes", "184 (6, 171, 7)")
    assert parse_header_line("; MaxNodes: 184") == ("MaxNodes", "184")
    assert parse_header_line(";AllowOveruse:  yes ") == ("AllowOveruse", "yes")
    assert parse_header_line(";    http://example.org/x") is None  # indented: a continuation
    assert parse_header_line("; see http://example.org") is None  # a URL is not a key


def test_heterogeneous_node_types_default_to_the_most_numerous_type(tmp_path):
    w = read_trace(write(tmp_path, ";MaxNodes: 184 (6, 171, 7)\n;MaxProcs: 1664 (72, 1368, 224)\n"))
    assert w.settings["cores_per_node"] == 8  # the 171-node type, not 1664 // 184 = 9
    assert w.settings["node_types"] == [
        {"nodes": 6, "procs": 72, "cores_per_node": 12},
        {"nodes": 171, "procs": 1368, "cores_per_node": 8},
        {"nodes": 7, "procs": 224, "cores_per_node": 32},
    ]
    assert "most numerous" in w.settings["cores_per_node_from"]
    assert w["nodes"].tolist() == [2, 1]  # 16 and 8 processors on 8-core nodes
    # an explicit value still wins
    assert read_trace(w.source, cores_per_node=4).settings["cores_per_node"] == 4


def test_node_type_lists_that_do_not_add_up_are_not_used():
    assert node_types_from_header({"MaxNodes": "10 (4, 5)", "MaxProcs": "40 (16, 24)"}) is None
    assert node_types_from_header({"MaxNodes": "338 (batch partition; 512 total)", "MaxProcs": "338"}) is None
    assert node_types_from_header({"MaxNodes": "9 (4, 5)", "MaxProcs": "40 (16, 24)"})[1]["cores_per_node"] == 4


def test_allow_overuse_values():
    for v, want in [("yes", True), ("Yes", True), ("true", True), ("no", False), ("False", False), ("maybe", None)]:
        assert allow_overuse_from_header({"AllowOveruse": v}) is want
    assert allow_overuse_from_header({}) is None


def test_allow_overuse_lets_jobs_run_past_their_limit_by_default(tmp_path):
    fabric = load_fabric("toy18")
    plain = read_trace(write(tmp_path, "; MaxNodes: 18\n; MaxProcs: 18\n", "plain.swf"))
    over = read_trace(write(tmp_path, "; MaxNodes: 18\n; MaxProcs: 18\n; AllowOveruse: Yes\n", "over.swf"))
    # job 1 ran 100 s with 60 s requested
    r = simulate(plain, fabric, RunConfig())
    assert r.jobs.column("end_s").to_pylist()[0] == 60 and r.summary["jobs"]["killed_at_walltime"] == 1
    assert r.summary["policy"]["kill_at_walltime"] is True
    r = simulate(over, fabric, RunConfig())
    assert r.jobs.column("end_s").to_pylist()[0] == 100 and r.summary["jobs"]["killed_at_walltime"] == 0
    assert r.summary["policy"]["kill_at_walltime"] is False
    assert "AllowOveruse" in r.summary["policy"]["kill_at_walltime_rule"]
    r = simulate(over, fabric, RunConfig(kill_at_walltime=True))
    assert r.jobs.column("end_s").to_pylist()[0] == 60
    assert "--kill-at-limit" in r.summary["policy"]["kill_at_walltime_rule"]


def test_cli_kill_at_limit_and_the_rule_in_the_summary(tmp_path):
    log = write(tmp_path, ";AllowOveruse: true\n")
    for flag, end in [([], 100), (["--kill-at-limit"], 60)]:
        out = tmp_path / f"out{len(flag)}"
        cmd = [sys.executable, "-m", "toposched.cli", "simulate", "--trace", str(log), "--system", "toy18", "--out", str(out), "--quiet", *flag]
        subprocess.run(cmd, check=True)
        s = json.loads((out / "summary.json").read_text())
        assert s["policy"]["kill_at_walltime"] is (end == 60)
        assert s["input"]["settings"]["allow_overuse"] is True

"""SWF header fields that change how a log replays (docs/workloads.md, "Header")."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from toposched.errors import TraceFormatError
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


def _log(origin: int, recs: list[tuple[int, int, int]], maxprocs: int = 8) -> str:
    """One SWF log: a header with ``origin``, records (job, submit, run)."""
    head = f"; UnixStartTime: {origin}\n; MaxNodes: 4\n; MaxProcs: {maxprocs}\n"
    return head + "".join(f"{j} {s} 0 {r} 2 -1 -1 2 {r + 10} -1 1 1 1 1 1 1 -1 -1\n" for j, s, r in recs)


def test_logs_put_together_are_moved_to_the_first_origin(tmp_path):
    """Two logs of one machine concatenated, each with its header: the second log's submit
    times counted from its own UnixStartTime were taken as counted from the first's
    (a month's jobs replayed a month early, silently). They are now moved to the first
    origin, counted; the reference is each log read alone, its times made absolute."""
    a, b, c = 1_000_000_000, 1_000_086_400, 1_000_000_000 + 3 * 86_400
    logs = [(a, [(1, 0, 100), (2, 50, 200)]), (b, [(1, 10, 100), (3, -1, 5), (4, 20, 300)]), (c, [(9, 0, 7)])]
    (tmp_path / "all.swf").write_text("".join(_log(o, r) for o, r in logs))
    got = read_trace(tmp_path / "all.swf")
    want = []
    for i, (origin, recs) in enumerate(logs):
        (tmp_path / f"{i}.swf").write_text(_log(origin, recs))
        alone = read_trace(tmp_path / f"{i}.swf")
        want += [s + origin - a for s in alone["submit_s"].tolist()]
    assert got["submit_s"].tolist() == sorted(want) and got.time_origin_epoch_s == a
    assert got.repairs["submit_rebased_to_first_origin"] == 3  # job 3's unknown submit stays unknown
    assert got.skipped["unknown_submit"] == 1
    # the same header again moves nothing
    (tmp_path / "same.swf").write_text(_log(a, [(1, 0, 100)]) + _log(a, [(2, 5, 100)]))
    assert "submit_rebased_to_first_origin" not in read_trace(tmp_path / "same.swf").repairs


def test_logs_put_together_that_read_differently_are_refused(tmp_path):
    """A later MaxProcs of another value would size the later jobs wrongly: one line naming
    the line and field, unless --cores-per-node makes it unused; --stream refuses a later
    UnixStartTime too (it cannot move times it has replayed)."""
    p = tmp_path / "two.swf"
    p.write_text(_log(1_000_000_000, [(1, 0, 100)]) + _log(1_000_000_000, [(2, 5, 100)], maxprocs=16))
    def simulate_cli(log, *extra):
        cmd = [sys.executable, "-m", "toposched.cli", "simulate", "--trace", str(log), "--system", "toy18", "--quiet", "--out", str(tmp_path / "o"), *extra]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    r = simulate_cli(p)
    assert r.returncode == 2 and r.stderr.startswith(f"error: {p}:7: field 'MaxProcs': a second header sets MaxProcs: '16' where line 3 set '8'"), r.stderr
    assert r.stderr.count("\n") == 1 and "--cores-per-node" in r.stderr
    assert read_trace(p, cores_per_node=2)["nodes"].tolist() == [1, 1]
    q = tmp_path / "origins.swf"
    q.write_text(_log(1_000_000_000, [(1, 0, 100)]) + _log(1_000_000_100, [(2, 5, 100)]))
    for log, line, key in ((p, 7, "MaxProcs"), (q, 5, "UnixStartTime")):
        r = simulate_cli(log, "--stream")
        assert r.returncode == 2 and r.stderr.startswith(f"error: {log}:{line}: field '{key}': a header line after the first job record sets {key}"), r.stderr


def test_a_later_header_that_reads_the_same_is_no_change(tmp_path):
    """'MaxProcs: 8 (all nodes)' after 'MaxProcs: 8', or 'AllowOveruse: Yes' after 'yes',
    read the same: neither is refused (whole or streamed); a submit near 2^63 is not wrapped
    around by the move to the first origin (it stays out of range, and is named so)."""
    p = tmp_path / "same.swf"
    p.write_text(_log(1_000_000_000, [(1, 0, 100)]).replace("; MaxProcs: 8", "; MaxProcs: 8\n; AllowOveruse: yes")
                 + _log(1_000_000_000, [(2, 5, 100)]).replace("; MaxProcs: 8", "; MaxProcs: 8 (all nodes)\n; AllowOveruse: Yes"))
    assert read_trace(p)["submit_s"].tolist() == [0, 5]
    r = subprocess.run([sys.executable, "-m", "toposched.cli", "simulate", "--trace", str(p), "--system", "toy18", "--stream", "--quiet", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    q = tmp_path / "huge.swf"
    q.write_text(_log(1_000_000_000, [(1, 0, 100)]) + _log(1_000_086_400, [(2, 2**63 - 10, 100)]))
    with pytest.raises(TraceFormatError, match="submit"):
        read_trace(q)

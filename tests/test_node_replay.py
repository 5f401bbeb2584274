"""Core-level replay (toposched.node.replay): a hand-worked case and invariants re-checked
from its outputs."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from toposched.node.cpulist import parse_cpulist
from toposched.node.hwloc import LEVEL_RANK, read_hwloc_xml, synthetic_topology
from toposched.node.placement import NodeState, best_placement
from toposched.node.replay import core_replay
from toposched.node.requirement import Requirement
from toposched.workload.model import Workload

from conftest import EXAMPLE_TRACE, REPO

CAB = REPO / "tests" / "data" / "hwloc" / "llnl-cab1234_node_hwloc.xml"


def workload(rows):
    """rows: (submit_s, procs, runtime_s)."""
    n = len(rows)
    cols = {"job_id": np.arange(1, n + 1), "submit_s": np.array([r[0] for r in rows]),
            "nodes": np.ones(n), "walltime_s": np.array([r[2] for r in rows]) + 10,
            "runtime_s": np.array([r[2] for r in rows]), "procs": np.array([r[1] for r in rows]), "line": np.arange(1, n + 1)}
    return Workload(columns=cols, source="test", format="swf")


@pytest.mark.parametrize("wait", [False, True])
def test_hand_case_wait_versus_best(wait):
    """One Cab node. A (6 cores) and B (6 cores) start at 0 on 0-5 and 8-13; C (4 cores)
    arrives at 1: the free cores 6-7 and 14-15 span the sockets. Best: C starts at 1 there
    (radius machine). Wait: C waits until A ends at 100, then gets 0-3 (radius l3)."""
    r = core_replay(workload([(0, 6, 100), (0, 6, 200), (1, 4, 10)]), read_hwloc_xml(CAB), 1, wait=wait)
    j = r.jobs
    assert list(j["start_s"]) == ([0, 0, 100] if wait else [0, 0, 1])
    assert r.node_cpus == (["0-5", "8-13", "0-3"] if wait else ["0-5", "8-13", "6-7,14-15"])
    assert list(j["radius"]) == (["l3", "l3", "l3"] if wait else ["l3", "l3", "machine"])
    assert list(j["waited_for_good_placement"]) == [False, False, wait]
    assert r.summary["jobs_waited_for_good_placement"] == int(wait)
    # Fragmentation = 1 - free cores in whole NUMA domains / free cores, weighted by time
    # while any core is free. Best: [0,1) 6-7,14-15 free: 1; [1,11) none free; [11,100): 1;
    # [100,200) 0-7,14-15: 1 - 8/10 = 0.2. Wait: [0,100): 1; [100,110) 4-7,14-15: 1;
    # [110,200) 0-7,14-15: 0.2.
    expected = (110 + 90 * 0.2) / 200 if wait else (1 + 89 + 100 * 0.2) / 190
    assert r.summary["core_fragmentation_time_weighted"] == pytest.approx(expected)


@st.composite
def replays(draw):
    topo = synthetic_topology([("package", 2), ("numa", draw(st.integers(1, 2))), ("core", draw(st.integers(1, 3))), ("pu", 1)])
    cpn = len(topo.cores)
    nodes = draw(st.integers(1, 3))
    rows = []
    t = 0
    for _ in range(draw(st.integers(1, 25))):
        t += draw(st.integers(0, 20))
        rows.append((t, draw(st.integers(1, cpn * (nodes + 1))), draw(st.integers(0, 60))))
    return topo, nodes, rows, draw(st.booleans()), draw(st.sampled_from(["fcfs", "first-fit"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replays())
def test_replay_invariants(case):
    topo, nodes, rows, wait, queue = case
    r = core_replay(workload(rows), topo, nodes, wait=wait, queue=queue)
    j = r.jobs
    cpn = len(topo.cores)
    too_big = sum(1 for _, p, _ in rows if -(-p // cpn) > nodes)
    assert r.summary["jobs"] + r.summary["skipped_larger_than_machine"] == len(rows)
    assert r.summary["skipped_larger_than_machine"] == too_big
    # Which (node, PU) each job holds, from the outputs only.
    held = []
    for k in range(len(j["job_id"])):
        text = r.node_cpus[k]
        if text.startswith("nodes "):
            ns = [int(x) for x in text[6:].split(",")]
            assert len(ns) == -(-int(j["cores"][k]) // cpn)
            cells = {(n, p) for n in ns for p in topo.pus}
        else:
            pus = parse_cpulist(text)
            assert len([c for c in topo.cores if c.pus <= pus]) == j["cores"][k]
            cells = {(int(j["node"][k]), p) for p in pus}
            if wait:  # never worse than the empty-node radius
                ideal = best_placement(topo, NodeState(topo), Requirement(cores=int(j["cores"][k])))
                assert LEVEL_RANK[j["radius"][k]] <= LEVEL_RANK[ideal.radius]
        held.append((int(j["start_s"][k]), int(j["end_s"][k]), cells))
    for a in range(len(held)):
        assert held[a][0] >= int(j["submit_s"][a])
        for b in range(a + 1, len(held)):
            if held[a][0] < held[b][1] and held[b][0] < held[a][1]:  # overlap in time
                assert not (held[a][2] & held[b][2])
    if queue == "fcfs":
        assert list(j["start_s"]) == sorted(j["start_s"])
    if not wait:
        assert not j["waited_for_good_placement"].any()
    assert 0.0 <= r.summary["core_fragmentation_time_weighted"] <= 1.0


def test_cli_on_the_bundled_trace(tmp_path):
    out = tmp_path / "cores"
    r = subprocess.run([sys.executable, "-m", "toposched.cli", "core-replay", "--trace", str(EXAMPLE_TRACE),
                        "--node-topology", str(CAB), "--nodes", "64", "--queue", "first-fit", "--wait",
                        "--max-jobs", "300", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    jobs = pq.read_table(out / "jobs.parquet")
    assert summary["jobs"] == jobs.num_rows and summary["jobs"] + summary["skipped_larger_than_machine"] == 300
    assert "jobs that waited for a good placement" in r.stdout
    bad = subprocess.run([sys.executable, "-m", "toposched.cli", "core-replay", "--trace", str(EXAMPLE_TRACE),
                          "--node-topology", str(tmp_path / "nope.xml"), "--nodes", "4", "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "nope.xml: cannot read" in bad.stderr


def test_cli_has_the_flags_its_errors_name(tmp_path):
    """The log reader's errors name --format (a log from a pipe, a format it cannot guess),
    --lenient (a malformed record) and the topology reader's --topology: core-replay had
    none of them (its flag is --node-topology), so the way out it printed was refused as
    'unrecognized arguments'."""
    cli = [sys.executable, "-m", "toposched.cli", "core-replay", "--node-topology", str(CAB), "--nodes", "4", "--out", str(tmp_path / "o")]
    log = (REPO / "tests" / "data" / "atlas-window-120.swf").read_text()
    piped = subprocess.run([*cli, "--trace", "/dev/stdin"], input=log, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 2 and "give --format" in piped.stderr, piped.stderr
    piped = subprocess.run([*cli, "--trace", "/dev/stdin", "--format", "swf"], input=log, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0, piped.stderr
    (tmp_path / "bad.swf").write_text(log + "9999 x y\n")
    bad = subprocess.run([*cli, "--trace", str(tmp_path / "bad.swf")], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--lenient" in bad.stderr, bad.stderr
    lenient = subprocess.run([*cli, "--trace", str(tmp_path / "bad.swf"), "--lenient"], capture_output=True, text=True, timeout=300)
    assert lenient.returncode == 0, lenient.stderr
    cli[cli.index("--node-topology") + 1] = str(tmp_path / "nope.xml")
    missing = subprocess.run([*cli, "--trace", str(EXAMPLE_TRACE)], capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2 and "pass --node-topology FILE or live" in missing.stderr, missing.stderr


def test_no_one_node_job_has_no_mean_numa_domains():
    """Without one-node jobs the mean NUMA domains of one-node jobs was 0.0 (the best
    possible score, printed 0.00): it is None, printed '-'."""
    r = core_replay(workload([(0, 20, 100), (5, 32, 50)]), read_hwloc_xml(CAB), 2)
    assert r.summary["mean_numa_domains_one_node"] is None
    one = core_replay(workload([(0, 6, 100)]), read_hwloc_xml(CAB), 1)
    assert one.summary["mean_numa_domains_one_node"] == 1.0


def test_nodes_holding_the_same_cores_share_one_search(monkeypatch):
    """Every node's best placement was searched on its own: 2,000 idle nodes made 2,000
    identical searches per job size (300 HPC2N jobs: 19 s). Nodes holding the same PUs now
    share one, with the same results."""
    import toposched.node.replay as replay

    cab = read_hwloc_xml(CAB)
    rows = [(0, 4, 100), (0, 4, 100), (1, 8, 50), (2, 20, 10), (3, 4, 5)]
    expected = core_replay(workload(rows), cab, nodes=200)
    calls = []
    real = replay.best_placement
    monkeypatch.setattr(replay, "best_placement", lambda *a: calls.append(1) or real(*a))
    got = core_replay(workload(rows), cab, nodes=200)
    assert len(calls) < 20, len(calls)  # was one per node and job size: over 600
    assert got.node_cpus == expected.node_cpus and got.summary == expected.summary
    assert all(np.array_equal(got.jobs[k], expected.jobs[k]) for k in got.jobs)


def test_cli_says_times_in_units_and_radii_in_words(tmp_path):
    """core-replay printed "mean wait 1042685 s, makespan 3875755 s; radius {'l3': 376, ...}":
    raw seconds and a dict's repr. Times now read in toposched.units' units, radii as words."""
    import re

    out = tmp_path / "cores"
    r = subprocess.run([sys.executable, "-m", "toposched.cli", "core-replay", "--trace", str(EXAMPLE_TRACE), "--node-topology", str(CAB),
                        "--nodes", "32", "--max-jobs", "2000", "--wait", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    from toposched.units import fmt_duration

    s = json.loads((out / "summary.json").read_text())
    line = r.stdout.splitlines()[1]
    radii = ", ".join(f"{k} {v:,}" for k, v in s["radius_counts"].items())
    assert line.startswith(f"mean wait {fmt_duration(s['wait_s']['mean'])}, makespan {fmt_duration(s['makespan_s'])}; jobs by radius: {radii}; "), line
    assert "days" in line and not re.search(r"[{}']", line), line

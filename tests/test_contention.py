"""Seed 001's uplink contention model (toposched.contention, `toposched contention`).

Hand-computed cases, an independent brute-force oracle on random schedules (one global
interval at a time, plain Python), the binomial formula against a direct sum, the
crossbar and cores-per-node transforms, 001's qualitative findings on Atlas (one of its own
systems; the other, Thunder, in validation/test_whole_logs.py), and the command line.
"""

from __future__ import annotations

import doctest
import json
import math
import re
from collections import defaultdict

import numpy as np
import pyarrow.parquet as pq
import pytest

import toposched.contention as C
from conftest import EXAMPLE_TRACE
from toposched.cli import main
from toposched.contention import Schedule, analyze, contention_probability, expected_excess


def sched(jobs, node_leaf, **kw):
    """jobs: list of (start, end, [node ids])."""
    off = np.cumsum([0] + [len(n) for _, _, n in jobs])
    return Schedule.from_arrays(
        start_s=[j[0] for j in jobs], end_s=[j[1] for j in jobs], node_offsets=off,
        node_ids=[x for _, _, n in jobs for x in n], node_leaf=node_leaf, **kw,
    )


def added(a, n_jobs):
    """Worst-case added seconds as a dense [jobs, R] array."""
    out = np.zeros((n_jobs, len(a.uplinks)))
    out[a.rows] = a.added_s
    return out


def test_module_doctests():
    assert doctest.testmod(C).failed == 0


# ----------------------------------------------------------------------------- hand-computed


def test_one_job_split_3_plus_1_uses_one_uplink_on_each_leaf():
    # 2 leaves of 4 nodes; a 4-node job on nodes 0,1,2 (leaf 0) and 4 (leaf 1).
    s = sched([(0, 100, [0, 1, 2, 4])], [0, 0, 0, 0, 1, 1, 1, 1])
    p = C.pair_demand(s)
    assert p.leaf.tolist() == [0, 1] and p.c.tolist() == [3, 1] and p.uplinks.tolist() == [1, 1]
    a = analyze(s, comm_fractions=[])
    assert a.leaf_demand_table().to_pydict() == {"leaf": [0, 1], "start_s": [0, 0], "end_s": [100, 100], "demand": [1, 1]}
    # D = 1 <= R for every R >= 1: nobody is slowed, even with a single uplink left.
    assert a.uplinks.tolist() == [4, 3, 2, 1]
    assert all(r["system_slowdown"] == 0 and r["affected_jobs"] == 0 for r in a.sweep)


def test_single_leaf_jobs_have_no_demand_and_are_not_exposed():
    s = sched([(0, 10, [0, 1, 2, 3]), (0, 10, [4])], [0, 0, 0, 0, 1, 1, 1, 1])
    a = analyze(s, uplinks=[1], comm_fractions=[0.5])
    assert len(a.leaf_demand) == 0 and len(a.rows) == 0
    assert a.sweep[0]["system_slowdown"] == 0 and a.sweep[0]["affected_jobs"] == 0


def test_two_jobs_sharing_a_leaf_add_up_and_r1_slowdowns():
    # Leaves of 4: leaf 0 = nodes 0-3, leaf 1 = 4-7, leaf 2 = 8-11.
    # A: nodes 0,1 | 4,5 (2+2): U = 2 on leaves 0 and 1, runs [0, 100).
    # B: node 2 | 8 (1+1): U = 1 on leaves 0 and 2, runs [50, 150).
    s = sched([(0, 100, [0, 1, 4, 5]), (50, 150, [2, 8])], np.arange(12) // 4)
    a = analyze(s, uplinks=[2, 1], comm_fractions=[])
    t = a.leaf_demand_table().to_pydict()
    rows = sorted(zip(t["leaf"], t["start_s"], t["end_s"], t["demand"]))
    assert rows == [(0, 0, 50, 2), (0, 50, 100, 3), (0, 100, 150, 1), (1, 0, 100, 2), (2, 50, 150, 1)]
    # R = 1. A: Dmax = 2 on [0,50), 3 on [50,100): added 50*(2-1) + 50*(3-1) = 150.
    #        B: Dmax = 3 on [50,100) (leaf 0), 1 on [100,150): added 50*(3-1) = 100.
    # R = 2. A: 50*(3/2-1) = 25; B: 25.
    got = added(a, 2)
    assert got[:, a.uplinks.tolist().index(1)].tolist() == [150, 100]
    assert got[:, a.uplinks.tolist().index(2)].tolist() == [25, 25]
    r1 = a.sweep[a.uplinks.tolist().index(1)]
    assert r1["system_slowdown"] == pytest.approx(250 / 200)
    assert r1["affected_jobs"] == 2
    assert r1["affected_job_slowdown"]["mean"] == pytest.approx((150 / 100 + 100 / 100) / 2)
    assert r1["affected_job_slowdown"]["max"] == pytest.approx(1.5)
    # Node-weighted: (150*4 + 100*2) / (100*4 + 100*2); per node-second: 250 / 600.
    assert r1["system_slowdown_node_weighted"] == pytest.approx(800 / 600)
    assert r1["added_wall_per_node_second"] == pytest.approx(250 / 600)
    # Leaf time above R over 3 leaves x 150 s: D > 1 for 50 + 50 + 100 s, D > 2 for 50 s.
    assert r1["contended_leaf_time_fraction"] == pytest.approx(200 / 450)
    assert a.sweep[a.uplinks.tolist().index(2)]["contended_leaf_time_fraction"] == pytest.approx(50 / 450)
    # Multi-leaf job time with Dmax > R: A 100 s + B 50 s of 200 s at R = 1; 50 + 50 at R = 2.
    assert r1["contended_exposed_time_fraction"] == pytest.approx(150 / 200)
    assert a.sweep[0]["contended_exposed_time_fraction"] == pytest.approx(100 / 200)
    rows = a.job_slowdowns_table().to_pydict()
    assert sorted(zip(rows["job_id"], rows["uplinks"], rows["added_s"])) == [(0, 1, 150), (0, 2, 25), (1, 1, 100), (1, 2, 25)]
    ex = a.job_exposure_table().to_pydict()
    assert ex["peak_demand"] == [3, 3] and ex["own_max_uplinks"] == [2, 1]
    assert ex["mean_demand"] == pytest.approx([2.5, 2.0])


def test_intervals_merge_when_nothing_changes():
    # On leaf 0, a U=1 job ends at 10 as another U=1 job starts: one stretch [0, 20).
    s = sched([(0, 10, [0, 4]), (10, 20, [1, 8])], np.arange(12) // 4)
    t = analyze(s, comm_fractions=[]).leaf_demand_table().to_pydict()
    rows = sorted(zip(t["leaf"], t["start_s"], t["end_s"], t["demand"]))
    assert rows == [(0, 0, 20, 1), (1, 0, 10, 1), (2, 10, 20, 1)]


def test_zero_length_jobs_and_empty_schedules():
    s = sched([(5, 5, [0, 4]), (0, 10, [1, 5])], np.arange(8) // 4)
    a = analyze(s, uplinks=[1], comm_fractions=[])
    assert a.rows.tolist() == [1]
    assert a.leaf_demand_table().to_pydict()["start_s"] == [0, 0]
    empty = Schedule.from_arrays(start_s=[], end_s=[], node_offsets=[0], node_ids=[], node_leaf=np.arange(8) // 4)
    a = analyze(empty, comm_fractions=[0.5])
    assert len(a.rows) == 0 and all(r["system_slowdown"] == 0 for r in a.sweep)


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(start_s=[0], end_s=[-1], node_offsets=[0, 1], node_ids=[0]), "ends"),
        (dict(start_s=[0], end_s=[1], node_offsets=[0, 2], node_ids=[0, 0]), "twice"),
        (dict(start_s=[0, 0], end_s=[1, 1], node_offsets=[0, 1, 4], node_ids=[3, 1, 0, 1]), "job row 1 lists node 1 twice"),
        (dict(start_s=[0], end_s=[1], node_offsets=[0, 1], node_ids=[9]), "node ids"),
        (dict(start_s=[0, 1], end_s=[1], node_offsets=[0, 1], node_ids=[0]), "end_s"),
        (dict(start_s=[0], end_s=[1], node_offsets=[0, 2], node_ids=[0]), "node_offsets"),
    ],
)
def test_bad_schedules_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        Schedule.from_arrays(node_leaf=[0, 0, 1, 1], **kw)


# ----------------------------------------------------------------------------- probability


def test_contention_probability_is_the_binomial_tail():
    for n in range(0, 25):
        for m in range(0, n + 2):
            for J in (0.0, 0.05, 0.2, 0.5, 0.9, 1.0):
                direct = sum(math.comb(n, k) * J**k * (1 - J) ** (n - k) for k in range(m + 1, n + 1))
                assert contention_probability(n, m, J) == pytest.approx(direct, abs=1e-12)
    # Broadcasting, and 001 §III: "20% communication, overprovisioning factor of 3: less
    # than 5% probability of contention on a 24-port ASIC" (n = 24 links, m = 8 uplinks).
    assert contention_probability([24, 24], [8, 12], 0.2).shape == (2,)
    assert contention_probability(24, 8, 0.2) < 0.05


def test_expected_excess_reduces_to_the_worst_case_at_j1():
    W, P = expected_excess(12, [1, 3, 6], 1.0)
    d = np.arange(13)[:, None]
    assert np.allclose(W, np.maximum(0, d / np.array([1, 3, 6]) - 1))
    assert np.allclose(P, d > np.array([1, 3, 6]))
    W, P = expected_excess(10, [2], 0.3)
    for dd in range(11):
        pmf = [math.comb(dd, k) * 0.3**k * 0.7 ** (dd - k) for k in range(dd + 1)]
        assert W[dd, 0] == pytest.approx(sum(p * max(0, k / 2 - 1) for k, p in enumerate(pmf)))
        assert P[dd, 0] == pytest.approx(contention_probability(dd, 2, 0.3))


# ----------------------------------------------------------------------------- oracle


def brute(s: Schedule, R_list, J_list):
    """One global interval at a time, every job and leaf in plain Python."""
    u = s.units_per_link
    n_jobs = s.n_jobs
    U = []
    for j in range(n_jobs):
        ids = s.node_ids[s.node_offsets[j] : s.node_offsets[j + 1]]
        w = s.node_units[s.node_offsets[j] : s.node_offsets[j + 1]] if s.node_units is not None else [1] * len(ids)
        c = defaultdict(int)
        for node, units in zip(ids, w):
            c[int(s.node_leaf[node])] += int(units)
        size = sum(c.values())
        U.append({n: min(v, size - v) for n, v in c.items()})
    times = sorted(set(s.start_s.tolist()) | set(s.end_s.tolist()))
    add = np.zeros((n_jobs, len(R_list)))
    exp = {J: np.zeros((n_jobs, len(R_list))) for J in J_list}
    timeline = defaultdict(list)
    for a, b in zip(times, times[1:]):
        running = [j for j in range(n_jobs) if s.start_s[j] <= a and s.end_s[j] >= b and s.end_s[j] > s.start_s[j]]
        D = defaultdict(int)
        for j in running:
            for n, x in U[j].items():
                D[n] += x
        for n in range(s.n_leaves):
            timeline[n].append((a, b, D[n]))
        for j in running:
            mine = [n for n, x in U[j].items() if x > 0]
            if not mine:
                continue
            dmax = max(D[n] for n in mine)
            for i, R in enumerate(R_list):
                add[j, i] += (b - a) * max(0.0, dmax / (u * R) - 1)
                for J in J_list:
                    e = sum(math.comb(dmax, k) * J**k * (1 - J) ** (dmax - k) * max(0.0, k / (u * R) - 1) for k in range(dmax + 1))
                    exp[J][j, i] += (b - a) * e
    stretches = []
    for n, parts in timeline.items():
        cur = None
        for a, b, d in parts:
            if cur and cur[2] == d and cur[1] == a:
                cur = (cur[0], b, d)
                continue
            if cur and cur[2] > 0:
                stretches.append((n, cur[0], cur[1], cur[2]))
            cur = (a, b, d)
        if cur and cur[2] > 0:
            stretches.append((n, cur[0], cur[1], cur[2]))
    return add, exp, sorted(stretches)


def random_schedule(rng, *, linear=False):
    n_leaves = int(rng.integers(2, 6))
    k = int(rng.integers(2, 5))
    n_nodes = n_leaves * k
    if linear:
        node_leaf = np.arange(n_nodes) // k
    else:  # any wiring, every leaf used
        node_leaf = rng.integers(0, n_leaves, n_nodes)
        node_leaf[:n_leaves] = np.arange(n_leaves)
    jobs = []
    for _ in range(int(rng.integers(1, 14))):
        size = int(rng.integers(1, min(n_nodes, 9) + 1))
        nodes = rng.permutation(n_nodes)[:size].tolist()  # any order
        start = int(rng.integers(0, 30))
        jobs.append((start, start + int(rng.integers(0, 15)), nodes))
    return sched(jobs, node_leaf, nodes_per_leaf=int(np.bincount(node_leaf).max()))


def sorted_copy(s: Schedule) -> Schedule:
    """The same schedule with every node list ascending (the fast paths)."""
    ids = np.concatenate([np.sort(s.node_ids[a:b]) for a, b in zip(s.node_offsets[:-1], s.node_offsets[1:])] + [np.zeros(0, np.int64)])
    return Schedule.from_arrays(
        start_s=s.start_s, end_s=s.end_s, node_offsets=s.node_offsets, node_ids=ids, node_leaf=s.node_leaf,
        nodes_per_leaf=s.nodes_per_leaf, cores_per_node=s.cores_per_node,
    )


@pytest.mark.parametrize("chunk", [C.PIECES_PER_CHUNK, 2])
def test_matches_brute_force_on_random_schedules(chunk, monkeypatch):
    monkeypatch.setattr(C, "PIECES_PER_CHUNK", chunk)
    rng = np.random.default_rng(2024)
    Js = [0.3, 1.0]
    for _ in range(120):
        s = random_schedule(rng)
        R = list(range(s.full_uplinks, 0, -1))
        a = analyze(s, uplinks=R, comm_fractions=Js)
        want_add, want_exp, want_stretches = brute(s, list(a.uplinks), Js)
        assert np.allclose(added(a, s.n_jobs), want_add)
        for J in Js:
            got = np.zeros_like(want_add)
            got[a.rows] = a.expected_added_s[J]
            assert np.allclose(got, want_exp[J])
        ld = a.leaf_demand
        assert sorted(zip(ld.leaf.tolist(), ld.start_s.tolist(), ld.end_s.tolist(), ld.demand.tolist())) == want_stretches
        # J = 1 is the worst case.
        assert np.allclose(a.expected_added_s[1.0], a.added_s)
        # Ascending node lists take the run-length path instead of the sort: same numbers.
        b = analyze(sorted_copy(s), uplinks=R, comm_fractions=Js)
        assert np.allclose(added(b, s.n_jobs), want_add)


def test_shared_nodes_with_link_units_match_brute_force():
    rng = np.random.default_rng(7)
    for i in range(60):
        s = random_schedule(rng, linear=True)
        if i % 2:
            s = sorted_copy(s)  # ascending lists: the direct node // f path when cores = f * base
        for base, cores in ((2, 4), (2, 3), (4, 6), (1, 1), (1, 3)):
            t = s.with_cores_per_node(cores, base)
            R = [r for r in (3, 2, 1) if r <= t.full_uplinks]  # more than K is refused
            a = analyze(t, uplinks=R, comm_fractions=[0.5])
            want_add, want_exp, _ = brute(t, R, [0.5])
            assert np.allclose(added(a, t.n_jobs), want_add)
            got = np.zeros_like(want_add)
            got[a.rows] = a.expected_added_s[0.5]
            assert np.allclose(got, want_exp[0.5])


# ----------------------------------------------------------------------------- transforms


def test_crossbar_size_maps_node_ids_linearly():
    s = sched([(0, 10, [0, 1, 2, 3, 4, 5])], np.arange(12) // 6, nodes_per_leaf=6)
    assert len(analyze(s, comm_fractions=[]).rows) == 0  # one leaf of 6
    t = s.with_leaf_size(4)
    assert t.node_leaf.tolist() == [0] * 4 + [1] * 4 + [2] * 4 and t.nodes_per_leaf == 4 and t.full_uplinks == 4
    p = C.pair_demand(t)
    assert p.c.tolist() == [4, 2] and p.uplinks.tolist() == [2, 2]


def test_cores_per_node_keeps_fragmentation():
    # 1-core nodes -> 2-core nodes. Contiguous job on 0..3 compresses to new nodes 0,1;
    # a job on every other node 4,6,8,10 keeps 4 new nodes (2,3,4,5), half of each.
    s = sched([(0, 10, [0, 1, 2, 3]), (0, 10, [4, 6, 8, 10])], np.arange(16) // 4, cores_per_node=1)
    t = s.with_cores_per_node(2)
    assert t.n_nodes == 8 and t.cores_per_node == 2 and t.units_per_link == 2
    assert t.node_ids.tolist() == [0, 1, 2, 3, 4, 5]
    assert t.node_units.tolist() == [2, 2, 1, 1, 1, 1]
    assert t.node_leaf.tolist() == [0] * 4 + [1] * 4
    assert t.job_links.tolist() == [2.0, 2.0]
    # Not a multiple: 2 cores -> 3 cores. Old node 1 (cores 2,3) splits over new nodes 0, 1.
    s2 = sched([(0, 10, [1]), (0, 10, [0, 2])], np.arange(6) // 3, cores_per_node=2)
    t2 = s2.with_cores_per_node(3)
    assert t2.units_per_link == 3 and t2.n_nodes == 4
    assert t2.node_ids.tolist() == [0, 1, 0, 1] and t2.node_units.tolist() == [1, 1, 2, 2]


def test_cores_rescaling_equals_a_bigger_crossbar_with_more_uplinks():
    # f times the cores with K nodes per leaf is the old nodes on leaves of f*K with f*R
    # uplinks (each old node keeps 1/f of a fat node's link).
    rng = np.random.default_rng(3)
    for _ in range(20):
        s = random_schedule(rng, linear=True)
        s = Schedule.from_arrays(
            start_s=s.start_s, end_s=s.end_s, node_offsets=s.node_offsets, node_ids=s.node_ids,
            node_leaf=s.node_leaf, nodes_per_leaf=s.nodes_per_leaf, cores_per_node=4,
        )
        for f in (2, 3):
            fat = analyze(s.with_cores_per_node(4 * f), uplinks=[1, 2], comm_fractions=[])
            big = analyze(s.with_leaf_size(f * s.nodes_per_leaf), uplinks=[f, 2 * f], comm_fractions=[])
            assert [r["system_slowdown"] for r in fat.sweep] == pytest.approx([r["system_slowdown"] for r in big.sweep])


# ----------------------------------------------------------------------------- 001's systems


def _replay(trace, system):
    from toposched.simulate import RunConfig, simulate
    from toposched.topology import load_fabric
    from toposched.workload import read_trace

    return Schedule.from_result(simulate(read_trace(trace), load_fabric(system), RunConfig(queue="easy", alloc="linear")))


# Atlas: 1,152 nodes on 24-port leaves with 12 nodes each (ibnetdiscover excerpt, 001 Fig. 1-2):
# 96 leaves under one spine. Its whole log ships with the repository. Thunder (1,024 nodes on
# 16-port crossbars, 001 §IV: 8 per leaf, "fattree:K=8,S=128,P=1") is checked the same way on
# its whole log by validation/test_whole_logs.py, with the two functions below.
ATLAS = (EXAMPLE_TRACE, "fattree:K=12,S=96,P=1", 12)


@pytest.fixture(scope="module")
def atlas():
    trace, fabric, k = ATLAS
    s = _replay(trace, fabric)
    return s, k, analyze(s)


def test_001_small_system_wide_cost_at_2to1_and_large_worst_cases(atlas):
    assert_001_small_system_wide_cost_and_large_worst_cases(*atlas)


def test_001_bigger_crossbars_and_fatter_nodes_contend_less(atlas):
    assert_001_bigger_crossbars_and_fatter_nodes_contend_less(*atlas)


def assert_001_small_system_wide_cost_and_large_worst_cases(s, k, a):
    by_r = {r["uplinks"]: r for r in a.sweep}
    half, one = by_r[k // 2], by_r[1]
    # 001: "less than 5% overall loss" at a 2:1 taper. Reproduced by the added wall time
    # over the node-seconds the jobs used (see docs/contention.md, "reading 001").
    assert half["added_wall_per_node_second"] < 0.05
    # Realistic communication fractions (001 §III: 20% is "very high") keep the expected
    # system-wide slowdown small even as wall time over wall time.
    assert _p(half, 0.1)["system_slowdown"] < 0.01
    assert _p(half, 0.25)["system_slowdown"] < 0.05
    # Large worst cases (001 Fig. 7: 350% to 550%): a job filling whole leaves runs
    # K/R times slower. At 2:1 the worst job is twice as slow; with one uplink, K times.
    assert half["affected_job_slowdown"]["max"] >= 1.0
    assert one["affected_job_slowdown"]["max"] >= k - 1 > 3.5
    # Per affected job far above the system-wide figure, as in 001's two columns.
    assert half["affected_job_slowdown"]["mean"] > 10 * half["added_wall_per_node_second"]
    # The literal wall-time ratio is NOT small on these workloads (most wall time is in
    # jobs spanning full leaves, D = K): docs/contention.md says so; this pins it.
    assert half["system_slowdown"] > 0.3
    # Monotone in R.
    sys_slow = [r["system_slowdown"] for r in a.sweep]
    assert sys_slow == sorted(sys_slow) and a.sweep[0]["system_slowdown"] == 0
    affected = [r["affected_jobs"] for r in a.sweep]
    assert affected == sorted(affected)


def _p(row, J):
    return next(p for p in row["probabilistic"] if p["J"] == J)


def assert_001_bigger_crossbars_and_fatter_nodes_contend_less(s, k, _a):
    xb = C.crossbar_sweep(s, (8, 24, 48), comm_fractions=[])
    at_half = [next(r for r in e["uplink_sweep"] if r["uplinks"] == e["nodes_per_leaf"] // 2)["system_slowdown"] for e in xb]
    assert at_half == sorted(at_half, reverse=True) and at_half[0] > at_half[-1]
    base = s.cores_per_node
    cs = C.cores_sweep(s, [base, 2 * base, 8 * base], comm_fractions=[])
    at_half = [next(r for r in e["uplink_sweep"] if r["uplinks"] == k // 2)["system_slowdown"] for e in cs]
    assert at_half == sorted(at_half, reverse=True) and at_half[0] > at_half[-1]
    assert cs[0]["uplink_sweep"] == C.analyze(s, comm_fractions=[]).sweep  # x1 is the schedule itself


# ----------------------------------------------------------------------------- command line


def test_cli_from_a_run_directory(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", "fattree:K=12,S=96,P=1", "--out", str(run_dir), "--quiet"]) == 0
    out = tmp_path / "c"
    code = main(["contention", "--run", str(run_dir), "--out", str(out), "--crossbar-sizes", "8,16", "--cores-sweep", "8,16", "--comm-fractions", "0.1,0.5"])
    assert code == 0
    text = capsys.readouterr().out
    assert "results in" in text
    doc = json.loads((out / "contention.json").read_text())
    assert doc["schedule"]["jobs"] == 39207 and doc["schedule"]["cores_per_node"] == 8
    assert [r["uplinks"] for r in doc["uplink_sweep"]] == list(range(12, 0, -1))
    assert [e["nodes_per_leaf"] for e in doc["crossbar_sweep"]] == [8, 16]
    assert [e["cores_per_node"] for e in doc["cores_per_node_sweep"]] == [8, 16]
    for f in ("leaf_demand", "job_slowdowns", "job_exposure", "sweeps"):
        assert pq.read_table(out / f"{f}.parquet").num_rows > 0
    slow = pq.read_table(out / "job_slowdowns.parquet")
    assert {"job_id", "uplinks", "added_s", "slowdown", "expected_slowdown_J0.1", "expected_slowdown_J0.5"} <= set(slow.column_names)
    for stem in ("uplink_removal", "crossbar_size", "cores_per_node", "contention_probability"):
        assert (out / "figures" / f"{stem}.png").stat().st_size > 0 and (out / "figures" / f"{stem}.svg").exists()
    page = (out / "report.html").read_text()
    assert "Uplink removal" in page and "figures/uplink_removal.png" in page


def test_cli_replays_a_trace_first(tmp_path, capsys):
    out = tmp_path / "c"
    code = main([
        "contention", "--trace", str(EXAMPLE_TRACE), "--system", "fattree:K=12,S=96,P=1", "--out", str(out),
        "--uplinks", "12,6,1", "--crossbar-sizes", "none", "--cores-sweep", "none", "--no-figures", "--quiet",
    ])
    assert code == 0
    assert (out / "run" / "jobs.parquet").exists()
    doc = json.loads((out / "contention.json").read_text())
    assert [r["uplinks"] for r in doc["uplink_sweep"]] == [12, 6, 1]
    assert doc["crossbar_sweep"] == [] and doc["cores_per_node_sweep"] == []
    assert doc["source"]["alloc"] == "linear"


def test_cli_refuses_a_crossbar_larger_than_the_machine(tmp_path, capsys):
    """--crossbar-sizes 99999999999 ran a sweep of R from K down to 1 and was killed for
    memory (exit 137); a leaf larger than the machine holds all of it, as one of the
    machine's size does. Up to the machine's size, or the largest default, it runs."""
    from conftest import DATA

    run_dir = tmp_path / "run"
    assert main(["simulate", "--trace", str(DATA / "atlas-window-120.swf"), "--system", "fattree:K=12,S=8,P=1", "--out", str(run_dir), "--quiet"]) == 0
    capsys.readouterr()
    common = ["--cores-sweep", "none", "--comm-fractions", "none", "--no-figures", "--no-report", "--quiet"]
    assert main(["contention", "--run", str(run_dir), "--out", str(tmp_path / "c"), "--crossbar-sizes", "8,99999999999", *common]) == 2
    err = capsys.readouterr().err
    assert err == "error: --crossbar-sizes: 99999999999 nodes per leaf is more than the 96 nodes of the schedule's machine: from there one leaf holds the whole machine and no uplink carries anything (give at most 96)\n"
    assert not (tmp_path / "c").exists()  # refused before --out is made: no empty directory left
    # with --trace, before the replay (nothing written)
    argv = ["contention", "--trace", str(DATA / "atlas-window-120.swf"), "--system", "fattree:K=12,S=8,P=1", "--crossbar-sizes", "97"]
    assert main([*argv, "--out", str(tmp_path / "c2"), *common]) == 2
    assert "97 nodes per leaf is more than the 96 nodes" in capsys.readouterr().err and not (tmp_path / "c2").exists()
    assert main(["contention", "--run", str(run_dir), "--out", str(tmp_path / "c3"), "--crossbar-sizes", "96", *common]) == 0
    doc = json.loads((tmp_path / "c3" / "contention.json").read_text())
    assert [e["nodes_per_leaf"] for e in doc["crossbar_sweep"]] == [96] and len(doc["crossbar_sweep"][0]["uplink_sweep"]) == 96


def test_cli_usage_errors(tmp_path, capsys):
    assert main(["contention", "--out", str(tmp_path)]) == 2
    assert main(["contention", "--trace", str(EXAMPLE_TRACE), "--out", str(tmp_path)]) == 2
    assert main(["contention", "--run", str(tmp_path / "nothing"), "--out", str(tmp_path / "c")]) == 2
    assert "toposched simulate" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_write_outputs_files_figures_and_page(tmp_path):
    from toposched.reporting.contention import write_outputs

    s = sched([(0, 100, [0, 1, 4, 5]), (50, 150, [2, 8])], np.arange(12) // 4, cores_per_node=1)
    a, doc = C.run_contention(s, crossbar_sizes=[2, 4], cores=[1, 2], comm_fractions=[0.5])
    written = write_outputs(a, doc, tmp_path)
    page = (tmp_path / "report.html").read_text()
    # the shared page (toposched.reporting.html): its table of contents and sections
    assert "<nav>" in page and "Uplink removal" in page and "Crossbar size" in page and "figures/uplink_removal.png" in page
    assert (tmp_path / "figures" / "crossbar_size.svg").exists()
    assert {p.name for p in written} >= {"leaf_demand.parquet", "job_slowdowns.parquet", "job_exposure.parquet", "sweeps.parquet", "contention.json", "report.html"}
    assert json.loads((tmp_path / "contention.json").read_text())["exposed_jobs"] == 2


def test_the_report_puts_seed_001s_published_figures_beside_the_analysis(tmp_path):
    """Issue 12 point 7: the per-affected-job distribution beside the paper's. The page
    carries 001's own worst-case figures (its text: 550% / 350% maxima, an average under 50%,
    about 5% system-wide at 2:1) next to this schedule's rows read at the same R."""
    from toposched.reporting.contention import _beside_001, _pct, write_outputs

    s = sched([(0, 100, [0, 1, 4, 5]), (50, 150, [2, 8])], np.arange(12) // 4, cores_per_node=1)
    a, doc = C.run_contention(s, crossbar_sizes=[2, 4], cores=[1, 2], comm_fractions=[0.5])
    write_outputs(a, doc, tmp_path)
    page = (tmp_path / "report.html").read_text()
    table = _beside_001(doc)
    assert table in page
    assert "550% (Atlas, 24-port crossbars), 350% (Jazz, Thunder, 16-port)" in table and "less than 50%" in table
    sweep = {r["uplinks"]: r for r in doc["uplink_sweep"]}
    # leaves of 4 nodes: the maximum is read at R = 1, the mean and the system-wide at R = 2
    rows = table.split("<tr>")[2:]
    assert "R = 1<" in rows[0] and _pct(sweep[1]["affected_job_slowdown"]["max"]) in rows[0]
    assert "R = 2 of 4 (2:1)" in rows[1] and _pct(sweep[2]["affected_job_slowdown"]["mean"]) in rows[1]
    assert _pct(sweep[2]["system_slowdown"]) in rows[2] and _pct(sweep[2]["added_wall_per_node_second"]) in rows[2]


def test_cli_refuses_more_uplinks_than_a_leaf_has_and_a_damaged_run(tmp_path, capsys):
    """--uplinks above K gave a sweep row with 'removed: -1' and a taper above 1; a run
    directory holding a node past its fabric was an internal error (ValueError)."""
    from conftest import DATA
    from toposched.nodelists import ranges_array_of_lists

    run_dir = tmp_path / "run"
    assert main(["simulate", "--trace", str(DATA / "atlas-window-120.swf"), "--system", "fattree:K=12,S=96,P=1", "--out", str(run_dir), "--quiet"]) == 0
    capsys.readouterr()
    common = ["--crossbar-sizes", "none", "--cores-sweep", "none", "--no-figures", "--no-report", "--quiet"]
    assert main(["contention", "--run", str(run_dir), "--out", str(tmp_path / "c"), "--uplinks", "13,6", *common]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --uplinks: 13 uplinks left per leaf is more than the 12 of this fabric's nonblocking leaf (R counts the uplinks left: at most K)"]
    assert not (tmp_path / "c").exists()  # refused before --out is made: no empty directory left
    # with --trace, before the replay (nothing written)
    argv = ["contention", "--trace", str(DATA / "atlas-window-120.swf"), "--system", "fattree:K=12,S=96,P=1", "--uplinks", "13"]
    assert main([*argv, "--out", str(tmp_path / "c3"), *common]) == 2
    assert capsys.readouterr().err.strip().splitlines() == err and not (tmp_path / "c3").exists()
    jobs = pq.read_table(run_dir / "jobs.parquet")
    lists = [[0]] + [[i] for i in range(1, len(jobs))]
    lists[0] = [12 * 96]  # one past the last node
    at = jobs.schema.get_field_index("node_ranges")
    pq.write_table(jobs.set_column(at, "node_ranges", ranges_array_of_lists(lists)).replace_schema_metadata(jobs.schema.metadata), run_dir / "jobs.parquet")
    assert main(["contention", "--run", str(run_dir), "--out", str(tmp_path / "c2"), *common]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {run_dir / 'jobs.parquet'}: is not a schedule on ") and "node ids must lie in [0, 1152)" in err[0], err
    assert not (tmp_path / "c2").exists()


def test_two_analyses_of_one_schedule_write_the_same_bytes(tmp_path, capsys):
    """contention.json held the analysis's wall times (timings_s) and report.html its
    "analysis time": two runs on the same schedule differed, where every other result file
    of toposched is byte-identical from run to run."""
    from conftest import DATA

    run_dir = tmp_path / "run"
    assert main(["simulate", "--trace", str(DATA / "atlas-window-120.swf"), "--system", "fattree:K=12,S=8,P=1", "--out", str(run_dir), "--quiet"]) == 0
    common = ["--crossbar-sizes", "8,16", "--cores-sweep", "1,2", "--no-figures", "--quiet"]
    for name in ("a", "b"):
        assert main(["contention", "--run", str(run_dir), "--out", str(tmp_path / name), *common]) == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert {"contention.json", "report.html"} <= {str(f) for f in files}
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    assert "timings_s" not in json.loads((tmp_path / "a" / "contention.json").read_text())


def test_out_must_be_new_or_contentions_own(tmp_path, capsys, monkeypatch):
    """contention wrote into any --out: among a user's files (a report.html of theirs was
    overwritten), through the current directory with `--out .`, and into the --run
    directory itself, which `toposched simulate` then refused to write again."""
    from conftest import DATA

    run_dir = tmp_path / "run"
    assert main(["simulate", "--trace", str(DATA / "atlas-window-120.swf"), "--system", "fattree:K=12,S=8,P=1", "--out", str(run_dir), "--quiet"]) == 0
    common = ["--crossbar-sizes", "none", "--cores-sweep", "none", "--no-figures", "--quiet"]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.html").write_text("my own report")
    (mine / "thesis.tex").write_text("x")
    capsys.readouterr()
    assert main(["contention", "--run", str(run_dir), "--out", str(mine), *common]) == 2
    assert capsys.readouterr().err == f"error: {mine}: holds files that are not contention's outputs (thesis.tex); give --out a new or empty directory\n"
    assert (mine / "report.html").read_text() == "my own report"
    assert main(["contention", "--run", str(run_dir), "--out", str(run_dir), *common]) == 2
    assert "holds files that are not contention's outputs (fabric.json, jobs.parquet, " in capsys.readouterr().err
    monkeypatch.chdir(mine)
    assert main(["contention", "--run", str(run_dir), "--out", ".", *common]) == 2
    assert "is the current, home or root directory" in capsys.readouterr().err
    assert sorted(p.name for p in mine.iterdir()) == ["report.html", "thesis.tex"]
    # a new directory, then the same one again (its own outputs): both run
    again = tmp_path / "c"
    assert main(["contention", "--run", str(run_dir), "--out", str(again), *common]) == 0
    assert main(["contention", "--run", str(run_dir), "--out", str(again), *common]) == 0


@pytest.mark.parametrize("mode", ["run", "trace"])
def test_an_interrupted_write_leaves_the_earlier_outputs_whole(tmp_path, capsys, monkeypatch, mode):
    """Ctrl-C while contention wrote its files left new Parquet files beside the earlier
    contention.json and report.html (or none at all), and nothing said the directory was
    a mixture. --out is now written as a whole: an interrupted run leaves the earlier
    outputs byte for byte, or, the first time, no --out."""
    import toposched.contention
    from conftest import DATA
    from toposched.cli import EXIT_INTERRUPTED

    run_dir = tmp_path / "run"
    assert main(["simulate", "--trace", str(DATA / "atlas-window-120.swf"), "--system", "fattree:K=12,S=8,P=1", "--out", str(run_dir), "--quiet"]) == 0
    source = ["--run", str(run_dir)] if mode == "run" else ["--trace", str(DATA / "atlas-window-120.swf"), "--system", "fattree:K=12,S=8,P=1"]
    common = ["--crossbar-sizes", "none", "--cores-sweep", "none", "--no-figures", "--quiet"]
    out = tmp_path / "c"
    assert main(["contention", *source, "--out", str(out), "--uplinks", "12,6", *common]) == 0

    def snapshot() -> dict[str, bytes]:
        return {str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and run_dir not in p.parents}

    before = snapshot()
    assert f"{out.name}/contention.json" in before

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt  # after the first three Parquet files are written

    monkeypatch.setattr(toposched.contention, "sweep_rows", interrupted)
    assert main(["contention", *source, "--out", str(out), "--uplinks", "12,3", *common]) == EXIT_INTERRUPTED
    assert snapshot() == before
    assert main(["contention", *source, "--out", str(tmp_path / "new"), *common]) == EXIT_INTERRUPTED
    assert snapshot() == before and not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "run"]  # no staging left behind


def test_run_from_the_outputs_own_replay_stays(tmp_path, capsys):
    """--run OUT/run --out OUT (analysing again the replay an earlier --trace kept there):
    the whole --out is replaced, and that replay stays in it."""
    from conftest import DATA

    out = tmp_path / "c"
    common = ["--crossbar-sizes", "none", "--cores-sweep", "none", "--no-figures", "--quiet"]
    assert main(["contention", "--trace", str(DATA / "atlas-window-120.swf"), "--system", "fattree:K=12,S=8,P=1", "--out", str(out), *common]) == 0
    jobs = (out / "run" / "jobs.parquet").read_bytes()
    assert main(["contention", "--run", str(out / "run"), "--out", str(out), "--uplinks", "12,3", *common]) == 0
    assert (out / "run" / "jobs.parquet").read_bytes() == jobs
    assert [r["uplinks"] for r in json.loads((out / "contention.json").read_text())["uplink_sweep"]] == [12, 3]


def test_a_fraction_or_uplink_count_given_twice_is_evaluated_once():
    """--uplinks 3,3 was evaluated once but --comm-fractions 0.5,0.5 twice: two identical
    probabilistic rows per R, and sweeps.parquet's column of that J written twice under
    one name. The same values given twice now give the analysis of the values once."""
    s = Schedule.from_arrays(node_leaf=[0, 0, 1, 1], start_s=[0, 5], end_s=[10, 20], node_offsets=[0, 2, 4], node_ids=[0, 2, 1, 3])
    once = analyze(s, uplinks=[1], comm_fractions=[0.5, 0.1])
    twice = analyze(s, uplinks=[1, 1], comm_fractions=[0.5, 0.1, 0.5])
    assert twice.comm_fractions == (0.5, 0.1)  # first-given order kept
    assert twice.summary() == once.summary()
    assert [p["J"] for p in twice.summary()["uplink_sweep"][0]["probabilistic"]] == [0.5, 0.1]


def test_the_printed_table_marks_the_row_of_the_fabric_as_built(tmp_path, capsys):
    """On a tapered fabric (W1 = 2 of K = 4) the table ran R = 4 down to 1 with taper 1.00
    on its first row and nothing saying which row is the fabric replayed; docs/contention.md
    says its cost is the row R = W1. That row is now marked, and the header names W1."""
    out = tmp_path / "c"
    code = main([
        "contention", "--trace", str(EXAMPLE_TRACE), "--system", "fattree:K=4,S=4,P=2,W1=2", "--out", str(out),
        "--crossbar-sizes", "none", "--cores-sweep", "none", "--comm-fractions", "none", "--no-figures", "--no-report",
    ])
    stdout = capsys.readouterr().out
    assert code == 0
    rows = {int(line.split()[0]): line for line in stdout.splitlines() if re.match(r"^\s+\d+\s+\d+\.\d\d:", line)}
    assert sorted(rows) == [1, 2, 3, 4]
    assert [r for r, line in rows.items() if line.rstrip().endswith("<- as built (W1 = 2)")] == [2], stdout
    assert "as built W1=2" in stdout
    # a full fabric marks nothing: its as-built row is the first, taper 1
    code = main(["contention", "--trace", str(EXAMPLE_TRACE), "--system", "fattree:K=4,S=4,P=2", "--out", str(tmp_path / "d"),
                 "--crossbar-sizes", "none", "--cores-sweep", "none", "--comm-fractions", "none", "--no-figures", "--no-report"])
    assert code == 0 and "as built" not in capsys.readouterr().out


def test_a_run_replayed_with_the_network_model_is_noted(tmp_path, capsys):
    """contention --run on a run replayed with --network took its run times, which already
    include the network model's predicted slowdowns, and said nothing: the uplink
    slowdowns it reports then come on top of those. contention.json's notes and the
    printed summary now say so; a run without the model gets no such note."""
    for spec in ("heavy", None):
        run = tmp_path / f"run-{spec}"
        argv = ["simulate", "--trace", str(EXAMPLE_TRACE), "--transform", "days:2", "--system", "cab", "--out", str(run), "--quiet"]
        assert main(argv + (["--network", spec] if spec else [])) == 0
        out = tmp_path / f"c-{spec}"
        assert main(["contention", "--run", str(run), "--out", str(out), "--crossbar-sizes", "none", "--cores-sweep", "none",
                     "--comm-fractions", "none", "--no-figures", "--no-report"]) == 0
        printed = capsys.readouterr().out
        notes = json.loads((out / "contention.json").read_text())["schedule"]["notes"]
        noted = [n for n in notes if "network model" in n]
        if spec:
            assert len(noted) == 1 and "--network heavy" in noted[0] and "already include" in noted[0], notes
            assert f"note: {noted[0]}" in printed, printed
        else:
            assert noted == [] and "note:" not in printed


@pytest.mark.parametrize("flag", ["--uplinks", "--crossbar-sizes", "--cores-sweep", "--comm-fractions"])
@pytest.mark.parametrize("value", ["", ","])
def test_an_empty_list_flag_says_it_is_empty(tmp_path, capsys, flag, value):
    """--uplinks '' said "every value must be at least 1" (there is no value), and
    --comm-fractions '' was taken as 'none' silently."""
    with pytest.raises(SystemExit) as e:
        main(["contention", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--out", str(tmp_path / "c"), flag, value])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and f"argument {flag}: no value given" in err[0] and "'none'" in err[0], err


def test_analyze_refuses_more_uplinks_than_the_nonblocking_leaf():
    """analyze(uplinks=[R > K]) gave a row with "removed": -2 and a taper below 1 (the
    command refuses such an --uplinks; the API did not): now the same refusal."""
    s = Schedule.from_arrays(node_leaf=[0, 0, 1, 1], start_s=[0, 5], end_s=[10, 20], node_offsets=[0, 2, 4], node_ids=[0, 2, 1, 3])
    assert s.full_uplinks == 2
    with pytest.raises(ValueError, match="4 uplinks left per leaf is more than the 2 "):
        analyze(s, uplinks=[4, 1])
    assert [r["removed"] for r in analyze(s, uplinks=[2, 1]).summary()["uplink_sweep"]] == [0, 1]


def test_transform_before_the_replay_equals_a_transformed_simulate_run(tmp_path, capsys):
    """contention had no --transform (a site studying its log at twice the scale had to
    simulate first): --trace with --transform now analyses the same schedule as simulate
    --transform then contention --run; with --run it is refused (no replay is made)."""
    common = ["--crossbar-sizes", "none", "--cores-sweep", "none", "--comm-fractions", "0.2", "--no-figures", "--no-report", "--quiet"]
    system = "fattree:K=4,S=8,P=1"
    assert main(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", system, "--transform", "days:3", "scale:2", "cap", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert main(["contention", "--run", str(tmp_path / "run"), "--out", str(tmp_path / "a"), *common]) == 0
    assert main(["contention", "--trace", str(EXAMPLE_TRACE), "--system", system, "--transform", "days:3", "scale:2", "cap", "--out", str(tmp_path / "b"), *common]) == 0
    a, b = (json.loads((tmp_path / d / "contention.json").read_text()) for d in ("a", "b"))
    assert a["uplink_sweep"] == b["uplink_sweep"] and a["schedule"]["jobs"] == b["schedule"]["jobs"]
    assert pq.read_table(tmp_path / "b" / "run" / "jobs.parquet").equals(pq.read_table(tmp_path / "run" / "jobs.parquet"))
    capsys.readouterr()
    assert main(["contention", "--run", str(tmp_path / "run"), "--transform", "scale:2", "--out", str(tmp_path / "c"), "--quiet"]) == 2
    assert "--transform applies to --trace" in capsys.readouterr().err


def test_run_of_a_comparison_directory_names_one_of_its_runs(tmp_path, capsys):
    """`compare --out out/atlas` then `contention --run out/atlas` (as --help's examples
    read) said "out/atlas/jobs.parquet not found: --run wants a directory written by
    toposched simulate", though the comparison holds such directories: it now names one."""
    from conftest import DATA

    cmp = tmp_path / "cmp"
    assert main(["compare", "--trace", str(DATA / "atlas-window-120.swf"), "--system", "cab", "--scenarios", "none", "--jobs", "1", "--out", str(cmp), "--no-report", "--quiet"]) == 0
    capsys.readouterr()
    common = ["--crossbar-sizes", "none", "--cores-sweep", "none", "--no-figures", "--no-report", "--quiet"]
    assert main(["contention", "--run", str(cmp), "--out", str(tmp_path / "c"), *common]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {cmp}: holds runs, not one run's results: --run takes one of them, e.g. --run {cmp / 'runs' / 'isolated__none'} (2 runs in {cmp / 'runs'})"], err
    assert main(["contention", "--run", str(cmp / "runs" / "isolated__none"), "--out", str(tmp_path / "c"), *common]) == 0


def test_cli_on_logged_placements_says_which_ratio_is_001s_own(tmp_path, capsys):
    """Issue 12 point 7: 001's own metric is the headline and the output says which ratio
    001 defines. The terminal printed 'system' and 'per node-s' columns with no word on
    which is 001's definition (the report's model paragraph did not say either); here on a
    sacct log's as-logged placements (001 used logged allocations)."""
    from pathlib import Path

    from toposched.aslogged import fabric_from_hosts, hosts_of, topology_conf_text
    from toposched.workload import read_trace

    log = Path(__file__).parent / "data" / "slurm" / "xdmod_ub-hpc_sacct-parsable2_accounting-logs.log"
    conf = tmp_path / "hosts.conf"
    conf.write_text(topology_conf_text(fabric_from_hosts(hosts_of(read_trace(str(log))), nodes_per_leaf=8, name="ub-hpc")))
    out = tmp_path / "c"
    assert main(["contention", "--trace", str(log), "--system", str(conf), "--alloc", "as-logged", "--out", str(out),
                 "--crossbar-sizes", "none", "--cores-sweep", "none", "--no-figures"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "system: 001's own system-wide slowdown, added wall time over the jobs' wall time (its definition)" in text
    assert "per node-s: the same added time over the jobs' node-seconds (reproduces 001's magnitudes, not its definition)" in text
    doc = json.loads((out / "contention.json").read_text())
    assert doc["exposed_jobs"] >= 1 and any(r["affected_jobs"] for r in doc["uplink_sweep"])
    page = (out / "report.html").read_text()
    assert "001&#x27;s own metric, the one it defines" in page or "001's own metric, the one it defines" in page

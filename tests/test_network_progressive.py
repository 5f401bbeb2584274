"""Progressive filling (crates/toposched-core/src/network/progressive.rs, docs/network.md
"Progressive filling") against validation/flowsim.py, an independent per-flow fluid
simulator (its own D-mod-k routes, max-min water filling and event loop), and against
hand-computed timelines."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from toposched import _core
from toposched.network import evaluate_scenario

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "validation"))
import flowsim  # noqa: E402

#: 4 nodes per leaf, one up-link per leaf: every flow between two leaves of a pod crosses
#: the source leaf's only up-link and the destination leaf's only down-link
TINY = "fattree:K=4,S=4,P=1,W1=1"


def _run(jobs, fabric=TINY, **model):
    return evaluate_scenario({"fabric": fabric, "model": {"fairness": "flows", **model}, "jobs": jobs})


def test_a_flow_that_finishes_early_releases_its_share():
    """One job, flows of 1 and 3 bytes out of node 0: both at 1/2 until t = 2, then the
    long one alone at full rate: the phase ends at 4."""
    r = _run([{"name": "J", "nodes": [0, 4, 5], "flows": [[0, 1, 1.0], [0, 2, 3.0]], "phi": 1}])
    assert r["model"]["filling"] == "progressive"
    assert r["jobs"][0]["t_alone"] == pytest.approx(4.0, rel=1e-12)
    ref = flowsim.simulate(flowsim.Tree(4, 4, W1=1), [[(0, 4, 1.0), (0, 5, 3.0)]], [1.0])
    assert ref[0]["t_alone"] == pytest.approx(4.0, rel=1e-12)


def test_the_other_job_speeds_up_when_a_flow_ends():
    """X: 1 byte through leaf 0's up-link and 3 bytes inside leaf 2; Y: 3 bytes through
    leaf 0's up-link; both communicate all the time. By hand: [0,2] the two up-link flows
    at 1/2; [2,3] Y's alone at 1; X's phases take 3 (its leaf-2 flow), Y's 5, 4, 5, 4, ...
    (period 9, both restart together at 9). Six phases each, the first not counted: Y's
    mean is (4+5+4+5+4)/5 = 4.4 over 3 alone. The steady-state solve, which holds X's
    claim for the whole phase, gives Y 2/3 of its speed: 1.5."""
    jobs = [
        {"name": "X", "nodes": [0, 4, 8, 9], "flows": [[0, 1, 1.0], [2, 3, 3.0]], "phi": 1},
        {"name": "Y", "nodes": [1, 5], "flows": [[0, 1, 3.0]], "phi": 1},
    ]
    x, y = _run(jobs)["jobs"]
    assert (x["t_alone"], x["t_shared"], x["slowdown"]) == pytest.approx((3.0, 3.0, 1.0), rel=1e-12)
    assert (y["t_alone"], y["t_shared"]) == pytest.approx((3.0, 4.4), rel=1e-12)
    assert y["slowdown"] == pytest.approx(4.4 / 3, rel=1e-12)
    assert y["x"] == pytest.approx(3 / 4.4, rel=1e-12)
    steady = _run(jobs, filling="steady")
    assert steady["model"]["filling"] == "steady"
    assert [j["slowdown"] for j in steady["jobs"]] == pytest.approx([1.0, 1.5])
    ref = flowsim.simulate(flowsim.Tree(4, 4, W1=1), [[(0, 4, 1.0), (8, 9, 3.0)], [(1, 5, 3.0)]], [1.0, 1.0])
    assert [r["slowdown"] for r in ref] == pytest.approx([1.0, 4.4 / 3], rel=1e-12)


def test_a_quiet_phase_lends_the_link_to_the_other_job():
    """A: 1 byte, phi 1/2 (quiet 1 after each phase); B: 3 bytes, phi 1; both through leaf
    0's up-link. By hand: A's phases [0,2] [3,5] [6,8], B's [0,5] [5,9], repeating from 9:
    A takes 2 + 1 against 1 + 1 alone (1.5); B's six phases 5, 4, 5, 4, 5, 4 -> 4.4 / 3."""
    jobs = [
        {"name": "A", "nodes": [0, 4], "flows": [[0, 1, 1.0]], "phi": 0.5},
        {"name": "B", "nodes": [1, 5], "flows": [[0, 1, 3.0]], "phi": 1},
    ]
    a, b = _run(jobs)["jobs"]
    assert a["slowdown"] == pytest.approx(1.5, rel=1e-12)
    assert b["slowdown"] == pytest.approx(4.4 / 3, rel=1e-12)
    ref = flowsim.simulate(flowsim.Tree(4, 4, W1=1), [[(0, 4, 1.0)], [(1, 5, 3.0)]], [0.5, 1.0])
    assert [r["slowdown"] for r in ref] == pytest.approx([1.5, 4.4 / 3], rel=1e-12)


def test_flowsim_routes_are_the_models():
    """flowsim's own D-mod-k against the core's routes, every pair of a 3-level tapered tree
    (link names compared as sets of (from, to) switch levels and indices)."""
    tree = flowsim.Tree(4, 2, P=3, W1=2, W2=1)
    m = _core.NetworkModel(_core.Topology.fat_tree("t", 4, 2, 3, 2, 1))
    ids: dict[tuple, int] = {}
    for s in range(24):
        for d in range(24):
            mine = tree.route(s, d)
            theirs = m.route(s, d)
            assert len(mine) == len(theirs)
            for a, b in zip(mine, theirs):
                # one core link id per flowsim link, consistently over all pairs
                assert ids.setdefault(a, b) == b, (s, d, a, m.link_name(b))
    assert len(set(ids.values())) == len(ids)


def _scenario(rng, n_nodes):
    pats = ["pairs", "flood", "ring", "stencil2d", "stencil3d", "sub-a2a:4", "a2a", "incast", "unstructured"]
    perm, pos, jobs = rng.permutation(n_nodes), 0, []
    for _ in range(int(rng.integers(2, 6))):
        pat = pats[int(rng.integers(len(pats)))]
        n = int(rng.integers(2, (10 if pat == "a2a" else 16) + 1))
        if pos + n > n_nodes:
            break
        phi = 1.0 if rng.random() < 0.5 else float(rng.uniform(0.2, 1.0))
        jobs.append({"nodes": sorted(perm[pos : pos + n].tolist()), "pattern": pat, "seed": int(rng.integers(1 << 30)), "phi": phi})
        pos += n
    return jobs


@pytest.mark.parametrize("w1", [8, 4], ids=["full", "taper-2-1"])
def test_progressive_filling_equals_flowsim_on_random_scenarios(w1):
    """2-5 jobs of 2-16 random nodes and random patterns (some with quiet phases) on a
    48-node tree, full and 2:1 tapered: every job's time together, time alone and slowdown
    equal flowsim's to 1e-6 relative."""
    tree = flowsim.Tree(8, 6, W1=w1)
    m = _core.NetworkModel(_core.Topology.fat_tree("t", 8, 6, 1, w1), fairness="flows", filling="progressive")
    rng = np.random.default_rng(11 + w1)
    compared, slowed = 0, 0
    for _ in range(8):
        jobs = _scenario(rng, 48)
        ev = m.evaluate(jobs)
        assert ev["filling"] == "progressive"
        ref = flowsim.simulate(tree, [flowsim.node_flows(m, j) for j in jobs], [j["phi"] for j in jobs])
        for e, r in zip(ev["jobs"], ref):
            assert e["t_alone"] == pytest.approx(r["t_alone"], rel=1e-6)
            assert e["slowdown"] == pytest.approx(r["slowdown"], rel=1e-6)
            if r["t_alone"] > 0:
                assert e["t_shared"] == pytest.approx(r["t_shared"], rel=1e-6)
            compared += 1
            slowed += r["slowdown"] > 1.01
    assert compared >= 20 and slowed >= 5  # the cases are not all trivial


def test_auto_filling_keeps_the_steady_solve_for_service_levels_and_large_jobs():
    jobs = [
        {"name": "A", "nodes": [0, 4], "flows": [[0, 1, 1.0]], "phi": 1, "service_level": 0},
        {"name": "B", "nodes": [1, 5], "flows": [[0, 1, 1.0]], "phi": 1, "service_level": 1},
    ]
    r = _run(jobs, service_levels=[9, 1])
    assert r["model"]["filling"] == "steady"
    assert [j["x"] for j in r["jobs"]] == pytest.approx([0.9, 0.1])
    assert _run(jobs, service_levels=[1, 1])["model"]["filling"] == "progressive"
    with pytest.raises(Exception, match="service levels"):
        _run(jobs, service_levels=[9, 1], filling="progressive")
    big = [{"name": "big", "nodes": list(range(72)), "pattern": "a2a", "phi": 1}]  # 5,112 flows
    assert _run(big, fabric="fattree:K=18,S=16,P=1")["model"]["filling"] == "steady"


def test_progressive_filling_needs_fairness_flows():
    from toposched.errors import InputError

    with pytest.raises(InputError) as e:
        evaluate_scenario({"fabric": TINY, "model": {"fairness": "jobs", "filling": "progressive"}, "jobs": []})
    assert e.value.field == "model.filling"


def test_filling_in_the_command_and_its_errors(tmp_path, capsys):
    import json

    from toposched.cli import main
    from toposched.errors import InputError
    from toposched.network_spec import parse_network_spec

    scen = tmp_path / "s.json"
    jobs = [{"name": "A", "nodes": [0, 4], "flows": [[0, 1, 1.0]], "phi": 0.5}, {"name": "B", "nodes": [1, 5], "flows": [[0, 1, 3.0]], "phi": 1}]
    scen.write_text(json.dumps({"fabric": TINY, "model": {"fairness": "flows"}, "jobs": jobs}))
    assert main(["interfere", str(scen), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["model"]["filling"] == "progressive" and r["jobs"][0]["slowdown"] == pytest.approx(1.5)
    assert main(["interfere", str(scen), "--filling", "steady", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["filling"] == "steady"
    assert main(["interfere", str(scen)]) == 0
    assert "(progressive)" in capsys.readouterr().out
    # progressive with another fairness: one located line, exit 2
    assert main(["interfere", str(scen), "--filling", "progressive", "--fairness", "ports"]) == 2
    err = capsys.readouterr().err
    assert "--filling" in err and "needs fairness flows, not ports" in err and "Traceback" not in err
    scen.write_text(json.dumps({"fabric": TINY, "model": {"fairness": "flows", "filling": "fast"}, "jobs": jobs}))
    assert main(["interfere", str(scen)]) == 2
    assert "model.filling" in capsys.readouterr().err
    # the replay keeps the steady solve: a --network spec may not ask for another filling
    f = tmp_path / "net.json"
    f.write_text(json.dumps({"mapping": "bins", "model": {"fairness": "flows", "filling": "progressive"}}))
    with pytest.raises(InputError) as e:
        parse_network_spec(str(f))
    assert e.value.field == "model.filling"

"""toposched frontier (issue 18): the grid, the Pareto front against its definition, and
every number of frontier.json against the run directories it came from."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from conftest import THUNDER
from toposched.errors import InputError
from toposched.frontier import GridPoint, expand_grid, pareto_front, run_frontier


# --------------------------------------------------------------------------- the grid


def test_grid_is_every_combination_in_order():
    points = expand_grid(["linear", "isolated:leaf_order=flux-topo+paper,tie_break=name+index", "random:seed=3"])
    assert [p.label for p in points] == [
        "linear",
        "isolated(leaf_order=flux-topo,tie_break=name)",
        "isolated(leaf_order=flux-topo,tie_break=index)",
        "isolated(leaf_order=paper,tie_break=name)",
        "isolated(leaf_order=paper,tie_break=index)",
        "random(seed=3)",
    ]
    assert points[5].options == (("seed", 3),)  # typed by the option's schema
    assert len({p.name for p in points}) == len(points)


def test_grid_point_listed_twice_runs_once():
    assert expand_grid(["linear", "LINEAR", "random:seed=1+1"]) == [GridPoint("linear"), GridPoint("random", (("seed", 1),))]
    # the same setting with its options in another order is the same point (it ran twice,
    # in two run directories): options in the policy's own order, the order given kept
    # for which varies fastest
    points = expand_grid(["isolated:tie_break=name+index,leaf_order=paper", "isolated:leaf_order=paper,tie_break=index"])
    assert [p.label for p in points] == ["isolated(leaf_order=paper,tie_break=name)", "isolated(leaf_order=paper,tie_break=index)"]
    assert points[1].name == expand_grid(["isolated:leaf_order=paper,tie_break=index"])[0].name


@pytest.mark.parametrize(
    "item, words",
    [
        ("nosuch", "unknown allocation policy 'nosuch'"),
        ("isolated:nosuch=1", "isolated has no option 'nosuch'"),
        ("linear:seed=1", "linear has no option 'seed'"),
        ("random:seed=x", "expected an integer, got 'x'"),
        ("random:seed=-1", "must be at least 0"),
        # a number below the schema's minimum ran both runs of the point, each failing in
        # the engine ("settings: adaptive: slowdown_threshold must be a fraction >= 0")
        ("adaptive:slowdown_threshold=-1", "option slowdown_threshold: must be at least 0, got -1"),
        ("least-interference:assumed_phi=0.3+-0.5", "option assumed_phi: must be at least 0, got -0.5"),
        # the schema's maximum of a number option was dropped (the engine refused it in each run)
        ("least-interference:assumed_phi=0.5+1.5", "option assumed_phi: must be at most 1, got 1.5"),
        ("isolated:leaf_order=sideways", "expected one of flux-topo, paper"),
        ("random:seed", "expected OPTION=VALUE"),
        ("random:seed=1,seed=2", "option seed given twice"),
        # compare's --allocs takes A,B: "unknown allocation policy 'linear,isolated'", and
        # with a module:Class after the comma, the message about policies written in Python
        ("linear,isolated", "separated by spaces (--policies linear isolated), not commas"),
        ("linear, capped:leaf_cap=1+2", "separated by spaces (--policies linear capped:leaf_cap=1+2), not commas"),
        ("linear,mypolicies:Pack", "separated by spaces (--policies linear mypolicies:Pack), not commas"),
    ],
)
def test_grid_errors_name_the_flag_and_the_item(item, words):
    with pytest.raises(InputError) as e:
        expand_grid([item])
    assert str(e.value).startswith("--policies: ") and words in str(e.value)


# --------------------------------------------------------------------------- the front


def _dominated_brute_force(points):
    """The definition, point against point: dominated when another point is <= on both
    coordinates and < on one."""
    return [
        any(q[0] <= p[0] and q[1] <= p[1] and (q[0] < p[0] or q[1] < p[1]) for q in points)
        for p in points
    ]


@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 4)), max_size=25))
@settings(max_examples=300, deadline=None)
def test_front_is_the_undominated_points(points):
    # small integer ranges: many ties in x, in y and whole duplicates
    pts = [(float(x), float(y)) for x, y in points]
    assert pareto_front(pts) == [not d for d in _dominated_brute_force(pts)]


def test_front_hand_case():
    # (1, 1) dominates (2, 2); equal points are both on the front; (0, 5) and (3, 0) are
    # each best on one axis
    assert pareto_front([(0, 5), (1, 1), (2, 2), (0, 5), (3, 0), (1, 2)]) == [True, True, False, True, True, False]


# --------------------------------------------------------------------------- whole runs

WINDOW = ["days:20", "scale:2"]  # 20 days of Thunder, twice the nodes: queues form, the model has work


@pytest.fixture(scope="module")
def frontier(tmp_path_factory):
    out = tmp_path_factory.mktemp("frontier")
    run_frontier(THUNDER, "cab", out, policies=["linear", "random:seed=0+1", "isolated"], network="heavy", transforms=WINDOW, jobs=1)
    return out


def _interference_from_jobs(run_dir):
    t = pq.read_table(run_dir / "jobs.parquet").to_pydict()
    nodes = np.asarray(t["nodes"], float)
    dur = np.asarray(t["end_s"], float) - np.asarray(t["start_s"], float)
    slow = np.asarray(t["net_slowdown"], float)
    return float(np.sum(nodes * dur * (1.0 - 1.0 / slow)))


def test_every_number_comes_from_its_runs(frontier):
    doc = json.loads((frontier / "frontier.json").read_text())
    assert [p["policy"] for p in doc["points"]] == ["linear", "random(seed=0)", "random(seed=1)", "isolated"]
    for p in doc["points"]:
        open_dir, net_dir = (frontier / d for d in p["dirs"])
        open_summary = json.loads((open_dir / "summary.json").read_text())
        net_summary = json.loads((net_dir / "summary.json").read_text())
        assert "network" not in open_summary and net_summary["network"]["mapping"] == "random"
        # recomputed from the jobs table, not read back from the summary that wrote it
        assert p["interference_node_s"] == pytest.approx(_interference_from_jobs(net_dir), rel=1e-9, abs=1e-6)
        assert p["open_busy_utilization"] == open_summary["utilization"]["mean"]
        assert p["wait_mean_s"] == pytest.approx(float(np.mean(pq.read_table(net_dir / "jobs.parquet").column("wait_s").to_numpy())))
    by = {p["policy"]: p for p in doc["points"]}
    # the interference-free policy loses nothing to sharing; the oblivious ones do
    assert by["isolated"]["interference_node_s"] == 0.0
    assert by["linear"]["interference_node_s"] > 0 and by["random(seed=0)"]["interference_node_s"] > by["linear"]["interference_node_s"]
    assert by["isolated"]["vs_baseline"]["interference_removed"] == 1.0
    lin = by["linear"]
    for p in doc["points"]:
        rel = p["vs_baseline"]
        assert rel["utilization_lost_pts"] == pytest.approx(100 * (lin["open_busy_utilization"] - p["open_busy_utilization"]))
        assert rel["useful_gain_pts"] == pytest.approx(100 * (p["useful_utilization"] - lin["useful_utilization"]))
    # the front, from the definition
    pts = [(p["vs_baseline"]["utilization_lost_pts"], p["interference_node_s"]) for p in doc["points"]]
    assert [p["on_front"] for p in doc["points"]] == [not d for d in _dominated_brute_force(pts)]
    assert by["isolated"]["on_front"]  # nothing removes more interference


def test_a_points_seed_is_the_runs_seed_recorded_once(frontier):
    """random:seed=0+1 ran random(seed=1) as RunConfig(seed=0, policy_options={"seed": 1}):
    the policy drew with 1 and summary.json recorded both seeds. A RunConfig now refuses
    two seeds that disagree; the point's seed is the run's seed, recorded once."""
    doc = json.loads((frontier / "frontier.json").read_text())
    for p in doc["points"]:
        if p["alloc"] != "random":
            continue
        for d in p["dirs"]:
            policy = json.loads((frontier / d / "summary.json").read_text())["policy"]
            assert policy["seed"] == p["options"]["seed"] and "seed" not in policy.get("policy_options", {}), (d, policy)


def test_csv_has_a_row_per_point(frontier):
    doc = json.loads((frontier / "frontier.json").read_text())
    rows = list(csv.DictReader((frontier / "frontier.csv").open()))
    assert [r["policy"] for r in rows] == [p["policy"] for p in doc["points"]]
    for r, p in zip(rows, doc["points"]):
        assert float(r["interference_node_s"]) == pytest.approx(p["interference_node_s"])
        assert r["on_front"] == str(p["on_front"])


def test_same_inputs_same_bytes_in_workers(frontier, tmp_path):
    run_frontier(THUNDER, "cab", tmp_path, policies=["linear", "random:seed=0+1", "isolated"], network="heavy", transforms=WINDOW, jobs=2)
    assert (tmp_path / "frontier.json").read_bytes() == (frontier / "frontier.json").read_bytes()
    assert (tmp_path / "frontier.csv").read_bytes() == (frontier / "frontier.csv").read_bytes()


def test_report_page(frontier):
    from toposched.reporting.frontier import build_frontier_report

    page = build_frontier_report(frontier).read_text()
    assert "Pareto front" in page and "figures/frontier.png" in page
    assert (frontier / "figures" / "frontier.svg").exists()
    for policy in ("linear", "random(seed=1)", "isolated"):
        assert f">{policy}<" in page


def test_cli_bad_grid_is_one_line(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "toposched.cli", "frontier", "--trace", str(THUNDER), "--system", "cab", "--policies", "isolated:leaf_cap=2", "--out", str(tmp_path)],
        capture_output=True, text=True,
    )
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["error: --policies: 'isolated:leaf_cap=2': isolated has no option 'leaf_cap' (its options: leaf_order, tie_break)"]


def test_cli_runs_and_writes_the_report(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "toposched.cli", "frontier", "--trace", str(THUNDER), "--system", "cab", "--transform", "days:5",
         "--policies", "linear", "isolated", "--jobs", "1", "--out", str(tmp_path)],
        capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "isolated" in r.stdout and "report:" in r.stdout
    assert (tmp_path / "frontier.html").exists()
    doc = json.loads((tmp_path / "frontier.json").read_text())
    assert doc["network"] == "bins"  # the default model


def test_an_option_for_every_run_reaches_only_the_policies_that_declare_it(tmp_path):
    # --leaf-cap given once: capped's runs take it, linear's must not be refused for it
    run_frontier(THUNDER, "cab", tmp_path, policies=["linear", "capped"], network="bins", transforms=["days:5"], jobs=1,
                 run_options={"policy_options": {"leaf_cap": 3}})
    for run, expected in (("capped__net", {"leaf_cap": 3}), ("linear__net", {}), ("capped__open", {"leaf_cap": 3})):
        policy = json.loads((tmp_path / "runs" / run / "summary.json").read_text())["policy"]
        assert policy.get("policy_options", {}) == expected


def test_cli_bad_network_stops_before_any_run(tmp_path):
    out = tmp_path / "f"
    r = subprocess.run(
        [sys.executable, "-m", "toposched.cli", "frontier", "--trace", str(THUNDER), "--system", "cab", "--policies", "linear",
         "--network", "nosuch", "--out", str(out)],
        capture_output=True, text=True,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1] == "error: --network: field 'nosuch': expected bins, random, heavy, column:NAME or KEY=VALUE"
    assert not (out / "runs").exists()


@pytest.mark.parametrize("keyword, value", [("policies", "linear"), ("transforms", "days:1")])
def test_a_bare_string_for_a_list_is_refused_naming_the_keyword(tmp_path, keyword, value):
    """run_frontier(..., policies="linear") read the string one letter at a time and
    stopped with "unknown allocation policy 'l' in 'l'"; transforms="days:1" with "unknown
    transform 'd'". Refused before the log is read; nothing is written."""
    kwargs = {"policies": ["linear"], "jobs": 1, keyword: value}
    with pytest.raises(TypeError) as exc:
        run_frontier(THUNDER, "cab", tmp_path / "f", **kwargs)
    assert str(exc.value) == f"run_frontier(): {keyword} must be a list of strings, e.g. {keyword}=[{value!r}], got the string {value!r}"
    assert not (tmp_path / "f").exists()
    with pytest.raises(TypeError, match=r"^expand_grid\(\): items must be a list of strings"):
        expand_grid("isolated")


def test_a_reader_that_leaves_early_still_gets_the_report(tmp_path):
    """`toposched frontier ... | head -1`: the table was printed before the report was
    built, so the closed pipe ended the command (141) with frontier.json but no
    frontier.html. The report is built first."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "toposched.cli", "frontier", "--trace", str(THUNDER), "--system", "cab", "--transform", "days:2",
             "--policies", "linear", "isolated", "--jobs", "1", "--out", str(tmp_path)],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=600,
        )
    finally:
        os.close(write_end)
    assert r.returncode == 141 and "error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert (tmp_path / "frontier.json").exists() and (tmp_path / "frontier.html").exists()


def test_a_baseline_with_options_is_refused_saying_why(tmp_path):
    """--baseline capped:leaf_cap=1 said "unknown allocation policy 'capped:leaf_cap=1'",
    of a policy it knows: the baseline is a bare name."""
    with pytest.raises(InputError) as exc:
        run_frontier(THUNDER, "cab", tmp_path / "f", policies=["linear"], baseline="capped:leaf_cap=1", jobs=1)
    assert str(exc.value) == "--baseline: takes a policy's bare name (run with its default options), got 'capped:leaf_cap=1'; list the point with --policies to compare with it"
    with pytest.raises(InputError, match=r"^--baseline: unknown allocation policy 'nope'"):
        run_frontier(THUNDER, "cab", tmp_path / "f", policies=["linear"], baseline="nope", jobs=1)
    assert not (tmp_path / "f").exists()


def test_a_module_class_policy_is_told_to_register(tmp_path):
    """--policies mypolicies:FewLeaves said "unknown allocation policy 'mypolicies'":
    here ':' starts a point's options, and a policy written in Python takes part by a
    registered name; the message now says so."""
    with pytest.raises(InputError) as exc:
        expand_grid(["linear", "mypolicies:FewLeaves"])
    assert str(exc.value).startswith("--policies: 'mypolicies:FewLeaves': a policy written in Python takes part in a frontier by a registered name")
    with pytest.raises(InputError, match=r"unknown allocation policy 'nope' in 'nope:leaf_cap=2'"):
        expand_grid(["nope:leaf_cap=2"])


def test_a_second_frontier_on_a_busy_directory_keeps_the_first_ones_files(tmp_path):
    """frontier deleted frontier.json and frontier.csv before it took DIR's lock: a second
    frontier on DIR while the first ran destroyed them, then failed on the lock."""
    from toposched.errors import ToposchedError
    from toposched.sweep.layout import SweepLock

    for name in ("frontier.json", "frontier.csv"):
        (tmp_path / name).write_text("first\n")
    with SweepLock(tmp_path.resolve()), pytest.raises(ToposchedError, match="another toposched sweep, compare or frontier is working on this directory"):
        run_frontier(THUNDER, "cab", tmp_path, policies=["linear"], network="bins", transforms=["days:5"], jobs=1)
    assert [(tmp_path / n).read_text() for n in ("frontier.json", "frontier.csv")] == ["first\n"] * 2

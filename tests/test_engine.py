"""The engine through the Python API: job-by-job agreement with an independent classic
EASY, the plugin's regression test, invariants as properties, determinism."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import HPC2N_SUBSET, KTH, SDSC_SP2, THUNDER, first_jobs
from reference_easy import reference_schedule
from toposched.check import check_schedule
from toposched.nodelists import node_lists, ranges_array_of_lists
from toposched.simulate import RunConfig, simulate
from toposched.topology import load_fabric
from toposched.workload import read_trace
from toposched.workload.model import Workload


def make_workload(submit, nodes, walltime, runtime) -> Workload:
    n = len(submit)
    return Workload(
        columns={
            "job_id": np.arange(1, n + 1),
            "submit_s": np.asarray(submit),
            "nodes": np.asarray(nodes),
            "walltime_s": np.asarray(walltime),
            "runtime_s": np.asarray(runtime),
            "procs": np.asarray(nodes),
            "line": np.arange(1, n + 1),
        },
        source="generated",
        format="test",
    )


REAL_CASES = [
    # (trace, system, first N jobs)
    pytest.param(KTH, "fattree:K=20,S=5,P=1", 6000, id="KTH-SP2"),
    pytest.param(SDSC_SP2, "fattree:K=16,S=8,P=1", 6000, id="SDSC-SP2"),
    pytest.param(THUNDER, "cab", 6000, id="Thunder"),
]


@pytest.mark.parametrize("trace,system,first", REAL_CASES)
@pytest.mark.parametrize("queue", ["fcfs", "easy"])
def test_start_times_match_an_independent_classic_easy(trace, system, first, queue):
    w = first_jobs(trace, first)
    fabric = load_fabric(system)
    r = simulate(w, fabric, RunConfig(queue=queue, alloc="linear"))
    expected = reference_schedule(
        w["submit_s"].tolist(), w["nodes"].tolist(), w["walltime_s"].tolist(), w["runtime_s"].tolist(), fabric.n_nodes, backfill=queue == "easy"
    )
    got = dict(zip(r.jobs.column("job_id").to_pylist(), r.jobs.column("start_s").to_pylist()))
    mismatches = [(int(j), s, got.get(int(j), -1)) for j, s in zip(w["job_id"], expected) if got.get(int(j), -1) != s]
    assert not mismatches, f"{len(mismatches)} jobs differ, first: (job, reference, engine) {mismatches[:5]}"
    assert len(r.jobs) > 0.9 * len(w)


def test_random_and_linear_start_jobs_at_the_same_times_under_classic_easy():
    # With interchangeable nodes EASY decides on counts only: placement must not matter.
    w = first_jobs(KTH, 3000)
    fabric = load_fabric("fattree:K=20,S=5,P=1")
    a = simulate(w, fabric, RunConfig(alloc="linear"))
    b = simulate(w, fabric, RunConfig(alloc="random", seed=3))
    assert a.jobs.column("start_s").to_pylist() == b.jobs.column("start_s").to_pylist()
    assert node_lists(a.jobs) != node_lists(b.jobs)


def test_plugin_regression_test_e9_through_the_api():
    w = make_workload([1, 1, 1, 1], [33, 33, 30, 1], [600, 57600, 57600, 60], [360, 57609, 38109, 60])
    r = simulate(w, load_fabric("hype"), RunConfig(queue="easy", alloc="isolated", check_interference_free=True))
    assert r.jobs.column("start_s").to_pylist() == [1, 361, 1, 1]
    names = r.fabric.describe()["node_names"]
    job2 = [names[i] for i in node_lists(r.jobs)[1]]
    assert job2 == ["hype33"] + [f"hype{i}" for i in range(65, 97)]
    assert r.jobs.column("killed").to_pylist() == [False, True, False, False]
    assert r.jobs.column("alloc_class").to_pylist() == [3, 3, 2, 1]


def test_jobs_that_can_never_fit_are_reported_not_queued():
    w = make_workload([0, 0, 5], [3, 19, 4], [10, 10, 10], [10, 10, 10])
    r = simulate(w, load_fabric("toy18"), RunConfig(alloc="isolated"))
    assert r.jobs.column("job_id").to_pylist() == [1, 3]
    assert r.skipped.column("job_id").to_pylist() == [2]
    assert "19 nodes" in r.skipped.column("reason")[0].as_py()
    assert r.summary["jobs"]["skipped_never_fit"] == 1


@st.composite
def scenario(draw):
    system = draw(st.sampled_from(["toy18", "hype", "fattree:K=4,S=3,P=3", "fattree:K=5,S=2,P=2,nodes=17"]))
    n_nodes = load_fabric(system).n_nodes
    n = draw(st.integers(1, 60))
    submit = sorted(draw(st.lists(st.integers(0, 300), min_size=n, max_size=n)))
    nodes = draw(st.lists(st.integers(1, n_nodes), min_size=n, max_size=n))
    walltime = draw(st.lists(st.integers(1, 200), min_size=n, max_size=n))
    runtime = draw(st.lists(st.integers(0, 250), min_size=n, max_size=n))
    return system, make_workload(submit, nodes, walltime, runtime)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario(), st.sampled_from(["fcfs", "easy", "conservative"]), st.sampled_from(["linear", "random", "isolated"]), st.booleans())
def test_schedules_keep_their_invariants(case, queue, alloc, flux):
    system, w = case
    fabric = load_fabric(system)
    cfg = RunConfig(queue=queue, alloc=alloc, flux_window=flux, reserved_tiers_always=flux, record_reservations=True)
    r = simulate(w, fabric, cfg)
    # independent re-check from the output table
    assert check_schedule(r.jobs, fabric.describe(), interference_free=alloc == "isolated") == []
    assert len(r.jobs) + len(r.skipped) == len(w)
    start = r.jobs.column("start_s").to_numpy()
    if queue == "fcfs":
        assert (np.diff(start) >= 0).all(), "FCFS started a later job first"
    # an EASY reservation is never delayed by a backfilled job
    started = dict(zip(r.jobs.column("job_id").to_pylist(), start.tolist()))
    res = r.reservations
    for row, shadow in zip(res.get("job_row", []), res.get("start_s", [])):
        assert started[int(w["job_id"][row])] <= shadow
    # killed jobs run exactly their limit, others their log run time
    run = r.jobs.column("runtime_s").to_numpy()
    expected = np.minimum(r.jobs.column("log_runtime_s").to_numpy(), r.jobs.column("walltime_s").to_numpy())
    assert (run == expected).all()


def test_check_schedule_catches_a_shared_node_and_a_broken_invariant():
    w = make_workload([0, 0], [5, 5], [10, 10], [10, 10])
    fabric = load_fabric("toy18")
    r = simulate(w, fabric, RunConfig(alloc="linear"))
    import pyarrow as pa

    jobs = r.jobs.set_column(r.jobs.schema.get_field_index("node_ranges"), "node_ranges", ranges_array_of_lists([[0, 1, 2, 3, 4], [4, 5, 6, 7, 8]]))
    problems = check_schedule(jobs, fabric.describe(), interference_free=True)
    assert any(p.startswith("node 4 held by jobs 1") for p in problems)
    assert any("leaf (two spanning jobs on) 1" in p for p in problems)
    # a file of an earlier version (node_ids, one id per node) is checked the same way
    old = jobs.drop_columns(["node_ranges"]).append_column("node_ids", pa.array([[0, 1, 2, 3, 4], [4, 5, 6, 7, 8]], pa.list_(pa.int32())))
    problems = check_schedule(old, fabric.describe(), interference_free=True)
    problems = check_schedule(jobs, fabric.describe(), interference_free=True)
    assert any(p.startswith("node 4 held by jobs 1") for p in problems)
    assert any("leaf (two spanning jobs on) 1" in p for p in problems)


def test_check_schedule_counts_every_job_overlapping_a_long_one_not_only_its_neighbour():
    """Job 1 holds node 4 over [0, 100) while jobs 2, 3 and 4 hold it in turn: check
    compared neighbours in start order only, so it reported 1-2, never 1-3 nor 1-4, and
    said "1 problem(s)" (an as-logged run's summary counted 4 jobs sharing a node)."""
    w = make_workload([0, 0, 0, 0], [1, 1, 1, 1], [200] * 4, [100, 10, 10, 10])
    fabric = load_fabric("toy18")
    r = simulate(w, fabric, RunConfig(alloc="linear"))
    import pyarrow as pa

    jobs = r.jobs.set_column(r.jobs.schema.get_field_index("node_ranges"), "node_ranges", ranges_array_of_lists([[4], [4], [4], [4]]))
    jobs = jobs.set_column(jobs.schema.get_field_index("start_s"), "start_s", pa.array([0, 10, 50, 80], pa.int64()))
    jobs = jobs.set_column(jobs.schema.get_field_index("end_s"), "end_s", pa.array([100, 20, 60, 90], pa.int64()))
    problems = check_schedule(jobs, fabric.describe())
    assert list(problems) == [
        "node 4 held by jobs 1 [0, 100) and 2 [10, 20)",
        "node 4 held by jobs 1 [0, 100) and 3 [50, 60)",
        "node 4 held by jobs 1 [0, 100) and 4 [80, 90)",
    ] and problems.total == 3


def test_check_schedule_catches_nodes_off_the_fabric_miscounted_lists_and_missing_values():
    """Tampered outputs that `toposched check` called sound (or crashed on: a node id past
    the fabric made --interference-free an IndexError, an internal error)."""
    import pyarrow as pa

    w = make_workload([0, 0], [5, 5], [10, 10], [10, 10])
    fabric = load_fabric("toy18")
    r = simulate(w, fabric, RunConfig(alloc="linear"))
    assert check_schedule(r.jobs, fabric.describe()) == []
    at = r.jobs.schema.get_field_index("node_ranges")
    off = r.jobs.set_column(at, "node_ranges", ranges_array_of_lists([[0, 1, 2, 3, 4], [5, 6, 7, 8, 18]]))
    for free in (False, True):
        assert check_schedule(off, fabric.describe(), interference_free=free) == ["job 2 holds nodes beyond the fabric's 18 (ids 0 to 17)"]
    short = r.jobs.set_column(at, "node_ranges", ranges_array_of_lists([[0, 1, 2, 3, 4], [5, 6, 7, 8]]))
    assert check_schedule(short, fabric.describe()) == ["job 2 lists 4 nodes, but its nodes column says 5"]
    i = r.jobs.schema.get_field_index("start_s")
    holes = r.jobs.set_column(i, "start_s", pa.array([None, 0], pa.int64()))
    assert check_schedule(holes, fabric.describe()) == ["1 job(s) have no start_s: the other checks need every value"]
    described = dict(fabric.describe(), nodes=17)
    assert check_schedule(r.jobs, described) == ["fabric.json says 17 nodes but gives the leaf of 18"]


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("alloc", ["random", "isolated"])
def test_same_inputs_and_seed_give_byte_identical_outputs(tmp_path, alloc):
    w = read_trace(HPC2N_SUBSET)
    fabric = load_fabric("fattree:K=12,S=5,P=2")
    digests = []
    for k in range(2):
        simulate(w, fabric, RunConfig(alloc=alloc, seed=11)).write(tmp_path / str(k))
        digests.append({p.name: _digest(p) for p in sorted((tmp_path / str(k)).iterdir())})
    assert digests[0] == digests[1]
    assert set(digests[0]) == {"jobs.parquet", "utilization.parquet", "skipped.parquet", "summary.json", "fabric.json"}


CONSERVATIVE_CASES = [
    pytest.param(KTH, "fattree:K=20,S=5,P=1", 1500, id="KTH-SP2"),
    pytest.param(SDSC_SP2, "fattree:K=16,S=8,P=1", 1500, id="SDSC-SP2"),
]


@pytest.mark.parametrize("trace,system,first", CONSERVATIVE_CASES)
def test_conservative_start_times_match_an_independent_implementation(trace, system, first):
    from reference_easy import reference_conservative

    w = first_jobs(trace, first)
    fabric = load_fabric(system)
    r = simulate(w, fabric, RunConfig(queue="conservative", alloc="linear"))
    expected = reference_conservative(w["submit_s"].tolist(), w["nodes"].tolist(), w["walltime_s"].tolist(), w["runtime_s"].tolist(), fabric.n_nodes)
    got = dict(zip(r.jobs.column("job_id").to_pylist(), r.jobs.column("start_s").to_pylist()))
    mismatches = [(int(j), s, got.get(int(j), -1)) for j, s in zip(w["job_id"], expected) if got.get(int(j), -1) != s]
    assert not mismatches, f"{len(mismatches)} jobs differ, first: (job, reference, engine) {mismatches[:5]}"


def test_slurm_tree_profiles_and_switches_run_on_a_real_trace(tmp_path):
    w = first_jobs(THUNDER, 3000)
    fabric = load_fabric("cab")
    runs = {}
    for profile in ("current", "classic"):
        r = simulate(w, fabric, RunConfig(queue="easy", alloc="slurm-tree", slurm_profile=profile))
        assert check_schedule(r.jobs, fabric.describe()) == []
        runs[profile] = r
    lin = simulate(w, fabric, RunConfig(queue="easy", alloc="linear"))
    # Same counts-based EASY decisions: only the placement differs.
    assert runs["current"].jobs.column("start_s").to_pylist() == lin.jobs.column("start_s").to_pylist()
    # Tree best fit packs jobs onto fewer leaves than first fit.
    assert np.mean(runs["current"].jobs.column("leaves").to_numpy()) <= np.mean(lin.jobs.column("leaves").to_numpy())
    # --switches=1@3600 keeps more small jobs on one leaf, at some cost in waiting.
    sw = simulate(w, fabric, RunConfig(queue="easy", alloc="linear", switches="1@3600"))
    small = sw.jobs.filter(pc.less_equal(sw.jobs.column("nodes"), 18))
    small_lin = lin.jobs.filter(pc.less_equal(lin.jobs.column("nodes"), 18))
    assert np.mean(small.column("leaves").to_numpy() == 1) > np.mean(small_lin.column("leaves").to_numpy() == 1)
    assert sw.summary["wait_s"]["mean"] >= lin.summary["wait_s"]["mean"]


def test_check_schedule_takes_a_result_and_a_fabric_or_says_what_it_wants():
    """check_schedule(result, fabric) ended in AttributeError ('SimResult' object has no
    attribute 'column') or TypeError ('Fabric' object is not subscriptable); a dict
    without the maps in KeyError: 'node_leaf'."""
    w = make_workload([0, 0], [5, 5], [10, 10], [10, 10])
    fabric = load_fabric("toy18")
    r = simulate(w, fabric, RunConfig(alloc="linear"))
    assert check_schedule(r, fabric) == [] and check_schedule(r.jobs, fabric) == [] and check_schedule(r.jobs, fabric.describe()) == []
    with pytest.raises(TypeError, match=r"fabric must be a Fabric or its description \(Fabric.describe\(\), fabric.json\), got dict"):
        check_schedule(r.jobs, {})
    with pytest.raises(TypeError, match="jobs must be a jobs table"):
        check_schedule(r.jobs.to_pylist(), fabric)

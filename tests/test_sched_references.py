"""The scheduling core against a second independent reference (tests/sched_reference.py:
every queue policy as earliest starts on a profile of the machine, written from
docs/semantics.md), job by job, on generated small logs (few nodes, ties in submit times,
zero run times, run time past the limit, jobs larger than the machine, identical jobs) and
on the sample logs; and the allocation policies' invariants (no node held twice, spans,
isolation) re-checked from the outputs with code of its own, not toposched.check."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CTC, HPC2N, KTH, LANL_CM5, NASA, SDSC_BLUE, first_jobs
from sched_reference import fcfs_with_switches, replay
from toposched.nodelists import node_lists
from toposched.policies import QueueOrder
from toposched.simulate import RunConfig, simulate
from toposched.topology import load_fabric
from toposched.workload.model import Workload

SMALL = settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def make_workload(submit, nodes, walltime, runtime) -> Workload:
    n = len(submit)
    return Workload(
        columns={
            "job_id": np.arange(1, n + 1),
            "submit_s": np.asarray(submit, dtype=np.int64),
            "nodes": np.asarray(nodes, dtype=np.int64),
            "walltime_s": np.asarray(walltime, dtype=np.int64),
            "runtime_s": np.asarray(runtime, dtype=np.int64),
            "procs": np.asarray(nodes, dtype=np.int64),
            "line": np.arange(1, n + 1),
        },
        source="generated",
        format="test",
    )


@st.composite
def small_log(draw, max_nodes: int):
    """A few jobs on a few nodes, drawn to hit the corners: submit ties, zero run times,
    run time past the limit, jobs larger than the machine, runs of identical jobs."""
    n = draw(st.integers(1, 14))
    times = st.sampled_from([0, 0, 1, 2, 3, 5, 8, 10, 20, 40])
    submit = sorted(draw(st.lists(times, min_size=n, max_size=n)))
    nodes = draw(st.lists(st.integers(1, max_nodes + 2), min_size=n, max_size=n))
    walltime = draw(st.lists(st.sampled_from([1, 2, 3, 5, 10, 20, 30]), min_size=n, max_size=n))
    runtime = draw(st.lists(st.sampled_from([0, 0, 1, 2, 5, 10, 20, 35]), min_size=n, max_size=n))
    if draw(st.booleans()):  # a run of identical jobs
        k = draw(st.integers(0, n - 1))
        for i in range(k, min(n, k + 3)):
            submit[i], nodes[i], walltime[i], runtime[i] = submit[k], nodes[k], walltime[k], runtime[k]
        submit.sort()
    return submit, nodes, walltime, runtime


def starts(r) -> dict[int, int]:
    """Engine start times by row (job ids are row + 1 here)."""
    return {int(j) - 1: int(s) for j, s in zip(r.jobs.column("job_id").to_pylist(), r.jobs.column("start_s").to_pylist())}


SIX = "fattree:K=3,S=2,P=1"  # 6 nodes
#: small fat trees: full, partly populated (a leaf of 1 node), 2-node leaves, one leaf per pod
TREES = ["fattree:K=3,S=2,P=2", "fattree:K=4,S=2,P=2,nodes=13", "fattree:K=2,S=3,P=2", "fattree:K=3,S=1,P=3"]


@SMALL
@given(small_log(6), st.sampled_from(["fcfs", "easy", "conservative"]), st.booleans(), st.sampled_from(["per-instant", "per-event"]), st.sampled_from([None, None, 1, 2]))
def test_start_times_agree_with_the_profile_reference(log, queue, kill, order, depth):
    if queue == "conservative":
        # conservative's --run-on rule (overrunning jobs end "within a second") and
        # per-event order are outside the reference; see the tests below
        kill, order, depth = True, "per-instant", None
    if order == "per-event":
        depth = None
    fabric = load_fabric(SIX)
    submit, nodes, walltime, runtime = log
    r = simulate(make_workload(*log), fabric, RunConfig(queue=queue, alloc="linear", kill_at_walltime=kill, event_order=order, queue_depth=depth))
    ref = replay(submit, nodes, walltime, runtime, fabric.n_nodes, queue, kill=kill, per_event=order == "per-event", depth=depth)
    assert starts(r) == ref.start
    assert sorted(int(j) - 1 for j in r.skipped.column("job_id").to_pylist()) == sorted(ref.skipped)
    ends = {int(j) - 1: int(e) for j, e in zip(r.jobs.column("job_id").to_pylist(), r.jobs.column("end_s").to_pylist())}
    assert ends == ref.end


class SmallestFirst(QueueOrder):
    def key(self, job_id, submit_s, nodes, walltime_s, now_s):
        return nodes


class LeastWorkAged(QueueOrder):
    """A key that changes with time: requested node-seconds less the time waited."""

    def key(self, job_id, submit_s, nodes, walltime_s, now_s):
        return nodes * walltime_s - (now_s - submit_s)


@SMALL
@given(small_log(6), st.sampled_from(["fcfs", "easy", "conservative"]), st.sampled_from(["small", "aged"]), st.booleans())
def test_python_queue_orders_agree_with_the_profile_reference(log, queue, which, per_event):
    submit, nodes, walltime, runtime = log
    order, key = {"small": (SmallestFirst(), lambda r, t: nodes[r]), "aged": (LeastWorkAged(), lambda r, t: nodes[r] * walltime[r] - (t - submit[r]))}[which]
    per_event = per_event and queue != "conservative"
    fabric = load_fabric(SIX)
    r = simulate(make_workload(*log), fabric, RunConfig(queue=queue, alloc="linear", queue_order=order, event_order="per-event" if per_event else "per-instant"))
    assert starts(r) == replay(submit, nodes, walltime, runtime, fabric.n_nodes, queue, key=key, per_event=per_event).start


@SMALL
@given(st.sampled_from(TREES), st.data(), st.sampled_from(["fcfs", "easy", "conservative"]), st.sampled_from(["linear", "slurm-tree", "random"]))
def test_down_nodes_shrink_the_machine_for_fungible_policies(system, data, queue, alloc):
    fabric = load_fabric(system)
    n = fabric.n_nodes
    down = sorted(data.draw(st.sets(st.integers(0, n - 1), max_size=n // 2)))
    submit, nodes, walltime, runtime = log = data.draw(small_log(n))
    r = simulate(make_workload(*log), fabric, RunConfig(queue=queue, alloc=alloc, seed=2), down_nodes=down)
    ref = replay(submit, nodes, walltime, runtime, n - len(down), queue)
    assert starts(r) == ref.start
    assert sorted(int(j) - 1 for j in r.skipped.column("job_id").to_pylist()) == sorted(ref.skipped)
    assert not {i for ids in node_lists(r.jobs) for i in ids} & set(down)
    assert own_problems(r, fabric) == []


@SMALL
@given(st.sampled_from([SIX, *TREES]), st.data(), st.sampled_from(["linear", "isolated", "capped", "jigsaw", "slurm-tree"]), st.sampled_from(["per-instant", "per-event"]))
def test_conservative_starts_no_job_after_the_reservation_it_got_at_submission(system, data, alloc, order):
    """docs/semantics.md, conservative's guarantee (jobs killed at their limit), in both
    event orders (per event it was broken: see the two tests below)."""
    fabric = load_fabric(system)
    log = data.draw(small_log(fabric.n_nodes))
    r = simulate(make_workload(*log), fabric, RunConfig(queue="conservative", alloc=alloc, record_reservations=True, event_order=order))
    first: dict[int, int] = {}
    for row, s in zip(r.reservations["job_row"], r.reservations["start_s"]):
        first.setdefault(int(row), int(s))
    for row, s in starts(r).items():
        assert s <= first[row], f"row {row} started at {s}, after its reservation {first[row]}"


def test_per_event_conservative_keeps_a_reservation_due_at_an_instant_of_ends():
    # 2 nodes. A and B (1 node each) run [0, 10); C (2 nodes, 5 s) is reserved at 10 when it
    # arrives at 1; D (1 node, 5 s) at 15. At 10, per event, A's release runs a pass while B
    # still holds its node: C cannot start yet, but its reservation (10) stands: B's
    # release, the next event at 10, frees room for it. Expected C 10, D 15. The engine
    # re-reserved C at 20 behind D and compressed D to 10: C started at 15, past its promise.
    w = make_workload([0, 0, 1, 2], [1, 1, 2, 1], [10, 10, 5, 5], [10, 10, 5, 5])
    r = simulate(w, load_fabric("fattree:K=2,S=1,P=1"), RunConfig(queue="conservative", alloc="linear", event_order="per-event"))
    assert r.jobs.column("start_s").to_pylist() == [0, 0, 10, 15]


def test_per_event_conservative_keeps_its_guarantee_on_lanl_cm5():
    w = first_jobs(LANL_CM5, 600)
    r = simulate(w, load_fabric("fattree:K=32,S=8,P=8,nodes=512"), RunConfig(queue="conservative", alloc="linear", event_order="per-event", record_reservations=True))
    first: dict[int, int] = {}
    for row, s in zip(r.reservations["job_row"], r.reservations["start_s"]):
        first.setdefault(int(row), int(s))
    row_of = {int(j): i for i, j in enumerate(w["job_id"].tolist())}
    late = [(j, first[row_of[j]], s) for j, s in zip(r.jobs.column("job_id").to_pylist(), r.jobs.column("start_s").to_pylist()) if s > first[row_of[j]]]
    assert late == []


@pytest.mark.parametrize("alloc", ["isolated", "capped"])
def test_conservative_run_on_keeps_isolation_when_overdue_reservations_start_together(alloc):
    # fattree K=3 S=2 P=2: 12 nodes, leaves of 3, pods of 6. J1 (1 node, limit 3) runs on
    # to 30 on leaf 0; J2 (9 nodes) runs [0, 10); J3 (7 nodes, T3) and J4 (5 nodes, T2) get
    # reservations [12, 13) and [10, 12): disjoint windows, so both sets use leaf 0. Both rest
    # on J1 and wait; at 30 J1 ends and both start at once: leaf 0 then hosts two jobs
    # spanning leaves (I1). Expected: J4 starts at 30, J3 is re-reserved off leaf 0 (or after J4).
    w = make_workload([0, 0, 0, 2], [1, 9, 7, 5], [3, 5, 1, 2], [30, 10, 10, 1])
    fabric = load_fabric("fattree:K=3,S=2,P=2")
    options = {"leaf_cap": 1, "pod_cap": 1} if alloc == "capped" else {}
    r = simulate(w, fabric, RunConfig(queue="conservative", alloc=alloc, kill_at_walltime=False, policy_options=options))
    assert own_problems(r, fabric, leaf_cap=1, pod_cap=1, tiers=True) == []


REAL = [
    pytest.param(KTH, "fattree:K=20,S=5,P=1", id="KTH-SP2"),
    pytest.param(CTC, "fattree:K=32,S=8,P=1,nodes=200", id="CTC-SP2-cut-to-200"),
    pytest.param(LANL_CM5, "fattree:K=32,S=8,P=2,nodes=512", id="LANL-CM5"),
    pytest.param(HPC2N, "fattree:K=16,S=4,P=2,nodes=120", id="HPC2N"),
    pytest.param(SDSC_BLUE, "fattree:K=16,S=4,P=2,nodes=100", id="SDSC-BLUE-cut-to-100"),
    pytest.param(NASA, "fattree:K=16,S=4,P=1,nodes=40", id="NASA-iPSC-cut-to-40"),
]


@pytest.mark.parametrize("trace,system", REAL)
@pytest.mark.parametrize("queue,kill,order", [("fcfs", True, "per-instant"), ("easy", True, "per-instant"), ("easy", False, "per-instant"), ("easy", True, "per-event"), ("conservative", True, "per-instant")])
def test_start_times_agree_with_the_profile_reference_on_sample_logs(trace, system, queue, kill, order):
    w = first_jobs(trace, 400)
    fabric = load_fabric(system)
    r = simulate(w, fabric, RunConfig(queue=queue, alloc="linear", kill_at_walltime=kill, event_order=order))
    ref = replay(w["submit_s"].tolist(), w["nodes"].tolist(), w["walltime_s"].tolist(), w["runtime_s"].tolist(), fabric.n_nodes, queue, kill=kill, per_event=order == "per-event")
    ids = w["job_id"].tolist()
    got = dict(zip(r.jobs.column("job_id").to_pylist(), r.jobs.column("start_s").to_pylist()))
    mismatches = [(ids[row], s, got.get(ids[row])) for row, s in sorted(ref.start.items()) if got.get(ids[row]) != s]
    assert not mismatches, f"{len(mismatches)} jobs differ, first (job, reference, engine): {mismatches[:5]}"
    assert len(got) == len(ref.start) and len(ref.start) + len(ref.skipped) == len(w)
    assert sorted(r.skipped.column("job_id").to_pylist()) == sorted(ids[row] for row in ref.skipped)


# ---- allocation policies: invariants from the outputs, checked here from scratch ----


def held_intervals(r, fabric):
    """(job_id, submit, start, end, nodes list) of every job, the nodes from node_ranges."""
    jobs = r.jobs
    return list(
        zip(
            jobs.column("job_id").to_pylist(),
            jobs.column("submit_s").to_pylist(),
            jobs.column("start_s").to_pylist(),
            jobs.column("end_s").to_pylist(),
            jobs.column("nodes").to_pylist(),
            node_lists(jobs),
        )
    )


def own_problems(r, fabric, *, leaf_cap: int | None = None, pod_cap: int | None = None, tiers: bool = False) -> list[str]:
    """Every broken invariant: a job before its submit, the wrong node count, a node twice
    in a job or held by two jobs at once, and (caps given) more than leaf_cap running jobs
    spanning leaves on a leaf / pod_cap spanning pods in a pod; `tiers`: a job of at most
    K nodes (largest leaf) on one leaf, of at most p (largest pod) in one pod."""
    d = fabric.describe()
    leaf_of, pod_of_leaf = d["node_leaf"], d["leaf_pod"]
    k_max = max(Counter(leaf_of).values())
    p_max = max(Counter(pod_of_leaf[leaf] for leaf in leaf_of).values())
    rows = held_intervals(r, fabric)
    out = []
    for job, submit, start, end, n, ids in rows:
        if start < submit:
            out.append(f"job {job} starts at {start} before its submit {submit}")
        if len(ids) != n or len(set(ids)) != n:
            out.append(f"job {job} holds {ids} for {n} nodes")
        if any(not 0 <= i < d["nodes"] for i in ids):
            out.append(f"job {job} holds nodes off the fabric: {ids}")
        leaves = {leaf_of[i] for i in ids}
        pods = {pod_of_leaf[leaf] for leaf in leaves}
        if tiers and n <= k_max and len(leaves) > 1:
            out.append(f"job {job} ({n} nodes <= K={k_max}) spans leaves {sorted(leaves)}")
        if tiers and n <= p_max and len(pods) > 1:
            out.append(f"job {job} ({n} nodes <= p={p_max}) spans pods {sorted(pods)}")
    # at every start instant, the jobs running then (zero-length jobs hold nothing)
    for t in sorted({start for _, _, start, end, _, _ in rows if end > start}):
        running = [(job, ids) for job, _, start, end, _, ids in rows if start <= t < end]
        holders = Counter(i for _, ids in running for i in ids)
        twice = sorted(i for i, c in holders.items() if c > 1)
        if twice:
            out.append(f"t={t}: nodes {twice} held by two jobs")
        if leaf_cap is not None:
            spanning = [{leaf_of[i] for i in ids} for _, ids in running]
            per_leaf = Counter(leaf for ls in spanning if len(ls) > 1 for leaf in ls)
            out += [f"t={t}: leaf {leaf} hosts {c} leaf-spanning jobs > {leaf_cap}" for leaf, c in per_leaf.items() if c > leaf_cap]
        if pod_cap is not None:
            pod_sets = [{pod_of_leaf[leaf_of[i]] for i in ids} for _, ids in running]
            per_pod = Counter(p for ps in pod_sets if len(ps) > 1 for p in ps)
            out += [f"t={t}: pod {p} hosts {c} pod-spanning jobs > {pod_cap}" for p, c in per_pod.items() if c > pod_cap]
    return out



@SMALL
@given(st.sampled_from(TREES), st.data(), st.sampled_from(["fcfs", "easy", "conservative"]), st.booleans())
def test_isolated_and_capped_keep_their_invariants_on_small_fat_trees(system, data, queue, kill):
    fabric = load_fabric(system)
    log = data.draw(small_log(fabric.n_nodes))
    alloc, caps = data.draw(st.sampled_from([("isolated", (1, 1)), ("capped", (1, 1)), ("capped", (2, 1)), ("capped", (3, 2))]))
    options = {"leaf_cap": caps[0], "pod_cap": caps[1]} if alloc == "capped" else {}
    cfg = RunConfig(queue=queue, alloc=alloc, kill_at_walltime=kill, policy_options=options)
    r = simulate(make_workload(*log), fabric, cfg)
    assert own_problems(r, fabric, leaf_cap=caps[0], pod_cap=caps[1], tiers=True) == []
    assert len(r.jobs) + len(r.skipped) == len(log[0])
    if alloc == "capped" and caps == (1, 1):
        iso = simulate(make_workload(*log), fabric, RunConfig(queue=queue, alloc="isolated", kill_at_walltime=kill))
        assert starts(r) == starts(iso) and node_lists(r.jobs) == node_lists(iso.jobs)


@SMALL
@given(st.sampled_from(TREES), st.data(), st.sampled_from(["fcfs", "easy", "conservative"]), st.sampled_from(["slurm-tree", "random"]))
def test_fungible_placements_share_linear_start_times_and_hold_no_node_twice(system, data, queue, alloc):
    fabric = load_fabric(system)
    log = data.draw(small_log(fabric.n_nodes))
    kill = True if queue == "conservative" else data.draw(st.booleans())
    profile = data.draw(st.sampled_from(["current", "classic", "select-linear", "cons-tres"]))
    r = simulate(make_workload(*log), fabric, RunConfig(queue=queue, alloc=alloc, kill_at_walltime=kill, slurm_profile=profile, seed=7))
    lin = simulate(make_workload(*log), fabric, RunConfig(queue=queue, alloc="linear", kill_at_walltime=kill))
    assert own_problems(r, fabric) == []
    assert starts(r) == starts(lin)


@pytest.mark.parametrize("alloc", ["random", "isolated", "capped", "jigsaw", "slurm-tree"])
@pytest.mark.parametrize("queue,order", [("easy", "per-instant"), ("conservative", "per-instant"), ("easy", "per-event")])
def test_same_inputs_and_seed_give_the_same_schedule(alloc, queue, order):
    w = first_jobs(HPC2N, 300)
    fabric = load_fabric("fattree:K=12,S=5,P=2")
    runs = [simulate(w, fabric, RunConfig(queue=queue, alloc=alloc, event_order=order, seed=5)) for _ in range(2)]
    assert runs[0].jobs.equals(runs[1].jobs) and runs[0].skipped.equals(runs[1].skipped)
    assert runs[0].summary == runs[1].summary
    assert own_problems(runs[0], fabric) == []


def test_conservative_compresses_waiting_reservations_before_new_jobs_reserve():
    """docs/semantics.md, conservative step 2: at an instant with an end and a submit, the
    waiting job moves into the hole before the new one reserves."""
    w = make_workload([0, 1, 2], [1, 2, 1], [10, 2, 2], [2, 2, 10])
    r = simulate(w, load_fabric("fattree:K=2,S=1,P=1"), RunConfig(queue="conservative", alloc="linear"))
    assert r.jobs.column("start_s").to_pylist() == [0, 2, 4]
    assert replay([0, 1, 2], [1, 2, 1], [10, 2, 2], [2, 2, 10], 2, "conservative").start == {0: 0, 1: 2, 2: 4}


@SMALL
@given(st.sampled_from(["fattree:K=3,S=2,P=2", "fattree:K=4,S=3,P=2,W1=2", "fattree:K=2,S=3,P=2", "fattree:K=4,S=2,P=3,W1=3"]), st.data(), st.sampled_from(["fcfs", "easy", "conservative"]), st.booleans())
def test_jigsaw_gives_spanning_jobs_that_meet_disjoint_uplink_columns(system, data, queue, kill):
    """docs/semantics.md, jigsaw: a node's column is its id mod W1 (fully populated trees);
    running jobs spanning leaves that share a leaf, or spanning pods that share a pod, have
    disjoint column sets."""
    fabric = load_fabric(system)
    d = fabric.describe()
    w1 = d["uplinks_per_leaf"]
    log = data.draw(small_log(fabric.n_nodes))
    r = simulate(make_workload(*log), fabric, RunConfig(queue=queue, alloc="jigsaw", kill_at_walltime=kill))
    assert own_problems(r, fabric, tiers=True) == []
    rows = held_intervals(r, fabric)
    for t in sorted({start for _, _, start, end, _, _ in rows if end > start}):
        spans = []
        for job, _, start, end, _, ids in rows:
            if start <= t < end:
                leaves = {d["node_leaf"][i] for i in ids}
                spans.append((job, leaves, {d["leaf_pod"][leaf] for leaf in leaves}, {i % w1 for i in ids}))
        for a, (ja, la, pa, ca) in enumerate(spans):
            for jb, lb, pb, cb in spans[a + 1 :]:
                if len(la) > 1 and len(lb) > 1 and la & lb:
                    assert not ca & cb, f"t={t}: jobs {ja} and {jb} share leaves {la & lb} and columns {ca & cb}"
                if len(pa) > 1 and len(pb) > 1 and pa & pb:
                    assert not ca & cb, f"t={t}: jobs {ja} and {jb} share pods {pa & pb} and columns {ca & cb}"


@SMALL
@given(st.sampled_from(TREES), st.data(), st.integers(1, 2), st.sampled_from([0, 1, 3, 7, 300]))
def test_switches_wait_agrees_with_the_reference_under_fcfs(system, data, max_leaves, wait_s):
    fabric = load_fabric(system)
    submit, nodes, walltime, runtime = log = data.draw(small_log(fabric.n_nodes))
    r = simulate(make_workload(*log), fabric, RunConfig(queue="fcfs", alloc="linear", switches=f"{max_leaves}@{wait_s}"))
    assert starts(r) == fcfs_with_switches(submit, nodes, walltime, runtime, fabric.describe()["node_leaf"], max_leaves, wait_s)



def test_switches_wait_counts_from_the_first_refusal_not_the_arrival():
    """docs/semantics.md, --switches: 4 nodes, leaves of 2. A, D, E (1 node each) take
    nodes 0, 1, 2; B (2 nodes, 1@5) arrives at 0 and waits for nodes; at 10 A ends and B
    could have nodes 0 and 3, two leaves: first refused at 10, so it starts at 15 (not 10,
    as a wait counted from its arrival would allow)."""
    w = make_workload([0, 0, 0, 0], [1, 1, 1, 2], [10, 20, 20, 5], [10, 20, 20, 5])
    fabric = load_fabric("fattree:K=2,S=2,P=1")
    r = simulate(w, fabric, RunConfig(queue="fcfs", alloc="linear", switches="1@5"))
    assert r.jobs.column("start_s").to_pylist() == [0, 0, 0, 15]
    assert node_lists(r.jobs)[3] == [0, 3]

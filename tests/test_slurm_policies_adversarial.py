"""The Slurm-like queue policies (`slurm`, `slurm-bf`), their multifactor priority,
partitions, `--switches N@wait` and `--queue-order`, tested as a Slurm administrator
would: a few jobs on a few nodes, where the start order follows from Slurm's documented
rules (slurm.conf(5), sched_config.html, priority_multifactor.html, sbatch(1)), and the
options' validation and documentation against their behaviour.

Every scenario runs on 8 nodes (2 leaves of 4) unless it says otherwise; rows are
(submit, nodes, walltime, runtime[, user, account, qos, partition]).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from toposched.check import check_schedule
from toposched.errors import InputError
from toposched.policies import QueueOrder
from toposched.simulate import RunConfig, simulate
from toposched.topology import Fabric, regular_spec
from toposched.workload.model import Workload

ID_COLUMNS = ("user_id", "account_id", "qos_id", "partition_id")


def workload(rows: list[tuple[int, ...]]) -> Workload:
    n = len(rows)
    cols: dict[str, Any] = {
        "job_id": np.arange(1, n + 1),
        "submit_s": [r[0] for r in rows],
        "nodes": [r[1] for r in rows],
        "walltime_s": [r[2] for r in rows],
        "runtime_s": [r[3] for r in rows],
        "procs": [r[1] for r in rows],
        "line": np.arange(1, n + 1),
    }
    for i, c in enumerate(ID_COLUMNS):
        cols[c] = [r[4 + i] if len(r) > 4 + i else -1 for r in rows]
    return Workload(columns={k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}, source="generated", format="test")


def fabric(per_leaf: int = 4, leaves: int = 2, pods: int = 1) -> Fabric:
    return Fabric.from_spec(regular_spec("t", per_leaf, leaves, pods))


def starts(rows: list[tuple[int, ...]], queue: str, fab: Fabric | None = None, **kw: Any) -> dict[int, int]:
    """job id -> start (jobs that never ran are left out)."""
    r = simulate(workload(rows), fab or fabric(), RunConfig(queue=queue, **kw))
    t = r.jobs.to_pydict()
    return dict(zip(t["job_id"], t["start_s"]))


# `slurm-bf`'s main scheduler options carry a `sched_` prefix (an option belongs to one policy)
BOTH = [("slurm", ""), ("slurm-bf", "sched_")]


class Smallest(QueueOrder):
    def key(self, job_id: int, submit_s: int, nodes: int, walltime_s: int, now_s: int) -> float:
        return nodes


# --- priority/multifactor -------------------------------------------------------------


@pytest.mark.parametrize("queue, p", BOTH)
@pytest.mark.parametrize("max_age, first", [(100, 3), (1000, 2), (10_000, 3)])
def test_priority_max_age_caps_the_age_factor(queue, p, max_age, first):
    """PriorityWeightAge=1000, PriorityWeightJobSize=100 (favour large), PriorityCalcPeriod
    60 s. A blocker holds all 8 nodes until 1000; S (1 node) waits from 1, L (8 nodes) from
    500. At the recalculation of 960: S's age 959 s, L's 460 s.
    PriorityMaxAge 100: both ages capped at 1, so L (1000 + 100) beats S (1000 + 12.5);
    1000: S 959 + 12.5 beats L 460 + 100; 10000: S 95.9 + 12.5 loses to L 46 + 100."""
    rows = [(0, 8, 1000, 1000), (1, 1, 100, 100), (500, 8, 100, 100)]
    opts = {p + "priority_weight_age": 1000, p + "priority_weight_job_size": 100, p + "priority_max_age_s": max_age, p + "priority_calc_period_s": 60}
    s = starts(rows, queue, policy_options=opts)
    assert s[first] == 1000 and s[5 - first] == 1100


@pytest.mark.parametrize("queue, p", BOTH)
@pytest.mark.parametrize("favor_small", [False, True])
def test_job_size_factor_favours_large_or_small(queue, p, favor_small):
    """PriorityWeightJobSize alone: the job size factor is nodes/N (favour large, Slurm's
    default) or (N - nodes)/N with PriorityFavorSmall=YES: the 8-node job (2) and the
    1-node job (3), both waiting on a full machine, start in that order at 1000."""
    rows = [(0, 8, 1000, 1000), (1, 8, 100, 100), (2, 1, 100, 100)]
    s = starts(rows, queue, policy_options={p + "priority_weight_job_size": 100, p + "priority_favor_small": favor_small})
    first, second = (3, 2) if favor_small else (2, 3)
    assert (s[first], s[second]) == (1000, 1100)


@pytest.mark.parametrize("queue, p", BOTH)
@pytest.mark.parametrize("tree", ["", "0:1;1:1;0/0;1/1"])
def test_fair_share_puts_the_user_who_used_less_first(queue, p, tree):
    """PriorityWeightFairshare alone (Fair Tree): user 0 (account 0) ran the 8-node blocker
    0..1000; at 1000 user 0's job (submitted first) and user 1's (account 1, no usage)
    wait: user 1's starts first, with the accounts' shares implicit or given equal."""
    rows = [(0, 8, 1000, 1000, 0, 0), (1, 8, 100, 100, 0, 0), (2, 8, 100, 100, 1, 1)]
    opts = {p + "priority_weight_fairshare": 1000, p + "priority_calc_period_s": 60, p + "priority_fs_tree": tree}
    assert starts(rows, queue, policy_options=opts) == {1: 0, 2: 1100, 3: 1000}


@pytest.mark.parametrize("queue, p", BOTH)
@pytest.mark.parametrize("qos, first", [("0:1;1:10", 3), ("0:10;1:1", 2)])
def test_qos_factor_puts_the_higher_qos_priority_first(queue, p, qos, first):
    rows = [(0, 8, 1000, 1000, 0, 0, 0), (1, 8, 100, 100, 0, 0, 0), (2, 8, 100, 100, 1, 1, 1)]
    s = starts(rows, queue, policy_options={p + "priority_weight_qos": 1000, p + "priority_qos": qos})
    assert s[first] == 1000 and s[5 - first] == 1100


# --- partitions -----------------------------------------------------------------------


@pytest.mark.parametrize("queue, p", BOTH)
def test_partitions_block_their_own_jobs_and_hold_jobs_beyond_their_limits(queue, p):
    """Partitions 0 = nodes 0-3, 1 = nodes 4-7 (MaxTime 500 s, MaxNodes 3). A pending job
    of partition 0 holds back only partition 0 (sched_config.html: "once any job ... in a
    partition is left pending, no other jobs in that partition will be scheduled"); jobs
    beyond partition 1's MaxNodes or MaxTime stay pending forever (EnforcePartLimits=NO),
    reported skipped with Slurm's reasons; a job with no partition runs in the first."""
    rows = [
        (0, 4, 1000, 1000, -1, -1, -1, 0),
        (1, 2, 100, 100, -1, -1, -1, 0),
        (2, 2, 100, 100, -1, -1, -1, 1),
        (3, 4, 100, 100, -1, -1, -1, 1),
        (4, 2, 600, 100, -1, -1, -1, 1),
        (5, 1, 100, 100),
    ]
    r = simulate(workload(rows), fabric(), RunConfig(queue=queue, policy_options={p + "partitions": "0=0-3;1=4-7:max_time_s=500:max_nodes=3"}))
    t = r.jobs.to_pydict()
    # job 3 waits only for the main scheduler's batch_sched_delay (3 s after the pass at 0)
    assert dict(zip(t["job_id"], t["start_s"])) == {1: 0, 2: 1000, 3: 3, 6: 1000}
    sk = r.skipped.to_pydict()
    assert sk["job_id"] == [4, 5]
    assert "PartitionNodeLimit" in sk["reason"][0] and "PartitionTimeLimit" in sk["reason"][1]


@pytest.mark.parametrize("queue, p", BOTH)
def test_partition_priority_tier_comes_before_submit_order_and_queue_order(queue, p):
    """PriorityTier: jobs of a higher-tier partition are considered first (slurm.conf(5)),
    even before an earlier job, and before a Python queue order's key."""
    rows = [(0, 8, 1000, 1000, -1, -1, -1, 0), (1, 8, 100, 100, -1, -1, -1, 0), (2, 8, 100, 100, -1, -1, -1, 1)]
    opts = {p + "partitions": "0=0-7;1=0-7:priority_tier=2"}
    assert starts(rows, queue, policy_options=opts) == {1: 0, 2: 1100, 3: 1000}
    rows[1] = (1, 1, 100, 100, -1, -1, -1, 0)  # the smallest: first by the queue order
    assert starts(rows, queue, policy_options=opts, queue_order=Smallest())[3] == 1000


def test_a_failed_partition_takes_its_nodes_out_of_the_pass():
    """Partitions 0 = nodes 0-3 and 1 = nodes 0-7 overlap. Job 1 (partition 1) holds nodes
    0-1; job 2 (partition 0, 3 nodes) cannot start, so partition 0 fails and its nodes are
    out of the pass (22.05 `_schedule`: `bit_and_not(avail_node_bitmap, part_ptr->node_bitmap)`):
    job 3 (partition 1, 5 nodes) sees only nodes 4-7 and waits too, failing partition 1, so
    job 4 (partition 1, 2 nodes, which would fit) is not tried."""
    rows = [(0, 2, 1000, 1000, -1, -1, -1, 1), (1, 3, 100, 100, -1, -1, -1, 0), (1, 5, 100, 100, -1, -1, -1, 1), (1, 2, 100, 100, -1, -1, -1, 1)]
    assert starts(rows, "slurm", policy_options={"partitions": "0=0-3;1=0-7"}) == {1: 0, 2: 1000, 3: 1000, 4: 1100}


# --- sched/backfill -------------------------------------------------------------------

BF = {"bf_resolution_s": 1, "bf_interval_s": 10}


def test_backfill_starts_a_job_that_ends_before_the_reservation_at_the_next_cycle():
    """A holds 4 nodes until 100; B (8 nodes) is reserved at 100. C (4 nodes, 50 s) ends
    before B's reservation: the main scheduler (FIFO, B blocks the partition) does not start
    it, the backfill cycle does (cycles every bf_interval = 10 s: at 10). D (4 nodes, 200 s)
    would delay B: it waits for B's end."""
    rows = [(0, 4, 100, 100), (1, 8, 100, 100), (2, 4, 50, 50), (2, 4, 200, 200)]
    assert starts(rows, "slurm-bf", policy_options=BF) == {1: 0, 2: 100, 3: 10, 4: 200}


def test_bf_resolution_rounds_reservations_down_to_its_grid():
    """With bf_resolution=60, B's reservation from 100 is placed at floor(100/60)*60 = 60
    (backfill.c `_add_reservation`), so C, ending at 60, overlaps it (the end is inclusive)
    and is not backfilled."""
    rows = [(0, 4, 100, 100), (1, 8, 100, 100), (2, 4, 50, 50), (2, 4, 200, 200)]
    assert starts(rows, "slurm-bf", policy_options={**BF, "bf_resolution_s": 60})[3] == 200


@pytest.mark.parametrize("window, b_start, c_start", [(3600, 1000, 1100), (600, 2010, 10)])
def test_bf_window_beyond_which_no_reservation_is_made(window, b_start, c_start):
    """slurm.conf(5) bf_window: "how long into the future to look when considering jobs to
    schedule"; a value at least the longest time limit prevents starvation. B (8 nodes)
    can start at 1000: inside a 3600 s window it is reserved and C (4 nodes, 2000 s) waits;
    beyond a 600 s window it is not, so C backfills and B starts after C."""
    rows = [(0, 4, 1000, 1000), (1, 8, 100, 100), (2, 4, 2000, 2000)]
    s = starts(rows, "slurm-bf", policy_options={**BF, "bf_window_s": window})
    assert (s[2], s[3]) == (b_start, c_start)


@pytest.mark.parametrize("max_job_test, c_start", [(1, 1100), (2, 10)])
def test_bf_max_job_test_limits_the_jobs_a_cycle_tries(max_job_test, c_start):
    """bf_max_job_test: "the maximum number of jobs to attempt backfill scheduling for".
    With 1, only B (the first) is tried and C, which would fit before B's reservation,
    is never backfilled."""
    rows = [(0, 4, 1000, 1000), (1, 8, 100, 100), (2, 4, 50, 50)]
    assert starts(rows, "slurm-bf", policy_options={**BF, "bf_max_job_test": max_job_test})[3] == c_start


# --- --switches -----------------------------------------------------------------------

SWITCH_ROWS = [(0, 3, 1000, 1000), (0, 3, 1000, 1000), (10, 2, 100, 100)]


@pytest.mark.parametrize("queue, want", [("fcfs", 110), ("easy", 110), ("conservative", 110), ("slurm-bf", 120)])
def test_switches_wait_then_take_any_allocation(queue, want):
    """slurm-tree puts the two 3-node jobs on one leaf each: the free nodes (one per leaf)
    span 2 leaves. --switches 1@100: the 2-node job submitted at 10 waits for one leaf
    until 100 s after it was first tried, then takes the 2 leaves (sbatch(1)); with
    slurm-bf the next backfill cycle (every 30 s) takes it. --switches 2 starts it at once."""
    assert starts(SWITCH_ROWS, queue, alloc="slurm-tree", switches="1@100")[3] == want
    assert starts(SWITCH_ROWS, queue, alloc="slurm-tree", switches="2@100")[3] == 10


# `slurm` retries a job whose --switches wait ran out at the background loop's periodic
# pass (sched_interval, 60 s: sched_config.html; controller.c _slurmctld_background); it
# ran passes only when asked (submission, epilog), so such a job waited for another job to
# end or arrive (the three tests below were strict expected failures until it did)


def test_slurm_retries_a_job_whose_switch_wait_ran_out_at_the_next_periodic_pass():
    assert starts(SWITCH_ROWS, "slurm", alloc="slurm-tree", switches="1@100")[3] <= 110 + 60


def test_slurm_starts_a_lone_job_whose_switch_wait_ran_out():
    """One 5-node job on 2 leaves of 4 with --switches 1@50 must span 2 leaves: it may
    once it has waited 50 s. `fcfs` starts it at 50, `slurm-bf` at its cycle of 60."""
    assert starts([(0, 5, 100, 100)], "fcfs", switches="1@50") == {1: 50}
    assert starts([(0, 5, 100, 100)], "slurm-bf", switches="1@50") == {1: 60}
    assert starts([(0, 5, 100, 100)], "slurm", switches="1@50")[1] <= 50 + 60


def test_slurm_with_a_priority_weight_ends_when_a_job_waits_for_switches():
    """As above, with PriorityWeightAge=1000: the replay did not end (the subprocess is
    given a few seconds; the one job must start by 50 + 60)."""
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "from test_slurm_policies_adversarial import starts\n"
        "print(starts([(0, 5, 100, 100)], 'slurm', switches='1@50', policy_options={'priority_weight_age': 1000})[1])\n"
    ) % str(Path(__file__).parent)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=8)
    except subprocess.TimeoutExpired:
        pytest.fail("the replay did not end")
    assert out.returncode == 0 and int(out.stdout) <= 50 + 60


# --- --queue-order --------------------------------------------------------------------


@pytest.mark.parametrize("queue, p", BOTH)
def test_queue_order_with_priority_weights_is_refused_naming_both(queue, p):
    """--queue-order replaced the multifactor order except at the passes where a priority
    recalculation fell (PriorityCalcPeriod 100: the pass at 1000 sorted by priority; 300:
    by the Python key): the weights applied at some passes only. Now refused."""
    rows = [(0, 8, 1000, 1000), (1, 8, 100, 100), (2, 1, 100, 100)]
    opts = {p + "priority_weight_age": 10_000, p + "priority_max_age_s": 1000, p + "priority_calc_period_s": 100}
    assert starts(rows, queue, policy_options=opts) == {1: 0, 2: 1000, 3: 1100}
    with pytest.raises(InputError, match=f"--queue-order.*--{p.replace('_', '-')}priority-weight-age 10000"):
        starts(rows, queue, policy_options=opts, queue_order=Smallest())
    # without weights the queue order replaces priority/basic's submit order
    assert starts(rows, queue, queue_order=Smallest()) == {1: 0, 2: 1100, 3: 1000}


# --- option validation ----------------------------------------------------------------


@pytest.mark.parametrize(
    "queue, name, value, why",
    [
        ("slurm", "priority_weight_age", 1.5, "expected a whole number, got 1.5"),
        ("slurm", "priority_weight_age", "10", "expected a whole number, got '10'"),
        ("slurm", "priority_favor_small", 1, "expected true or false, got 1"),
        ("slurm", "partitions", 1, "expected a string, got 1"),
        ("slurm-bf", "bf_continue", "no", "expected true or false, got 'no'"),
        ("slurm-bf", "bf_window_s", 600.0, "expected a whole number"),
    ],
)
def test_a_policy_option_of_the_wrong_type_names_its_flag(queue, name, value, why):
    """It was refused by the engine as "settings: slurm: invalid type: floating point
    `1.5`, expected i64", naming neither the option nor its flag."""
    with pytest.raises(InputError) as e:
        starts([(0, 1, 10, 10)], queue, policy_options={name: value})
    msg = str(e.value)
    assert msg.startswith("--" + name.replace("_", "-")) and why in msg and "\n" not in msg


@pytest.mark.parametrize(
    "queue, name, value",
    [
        ("slurm", "priority_max_age_s", 0),
        ("slurm", "priority_calc_period_s", 0),
        ("slurm", "ticks_per_s", 0),
        ("slurm", "batch_sched_delay_s", -1),
        ("slurm", "priority_weight_age", 2**32),
        ("slurm-bf", "bf_interval_s", 0),
        ("slurm-bf", "bf_resolution_s", 0),
        ("slurm-bf", "bf_window_s", 30),
        ("slurm-bf", "bf_max_job_test", 0),
        ("slurm-bf", "bf_will_run_window_s", -1),
    ],
)
def test_out_of_range_options_are_one_line_naming_the_flag(queue, name, value):
    with pytest.raises(InputError) as e:
        starts([(0, 1, 10, 10)], queue, policy_options={name: value})
    msg = str(e.value)
    assert "--" + name.replace("_", "-") in msg and "\n" not in msg


def test_numpy_scalars_are_taken_as_policy_options():
    rows = [(0, 8, 1000, 1000), (1, 8, 100, 100), (2, 1, 100, 100)]
    s = starts(rows, "slurm", policy_options={"priority_weight_job_size": np.int64(100), "priority_favor_small": np.bool_(True)})
    assert s == {1: 0, 2: 1100, 3: 1000}


# --- invariants -----------------------------------------------------------------------


def test_invariants_and_determinism_on_random_workloads():
    """No job starts before its submission, no node is held by two jobs, every job runs
    or is reported skipped, and the same inputs give the same schedule."""
    rng = np.random.default_rng(7)
    fab = fabric(4, 2, 2)
    rows, t = [], 0
    for _ in range(120):
        t += int(rng.integers(0, 40))
        w = int(rng.integers(1, 600))
        rows.append((t, int(rng.integers(1, 9)), w, int(rng.integers(0, w + 200)), int(rng.integers(0, 3)), int(rng.integers(0, 2)), int(rng.integers(0, 2)), int(rng.integers(-1, 2))))
    runs = [
        ("slurm", {"partitions": "0=0-7;1=4-15:max_time_s=500:priority_tier=1", "priority_weight_age": 1000, "priority_weight_job_size": 500, "priority_weight_fairshare": 2000, "priority_max_age_s": 600, "priority_calc_period_s": 60}),
        ("slurm-bf", {"sched_partitions": "0=0-7;1=4-15:max_time_s=500", "sched_priority_weight_age": 1000, "bf_resolution_s": 7, "bf_interval_s": 13, "bf_max_job_test": 20, "bf_window_s": 900}),
    ]
    for queue, opts in runs:
        # --switches only with slurm-bf: under slurm a job waiting for switches is never
        # retried (the strict expected failures above)
        for alloc, switches in (("linear", None), ("slurm-tree", "1@50" if queue == "slurm-bf" else None)):
            cfg = RunConfig(queue=queue, alloc=alloc, switches=switches, policy_options=opts)
            r = simulate(workload(rows), fab, cfg)
            assert not check_schedule(r.jobs, fab), (queue, alloc)
            t_ = r.jobs.to_pydict()
            assert all(s >= sub for s, sub in zip(t_["start_s"], t_["submit_s"]))
            assert r.jobs.num_rows + r.skipped.num_rows == len(rows)
            assert simulate(workload(rows), fab, cfg).jobs.equals(r.jobs)


@pytest.mark.parametrize("queue, flag", [("slurm", "--partitions"), ("slurm-bf", "--sched-partitions")])
def test_partitions_off_the_fabric_name_the_flag(queue, flag):
    """It was a SimulationError naming no flag: "queue slurm: partition 0 names node 9,
    the fabric has 8 nodes (ids 0-7)"."""
    with pytest.raises(InputError) as e:
        starts([(0, 1, 10, 10)], queue, policy_options={flag[2:].replace("-", "_"): "0=0-3;1=4-9"})
    msg = str(e.value)
    assert "partition 1 names node 9" in msg and f"set with {flag}" in msg and "\n" not in msg


@pytest.mark.parametrize("flag, value, bound", [("--bf-max-job-test", "0", "at least 1"), ("--bf-window-s", "30", "at least 60"), ("--bf-interval-s", "20000", "at most 10800"), ("--sched-ticks-per-s", "0", "at least 1")])
def test_slurm_bf_flags_say_slurms_own_range(capsys, flag, value, bound):
    """The flags' ranges are Slurm's (slurm_bf.rs check): --bf-max-job-test 0 said "must be
    at least 0" (the schema's u32), then the engine refused 0 naming no flag."""
    from toposched.cli import main

    with pytest.raises(SystemExit):
        main(["simulate", "--trace", "x.swf", "--queue", "slurm-bf", flag, value])
    err = capsys.readouterr().err
    assert f"argument {flag}: must be {bound}, got" in err, err

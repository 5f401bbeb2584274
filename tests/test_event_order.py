"""Hand-worked cases of two rules of docs/semantics.md: EASY's extra nodes count every
node free at the shadow time, and the per-event order (pyss's)."""

from __future__ import annotations

import pytest

from test_engine import make_workload
from toposched.errors import ToposchedError
from toposched.simulate import RunConfig, simulate
from toposched.topology import load_fabric


def starts(w, system, **cfg):
    r = simulate(w, load_fabric(system), RunConfig(alloc="linear", **cfg))
    return dict(zip(r.jobs.column("job_id").to_pylist(), r.jobs.column("start_s").to_pylist()))


def test_easy_counts_every_job_ending_at_the_shadow_time_as_extra():
    # 13 nodes. At t=0: A(3), B(3), D(2) end at 100, C(2) runs long: 3 nodes stay free.
    # t=1: the head H needs 8: free 3 + A 3 + B 3 = 9 at t=100 (the shadow time). D also
    # ends at 100, so 11 nodes are free then: extra = 11 - 8 = 3, and E (3 nodes, ending
    # long after the shadow) backfills now. Counting only up to B (extra 1) refuses E.
    w = make_workload(
        submit=[0, 0, 0, 0, 1, 1],
        nodes=[3, 3, 2, 2, 8, 3],
        walltime=[100, 100, 100, 1000, 50, 500],
        runtime=[100, 100, 100, 1000, 50, 500],
    )
    got = starts(w, "fattree:K=13,S=1,P=1", queue="easy")
    assert got == {1: 0, 2: 0, 3: 0, 4: 0, 5: 100, 6: 1}


def test_a_backfill_job_never_delays_the_head_with_ties_at_the_shadow_time():
    # Same as above, but E needs 4 nodes: more than the extra 3, so it must wait for the head.
    w = make_workload([0, 0, 0, 0, 1, 1], [3, 3, 2, 2, 8, 4], [100, 100, 100, 1000, 50, 500], [100, 100, 100, 1000, 50, 500])
    got = starts(w, "fattree:K=13,S=1,P=1", queue="easy")
    # at 100 H takes 8 of the 11 free nodes; E (4) waits for H's end at 150
    assert got[5] == 100 and got[6] == 150


# 4 nodes. X (2 nodes, requested 200 s) ends early at t=100. H (3 nodes) waits for it.
# S (2 nodes, 50 s) arrives at t=100, the instant X ends.
PER_EVENT_CASE = dict(submit=[0, 1, 100], nodes=[2, 3, 2], walltime=[200, 300, 50], runtime=[100, 300, 50])


def test_per_instant_order_releases_ends_before_submits_and_runs_one_pass():
    # At t=100: X ends, S arrives, one pass: H takes 3 of the 4 nodes; S waits for H's end.
    got = starts(make_workload(**PER_EVENT_CASE), "fattree:K=4,S=1,P=1", queue="easy")
    assert got == {1: 0, 2: 100, 3: 400}


def test_per_event_order_runs_a_pass_after_the_submit_before_the_end():
    # At t=100, S's submission comes first: X still holds its 2 nodes, H's shadow time is
    # X's expected end 200, S ends by 150 <= 200 and backfills on the 2 free nodes. Then
    # X's end runs another pass: H still lacks a node and starts when S ends, at 150.
    got = starts(make_workload(**PER_EVENT_CASE), "fattree:K=4,S=1,P=1", queue="easy", event_order="per-event")
    assert got == {1: 0, 2: 150, 3: 100}


def test_per_event_order_releases_ends_at_one_instant_in_start_order():
    # 4 nodes: Y starts first (t=0, 2 nodes), Z second (t=5, 2 nodes); both end at 100.
    # Q (3 nodes, queued since t=10) then L (1 node, long) wait. Per event, Y's end comes
    # first: 2 free nodes, Q's shadow is Z's expected end (now): extra = 4 - 3 = 1, so L
    # backfills; Z's end then lets Q start. Both orders start Q at 100 here, and L too.
    w = make_workload([0, 5, 10, 11], [2, 2, 3, 1], [100, 95, 10, 1000], [100, 95, 10, 1000])
    a = starts(w, "fattree:K=4,S=1,P=1", queue="easy", event_order="per-event")
    b = starts(w, "fattree:K=4,S=1,P=1", queue="easy")
    assert a == b == {1: 0, 2: 5, 3: 100, 4: 100}


def test_unknown_event_order_is_refused():
    w = make_workload(**PER_EVENT_CASE)
    with pytest.raises((ValueError, ToposchedError), match="event_order"):
        starts(w, "fattree:K=4,S=1,P=1", event_order="sideways")

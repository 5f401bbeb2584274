"""The engine against refsim (validation/refsim), an independent profile-based reference
scheduler written in the pyss style, on the bundled real log and on the hand-worked cases.
The whole shared logs are compared by validation/validate.py (run by .ci/run)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import EXAMPLE_TRACE, REPO
from test_engine import make_workload
from test_event_order import PER_EVENT_CASE

sys.path.insert(0, str(REPO / "validation"))
import validate  # noqa: E402


@pytest.fixture(scope="module")
def refsim() -> Path:
    if shutil.which("cargo") is None:
        pytest.fail("cargo is needed to build validation/refsim (the README's set-up installs a Rust toolchain)")
    return validate.build_refsim()


@pytest.mark.parametrize("queue,order", [("fcfs", "per-instant"), ("easy", "per-instant"), ("easy", "per-event")])
def test_whole_bundled_log_matches_the_reference_job_by_job(refsim, queue, order):
    from toposched.workload import read_trace

    w = read_trace(EXAMPLE_TRACE, cores_per_node=1)  # nodes = processors
    total = validate.machine_size(w)
    assert total == 9216
    got = validate.engine_starts(w, total, queue, order)
    want = validate.reference_starts(refsim, w, total, queue, order)
    bad = np.flatnonzero(got != want)
    assert len(bad) == 0, f"{len(bad)} of {len(w)} jobs differ; first rows {bad[:5].tolist()}"


def test_conservative_matches_the_reference_on_the_bundled_log(refsim):
    from toposched.workload import read_trace

    w = read_trace(EXAMPLE_TRACE).take(np.arange(6000))  # 8-core nodes, 1,152 nodes
    got = validate.engine_starts(w, 1152, "conservative", "per-instant")
    want = validate.reference_starts(refsim, w, 1152, "conservative", "per-instant")
    assert (got == want).all(), f"{int((got != want).sum())} jobs differ"


def test_reference_reproduces_the_hand_worked_per_event_case(refsim):
    w = make_workload(**PER_EVENT_CASE)
    assert validate.reference_starts(refsim, w, 4, "easy", "per-event").tolist() == [0, 150, 100]
    assert validate.reference_starts(refsim, w, 4, "easy", "per-instant").tolist() == [0, 100, 400]


def test_reference_refuses_bad_usage(refsim):
    r = subprocess.run([str(refsim), "sideways"], input="4\n", capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr


def test_conservative_matches_the_reference_on_random_congested_queues(refsim):
    """Random small logs that keep a queue of reservations (bursts of submissions, jobs
    ending well before their limits, so later reservations move up): every start equal to
    the independent reference's. The planner searches only where the plan grew since a
    reservation was last searched (queue/conservative.rs); a rule that missed some growth
    would start a job later than the reference here. (Drawn from a seed, so that most
    examples are congested: EASY's starts differ from conservative's in about two thirds.)"""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.integers(0, 2**32 - 1))
    def check(seed: int) -> None:
        rng = np.random.default_rng(seed)
        total = int(rng.integers(8, 17))
        n = int(rng.integers(10, 61))
        submit = np.cumsum(rng.integers(0, 4, n) * 37)
        nodes = rng.integers(1, total + 1, n)
        walltime = rng.integers(1, 401, n)
        runtime = walltime * rng.integers(0, 101, n) // 100
        w = make_workload(submit, nodes, walltime, runtime)
        got = validate.engine_starts(w, total, "conservative", "per-instant")
        want = validate.reference_starts(refsim, w, total, "conservative", "per-instant")
        assert got.tolist() == want.tolist()

    check()

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

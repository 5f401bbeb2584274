"""Golden schedules on real traces: start, end, class and node list of every job.

The golden files were produced by this engine and checked when written: start times of
the linear runs agree with the independent reference EASY (test_engine.py), and every
schedule passes the output re-checker (interference-free for isolated). They pin the
behaviour so that any change in a schedule is seen and explained. To regenerate after an
intended change: TOPOSCHED_UPDATE_GOLDEN=1 pytest tests/test_golden.py, and say why in
the commit.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from conftest import EXAMPLE_TRACE, HPC2N_SUBSET, KTH, THUNDER, first_jobs
from toposched.check import check_schedule
from toposched.nodelists import node_lists
from toposched.simulate import RunConfig, simulate
from toposched.topology import load_fabric
from toposched.workload import read_trace

GOLDEN = Path(__file__).parent / "golden"
CASES = {
    # name: (trace, first N jobs or None, system, queue, alloc)
    "hpc2n-subset_easy_isolated": (HPC2N_SUBSET, None, "fattree:K=12,S=5,P=2", "easy", "isolated"),
    "atlas-5000_easy_isolated": (EXAMPLE_TRACE, 5000, "cab", "easy", "isolated"),
    "thunder-4000_easy_linear": (THUNDER, 4000, "cab", "easy", "linear"),
    "kth-4000_fcfs_random": (KTH, 4000, "fattree:K=20,S=5,P=1", "fcfs", "random"),
}


def ranges(ids: list[int]) -> str:
    """Ascending ids as '0-17,20' (compact and diff-friendly)."""
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def render(name: str) -> tuple[str, object, object]:
    trace, first, system, queue, alloc = CASES[name]
    w = read_trace(trace) if first is None else first_jobs(trace, first)
    fabric = load_fabric(system)
    r = simulate(w, fabric, RunConfig(queue=queue, alloc=alloc, seed=5))
    t = r.jobs
    lines = ["job_id,submit_s,start_s,end_s,alloc_class,nodes"]
    for j, s, b, e, c, n in zip(
        t.column("job_id").to_pylist(),
        t.column("submit_s").to_pylist(),
        t.column("start_s").to_pylist(),
        t.column("end_s").to_pylist(),
        t.column("alloc_class").to_pylist(),
        node_lists(t),
    ):
        lines.append(f"{j},{s},{b},{e},{c},{ranges(n)}")
    return "\n".join(lines) + "\n", r, fabric


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_schedule(name):
    text, result, fabric = render(name)
    assert check_schedule(result.jobs, fabric.describe(), interference_free=CASES[name][4] == "isolated") == []
    path = GOLDEN / f"{name}.csv.gz"
    if os.environ.get("TOPOSCHED_UPDATE_GOLDEN") == "1":
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
    expected = gzip.decompress(path.read_bytes()).decode()
    if text != expected:
        got, exp = text.splitlines(), expected.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(got, exp)) if a != b), min(len(got), len(exp)))
        pytest.fail(f"{name}: schedule differs from golden at row {first}: got {got[first:first + 1]} expected {exp[first:first + 1]} ({len(got)} vs {len(exp)} rows)")

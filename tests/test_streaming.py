"""Streamed replays through the binding: a bundled real trace appended in chunks, stepped to
each chunk's first submit (`step_until`), drained between chunks, gives row for row the
arrays of `results()` of the same trace replayed whole, and the window of rows the engine
holds shrinks as rows are drained (ARCHITECTURE.md, rows, window and horizon)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import KTH, THUNDER, first_jobs
from toposched import _core
from toposched.topology import load_fabric

COLUMNS = ("job_id", "submit_s", "nodes", "walltime_s", "runtime_s")
ARRAYS = ("status", "start_s", "end_s", "alloc_class", "killed", "aph", "range_offsets", "range_first", "range_count")


def _cuts(submit: np.ndarray, rng: np.random.Generator, chunks: int) -> list[int]:
    """Chunk boundaries at random rows, half of them inside a run of equal submit times
    (the rows of one instant split across two chunks)."""
    n = len(submit)
    ties = np.flatnonzero(submit[1:] == submit[:-1]) + 1  # rows whose submit equals the row before
    cuts = set(rng.integers(1, n, chunks // 2).tolist()) | set(rng.choice(ties, chunks - chunks // 2).tolist())
    return sorted(cuts)


def _concat(parts: list[dict]) -> dict[str, np.ndarray]:
    out = {k: np.concatenate([p[k] for p in parts]) for k in ARRAYS if k != "range_offsets"}
    offsets, base = [np.zeros(1, np.int64)], 0
    for p in parts:
        offsets.append(p["range_offsets"][1:] + base)
        base += int(p["range_offsets"][-1])
    out["range_offsets"] = np.concatenate(offsets)
    return out


CASES = [
    pytest.param(THUNDER, "cab", "easy", "linear", True, id="Thunder-easy-linear"),
    pytest.param(THUNDER, "cab", "conservative", "isolated", True, id="Thunder-conservative-isolated"),
    pytest.param(KTH, "fattree:K=20,S=5,P=1", "easy", "isolated", False, id="KTH-easy-isolated-runon"),
    pytest.param(KTH, "fattree:K=20,S=5,P=1", "fcfs", "slurm-tree", True, id="KTH-fcfs-slurm-tree"),
]


@pytest.mark.parametrize("trace,system,queue,alloc,kill", CASES)
def test_chunked_replay_equals_whole(trace, system, queue, alloc, kill):
    w = first_jobs(trace, 3000)
    cols = {c: np.ascontiguousarray(w[c], dtype=np.int64) for c in COLUMNS}
    fabric = load_fabric(system)
    settings = dict(queue=queue, alloc=alloc, kill_at_walltime=kill)

    whole = _core.Simulation(fabric.core, *cols.values(), **settings)
    assert whole.step()
    want = whole.results()
    want_skipped = sorted(whole.skipped())

    rng = np.random.default_rng(17)
    bounds = [0, *_cuts(cols["submit_s"], rng, 12), len(w)]
    part = [{c: v[a:b] for c, v in cols.items()} for a, b in zip(bounds, bounds[1:])]
    sim = _core.Simulation(fabric.core, *part[0].values(), **settings)
    drained, skipped, held = [], [], []
    for k, chunk in enumerate(part[1:], 1):
        # the input end is the first submit not appended yet
        while not sim.step_until(int(chunk["submit_s"][0]), max_instants=int(rng.integers(1, 500))):
            pass
        assert not sim.finished and sim.input_end == int(chunk["submit_s"][0])
        d = sim.drain()
        assert d["first_row"] == sum(len(p["status"]) for p in drained)
        drained.append(d)
        skipped += d["skipped"]
        held.append(sim.held_rows)
        sim.append(*chunk.values())
        assert sim.n_jobs == bounds[k + 1]
    assert sim.step_until(None)
    assert sim.finished
    d = sim.drain()
    drained.append(d)
    skipped += d["skipped"]
    assert sim.held_rows == 0 and sim.first_row == len(w)

    got = _concat(drained)
    for k in ARRAYS:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    assert skipped == want_skipped
    assert sim.passes == whole.passes
    # the window: after each drain the engine held far fewer rows than were appended
    assert max(held) < len(w) // 4, held


def test_bad_appends_are_value_errors():
    w = first_jobs(THUNDER, 20)
    cols = [np.ascontiguousarray(w[c], dtype=np.int64) for c in COLUMNS]
    fabric = load_fabric("cab")
    sim = _core.Simulation(fabric.core, *[c[:10] for c in cols])
    end = int(cols[1][10])
    assert sim.step_until(end)
    with pytest.raises(ValueError, match=r"job row 10 .*input end was declared"):
        sim.append(*[c[10:11] for c in cols[:1]], cols[1][10:11] - 1, *[c[10:11] for c in cols[2:]])
    with pytest.raises(ValueError, match="already handled"):
        sim.step_until(int(cols[1][0]))
    sim.append(*[c[10:] for c in cols])
    assert sim.step_until(None) and sim.finished
    with pytest.raises(ValueError, match="has finished"):
        sim.append(*[c[19:] for c in cols])
    slurm = _core.Simulation(fabric.core, *[c[:10] for c in cols], queue="slurm")
    with pytest.raises(ValueError, match="fair-share"):
        slurm.append(*[c[10:] for c in cols])

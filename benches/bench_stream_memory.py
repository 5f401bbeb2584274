#!/usr/bin/env python3
"""Peak memory of the engine fed in chunks (issue 17 point 2), against the whole replay.

    python benches/bench_stream_memory.py --jobs 10000000            # streamed
    python benches/bench_stream_memory.py --jobs 1000000 --whole     # the whole log at once
    python benches/bench_stream_memory.py --jobs 10000000 --write-swf big.swf   # the same jobs as a log

With ``--write-swf PATH`` it replays nothing: it writes the same synthetic jobs as an SWF
log (plain text, about 60 bytes a job, in submit order; header MaxNodes = MaxProcs, so a
processor is a node) for ``toposched simulate --stream --trace PATH --system cab`` under
``/usr/bin/time -v`` (BENCHMARKS.md, the whole command in bounded memory).

Not a test (pytest never collects it). Synthetic jobs on `cab` under EASY + linear, one
submitted a minute (about 40 % load: the queue stays short), 1-32 nodes, requested
1,800-7,200 s, run a random part of it; the same seeded jobs either way. Streamed, the
native engine gets them in chunks of ``--chunk`` rows (``Simulation.append``), runs up to
the next chunk's first submit (``step_until``) and hands over the finished rows
(``drain``), which are dropped here: this measures the engine's own window (ARCHITECTURE.md
rule 12), not a reader or a writer. Whole: one ``Simulation`` with every job, then
``results(release=True)``. Prints one JSON object: commit, jobs, mode, wall seconds, peak
RSS (``ru_maxrss``, MiB), rows held at the end, jobs finished.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchinfo import commit  # noqa: E402


def chunk(rng: np.random.Generator, first: int, m: int) -> list[np.ndarray]:
    rows = first + np.arange(m, dtype=np.int64)
    submit = rows * 60
    nodes = rng.integers(1, 33, m).astype(np.int64)
    walltime = rng.integers(1800, 7201, m).astype(np.int64)
    runtime = (walltime * rng.random(m)).astype(np.int64)
    return [rows, submit, nodes, walltime, runtime]


#: One SWF record: job, submit, wait (-1), run time, allocated processors, CPU time and
#: memory (-1), requested processors, requested time, memory (-1), status 1, user, group
#: 1, executable (-1), queue 1, partition 1, preceding job and think time (-1).
_RECORD = "%d %d -1 %d %d -1 -1 %d %d -1 1 %d 1 -1 1 1 -1 -1\n"


def write_swf(path: Path, n: int, size: int) -> int:
    """The jobs of :func:`chunk` (same seed, so the same jobs as a replay here) as SWF."""
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    with open(path, "w") as fh:
        fh.write(f"; synthetic log: benches/bench_stream_memory.py --jobs {n} --write-swf\n; MaxNodes: 1296\n; MaxProcs: 1296\n")
        for k in range(0, n, size):
            rows, submit, nodes, walltime, runtime = chunk(rng, k, min(size, n - k))
            user = rows % 97 + 1
            cols = np.stack([rows + 1, submit, runtime, nodes, nodes, walltime, user], axis=1)
            fh.write((_RECORD * len(rows)) % tuple(cols.ravel().tolist()))
    print(json.dumps({"bench": "stream_memory", "wrote": str(path), "jobs": n, "bytes": path.stat().st_size, "wall_s": round(time.perf_counter() - t0, 2)}))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=10_000_000)
    ap.add_argument("--chunk", type=int, default=100_000)
    ap.add_argument("--whole", action="store_true", help="one Simulation with every job (the reference)")
    ap.add_argument("--write-swf", metavar="PATH", help="write the jobs as an SWF log instead of replaying them")
    args = ap.parse_args()
    if args.write_swf:
        return write_swf(Path(args.write_swf), args.jobs, args.chunk)

    from toposched import _core
    from toposched.topology import load_fabric

    fabric = load_fabric("cab")
    rng = np.random.default_rng(1)
    n, size = args.jobs, args.chunk
    starts = list(range(0, n, size))
    t0 = time.perf_counter()
    if args.whole:
        cols = [np.concatenate(c) for c in zip(*(chunk(rng, k, min(size, n - k)) for k in starts))]
        sim = _core.Simulation(fabric.core, *cols)
        sim.step()
        done = int((sim.results(release=True)["status"] == 2).sum())
        held = None
    else:
        sim = _core.Simulation(fabric.core, *chunk(rng, 0, min(size, n)))
        done = 0
        for k in starts[1:]:
            c = chunk(rng, k, min(size, n - k))
            while not sim.step_until(int(c[1][0])):
                pass
            done += int((sim.drain()["status"] == 2).sum())
            sim.append(*c)
        while not sim.step_until(None):
            pass
        done += int((sim.drain()["status"] == 2).sum())
        held = sim.held_rows
    wall = time.perf_counter() - t0
    print(json.dumps({
        "bench": "stream_memory",
        "commit": commit(),
        "machine": f"{platform.machine()}, {len(__import__('os').sched_getaffinity(0))} CPUs, Python {platform.python_version()}",
        "jobs": n,
        "mode": "whole" if args.whole else f"streamed in chunks of {size:,}",
        "wall_s": round(wall, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rows_held_at_end": held,
        "jobs_done": done,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())

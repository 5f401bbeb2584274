#!/usr/bin/env python3
"""Memory per job of a replay: 1 M and 5 M jobs (issue 13: target under 500 bytes per job).

Not a test (pytest never collects it). Each size runs in a fresh subprocess so that its
peak RSS (``ru_maxrss``) is its own:

    python benches/bench_memory.py                  # 1,000,000 and 5,000,000 jobs
    python benches/bench_memory.py --jobs 200000 --json

The workload is a real log tiled to the size asked (CEA-Curie from the shared traces,
else the bundled LLNL-Atlas): copy k of the log is shifted by k times its span, so job
sizes, run times and arrival patterns stay those of the real log. The replay is
``simulate()`` plus ``SimResult.write()`` (EASY + linear on fattree:K=18,S=18,P=18, 5,832
nodes). "Per job" is the growth of the peak RSS from the built workload (its columns
included in the baseline) to the end of the write, divided by the number of jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRACES = Path(os.environ.get("TOPOSCHED_TRACES", "/work/shared/data/traces"))
REPO = Path(__file__).resolve().parents[1]


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(n_jobs: int, system: str, queue: str, alloc: str) -> dict:
    import gc

    import numpy as np

    from toposched.simulate import RunConfig, simulate
    from toposched.topology import load_fabric
    from toposched.workload import read_trace
    from toposched.workload.model import COLUMNS, Workload

    trace = TRACES / "CEA-Curie-2011-2.1-cln.swf.gz"
    if not trace.exists():
        trace = REPO / "examples" / "data" / "LLNL-Atlas-2006-2.1-cln.swf.gz"
    base = read_trace(trace)
    copies = -(-n_jobs // len(base))
    span = int(base["submit_s"][-1]) + 1
    cols = {c: np.concatenate([base[c] + (k * span if c == "submit_s" else 0) for k in range(copies)])[:n_jobs] for c in COLUMNS}
    cols["job_id"] = np.arange(n_jobs, dtype=np.int64)
    mean_nodes = float(np.mean(cols["nodes"]))
    w = Workload(columns=cols, source=f"{trace.name} x{copies}", format="swf")
    del base, cols
    fabric = load_fabric(system)
    gc.collect()
    before = _peak_mib()
    t0 = time.perf_counter()
    result = simulate(w, fabric, RunConfig(queue=queue, alloc=alloc))
    after_sim = _peak_mib()
    tmp = tempfile.mkdtemp(prefix="toposched-membench-")
    try:
        result.write(Path(tmp) / "out")
        size = sum(p.stat().st_size for p in (Path(tmp) / "out").iterdir())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    after = _peak_mib()
    return {
        "jobs": n_jobs,
        "trace": trace.name,
        "copies": copies,
        "mean_nodes_per_job": round(mean_nodes, 1),
        "system": system,
        "queue": queue,
        "alloc": alloc,
        "utilization_samples": result.summary["utilization"]["samples"],
        "peak_before_mib": round(before, 1),
        "peak_after_replay_mib": round(after_sim, 1),
        "peak_after_write_mib": round(after, 1),
        "bytes_per_job": round((after - before) * 2**20 / n_jobs),
        "output_mib": round(size / 2**20, 1),
        "elapsed_s": round(time.perf_counter() - t0, 2),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, action="append", help="job counts (default: 1,000,000 and 5,000,000)")
    p.add_argument("--system", default="fattree:K=18,S=18,P=18")
    p.add_argument("--queue", default="easy")
    p.add_argument("--alloc", default="linear")
    p.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child process: one size
    args = p.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.system, args.queue, args.alloc)))
        return 0
    rows = []
    for n in args.jobs or [1_000_000, 5_000_000]:
        cmd = [sys.executable, __file__, "--one", str(n), "--system", args.system, "--queue", args.queue, "--alloc", args.alloc]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        if args.json:
            print(json.dumps(rows[-1]), flush=True)
    if not args.json:
        print("| jobs | nodes/job | peak before MiB | peak after replay MiB | peak after write MiB | bytes/job | outputs MiB | s |")
        print("|--:|--:|--:|--:|--:|--:|--:|--:|")
        for r in rows:
            print(f"| {r['jobs']:,} | {r['mean_nodes_per_job']} | {r['peak_before_mib']:,.0f} | {r['peak_after_replay_mib']:,.0f} | "
                  f"{r['peak_after_write_mib']:,.0f} | **{r['bytes_per_job']}** | {r['output_mib']:,.0f} | {r['elapsed_s']} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

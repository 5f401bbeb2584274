"""A sweep of many runs: per-run overhead, runs per minute, simulated days per wall hour.

    python benches/bench_sweep.py                       # 1,000 runs, local Dask cluster, 2 workers
    python benches/bench_sweep.py --runs 200 --executor pool
    python benches/bench_sweep.py --executor both       # Dask, then the local process pool

The sweep is generated, not shipped: one-day windows of the bundled LLNL Atlas log
(``days:1@D`` for D = 0, 1, 2, ...) on ``cab`` under EASY with four allocation policies
(linear, random, isolated, slurm-tree) and two seeds, ``--runs`` runs in all (a multiple
of 8). Each executor gets a fresh output directory and runs ``toposched sweep`` as a user
would, in its own process (its wall time includes starting the workers). From the catalog
the script reads each run's own time (``elapsed_s``: preparing the workload, the replay,
writing the run) and its makespan, and reports:

* runs per minute = runs / wall time x 60;
* per-run overhead = (wall time x workers - sum of the runs' own times) / runs: what the
  sweep machinery costs each run beyond the run itself (scheduling, results, the catalog);
* simulated days per wall hour = sum of the runs' makespans / wall time.

The trace is read once per worker and shared between its runs (the runner's per-worker
cache), so the reading cost is in the first run of each worker only.

A benchmark, not a test (BENCHMARKS.md has its figures with the commit and the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRACE = REPO / "examples" / "data" / "LLNL-Atlas-2006-2.1-cln.swf.gz"
ALLOCS = ("linear", "random", "isolated", "slurm-tree")
SEEDS = (0, 1)


def sweep_toml(runs: int) -> str:
    """The sweep file: runs / 8 one-day windows x 4 allocation policies x 2 seeds."""
    windows = runs // (len(ALLOCS) * len(SEEDS))
    transforms = json.dumps([[f"days:1@{d}" for d in range(windows)]])
    return f"""name = "bench-sweep"
[[workloads]]
name = "atlas"
trace = {json.dumps(str(TRACE))}
transforms = {transforms}
[[fabrics]]
system = "cab"
[policies]
queue = ["easy"]
alloc = {json.dumps(list(ALLOCS))}
[scenarios]
seeds = {json.dumps(list(SEEDS))}
"""


def run_one(executor: str, runs: int, workers: int, root: Path) -> dict[str, object]:
    import duckdb

    spec = root / f"sweep-{executor}.toml"
    spec.write_text(sweep_toml(runs))
    out = root / f"out-{executor}"
    cmd = [sys.executable, "-m", "toposched.cli", "sweep", str(spec), "--out", str(out), "--workers", str(workers), "--no-report", "--quiet"]
    if executor == "dask":
        cmd.append("--dask")
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - t0
    load_after = os.getloadavg()[0]
    con = duckdb.connect(str(out / "catalog.duckdb"), read_only=True)
    n, complete, own, simulate, makespan = con.execute(
        "SELECT count(*), count(*) FILTER (status = 'complete'), sum(elapsed_s), sum(simulate_s), sum(makespan_s) FROM runs"
    ).fetchone()
    con.close()
    return {
        "executor": executor,
        "workers": workers,
        "runs": n,
        "complete": complete,
        "wall_s": round(wall, 2),
        "runs_per_minute": round(n / wall * 60, 1),
        "sum_run_s": round(own, 2),
        "sum_simulate_s": round(simulate, 2),
        "overhead_per_run_s": round((wall * workers - own) / n, 4),
        "simulated_days": round(makespan / 86400, 1),
        "simulated_days_per_wall_hour": round(makespan / 86400 / (wall / 3600)),
        "load_avg_1min": [round(load_before, 2), round(load_after, 2)],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=1000, help="runs in the sweep, a multiple of 8 (default: 1000)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default: 2)")
    p.add_argument("--executor", choices=("dask", "pool", "both"), default="dask", help="Dask's local cluster, the local process pool, or both (default: dask)")
    p.add_argument("--keep", metavar="DIR", help="keep the sweep directories here (default: a temporary directory, removed)")
    args = p.parse_args(argv)
    if args.runs < 8 or args.runs % 8:
        p.error("--runs must be a positive multiple of 8")
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="toposched-bench-sweep-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        executors = ("dask", "pool") if args.executor == "both" else (args.executor,)
        print(json.dumps({"machine": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()}))
        for ex in executors:
            print(json.dumps(run_one(ex, args.runs, args.workers, root)), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

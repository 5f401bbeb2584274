"""Whole `toposched simulate` command against a plain-Python classic EASY, side by side.

    python benches/bench_whole_process.py [--repeat 5] [--trace-dir DIR]

Issue 17's first target: `toposched simulate` EASY + linear on the whole HPC2N log
(202,871 jobs; 240 processors = 240 nodes, `fattree:K=16,S=15,P=1`), the whole command
(interpreter start-up, imports, reading, replay, Parquet and JSON writing), at least 10x
faster than `reference_easy_swf.py` (reading the log itself, then tests/reference_easy.py)
in its own process. Both run alternately in one run, each a fresh process, best of
--repeat, after compiling both sides' modules to bytecode (``compileall``: what an
installed package has, and what any second run of a module finds cached; without it,
every timing would include compiling toposched's modules, 0.04-0.06 s, on machines where
Python does not write .pyc files, e.g. with PYTHONDONTWRITEBYTECODE set); the reference's start times are compared job by job with jobs.parquet's, so
both did the same work. Prints one JSON object (commit, machine, load averages, every
time) and a one-line verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchinfo import DEFAULT_TRACE_DIR, commit

HERE = Path(__file__).resolve().parent
TRACE = "HPC2N-2002-2.2-cln.swf.gz"
SYSTEM = "fattree:K=16,S=15,P=1"
NODES = 240
TARGET_RATIO = 10.0


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _compile_modules() -> None:
    """Both sides' modules as bytecode, as an installed package has them (the reference's
    script itself, like ``python -m toposched.cli``'s entry module, is compiled at each
    run by the interpreter either way)."""
    import compileall

    import toposched

    compileall.compile_dir(str(Path(toposched.__file__).parent), quiet=1)
    compileall.compile_file(str(HERE.parent / "tests" / "reference_easy.py"), quiet=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--trace-dir", default=str(DEFAULT_TRACE_DIR))
    args = ap.parse_args(argv)
    trace = Path(args.trace_dir) / TRACE
    if not trace.exists():
        print(f"error: {trace}: not found (--trace-dir or TOPOSCHED_TRACES)", file=sys.stderr)
        return 2
    toposched = [sys.executable, "-m", "toposched.cli"]
    _compile_modules()
    load_before = os.getloadavg()
    ours, ref = [], []
    with tempfile.TemporaryDirectory() as tmp:
        out, starts = Path(tmp) / "out", Path(tmp) / "ref.txt"
        for i in range(args.repeat):
            ours.append(_timed([*toposched, "simulate", "--trace", str(trace), "--system", SYSTEM, "--queue", "easy", "--alloc", "linear", "--out", str(out), "--quiet"]))
            ref.append(_timed([sys.executable, str(HERE / "reference_easy_swf.py"), str(trace), str(NODES), *(["--out", str(starts)] if i == 0 else [])]))
        import pyarrow.parquet as pq

        jobs = pq.read_table(out / "jobs.parquet", columns=["job_id", "start_s"])
        got = dict(zip(jobs.column("job_id").to_pylist(), jobs.column("start_s").to_pylist()))
        expected = [tuple(map(int, line.split())) for line in starts.read_text().splitlines()]
        differ = sum(1 for job, start in expected if got.get(job) != start)
    row = {
        "case": "hpc2n easy+linear, whole command",
        "commit": commit(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "loadavg_1min_before": round(load_before[0], 2),
        "loadavg_1min_after": round(os.getloadavg()[0], 2),
        "jobs": len(expected),
        "start_times_differ": differ,
        "toposched_s": round(min(ours), 3),
        "reference_s": round(min(ref), 3),
        "toposched_all_s": [round(x, 3) for x in ours],
        "reference_all_s": [round(x, 3) for x in ref],
        "ratio": round(min(ref) / min(ours), 2),
    }
    print(json.dumps(row))
    met = row["ratio"] >= TARGET_RATIO and differ == 0
    print(f"toposched {row['toposched_s']} s vs reference {row['reference_s']} s (best of {args.repeat}): {row['ratio']}x, target {TARGET_RATIO:g}x: {'PASS' if met else 'MISS'}; schedules differ on {differ} jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

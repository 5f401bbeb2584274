"""Peak memory and wall time of the whole `toposched simulate` command on a large fabric
(issue 17, point 2): CEA-Curie with nodes = processors, i.e. one node per core on a
one-pod 93,312-node fabric (`fattree:K=93312,S=1,P=1 --cores-per-node 1`), EASY + linear.
Targets: under 1 GB peak resident memory and under 5 s.

Each run is the real command in a fresh process under `/usr/bin/time -v` (its "Maximum
resident set size" and "Elapsed" lines), outputs into a temporary directory; the figures
are the best of `--repeat` runs, with every run listed. `--before PYTHONPATH` times a second
build (e.g. an export of an earlier commit with its own extension) alternately with this
one, so both see the same machine load. Not a test: pytest never collects it.

    python benches/bench_large_fabric.py --repeat 3
    python benches/bench_large_fabric.py --repeat 3 --before /tmp/old/python
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE_DIR = Path(os.environ.get("TOPOSCHED_TRACES", ROOT.parent / "shared" / "data" / "traces"))
CASES = {
    # name: (trace, fabric, extra arguments)
    "curie-np-easy-linear": ("CEA-Curie-2011-2.1-cln.swf.gz", "fattree:K=93312,S=1,P=1", ["--cores-per-node", "1"]),
    "curie-easy-linear": ("CEA-Curie-2011-2.1-cln.swf.gz", "fattree:K=18,S=18,P=18", []),
}
TARGET_PEAK_MIB = 1000.0  # "under 1 GB" (10^9 bytes is 954 MiB; we report MiB and say which)
TARGET_WALL_S = 5.0


def run_once(pythonpath: str, trace: Path, fabric: str, extra: list[str]) -> dict:
    out = Path(tempfile.mkdtemp(prefix="toposched-large-"))
    try:
        cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "toposched.cli", "simulate", "--trace", str(trace), "--system", fabric, *extra,
               "--queue", "easy", "--alloc", "linear", "--out", str(out / "o"), "--quiet"]
        env = {**os.environ, "PYTHONPATH": pythonpath}
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"command failed ({p.returncode}): {p.stderr[-2000:]}")
        rss_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
        wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", p.stderr)
        wall_s = int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))
        jobs_bytes = (out / "o" / "jobs.parquet").stat().st_size
        summary = json.loads((out / "o" / "summary.json").read_text())
        return {"wall_s": wall_s, "peak_mib": rss_kib / 1024, "jobs_parquet_mb": jobs_bytes / 1e6, "jobs": summary["jobs"]["replayed"], "load_1min": os.getloadavg()[0]}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", choices=sorted(CASES), default="curie-np-easy-linear")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", metavar="PYTHONPATH", help="also time the build importable from this PYTHONPATH, alternately")
    ap.add_argument("--trace-dir", type=Path, default=DEFAULT_TRACE_DIR)
    ap.add_argument("--json", action="store_true", help="one JSON object per build instead of the table")
    args = ap.parse_args()
    trace, fabric, extra = CASES[args.case]
    builds = {"this build": str(ROOT / "python")}
    if args.before:
        builds = {"before": args.before, **builds}
    runs: dict[str, list[dict]] = {name: [] for name in builds}
    for _ in range(args.repeat):
        for name, path in builds.items():
            runs[name].append(run_once(path, args.trace_dir / trace, fabric, extra))
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"{args.case}: {trace} on {fabric} {' '.join(extra)}, easy+linear, whole command, best of {args.repeat}; commit {commit}, {os.cpu_count()} CPUs")
    for name, rs in runs.items():
        best = {"wall_s": min(r["wall_s"] for r in rs), "peak_mib": min(r["peak_mib"] for r in rs)}
        row = {"build": name, **best, "jobs_parquet_mb": rs[-1]["jobs_parquet_mb"], "jobs": rs[-1]["jobs"], "runs": rs}
        if args.json:
            print(json.dumps(row))
            continue
        verdict = f"peak < {TARGET_PEAK_MIB:.0f} MiB: {'PASS' if best['peak_mib'] < TARGET_PEAK_MIB else 'MISS'}; wall < {TARGET_WALL_S:g} s: {'PASS' if best['wall_s'] < TARGET_WALL_S else 'MISS'}"
        print(f"  {name:10s} wall {best['wall_s']:.2f} s, peak RSS {best['peak_mib']:,.0f} MiB, jobs.parquet {row['jobs_parquet_mb']:.1f} MB, {row['jobs']:,} jobs  [{verdict}]")
        print("             runs: " + ", ".join(f"{r['wall_s']:.2f} s / {r['peak_mib']:,.0f} MiB (load {r['load_1min']:.1f})" for r in rs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

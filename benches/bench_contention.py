#!/usr/bin/env python3
"""Time seed 001's uplink contention analysis (toposched.contention) on real traces.

Not a test (pytest never collects it). For each case:

1. the schedule: the log replayed with EASY + linear (001's linear mapping) and written as
   a simulate output directory, once, cached under ``--work`` (replay time is printed but
   is the simulator's, not the analysis');
2. in a fresh subprocess (so its peak memory is the analysis' own): load the run
   directory, run the base analysis (every R from K to 1, J = 0.1, 0.25, 0.5) ``--repeat``
   times, the crossbar-size sweep (8..48 nodes per leaf), the cores-per-node sweep (x1,
   x2, x4, x8), and write every output (Parquet, JSON, figures, HTML).

    python benches/bench_contention.py                 # ricc and curie
    python benches/bench_contention.py --case ricc --repeat 5
    python benches/bench_contention.py --json          # one JSON object per case
    python benches/bench_contention.py --list

Seconds are the best of ``--repeat`` runs for the base analysis and its phases, one run for
the sweeps and the writing. ``peak_rss_mib`` is the subprocess's ``ru_maxrss`` (Python,
NumPy and Arrow included); ``analysis_peak_alloc_mib`` is tracemalloc's peak over one base
analysis (NumPy reports its buffers to tracemalloc), i.e. what the analysis itself adds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# ../shared/data/traces beside the repository (where CI keeps the shared data), unless set
DEFAULT_TRACE_DIR = Path(os.environ.get("TOPOSCHED_TRACES", Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"))

# name: (log, fabric, cores per node for the reader or None for the header's)
CASES: dict[str, tuple[str, str, int | None]] = {
    # RICC: 1,024 nodes of 8 cores; its SWF has no MaxNodes/MaxProcs header.
    "ricc": ("RICC-2010-2.swf.gz", "fattree:K=16,S=8,P=8", 8),
    # Curie: 5,040 thin nodes of 16 cores (header); 5,832-node fabric as benches/bench.py.
    "curie": ("CEA-Curie-2011-2.1-cln.swf.gz", "fattree:K=18,S=18,P=18", None),
    "thunder": ("LLNL-Thunder-2007-1.1-cln.swf.gz", "fattree:K=8,S=128,P=1", None),
    "atlas": ("LLNL-Atlas-2006-2.1-cln.swf.gz", "fattree:K=12,S=96,P=1", None),
}
DEFAULT_CASES = ("ricc", "curie")


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def replay(case: str, trace_dir: Path, work: Path) -> tuple[Path, float | None]:
    """The case's simulate output directory (made once); returns (dir, replay seconds or None if cached)."""
    log, fabric, cpn = CASES[case]
    run_dir = work / f"{case}-easy-linear"
    if (run_dir / "jobs.parquet").exists() and (run_dir / "fabric.json").exists():
        return run_dir, None
    from toposched.simulate import RunConfig, simulate
    from toposched.topology import load_fabric
    from toposched.workload import read_trace

    t = time.perf_counter()
    options = {} if cpn is None else {"cores_per_node": cpn}
    result = simulate(read_trace(trace_dir / log, **options), load_fabric(fabric), RunConfig(queue="easy", alloc="linear"))
    result.write(run_dir)
    return run_dir, time.perf_counter() - t


def analyse(run_dir: Path, repeat: int) -> dict:
    """Everything timed in this process (run it in a fresh one)."""
    import tracemalloc

    t = time.perf_counter()
    from toposched import contention as C
    from toposched.reporting.contention import write_outputs

    import_s = time.perf_counter() - t
    rss0 = _rss_mib()
    t = time.perf_counter()
    s = C.Schedule.from_run_dir(run_dir)
    load_s = time.perf_counter() - t
    row: dict = {"load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None, "jobs": s.n_jobs, "nodes": s.n_nodes, "leaves": s.n_leaves, "nodes_per_leaf": s.nodes_per_leaf, "node_entries": int(len(s.node_ids))}
    best: dict[str, float] = {}
    all_s = []
    a = None
    for _ in range(repeat):
        t = time.perf_counter()
        a = C.analyze(s)
        total = time.perf_counter() - t
        all_s.append(total)
        for k, v in dict(a.timings_s, total=total).items():
            best[k] = min(best.get(k, float("inf")), v)
    assert a is not None
    tracemalloc.start()
    C.analyze(s)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    t = time.perf_counter()
    xb = C.crossbar_sweep(s)
    cross_s = time.perf_counter() - t
    t = time.perf_counter()
    cs = C.cores_sweep(s)
    cores_s = time.perf_counter() - t
    doc = {"toposched_version": "bench"}
    doc.update(a.summary())
    doc["probability_curves"] = C.probability_curves(s.nodes_per_leaf)
    doc["crossbar_sweep"] = xb
    doc["cores_per_node_sweep"] = cs
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        write_outputs(a, doc, tmp, figures=False, report=False)
        write_s = time.perf_counter() - t
        t = time.perf_counter()
        write_outputs(a, doc, tmp, figures=True, report=True)
        write_all_s = time.perf_counter() - t
    half = next((r for r in a.sweep if r["uplinks"] == s.full_uplinks // 2), None)
    row.update(
        {
            "exposed_jobs": int(len(a.rows)),
            "pairs": int(len(a.pairs.job)),
            "leaf_stretches": int(len(a.leaf_demand)),
            "import_s": import_s,
            "load_s": load_s,
            "pairs_s": best["pairs"],
            "leaf_demand_s": best["leaf_demand"],
            "job_levels_s": best["job_levels"],
            "sweep_s": best["sweep"],
            "analyse_s": best["total"],
            "analyse_all_s": all_s,
            "crossbar_sweep_s": cross_s,
            "cores_sweep_s": cores_s,
            "write_tables_s": write_s,
            "write_with_figures_report_s": write_all_s,
            "rss_after_imports_mib": rss0,
            "peak_rss_mib": _rss_mib(),
            "analysis_peak_alloc_mib": peak / 2**20,
            "system_slowdown_at_2to1": half["system_slowdown"] if half else None,
            "added_wall_per_node_second_at_2to1": half["added_wall_per_node_second"] if half else None,
        }
    )
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--case", action="append", choices=sorted(CASES), help=f"case(s) to run (default: {', '.join(DEFAULT_CASES)})")
    p.add_argument("--repeat", type=int, default=3, help="base analyses per case; the best time is kept (default: 3)")
    p.add_argument("--trace-dir", type=Path, default=DEFAULT_TRACE_DIR)
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "toposched-bench-contention", help="where the replays are cached")
    p.add_argument("--json", action="store_true", help="print one JSON object per case")
    p.add_argument("--list", action="store_true", help="list the cases")
    p.add_argument("--analyse", type=Path, help=argparse.SUPPRESS)  # a subprocess' job
    p.add_argument("--replay", choices=sorted(CASES), help=argparse.SUPPRESS)  # a subprocess' job
    args = p.parse_args()
    if args.list:
        for name, (log, fabric, cpn) in CASES.items():
            print(f"{name:8} {log:36} {fabric:24} cores/node {cpn or 'from header'}")
        return 0
    if args.analyse:
        print(json.dumps(analyse(args.analyse, args.repeat)))
        return 0
    if args.replay:
        run_dir, replay_s = replay(args.replay, args.trace_dir, args.work)
        print(json.dumps({"run_dir": str(run_dir), "replay_s": replay_s}))
        return 0
    rows = []
    for case in args.case or DEFAULT_CASES:
        # The replay in its own process too: a child inherits its parent's peak RSS.
        out = subprocess.run(
            [sys.executable, __file__, "--replay", case, "--trace-dir", str(args.trace_dir), "--work", str(args.work)],
            check=True, capture_output=True, text=True,
        )
        made = json.loads(out.stdout.strip().splitlines()[-1])
        run_dir, replay_s = Path(made["run_dir"]), made["replay_s"]
        out = subprocess.run([sys.executable, __file__, "--analyse", str(run_dir), "--repeat", str(args.repeat)], check=True, capture_output=True, text=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row.update({"case": case, "trace": CASES[case][0], "fabric": CASES[case][1], "replay_s": replay_s})
        rows.append(row)
        if args.json:
            print(json.dumps(row))
    if not args.json:
        import numpy

        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"# {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, NumPy {numpy.__version__}, load average {load:.1f}")
        cols = [
            ("case", "case", "{}"), ("jobs", "jobs", "{:,}"), ("exposed", "exposed_jobs", "{:,}"), ("stretches", "leaf_stretches", "{:,}"),
            ("load s", "load_s", "{:.2f}"), ("pairs s", "pairs_s", "{:.2f}"), ("demand s", "leaf_demand_s", "{:.2f}"),
            ("levels s", "job_levels_s", "{:.2f}"), ("sweep s", "sweep_s", "{:.2f}"), ("analyse s", "analyse_s", "{:.2f}"),
            ("crossbar s", "crossbar_sweep_s", "{:.1f}"), ("cores s", "cores_sweep_s", "{:.1f}"), ("write s", "write_tables_s", "{:.2f}"),
            ("+figs+html s", "write_with_figures_report_s", "{:.1f}"), ("peak RSS MiB", "peak_rss_mib", "{:.0f}"), ("analysis alloc MiB", "analysis_peak_alloc_mib", "{:.0f}"),
        ]
        print("| " + " | ".join(c[0] for c in cols) + " |")
        print("|" + "|".join("---" for _ in cols) + "|")
        for r in rows:
            print("| " + " | ".join(fmt.format(r[key]) for _, key, fmt in cols) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

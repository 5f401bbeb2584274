"""The report build alone: `toposched demo`'s report rebuilt in a fresh process, best of N.

    python benches/bench_report.py [--repeat 5] [--dir DIR] [--profile FILE] [--baseline PYDIR] [--exit cli|plain]

Issue 17, point 4: the report build under 2 s. The script first runs `toposched demo
--no-report` once into DIR (default: a temporary folder; an existing compare folder in
DIR is reused), then --repeat times, each in its own process, `python -c` importing
`toposched.compare` and calling `build_report(DIR)`: what `toposched demo` spends after
its replays, interpreter start-up and every import included. After each build it hashes
report.html and every file in figures/; all builds must give the same bytes (the report
is deterministic), else the script says which files differ and exits 1. Prints one JSON
object (commit, machine, load averages, every wall time, the in-process build time) and
a one-line verdict against the 2 s target. Wall time is what the target is about; CPU
time (user + system of the build process and its children) is also given, being less
noisy on a shared machine. The child ends as the `toposched` program does
(`cli.console_main` freezes every object out of the garbage collector's reach before the
interpreter exits: its last collections would walk every module for 0.2-0.4 s); --exit
plain leaves that out (the interpreter's own teardown, as this script measured before).
The time from the end of the build to the child's exit is reported apart (exit_s).
--profile FILE also writes a cProfile of one more build (not timed). --baseline PYDIR times another tree's Python package (e.g. an older commit's
`python/` from `git archive`, with the same native extension copied in) alternately with
this one, each build in a fresh process, into a copy of DIR, and reports both.
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import shutil
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchinfo import commit

HERE = Path(__file__).resolve().parent
TARGET_S = 2.0

# In the child: time the build itself (imports of toposched.compare excluded) and print
# it with the clock time at its end; then exit as toposched's console_main does (cli) or
# plainly.
CHILD = """
import sys, time
t0 = time.perf_counter()
from toposched.compare import build_report
t1 = time.perf_counter()
build_report(sys.argv[1])
t2 = time.perf_counter()
print(f"{t1 - t0:.4f} {t2 - t1:.4f} {time.time():.6f}", flush=True)
if sys.argv[2] == "cli":
    import gc

    gc.freeze()
"""


def _hashes(out: Path) -> dict[str, str]:
    files = [out / "report.html", *sorted((out / "figures").iterdir())]
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _build(out: Path, pythonpath: str, exit_mode: str = "cli") -> tuple[float, float, float, float, float]:
    """(wall, cpu, import, build, exit) seconds of one report build in a fresh process."""
    env = dict(os.environ, PYTHONPATH=pythonpath)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", CHILD, str(out), exit_mode], check=True, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    ended = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    imp, build, built_at = (float(x) for x in res.stdout.split())
    return wall, cpu, imp, build, ended - built_at


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None, help="compare folder (made by `toposched demo --no-report` when absent)")
    ap.add_argument("--profile", default=None, metavar="FILE", help="also write a cProfile of one more build to FILE")
    ap.add_argument("--baseline", default=None, metavar="PYDIR", help="another tree's python/ directory, timed alternately")
    ap.add_argument("--exit", default="cli", choices=["cli", "plain"], help="end the child as toposched's console_main does (cli: gc.freeze first) or plainly")
    args = ap.parse_args(argv)
    ours_path = str(HERE.parent / "python")
    tmp = None
    if args.dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="bench_report_")
        out = Path(tmp.name) / "demo"
    else:
        out = Path(args.dir)
    if not (out / "compare.json").exists():
        subprocess.run([sys.executable, "-m", "toposched.cli", "demo", "--out", str(out), "--no-report", "--quiet"], check=True)
    base_out = None
    if args.baseline:
        base_out = out.with_name(out.name + "_baseline")
        shutil.rmtree(base_out, ignore_errors=True)
        shutil.copytree(out, base_out)
    load_before = os.getloadavg()
    walls, cpus, imports, builds, exits = [], [], [], [], []
    base_walls, base_cpus = [], []
    reference: dict[str, str] | None = None
    for _ in range(args.repeat):
        if base_out is not None:
            w, c, _i, _b, _e = _build(base_out, args.baseline, args.exit)
            base_walls.append(w)
            base_cpus.append(c)
        wall, cpu, imp, build, ex = _build(out, ours_path, args.exit)
        exits.append(ex)
        walls.append(wall)
        cpus.append(cpu)
        imports.append(imp)
        builds.append(build)
        h = _hashes(out)
        if reference is None:
            reference = h
        elif h != reference:
            diff = sorted(k for k in set(h) | set(reference) if h.get(k) != reference.get(k))
            print(f"error: the report is not deterministic: {', '.join(diff)} changed between builds", file=sys.stderr)
            return 1
    if args.profile:
        env = dict(os.environ, PYTHONPATH=ours_path)
        code = f"import cProfile, toposched.compare as c; cProfile.runctx('c.build_report(d)', globals(), {{'c': c, 'd': {str(out)!r}}}, {args.profile!r})"
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
    load_after = os.getloadavg()
    best = min(walls)
    doc = {
        "bench": "report_build",
        "commit": commit(),
        "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load_avg_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "repeat": args.repeat,
        "wall_best_s": round(best, 3),
        "wall_all_s": [round(x, 3) for x in walls],
        "cpu_best_s": round(min(cpus), 3),
        "cpu_all_s": [round(x, 3) for x in cpus],
        "import_compare_s": [round(x, 3) for x in imports],
        "build_report_s": [round(x, 3) for x in builds],
        "exit": args.exit,
        "exit_s": [round(x, 3) for x in exits],
        "files_hashed": len(reference or {}),
        "baseline": args.baseline,
        "baseline_wall_best_s": round(min(base_walls), 3) if base_walls else None,
        "baseline_wall_all_s": [round(x, 3) for x in base_walls],
        "baseline_cpu_best_s": round(min(base_cpus), 3) if base_cpus else None,
        "baseline_cpu_all_s": [round(x, 3) for x in base_cpus],
        "baseline_same_bytes": (_hashes(base_out) == reference) if base_out is not None else None,
        "deterministic": True,
        "target_s": TARGET_S,
        "target_met": best < TARGET_S,
    }
    print(json.dumps(doc))
    if base_walls:
        print(f"baseline {args.baseline}: best of {args.repeat} {min(base_walls):.2f} s wall, {min(base_cpus):.2f} s CPU")
    print(f"report build, fresh process, best of {args.repeat}: {best:.2f} s wall, {min(cpus):.2f} s CPU (target {TARGET_S:.0f} s: {'PASS' if best < TARGET_S else 'MISS'})")
    if tmp is not None:
        tmp.cleanup()
    if doc["baseline_same_bytes"] is False:
        print("error: the report's files differ from the baseline's", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Replay real job logs and time toposched: reading, the native loop, end to end, memory.

Not a test (pytest never collects it: it is outside ``testpaths`` and not named test_*).

    python benches/bench.py                     # all default cases, one subprocess each
    python benches/bench.py --case curie-easy-linear
    python benches/bench.py --repeat 5 --json   # JSON lines, one per case
    python benches/bench.py --quick             # smoke run: first 2,000 jobs of each log
    python benches/bench.py --list

Each case runs in a fresh ``python benches/bench.py --case NAME --json`` subprocess, so its
peak RSS (``ru_maxrss``) is its own. See benches/README.md for what each number means.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# ../shared/data/traces beside the repository (where CI keeps the shared data), unless set
DEFAULT_TRACE_DIR = Path(os.environ.get("TOPOSCHED_TRACES", Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"))
QUICK_JOBS = 2_000


@dataclass(frozen=True)
class Target:
    """A goal on one measured quantity: ``loop_jobs_per_s`` >= value or ``e2e_s`` < value."""

    metric: str  # "loop_jobs_per_s" or "e2e_s"
    value: float

    def text(self) -> str:
        if self.metric == "loop_jobs_per_s":
            return f"loop >= {self.value:,.0f} jobs/s"
        return f"end to end < {self.value:g} s"

    def met(self, row: dict) -> bool:
        if self.metric == "loop_jobs_per_s":
            return row["loop_jobs_per_s"] >= self.value
        return row["e2e_s"] < self.value


@dataclass(frozen=True)
class Case:
    name: str
    trace: str
    fabric: str
    queue: str
    alloc: str
    target: Target | None = None


_KTH = ("KTH-SP2-1996-2.1-cln.swf.gz", "fattree:K=20,S=5,P=1")
_THUNDER = ("LLNL-Thunder-2007-1.1-cln.swf.gz", "cab")
_CURIE = ("CEA-Curie-2011-2.1-cln.swf.gz", "fattree:K=18,S=18,P=18")
_ATLAS = ("LLNL-Atlas-2006-2.1-cln.swf.gz", "cab")
# logs on a fabric smaller than their machine: tens of thousands queued at once (issue 17,
# "EASY on a long queue" in BENCHMARKS.md)
_CURIE_ON_CAB = ("CEA-Curie-2011-2.1-cln.swf.gz", "cab")
_RICC_ON_CAB = ("RICC-2010-2.swf.gz", "cab")

CASES: tuple[Case, ...] = (
    Case("kth-fcfs-linear", *_KTH, "fcfs", "linear"),
    Case("kth-easy-linear", *_KTH, "easy", "linear", Target("loop_jobs_per_s", 1_500_000)),
    Case("kth-easy-isolated", *_KTH, "easy", "isolated"),
    Case("thunder-fcfs-linear", *_THUNDER, "fcfs", "linear"),
    Case("thunder-easy-linear", *_THUNDER, "easy", "linear"),
    # issue 2: "EASY+isolated at least 300,000 jobs/s on Thunder placed on cab"
    Case("thunder-easy-isolated", *_THUNDER, "easy", "isolated", Target("loop_jobs_per_s", 300_000)),
    # issue 17: "conservative backfilling on Thunder on cab under 1 s loop"
    Case("thunder-conservative-linear", *_THUNDER, "conservative", "linear", Target("loop_jobs_per_s", 118_791)),
    Case("curie-fcfs-linear", *_CURIE, "fcfs", "linear"),
    Case("curie-easy-linear", *_CURIE, "easy", "linear", Target("e2e_s", 3.0)),
    Case("curie-easy-isolated", *_CURIE, "easy", "isolated"),
    Case("atlas-easy-linear", *_ATLAS, "easy", "linear"),
    Case("atlas-easy-isolated", *_ATLAS, "easy", "isolated"),
    Case("curie-on-cab-easy-linear", *_CURIE_ON_CAB, "easy", "linear", Target("e2e_s", 5.0)),
    Case("curie-on-cab-easy-isolated", *_CURIE_ON_CAB, "easy", "isolated"),
    Case("ricc-on-cab-easy-linear", *_RICC_ON_CAB, "easy", "linear", Target("e2e_s", 5.0)),
    Case("ricc-on-cab-easy-isolated", *_RICC_ON_CAB, "easy", "isolated"),
)
# Issue 17 ("speed at scale"): the topology-aware policies on Curie's 5,832 nodes
# (BENCHMARKS.md, "Topology-aware policies at Curie scale"). Minutes each before that
# work, so run by name only: --case curie-easy-jigsaw.
SLOW_CASES: tuple[Case, ...] = (
    Case("curie-easy-jigsaw", *_CURIE, "easy", "jigsaw"),
    Case("curie-easy-least-interference", *_CURIE, "easy", "least-interference"),
    Case("curie-easy-adaptive", *_CURIE, "easy", "adaptive"),
)
CASE_BY_NAME = {c.name: c for c in CASES + SLOW_CASES}


def _core_digest(core_module) -> str | None:
    """sha256 (first 16 hex digits) of the native extension measured, to tell builds apart."""
    import hashlib

    try:
        return hashlib.sha256(Path(core_module.__file__).read_bytes()).hexdigest()[:16]
    except (OSError, AttributeError, TypeError):
        return None


def _busy_note(rows: list[dict]) -> str | None:
    """A warning when other work was running: the 1-minute load average counts this
    benchmark as about 1, so more than that on top means shared CPUs."""
    loads = [max(r.get("loadavg_1min_before", 0), r.get("loadavg_1min_after", 0)) for r in rows if "error" not in r]
    cpus = os.cpu_count() or 1
    if loads and max(loads) > 1.5:
        return f"warning: the 1-minute load average reached {max(loads):.1f} on {cpus} CPUs during the run; other processes shared the CPUs, so times are pessimistic"
    return None


def _maxrss_mib() -> float:
    # Linux reports ru_maxrss in KiB (macOS in bytes).
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / (1024 * 1024) if sys.platform == "darwin" else r / 1024


class _EngineTimer:
    """Stands in for ``_core.Simulation`` while ``simulate()`` runs and times, with
    ``time.perf_counter``, exactly the native calls: construction, every ``step()`` and
    ``results()``. Everything else is handed to the real object, so the bench replays with
    whatever arguments ``simulate()`` passes today."""

    real: type | None = None
    last: "_EngineTimer | None" = None

    def __init__(self, *args, **kwargs):
        t0 = time.perf_counter()
        self._sim = _EngineTimer.real(*args, **kwargs)
        self.construct_s = time.perf_counter() - t0
        self.step_s = 0.0
        self.results_s = 0.0
        _EngineTimer.last = self

    def step(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self._sim.step(*args, **kwargs)
        finally:
            self.step_s += time.perf_counter() - t0

    def results(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self._sim.results(*args, **kwargs)
        finally:
            self.results_s += time.perf_counter() - t0

    def __getattr__(self, name):
        return getattr(self._sim, name)


def run_case(case: Case, repeat: int, quick: bool, trace_dir: Path, cli: bool) -> dict:
    """Measure one case in this process: ``repeat`` full replays, each split into phases.
    Every reported time is the best of the ``repeat`` runs."""
    import numpy as np

    from toposched import _core
    from toposched.simulate import RunConfig, simulate
    from toposched.topology import load_fabric
    from toposched.workload import read_trace

    _EngineTimer.real = _core.Simulation
    _core.Simulation = _EngineTimer  # simulate() looks it up on the module at call time

    rss_after_imports = _maxrss_mib()
    load_before = os.getloadavg()[0]
    path = trace_dir / case.trace
    config = RunConfig(queue=case.queue, alloc=case.alloc)

    # One run = what `toposched simulate` does minus interpreter start-up, imports and the
    # terminal summary: read the log and build the fabric, simulate(), write the outputs.
    runs = []
    rss_one_run = None
    rss_after_read = None
    for _ in range(repeat):
        tmp = tempfile.mkdtemp(prefix="toposched-bench-")
        try:
            t0 = time.perf_counter()
            w = read_trace(path)
            t1 = time.perf_counter()
            fabric = load_fabric(case.fabric)
            if quick:
                w = w.take(np.arange(min(QUICK_JOBS, len(w))))
            t2 = time.perf_counter()
            if rss_after_read is None:
                rss_after_read = _maxrss_mib()
            _EngineTimer.last = None
            result = simulate(w, fabric, config)
            t3 = time.perf_counter()
            result.write(tmp)
            t4 = time.perf_counter()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        eng = _EngineTimer.last
        if eng is None:
            raise RuntimeError("simulate() did not construct _core.Simulation; the bench cannot time the loop")
        loop = eng.construct_s + eng.step_s
        runs.append(
            {
                "read_trace_s": t1 - t0,
                "read_s": t2 - t0,
                "construct_s": eng.construct_s,
                "loop_s": loop,
                "results_s": eng.results_s,
                "collect_s": (t3 - t2) - loop,
                "simulate_s": t3 - t2,
                "write_s": t4 - t3,
                "e2e_s": t4 - t0,
            }
        )
        passes = int(eng.passes)
        skipped = len(result.skipped)
        n = len(w)
        if rss_one_run is None:
            rss_one_run = _maxrss_mib()
        del result, w, fabric, eng
        _EngineTimer.last = None

    # Optionally the real command, in its own process (start-up and imports included).
    cli_s = None
    if cli and not quick:
        exe = shutil.which("toposched")
        cmd = [exe] if exe else [sys.executable, "-m", "toposched.cli"]
        best = None
        for _ in range(repeat):
            tmp = tempfile.mkdtemp(prefix="toposched-bench-cli-")
            try:
                t0 = time.perf_counter()
                subprocess.run(
                    cmd + ["simulate", "--trace", str(path), "--system", case.fabric, "--queue", case.queue, "--alloc", case.alloc, "--out", tmp, "--quiet"],
                    check=True,
                )
                dt = time.perf_counter() - t0
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            best = dt if best is None else min(best, dt)
        cli_s = best

    best = {k: min(r[k] for r in runs) for k in runs[0]}
    loop_s = best["loop_s"]
    rate = n / loop_s if loop_s > 0 else float("inf")
    row = {
        "case": case.name,
        "trace": case.trace,
        "fabric": case.fabric,
        "queue": case.queue,
        "alloc": case.alloc,
        "quick": quick,
        "repeat": repeat,
        "jobs": n,
        "skipped_never_fit": skipped,
        "scheduling_passes": passes,
        **best,
        "loop_jobs_per_s": rate,
        "loop_all_s": [r["loop_s"] for r in runs],
        "e2e_all_s": [r["e2e_s"] for r in runs],
        "e2e_first_s": runs[0]["e2e_s"],
        "runs": runs,
        "cli_s": cli_s,
        "maxrss_mib": _maxrss_mib(),
        "maxrss_one_run_mib": rss_one_run,
        "rss_after_imports_mib": rss_after_imports,
        "rss_after_read_mib": rss_after_read,
        "target": case.target.text() if case.target else None,
        "target_met": None if quick or not case.target else case.target.met({"loop_jobs_per_s": rate, "e2e_s": best["e2e_s"]}),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_1min_before": load_before,
        "loadavg_1min_after": os.getloadavg()[0],
        "core_sha256": _core_digest(_core),
    }
    return row


def _fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def print_table(rows: list[dict], out=sys.stdout) -> None:
    head = ["case", "trace", "fabric", "policy", "jobs", "read s", "loop s", "loop jobs/s", "e2e s", "cli s", "peak MiB 1 run", "peak MiB case", "target", "result"]
    body = []
    for r in rows:
        if "error" in r:
            body.append([r["case"]] + [""] * 12 + ["ERROR: " + r["error"][:60]])
            continue
        tgt = r.get("target") or ""
        res = "" if r.get("target_met") is None else ("PASS" if r["target_met"] else "MISS")
        if r.get("quick") and tgt:
            res = "n/a (quick)"
        body.append(
            [
                r["case"],
                r["trace"].replace("-cln.swf.gz", ""),
                r["fabric"],
                f"{r['queue']}+{r['alloc']}",
                f"{r['jobs']:,}",
                f"{r['read_s']:.3f}",
                f"{r['loop_s']:.3f}",
                _fmt_rate(r["loop_jobs_per_s"]),
                f"{r['e2e_s']:.3f}",
                "" if r.get("cli_s") is None else f"{r['cli_s']:.2f}",
                f"{r['maxrss_one_run_mib']:.0f}",
                f"{r['maxrss_mib']:.0f}",
                tgt,
                res,
            ]
        )
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    right = {4, 5, 6, 7, 8, 9, 10, 11}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    print(line(head), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for b in body:
        print(line(b), file=out)


def drive(names: list[str], args: argparse.Namespace) -> int:
    rows = []
    for name in names:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--case", name, "--json", "--repeat", str(args.repeat), "--trace-dir", str(args.trace_dir)]
        if args.quick:
            cmd.append("--quick")
        if args.cli:
            cmd.append("--cli")
        if not args.json:
            print(f"running {name} ...", file=sys.stderr, flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        row = None
        for ln in reversed(p.stdout.splitlines()):
            if ln.startswith("{"):
                row = json.loads(ln)
                break
        if p.returncode != 0 or row is None:
            row = {"case": name, "error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
        rows.append(row)
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            r = row
            if "error" in r:
                print(f"  {name}: ERROR {r['error']}", file=sys.stderr)
            else:
                verdict = "" if r["target_met"] is None else f"  [{r['target']}: {'PASS' if r['target_met'] else 'MISS'}]"
                print(
                    f"  {r['jobs']:,} jobs  read {r['read_s']:.3f} s  loop {r['loop_s']:.3f} s ({_fmt_rate(r['loop_jobs_per_s'])} jobs/s)"
                    f"  e2e {r['e2e_s']:.3f} s  peak {r['maxrss_one_run_mib']:.0f} MiB{verdict}",
                    file=sys.stderr,
                    flush=True,
                )
    if not args.json:
        sys.stderr.flush()
        print()
        print_table(rows)
        note = _busy_note(rows)
        if note:
            print("\n" + note)
        digests = {r.get("core_sha256") for r in rows if "error" not in r}
        if len(digests) > 1:
            print("warning: the native extension changed during the run (several builds measured): " + ", ".join(sorted(map(str, digests))))
        judged = [r for r in rows if r.get("target_met") is not None]
        if judged:
            ok = sum(bool(r["target_met"]) for r in judged)
            print(f"\ntargets: {ok} of {len(judged)} met" + ("" if ok == len(judged) else " (" + ", ".join(r["case"] for r in judged if not r["target_met"]) + " missed)"))
        sys.stdout.flush()
    failed = any("error" in r for r in rows)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Benchmark toposched on real job logs (see benches/README.md).")
    p.add_argument("--case", action="append", metavar="NAME", help="run only this case (repeatable); see --list")
    p.add_argument("--repeat", type=int, default=3, help="repeats per measurement; the best is reported (default: 3)")
    p.add_argument("--json", action="store_true", help="print one JSON object per case instead of the table")
    p.add_argument("--quick", action="store_true", help=f"smoke run: replay only the first {QUICK_JOBS:,} jobs of each log")
    p.add_argument("--cli", action="store_true", help="also time the real `toposched simulate` command (own process)")
    p.add_argument("--trace-dir", type=Path, default=DEFAULT_TRACE_DIR, help=f"where the logs are (default: {DEFAULT_TRACE_DIR}; env TOPOSCHED_TRACES)")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if args.list:
        for c in CASES + SLOW_CASES:
            slow = "  (by name only: --case)" if c in SLOW_CASES else ""
            print(f"{c.name:24s} {c.trace:36s} {c.fabric:24s} {c.queue}+{c.alloc}" + (f"  target: {c.target.text()}" if c.target else "") + slow)
        return 0
    names = args.case or [c.name for c in CASES]
    unknown = [n for n in names if n not in CASE_BY_NAME]
    if unknown:
        p.error(f"unknown case(s) {', '.join(unknown)}; see --list")
    # One case with --json: measure here (this is what the driver's subprocesses run).
    if len(names) == 1 and args.json and args.case:
        row = run_case(CASE_BY_NAME[names[0]], args.repeat, args.quick, args.trace_dir, args.cli)
        print(json.dumps(row), flush=True)
        return 0
    return drive(names, args)


if __name__ == "__main__":
    sys.exit(main())

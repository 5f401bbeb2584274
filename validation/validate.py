"""Whole-log validation: every shared SWF log replayed whole under FCFS, EASY (both event
orders) and conservative backfilling, start times compared job by job with refsim, an
independent reference scheduler (validation/refsim: no code shared with the engine).

Run by `.ci/run` after the README's test command; it needs the shared data folder
(`../shared/data/traces` beside the repository, or `--traces DIR`). A user's clone without
it skips this step; the test suite itself never reads it.

Each log is read as docs/workloads.md says, with nodes = processors (`cores_per_node` 1),
on a one-leaf fabric of the header's `MaxProcs` nodes (or, for a log without a header,
the largest job's size). Jobs are killed at their requested time. Exit status 1 when any
job starts at a different time than the reference.

    python validation/validate.py [--traces DIR] [--only NAME] [--cases easy,fcfs,...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REFSIM = HERE / "refsim"

#: (queue, event order) run on every log; conservative runs on CONSERVATIVE_LOGS only.
CASES = [("fcfs", "per-instant"), ("easy", "per-instant"), ("easy", "per-event")]
CONSERVATIVE_LOGS = ("KTH-SP2", "SDSC-SP2", "CTC-SP2", "HPC2N-2002")


def build_refsim() -> Path:
    # its own target directory, whatever CARGO_TARGET_DIR says: the binary is looked for there
    subprocess.run(["cargo", "build", "--release", "--quiet", "--manifest-path", str(REFSIM / "Cargo.toml"), "--target-dir", str(REFSIM / "target")], check=True)
    return REFSIM / "target" / "release" / "refsim"


def machine_size(w) -> int:
    procs = str(w.header.get("MaxProcs", "")).split()
    if procs and procs[0].isdigit() and int(procs[0]) > 0:
        return int(procs[0])
    return int(w["nodes"].max())


def reference_starts(refsim: Path, w, total: int, queue: str, order: str) -> np.ndarray:
    cols = np.stack([w["submit_s"], w["nodes"], w["walltime_s"], w["runtime_s"]], axis=1)
    text = f"{total}\n" + "\n".join(" ".join(map(str, row)) for row in cols.tolist()) + "\n"
    args = [str(refsim), queue] + (["--per-event"] if order == "per-event" else [])
    out = subprocess.run(args, input=text, capture_output=True, text=True, check=True).stdout
    return np.array(out.split(), dtype=np.int64)


def engine_starts(w, total: int, queue: str, order: str) -> np.ndarray:
    from toposched.simulate import RunConfig, simulate
    from toposched.topology import load_fabric

    fabric = load_fabric(f"fattree:K={total},S=1,P=1")
    r = simulate(w, fabric, RunConfig(queue=queue, alloc="linear", event_order=order, kill_at_walltime=True))
    starts = np.full(len(w), -1, dtype=np.int64)
    row_of = {int(j): i for i, j in enumerate(w["job_id"])}
    assert len(row_of) == len(w), "job ids must be unique to compare job by job"
    for j, s in zip(r.jobs.column("job_id").to_numpy(), r.jobs.column("start_s").to_numpy()):
        starts[row_of[int(j)]] = s
    return starts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--traces", type=Path, default=HERE.parent.parent / "shared" / "data" / "traces")
    p.add_argument("--only", action="append", default=[], metavar="NAME", help="only logs whose file name contains NAME")
    p.add_argument("--cases", default=None, help="comma-separated queue[/order] cases, e.g. easy/per-event,conservative")
    a = p.parse_args(argv)
    if not a.traces.is_dir():
        print(f"validation skipped: no shared traces at {a.traces} (give --traces DIR)")
        return 0
    from toposched.workload import read_trace

    refsim = build_refsim()
    logs = sorted(x for x in a.traces.iterdir() if ".swf" in x.name and not x.name.endswith(".machines"))
    if a.only:
        logs = [x for x in logs if any(o in x.name for o in a.only)]
    failures = 0
    print(f"{'log':34} {'jobs':>8} {'case':24} {'differ':>7} {'engine s':>9} {'ref s':>7}")
    for log in logs:
        w = read_trace(log, cores_per_node=1)
        total = machine_size(w)
        cases = list(CASES)
        if any(c in log.name for c in CONSERVATIVE_LOGS):
            cases.append(("conservative", "per-instant"))
        if a.cases:
            wanted = [c.split("/") for c in a.cases.split(",")]
            cases = [c for c in cases if any(c[0] == x[0] and (len(x) == 1 or c[1] == x[1]) for x in wanted)]
        for queue, order in cases:
            t0 = time.perf_counter()
            got = engine_starts(w, total, queue, order)
            t1 = time.perf_counter()
            want = reference_starts(refsim, w, total, queue, order)
            t2 = time.perf_counter()
            bad = np.flatnonzero(got != want)
            failures += len(bad)
            print(f"{log.name:34} {len(w):>8,} {queue + '/' + order:24} {len(bad):>7,} {t1 - t0:>9.2f} {t2 - t1:>7.2f}", flush=True)
            for i in bad[:3]:
                print(f"    job {int(w['job_id'][i])} (row {i}, {int(w['nodes'][i])} nodes): engine {got[i]}, reference {want[i]}")
    print(f"{failures} jobs differ" if failures else "validation: every job starts when the independent reference starts it")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""A classic EASY backfilling replay in plain Python, reading the SWF log itself: the
reference that `bench_whole_process.py` times beside `toposched simulate`.

    python benches/reference_easy_swf.py LOG.swf[.gz] NODES [--out starts.txt]

Reads the log (gzip or plain) with the standard library, keeps what toposched's SWF
reader keeps by default (size = allocated processors, else requested; requested time
missing -> the run time; run time missing -> job dropped; jobs larger than the machine
never run), one processor per node, and schedules with tests/reference_easy.py (written
from docs/semantics.md, not from the Rust code). Prints the job count and the time it
took; --out writes every start time, one per line, so the schedule can be compared.
"""

from __future__ import annotations

import gzip
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from reference_easy import reference_schedule  # noqa: E402


def read_swf(path: str) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    opener = gzip.open if path.endswith(".gz") else open
    ids, submit, size, walltime, runtime = [], [], [], [], []
    with opener(path, "rt") as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith(";"):
                continue
            run = int(float(fields[3]))
            procs = int(float(fields[4]))
            if procs <= 0:
                procs = int(float(fields[7]))
            if run < 0 or procs <= 0:
                continue  # no run time or no size: not replayable
            req = int(float(fields[8]))
            ids.append(int(fields[0]))
            submit.append(int(float(fields[1])))
            size.append(procs)
            walltime.append(req if req > 0 else run)
            runtime.append(run)
    order = sorted(range(len(ids)), key=lambda i: submit[i])  # submit order, stable
    pick = lambda xs: [xs[i] for i in order]  # noqa: E731
    return pick(ids), pick(submit), pick(size), pick(walltime), pick(runtime)


def main() -> int:
    t0 = time.perf_counter()
    log, nodes = sys.argv[1], int(sys.argv[2])
    ids, submit, size, walltime, runtime = read_swf(log)
    start = reference_schedule(submit, size, walltime, runtime, nodes)
    if "--out" in sys.argv:
        Path(sys.argv[sys.argv.index("--out") + 1]).write_text("".join(f"{i} {s}\n" for i, s in zip(ids, start)))
    print(f"{len(ids)} jobs in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

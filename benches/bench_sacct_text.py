"""Reading a `sacct -P --format=ALL` dump whose free-text fields hold '|'.

    python benches/bench_sacct_text.py [--copies 2000] [--repeat 3]

A record with more '|'-separated pieces than the header has columns (a `SubmitLine` such
as `--wrap=env | grep SLURM | sed ...`) is split by the dynamic programme of
`toposched.workload.sacct_records.split_positions`. The log is the bundled real dump
`tests/data/slurm/ubccr_ub-hpc_sacct-P-all_dump2110.log` (its jobs' submit lines hold
pipes) repeated `--copies` times with new job ids; prints the records, the best time of
`--repeat` reads and the time per record, as one JSON object with the commit and machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from benchinfo import commit

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "tests" / "data" / "slurm" / "ubccr_ub-hpc_sacct-P-all_dump2110.log"
JOB_ID = "7957382"  # the sample's one job id (its steps carry it too)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from toposched.workload import read_trace

    header, *records = SAMPLE.read_text().splitlines()
    lines = [header] + [r.replace(JOB_ID, str(8_000_000 + k)) for k in range(args.copies) for r in records]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sacct-all.log"
        path.write_text("\n".join(lines) + "\n")
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            w = read_trace(str(path), lenient=True)
            times.append(time.perf_counter() - t0)
    best = min(times)
    print(
        json.dumps(
            {
                "case": "sacct --format=ALL, pipes in SubmitLine",
                "commit": commit(),
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
                "loadavg_1min": round(os.getloadavg()[0], 2),
                "records": len(lines) - 1,
                "jobs": len(w),
                "best_s": round(best, 3),
                "all_s": [round(t, 3) for t in times],
                "us_per_record": round(1e6 * best / (len(lines) - 1), 1),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

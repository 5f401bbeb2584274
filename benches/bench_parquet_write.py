"""Writing jobs.parquet and utilization.parquet: the native writer (toposched.parquet_out,
crates/toposched-io/src/parquet.rs) against pyarrow's with the options the package gave
it before (kept here), on one replay's result.

    python benches/bench_parquet_write.py [--repeat 5] [--trace-dir DIR]

HPC2N (202,871 jobs, 1.8 M utilization samples), EASY + linear on `fattree:K=16,S=15,P=1`,
as benches/bench_whole_process.py. Each file is written on its own (the command writes
jobs.parquet on a second thread beside the others), best of --repeat, after one warm-up
write of each. Prints one JSON object (commit, machine, load averages, times).
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
from typing import Any, Callable

from benchinfo import DEFAULT_TRACE_DIR, commit

TRACE = "HPC2N-2002-2.2-cln.swf.gz"
SYSTEM = "fattree:K=16,S=15,P=1"

#: What results.py passed pyarrow before the native writer.
JOBS_OPTIONS: dict[str, Any] = {
    "use_dictionary": ["nodes", "killed", "alloc_class", "leaves", "pods"],
    "column_encoding": {"node_ranges.list.element.first": "DELTA_BINARY_PACKED", "node_ranges.list.element.count": "DELTA_BINARY_PACKED"},
}
UTILIZATION_OPTIONS: dict[str, Any] = {"use_dictionary": ["busy_nodes", "utilization"], "column_encoding": {"time_s": "DELTA_BINARY_PACKED"}}


def _best(repeat: int, work: Callable[[], object]) -> tuple[float, list[float]]:
    work()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return min(times), times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--trace-dir", default=str(DEFAULT_TRACE_DIR))
    args = ap.parse_args(argv)
    trace = Path(args.trace_dir) / TRACE
    if not trace.exists():
        print(f"error: {trace}: not found (--trace-dir or TOPOSCHED_TRACES)", file=sys.stderr)
        return 2

    import pyarrow.parquet as pq

    from toposched.results import JOBS_ROW_GROUP, _write_utilization
    from toposched.simulate import RunConfig, simulate
    from toposched.topology import load_fabric
    from toposched.utilization import CHUNK_SAMPLES, SCHEMA
    from toposched.workload import read_trace

    result = simulate(read_trace(trace), load_fabric(SYSTEM), RunConfig(queue="easy", alloc="linear"))
    run_id = result.run_id().encode()
    meta = {b"toposched.run_id": run_id}
    jobs = result.jobs.replace_schema_metadata(meta)
    series = result.utilization_series
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)

        def pyarrow_utilization() -> None:
            with pq.ParquetWriter(d / "u-pa.parquet", SCHEMA.with_metadata(meta), **UTILIZATION_OPTIONS) as w:
                for chunk in series.chunks():
                    w.write_table(chunk.replace_schema_metadata(meta), row_group_size=CHUNK_SAMPLES)

        rows = {
            "jobs_pyarrow_s": _best(args.repeat, lambda: pq.write_table(jobs, d / "j-pa.parquet", row_group_size=JOBS_ROW_GROUP, **JOBS_OPTIONS)),
            # as SimResult.write writes it: from the replay's arrays (no Arrow table)
            "jobs_native_s": _best(args.repeat, lambda: result.finished.write(str(d / "j-rs.parquet"), run_id)),
            "utilization_pyarrow_s": _best(args.repeat, pyarrow_utilization),
            "utilization_native_s": _best(args.repeat, lambda: _write_utilization(series, str(d / "u-rs.parquet"), run_id)),
        }
        sizes = {f"{n}_bytes": (d / f"{n}.parquet").stat().st_size for n in ("j-pa", "j-rs", "u-pa", "u-rs")}
        same = pq.read_table(d / "j-rs.parquet").equals(pq.read_table(d / "j-pa.parquet"), check_metadata=True) and pq.read_table(d / "u-rs.parquet").equals(
            pq.read_table(d / "u-pa.parquet"), check_metadata=True
        )
    row: dict[str, Any] = {
        "case": "hpc2n easy+linear: writing jobs.parquet and utilization.parquet",
        "commit": commit(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "loadavg_1min_before": round(load_before[0], 2),
        "loadavg_1min_after": round(os.getloadavg()[0], 2),
        "jobs": len(jobs),
        "samples": series.n_samples,
        "repeat": args.repeat,
        "read_back_equal": same,
        **{k: round(v[0], 4) for k, v in rows.items()},
        **{k.replace("_s", "_all_s"): [round(x, 4) for x in v[1]] for k, v in rows.items()},
        **sizes,
    }
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`toposched core-replay`: replay a log at core level with the node agent's best-radius rule."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ._args import positive_int

NAME = "core-replay"
HELP = "replay a log with jobs sharing nodes at core level (best radius on an hwloc node)"
DESCRIPTION = """\
Replay a job log whose jobs ask for processors (RICC, Curie, KTH...) on NODES identical
nodes of an hwloc topology: each job of at most one node's cores gets cores on one node
by the node agent's best-radius rule (the best host score over all nodes), larger jobs
take whole free nodes. Reports wait times, the radius and NUMA domains jobs got, the
time-weighted core-level fragmentation and, with --wait, how often a job waited for a
good placement (docs/node-agent.md)."""
EPILOG = """\
example:
  toposched core-replay --trace CEA-Curie-2011-2.1-cln.swf.gz --node-topology tests/data/hwloc/llnl-cab1234_node_hwloc.xml \\
      --nodes 32 --queue first-fit --wait --max-jobs 3000 --out out/curie-cores"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..workload import FORMATS

    parser.add_argument("--trace", required=True, metavar="LOG", help="job log (SWF, sacct, PBS); .gz read as is")
    parser.add_argument("--format", choices=FORMATS, help="log format (default: guessed from the file; needed for a log read from a pipe)")
    parser.add_argument("--lenient", action="store_true", help="skip and count malformed log records instead of stopping")
    parser.add_argument("--allow-long-span", action="store_true", help="accept logs spanning more than 50 years, and run times as long (docs/reliability.md)")
    parser.add_argument("--node-topology", required=True, metavar="FILE|live", help="hwloc XML of one node, or 'live'")
    parser.add_argument("--nodes", required=True, type=positive_int, help="number of identical nodes")
    parser.add_argument("--queue", default="fcfs", choices=["fcfs", "first-fit"], help="queue order (default: fcfs)")
    parser.add_argument("--wait", action="store_true", help="jobs wait for a good placement (the requirement's WAIT)")
    parser.add_argument("--max-jobs", type=positive_int, metavar="N", help="replay only the first N jobs")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (jobs.parquet, summary.json)")


def run(args: argparse.Namespace) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..files import write_atomic, write_text_atomic
    from ..node.hwloc import load_topology
    from ..node.replay import core_replay
    from ..workload import read_trace

    topology = load_topology(args.node_topology, flag="--node-topology")
    workload = read_trace(args.trace, args.format, lenient=args.lenient, allow_long_span=args.allow_long_span)
    result = core_replay(workload, topology, args.nodes, wait=args.wait, queue=args.queue, max_jobs=args.max_jobs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = pa.table({k: pa.array(v) for k, v in result.jobs.items()})
    write_atomic(out / "jobs.parquet", lambda p: pq.write_table(table, p))
    summary = {"input": workload.describe(), **result.summary}
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    s = result.summary
    print(f"{s['jobs']} jobs on {s['nodes']} nodes x {s['cores_per_node']} cores ({s['queue']}"
          f"{', wait for good placement' if s['wait_for_good_placement'] else ''}); "
          f"{s['skipped_larger_than_machine']} larger than the machine skipped")
    from ..units import fmt_count, fmt_duration

    # times in a unit a person reads (12.1 days, not 1042685 s), the radii as words, not
    # a dict's repr ({'l3': 376, ...}); summary.json keeps seconds and the mapping
    radii = ", ".join(f"{radius} {fmt_count(n)}" for radius, n in s["radius_counts"].items()) or "-"
    print(f"mean wait {fmt_duration(s['wait_s']['mean'])}, makespan {fmt_duration(s['makespan_s'])}; jobs by radius: {radii}; "
          "mean NUMA domains (one-node jobs) " + (f"{s['mean_numa_domains_one_node']:.2f}" if s["mean_numa_domains_one_node"] is not None else "- (no one-node job)"))
    print(f"jobs that waited for a good placement: {s['jobs_waited_for_good_placement']} "
          f"({100 * s['fraction_waited_for_good_placement']:.1f}%); core fragmentation {s['core_fragmentation_time_weighted']:.3f}")
    print(f"written: {out / 'jobs.parquet'}, {out / 'summary.json'}", file=sys.stderr)
    return 0

"""`toposched frontier`: every allocation policy and knob setting on one workload, what
each costs in utilization and removes in predicted interference, and the Pareto front."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._args import add_matrix_output_arguments, add_run_options, add_workload_arguments, executor_error, run_options

NAME = "frontier"
HELP = "policies x knobs: utilization lost against interference removed, with the Pareto front (report)"
DESCRIPTION = """\
Replay one job log on one fabric under a grid of allocation policies and knob settings,
each twice: without the network model (what the placement constraints cost: busy
utilization and wait, as the SC18 paper measured them) and with it (what sharing costs:
node-seconds lost to predicted slowdown, useful utilization). Prints each point against
the baseline (linear), marks the Pareto front of utilization lost vs interference, and
says which points meet the target of docs/frontier.md. Writes frontier.json, frontier.csv,
frontier.html and one simulate-style directory per run."""

EPILOG = """\
examples:
  toposched frontier --trace examples/data/LLNL-Atlas-2006-2.1-cln.swf.gz --system cab --transform scale:2 --out out/frontier
  toposched frontier --trace LLNL-Thunder-2007-1.1-cln.swf.gz --system cab --transform scale:2 \\
      --network heavy --policies linear isolated slurm-tree capped:leaf_cap=1+2+4+8,pod_cap=1+2 --out out/thunder-frontier

--policies items: NAME, or NAME:OPTION=V1+V2+...,OPTION2=... (every combination of the listed
values; options are the policy's, as `toposched simulate --help` lists them).
Default grid: linear, random, slurm-tree, isolated, capped:leaf_cap=2+4,pod_cap=1+2 and jigsaw
(those this build registers). See docs/frontier.md.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..registry import queue_names

    add_workload_arguments(parser)
    g = parser.add_argument_group("the grid")
    g.add_argument("--policies", nargs="+", metavar="P", default=None, help="allocation policies and knob values: NAME or NAME:OPTION=V1+V2,... (default: the grid below)")
    g.add_argument("--baseline", default="linear", metavar="NAME", help="the policy every point is measured against (default: linear)")
    g.add_argument("--queue", default="easy", choices=queue_names(), help="queue policy of every run (default: easy)")
    add_run_options(parser, seed_help="seed of the random policy and of the network model's draws (default: 0)")
    add_matrix_output_arguments(parser, "frontier.html")


def run(args: argparse.Namespace) -> int:
    from ..startup import keep_pandas_unloaded

    keep_pandas_unloaded()
    from rich.console import Console

    from ..frontier import expand_grid, default_grid, run_frontier
    from ..progress import Progress, setup_logging
    from ..reporting.frontier import build_frontier_report, frontier_table

    problem = executor_error(args.scheduler, args.scheduler_file, args.jobs, "--jobs")
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    setup_logging(quiet=args.quiet)
    console = Console(quiet=args.quiet)
    policies = args.policies if args.policies is not None else default_grid()
    allocs = sorted({p.alloc for p in expand_grid(policies)} | {args.baseline})
    options = run_options(args, queues=[args.queue], allocs=allocs, alloc_flag="--policies")
    network = options.pop("network", None) or "bins"
    try:
        with Progress("frontier", total=None, unit="runs", console=console, quiet=args.quiet, interval_s=0.0, defer_start=True) as bar:
            result = run_frontier(
                args.trace,
                args.system,
                args.out,
                policies=policies,
                baseline=args.baseline,
                queue=args.queue,
                network=network,
                transforms=args.transform,
                jobs=args.jobs,
                dask=args.dask,
                scheduler=args.scheduler,
                scheduler_file=args.scheduler_file,
                format=args.format,
                lenient=args.lenient,
                run_options=options,
                progress=lambda done, total, name: bar.update(done, total, f"last: {name}" if name else ""),
            )
    except KeyboardInterrupt:
        print("interrupted: finished runs are kept in " + str(Path(args.out) / "runs") + " (start the same command again to resume); no frontier.json was written", file=sys.stderr)
        return 130
    # the report before anything is printed: a reader that leaves early (`| head`) ends the
    # command at the first print, and the report was then never built
    path = None if args.no_report else build_frontier_report(Path(args.out))
    console.print(frontier_table(result.document))
    console.print(f"{2 * len(result.document['points'])} runs in {result.total_s:.1f} s; results in {Path(args.out)}/ (frontier.json, frontier.csv, runs/)", soft_wrap=True)
    if path is not None:
        console.print(f"report: {path}", soft_wrap=True)
    return 0

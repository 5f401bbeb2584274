"""`toposched compare`: one workload on one fabric under several allocation policies and
speedup scenarios, run in parallel, with a summary table and an HTML report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any
from ._args import add_matrix_output_arguments, add_run_options, add_workload_arguments, executor_error, run_options

NAME = "compare"
HELP = "compare allocation policies and speedup scenarios on one workload (parallel runs, report)"
DESCRIPTION = """\
Replay one job log on one fabric under several allocation policies and, for the
topology-aware ones, the SC18 paper's runtime speedup scenarios; the runs go in parallel
on the local cores. Writes one simulate-style directory per run, compare.json, and
report.html."""

EPILOG = """\
examples:
  toposched compare --trace examples/data/LLNL-Atlas-2006-2.1-cln.swf.gz --system cab --out out/atlas
  toposched compare --trace LLNL-Thunder-2007-1.1-cln.swf.gz --system cab --transform scale:2 \\
      --scenarios none,ta5,ta10,ta20,v1,v2 --out out/thunder-2x
  toposched compare --trace CEA-Curie-2011-2.1-cln.swf.gz --system pinot --transform cores:16 days:30 drop --out out/curie
  toposched compare --trace LLNL-Thunder-2007-1.1-cln.swf.gz --system cab --transform scale:2 --profile flux-sc18 --out out/thunder-sc18

Runs: every policy with scenario none; the topology-aware policies (isolated) also with every other
scenario. Scenarios shorten run times (the requested times stay): ta5/ta10/ta20 = 5/10/20% shorter
for jobs over 4 nodes; v1/v2 = the paper's randomized, size-dependent speedups (seeded by --seed).
Transforms, applied in order: scale:K (node counts x K, rounded up), days:N or days:N@START (keep
jobs submitted in that window, in days from the first submit), cores:C (nodes = ceil(procs / C)),
cap[:N] / drop[:N] (jobs over N nodes, default the fabric size, cut to N / left out).
Outputs: DIR/runs/<alloc>__<scenario>/ (as toposched simulate writes), DIR/compare.json, and
DIR/report.html with DIR/figures/. See docs/compare.md.
"""


def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..compare import ALLOCS, DEFAULT_ALLOCS, DEFAULT_SCENARIOS, QUEUES

    add_workload_arguments(parser)
    g = parser.add_argument_group("what to compare")
    g.add_argument("--allocs", type=_csv, default=list(DEFAULT_ALLOCS), metavar="A,B", help=f"allocation policies: {', '.join(ALLOCS)} or module:Class (default: {','.join(DEFAULT_ALLOCS)})")
    g.add_argument("--queue", default="easy", choices=QUEUES, help="queue policy (default: easy)")
    g.add_argument(
        "--scenarios", type=_csv, default=list(DEFAULT_SCENARIOS), metavar="S,T",
        help=f"speedup scenarios for the topology-aware policies (all but linear, random, as-logged; default: {','.join(DEFAULT_SCENARIOS)})",
    )
    add_run_options(parser, seed_help="seed of the v1/v2 draws and of the random policy (default: 0)")
    add_matrix_output_arguments(parser, "report.html")


def run(args: argparse.Namespace) -> int:
    problem = executor_error(args.scheduler, args.scheduler_file, args.jobs, "--jobs")
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    return run_with(
        trace=args.trace,
        system=args.system,
        out=args.out,
        allocs=args.allocs,
        scenarios=args.scenarios,
        queue=args.queue,
        transforms=args.transform,
        run_options=run_options(args, queues=[args.queue], allocs=args.allocs, alloc_flag="--allocs"),
        jobs=args.jobs,
        dask=args.dask,
        scheduler=args.scheduler,
        scheduler_file=args.scheduler_file,
        format=args.format,
        lenient=args.lenient,
        report=not args.no_report,
        quiet=args.quiet,
    )


def run_with(*, trace: str, system: str, out: str, report: bool = True, quiet: bool = False, **options: Any) -> int:
    """Run a comparison and print its summary; shared by ``compare`` and ``demo``."""
    from ..startup import keep_pandas_unloaded

    keep_pandas_unloaded()
    from rich.console import Console

    from ..compare import build_report, run_compare, summary_table

    from ..progress import Progress, setup_logging

    setup_logging(quiet=quiet)
    console = Console(quiet=quiet)
    try:
        with Progress("comparing", total=None, unit="runs", console=console, quiet=quiet, interval_s=0.0, defer_start=True) as bar:
            result = run_compare(trace, system, out, progress=lambda done, total, name: bar.update(done, total, f"last: {name}" if name else ""), **options)
    except KeyboardInterrupt:
        print("interrupted: finished runs are kept in " + str(Path(out) / "runs") + " (start the same command again to resume); no compare.json was written", file=sys.stderr)
        return 130
    # the report before anything is printed: a reader that leaves early (`| head`) ends the
    # command at the first print, and the report was then never built
    path, status = None, 0
    if report:
        try:
            if console.is_terminal and not quiet:
                with console.status("building the report"):
                    path = build_report(Path(out))
            else:
                path = build_report(Path(out))
        except Exception as exc:  # the results are written; say what went wrong with the report
            # in one line, as every error is (it printed the whole traceback first)
            from ..cli import describe_error

            print(f"error: building the report failed: {describe_error(exc)[1]}", file=sys.stderr)
            status = 1
    console.print(summary_table(result.document))
    from ..reporting.story import compare_story

    fabric = result.document["runs"][0]["summary"].get("fabric", {}) if result.document["runs"] else {}
    story = compare_story(result.document, [(r["alloc"], r["scenario"], r["summary"]) for r in result.document["runs"]], fabric)
    console.print(story.text(), soft_wrap=True, highlight=False, markup=False)
    runs = result.document["runs"]
    console.print(f"{len(runs)} runs in {result.total_s:.1f} s; results in {Path(out)}/ (compare.json, runs/)", soft_wrap=True)
    if path is not None:
        console.print(f"report: {path}", soft_wrap=True)
    return status

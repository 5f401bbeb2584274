"""`toposched sweep`: run a matrix of replays described in a TOML file, on worker processes or Dask."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ._args import add_executor_arguments, executor_error

if TYPE_CHECKING:
    from ..sweep.spec import Sweep

NAME = "sweep"
HELP = "run a matrix of replays (workloads x fabrics x policies x scenarios) on local workers or Dask"
DESCRIPTION = """\
Run every combination a sweep file describes: workloads (traces, transforms, reader options)
x fabrics (presets, fattree parameters with tapers, topology.conf files) x queue policies x
allocation policies x scenarios (speedups, seeds). Runs go to a pool of worker processes on
this machine (--workers), or one Dask task each with --dask or a Dask scheduler; runs already
complete in DIR are skipped, so a killed sweep is resumed by starting it again."""

EPILOG = """\
examples:
  toposched sweep examples/sweep-small.toml --out out/small
  toposched sweep study.toml --out /scratch/study --workers 8
  toposched sweep study.toml --out /shared/study --scheduler tcp://10.0.0.5:8786
  toposched runs out/small --where "alloc = 'isolated'" --format csv

DIR gets runs/<run_id>/ (jobs.parquet, summary.json, ...: one directory per run, written
whole or not at all), catalog.duckdb (every run's specification and metrics: see
`toposched runs`), report.html and plan.json. Exit status: 0 when every run is complete,
1 when some run failed (each is reported with its specification; its traceback is in
runs/<run_id>/error.txt), 2 for a bad sweep file, 130 when interrupted.
See docs/sweeps.md for the file format, the catalog's columns and a dask-jobqueue recipe.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", metavar="SWEEP.toml", help="the sweep file (docs/sweeps.md)")
    parser.add_argument("--out", metavar="DIR", help="sweep directory (default: the file's 'out' key, else out/<file name without .toml>)")
    g = parser.add_argument_group("where the runs go")
    add_executor_arguments(g, "--workers")
    g = parser.add_argument_group("what to do")
    g.add_argument("--dry-run", action="store_true", help="check the file and list the runs (complete or to do) without running anything")
    g.add_argument("--no-report", action="store_true", help="do not write report.html")
    g.add_argument("--quiet", action="store_true", help="no progress bar; print failures and the final line only")


def _out_dir(args: argparse.Namespace, sweep: Sweep) -> Path:
    if args.out:
        return Path(args.out)
    if sweep.out is not None:
        return Path(sweep.out)
    return Path("out") / Path(args.sweep).stem


def run(args: argparse.Namespace) -> int:
    from ..startup import keep_pandas_unloaded

    keep_pandas_unloaded()
    from rich.console import Console

    from ..sweep.layout import RUNS, run_status
    from ..sweep.runner import _is_complete, run_sweep
    from ..sweep.spec import SweepSpecError, load_sweep

    problem = executor_error(args.scheduler, args.scheduler_file, args.workers, "--workers")
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        sweep = load_sweep(args.sweep)
    except SweepSpecError as exc:
        for line in exc.lines:
            print(f"error: {line}", file=sys.stderr)
        return 2
    out = _out_dir(args, sweep)
    console = Console(stderr=True)
    stdout = Console(highlight=False, soft_wrap=True)
    for note in sweep.notes:
        console.print(f"note: {note}", highlight=False, markup=False)

    if args.dry_run:
        done = 0
        for r in sweep.runs:
            m = run_status(out / RUNS / r.dir)
            state = m["status"] if m else "to do"
            if state == "complete" and not _is_complete(out / RUNS / r.dir, r.run_id):
                # as the start will see it: a run missing one of its files is run again
                # (the listing said complete, and "0 to run", of a run the start then ran)
                state = "to do"
            done += state == "complete"
            stdout.print(f"{r.run_id}  {state:8}  {r.describe()}", markup=False)
        stdout.print(f"{len(sweep.runs)} runs, {done} complete, {len(sweep.runs) - done} to run; results in {out}/", markup=False)
        return 0

    outcome = run_sweep(
        sweep,
        out,
        scheduler=args.scheduler,
        scheduler_file=args.scheduler_file,
        workers=args.workers,
        dask=args.dask,
        console=console,
        progress=not args.quiet,
        report=not args.no_report,
    )
    if outcome.cleaned and not args.quiet:
        console.print(f"removed {len(outcome.cleaned)} unfinished temporary entr{'ies' if len(outcome.cleaned) != 1 else 'y'} left by an interrupted sweep", highlight=False)
    parts = [f"{outcome.planned} runs", f"{outcome.skipped} already complete", f"{outcome.completed} done now"]
    if outcome.failed:
        parts.append(f"{len(outcome.failed)} failed")
    line = ", ".join(parts) + f" in {outcome.elapsed_s:.1f} s"
    stdout.print(line, markup=False)
    if outcome.catalog is not None:
        stdout.print(f"catalog: {outcome.catalog}  (toposched runs {out})", markup=False)
    if outcome.report is not None:
        stdout.print(f"report:  {outcome.report}", markup=False)
    if outcome.interrupted:
        print("interrupted: finished runs are kept; start the same command again to resume", file=sys.stderr)
        return 130
    if outcome.failed:
        print(f"error: {len(outcome.failed)} run{'s' if len(outcome.failed) != 1 else ''} failed (see above; tracebacks in {out}/runs/<run_id>/error.txt)", file=sys.stderr)
        return 1
    if outcome.catalog is None:
        print(f"error: the catalog {out}/catalog.duckdb could not be written (see above)", file=sys.stderr)
        return 1
    return 0

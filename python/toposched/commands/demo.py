"""`toposched demo`: the bundled real trace compared under linear and isolated allocation."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TypedDict

from ._args import positive_int as _positive_int

NAME = "demo"
HELP = "compare linear and isolated allocation on the bundled LLNL Atlas log (cab fabric) and build the report"
DEMO_TRACE = "LLNL-Atlas-2006-2.1-cln.swf.gz"


class DemoOptions(TypedDict):
    """The demo's comparison settings (keywords of commands/compare.py's run_with)."""

    system: str
    allocs: list[str]
    scenarios: list[str]
    transforms: list[str]
    queue: str
    run_options: dict[str, int]


DEMO_OPTIONS: DemoOptions = {
    "system": "cab",
    "allocs": ["linear", "isolated"],
    "scenarios": ["none", "ta10", "v2"],
    "transforms": ["days:60", "scale:3"],
    "queue": "easy",
    "run_options": {"seed": 0},
}
DESCRIPTION = """\
Replay the first 60 days of the bundled LLNL Atlas log (Parallel Workloads Archive), every
job's node count tripled so that the machine is busy (as logged, this window keeps cab
under half busy and placement barely matters), on the cab fabric (SC18's 1,296-node
fat-tree) under EASY with linear (topology-oblivious) and isolated (interference-free)
allocation, the latter also with the ta10 and v2 speedup scenarios; then print a summary,
what it says, and where the HTML report is."""
EPILOG = """\
The same as:
  toposched compare --trace examples/data/LLNL-Atlas-2006-2.1-cln.swf.gz --system cab \\
      --allocs linear,isolated --scenarios none,ta10,v2 --transform days:60 scale:3 --out out/demo
See docs/compare.md.
"""


def demo_trace() -> Path:
    """The bundled trace: shipped in the package (``toposched/data/``, a link to
    examples/data/ in the source tree, so installed wheels carry the file), else
    examples/data/ of the source tree or of the current directory."""
    here = Path(__file__).resolve()
    candidates = [
        here.parents[1] / "data" / DEMO_TRACE,
        here.parents[3] / "examples" / "data" / DEMO_TRACE,
        Path.cwd() / "examples" / "data" / DEMO_TRACE,
    ]
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(f"the bundled trace {DEMO_TRACE} is not in " + " or ".join(str(c.parent) for c in candidates))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="out/demo", metavar="DIR", help="directory for the results (default: out/demo)")
    parser.add_argument("--jobs", type=_positive_int, default=None, metavar="N", help="parallel worker processes (default: the number of CPUs)")
    parser.add_argument("--no-report", action="store_true", help="do not build report.html")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    from .compare import run_with

    trace = demo_trace()
    try:
        shown = trace.relative_to(Path.cwd())
    except ValueError:
        shown = trace
    return run_with(trace=str(shown), out=args.out, jobs=args.jobs, report=not args.no_report, quiet=args.quiet, **DEMO_OPTIONS)

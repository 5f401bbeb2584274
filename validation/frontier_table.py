"""The frontier on the named workloads of issue 18, as the Markdown table of docs/frontier.md.

    python validation/frontier_table.py [--network bins] [--jobs 2] [--out out/frontier-table]
        [--policies linear isolated ...] [--cases atlas-x2-cab thunder-x2-cab ...]

Runs ``toposched frontier`` on each case (whole logs from ../shared/data/traces, scaled
x2 as in the SC18 paper), keeps each case's run directory under ``--out`` (a case already
done is read back, not run again), and prints one table per case: every point, its
utilization lost, interference removed, wait ratio, useful utilization gained, front and
target. Not a test: it takes minutes (the closed loop dominates).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "data" / "traces"

#: name -> (trace, system, transforms)
CASES = {
    "atlas-x2-cab": ("LLNL-Atlas-2006-2.1-cln.swf.gz", "cab", ["scale:2"]),
    "thunder-x2-cab": ("LLNL-Thunder-2007-1.1-cln.swf.gz", "cab", ["scale:2"]),
    # Cab with half of each leaf's 18 uplinks: a 2:1 taper at the leaves
    "thunder-x2-cab-taper2": ("LLNL-Thunder-2007-1.1-cln.swf.gz", "fattree:K=18,S=18,P=4,W1=9", ["scale:2"]),
}


def _fmt(v: float | None, digits: int = 2, pct: bool = False) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f}" if pct else f"{v:.{digits}f}"


def table(doc: dict) -> str:
    lines = [
        "| policy | utilization lost (pts) | interference removed (%) | wait ratio | useful gained (pts) | front | target |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in doc["points"]:
        rel = p["vs_baseline"]
        lines.append(
            f"| {p['policy']} | {_fmt(rel['utilization_lost_pts'])} | {_fmt(rel['interference_removed'], pct=True)} | "
            f"{_fmt(rel['wait_ratio'], 3)} | {_fmt(rel['useful_gain_pts'])} | {'yes' if p['on_front'] else ''} | {'met' if p['meets_target'] else ''} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--network", default="bins")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--out", default=str(REPO / "out" / "frontier-table"))
    ap.add_argument("--policies", nargs="+", default=None)
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    args = ap.parse_args(argv)
    from toposched.frontier import run_frontier

    for name in args.cases:
        trace, system, transforms = CASES[name]
        path = TRACES / trace
        if not path.exists():
            print(f"{name}: {path} not found (the shared data folder is beside the clone in CI only)", file=sys.stderr)
            continue
        out = Path(args.out) / f"{name}--{args.network}"
        done = out / "frontier.json"
        doc = json.loads(done.read_text()) if done.exists() else run_frontier(
            path, system, out, policies=args.policies, network=args.network, transforms=transforms, jobs=args.jobs
        ).document
        print(f"\n### {name}: {trace}, {system}, {' '.join(transforms)}, EASY, network `{args.network}`\n")
        print(table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())

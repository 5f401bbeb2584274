"""`toposched interfere`: evaluate one network scenario (jobs with patterns on node lists)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "interfere"
HELP = "predict how co-running jobs slow each other down on a fabric (one scenario, no replay)"
DESCRIPTION = (
    "Evaluate one scenario with the network model: a fabric, and jobs with their nodes, "
    "communication pattern, service level and communication fraction. Prints each job's "
    "communication time alone and shared, its slowdown and the links it shares."
)

EPILOG = """\
examples:
  toposched interfere scenario.json
  toposched interfere scenario.json --out result.json
  toposched interfere scenario.json --system fattree:K=18,S=16,P=1,W1=9 --fairness ports

A scenario is a JSON object (docs/network.md has the format and the model):
  {"fabric": "cab",
   "model": {"bandwidth": 1.0, "fairness": "flows", "service_levels": [9, 1]},
   "jobs": [{"name": "A", "nodes": "0-143", "pattern": "stencil4d", "phi": 0.5},
            {"name": "B", "place": {"random": 144}, "pattern": "pairs", "service_level": 1},
            {"name": "bully", "bully": "bisection", "place": {"leaves": "all", "per_leaf": 2}}]}
Patterns: pairs, flood, a2a, sub-a2a:K, stencil2d/3d/4d, unstructured, ring, incast,
adjacent-leaf, none, or explicit "flows". Bullies (seed 004): bisection, adjacent-leaf,
incast, interleaved.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO.json", help="the scenario (docs/network.md)")
    parser.add_argument("--out", metavar="RESULT.json", help="write the full result as JSON here")
    parser.add_argument("--system", metavar="FABRIC", help="evaluate on this fabric instead of the scenario's")
    parser.add_argument("--fairness", choices=("jobs", "job-maxmin", "ports", "flows"), help="override the scenario's fairness unit")
    parser.add_argument("--filling", choices=("auto", "steady", "progressive"),
                        help="under fairness flows: progressive filling in time or the steady-state solve (docs/network.md)")
    # a topology.conf's error says "give --lenient": interfere did not take it
    parser.add_argument("--lenient", action="store_true", help="let a topology.conf listing a node under two leaf switches load, each node on the first (Slurm only warns)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from ..errors import InputError
    from ..network import evaluate, load_scenario, write_result

    scenario = load_scenario(args.scenario, system=args.system, lenient=args.lenient)
    if args.fairness:
        scenario.settings.fairness = args.fairness
    if args.filling:
        scenario.settings.filling = args.filling
    s = scenario.settings
    if (args.filling or args.fairness) and s.filling == "progressive" and s.fairness != "flows":
        # else the engine's "field 'model': filling=progressive ... needs fairness=flows",
        # which names the scenario file for what a flag set
        flag = "--filling" if args.filling else "--fairness"
        whence = f"--fairness {args.fairness}" if args.fairness else f"the scenario's fairness {s.fairness}"
        raise InputError(flag, f"progressive filling is per-flow max-min: it needs fairness flows, not {s.fairness} ({whence})")
    if args.out:
        _check_out(Path(args.out))
    try:
        result = evaluate(scenario)
    except InputError as exc:
        if args.filling != "progressive" or exc.field != "model" or "progressive" not in exc.message:
            raise
        # progressive filling was asked for by the flag, not by the scenario's model: name
        # the flag (the scenario's "field 'model'" pointed at a setting the file has not)
        message = exc.message.replace("(use filling=steady or auto)", "(use --filling steady or auto)")
        if message.startswith("filling=progressive "):
            message = f"progressive filling of {args.scenario} {message.removeprefix('filling=progressive ')}"
        else:
            message = f"{args.scenario}: {message}"
        raise InputError("--filling", message) from None
    if args.out:
        write_result(result, args.out)
    if args.quiet:
        return 0
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    console = Console()
    m = result["model"]
    f = result["fabric"]
    console.print(
        f"[bold]{f['name']}[/]: {f['nodes']} nodes, {f['leaves']} leaves, {f['pods']} pods, W1={f['uplinks_per_leaf']}, "
        f"W2={f['uplinks_per_l2']}; fairness {m['fairness']} ({m['filling']}), service levels {m['service_levels']}"
    )
    t = Table(
        show_edge=False,
        caption="t alone: comm time per iteration alone; placement: t alone / t ideal; comm: 1/x; queueing: what queueing delay adds to slowdown",
    )
    for col in ("job", "pattern", "nodes", "SL", "phi", "t alone", "placement", "comm", "queueing", "slowdown", "shared"):
        t.add_column(col, justify="left" if col in ("job", "pattern") else "right")
    for j in result["jobs"]:
        t.add_row(
            j["name"],
            j["pattern"] + (f" ({j['bully']})" if j["bully"] and j["bully"] != "interleaved" else ""),
            str(j["nodes"]),
            str(j["service_level"]),
            f"{j['phi']:.2f}",
            f"{j['t_alone']:.4g}",
            f"{j['placement_penalty']:.2f}",
            f"{j['comm_slowdown']:.2f}",
            f"{j['queueing']:.4f}",
            f"{j['slowdown']:.2f}",
            str(j["links_shared"]),
        )
    # as wide as the table needs, so that no cell is cut to fit (80 columns in a pipe or a
    # file: the jobs of an interleaved bully all read 'bull…'); print(width=) only narrows
    from rich.measure import Measurement

    needed = Measurement.get(console, console.options.update_width(10_000), t).maximum
    if needed > console.width:
        console = Console(width=needed)
    console.print(t)
    links = result["links"]
    console.print(f"links: {links['total']} directed, {links['shared']} shared by two jobs or more, {len(links['hot'])} oversubscribed")
    if args.out:
        console.print(f"result in {args.out}")
    return 0


def _check_out(path: Path) -> None:
    """``--out`` is new, or a result of this command (replaced): a README or a run's
    jobs.parquet given by mistake was overwritten silently. (A directory is refused where
    the result is written, naming it.)"""
    if not path.is_file():
        return
    from ..errors import InputError

    try:
        doc = json.loads(path.read_bytes())
    except (ValueError, OSError):
        doc = None
    if not (isinstance(doc, dict) and {"toposched_version", "jobs", "links"} <= doc.keys()):
        raise InputError(str(path), "exists and is not a result of toposched interfere; give --out a new file or an earlier result")

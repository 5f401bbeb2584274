"""`toposched validate-slurm`: the same job stream through a real Slurm and through toposched."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ._args import nonnegative_int, positive_int, positive_number

if TYPE_CHECKING:
    from types import ModuleType

    from ..live.validate import StreamJob
    from ..topology import Fabric

NAME = "validate-slurm"
HELP = "run a job stream on a real Slurm 22.05 (started here) and on toposched, and compare job by job"
DESCRIPTION = (
    "Start a real Slurm (slurmctld, one slurmd per node, slurmdbd + MariaDB; Debian's slurm-wlm, root only) "
    "with topology/tree from the fabric, submit a compressed job stream in real time, collect what Slurm did "
    "(controller log + sacct), and compare with toposched's slurm-tree allocator (profile matching the select "
    "plugin) decision by decision and with a full replay (docs/validation.md, 'Against a real Slurm')."
)
EPILOG = """examples:
  toposched validate-slurm --random 200 --seed 1 --out val/
  toposched validate-slurm --random 200 --scheduler backfill --multifactor PriorityWeightAge=5000,PriorityWeightJobSize=5000,PriorityMaxAge=2,PriorityCalcPeriod=1 --out val/
  toposched validate-slurm --random 200 --accounts 4 --qos hi=100,lo=10 --multifactor PriorityWeightFairshare=5000,PriorityWeightQOS=2000,PriorityDecayHalfLife=2,PriorityCalcPeriod=1 --out val/
  toposched validate-slurm --random 200 --partitions 'a=n[00-15]:MaxTime=2:MaxNodes=12,b=n[08-31]' --select linear --out val/
  toposched validate-slurm --trace log.swf --cores-per-node 8 --first-job 1000 --jobs 200 --select linear --out val/
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--system", help="fabric: a preset, fabric file or Slurm topology.conf (default: 32 nodes n00-n31, 4 leaves of 8, 2 pods)")
    parser.add_argument("--lenient", action="store_true", help="let a topology.conf listing a node under two leaf switches load, each node on the first (Slurm only warns)")
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--trace", metavar="SWF", help="take the stream from a window of this SWF log (sizes kept, times compressed)")
    src.add_argument("--random", type=positive_int, metavar="N", help="a random stream of N jobs (default: 200)")
    parser.add_argument("--seed", type=int, default=1, help="seed of --random (default: 1)")
    parser.add_argument("--cores-per-node", type=positive_int, default=1, help="--trace: cores per node of the log's machine (default: 1)")
    parser.add_argument("--first-job", type=nonnegative_int, default=0, help="--trace: skip this many eligible jobs (default: 0)")
    parser.add_argument("--jobs", type=positive_int, default=200, help="--trace: jobs in the window (default: 200)")
    parser.add_argument("--arrival-span-s", type=positive_number, default=60.0, help="arrivals are spread over this many seconds (default: 60)")
    parser.add_argument("--run-compression", type=positive_number, default=200.0, help="--trace: log seconds per second of sleep (default: 200)")
    parser.add_argument("--max-run-s", type=positive_int, default=None, help="longest sleep, s (default: 4 random, 20 trace)")
    parser.add_argument("--select", choices=("linear", "cons_tres", "both"), default="both", help="Slurm select plugin (default: both, one after the other)")
    parser.add_argument("--scheduler", choices=("builtin", "backfill"), default="builtin", help="SchedulerType (default: builtin = FIFO)")
    parser.add_argument("--scheduler-parameters", default="", metavar="TEXT", help="slurm.conf SchedulerParameters (default: none, Slurm's defaults)")
    parser.add_argument("--multifactor", metavar="KEY=VALUE,...", default="",
                        help="run Slurm with PriorityType=priority/multifactor and these slurm.conf settings (PriorityWeightAge, PriorityWeightJobSize, "
                             "PriorityMaxAge, PriorityCalcPeriod, PriorityFavorSmall, PriorityWeightFairshare, PriorityWeightQOS, PriorityDecayHalfLife, PriorityWeightPartition; "
                             "times in minutes), replayed with the same priority options "
                             "(default: priority/basic)")
    parser.add_argument("--accounts", type=int, default=0, metavar="N",
                        help="--random: each job charges one of N accounts a0..aN-1 (directly under root, user root in each; a0 the busiest), "
                             "made in the lab with sacctmgr; at most the number of jobs (default: 0, root's own account)")
    parser.add_argument("--qos", default="", metavar="NAME=PRIORITY,...",
                        help="QOS made in the lab with these priorities (normal=P sets Slurm's own); with --random each job asks for one of them")
    parser.add_argument("--partitions", default="", metavar="NAME=NODES[:MaxTime=MIN][:MaxNodes=N][:MinNodes=N][:PriorityTier=N][:PriorityJobFactor=N],...",
                        help="the lab's partitions instead of one of every node (the first is the default; EnforcePartLimits=NO, so a job "
                             "beyond a limit stays pending); with --random each job asks for one of them; replayed with the same partitions")
    parser.add_argument("--timeout-s", type=positive_number, default=1800, help="give up if Slurm has not run every job by then (default: 1800)")
    parser.add_argument("--from-lab", metavar="DIR", help="compare again a recorded run (the OUT/lab directory of an earlier validate-slurm with the same stream options) instead of starting Slurm")
    parser.add_argument("--out", required=True, help="directory for the report (one sub-directory per select plugin) and Slurm's scratch files")


def run(args: argparse.Namespace) -> int:
    import json
    import os
    from pathlib import Path

    from ..errors import InputError
    from ..live import validate as val
    from ..live.slurmlab import missing_binaries
    from ..topology import Fabric, load_fabric, regular_spec

    fabric = load_fabric(args.system, lenient=args.lenient) if args.system else Fabric.from_spec(regular_spec("lab", 8, 2, 2, node_prefix="n"))
    n_nodes = len(fabric.spec.node_names)
    partitions = tuple(val.parse_partitions(args.partitions, list(fabric.spec.node_names))) if args.partitions else ()
    if args.trace and partitions:
        raise InputError("--partitions", "goes with --random (an SWF window does not say which partition of the lab a job asks for)")
    if args.trace:
        stream = val.swf_stream(
            Path(args.trace), cores_per_node=args.cores_per_node, max_nodes=n_nodes, first_job=args.first_job, n_jobs=args.jobs,
            arrival_span_s=args.arrival_span_s, run_compression=args.run_compression, max_run_s=args.max_run_s or 20,
        )
    else:
        qos_names = tuple(val.qos_priorities(args.qos)) if args.qos else ()  # normal included
        if args.accounts < 0:
            raise InputError("--accounts", f"{args.accounts}: expected 0 or more")
        if args.accounts > (args.random or 200):
            # each job charges one account; drawing one costs time in proportion to N
            raise InputError("--accounts", f"{args.accounts}: expected at most the number of jobs ({args.random or 200}, --random)")
        stream = val.random_stream(args.random or 200, n_nodes, args.seed, arrival_span_s=args.arrival_span_s, max_run_s=args.max_run_s or 4,
                                   accounts=args.accounts, qos=qos_names, partitions=partitions)
    if args.multifactor:
        val.multifactor_conf(args.multifactor)  # a bad setting is one line before anything starts
    if args.from_lab:
        return _from_lab(args, fabric, stream, val)
    if os.geteuid() != 0:
        raise InputError("validate-slurm", "it starts slurmd, which runs jobs as their user: run it as root (in a container or VM)")
    missing = missing_binaries()
    if missing:
        raise InputError("validate-slurm", f"needs Debian's slurm-wlm slurmdbd mariadb-server; missing: {', '.join(missing)}", hint="apt-get install slurm-wlm slurmdbd mariadb-server")
    out = Path(args.out)
    selects = ("linear", "cons_tres") if args.select == "both" else (args.select,)
    for select in selects:
        v = val.validate(out / "lab", fabric, stream, select=select, scheduler=args.scheduler, scheduler_parameters=args.scheduler_parameters,
                         multifactor=args.multifactor, timeout_s=args.timeout_s, qos=val.qos_priorities(args.qos), partitions=partitions)
        name = val.run_name(select, args.scheduler, args.multifactor, bool(partitions))
        s = val.write_report(v, out / name)
        print(val.summary_line(s))
        if s["first_divergence"]:
            fd = s["first_divergence"]
            print(f"  first divergence of the replay: {fd['job']} ({fd['nodes_asked']} nodes): Slurm {fd['slurm']['nodes']} at {fd['slurm']['start_ms'] / 1000:.3f} s, "
                  f"toposched {fd['toposched']['nodes']} at {fd['toposched']['start_ms'] / 1000:.3f} s (states in {out / name / 'summary.json'})")
    print(json.dumps({"report": str(out)}))
    return 0


def _from_lab(args: argparse.Namespace, fabric: "Fabric", stream: "list[StreamJob]", val: "ModuleType") -> int:
    import json
    from pathlib import Path

    from ..errors import InputError

    out = Path(args.out)
    selects = ("linear", "cons_tres") if args.select == "both" else (args.select,)
    for select in selects:
        name = val.run_name(select, args.scheduler, args.multifactor, bool(args.partitions))
        lab = Path(args.from_lab) / f"slurm-{name}"
        if not (lab / "log" / "ctld.log").exists():
            raise InputError("--from-lab", f"no recorded run in {lab} (log/ctld.log)", hint="--select, --scheduler, --multifactor as in the recorded run")
        v = val.compare(fabric, val.slurm_from_lab(lab, stream, val.qos_priorities(args.qos)), select=select, scheduler=args.scheduler)
        print(val.summary_line(val.write_report(v, out / name)))
    print(json.dumps({"report": str(out)}))
    return 0

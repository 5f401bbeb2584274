"""`toposched contention`: what a tapered fabric would cost a schedule (seed 001's model).
The analysis is :mod:`toposched.contention`; its files, figures and page are written by
:func:`toposched.reporting.contention.write_outputs`."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from ._args import output_dir, seed
from ._args import positive_int as _positive_int
from .. import _core

NAME = "contention"
HELP = "uplink contention of a schedule on tapered fabrics (seed 001: uplink removal, crossbar size, cores per node)"
DESCRIPTION = (
    "Evaluate seed 001's worst-case uplink contention model on a schedule: per-leaf uplink demand over time, "
    "the slowdown of every job as leaf uplinks are removed, the probabilistic variant for communication "
    "fractions J, and the same workload on other crossbar sizes and cores per node. The schedule is a "
    "toposched simulate output directory (--run), or a log replayed first (--trace/--system)."
)

EPILOG = """\
examples:
  toposched contention --run out/atlas-isolated --out out/atlas-contention   # a simulate output
  toposched contention --run out/atlas/runs/isolated__none --out out/atlas-iso-contention   # a compare run
  toposched contention --trace examples/data/LLNL-Atlas-2006-2.1-cln.swf.gz --system fattree:K=12,S=96,P=1 \\
      --queue easy --alloc linear --out out/atlas-contention
  toposched contention --run out/ricc --uplinks 16,12,8,4,1 --comm-fractions 0.05,0.2 \\
      --crossbar-sizes none --cores-sweep none --out out/ricc-contention

Model (docs/contention.md): U(n,j) = min(nodes of job j on leaf n, its nodes elsewhere); D(n,t) sums U
over the jobs running at t; with R uplinks left per leaf a job is slowed, at each instant, by
max(1, D/R) on its most loaded leaf (worst case: every job communicates all the time). Outputs in --out:
contention.json (all numbers), leaf_demand.parquet, job_slowdowns.parquet, job_exposure.parquet,
sweeps.parquet, figures/*.png|svg, report.html. With --trace the replay is kept in OUT/run/.
"""


def _int_list(text: str) -> list[int] | None:
    if text.strip().lower() == "none":
        return None
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers or 'none', got {text!r}") from None
    if not out:
        raise argparse.ArgumentTypeError(f"no value given ({text!r}); give comma-separated whole numbers or 'none'")
    if min(out) < 1:
        raise argparse.ArgumentTypeError("every value must be at least 1")
    return out


def _fraction_list(text: str) -> list[float]:
    if text.strip().lower() == "none":
        return []
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fractions, got {text!r}") from None
    if not out:  # was taken as 'none', silently
        raise argparse.ArgumentTypeError(f"no value given ({text!r}); give comma-separated fractions or 'none' (skip the probabilistic variant)")
    if any(not 0.0 <= x <= 1.0 for x in out):
        raise argparse.ArgumentTypeError("communication fractions lie in [0, 1]")
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..contention import DEFAULT_COMM_FRACTIONS, DEFAULT_CROSSBAR_SIZES

    g = parser.add_argument_group("the schedule (one of)")
    g.add_argument("--run", metavar="DIR", help="a directory written by toposched simulate (jobs.parquet, fabric.json)")
    g.add_argument("--trace", metavar="LOG", help="a job log to replay first (with --system)")
    g = parser.add_argument_group("replaying a log (with --trace)")
    g.add_argument("--system", metavar="FABRIC", help="preset, fattree:K=..,S=..,P=.. or topology.conf")
    g.add_argument("--format", help="log format, as toposched simulate takes it (default: guessed from the file)")
    g.add_argument(
        "--transform", action="extend", nargs="+", default=[], metavar="T",
        help="workload transforms before the replay, as toposched simulate takes them: scale:K, days:N[@START], cores:C, cap[:N], drop[:N] (docs/compare.md)",
    )
    g.add_argument("--queue", default="easy", choices=_core.QUEUES, help="queue policy (default: easy)")
    g.add_argument(
        "--alloc", default="linear", metavar="POLICY",
        help="allocation policy, as toposched simulate takes it (default: linear, as 001 assumes); "
        "as-logged analyses the log's own starts and node lists (docs/as-logged.md)",
    )
    g.add_argument("--seed", type=seed, default=0, help="seed of the random policy (default: 0)")
    g.add_argument("--cores-per-node", type=_positive_int, help="processors per node to turn processor counts into nodes (default: from the log header)")
    g.add_argument("--lenient", action="store_true", help="skip and count malformed log records instead of stopping (and read an SWF log without a header value it cannot read, listed in the summary)")
    g.add_argument("--allow-long-span", action="store_true", help="accept logs spanning more than 50 years, and run times as long (docs/reliability.md)")
    g = parser.add_argument_group("the model")
    g.add_argument("--uplinks", type=_int_list, metavar="R,..", help="uplinks left per leaf to evaluate (default: every R from the nonblocking K down to 1)")
    g.add_argument(
        "--comm-fractions", type=_fraction_list, default=list(DEFAULT_COMM_FRACTIONS), metavar="J,..",
        help=f"communication fractions of the probabilistic variant (default: {','.join(f'{j:g}' for j in DEFAULT_COMM_FRACTIONS)}; 'none': skip)",
    )
    g.add_argument(
        "--crossbar-sizes", type=_int_list, default=list(DEFAULT_CROSSBAR_SIZES), metavar="K,..",
        help=f"nodes per leaf of the crossbar-size sweep (default: {','.join(map(str, DEFAULT_CROSSBAR_SIZES))}; 'none': skip)",
    )
    g.add_argument("--cores-sweep", type=_int_list, default=[], metavar="C,..", help="cores per node of the multicore sweep (default: the schedule's own x 1, 2, 4, 8; 'none': skip)")
    g.add_argument("--base-cores-per-node", type=_positive_int, metavar="C", help="cores per node of the schedule's nodes (default: from the run's summary.json, else 1)")
    g = parser.add_argument_group("output")
    g.add_argument("--out", required=True, type=output_dir, metavar="DIR", help="directory for the results")
    g.add_argument("--no-figures", action="store_true", help="write no figures (and a report without them)")
    g.add_argument("--no-report", action="store_true", help="do not build report.html")
    g.add_argument("--quiet", action="store_true", help="print nothing but errors")


def _load_schedule(args: argparse.Namespace, out: Path, say: Callable[[str], None], shown: Path) -> Any:
    from ..contention import Schedule

    if args.run:
        return Schedule.from_run_dir(args.run)
    from ..simulate import RunConfig, simulate
    from ..topology import load_fabric
    from ..workload import read_trace

    options: dict[str, Any] = {"lenient": args.lenient, "allow_long_span": args.allow_long_span}
    if args.cores_per_node is not None:
        options["cores_per_node"] = args.cores_per_node
    workload = read_trace(args.trace, format=args.format, **options)
    fabric = load_fabric(args.system, lenient=args.lenient)
    if args.transform:
        from ..transforms import transforms_for_replay

        workload = transforms_for_replay(workload, list(args.transform), fabric_nodes=fabric.n_nodes, source=str(args.trace))
    tick = time.perf_counter()
    result = simulate(workload, fabric, RunConfig(queue=args.queue, alloc=args.alloc, seed=args.seed))
    result.write(out / "run")
    say(f"replayed {len(result.jobs):,} jobs in {time.perf_counter() - tick:.1f} s (kept in {shown / 'run'}/)")
    return Schedule.from_result(result)


#: What contention writes into --out (reporting.contention.write_outputs, and run/ for --trace).
OUTPUTS = frozenset({"contention.json", "leaf_demand.parquet", "job_slowdowns.parquet", "job_exposure.parquet", "sweeps.parquet", "report.html", "figures", "run"})


def _check_out(out: Path) -> None:
    """--out: a new directory, or one holding contention's own outputs (an earlier run of
    it), nothing else. It wrote into any directory: `--out .` scattered its files through
    the current one, a report.html there was overwritten, and `--out` = the --run directory
    mixed both, which simulate then refused to write again."""
    from ..errors import InputError

    resolved = out.resolve()
    if resolved in (Path.cwd().resolve(), Path.home().resolve()) or resolved.parent == resolved:
        raise InputError(str(out), "is the current, home or root directory; give --out a subdirectory, e.g. --out out/contention")
    if out.exists() and not out.is_dir():
        raise InputError(str(out), "exists and is not a directory; give --out a new directory or an earlier contention output")
    if out.is_dir():
        foreign = sorted(e.name for e in out.iterdir() if e.name not in OUTPUTS and not e.name.startswith("."))
        if foreign:
            shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            raise InputError(str(out), f"holds files that are not contention's outputs ({shown}); give --out a new or empty directory")


def run(args: argparse.Namespace) -> int:
    if bool(args.run) == bool(args.trace):
        print("error: give exactly one of --run DIR or --trace LOG (with --system)", file=sys.stderr)
        return 2
    if args.trace and not args.system:
        print("error: --trace needs --system", file=sys.stderr)
        return 2
    if args.transform and not args.trace:
        print("error: --transform applies to --trace (a replay made here); a --run directory is analysed as it was replayed", file=sys.stderr)
        return 2
    if args.trace:
        # before the replay: the fabric alone says how many uplinks a leaf has, and nodes
        from ..topology import load_fabric

        fabric = load_fabric(args.system, lenient=args.lenient).describe()
        if args.uplinks:
            _check_uplinks(args.uplinks, max(int(fabric["nodes_per_leaf"]), int(fabric.get("uplinks_per_leaf") or 0)))
        _check_crossbar_sizes(args.crossbar_sizes, int(fabric["nodes"]))
    out = Path(args.out)
    _check_out(out)
    say: Callable[[str], None] = (lambda _m: None) if args.quiet else (lambda m: print(m))
    from ..files import replace_dir

    names: list[str] = []
    docs: list[dict[str, Any]] = []

    def write(staging: Path) -> None:
        names[:], docs[:] = _write(args, out, staging, say)

    # --out as a whole, as simulate writes its directory: a Ctrl-C or a kill while the
    # files were written left new Parquet files beside the earlier contention.json and
    # report.html, a mixture nothing marked. Now it leaves the earlier outputs, or no --out.
    replace_dir(out, write)
    if not args.quiet:
        _print_summary(docs[0])
        say(f"results in {out}/ ({', '.join(names)})")
    return 0


def _write(args: argparse.Namespace, out: Path, staging: Path, say: Callable[[str], None]) -> tuple[list[str], list[dict[str, Any]]]:
    """Replay (--trace) and analyse into ``staging``, which then takes --out's place;
    returns the names of the files written and contention.json's content."""
    from ..contention import run_contention

    schedule = _load_schedule(args, staging, say, out)
    if args.run and (out / "run").resolve() == Path(args.run).resolve():
        # --run OUT/run (an earlier --trace analysis's replay): it stays with the outputs
        # (hard links: a result file is replaced whole, never written in place)
        _link_tree(out / "run", staging / "run")
    if args.uplinks:
        _check_uplinks(args.uplinks, schedule.full_uplinks)
    _check_crossbar_sizes(args.crossbar_sizes, schedule.n_nodes)
    cores = None if args.cores_sweep == [] else args.cores_sweep
    tick = time.perf_counter()
    analysis, doc = run_contention(
        schedule,
        uplinks=args.uplinks,
        comm_fractions=args.comm_fractions,
        crossbar_sizes=args.crossbar_sizes,
        cores=cores,
        base_cores=args.base_cores_per_node,
        do_cores=args.cores_sweep is not None,
    )
    doc["source"] = {"run": args.run, "trace": args.trace, "system": args.system, "queue": args.queue if args.trace else None, "alloc": args.alloc if args.trace else None}
    say(f"analysed {schedule.n_jobs:,} jobs in {time.perf_counter() - tick:.2f} s")
    from ..reporting.contention import write_outputs

    paths = write_outputs(analysis, doc, staging, figures=not args.no_figures, report=not args.no_report)
    return sorted({p.name for p in paths if p.parent == staging}), [doc]


def _link_tree(src: Path, dst: Path) -> None:
    import shutil

    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, copy_function=link)


def _check_crossbar_sizes(sizes: list[int] | None, machine_nodes: int) -> None:
    """A leaf larger than the machine holds all of it, as a leaf of the machine's size does,
    and its sweep of R from K down to 1 grows with K: 10^11 was killed for memory."""
    from ..contention import DEFAULT_CROSSBAR_SIZES

    big = [k for k in sizes or [] if k > max(machine_nodes, *DEFAULT_CROSSBAR_SIZES)]
    if big:
        from ..errors import InputError

        raise InputError(
            "--crossbar-sizes",
            f"{big[0]} nodes per leaf is more than the {machine_nodes} nodes of the schedule's machine: from there one leaf holds the whole machine and no uplink carries anything (give at most {max(machine_nodes, *DEFAULT_CROSSBAR_SIZES)})",
        )


def _check_uplinks(uplinks: list[int], full: int) -> None:
    if max(uplinks) > full:
        from ..errors import InputError

        raise InputError(
            "--uplinks",
            f"{max(uplinks)} uplinks left per leaf is more than the {full} of this fabric's nonblocking leaf (R counts the uplinks left: at most K)",
        )


def _print_summary(doc: dict[str, Any]) -> None:
    from ..reporting.contention import pct as _pct

    s = doc["schedule"]
    # a tapered fabric's own cost is the row R = W1 (docs/contention.md); the rows above it
    # are uplinks it does not have, so say which row is the fabric replayed
    built = s.get("uplinks_per_leaf_as_built")
    tapered = built is not None and built < s["full_uplinks"]
    print(
        f"{s['name']}: {s['jobs']:,} jobs, {doc['exposed_jobs']:,} on two or more leaves; K={s['nodes_per_leaf']}, full R={s['full_uplinks']}"
        + (f", as built W1={built}" if tapered else "")
    )
    for note in s.get("notes", []):
        print(f"note: {note}")
    print(f"{'R':>4} {'taper':>7} {'system':>9} {'per node-s':>10} {'affected':>9} {'mean/job':>9} {'max/job':>9}")
    for r in doc["uplink_sweep"]:
        a = r["affected_job_slowdown"]
        print(
            f"{r['uplinks']:>4} {r['taper']:>5.2f}:1 {_pct(r['system_slowdown']):>9} {_pct(r['added_wall_per_node_second']):>10} "
            f"{r['affected_jobs']:>9,} {_pct(a['mean']):>9} {_pct(a['max']):>9}"
            + (f"  <- as built (W1 = {built})" if tapered and r["uplinks"] == built else "")
        )
    print(
        "system: 001's own system-wide slowdown, added wall time over the jobs' wall time (its definition); "
        "per node-s: the same added time over the jobs' node-seconds (reproduces 001's magnitudes, not its definition); "
        "mean/job, max/job: over the affected jobs; worst case, 100% = twice as long (docs/contention.md)"
    )

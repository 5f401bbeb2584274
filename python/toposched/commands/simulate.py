"""`toposched simulate`: replay a job log on a fabric under a queue and an allocation policy."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..registry import alloc_names, core_policies, policies
from ..startup import BackgroundImports
from ._args import add_run_options, output_dir, run_options
from ._args import positive_int as _positive_int
from .. import _core

NAME = "simulate"
HELP = "replay a job log on a fabric under a queue and an allocation policy"
DESCRIPTION = "Replay a job log on a fabric under a queue policy and an allocation policy."

EPILOG = """\
examples:
  toposched simulate --trace examples/data/LLNL-Atlas-2006-2.1-cln.swf.gz --system cab \\
      --queue easy --alloc isolated --out out/atlas-isolated
  toposched simulate --trace KTH-SP2-1996-2.1-cln.swf.gz --system fattree:K=20,S=5,P=1 --out out/kth
  toposched simulate --trace sacct.log --system topology.conf --alloc linear --out out/site
  toposched simulate --trace big.swf --system cab --stream --out out/big   # any length, bounded memory

--system takes a preset (toposched systems lists them), fattree:K=..,S=..,P=..[,W1=..][,W2=..][,nodes=..]
(K nodes per leaf, S leaves per pod, P pods, W1 uplinks per leaf, W2 uplinks per L2 switch), or a Slurm
topology.conf file. Outputs: jobs.parquet (one row per job), utilization.parquet (every simulated
minute), skipped.parquet (jobs that could never run, with the reason), summary.json, fabric.json.
See docs/semantics.md for the exact scheduling rules and docs/workloads.md for how logs are normalized.
--stream reads, replays and writes a chunk of jobs at a time: the same files, in memory that does not
grow with the log (SWF in submit order; docs/workloads.md, "Streamed replays").
"""


def _alloc_name(text: str) -> str:
    """A registered allocation policy, as-logged (docs/as-logged.md) or module:Class. The
    core's names are checked first: the Python policies packages register (entry points)
    are looked up only for another name."""
    if ":" in text or text == "as-logged" or any(p.name == text and p.kind == "alloc" for p in core_policies()):
        return text
    names = (*alloc_names(), "as-logged")
    if text in names:
        return text
    raise argparse.ArgumentTypeError(f"expected one of {', '.join(names)} or module:Class, got {text!r}")


def _alloc_help() -> str:
    return "allocation policy (default: linear): " + "; ".join(f"{p.name}: {p.summary}" for p in policies() if p.kind == "alloc") + "; as-logged: start times and nodes from the log (docs/as-logged.md); or module:Class for a policy written in Python (docs/python-policies.md)"


class _AllocAction(argparse.Action):
    """``--alloc``: stores its value; its help, which lists every registered allocation
    policy (the Python ones included), is made when the help is shown, not at every
    parse (see registry.core_policies)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)

    @property  # type: ignore[override]  # argparse reads Action.help only to format the help
    def help(self) -> str:
        return _alloc_help()

    @help.setter
    def help(self, value: str | None) -> None:
        pass  # made by _alloc_help


def _walltime_default(text: str) -> str | int:
    if text == "runtime":
        return text
    try:
        return _positive_int(text)
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(f"expected 'runtime' or a whole number of seconds above 0, got {text!r}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("what to replay")
    g.add_argument("--trace", required=True, metavar="LOG", help="job log: SWF (.swf, .swf.gz; extended SWF with node lists), Slurm sacct -P dump, or PBS/Torque accounting log")
    g.add_argument("--format", choices=("swf", "swf-nodes", "sacct", "pbs"), help="log format (default: guessed from the file)")
    g.add_argument("--system", required=True, metavar="FABRIC", help="preset, fattree:K=..,S=..,P=.. or topology.conf")
    g.add_argument(
        "--transform", action="extend", nargs="+", default=[], metavar="T",
        help="workload transforms, applied in order: scale:K, days:N[@START], cores:C, cap[:N], drop[:N] (docs/compare.md)",
    )
    g = parser.add_argument_group("policies")
    g.add_argument("--queue", default="easy", choices=_core.QUEUES, help="queue policy (default: easy)")
    g.add_argument("--alloc", default="linear", type=_alloc_name, metavar="POLICY", action=_AllocAction)
    add_run_options(parser, seed_help="seed of the random policy (default: 0); the network model's traffic draws take the spec's own seed (--network random,seed=3)")
    g = parser.add_argument_group("reading the log (see docs/workloads.md)")
    g.add_argument("--cores-per-node", type=_positive_int, help="processors per node to turn processor counts into nodes (default: from the SWF header MaxProcs/MaxNodes, which must then read as positive integers, else 1)")
    g.add_argument("--size-field", default="auto", choices=("auto", "allocated", "requested"), help="SWF processor field giving the job size (default: auto = allocated, else requested)")
    g.add_argument("--missing-walltime", default="runtime", type=_walltime_default, help="requested time for jobs without one: 'runtime' (default) or seconds")
    g.add_argument("--missing-runtime", default="skip", choices=("skip", "zero"), help="jobs without a run time: skip (default) or run 0 s")
    g.add_argument("--lenient", action="store_true", help="skip and count malformed log records instead of stopping (and read an SWF log without a header value it cannot read, listed in the summary); let a topology.conf listing a node twice load (first leaf wins)")
    g = parser.add_argument_group("output")
    g.add_argument("--out", required=True, type=output_dir, metavar="DIR", help="directory for the results: new, empty, or the results of an earlier run (replaced as a whole when this run ends)")
    g.add_argument("--allow-long-span", action="store_true", help="accept logs spanning more than 50 years, and run times as long (docs/reliability.md)")
    g.add_argument(
        "--stream", action="store_true",
        help="replay the log a chunk of jobs at a time, writing finished jobs as they leave the engine: memory stays bounded "
        "however long the log (10 M jobs: see BENCHMARKS.md), the output files are the same, byte for byte. SWF logs in submit "
        "order only; not with --network, --queue slurm/slurm-bf, --alloc as-logged, --transform or policies written in Python "
        "(docs/workloads.md, streamed replays)",
    )
    g.add_argument("--stream-chunk-jobs", type=_positive_int, default=None, metavar="N", help="with --stream: log records read per chunk (default: 100000); any value gives the same files")
    g.add_argument("--quiet", action="store_true", help="print nothing but errors")
    g.add_argument("-v", "--verbose", action="count", default=0, help="more detail in the log lines")


def run(args: argparse.Namespace) -> int:
    from ..readahead import discard_prefetched, prefetch
    from ..startup import keep_freed_memory

    if not args.stream:  # (a streamed replay is about its bounded peak: glibc's defaults)
        keep_freed_memory()  # before the log's buffers are made: see its docstring
    # The log read ahead, first thing: a native thread reads, inflates and parses it
    # without the interpreter lock (no NumPy needed); what it found, errors included,
    # comes out where the reader asks for it, after the options' and the fabric's errors
    # (a streamed replay reads the log its own way)
    if not args.stream:
        prefetch(args.trace, format=args.format)  # an SWF log only
    # NumPy is needed only once the log is read: imported meanwhile on a second thread,
    # with PyArrow where the run makes Arrow tables (the streamed replay reads its jobs
    # back; the network model's columns): the whole replay writes its files from arrays
    imports = BackgroundImports(BackgroundImports.ARROW if args.stream or args.network else BackgroundImports.NUMPY)
    try:
        return _run(args, imports)
    finally:
        # also when an error ends the command early (a finished run has joined it already),
        # but not for ever: see BackgroundImports.close
        imports.close(timeout_s=EARLY_EXIT_JOIN_S)
        discard_prefetched(args.trace)  # when an error came before the reader


#: How long a command that ends early (an error, a Ctrl-C) waits for the import thread
#: before exiting without it (the imports take about 0.15 s).
EARLY_EXIT_JOIN_S = 2.0


def _run(args: argparse.Namespace, imports: BackgroundImports) -> int:
    from ..config import RunConfig
    from ..progress import setup_logging

    setup_logging(quiet=args.quiet, verbose=args.verbose)
    from ..files import check_output_dir

    _check_policy_options(args)
    if args.stream_chunk_jobs is not None and not args.stream:
        from ..errors import InputError

        raise InputError("--stream-chunk-jobs", "applies to --stream only")
    check_output_dir(args.out)
    console = None
    if not args.quiet:  # rich and the report cost tens of ms to import: only to print
        from rich.console import Console

        console = Console(stderr=False)
    t0 = time.perf_counter()
    options: dict[str, Any] = {  # read_trace's keywords
        "lenient": args.lenient,
        "allow_long_span": args.allow_long_span,
        "size_field": args.size_field,
        "missing_walltime": args.missing_walltime,
        "missing_runtime": args.missing_runtime,
    }
    if args.cores_per_node is not None:
        options["cores_per_node"] = args.cores_per_node
    if args.stream:
        return _run_streamed(args, options, console, imports)
    from ..topology import load_fabric
    from ..workload import read_trace

    # the fabric first: a bad --system is reported before a long log is read
    fabric = load_fabric(args.system, lenient=args.lenient)
    if args.network:  # and a bad --network (a site's mix file, say)
        from ..network_spec import parse_network_spec

        parse_network_spec(args.network)
    from ..policies import check_python_policies

    check_python_policies([args.alloc], args.queue_order)  # and a module:Class that does not load
    # imported before the log is taken: the read-ahead may still be parsing it (the
    # replay's modules take about 10 ms, which the main thread would spend after it)
    from ..simulate import simulate

    workload = read_trace(args.trace, format=args.format, **options)
    t_read = time.perf_counter() - t0
    imports.wait()

    if args.transform:
        from ..transforms import transforms_for_replay

        workload = transforms_for_replay(workload, list(args.transform), fabric_nodes=fabric.n_nodes, source=str(args.trace))
    config = RunConfig(queue=args.queue, alloc=args.alloc, **run_options(args, queues=[args.queue], allocs=[args.alloc]))
    t1 = time.perf_counter()
    from ..progress import Progress, log

    log.info("read %s jobs from %s in %.1f s", f"{len(workload):,}", args.trace, t_read)
    with Progress("replaying", total=len(workload), unit="jobs submitted", console=console, quiet=args.quiet) as bar:
        result = simulate(workload, fabric, config, progress=bar.update)
        if not result.summary["complete"]:
            bar.interrupted()
    t_sim = time.perf_counter() - t1
    paths = result.write(args.out)
    if console is not None:
        from ..reporting.terminal import terminal_summary

        console.print(terminal_summary(result, read_s=t_read, sim_s=t_sim))
        console.print(f"results in {Path(args.out)}/ ({', '.join(p.name for p in paths.values())})")
    if not result.summary["complete"]:
        print("interrupted: the results hold the jobs finished so far (summary.json says complete: false)", file=sys.stderr)
        return 130
    return 0


def _run_streamed(args: argparse.Namespace, options: dict[str, Any], console: Any, imports: BackgroundImports) -> int:
    """``--stream``: toposched.stream reads, replays and writes in one go."""
    from ..config import RunConfig
    from ..progress import Progress
    from ..stream import DEFAULT_CHUNK_JOBS, check_streamable, simulate_stream
    from ..topology import load_fabric

    config = RunConfig(queue=args.queue, alloc=args.alloc, **run_options(args, queues=[args.queue], allocs=[args.alloc]))
    check_streamable(config, format=args.format, transforms=list(args.transform))
    fabric = load_fabric(args.system, lenient=args.lenient)
    imports.wait()
    t0 = time.perf_counter()
    with Progress("replaying (streamed)", total=None, unit="jobs submitted", console=console, quiet=args.quiet) as bar:
        run = simulate_stream(args.trace, fabric, config, args.out, chunk_jobs=args.stream_chunk_jobs or DEFAULT_CHUNK_JOBS, read_options=options, progress=bar.update, format=args.format)
        if not run.summary["complete"]:
            bar.interrupted()
    t_sim = time.perf_counter() - t0
    if console is not None:
        from ..reporting.terminal import terminal_summary

        console.print(terminal_summary(run))
        console.print(f"read, replayed and written in {t_sim:.2f} s (streamed)")
        console.print(f"results in {Path(args.out)}/ ({', '.join(p.name for p in run.paths.values())})")
    if not run.summary["complete"]:
        print("interrupted: the results hold the jobs finished so far (summary.json says complete: false)", file=sys.stderr)
        return 130
    return 0


def _check_policy_options(args: argparse.Namespace) -> None:
    """Refuse options the chosen policies do not read: silently ignoring them would let a
    user believe a run used them."""
    from ..errors import InputError

    from ..profiles import profile_flags
    from ..registry import policy

    if args.alloc == "as-logged":
        # the log's own starts, nodes and run times: no queue runs, nothing is killed; these
        # were accepted, did nothing, and were recorded in the summary as if used
        unused = [
            flag for flag, used in (
                ("--queue", args.queue != "easy"),
                ("--queue-order", args.queue_order is not None),
                ("--switches", args.switches is not None),
                ("--queue-depth", args.queue_depth is not None),
                ("--event-order", args.event_order is not None),
                ("--run-on" if args.kill_at_limit is False else "--kill-at-limit", args.kill_at_limit is not None),
                ("--profile", args.profile is not None),
            ) if used
        ]
        if unused:
            raise InputError(unused[0], "has no effect with --alloc as-logged, which replays the log's own start times, nodes and run times (docs/as-logged.md)")
    python_alloc = ":" in args.alloc
    # node-set reservations (isolated, capped): what EASY's reservation options act on
    node_sets = getattr(policy(args.alloc), "fungible", True) is False
    given = {
        # nothing else reads it: a policy written in Python is given no seed, and the network
        # model draws with its spec's seed= (both were accepted, recorded, and unused)
        "--seed": (args.seed is not None, args.alloc == "random", "--alloc random (the network model's traffic draws take the spec's seed=, e.g. --network random,seed=3"
                   + ("; a policy written in Python seeds its own generator, docs/python-policies.md)" if python_alloc else ")")),
        "--leaf-order": (args.leaf_order is not None, args.alloc == "isolated", "--alloc isolated"),
        "--tie-break": (args.tie_break is not None, args.alloc == "isolated", "--alloc isolated"),
        "--slurm-profile": (args.slurm_profile is not None, args.alloc == "slurm-tree", "--alloc slurm-tree"),
        "--flux-window": (args.flux_window, args.queue == "easy" and node_sets, "--queue easy --alloc isolated (or another node-set policy)"),
        "--reserved-tiers-always": (args.reserved_tiers_always, args.queue == "easy" and node_sets, "--queue easy --alloc isolated (or another node-set policy)"),
        # only the isolated policy promises interference-free placements (a policy written
        # in Python may, and is checked)
        "--check-invariants": (args.check_invariants, args.alloc == "isolated" or python_alloc, "--alloc isolated"),
        # conservative reserves every queued job (docs/semantics.md: the depth does not apply)
        "--queue-depth": (args.queue_depth is not None, args.queue != "conservative", "every queue but conservative"),
    }
    for flag, (used, applies, needs) in given.items():
        if used and not applies:
            raise InputError(flag, f"has no effect with --queue {args.queue} --alloc {args.alloc}; it applies to {needs}")
    # A profile's values are checked as the same flags given would be (a flag given
    # overrides its value, and was checked above): a profile that sets what the run
    # does not use would otherwise be taken for having been applied.
    idle = [
        (flag, value, given[flag][2])
        for flag, value in profile_flags(args.profile).items()
        if getattr(args, flag[2:].replace("-", "_")) in (None, False) and not given[flag][1]
    ]
    if idle:
        sets = ", ".join(f"{flag} {value}" if value is not True else flag for flag, value, _ in idle)
        by_need: dict[str, list[str]] = {}
        for flag, _, n in idle:
            by_need.setdefault(n, []).append(flag)
        needs = "; ".join(f"{', '.join(flags)}: {n}" for n, flags in by_need.items())
        raise InputError(
            "--profile",
            f"{args.profile} sets {sets}, which {'has' if len(idle) == 1 else 'have'} no effect with --queue {args.queue} --alloc {args.alloc} "
            f"(they apply to {needs}); choose those policies, or give the flags that apply without the profile",
        )


"""Argument types shared by the subcommands (not itself a command: the name starts with _).

Each type checks its value completely when the command line is read, before any work:
a bad value is a usage error (exit status 2) naming the flag (docs/reliability.md).
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from ..profiles import profile_settings

if TYPE_CHECKING:
    from ..registry import PolicyOption

from ..limits import MAX_COUNT, SEED_MAX


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    """An integer of at least 1 and below 2^31, for argparse ``type=``."""
    v = _whole(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    if v >= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be below 2^31, got {v}")
    return v


def nonnegative_int(text: str) -> int:
    """An integer from 0 to below 2^31, for argparse ``type=``."""
    v = _whole(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {v}")
    if v >= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be below 2^31, got {v}")
    return v


def positive_number(text: str) -> float:
    """A finite number above 0, for argparse ``type=``."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text!r}")
    return v


def module_class(text: str) -> str:
    """A ``module:Class`` import path (a queue order written in Python), for argparse
    ``type=``: there are no built-in queue orders, and a bare name reached the engine,
    which refused it as an internal error."""
    module, sep, attr = text.partition(":")
    if not sep or not module or not attr:
        raise argparse.ArgumentTypeError(f"expected MODULE:CLASS, a QueueOrder written in Python (docs/python-policies.md), got {text!r}; the queue policy itself is --queue")
    return text


def add_executor_arguments(g: Any, workers_flag: str) -> None:
    """Where the runs go (shared by sweep, compare and frontier): a local process pool by
    default, Dask when asked."""
    if workers_flag == "--workers":
        g.add_argument("--workers", type=positive_int, metavar="N", help="worker processes on this machine (default: its cores)")
    g.add_argument("--dask", action="store_true", help="run on a local Dask cluster instead of a plain process pool")
    g.add_argument("--scheduler", metavar="ADDRESS", help="address of a running Dask scheduler (e.g. tcp://host:8786)")
    g.add_argument("--scheduler-file", metavar="FILE", help="a Dask scheduler file (dask scheduler --scheduler-file, dask-mpi)")


def executor_error(scheduler: str | None, scheduler_file: str | None, workers: int | None, workers_flag: str) -> str | None:
    """The one-line error for flags that do not go together, or None."""
    if scheduler and scheduler_file:
        return "give --scheduler or --scheduler-file, not both"
    if workers and (scheduler or scheduler_file):
        return f"{workers_flag} sets the number of local worker processes; with --scheduler the cluster is yours"
    return None


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """The "what to replay" group of the commands that run a matrix on one workload and one
    fabric (compare, frontier): --trace, --format, --lenient, --system, --transform."""
    from ..workload import FORMATS

    g = parser.add_argument_group("what to replay")
    g.add_argument("--trace", required=True, metavar="LOG", help="job log: SWF (.swf, .swf.gz; extended SWF with node lists), Slurm sacct -P dump, or PBS/Torque accounting log")
    g.add_argument("--format", choices=FORMATS, help="log format (default: guessed from the file)")
    g.add_argument("--lenient", action="store_true", help="skip and count malformed log records instead of stopping (and read an SWF log without a header value it cannot read, listed in the summary)")
    g.add_argument("--system", required=True, metavar="FABRIC", help="preset, fattree:K=..,S=..,P=.. or topology.conf")
    g.add_argument(
        "--transform", action="extend", nargs="+", default=[], metavar="T",
        help="workload transforms, applied in order: scale:K, days:N[@START], cores:C, cap[:N], drop[:N]",
    )


def add_matrix_output_arguments(parser: argparse.ArgumentParser, report: str) -> None:
    """The "running and output" group of compare and frontier: --jobs, the executor flags,
    --out, --no-report (``report``: the page's file name), --quiet."""
    g = parser.add_argument_group("running and output")
    g.add_argument("--jobs", type=positive_int, default=None, metavar="N", help="parallel worker processes on this machine (default: the number of CPUs)")
    add_executor_arguments(g, "--jobs")
    g.add_argument("--out", required=True, metavar="DIR", help="directory for the results")
    g.add_argument("--no-report", action="store_true", help=f"do not build {report}")
    g.add_argument("--quiet", action="store_true", help="print nothing but errors")


def add_run_options(parser: argparse.ArgumentParser, *, seed_help: str = "seed of the random policy (default: 0)") -> None:
    """The engine and policy settings every replay command accepts (simulate, compare):
    one definition, so no command silently lacks one. Resolved by :func:`run_options`.

    Flags whose value a ``--profile`` may set default to None here: an explicit flag
    overrides the profile, the profile overrides RunConfig's default."""
    from ..profiles import PROFILES

    g = parser.add_argument_group("engine and policy settings (docs/semantics.md)")
    g.add_argument("--profile", choices=tuple(PROFILES), help="set a published system's values at once; flags given override it; a value the run's policies do not read is refused, as the flag would be (flux-sc18: the SC18 flux plugin = --queue-depth 128 --flux-window --reserved-tiers-always --leaf-order flux-topo --tie-break name, for --queue easy --alloc isolated)")
    g.add_argument("--queue-order", type=module_class, metavar="MODULE:CLASS", help="reorder the queue at every pass with a QueueOrder written in Python (docs/python-policies.md)")
    g.add_argument("--seed", type=seed, help=seed_help)
    g.add_argument("--switches", type=switches, metavar="N[@SECONDS]", help="Slurm --switches for every job: wait up to SECONDS (default 300) for an allocation on at most N leaves")
    g.add_argument("--queue-depth", type=positive_int, help="consider at most this many queued jobs per pass (default: all; the flux plugin used 128)")
    g.add_argument("--event-order", choices=("per-instant", "per-event"), help="per-instant (default): at each instant all ends, then all submits, then one pass; per-event: a pass after each submit, then after each end in start order (the pyss simulator's order)")
    g.add_argument("--network", metavar="SPEC", type=network_spec_text, help="network interference model: job ends follow predicted slowdowns (bins | random | heavy | column:NAME | KEY=VALUE,... | a spec file: spec.json, spec.toml, or a site's rules as site-mix.csv; docs/network.md)")
    kill = g.add_mutually_exclusive_group()
    kill.add_argument("--run-on", dest="kill_at_limit", action="store_const", const=False, help="let jobs run past their requested time (default: killed at it, unless the SWF header says AllowOveruse: yes)")
    kill.add_argument("--kill-at-limit", dest="kill_at_limit", action="store_const", const=True, help="kill jobs at their requested time even when the log's header says AllowOveruse: yes")
    g.add_argument("--check-invariants", action="store_true", help="check the interference-free invariant after every pass (isolated, or a policy written in Python)")
    add_policy_options(parser)


def _policy_help(o: PolicyOption) -> str:
    default = "none" if o.default is None else "empty" if o.default == "" else o.default
    if o.type == "boolean":
        default = "on" if default else "off"
    text = o.description.rstrip(".")
    if text[:2].istitle():  # "With a ..." -> "with a ..." after the policy's name
        text = text[0].lower() + text[1:]
    # argparse formats help with %: a policy's own "5 %" must stay literal
    return f"{o.policy}: {text} (default: {default})".replace("%", "%%")


def _in_range(o: PolicyOption) -> Any:
    """argparse ``type=`` for an integer option: within the schema's ``minimum`` and what
    its Rust type holds (a ``u32`` option given 99999999999 was refused by the engine as
    "settings: capped: invalid value", naming no flag)."""
    from ..registry import check_integer

    if o.minimum is None and o.maximum is None:
        return int
    return _checked(int, lambda v: check_integer(o, v))


def _number_in_range(o: PolicyOption) -> Any:
    """argparse ``type=`` for a number option: finite, not below the schema's ``minimum``
    (``--slowdown-threshold -1`` reached the engine, which refused it in every run of a
    compare or frontier, after they had started)."""
    from ..registry import check_number

    return _checked(float, lambda v: check_number(o, v))


def _checked(parse: Any, why_not: Any) -> Any:
    """argparse ``type=``: ``parse(text)``, refused with ``why_not(value)`` when that is
    not None; named as ``parse`` is (argparse says "invalid int value")."""

    def check(text: str) -> Any:
        v = parse(text)
        why = why_not(v)
        if why is not None:
            raise argparse.ArgumentTypeError(why)
        return v

    check.__name__ = parse.__name__
    return check


def add_policy_options(parser: argparse.ArgumentParser) -> None:
    """One flag per option of every registered policy (``leaf_order`` -> ``--leaf-order``),
    generated from the core's registry: a new policy's options appear here without an edit.
    ``seed`` is the run's ``--seed`` (it also draws the v1/v2 scenarios), defined above."""
    from ..registry import core_policies

    for p in core_policies():  # a policy written in Python has no options
        opts = [o for o in p.options if o.name not in _RUN_LEVEL_OPTIONS]
        if not opts:
            continue
        g = parser.add_argument_group(f"{p.name} ({'queue' if p.kind == 'queue' else 'allocation'} policy) options")
        for o in opts:
            if o.type == "boolean":
                g.add_argument(o.flag, dest=o.name, action="store_const", const=True, help=_policy_help(o))
            elif o.choices is not None:
                g.add_argument(o.flag, dest=o.name, choices=o.choices, help=_policy_help(o))
            elif o.type == "integer":
                g.add_argument(o.flag, dest=o.name, type=_in_range(o), metavar="N", help=_policy_help(o))
            elif o.type == "number":
                g.add_argument(o.flag, dest=o.name, type=_number_in_range(o), metavar="X", help=_policy_help(o))
            else:
                g.add_argument(o.flag, dest=o.name, metavar="VALUE", help=_policy_help(o))


#: Registered options that are run-level flags of their own (defined in add_run_options).
_RUN_LEVEL_OPTIONS = frozenset({"seed"})


#: RunConfig fields set from flags of :func:`add_run_options` (flag dest -> field).
_RUN_FIELDS = {
    "queue_order": "queue_order",
    "switches": "switches",
    "queue_depth": "queue_depth",
    "event_order": "event_order",
    "network": "network",
    "kill_at_limit": "kill_at_walltime",
    "check_invariants": "check_interference_free",
}


def run_options(
    args: argparse.Namespace, *, queues: list[str] | tuple[str, ...] | None = None, allocs: list[str] | tuple[str, ...] | None = None, alloc_flag: str = "--alloc"
) -> dict[str, Any]:
    """RunConfig fields (without queue and alloc) from the flags of :func:`add_run_options`:
    the profile's values, then every flag actually given. A policy option given explicitly
    while none of ``queues``/``allocs`` (the policies of the command's runs) declares it is
    an error naming the policy it belongs to; so is a profile's value that no run reads
    (:func:`_check_profile`)."""
    from dataclasses import fields

    from ..errors import InputError
    from ..config import RunConfig
    from ..registry import options

    out = profile_settings(args.profile)
    if queues is not None and allocs is not None:
        _check_profile(args, out, set(queues) | set(allocs), queues)
    for dest, name in _RUN_FIELDS.items():
        value = getattr(args, dest)
        if value is not None and not (dest == "check_invariants" and value is False):
            out[name] = value
    out["seed"] = args.seed if args.seed is not None else 0
    config_fields = {f.name for f in fields(RunConfig)}
    used = set(queues or ()) | set(allocs or ())
    for o in options():
        if o.name in _RUN_LEVEL_OPTIONS:
            continue
        value = getattr(args, o.name, None)
        if value is None:
            continue
        if queues is not None and allocs is not None and o.policy not in used:
            kind = "queue" if o.kind == "queue" else "allocation"
            flag = "--queue" if o.kind == "queue" else alloc_flag
            raise InputError(o.flag, f"an option of the {kind} policy {o.policy}, which this run does not use (choose it with {flag} {o.policy})")
        if o.name in config_fields:
            out[o.name] = value
        else:
            out.setdefault("policy_options", {})[o.name] = value
    return out


def _check_profile(args: argparse.Namespace, values: dict[str, Any], used: set[str], queues: list[str] | tuple[str, ...]) -> None:
    """A profile's values are checked as the same flags given would be: one that no run
    of the command reads (an option of a policy none uses; --queue-depth with only
    conservative) is an error naming the profile. A flag given overrides its value."""
    from ..errors import InputError
    from ..profiles import PROFILE_FLAGS
    from ..registry import options

    owner = {o.name: o.policy for o in options()}
    idle = []
    for name, value in values.items():
        if getattr(args, name, None) not in (None, False):
            continue  # given: the flag's own check applies
        if name == "queue_depth":
            applies, needs = any(q != "conservative" for q in queues), "every queue but conservative"
        else:
            applies, needs = owner[name] in used, owner[name]
        if not applies:
            idle.append(f"{PROFILE_FLAGS[name]}" + ("" if value is True else f" {value}") + f" (for {needs})")
    if idle:
        raise InputError("--profile", f"{args.profile} sets {', '.join(idle)}, which no run of this command uses; choose those policies, or give the flags that apply without the profile")


def seed(text: str) -> int:
    """A random seed: 0 to 2^64 - 1 (what the engine's generators take)."""
    v = _whole(text)
    if not 0 <= v <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2^64 - 1, got {v}")
    return v


def switches(text: str) -> str:
    """Slurm ``--switches`` as ``N`` or ``N@SECONDS``, checked, kept as written."""
    from ..simulate import parse_switches

    try:
        parse_switches(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def network_spec_text(text: str) -> str:
    """``--network SPEC``, not empty: ``--network "$NET"`` with NET unset ran without the
    model, and ``--network ,`` with the default one, each without a word."""
    if text.replace(",", "").strip() == "":
        raise argparse.ArgumentTypeError(f"expected a SPEC (bins, random, heavy, column:NAME, KEY=VALUE,... or a spec file), got {text!r}; leave --network out to run without the model")
    return text


def output_dir(text: str) -> str:
    """A directory name for results: not empty (the check that it can be written, and
    holds nothing else, runs before the work: files.check_output_dir)."""
    if text.strip() == "":
        raise argparse.ArgumentTypeError("expected a directory name, got an empty one")
    return text

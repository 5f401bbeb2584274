"""The same job stream through a real Slurm and through toposched, job by job.

``validate(fabric, stream, ...)`` starts a real Slurm 22.05 (``slurmlab.SlurmLab``: MariaDB,
slurmdbd, slurmctld, one ``slurmd -N`` per node, topology/tree from the fabric) with the
chosen select plugin and scheduler, submits the stream in real time (``sleep`` jobs),
collects what Slurm did, and compares it with toposched in two ways:

*decision* (the allocation algorithm alone): for every job, in the order Slurm started
them, the nodes toposched's ``slurm-tree`` allocator (profile matching the select plugin)
picks in *exactly the state Slurm was in* at that instant (the jobs running then, from the
controller's log, millisecond order), against the nodes Slurm picked. Then Slurm's choice
is applied, so one difference never cascades. This is what "identical node sets" measures.

*replay* (allocation and scheduling together): the stream replayed by toposched's engine
from Slurm's submit times and observed run times (milliseconds, so that the order of
events is Slurm's), with the queue policy matching the scheduler; per job: same node set,
start-time difference, and the first job where the replay departs from Slurm with both
states at that instant.

Event times and order come from slurmctld's log (``sched: Allocate JobId=..`` /
``sched/backfill: _start_job: Started JobId=..`` / ``_job_complete: JobId=.. done``, stamped
to the millisecond); node lists, submit/start/end and states are cross-checked against
``sacct`` (slurmdbd) at second resolution. Documented in docs/validation.md.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import hostlist
import numpy as np

from ..errors import InputError
from ..nodelists import node_lists
from ..topology import Fabric

if TYPE_CHECKING:
    from ..results import SimResult
    from .slurmlab import SlurmLab

#: select plugin -> slurm-tree profile that models it
PROFILE_OF_SELECT = {"linear": "select-linear", "cons_tres": "cons-tres"}
#: Slurm scheduler -> toposched queue policy of the replay (times in milliseconds)
QUEUE_OF_SCHEDULER = {"builtin": "slurm", "backfill": "slurm-bf"}
#: select plugin -> the will-run test's grouping of ending jobs (queue slurm-bf's bf_will_run_window_s)
WILL_RUN_WINDOW_OF_SELECT = {"linear": 0, "cons_tres": 30}
#: SchedulerParameters -> (slurm-bf option, factor); Slurm's bf_window is in minutes
_BF_PARAMETERS = {
    "bf_interval": ("bf_interval_s", 1), "bf_window": ("bf_window_s", 60), "bf_resolution": ("bf_resolution_s", 1),
    "bf_max_job_test": ("bf_max_job_test", 1), "batch_sched_delay": ("batch_sched_delay_s", 1),
}


def scheduler_options(text: str) -> tuple[dict[str, int | bool], list[str]]:
    """slurm.conf ``SchedulerParameters`` -> (options of queue ``slurm-bf`` and ``slurm``, the
    parameters they do not model). Slurm reads each as a case-insensitive ``KEY=`` and
    ``atoi`` (``_load_config``); a value that is not a number is refused here."""
    opts: dict[str, int | bool] = {}
    ignored = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        key, _, value = item.partition("=")
        key = key.lower()
        if key == "bf_continue":
            opts["bf_continue"] = True
        elif key in _BF_PARAMETERS:
            name, factor = _BF_PARAMETERS[key]
            m = re.match(r"-?\d+", value)
            if not m:
                raise InputError("SchedulerParameters", f"{key}={value!r} is not a whole number")
            opts[name] = int(m.group(0)) * factor
        else:
            ignored.append(item)
    return opts, ignored


#: slurm.conf Priority* key -> option of queue ``slurm`` (``slurm-bf``: the same under ``sched_``)
_PRIORITY_KEYS = {
    "PriorityWeightAge": "priority_weight_age", "PriorityWeightJobSize": "priority_weight_job_size",
    "PriorityMaxAge": "priority_max_age_s", "PriorityCalcPeriod": "priority_calc_period_s", "PriorityFavorSmall": "priority_favor_small",
    "PriorityWeightFairshare": "priority_weight_fairshare", "PriorityWeightQOS": "priority_weight_qos",
    "PriorityDecayHalfLife": "priority_decay_half_life_s", "PriorityWeightPartition": "priority_weight_partition",
}


def _slurm_minutes(key: str, value: str, where: str = "--multifactor") -> int:
    """A slurm.conf duration as ``time_str2mins`` reads it: MINUTES, or DAYS-HOURS[:MINUTES].
    ``where``: the flag (or file) it came from, named in the error."""
    m = re.fullmatch(r"(\d+)-(\d+)(?::(\d+))?|(\d+)", value.strip())
    if not m:
        raise InputError(where, f"{key}={value!r}: expected minutes or days-hours[:minutes]")
    if m.group(4) is not None:
        return int(m.group(4))
    return int(m.group(1)) * 1440 + int(m.group(2)) * 60 + int(m.group(3) or 0)


def multifactor_conf(text: str) -> list[str]:
    """``--multifactor PriorityWeightAge=1000,PriorityMaxAge=2,...`` -> slurm.conf lines
    (``PriorityType=priority/multifactor`` first); only the keys the replay models."""
    lines = ["PriorityType=priority/multifactor"]
    for item in (x.strip() for x in text.split(",") if x.strip()):
        key, eq, value = item.partition("=")
        if not eq or key.strip().lower() not in {k.lower() for k in _PRIORITY_KEYS}:
            raise InputError("--multifactor", f"{item!r}: expected KEY=VALUE with KEY one of {', '.join(_PRIORITY_KEYS)}")
        lines.append(f"{key.strip()}={value.strip()}")
    priority_options("\n".join(lines))  # refuse a bad value before Slurm starts
    return lines


def priority_options(conf: str) -> dict[str, int | bool]:
    """slurm.conf text -> the ``slurm`` queue policy's priority options ({} under
    ``priority/basic``). Weights are whole numbers (``uint32``); PriorityMaxAge and
    PriorityCalcPeriod are in minutes in slurm.conf (``read_config.c``: ``time_str2mins * 60``)."""
    if _conf_value(conf, "PriorityType") != "priority/multifactor":
        return {}
    opts: dict[str, int | bool] = {}
    for key, name in _PRIORITY_KEYS.items():
        value = _conf_value(conf, key)
        if not value:
            continue
        if name == "priority_favor_small":
            opts[name] = value.lower() in ("yes", "y", "1", "true")
        elif name.endswith("_s"):
            opts[name] = _slurm_minutes(key, value) * 60
        elif value.isdigit():
            opts[name] = int(value)
        else:
            raise InputError("--multifactor", f"{key}={value!r} is not a whole number")
    return opts


@dataclass(frozen=True)
class StreamJob:
    """One job of a stream, already compressed to run on a lab Slurm."""

    name: str
    at_s: float  # arrival, seconds after the stream starts
    nodes: int
    run_s: int  # the job sleeps this long
    limit_min: int  # sbatch --time (Slurm keeps time limits in minutes)
    account: str = ""  # sbatch --account ("": the user's default, root's account root)
    qos: str = ""  # sbatch --qos ("": the association's default, normal)
    partition: str = ""  # sbatch -p ("": the lab's default partition)


@dataclass(frozen=True)
class PartitionSpec:
    """One partition of the lab (``--partitions``): its nodes and limits as slurm.conf has them."""

    name: str
    nodes: tuple[str, ...]
    max_time_min: int | None = None  # MaxTime (None: INFINITE)
    max_nodes: int | None = None  # MaxNodes (None: UNLIMITED)
    min_nodes: int = 0  # MinNodes
    priority_tier: int = 1  # PriorityTier (Slurm's default 1)
    priority_job_factor: int = 1  # PriorityJobFactor (multifactor's partition factor; default 1)

    def conf_line(self, default: bool) -> str:
        return (f"PartitionName={self.name} Nodes={hostlist.collect_hostlist(list(self.nodes))} Default={'YES' if default else 'NO'} "
                f"MaxTime={self.max_time_min if self.max_time_min is not None else 'INFINITE'} "
                f"MaxNodes={self.max_nodes if self.max_nodes is not None else 'UNLIMITED'} MinNodes={self.min_nodes} "
                f"PriorityTier={self.priority_tier} PriorityJobFactor={self.priority_job_factor} State=UP")


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets (hostlists such as n[00-03,08] keep theirs)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [x.strip() for x in out if x.strip()]


def parse_partitions(text: str, node_names: list[str]) -> list[PartitionSpec]:
    """``--partitions 'a=n[00-15]:MaxTime=2:MaxNodes=12,b=n[08-31]'`` -> partitions (the first
    is the default). MaxTime in minutes (or days-hours[:minutes]), MaxNodes, MinNodes, PriorityTier,
    PriorityJobFactor."""
    parts: list[PartitionSpec] = []
    known = set(node_names)
    for item in _split_top(text):
        head, *fields = item.split(":")
        name, eq, nodes_text = head.partition("=")
        name = name.strip()
        if not eq or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,30}", name):
            raise InputError("--partitions", f"{item!r}: expected NAME=NODES[:MaxTime=MIN][:MaxNodes=N][:MinNodes=N][:PriorityTier=N][:PriorityJobFactor=N]")
        try:
            nodes = hostlist.expand_hostlist(nodes_text.strip())
        except hostlist.BadHostlist:
            nodes = []
        if not nodes or any(n not in known for n in nodes):
            raise InputError("--partitions", f"{item!r}: {nodes_text!r} is not a list of the fabric's nodes ({hostlist.collect_hostlist(node_names)})")
        limits: dict[str, int | None] = {}
        for f in fields:
            key, eq, value = f.partition("=")
            key = key.strip().lower()
            if not eq or key not in ("maxtime", "maxnodes", "minnodes", "prioritytier", "priorityjobfactor"):
                raise InputError("--partitions", f"{item!r}: {f!r} is not MaxTime=, MaxNodes=, MinNodes=, PriorityTier= or PriorityJobFactor=")
            if key == "maxtime":
                limits[key] = _slurm_minutes("MaxTime", value, "--partitions")
            elif value.strip().isdigit() and (key not in ("prioritytier", "priorityjobfactor") or int(value) <= 65533):
                limits[key] = int(value)
            else:
                raise InputError("--partitions", f"{item!r}: {key}={value!r} is not a whole number")
        if name in {p.name for p in parts}:
            raise InputError("--partitions", f"partition {name} is given twice")
        tier, factor = limits.get("prioritytier"), limits.get("priorityjobfactor")
        parts.append(PartitionSpec(name, tuple(sorted(set(nodes), key=node_names.index)), limits.get("maxtime"), limits.get("maxnodes"), limits.get("minnodes") or 0,
                                   1 if tier is None else tier, 1 if factor is None else factor))
    return parts


def partitions_from_conf(conf: str) -> list[PartitionSpec]:
    """slurm.conf text -> its partitions in order (the lab writes the default first)."""
    parts = []
    for line in conf.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line.lower().startswith("partitionname="):
            continue
        kv = {k.lower(): v for k, _, v in (w.partition("=") for w in line.split())}
        mt, mx = kv.get("maxtime", "INFINITE"), kv.get("maxnodes", "UNLIMITED")
        parts.append(PartitionSpec(
            kv["partitionname"], tuple(hostlist.expand_hostlist(kv["nodes"])),
            None if mt.upper() in ("INFINITE", "UNLIMITED") else _slurm_minutes("MaxTime", mt, "slurm.conf"),
            None if mx.upper() in ("INFINITE", "UNLIMITED") else int(mx), int(kv.get("minnodes", "0")), int(kv.get("prioritytier", "1")),
            int(kv.get("priorityjobfactor", "1")),
        ))
    return parts


def partition_option(parts: list[PartitionSpec], node_names: list[str]) -> str:
    """The ``slurm`` / ``slurm-bf`` option for the replay: ``ID=NODES[:max_time_s=..]...;...``,
    ID the partition's index (the Workload's partition_id), NODES the fabric's node ids."""
    index = {n: i for i, n in enumerate(node_names)}
    out = []
    for k, p in enumerate(parts):
        ids = sorted(index[n] for n in p.nodes)
        runs: list[list[int]] = []
        for i in ids:
            if runs and i == runs[-1][1] + 1:
                runs[-1][1] = i
            else:
                runs.append([i, i])
        text = f"{k}=" + "+".join(f"{a}-{b}" if a != b else f"{a}" for a, b in runs)
        if p.max_time_min is not None:
            text += f":max_time_s={p.max_time_min * 60}"
        if p.max_nodes is not None:
            text += f":max_nodes={p.max_nodes}"
        if p.min_nodes:
            text += f":min_nodes={p.min_nodes}"
        if any(q.priority_tier != parts[0].priority_tier for q in parts):
            text += f":priority_tier={p.priority_tier}"
        if p.priority_job_factor != 1:
            text += f":priority_job_factor={p.priority_job_factor}"
        out.append(text)
    return ";".join(out)


def random_stream(n_jobs: int, n_nodes: int, seed: int, arrival_span_s: float = 60.0, max_run_s: int = 8,
                  accounts: int = 0, qos: tuple[str, ...] = (), partitions: tuple[PartitionSpec, ...] = ()) -> list[StreamJob]:
    """n_jobs jobs, sizes 1..n_nodes skewed small (as in real logs: half of them at most 4
    nodes), run 1..max_run_s s, Poisson-like arrivals over arrival_span_s. With ``accounts``,
    each job charges one of a0, a1, ... (a0 the busiest: account k drawn with weight
    accounts - k, so that fair-share has usage to tell apart); with ``qos``, each job asks for
    one of these QOS, uniformly. Both are drawn from a generator of their own, so the sizes,
    runs and arrivals of a seed stay the same with or without them. With ``partitions``,
    each job asks for one of them, uniformly (a generator of its own), and its size is drawn
    as above within that partition's node count (a job larger than its partition is refused
    at submission, not held; MaxNodes and MaxTime are not considered, so some jobs exceed them)."""
    rng = random.Random(seed)
    assoc_rng = random.Random(f"{seed}-accounts")
    part_rng = random.Random(f"{seed}-partitions")
    jobs, t = [], 0.0
    for i in range(n_jobs):
        t += rng.expovariate(n_jobs / arrival_span_s)
        part = part_rng.choice(partitions) if partitions else None
        size = len(part.nodes) if part else n_nodes
        if rng.random() < 0.5:
            nodes = rng.randint(1, min(4, size))
        else:
            nodes = rng.randint(1, size)
        run = rng.randint(1, max_run_s)
        account = f"a{assoc_rng.choices(range(accounts), weights=range(accounts, 0, -1))[0]}" if accounts else ""
        q = assoc_rng.choice(qos) if qos else ""
        jobs.append(StreamJob(f"r{seed}-{i}", round(t, 3), nodes, run, 1 + run // 60 + rng.randint(0, 2), account, q, part.name if part else ""))
    return jobs


def qos_priorities(text: str) -> dict[str, int]:
    """``--qos hi=100,lo=10`` -> {QOS name: priority}; ``normal`` (Slurm's own QOS, priority 0
    unless given) always included. Names as sacctmgr takes them."""
    out: dict[str, int] = {"normal": 0}
    given: set[str] = set()
    for item in (x.strip() for x in text.split(",") if x.strip()):
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,30}", name.strip()) or not value.strip().isdigit() or int(value) > 2**32 - 2:
            raise InputError("--qos", f"{item!r}: expected NAME=PRIORITY (a name of letters, digits and _, a whole number below 2^32 - 1)")
        if name.strip() in given:
            raise InputError("--qos", f"QOS {name.strip()} is given twice")
        given.add(name.strip())
        out[name.strip()] = int(value)
    return out


def accounting_setup(stream: list[StreamJob], qos: dict[str, int]) -> list[list[str]]:
    """The sacctmgr commands that give the lab the stream's accounts (directly under root,
    shares 1, user root in each: a flat tree) and the QOS with their priorities."""
    cmds = []
    for name, prio in qos.items():
        if name != "normal":
            cmds.append(["sacctmgr", "-i", "add", "qos", name])
        cmds.append(["sacctmgr", "-i", "modify", "qos", "where", f"name={name}", "set", f"priority={prio}"])
    accounts = sorted({j.account for j in stream if j.account})
    if accounts:
        cmds.append(["sacctmgr", "-i", "add", "account", ",".join(accounts), "parent=root", "fairshare=1"])
        cmds.append(["sacctmgr", "-i", "add", "user", "root", f"account={','.join(accounts)}", "fairshare=1", f"qos={','.join(qos)}"])
    if len(qos) > 1:
        cmds.append(["sacctmgr", "-i", "modify", "user", "root", "set", f"qos={','.join(qos)}"])
    return cmds


def association_options(stream: list[StreamJob], qos: dict[str, int]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The replay's view of the lab's associations: (account_id, user_id, qos_id for the
    stream's jobs in order, and the options ``priority_qos`` and ``priority_fs_tree``).
    Accounts numbered in name order, QOS in ``qos``'s order (a job without one: normal);
    every job is root's (user 0), and root's own association (user root directly under
    root, account root: the warm-up job's) is in the tree as ``root/0``."""
    accounts = {a: k for k, a in enumerate(sorted({j.account for j in stream if j.account}))}
    qos_id = {q: k for k, q in enumerate(qos)}
    cols = {
        "account_id": np.array([accounts.get(j.account, -1) for j in stream], dtype=np.int64),
        "user_id": np.zeros(len(stream), dtype=np.int64),
        "qos_id": np.array([qos_id[j.qos or "normal"] for j in stream], dtype=np.int64),
    }
    opts = {"priority_qos": ";".join(f"{qos_id[q]}:{p}" for q, p in qos.items()),
            "priority_fs_tree": ";".join(["root/0", *(f"{k}:1" for k in accounts.values())])}
    return cols, opts


def swf_stream(path: Path, *, cores_per_node: int, max_nodes: int, first_job: int = 0, n_jobs: int = 200,
               arrival_span_s: float = 60.0, run_compression: float = 200.0, max_run_s: int = 20) -> list[StreamJob]:
    """A window of an SWF log: job sizes kept (procs / cores_per_node, jobs over max_nodes
    dropped), arrivals spread over arrival_span_s keeping their spacing, run times divided
    by run_compression (1..max_run_s s), time limits divided likewise (whole minutes)."""
    rows = []
    for lineno, ln in enumerate(Path(path).read_text().splitlines(), 1):
        if ln.startswith(";") or not ln.strip():
            continue
        f = ln.split()
        if len(f) < 9 or not all(x.lstrip("-").isdigit() for x in f[:9]):
            raise InputError(str(path), f"not an SWF job line (18 whole numbers expected): {ln[:60]!r}", line=lineno)
        job_id, submit, run, procs, req_procs, req_time = int(f[0]), int(f[1]), int(f[3]), int(f[4]), int(f[7]), int(f[8])
        procs = procs if procs > 0 else req_procs
        nodes = math.ceil(procs / cores_per_node) if procs > 0 else 0
        if 1 <= nodes <= max_nodes and run > 0:
            rows.append((job_id, submit, nodes, run, max(req_time, run)))
    rows = rows[first_job : first_job + n_jobs]
    if not rows:
        raise InputError(str(path), f"no job of 1..{max_nodes} nodes in the window", hint="--first-job, --jobs, --cores-per-node")
    t0, t1 = rows[0][1], rows[-1][1]
    jobs = []
    for job_id, submit, nodes, run, req in rows:
        run_s = min(max_run_s, max(1, math.ceil(run / run_compression)))
        limit_min = max(1, math.ceil(max(req / run_compression, run_s) / 60))
        jobs.append(StreamJob(f"swf{job_id}", round((submit - t0) * arrival_span_s / max(1, t1 - t0), 3), nodes, run_s, limit_min))
    return jobs


# --- Slurm side -----------------------------------------------------------------------

_LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] (.*)$")
# main scheduler: "sched: Allocate JobId=.. NodeList=.."; backfill (backfill.c _start_job):
# "[sched/backfill: _start_job: ]Started JobId=.. in PARTITION on NODES"
_START = re.compile(r"(?:sched: Allocate|Started) JobId=(\d+) (?:NodeList=|in \S+ on )(\S+)")
_DONE = re.compile(r"_job_complete: JobId=(\d+) done")
_EPILOG = re.compile(r"_slurm_rpc_epilog_complete: JobId=(\d+) Node=(\S+)")
_SUBMIT = re.compile(r"_slurm_rpc_submit_batch_job: JobId=(\d+) ")
# job_limits_check (job_mgr.c, debug2), at every pass for a job beyond its partition's limits
_HELD = re.compile(r"JobId=(\d+) can't run in partition \S+: (.*)$")
#: _part_access_check's error (slurm_strerror) -> the pending reason job_limits_check gives
_HELD_REASONS = {"Requested time limit is invalid (missing or exceeds some limit)": "PartitionTimeLimit",
                 "Node count specification invalid": "PartitionNodeLimit"}
#: the pending reasons of a job a partition limit holds (squeue %r)
PARTITION_REASONS = ("PartitionTimeLimit", "PartitionNodeLimit")
# backfill.c _attempt_backfill: debug("beginning") at the start of every cycle
_BF_CYCLE = re.compile(r"backfill\S*: beginning")
# priority/multifactor (priority_multifactor.c, debug2): at submission (priority_p_set) and at
# every recalculation of the decay thread (decay_apply_weighted_factors)
_PRIO_INITIAL = re.compile(r"initial priority for job (\d+) is (\d+)")
_PRIO_RECALC = re.compile(r"priority for job (\d+) is now (\d+)")
# the plugin's init starts the decay thread, whose runs follow every PriorityCalcPeriod
_PRIO_INIT = re.compile(r"Priority MULTIFACTOR plugin loaded")


@dataclass
class SlurmJob:
    name: str
    job_id: int
    nodes_asked: int
    submit_ms: int  # milliseconds after the stream started (controller's clock)
    start_ms: int
    end_ms: int
    nodes: list[str]
    #: node -> when the controller had it back (its epilog completed), ms
    freed_ms: dict[str, int]
    state: str
    limit_min: int
    by_backfill: bool = False
    #: priority/multifactor: the priority Slurm gave it at submission (None: not logged)
    initial_priority: int | None = None
    #: line numbers in the controller's log of the start and of each node's return: the
    #: order of events within one millisecond
    start_seq: int = 0
    freed_seq: dict[str, int] = field(default_factory=dict)
    account: str = ""
    qos: str = ""
    partition: str = ""
    #: the pending reason of a job a partition limit held (it never started; start_ms -1)
    held_reason: str = ""


class CtldRecord(TypedDict, total=False):
    """One job's events in the controller's log (a key is absent until its line is seen);
    ``*_seq``: the line number, the order of events within one millisecond."""

    submit: datetime
    start: datetime
    start_seq: int
    nodes: list[str]
    backfill: bool
    end: datetime
    freed: dict[str, datetime]  # node -> its epilog completed
    freed_seq: dict[str, int]
    #: the reason a partition limit keeps it pending (job_limits_check), first seen
    held_reason: str
    #: priority/multifactor: the priority given at submission, and each recalculated one
    initial_priority: int
    priorities: list[tuple[datetime, int]]
    #: only under key -1: when sched/backfill's cycles began
    backfill_cycles: list[datetime]
    #: only under key -1: when the decay thread recalculated priorities (its first line each time)
    priority_recalcs: list[datetime]
    #: only under key -1: when priority/multifactor started its decay thread
    priority_init: datetime


def parse_ctld_log(text: str) -> dict[int, CtldRecord]:
    """JobId -> {submit, start, end (datetime), nodes, backfill, freed {node: datetime}}
    from slurmctld's log (SlurmctldDebug=debug2); key -1, if present, holds
    ``{"backfill_cycles": [datetime, ...]}``, when sched/backfill's cycles began.

    A node of an ended job is not free at ``_job_complete``: Slurm keeps it COMPLETING until
    the node's epilog completes (``_slurm_rpc_epilog_complete``, logged under the controller's
    lock, so before any scheduling pass that sees the node free). The lab runs an Epilog so
    that every node sends that message (without one, slurmd answers the terminate request
    "already complete" and the controller frees the node unlogged)."""
    out: dict[int, CtldRecord] = {}
    cycles: list[datetime] = []
    recalcs: list[datetime] = []
    init: datetime | None = None
    completing: dict[str, int] = {}  # node -> ended job still holding it
    for seq, line in enumerate(text.splitlines()):
        m = _LOG_TIME.match(line)
        if not m:
            continue
        t = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
        msg = m.group(2)
        if _BF_CYCLE.search(msg):
            cycles.append(t)
        if _PRIO_INIT.search(msg):
            init = t
            continue
        if p := _PRIO_INITIAL.search(msg):
            out.setdefault(int(p.group(1)), {})["initial_priority"] = int(p.group(2))
            continue
        if p := _PRIO_RECALC.search(msg):
            out.setdefault(int(p.group(1)), {}).setdefault("priorities", []).append((t, int(p.group(2))))
            # one recalculation logs every pending job within a few ms
            if not recalcs or (t - recalcs[-1]).total_seconds() > 1:
                recalcs.append(t)
            continue
        if h := _HELD.search(msg):
            out.setdefault(int(h.group(1)), {}).setdefault("held_reason", _HELD_REASONS.get(h.group(2).strip(), h.group(2).strip()))
            continue
        if s := _SUBMIT.search(msg):
            out.setdefault(int(s.group(1)), {})["submit"] = t
        elif s := _START.search(msg):
            rec = out.setdefault(int(s.group(1)), {})
            rec["start"], rec["start_seq"], rec["nodes"], rec["backfill"] = t, seq, hostlist.expand_hostlist(s.group(2)), "Allocate" not in msg
        elif s := _DONE.search(msg):
            job = int(s.group(1))
            rec = out.setdefault(job, {})
            rec["end"] = t
            for n in rec.get("nodes", []):
                completing[n] = job
        elif s := _EPILOG.search(msg):
            node = s.group(2)
            ended = completing.pop(node, None)
            if ended is not None:
                out[ended].setdefault("freed", {})[node] = t
                out[ended].setdefault("freed_seq", {})[node] = seq
    if cycles or recalcs or init:
        out[-1] = {"backfill_cycles": cycles, "priority_recalcs": recalcs}
        if init:
            out[-1]["priority_init"] = init
    return out


def recorded_log(text: str) -> str:
    """The lines of a controller log that ``parse_ctld_log`` reads, in order: a run small
    enough to keep as test data (tests/data/slurm-lab) and compare again with --from-lab."""
    wanted = (_BF_CYCLE, _PRIO_INIT, _PRIO_INITIAL, _PRIO_RECALC, _SUBMIT, _START, _DONE, _EPILOG, _HELD)
    keep, held = [], set()
    for ln in text.splitlines():
        if (m := _LOG_TIME.match(ln)) and any(r.search(m.group(2)) for r in wanted):
            if h := _HELD.search(m.group(2)):
                # logged at every pass: the first line of each job says it all
                if h.group(1) in held:
                    continue
                held.add(h.group(1))
            keep.append(ln)
    return "\n".join(keep) + "\n"


def run_on_slurm(workdir: Path, fabric: Fabric, stream: list[StreamJob], *, select: str, scheduler: str,
                 scheduler_parameters: str = "", multifactor: str = "", timeout_s: float = 900, qos: dict[str, int] | None = None,
                 partitions: tuple[PartitionSpec, ...] = ()) -> "SlurmJobs":
    """Start a lab Slurm, submit the stream in real time, wait for every job, read back.
    ``qos``: the QOS and their priorities (:func:`qos_priorities`), made with sacctmgr with
    the stream's accounts before the controller starts."""
    from .slurmlab import SlurmLab

    qos = qos or {"normal": 0}
    lab = SlurmLab(
        Path(workdir), fabric.spec, hold_with_lua=False, select_type=f"select/{select}", scheduler_type=f"sched/{scheduler}",
        scheduler_parameters=scheduler_parameters, ctld_debug="debug2", epilog=True,
        extra_conf=tuple(multifactor_conf(multifactor)) if multifactor else (),
        accounting_setup=tuple(tuple(c) for c in accounting_setup(stream, qos)),
        partition=partitions[0].name if partitions else "topo",
        partition_lines=tuple(p.conf_line(k == 0) for k, p in enumerate(partitions)),
    )
    with lab:
        # one warm-up job: the controller schedules only once every slurmd has registered,
        # which sinfo's "idle" does not quite guarantee
        warm = lab.sbatch(1, 1, 0, "warmup")
        _wait_gone(lab, [warm], 60)
        t0 = time.monotonic()
        ids: dict[str, StreamJob] = {}
        for j in stream:
            delay = t0 + j.at_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            extra = [*([f"--account={j.account}"] if j.account else []), *([f"--qos={j.qos}"] if j.qos else [])]
            ids[lab.sbatch(j.nodes, j.limit_min, j.run_s, j.name, extra=extra, partition=j.partition or None)] = j
        held = _wait_gone(lab, list(ids), timeout_s)
        if held:
            # pending for good (EnforcePartLimits=NO): cancelled once every other job is done
            lab.run("scancel", *held)
        sacct = _read_sacct(lab, set(ids), 60)
        log = parse_ctld_log((lab.workdir / "log" / "ctld.log").read_text())
    jobs = _merge(ids, sacct, log, warmup_id=int(warm))
    jobs.scheduler_parameters = _conf_value(lab.conf.read_text(), "SchedulerParameters")
    jobs.priority = priority_options(lab.conf.read_text())
    jobs.partitions = tuple(partitions) if partitions else ()
    jobs.qos = dict(qos)
    return jobs


def slurm_from_lab(lab_dir: Path, stream: list[StreamJob], qos: dict[str, int] | None = None) -> "SlurmJobs":
    """What Slurm did in a finished lab run, read back from its directory (controller log
    and slurm.conf) without the database: the warm-up job is the first one submitted, the
    stream's jobs follow in submission order. Lets a recorded run be compared again."""
    lab_dir = Path(lab_dir)
    log = parse_ctld_log((lab_dir / "log" / "ctld.log").read_text())
    ids = sorted(j for j, rec in log.items() if j >= 0 and "submit" in rec)
    if len(ids) != len(stream) + 1:
        raise InputError(str(lab_dir / "log" / "ctld.log"), f"{len(ids)} jobs submitted, expected the warm-up and {len(stream)}",
                         hint="the same stream options as the recorded run")
    jobs = _merge({str(i): sj for i, sj in zip(ids[1:], stream)}, None, log, warmup_id=ids[0])
    jobs.scheduler_parameters = _conf_value((lab_dir / "slurm.conf").read_text(), "SchedulerParameters")
    jobs.priority = priority_options((lab_dir / "slurm.conf").read_text())
    parts = partitions_from_conf((lab_dir / "slurm.conf").read_text())
    jobs.partitions = tuple(parts) if len(parts) > 1 or any(p.max_time_min or p.max_nodes or p.min_nodes for p in parts) else ()
    jobs.qos = dict(qos or {"normal": 0})
    return jobs


def _conf_value(conf: str, key: str) -> str:
    """The value of ``key`` in slurm.conf text (Slurm's keys are case-insensitive), "" if absent."""
    for line in conf.splitlines():
        k, _, v = line.split("#", 1)[0].strip().partition("=")
        if k.strip().lower() == key.lower():
            return v.strip()
    return ""


def _wait_gone(lab: SlurmLab, ids: list[str], timeout_s: float) -> list[str]:
    """Wait until every job is gone or pending for a partition limit (which never lifts);
    returns the latter."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = [ln.split() for ln in lab.run("squeue", "-h", "-o", "%i %t %r", check=False).stdout.splitlines() if ln.strip()]
        left = {r[0]: r for r in rows if r[0] in set(ids)}
        if all(len(r) >= 3 and r[1] == "PD" and r[2] in PARTITION_REASONS for r in left.values()):
            return sorted(left)
        time.sleep(0.5)
    raise RuntimeError(f"Slurm jobs not done after {timeout_s:.0f} s (logs in {lab.workdir / 'log'})")


def _read_sacct(lab: SlurmLab, ids: set[str], timeout_s: float) -> dict[str, dict[str, str]]:
    fmt = "JobIDRaw,JobName,Submit,Start,End,NNodes,NodeList,State"
    deadline = time.monotonic() + timeout_s
    while True:
        r = lab.run("sacct", "-P", "-X", "-a", "-S", "2020-01-01", "-E", "now", f"--format={fmt}", check=False)
        lines = r.stdout.splitlines()
        rows: dict[str, dict[str, str]] = {}
        if lines:
            head = lines[0].split("|")
            rows = {d["JobIDRaw"]: d for d in (dict(zip(head, ln.split("|"))) for ln in lines[1:] if ln.strip())}
        if all(i in rows and rows[i]["End"] not in ("", "Unknown") for i in ids) or time.monotonic() > deadline:
            return rows
        time.sleep(1)


class SlurmJobs(list[SlurmJob]):
    """The stream's jobs as Slurm ran them, and ``last_pass_ms``: when the controller's
    background loop last ran a pass before the stream (the warm-up job's start), which
    sets the phase of the replay's `slurm` queue policy."""

    last_pass_ms: int | None = None
    #: when sched/backfill's cycles began (ms; the log's "_attempt_backfill: beginning")
    bf_cycles_ms: tuple[int, ...] = ()
    #: the controller's clock at ms 0, in ms since its midnight (places bf_resolution's grid)
    clock_offset_ms: int = 0
    #: slurm.conf SchedulerParameters of the run
    scheduler_parameters: str = ""
    #: priority/multifactor's settings as options of queue `slurm` ({}: priority/basic)
    priority: dict[str, int | bool] = {}  # noqa: RUF012 (replaced, never mutated)
    #: when the decay thread recalculated priorities (ms; the log's "priority for job .. is now")
    priority_recalcs_ms: tuple[int, ...] = ()
    #: when the decay thread started (ms; "Priority MULTIFACTOR plugin loaded"): its first run
    priority_init_ms: int | None = None
    #: the lab's partitions (slurm.conf), () for one partition of every node
    partitions: tuple[PartitionSpec, ...] = ()
    #: jobs a partition limit kept pending (never started), in submission order
    held: tuple[SlurmJob, ...] = ()
    #: the lab's QOS and their priorities (normal: 0 unless set)
    qos: dict[str, int] = {"normal": 0}  # noqa: RUF012 (replaced, never mutated)


def _merge(ids: dict[str, StreamJob], sacct: dict[str, dict[str, str]] | None, log: dict[int, CtldRecord],
           warmup_id: int | None = None) -> SlurmJobs:
    first = min(log[int(i)]["submit"] for i in ids if "submit" in log.get(int(i), {}))

    def ms(t: datetime) -> int:
        return round((t - first).total_seconds() * 1000)

    jobs = SlurmJobs()
    if warmup_id is not None and "start" in log.get(warmup_id, {}):
        jobs.last_pass_ms = ms(log[warmup_id]["start"])
    jobs.bf_cycles_ms = tuple(ms(t) for t in log.get(-1, {}).get("backfill_cycles", []))
    jobs.priority_recalcs_ms = tuple(ms(t) for t in log.get(-1, {}).get("priority_recalcs", []))
    if "priority_init" in log.get(-1, {}):
        jobs.priority_init_ms = ms(log[-1]["priority_init"])
    jobs.clock_offset_ms = round((first - first.replace(hour=0, minute=0, second=0, microsecond=0)).total_seconds() * 1000)
    held = []
    for jid, sj in ids.items():
        rec, acct = log.get(int(jid), {}), (sacct.get(jid) if sacct is not None else {"State": "?", "NodeList": ",".join(log.get(int(jid), {}).get("nodes", []))})
        if "held_reason" in rec and "start" not in rec and "submit" in rec:
            held.append(SlurmJob(sj.name, int(jid), sj.nodes, ms(rec["submit"]), -1, -1, [], {}, acct["State"] if acct else "?", sj.limit_min,
                                 account=sj.account, qos=sj.qos, partition=sj.partition, held_reason=rec["held_reason"]))
            continue
        if acct is None or not {"submit", "start", "end", "nodes"} <= set(rec):
            raise RuntimeError(f"Slurm job {jid} ({sj.name}): missing from sacct or the controller's log")
        nodes = sorted(rec["nodes"])
        if sorted(hostlist.expand_hostlist(acct["NodeList"])) != nodes:
            raise RuntimeError(f"Slurm job {jid}: the controller's log says {nodes}, sacct {acct['NodeList']}")
        end = ms(rec["end"])
        freed = {n: ms(rec.get("freed", {}).get(n, rec["end"])) for n in nodes}
        seqs = {n: rec.get("freed_seq", {}).get(n, 1 << 62) for n in nodes}
        jobs.append(SlurmJob(sj.name, int(jid), sj.nodes, ms(rec["submit"]), ms(rec["start"]), end, nodes, freed, acct["State"], sj.limit_min,
                             rec["backfill"], rec.get("initial_priority"), rec["start_seq"], seqs, sj.account, sj.qos, sj.partition))
    jobs.sort(key=lambda j: j.job_id)
    jobs.held = tuple(sorted(held, key=lambda j: j.job_id))
    return jobs


# --- toposched side -------------------------------------------------------------------


@dataclass
class JobComparison:
    name: str
    job_id: int
    nodes_asked: int
    slurm_nodes: str
    decision_nodes: str  # toposched's choice in Slurm's state at Slurm's start
    same_decision: bool
    replay_nodes: str
    same_replay_nodes: bool
    slurm_submit_ms: int
    slurm_start_ms: int
    replay_start_ms: int
    start_diff_ms: int  # replay - Slurm
    slurm_wait_ms: int
    by_backfill: bool


def _events(slurm: list[SlurmJob]) -> list[tuple[int, int, SlurmJob, str]]:
    """(time, kind, job, node) in the controller's order: a node given back (kind 0, when
    its epilog completed: until then Slurm keeps it COMPLETING and allocates nothing on it)
    or a start (kind 1). Within a millisecond the log's line order decides."""
    ev = [(t, j.freed_seq.get(n, 1 << 62), 0, j, n) for j in slurm for n, t in j.freed_ms.items()] + [(j.start_ms, j.start_seq, 1, j, "") for j in slurm]
    return [(t, kind, j, n) for t, _, kind, j, n in sorted(ev, key=lambda e: (e[0], e[1], e[2], e[3].job_id, e[4]))]


def decisions(fabric: Fabric, slurm: list[SlurmJob], profile: str, partitions: tuple[PartitionSpec, ...] = (),
              submit_order: bool = True) -> dict[int, tuple[list[str], dict[str, Any]]]:
    """For every Slurm start, toposched's choice in Slurm's state then, and that state.
    With partitions, the allocator sees only the job's partition: the free nodes outside it
    are held by a stand-in job while it chooses. And, for a start by the main scheduler in
    submit order (``submit_order``: priority/basic), the nodes of every partition that failed
    earlier in the same pass are out too (``_schedule`` takes them out of the pass's
    available nodes): a partition failed when a job of it ahead in the queue (a higher
    PriorityTier, or the same and a lower job id; submitted by then) was still pending after
    the pass."""
    from .._core import Placer

    names = list(fabric.spec.node_names)
    index = {n: i for i, n in enumerate(names)}
    members = {p.name: {index[n] for n in p.nodes} for p in partitions}
    default = partitions[0].name if partitions else ""
    tier = {p.name: p.priority_tier for p in partitions}

    def ahead(k: SlurmJob, j: SlurmJob) -> bool:
        """k before j in the queue (sort_job_queue2: PriorityTier, then submit order)."""
        tk, tj = tier.get(k.partition or default, 0), tier.get(j.partition or default, 0)
        return tk > tj or (tk == tj and k.job_id < j.job_id)
    placer = Placer(fabric.core, "slurm-tree", options={"slurm_profile": profile})
    out = {}
    held: dict[str, set[str]] = {}
    for t, kind, j, node in _events(slurm):
        key = str(j.job_id)
        if kind == 0:
            placer.release(key)
            held[key].discard(node)
            if held[key]:
                placer.assign(key, [index[n] for n in sorted(held[key])], t // 1000, 3600)
            continue
        state: dict[str, Any] = {"time_ms": t, "leaf_free": placer.leaf_free(), "running": sorted((k, hostlist.collect_hostlist([names[n] for n in v])) for k, v, *_ in placer.jobs())}
        outside = []
        if partitions:
            inside = set(members[j.partition or default])
            failed = sorted({k.partition or default for k in slurm if ahead(k, j) and k.submit_ms <= t < k.start_ms}) if submit_order and not j.by_backfill else []
            for name in failed:
                inside -= members[name]
            state["failed_partitions"] = failed
            outside = [n for n in range(len(names)) if n not in inside and placer.holder(n) is None]
            if outside:
                placer.assign("(outside the partition)", outside, t // 1000, 3600)
        verdict, got, _, why = placer.allocate(key, j.nodes_asked, 3600, t // 1000)
        if outside:
            placer.release("(outside the partition)")
        mine = sorted(names[n] for n in got) if verdict == "placed" and got else [f"({verdict}: {why})"]
        if verdict == "placed":
            placer.release(key)
        # a node Slurm reuses must have been given back, logged or not (a missed log line)
        for n in j.nodes:
            other = placer.holder(index[n])
            if other is not None:
                placer.release(other)
                held[other].discard(n)
                if held[other]:
                    placer.assign(other, [index[x] for x in sorted(held[other])], t // 1000, 3600)
                state.setdefault("unlogged_releases", []).append(n)
        placer.assign(key, [index[n] for n in j.nodes], t // 1000, 3600)  # Slurm's choice, so nothing cascades
        held[key] = set(j.nodes)
        out[j.job_id] = (mine, state)
    return out


def replay(fabric: Fabric, slurm: list[SlurmJob], queue: str, profile: str, qos: dict[str, int] | None = None,
           held: tuple[SlurmJob, ...] = (), partitions: tuple[PartitionSpec, ...] = ()) -> SimResult:
    """toposched's engine on the stream as Slurm saw it (milliseconds as the time unit);
    ``held``: the jobs Slurm kept pending for a partition limit (run time unknown: 1 ms)."""
    from ..simulate import RunConfig, simulate
    from ..workload.model import Workload

    order = sorted([*slurm, *held], key=lambda j: (j.submit_ms, j.job_id))
    cols = {
        "job_id": np.array([j.job_id for j in order], dtype=np.int64),
        "submit_s": np.array([j.submit_ms for j in order], dtype=np.int64),
        "nodes": np.array([j.nodes_asked for j in order], dtype=np.int64),
        "walltime_s": np.array([j.limit_min * 60_000 for j in order], dtype=np.int64),
        # the nodes stay Slurm's until their epilog completes, so that is when the job "ends" here
        "runtime_s": np.array([max(1, max(j.freed_ms.values()) - j.start_ms) if j.freed_ms else 1 for j in order], dtype=np.int64),
        "procs": np.array([j.nodes_asked for j in order], dtype=np.int64),
        "line": np.arange(1, len(order) + 1, dtype=np.int64),
    }
    ids, _ = association_options([StreamJob(j.name, 0, j.nodes_asked, 0, j.limit_min, j.account, j.qos) for j in order], qos or {"normal": 0})
    cols.update(ids)
    if partitions:
        part_id = {p.name: k for k, p in enumerate(partitions)}
        cols["partition_id"] = np.array([part_id[j.partition] if j.partition else 0 for j in order], dtype=np.int64)
    w = Workload(columns=cols, source="slurm-lab stream", format="slurm-lab")
    return simulate(w, fabric, RunConfig(queue=queue, alloc="slurm-tree", slurm_profile=profile, kill_at_walltime=False, utilization_step_s=60_000))


@dataclass
class Validation:
    select: str
    scheduler: str
    profile: str
    queue: str
    jobs: list[JobComparison] = field(default_factory=list)
    first_divergence: dict[str, Any] | None = None
    decision_differences: list[dict[str, Any]] = field(default_factory=list)
    #: jobs Slurm held for a partition limit: name, Slurm's reason, what the replay did
    held: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        n = len(self.jobs)
        same_d = sum(j.same_decision for j in self.jobs)
        same_r = sum(j.same_replay_nodes for j in self.jobs)
        diffs = np.array([abs(j.start_diff_ms) / 1000 for j in self.jobs]) if n else np.zeros(0)
        waits = np.array([j.slurm_wait_ms / 1000 for j in self.jobs]) if n else np.zeros(0)
        rel = diffs / np.maximum(waits, 1.0) if n else np.zeros(0)
        return {
            "select": f"select/{self.select}", "scheduler": f"sched/{self.scheduler}", "profile": self.profile, "queue": self.queue,
            "jobs": n,
            "identical_decisions": same_d, "identical_decisions_pct": round(100 * same_d / n, 2) if n else None,
            "identical_replay_node_sets": same_r, "identical_replay_node_sets_pct": round(100 * same_r / n, 2) if n else None,
            "start_diff_s": {"mean": round(float(diffs.mean()), 3) if n else None, "p95": round(float(np.percentile(diffs, 95)), 3) if n else None,
                             "max": round(float(diffs.max()), 3) if n else None},
            "start_diff_over_wait": {"mean": round(float(rel.mean()), 4) if n else None, "p95": round(float(np.percentile(rel, 95)), 4) if n else None},
            "mean_slurm_wait_s": round(float(waits.mean()), 3) if n else None,
            **({"held_by_partition_limits": {"slurm": len(self.held), "replay_held_same_reason": sum(h["same"] for h in self.held)}} if self.held else {}),
            "first_divergence": self.first_divergence,
        }


def compare(fabric: Fabric, slurm: list[SlurmJob], *, select: str, scheduler: str, start_tolerance_ms: int = 1000) -> Validation:
    profile, queue = PROFILE_OF_SELECT[select], QUEUE_OF_SCHEDULER[scheduler]
    # the model counts milliseconds here; the controller's background loop last ran a
    # pass at the warm-up job's start, and wakes once a second from then on
    last = getattr(slurm, "last_pass_ms", None)
    params: dict[str, Any] = {"ticks_per_s": 1000, **({"tick_phase": last % 1000, "last_pass": last} if last is not None else {})}
    sched_opts, _ = scheduler_options(getattr(slurm, "scheduler_parameters", ""))
    if "batch_sched_delay_s" in sched_opts:
        params["batch_sched_delay_s"] = sched_opts.pop("batch_sched_delay_s")
    priority = dict(getattr(slurm, "priority", {}))
    if priority:
        # the decay thread wakes every PriorityCalcPeriod from its start (abs.tv_sec +=
        # calc_period): its phase from the first recalculation logged, or else from its
        # start (the plugin's init, the same millisecond in the runs recorded); ages count
        # whole seconds of the controller's clock
        period_ms = 1000 * int(priority.get("priority_calc_period_s", 300))
        recalcs = list(getattr(slurm, "priority_recalcs_ms", ()))
        init = getattr(slurm, "priority_init_ms", None)
        first = recalcs[0] if recalcs else init
        if first is not None:
            priority["priority_calc_phase"] = first % period_ms
        if priority.get("priority_weight_fairshare") or priority.get("priority_weight_qos"):
            # the lab's associations and QOS, as the replay's ids number them
            _, assoc = association_options([StreamJob(j.name, 0, j.nodes_asked, 0, j.limit_min, j.account, j.qos) for j in slurm], getattr(slurm, "qos", {"normal": 0}))
            priority.update({k: v for k, v in assoc.items() if v})
        params.update(priority)
        params["clock_offset"] = getattr(slurm, "clock_offset_ms", 0)
    if queue == "slurm-bf":
        # the same main-scheduler options under slurm-bf's names (one name, one policy), and
        # sched/backfill's parameters as the lab's slurm.conf set them (the rest Slurm's defaults)
        params = {f"sched_{k}" if k != "batch_sched_delay_s" else "sched_batch_delay_s": v for k, v in params.items() if k != "clock_offset"}
        params.update(sched_opts)
        params["bf_will_run_window_s"] = WILL_RUN_WINDOW_OF_SELECT[select]
        params["bf_clock_offset"] = getattr(slurm, "clock_offset_ms", 0)
        # the agent's phase: its last cycle before the stream, or else one bf_interval
        # before its first (it sleeps bf_interval after a cycle, and after starting)
        cycles: list[int] = list(getattr(slurm, "bf_cycles_ms", ()))
        before = [c for c in cycles if c <= 0]
        if before or cycles:
            params["bf_last_cycle"] = max(before) if before else cycles[0] - 1000 * int(params.get("bf_interval_s", 30))
    partitions = tuple(getattr(slurm, "partitions", ()))
    if partitions and queue in ("slurm", "slurm-bf"):
        params["sched_partitions" if queue == "slurm-bf" else "partitions"] = partition_option(list(partitions), list(fabric.spec.node_names))
    if queue in ("slurm", "slurm-bf"):
        queue += ":" + ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in params.items())
    dec = decisions(fabric, slurm, profile, partitions, submit_order=not priority)
    held = tuple(getattr(slurm, "held", ()))
    r = replay(fabric, slurm, queue, profile, getattr(slurm, "qos", None), held, partitions)
    names = list(fabric.spec.node_names)
    rows = r.jobs.select(["job_id", "start_s"]).to_pylist()
    for row, ids in zip(rows, node_lists(r.jobs)):
        row["node_ids"] = ids
    rep = {row["job_id"]: row for row in rows}
    v = Validation(select, scheduler, profile, queue)
    for j in sorted(slurm, key=lambda j: (j.start_ms, j.job_id)):
        mine, state = dec[j.job_id]
        row = rep.get(j.job_id)
        rnodes = sorted(names[n] for n in row["node_ids"]) if row else []
        rstart = row["start_s"] if row else -1
        c = JobComparison(
            j.name, j.job_id, j.nodes_asked, hostlist.collect_hostlist(j.nodes), hostlist.collect_hostlist(mine) if mine[0][0] != "(" else mine[0],
            mine == j.nodes, hostlist.collect_hostlist(rnodes), rnodes == j.nodes, j.submit_ms, j.start_ms, rstart, rstart - j.start_ms,
            j.start_ms - j.submit_ms, j.by_backfill,
        )
        v.jobs.append(c)
        if not c.same_decision:
            v.decision_differences.append({"job": asdict(c), "slurm_state": state})
        if v.first_divergence is None and (not c.same_replay_nodes or abs(c.start_diff_ms) > start_tolerance_ms):
            v.first_divergence = {
                "job": c.name, "job_id": c.job_id, "nodes_asked": c.nodes_asked,
                "slurm": {"start_ms": j.start_ms, "nodes": c.slurm_nodes, "state": state},
                "toposched": {"start_ms": rstart, "nodes": c.replay_nodes, "state": _replay_state(r, names, rstart, fabric)},
            }
    reasons = dict(zip(r.skipped.column("job_id").to_pylist(), r.skipped.column("reason").to_pylist()))
    for j in held:
        why = reasons.get(j.job_id, "")
        v.held.append({"job": j.name, "job_id": j.job_id, "nodes_asked": j.nodes_asked, "limit_min": j.limit_min, "partition": j.partition,
                       "slurm_reason": j.held_reason, "replay": why or f"started at {rep.get(j.job_id, {}).get('start_s')} ms",
                       "same": bool(why) and f"Slurm reason {j.held_reason})" in why})
    return v


def _replay_state(r: SimResult, names: list[str], t_ms: int, fabric: Fabric) -> dict[str, Any]:
    """The replay's running jobs just before t_ms (ends at t_ms count as ended)."""
    rows = r.jobs.select(["job_id", "start_s", "end_s"]).to_pylist()
    running = [(str(x["job_id"]), ids) for x, ids in zip(rows, node_lists(r.jobs)) if x["start_s"] < t_ms < x["end_s"]]
    leaf_of = [int(x) for x in fabric.core.leaf_of_nodes()]
    free = [0] * (max(leaf_of) + 1)
    busy = {n for _, ns in running for n in ns}
    for n, leaf in enumerate(leaf_of):
        if n not in busy:
            free[leaf] += 1
    return {"time_ms": t_ms, "leaf_free": free, "running": sorted((k, hostlist.collect_hostlist([names[n] for n in ns])) for k, ns in running)}


def run_name(select: str, scheduler: str, multifactor: str | bool = "", partitions: bool = False) -> str:
    """A run's directory name: SELECT-SCHEDULER, with -multifactor under priority/multifactor
    and -partitions with ``--partitions``."""
    return f"{select}-{scheduler}" + ("-multifactor" if multifactor else "") + ("-partitions" if partitions else "")


def validate(workdir: Path, fabric: Fabric, stream: list[StreamJob], *, select: str, scheduler: str = "builtin",
             scheduler_parameters: str = "", multifactor: str = "", timeout_s: float = 900, qos: dict[str, int] | None = None,
             partitions: tuple[PartitionSpec, ...] = ()) -> Validation:
    slurm = run_on_slurm(Path(workdir) / f"slurm-{run_name(select, scheduler, multifactor, bool(partitions))}", fabric, stream, select=select,
                         scheduler=scheduler, scheduler_parameters=scheduler_parameters, multifactor=multifactor, timeout_s=timeout_s, qos=qos,
                         partitions=partitions)
    return compare(fabric, slurm, select=select, scheduler=scheduler)


def write_report(v: Validation, out: Path) -> dict[str, Any]:
    """summary.json, jobs.csv (one row per job) and differences.json under out."""
    import csv

    out.mkdir(parents=True, exist_ok=True)
    s = v.summary()
    (out / "summary.json").write_text(json.dumps(s, indent=2) + "\n")
    with open(out / "jobs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(JobComparison.__dataclass_fields__))
        w.writeheader()
        for j in v.jobs:
            w.writerow(asdict(j))
    (out / "differences.json").write_text(json.dumps(v.decision_differences, indent=2) + "\n")
    if v.held:
        (out / "held.json").write_text(json.dumps(v.held, indent=2) + "\n")
    return s


def summary_line(s: dict[str, Any]) -> str:
    """One line of a summary, as validate-slurm prints it."""
    return (
        f"{s['select']} + {s['scheduler']} vs slurm-tree/{s['profile']} + {s['queue']}: {s['jobs']} jobs; identical decisions "
        f"{s['identical_decisions']}/{s['jobs']} ({s['identical_decisions_pct']}%); replay: identical node sets {s['identical_replay_node_sets_pct']}%, "
        f"|start diff| mean {s['start_diff_s']['mean']} s, p95 {s['start_diff_s']['p95']} s (|diff|/wait mean {s['start_diff_over_wait']['mean']}, "
        f"p95 {s['start_diff_over_wait']['p95']})"
        + (f"; held by partition limits: Slurm {s['held_by_partition_limits']['slurm']}, the replay the same with the same reason "
           f"{s['held_by_partition_limits']['replay_held_same_reason']}" if "held_by_partition_limits" in s else "")
    )

"""Core-level replay: node sharing with the node agent's best-radius rule.

Many logs record processors rather than nodes (RICC, Curie, KTH). This replay gives each
job ``procs`` cores on a machine of ``nodes`` identical nodes of one hwloc topology, using
exactly the placement code the node agent uses (:func:`toposched.node.placement.best_placement`):

- a job of at most one node's cores goes on one node: every node's best placement is
  computed and the best host score wins (radius, NUMA domains, fragmentation; ties by
  node number) — seed 002's filter + rank over the cluster;
- a larger job takes ``ceil(procs / cores per node)`` whole free nodes (lowest numbers);
  its radius is reported as ``nodes``;
- with ``wait=True`` a one-node job waits while its best placement anywhere is worse
  than the radius it would get on an empty node (the requirement's ``WAIT``);
- queue ``fcfs``: strictly in submit order (the head blocks the queue); ``first-fit``: every
  waiting job, in submit order, that can start now does (no reservation: large jobs may
  starve). At each instant ends come first, then submits, then starts. Jobs run ``min(runtime_s, walltime_s)`` (killed at
  the limit, as the engine's default). A job larger than the machine is skipped and counted.

Reported: per job its start, node, CPUs, radius and NUMA domains, and whether it waited
for a good placement (a placement existed at some pass but was not good enough); and the
time-weighted **core-level fragmentation**, ``1 - (free cores in fully free NUMA
domains) / (free cores)`` over the machine (0: every free core sits in a whole NUMA
domain), sampled between events while at least one core is free.

This is a Python-side model beside the Rust engine; it does not use the engine's queue
or allocation policies.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .hwloc import NodeTopology
from .placement import NodeState, Placement, best_placement, holding_for
from .requirement import Requirement

if TYPE_CHECKING:
    from ..workload.model import Workload


@dataclass
class CoreReplayResult:
    jobs: dict[str, np.ndarray]
    summary: dict[str, Any]  # JSON-ready totals (the CLI prints and writes them)
    node_cpus: list[str] = field(default_factory=list)  # per job: CPUs on its node(s), for checks


def _fragmentation(topo: NodeTopology, states: list[NodeState],
                   memo: dict[frozenset[int], tuple[int, int]] | None = None,
                   held: list[frozenset[int]] | None = None) -> tuple[int, int]:
    """(free cores, free cores inside fully free NUMA domains) over all nodes. ``held``:
    each node's held PUs, when known; ``memo``: the counts per held set (nodes holding the
    same PUs count the same)."""
    free = whole = 0
    for i, s in enumerate(states):
        key = held[i] if held is not None else frozenset(s.held_pus())
        counts = memo.get(key) if memo is not None else None
        if counts is None:
            fp = s.free_pus()
            f = sum(1 for c in topo.cores if c.pus <= fp)
            w = sum(sum(1 for c in topo.cores if c.pus <= n.pus) for n in topo.numa if n.pus <= fp)
            counts = (f, w)
            if memo is not None:
                memo[key] = counts
        free += counts[0]
        whole += counts[1]
    return free, whole


QUEUES = ("fcfs", "first-fit")
_MEMO_ENTRIES = 200_000  # placements remembered by held PUs before the memo starts over
_MISSING = object()


def core_replay(workload: Workload, topology: NodeTopology, nodes: int, *, wait: bool = False, queue: str = "fcfs",
                max_jobs: int | None = None) -> CoreReplayResult:
    """Replay ``workload`` (its first ``max_jobs`` jobs) on ``nodes`` nodes of ``topology``."""
    if queue not in QUEUES:
        raise ValueError(f"queue must be one of {', '.join(QUEUES)}, got {queue!r}")
    if nodes < 1:
        raise ValueError(f"nodes must be at least 1, got {nodes}")
    cols = workload.columns
    n_jobs = len(cols["job_id"]) if max_jobs is None else min(max_jobs, len(cols["job_id"]))
    cpn = len(topology.cores)
    job_id = cols["job_id"][:n_jobs]
    submit = cols["submit_s"][:n_jobs]
    run = np.minimum(cols["runtime_s"][:n_jobs], cols["walltime_s"][:n_jobs])
    procs = cols["procs"][:n_jobs].copy()
    # A log without processor counts: whole nodes.
    procs = np.where(procs > 0, procs, cols["nodes"][:n_jobs] * cpn)

    states = [NodeState(topology) for _ in range(nodes)]
    whole_free = set(range(nodes))  # nodes with no job
    start = np.full(n_jobs, -1, dtype=np.int64)
    node_of = np.full(n_jobs, -1, dtype=np.int64)
    radius = np.array([""] * n_jobs, dtype=object)
    numa = np.zeros(n_jobs, dtype=np.int64)
    waited = np.zeros(n_jobs, dtype=bool)
    cpus_txt = [""] * n_jobs
    skipped = 0
    ideal: dict[int, str] = {}
    ends: list[tuple[int, int]] = []  # (end time, job index)
    held_nodes: dict[int, list[int]] = {}
    waiting: list[int] = []
    next_submit = 0
    now = 0
    frag_weighted = 0.0
    frag_time = 0.0
    last_t = None

    def ideal_radius(c: int) -> str:
        if c not in ideal:
            p = best_placement(topology, NodeState(topology), Requirement(cores=c))
            assert p is not None
            ideal[c] = p.radius
        return ideal[c]

    version = [0] * nodes
    # A node's answer depends only on the PUs held there (every holding is exclusive, no
    # memory, nothing reserved): nodes holding the same PUs (all the idle ones, say) share
    # one search. 2,000 nodes made 2,000 searches per job size.
    held: list[frozenset[int]] = [frozenset()] * nodes
    held_version = [0] * nodes
    placements: dict[tuple[frozenset[int], int], Placement | None] = {}
    frag_memo: dict[frozenset[int], tuple[int, int]] = {}

    def held_pus(nd: int) -> frozenset[int]:
        if held_version[nd] != version[nd]:
            held[nd] = frozenset(states[nd].held_pus())
            held_version[nd] = version[nd]
        return held[nd]

    cache: dict[tuple[int, int], tuple[int, Placement | None]] = {}

    def node_best(nd: int, c: int, req: Requirement) -> Placement | None:
        # States change only when a job starts or ends on the node: reuse the answer.
        hit = cache.get((nd, c))
        if hit is not None and hit[0] == version[nd]:
            return hit[1]
        key = (held_pus(nd), c)
        p = placements.get(key, _MISSING)
        if p is _MISSING:
            if len(placements) >= _MEMO_ENTRIES:  # a cache only: bounded memory on long logs
                placements.clear()
                frag_memo.clear()
            p = placements[key] = best_placement(topology, states[nd], req)
        assert p is None or isinstance(p, Placement)
        cache[(nd, c)] = (version[nd], p)
        return p

    def try_start(i: int) -> bool:
        c = int(procs[i])
        if c > cpn:
            k = math.ceil(c / cpn)
            if len(whole_free) < k:
                return False
            chosen = sorted(whole_free)[:k]
            for nd in chosen:
                whole_free.discard(nd)
                version[nd] += 1
                states[nd].add(holding_for(str(i), Requirement(cores=cpn), _all(topology)))
            held_nodes[i] = chosen
            radius[i] = "nodes"
            numa[i] = k * len(topology.numa)
            cpus_txt[i] = f"nodes {','.join(map(str, chosen))}"
        else:
            req = Requirement(cores=c)
            best: tuple[tuple[int, int, tuple[int, ...]], int, Placement] | None = None
            for nd in range(nodes):
                p = node_best(nd, c, req)
                if p is not None and (best is None or p.rank_key < best[0]):
                    best = (p.rank_key, nd, p)
            if best is None:
                return False
            _, nd, placed = best
            if wait and _worse(placed, ideal_radius(c)):
                waited[i] = True
                return False
            states[nd].add(holding_for(str(i), req, placed))
            version[nd] += 1
            whole_free.discard(nd)
            held_nodes[i] = [nd]
            node_of[i] = nd
            radius[i] = placed.radius
            numa[i] = placed.numa_domains
            cpus_txt[i] = placed.cpus
        start[i] = now
        heapq.heappush(ends, (now + int(run[i]), i))
        return True

    while next_submit < n_jobs or ends or waiting:
        t_next = min(ends[0][0] if ends else math.inf, int(submit[next_submit]) if next_submit < n_jobs else math.inf)
        if t_next == math.inf:
            break  # queue head can never start (cannot happen: too-large jobs are skipped)
        if last_t is not None and t_next > last_t:
            free, whole = _fragmentation(topology, states, frag_memo, [held_pus(nd) for nd in range(nodes)])
            if free:
                frag_weighted += (1 - whole / free) * (t_next - last_t)
                frag_time += t_next - last_t
        now = int(t_next)
        last_t = now
        while ends and ends[0][0] == now:
            _, i = heapq.heappop(ends)
            for nd in held_nodes.pop(i):
                states[nd].remove(str(i))
                version[nd] += 1
                if not states[nd].holdings:
                    whole_free.add(nd)
        while next_submit < n_jobs and int(submit[next_submit]) == now:
            i = next_submit
            next_submit += 1
            if math.ceil(int(procs[i]) / cpn) > nodes:
                skipped += 1
                continue
            waiting.append(i)
        if queue == "fcfs":
            while waiting and try_start(waiting[0]):
                waiting.pop(0)
        else:  # first-fit: every waiting job in submit order that can start now does
            waiting = [i for i in waiting if not try_start(i)]

    done = start >= 0
    wait_s = np.where(done, start - submit, -1)
    one_node = done & (radius != "nodes")
    counts: dict[str, int] = {}
    for r in radius[done]:
        counts[str(r)] = counts.get(str(r), 0) + 1
    summary = {
        "jobs": int(done.sum()),
        "skipped_larger_than_machine": skipped,
        "nodes": nodes,
        "cores_per_node": cpn,
        "topology": topology.source,
        "wait_for_good_placement": wait,
        "queue": queue,
        "wait_s": {"mean": float(wait_s[done].mean()) if done.any() else 0.0,
                   "median": float(np.median(wait_s[done])) if done.any() else 0.0,
                   "max": int(wait_s[done].max()) if done.any() else 0},
        "makespan_s": int((start[done] + run[done]).max() - submit[done].min()) if done.any() else 0,
        "radius_counts": dict(sorted(counts.items())),
        "one_node_jobs": int(one_node.sum()),
        # None without one-node jobs: 0.0 read as "no NUMA domain crossed", a best score
        "mean_numa_domains_one_node": float(numa[one_node].mean()) if one_node.any() else None,
        "jobs_waited_for_good_placement": int(waited.sum()),
        "fraction_waited_for_good_placement": float(waited[done].mean()) if done.any() else 0.0,
        "core_fragmentation_time_weighted": frag_weighted / frag_time if frag_time else 0.0,
    }
    jobs = {"job_id": job_id[done], "submit_s": submit[done], "start_s": start[done], "end_s": start[done] + run[done],
            "wait_s": wait_s[done], "cores": procs[done], "node": node_of[done], "radius": radius[done].astype(str),
            "numa_domains": numa[done], "waited_for_good_placement": waited[done]}
    return CoreReplayResult(jobs, summary, [cpus_txt[i] for i in np.flatnonzero(done)])


def _worse(p: Placement, good: str) -> bool:
    from .hwloc import LEVEL_RANK
    return LEVEL_RANK[p.radius] > LEVEL_RANK[good]


def _all(topo: NodeTopology) -> Placement:
    """A whole node as a placement (for jobs spanning nodes)."""
    pus = frozenset(topo.pus)
    return Placement(pus, topo.all_mems, tuple(n.index for n in topo.numa), "machine", len(topo.numa), (0,) * 5)

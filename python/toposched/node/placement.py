"""Placement of a job on the cores of one node by best radius (seed 002's best fit).

The rule (docs/node-agent.md has worked examples):

1. **Radius.** The radius of a set of PUs is the smallest level of
   :data:`~toposched.node.hwloc.LEVELS` (core < L2 < L3 < NUMA < package < machine) with one
   object covering them all (an object holding a whole object of a higher level, such as
   a NUMA domain over two packages, does not count at its own level:
   :attr:`~toposched.node.hwloc.NodeTopology.radius_by_level`). The placement has the
   smallest radius any choice of available units (cores, or PUs for ``PUS=N``) can have.
2. **NUMA domains.** Among those, the fewest NUMA domains touched.
3. **Fragmentation.** Among those, the one that leaves the most *fully free* objects
   (every PU held by no job), compared level by level from the largest: most free
   packages, then NUMA domains, then L3, then L2, then cores. So a job goes into a
   partly used package rather than breaking a free one.
4. Remaining ties: the lowest PU numbers (earlier children are filled first).

Rules 2-3 are one additive cost, so a knapsack over the tree (``_Search``) finds the exact
optimum: each object combines its children's best costs for every count 0..N. The tests
compare it with a brute-force search over all subsets on many small random nodes.

A unit is *available* to an exclusive job when none of its PUs is held by any job or
reserved; to a shared job when none is held by an exclusive job or reserved. With
``MEM_PER_NUMA_MB``, units of NUMA domains without that much unpromised memory are not
available. The host score (:attr:`Placement.rank_key`) is (radius, NUMA domains,
fragmentation): smaller is better, and a cluster scheduler ranks hosts by it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .cpulist import format_cpulist
from .hwloc import LEVEL_RANK, LEVELS, NodeTopology, TopoObject
from .requirement import Requirement

#: Levels counted by the fragmentation rule, largest first (the machine is never free
#: after a placement, so it is left out).
FREE_LEVELS: tuple[str, ...] = ("package", "numa", "l3", "l2", "core")
_FREE_POS = {lv: i for i, lv in enumerate(FREE_LEVELS)}
MIB = 1 << 20


@dataclass(frozen=True)
class Holding:
    """What one job holds on the node."""

    job: str
    pus: frozenset[int]
    exclusive: bool
    mem_bytes_per_numa: tuple[tuple[int, int], ...] = ()  # (NUMA object index, bytes)


class NodeState:
    """Which PUs and how much NUMA memory the jobs on one node hold.

    ``reserved_pus`` are never given to jobs (the OS's CPUs, boot cpusets, CPUs the
    machine does not have).
    """

    def __init__(self, topology: NodeTopology, reserved_pus: frozenset[int] = frozenset()) -> None:
        self.topology = topology
        self.reserved_pus = frozenset(reserved_pus)
        self.holdings: dict[str, Holding] = {}

    def add(self, holding: Holding) -> None:
        if holding.job in self.holdings:
            raise KeyError(f"job {holding.job} already holds PUs {format_cpulist(self.holdings[holding.job].pus)}")
        self.holdings[holding.job] = holding

    def remove(self, job: str) -> Holding:
        return self.holdings.pop(job)

    def held_pus(self) -> set[int]:
        return set().union(*(h.pus for h in self.holdings.values())) if self.holdings else set()

    def exclusive_pus(self) -> set[int]:
        return set().union(*(h.pus for h in self.holdings.values() if h.exclusive)) if self.holdings else set()

    def free_pus(self) -> frozenset[int]:
        """PUs no job holds and that are not reserved."""
        return frozenset(self.topology.pus) - self.held_pus() - self.reserved_pus

    def numa_free_bytes(self, numa: TopoObject) -> int:
        used = sum(b for h in self.holdings.values() for i, b in h.mem_bytes_per_numa if i == numa.index)
        return numa.memory_bytes - used


@dataclass(frozen=True)
class Placement:
    """A chosen set of PUs with its score. ``free_after`` counts fully free objects per
    :data:`FREE_LEVELS` once the job holds its PUs."""

    pus: frozenset[int]
    mems: tuple[int, ...]  # the cpuset's memory nodes
    numa: tuple[int, ...]  # NUMA object indices touched
    radius: str
    numa_domains: int
    free_after: tuple[int, ...]

    @property
    def rank_key(self) -> tuple[int, int, tuple[int, ...]]:
        """Smaller is better: radius, then NUMA domains, then fragmentation."""
        return (LEVEL_RANK[self.radius], self.numa_domains, tuple(-x for x in self.free_after))

    @property
    def cpus(self) -> str:
        return format_cpulist(self.pus)

    def to_json(self) -> dict[str, Any]:
        return {"cpus": self.cpus, "mems": format_cpulist(self.mems), "radius": self.radius,
                "numa_domains": self.numa_domains,
                "free_after": dict(zip(FREE_LEVELS, self.free_after)),
                "rank_key": [LEVEL_RANK[self.radius], self.numa_domains, [-x for x in self.free_after]]}


@dataclass
class Decision:
    """The answer to "where would this job go now?".

    ``status``: ``ok`` (``placement`` is where), ``wait`` (the job asked to wait for a good
    placement and the best now, ``placement``, is worse than ``good_radius``), ``busy``
    (not enough available now; it would fit on the empty node) or ``impossible`` (never
    on this node, ``reason`` says why).
    """

    status: str
    placement: Placement | None = None
    good_radius: str | None = None
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # JSON-ready fields added to the answer

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "reason": self.reason}
        if self.placement is not None:
            out["placement"] = self.placement.to_json()
        if self.good_radius is not None:
            out["good_radius"] = self.good_radius
        return out


def _vec_add(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x + y for x, y in zip(a, b))


# Cost vectors: (NUMA domains touched, -free packages, -free NUMA, -free L3, -free L2, -free cores).
_ZERO = (0,) * (1 + len(FREE_LEVELS))
# A search table entry: (cost vector, chosen unit indices).
_Choice = tuple[tuple[int, ...], tuple[int, ...]]


def _free_unit(kind: str) -> tuple[int, ...]:
    v = [0] * (1 + len(FREE_LEVELS))
    v[1 + _FREE_POS[kind]] = -1
    return tuple(v)


_NUMA_ONE = (1,) + (0,) * len(FREE_LEVELS)


class _Search:
    """The tree knapsack of rules 2-4 for one request on one state."""

    def __init__(self, topo: NodeTopology, unit: str, available: set[int], free: frozenset[int], n: int) -> None:
        self.topo = topo
        self.unit = unit  # "core" or "pu": which objects are leaves
        self.available = available  # indices of available unit objects
        self.free = free
        self.n = n
        self.avail_count: dict[int, int] = {}
        self._count(topo.root)

    def _is_leaf(self, o: TopoObject) -> bool:
        return o.kind == self.unit

    def _count(self, o: TopoObject) -> int:
        if self._is_leaf(o):
            c = 1 if o.index in self.available else 0
        else:
            c = sum(self._count(self.topo.objects[i]) for i in o.children)
        self.avail_count[o.index] = c
        return c

    def fully_free(self, o: TopoObject) -> bool:
        return o.pus <= self.free

    def own_free(self, o: TopoObject) -> tuple[int, ...]:
        return _free_unit(o.kind) if o.kind in _FREE_POS and self.fully_free(o) else _ZERO

    def best(self, o: TopoObject) -> list[_Choice | None]:
        """For k = 0..min(n, available units in o): (cost, chosen unit indices) or None."""
        if self._is_leaf(o):
            out: list[_Choice | None] = [(self.own_free(o), ())]
            if o.index in self.available and self.n >= 1:
                out.append((_ZERO, (o.index,)))
            return out
        acc: list[_Choice | None] = [(_ZERO, ())]
        for ci in o.children:
            child = self.topo.objects[ci]
            if child.kind == "pu" and self.unit == "core":
                continue
            sub = self.best(child)
            cap = min(self.n, len(acc) - 1 + len(sub) - 1)
            merged: list[_Choice | None] = [None] * (cap + 1)
            for t in range(cap + 1):
                best_here: _Choice | None = None
                # Fewer in the later child first, so ties fill earlier children (lower PUs).
                for kc in range(0, min(t, len(sub) - 1) + 1):
                    ka = t - kc
                    if ka >= len(acc):
                        continue
                    a, b = acc[ka], sub[kc]
                    if a is None or b is None:
                        continue
                    cost = _vec_add(a[0], b[0])
                    if best_here is None or cost < best_here[0]:
                        best_here = (cost, a[1] + b[1])
                merged[t] = best_here
            acc = merged
        own0 = self.own_free(o)
        out = []
        for k, entry in enumerate(acc):
            if entry is None:
                out.append(None)
                continue
            cost, sel = entry
            if k == 0:
                cost = _vec_add(cost, own0)
            elif o.kind == "numa":
                cost = _vec_add(cost, _NUMA_ONE)
            out.append((cost, sel))
        return out


def _ancestors(topo: NodeTopology, o: TopoObject) -> list[TopoObject]:
    out = []
    while o.parent is not None:
        o = topo.objects[o.parent]
        out.append(o)
    return out


def _subtree(topo: NodeTopology, o: TopoObject) -> list[TopoObject]:
    out = [o]
    for c in o.children:
        out.extend(_subtree(topo, topo.objects[c]))
    return out


def free_vector(topo: NodeTopology, free: frozenset[int]) -> tuple[int, ...]:
    """Fully free objects per :data:`FREE_LEVELS` for a set of free PUs."""
    return tuple(sum(1 for o in topo.by_level[lv] if o.pus <= free) for lv in FREE_LEVELS)


def _make_placement(topo: NodeTopology, state: NodeState, req: Requirement, pus: frozenset[int]) -> Placement:
    numa = topo.numa_domains_of(pus)
    mems = tuple(sorted(m for n in numa for m in n.mems)) if req.memory_mandatory else topo.all_mems
    free_after = free_vector(topo, state.free_pus() - pus)
    return Placement(frozenset(pus), mems, tuple(n.index for n in numa), topo.radius_of(pus), len(numa), free_after)


def _available_units(topo: NodeTopology, state: NodeState, req: Requirement, unit: str) -> tuple[list[TopoObject], set[int]]:
    blocked = (state.held_pus() if req.exclusive else state.exclusive_pus()) | state.reserved_pus
    need = req.mem_per_numa_mb * MIB
    short_numa = {n.index for n in topo.numa if need and state.numa_free_bytes(n) < need}
    units = topo.cores if unit == "core" else [o for o in topo.objects if o.kind == "pu"]
    avail = set()
    for u in units:
        if u.pus & blocked:
            continue
        numa = topo.numa_of_pu.get(min(u.pus))
        if numa is not None and numa.index in short_numa:
            continue
        avail.add(u.index)
    return units, avail


def best_placement(topo: NodeTopology, state: NodeState, req: Requirement) -> Placement | None:
    """The best placement available now under rules 1-4, or ``None`` if there is none."""
    if req.cpu_list is not None:
        return _explicit(topo, state, req)
    unit = req.unit
    n = req.count
    assert n is not None
    units, avail = _available_units(topo, state, req, unit)
    if len(avail) < n:
        return None
    search = _Search(topo, unit, avail, state.free_pus(), n)
    total_free = free_vector(topo, state.free_pus())
    for level in LEVELS:
        candidates = [o for o in topo.radius_by_level[level] if search.avail_count[o.index] >= n]
        if not candidates:
            continue
        best: _Choice | None = None
        for x in candidates:
            table = search.best(x)
            entry = table[n] if len(table) > n else None
            if entry is None:
                continue
            cost, sel = entry
            # Objects outside x keep their status, except x's ancestors: they stop being free.
            lost_before = [o for o in _subtree(topo, x) + _ancestors(topo, x) if o.kind in _FREE_POS and search.fully_free(o)]
            lost_vec = _ZERO
            for o in lost_before:
                lost_vec = _vec_add(lost_vec, _free_unit(o.kind))
            numa_above = sum(1 for o in _ancestors(topo, x) if o.kind == "numa")
            base = (numa_above,) + tuple(-f for f in total_free)
            # cost holds -free for x's subtree after; base has -free of everything before.
            full = tuple(b - lv + c for b, lv, c in zip(base, lost_vec, cost))
            if best is None or full < best[0]:
                best = (full, sel)
        if best is None:
            continue
        pus = frozenset().union(*(topo.objects[i].pus for i in best[1]))
        return _make_placement(topo, state, req, pus)
    return None  # pragma: no cover - the machine level always has a candidate when len(avail) >= n


def _explicit(topo: NodeTopology, state: NodeState, req: Requirement) -> Placement | None:
    pus = req.cpu_list
    assert pus is not None
    blocked = (state.held_pus() if req.exclusive else state.exclusive_pus()) | state.reserved_pus
    if pus & blocked:
        return None
    need = req.mem_per_numa_mb * MIB
    if need and any(state.numa_free_bytes(n) < need for n in topo.numa_domains_of(pus)):
        return None
    return _make_placement(topo, state, req, pus)


def _never_reason(topo: NodeTopology, state: NodeState, req: Requirement) -> str | None:
    """Why the request can never be met on this node (even empty), or ``None``."""
    usable = frozenset(topo.pus) - state.reserved_pus
    if req.cpu_list is not None:
        outside = req.cpu_list - frozenset(topo.pus)
        if outside:
            return f"CPU_LIST names PUs {format_cpulist(outside)} that this node ({format_cpulist(topo.pus)}) does not have"
        if req.cpu_list & state.reserved_pus:
            return f"CPU_LIST names reserved PUs {format_cpulist(req.cpu_list & state.reserved_pus)}"
        if req.cores is not None:
            cores = [c for c in topo.cores if c.pus & req.cpu_list]
            if any(not c.pus <= req.cpu_list for c in cores) or len(cores) != req.cores:
                return f"CPU_LIST {format_cpulist(req.cpu_list)} is not {req.cores} whole cores"
    else:
        n = req.count
        if req.unit == "core":
            have = sum(1 for c in topo.cores if not c.pus & state.reserved_pus)
        else:
            have = len(usable)
        if n is not None and n > have:
            return f"asks for {n} {req.unit}s; this node has {have} usable"
    if req.mem_per_numa_mb:
        need = req.mem_per_numa_mb * MIB
        if not any(n.memory_bytes >= need for n in topo.numa):
            biggest = max(n.memory_bytes for n in topo.numa) // MIB
            return f"MEM_PER_NUMA_MB={req.mem_per_numa_mb} exceeds every NUMA domain's memory (largest {biggest} MiB)"
    empty = NodeState(topo, state.reserved_pus)
    ideal = best_placement(topo, empty, req)
    if ideal is None:
        return "no placement exists even on the empty node (memory per NUMA domain too large for the domains the job needs)"
    if req.max_radius is not None and not _good_enough(topo, ideal, req.max_radius, req):
        # else answered 'wait' for ever: rank_hosts and serve kept the job waiting
        return f"MAX_RADIUS={req.max_radius} is never met here: the best placement on the empty node has radius {ideal.radius}"
    return None


def _good_enough(topo: NodeTopology, p: Placement, good: str, req: Requirement) -> bool:
    """Whether ``p`` is as good as radius ``good``. MAX_RADIUS=L also accepts a set inside
    one object of kind L whose radius counts higher (MAX_RADIUS=numa on a node whose one
    NUMA domain spans both packages)."""
    if LEVEL_RANK[p.radius] <= LEVEL_RANK[good]:
        return True
    return req.max_radius is not None and any(p.pus <= o.pus for o in topo.by_level[req.max_radius])


def decide(topo: NodeTopology, state: NodeState, req: Requirement) -> Decision:
    """Rules 1-4 plus the requirement's WAIT: where the job would go now, or why not."""
    never = _never_reason(topo, state, req)
    if never is not None:
        return Decision("impossible", reason=never)
    now = best_placement(topo, state, req)
    good = None
    if req.wait:
        if req.max_radius is not None:
            good = req.max_radius
        else:
            ideal = best_placement(topo, NodeState(topo, state.reserved_pus), req)
            assert ideal is not None
            good = ideal.radius
    if now is None:
        return Decision("busy", good_radius=good, reason="not enough available now (held by other jobs)")
    if good is not None and not _good_enough(topo, now, good, req):
        return Decision("wait", placement=now, good_radius=good,
                        reason=f"best radius now is {now.radius}, the job waits for {good} or better")
    return Decision("ok", placement=now, good_radius=good)


def holding_for(job: str, req: Requirement, placement: Placement) -> Holding:
    """The holding a job gets for a placement (memory promised on each NUMA domain touched)."""
    mem = tuple((i, req.mem_per_numa_mb * MIB) for i in placement.numa) if req.mem_per_numa_mb else ()
    return Holding(job, placement.pus, req.exclusive, mem)

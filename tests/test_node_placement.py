"""Best-radius placement (toposched.node.placement) against an independent brute force.

The reference below is written from the rule as docs/node-agent.md states it, with plain
set operations on the objects hwloc gives (kind + PU set): it enumerates every subset of
available units and scores it. The fast search (a tree knapsack) must find a placement
with the same best score on every generated node and state.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings, strategies as st

from toposched.node.hwloc import read_hwloc_xml, synthetic_topology
from toposched.node.placement import MIB, Holding, NodeState, best_placement, decide, holding_for
from toposched.node.requirement import Requirement, parse_requirement

from conftest import REPO

HWLOC = REPO / "tests" / "data" / "hwloc"
REF_LEVELS = ["core", "l2", "l3", "numa", "package", "machine"]
REF_FREE = ["package", "numa", "l3", "l2", "core"]


def ref_bounds(objs, o) -> bool:
    """Whether ``o`` bounds a radius at its own level: it holds no whole object of a
    higher level with fewer PUs (a NUMA domain over two packages does not)."""
    rank = REF_LEVELS.index(o.kind)
    return not any(d.kind in REF_LEVELS and REF_LEVELS.index(d.kind) > rank and d.pus < o.pus for d in objs)


def ref_score(objs, free_before: frozenset[int], chosen: frozenset[int]):
    """(radius rank, NUMA domains touched, minus fully free objects per level after)."""
    radius = next(i for i, lv in enumerate(REF_LEVELS) if any(o.kind == lv and chosen <= o.pus and ref_bounds(objs, o) for o in objs))
    numa = sum(1 for o in objs if o.kind == "numa" and o.pus & chosen)
    after = free_before - chosen
    free = tuple(-sum(1 for o in objs if o.kind == lv and o.pus <= after) for lv in REF_FREE)
    return (radius, numa, free)


def ref_best(topo, holdings, reserved, req: Requirement):
    """Brute force: the best score over every choice of available units (None if none)."""
    objs = topo.objects
    all_pus = frozenset(topo.pus)
    held = frozenset().union(*(h.pus for h in holdings)) if holdings else frozenset()
    excl = frozenset().union(*(h.pus for h in holdings if h.exclusive)) if holdings else frozenset()
    blocked = (held if req.exclusive else excl) | reserved
    need = req.mem_per_numa_mb * MIB
    numa_objs = [o for o in objs if o.kind == "numa"]

    def numa_free(o):
        return o.memory_bytes - sum(b for h in holdings for i, b in h.mem_bytes_per_numa if i == o.index)

    short = [o for o in numa_objs if need and numa_free(o) < need]
    if req.unit == "core":
        units = [o.pus for o in objs if o.kind == "core"]
    else:
        units = [frozenset({p}) for p in sorted(all_pus)]
    avail = [u for u in units if not (u & blocked) and not any(u & o.pus for o in short)]
    free_before = all_pus - held - reserved
    best = None
    for combo in itertools.combinations(avail, req.count):
        chosen = frozenset().union(*combo)
        s = ref_score(objs, free_before, chosen)
        if best is None or s < best:
            best = s
    return best, avail, free_before


# Node shapes: levels top-down with arities; orders include hwloc 1.x (NUMA above package)
# and sub-NUMA clustering (L3 above NUMA).
ORDERS = [
    ["package", "numa", "l3", "l2", "core", "pu"],
    ["numa", "package", "l3", "core", "pu"],
    ["package", "l3", "numa", "core", "pu"],
    ["package", "numa", "core", "pu"],
    ["l3", "l2", "core", "pu"],
]


@st.composite
def nodes(draw):
    order = draw(st.sampled_from(ORDERS))
    arities = [draw(st.integers(1, 3)) for _ in order]
    arities[-1] = draw(st.integers(1, 2))  # PUs per core

    def total():
        t = 1
        for a in arities:
            t *= a
        return t

    while total() > 12:  # small enough for the brute force
        arities[arities.index(max(arities))] -= 1
    if total() < 2:
        arities[-2] = 2
    return synthetic_topology(list(zip(order, arities)), numa_memory_bytes=4096 * MIB)


@st.composite
def cases(draw):
    topo = draw(nodes())
    pus = list(topo.pus)
    holdings = []
    mem_used = {}
    # Each PU: free, held by exclusive job a/b, held by shared job s/t, or reserved.
    fate = {p: draw(st.sampled_from(["free", "free", "a", "b", "s", "t", "reserved"])) for p in pus}
    reserved = frozenset(p for p, f in fate.items() if f == "reserved")
    for job in ["a", "b", "s", "t"]:
        held = frozenset(p for p, f in fate.items() if f == job)
        if job in ("s", "t") and draw(st.booleans()):
            held |= frozenset(p for p, f in fate.items() if f in ("s", "t"))  # shared jobs overlap
        if held:
            numa = sorted({topo.numa_of_pu[p].index for p in held})
            mem = tuple((i, draw(st.sampled_from([0, 1024, 3072])) * MIB) for i in numa)
            holdings.append(Holding(job, held, job in ("a", "b"), mem))
    unit = draw(st.sampled_from(["core", "pu"]))
    n_units = len(topo.cores) if unit == "core" else len(pus)
    n = draw(st.integers(1, n_units))
    req = Requirement(cores=n if unit == "core" else None, pus=n if unit == "pu" else None,
                      exclusive=draw(st.booleans()), mem_per_numa_mb=draw(st.sampled_from([0, 0, 1024, 2048])),
                      memory_mandatory=draw(st.booleans()))
    return topo, holdings, reserved, req


def state_of(topo, holdings, reserved):
    s = NodeState(topo, reserved)
    for h in holdings:
        s.add(h)
    return s


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
@given(cases())
def test_fast_placement_matches_brute_force(case):
    """Rules 1-3: the fast search's placement has the brute force's best score."""
    topo, holdings, reserved, req = case
    state = state_of(topo, holdings, reserved)
    fast = best_placement(topo, state, req)
    best, avail, free_before = ref_best(topo, holdings, reserved, req)
    if best is None:
        assert fast is None
        return
    assert fast is not None
    # The placement is made of available units, exactly the count asked for.
    chosen_units = [u for u in avail if u <= fast.pus]
    assert frozenset().union(*chosen_units) == fast.pus
    assert len(chosen_units) == req.count
    assert ref_score(topo.objects, free_before, fast.pus) == best
    # Its reported score agrees with the reference's.
    assert (["core", "l2", "l3", "numa", "package", "machine"].index(fast.radius), fast.numa_domains,
            tuple(-x for x in fast.free_after)) == best
    # Memory nodes: the touched domains when mandatory, all of them otherwise.
    touched = sorted(m for o in topo.numa if o.pus & fast.pus for m in o.mems)
    assert list(fast.mems) == (touched if req.memory_mandatory else sorted(m for o in topo.numa for m in o.mems))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
@given(cases())
def test_allocations_never_overlap_exclusive_ones(case):
    """Placing jobs one after another until the node is full: an exclusive job's PUs are
    never shared, and memory promised per NUMA domain never exceeds the domain."""
    topo, _, reserved, req = case
    state = NodeState(topo, reserved)
    for i in range(len(topo.pus) + 1):
        d = decide(topo, state, req)
        if d.status != "ok":
            assert d.status in ("busy", "impossible")
            break
        state.add(holding_for(f"j{i}", req, d.placement))
    for a, b in itertools.combinations(state.holdings.values(), 2):
        if a.exclusive or b.exclusive:
            assert not (a.pus & b.pus)
    for h in state.holdings.values():
        assert not (h.pus & reserved)
    for n in topo.numa:
        assert state.numa_free_bytes(n) >= 0


def test_synthetic_builder_matches_hwloc_lstopo_output():
    """Our Python builder of the property tests and hwloc's own synthetic XML agree."""
    ours = synthetic_topology([("package", 4), ("numa", 2), ("l3", 1), ("l2", 4), ("core", 1), ("pu", 1)])
    theirs = read_hwloc_xml(HWLOC / "synthetic-4pkg-2numa-32core.xml")
    assert [(o.kind, o.pus, o.parent) for o in ours.objects] == [(o.kind, o.pus, o.parent) for o in theirs.objects]


# --- worked examples (also in docs/node-agent.md) ---------------------------------

def cab():
    return read_hwloc_xml(HWLOC / "llnl-cab1234_node_hwloc.xml")


def four_socket():
    return read_hwloc_xml(HWLOC / "synthetic-4pkg-2numa-32core.xml")


def place_seq(topo, reqs):
    """Decide and hold each (job, requirement) in turn; the decisions."""
    state = NodeState(topo)
    out = []
    for job, text in reqs:
        d = decide(topo, state, parse_requirement(text))
        out.append(d)
        if d.status == "ok":
            state.add(holding_for(job, parse_requirement(text), d.placement))
    return state, out


def test_cab_worked_example():
    """Cab: 2 sockets x 8 cores, L3 and NUMA per socket, L2 per core."""
    state, ds = place_seq(cab(), [("a", "CORES=3"), ("b", "CORES=6"), ("c", "CORES=6"), ("d", "CORES=2;WAIT"), ("e", "CORES=1")])
    a, b, c, d, e = ds
    assert (a.placement.cpus, a.placement.radius, a.placement.free_after[0]) == ("0-2", "l3", 1)
    # b: socket 0 has 5 free cores, too few; socket 1 has 8.
    assert (b.placement.cpus, b.placement.radius) == ("8-13", "l3")
    # c: 5 + 2 free: only the machine holds 6; two NUMA domains; lowest PUs on ties.
    assert (c.placement.cpus, c.placement.radius, c.placement.numa_domains) == ("3-7,14", "machine", 2)
    assert (d.status, d.reason) == ("busy", "not enough available now (held by other jobs)")
    assert (e.placement.cpus, e.placement.radius) == ("15", "core")


def test_cab_wait_versus_best():
    """With cores free on both sockets but not 4 on either, CORES=4 spans the sockets now;
    with WAIT it waits for one socket."""
    topo = cab()
    state = NodeState(topo)
    state.add(Holding("x", frozenset(range(0, 6)), True))
    state.add(Holding("y", frozenset(range(8, 14)), True))
    best = decide(topo, state, parse_requirement("CORES=4"))
    wait = decide(topo, state, parse_requirement("CORES=4;WAIT"))
    assert (best.status, best.placement.cpus, best.placement.radius) == ("ok", "6-7,14-15", "machine")
    assert (wait.status, wait.good_radius, wait.placement.radius) == ("wait", "l3", "machine")
    state.remove("y")
    now = decide(topo, state, parse_requirement("CORES=4;WAIT"))
    assert (now.status, now.placement.cpus, now.placement.radius) == ("ok", "8-11", "l3")


def test_four_socket_worked_example():
    """4 packages x 2 NUMA domains x 4 cores (L3 per NUMA domain)."""
    state, ds = place_seq(four_socket(), [("a", "CORES=3"), ("b", "CORES=2"), ("c", "CORES=5"), ("d", "CORES=8"), ("e", "CORES=1")])
    a, b, c, d, e = ds
    assert (a.placement.cpus, a.placement.radius, a.placement.numa_domains) == ("0-2", "l3", 1)
    # b: NUMA domain 0 has one free core; of the 7 free domains, the one in package 0
    # (already broken) keeps three whole packages.
    assert (b.placement.cpus, b.placement.radius) == ("4-5", "l3")
    assert (c.placement.cpus, c.placement.radius, c.placement.numa_domains) == ("8-12", "package", 2)
    assert (d.placement.cpus, d.placement.radius, d.placement.numa_domains) == ("16-23", "package", 2)
    # e: one core; the lone free core of NUMA domain 0 (core 3) keeps everything else whole.
    assert (e.placement.cpus, e.placement.radius) == ("3", "core")


def test_a_numa_domain_over_two_packages_does_not_make_a_cross_package_set_close():
    """One memory node for both packages (NUMA interleaving, AMD NPS0; hwloc 2 inserts such
    a domain for a synthetic node without one): every set had radius 'numa', so CORES=2
    took 3 and 4 across the packages (PUs 6-9) though package 1 had 4 free cores, WAIT
    never waited and MAX_RADIUS=package accepted the cross-package set."""
    topo = synthetic_topology([("numa", 1), ("package", 2), ("core", 4), ("pu", 2)])
    state = NodeState(topo)
    state.add(Holding("x", frozenset(range(0, 6)), True))  # 3 of package 0's 4 cores
    best = decide(topo, state, parse_requirement("CORES=2"))
    assert (best.placement.cpus, best.placement.radius) == ("8-11", "package")
    assert topo.radius_of({6, 8}) == "machine" and topo.radius_of({8, 15}) == "package"
    busy = NodeState(topo)
    busy.add(Holding("x", frozenset(range(0, 6)), True))
    busy.add(Holding("y", frozenset(range(8, 14)), True))  # one core free in each package
    wait = decide(topo, busy, parse_requirement("CORES=2;MAX_RADIUS=package"))
    assert (wait.status, wait.placement.cpus, wait.placement.radius) == ("wait", "6-7,14-15", "machine")
    # MAX_RADIUS=numa: every set lies in the one NUMA domain, so none waits
    assert decide(topo, state, parse_requirement("CORES=5;MAX_RADIUS=numa")).status == "ok"
    assert decide(topo, state, parse_requirement("CORES=2;MAX_RADIUS=numa")).placement.cpus == "8-11"
    # sub-NUMA clusters: a package-wide L3 over two NUMA domains; a set in one domain has
    # the domain's radius, one across both the package's (both were 'l3')
    snc = synthetic_topology([("package", 2), ("l3", 1), ("numa", 2), ("core", 2), ("pu", 1)])
    assert (snc.radius_of({0, 1}), snc.radius_of({1, 2}), snc.radius_of({3, 4})) == ("numa", "package", "machine")
    # Cab (NUMA = package = L3 per socket): as before
    cab = read_hwloc_xml(HWLOC / "llnl-cab1234_node_hwloc.xml")
    assert [cab.radius_of(x) for x in ({3}, {0, 7}, {7, 8})] == ["core", "l3", "machine"]


def test_a_max_radius_the_empty_node_cannot_meet_is_impossible_not_wait():
    """CORES=4;MAX_RADIUS=l2 on Cab (an L2 per core) was answered 'wait' on the empty node
    and for ever after: rank_hosts and serve kept such a job waiting; the docs answer
    'impossible' for what can never be met on the host."""
    cab = read_hwloc_xml(HWLOC / "llnl-cab1234_node_hwloc.xml")
    for text, radius in (("CORES=4;MAX_RADIUS=l2", "l3"), ("CORES=9;MAX_RADIUS=package", "machine"), ("CPU_LIST=0,8;MAX_RADIUS=l3", "machine")):
        d = decide(cab, NodeState(cab), parse_requirement(text))
        assert (d.status, d.reason) == ("impossible", f"MAX_RADIUS={text.split('MAX_RADIUS=')[1]} is never met here: the best placement on the empty node has radius {radius}")
    # met on the empty node: 'wait' while the node is busy, as before
    state = NodeState(cab)
    state.add(Holding("x", frozenset({0, 8}), True))
    assert decide(cab, state, parse_requirement("CORES=8;MAX_RADIUS=l3")).status == "wait"

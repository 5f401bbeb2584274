"""A node's hardware graph, read from hwloc XML (1.x or 2.x) or from the running machine.

Only what placement needs is kept: the machine, packages (hwloc 1.x calls them
``Socket``), NUMA domains with their memory, L3 and L2 caches, cores and PUs (hardware
threads), each as the set of PU numbers (``os_index``) it covers. L1 caches, groups, dies
and I/O objects are skipped; their children are kept.

hwloc 1.x nests packages inside NUMA nodes (Cab), hwloc 2.x attaches NUMA nodes as memory
children of a package or cache. Both are brought to one order by PU-set containment,
with ties (equal PU sets) broken by :data:`LEVELS`: machine > package > NUMA > L3 > L2 >
core. So a NUMA domain that covers exactly one package sits below it, whatever the file's
nesting. The family of PU sets must be laminar (two objects either nest or are disjoint),
which holds for every real machine; a file where it does not is refused.

>>> topo = read_hwloc_xml("tests/data/hwloc/llnl-cab1234_node_hwloc.xml")
>>> topo.host, len(topo.cores), len(topo.pus), [n.mems for n in topo.numa]
('cab1234', 16, 16, [(0,), (1,)])
>>> topo.radius_of({0, 1}), topo.radius_of({0}), topo.radius_of({7, 8})
('l3', 'core', 'machine')
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import InputError

#: Placement levels, smallest first. The radius of a set of PUs is the first level that
#: has one object holding them all.
LEVELS: tuple[str, ...] = ("core", "l2", "l3", "numa", "package", "machine")
LEVEL_RANK = {name: i for i, name in enumerate(LEVELS)}


class HwlocError(InputError):
    """An hwloc XML file (or lstopo run) that cannot be used as a node topology."""


@dataclass
class TopoObject:
    """One object of the graph. ``pus`` is the set of PU numbers (hwloc os_index) it covers."""

    kind: str  # one of LEVELS, or "pu"
    pus: frozenset[int]
    os_index: int | None = None
    mems: tuple[int, ...] = ()  # NUMA domains: the os_index values (memory node numbers)
    memory_bytes: int = 0  # NUMA domains: local memory
    index: int = -1  # position in NodeTopology.objects
    parent: int | None = None
    children: list[int] = field(default_factory=list)

    @property
    def rank(self) -> int:
        return -1 if self.kind == "pu" else LEVEL_RANK[self.kind]


class NodeTopology:
    """The hardware graph of one node, normalized to a tree (see the module docstring).

    ``objects[0]`` is the machine. ``cores`` and ``numa`` list the core and NUMA objects
    in PU order. ``numa_distances`` is hwloc's NUMA distance matrix (``{(i, j): value}``
    over memory node numbers) when the file has one, else ``None``; :meth:`radius_of`
    gives the tree distance of any PU set.
    """

    def __init__(self, objects: list[TopoObject], *, host: str = "", source: str = "",
                 numa_distances: dict[tuple[int, int], int] | None = None) -> None:
        self.host = host
        self.source = source
        self.numa_distances = numa_distances
        self.objects = _normalize(objects, source)
        self.root = self.objects[0]
        self.pus: tuple[int, ...] = tuple(sorted(self.root.pus))
        self.cores = [o for o in self.objects if o.kind == "core"]
        self.numa = [o for o in self.objects if o.kind == "numa"]
        self.by_level: dict[str, list[TopoObject]] = {lv: [o for o in self.objects if o.kind == lv] for lv in LEVELS}
        # The objects that bound a radius at their level: not one that holds more than a
        # whole object of a higher level (a NUMA domain over both packages, as with NUMA
        # interleaving or AMD's NPS0; a package-wide L3 over sub-NUMA clusters). Counted
        # at its own level, such an object made a set across the packages ('numa') look
        # closer than one inside a package ('package').
        self.radius_by_level: dict[str, list[TopoObject]] = {
            lv: [o for o in self.by_level[lv]
                 if not any(LEVEL_RANK[d.kind] > LEVEL_RANK[lv] and d.pus < o.pus for hi in LEVELS[LEVEL_RANK[lv] + 1:] for d in self.by_level[hi])]
            for lv in LEVELS
        }
        self.core_of_pu: dict[int, TopoObject] = {pu: c for c in self.cores for pu in c.pus}
        self.numa_of_pu: dict[int, TopoObject] = {pu: n for n in self.numa for pu in n.pus}
        self.all_mems: tuple[int, ...] = tuple(sorted(m for n in self.numa for m in n.mems))

    def radius_of(self, pus: set[int] | frozenset[int]) -> str:
        """The smallest level that has one object covering all of ``pus`` (of the objects
        in :attr:`radius_by_level`: one holding a whole higher-level object counts above)."""
        pus = frozenset(pus)
        if not pus or not pus <= self.root.pus:
            raise ValueError(f"PU set {sorted(pus)} is empty or not on this node")
        for level in LEVELS:
            if any(pus <= o.pus for o in self.radius_by_level[level]):
                return level
        raise AssertionError("the machine covers every PU")  # pragma: no cover

    def numa_domains_of(self, pus: set[int] | frozenset[int]) -> list[TopoObject]:
        """The NUMA domains (objects) that ``pus`` touch, in order."""
        return [n for n in self.numa if n.pus & pus]

    def summary(self) -> dict[str, Any]:
        """A JSON-ready description: counts per level, NUMA memory, distances."""
        return {
            "host": self.host,
            "source": self.source,
            "pus": len(self.pus),
            "levels": {lv: len(self.by_level[lv]) for lv in LEVELS},
            "numa": [{"mems": list(n.mems), "cpus": _fmt(n.pus), "memory_bytes": n.memory_bytes} for n in self.numa],
            "numa_distances": None if self.numa_distances is None else
            [[a, b, v] for (a, b), v in sorted(self.numa_distances.items())],
        }


def _fmt(pus: Iterable[int]) -> str:
    from .cpulist import format_cpulist
    return format_cpulist(pus)


def _normalize(objects: list[TopoObject], source: str) -> list[TopoObject]:
    """Merge duplicates, add a machine if missing, give every object its parent by
    containment and return them sorted root first (bigger sets, then higher level)."""
    all_pus = frozenset().union(*(o.pus for o in objects if o.kind == "pu"))
    if not all_pus:
        raise HwlocError(source, "no PU (processing unit) objects: not an hwloc topology of a node")
    merged: dict[tuple[str, frozenset[int]], TopoObject] = {}
    for o in objects:
        pus = o.pus & all_pus
        if not pus:
            continue  # e.g. a memory-only NUMA node, or an object outside the PUs found
        key = (o.kind, pus)
        if key in merged:
            m = merged[key]
            if o.kind == "numa":  # e.g. DRAM + HBM nodes with the same CPUs: one domain
                m.mems = tuple(sorted(set(m.mems) | set(o.mems)))
                m.memory_bytes += o.memory_bytes
            continue
        merged[key] = TopoObject(o.kind, pus, o.os_index, o.mems, o.memory_bytes)
    if ("machine", all_pus) not in merged:
        merged = {k: v for k, v in merged.items() if v.kind != "machine"}
        merged[("machine", all_pus)] = TopoObject("machine", all_pus, 0)
    if not any(o.kind == "core" for o in merged.values()):
        for pu in all_pus:  # hwloc without Core objects: each PU is its own core
            merged[("core", frozenset({pu}))] = TopoObject("core", frozenset({pu}), pu)
    if not any(o.kind == "numa" for o in merged.values()):
        # hwloc 1.x writes no NUMANode on a machine with one memory node, and puts its
        # memory on the Machine: that memory is the one domain's (it was 0 MiB, so every
        # MEM_PER_NUMA_MB request was 'impossible')
        memory = max((o.memory_bytes for o in objects if o.kind == "machine"), default=0)
        merged[("numa", all_pus)] = TopoObject("numa", all_pus, 0, (0,), memory)
    objs = sorted(merged.values(), key=lambda o: (-len(o.pus), -o.rank, min(o.pus)))
    for i, o in enumerate(objs):
        o.index = i
        o.children = []
    for i, o in enumerate(objs[1:], start=1):
        # The parent is the closest earlier object (in the sorted order) that contains it;
        # an earlier object that overlaps without containing breaks the tree.
        parent = None
        for cand in reversed(objs[:i]):
            if o.pus <= cand.pus:
                parent = cand
                break
            if o.pus & cand.pus and not (cand.pus <= o.pus):
                raise HwlocError(source, f"{o.kind} PUs {_fmt(o.pus)} overlap {cand.kind} PUs {_fmt(cand.pus)} without nesting: not a tree")
        assert parent is not None  # the machine covers all
        o.parent = parent.index
        parent.children.append(i)
    return objs


def _bitmap(text: str | None) -> frozenset[int] | None:
    """An hwloc bitmap string (``0x000000ff`` or ``0x00000001,0xffffffff``: 32-bit words,
    most significant first) as a set of bit numbers; ``None`` for an absent or infinite one."""
    if not text:
        return None
    words = text.strip().split(",")
    if any("f...f" in w for w in words):
        return None
    value = 0
    for w in words:
        value = (value << 32) | int(w, 16)
    return frozenset(i for i in range(value.bit_length()) if value >> i & 1)


_KINDS = {"Machine": "machine", "Package": "package", "Socket": "package", "NUMANode": "numa",
          "Core": "core", "PU": "pu", "L3Cache": "l3", "L2Cache": "l2"}


def parse_hwloc_xml(text: str | bytes, source: str = "<xml>") -> NodeTopology:
    """A :class:`NodeTopology` from the text of an hwloc XML export (1.x or 2.x)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise HwlocError(source, f"not valid XML ({exc})") from None
    if root.tag != "topology":
        raise HwlocError(source, f"root element is <{root.tag}>, expected hwloc's <topology>")
    objects: list[TopoObject] = []
    host = ""

    def walk(el: ET.Element) -> None:
        nonlocal host
        for child in el:
            if child.tag != "object":
                continue
            typ = child.get("type", "")
            kind = _KINDS.get(typ)
            if typ == "Cache":  # hwloc 1.x: one type, level in 'depth'; skip instruction caches
                if child.get("cache_type") != "2":
                    kind = {"3": "l3", "2": "l2"}.get(child.get("depth", ""))
            if typ == "Machine" and not host:
                for info in child.findall("info"):
                    if info.get("name") == "HostName":
                        host = info.get("value", "")
            if kind is not None:
                pus = _bitmap(child.get("cpuset"))
                if kind == "pu":
                    try:
                        pus = frozenset({int(child.get("os_index", ""))})
                    except ValueError:
                        raise HwlocError(source, "a PU object has no numeric os_index") from None
                if pus is not None:
                    os_index = child.get("os_index")
                    idx = int(os_index) if os_index and os_index.isdigit() else None
                    mems: tuple[int, ...] = ()
                    mem = 0
                    if kind == "numa":
                        mems = (idx if idx is not None else len([o for o in objects if o.kind == "numa"]),)
                    if kind in ("numa", "machine"):
                        mem = int(child.get("local_memory", "0") or 0)
                    objects.append(TopoObject(kind, pus, idx, mems, mem))
            walk(child)

    walk(root)
    return NodeTopology(objects, host=host, source=source, numa_distances=_distances(root))


def _distances(root: ET.Element) -> dict[tuple[int, int], int] | None:
    """NUMA distances: hwloc 2 ``<distances2 type="NUMANode">`` (indexes, u64values) or
    hwloc 1 ``<distances>`` with ``<latency value>`` entries (os order assumed)."""
    for d in root.iter("distances2"):
        if d.get("type") != "NUMANode":
            continue
        idx_el, val_el = d.find("indexes"), d.find("u64values")
        if idx_el is None or val_el is None:
            continue
        idx = [int(x) for x in (idx_el.text or "").split()]
        vals = [int(x) for x in (val_el.text or "").split()]
        n = len(idx)
        if n and len(vals) == n * n:
            return {(idx[i], idx[j]): vals[i * n + j] for i in range(n) for j in range(n)}
    for d in root.iter("distances"):
        n = int(d.get("nbobjs", "0") or 0)
        base = float(d.get("latency_base", "1") or 1)
        latencies = [float(x.get("value", "0")) for x in d.findall("latency")]
        if n and len(latencies) == n * n:
            return {(i, j): round(latencies[i * n + j] * base) for i in range(n) for j in range(n)}
    return None


def read_hwloc_xml(path: str | Path, *, flag: str = "--topology") -> NodeTopology:
    """Read an hwloc XML file (``lstopo --of xml``); ``flag``: the option that gave it, for
    the error."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HwlocError(str(path), f"cannot read ({exc.strerror}); pass {flag} FILE or live") from None
    return parse_hwloc_xml(data, source=str(path))


def read_live_topology(*, flag: str = "--topology") -> NodeTopology:
    """The running machine's topology, from hwloc's ``lstopo --of xml``."""
    exe = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    if exe is None:
        raise HwlocError("live", f"hwloc's lstopo is not installed (Debian package 'hwloc'); install it or pass {flag} FILE")
    try:
        out = subprocess.run([exe, "--of", "xml", "-"], capture_output=True, check=True, timeout=60)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        raise HwlocError("live", f"{exe} --of xml failed: {exc}") from None
    return parse_hwloc_xml(out.stdout, source=f"live ({exe})")


def load_topology(spec: str, *, flag: str = "--topology") -> NodeTopology:
    """``live`` for the running machine, else a path to an hwloc XML file; ``flag``: the
    command's option that gave it (core-replay: --node-topology), named in the errors."""
    return read_live_topology(flag=flag) if spec == "live" else read_hwloc_xml(spec, flag=flag)


def synthetic_topology(shape: list[tuple[str, int]], *, numa_memory_bytes: int = 1 << 30) -> NodeTopology:
    """A node built in Python from a shape such as ``[("package", 2), ("numa", 2), ("l3", 1),
    ("core", 4), ("pu", 2)]`` (each level's arity below the one before; PUs numbered in
    order). Used by the property tests; hwloc's own ``lstopo --input`` writes the same
    trees as XML."""
    objects: list[TopoObject] = []
    next_pu = 0
    next_mem = 0

    def build(depth: int) -> frozenset[int]:
        nonlocal next_pu, next_mem
        if depth == len(shape):
            raise ValueError("shape must end with ('pu', n)")
        kind, n = shape[depth]
        covered: set[int] = set()
        for _ in range(n):
            if kind == "pu":
                pus = frozenset({next_pu})
                next_pu += 1
            else:
                pus = build(depth + 1)
            mems: tuple[int, ...] = ()
            mem = 0
            if kind == "numa":
                mems, mem = (next_mem,), numa_memory_bytes
                next_mem += 1
            objects.append(TopoObject(kind, pus, None, mems, mem))
            covered |= pus
        return frozenset(covered)

    if not shape or shape[-1][0] != "pu":
        raise ValueError("shape must end with ('pu', n)")
    build(0)
    return NodeTopology(objects, host="synthetic", source=" ".join(f"{k}:{n}" for k, n in shape))

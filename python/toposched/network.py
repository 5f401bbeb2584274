"""Network interference model: scenarios of co-running jobs, and what they do to each other.

A *scenario* is a fabric, the model's settings and a list of jobs, each with its nodes, its
communication pattern, its service level and its communication fraction ``phi``. The
native core routes every flow (static D-mod-k), shares every link among the jobs that load
it (job-level fair bottleneck, per-flow claims by default) and returns, per job, its
communication time per iteration alone on its placement, with the others, and the
resulting slowdown. docs/network.md documents the JSON format and the model. The replay's
side (``--network SPEC``, traffic per job, the closed loop) is :mod:`toposched.network_spec`.

>>> from toposched.network import evaluate_scenario
>>> A = [leaf * 18 + p for leaf in range(16) for p in range(9)]        # ports 0-8 of every leaf
>>> B = [leaf * 18 + p for leaf in range(16) for p in range(9, 18)]    # ports 9-17
>>> jobs = [{"name": "A", "nodes": A, "pattern": "flood", "phi": 1}, {"name": "B", "nodes": B, "pattern": "flood", "phi": 1}]
>>> r = evaluate_scenario({"fabric": "fattree:K=18,S=16,P=1", "jobs": jobs})
>>> [j["slowdown"] for j in r["jobs"]]
[1.0, 1.0]
>>> r = evaluate_scenario({"fabric": "fattree:K=18,S=16,P=1,W1=9", "jobs": jobs})   # 2:1 taper
>>> [round(j["slowdown"], 6) for j in r["jobs"]]
[2.0, 2.0]
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__, _core
from .errors import InputError
from .jobmodel import DEFAULT_FAIRNESS, AppProfile, FabricTiming, profile, timing_for
from .topology import Fabric, load_fabric

#: Seed 003's Catalyst service-level weights (SL 0..3): 9:1 pairs, high pair 254x the low one.
CATALYST_SL_WEIGHTS: tuple[float, ...] = (2286.0, 254.0, 9.0, 1.0)

#: Named service-level weight tables accepted by ``model.service_levels``.
SL_PRESETS: dict[str, tuple[float, ...]] = {
    "default": (1.0,),
    "catalyst": CATALYST_SL_WEIGHTS,
    "9:1": (9.0, 1.0),
    "254:1": (254.0, 1.0),
}

#: The most bytes one flow may carry (the core's, which refuses more: crates/toposched-core
#: network/demand.rs). Only ratios within a job matter, but a link's sum over flows and
#: jobs must stay a finite double: near 1e308 it overflowed to inf, and slowdowns became NaN.
MAX_FLOW_BYTES: float = _core.MAX_FLOW_BYTES

#: The largest ``seed`` of a scenario (as of a ``--network`` spec, network_spec.SEED_LIMIT).
SEED_LIMIT = 2**40

#: Seed 004's bully jobs and the pattern each runs.
BULLIES: dict[str, str] = {
    "bisection": "pairs",
    "adjacent-leaf": "adjacent-leaf",
    "incast": "incast",
    "interleaved": "",
}

#: Patterns the ``interleaved`` generator cycles through by default.
INTERLEAVED_PATTERNS: tuple[str, ...] = ("stencil3d", "sub-a2a:8", "pairs")

_JOB_KEYS = {
    "name",
    "nodes",
    "place",
    "pattern",
    "bytes",
    "ranks_per_node",
    "seed",
    "service_level",
    "phi",
    "flows",
    "bully",
    "count",
    "patterns",
    "app",
    "comm_fraction",
    "message_bytes",
    "messages",
}


@dataclass
class ModelSettings:
    """Settings of the network model (the ``model`` object of a scenario)."""

    #: (host, leaf, core) link bandwidth, in the unit times are wanted in per byte.
    bandwidth: tuple[float, float, float] = (1.0, 1.0, 1.0)
    #: Claim of a job on a shared link: "ports" (default), "flows" or "jobs".
    fairness: str = DEFAULT_FAIRNESS
    #: Weight of each service level, index = level.
    sl_weights: tuple[float, ...] = (1.0,)
    #: Link data rate and message latency of the job model (None: the fabric's preset).
    timing: FabricTiming | None = None
    #: Under fairness=flows: "auto" (progressive filling when every job's service level
    #: has the same weight and there are at most 4,000 flows), "steady" (the job-level
    #: solve) or "progressive" (`interfere` only; docs/network.md).
    filling: str = "auto"
    #: Packet size of the queueing delay (docs/network.md, "Queueing delay"), bytes; None:
    #: the fabric's (FabricTiming.mtu_bytes); 0 turns queueing delay off.
    mtu_bytes: float | None = None

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"bandwidth": list(self.bandwidth), "fairness": self.fairness, "service_levels": list(self.sl_weights)}
        if self.timing is not None:
            d["link_gbps"] = self.timing.link_bytes_per_s * 8 / 1e9
            d["latency_us"] = self.timing.message_latency_s * 1e6
        if self.mtu_bytes is not None:
            d["mtu_bytes"] = self.mtu_bytes
        return d

    def timing_on(self, fabric_text: str) -> FabricTiming:
        """The timing the model uses on a fabric: the settings' or the fabric's, with the
        settings' packet size."""
        t = self.timing or timing_for(fabric_text)
        return t if self.mtu_bytes is None else replace(t, mtu_bytes=self.mtu_bytes)


@dataclass
class ScenarioJob:
    """One job of a scenario, with its nodes resolved."""

    name: str
    nodes: list[int]
    pattern: str = "none"
    bytes: float = 1.0
    ranks_per_node: int = 1
    seed: int = 0
    service_level: int = 0
    phi: float = 1.0
    flows: list[tuple[int, int, float]] | None = None
    #: The seed 004 bully this job was generated from, if any.
    bully: str | None = None
    #: Its application profile (job model) and the fractions of its iteration alone.
    app: str | None = None
    fractions: dict[str, float] | None = None
    profile: AppProfile | None = None
    timing: FabricTiming | None = None
    #: ranks_per_node was given: else the job model's phi takes its profile's (as the replay does)
    ranks_per_node_given: bool = False
    #: The scenario's job it comes from (``jobs[2]``), for errors the engine finds.
    origin: str = ""

    def core_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "nodes": self.nodes,
            "pattern": self.pattern,
            "bytes": self.bytes,
            "ranks_per_node": self.ranks_per_node,
            "seed": self.seed,
            "service_level": self.service_level,
            "phi": self.phi,
            "latency": (self.fractions or {}).get("latency", 0.0),
        }
        if self.flows is not None:
            d["flows"] = self.flows
        return d


@dataclass
class Scenario:
    """A fabric, model settings and co-running jobs."""

    fabric: Fabric
    settings: ModelSettings
    jobs: list[ScenarioJob]
    seed: int = 0
    source: str = "<scenario>"
    fabric_text: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def network_model(fabric: Fabric, settings: ModelSettings | None = None, timing: FabricTiming | None = None) -> Any:
    """The native ``NetworkModel`` of a fabric; with ``timing``, queueing delay of the
    jobs' latency parts on (docs/network.md, "Queueing delay")."""
    from . import _core

    s = settings or ModelSettings()
    ppl = timing.packet_per_latency if timing is not None else 0.0
    return _core.NetworkModel(fabric.core, bandwidth=s.bandwidth, fairness=s.fairness, sl_weights=list(s.sl_weights), filling=s.filling, packet_per_latency=ppl)


# ---------------------------------------------------------------------------- reading


def _float(v: Any) -> float:
    """A number as a float; a whole number past the largest double is inf (float() raised
    OverflowError: an internal error)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf


def _finite(v: Any) -> bool:
    return math.isfinite(_float(v))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def field_error(src: str, field_name: str, message: str) -> InputError:
    return InputError(src, message, field=field_name)


#: The largest ``mtu_bytes`` a scenario may give: 64 KiB, past every HPC fabric's packet.
MAX_MTU_BYTES = 65536

#: The bandwidths a scenario may give, in any unit (the slowdowns depend on their ratios
#: alone): wide enough for bytes or bits per second, narrow enough that no rate over- or
#: underflows.
BANDWIDTH_RANGE = (1e-30, 1e30)


def parse_settings(obj: Any, src: str = "<scenario>", where: str = "model") -> ModelSettings:
    """The ``model`` object of a scenario (or of a ``--network`` spec) as settings."""
    if obj is None:
        return ModelSettings()
    if not isinstance(obj, dict):
        raise field_error(src, where, "expected an object with bandwidth, fairness, service_levels")
    unknown = set(obj) - {"bandwidth", "fairness", "service_levels", "link_gbps", "overhead_us", "filling", "mtu_bytes"}
    if unknown:
        raise field_error(src, f"{where}.{sorted(unknown)[0]}", "unknown setting; settings are bandwidth, fairness, service_levels, link_gbps, overhead_us, filling, mtu_bytes")
    mtu = obj.get("mtu_bytes")
    if mtu is not None and not (isinstance(mtu, (int, float)) and not isinstance(mtu, bool) and _finite(mtu) and mtu >= 0):
        raise field_error(src, f"{where}.mtu_bytes", f"expected a packet size in bytes >= 0 (0: no queueing delay), got {mtu!r}")
    if mtu is not None and mtu > MAX_MTU_BYTES:
        # a packet is what a message waits behind on a link: 1e12 bytes made a 1 KB
        # message wait a million times its own time, a slowdown of 1.3 million
        raise field_error(src, f"{where}.mtu_bytes", f"a packet of {mtu:g} bytes is larger than any fabric's (InfiniBand 4,096, Omni-Path 10,240, Ethernet jumbo frames 9,216); at most {MAX_MTU_BYTES:,}")
    timing = None
    if "link_gbps" in obj or "overhead_us" in obj:
        gbps, over = obj.get("link_gbps", 32.0), obj.get("overhead_us", 1.0)
        for key, v in (("link_gbps", gbps), ("overhead_us", over)):
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and _finite(v) and v > 0):
                # name the one at fault (overhead_us = -1 was reported as link_gbps)
                raise field_error(src, f"{where}.{key}", f"link_gbps and overhead_us are positive numbers, got {v!r}")
        timing = FabricTiming(link_bytes_per_s=float(gbps) * 1e9 / 8, overhead_s=float(over) * 1e-6)
    bw = obj.get("bandwidth", 1.0)
    # numbers only: "2" or true were read as 2.0 and 1.0, "x" was an internal error
    if _is_number(bw):
        bandwidth = (_float(bw),) * 3
    elif isinstance(bw, list) and len(bw) == 3 and all(_is_number(b) for b in bw):
        bandwidth = (_float(bw[0]), _float(bw[1]), _float(bw[2]))
    elif isinstance(bw, dict) and set(bw) <= {"host", "leaf", "core"} and all(_is_number(b) for b in bw.values()):
        bandwidth = (_float(bw.get("host", 1.0)), _float(bw.get("leaf", 1.0)), _float(bw.get("core", 1.0)))
    else:
        raise field_error(src, f"{where}.bandwidth", "expected a number, [host, leaf, core] or {\"host\": .., \"leaf\": .., \"core\": ..}")
    if not all(math.isfinite(b) and b > 0 for b in bandwidth):
        raise field_error(src, f"{where}.bandwidth", f"bandwidths must be positive numbers, got {list(bandwidth)}")
    if not all(BANDWIDTH_RANGE[0] <= b <= BANDWIDTH_RANGE[1] for b in bandwidth):
        # rates are bytes over bandwidths, summed over a link's jobs: 1e-310 overflowed
        # every time to infinity (slowdown 1), 1e308 every link's sum (phibar 1)
        raise field_error(src, f"{where}.bandwidth", f"bandwidths must lie between {BANDWIDTH_RANGE[0]:g} and {BANDWIDTH_RANGE[1]:g} (any unit: only their ratios matter), got {list(bandwidth)}")
    fairness = obj.get("fairness", DEFAULT_FAIRNESS)
    if fairness not in ("flows", "ports", "jobs", "job-maxmin"):
        raise field_error(src, f"{where}.fairness", f"expected 'jobs', 'job-maxmin', 'ports' or 'flows', got {fairness!r}")
    filling = obj.get("filling", "auto")
    if filling not in ("auto", "steady", "progressive"):
        raise field_error(src, f"{where}.filling", f"expected 'auto', 'steady' or 'progressive', got {filling!r}")
    if filling == "progressive" and fairness != "flows":
        raise field_error(src, f"{where}.filling", f"progressive filling is per-flow max-min: it needs fairness 'flows', not {fairness!r}")
    sl = obj.get("service_levels", "default")
    if isinstance(sl, str):
        if sl not in SL_PRESETS:
            raise field_error(src, f"{where}.service_levels", f"unknown table {sl!r}; named tables are {', '.join(SL_PRESETS)}, or give a list of weights")
        weights = SL_PRESETS[sl]
    elif isinstance(sl, list) and sl and all(_is_number(w) and w > 0 for w in sl):
        weights = tuple(_float(w) for w in sl)
    else:
        raise field_error(src, f"{where}.service_levels", "expected a non-empty list of positive weights or a table name")
    if not math.isfinite(sum(weights)):
        # a link's levels' weights are summed: Infinity was the core's error naming "jobs",
        # [1e308, 1e308] overflowed to x = 0 and slowdowns of inf
        raise field_error(src, f"{where}.service_levels", f"the weights and their sum must be finite numbers, got {list(sl)}")
    return ModelSettings(bandwidth=bandwidth, fairness=fairness, sl_weights=weights, timing=timing, filling=filling, mtu_bytes=None if mtu is None else float(mtu))


_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$")


def _node_list(value: Any, fabric: Fabric, src: str, where: str) -> list[int]:
    n = fabric.n_nodes
    if isinstance(value, list):
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            raise field_error(src, where, "expected a list of node ids (whole numbers)")
        ids = list(value)
    elif isinstance(value, str):
        ids = []
        if re.search(r"[A-Za-z]", value):
            import hostlist

            names = {name: i for i, name in enumerate(fabric.spec.node_names)}
            try:
                expanded = hostlist.expand_hostlist(value)
            except hostlist.BadHostlist as exc:
                raise field_error(src, where, f"cannot read the host list {value!r}: {exc}") from None
            for name in expanded:
                if name not in names:
                    # say how the fabric names its nodes (the docs' "cab[1-18]" did not name
                    # a node of the cab preset, whose names are cab0000 to cab1295)
                    first, last = fabric.spec.node_names[0], fabric.spec.node_names[-1]
                    raise field_error(src, where, f"node {name!r} is not on the fabric (its nodes are named {first} to {last})")
                ids.append(names[name])
        else:
            for part in value.split(","):
                m = _RANGE.match(part)
                if not m:
                    raise field_error(src, where, f"cannot read {part!r}: expected node ids and ranges like '0-8,18-26'")
                lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
                if hi < lo:
                    raise field_error(src, where, f"range {part.strip()!r} runs backwards")
                if hi >= n:  # before the range is made: "0-999999999999" ran out of memory
                    raise field_error(src, where, f"node {hi} is not on the fabric ({n} nodes)")
                ids.extend(range(lo, hi + 1))
    else:
        raise field_error(src, where, "expected a list of node ids, a range string like '0-8,18-26', or a host list")
    bad = [x for x in ids if not 0 <= x < n]
    if bad:
        raise field_error(src, where, f"node {bad[0]} is not on the fabric ({n} nodes)")
    if len(set(ids)) != len(ids):
        raise field_error(src, where, "a node is listed twice")
    return ids


def _leaf_nodes(fabric: Fabric) -> list[list[int]]:
    leaf_of = fabric.leaf_of_node
    out: list[list[int]] = [[] for _ in range(fabric.core.n_leaves)]
    for node, leaf in enumerate(leaf_of):
        out[int(leaf)].append(node)
    return out


def _place(spec: Any, fabric: Fabric, used: np.ndarray, rng: np.random.Generator, src: str, where: str) -> list[list[int]] | list[int]:
    """Resolve a ``place`` object to nodes not used yet."""
    if not isinstance(spec, dict) or not spec:
        raise field_error(src, where, "expected an object such as {\"random\": 72}, {\"linear\": 36} or {\"leaves\": [0, 1], \"per_leaf\": 9}")
    free = np.flatnonzero(~used)
    rules = [k for k in ("random", "linear", "leaves") if k in spec]
    if len(rules) > 1:  # one of them was dropped silently
        raise field_error(src, where, f"give one placement rule, not {' and '.join(rules)}")
    if "random" in spec or "linear" in spec:
        kind = "random" if "random" in spec else "linear"
        unknown = set(spec) - {kind}
        if unknown:  # per_leaf, offset, a seed: not read by random or linear, were ignored
            raise field_error(src, f"{where}.{sorted(unknown)[0]}", f"not a key of a {kind} placement (it takes the node count alone: {{\"{kind}\": N}})")
        count = spec[kind]
        if not _is_int(count) or count < 1:  # true is not a count (Python's bool is an int)
            raise field_error(src, f"{where}.{kind}", "expected a node count >= 1")
        if count > len(free):
            raise field_error(src, f"{where}.{kind}", f"asks for {count} nodes; only {len(free)} are left")
        picked = rng.choice(free, size=count, replace=False) if kind == "random" else free[:count]
        return sorted(int(x) for x in picked)
    if "leaves" in spec:
        leaves_spec = spec["leaves"]
        n_leaves = fabric.core.n_leaves
        if leaves_spec == "all":
            leaves = list(range(n_leaves))
        elif isinstance(leaves_spec, list) and all(_is_int(x) and 0 <= x < n_leaves for x in leaves_spec):
            leaves = list(leaves_spec)
        elif isinstance(leaves_spec, str):
            leaves = []
            for part in leaves_spec.split(","):
                m = _RANGE.match(part)
                if not m:
                    raise field_error(src, f"{where}.leaves", f"cannot read {part!r}")
                if m.group(2) is not None and int(m.group(2)) < int(m.group(1)):
                    raise field_error(src, f"{where}.leaves", f"range {part.strip()!r} runs backwards (write low-high)")
                leaves.extend(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
            if any(not 0 <= x < n_leaves for x in leaves):
                raise field_error(src, f"{where}.leaves", f"leaf ids must be below {n_leaves}")
        else:
            raise field_error(src, f"{where}.leaves", f"expected \"all\", a list of leaf ids below {n_leaves} or a range string")
        twice = sorted({x for x in leaves if leaves.count(x) > 1})
        if twice:
            raise field_error(src, f"{where}.leaves", f"leaf {twice[0]} is listed twice")
        per_leaf = spec.get("per_leaf")
        offset = spec.get("offset", 0)
        if per_leaf is not None and (not _is_int(per_leaf) or per_leaf < 1):
            raise field_error(src, f"{where}.per_leaf", "expected a node count >= 1 (or leave it out: every free node)")
        if not _is_int(offset) or offset < 0:
            raise field_error(src, f"{where}.offset", "expected a port offset >= 0")
        unknown = set(spec) - {"leaves", "per_leaf", "offset"}
        if unknown:
            raise field_error(src, f"{where}.{sorted(unknown)[0]}", "unknown placement key; keys are random, linear, leaves, per_leaf, offset")
        by_leaf = _leaf_nodes(fabric)
        out = []
        for leaf in leaves:
            nodes = [x for x in by_leaf[leaf][offset:] if not used[x]]
            if per_leaf is not None:
                if len(nodes) < per_leaf and leaves_spec == "all":
                    continue  # "all": the leaves that still have room
                if len(nodes) < per_leaf:
                    raise field_error(src, f"{where}.per_leaf", f"leaf {leaf} has only {len(nodes)} free nodes from port {offset}, {per_leaf} asked")
                nodes = nodes[:per_leaf]
            if nodes:
                out.append(nodes)
        if not out and per_leaf is not None and leaves_spec == "all":
            # else "the job got no nodes", which does not say that the leaves are too small
            # (a scenario written for 18-node leaves evaluated with --system toy18)
            room = max((sum(1 for x in by_leaf[leaf][offset:] if not used[x]) for leaf in leaves), default=0)
            raise field_error(src, f"{where}.per_leaf", f"no leaf has {per_leaf} free nodes from port {offset} (the roomiest leaf has {room})")
        return out  # per leaf
    raise field_error(src, where, "expected one of the keys random, linear, leaves")


def _number(obj: dict[str, Any], key: str, default: Any, kind: type, src: str, where: str, lo: float | None = None, hi: float | None = None) -> Any:
    v = obj.get(key, default)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) if kind is float else isinstance(v, int) and not isinstance(v, bool)
    if not ok:
        raise field_error(src, f"{where}.{key}", f"expected {'a number' if kind is float else 'a whole number'}, got {v!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi) or (kind is float and not _finite(v)):
        rng = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise field_error(src, f"{where}.{key}", f"must be {rng}, got {v}")
    return kind(v)


def parse_scenario(obj: dict[str, Any], *, source: str = "<scenario>", system: str | None = None, lenient: bool = False) -> Scenario:
    """Build a :class:`Scenario` from its JSON object (docs/network.md). ``system``
    overrides the scenario's fabric; ``lenient`` lets a topology.conf listing a node under
    two leaf switches load (each node on the first)."""
    src = source
    if not isinstance(obj, dict):
        raise InputError(src, "a scenario is a JSON object with fabric, model and jobs")
    unknown = set(obj) - {"fabric", "model", "seed", "jobs", "comment", "description"}
    if unknown:
        raise field_error(src, sorted(unknown)[0], "unknown key; a scenario has fabric, model, seed, jobs (and comment)")
    fabric_text = system or obj.get("fabric")
    if not isinstance(fabric_text, str) or not fabric_text:
        raise field_error(src, "fabric", "expected a --system string: a preset, fattree:K=..,S=..,P=.. or a topology.conf path")
    if not system and not Path(fabric_text).exists() and Path(src).is_file() and (Path(src).parent / fabric_text).is_file():
        fabric_text = str(Path(src).parent / fabric_text)  # a topology.conf next to the scenario
    try:
        fabric = load_fabric(fabric_text, lenient=lenient)
    except InputError as exc:
        if system or Path(fabric_text).is_file():
            raise  # --system's own error, or a topology.conf's, which names its line
        # the scenario's "fabric" string: name the scenario file, and the way out
        what = f"{exc.field} {exc.message}" if exc.field else exc.message
        raise InputError(src, f"{fabric_text!r}: {what}", field="fabric", hint="--system FABRIC evaluates the scenario on another fabric") from None
    settings = parse_settings(obj.get("model"), src)
    # bounded as a --network spec's: each job's seed (seed x 1,000,003 + its index) is a
    # 64-bit integer in the core (a larger one was an internal error)
    seed = _number(obj, "seed", 0, int, src, "scenario", lo=0, hi=SEED_LIMIT)
    jobs_obj = obj.get("jobs")
    if not isinstance(jobs_obj, list) or not jobs_obj:
        raise field_error(src, "jobs", "expected a non-empty list of jobs")
    used = np.zeros(fabric.n_nodes, dtype=bool)
    rng = np.random.default_rng(seed)
    resolved: list[tuple[int, ScenarioJob]] = []
    # explicit node lists first (they pin nodes), then placements in order
    order = sorted(range(len(jobs_obj)), key=lambda i: 0 if isinstance(jobs_obj[i], dict) and "nodes" in jobs_obj[i] else 1)
    names: set[str] = set()
    for i in order:
        j = jobs_obj[i]
        where = f"jobs[{i}]"
        if not isinstance(j, dict):
            raise field_error(src, where, "expected an object")
        bad = set(j) - _JOB_KEYS
        if bad:
            raise field_error(src, f"{where}.{sorted(bad)[0]}", "unknown job key; keys are " + ", ".join(sorted(_JOB_KEYS)))
        name = j.get("name", f"job{i}")
        if not isinstance(name, str) or not name:
            raise field_error(src, f"{where}.name", "expected a non-empty string")
        bully = j.get("bully")
        if bully is not None and bully not in BULLIES:
            raise field_error(src, f"{where}.bully", f"unknown bully {bully!r}; seed 004's bullies are {', '.join(BULLIES)}")
        if ("nodes" in j) == ("place" in j) and not (bully and "nodes" not in j):
            raise field_error(src, where, "give exactly one of nodes (an explicit list) and place (a placement rule)")
        # a key this kind of job does not read was dropped silently (a bully's flows even
        # replaced its pattern, leaving no bully)
        if bully == "interleaved" and "pattern" in j:
            raise field_error(src, f"{where}.pattern", "an interleaved bully's jobs take patterns (a list), not pattern")
        for key in ("count", "patterns"):
            if key in j and bully != "interleaved":
                raise field_error(src, f"{where}.{key}", "only an interleaved bully reads it (the number of its jobs and their patterns)")
        if "flows" in j:
            if bully:
                raise field_error(src, f"{where}.flows", "a bully job has its own pattern; leave flows out")
            if "pattern" in j:
                raise field_error(src, f"{where}.pattern", "give a pattern or explicit flows, not both")
            if "bytes" in j:
                raise field_error(src, f"{where}.bytes", "explicit flows give their own bytes; leave bytes out")
        common = {
            "bytes": _number(j, "bytes", 1.0, float, src, where, lo=0.0, hi=MAX_FLOW_BYTES),
            # the core's ranks_per_node is 32-bit (as a --network spec's), its seeds 64-bit
            # (an interleaved bully's jobs add their index): larger were internal errors
            "ranks_per_node": _number(j, "ranks_per_node", 1, int, src, where, lo=1, hi=2**31),
            "seed": _number(j, "seed", seed * 1_000_003 + i, int, src, where, lo=0, hi=2**63),
            "service_level": _number(j, "service_level", 0, int, src, where, lo=0, hi=len(settings.sl_weights) - 1),
            "phi": _number(j, "phi", -1.0, float, src, where, lo=0.0, hi=1.0) if "phi" in j else -1.0,
        }
        if common["bytes"] <= 0:  # no traffic, yet the job model would give it a phi
            raise field_error(src, f"{where}.bytes", f"must be > 0 (bytes per flow; a job without traffic has pattern none), got {j['bytes']}")
        both = [k for k in ("comm_fraction", "message_bytes", "messages") if k in j]
        if "phi" in j and both:  # phi bypasses the job model: its keys would be dropped
            raise field_error(src, f"{where}.phi", f"phi is the bandwidth-bound fraction itself, bypassing the job model; give it or {both[0]}, not both")
        app = j.get("app")
        overrides = {
            "comm_fraction": _number(j, "comm_fraction", None, float, src, where, lo=0.0, hi=1.0) if "comm_fraction" in j else None,
            "message_bytes": _number(j, "message_bytes", None, float, src, where, lo=0.0) if "message_bytes" in j else None,
            "messages": _number(j, "messages", None, int, src, where, lo=1) if "messages" in j else None,
        }
        timing = settings.timing or timing_for(fabric_text)
        if "nodes" in j:
            nodes_or_leaves: Any = _node_list(j["nodes"], fabric, src, f"{where}.nodes")
            clash = [x for x in nodes_or_leaves if used[x]]
            if clash:
                raise field_error(src, f"{where}.nodes", f"node {clash[0]} is already used by another job")
        else:
            place = j.get("place", {"leaves": "all"})
            nodes_or_leaves = _place(place, fabric, used, rng, src, f"{where}.place")
        if nodes_or_leaves and isinstance(nodes_or_leaves[0], list):
            per_leaf = nodes_or_leaves
            flat = [x for leaf in per_leaf for x in leaf]
        else:
            per_leaf = None
            flat = list(nodes_or_leaves)
        if not flat:  # before the interleaved bully's deal: with no nodes it vanished, silently
            raise field_error(src, where, "the job got no nodes")
        if bully == "interleaved":
            # at most one job per node of the fabric (a count of 10^12 drew that many cuts:
            # out of memory)
            count = _number(j, "count", 3, int, src, where, lo=1, hi=fabric.n_nodes)
            pats = j.get("patterns", list(INTERLEAVED_PATTERNS))
            if not isinstance(pats, list) or not pats or not all(isinstance(p, str) for p in pats):
                raise field_error(src, f"{where}.patterns", "expected a list of pattern names")
            groups: list[list[int]] = [[] for _ in range(count)]
            jrng = np.random.default_rng(common["seed"])
            for leaf in per_leaf if per_leaf is not None else [flat]:
                # deal this leaf's nodes to the jobs in random-sized runs (variable nodes per leaf)
                cuts = np.sort(jrng.integers(0, len(leaf) + 1, size=count - 1))
                bounds = [0, *cuts.tolist(), len(leaf)]
                start = int(jrng.integers(count))
                for k in range(count):
                    groups[(start + k) % count].extend(leaf[bounds[k] : bounds[k + 1]])
            if name in names:
                raise field_error(src, f"{where}.name", f"job name {name!r} is used twice")
            names.add(name)
            for k, g in enumerate(groups):
                if not g:
                    continue
                if f"{name}.{k + 1}" in names:  # two jobs of one name in the result
                    raise field_error(src, f"{where}.name", f"the interleaved bully's job {name}.{k + 1} has the name of another job")
                names.add(f"{name}.{k + 1}")
                sub = ScenarioJob(
                    name=f"{name}.{k + 1}", nodes=sorted(g), pattern=pats[k % len(pats)], bully="interleaved", origin=where, **{**common, "seed": common["seed"] + k}
                )
                check_pattern(sub.pattern, src, f"{where}.patterns")
                _apply_job_model(sub, app, overrides, timing, "ranks_per_node" in j, src, where)
                resolved.append((i, sub))
                for x in g:
                    used[x] = True
            continue
        if bully:
            pattern = BULLIES[bully]
            if "pattern" in j:
                raise field_error(src, f"{where}.pattern", "a bully job has its own pattern; leave pattern out")
            if bully == "incast":
                flat = sorted(flat)  # the root (rank 0) is on the first leaf
        else:
            pattern = j.get("pattern", "none")
            if not isinstance(pattern, str):
                raise field_error(src, f"{where}.pattern", "expected a pattern name")
        flows = None
        if "flows" in j:
            flows = _flows(j["flows"], src, f"{where}.flows")
            # ranks are numbered over the job's nodes x ranks_per_node (the engine's check
            # would name only "jobs")
            n_ranks = len(flat) * int(common["ranks_per_node"])
            for k, (a, b, _) in enumerate(flows):
                if max(a, b) >= n_ranks:
                    raise field_error(
                        src, f"{where}.flows[{k}]", f"rank {max(a, b)} is not below the job's {n_ranks} ranks ({len(flat)} nodes x {common['ranks_per_node']} ranks per node)"
                    )
            pattern = "explicit"
        else:
            check_pattern(pattern, src, f"{where}.pattern")
            if pattern.strip().lower() in ("none", "compute"):
                # pattern defaults to none: a job given its communication but no pattern
                # sent nothing, and was reported with that phi, without a word
                said = next((f"{k} {j[k]}" for k in ("phi", "comm_fraction") if k in j and _is_number(j[k]) and j[k] > 0), None)
                if said is not None:
                    given = f"pattern {j['pattern']!r}" if "pattern" in j else "no pattern (none: compute only)"
                    raise field_error(src, f"{where}.pattern", f"the job has {given}, so it sends nothing, yet gives {said}: give its pattern or flows")
        if name in names:
            raise field_error(src, f"{where}.name", f"job name {name!r} is used twice")
        names.add(name)
        for x in flat:
            used[x] = True
        job = ScenarioJob(name=name, nodes=flat if "nodes" in j else sorted(flat), pattern=pattern, flows=flows, bully=bully, origin=where, **common)
        _apply_job_model(job, app if app is not None else ("bully" if bully else None), overrides, timing, "ranks_per_node" in j, src, where)
        resolved.append((i, job))
    resolved.sort(key=lambda t: t[0])
    return Scenario(fabric=fabric, settings=settings, jobs=[s for _, s in resolved], seed=seed, source=src, fabric_text=fabric_text)


def _apply_job_model(job: ScenarioJob, app: Any, overrides: dict[str, Any], timing: FabricTiming, rpn_given: bool, src: str, where: str) -> None:
    """Attach the job's application profile (jobmodel.py); its bandwidth fraction ``phi``
    is computed at evaluation from its demand, unless the job gave ``phi`` itself."""
    if app is not None and not isinstance(app, str):
        raise field_error(src, f"{where}.app", "expected an application profile name")
    job.profile = profile(job.pattern, app=app, overrides=overrides, src=f"{src}: {where}")
    job.app = job.profile.name
    job.timing = timing
    job.ranks_per_node_given = rpn_given
    if job.phi >= 0:  # an explicit phi is the bandwidth fraction; the rest counts as compute
        job.fractions = {"compute": 1.0 - job.phi, "latency": 0.0, "bandwidth": job.phi}


def _resolve_phi(model: Any, jobs: list[ScenarioJob]) -> None:
    """Set ``phi`` of the jobs that did not give one, from the job model: the bandwidth
    part is the job's busiest node link at the ideal placement (its own pattern, on-node
    messages dropped) at the fabric's data rate; the latency part its messages times the
    per-message latency (jobmodel.py)."""
    for k, j in enumerate(jobs):
        if j.phi >= 0 or j.profile is None:
            continue
        if j.pattern in ("none", "compute") or j.profile.comm_fraction <= 0:
            j.phi, j.fractions = 0.0, {"compute": 1.0, "latency": 0.0, "bandwidth": 0.0}
            continue
        d = j.core_dict()
        # the ranks on a node the application runs (its profile's), unless the job gives
        # them: the replay's phi counts the same ranks (network_spec.bandwidth_share)
        rpn = d["ranks_per_node"] if j.ranks_per_node_given else j.profile.ranks_per_node
        try:
            dem = model.demand(d["nodes"], d["pattern"], bytes=1.0, ranks_per_node=rpn, seed=d["seed"], flows=d.get("flows"))
        except ValueError as exc:  # as the engine's evaluate says it, so that evaluate() names the job
            raise ValueError(f"job {k}: {exc}") from None
        # t_ideal is the busiest node link's bytes over the host bandwidth, which only sets
        # the unit of times: times the host bandwidth, it is that link's messages, which the
        # job model turns into seconds at the fabric's own link rate
        t_ideal_messages = float(dem["t_ideal"]) * float(model.bandwidth[0])
        if j.flows:
            # explicit flows carry their own bytes, only relative within the job (a pattern's
            # flows carry one each): the mean flow is one message, so that [[0, 1, 1e6]] and
            # [[0, 1, 1]] are one job (as bytes they were a million messages, phi 0.5 vs 0.33)
            sizes = [b for s_, d_, b in j.flows if b > 0 and s_ // rpn != d_ // rpn]  # on-node flows dropped
            if sizes:
                t_ideal_messages /= sum(sizes) / len(sizes)
        j.fractions = j.profile.fractions_from_demand(t_ideal_messages, j.timing or FabricTiming())
        j.phi = j.fractions["bandwidth"]


def check_pattern(pattern: str, src: str, where: str) -> None:
    """Refuse what the core's pattern parser refuses (``_core.pattern_name``: crates/
    toposched-core network/patterns.rs, ``Pattern::parse``), naming the field: the core's
    own error names only "jobs", or in the replay escaped as an internal error."""
    try:
        _core.pattern_name(pattern)
    except ValueError as exc:
        reason = str(exc)
        if "group size of sub-a2a" in reason:  # "pattern \"sub-a2a(0)\": the group size ..."
            raise field_error(src, where, f"pattern {pattern!r}: {reason.split(': ', 1)[1]}") from None
        raise field_error(src, where, f"unknown pattern {pattern!r}; patterns are: {', '.join(_core.PATTERNS)}") from None


def _flows(value: Any, src: str, where: str) -> list[tuple[int, int, float]]:
    if not isinstance(value, list) or not value:
        raise field_error(src, where, "expected a list of [source rank, destination rank, bytes]")
    out = []
    for k, f in enumerate(value):
        if not (isinstance(f, list) and len(f) == 3 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in f)):
            raise field_error(src, f"{where}[{k}]", "expected [source rank, destination rank, bytes]")
        s, d, b = f
        if not all(_finite(x) for x in f) or int(s) != s or int(d) != d or s < 0 or d < 0 or not 0 <= b <= MAX_FLOW_BYTES:
            raise field_error(src, f"{where}[{k}]", f"ranks are whole numbers >= 0 and bytes a number from 0 to {MAX_FLOW_BYTES:g}")
        out.append((int(s), int(d), float(b)))
    return out


def _other_format(path: Path, text: str) -> str | None:
    """What a scenario file that is not JSON is instead, if it says so: by its extension
    (.toml, .yaml, .csv), or by reading as TOML (``fabric = "cab"``, ``[[jobs]]``)."""
    known = {".toml": "TOML", ".yaml": "YAML", ".yml": "YAML", ".csv": "CSV"}
    if path.suffix.lower() in known:
        return f"{known[path.suffix.lower()]} (by its extension {path.suffix})"
    import tomllib

    try:
        return "TOML (it reads as TOML)" if tomllib.loads(text) else None
    except tomllib.TOMLDecodeError:
        return None


def load_scenario(path: str | Path, *, system: str | None = None, lenient: bool = False) -> Scenario:
    """Read a scenario JSON file (docs/network.md)."""
    p = Path(path)
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        # JSON lets the last of two equal keys win, silently: remember the first repeat
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out and not repeated:
                repeated.append(key)
            out[key] = value
        return out

    try:
        text = p.read_text(encoding="utf-8-sig")  # -sig: a byte order mark is not content
        obj = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        other = _other_format(p, text)
        if other:  # "not valid JSON" of a TOML file read as if it were a broken JSON one
            raise InputError(str(p), f"a scenario is a JSON object (docs/network.md), and this file is {other}; write it as JSON") from None
        raise InputError(str(p), f"not valid JSON: {exc.msg}", line=exc.lineno) from None
    except UnicodeDecodeError as exc:  # else an "internal error"
        raise InputError(str(p), f"not UTF-8 text: byte 0x{exc.object[exc.start]:02x} at offset {exc.start} (save the file as UTF-8)") from None
    if repeated:
        raise InputError(str(p), "given twice in one object (JSON would keep the last silently)", field=repeated[0])
    return parse_scenario(obj, source=str(p), system=system, lenient=lenient)


# ---------------------------------------------------------------------------- evaluating


def evaluate(scenario: Scenario) -> dict[str, Any]:
    """Evaluate a scenario: the result object of docs/network.md."""
    try:
        # inside: settings changed after parsing (interfere --fairness) are checked here
        model = network_model(scenario.fabric, scenario.settings, scenario.settings.timing_on(scenario.fabric_text))
        _resolve_phi(model, scenario.jobs)
        ev = model.evaluate([j.core_dict() for j in scenario.jobs])
    except ValueError as exc:
        message = str(exc)
        # the engine numbers the jobs it was given: an interleaved bully's count as several,
        # so "job 3" could be the file's second job; name the file's job
        m = re.match(r"job (\d+): (.*)", message, flags=re.DOTALL)
        if m and int(m.group(1)) < len(scenario.jobs):
            job = scenario.jobs[int(m.group(1))]
            what = f"job {job.name}: " if job.bully == "interleaved" else ""
            raise InputError(scenario.source, what + m.group(2), field=job.origin or "jobs") from None
        raise InputError(scenario.source, message, field="model" if "filling" in message else "jobs") from None
    names = [j.name for j in scenario.jobs]
    jobs = []
    for j, r in zip(scenario.jobs, ev["jobs"]):
        jobs.append(
            {
                "name": j.name,
                "pattern": j.pattern,
                "bully": j.bully,
                "nodes": len(j.nodes),
                "node_ids": list(j.nodes),
                "service_level": j.service_level,
                "phi": j.phi,
                "app": j.app,
                "compute_fraction": (j.fractions or {}).get("compute"),
                "latency_fraction": (j.fractions or {}).get("latency"),
                "ranks_per_node": j.ranks_per_node,
                "seed": j.seed,
                "flows": r["flows"],
                "bytes_per_iteration": r["bytes"],
                "t_ideal": r["t_ideal"],
                "t_alone": r["t_alone"],
                "t_shared": r["t_shared"],
                "placement_penalty": r["placement_penalty"],
                "x": r["x"],
                "comm_slowdown": r["comm_slowdown"],
                "phibar": r["phibar"],
                "slowdown": r["slowdown"],
                "slowdown_vs_ideal": r["slowdown_vs_ideal"],
                "queue_wait_packets": r["queue_wait"],
                "queueing": r["queueing"],
                "links_used": r["links_used"],
                "inter_switch_links": r["inter_switch_links"],
                "links_shared": r["links_shared"],
                "hot_links": r["hot_links"],
                "shared_with": [names[k] for k in r["shared_with"]],
            }
        )
    hot = [{"link": int(link), "name": model.link_name(int(link)), "load": load, "capacity": cap} for link, load, cap in ev["hot_links"]]
    return {
        "toposched_version": __version__,
        "scenario": scenario.source,
        "fabric": {k: v for k, v in scenario.fabric.describe().items() if k not in ("node_names", "node_leaf", "leaf_names", "leaf_pod", "pod_names")},
        "model": {**scenario.settings.describe(), "filling": ev["filling"]},
        "seed": scenario.seed,
        "jobs": jobs,
        "links": {"total": model.n_links, "shared": ev["shared_links"], "hot": hot},
        "solver_rounds": ev["rounds"],
    }


def evaluate_scenario(obj: dict[str, Any], *, source: str = "<scenario>") -> dict[str, Any]:
    """Parse and evaluate a scenario given as a dict."""
    return evaluate(parse_scenario(obj, source=source))


def write_result(result: dict[str, Any], path: str | Path) -> Path:
    """Write a result as JSON, atomically."""
    from .files import make_parent, write_text_atomic

    p = Path(path)
    make_parent(p)
    return write_text_atomic(p, json.dumps(result, indent=1) + "\n")

"""Network interference model: scenarios of co-running jobs, and what they do to each other.

A *scenario* is a fabric, the model's settings and a list of jobs, each with its nodes, its
communication pattern, its service level and its communication fraction ``phi``. The
native core routes every flow (static D-mod-k), shares every link among the jobs that load
it (job-level fair bottleneck, per-flow claims by default) and returns, per job, its
communication time per iteration alone on its placement, with the others, and the
resulting slowdown. docs/network.md documents the JSON format and the model.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__
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

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"bandwidth": list(self.bandwidth), "fairness": self.fairness, "service_levels": list(self.sl_weights)}
        if self.timing is not None:
            d["link_gbps"] = self.timing.link_bytes_per_s * 8 / 1e9
            d["latency_us"] = self.timing.message_latency_s * 1e6
        return d


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

    def core_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "nodes": self.nodes,
            "pattern": self.pattern,
            "bytes": self.bytes,
            "ranks_per_node": self.ranks_per_node,
            "seed": self.seed,
            "service_level": self.service_level,
            "phi": self.phi,
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


def network_model(fabric: Fabric, settings: ModelSettings | None = None) -> Any:
    """The native ``NetworkModel`` of a fabric."""
    from . import _core

    s = settings or ModelSettings()
    return _core.NetworkModel(fabric.core, bandwidth=tuple(s.bandwidth), fairness=s.fairness, sl_weights=list(s.sl_weights), filling=s.filling)


# ---------------------------------------------------------------------------- reading


def _err(src: str, field_name: str, message: str) -> InputError:
    return InputError(src, message, field=field_name)


def parse_settings(obj: Any, src: str = "<scenario>", where: str = "model") -> ModelSettings:
    """The ``model`` object of a scenario (or of a ``--network`` spec) as settings."""
    if obj is None:
        return ModelSettings()
    if not isinstance(obj, dict):
        raise _err(src, where, "expected an object with bandwidth, fairness, service_levels")
    unknown = set(obj) - {"bandwidth", "fairness", "service_levels", "link_gbps", "overhead_us", "filling"}
    if unknown:
        raise _err(src, f"{where}.{sorted(unknown)[0]}", "unknown setting; settings are bandwidth, fairness, service_levels, link_gbps, overhead_us, filling")
    timing = None
    if "link_gbps" in obj or "overhead_us" in obj:
        gbps, over = obj.get("link_gbps", 32.0), obj.get("overhead_us", 1.0)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in (gbps, over)):
            raise _err(src, f"{where}.link_gbps", "link_gbps and overhead_us are positive numbers")
        timing = FabricTiming(link_bytes_per_s=float(gbps) * 1e9 / 8, overhead_s=float(over) * 1e-6)
    bw = obj.get("bandwidth", 1.0)
    if isinstance(bw, (int, float)):
        bandwidth = (float(bw),) * 3
    elif isinstance(bw, list) and len(bw) == 3:
        bandwidth = tuple(float(x) for x in bw)
    elif isinstance(bw, dict) and set(bw) <= {"host", "leaf", "core"}:
        bandwidth = tuple(float(bw.get(k, 1.0)) for k in ("host", "leaf", "core"))
    else:
        raise _err(src, f"{where}.bandwidth", "expected a number, [host, leaf, core] or {\"host\": .., \"leaf\": .., \"core\": ..}")
    if not all(math.isfinite(b) and b > 0 for b in bandwidth):
        raise _err(src, f"{where}.bandwidth", f"bandwidths must be positive numbers, got {list(bandwidth)}")
    fairness = obj.get("fairness", DEFAULT_FAIRNESS)
    if fairness not in ("flows", "ports", "jobs", "job-maxmin"):
        raise _err(src, f"{where}.fairness", f"expected 'jobs', 'job-maxmin', 'ports' or 'flows', got {fairness!r}")
    filling = obj.get("filling", "auto")
    if filling not in ("auto", "steady", "progressive"):
        raise _err(src, f"{where}.filling", f"expected 'auto', 'steady' or 'progressive', got {filling!r}")
    if filling == "progressive" and fairness != "flows":
        raise _err(src, f"{where}.filling", f"progressive filling is per-flow max-min: it needs fairness 'flows', not {fairness!r}")
    sl = obj.get("service_levels", "default")
    if isinstance(sl, str):
        if sl not in SL_PRESETS:
            raise _err(src, f"{where}.service_levels", f"unknown table {sl!r}; named tables are {', '.join(SL_PRESETS)}, or give a list of weights")
        weights = SL_PRESETS[sl]
    elif isinstance(sl, list) and sl and all(isinstance(w, (int, float)) and not isinstance(w, bool) and w > 0 for w in sl):
        weights = tuple(float(w) for w in sl)
    else:
        raise _err(src, f"{where}.service_levels", "expected a non-empty list of positive weights or a table name")
    return ModelSettings(bandwidth=bandwidth, fairness=fairness, sl_weights=weights, timing=timing, filling=filling)


_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$")


def _node_list(value: Any, fabric: Fabric, src: str, where: str) -> list[int]:
    n = fabric.n_nodes
    if isinstance(value, list):
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            raise _err(src, where, "expected a list of node ids (whole numbers)")
        ids = list(value)
    elif isinstance(value, str):
        ids = []
        if re.search(r"[A-Za-z]", value):
            import hostlist

            names = {name: i for i, name in enumerate(fabric.spec.node_names)}
            try:
                expanded = hostlist.expand_hostlist(value)
            except hostlist.BadHostlist as exc:
                raise _err(src, where, f"cannot read the host list {value!r}: {exc}") from None
            for name in expanded:
                if name not in names:
                    raise _err(src, where, f"node {name!r} is not on the fabric")
                ids.append(names[name])
        else:
            for part in value.split(","):
                m = _RANGE.match(part)
                if not m:
                    raise _err(src, where, f"cannot read {part!r}: expected node ids and ranges like '0-8,18-26'")
                lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
                if hi < lo:
                    raise _err(src, where, f"range {part.strip()!r} runs backwards")
                ids.extend(range(lo, hi + 1))
    else:
        raise _err(src, where, "expected a list of node ids, a range string like '0-8,18-26', or a host list")
    bad = [x for x in ids if not 0 <= x < n]
    if bad:
        raise _err(src, where, f"node {bad[0]} is not on the fabric ({n} nodes)")
    if len(set(ids)) != len(ids):
        raise _err(src, where, "a node is listed twice")
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
        raise _err(src, where, "expected an object such as {\"random\": 72}, {\"linear\": 36} or {\"leaves\": [0, 1], \"per_leaf\": 9}")
    free = np.flatnonzero(~used)
    if "random" in spec or "linear" in spec:
        kind = "random" if "random" in spec else "linear"
        count = spec[kind]
        if not isinstance(count, int) or count < 1:
            raise _err(src, f"{where}.{kind}", "expected a node count >= 1")
        if count > len(free):
            raise _err(src, f"{where}.{kind}", f"asks for {count} nodes; only {len(free)} are left")
        picked = rng.choice(free, size=count, replace=False) if kind == "random" else free[:count]
        return sorted(int(x) for x in picked)
    if "leaves" in spec:
        leaves_spec = spec["leaves"]
        n_leaves = fabric.core.n_leaves
        if leaves_spec == "all":
            leaves = list(range(n_leaves))
        elif isinstance(leaves_spec, list) and all(isinstance(x, int) and 0 <= x < n_leaves for x in leaves_spec):
            leaves = list(leaves_spec)
        elif isinstance(leaves_spec, str):
            leaves = []
            for part in leaves_spec.split(","):
                m = _RANGE.match(part)
                if not m:
                    raise _err(src, f"{where}.leaves", f"cannot read {part!r}")
                leaves.extend(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
            if any(not 0 <= x < n_leaves for x in leaves):
                raise _err(src, f"{where}.leaves", f"leaf ids must be below {n_leaves}")
        else:
            raise _err(src, f"{where}.leaves", f"expected \"all\", a list of leaf ids below {n_leaves} or a range string")
        per_leaf = spec.get("per_leaf")
        offset = spec.get("offset", 0)
        if per_leaf is not None and (not isinstance(per_leaf, int) or per_leaf < 1):
            raise _err(src, f"{where}.per_leaf", "expected a node count >= 1 (or leave it out: every free node)")
        if not isinstance(offset, int) or offset < 0:
            raise _err(src, f"{where}.offset", "expected a port offset >= 0")
        unknown = set(spec) - {"leaves", "per_leaf", "offset"}
        if unknown:
            raise _err(src, f"{where}.{sorted(unknown)[0]}", "unknown placement key; keys are random, linear, leaves, per_leaf, offset")
        by_leaf = _leaf_nodes(fabric)
        out = []
        for leaf in leaves:
            nodes = [x for x in by_leaf[leaf][offset:] if not used[x]]
            if per_leaf is not None:
                if len(nodes) < per_leaf and leaves_spec == "all":
                    continue  # "all": the leaves that still have room
                if len(nodes) < per_leaf:
                    raise _err(src, f"{where}.per_leaf", f"leaf {leaf} has only {len(nodes)} free nodes from port {offset}, {per_leaf} asked")
                nodes = nodes[:per_leaf]
            if nodes:
                out.append(nodes)
        return out  # per leaf
    raise _err(src, where, "expected one of the keys random, linear, leaves")


def _number(obj: dict, key: str, default: Any, kind: type, src: str, where: str, lo: float | None = None, hi: float | None = None) -> Any:
    v = obj.get(key, default)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) if kind is float else isinstance(v, int) and not isinstance(v, bool)
    if not ok:
        raise _err(src, f"{where}.{key}", f"expected {'a number' if kind is float else 'a whole number'}, got {v!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi) or (kind is float and not math.isfinite(v)):
        rng = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise _err(src, f"{where}.{key}", f"must be {rng}, got {v}")
    return kind(v)


def parse_scenario(obj: dict[str, Any], *, source: str = "<scenario>", system: str | None = None) -> Scenario:
    """Build a :class:`Scenario` from its JSON object (docs/network.md). ``system``
    overrides the scenario's fabric."""
    src = source
    if not isinstance(obj, dict):
        raise InputError(src, "a scenario is a JSON object with fabric, model and jobs")
    unknown = set(obj) - {"fabric", "model", "seed", "jobs", "comment", "description"}
    if unknown:
        raise _err(src, sorted(unknown)[0], "unknown key; a scenario has fabric, model, seed, jobs (and comment)")
    fabric_text = system or obj.get("fabric")
    if not isinstance(fabric_text, str) or not fabric_text:
        raise _err(src, "fabric", "expected a --system string: a preset, fattree:K=..,S=..,P=.. or a topology.conf path")
    if not system and not Path(fabric_text).exists() and Path(src).is_file() and (Path(src).parent / fabric_text).is_file():
        fabric_text = str(Path(src).parent / fabric_text)  # a topology.conf next to the scenario
    fabric = load_fabric(fabric_text)
    settings = parse_settings(obj.get("model"), src)
    seed = _number(obj, "seed", 0, int, src, "scenario", lo=0)
    jobs_obj = obj.get("jobs")
    if not isinstance(jobs_obj, list) or not jobs_obj:
        raise _err(src, "jobs", "expected a non-empty list of jobs")
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
            raise _err(src, where, "expected an object")
        bad = set(j) - _JOB_KEYS
        if bad:
            raise _err(src, f"{where}.{sorted(bad)[0]}", "unknown job key; keys are " + ", ".join(sorted(_JOB_KEYS)))
        name = j.get("name", f"job{i}")
        if not isinstance(name, str) or not name:
            raise _err(src, f"{where}.name", "expected a non-empty string")
        bully = j.get("bully")
        if bully is not None and bully not in BULLIES:
            raise _err(src, f"{where}.bully", f"unknown bully {bully!r}; seed 004's bullies are {', '.join(BULLIES)}")
        if ("nodes" in j) == ("place" in j) and not (bully and "nodes" not in j):
            raise _err(src, where, "give exactly one of nodes (an explicit list) and place (a placement rule)")
        common = {
            "bytes": _number(j, "bytes", 1.0, float, src, where, lo=0.0),
            "ranks_per_node": _number(j, "ranks_per_node", 1, int, src, where, lo=1),
            "seed": _number(j, "seed", seed * 1_000_003 + i, int, src, where, lo=0),
            "service_level": _number(j, "service_level", 0, int, src, where, lo=0, hi=len(settings.sl_weights) - 1),
            "phi": _number(j, "phi", -1.0, float, src, where, lo=0.0, hi=1.0) if "phi" in j else -1.0,
        }
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
                raise _err(src, f"{where}.nodes", f"node {clash[0]} is already used by another job")
        else:
            place = j.get("place", {"leaves": "all"})
            nodes_or_leaves = _place(place, fabric, used, rng, src, f"{where}.place")
        if nodes_or_leaves and isinstance(nodes_or_leaves[0], list):
            per_leaf = nodes_or_leaves
            flat = [x for leaf in per_leaf for x in leaf]
        else:
            per_leaf = None
            flat = list(nodes_or_leaves)
        if bully == "interleaved":
            count = _number(j, "count", 3, int, src, where, lo=1)
            pats = j.get("patterns", list(INTERLEAVED_PATTERNS))
            if not isinstance(pats, list) or not pats or not all(isinstance(p, str) for p in pats):
                raise _err(src, f"{where}.patterns", "expected a list of pattern names")
            groups: list[list[int]] = [[] for _ in range(count)]
            jrng = np.random.default_rng(common["seed"])
            for leaf in per_leaf if per_leaf is not None else [flat]:
                # deal this leaf's nodes to the jobs in random-sized runs (variable nodes per leaf)
                cuts = np.sort(jrng.integers(0, len(leaf) + 1, size=count - 1))
                bounds = [0, *cuts.tolist(), len(leaf)]
                start = int(jrng.integers(count))
                for k in range(count):
                    groups[(start + k) % count].extend(leaf[bounds[k] : bounds[k + 1]])
            for k, g in enumerate(groups):
                if not g:
                    continue
                sub = ScenarioJob(name=f"{name}.{k + 1}", nodes=sorted(g), pattern=pats[k % len(pats)], bully="interleaved", **{**common, "seed": common["seed"] + k})
                _check_pattern(sub.pattern, src, f"{where}.patterns")
                _apply_job_model(sub, app, overrides, timing, "ranks_per_node" in j, src, where)
                resolved.append((i, sub))
                for x in g:
                    used[x] = True
            if name in names:
                raise _err(src, f"{where}.name", f"job name {name!r} is used twice")
            names.add(name)
            continue
        if not flat:
            raise _err(src, where, "the job got no nodes")
        if bully:
            pattern = BULLIES[bully]
            if "pattern" in j:
                raise _err(src, f"{where}.pattern", "a bully job has its own pattern; leave pattern out")
            if bully == "incast":
                flat = sorted(flat)  # the root (rank 0) is on the first leaf
        else:
            pattern = j.get("pattern", "none")
            if not isinstance(pattern, str):
                raise _err(src, f"{where}.pattern", "expected a pattern name")
        flows = None
        if "flows" in j:
            flows = _flows(j["flows"], src, f"{where}.flows")
            pattern = "explicit"
        else:
            _check_pattern(pattern, src, f"{where}.pattern")
        if name in names:
            raise _err(src, f"{where}.name", f"job name {name!r} is used twice")
        names.add(name)
        for x in flat:
            used[x] = True
        job = ScenarioJob(name=name, nodes=flat if "nodes" in j else sorted(flat), pattern=pattern, flows=flows, bully=bully, **common)
        _apply_job_model(job, app if app is not None else ("bully" if bully else None), overrides, timing, "ranks_per_node" in j, src, where)
        resolved.append((i, job))
    resolved.sort(key=lambda t: t[0])
    return Scenario(fabric=fabric, settings=settings, jobs=[s for _, s in resolved], seed=seed, source=src, fabric_text=fabric_text)


def _apply_job_model(job: ScenarioJob, app: Any, overrides: dict[str, Any], timing: FabricTiming, rpn_given: bool, src: str, where: str) -> None:
    """Attach the job's application profile (jobmodel.py); its bandwidth fraction ``phi``
    is computed at evaluation from its demand, unless the job gave ``phi`` itself."""
    if app is not None and not isinstance(app, str):
        raise _err(src, f"{where}.app", "expected an application profile name")
    job.profile = profile(job.pattern, app=app, overrides=overrides, src=f"{src}: {where}")
    job.app = job.profile.name
    job.timing = timing
    if job.phi >= 0:  # an explicit phi is the bandwidth fraction; the rest counts as compute
        job.fractions = {"compute": 1.0 - job.phi, "latency": 0.0, "bandwidth": job.phi}


def _resolve_phi(model: Any, jobs: list[ScenarioJob]) -> None:
    """Set ``phi`` of the jobs that did not give one, from the job model: the bandwidth
    part is the job's busiest node link at the ideal placement (its own pattern, on-node
    messages dropped) at the fabric's data rate; the latency part its messages times the
    per-message latency (jobmodel.py)."""
    for j in jobs:
        if j.phi >= 0 or j.profile is None:
            continue
        if j.pattern in ("none", "compute") or j.profile.comm_fraction <= 0:
            j.phi, j.fractions = 0.0, {"compute": 1.0, "latency": 0.0, "bandwidth": 0.0}
            continue
        d = j.core_dict()
        dem = model.demand(d["nodes"], d["pattern"], bytes=1.0, ranks_per_node=d["ranks_per_node"], seed=d["seed"], flows=d.get("flows"))
        j.fractions = j.profile.fractions_from_demand(float(dem["t_ideal"]), j.timing or FabricTiming())
        j.phi = j.fractions["bandwidth"]


def _check_pattern(pattern: str, src: str, where: str) -> None:
    from . import _core

    base = pattern.split(":")[0].split("(")[0].lower()
    known = {p.split(":")[0] for p in _core.PATTERNS} | {"compute", "random-pairs", "flood-pairs", "all-to-all", "alltoall", "nearest-neighbor"}
    if base not in known:
        raise _err(src, where, f"unknown pattern {pattern!r}; patterns are: {', '.join(_core.PATTERNS)}")


def _flows(value: Any, src: str, where: str) -> list[tuple[int, int, float]]:
    if not isinstance(value, list) or not value:
        raise _err(src, where, "expected a list of [source rank, destination rank, bytes]")
    out = []
    for k, f in enumerate(value):
        if not (isinstance(f, list) and len(f) == 3 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in f)):
            raise _err(src, f"{where}[{k}]", "expected [source rank, destination rank, bytes]")
        s, d, b = f
        if int(s) != s or int(d) != d or s < 0 or d < 0 or b < 0:
            raise _err(src, f"{where}[{k}]", "ranks are whole numbers >= 0 and bytes >= 0")
        out.append((int(s), int(d), float(b)))
    return out


def load_scenario(path: str | Path, *, system: str | None = None) -> Scenario:
    """Read a scenario JSON file (docs/network.md)."""
    p = Path(path)
    try:
        obj = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(str(p), f"not valid JSON: {exc.msg}", line=exc.lineno) from None
    return parse_scenario(obj, source=str(p), system=system)


# ---------------------------------------------------------------------------- evaluating


def evaluate(scenario: Scenario) -> dict[str, Any]:
    """Evaluate a scenario: the result object of docs/network.md."""
    try:
        # inside: settings changed after parsing (interfere --fairness) are checked here
        model = network_model(scenario.fabric, scenario.settings)
        _resolve_phi(model, scenario.jobs)
        ev = model.evaluate([j.core_dict() for j in scenario.jobs])
    except ValueError as exc:
        raise InputError(scenario.source, str(exc), field="model" if "filling" in str(exc) else "jobs") from None
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
                "links_used": r["links_used"],
                "inter_switch_links": r["inter_switch_links"],
                "links_shared": r["links_shared"],
                "hot_links": r["hot_links"],
                "shared_with": [names[k] for k in r["shared_with"]],
            }
        )
    hot = [{"link": int(l), "name": model.link_name(int(l)), "load": load, "capacity": cap} for l, load, cap in ev["hot_links"]]
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
    from .files import write_text_atomic

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(p, json.dumps(result, indent=1) + "\n")


# ---------------------------------------------------------------------------- closed loop (replay)

#: Chatterbug patterns of the SC18 paper's experiments (seed 000 §V-B), for ``mapping=random``.
PAPER_PATTERNS: tuple[str, ...] = ("stencil4d", "unstructured", "pairs", "subcom-a2a")

#: Default ``mapping=bins`` table: (largest node count, pattern, communication fraction,
#: explicit phi or None). One-node jobs do not use the network; the others communicate 30 %
#: of their time (seed 000's production-like variant: "communication ... around 30% of the
#: total time", which measured a 1.08x mean / 1.31x max gain from isolation), with the
#: patterns' application profiles (jobmodel.py) splitting that time into latency and
#: bandwidth; larger jobs get denser patterns (documented choice, replaceable).
DEFAULT_BINS: tuple[tuple[int, str, float | None, float | None], ...] = (
    (1, "none", 0.0, None),
    (16, "stencil3d", 0.3, None),
    (128, "stencil4d", 0.3, None),
    (512, "unstructured", 0.3, None),
    (2**62, "subcom-a2a", 0.3, None),
)

#: Communication fraction of ``mapping=random`` / ``column`` jobs unless ``phi`` is given.
DEFAULT_COMM_FRACTION = 0.3

#: Node count the bandwidth share of a pattern is computed at for larger jobs (the share
#: is a per-node property; this bounds the cost for dense patterns).
SHARE_NODES_CAP = 128

_SHARE_CACHE: dict[tuple[str, int, float, float], float] = {}
_SHARE_MODEL: list[Any] = []  # one NetworkModel for the shares (node links only matter)


def bandwidth_share(pattern: str, n_nodes: int, timing: FabricTiming | None = None) -> float:
    """The bandwidth part of a job's communication time under the job model (jobmodel.py):
    its pattern's default profile, ranks per node and message size, on ``n_nodes`` (at most
    ``SHARE_NODES_CAP``) nodes. ``phi = comm_fraction x share``. Cached."""
    from . import _core

    timing = timing or FabricTiming()
    n = max(1, min(int(n_nodes), SHARE_NODES_CAP))
    key = (pattern, n, timing.link_bytes_per_s, timing.message_latency_s)
    if key in _SHARE_CACHE:
        return _SHARE_CACHE[key]
    prof = profile(pattern, overrides={"comm_fraction": 1.0})
    if n < 2 and prof.ranks_per_node <= 1 or pattern in ("none", "compute"):
        share = 0.0
    else:
        if not _SHARE_MODEL:
            _SHARE_MODEL.append(_core.NetworkModel(_core.Topology.preset("cab")))
        dem = _SHARE_MODEL[0].demand(list(range(n)), pattern, ranks_per_node=prof.ranks_per_node, seed=0)
        share = prof.fractions_from_demand(float(dem["t_ideal"]), timing)["bandwidth"]
    _SHARE_CACHE[key] = share
    return share


@dataclass
class NetworkSpec:
    """How a replay assigns traffic to jobs and how the network model shares links
    (``simulate --network SPEC``; docs/network.md "Closed loop")."""

    #: "bins" (by job size), "random" (seeded, as seed 000 did) or "column" (a trace column).
    mapping: str = "bins"
    bins: tuple[tuple[int, str, float | None, float | None], ...] = DEFAULT_BINS
    patterns: tuple[str, ...] = PAPER_PATTERNS
    #: Explicit bandwidth fraction (bypassing the job model): a value, or (low, high)
    #: drawn uniformly per job (per column value for "column"). None: the job model.
    phi: float | tuple[float, float] | None = None
    #: Communication fraction for the job model (value or range), when ``phi`` is None.
    comm_fraction: float | tuple[float, float] = DEFAULT_COMM_FRACTION
    column: str | None = None
    #: A workload column holding each job's service level.
    sl_column: str | None = None
    seed: int = 0
    #: What placement a logged run time refers to: "random" (default: a uniformly random
    #: placement of its size, as a topology-oblivious scheduler gives; compact placements
    #: then run faster than logged, scattered ones slower), "alone" (its own placement:
    #: only interference stretches it) or "ideal".
    reference: str = "random"
    #: A job the predicted slowdown pushes past its limit: "run-on" (default: the
    #: prediction shows in its run time) or "kill" (killed at the limit, work lost).
    overrun: str = "run-on"
    ranks_per_node: int = 1
    bytes: float = 1.0
    settings: ModelSettings = field(default_factory=ModelSettings)
    text: str = ""

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"spec": self.text, "mapping": self.mapping, "reference": self.reference, "overrun": self.overrun, "ranks_per_node": self.ranks_per_node, "seed": self.seed}
        if self.mapping == "bins":
            d["bins"] = [{"max_nodes": b[0], "pattern": b[1], **({"phi": b[3]} if b[3] is not None else {"comm_fraction": b[2]})} for b in self.bins]
        else:
            d["patterns"] = list(self.patterns)
            if self.phi is not None:
                d["phi"] = list(self.phi) if isinstance(self.phi, tuple) else self.phi
            else:
                d["comm_fraction"] = list(self.comm_fraction) if isinstance(self.comm_fraction, tuple) else self.comm_fraction
        if self.column:
            d["column"] = self.column
        if self.sl_column:
            d["sl_column"] = self.sl_column
        d.update(self.settings.describe())
        return d


def _phi_value(text: str, src: str, what: str = "phi") -> float | tuple[float, float]:
    try:
        if "-" in text.strip()[1:]:
            lo, hi = text.split("-", 1) if not text.startswith("-") else (text, "")
            v: float | tuple[float, float] = (float(lo), float(hi))
        else:
            v = float(text)
    except ValueError:
        raise _err(src, what, f"expected a number or a range like 0.1-0.6, got {text!r}") from None
    vals = v if isinstance(v, tuple) else (v,)
    if not all(0.0 <= x <= 1.0 for x in vals) or (isinstance(v, tuple) and v[0] > v[1]):
        raise _err(src, what, f"{what} must be in [0, 1] (a range low-high), got {text!r}")
    return v


def parse_network_spec(text: str) -> NetworkSpec:
    """``--network SPEC``: ``bins``, ``random``, ``column:NAME``, or ``KEY=VALUE,...`` with
    keys mapping, patterns (a+b+c), phi (x or lo-hi), column, sl_column, seed, reference,
    fairness, bandwidth, service_levels (a table name or w0+w1+...), ranks_per_node,
    bytes; or the path of a JSON file with the same keys (``bins`` as a list of
    ``{"max_nodes", "pattern", "phi"}``, ``model`` as in a scenario)."""
    src = "--network"
    spec = NetworkSpec(text=text)
    p = Path(text)
    if text.endswith(".json") or p.is_file():
        try:
            obj = json.loads(p.read_text())
        except FileNotFoundError:
            raise InputError(text, "network spec file not found") from None
        except json.JSONDecodeError as exc:
            raise InputError(text, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
        return _spec_from_obj(obj, text)
    items: dict[str, str] = {}
    for part in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            if key in ("on", "default", "bins", "random"):
                items["mapping"] = "bins" if key in ("on", "default") else key
            elif key == "heavy":
                # seed 000's experiment: random Chatterbug patterns, pure communication
                items.update({"mapping": "random", "comm_fraction": "1"})
            elif key.startswith("column:"):
                items["mapping"], items["column"] = "column", key.split(":", 1)[1]
            else:
                raise _err(src, key, "expected bins, random, heavy, column:NAME or KEY=VALUE")
            continue
        items[key.strip()] = value.strip()
    obj: dict[str, Any] = {}
    model: dict[str, Any] = {}
    for key, value in items.items():
        if key in ("fairness",):
            model[key] = value
        elif key == "bandwidth":
            try:
                b = [float(x) for x in value.split("+")]
            except ValueError:
                raise _err(src, key, f"expected a number or host+leaf+core, got {value!r}") from None
            model[key] = b[0] if len(b) == 1 else b
        elif key in ("service_levels", "sl"):
            model["service_levels"] = value if value in SL_PRESETS else [float(x) for x in value.split("+")]
        elif key == "patterns":
            obj[key] = value.split("+")
        elif key in ("seed", "ranks_per_node"):
            try:
                obj[key] = int(value)
            except ValueError:
                raise _err(src, key, f"expected a whole number, got {value!r}") from None
        elif key == "bytes":
            obj[key] = float(value)
        elif key in ("phi", "comm_fraction", "comm"):
            obj["comm_fraction" if key == "comm" else key] = _phi_value(value, src, key if key != "comm" else "comm_fraction")
        elif key in ("mapping", "column", "sl_column", "reference", "overrun"):
            obj[key] = value
        else:
            raise _err(src, key, "unknown key; keys are mapping, patterns, comm_fraction (comm), phi, column, sl_column, seed, reference, overrun, fairness, bandwidth, service_levels, ranks_per_node, bytes")
    if model:
        obj["model"] = model
    out = _spec_from_obj(obj, src)
    out.text = text
    return out


def _spec_from_obj(obj: dict[str, Any], src: str) -> NetworkSpec:
    if not isinstance(obj, dict):
        raise InputError(src, "a network spec is an object")
    known = {"mapping", "bins", "patterns", "phi", "comm_fraction", "column", "sl_column", "seed", "reference", "overrun", "ranks_per_node", "bytes", "model"}
    bad = set(obj) - known
    if bad:
        raise _err(src, sorted(bad)[0], "unknown key; keys are " + ", ".join(sorted(known)))
    spec = NetworkSpec(text=src)
    spec.mapping = obj.get("mapping", "bins")
    if spec.mapping not in ("bins", "random", "column"):
        raise _err(src, "mapping", f"expected bins, random or column, got {spec.mapping!r}")
    if "bins" in obj:
        bins = obj["bins"]
        if not isinstance(bins, list) or not bins:
            raise _err(src, "bins", "expected a list of {max_nodes, pattern, comm_fraction or phi}")
        out = []
        for k, b in enumerate(bins):
            if not isinstance(b, dict) or set(b) - {"max_nodes", "pattern", "phi", "comm_fraction"} or "pattern" not in b or ("phi" in b and "comm_fraction" in b):
                raise _err(src, f"bins[{k}]", "expected {\"max_nodes\": N, \"pattern\": P, \"comm_fraction\": F} (or \"phi\": F instead of comm_fraction)")
            mx = b.get("max_nodes", 2**62)
            value = b.get("phi", b.get("comm_fraction", DEFAULT_COMM_FRACTION))
            if not isinstance(mx, int) or mx < 1 or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise _err(src, f"bins[{k}]", "max_nodes is a whole number >= 1 and comm_fraction / phi is in [0, 1]")
            _check_pattern(b["pattern"], src, f"bins[{k}].pattern")
            out.append((mx, b["pattern"], None, float(value)) if "phi" in b else (mx, b["pattern"], float(value), None))
        out.sort(key=lambda t: t[0])
        spec.bins = tuple(out)
    if "patterns" in obj:
        pats = obj["patterns"]
        if not isinstance(pats, list) or not pats:
            raise _err(src, "patterns", "expected a non-empty list of pattern names")
        for p in pats:
            _check_pattern(p, src, "patterns")
        spec.patterns = tuple(pats)
    for key in ("phi", "comm_fraction"):
        if key not in obj:
            continue
        phi = obj[key]
        if isinstance(phi, str):
            phi = _phi_value(phi, src, key)
        elif isinstance(phi, list) and len(phi) == 2:
            phi = (float(phi[0]), float(phi[1]))
        if isinstance(phi, (int, float)):
            phi = float(phi)
            if not 0 <= phi <= 1:
                raise _err(src, key, f"{key} must be in [0, 1]")
        elif not (isinstance(phi, tuple) and 0 <= phi[0] <= phi[1] <= 1):
            raise _err(src, key, "expected a number in [0, 1] or [low, high]")
        setattr(spec, key, phi)
    spec.column = obj.get("column")
    spec.sl_column = obj.get("sl_column")
    if spec.mapping == "column" and not spec.column:
        raise _err(src, "column", "mapping=column needs column=NAME (a workload column)")
    spec.seed = int(obj.get("seed", 0))
    spec.reference = obj.get("reference", "random")
    if spec.reference not in ("alone", "ideal", "random"):
        raise _err(src, "reference", f"expected alone, ideal or random, got {spec.reference!r}")
    spec.overrun = obj.get("overrun", "run-on")
    if spec.overrun not in ("run-on", "kill"):
        raise _err(src, "overrun", f"expected run-on or kill, got {spec.overrun!r}")
    spec.ranks_per_node = int(obj.get("ranks_per_node", 1))
    if spec.ranks_per_node < 1:
        raise _err(src, "ranks_per_node", "must be at least 1")
    spec.bytes = float(obj.get("bytes", 1.0))
    spec.settings = parse_settings(obj.get("model"), src)
    if spec.settings.filling != "auto":
        # the replay's closed loop re-solves at every start and end with the steady solve
        raise _err(src, "model.filling", "filling is a setting of interfere scenarios; the replay uses the steady-state solve")
    return spec


def _workload_column(workload: Any, name: str, src: str, what: str) -> np.ndarray:
    col = workload.columns.get(name)
    if col is None:
        col = workload.extra.get(name)
    if not isinstance(col, np.ndarray) or len(col) != len(workload):
        have = sorted(set(workload.columns) | {k for k, v in workload.extra.items() if isinstance(v, np.ndarray)})
        raise _err(src, what, f"the workload has no column {name!r}; it has {', '.join(have)}")
    return col


def assign_traffic(workload: Any, spec: NetworkSpec) -> dict[str, Any]:
    """Pattern (index into ``patterns``), phi and service level of every job row."""
    n = len(workload)
    sizes = np.asarray(workload.columns["nodes"])
    src = spec.text or "--network"
    timing = spec.settings.timing
    if spec.mapping == "bins":
        names = sorted({b[1] for b in spec.bins}, key=[b[1] for b in spec.bins].index)
        limits = np.array([b[0] for b in spec.bins])
        k = np.minimum(np.searchsorted(limits, sizes, side="left"), len(spec.bins) - 1)
        pattern = np.array([names.index(spec.bins[i][1]) for i in k], dtype=np.int64) if n else np.zeros(0, np.int64)
        phi = np.zeros(n)
        for i in range(n):
            mx, pat, cf, direct = spec.bins[k[i]]
            phi[i] = direct if direct is not None else (cf or 0.0) * bandwidth_share(pat, int(sizes[i]), timing)
    else:
        names = list(spec.patterns)
        if spec.mapping == "random":
            rng = np.random.default_rng(spec.seed)
            pattern = rng.integers(0, len(names), n).astype(np.int64)
            u = rng.random(n)
        else:
            vals = np.asarray(_workload_column(workload, spec.column or "", src, "column"), dtype=np.int64)
            pattern = np.mod(vals, len(names)).astype(np.int64)
            # the same value (application) gets the same phi: a hash of (seed, value)
            h = (vals.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(spec.seed)) >> np.uint64(11)
            u = h.astype(np.float64) / float(1 << 53)
        value = spec.phi if spec.phi is not None else spec.comm_fraction
        if isinstance(value, tuple):
            lo, hi = value
            frac = lo + (hi - lo) * u
        else:
            frac = np.full(n, float(value))
        if spec.phi is not None:
            phi = frac
        else:
            phi = np.array([frac[i] * bandwidth_share(names[pattern[i]], int(sizes[i]), timing) for i in range(n)])
    sl = np.zeros(n, np.int64)
    if spec.sl_column:
        sl = np.asarray(_workload_column(workload, spec.sl_column, src, "sl_column"), dtype=np.int64)
        bad = (sl < 0) | (sl >= len(spec.settings.sl_weights))
        if bad.any():
            raise _err(src, "sl_column", f"service level {int(sl[bad][0])} is not defined ({len(spec.settings.sl_weights)} level(s))")
    return {"patterns": names, "pattern": pattern, "phi": phi, "service_level": sl}


def attach_network(sim: Any, workload: Any, spec: NetworkSpec | str) -> NetworkSpec:
    """Turn on the closed loop in a native Simulation (before its first step)."""
    from . import _core

    if isinstance(spec, str):
        spec = parse_network_spec(spec)
    t = assign_traffic(workload, spec)
    n = len(workload)
    s = spec.settings
    _core.network_attach(
        sim,
        t["patterns"],
        t["pattern"],
        np.ascontiguousarray(t["phi"], np.float64),
        bytes=np.full(n, spec.bytes),
        ranks_per_node=np.full(n, spec.ranks_per_node, np.int64),
        seed=(np.arange(n, dtype=np.int64) + spec.seed * 1_000_003) % (1 << 62),
        service_level=t["service_level"],
        reference=spec.reference,
        bandwidth=tuple(s.bandwidth),
        fairness=s.fairness,
        sl_weights=list(s.sl_weights),
        overrun=spec.overrun,
    )
    return spec


def network_columns(sim: Any, rows: np.ndarray, workload: Any, spec: NetworkSpec | str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Per-job output columns for ``rows`` (the finished jobs' rows) and the summary block
    of a replay run with the network model."""
    from . import _core

    if isinstance(spec, str):
        spec = parse_network_spec(spec)
    r = _core.network_results(sim)
    t = assign_traffic(workload, spec)
    names = np.array(t["patterns"], dtype=object)
    cols = {
        "net_pattern": names[t["pattern"][rows]].astype(str) if len(rows) else np.zeros(0, dtype=str),
        "net_phi": t["phi"][rows],
        "net_time_alone_s": r["time_alone_s"][rows],
        "net_slowdown": r["slowdown"][rows],
        "net_links_shared": r["links_shared"][rows],
    }
    slow = r["slowdown"][rows]
    slow = slow[~np.isnan(slow)]
    summary = spec.describe()
    summary["slowdown"] = {
        "mean": float(np.mean(slow)) if len(slow) else None,
        "p95": float(np.percentile(slow, 95)) if len(slow) else None,
        "max": float(np.max(slow)) if len(slow) else None,
        "jobs_slowed": int(np.sum(slow > 1.0 + 1e-9)),
    }
    summary["jobs_sharing_links"] = int(np.sum(r["links_shared"][rows] > 0))
    summary["stats"] = dict(r["stats"])
    return cols, summary

"""The replay's network model: ``--network SPEC`` read once into a :class:`NetworkSpec`,
traffic assigned to every job once, the closed loop attached to a native Simulation
(:func:`attach_network`), and the per-job output columns and summary read back
(:func:`network_columns`). docs/network.md, "Closed loop in the replay".

The model's settings (fairness, bandwidth, service levels) are read by
:func:`toposched.network.parse_settings`, as a scenario's are: one reader for both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError
from .jobmodel import FabricTiming, profile
from .network import SL_PRESETS, ModelSettings, check_pattern, field_error, parse_settings



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
        raise field_error(src, what, f"expected a number or a range like 0.1-0.6, got {text!r}") from None
    vals = v if isinstance(v, tuple) else (v,)
    if not all(0.0 <= x <= 1.0 for x in vals) or (isinstance(v, tuple) and v[0] > v[1]):
        raise field_error(src, what, f"{what} must be in [0, 1] (a range low-high), got {text!r}")
    return v


def parse_network_spec(text: str) -> NetworkSpec:
    """``--network SPEC``: ``bins``, ``random``, ``column:NAME``, or ``KEY=VALUE,...`` with
    keys mapping, patterns (a+b+c), phi (x or lo-hi), column, sl_column, seed, reference,
    fairness, bandwidth, service_levels (a table name or w0+w1+...), ranks_per_node,
    bytes; or the path of a JSON file with the same keys (``bins`` as a list of
    ``{"max_nodes", "pattern", "phi"}``, ``model`` as in a scenario)."""
    src = "--network"
    p = Path(text)
    if text.endswith(".json") or p.is_file():
        try:
            loaded = json.loads(p.read_text())
        except FileNotFoundError:
            raise InputError(text, "network spec file not found") from None
        except json.JSONDecodeError as exc:
            raise InputError(text, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
        return _spec_from_obj(loaded, text)
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
                raise field_error(src, key, "expected bins, random, heavy, column:NAME or KEY=VALUE")
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
                raise field_error(src, key, f"expected a number or host+leaf+core, got {value!r}") from None
            model[key] = b[0] if len(b) == 1 else b
        elif key in ("service_levels", "sl"):
            model["service_levels"] = value if value in SL_PRESETS else [float(x) for x in value.split("+")]
        elif key == "patterns":
            obj[key] = value.split("+")
        elif key in ("seed", "ranks_per_node"):
            try:
                obj[key] = int(value)
            except ValueError:
                raise field_error(src, key, f"expected a whole number, got {value!r}") from None
        elif key == "bytes":
            obj[key] = float(value)
        elif key in ("phi", "comm_fraction", "comm"):
            obj["comm_fraction" if key == "comm" else key] = _phi_value(value, src, key if key != "comm" else "comm_fraction")
        elif key in ("mapping", "column", "sl_column", "reference", "overrun"):
            obj[key] = value
        else:
            raise field_error(src, key, "unknown key; keys are mapping, patterns, comm_fraction (comm), phi, column, sl_column, seed, reference, overrun, fairness, bandwidth, service_levels, ranks_per_node, bytes")
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
        raise field_error(src, sorted(bad)[0], "unknown key; keys are " + ", ".join(sorted(known)))
    spec = NetworkSpec(text=src)
    spec.mapping = obj.get("mapping", "bins")
    if spec.mapping not in ("bins", "random", "column"):
        raise field_error(src, "mapping", f"expected bins, random or column, got {spec.mapping!r}")
    if "bins" in obj:
        bins = obj["bins"]
        if not isinstance(bins, list) or not bins:
            raise field_error(src, "bins", "expected a list of {max_nodes, pattern, comm_fraction or phi}")
        out = []
        for k, b in enumerate(bins):
            if not isinstance(b, dict) or set(b) - {"max_nodes", "pattern", "phi", "comm_fraction"} or "pattern" not in b or ("phi" in b and "comm_fraction" in b):
                raise field_error(src, f"bins[{k}]", "expected {\"max_nodes\": N, \"pattern\": P, \"comm_fraction\": F} (or \"phi\": F instead of comm_fraction)")
            mx = b.get("max_nodes", 2**62)
            value = b.get("phi", b.get("comm_fraction", DEFAULT_COMM_FRACTION))
            if not isinstance(mx, int) or mx < 1 or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise field_error(src, f"bins[{k}]", "max_nodes is a whole number >= 1 and comm_fraction / phi is in [0, 1]")
            check_pattern(b["pattern"], src, f"bins[{k}].pattern")
            out.append((mx, b["pattern"], None, float(value)) if "phi" in b else (mx, b["pattern"], float(value), None))
        out.sort(key=lambda t: t[0])
        spec.bins = tuple(out)
    if "patterns" in obj:
        pats = obj["patterns"]
        if not isinstance(pats, list) or not pats:
            raise field_error(src, "patterns", "expected a non-empty list of pattern names")
        for p in pats:
            check_pattern(p, src, "patterns")
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
                raise field_error(src, key, f"{key} must be in [0, 1]")
        elif not (isinstance(phi, tuple) and 0 <= phi[0] <= phi[1] <= 1):
            raise field_error(src, key, "expected a number in [0, 1] or [low, high]")
        setattr(spec, key, phi)
    spec.column = obj.get("column")
    spec.sl_column = obj.get("sl_column")
    if spec.mapping == "column" and not spec.column:
        raise field_error(src, "column", "mapping=column needs column=NAME (a workload column)")
    spec.seed = int(obj.get("seed", 0))
    spec.reference = obj.get("reference", "random")
    if spec.reference not in ("alone", "ideal", "random"):
        raise field_error(src, "reference", f"expected alone, ideal or random, got {spec.reference!r}")
    spec.overrun = obj.get("overrun", "run-on")
    if spec.overrun not in ("run-on", "kill"):
        raise field_error(src, "overrun", f"expected run-on or kill, got {spec.overrun!r}")
    spec.ranks_per_node = int(obj.get("ranks_per_node", 1))
    if spec.ranks_per_node < 1:
        raise field_error(src, "ranks_per_node", "must be at least 1")
    spec.bytes = float(obj.get("bytes", 1.0))
    spec.settings = parse_settings(obj.get("model"), src)
    if spec.settings.filling != "auto":
        # the replay's closed loop re-solves at every start and end with the steady solve
        raise field_error(src, "model.filling", "filling is a setting of interfere scenarios; the replay uses the steady-state solve")
    return spec


def _workload_column(workload: Any, name: str, src: str, what: str) -> np.ndarray:
    col = workload.columns.get(name)
    if col is None:
        col = workload.extra.get(name)
    if not isinstance(col, np.ndarray) or len(col) != len(workload):
        have = sorted(set(workload.columns) | {k for k, v in workload.extra.items() if isinstance(v, np.ndarray)})
        raise field_error(src, what, f"the workload has no column {name!r}; it has {', '.join(have)}")
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
            raise field_error(src, "sl_column", f"service level {int(sl[bad][0])} is not defined ({len(spec.settings.sl_weights)} level(s))")
    return {"patterns": names, "pattern": pattern, "phi": phi, "service_level": sl}


@dataclass
class ReplayNetwork:
    """The network model as attached to one replay: the spec (read once) and the traffic it
    assigned to every job (drawn once), kept for the output columns."""

    spec: NetworkSpec
    traffic: dict[str, Any]
    #: The native Simulation the closed loop runs in (its per-job results are read back).
    native: Any = None


def attach_network(sim: Any, workload: Any, spec: NetworkSpec | str) -> ReplayNetwork:
    """Turn on the closed loop in a native Simulation (before its first step); ``spec`` is
    a :class:`NetworkSpec` or its ``--network`` text."""
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
        bandwidth=s.bandwidth,
        fairness=s.fairness,
        sl_weights=list(s.sl_weights),
        overrun=spec.overrun,
    )
    return ReplayNetwork(spec, t, sim)


def network_columns(net: ReplayNetwork, rows: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Per-job output columns for ``rows`` (the finished jobs' rows) and the summary block
    of a replay run with the network model."""
    from . import _core

    r = _core.network_results(net.native)
    if r is None:  # attach_network ran on this simulation: the results are there
        raise RuntimeError("the network model was not attached to this simulation")
    t = net.traffic
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
    summary = net.spec.describe()
    summary["slowdown"] = {
        "mean": float(np.mean(slow)) if len(slow) else None,
        "p95": float(np.percentile(slow, 95)) if len(slow) else None,
        "max": float(np.max(slow)) if len(slow) else None,
        "jobs_slowed": int(np.sum(slow > 1.0 + 1e-9)),
    }
    summary["jobs_sharing_links"] = int(np.sum(r["links_shared"][rows] > 0))
    summary["stats"] = dict(r["stats"])
    return cols, summary

"""A sweep file (TOML) read, checked and expanded into runs.

The format is documented in docs/sweeps.md. In short::

    name = "taper-study"

    [[workloads]]
    trace = "../examples/data/LLNL-Atlas-2006-2.1-cln.swf.gz"   # relative to this file
    transforms = ["days:10", ["scale:1", "scale:2"]]           # a list inside = alternatives
    reader = { cores_per_node = 8 }

    [[fabrics]]
    system = "cab"                                              # preset, fattree:.., topology.conf
    [[fabrics]]
    fattree = { K = 18, S = 18, P = 4 }
    taper = [1, 2, 3]                                           # W1 = K / taper

    [policies]
    queue = ["easy"]
    alloc = ["linear", "isolated"]

    [scenarios]
    speedup = ["none", "ta10"]
    seeds = [0, 1]

    [run]                      # RunConfig fields; a list is one more axis
    queue_depth = 128

    [[exclude]]                # drop the combinations that match every key given
    alloc = "linear"
    speedup = "ta10"

Every problem found is reported with its place in the file (``SWEEP.toml:
workloads[1].transforms[0]: ...``), all of them at once (:class:`SweepSpecError`).

Each run is a :class:`RunSpec`: a JSON-able specification holding everything that decides
its results (the trace's path *and* the SHA-256 of its content, reader options, canonical
transforms, the fabric, both policies, the scenario, the seed, every RunConfig field, and
the toposched version) and ``run_id``, a hash of that specification.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

from .. import __version__
from ..errors import InputError
from ..limits import MAX_COUNT, MAX_INT64, SEED_MAX

__all__ = ["RunSpec", "Sweep", "SweepSpecError", "load_sweep", "parse_sweep", "run_id_of", "sha256_file", "AXES"]

#: Keys a sweep file may have at its top level.
TOP_KEYS = ("name", "description", "out", "workloads", "fabrics", "policies", "scenarios", "run", "exclude")
WORKLOAD_KEYS = ("name", "trace", "format", "transforms", "reader")
READER_KEYS = ("lenient", "cores_per_node", "size_field", "missing_walltime", "missing_runtime")
FABRIC_KEYS = ("name", "system", "fattree", "taper", "lenient")
FATTREE_KEYS = {
    "k": "K",
    "nodes_per_leaf": "K",
    "s": "S",
    "leaves_per_pod": "S",
    "p": "P",
    "pods": "P",
    "w1": "W1",
    "uplinks_per_leaf": "W1",
    "w2": "W2",
    "uplinks_per_l2": "W2",
    "nodes": "nodes",
}
FATTREE_ORDER = ("K", "S", "P", "W1", "W2", "nodes")
POLICY_KEYS = ("queue", "alloc")
SCENARIO_KEYS = ("speedup", "seeds", "network")
#: RunConfig fields the matrix sets itself (not allowed in [run]).
MATRIX_FIELDS = ("queue", "alloc", "seed", "network")
#: Fixed choices of some RunConfig fields.
ENGINE_CHOICES = {
    "event_order": ("per-instant", "per-event"),
}


def _config_choices() -> dict[str, tuple[str, ...]]:
    """Fixed choices of the engine settings and of every enumerated policy option (from
    the core's registry: the same schema the CLI flags come from)."""
    from .. import registry

    return {**ENGINE_CHOICES, **{o.name: o.choices for o in registry.options() if o.choices is not None}}


def _policy_only_options() -> dict[str, Any]:
    """Registered policy options that are not RunConfig fields: [run] accepts them too,
    and each run gets those of its own policies in ``policy_options``."""
    from .. import registry

    cfg = _config_fields()
    return {o.name: o for o in registry.options() if o.name not in cfg}


def _run_config(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A run's RunConfig as JSON: options of policies the run does not use are dropped,
    and ``policy_options`` is left out when empty (so run ids stay as they were)."""
    from dataclasses import asdict

    from ..simulate import RunConfig

    extra = _policy_only_options()
    used = (kwargs.get("queue"), kwargs.get("alloc"))
    policy_opts = {k: kwargs.pop(k) for k in list(kwargs) if k in extra}
    policy_opts = {k: v for k, v in policy_opts.items() if extra[k].policy in used}
    if policy_opts:
        kwargs["policy_options"] = policy_opts
    cfg = asdict(RunConfig(**kwargs))
    if not cfg["policy_options"]:
        del cfg["policy_options"]
    return cfg


#: What an [[exclude]] table may name (besides [run] fields).
AXES = ("workload", "fabric", "queue", "alloc", "speedup", "seed", "network")

_SIZE_FIELDS = ("auto", "allocated", "requested")
_MISSING_RUNTIME = ("skip", "zero")


class SweepSpecError(InputError):
    """Problems in a sweep file: ``problems`` is a list of ``(where, message)``, ``where``
    being the place in the file (``workloads[1].transforms[0]``) or ``""``."""

    def __init__(self, path: str, problems: list[tuple[str, str]], *, line: int | None = None, text: str | None = None) -> None:
        self.path = str(path)
        self.field = problems[0][0] if problems else None
        self.problems = problems
        self.message = "; ".join(m for _, m in problems)
        # each problem's line in the file (``text``): its key's, else its table's or array's
        keys = _key_lines(text) if text is not None else {}
        at = [line if line is not None else _line_of(where, keys) for where, _ in problems]
        self.line = next((n for n in at if n is not None), None)
        prefixes = [f"{self.path}:{n}" if n is not None else self.path for n in at]
        self.lines = [f"{prefix}: {where}: {msg}" if where else f"{prefix}: {msg}" for prefix, (where, msg) in zip(prefixes, problems)]
        Exception.__init__(self, "\n".join(self.lines))


_TABLE = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.-]+)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_.-]+|\"[^\"]*\"|'[^']*')\s*=")


def _key_lines(text: str) -> dict[str, int]:
    """The line (from 1) of every table header and of every key written at the start of a
    line, by its path as the checker names it (``fabrics[1].preset``, ``policies``).
    A light scan, not a TOML parser: the file has parsed already; lines inside multi-line
    strings are skipped, keys inside inline tables and arrays are not listed (their
    problems take the line of the key holding them)."""
    out: dict[str, int] = {}
    counts: dict[str, int] = {}
    table = ""
    in_string: str | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        if in_string is not None:
            if raw.count(in_string) % 2 == 1:
                in_string = None
            continue
        m = _TABLE.match(raw)
        if m:
            name = m.group(2)
            first, dot, rest = name.partition(".")
            if m.group(1) == "[[":
                counts[name] = counts.get(name, -1) + 1
                table = f"{name}[{counts[name]}]"
            elif first in counts:  # [workloads.reader]: a table of the last [[workloads]]
                table = f"{first}[{counts[first]}]{dot}{rest}"
            else:
                table = name
            out.setdefault(table, n)
            continue
        k = _KEY.match(raw)
        if k:
            key = k.group(1).strip("\"'")
            out.setdefault(f"{table}.{key}" if table else key, n)
        for quote in ('"""', "'''"):
            if raw.count(quote) % 2 == 1:
                in_string = quote
                break
    return out


def _line_of(where: str, keys: dict[str, int]) -> int | None:
    """The line of ``where`` or of the nearest path holding it: ``fabrics[0].fattree.K``
    falls back to ``fabrics[0].fattree``, ``workloads[1].transforms[0]`` to
    ``workloads[1].transforms``."""
    while where:
        if where in keys:
            return keys[where]
        cut = max(where.rfind("."), where.rfind("["))
        if cut <= 0:
            return None
        where = where[:cut]
    return None


def run_id_of(spec: dict[str, Any]) -> str:
    """The run's key: 16 hex digits of the SHA-256 of its canonical JSON."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _network_file_sha256(spec: str) -> str:
    """SHA-256 of a ``--network`` spec file (or its ``bins=PATH.csv`` table), so that a
    run's id changes with the file's contents; "" for a spec without a file, or one that
    does not read (the run itself then reports the error)."""
    from ..errors import InputError
    from ..network_spec import parse_network_spec

    try:
        return parse_network_spec(spec).file_sha256
    except InputError:
        return ""


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True, eq=False)
class RunSpec:
    """One run of a sweep: ``spec`` (everything that decides the results) and its hash.
    ``dir_name``: the run's directory under ``runs/`` when it is not the run id (compare
    names its runs ``<alloc>__<scenario>``)."""

    run_id: str
    spec: dict[str, Any]
    dir_name: str | None = None

    @property
    def dir(self) -> str:
        """The run's directory name under ``runs/``."""
        return self.dir_name or self.run_id

    @property
    def labels(self) -> dict[str, Any]:
        """The axis values a person reads: workload, transforms, fabric, policies, scenario."""
        s = self.spec
        out = {
            "workload": s["workload"]["name"],
            "transforms": " ".join(s["workload"]["transforms"]),
            "fabric": s["fabric"]["name"],
            "system": s["fabric"]["system"],
            "queue": s["config"]["queue"],
            "alloc": s["config"]["alloc"],
            "speedup": s["scenario"]["speedup"],
            "seed": s["scenario"]["seed"],
        }
        if "network" in s["scenario"]:
            out["network"] = s["scenario"]["network"]
        return out

    def describe(self) -> str:
        """One line: ``workload=atlas [days:10] fabric=cab queue=easy alloc=isolated ...``."""
        lab = self.labels
        wl = lab["workload"] + (f" [{lab['transforms']}]" if lab["transforms"] else "")
        fab = lab["fabric"] if lab["fabric"] == lab["system"] else f"{lab['fabric']} ({lab['system']})"
        parts = [f"workload={wl}", f"fabric={fab}", f"queue={lab['queue']}", f"alloc={lab['alloc']}", f"speedup={lab['speedup']}", f"seed={lab['seed']}"]
        if "network" in lab:
            parts.append(f"network={lab['network']}")
        defaults = _config_defaults()  # once: asdict(RunConfig()) per key made a dry run of 300,000 runs take 10 minutes
        extra = {k: v for k, v in self.spec["config"].items() if k not in MATRIX_FIELDS and v != defaults.get(k)}
        parts += [f"{k}={v}" for k, v in sorted(extra.items())]
        return " ".join(parts)


@dataclass
class Sweep:
    """A checked sweep file and its runs, in matrix order (duplicates removed)."""

    path: Path
    name: str
    description: str
    out: Path | None
    runs: list[RunSpec]
    text: str
    notes: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- helpers


def _config_fields() -> dict[str, Any]:
    from ..simulate import RunConfig

    return {f.name: f for f in fields(RunConfig)}


def _config_defaults() -> dict[str, Any]:
    from dataclasses import asdict

    from ..simulate import RunConfig

    return asdict(RunConfig())


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "a whole number"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "a table"
    return type(v).__name__


class _Checker:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.problems: list[tuple[str, str]] = []

    def err(self, where: str, message: str) -> None:
        self.problems.append((where, message))

    def keys(self, table: dict[str, Any], where: str, allowed: Iterable[str]) -> None:
        allowed = list(allowed)
        for k in table:
            if k not in allowed:
                near = difflib.get_close_matches(k, allowed, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else ""
                self.err(_join(where, k), f"unknown key '{k}'{hint}; expected one of: {', '.join(allowed)}")

    def table(self, v: Any, where: str) -> dict[str, Any] | None:
        if not isinstance(v, dict):
            self.err(where, f"expected a table, got {_kind(v)}")
            return None
        return v

    def one_or_list(self, v: Any, where: str) -> list[tuple[str, Any]]:
        """A scalar or an array of scalars, as (where, value) pairs."""
        if isinstance(v, list):
            if not v:
                self.err(where, "empty array: give at least one value")
            return [(f"{where}[{i}]", x) for i, x in enumerate(v)]
        return [(where, v)]

    def string(self, v: Any, where: str, choices: Iterable[str] | None = None) -> str | None:
        if not isinstance(v, str):
            self.err(where, f"expected a string, got {_kind(v)}")
            return None
        if choices is not None:
            choices = list(choices)
            if v not in choices:
                self.err(where, f"unknown value '{v}'; expected one of: {', '.join(choices)}")
                return None
        return v

    def integer(self, v: Any, where: str, minimum: int | None = None, maximum: int = MAX_INT64, limit: str = "2^63 - 1") -> int | None:
        """A whole number from ``minimum`` to ``maximum`` (TOML reads any size: one
        beyond what the run takes would fail every run, and the catalog, not the file)."""
        if isinstance(v, bool) or not isinstance(v, int):
            self.err(where, f"expected a whole number, got {_kind(v)}")
            return None
        if minimum is not None and v < minimum:
            self.err(where, f"must be at least {minimum}, got {v}")
            return None
        if v > maximum:
            self.err(where, f"must be at most {limit}, got {v}")
            return None
        return int(v)  # v is an int (not a bool): int() only gives it that type

    def number(self, v: Any, where: str, option: Any) -> float | None:
        """A number in the range of the policy option ``option`` (its schema's)."""
        from ..registry import check_number

        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.err(where, f"expected a number, got {_kind(v)}")
            return None
        why = check_number(option, float(v))
        if why is not None:
            self.err(where, why)
            return None
        return float(v)

    def boolean(self, v: Any, where: str) -> bool | None:
        if not isinstance(v, bool):
            self.err(where, f"expected true or false, got {_kind(v)}")
            return None
        return v

    def path(self, v: Any, where: str) -> Path | None:
        s = self.string(v, where)
        if s is None:
            return None
        p = Path(s).expanduser()
        if not p.is_absolute():
            p = self.base / p
        p = p.resolve()
        if not p.is_file():
            self.err(where, f"no such file: {p}")
            return None
        return p


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _canonical_transform(text: str) -> str:
    """The transform as toposched.transforms records it (``scale:2.0`` -> ``scale:2``);
    raises the transforms module's error for a string it cannot read."""
    from ..transforms import parse_transform

    return parse_transform(text).text


def _error_text(exc: Exception) -> str:
    return getattr(exc, "message", None) or str(exc)


# ----------------------------------------------------------------------------- sections


def _workloads(c: _Checker, raw: Any) -> list[list[dict[str, Any]]]:
    """Each [[workloads]] entry expanded into its transform variants."""
    from ..workload import FORMATS, detect_format

    out: list[list[dict[str, Any]]] = []
    if raw is None:
        c.err("workloads", "missing: give at least one [[workloads]] table with a trace")
        return out
    if not isinstance(raw, list) or not raw:
        c.err("workloads", "expected an array of tables ([[workloads]]) with at least one entry")
        return out
    hashes: dict[Path, str] = {}
    labelled: dict[str, tuple[int, tuple[str, str, str]]] = {}  # label -> first table, what it reads
    for i, entry in enumerate(raw):
        where = f"workloads[{i}]"
        t = c.table(entry, where)
        if t is None:
            continue
        c.keys(t, where, WORKLOAD_KEYS)
        trace = None
        if "trace" not in t:
            c.err(where, "missing key 'trace' (the job log)")
        else:
            trace = c.path(t["trace"], _join(where, "trace"))
        fmt = None
        if "format" in t:
            fmt = c.string(t["format"], _join(where, "format"), FORMATS)
        elif trace is not None:
            try:
                fmt = detect_format(trace)
            except Exception as exc:  # noqa: BLE001 - any reason it cannot be told
                c.err(_join(where, "trace"), _error_text(exc) + " (set format = ...)")
        reader: dict[str, Any] = {"lenient": False, "cores_per_node": None, "size_field": "auto", "missing_walltime": "runtime", "missing_runtime": "skip"}
        if "reader" in t:
            rw = _join(where, "reader")
            rt = c.table(t["reader"], rw)
            if rt is not None:
                c.keys(rt, rw, READER_KEYS)
                for k, v in rt.items():
                    kw = _join(rw, k)
                    if k == "lenient":
                        reader[k] = c.boolean(v, kw)
                    elif k == "cores_per_node":
                        reader[k] = c.integer(v, kw, 1, MAX_COUNT - 1, "2^31 - 1 (as --cores-per-node)")
                    elif k == "size_field":
                        reader[k] = c.string(v, kw, _SIZE_FIELDS)
                    elif k == "missing_walltime":
                        if v == "runtime":
                            reader[k] = v
                        elif isinstance(v, int) and not isinstance(v, bool) and v >= 1:
                            reader[k] = v
                        else:
                            c.err(kw, f"expected \"runtime\" or a number of seconds >= 1, got {v!r}")
                    elif k == "missing_runtime":
                        reader[k] = c.string(v, kw, _MISSING_RUNTIME)
        # transforms: each item a string, or an array of alternative strings
        slots: list[list[str]] = []
        if "transforms" in t:
            tw = _join(where, "transforms")
            tr = t["transforms"]
            if isinstance(tr, str):
                tr = [tr]
            if not isinstance(tr, list):
                c.err(tw, f"expected an array of transform strings, got {_kind(tr)}")
                tr = []
            for j, item in enumerate(tr):
                iw = f"{tw}[{j}]"
                alts = item if isinstance(item, list) else [item]
                if isinstance(item, list) and not item:
                    c.err(iw, "empty array of alternatives")
                slot: list[str] = []
                for ai, alt in enumerate(alts):
                    aw = f"{iw}[{ai}]" if isinstance(item, list) else iw
                    if not isinstance(alt, str):
                        c.err(aw, f"expected a transform string such as 'scale:2', got {_kind(alt)}")
                        continue
                    try:
                        slot.append(_canonical_transform(alt))
                    except Exception as exc:  # noqa: BLE001 - the transform's own message
                        msg = _error_text(exc)
                        if alt not in msg:
                            msg = f"transform '{alt}': {msg}"
                        c.err(aw, msg)
                slots.append(slot)
        name = None
        if "name" in t:
            name = c.string(t["name"], _join(where, "name"))
        if trace is None or fmt is None:
            continue
        if trace not in hashes:
            hashes[trace] = sha256_file(trace)
        named = name is not None
        if name is None:
            name = re.sub(r"(\.gz)?$", "", trace.name)
            name = re.sub(r"\.(swf|log|txt|csv)$", "", name)
        # The catalog, the report (one panel per workload) and [[exclude]] tell workloads
        # apart by their label: two logs under one label (2019/jobs.swf and 2020/jobs.swf,
        # both "jobs" by default) were averaged together in the report's panels as if seeds.
        reads = (hashes[trace], fmt, json.dumps(reader, sort_keys=True))
        first = labelled.setdefault(name, (i, reads))
        if first[1] != reads:
            other = "another log" if first[1][0] != reads[0] else "the same log with another format or reader options"
            c.err(_join(where, "name" if named else "trace"), f"label '{name}' is also workloads[{first[0]}]'s, which reads {other}: give each its own name (the catalog, the report and [[exclude]] tell workloads apart by it)")
            continue
        variants = []
        for combo in itertools.product(*slots):
            variants.append(
                {
                    "name": name,
                    "trace": str(trace),
                    "trace_sha256": hashes[trace],
                    "format": fmt,
                    "reader": dict(reader),
                    "transforms": list(combo),
                }
            )
        out.append(variants)
    return out


def _fabrics(c: _Checker, raw: Any) -> list[list[dict[str, Any]]]:
    from ..errors import TopologyError
    from ..topology import PRESETS, load_spec, parse_fattree_params

    out: list[list[dict[str, Any]]] = []
    if raw is None:
        c.err("fabrics", "missing: give at least one [[fabrics]] table (system = \"cab\", or fattree = {K = .., S = .., P = ..})")
        return out
    if not isinstance(raw, list) or not raw:
        c.err("fabrics", "expected an array of tables ([[fabrics]]) with at least one entry")
        return out
    labelled: dict[str, tuple[int, tuple[str, ...], str]] = {}  # label -> first table, fabric, its system
    for i, entry in enumerate(raw):
        where = f"fabrics[{i}]"
        t = c.table(entry, where)
        if t is None:
            continue
        c.keys(t, where, FABRIC_KEYS)
        name = c.string(t["name"], _join(where, "name")) if "name" in t else None
        lenient = bool(c.boolean(t["lenient"], _join(where, "lenient"))) if "lenient" in t else False
        has_sys, has_ft = "system" in t, "fattree" in t
        if has_sys == has_ft:
            c.err(where, "give exactly one of 'system' (preset, fattree:.. string or topology.conf path) and 'fattree' (a table of K, S, P, ...)")
            continue
        variants: list[dict[str, Any]] = []
        if has_sys:
            if "taper" in t:
                c.err(_join(where, "taper"), "taper needs the fattree table form: fattree = {K = .., S = .., P = ..}")
            for sw, s in c.one_or_list(t["system"], _join(where, "system")):
                if not isinstance(s, str):
                    c.err(sw, f"expected a string, got {_kind(s)}")
                    continue
                if s in PRESETS:
                    variants.append({"name": name or s, "kind": "preset", "system": s, "lenient": lenient})
                elif s.lower().startswith("fattree:"):  # not a file called fattree-site.conf
                    try:
                        spec = parse_fattree_params(s)
                    except Exception as exc:  # noqa: BLE001
                        c.err(sw, _error_text(exc))
                        continue
                    variants.append({"name": name or s, "kind": "fattree", "system": s, "lenient": lenient, "params_name": spec.name})
                else:
                    p = c.path(s, sw)
                    if p is None:
                        c.problems[-1] = (sw, f"not a preset ({', '.join(PRESETS)}), fattree:K=..,S=..,P=.. parameters, or an existing topology.conf file: {s}")
                        continue
                    try:
                        # built as each run builds it: a file that does not load failed
                        # every one of its runs, each with a traceback, after the sweep began
                        load_spec(str(p), lenient=lenient)
                    except TopologyError as exc:
                        c.err(sw, str(exc))
                        continue
                    variants.append({"name": name or p.name, "kind": "topology.conf", "system": str(p), "lenient": lenient, "conf_sha256": sha256_file(p)})
        else:
            fw = _join(where, "fattree")
            ft = c.table(t["fattree"], fw)
            if ft is None:
                continue
            axes: dict[str, list[int]] = {}
            for k, v in ft.items():
                kw = _join(fw, k)
                canon = FATTREE_KEYS.get(k.lower())
                if canon is None:
                    c.keys({k: v}, fw, ("K", "S", "P", "W1", "W2", "nodes"))
                    continue
                vals = [c.integer(x, xw, 1) for xw, x in c.one_or_list(v, kw)]
                axes[canon] = [x for x in vals if x is not None]
            missing = [k for k in ("K", "S", "P") if k not in axes]
            if missing:
                c.err(fw, "missing " + ", ".join(missing) + " (e.g. fattree = {K = 18, S = 18, P = 4})")
                continue
            tapers: list[float | None] = [None]
            if "taper" in t:
                tw = _join(where, "taper")
                if "W1" in axes:
                    c.err(tw, "give either taper or W1 (uplinks per leaf), not both")
                    continue
                tapers = []
                for xw, x in c.one_or_list(t["taper"], tw):
                    if isinstance(x, bool) or not isinstance(x, (int, float)) or not x > 0:
                        c.err(xw, f"expected a number above 0 (K:W1, e.g. 2 for 2:1), got {x!r}")
                        continue
                    tapers.append(x)
            keys = [k for k in FATTREE_ORDER if k in axes]
            for combo in itertools.product(*(axes[k] for k in keys)):
                params = dict(zip(keys, combo))
                for taper in tapers:
                    fp = dict(params)
                    if taper is not None:
                        w1 = fp["K"] / taper
                        if abs(w1 - round(w1)) > 1e-9 or round(w1) < 1:
                            c.err(_join(where, "taper"), f"taper {taper} does not give a whole number of uplinks for K = {fp['K']} (W1 = K / taper = {w1:g})")
                            continue
                        fp["W1"] = int(round(w1))
                    system = "fattree:" + ",".join(f"{k}={fp[k]}" for k in FATTREE_ORDER if k in fp)
                    try:
                        spec = parse_fattree_params(system)
                    except Exception as exc:  # noqa: BLE001
                        c.err(fw, f"{system}: {_error_text(exc)}")
                        continue
                    label = name or "fattree:" + ",".join(f"{k}={fp[k]}" for k in FATTREE_ORDER if k in fp and k != "W1")
                    variants.append({"name": label, "kind": "fattree", "system": system, "lenient": lenient, "params_name": spec.name})
        # The catalog, the report (one panel per fabric) and [[exclude]] tell fabrics apart
        # by their label (and the taper): two fabrics under one label (two topology.conf
        # files, both "topology.conf" by default) were averaged together in the report.
        for v in variants:
            ident = _fabric_identity(v)
            j, first, first_system = labelled.setdefault(v["name"], (i, ident, v["system"]))
            if first != ident:
                which = f"names two fabrics, {first_system} and {v['system']}" if j == i else f"is also fabrics[{j}]'s ({first_system}), another fabric than {v['system']}"
                c.err(_join(where, "name" if name is not None else "system" if has_sys else "fattree"),
                      f"label '{v['name']}' {which}: give each its own name "
                      "(the catalog, the report and [[exclude]] tell fabrics apart by it; fabrics that differ by their taper alone share one)")
                break
        out.append(variants)
    return out


def _fabric_identity(v: dict[str, Any]) -> tuple[str, ...]:
    """What a fabric variant builds, less its leaf uplinks (W1: the taper, which the
    catalog's own column tells apart)."""
    if v["kind"] == "topology.conf":
        return ("topology.conf", str(v["conf_sha256"]))
    if v["kind"] == "fattree":
        head, _, params = str(v["system"]).partition(":")
        kept = sorted(p.strip().upper() for p in params.split(",") if p.strip() and p.partition("=")[0].strip().upper() != "W1")
        return ("fattree", *kept)
    return (str(v["kind"]), str(v["system"]))


def _choices(c: _Checker, table: dict[str, Any], key: str, where: str, allowed: Iterable[str] | None, default: list[Any]) -> list[Any]:
    if key not in table:
        return default
    vals = []
    for xw, x in c.one_or_list(table[key], _join(where, key)):
        v = c.string(x, xw, allowed)
        if v is not None and v not in vals:
            vals.append(v)
    return vals


def _builtin_allocs() -> list[str]:
    import importlib.util

    from ..registry import alloc_names

    names = list(alloc_names())
    if importlib.util.find_spec("toposched.aslogged") is not None:
        names.append("as-logged")
    return names


def _python_policy(c: _Checker, value: str, where: str) -> bool:
    """A ``module:Class`` policy (docs/python-policies.md): importable here and made
    without arguments? The workers import it the same way."""
    from ..policies import load_policy

    try:
        load_policy(value)
    except Exception as exc:  # noqa: BLE001 - the loader's own message
        c.err(where, _error_text(exc))
        return False
    return True


def policy_code_sha256(value: Any) -> str | None:
    """SHA-256 of the source file of a ``module:Class`` policy (so that editing the policy
    gives new run ids), None for a built-in one."""
    import importlib.util

    if not isinstance(value, str) or ":" not in value:
        return None
    try:
        found = importlib.util.find_spec(value.partition(":")[0])
    except (ImportError, ValueError):
        return None
    if found is None or not found.origin or not Path(found.origin).is_file():
        return None
    return sha256_file(found.origin)


def _policies(c: _Checker, raw: Any) -> tuple[list[str], list[str]]:
    from .. import _core

    t = c.table(raw, "policies") if raw is not None else {}
    if t is None:
        return ["easy"], ["linear"]
    c.keys(t, "policies", POLICY_KEYS)
    queues = _choices(c, t, "queue", "policies", list(_core.QUEUES), ["easy"])
    allocs = ["linear"]
    if "alloc" in t:
        allocs = []
        builtin = _builtin_allocs()
        for xw, x in c.one_or_list(t["alloc"], "policies.alloc"):
            if isinstance(x, str) and ":" in x:
                ok = _python_policy(c, x, xw)
            else:
                ok = c.string(x, xw) is not None
                if ok and x not in builtin:
                    c.err(xw, f"unknown value '{x}'; expected one of: {', '.join(builtin)}, or module:Class (a policy written in Python)")
                    ok = False
            if ok and x not in allocs:
                allocs.append(x)
    return queues, allocs


def _scenarios(c: _Checker, raw: Any) -> tuple[list[str], list[int], list[str] | None]:
    t = c.table(raw, "scenarios") if raw is not None else {}
    if t is None:
        return ["none"], [0], None
    c.keys(t, "scenarios", SCENARIO_KEYS)
    speedups = ["none"]
    if "speedup" in t:
        from ..transforms import SCENARIOS

        speedups = _choices(c, t, "speedup", "scenarios", SCENARIOS, ["none"])
    seeds = [0]
    if "seeds" in t:
        seeds = []
        for xw, x in c.one_or_list(t["seeds"], "scenarios.seeds"):
            v = c.integer(x, xw, 0, SEED_MAX, "2^64 - 1 (as --seed)")
            if v is not None and v not in seeds:
                seeds.append(v)
    networks = None
    if "network" in t:
        if "network" not in _config_fields():
            c.err("scenarios.network", f"network settings are not supported by this version of toposched ({__version__}): RunConfig has no 'network' field")
        else:
            networks = [_anchor_network_files(n, c.base) if isinstance(n, str) else n for n in _choices(c, t, "network", "scenarios", None, [])]
            _check_networks(c, networks)
    return speedups, seeds, networks


def _anchor_network_files(spec: str, base: Path) -> str:
    """A network spec whose file paths (a spec file, or ``bins=RULES.csv``) are relative,
    with them made relative to the sweep file, as its trace and topology.conf paths are;
    they were read relative to the directory the sweep was started in."""
    p = Path(spec).expanduser()
    if (base / p).is_file() or (p.suffix.lower() in (".json", ".toml", ".csv") and "=" not in spec and "," not in spec):
        return spec if p.is_absolute() else str((base / p).resolve())
    parts = []
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        if sep and key.strip() == "bins" and value.strip() and not Path(value.strip()).expanduser().is_absolute():
            part = f"{key.strip()}={(base / Path(value.strip()).expanduser()).resolve()}"
        parts.append(part)
    return ",".join(parts)


def _check_networks(c: "_Checker", networks: list[Any]) -> None:
    """Read each network spec now, as --network would: a spec that does not read fails
    here, once, not in every run of the sweep after the others have started."""
    from ..errors import InputError
    from ..network_spec import parse_network_spec

    for n in networks:
        if not isinstance(n, str) or not n:
            continue  # "" runs without the model; other types are _choices' to refuse
        try:
            parse_network_spec(n)
        except InputError as exc:
            c.err("scenarios.network", f"{n!r}: {str(exc).removeprefix('--network: ')}")


def _run_axes(c: _Checker, raw: Any) -> dict[str, list[Any]]:
    """[run]: RunConfig fields, each a value or an array of values (one more axis)."""
    if raw is None:
        return {}
    t = c.table(raw, "run")
    if t is None:
        return {}
    cfg = {k: v for k, v in _config_fields().items() if k != "policy_options"}
    cfg.update(_policy_only_options())
    allowed = [k for k in cfg if k not in MATRIX_FIELDS]
    defaults = _config_defaults()
    axes: dict[str, list[Any]] = {}
    if "profile" in t:
        # profile = "flux-sc18": its values, unless the same table sets the field itself
        from ..profiles import PROFILES

        name = c.string(t["profile"], _join("run", "profile"), tuple(PROFILES))
        for k, v in PROFILES.get(name or "", {}).items():
            if k not in t:
                axes[k] = [v]
    for k, v in t.items():
        where = _join("run", k)
        if k == "profile":
            continue
        if k in MATRIX_FIELDS:
            home = {"queue": "policies.queue", "alloc": "policies.alloc", "seed": "scenarios.seeds", "network": "scenarios.network"}[k]
            c.err(where, f"'{k}' is an axis of the matrix: set it as {home}")
            continue
        if k not in cfg:
            c.keys({k: v}, "run", allowed)
            continue
        vals = []
        for xw, x in c.one_or_list(v, where):
            vals.append(_config_value(c, k, x, xw, cfg[k], defaults.get(k)))
        vals = [x for x in vals if x is not _BAD]
        if vals:
            axes[k] = list(dict.fromkeys(vals))
    return axes


_BAD = object()


def _config_value(c: _Checker, key: str, v: Any, where: str, f: Any, default: Any) -> Any:
    from ..registry import PolicyOption, maximum_text

    r: object  # the checked value, None when it is not valid
    if isinstance(f, PolicyOption) and f.choices is None:
        # A policy option without a RunConfig field: its type from the registry's schema.
        if f.type == "boolean":
            r = c.boolean(v, where)
        elif f.type == "integer":
            r = c.integer(v, where, f.minimum) if f.maximum is None else c.integer(v, where, f.minimum, f.maximum, maximum_text(f.maximum))
        elif f.type == "number":
            # was read as a string: slowdown_threshold = 0.1 was refused ("expected a
            # string, got a number") and "x" taken, to fail in every run
            r = c.number(v, where, f)
        else:
            r = c.string(v, where)
        return _BAD if r is None else r
    ann = str(getattr(f, "type", ""))
    if key == "queue_order":
        if not isinstance(v, str) or ":" not in v:
            c.err(where, f"expected a module:Class string (a QueueOrder written in Python), got {v!r}")
            return _BAD
        return v if _python_policy(c, v, where) else _BAD
    choices = _config_choices()
    if key in choices:
        r = c.string(v, where, choices[key])
    elif ann.startswith("bool") or isinstance(default, bool):
        r = c.boolean(v, where)
    elif "int" in ann:
        r = c.integer(v, where, 1, MAX_COUNT - 1, "2^31 - 1 (as its flag)")
    elif "str" in ann:
        r = c.string(v, where)
    else:
        if isinstance(v, (dict, list)):
            c.err(where, f"expected a single value, got {_kind(v)}")
            return _BAD
        r = v
    return _BAD if r is None else r


def _excludes(c: _Checker, raw: Any) -> list[dict[str, list[Any]]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        c.err("exclude", "expected an array of tables ([[exclude]])")
        return []
    allowed = list(AXES) + [k for k in _config_fields() if k not in MATRIX_FIELDS]
    out = []
    for i, entry in enumerate(raw):
        where = f"exclude[{i}]"
        t = c.table(entry, where)
        if t is None:
            continue
        c.keys(t, where, allowed)
        if not t:
            c.err(where, "an empty [[exclude]] would drop every run")
            continue
        out.append({k: (v if isinstance(v, list) else [v]) for k, v in t.items() if k in allowed})
    return out


def _check_excludes(c: _Checker, excludes: list[dict[str, list[Any]]], axis_values: dict[str, list[Any]]) -> None:
    """An [[exclude]] key none of whose values the matrix has can never match: a typo
    (alloc = "isolatd") that would leave every run in, silently."""
    for i, ex in enumerate(excludes):
        for key, vs in ex.items():
            have = axis_values.get(key)
            if have is None:
                c.err(f"exclude[{i}].{key}", f"'{key}' is not an axis of this matrix (set it in [run] to vary it)")
            elif not any(v in have for v in vs):
                shown = ", ".join(repr(v) for v in vs)
                c.err(f"exclude[{i}].{key}", f"{shown} is not a value of the matrix, so this exclude leaves every run in; the matrix has {', '.join(repr(v) for v in have)}")


def _excluded(values: dict[str, Any], excludes: list[dict[str, list[Any]]]) -> bool:
    return any(all(values.get(k) in vs for k, vs in ex.items()) for ex in excludes)


# ----------------------------------------------------------------------------- entry points


def parse_sweep(text: str, path: str | Path = "<sweep>", *, base: str | Path | None = None) -> Sweep:
    """Check a sweep file's text and expand it into runs; raise :class:`SweepSpecError`
    listing every problem. Relative paths are read from ``base`` (default: the file's
    directory)."""


    shown = str(path)
    text = text.removeprefix("\ufeff")  # a byte order mark (Windows editors): not TOML, not content
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        line = int(m.group(1)) if m else None
        raise SweepSpecError(shown, [("", "not valid TOML: " + re.sub(r"\s*\(at line \d+, column \d+\)", "", msg) + (f" (column {m.group(2)})" if m else ""))], line=line) from None
    base_dir = Path(base) if base is not None else Path(path).resolve().parent
    c = _Checker(base_dir)
    c.keys(doc, "", TOP_KEYS)
    name = c.string(doc["name"], "name") if "name" in doc else None
    description = c.string(doc["description"], "description") if "description" in doc else None
    out = None
    if "out" in doc:
        s = c.string(doc["out"], "out")
        if s is not None:
            out = Path(s).expanduser()
            if not out.is_absolute():
                out = base_dir / out
    workloads = _workloads(c, doc.get("workloads"))
    fabrics = _fabrics(c, doc.get("fabrics"))
    queues, allocs = _policies(c, doc.get("policies"))
    speedups, seeds, networks = _scenarios(c, doc.get("scenarios"))
    run_axes = _run_axes(c, doc.get("run"))
    excludes = _excludes(c, doc.get("exclude"))
    if c.problems:
        raise SweepSpecError(shown, c.problems, text=text)

    cfg_keys = list(run_axes)
    net_choices: list[str | None] = list(networks) if networks else [None]  # None: the run's default network
    axis_values: dict[str, list[Any]] = {
        "workload": [wl["name"] for wl in itertools.chain.from_iterable(workloads)],
        "fabric": [fab["name"] for fab in itertools.chain.from_iterable(fabrics)],
        "queue": list(queues), "alloc": list(allocs), "speedup": list(speedups), "seed": list(seeds), "network": net_choices,
        **{k: list(v) for k, v in run_axes.items()},
    }  # fmt: skip
    _check_excludes(c, excludes, axis_values)
    if c.problems:
        raise SweepSpecError(shown, c.problems, text=text)
    net_sha256 = {n: _network_file_sha256(n) for n in net_choices if n is not None}
    runs: list[RunSpec] = []
    seen: set[str] = set()
    dropped = dup = 0
    for wl in itertools.chain.from_iterable(workloads):
        for fab in itertools.chain.from_iterable(fabrics):
            for queue, alloc, speedup in itertools.product(queues, allocs, speedups):
                for net in net_choices:
                    for cfg_combo in itertools.product(*(run_axes[k] for k in cfg_keys)):
                        extra = dict(zip(cfg_keys, cfg_combo))
                        for seed in seeds:
                            values = {"workload": wl["name"], "fabric": fab["name"], "queue": queue, "alloc": alloc, "speedup": speedup, "seed": seed, "network": net, **extra}
                            if _excluded(values, excludes):
                                dropped += 1
                                continue
                            kwargs: dict[str, Any] = dict(extra, queue=queue, alloc=alloc, seed=seed)
                            if net is not None:
                                kwargs["network"] = net
                            scenario: dict[str, Any] = {"speedup": speedup, "seed": seed}
                            if net is not None:
                                scenario["network"] = net
                                if net_sha256[net]:
                                    scenario["network_sha256"] = net_sha256[net]
                            spec = {
                                "toposched_version": __version__,
                                "workload": wl,
                                "fabric": {k: v for k, v in fab.items() if k != "params_name"},
                                "scenario": scenario,
                                "config": _run_config(kwargs),
                            }
                            code = {k: policy_code_sha256(kwargs.get(k)) for k in ("alloc", "queue_order")}
                            code = {k: v for k, v in code.items() if v is not None}
                            if code:
                                spec["policy_code_sha256"] = code
                            spec = json.loads(json.dumps(spec))  # plain JSON types, own copies
                            rid = run_id_of(spec)
                            if rid in seen:
                                dup += 1
                                continue
                            seen.add(rid)
                            runs.append(RunSpec(rid, spec))
    if any(r.spec["config"].get("alloc") == "as-logged" and r.spec["config"].get("network") for r in runs):
        # each such run would fail ("the network model cannot move them"), knowably now
        raise SweepSpecError(
            shown,
            [(f"policies.alloc[{allocs.index('as-logged')}]", "as-logged replays the log's own start and end times and the network model cannot move them; "
              "leave those runs out: [[exclude]] alloc = \"as-logged\", network = [...]")],
            text=text,
        )
    notes = []
    if dropped:
        notes.append(f"{dropped} combination{'s' if dropped != 1 else ''} left out by [[exclude]]")
    if dup:
        notes.append(f"{dup} duplicate run{'s' if dup != 1 else ''} (same specification twice) run once")
    if not runs:
        raise SweepSpecError(shown, [("", "the matrix is empty (every combination is excluded)")])
    return Sweep(
        path=Path(path),
        name=name or Path(path).stem,
        description=description or "",
        out=out,
        runs=runs,
        text=text,
        notes=notes,
    )


def load_sweep(path: str | Path) -> Sweep:
    """Read and check a sweep file (see :func:`parse_sweep`)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SweepSpecError(str(path), [("", "no such file")]) from None
    except UnicodeDecodeError as exc:
        raise SweepSpecError(str(path), [("", f"not UTF-8 text: {exc}")]) from None
    return parse_sweep(text, path)

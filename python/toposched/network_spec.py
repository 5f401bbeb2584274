"""The replay's network model: ``--network SPEC`` read once into a :class:`NetworkSpec`,
traffic assigned to every job once, the closed loop attached to a native Simulation
(:func:`attach_network`), and the per-job output columns and summary read back
(:func:`network_columns`). docs/network.md, "Closed loop in the replay".

The model's settings (fairness, bandwidth, service levels) are read by
:func:`toposched.network.parse_settings`, as a scenario's are: one reader for both.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .errors import InputError
from .jobmodel import FabricTiming, profile
from .network import MAX_FLOW_BYTES, SL_PRESETS, ModelSettings, check_pattern, field_error, parse_settings

#: What an error in a spec file adds, so that the user knows which flag gave the file.
FLAG_HINT = "given with --network"

#: The largest ``seed`` of a spec (each job's seed is ``job row + seed x 1,000,003`` in int64).
SEED_LIMIT = 2**40

#: No bound (a rule without ``max_nodes`` / ``max_walltime_s``).
UNBOUNDED = 2**62

#: The job features a rule of a site's mix can test for equality, and the Workload column
#: each reads (docs/network.md, "A site's own mix"): the id columns every reader fills
#: (sacct, PBS: names, matched by name; SWF: the log's numbers) and ``app``,
#: ``extra["app"]``: the job's name for sacct (``JobName``) and PBS (``jobname``), with
#: its names in ``Workload.names["app"]``; SWF's executable (application) number (field 14).
RULE_FEATURES: dict[str, str] = {
    "partition": "partition_id",
    "account": "account_id",
    "user": "user_id",
    "qos": "qos_id",
    "app": "app",
}

#: Inclusive bounds a rule can put on the job's size (``nodes``) and requested time (``walltime_s``).
RULE_BOUNDS: tuple[str, ...] = ("min_nodes", "max_nodes", "min_walltime_s", "max_walltime_s")

#: Every key (JSON / TOML) or column (CSV) of a rule, in the order a rule is described.
RULE_KEYS: tuple[str, ...] = (*RULE_BOUNDS, *RULE_FEATURES, "pattern", "comm_fraction", "phi")


class Rule(NamedTuple):
    """One rule of a ``mapping=bins`` table: the jobs it takes (every condition holds) and
    the traffic they send. Rules are tried in order; the first that holds takes the job."""

    max_nodes: int
    pattern: str
    #: Communication fraction (the job model turns it into phi), or None when ``phi`` is given.
    comm_fraction: float | None
    phi: float | None
    min_nodes: int = 1
    min_walltime_s: int = 0
    max_walltime_s: int = UNBOUNDED
    #: (feature, value as written) for the features of :data:`RULE_FEATURES` it tests.
    where: tuple[tuple[str, str], ...] = ()

    def describe(self) -> dict[str, Any]:
        """The rule as summary.json's ``network.bins`` shows it: ``max_nodes`` always,
        ``null`` for no bound (not the internal :data:`UNBOUNDED`, a meaningless number to
        a reader); the other bounds only when the rule sets them."""
        d: dict[str, Any] = {"max_nodes": None if self.max_nodes >= UNBOUNDED else self.max_nodes}
        if self.min_nodes != 1:
            d["min_nodes"] = self.min_nodes
        if self.min_walltime_s != 0:
            d["min_walltime_s"] = self.min_walltime_s
        if self.max_walltime_s < UNBOUNDED:
            d["max_walltime_s"] = self.max_walltime_s
        d.update(self.where)
        d["pattern"] = self.pattern
        if self.phi is not None:
            d["phi"] = self.phi
        else:
            d["comm_fraction"] = self.comm_fraction
        return d

    def covers(self, other: Rule) -> bool:
        """Whether every job ``other`` holds for, this rule holds for too (so ``other``,
        after this one, can never take a job)."""
        return (
            self.min_nodes <= other.min_nodes
            and self.max_nodes >= other.max_nodes
            and self.min_walltime_s <= other.min_walltime_s
            and self.max_walltime_s >= other.max_walltime_s
            and set(self.where) <= set(other.where)
        )


#: Chatterbug patterns of the SC18 paper's experiments (seed 000 §V-B), for ``mapping=random``.
PAPER_PATTERNS: tuple[str, ...] = ("stencil4d", "unstructured", "pairs", "subcom-a2a")

#: Default ``mapping=bins`` table: (largest node count, pattern, communication fraction,
#: explicit phi or None). One-node jobs do not use the network; the others communicate 30 %
#: of their time (seed 000's production-like variant: "communication ... around 30% of the
#: total time", which measured a 1.08x mean / 1.31x max gain from isolation), with the
#: patterns' application profiles (jobmodel.py) splitting that time into latency and
#: bandwidth; larger jobs get denser patterns (documented choice, replaceable).
DEFAULT_BINS: tuple[Rule, ...] = (
    Rule(1, "none", 0.0, None),
    Rule(16, "stencil3d", 0.3, None),
    Rule(128, "stencil4d", 0.3, None),
    Rule(512, "unstructured", 0.3, None),
    Rule(UNBOUNDED, "subcom-a2a", 0.3, None),
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

    #: "bins" (rules on the job's size and features), "random" (seeded, as seed 000 did)
    #: or "column" (a trace column).
    mapping: str = "bins"
    bins: tuple[Rule, ...] = DEFAULT_BINS
    #: The line of each rule in its file, where known (errors name it).
    bin_lines: tuple[int | None, ...] = ()
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
    #: The file the rules came from (errors in matching them name it); "" for the default table.
    bins_source: str = ""
    #: SHA-256 of the spec file (or of the bins=PATH.csv table); "" for a spec on the command line.
    file_sha256: str = ""

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"spec": self.text, "mapping": self.mapping, "reference": self.reference, "overrun": self.overrun, "ranks_per_node": self.ranks_per_node, "seed": self.seed}
        if self.mapping == "bins":
            d["bins"] = [b.describe() for b in self.bins]
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
        if self.file_sha256:
            d["file_sha256"] = self.file_sha256
        d.update(self.settings.describe())
        return d


def _digits(text: str) -> str:
    """``text`` for int() or float(), which read digit separators: "0_1" was 1.0 and
    "1_0" 10, taken without a word; ValueError for them."""
    if "_" in text:
        raise ValueError(text)
    return text


def _phi_value(text: str, src: str, what: str = "phi") -> float | tuple[float, float]:
    try:
        if "-" in text.strip()[1:]:
            lo, hi = text.split("-", 1) if not text.startswith("-") else (text, "")
            v: float | tuple[float, float] = (float(_digits(lo)), float(_digits(hi)))
        else:
            v = float(_digits(text))
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
    bytes, bins (the path of a CSV table of rules); or the path of a spec file: JSON or
    TOML with the same keys (``bins`` as a list of rules, ``model`` as in a scenario), or a
    CSV table of rules (by the file's extension; docs/network.md)."""
    src = "--network"
    p = Path(text)
    # a file: one that exists, or a name with a spec file's extension (to say it is
    # missing) unless it reads as KEY=VALUE items (bins=site.csv,seed=2)
    if p.is_file() or (p.suffix.lower() in (".json", ".toml", ".csv") and "=" not in text and "," not in text):
        try:
            return _spec_from_file(p, text)
        except InputError as exc:
            raise _flagged(exc) from None
    items: dict[str, str] = {}
    # Which item set each key, to refuse a key given twice (the later one would silently
    # win: "bins,reference=alone,reference=ideal"); aliases count as their key.
    given: dict[str, str] = {}

    def put(key: str, value: str, part: str) -> None:
        canonical = {"comm": "comm_fraction", "sl": "service_levels"}.get(key, key)
        if canonical in given:
            raise field_error(src, key, f"given twice ({given[canonical]!r} and {part!r})")
        given[canonical] = part
        items[key] = value

    for part in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            if key in ("on", "default", "bins", "random"):
                put("mapping", "bins" if key in ("on", "default") else key, part)
            elif key == "heavy":
                # seed 000's experiment: random Chatterbug patterns, pure communication
                put("mapping", "random", part)
                put("comm_fraction", "1", part)
            elif key.startswith("column:"):
                put("mapping", "column", part)
                put("column", key.split(":", 1)[1], part)
            else:
                raise field_error(src, key, "expected bins, random, heavy, column:NAME or KEY=VALUE")
            continue
        put(key.strip(), value.strip(), part)
    obj: dict[str, Any] = {}
    model: dict[str, Any] = {}
    for key, value in items.items():
        if key in ("fairness",):
            model[key] = value
        elif key == "bandwidth":
            try:
                b = [float(_digits(x)) for x in value.split("+")]
            except ValueError:
                raise field_error(src, key, f"expected a number or host+leaf+core, got {value!r}") from None
            model[key] = b[0] if len(b) == 1 else b
        elif key in ("service_levels", "sl"):
            try:
                model["service_levels"] = value if value in SL_PRESETS else [float(_digits(x)) for x in value.split("+")]
            except ValueError:
                # neither a table's name nor weights: the settings reader names the tables
                model["service_levels"] = value
        elif key == "patterns":
            obj[key] = value.split("+")
        elif key in ("seed", "ranks_per_node"):
            try:
                obj[key] = int(_digits(value))
            except ValueError:
                raise field_error(src, key, f"expected a whole number, got {value!r}") from None
        elif key == "bytes":
            try:
                obj[key] = float(_digits(value))
            except ValueError:
                raise field_error(src, key, f"expected a positive number, got {value!r}") from None
        elif key in ("phi", "comm_fraction", "comm"):
            obj["comm_fraction" if key == "comm" else key] = _phi_value(value, src, key if key != "comm" else "comm_fraction")
        elif key in ("mapping", "column", "sl_column", "reference", "overrun"):
            obj[key] = value
        elif key == "bins":
            bins_file = Path(value)
            if bins_file.suffix.lower() != ".csv":
                raise field_error(src, key, f"bins=PATH takes a CSV table of rules, got {value!r} (a JSON or TOML spec is given whole: --network spec.toml)")
        else:
            raise field_error(src, key, "unknown key; keys are mapping, patterns, comm_fraction (comm), phi, column, sl_column, seed, reference, overrun, fairness, bandwidth, service_levels, ranks_per_node, bytes, bins")
    if model:
        obj["model"] = model
    out = _spec_from_obj(obj, src)
    out.text = text
    if "bins" in items:
        _refuse_unread_keys({"bins": items["bins"]}, out.mapping, src)
        try:
            table, out.file_sha256 = _read_text(bins_file, "bins table")
            out.bins, out.bin_lines = _rules_from_csv(table, str(bins_file))
        except InputError as exc:
            raise _flagged(exc) from None
        out.bins_source = str(bins_file)
    return out


def _flagged(exc: InputError) -> InputError:
    """``exc`` (an error in a file given with ``--network``) saying which flag gave the file."""
    if exc.hint is not None:
        return exc
    return InputError(exc.path, exc.message, line=exc.line, field=exc.field, hint=FLAG_HINT)


def _read_text(path: Path, what: str) -> tuple[str, str]:
    """The file's text and the SHA-256 of its bytes (the summary records it: a run's id
    then changes with the file's contents, not only its name)."""
    try:
        data = path.read_bytes()
        # utf-8-sig: a spreadsheet's CSV often starts with a byte-order mark
        return data.decode("utf-8-sig"), hashlib.sha256(data).hexdigest()
    except FileNotFoundError:
        raise InputError(str(path), f"{what} file not found") from None
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read the {what}: {exc.strerror or exc}") from None


def _spec_from_file(path: Path, src: str) -> NetworkSpec:
    """A spec file, read by its extension: ``.csv`` a table of rules (every other setting
    at its default), ``.toml`` or anything else JSON."""
    text, sha256 = _read_text(path, "network spec")
    spec = _spec_from_text(text, path.suffix.lower(), src)
    spec.file_sha256 = sha256
    return spec


def _spec_from_text(text: str, suffix: str, src: str) -> NetworkSpec:
    if suffix == ".csv":
        spec = NetworkSpec(text=src)
        spec.bins, spec.bin_lines = _rules_from_csv(text, src)
        spec.bins_source = src
        return spec
    if suffix == ".toml":
        import tomllib

        try:
            loaded: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            # tomllib says "... (at line L, column C)": the line goes where every error puts it
            m = re.search(r"\(at line (\d+), column \d+\)$", str(exc))
            message = str(exc)[: m.start()].rstrip() if m else str(exc)
            raise InputError(src, f"not valid TOML: {message}", line=int(m.group(1)) if m else None) from None
        # the line of each [[bins]] table, so that an error in a rule names it
        headers = [i for i, line in enumerate(text.splitlines(), 1) if _TOML_BINS.match(line)]
        bins = loaded.get("bins")
        lines = tuple(headers) if isinstance(bins, list) and len(headers) == len(bins) else ()
        return _spec_from_obj(loaded, src, lines)
    try:
        loaded = json.loads(text, object_pairs_hook=_refuse_repeated_keys)
    except json.JSONDecodeError as exc:
        raise InputError(src, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
    except _RepeatedKey as exc:
        # JSON lets the last of two equal keys win, silently; TOML refuses them
        raise field_error(src, str(exc), "given twice") from None
    return _spec_from_obj(loaded, src)


class _RepeatedKey(Exception):
    pass


def _refuse_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


_TOML_BINS = re.compile(r"\s*\[\[\s*bins\s*\]\]\s*(#.*)?$")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _rule(d: Any, src: str, where: str, line: int | None) -> Rule:
    """One rule from a JSON / TOML table or a CSV row (cells already typed). ``where`` is
    its path in the file (``bins[2]``; "" for a CSV row, whose line says which)."""

    def bad(key: str | None, message: str) -> InputError:
        name = f"{where}.{key}" if where and key else (key or where or None)
        return InputError(src, message, line=line, field=name)

    if not isinstance(d, dict):
        raise bad(None, "a rule is a table of conditions and a pattern, e.g. {\"max_nodes\": 16, \"pattern\": \"stencil3d\", \"comm_fraction\": 0.3}")
    for key in d:
        if key not in RULE_KEYS:
            raise bad(str(key), "unknown key; a rule has " + ", ".join(RULE_KEYS))
    pattern = d.get("pattern")
    if not isinstance(pattern, str) or not pattern.strip():
        raise bad("pattern", "every rule needs a pattern (a name of the model's pattern list)")
    pattern = pattern.strip()
    try:
        check_pattern(pattern, src, "pattern")
    except InputError as exc:
        raise bad("pattern", exc.message) from None
    if "phi" in d and "comm_fraction" in d:
        raise bad("phi", "a rule gives comm_fraction (the job model makes phi of it) or phi, not both")
    key = "phi" if "phi" in d else "comm_fraction"
    value = d.get(key, DEFAULT_COMM_FRACTION)
    if not _is_number(value) or not 0 <= value <= 1:
        raise bad(key, f"expected a number in [0, 1], got {value!r}")
    if key in d and value > 0 and pattern.lower() in ("none", "compute"):
        # its jobs send nothing, yet were reported with that phi (net_phi), as a scenario's
        # job is refused for it (network.py)
        raise bad(key, f"the rule's pattern {pattern!r} sends nothing (compute only), yet it gives {key} {value:g}: give the jobs' pattern, or {key} 0")
    bounds: dict[str, int] = {"min_nodes": 1, "max_nodes": UNBOUNDED, "min_walltime_s": 0, "max_walltime_s": UNBOUNDED}
    for k in RULE_BOUNDS:
        if k in d:
            v = d[k]
            low = 1 if k.endswith("_nodes") else 0
            if not _is_int(v) or not low <= v <= UNBOUNDED:
                raise bad(k, f"expected a whole number >= {low}, got {v!r}")
            bounds[k] = v
    for lo, hi in (("min_nodes", "max_nodes"), ("min_walltime_s", "max_walltime_s")):
        if bounds[lo] > bounds[hi]:
            raise bad(lo, f"{lo} {bounds[lo]} is above {hi} {bounds[hi]}: the rule can take no job")
    conditions: list[tuple[str, str]] = []
    for f in RULE_FEATURES:
        if f in d:
            v = d[f]
            if _is_int(v):
                v = str(v)
            elif not isinstance(v, str) or not v.strip():
                raise bad(f, f"expected a name or a number, got {v!r}")
            conditions.append((f, v.strip()))
    return Rule(
        max_nodes=bounds["max_nodes"],
        pattern=pattern,
        comm_fraction=None if key == "phi" else float(value),
        phi=float(value) if key == "phi" else None,
        min_nodes=bounds["min_nodes"],
        min_walltime_s=bounds["min_walltime_s"],
        max_walltime_s=bounds["max_walltime_s"],
        where=tuple(conditions),
    )


def _checked_rules(rules: list[Rule], lines: list[int | None], labels: list[str], src: str) -> tuple[tuple[Rule, ...], tuple[int | None, ...]]:
    """The rules as given, refused if one can never take a job: an earlier rule holds for
    every job it would hold for (e.g. size bins not in increasing order)."""
    if not rules:
        raise InputError(src, "no rules: a table needs at least one rule", field="bins")
    for j, r in enumerate(rules):
        for i in range(j):
            if rules[i].covers(r):
                at = f" (line {lines[i]})" if lines[i] is not None and not labels[i].startswith("the rule on line") else ""
                raise InputError(
                    src,
                    f"{labels[j]} can never take a job: {labels[i]}{at} before it takes every job it would "
                    "(rules are tried in order and the first that holds takes the job; put the narrower rule first)",
                    line=lines[j],
                    field=labels[j] if labels[j].startswith("bins[") else None,
                )
    return tuple(rules), tuple(lines)


def _rules_from_csv(text: str, src: str) -> tuple[tuple[Rule, ...], tuple[int | None, ...]]:
    """A CSV table of rules: a header naming the columns (keys of :data:`RULE_KEYS`), one
    row per rule, an empty cell for a condition the rule does not test; blank lines and
    lines starting with '#' are skipped."""
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    rules: list[Rule] = []
    lines: list[int | None] = []
    try:
        for row in reader:
            line = reader.line_num
            cells = [c.strip() for c in row]
            if not any(cells) or cells[0].startswith("#"):
                continue
            if header is None:
                for c in cells:
                    if c not in RULE_KEYS:
                        sep = " (cells are separated by commas)" if ";" in c or "\t" in c else ""
                        raise InputError(src, "unknown column; the columns of a rule are " + ", ".join(RULE_KEYS) + sep, line=line, field=c or "(empty)")
                    if cells.count(c) > 1:
                        raise InputError(src, "column named twice", line=line, field=c)
                if "pattern" not in cells:
                    raise InputError(src, "the header names no pattern column (at least max_nodes,pattern,comm_fraction)", line=line, field="pattern")
                header = cells
                continue
            if len(cells) != len(header):
                raise InputError(src, f"expected {len(header)} cells ({','.join(header)}), found {len(cells)}", line=line)
            d: dict[str, Any] = {}
            for name, cell in zip(header, cells):
                if not cell:
                    continue
                if name in RULE_BOUNDS:
                    try:
                        d[name] = int(_digits(cell))
                    except ValueError:
                        raise InputError(src, f"expected a whole number, got {cell!r}", line=line, field=name) from None
                elif name in ("comm_fraction", "phi"):
                    try:
                        d[name] = float(_digits(cell))
                    except ValueError:
                        raise InputError(src, f"expected a number in [0, 1], got {cell!r}", line=line, field=name) from None
                else:
                    d[name] = cell
            rules.append(_rule(d, src, "", line))
            lines.append(line)
    except csv.Error as exc:
        raise InputError(src, f"not valid CSV: {exc}", line=reader.line_num) from None
    if header is None:
        raise InputError(src, "empty table: expected a header (e.g. max_nodes,pattern,comm_fraction) and one row per rule")
    return _checked_rules(rules, lines, [f"the rule on line {n}" for n in lines], src)


#: Keys each mapping does not read: given with it, they would be ignored without a word.
_UNREAD_BY_MAPPING: dict[str, tuple[str, ...]] = {
    "bins": ("patterns", "phi", "comm_fraction", "column"),  # every rule has its own pattern and fraction
    "random": ("bins", "column"),
    "column": ("bins",),
}


def _refuse_unread_keys(obj: dict[str, Any], mapping: str, src: str) -> None:
    """One line for a key the spec's mapping would ignore (e.g. a bins table with
    mapping=random), rather than a run that silently does something else."""
    for key in _UNREAD_BY_MAPPING.get(mapping, ()):
        if key in obj:
            why = "each rule of the table gives its own pattern and comm_fraction or phi" if mapping == "bins" else "it is read only with mapping=" + ("bins" if key == "bins" else "column")
            raise field_error(src, key, f"{key} is not read with mapping={mapping} ({why}); leave it out or change the mapping")


def _spec_from_obj(obj: Any, src: str, bin_lines: tuple[int, ...] = ()) -> NetworkSpec:
    """A spec from its JSON / TOML object (or from ``KEY=VALUE`` items made one);
    ``bin_lines``: the line of each rule of ``bins`` in the file, where known."""
    if not isinstance(obj, dict):
        raise InputError(src, "a network spec is an object")
    known = {"mapping", "bins", "patterns", "phi", "comm_fraction", "column", "sl_column", "seed", "reference", "overrun", "ranks_per_node", "bytes", "model"}
    bad = set(obj) - known
    if bad:
        raise field_error(src, sorted(bad)[0], "unknown key; keys are " + ", ".join(sorted(known)))
    for key in ("mapping", "column", "sl_column", "reference", "overrun"):
        if key in obj and not isinstance(obj[key], str):
            raise field_error(src, key, f"expected a name, got {obj[key]!r}")
    for key, low, high in (("seed", 0, SEED_LIMIT), ("ranks_per_node", 1, 2**31)):
        if key in obj and (not _is_int(obj[key]) or not low <= obj[key] <= high):
            raise field_error(src, key, f"expected a whole number from {low} to {high}, got {obj[key]!r}")
    if "bytes" in obj and (not _is_number(obj["bytes"]) or not 0 < obj["bytes"] <= MAX_FLOW_BYTES):
        raise field_error(src, "bytes", f"expected a positive number up to {MAX_FLOW_BYTES:g}, got {obj['bytes']!r}")
    spec = NetworkSpec(text=src)
    spec.mapping = obj.get("mapping", "bins")
    if spec.mapping not in ("bins", "random", "column"):
        raise field_error(src, "mapping", f"expected bins, random or column, got {spec.mapping!r}")
    if "bins" in obj:
        bins = obj["bins"]
        if not isinstance(bins, list) or not bins:
            raise field_error(src, "bins", "expected a list of rules, e.g. [{\"max_nodes\": 16, \"pattern\": \"stencil3d\", \"comm_fraction\": 0.3}, ...]")
        lines: list[int | None] = list(bin_lines) if len(bin_lines) == len(bins) else [None] * len(bins)
        rules = [_rule(b, src, f"bins[{k}]", lines[k]) for k, b in enumerate(bins)]
        spec.bins, spec.bin_lines = _checked_rules(rules, lines, [f"bins[{k}]" for k in range(len(bins))], src)
        spec.bins_source = src
    if "patterns" in obj:
        pats = obj["patterns"]
        if not isinstance(pats, list) or not pats:
            raise field_error(src, "patterns", "expected a non-empty list of pattern names")
        for p in pats:
            if not isinstance(p, str):
                raise field_error(src, "patterns", f"expected pattern names, got {p!r}")
            check_pattern(p, src, "patterns")
        spec.patterns = tuple(pats)
    if "phi" in obj and "comm_fraction" in obj:  # phi would win and the fraction be dropped
        raise field_error(src, "phi", "phi is given, and comm_fraction (the job model makes phi of it): give one of them")
    for key in ("phi", "comm_fraction"):
        if key not in obj:
            continue
        phi = obj[key]
        if isinstance(phi, str):
            phi = _phi_value(phi, src, key)
        elif isinstance(phi, list) and len(phi) == 2 and all(_is_number(x) for x in phi):
            phi = (float(phi[0]), float(phi[1]))
        if isinstance(phi, bool):  # true/false would read as 1/0
            raise field_error(src, key, f"expected a number in [0, 1] or [low, high], got {str(phi).lower()}")
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
    _refuse_unread_keys(obj, spec.mapping, src)
    spec.seed = obj.get("seed", 0)
    spec.reference = obj.get("reference", "random")
    if spec.reference not in ("alone", "ideal", "random"):
        raise field_error(src, "reference", f"expected alone, ideal or random, got {spec.reference!r}")
    spec.overrun = obj.get("overrun", "run-on")
    if spec.overrun not in ("run-on", "kill"):
        raise field_error(src, "overrun", f"expected run-on or kill, got {spec.overrun!r}")
    spec.ranks_per_node = obj.get("ranks_per_node", 1)
    spec.bytes = float(obj.get("bytes", 1.0))
    spec.settings = parse_settings(obj.get("model"), src)
    if spec.settings.filling != "auto":
        # the replay's closed loop re-solves at every start and end with the steady solve
        raise field_error(src, "model.filling", "filling is a setting of interfere scenarios; the replay uses the steady-state solve")
    if spec.settings.mtu_bytes is not None:
        # the closed loop has no queueing delay yet (it would need a per-flow solve per event)
        raise field_error(src, "model.mtu_bytes", "mtu_bytes (queueing delay) is a setting of interfere scenarios; the replay has no queueing delay")
    return spec


def _workload_column(workload: Any, name: str, src: str, what: str) -> np.ndarray:
    col = workload.columns.get(name)
    if col is None:
        col = workload.extra.get(name)
    if not isinstance(col, np.ndarray) or len(col) != len(workload):
        have = sorted(set(workload.columns) | {k for k, v in workload.extra.items() if isinstance(v, np.ndarray)})
        raise _spec_error(src, what, f"the workload has no column {name!r}; it has {', '.join(have)}")
    return col


def _spec_error(src: str, what: str, message: str) -> InputError:
    """An error of a spec that reads but does not fit the workload: named as the spec's
    own errors are (the file, or --network for a spec on the command line) and the flag."""
    return InputError(src, message, field=what, hint=None if src == "--network" else FLAG_HINT)


def check_spec_on(workload: Any, spec: NetworkSpec | str) -> None:
    """Raise the InputError a run would for a spec that reads but does not fit this
    workload (a column it lacks, a rule on a feature it does not give, an application name
    where the log numbers them), so that compare and frontier refuse it in one line before
    any run, not in every worker."""
    assign_traffic(workload, parse_network_spec(spec) if isinstance(spec, str) else spec)


def assign_traffic(workload: Any, spec: NetworkSpec) -> dict[str, Any]:
    """Pattern (index into ``patterns``), phi and service level of every job row."""
    n = len(workload)
    sizes = np.asarray(workload.columns["nodes"])
    # a spec on the command line is "--network", as when it is read (its text named it:
    # "error: column:nosuch: field 'column'"); a file names itself and the flag
    src = spec.text if spec.text and Path(spec.text).is_file() else "--network"
    timing = spec.settings.timing
    if spec.mapping == "bins":
        names = sorted({b.pattern for b in spec.bins}, key=[b.pattern for b in spec.bins].index)
        rule = match_rules(workload, spec)
        pattern = np.array([names.index(spec.bins[k].pattern) for k in rule], dtype=np.int64) if n else np.zeros(0, np.int64)
        phi = np.zeros(n)
        for i in range(n):
            b = spec.bins[rule[i]]
            phi[i] = b.phi if b.phi is not None else (b.comm_fraction or 0.0) * bandwidth_share(b.pattern, int(sizes[i]), timing)
    else:
        names = list(spec.patterns)
        if spec.mapping == "random":
            rng = np.random.default_rng(spec.seed)
            pattern = rng.integers(0, len(names), n).astype(np.int64)
            u = rng.random(n)
        else:
            vals = np.asarray(_workload_column(workload, spec.column or "", src, "column"), dtype=np.int64)
            if n and not (vals >= 0).any():
                # as a bins rule on a feature the log does not give: every job got
                # patterns[-1 mod len] and one fraction, without a word
                raise _spec_error(
                    src, "column", f"this workload ({workload.format}) gives no {spec.column} for any job (every value is -1, not logged): every job would get one pattern"
                )
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
            first = int(np.flatnonzero(bad)[0])
            value = int(sl[first])
            what = "has no value (-1: not logged)" if value == -1 else f"is {value}"
            raise _spec_error(
                src, "sl_column", f"the service level of job {workload.columns['job_id'][first]} ({spec.sl_column}) {what}: levels are 0 to {len(spec.settings.sl_weights) - 1} (service_levels)"
            )
    out = {"patterns": names, "pattern": pattern, "phi": phi, "service_level": sl}
    if spec.mapping == "bins":
        out["rule"] = rule
    return out


def match_rules(workload: Any, spec: NetworkSpec) -> np.ndarray:
    """The index in ``spec.bins`` of the rule that takes each job: the first, in order,
    whose every condition holds. A job no rule takes is an error (the table should end
    with a catch-all rule), as is a rule on a feature the workload does not have."""
    src = spec.bins_source or spec.text or "--network"
    n = len(workload)
    sizes = np.asarray(workload.columns["nodes"])
    wall = np.asarray(workload.columns["walltime_s"])
    in_csv = spec.bins_source.lower().endswith(".csv")  # a CSV row is named by its line
    rule = np.full(n, -1, dtype=np.int64)
    for k, r in enumerate(spec.bins):
        line = spec.bin_lines[k] if k < len(spec.bin_lines) else None
        label = "" if in_csv else f"bins[{k}]"
        take = (rule < 0) & (sizes >= r.min_nodes) & (sizes <= r.max_nodes)
        if r.min_walltime_s > 0 or r.max_walltime_s < UNBOUNDED:
            take &= (wall >= r.min_walltime_s) & (wall <= r.max_walltime_s)
        for feature, value in r.where:
            take &= _feature_equals(workload, feature, value, src, f"{label}.{feature}" if label else feature, line)
        rule[take] = k
    missed = np.flatnonzero(rule < 0)
    if len(missed):
        i = int(missed[0])
        cols = workload.columns
        first = f"job {int(cols['job_id'][i])} (log line {int(cols['line'][i])}, {int(sizes[i])} nodes, requested {int(wall[i])} s"
        for feature, column in RULE_FEATURES.items():
            values = _feature_column(workload, column)
            if values is not None and values[i] >= 0:
                names = workload.names.get(column)
                first += f", {feature} {names[values[i]] if names and values[i] < len(names) else int(values[i])}"
        raise InputError(
            src,
            f"{len(missed)} of {n} jobs match no rule (the first: {first}); end the table with a rule without conditions to take the rest",
            field="bins",
            hint=FLAG_HINT if spec.bins_source else None,
        )
    return rule


def _feature_column(workload: Any, column: str) -> np.ndarray | None:
    col = workload.columns.get(column)
    if col is None:
        col = workload.extra.get(column)
    return col if isinstance(col, np.ndarray) and len(col) == len(workload) else None


#: Where each format's readers find a job's application (``app``), for the error naming it.
_APP_SOURCE: dict[str, str] = {
    "swf": "the SWF executable (application) number, field 14,",
    "swf-nodes": "the SWF executable (application) number, field 14,",
    "sacct": "the job name, sacct's JobName column,",
    "pbs": "the job name, the jobname attribute of E records,",
}


def _feature_equals(workload: Any, feature: str, value: str, src: str, where: str, line: int | None) -> np.ndarray:
    """Which jobs have ``feature`` equal to ``value``: by name where the log names them
    (sacct, PBS: ``workload.names``; their ``app`` is the job name), else by the log's
    number (SWF; its ``app`` is the executable number)."""
    column = RULE_FEATURES[feature]

    def bad(message: str) -> InputError:
        return InputError(src, message, line=line, field=where, hint=FLAG_HINT)

    values = _feature_column(workload, column)
    if values is None or not (values >= 0).any():
        what = _APP_SOURCE.get(workload.format, 'extra["app"]') if feature == "app" else f"the {column} column"
        raise bad(f"the rule tests {feature}, but this workload ({workload.format}) has no {feature}: {what} is unknown for every job")
    names = workload.names.get(column)
    if names:
        # a name absent from this log (another month's partition) takes no job: the
        # per-rule counts in summary.json show it
        return np.asarray(values == names.index(value)) if value in names else np.zeros(len(values), dtype=bool)
    try:
        number = int(value)
    except ValueError:
        what = " (the SWF executable number, field 14)" if feature == "app" and workload.format in ("swf", "swf-nodes") else ""
        raise bad(f"this workload ({workload.format}) gives {feature} as numbers{what}, not names; got {value!r}") from None
    return np.asarray(values == number, dtype=bool)


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


#: A predicted slowdown counts as a slowdown above 1 + this: the core's sharing solver works
#: to a tolerance of 1e-9 in a job's rate (crates/toposched-core/src/network/solver.rs,
#: ``EPS``), so a job that shares no link can come out at 1 + 1.6e-9 (37 isolated jobs of
#: Atlas x2 on a 2:1 tapered Cab, every one with ``net_links_shared`` 0).
SLOWED_ABOVE = 1e-6


def jobs_slowed(slowdowns: np.ndarray) -> int:
    """How many of ``slowdowns`` (NaN-free) are a real slowdown, not solver rounding."""
    return int(np.sum(np.asarray(slowdowns, dtype=float) > 1.0 + SLOWED_ABOVE))


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
        "jobs_slowed": jobs_slowed(slow),
    }
    summary["jobs_sharing_links"] = int(np.sum(r["links_shared"][rows] > 0))
    if "rule" in t:
        # how many of the replayed jobs each rule took (net_rule is the index of the rule)
        cols["net_rule"] = t["rule"][rows]
        counts = np.bincount(t["rule"][rows], minlength=len(summary["bins"]))
        for b, count in zip(summary["bins"], counts.tolist()):
            b["jobs"] = count
    summary["stats"] = dict(r["stats"])
    return cols, summary

"""Workload transforms and runtime speedup scenarios (SC18 paper, seed 000 §IV-B).

Every function returns a **new** :class:`~toposched.workload.model.Workload` (the input is
never modified) and says what it did: changed values are counted in ``repairs`` and jobs
left out in ``skipped`` (keys ``transform_*`` and ``scenario_*``), so a run summary still
accounts for every record of the log. Transforms append their canonical string to
``settings["transforms"]``; a scenario records itself in ``settings["scenario"]``.

Transforms (``--transform`` strings, applied in the order given):

=================  =====================================================================
``scale:K``        node counts (and processor counts) times K, rounded up, at least 1
                   (the paper's 2x and 3x workloads: ``scale:2``, ``scale:3``)
``days:N``         keep the jobs submitted in the first N days (from the first submit)
``days:N@S``       keep the jobs submitted in [S, S+N) days from the first submit
``cores:C``        recompute node counts from processor counts with C cores per node
``cap:N``          jobs larger than N nodes are cut to N (``cap`` alone: the fabric size)
``drop:N``         jobs larger than N nodes are left out (``drop`` alone: the fabric size)
=================  =====================================================================

Scenarios (``none``, ``ta5``, ``ta10``, ``ta20``, ``v1``, ``v2``) shorten ``runtime_s``
(the log's run time; ``walltime_s``, the requested time, is unchanged). See
docs/compare.md for their exact definitions and the reading of the paper behind them.

>>> import numpy as np
>>> from toposched.workload.model import Workload
>>> w = Workload(columns={"job_id": np.arange(3), "submit_s": np.array([0, 10, 90000]),
...     "nodes": np.array([1, 3, 8]), "walltime_s": np.full(3, 1000),
...     "runtime_s": np.array([100, 100, 100]), "procs": np.array([8, 24, 64]),
...     "line": np.arange(1, 4)}, source="inline", format="test")
>>> t = apply_transforms(w, ["scale:1.5", "days:1"])
>>> t["nodes"].tolist(), t.repairs, t.skipped, t.settings["transforms"]
([2, 5], {'transform_scaled_nodes': 3}, {'transform_outside_window': 1}, ['scale:1.5', 'days:1'])
>>> apply_scenario(w, "ta10")["runtime_s"].tolist()
[100, 100, 90]
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from fractions import Fraction
from typing import Any

import numpy as np

from .errors import InputError, require_list
from .limits import MAX_COUNT, SEED_MAX
from .workload.model import Workload

DAY_S = 86_400
#: Days in 2^63 seconds (the int64 submit times): no window reaches that far.
MAX_DAYS = 2**63 // DAY_S

#: Speedup scenarios, in the paper's order.
SCENARIOS: tuple[str, ...] = ("none", "ta5", "ta10", "ta20", "v1", "v2")

#: Fixed-percentage scenarios: jobs of more than ``TA_MIN_NODES`` nodes run x% shorter.
TA_PERCENT = {"ta5": 5, "ta10": 10, "ta20": 20}
TA_MIN_NODES = 4

#: V1/V2: speedup bins as (lowest, highest) fraction of run time saved.
V1_BINS: tuple[tuple[float, float], ...] = ((0.0, 0.10), (0.0, 0.20), (0.0, 0.30))
V2_MID_BINS: tuple[tuple[float, float], ...] = ((0.0, 0.10), (0.0, 0.20))  # 5-128 nodes
V2_LARGE_BINS: tuple[tuple[float, float], ...] = ((0.0, 0.10), (0.10, 0.20), (0.10, 0.30))  # > 128 nodes
V2_MID_RANGE = (5, 128)
#: Jobs of this many nodes or more get the top of their bin; below, the reduction grows
#: linearly with the node count (see :func:`speedup_fraction`).
V_FULL_NODES = 512

TRANSFORM_HELP = "scale:K, days:N, days:N@START, cores:C, cap[:N], drop[:N]"

#: Largest denominator of a scale factor (9 decimals). With it and node counts below
#: ``MAX_COUNT`` (2^31), ``nodes * numerator`` stays below 2^63 for any factor whose
#: results are themselves in range, so the int64 arithmetic of :func:`scale_nodes`
#: cannot wrap (a wrapped product would silently become a 1-node job).
MAX_SCALE_DENOMINATOR = 10**9


# --------------------------------------------------------------------------- helpers


def _copy(w: Workload, index: np.ndarray | None = None) -> Workload:
    """A deep-enough copy: fresh arrays, dicts and transforms list."""
    # not take(): the transform counts the rows it leaves out under its own reason
    out = w._subset(np.arange(len(w)) if index is None else index)
    out.columns = {k: v.copy() for k, v in out.columns.items()}
    out.settings = dict(out.settings)
    out.settings["transforms"] = list(w.settings.get("transforms", []))
    return out


def _count(d: dict[str, int], key: str, n: int) -> None:
    if n:
        d[key] = d.get(key, 0) + int(n)


def _fraction(k: float | int | str | Fraction) -> Fraction:
    """Exact value of a factor: ``1.1`` means 11/10, not the nearest binary float."""
    if isinstance(k, Fraction):
        return k
    if isinstance(k, float):
        return Fraction(repr(k))
    return Fraction(k)


def _num_text(x: float | int | Fraction) -> str:
    """How a number appears in a canonical transform string (``2``, ``1.5``)."""
    f = _fraction(x)
    if f.denominator == 1:
        return str(f.numerator)
    return repr(float(f))


# --------------------------------------------------------------------------- transforms


def scale_nodes(w: Workload, k: float | int | str | Fraction) -> Workload:
    """Every job's node count times ``k``, rounded up, at least 1 (exact arithmetic: k is
    read as a decimal, so ``scale:1.1`` on 10 nodes gives 11). Processor counts (when
    known, i.e. positive) are scaled the same way so that a later ``cores:C`` keeps the
    scaling. Counts ``transform_scaled_nodes`` (jobs whose node count changed)."""
    f = _fraction(k)
    if f <= 0:
        raise ValueError(f"scale factor must be positive, got {k}")
    if f.denominator > MAX_SCALE_DENOMINATOR:
        raise InputError("--transform", f"cannot read 'scale:{k}': the scale factor may have at most 9 decimals")
    p, q = f.numerator, f.denominator
    out = _copy(w)
    nodes = out.columns["nodes"]
    _check_scaled_max(w, "nodes", nodes, f, MAX_COUNT, "2^31")
    # Processor counts only need to fit int64 (a later cores:C checks the nodes it makes).
    _check_scaled_max(w, "procs", out.columns["procs"], f, 2**63, "2^63")
    new = np.maximum(_times_up(nodes, p, q), 1)
    procs = out.columns["procs"]
    known = procs > 0
    new_procs = procs.copy()
    new_procs[known] = np.maximum(_times_up(procs[known], p, q), 1)
    _count(out.repairs, "transform_scaled_nodes", int(np.sum(new != nodes)))
    out.columns["nodes"] = new
    out.columns["procs"] = new_procs
    out.settings["transforms"].append(f"scale:{_num_text(f)}")
    return out


def _times_up(values: np.ndarray, p: int, q: int) -> np.ndarray:
    """``ceil(values * p / q)`` exactly. In int64 when every product fits; else in Python
    integers: processor counts are only held below 2^63 once scaled, and their product
    with the numerator wrapped around (10^9 processors times scale:10000.000000001 gave
    1,864,712,051 processors, and a later cores:C as many nodes too few)."""
    top = int(np.max(np.abs(values))) if len(values) else 0
    if top * p < 2**63:
        fast: np.ndarray = -((-values * p) // q)
        return fast
    return np.array([-((-int(v) * p) // q) for v in values.tolist()], dtype=np.int64)


def _check_scaled_max(w: Workload, field: str, values: np.ndarray, f: Fraction, limit: int, limit_text: str) -> None:
    """Refuse a scale factor that takes a count to ``limit`` or more, naming the largest
    job, before any int64 product is formed (see ``MAX_SCALE_DENOMINATOR``)."""
    if not len(values):
        return
    i = int(np.argmax(values))
    top = int(values[i])
    scaled = -((-top * f.numerator) // f.denominator)
    if scaled < limit:
        return
    raise _too_large(w, i, f"scale:{_num_text(f)} makes job {{job}}'s {top:,} {field} {scaled:,}, not below {limit_text}", field, "a smaller scale factor")


def _too_large(w: Workload, row: int, message: str, field: str, fix: str) -> InputError:
    """A transform's refusal of the count it makes for job ``row`` (``{job}`` in
    ``message``: its id), naming the log's line and --transform."""
    job = w.columns["job_id"][row] if "job_id" in w.columns else row
    line = int(w.columns["line"][row]) if "line" in w.columns else None
    return InputError(w.source or "log", message.format(job=job), line=line, field=field, hint=f"--transform: {fix}")


def time_window(w: Workload, days: float, start_days: float = 0) -> Workload:
    """Keep the jobs submitted in ``[t0 + start_days, t0 + start_days + days)`` days, where
    t0 is the first submit of ``w``; submit times are not shifted (the machine starts
    empty at the first kept submit). Counts ``transform_outside_window`` in skipped."""
    if not (days > 0 and math.isfinite(days)):  # inf: "cannot convert float infinity to integer"
        raise ValueError(f"window length must be a finite number of days above 0, got {days}")
    if not (start_days >= 0 and math.isfinite(start_days)):
        raise ValueError(f"window start must be a finite number of days, 0 or more, got {start_days}")
    sub = w["submit_s"]
    t0 = int(sub.min()) if len(sub) else 0
    lo = t0 + int(round(start_days * DAY_S))
    hi = t0 + int(round((start_days + days) * DAY_S))
    keep = (sub >= lo) & (sub < hi)
    out = _copy(w, np.flatnonzero(keep))
    _count(out.skipped, "transform_outside_window", int(len(w) - keep.sum()))
    text = f"days:{_num_text(days)}" + (f"@{_num_text(start_days)}" if start_days else "")
    out.settings["transforms"].append(text)
    return out


def rescale_cores(w: Workload, cores_per_node: int) -> Workload:
    """Node counts recomputed from processor counts: ``ceil(procs / cores_per_node)``, at
    least 1. Counts ``transform_rescaled_nodes`` (jobs whose node count changed); jobs
    with no processor count (0, e.g. some sacct dumps) keep their node count and are
    counted in ``transform_cores_no_procs``."""
    c = int(cores_per_node)
    if c < 1 or c != cores_per_node:
        raise ValueError(f"cores per node must be a whole number >= 1, got {cores_per_node}")
    out = _copy(w)
    procs = out.columns["procs"]
    nodes = out.columns["nodes"]
    known = procs > 0
    new = nodes.copy()
    new[known] = np.maximum(-(-procs[known] // c), 1)
    if len(new) and int(new.max()) >= MAX_COUNT:
        # else the engine's "big.swf:23: job row 0 (id 1): field 'nodes' out of range",
        # blaming the log for what the transform made
        i = int(np.argmax(new))
        raise _too_large(w, i, f"cores:{c} makes job {{job}}'s {int(procs[i]):,} procs {int(new[i]):,} nodes, not below 2^31", "procs", "a larger cores:C")
    _count(out.repairs, "transform_rescaled_nodes", int(np.sum(new != nodes)))
    _count(out.repairs, "transform_cores_no_procs", int(np.sum(~known)))
    out.columns["nodes"] = new
    out.settings["transforms"].append(f"cores:{c}")
    return out


def fit_to_fabric(w: Workload, max_nodes: int, mode: str = "cap") -> Workload:
    """Jobs larger than ``max_nodes``: ``mode="cap"`` cuts them to ``max_nodes`` (counted
    in repairs as ``transform_capped_nodes``), ``mode="drop"`` leaves them out (counted in
    skipped as ``transform_larger_than_fabric``)."""
    m = int(max_nodes)
    if m < 1 or m != max_nodes:
        raise ValueError(f"max nodes must be a whole number >= 1, got {max_nodes}")
    big = w["nodes"] > m
    if mode == "cap":
        out = _copy(w)
        out.columns["nodes"] = np.minimum(out.columns["nodes"], m)
        _count(out.repairs, "transform_capped_nodes", int(big.sum()))
    elif mode == "drop":
        out = _copy(w, np.flatnonzero(~big))
        _count(out.skipped, "transform_larger_than_fabric", int(big.sum()))
    else:
        raise ValueError(f"mode must be 'cap' or 'drop', got {mode!r}")
    out.settings["transforms"].append(f"{mode}:{m}")
    return out


def _bad(spec: str, why: str) -> InputError:
    return InputError("--transform", f"cannot read {spec!r}: {why}; expected one of {TRANSFORM_HELP}")


#: A number as a transform string takes it: decimal, ASCII digits, an optional exponent.
#: Fraction() alone also took "1/3", "1_0" and other scripts' digits: scale:1/3 was then
#: recorded as scale:0.3333333333333333, a string the command refuses (over 9 decimals).
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _decimal(text: str) -> Fraction:
    """The exact value of a decimal number; ValueError for anything else."""
    t = text.strip()
    if not _DECIMAL.fullmatch(t):
        raise ValueError(t)
    return Fraction(t)


def _positive(spec: str, text: str, what: str, *, whole: bool = False) -> Fraction:
    try:
        v = _decimal(text)
    except (ValueError, ZeroDivisionError):
        raise _bad(spec, f"{what} must be a {'whole ' if whole else ''}number, got {text!r}") from None
    if v <= 0 or (whole and v.denominator != 1):
        raise _bad(spec, f"{what} must be a {'whole number' if whole else 'number'} above 0, got {text!r}")
    if whole and v >= MAX_COUNT:
        raise _bad(spec, f"{what} must be below 2^31, got {text!r}")
    return v


@dataclass(frozen=True)
class Transform:
    """One transform string, read and checked (:func:`parse_transform`), not yet applied."""

    #: ``scale``, ``days``, ``cores``, ``cap`` or ``drop``.
    name: str
    #: The factor, the number of days, the cores per node or the node count; None for
    #: ``cap``/``drop`` without a number (the fabric's size, known per run).
    value: Fraction | None = None
    #: ``days`` only: the window's first day.
    start: Fraction = Fraction(0)

    @property
    def text(self) -> str:
        """The canonical string, as the workload's settings record it once applied
        (``scale:2.0`` -> ``scale:2``; ``cap`` stays ``cap``)."""
        if self.value is None:
            return self.name
        text = f"{self.name}:{_num_text(self.value)}"
        if self.name == "days" and self.start:
            text += f"@{_num_text(self.start)}"
        return text


def parse_transform(raw: str) -> Transform:
    """Read one transform string (see the module docstring for the syntax); one that
    cannot be read raises :class:`~toposched.errors.InputError` naming it.

    >>> parse_transform(" Scale:2.0 ").text, parse_transform("days:30@1.5").text, parse_transform("cap").text
    ('scale:2', 'days:30@1.5', 'cap')
    """
    spec = raw.strip()
    name, sep, arg = spec.partition(":")
    name = name.strip().lower()
    if name == "scale":
        if not sep:
            raise _bad(spec, "scale needs a factor, e.g. scale:2")
        factor = _positive(spec, arg, "the scale factor")
        if factor.denominator > MAX_SCALE_DENOMINATOR:
            raise _bad(spec, f"the scale factor may have at most 9 decimals, got {arg.strip()!r}")
        if factor >= MAX_COUNT:  # even a 1-node job would have 2^31 nodes
            raise _bad(spec, f"the scale factor must be below 2^31, got {arg.strip()!r}")
        return Transform("scale", factor)
    if name == "days":
        if not sep:
            raise _bad(spec, "days needs a number of days, e.g. days:30 or days:30@60")
        length, at, start = arg.partition("@")
        n = _positive(spec, length, "the number of days")
        s = Fraction(0)
        if at:
            try:
                s = _decimal(start)
            except (ValueError, ZeroDivisionError):
                raise _bad(spec, f"the start day must be a number, got {start!r}") from None
            if s < 0:
                raise _bad(spec, f"the start day must be 0 or more, got {start!r}")
        # beyond 2^63 s the window's bounds are no submit time (days:1e400 failed as an
        # internal error: "integer division result too large for a float")
        for what, v, text in (("the number of days", n, length), ("the start day", s, start), ("the window's end", n + s, arg)):
            if v >= MAX_DAYS:
                raise _bad(spec, f"{what} must be below {MAX_DAYS:,} (2^63 seconds), got {text.strip()!r}")
        return Transform("days", n, s)
    if name == "cores":
        if not sep:
            raise _bad(spec, "cores needs a number of cores per node, e.g. cores:16")
        return Transform("cores", _positive(spec, arg, "cores per node", whole=True))
    if name in ("cap", "drop"):
        return Transform(name, _positive(spec, arg, "the node count", whole=True) if sep else None)
    raise _bad(spec, f"unknown transform {name!r}")


def transforms_for_replay(w: Workload, specs: list[str] | tuple[str, ...], *, fabric_nodes: int | None, source: str) -> Workload:
    """:func:`apply_transforms` before a replay (simulate, contention, compare): a workload
    the transforms leave empty is refused, naming the log ``source`` (an empty replay is
    not a result)."""
    out = apply_transforms(w, specs, fabric_nodes=fabric_nodes)
    if len(out) == 0:
        raise InputError(source, "no jobs left to replay after the transforms " + ", ".join(specs))
    return out


def apply_transforms(w: Workload, specs: list[str] | tuple[str, ...], *, fabric_nodes: int | None = None) -> Workload:
    """Apply transform strings in order (see the module docstring for the syntax).

    ``fabric_nodes`` is what ``cap`` and ``drop`` without a number use. A string that
    cannot be read raises :class:`~toposched.errors.InputError` naming it.
    """
    require_list("apply_transforms", "specs", specs)
    out = w
    for raw in specs:
        t = parse_transform(raw)
        if t.name == "scale":
            assert t.value is not None
            out = scale_nodes(out, t.value)
        elif t.name == "days":
            assert t.value is not None
            out = time_window(out, float(t.value), float(t.start))
        elif t.name == "cores":
            assert t.value is not None
            out = rescale_cores(out, int(t.value))
        else:
            if t.value is not None:
                m = int(t.value)
            elif fabric_nodes is not None:
                m = int(fabric_nodes)
            else:
                raise _bad(raw.strip(), f"{t.name} needs a node count here, e.g. {t.name}:1296")
            out = fit_to_fabric(out, m, t.name)
    if out is w:  # no transforms: still hand back a new workload
        out = _copy(w)
    return out


# --------------------------------------------------------------------------- scenarios


def speedup_fraction(nodes: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """V1/V2 reduction inside a bin [lo, hi]: ``lo + (hi - lo) * min(nodes, 512) / 512``,
    growing linearly with the node count and reaching the top of the bin at 512 nodes."""
    n = np.minimum(np.asarray(nodes, dtype=np.float64), V_FULL_NODES)
    fraction: np.ndarray = lo + (hi - lo) * n / V_FULL_NODES
    return fraction


def _shorten(runtime: np.ndarray, fraction: np.ndarray) -> np.ndarray:
    """``runtime * (1 - fraction)`` rounded to the nearest second (halves up); a job that
    ran at least 1 s keeps at least 1 s."""
    new = np.floor(runtime * (1.0 - fraction) + 0.5).astype(np.int64)
    shortened: np.ndarray = np.maximum(new, np.minimum(runtime, 1))
    return shortened


def apply_scenario(w: Workload, name: str, seed: int = 0) -> Workload:
    """A new workload whose ``runtime_s`` is shortened as scenario ``name`` says.

    * ``none``: unchanged.
    * ``ta5``/``ta10``/``ta20``: jobs of more than 4 nodes run 5/10/20% shorter:
      ``(runtime_s * (100 - x) + 50) // 100`` (nearest second, halves up; exact integers).
    * ``v1``: every job is put at random (equal odds) in one of the bins 0-10%, 0-20%,
      0-30%; ``v2``: jobs of 5-128 nodes in 0-10% or 0-20%, jobs of more than 128 nodes
      in 0-10%, 10-20% or 10-30%, jobs of 1-4 nodes are not sped up. Within bin [lo, hi]
      the reduction is :func:`speedup_fraction`; the new run time is rounded to the
      nearest second (halves up), at least 1 s if it was at least 1 s.

    The random draws use ``numpy.random.default_rng(seed)`` (PCG64): one uniform number
    per job in row order, whatever its size, so the same seed and workload always give the
    same run times. The reduction applied to each job is kept in
    ``extra["speedup_fraction"]`` (and the bin's index in ``extra["speedup_bin"]``, -1
    for none). ``repairs["scenario_sped_up"]`` counts the jobs whose run time got shorter.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) <= SEED_MAX:
        # else NumPy's "SeedSequence expects int or sequence of ints" or "expected non-negative integer"
        raise ValueError(f"apply_scenario(): seed must be a whole number from 0 to 2^64 - 1 (as --seed), got {seed!r}")
    key = str(name).strip().lower()
    if key not in SCENARIOS:
        raise InputError("--scenarios", f"unknown scenario {name!r}; expected one of {', '.join(SCENARIOS)}")
    out = _copy(w)
    nodes = out.columns["nodes"]
    runtime = out.columns["runtime_s"]
    n = len(out)
    frac = np.zeros(n, dtype=np.float64)
    bins = np.full(n, -1, dtype=np.int64)
    record: dict[str, Any] = {"name": key}
    if key in TA_PERCENT:
        x = TA_PERCENT[key]
        sel = nodes > TA_MIN_NODES
        new = runtime.copy()
        new[sel] = (runtime[sel] * (100 - x) + 50) // 100
        frac[sel] = x / 100
        bins[sel] = 0
        record["percent"] = x
    elif key in ("v1", "v2"):
        u = np.random.default_rng(seed).random(n)
        lo = np.zeros(n)
        hi = np.zeros(n)
        if key == "v1":
            groups = [(np.ones(n, dtype=bool), V1_BINS)]
        else:
            mid = (nodes >= V2_MID_RANGE[0]) & (nodes <= V2_MID_RANGE[1])
            groups = [(mid, V2_MID_BINS), (nodes > V2_MID_RANGE[1], V2_LARGE_BINS)]
        for sel, table in groups:
            b = np.minimum((u[sel] * len(table)).astype(np.int64), len(table) - 1)
            bins[sel] = b
            lo[sel] = np.array([t[0] for t in table])[b]
            hi[sel] = np.array([t[1] for t in table])[b]
        sel = bins >= 0
        frac[sel] = speedup_fraction(nodes[sel], lo[sel], hi[sel])
        new = runtime.copy()
        new[sel] = _shorten(runtime[sel], frac[sel])
        record["seed"] = int(seed)
    else:
        new = runtime.copy()
    _count(out.repairs, "scenario_sped_up", int(np.sum(new < runtime)))
    out.columns["runtime_s"] = new
    out.extra["speedup_fraction"] = frac
    out.extra["speedup_bin"] = bins
    out.settings["scenario"] = record
    return out

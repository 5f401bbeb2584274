"""The Python implementation of toposched.summary_stats before it moved to Rust
(crates/toposched-io/src/summary.rs, exact.rs), kept unchanged as the independent
reference of tests/test_native_collect.py. Its own documentation follows.

The summary's statistics of the finished jobs (mean, median, p95 and max of the wait,
the bounded slowdown and the APH, over all jobs and per size bin), computed from chunks
of the job columns, so that a streamed replay (``toposched simulate --stream``) never
holds every value at once, and the same code serves the whole replay: both write the same
summary.json, bit for bit.

* **Counts and maxima** are exact.
* **Means** come from an exact sum and one rounding: integer columns are summed as Python
  integers; float64 columns as the exact integer multiple of 2^-1126 they are (the
  values grouped by binary exponent, their 53-bit mantissas summed in int64 halves), then
  divided by the count with Python's correctly rounded integer division. ``np.mean``
  (pairwise float sums) could differ from that in the last digits; summaries written
  before this module (commit history: ``results._stats``) therefore differ there, once.
* **Median and p95** are ``np.median(x)`` and ``np.percentile(x, 95)`` (linear
  interpolation between the two order statistics around ``0.95 * (n - 1)``, with NumPy's
  own interpolation formula), the order statistics found by a radix selection: each value
  gets an order-preserving unsigned 64-bit key, relative to its group's smallest key, and
  each pass over the columns (re-read chunk by chunk from a caller's source: an array in
  memory, a file's row groups) counts the next 16 bits of the keys that share the
  digits already found. At most four passes, memory 65,536 counts per group and rank.
  One difference with NumPy: -0.0 and 0.0 are one key here (which of two equal zeros
  NumPy's partition leaves at a position is not specified), so a median, a p95 or a max
  that is a zero is always 0.0.
* **NaN**: a column holding NaN has NaN statistics, as with NumPy (the APH has its NaN,
  "no APH", left out before, as the summary always did).

tests/test_summary_stats.py checks every statistic against NumPy and exact fractions on
random arrays split into random chunks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np

#: Job-size bins of the summary: (label, smallest, largest nodes).
SIZE_BINS: tuple[tuple[str, int, int], ...] = (
    ("1", 1, 1),
    ("2-4", 2, 4),
    ("5-16", 5, 16),
    ("17-64", 17, 64),
    ("65-128", 65, 128),
    ("129-256", 129, 256),
    ("257-512", 257, 512),
    ("513-1024", 513, 1024),
    (">1024", 1025, 2**62),
)

#: The columns the summary reads of each finished job (``aph`` NaN: the job has none).
COLUMNS = ("wait_s", "bounded_slowdown", "aph", "nodes")
_STAT_COLUMNS = ("wait_s", "bounded_slowdown", "aph")

#: np.percentile's q for p95: np.true_divide(95, 100), the double nearest 0.95.
_Q95 = np.float64(95) / np.float64(100)
_SIGN = np.uint64(1 << 63)
_DIGIT_BITS = 16
# A finite float64 is an integer multiple of 2^-1126 (mantissa of 53 bits times 2^(e - 53),
# e from frexp at least -1073): exact sums are kept as that integer.
_FLOAT_SCALE_BITS = 1126
_HALF_BITS = 26  # mantissas are summed as two int64 halves (no overflow up to 2^36 values)

Chunk = Mapping[str, np.ndarray]
Source = Callable[[], Iterable[Chunk]]


def float_keys(x: np.ndarray) -> np.ndarray:
    """Order-preserving uint64 keys of float64 values without NaN (-0.0 is 0.0's key)."""
    bits = np.where(x == 0, 0.0, x).astype(np.float64, copy=False).view(np.uint64)
    neg = (bits & _SIGN) != 0
    return np.where(neg, ~bits, bits | _SIGN)


def int_keys(x: np.ndarray) -> np.ndarray:
    """Order-preserving uint64 keys of int64 values."""
    return np.asarray(x, dtype=np.int64).view(np.uint64) ^ _SIGN


def _key_value(key: int, kind: str) -> Any:
    """The value (a NumPy scalar of the column's type) whose key is ``key``."""
    k = np.array([key], dtype=np.uint64)
    if kind == "i":
        return (k ^ _SIGN).view(np.int64)[0]
    bits = np.where((k & _SIGN) != 0, k ^ _SIGN, ~k)
    return bits.view(np.float64)[0]


def exact_float_sum(x: np.ndarray) -> int:
    """The sum of finite float64 values, exactly, as an integer multiple of 2^-1126."""
    if len(x) == 0:
        return 0
    m, e = np.frexp(np.asarray(x, dtype=np.float64))
    mant = (m * 2.0**53).astype(np.int64)  # exact: m holds at most 53 significant bits
    shift = e.astype(np.int64) + (_FLOAT_SCALE_BITS - 53)  # >= 0
    order = np.argsort(shift.astype(np.int16), kind="stable")  # 0..2097: NumPy's radix sort
    shift = shift[order]
    mant = mant[order]
    starts = np.flatnonzero(np.r_[True, shift[1:] != shift[:-1]])
    hi = np.add.reduceat(mant >> _HALF_BITS, starts)
    lo = np.add.reduceat(mant & ((1 << _HALF_BITS) - 1), starts)
    total = 0
    for s, h, lw in zip(shift[starts].tolist(), hi.tolist(), lo.tolist()):
        total += ((h << _HALF_BITS) + lw) << s
    return total


def exact_int_sum(x: np.ndarray) -> int:
    """The sum of int64 values, exactly (two int64 halves: no overflow)."""
    x = np.asarray(x, dtype=np.int64)
    return (int(np.sum(x >> 32, dtype=np.int64)) << 32) + int(np.sum(x & 0xFFFFFFFF, dtype=np.int64))


@dataclass
class _Acc:
    """Count, exact sum, extremes and NaN of one column in one group, and (while the run
    is small: :data:`KEEP_ROWS`) the keys themselves, so that no pass is needed."""

    kind: str  # "i" or "f"
    n: int = 0
    total: int = 0
    nan: bool = False
    pos_inf: bool = False
    neg_inf: bool = False
    key_min: int | None = None
    key_max: int | None = None
    keys: list[np.ndarray] | None = field(default_factory=list)

    def add(self, x: np.ndarray) -> None:
        if len(x) == 0:
            return
        self.n += len(x)
        if self.kind == "i":
            self.total += exact_int_sum(x)
            keys = int_keys(x)
        else:
            finite = np.isfinite(x)
            if not finite.all():
                self.nan |= bool(np.isnan(x).any())
                self.pos_inf |= bool((x == np.inf).any())
                self.neg_inf |= bool((x == -np.inf).any())
                self.total += exact_float_sum(x[finite])
                x = x[~np.isnan(x)]
                if len(x) == 0:
                    return
            else:
                self.total += exact_float_sum(x)
            keys = float_keys(x)
        self._extremes(int(keys.min()), int(keys.max()))
        if self.keys is not None:
            self.keys.append(keys)

    def _extremes(self, lo: int | None, hi: int | None) -> None:
        if lo is None or hi is None:
            return
        self.key_min = lo if self.key_min is None else min(self.key_min, lo)
        self.key_max = hi if self.key_max is None else max(self.key_max, hi)

    def merge(self, other: _Acc) -> None:
        self.n += other.n
        self.total += other.total
        self.nan |= other.nan
        self.pos_inf |= other.pos_inf
        self.neg_inf |= other.neg_inf
        self._extremes(other.key_min, other.key_max)
        if self.keys is not None and other.keys is not None:
            self.keys.extend(other.keys)
        else:
            self.keys = None

    def mean(self) -> float:
        if self.nan or (self.pos_inf and self.neg_inf):
            return float("nan")
        if self.pos_inf or self.neg_inf:
            return float("inf") if self.pos_inf else float("-inf")
        if self.kind == "i":
            return self.total / self.n  # correctly rounded (Python's int division)
        return self.total / (self.n << _FLOAT_SCALE_BITS)

    def max(self) -> float:
        if self.nan:
            return float("nan")
        assert self.key_max is not None
        return float(_key_value(self.key_max, self.kind))


def _ranks(n: int) -> tuple[list[int], list[int]]:
    """Positions (0-based, ascending order) of the median's and the p95's order statistics."""
    median = [n // 2] if n % 2 else [n // 2 - 1, n // 2]
    v = (n - 1) * _Q95
    if v >= n - 1:
        p95 = [n - 1]
    else:
        lo = int(np.floor(v))
        p95 = [lo, lo + 1]
    return median, p95


def _median_of(values: list[Any], dtype: np.dtype[Any]) -> float:
    """np.median of the middle order statistic(s): NumPy takes their mean (inf past the
    float limit, as np.median gives, without its warning)."""
    with np.errstate(all="ignore"):
        return float(np.mean(np.array(values, dtype=dtype)))


def _p95_of(values: list[Any], n: int, dtype: np.dtype[Any]) -> float:
    """np.percentile(x, 95) from the order statistics around ``0.95 * (n - 1)``: NumPy's
    ``_lerp`` (a + (b - a) * t below t = 0.5, b - (b - a) * (1 - t) from it)."""
    if len(values) == 1:  # n = 1: NumPy's weight is then 1.0 (index 0 less index -1)
        values, t = [values[0], values[0]], 1.0
    else:
        v = (n - 1) * _Q95
        t = float(v - np.floor(v))
    a = np.array(values[0], dtype=dtype)
    b = np.array(values[1], dtype=dtype)
    with np.errstate(all="ignore"):  # NumPy's arrays wrap and make NaN silently too
        diff = np.subtract(b, a)
        if t >= 0.5:
            return float(np.subtract(b, diff * (1 - t), dtype=np.float64))
        return float(np.add(a, diff * t, dtype=np.float64))


#: Rows up to which the streamed replay's accumulators keep every key (24 bytes a row):
#: medians and p95s then need no pass over the rows again. The whole replay keeps them
#: all (its columns are in memory anyway: a pass per 16 bits would cost it seconds at
#: millions of jobs). Either way the same order statistics, exactly.
KEEP_ROWS = 1 << 19

#: A selection bucket of at most this many keys is gathered in one pass and finished by
#: np.partition, instead of one more pass per 16 bits.
GATHER_KEYS = 1 << 19

_N_GROUPS = len(SIZE_BINS) + 1  # 0: jobs in no bin (no nodes), then the bins
_BIN_LOWS = np.array([lo for _, lo, _ in SIZE_BINS], dtype=np.int64)
_BIN_HIGHS = np.array([hi for _, _, hi in SIZE_BINS], dtype=np.int64)
_ALL = -1  # the group of every job


def _by_bin(nodes: np.ndarray) -> tuple[np.ndarray | None, list[tuple[int, int, int]]]:
    """A permutation putting the rows in bin order (None: already are), and each present
    bin's (bin, first, end) slice in that order; bin 0 is "in no bin" (no nodes)."""
    b = np.searchsorted(_BIN_LOWS, nodes, side="right")
    b = np.where((b >= 1) & (nodes <= _BIN_HIGHS[np.maximum(b - 1, 0)]), b, 0)
    counts = np.bincount(b, minlength=_N_GROUPS)
    order = None if len(b) < 2 or bool(np.all(b[1:] >= b[:-1])) else np.argsort(b.astype(np.int8), kind="stable")  # radix sort
    bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
    return order, [(g, bounds[g], bounds[g + 1]) for g in range(_N_GROUPS) if counts[g]]


def _column(chunk: Chunk, c: str, order: np.ndarray | None) -> np.ndarray:
    x = np.asarray(chunk[c], dtype=np.int64 if c == "wait_s" else np.float64)
    return x if order is None else x[order]


@dataclass
class _Target:
    """One order statistic being selected: ``position`` among the group's values, its
    ``rank`` among the keys that share the high bits found so far, ``count`` of those
    keys; ``known`` is its key relative to the group's smallest, shifted right by
    ``low_bits`` (0: found)."""

    position: int
    rank: int
    count: int
    low_bits: int
    known: int = 0


@dataclass
class SummaryStats:
    """Accumulators of the summary's statistics: :meth:`add` each chunk of finished jobs
    (any split), then :meth:`finish` with a source that yields the same rows again, chunk
    by chunk (read only when the run has more than :data:`KEEP_ROWS` jobs)."""

    bins: dict[int, dict[str, _Acc]] = field(default_factory=dict)
    nodes_max: dict[int, int] = field(default_factory=dict)
    rows: int = 0
    #: keep every key however many rows (the whole replay), not only up to KEEP_ROWS
    keep_all: bool = False

    def add(self, chunk: Chunk) -> None:
        nodes = np.asarray(chunk["nodes"], dtype=np.int64)
        if len(nodes) == 0:
            return
        self.rows += len(nodes)
        keep = self.keep_all or self.rows <= KEEP_ROWS
        order, slices = _by_bin(nodes)
        nodes = nodes if order is None else nodes[order]
        for c in _STAT_COLUMNS:
            x = _column(chunk, c, order)
            for g, a, b in slices:
                accs = self.bins.get(g)
                if accs is None:
                    accs = self.bins[g] = {cc: _Acc("i" if cc == "wait_s" else "f") for cc in _STAT_COLUMNS}
                part = x[a:b]
                accs[c].add(part[~np.isnan(part)] if c == "aph" else part)
        for g, a, b in slices:
            m = int(nodes[a:b].max())
            self.nodes_max[g] = max(self.nodes_max.get(g, m), m)
        if not keep:
            for accs in self.bins.values():
                for acc in accs.values():
                    acc.keys = None

    def finish(self, source: Source) -> dict[str, Any]:
        """The summary's ``wait_s``, ``bounded_slowdown``, ``aph`` and ``by_size`` blocks."""
        groups: dict[int, dict[str, _Acc]] = dict(self.bins)
        if self.bins:
            every = {c: _Acc("i" if c == "wait_s" else "f") for c in _STAT_COLUMNS}
            for accs in self.bins.values():
                for c in _STAT_COLUMNS:
                    every[c].merge(accs[c])
            groups[_ALL] = every
        found: dict[tuple[int, str], dict[int, int]] = {}
        targets: dict[tuple[int, str], list[_Target]] = {}
        for g, accs in groups.items():
            if g == 0:
                continue  # jobs in no bin count in the whole only
            for c, acc in accs.items():
                if acc.n == 0 or acc.nan:
                    continue
                assert acc.key_min is not None and acc.key_max is not None
                median, p95 = _ranks(acc.n)
                positions = sorted(set(median + p95))
                if acc.keys is not None:  # every key at hand
                    keys = np.concatenate(acc.keys) if len(acc.keys) > 1 else acc.keys[0]
                    part = np.partition(keys, positions)
                    found[(g, c)] = {p: int(part[p]) - acc.key_min for p in positions}
                else:
                    bits = (acc.key_max - acc.key_min).bit_length()
                    targets[(g, c)] = [_Target(p, p, acc.n, bits) for p in positions]
        if targets:
            _select(targets, {k: groups[k[0]][k[1]].key_min for k in targets}, source)
            for key, ts in targets.items():
                found[key] = {t.position: t.known for t in ts}

        def stats(g: int, c: str) -> dict[str, float | None]:
            acc = groups[g][c]
            if acc.n == 0:
                return stats_empty()
            if acc.nan:
                nan = float("nan")
                return {"mean": nan, "median": nan, "p95": nan, "max": nan}
            assert acc.key_min is not None
            dtype = np.dtype(np.int64 if acc.kind == "i" else np.float64)
            value = {p: _key_value(acc.key_min + k, acc.kind) for p, k in found[(g, c)].items()}
            median, p95 = _ranks(acc.n)
            return {
                "mean": acc.mean(),
                "median": _median_of([value[p] for p in median], dtype),
                "p95": _p95_of([value[p] for p in p95], acc.n, dtype),
                "max": acc.max(),
            }

        out: dict[str, Any] = {c: stats(_ALL, c) if _ALL in groups else stats_empty() for c in _STAT_COLUMNS}
        by_size = []
        for b, (label, lo, hi) in enumerate(SIZE_BINS, 1):
            if b not in groups:
                continue
            by_size.append(
                {
                    "bin": label,
                    "min_nodes": lo,
                    "max_nodes": min(hi, self.nodes_max[b]),
                    "jobs": groups[b]["wait_s"].n,
                    **{c: stats(b, c) for c in _STAT_COLUMNS},
                }
            )
        out["by_size"] = by_size
        return out


def stats_empty() -> dict[str, float | None]:
    return {"mean": None, "median": None, "p95": None, "max": None}


def summary_stats(chunks: Source, *, keep_all: bool = False) -> dict[str, Any]:
    """The statistics blocks of the summary for the rows ``chunks()`` yields (called
    once, then once per selection pass when the run is large and ``keep_all`` is not
    set)."""
    acc = SummaryStats(keep_all=keep_all)
    for chunk in chunks():
        acc.add(chunk)
    return acc.finish(chunks)


def _select(targets: dict[tuple[int, str], list[_Target]], key_min: dict[tuple[int, str], int | None], source: Source) -> None:
    """Radix selection: passes over the rows, each counting the next 16 bits of the keys
    that share the bits found so far (or gathering them, when they are few), until
    every target's key is known (at most four passes)."""
    while True:
        # buckets: (group, column, known, low bits) -> gather (True) or count (False)
        buckets: dict[tuple[int, str, int, int], bool] = {}
        for (g, c), ts in targets.items():
            for t in ts:
                if t.low_bits > 0:
                    buckets[(g, c, t.known, t.low_bits)] = t.count <= GATHER_KEYS
        if not buckets:
            return
        hists: dict[tuple[int, str, int, int], np.ndarray] = {}
        gathered: dict[tuple[int, str, int, int], list[np.ndarray]] = {k: [] for k, gather in buckets.items() if gather}
        for chunk in source():
            nodes = np.asarray(chunk["nodes"], dtype=np.int64)
            if len(nodes) == 0:
                continue
            order, slices = _by_bin(nodes)
            present = {g: (a, b) for g, a, b in slices}
            present[_ALL] = (0, len(nodes))
            for c in _STAT_COLUMNS:
                mine = [k for k in buckets if k[1] == c and k[0] in present]
                if not mine:
                    continue
                x = _column(chunk, c, order)
                for g in sorted({k[0] for k in mine}):
                    a, b = present[g]
                    part = x[a:b]
                    if c == "aph":
                        part = part[~np.isnan(part)]
                    kmin = key_min[(g, c)]
                    assert kmin is not None
                    rel = (int_keys(part) if c == "wait_s" else float_keys(part)) - np.uint64(kmin)
                    for k in mine:
                        if k[0] != g:
                            continue
                        _, _, known, low = k
                        match = rel[(rel >> np.uint64(low)) == np.uint64(known)] if low < 64 else rel
                        if buckets[k]:
                            gathered[k].append(match & np.uint64((1 << low) - 1) if low < 64 else match)
                            continue
                        width = min(_DIGIT_BITS, low)
                        digits = ((match >> np.uint64(low - width)) & np.uint64((1 << width) - 1)).astype(np.int64)
                        h = np.bincount(digits, minlength=1 << width)
                        hists[k] = h if k not in hists else hists[k] + h
        for (g, c), ts in targets.items():
            for t in ts:
                k = (g, c, t.known, t.low_bits)
                if t.low_bits == 0:
                    continue
                if buckets[k]:
                    low_keys = np.concatenate(gathered[k]) if gathered[k] else np.zeros(0, np.uint64)
                    t.known = (t.known << t.low_bits) | int(np.partition(low_keys, t.rank)[t.rank])
                    t.low_bits = 0
                    continue
                width = min(_DIGIT_BITS, t.low_bits)
                cum = np.cumsum(hists[k])
                d = int(np.searchsorted(cum, t.rank, side="right"))
                t.rank -= int(cum[d - 1]) if d else 0
                t.count = int(hists[k][d])
                t.known = (t.known << width) | d
                t.low_bits -= width

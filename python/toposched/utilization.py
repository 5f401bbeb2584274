"""Busy nodes over time, kept as the changes of a step function.

A run's utilization is sampled every ``step_s`` seconds from its first submit to its last
end (``utilization.parquet``). Holding the samples costs memory in proportion to the time
span (two jobs 300 years apart: gigabytes); holding the instants where the busy count
changes costs memory in proportion to the jobs. Samples are made only when written, a
chunk at a time, and are exactly those of the per-sample rule: a job counts at ``t`` when
``start <= t < end`` (a zero-length job never counts; a job with a negative start is
ignored, as the engine's own sampler did).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa

#: Samples per chunk when writing, and the row-group size of utilization.parquet (the
#: default pyarrow uses, so the file is the one ``pq.write_table`` wrote before).
CHUNK_SAMPLES = 1024 * 1024

SCHEMA = pa.schema([("time_s", pa.int64()), ("busy_nodes", pa.int64()), ("utilization", pa.float64())])


class SampledUtilization:
    """Busy nodes sampled at ``t0, t0 + step_s, ...`` up to ``t1`` inclusive, written a
    chunk at a time: what utilization.parquet and the summary read, whichever way the
    samples are held (:class:`UtilizationSeries`, :class:`BusySamples`)."""

    t0: int
    t1: int
    step_s: int
    n_nodes: int

    def busy_at(self, k0: int, k1: int) -> np.ndarray:
        """Busy nodes at samples ``k0 <= k < k1`` (int64)."""
        raise NotImplementedError

    @property
    def n_samples(self) -> int:
        return (self.t1 - self.t0) // self.step_s + 1 if self.t1 >= self.t0 else 0

    def arrays(self, size: int = CHUNK_SAMPLES) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The samples as ``(time_s, busy_nodes, utilization)`` arrays of at most ``size``
        samples (none for an empty run)."""
        n = self.n_samples
        for k0 in range(0, n, size):
            k1 = min(n, k0 + size)
            busy = self.busy_at(k0, k1)
            times = self.t0 + self.step_s * np.arange(k0, k1, dtype=np.int64)
            util = busy / max(self.n_nodes, 1)
            yield times, busy, util

    def chunks(self, size: int = CHUNK_SAMPLES) -> Iterator[pa.Table]:
        """The samples as tables of at most ``size`` rows (none for an empty run)."""
        for times, busy, util in self.arrays(size):
            yield pa.table({"time_s": pa.array(times), "busy_nodes": pa.array(busy), "utilization": pa.array(util)})

    def table(self) -> pa.Table:
        """Every sample in one table (memory in proportion to the span: for small runs)."""
        parts = list(self.chunks())
        return pa.concat_tables(parts) if parts else SCHEMA.empty_table()

    def mean(self) -> float | None:
        """Mean utilization over the samples, bit for bit what ``np.mean`` of the whole
        sample array gives, without making that array: NumPy sums a float64 array
        pairwise (halves split at a multiple of 8, down to blocks it sums directly), so
        summing the same halves here, a chunk of samples at a time, gives the same
        number."""
        n = self.n_samples
        if n == 0:
            return None
        return self._pairwise_sum(0, n) / n

    def _pairwise_sum(self, k0: int, n: int) -> float:
        if n <= CHUNK_SAMPLES:
            return float(np.add.reduce(self.busy_at(k0, k0 + n) / max(self.n_nodes, 1)))
        half = n // 2
        half -= half % 8
        return self._pairwise_sum(k0, half) + self._pairwise_sum(k0 + half, n - half)


@dataclass(frozen=True)
class UtilizationSeries(SampledUtilization):
    """``busy[i]`` nodes are busy from ``change_s[i]`` until ``change_s[i + 1]`` (0 before
    the first change); sampled at ``t0, t0 + step_s, ...`` up to ``t1`` inclusive."""

    change_s: np.ndarray
    busy: np.ndarray
    t0: int
    t1: int
    step_s: int
    n_nodes: int

    @classmethod
    def from_jobs(cls, start: np.ndarray, end: np.ndarray, nodes: np.ndarray, t0: int, t1: int, step_s: int, n_nodes: int) -> "UtilizationSeries":
        if step_s <= 0:
            raise ValueError("step_s must be positive")
        start = np.asarray(start, np.int64)
        end = np.asarray(end, np.int64)
        nodes = np.asarray(nodes, np.int64)
        keep = (start >= 0) & (end > start)
        times = np.concatenate([start[keep], end[keep]])
        delta = np.concatenate([nodes[keep], -nodes[keep]])
        order = np.argsort(times, kind="stable")
        times = times[order]
        level = np.cumsum(delta[order])
        last = np.ones(len(times), dtype=bool)  # the level after all changes at an instant
        if len(times):
            last[:-1] = times[1:] != times[:-1]
        return cls(times[last], level[last], int(t0), int(t1), int(step_s), int(n_nodes))

    def busy_at(self, k0: int, k1: int) -> np.ndarray:
        """Busy nodes at samples ``k0 <= k < k1`` (int64)."""
        if k1 <= k0:
            return np.zeros(0, np.int64)
        # Change i holds from the first sample at or after change_s[i]: sample
        # ceil((change_s[i] - t0) / step_s). Samples are regular, so each change's level
        # is repeated over its run of samples (a copy, not a search per sample).
        first_k = -((self.t0 - self.change_s) // self.step_s)
        lo = int(np.searchsorted(first_k, k0, side="right"))  # changes in force at k0: [.., lo)
        hi = max(lo, int(np.searchsorted(first_k, k1, side="left")))  # changes starting inside: [lo, hi)
        levels = np.empty(hi - lo + 1, np.int64)
        levels[0] = self.busy[lo - 1] if lo > 0 else 0
        levels[1:] = self.busy[lo:hi]
        bounds = np.empty(hi - lo + 2, np.int64)
        bounds[0], bounds[-1] = k0, k1
        bounds[1:-1] = first_k[lo:hi]
        return np.repeat(levels, np.diff(bounds))



class BusySamples(SampledUtilization):
    """The samples of a streamed replay, made as its jobs finish (:meth:`add`), kept as
    the change of the busy count at each sample (int32). The samples are those of
    :class:`UtilizationSeries` (a job counts at sample ``k`` when ``start <= t0 + k *
    step_s < end``): the same files and means, bit for bit (tests/test_stream_simulate.py).

    A change is at most the fabric's node count either way (below 2^31), so int32 holds
    it; adding wraps modulo 2^32 on the way, which leaves the sum exact.

    Memory: samples no job can change any more (:meth:`final_before`: before the submit
    of the oldest job the engine still holds) are appended to ``spill`` (a file, 4 bytes
    a sample) once there are :data:`SPILL_SAMPLES` of them, so only the samples from
    there to the latest end are held; without ``spill``, every sample of the span."""

    #: Final samples written out at once (fewer stay in memory until there are more).
    SPILL_SAMPLES = 1 << 20

    def __init__(self, t0: int, step_s: int, n_nodes: int, spill: Path | None = None) -> None:
        if step_s <= 0:
            raise ValueError("step_s must be positive")
        self.t0, self.t1, self.step_s, self.n_nodes = int(t0), int(t0) - 1, int(step_s), int(n_nodes)
        self._delta = np.zeros(1024, np.int32)  # busy[k] - busy[k - 1], from sample _base
        self._base = 0  # samples before it are in the spill file
        self._spill = spill
        self._cursor = (0, 0)  # (k, busy before sample k): busy_at is read in ascending order

    def add(self, start: np.ndarray, end: np.ndarray, nodes: np.ndarray) -> None:
        """Finished jobs; ``t1`` becomes the latest end so far."""
        if len(end):
            self.t1 = max(self.t1, int(end.max()))
        start = np.asarray(start, np.int64)
        end = np.asarray(end, np.int64)
        keep = (start >= 0) & (end > start)
        # the first sample at or after each instant (samples before t0 count from 0)
        k0 = np.maximum(-((self.t0 - start[keep]) // self.step_s), 0) - self._base
        k1 = np.maximum(-((self.t0 - end[keep]) // self.step_s), 0) - self._base
        if len(k0) and int(k0.min()) < 0:
            raise AssertionError("a job starts in samples already written out (final_before was wrong)")
        need = max(int(k1.max()) + 1 if len(k1) else 0, self.n_samples + 1 - self._base)
        if need > len(self._delta):
            grown = np.zeros(max(need, len(self._delta) * 5 // 4), np.int32)
            grown[: len(self._delta)] = self._delta
            self._delta = grown
        w = np.asarray(nodes, np.int64)[keep].astype(np.int32)
        with np.errstate(over="ignore"):
            np.add.at(self._delta, k0, w)
            np.add.at(self._delta, k1, -w)
        self._cursor = (0, 0)

    def final_before(self, k: int) -> None:
        """No job added from now on counts at a sample before ``k`` (the streamed replay:
        every job still to come is submitted at or after ``t0 + k * step_s``, rounded up
        to a sample)."""
        m = min(k - self._base, len(self._delta))
        if self._spill is None or m < self.SPILL_SAMPLES:
            return
        with open(self._spill, "ab") as f:
            f.write(self._delta[:m].tobytes())
        self._delta = self._delta[m:].copy()
        self._base += m

    def _changes(self, a: int, b: int) -> np.ndarray:
        """The changes at samples ``a <= k < b``, from the file or memory."""
        parts = []
        if a < self._base:
            assert self._spill is not None
            n = min(b, self._base) - a
            parts.append(np.fromfile(self._spill, dtype=np.int32, count=n, offset=4 * a))
        if b > self._base:
            lo = max(a, self._base) - self._base
            parts.append(self._delta[lo : b - self._base])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def busy_at(self, k0: int, k1: int) -> np.ndarray:
        if k1 <= k0:
            return np.zeros(0, np.int64)
        k, level = self._cursor
        if k0 < k:
            k, level = 0, 0
        for a in range(k, k0, CHUNK_SAMPLES):  # (in pieces: the file's part need not fit)
            level += int(np.sum(self._changes(a, min(a + CHUNK_SAMPLES, k0)), dtype=np.int64))
        busy = np.cumsum(self._changes(k0, k1), dtype=np.int64)
        busy += level
        self._cursor = (k1, int(busy[-1]))
        return busy

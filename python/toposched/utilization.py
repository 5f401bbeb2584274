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
from typing import Iterator

import numpy as np
import pyarrow as pa

#: Samples per chunk when writing, and the row-group size of utilization.parquet (the
#: default pyarrow uses, so the file is the one ``pq.write_table`` wrote before).
CHUNK_SAMPLES = 1024 * 1024

SCHEMA = pa.schema([("time_s", pa.int64()), ("busy_nodes", pa.int64()), ("utilization", pa.float64())])


@dataclass(frozen=True)
class UtilizationSeries:
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

    @property
    def n_samples(self) -> int:
        return (self.t1 - self.t0) // self.step_s + 1 if self.t1 >= self.t0 else 0

    def busy_at(self, k0: int, k1: int) -> np.ndarray:
        """Busy nodes at samples ``k0 <= k < k1`` (int64)."""
        times = self.t0 + self.step_s * np.arange(k0, k1, dtype=np.int64)
        i = np.searchsorted(self.change_s, times, side="right") - 1
        return np.where(i >= 0, self.busy[np.maximum(i, 0)] if len(self.busy) else 0, 0).astype(np.int64)

    def chunks(self, size: int = CHUNK_SAMPLES) -> Iterator[pa.Table]:
        """The samples as tables of at most ``size`` rows (none for an empty run)."""
        n = self.n_samples
        for k0 in range(0, n, size):
            k1 = min(n, k0 + size)
            busy = self.busy_at(k0, k1)
            times = self.t0 + self.step_s * np.arange(k0, k1, dtype=np.int64)
            util = busy / max(self.n_nodes, 1)
            yield pa.table({"time_s": pa.array(times), "busy_nodes": pa.array(busy), "utilization": pa.array(util)})

    def table(self) -> pa.Table:
        """Every sample in one table (memory in proportion to the span: for small runs)."""
        parts = list(self.chunks())
        return pa.concat_tables(parts) if parts else SCHEMA.empty_table()

    def mean(self) -> float | None:
        """Mean utilization over the samples. Up to one chunk it is computed exactly as
        the samples' mean; beyond, from the changes, in exact integer arithmetic."""
        n = self.n_samples
        if n == 0:
            return None
        if n <= CHUNK_SAMPLES:
            return float(np.mean(self.busy_at(0, n) / max(self.n_nodes, 1)))
        # samples before instant x: k with t0 + k*step < x, i.e. ceil((x - t0) / step), within [0, n]
        def before(x: np.ndarray) -> np.ndarray:
            return np.clip(-((self.t0 - x) // self.step_s), 0, n)

        ends = np.append(self.change_s[1:], np.iinfo(np.int64).max // 2)
        counts = before(ends) - before(self.change_s)
        # at most 2^24 busy nodes x 2^33 samples (1 s over the 1970-2200 window): fits int64
        total = int(np.dot(self.busy.astype(np.int64), counts.astype(np.int64)))
        return total / n / max(self.n_nodes, 1)

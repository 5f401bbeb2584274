"""Busy nodes over time, kept as the changes of a step function.

A run's utilization is sampled every ``step_s`` seconds from its first submit to its last
end (``utilization.parquet``). Holding the samples costs memory in proportion to the time
span (two jobs 300 years apart: gigabytes); holding the instants where the busy count
changes costs memory in proportion to the jobs. Samples are made only when written, a
chunk at a time, and are exactly those of the per-sample rule: a job counts at ``t`` when
``start <= t < end`` (a zero-length job never counts; a job with a negative start is
ignored, as the engine's own sampler did).

The samples and their mean are made in Rust (crates/toposched-io/src/utilization.rs,
through ``_core``): the whole replay's file is written there too
(:meth:`UtilizationSeries.write`); this module gives the streamed replay's samples to the
writer as arrays, and API users their table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from . import _core

if TYPE_CHECKING:  # the tables are for API users: the files are written from the arrays
    import pyarrow as pa

#: Samples per chunk when writing, and the row-group size of utilization.parquet (the
#: default pyarrow uses, so the file is the one ``pq.write_table`` wrote before): 2^20,
#: the chunk the native mean reads samples by too.
CHUNK_SAMPLES: int = _core.UTILIZATION_CHUNK_SAMPLES



def __getattr__(name: str) -> Any:
    """``SCHEMA``, utilization.parquet's columns, made at its first use (no PyArrow import
    for a replay that only writes the file)."""
    if name != "SCHEMA":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import pyarrow as pa

    schema = pa.schema([("time_s", pa.int64()), ("busy_nodes", pa.int64()), ("utilization", pa.float64())])
    globals()["SCHEMA"] = schema
    return schema


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


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
        import pyarrow as pa

        for times, busy, util in self.arrays(size):
            yield pa.table({"time_s": pa.array(times), "busy_nodes": pa.array(busy), "utilization": pa.array(util)})

    def table(self) -> pa.Table:
        """Every sample in one table (memory in proportion to the span: for small runs)."""
        import pyarrow as pa

        parts = list(self.chunks())
        return pa.concat_tables(parts) if parts else __getattr__("SCHEMA").empty_table()

    def mean(self) -> float | None:
        """Mean utilization over the samples, bit for bit what ``np.mean`` of the whole
        sample array gives, without making that array (NumPy's pairwise sum, its halves
        summed a chunk of samples at a time, in Rust)."""
        raise NotImplementedError


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
        change_s, busy = _core.utilization_changes(_i64(start), _i64(end), _i64(nodes), int(step_s))
        return cls(change_s, busy, int(t0), int(t1), int(step_s), int(n_nodes))

    def busy_at(self, k0: int, k1: int) -> np.ndarray:
        """Busy nodes at samples ``k0 <= k < k1`` (int64)."""
        return _core.utilization_busy_at(_i64(self.change_s), _i64(self.busy), self.t0, self.step_s, max(int(k0), 0), max(int(k1), 0))

    def mean(self) -> float | None:
        return _core.utilization_mean(_i64(self.change_s), _i64(self.busy), self.t0, self.t1, self.step_s, self.n_nodes)

    def write(self, path: str, metadata: list[tuple[str, str]]) -> int:
        """utilization.parquet of the samples, made and written in Rust (the file
        :meth:`arrays` gives, without the arrays); the number of samples."""
        return _core.write_utilization_series(path, metadata, _i64(self.change_s), _i64(self.busy), self.t0, self.t1, self.step_s, self.n_nodes)


class BusySamples(SampledUtilization):
    """The samples of a streamed replay, made as its jobs finish (:meth:`add`), kept as
    the change of the busy count at each sample (int32). The samples are those of
    :class:`UtilizationSeries` (a job counts at sample ``k`` when ``start <= t0 + k *
    step_s < end``): the same files and means, bit for bit (tests/test_stream_simulate.py).

    Memory: samples no job can change any more (:meth:`final_before`: before the submit
    of the oldest job the engine still holds) are appended to ``spill`` (a file, 4 bytes
    a sample) once there are :data:`SPILL_SAMPLES` of them, so only the samples from
    there to the latest end are held; without ``spill``, every sample of the span."""

    #: Final samples written out at once (fewer stay in memory until there are more).
    SPILL_SAMPLES: int = _core.UTILIZATION_SPILL_SAMPLES

    def __init__(self, t0: int, step_s: int, n_nodes: int, spill: Path | None = None) -> None:
        self._native = _core.BusySamples(int(t0), int(step_s), int(n_nodes), None if spill is None else str(spill))
        self.step_s, self.n_nodes = int(step_s), int(n_nodes)

    @property
    def t0(self) -> int:
        return int(self._native.t0)

    @t0.setter
    def t0(self, value: int) -> None:
        self._native.t0 = int(value)

    @property
    def t1(self) -> int:
        return int(self._native.t1)

    @t1.setter
    def t1(self, value: int) -> None:
        self._native.t1 = int(value)

    @property
    def _base(self) -> int:
        """Samples before it are in the spill file."""
        return int(self._native.base)

    def add(self, start: np.ndarray, end: np.ndarray, nodes: np.ndarray) -> None:
        """Finished jobs; ``t1`` becomes the latest end so far."""
        self._native.add(_i64(start), _i64(end), _i64(nodes))

    def final_before(self, k: int) -> None:
        """No job added from now on counts at a sample before ``k`` (the streamed replay:
        every job still to come is submitted at or after ``t0 + k * step_s``, rounded up
        to a sample)."""
        self._native.final_before(int(k), int(self.SPILL_SAMPLES))

    def busy_at(self, k0: int, k1: int) -> np.ndarray:
        return self._native.busy_at(max(int(k0), 0), max(int(k1), 0))

    def mean(self) -> float | None:
        return self._native.mean()

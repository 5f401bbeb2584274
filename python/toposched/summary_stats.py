"""The summary's statistics of the finished jobs (mean, median, p95 and max of the wait,
the bounded slowdown and the APH, over all jobs and per size bin), computed from chunks
of the job columns, so that a streamed replay (``toposched simulate --stream``) never
holds every value at once, and the same code serves the whole replay: both write the same
summary.json, bit for bit.

The work is done in Rust (crates/toposched-io/src/summary.rs and exact.rs, through
``_core.SummaryStats``); this module hands it the chunks:

* **Counts and maxima** are exact.
* **Means** come from an exact sum and one rounding: the exact rational mean correctly
  rounded (the float64 values summed exactly as integer multiples of 2^-1126), as
  Python's ``int / int`` of the exact sum gives. ``np.mean`` (pairwise float sums) could
  differ from that in the last digits.
* **Median and p95** are ``np.median(x)`` and ``np.percentile(x, 95)`` (linear
  interpolation between the two order statistics around ``0.95 * (n - 1)``, with NumPy's
  own interpolation formula), the order statistics found exactly: from every key while the
  run keeps them (the whole replay; a streamed one up to :data:`KEEP_ROWS` rows), else by a
  radix selection, each pass over the columns (re-read chunk by chunk from a caller's
  source: an array in memory, a file's row groups) counting the next 16 bits of the
  order-preserving keys that share the digits already found (a bucket of at most
  :data:`GATHER_KEYS` keys gathered at once). At most four passes. -0.0 and 0.0 are one
  key, so a median, a p95 or a max that is a zero is always 0.0.
* **NaN**: a column holding NaN has NaN statistics, as with NumPy (the APH has its NaN,
  "no APH", left out before, as the summary always did).

tests/test_summary_stats.py checks every statistic against NumPy and exact fractions on
random arrays split into random chunks; tests/test_native_collect.py against the Python
implementation this replaced (tests/summary_stats_reference.py).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np

from . import _core

#: Job-size bins of the summary: (label, smallest, largest nodes).
SIZE_BINS: tuple[tuple[str, int, int], ...] = tuple(_core.SUMMARY_SIZE_BINS)

#: The columns the summary reads of each finished job (``aph`` NaN: the job has none).
COLUMNS = ("wait_s", "bounded_slowdown", "aph", "nodes")

#: Rows up to which the streamed replay's accumulators keep every key (24 bytes a row):
#: medians and p95s then need no pass over the rows again. The whole replay keeps them
#: all (its columns are in memory anyway). Either way the same order statistics, exactly.
#: Read at each :meth:`SummaryStats.add` (tests lower it).
KEEP_ROWS: int = _core.SUMMARY_KEEP_ROWS

#: A selection bucket of at most this many keys is gathered in one pass instead of one
#: more pass per 16 bits. Read at :meth:`SummaryStats.finish`.
GATHER_KEYS: int = _core.SUMMARY_GATHER_KEYS

Chunk = Mapping[str, np.ndarray]
Source = Callable[[], Iterable[Chunk]]


def _arrays(chunk: Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.ascontiguousarray(chunk["wait_s"], dtype=np.int64),
        np.ascontiguousarray(chunk["bounded_slowdown"], dtype=np.float64),
        np.ascontiguousarray(chunk["aph"], dtype=np.float64),
        np.ascontiguousarray(chunk["nodes"], dtype=np.int64),
    )


class SummaryStats:
    """Accumulators of the summary's statistics: :meth:`add` each chunk of finished jobs
    (any split), then :meth:`finish` with a source that yields the same rows again, chunk
    by chunk (read only when the run has more than :data:`KEEP_ROWS` jobs).
    ``keep_all``: keep every key however many rows (the whole replay)."""

    def __init__(self, keep_all: bool = False) -> None:
        self.keep_all = keep_all
        self._native = _core.SummaryStats(keep_all)

    @property
    def rows(self) -> int:
        return int(self._native.rows)

    def add(self, chunk: Chunk) -> None:
        self._native.add(*_arrays(chunk), KEEP_ROWS)

    def finish(self, source: Source) -> dict[str, Any]:
        """The summary's ``wait_s``, ``bounded_slowdown``, ``aph`` and ``by_size`` blocks."""

        def again() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
            for chunk in source():
                yield _arrays(chunk)

        out: dict[str, Any] = self._native.finish(again, GATHER_KEYS)
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


def exact_float_sum(x: np.ndarray) -> int:
    """The sum of finite float64 values, exactly, as an integer multiple of 2^-1126."""
    return int.from_bytes(_core.exact_float_sum_bytes(np.ascontiguousarray(x, dtype=np.float64)), "little", signed=True)

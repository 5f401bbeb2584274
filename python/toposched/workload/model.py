"""The columnar job table every reader produces and the engine consumes.

One row per job that will be replayed, in replay order: sorted by ``submit_s``, ties kept
in file order (a stable sort). Every column is a NumPy array of the same length; every
time is an integer number of seconds.

Columns (all ``int64``):

=================  =========================================================================
``job_id``         the job's id in the log (SWF field 1; sacct ``JobIDRaw``)
``submit_s``       submit time, seconds since ``Workload.time_origin_epoch_s`` (SWF: the
                   header's ``UnixStartTime``; sacct: the earliest submit in the file)
``nodes``          nodes the job asks for, after normalization (always >= 1)
``walltime_s``     requested time (the limit), after repair (always >= 1); drives every
                   scheduling decision and reservation
``runtime_s``      the run time the log recorded (>= 0), *not* clipped to ``walltime_s``:
                   the engine clips it (kill at the limit) unless told to let jobs run on
``procs``          processors (cores) the job used or asked for, as the log gives them
``line``           1-based line in the source file where the job's record starts
``user_id``        the user, a small id (SWF field 12; sacct ``User``), -1 when unknown
``account_id``     the account (sacct ``Account``; SWF has none: its group, field 13,
                   stands for it), -1 when unknown
``qos_id``         the QOS (sacct ``QOS``; SWF: the queue, field 15), -1 when unknown
``partition_id``   the partition (sacct ``Partition``; SWF field 16), -1 when unknown
=================  =========================================================================

The last four are ids, never quantities: SWF's numbers as the log gives them; where the
log has names (sacct), ids 0, 1, ... in order of first appearance, and ``names[column]``
lists the names (``names["account_id"][k]`` is account ``k``'s name). A reader that does
not know them, or a Workload built without them, has -1 throughout. They reach the
engine's ``Job`` (priority/multifactor's QOS and fair-share factors read them).

``repairs`` counts every change made to the data, keyed by rule name (see
``docs/workloads.md``); ``skipped`` counts the jobs left out, keyed by reason. Together
with ``len(workload)`` they account for every job record in the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

COLUMNS: tuple[str, ...] = (
    "job_id",
    "submit_s",
    "nodes",
    "walltime_s",
    "runtime_s",
    "procs",
    "line",
    "user_id",
    "account_id",
    "qos_id",
    "partition_id",
)

#: The id columns of :data:`COLUMNS`: optional when a Workload is built (-1 throughout).
ID_COLUMNS: tuple[str, ...] = ("user_id", "account_id", "qos_id", "partition_id")


def ids_of_names(texts: list[str]) -> tuple[np.ndarray, list[str]]:
    """Names -> (ids 0, 1, ... in order of first appearance, -1 for "", the names by id):
    how a reader whose log names users, accounts, QOS and partitions fills an id column
    and :attr:`Workload.names`."""
    index: dict[str, int] = {"": -1}
    ids = np.fromiter((index.setdefault(t, len(index) - 1) for t in texts), dtype=np.int64, count=len(texts))
    return ids, [t for t in index if t]


def _int64_column(name: str, values: Any) -> np.ndarray:
    """A column as contiguous int64, its values unchanged: a cast would truncate 100.9 to
    100, turn NaN into -2^63 and wrap an unsigned 2^64 - 1 to -1, silently."""
    a = np.asarray(values)
    if a.ndim != 1:
        # a (n, 1) column (a DataFrame's double brackets, a list of lists) passed here and
        # failed in the engine as "'ndarray' object cannot be converted to 'PyArray<T, D>'"
        raise ValueError(f"workload column '{name}' must be one-dimensional, one value per job; got an array of shape {a.shape}")
    if a.dtype.kind == "i":
        return np.ascontiguousarray(a, dtype=np.int64)
    if a.dtype.kind == "u":
        big = np.flatnonzero(a > np.iinfo(np.int64).max)
        if big.size:
            raise ValueError(f"workload column '{name}' row {int(big[0])}: {int(a[big[0]])} does not fit a signed 64-bit integer")
        return np.ascontiguousarray(a, dtype=np.int64)
    if a.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~np.isfinite(a) | (a != np.floor(a)) | (a < -(2.0**63)) | (a >= 2.0**63))
        if bad.size:
            raise ValueError(f"workload column '{name}' row {int(bad[0])}: {float(a[bad[0]])!r} is not a whole number within 64 bits; columns hold int64 seconds and counts (round them first if that is meant)")
        return np.ascontiguousarray(a, dtype=np.int64)
    raise TypeError(f"workload column '{name}' must hold whole numbers (an integer array), got dtype {a.dtype}")


@dataclass
class Workload:
    """A normalized job log ready to replay.

    Attributes:
        columns: the arrays named in :data:`COLUMNS`, all ``int64`` and of equal length.
        source: path of the file read.
        format: ``"swf"``, ``"sacct"``, ...
        time_origin_epoch_s: Unix time of ``submit_s == 0`` when the log gives it, else None.
        header: header fields of the log (SWF ``; Key: value`` lines), as read.
        repairs: count of each repair applied, by rule name.
        skipped: count of job records left out, by reason.
        records: job records found in the file (kept + skipped).
        settings: the normalization settings used (cores per node, size field, ...), so
            that a run's summary says how the table was made.
        extra: optional per-job columns a format can provide (e.g. ``logged_start_s``,
            ``logged_nodes``), same length as the columns.
        names: for an id column whose log has names (sacct), the name of each id.
    """

    columns: dict[str, np.ndarray]
    source: str
    format: str
    time_origin_epoch_s: int | None = None
    header: dict[str, str] = field(default_factory=dict)
    repairs: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    records: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # checked and converted first (a scalar has no length), into a dict of our own
        # (the caller's dict or DataFrame is left as it was)
        self.columns = {**self.columns, **{c: _int64_column(c, self.columns[c]) for c in COLUMNS if c in self.columns}}
        if any(c not in self.columns for c in ID_COLUMNS) and "job_id" in self.columns:
            n = len(self.columns["job_id"])
            for c in ID_COLUMNS:
                if c not in self.columns:
                    self.columns[c] = np.full(n, -1, dtype=np.int64)
        missing = [c for c in COLUMNS if c not in self.columns]
        if missing:
            raise ValueError(f"workload is missing columns {missing}")
        lengths = {c: len(self.columns[c]) for c in COLUMNS}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"workload columns differ in length: {lengths}")

    def __len__(self) -> int:
        return len(self.columns["job_id"])

    def __repr__(self) -> str:
        from pathlib import Path

        from ..units import fmt_duration

        n = len(self)
        span = ""
        if n:
            span = f", {fmt_duration(float(self.columns['submit_s'][-1] - self.columns['submit_s'][0]))} of submissions"
        fixes = sum(self.repairs.values())
        left = sum(self.skipped.values())
        return f"Workload({Path(self.source).name}, {self.format}, {n:,} jobs{span}, {fixes:,} repairs, {left:,} records left out)"

    def _repr_html_(self) -> str:
        import html

        return f"<p><code>{html.escape(repr(self))}</code></p>"

    def to_pandas(self) -> Any:
        """The job table as a pandas DataFrame (needs pandas: ``pip install toposched[pandas]``)."""
        try:
            import pandas as pd
        except ModuleNotFoundError:
            raise ModuleNotFoundError("to_pandas needs pandas: pip install 'toposched[pandas]'") from None
        return pd.DataFrame({c: self.columns[c] for c in COLUMNS})

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def take(self, index: Any) -> "Workload":
        """A new workload with the rows ``index`` (an integer or boolean array, or a range),
        each at most once, kept in the log's order. The rows left out are counted in
        ``skipped["taken_out"]``, so that ``len(w) + sum(w.skipped.values()) == w.records``
        still holds (a run of ``take(np.arange(50))`` said 50 jobs of 120 records, the 70
        others unaccounted for)."""
        rows = np.arange(len(self))[np.asarray(index) if isinstance(index, range) else index]
        kept = np.unique(rows)
        if len(kept) < len(rows):
            twice = int(np.flatnonzero(np.bincount(rows) > 1)[0])
            raise ValueError(f"take: row {twice} is given twice; a workload's rows are its log's records, each once")
        # in the log's order: take([500, 0]) made a workload out of submit order, which a
        # replay then refused as the log's fault ("FILE:38: ... rows must be sorted")
        out = self._subset(kept)
        left = len(self) - len(kept)
        if left:
            out.skipped["taken_out"] = out.skipped.get("taken_out", 0) + left
        return out

    def _subset(self, index: Any) -> "Workload":
        """The rows ``index``, the accounting (records, skipped) as it is: for a caller
        that counts the rows it leaves out under its own reason (a transform, a reader)."""
        cols = {c: self.columns[c][index] for c in COLUMNS}
        rows = np.arange(len(self))[index]
        extra = {}
        for k, v in self.extra.items():
            if isinstance(v, np.ndarray) and len(v) == len(self):
                extra[k] = v[index]
            elif isinstance(v, list) and len(v) == len(self):
                extra[k] = [v[i] for i in rows]
            else:
                extra[k] = v
        return Workload(
            columns=cols,
            source=self.source,
            format=self.format,
            time_origin_epoch_s=self.time_origin_epoch_s,
            header=dict(self.header),
            repairs=dict(self.repairs),
            skipped=dict(self.skipped),
            records=self.records,
            settings=dict(self.settings),
            extra=extra,
            names={k: list(v) for k, v in self.names.items()},
        )

    def describe(self) -> dict[str, Any]:
        """What the summary JSON records about the input."""
        return {
            "source": self.source,
            "format": self.format,
            "records": self.records,
            "jobs": len(self),
            "time_origin_epoch_s": self.time_origin_epoch_s,
            "repairs": dict(sorted(self.repairs.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "settings": self.settings,
        }

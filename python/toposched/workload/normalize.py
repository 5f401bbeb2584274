"""Turn the raw fields a log gives into the job table the engine replays.

Every format reader collects the same raw columns (unknown values are -1, as in SWF) and
calls :func:`normalize`, so the rules below hold for every format. Each rule that changes
a job counts itself in ``repairs``; each rule that leaves a job out counts itself in
``skipped``. The rules, in the order they apply:

1. **Job size.** ``nodes_alloc`` (a node count the log records, e.g. sacct ``NNodes``) wins
   when it is positive. Otherwise processors are converted to nodes with
   ``cores_per_node``: ``nodes = ceil(procs / cores_per_node)`` (a non-multiple counts
   ``nodes_rounded_up``). Which processor field: ``size_field="allocated"`` (SWF field 5),
   ``"requested"`` (field 8), or ``"auto"`` (allocated, falling back to requested when
   allocated is unknown: counts ``size_from_requested``). No positive size: the job is
   skipped as ``unknown_size``.
2. **Run time unknown** (negative): ``missing_runtime="skip"`` (default) leaves the job
   out as ``unknown_runtime``; ``"zero"`` keeps it with run time 0 (``runtime_set_zero``).
3. **Requested time unknown** (zero or negative): ``missing_walltime="runtime"`` (default)
   sets it to the run time (at least 1 s) - a perfect estimate - counting
   ``walltime_from_runtime``; an integer sets it to that many seconds, counting
   ``walltime_set_default``.
4. **Run time above requested time** is left in the table; the engine kills such jobs at
   their limit (or lets them run on when asked) and counts them in the run summary.
5. **Submit time unknown** (negative): the job is left out as ``unknown_submit``.
6. **Unsorted submits**: rows are stably sorted by submit time (ties keep file order);
   ``submit_unsorted`` counts records whose submit is earlier than the one before them.

Before these rules, every value is checked against the documented limits
(:mod:`toposched.limits`, docs/reliability.md): counts below 2^31; run and requested times
of at most 50 years (requested times: 2^53 s, as logs write 2^31 - 1 for "unlimited"); absolute submit times within 1970-2200; all submits within 50 years
of the median one (``allow_long_span`` raises both 50-year limits to the whole window). A
value out of range stops the read with an error naming its line and field, or with
``lenient`` leaves the job out, counted as ``out_of_range``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from .. import _core
from .model import ID_COLUMNS, Workload

RAW_COLUMNS = (
    "job_id",
    "submit_s",
    "runtime_s",
    "walltime_s",
    "procs_alloc",
    "procs_req",
    "nodes_alloc",
    "line",
)


@dataclass(frozen=True)
class NormalizeSettings:
    """How raw log fields become job sizes and times (recorded in the run summary)."""

    cores_per_node: int = 1
    size_field: Literal["auto", "allocated", "requested"] = "auto"
    missing_walltime: Literal["runtime"] | int = "runtime"
    missing_runtime: Literal["skip", "zero"] = "skip"

    def __post_init__(self) -> None:
        if int(self.cores_per_node) < 1:
            raise ValueError(f"cores_per_node must be >= 1, got {self.cores_per_node}")
        if self.size_field not in ("auto", "allocated", "requested"):
            raise ValueError(f"size_field must be auto, allocated or requested, got {self.size_field!r}")
        if self.missing_runtime not in ("skip", "zero"):
            raise ValueError(f"missing_runtime must be skip or zero, got {self.missing_runtime!r}")
        if self.missing_walltime != "runtime":
            if isinstance(self.missing_walltime, bool) or not isinstance(self.missing_walltime, int) or self.missing_walltime < 1:
                raise ValueError(
                    f"missing_walltime must be 'runtime' or a positive number of seconds, got {self.missing_walltime!r}"
                )


#: The largest id of a user, account, QOS or partition (the engine's ids are 32-bit).
MAX_ID: int = _core.NORMALIZE_MAX_ID

#: Out-of-range records quoted in the settings with lenient (the rest are counted).
_MAX_EXAMPLES: int = _core.NORMALIZE_MAX_EXAMPLES

#: The output columns of the native rules, in the order they return them.
_OUT_COLUMNS = ("job_id", "submit_s", "nodes", "walltime_s", "runtime_s", "procs", "line")

#: A time origin beyond this is passed clamped (every comparison comes out the same) with
#: its digits for the messages: the native rules hold it in 128 bits.
_ORIGIN_CLAMP = 2**100


def _count(d: dict[str, int], key: str, n: int) -> None:
    if n:
        d[key] = d.get(key, 0) + int(n)


def _raw_arrays(cols: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [np.ascontiguousarray(cols[c], dtype=np.int64) for c in RAW_COLUMNS]


def _origin_args(time_origin_epoch_s: int | None) -> dict[str, Any]:
    if time_origin_epoch_s is None:
        return {}
    origin = int(time_origin_epoch_s)
    if -_ORIGIN_CLAMP <= origin <= _ORIGIN_CLAMP:
        return {"time_origin_epoch_s": origin}
    return {"time_origin_epoch_s": max(-_ORIGIN_CLAMP, min(origin, _ORIGIN_CLAMP)), "time_origin_text": str(origin)}


def normalize(
    raw: dict[str, np.ndarray],
    *,
    source: str,
    fmt: str,
    settings: NormalizeSettings,
    records: int,
    repairs: dict[str, int] | None = None,
    skipped: dict[str, int] | None = None,
    header: dict[str, str] | None = None,
    time_origin_epoch_s: int | None = None,
    extra: dict[str, Any] | None = None,
    settings_note: dict[str, Any] | None = None,
    lenient: bool = False,
    allow_long_span: bool = False,
    field_names: dict[str, str] | None = None,
    names: dict[str, list[str]] | None = None,
    submit_span: list[int] | None = None,
) -> Workload:
    """Apply the rules of this module to ``raw`` (arrays named in :data:`RAW_COLUMNS`).

    ``repairs`` and ``skipped`` may already hold counts from the reader (e.g. malformed
    lines skipped with ``lenient``); this adds to them. ``field_names`` maps raw columns
    to the format's own field names, for error messages. ``extra`` holds optional per-job
    arrays (same length as ``raw``) that follow the rows through filtering and sorting;
    those named in :data:`~toposched.workload.model.ID_COLUMNS` become the Workload's id
    columns, whose names (if any) are ``names``. ``submit_span``: see :func:`check_ranges`
    (a log normalized a chunk at a time).

    The rules run natively (``toposched._core.normalize_columns``, crates/toposched-io
    ``normalize``); this converts the arguments and builds the Workload.
    """
    repairs = dict(repairs or {})
    skipped = dict(skipped or {})
    id_items = [(k, np.ascontiguousarray(v, dtype=np.int64)) for k, v in (extra or {}).items() if k in ID_COLUMNS]
    columns, ids, order, repaired, left_out, out_of_range = _core.normalize_columns(
        _raw_arrays(raw),
        [v for _, v in id_items],
        source=str(source),
        cores_per_node=int(settings.cores_per_node),
        size_field=settings.size_field,
        missing_walltime=None if settings.missing_walltime == "runtime" else int(settings.missing_walltime),
        missing_runtime=settings.missing_runtime,
        lenient=bool(lenient),
        allow_long_span=bool(allow_long_span),
        field_names=list((field_names or {}).items()),
        submit_span=submit_span,
        **_origin_args(time_origin_epoch_s),
    )
    for k, v in repaired:
        _count(repairs, k, v)
    for k, v in left_out:
        _count(skipped, k, v)
    n = len(raw["job_id"])
    out = dict(zip(_OUT_COLUMNS, columns))
    out.update((k, v) for (k, _), v in zip(id_items, ids))
    extra_out: dict[str, Any] = {}  # Workload.extra: per-job columns (arrays or lists) or values
    for k, v in (extra or {}).items():
        if k in ID_COLUMNS:  # a column of the Workload, carried through like the others
            continue
        if isinstance(v, np.ndarray) and len(v) == n:
            extra_out[k] = v[order]
        elif isinstance(v, list) and len(v) == n:
            extra_out[k] = [v[i] for i in order]
        else:
            extra_out[k] = v
    used = asdict(settings)
    if out_of_range:
        used["out_of_range_examples"] = out_of_range
    if settings_note:
        used.update(settings_note)
    return Workload(
        columns=out,
        source=str(source),
        format=fmt,
        time_origin_epoch_s=time_origin_epoch_s,
        header=dict(header or {}),
        repairs=repairs,
        skipped=skipped,
        records=int(records),
        settings=used,
        extra=extra_out,
        names=dict(names or {}),
    )


def check_ranges(
    cols: dict[str, np.ndarray],
    *,
    source: str,
    time_origin_epoch_s: int | None,
    lenient: bool,
    allow_long_span: bool,
    field_names: dict[str, str],
    examples: list[str] | None = None,
    submit_span: list[int] | None = None,
) -> np.ndarray:
    """Rows whose values are within the documented limits (module docstring). Without
    ``lenient`` the first row out of range raises a TraceFormatError naming its line and
    field (and the flag that would accept it); with ``lenient`` such rows are left out.

    ``submit_span`` (a log read a chunk at a time, ``simulate --stream``): the outlier
    rule needs the median submit of the whole log, which a chunk does not know. Instead,
    the smallest and largest submit the rule would look at are kept in it (``[]`` at
    first, then ``[min, max]``) across chunks: while they are at most the limit apart, no
    submit can be that far from the median (which lies between them) and the rule leaves
    out nothing, as on the whole log; beyond, the read stops with one line saying to drop
    --stream (never a different choice of outliers).

    The rules run natively (``toposched._core.check_ranges_columns``); :func:`normalize`
    applies them first."""
    ok, got = _core.check_ranges_columns(
        _raw_arrays(cols),
        source=str(source),
        lenient=bool(lenient),
        allow_long_span=bool(allow_long_span),
        field_names=list(field_names.items()),
        examples=list(examples) if examples is not None else [],
        submit_span=submit_span,
        **_origin_args(time_origin_epoch_s),
    )
    if examples is not None:
        examples[:] = got
    return ok

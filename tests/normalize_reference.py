"""The rules of toposched.workload.normalize as the package implemented them in Python
(with NumPy) before they moved to Rust (crates/toposched-io/src/normalize.rs): kept here,
unchanged, as the independent reference the differential tests compare the native code
with (tests/test_normalize_native.py). The rules are documented in the docstring of
toposched.workload.normalize.
"""

from __future__ import annotations

import calendar
from dataclasses import asdict
from typing import Any

import numpy as np

from toposched.errors import TraceFormatError
from toposched.workload.model import ID_COLUMNS, Workload

# The limits as toposched.limits defined them before they moved to Rust (written out here
# so that a wrong constant in crates/toposched-io/src/limits.rs is caught, not shared).
EPOCH_MIN_S = 0
EPOCH_MAX_S = calendar.timegm((2200, 1, 1, 0, 0, 0))
MAX_SPAN_S = 50 * 365 * 86_400
MAX_SPAN_LONG_S = EPOCH_MAX_S - EPOCH_MIN_S
MAX_TIME_S = 2**53
MAX_COUNT = 2**31


def years(seconds: int) -> str:
    """A span in years, for messages."""
    return f"{seconds / (365.25 * 86_400):.1f} years"


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


#: The largest id of a user, account, QOS or partition (the engine's ids are 32-bit).
MAX_ID = 2**32 - 2

#: Out-of-range records quoted in the settings with lenient (the rest are counted).
_MAX_EXAMPLES = 5


def _count(d: dict[str, int], key: str, n: int) -> None:
    if n:
        d[key] = d.get(key, 0) + int(n)


def normalize(
    raw: dict[str, np.ndarray],
    *,
    source: str,
    fmt: str,
    settings: Any,
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
    """
    repairs = dict(repairs or {})
    skipped = dict(skipped or {})
    cols = {c: np.asarray(raw[c], dtype=np.int64) for c in RAW_COLUMNS}
    n = len(cols["job_id"])
    out_of_range: list[str] = []  # with lenient: the first few, "line L: field F: why"
    in_range = check_ranges(
        cols,
        source=source,
        time_origin_epoch_s=time_origin_epoch_s,
        lenient=lenient,
        allow_long_span=allow_long_span,
        field_names=field_names or {},
        examples=out_of_range,
        submit_span=submit_span,
    )

    cpn = int(settings.cores_per_node)

    # 1. size
    if settings.size_field == "allocated":
        procs = cols["procs_alloc"].copy()
    elif settings.size_field == "requested":
        procs = cols["procs_req"].copy()
    else:
        procs = cols["procs_alloc"].copy()
        fallback = (procs <= 0) & (cols["procs_req"] > 0) & (cols["nodes_alloc"] <= 0)
        _count(repairs, "size_from_requested", int(fallback.sum()))
        procs[fallback] = cols["procs_req"][fallback]
    from_nodes = cols["nodes_alloc"] > 0
    nodes = np.where(from_nodes, cols["nodes_alloc"], -(-np.maximum(procs, 0) // cpn))
    if cpn > 1:
        _count(repairs, "nodes_rounded_up", int(((~from_nodes) & (procs > 0) & (procs % cpn != 0)).sum()))
    # Counts must fit the engine's 32-bit node counts (only the fields the size comes from:
    # a requested count the job does not use is not looked at).
    too_big = in_range & ((nodes >= MAX_COUNT) | (procs >= MAX_COUNT))
    for i in np.flatnonzero(too_big)[: 1 if not lenient else _MAX_EXAMPLES - len(out_of_range)]:
        i = int(i)
        # name the field that is too big: the node count when the size comes from it and
        # it is the one (a processor count past 2^31 beside a small NNodes was reported
        # as "NNodes: 32 is out of range"), else the processor field the size comes from
        if from_nodes[i] and nodes[i] >= MAX_COUNT:
            column = "nodes_alloc"
        elif settings.size_field == "requested" or (
            settings.size_field == "auto" and cols["procs_alloc"][i] <= 0 and cols["procs_req"][i] > 0 and cols["nodes_alloc"][i] <= 0
        ):
            column = "procs_req"
        else:
            column = "procs_alloc"
        err = TraceFormatError(
            source,
            f"{int(cols[column][i])} is out of range: counts must be below 2^31, or --lenient to leave such jobs out",
            line=int(cols["line"][i]),
            field=(field_names or {}).get(column, column),
        )
        if not lenient:
            raise err
        out_of_range.append(f"line {err.line}: field {err.field}: {int(cols[column][i])} is out of range (counts below 2^31)")
    in_range &= ~too_big
    _count(skipped, "out_of_range", int((~in_range).sum()))
    keep = in_range & (nodes > 0)
    _count(skipped, "unknown_size", int((in_range & (nodes <= 0)).sum()))

    # 2. run time unknown
    runtime = cols["runtime_s"].copy()
    unknown_rt = keep & (runtime < 0)
    if settings.missing_runtime == "skip":
        _count(skipped, "unknown_runtime", int(unknown_rt.sum()))
        keep &= ~unknown_rt
    else:
        _count(repairs, "runtime_set_zero", int(unknown_rt.sum()))
        runtime[unknown_rt] = 0

    # 3. requested time unknown
    walltime = cols["walltime_s"].copy()
    missing_wt = keep & (walltime <= 0)
    if settings.missing_walltime == "runtime":
        _count(repairs, "walltime_from_runtime", int(missing_wt.sum()))
        walltime[missing_wt] = np.maximum(runtime[missing_wt], 1)
    else:
        _count(repairs, "walltime_set_default", int(missing_wt.sum()))
        walltime[missing_wt] = int(settings.missing_walltime)

    # 5. submit unknown
    unknown_submit = keep & (cols["submit_s"] < 0)
    _count(skipped, "unknown_submit", int(unknown_submit.sum()))
    keep &= ~unknown_submit

    idx = np.flatnonzero(keep)
    submit = cols["submit_s"][idx]
    # 6. stable sort by submit
    if len(submit) > 1:
        _count(repairs, "submit_unsorted", int((submit[1:] < submit[:-1]).sum()))
    order = idx[np.argsort(submit, kind="stable")]

    out = {
        "job_id": cols["job_id"][order],
        "submit_s": cols["submit_s"][order],
        "nodes": nodes[order],
        "walltime_s": walltime[order],
        "runtime_s": runtime[order],
        "procs": np.maximum(procs, 0)[order],
        "line": cols["line"][order],
    }
    extra_out: dict[str, Any] = {}  # Workload.extra: per-job columns (arrays or lists) or values
    for k, v in (extra or {}).items():
        if k in ID_COLUMNS:  # a column of the Workload, carried through like the others
            ids = np.asarray(v, dtype=np.int64)[order]
            # an id the engine cannot hold (a u32 below 2^32 - 1) is unknown, like SWF's -1
            bad = (ids < -1) | (ids > MAX_ID)
            if bad.any():
                _count(repairs, "id_out_of_range", int(bad.sum()))
                ids = np.where(bad, -1, ids)
            out[k] = ids
        elif isinstance(v, np.ndarray) and len(v) == n:
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
    --stream (never a different choice of outliers)."""
    n = len(cols["job_id"])
    max_time = MAX_SPAN_LONG_S if allow_long_span else MAX_SPAN_S
    span_hint = "" if allow_long_span else "; pass --allow-long-span to accept it"
    ok = np.ones(n, dtype=bool)
    line = cols["line"]

    def refuse(bad: np.ndarray, column: str, why: str, hint: str) -> None:
        nonlocal ok
        bad = bad & ok
        if not bad.any():
            return
        field = field_names.get(column, column)
        if lenient:
            if examples is not None:
                for i in np.flatnonzero(bad)[: max(_MAX_EXAMPLES - len(examples), 0)]:
                    examples.append(f"line {int(line[i])}: field {field}: {why.format(v=int(cols[column][i]))}")
            ok &= ~bad
            return
        i = int(np.flatnonzero(bad)[0])
        raise TraceFormatError(
            source, f"{why.format(v=int(cols[column][i]))}{hint}, or --lenient to leave such jobs out", line=int(line[i]), field=field
        )

    refuse(cols["runtime_s"] > max_time, "runtime_s", "{v} s is longer than the limit of " + years(max_time), span_hint)
    # A requested time only bounds reservations (logs write 2^31 - 1 for "unlimited"):
    # it must just fit the engine's arithmetic.
    refuse(cols["walltime_s"] > MAX_TIME_S, "walltime_s", "{v} s is beyond the limit of 2^53 s", "")
    submit = cols["submit_s"]
    known = submit >= 0
    if time_origin_epoch_s is not None:
        lo, hi = EPOCH_MIN_S - time_origin_epoch_s, EPOCH_MAX_S - time_origin_epoch_s
        refuse(known & ((submit < lo) | (submit >= hi)), "submit_s", "{v} s after the log's time origin (Unix time " + str(time_origin_epoch_s) + ") is outside 1970-2200", "")
    refuse(known & (submit > MAX_SPAN_LONG_S), "submit_s", "{v} s after the log's time origin is beyond 2200", "")
    # One stray timestamp (a year typed 2300, a field cut short) would stretch the replay
    # over centuries: submits far from the median one are outliers.
    kept = known & ok
    if submit_span is not None:
        if kept.any():
            lo_s, hi_s = int(submit[kept].min()), int(submit[kept].max())
            if submit_span:
                lo_s, hi_s = min(lo_s, submit_span[0]), max(hi_s, submit_span[1])
            submit_span[:] = [lo_s, hi_s]
            if hi_s - lo_s > max_time:
                i = int(np.flatnonzero(kept & ((submit == lo_s) | (submit == hi_s)))[0])
                raise TraceFormatError(
                    source,
                    f"the submits span more than {years(max_time)} (from {lo_s} s to {hi_s} s): outliers are found from the median submit of the whole log, "
                    "which --stream does not know; replay without --stream" + ("" if allow_long_span else " (or pass --allow-long-span)"),
                    line=int(line[i]),
                    field=field_names.get("submit_s", "submit_s"),
                )
    elif kept.any():
        median = int(np.median(submit[kept]))
        far = kept & (np.abs(submit - median) > max_time)
        refuse(
            far,
            "submit_s",
            "{v} s is more than " + years(max_time) + f" from the median submit ({median} s): an outlier",
            span_hint,
        )
    return ok

"""Slurm accounting logs (``sacct -P`` output, and Open XDMoD's header-less layout): which
columns give which job value.

What a record is (the two layouts, and how records whose free text holds ``|`` or line
breaks are cut and split) is :mod:`toposched.workload.sacct_records`. This module finds
the columns it uses in the layout (:class:`Columns`), parses their values and hands the
raw columns to :func:`toposched.workload.normalize.normalize`. Which records become jobs,
and how fields map onto the raw columns, is described in ``docs/sacct.md`` and in
:func:`read_sacct`.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import functools
import re
from pathlib import Path
from typing import Any, Literal

import hostlist
import numpy as np

from ..errors import LENIENT_HINT, TraceFormatError
from ..limits import EPOCH_MAX_S, EPOCH_MIN_S, MAX_INT64, SLURM_MAX_SWITCH_WAIT_S
from .normalize import NormalizeSettings, normalize
from .sacct_records import FREE_TEXT, XDMOD_FIELDS, Layout, Splitter, read_layout, read_lines, split_message

__all__ = ["FREE_TEXT", "XDMOD_FIELDS", "parse_duration", "parse_time", "read_sacct"]


# The values sacct prints for "no limit" or "not known".
_UNKNOWN_DURATIONS = frozenset({"", "unlimited", "partition_limit", "invalid", "unknown", "none"})
_UNKNOWN_TIMES = frozenset({"", "unknown", "none"})
_NOT_ALLOCATED = "None assigned"

_RE_DHMS = re.compile(r"(?:(\d+)-)?(\d+):(\d\d):(\d\d)")
_RE_MS = re.compile(r"(\d+):(\d\d)(?:\.\d+)?")
_RE_MIN = re.compile(r"\d+")
_RE_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)")
_RE_UINT = re.compile(r"\d+")

_DURATION_HINT = "expected a duration like 1-00:00:00, got {!r}"
_TIME_HINT = "expected a time like 2021-01-06T14:09:15, got {!r}"
_INT_HINT = "expected a whole number, got {!r}"

_MAX_EXAMPLES = 5


class _FieldError(ValueError):
    """A bad value in one field; becomes a TraceFormatError with the record's line."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


# --------------------------------------------------------------------------- values


def parse_duration(text: str) -> int:
    """Seconds in a duration as sacct prints it, or -1 when it means "no limit/unknown".

    Accepted: ``D-HH:MM:SS``, ``HH:MM:SS``, ``MM:SS`` and ``MM:SS.mmm`` (sacct's short
    form below one hour; the fraction is dropped), a bare number of minutes (Slurm's
    input form, and ``TimelimitRaw``), and ``UNLIMITED``, ``Partition_Limit``, ``INVALID``,
    ``Unknown`` or an empty field for "not known" (-1).

    Raises:
        ValueError: for anything else, with the message the error report shows.
    """
    s = text.strip()
    if s.lower() in _UNKNOWN_DURATIONS:
        return -1
    m = _RE_DHMS.fullmatch(s)
    if m:
        days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
        if minutes < 60 and seconds < 60:
            return ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    m = _RE_MS.fullmatch(s)
    if m:
        minutes, seconds = int(m.group(1)), int(m.group(2))
        if seconds < 60:
            return minutes * 60 + seconds
    if _RE_MIN.fullmatch(s):
        return int(s) * 60
    raise ValueError(_DURATION_HINT.format(text))


_RE_SWITCHES = re.compile(r"--switches[= ](\d+)(?:@(\S+))?")
#: Slurm's default cap on the switch wait (SchedulerParameters=max_switch_wait).
_MAX_SWITCH_WAIT_S = SLURM_MAX_SWITCH_WAIT_S


def _switches_requested(vals: list[str]) -> tuple[int, int]:
    """(N, wait seconds) of ``--switches=N[@TIME]`` found in the record's text (its SubmitLine
    column, when the dump has one), else (0, 0). A wait that does not parse, or none,
    is Slurm's default cap of 300 s."""
    for v in vals:
        if "--switches" not in v:
            continue
        m = _RE_SWITCHES.search(v)
        if m:
            wait = _MAX_SWITCH_WAIT_S
            if m.group(2):
                try:
                    parsed = parse_duration(m.group(2))
                    wait = parsed if parsed >= 0 else _MAX_SWITCH_WAIT_S
                except ValueError:
                    pass
            # a limit beyond the machine (or a wait beyond any log) changes nothing: cap
            # them so that they fit the engine's integers
            return min(int(m.group(1)), 2**31 - 1), min(wait, 2**40)
    return 0, 0


def parse_time(text: str) -> int | None:
    """Unix seconds of a sacct time ``YYYY-MM-DDTHH:MM:SS``, read as UTC.

    sacct prints the local time of the host it ran on and no zone, so differences between
    two times are right unless a daylight-saving change falls between them. Returns None
    for ``Unknown``, ``None`` or an empty field.

    Raises:
        ValueError: for anything else (including ``SLURM_TIME_FORMAT`` formats).
    """
    s = text.strip()
    m = _RE_TIME.fullmatch(s)
    if m is None:
        if s.lower() in _UNKNOWN_TIMES:
            return None
        raise ValueError(_TIME_HINT.format(text))
    day = _day_epoch(s[:10])
    hours, minutes, seconds = int(m.group(4)), int(m.group(5)), int(m.group(6))
    if day is None or hours > 23 or minutes > 59 or seconds > 60:
        raise ValueError(_TIME_HINT.format(text))
    return day + hours * 3600 + minutes * 60 + seconds


@functools.lru_cache(maxsize=1 << 14)
def _day_epoch(date: str) -> int | None:
    """Unix seconds of midnight UTC of ``YYYY-MM-DD``, None for an impossible date.

    Cached: a log has few distinct days and many records per day.
    """
    try:
        d = _dt.date(int(date[:4]), int(date[5:7]), int(date[8:10]))
    except ValueError:
        return None
    return calendar.timegm(d.timetuple())


@functools.lru_cache(maxsize=1 << 16)
def _expand_cached(nodelist: str) -> tuple[str, ...]:
    # Node lists repeat (the same nodes run many jobs); expanding is the costliest step.
    return tuple(hostlist.expand_hostlist(nodelist))


def _int_or(text: str, field: str, default: int = -1) -> int:
    s = text.strip()
    if s == "":
        return default
    if not _RE_UINT.fullmatch(s):
        raise _FieldError(field, _INT_HINT.format(text))
    v = int(s)
    if v > _MAX_VALUE:
        raise _FieldError(field, f"{s} is out of range (at most {_MAX_VALUE})")
    return v


#: Largest integer any field may give: a minute count times 60 must still fit int64.
_MAX_VALUE = MAX_INT64 // 60


def _duration(text: str, field: str) -> int:
    try:
        v = parse_duration(text)
    except ValueError as exc:
        raise _FieldError(field, str(exc)) from None
    if v > _MAX_VALUE:
        raise _FieldError(field, f"{text.strip()!r} is out of range (at most {_MAX_VALUE} s)")
    return v


def _time(text: str, field: str) -> int | None:
    try:
        t = parse_time(text)
    except ValueError as exc:
        raise _FieldError(field, str(exc)) from None
    if t is not None and not EPOCH_MIN_S <= t < EPOCH_MAX_S:
        raise _FieldError(field, f"time {text.strip()!r} is outside 1970-2200 (docs/reliability.md)")
    return t


#: Columns the reader takes values from (lower case): none may appear twice.
_READ_COLUMNS = frozenset(
    c.lower()
    for c in ("JobIDRaw", "JobID", "Submit", "Start", "End", "ElapsedRaw", "Elapsed", "Timelimit", "TimelimitRaw",
              "NNodes", "AllocCPUS", "NCPUS", "ReqCPUS", "NodeList", "State", "Partition", "User")
)  # fmt: skip


def _require_columns(path: str, layout: Layout) -> None:
    need = [
        (("JobIDRaw", "JobID"), "JobIDRaw (or JobID)"),
        (("Submit",), "Submit"),
        (("Start",), "Start"),
        (("ElapsedRaw", "Elapsed"), "Elapsed (or ElapsedRaw)"),
        (("Timelimit", "TimelimitRaw"), "Timelimit"),
        (("NNodes", "AllocCPUS", "NCPUS"), "NNodes (or AllocCPUS/NCPUS)"),
    ]
    for alternatives, label in need:
        if layout.col(*alternatives) is None:
            raise TraceFormatError(
                path,
                f"the header has no {label} column; run sacct with "
                "--format=JobIDRaw,JobID,Submit,Start,End,Elapsed,Timelimit,NNodes,AllocCPUS,"
                "ReqCPUS,NodeList,State,Partition,User (or --format=ALL)",
                line=layout.header_line,
                field=alternatives[0],
            )


# --------------------------------------------------------------------------- reader


def read_sacct(
    path: str | Path,
    *,
    lenient: bool = False,
    cores_per_node: int | None = 1,
    size_field: Literal["auto", "allocated", "requested"] = "auto",
    missing_walltime: Literal["runtime"] | int = "runtime",
    missing_runtime: Literal["skip", "zero"] = "skip",
    allow_long_span: bool = False,
):
    """Read a Slurm accounting log into a normalized :class:`~toposched.workload.model.Workload`.

    Records:
        Only job allocations become jobs. Step records (a JobID with a ``.``: ``123.batch``,
        ``123.extern``, ``123.0``) are counted in ``skipped["job_step"]``. Job-array tasks
        (``4103947_100``) and heterogeneous-job components are jobs; ``job_id`` is the
        integer ``JobIDRaw``. ``records`` counts every record, steps included, so
        ``len(workload) + sum(workload.skipped.values()) == workload.records``.

    Fields (raw columns handed to :func:`~toposched.workload.normalize.normalize`):
        * ``submit_s``: ``Submit`` minus the earliest ``Submit`` in the file
          (``time_origin_epoch_s``); times are read as UTC (see :func:`parse_time`).
        * ``runtime_s``: ``ElapsedRaw`` (or ``Elapsed``) for jobs that ran; -1 (unknown,
          skipped by default as ``unknown_runtime``) for jobs that never started
          (``Start`` unknown, or ``NodeList`` = ``None assigned``) and for jobs still
          running when the log was taken (``End`` unknown, or ``State`` RUNNING), whose
          elapsed time is only a lower bound.
        * ``walltime_s``: ``Timelimit`` (or ``TimelimitRaw``, minutes); -1 for
          ``UNLIMITED``, ``Partition_Limit``, ``INVALID``.
        * ``nodes_alloc``: ``NNodes`` when the job started and it is positive, else -1.
        * ``procs_alloc``: ``AllocCPUS`` (or ``NCPUS``); ``procs_req``: ``ReqCPUS`` or -1.
        * ``line``: the physical line where the record starts.

    Extra per-job columns: ``logged_start_s`` (int64 array, ``Start`` relative to the
    origin, -1 if the job never started), ``logged_nodelist`` (NodeList as printed, ""
    if none), ``logged_hosts`` (NodeList expanded to host names), ``state``,
    ``partition`` and ``user`` (as printed, "" when the column is absent).

    Args:
        path: the log (``.gz`` is decompressed).
        lenient: skip malformed records (counted in ``skipped["malformed_line"]``, the
            first five messages kept in ``settings["lenient_examples"]``) instead of
            raising.
        cores_per_node, size_field, missing_walltime, missing_runtime: see
            :class:`~toposched.workload.normalize.NormalizeSettings` (``cores_per_node``
            None means 1).

    Raises:
        TraceFormatError: naming the file, the line where the bad record starts and the
            field, for a bad value in a field this reader uses, a record whose fields
            cannot be told apart, a file ending inside a record, a header missing a
            required column, or a file with no job records.
    """
    settings = NormalizeSettings(
        # sacct records no cores per node (the SWF reader can derive one from its header)
        cores_per_node=1 if cores_per_node is None else cores_per_node,
        size_field=size_field,
        missing_walltime=missing_walltime,
        missing_runtime=missing_runtime,
    )
    src = str(path)
    lines = read_lines(path)
    layout, data_start = read_layout(src, lines, _READ_COLUMNS)
    _require_columns(src, layout)

    c_id = layout.col("JobIDRaw", "JobID")
    c_jobid = layout.col("JobID")
    c_submit = layout.col("Submit")
    c_start = layout.col("Start")
    c_end = layout.col("End")
    c_elapsed_raw = layout.col("ElapsedRaw")
    c_elapsed = layout.col("Elapsed")
    c_limit = layout.col("Timelimit")
    c_limit_raw = layout.col("TimelimitRaw") if c_limit is None else None
    c_nnodes = layout.col("NNodes")
    c_procs = layout.col("AllocCPUS", "NCPUS")
    c_req = layout.col("ReqCPUS")
    c_nodelist = layout.col("NodeList")
    c_state = layout.col("State")
    c_partition = layout.col("Partition")
    c_user = layout.col("User")
    used = [
        c
        for c in (c_id, c_jobid, c_submit, c_start, c_end, c_elapsed_raw, c_elapsed, c_limit, c_limit_raw,
                  c_nnodes, c_procs, c_req, c_nodelist, c_state, c_partition, c_user)
        if c is not None
    ]  # fmt: skip
    used = list(dict.fromkeys(used))
    name = layout.names
    field_names = {
        raw: name[c]
        for raw, c in (("submit_s", c_submit), ("runtime_s", c_elapsed_raw if c_elapsed_raw is not None else c_elapsed),
                       ("walltime_s", c_limit if c_limit is not None else c_limit_raw), ("procs_alloc", c_procs),
                       ("procs_req", c_req), ("nodes_alloc", c_nnodes))
        if c is not None
    }  # fmt: skip

    job_id: list[int] = []
    submit_ep: list[int] = []
    start_ep: list[int] = []
    runtime: list[int] = []
    walltime: list[int] = []
    nodes_alloc: list[int] = []
    procs_alloc: list[int] = []
    procs_req: list[int] = []
    line_no: list[int] = []
    nodelists: list[str] = []
    hosts: list[list[str]] = []
    states: list[str] = []
    partitions: list[str] = []
    users: list[str] = []

    records = 0
    skipped: dict[str, int] = {}
    examples: list[str] = []

    def fail(err: TraceFormatError) -> None:
        if not lenient:
            raise TraceFormatError(err.path, err.message, line=err.line, field=err.field, hint=LENIENT_HINT)
        skipped["malformed_line"] = skipped.get("malformed_line", 0) + 1
        if len(examples) < _MAX_EXAMPLES:
            # same form as the SWF reader's examples: the summary already names the file
            where = f"line {err.line}: field {err.field}: " if err.field else f"line {err.line}: "
            examples.append(where + err.message)

    switches: list[tuple[int, int]] = []
    seen: set[tuple] = set()
    splitter = Splitter(layout, used, lines)
    for first0, last0, pieces, status, detail in splitter.records(data_start):
        records += 1
        first, last = first0 + 1, last0 + 1
        if status != "ok":
            field, message = split_message(layout, len(pieces), first, last, status, detail)
            fail(TraceFormatError(src, message, line=first, field=field))
            continue
        vals, relaxed = detail
        raw_id = vals[c_id].strip()
        if "." in raw_id or (c_jobid is not None and "." in vals[c_jobid]):
            skipped["job_step"] = skipped.get("job_step", 0) + 1
            continue
        try:
            row = _parse_job(vals, name, raw_id, c_id, c_submit, c_start, c_end, c_elapsed_raw, c_elapsed,
                             c_limit, c_limit_raw, c_nnodes, c_procs, c_req, c_nodelist, c_state)  # fmt: skip
        except _FieldError as exc:
            fail(TraceFormatError(src, exc.message, line=first, field=exc.field))
            continue
        if relaxed:
            # Found only by ignoring the shapes of our fields, yet every value parsed:
            # the shapes and the parsers disagree. Refuse rather than guess.
            fail(TraceFormatError(src, split_message(layout, len(pieces), first, last, "nosplit", None)[1], line=first))
            continue

        jid, sub, start, rt, wt, nn, pa, pr, nl, hl = row
        # The same allocation printed again (sacct prints a job once per association or
        # cluster it matches, and dumps get concatenated): keep the first, count the rest.
        identity = (vals[c_jobid].strip() if c_jobid is not None else raw_id, jid, sub, start, rt, nl)
        if identity in seen:
            skipped["duplicate_record"] = skipped.get("duplicate_record", 0) + 1
            continue
        seen.add(identity)
        job_id.append(jid)
        submit_ep.append(sub)
        start_ep.append(-1 if start is None else start)
        runtime.append(rt)
        walltime.append(wt)
        nodes_alloc.append(nn)
        procs_alloc.append(pa)
        procs_req.append(pr)
        line_no.append(first)
        nodelists.append(nl)
        hosts.append(hl)
        switches.append(_switches_requested(pieces))
        states.append(vals[c_state].strip() if c_state is not None else "")
        partitions.append(vals[c_partition].strip() if c_partition is not None else "")
        users.append(vals[c_user].strip() if c_user is not None else "")

    if records == 0:
        raise TraceFormatError(src, "no job records found (only a header)")
    if not job_id:
        malformed = skipped.get("malformed_line", 0)
        if malformed:
            raise TraceFormatError(src, f"no valid job records found ({malformed} malformed; first: {examples[0]})")
        raise TraceFormatError(src, f"no job records found: all {records} records are job steps (a JobID with '.')")

    origin = min(submit_ep) if submit_ep else None
    sub_arr = np.asarray(submit_ep, dtype=np.int64)
    start_arr = np.asarray(start_ep, dtype=np.int64)
    if origin is not None:
        sub_arr = sub_arr - origin
        start_arr = np.where(start_arr >= 0, start_arr - origin, -1)
    raw = {
        "job_id": np.asarray(job_id, dtype=np.int64),
        "submit_s": sub_arr,
        "runtime_s": np.asarray(runtime, dtype=np.int64),
        "walltime_s": np.asarray(walltime, dtype=np.int64),
        "procs_alloc": np.asarray(procs_alloc, dtype=np.int64),
        "procs_req": np.asarray(procs_req, dtype=np.int64),
        "nodes_alloc": np.asarray(nodes_alloc, dtype=np.int64),
        "line": np.asarray(line_no, dtype=np.int64),
    }
    extra = {
        "logged_start_s": start_arr.astype(np.int64),
        "logged_nodelist": nodelists,
        "logged_hosts": hosts,
        "state": states,
        "partition": partitions,
        "user": users,
        # sbatch --switches=N@TIME as the SubmitLine shows it (0: not asked)
        "max_leaves": np.asarray([n for n, _ in switches], dtype=np.int64),
        "switch_wait_s": np.asarray([w for _, w in switches], dtype=np.int64),
    }
    note: dict[str, Any] = {"layout": layout.kind}
    if lenient:
        note["lenient_examples"] = examples
    return normalize(
        raw,
        source=src,
        fmt="sacct",
        settings=settings,
        records=records,
        skipped=skipped,
        header={},
        time_origin_epoch_s=origin,
        extra=extra,
        settings_note=note,
        lenient=lenient,
        allow_long_span=allow_long_span,
        field_names=field_names,
    )


def _parse_job(
    vals: dict[int, str],
    name: list[str],
    raw_id: str,
    c_id: int,
    c_submit: int,
    c_start: int,
    c_end: int | None,
    c_elapsed_raw: int | None,
    c_elapsed: int | None,
    c_limit: int | None,
    c_limit_raw: int | None,
    c_nnodes: int | None,
    c_procs: int | None,
    c_req: int | None,
    c_nodelist: int | None,
    c_state: int | None,
) -> tuple[int, int, int | None, int, int, int, int, int, str, list[str]]:
    """The raw values of one job record (raises _FieldError for a bad value)."""
    if not _RE_UINT.fullmatch(raw_id):
        if name[c_id].lower() == "jobid" and re.fullmatch(r"\d+[_+].*", raw_id):
            raise _FieldError(
                name[c_id],
                f"job id {raw_id!r} is an array task or a heterogeneous-job component and has "
                "no integer id; add JobIDRaw to sacct --format",
            )
        raise _FieldError(name[c_id], f"expected an integer job id, got {raw_id!r}")
    jid = int(raw_id)
    if jid > MAX_INT64:
        raise _FieldError(name[c_id], f"job id {raw_id} is out of range (at most 2^63 - 1)")

    submit = _time(vals[c_submit], name[c_submit])
    if submit is None:
        raise _FieldError(name[c_submit], _TIME_HINT.format(vals[c_submit]))
    start = _time(vals[c_start], name[c_start])
    nodelist = vals[c_nodelist].strip() if c_nodelist is not None else ""
    # sacct prints "None assigned" for a job that never got nodes (and then a Start equal
    # to its End, e.g. when it was cancelled while pending).
    started = start is not None and nodelist != _NOT_ALLOCATED
    if not started:
        nodelist = ""
    # A job still running when the log was taken has no End yet; its Elapsed is only a
    # lower bound of its run time, so the run time is unknown.
    state = vals[c_state].strip().upper() if c_state is not None else ""
    running = state.startswith("RUNNING")
    if c_end is not None and _time(vals[c_end], name[c_end]) is None:
        running = True

    if c_elapsed_raw is not None and vals[c_elapsed_raw].strip() != "":
        elapsed = _int_or(vals[c_elapsed_raw], name[c_elapsed_raw])
    elif c_elapsed is not None:
        elapsed = _duration(vals[c_elapsed], name[c_elapsed])
    else:
        elapsed = -1
    rt = elapsed if started and not running else -1

    if c_limit is not None:
        wt = _duration(vals[c_limit], name[c_limit])
    else:
        s = vals[c_limit_raw].strip()  # type: ignore[index]
        wt = -1 if s.lower() in _UNKNOWN_DURATIONS else _int_or(s, name[c_limit_raw]) * 60  # type: ignore[index]
        wt = max(wt, -1)

    nn = _int_or(vals[c_nnodes], name[c_nnodes]) if c_nnodes is not None else -1
    nn = nn if started and nn > 0 else -1
    pa = _int_or(vals[c_procs], name[c_procs]) if c_procs is not None else -1
    pr = _int_or(vals[c_req], name[c_req]) if c_req is not None else -1

    hl: list[str] = []
    if started and nodelist:
        try:
            hl = list(_expand_cached(nodelist))
        except hostlist.BadHostlist as exc:
            raise _FieldError(name[c_nodelist], f"bad host list {nodelist!r}: {exc}") from None  # type: ignore[index]
    return jid, submit, (start if started else None), rt, wt, nn, pa, pr, nodelist, hl

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
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, NamedTuple

import hostlist
import numpy as np

from ..errors import TraceFormatError
from ..limits import EPOCH_MAX_S, EPOCH_MIN_S, MAX_INT64, SLURM_MAX_SWITCH_WAIT_S
from .model import Workload, ids_of_names
from .normalize import NormalizeSettings, normalize
from .sacct_records import FREE_TEXT, XDMOD_FIELDS, Layout, Splitter, read_layout, read_lines, split_message
from .tally import Tally

__all__ = ["FREE_TEXT", "XDMOD_FIELDS", "parse_duration", "parse_time", "read_sacct"]


# The values sacct prints for "no limit" or "not known".
_UNKNOWN_DURATIONS = frozenset({"", "unlimited", "partition_limit", "invalid", "unknown", "none"})
_UNKNOWN_TIMES = frozenset({"", "unknown", "none"})
_NOT_ALLOCATED = "None assigned"

_RE_DHMS = re.compile(r"(?:(\d+)-)?(\d+):(\d\d):(\d\d)", re.ASCII)
_RE_MS = re.compile(r"(\d+):(\d\d)(?:\.\d+)?", re.ASCII)
_RE_MIN = re.compile(r"\d+", re.ASCII)
_RE_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)", re.ASCII)
_RE_UINT = re.compile(r"\d+", re.ASCII)

_DURATION_HINT = "expected a duration like 1-00:00:00, got {!r}"
_TIME_HINT = "expected a time like 2021-01-06T14:09:15, got {!r}"
_INT_HINT = "expected a whole number, got {!r}"

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


_RE_SWITCHES = re.compile(r"--switches[= ](\d+)(?:@(\S+))?", re.ASCII)
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


# --------------------------------------------------------------------------- columns


#: Columns the reader takes values from (lower case): none may appear twice.
_READ_COLUMNS = frozenset(
    c.lower()
    for c in ("JobIDRaw", "JobID", "Submit", "Start", "End", "ElapsedRaw", "Elapsed", "Timelimit", "TimelimitRaw",
              "NNodes", "AllocCPUS", "NCPUS", "ReqCPUS", "NodeList", "State", "Partition", "User", "Account", "QOS")
)  # fmt: skip

#: Columns a log must have (any one of the alternatives), in the order they are checked.
_REQUIRED = (
    (("JobIDRaw", "JobID"), "JobIDRaw (or JobID)"),
    (("Submit",), "Submit"),
    (("Start",), "Start"),
    (("ElapsedRaw", "Elapsed"), "Elapsed (or ElapsedRaw)"),
    (("Timelimit", "TimelimitRaw"), "Timelimit"),
    (("NNodes", "AllocCPUS", "NCPUS"), "NNodes (or AllocCPUS/NCPUS)"),
)


@dataclass(frozen=True)
class Columns:
    """Where each column the reader takes values from is: its index in a record's fields,
    or None when the log has no such column. Built once per file (:meth:`of`)."""

    job_id: int  # JobIDRaw, else JobID: gives the integer job id
    jobid: int | None  # JobID as printed: tells steps and repeated records apart
    submit: int
    start: int
    end: int | None
    elapsed_raw: int | None  # seconds; preferred to Elapsed when the field is not empty
    elapsed: int | None
    timelimit: int | None
    timelimit_raw: int | None  # minutes; only used (and set) when there is no Timelimit
    nnodes: int | None
    procs: int | None  # AllocCPUS, else NCPUS
    req_cpus: int | None
    nodelist: int | None
    state: int | None
    partition: int | None
    user: int | None
    account: int | None
    qos: int | None
    # JobName, a free-text column: read when it can be told apart (Splitter's ``text``),
    # never needed to read a record; None when absent or named twice in the header
    jobname: int | None = None

    @classmethod
    def of(cls, path: str, layout: Layout) -> Columns:
        """The columns of ``layout``.

        Raises:
            TraceFormatError: naming the header line, when a required column is missing.
        """
        for alternatives, label in _REQUIRED:
            if layout.col(*alternatives) is None:
                raise TraceFormatError(
                    path,
                    f"the header has no {label} column; run sacct with "
                    "--format=JobIDRaw,JobID,Submit,Start,End,Elapsed,Timelimit,NNodes,AllocCPUS,"
                    "ReqCPUS,NodeList,State,Partition,User,Account,QOS,JobName (or --format=ALL)",
                    line=layout.header_line,
                    field=alternatives[0],
                )

        def required(*names: str) -> int:
            c = layout.col(*names)
            assert c is not None  # checked above
            return c

        timelimit = layout.col("Timelimit")
        return cls(
            job_id=required("JobIDRaw", "JobID"),
            jobid=layout.col("JobID"),
            submit=required("Submit"),
            start=required("Start"),
            end=layout.col("End"),
            elapsed_raw=layout.col("ElapsedRaw"),
            elapsed=layout.col("Elapsed"),
            timelimit=timelimit,
            timelimit_raw=layout.col("TimelimitRaw") if timelimit is None else None,
            nnodes=layout.col("NNodes"),
            procs=layout.col("AllocCPUS", "NCPUS"),
            req_cpus=layout.col("ReqCPUS"),
            nodelist=layout.col("NodeList"),
            state=layout.col("State"),
            partition=layout.col("Partition"),
            user=layout.col("User"),
            account=layout.col("Account"),
            qos=layout.col("QOS"),
            # two JobName columns could hold different names: which is the job's cannot be
            # told, and the name is not needed to replay the job, so it is unknown
            jobname=layout.col("JobName") if [n.lower() for n in layout.names].count("jobname") == 1 else None,
        )

    def used(self) -> list[int]:
        """The typed columns in use, each once, in the order of the fields above (the
        splitter reports the first column it cannot locate in this order)."""
        found = (getattr(self, f.name) for f in fields(self) if f.name != "jobname")
        return list(dict.fromkeys(c for c in found if c is not None))

    def text(self) -> list[int]:
        """The free-text columns read when they can be located (JobName)."""
        return [] if self.jobname is None else [self.jobname]

    def field_names(self, names: list[str]) -> dict[str, str]:
        """The column name behind each raw column of :func:`normalize` (for its messages)."""
        runtime = self.elapsed_raw if self.elapsed_raw is not None else self.elapsed
        walltime = self.timelimit if self.timelimit is not None else self.timelimit_raw
        pairs = (("submit_s", self.submit), ("runtime_s", runtime), ("walltime_s", walltime),
                 ("procs_alloc", self.procs), ("procs_req", self.req_cpus), ("nodes_alloc", self.nnodes))  # fmt: skip
        return {raw: names[c] for raw, c in pairs if c is not None}


class _Job(NamedTuple):
    """The values of one job record (times in Unix seconds)."""

    job_id: int
    submit: int
    start: int | None  # None: never started
    runtime_s: int
    walltime_s: int
    nodes: int
    procs_alloc: int
    procs_req: int
    nodelist: str
    hosts: list[str]


class _Jobs:
    """The jobs read so far, in file order, as columns."""

    def __init__(self) -> None:
        self.jobs: list[_Job] = []
        self.lines: list[int] = []
        self.states: list[str] = []
        self.partitions: list[str] = []
        self.users: list[str] = []
        self.accounts: list[str] = []
        self.qoses: list[str] = []
        self.apps: list[str] = []
        #: job records whose JobName could not be told apart (a '|' that could belong to it
        #: or to another text column): their application is unknown
        self.apps_not_located = 0
        self.switches: list[tuple[int, int]] = []
        self._seen: set[tuple[Any, ...]] = set()
        self._ids: set[str] = set()
        #: jobs kept whose job id an earlier kept job has (repairs["duplicate_job_id"])
        self.repeated_ids = 0

    def add(self, job: _Job, line: int, vals: dict[int, str], cols: Columns, raw_id: str, pieces: list[str]) -> bool:
        """Keep a job; False (and nothing kept) when it repeats one already kept."""
        # The same allocation printed again (sacct prints a job once per association or
        # cluster it matches, and dumps get concatenated): keep the first, count the rest.
        identity = (vals[cols.jobid].strip() if cols.jobid is not None else raw_id, job.job_id, job.submit, job.start, job.runtime_s, job.nodelist)
        if identity in self._seen:
            return False
        self._seen.add(identity)
        # Another job with an id already read (ids wrap, databases are reset, clusters
        # share a dump): kept, counted (its job_id is then not unique in the outputs)
        # (the id as JobID prints it: array tasks share JobIDRaw's job number in some dumps)
        if identity[0] in self._ids:
            self.repeated_ids += 1
        self._ids.add(identity[0])
        self.jobs.append(job)
        self.lines.append(line)
        self.switches.append(_switches_requested(pieces))
        self.states.append(vals[cols.state].strip() if cols.state is not None else "")
        self.partitions.append(vals[cols.partition].strip() if cols.partition is not None else "")
        self.users.append(vals[cols.user].strip() if cols.user is not None else "")
        self.accounts.append(vals[cols.account].strip() if cols.account is not None else "")
        self.qoses.append(vals[cols.qos].strip() if cols.qos is not None else "")
        if cols.jobname is not None and cols.jobname not in vals:
            self.apps_not_located += 1
        self.apps.append(vals.get(cols.jobname, "").strip() if cols.jobname is not None else "")
        return True

    def columns(self) -> tuple[int | None, dict[str, np.ndarray], dict[str, Any], dict[str, list[str]]]:
        """(time origin, raw columns for :func:`normalize`, extra columns, the names of the
        id columns)."""
        jobs = self.jobs
        submit_ep = [j.submit for j in jobs]
        origin = min(submit_ep) if submit_ep else None
        sub_arr = np.asarray(submit_ep, dtype=np.int64)
        started = np.asarray([j.start is not None for j in jobs], dtype=bool)
        start_arr = np.asarray([-1 if j.start is None else j.start for j in jobs], dtype=np.int64)
        if origin is not None:
            sub_arr = sub_arr - origin
            # a Start before the earliest Submit is negative, not "never started": that is
            # logged_started (as-logged reported such a job as "no start in the log")
            start_arr = np.where(started, start_arr - origin, -1)

        def col(values: list[int]) -> np.ndarray:
            return np.asarray(values, dtype=np.int64)

        raw = {
            "job_id": col([j.job_id for j in jobs]),
            "submit_s": sub_arr,
            "runtime_s": col([j.runtime_s for j in jobs]),
            "walltime_s": col([j.walltime_s for j in jobs]),
            "procs_alloc": col([j.procs_alloc for j in jobs]),
            "procs_req": col([j.procs_req for j in jobs]),
            "nodes_alloc": col([j.nodes for j in jobs]),
            "line": col(self.lines),
        }
        extra = {
            "logged_start_s": start_arr.astype(np.int64),
            "logged_started": started,
            "logged_nodelist": [j.nodelist for j in jobs],
            "logged_hosts": [j.hosts for j in jobs],
            "state": self.states,
            "partition": self.partitions,
            "user": self.users,
            # sbatch --switches=N@TIME as the SubmitLine shows it (0: not asked)
            "max_leaves": col([n for n, _ in self.switches]),
            "switch_wait_s": col([w for _, w in self.switches]),
        }
        names: dict[str, list[str]] = {}
        # the job's application is its JobName, numbered as the id columns are (what
        # --network rules call `app`, matched by name); not an id column: the engine has
        # no use for it
        for name, texts in (("user_id", self.users), ("account_id", self.accounts), ("qos_id", self.qoses), ("partition_id", self.partitions), ("app", self.apps)):
            ids, names[name] = ids_of_names(texts)
            extra[name] = ids
        return origin, raw, extra, names


# --------------------------------------------------------------------------- reader


def _is_header_line(line: str) -> bool:
    """A line of column names: it names the job id and the submit time columns (no job's
    fields are both, whatever its free text)."""
    names = {p.strip().lower() for p in line.strip().removeprefix("\ufeff").split("|")}
    return "submit" in names and bool(names & {"jobid", "jobidraw"})


def read_sacct(
    path: str | Path,
    *,
    lenient: bool = False,
    cores_per_node: int | None = 1,
    size_field: Literal["auto", "allocated", "requested"] = "auto",
    missing_walltime: Literal["runtime"] | int = "runtime",
    missing_runtime: Literal["skip", "zero"] = "skip",
    allow_long_span: bool = False,
) -> Workload:
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
    origin, -1 if the job never started; negative for a start before the origin),
    ``logged_started`` (bool array: the log gives a ``Start``), ``logged_nodelist`` (NodeList as printed, ""
    if none), ``logged_hosts`` (NodeList expanded to host names), ``state``,
    ``partition`` and ``user`` (as printed, "" when the column is absent). Id columns:
    ``user_id``, ``account_id``, ``qos_id``, ``partition_id`` from ``User``, ``Account``,
    ``QOS``, ``Partition`` (ids in order of first appearance, their names in
    ``Workload.names``; -1 when the column is absent or empty). The application,
    ``extra["app"]``, is the job's ``JobName``, numbered the same way (names in
    ``Workload.names["app"]``); -1 when the column is absent or empty, or when a ``|``
    in the record leaves the name's extent in doubt (counted in
    ``settings["jobname_not_located"]``). Step records give no names.

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
    cols = Columns.of(src, layout)

    records = 0
    skipped: dict[str, int] = {}
    tally = Tally(src, lenient, skipped)
    jobs = _Jobs()
    # Dumps put together (cat jan.log feb.log) repeat the header line: not a record. One
    # naming other columns is refused even with lenient, which would skip it as malformed
    # and then read the next dump's values under the first dump's columns.
    header_text = lines[layout.header_line - 1].strip() if layout.header_line is not None else None
    repeated_headers = 0
    for first0, last0, pieces, status, detail in Splitter(layout, cols.used(), lines, cols.text()).records(data_start):
        if (
            header_text is not None
            and first0 == last0
            # a job id starts with a digit: the full look only at lines that cannot be records' first
            and not (cols.job_id < len(pieces) and pieces[cols.job_id].strip()[:1].isdigit())
            and _is_header_line(lines[first0])
        ):
            if lines[first0].strip().removeprefix("\ufeff") == header_text:
                repeated_headers += 1
                continue
            raise TraceFormatError(
                src,
                f"a header naming other columns than line {layout.header_line}'s: logs of different sacct --format "
                "put together; read them one at a time (or print them with the same --format)",
                line=first0 + 1,
            )
        records += 1
        first, last = first0 + 1, last0 + 1
        if status != "ok":
            field, message = split_message(layout, len(pieces), first, last, status, detail)
            tally.fail(message, line=first, field=field)
            continue
        vals, relaxed = detail
        raw_id = vals[cols.job_id].strip()
        if "." in raw_id or (cols.jobid is not None and "." in vals[cols.jobid]):
            skipped["job_step"] = skipped.get("job_step", 0) + 1
            continue
        try:
            job = _parse_job(vals, raw_id, cols, layout.names)
        except _FieldError as exc:
            tally.fail(exc.message, line=first, field=exc.field)
            continue
        if relaxed:
            # Found only by ignoring the shapes of our fields, yet every value parsed:
            # the shapes and the parsers disagree. Refuse rather than guess.
            tally.fail(split_message(layout, len(pieces), first, last, "nosplit", None)[1], line=first)
            continue
        if not jobs.add(job, first, vals, cols, raw_id, pieces):
            skipped["duplicate_record"] = skipped.get("duplicate_record", 0) + 1

    if records == 0:
        raise TraceFormatError(src, "no job records found (only a header)")
    if not jobs.jobs:
        if tally.malformed:
            raise tally.no_valid_records()
        raise TraceFormatError(src, f"no job records found: all {records} records are job steps (a JobID with '.')")

    origin, raw, extra, names = jobs.columns()
    note: dict[str, Any] = {"layout": layout.kind}
    if repeated_headers:
        note["repeated_header_lines"] = repeated_headers
    if jobs.apps_not_located:
        note["jobname_not_located"] = jobs.apps_not_located
    if lenient:
        note["lenient_examples"] = tally.examples
    return normalize(
        raw,
        source=src,
        fmt="sacct",
        settings=settings,
        records=records,
        repairs={"duplicate_job_id": jobs.repeated_ids} if jobs.repeated_ids else None,
        skipped=skipped,
        header={},
        time_origin_epoch_s=origin,
        extra=extra,
        names=names,
        settings_note=note,
        lenient=lenient,
        allow_long_span=allow_long_span,
        field_names=cols.field_names(layout.names),
    )


def _parse_job(vals: dict[int, str], raw_id: str, cols: Columns, name: list[str]) -> _Job:
    """The values of one job record (raises _FieldError for a bad value)."""
    if not _RE_UINT.fullmatch(raw_id):
        if name[cols.job_id].lower() == "jobid" and re.fullmatch(r"\d+[_+].*", raw_id, re.ASCII):
            raise _FieldError(
                name[cols.job_id],
                f"job id {raw_id!r} is an array task or a heterogeneous-job component and has "
                "no integer id; add JobIDRaw to sacct --format",
            )
        raise _FieldError(name[cols.job_id], f"expected an integer job id, got {raw_id!r}")
    jid = int(raw_id)
    if jid > MAX_INT64:
        raise _FieldError(name[cols.job_id], f"job id {raw_id} is out of range (at most 2^63 - 1)")

    submit = _time(vals[cols.submit], name[cols.submit])
    if submit is None:
        raise _FieldError(name[cols.submit], _TIME_HINT.format(vals[cols.submit]))
    start = _time(vals[cols.start], name[cols.start])
    nodelist = vals[cols.nodelist].strip() if cols.nodelist is not None else ""
    # sacct prints "None assigned" for a job that never got nodes (and then a Start equal
    # to its End, e.g. when it was cancelled while pending).
    started = start is not None and nodelist != _NOT_ALLOCATED
    if not started:
        nodelist = ""
    # A job still running when the log was taken has no End yet; its Elapsed is only a
    # lower bound of its run time, so the run time is unknown.
    state = vals[cols.state].strip().upper() if cols.state is not None else ""
    running = state.startswith("RUNNING")
    if cols.end is not None and _time(vals[cols.end], name[cols.end]) is None:
        running = True

    if cols.elapsed_raw is not None and vals[cols.elapsed_raw].strip() != "":
        elapsed = _int_or(vals[cols.elapsed_raw], name[cols.elapsed_raw])
    elif cols.elapsed is not None:
        elapsed = _duration(vals[cols.elapsed], name[cols.elapsed])
    else:
        elapsed = -1
    rt = elapsed if started and not running else -1

    if cols.timelimit is not None:
        wt = _duration(vals[cols.timelimit], name[cols.timelimit])
    else:
        assert cols.timelimit_raw is not None  # Columns.of requires one of the two
        s = vals[cols.timelimit_raw].strip()
        wt = -1 if s.lower() in _UNKNOWN_DURATIONS else _int_or(s, name[cols.timelimit_raw]) * 60
        wt = max(wt, -1)

    nn = _int_or(vals[cols.nnodes], name[cols.nnodes]) if cols.nnodes is not None else -1
    nn = nn if started and nn > 0 else -1
    pa = _int_or(vals[cols.procs], name[cols.procs]) if cols.procs is not None else -1
    pr = _int_or(vals[cols.req_cpus], name[cols.req_cpus]) if cols.req_cpus is not None else -1

    hl: list[str] = []
    if started and nodelist:
        assert cols.nodelist is not None  # a nodelist is only read from that column
        try:
            hl = list(_expand_cached(nodelist))
        except hostlist.BadHostlist as exc:
            raise _FieldError(name[cols.nodelist], f"bad host list {nodelist!r}: {exc}") from None
    return _Job(jid, submit, (start if started else None), rt, wt, nn, pa, pr, nodelist, hl)

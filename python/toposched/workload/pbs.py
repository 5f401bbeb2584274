"""PBS accounting logs: Torque (OpenPBS heirs) and PBS Pro ``E`` (job end) records.

A PBS server writes one line per event, ``MM/DD/YYYY HH:MM:SS;T;<job id>;key=value ...``
(``T`` is the record type: ``Q`` queued, ``S`` started, ``E`` ended, ``D`` deleted, ...).
Only ``E`` records become jobs: each holds everything about a finished job (queue time,
start, end, requested and used resources, the hosts it ran on). The other record types
repeat part of it and are only counted (``settings["record_types_ignored"]``).

The reader only *collects* raw columns and hands them to
:func:`toposched.workload.normalize.normalize`, like the SWF and sacct readers. Which
attribute gives which column, and the few repairs this reader makes itself, are listed in
:func:`read_pbs` and ``docs/pbs.md``.
"""

from __future__ import annotations

import calendar
import functools
import re
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..errors import TraceFormatError
from ..limits import EPOCH_MAX_S, EPOCH_MIN_S, MAX_INT64, MAX_SPAN_LONG_S, MAX_SPAN_S, years
from ._io import read_bytes, refuse_utf16
from .model import Workload, ids_of_names
from .normalize import NormalizeSettings, normalize
from .tally import Tally

__all__ = ["LINE_RE", "parse_exec_host", "parse_exec_vnode", "parse_pbs_duration", "parse_resource_spec", "read_pbs"]

#: One accounting line: date, time, record type, job id, message.
LINE_RE = re.compile(r"(\d\d)/(\d\d)/(\d{4}) (\d\d):(\d\d):(\d\d);([A-Za-z]);([^;]*);(.*)\Z", re.ASCII)
# A job id: number, optional array index, optional ".server" suffix (any text).
_JOBID_RE = re.compile(r"(\d+)(\[\d*\]|-\d+)?(?:\.(.*))?\Z", re.ASCII)
_INT_RE = re.compile(r"-?\d+\Z", re.ASCII)
_SLOTS_RE = re.compile(r"(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)(?:\*(\d+))?\Z", re.ASCII)
_VNODE_SUFFIX_RE = re.compile(r"\[\d+\]\Z", re.ASCII)
_LEADING_COUNT_RE = re.compile(r"(\d+)(?::|\Z)", re.ASCII)


def _is_uint(text: str) -> bool:
    """A whole number: ASCII digits only, as the regular expressions here (``re.ASCII``)
    and the SWF reader take them. ``str.isdecimal()`` alone also takes other scripts'
    digits ("٢", which ``int`` reads as 2), and a log holding them is not a log."""
    return text.isascii() and text.isdecimal()

class _FieldError(ValueError):
    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


# --------------------------------------------------------------------------- values


def parse_pbs_duration(text: str) -> int:
    """Seconds in a PBS duration: ``SS``, ``MM:SS``, ``HH:MM:SS`` or ``DD:HH:MM:SS``
    (hours may exceed 23: ``144:00:00``).

    Raises:
        ValueError: for anything else.
    """
    s = text.strip()
    parts = s.split(":")
    if not 1 <= len(parts) <= 4 or not all(_is_uint(p) for p in parts):
        raise ValueError(f"expected a duration like 04:00:00, got {text!r}")
    values = [int(p) for p in parts]
    # minutes and seconds below 60 when a larger unit is given
    if len(values) >= 2 and values[-1] >= 60:
        raise ValueError(f"expected a duration like 04:00:00, got {text!r} (seconds >= 60)")
    if len(values) >= 3 and values[-2] >= 60:
        raise ValueError(f"expected a duration like 04:00:00, got {text!r} (minutes >= 60)")
    scale = (1, 60, 3600, 86400)
    return sum(v * scale[i] for i, v in enumerate(reversed(values)))


def parse_exec_host(text: str) -> tuple[list[str], int]:
    """Hosts (distinct, in order of first appearance) and CPU slots of an ``exec_host``.

    Forms: Torque ``i02n33/7+i02n33/6`` (one entry per core), Torque 4+ ranges and lists
    ``n1/0-3`` / ``n1/0,2``, PBS Pro ``c1/0*13`` (``*13``: 13 CPUs), and a bare host
    ``n1`` (one slot).

    Raises:
        ValueError: for an empty host name or a slot part that is none of these.
    """
    hosts: dict[str, None] = {}
    slots = 0
    for part in text.strip().split("+"):
        host, sep, spec = part.partition("/")
        host = host.strip()
        if not host:
            raise ValueError(f"empty host name in {part!r}")
        hosts.setdefault(host, None)
        if not sep:
            slots += 1
            continue
        m = _SLOTS_RE.match(spec.strip())
        if m is None:
            raise ValueError(f"bad slot list {spec!r} after host {host!r} (expected e.g. 7, 0-3, 0*13)")
        if m.group(2) is not None:
            slots += int(m.group(2))
        else:
            for item in m.group(1).split(","):
                lo, _, hi = item.partition("-")
                if hi and int(hi) < int(lo):
                    raise ValueError(f"bad slot range {item!r} after host {host!r}")
                slots += int(hi) - int(lo) + 1 if hi else 1
    return list(hosts), slots


def parse_exec_vnode(text: str) -> tuple[list[str], int]:
    """Hosts and CPUs of a PBS Pro ``exec_vnode``: ``(c1:ncpus=13)+(c2:ncpus=13)``, chunks
    in parentheses, several vnodes of a chunk joined by ``+``. A vnode ``host[N]`` belongs
    to host ``host`` (PBS Pro's naming of a host's vnodes).

    Raises:
        ValueError: for an empty vnode name or a non-integer ``ncpus``.
    """
    hosts: dict[str, None] = {}
    cpus = 0
    body = text.strip()
    for piece in body.replace("(", "").replace(")", "").split("+"):
        piece = piece.strip()
        name, _, resources = piece.partition(":")
        if not name:
            raise ValueError(f"empty vnode name in {piece!r}")
        hosts.setdefault(_VNODE_SUFFIX_RE.sub("", name), None)
        for res in resources.split(":"):
            key, _, value = res.partition("=")
            if key == "ncpus":
                if not _is_uint(value):
                    raise ValueError(f"ncpus of vnode {name!r}: expected a whole number, got {value!r}")
                cpus += int(value)
    return list(hosts), cpus


def parse_resource_spec(text: str, per_node_key: str) -> tuple[int, int]:
    """(nodes, cpus) of a Torque ``nodes`` spec (``4:ppn=8``, ``n1:ppn=2+n2``;
    ``per_node_key="ppn"``) or a PBS Pro ``select`` (``5:ncpus=13+1:ncpus=2``;
    ``per_node_key="ncpus"``). A part that starts with a count asks for that many nodes
    (chunks); one that starts with a host name or property, or with a resource, for one.

    Raises:
        ValueError: for a non-integer count or per-node value.
    """
    nodes = cpus = 0
    for part in text.strip().split("+"):
        items = part.strip().split(":")
        count = 1
        first = items[0]
        rest = items
        if _is_uint(first):
            count = int(first)
            rest = items[1:]
        elif first == "":
            raise ValueError(f"empty part in {text!r}")
        per = 1
        for item in rest:
            key, sep, value = item.partition("=")
            if sep and key == per_node_key:
                if not _is_uint(value):
                    raise ValueError(f"{per_node_key} must be a whole number, got {value!r}")
                per = int(value)
        nodes += count
        cpus += count * per
    return nodes, cpus


def _split_message(message: str) -> dict[str, str]:
    """``key=value`` pairs separated by blanks. A blank-separated word without ``=`` (a
    value with blanks) continues the previous value; a value opened with ``"`` runs to
    the closing quote (without one, the ``"`` is a character of the value)."""
    words = message.split()
    if '"' not in message:
        # The usual record: every word a key=value pair, no quotes. One dict() call does
        # it (3x faster than the loop); a word without '=' (ValueError) or with an empty
        # key takes the general rule below, which gives the same pairs for this case.
        try:
            out = dict(w.split("=", 1) for w in words)
        except ValueError:
            pass
        else:
            if "" not in out:
                return out
    return _split_words(words)


def _split_words(words: list[str]) -> dict[str, str]:
    """The general rule of :func:`_split_message` over the message's blank-separated words."""
    out: dict[str, str] = {}
    last: str | None = None
    i = 0
    while i < len(words):
        w = words[i]
        key, sep, value = w.partition("=")
        if sep and key:
            if value.startswith('"') and not (len(value) > 1 and value.endswith('"')):
                j = i + 1
                while j < len(words) and not words[j].endswith('"'):
                    j += 1
                if j < len(words):
                    value = " ".join([value, *words[i + 1 : j + 1]])
                    i = j
                # else no closing quote: the '"' is part of the value as written (Torque
                # does not quote), and the words after it are read as usual; run to the
                # end of the record, it swallowed the attributes after it (walltimes,
                # ncpus), which then looked absent and were "repaired"
            if len(value) > 1 and value[0] == value[-1] == '"':
                value = value[1:-1]
            out[key] = value
            last = key
        elif last is not None:
            out[last] = f"{out[last]} {w}"
        i += 1
    return out


@functools.lru_cache(maxsize=4096)
def _month_start_s(year: int, month: int) -> int:
    """Unix seconds of the first of the month (UTC): ``calendar.timegm``'s own sum, with
    the month looked up once (a log's records fall in a few hundred months).

    Raises:
        ValueError: for year 0 (no such date; not cached).
    """
    return calendar.timegm((year, month, 1, 0, 0, 0))


def _epoch(attrs: dict[str, str], key: str) -> int | None:
    v = attrs.get(key)
    if v is None or v == "":
        return None
    v = v.strip()
    if not _is_uint(v):
        raise _FieldError(key, f"expected Unix seconds, got {v!r}")
    return int(v)


# --------------------------------------------------------------------------- reader


def read_pbs(
    path: str | Path,
    *,
    lenient: bool = False,
    cores_per_node: int | None = 1,
    size_field: Literal["auto", "allocated", "requested"] = "auto",
    missing_walltime: Literal["runtime"] | int = "runtime",
    missing_runtime: Literal["skip", "zero"] = "skip",
    allow_long_span: bool = False,
) -> Workload:
    """Read a PBS/Torque or PBS Pro accounting log into a normalized
    :class:`~toposched.workload.model.Workload`.

    Records:
        Every ``E`` record is a job record (``records`` counts them, plus malformed lines).
        An ``E`` record repeating an earlier one (same job number and array index, same
        submit, start and end; e.g. ``6.edge.ccr.buffalo.edu`` and then ``6``) is counted
        in ``skipped["duplicate_record"]``; the first one is kept. Other record types are
        counted by type in ``settings["record_types_ignored"]``; blank lines are ignored.
        So ``len(workload) + sum(workload.skipped.values()) == workload.records``.

    Fields (raw columns handed to :func:`~toposched.workload.normalize.normalize`):
        * ``job_id``: the job number (``123`` of ``123[4].server``); the id as written is
          in ``extra["log_job_id"]``.
        * ``submit_s``: ``qtime``, else ``ctime`` (repair ``submit_from_ctime``), else
          ``etime`` (``submit_from_etime``); relative to the earliest submit of the file
          (``time_origin_epoch_s``).
        * ``runtime_s``: ``resources_used.walltime``; without it ``end - start`` (repair
          ``runtime_from_end_minus_start``); unknown (-1) for a job that never started
          (no ``start``).
        * ``walltime_s``: ``Resource_List.walltime``, else unknown (-1).
        * ``nodes_alloc``: distinct hosts of ``exec_host`` (else of ``exec_vnode``); for a
          job without either, ``Resource_List.nodect``, else the count of
          ``Resource_List.nodes`` (Torque, ``4:ppn=8``), else of ``Resource_List.select``
          (PBS Pro, ``5:ncpus=13``). When the hosts differ in number from that request,
          the hosts win, counted as ``nodes_from_exec_host``. A ``nodect`` that is a nodes
          spec (``1:ppn=24:gpu=4``) is read as one, counted as
          ``nodect_read_as_nodes_spec``.
        * ``procs_alloc``: ``resources_used.ncpus``, else the CPU slots of ``exec_host``
          (``exec_vnode``), else ``Resource_List.ncpus``; ``procs_req``: the CPUs of
          ``select``, else of ``nodes`` (count x ppn), else ``Resource_List.ncpus``.
        * ``line``: the 1-based line of the record.

    Extra per-job columns: ``logged_start_s`` (``start`` relative to the origin; -1 if
    none, negative for a start before the origin), ``logged_started`` (bool: the log
    gives a ``start``), ``logged_end_s`` (``end``, likewise), ``logged_hosts`` (list of host lists,
    distinct, in order of first appearance), ``logged_nodelist`` (``exec_host`` as
    printed, else ``exec_vnode``; ``""`` if neither), ``log_job_id``, ``queue``, ``user``,
    ``exit_status`` (strings, ``""`` when absent). Id columns: ``user_id`` from ``user``,
    ``account_id`` from ``account`` (not ``group``, a Unix group), ``partition_id`` from
    ``queue`` (ids in order of first appearance, their names in ``Workload.names``; -1
    when absent); ``qos_id`` is -1 (PBS logs have no QOS). The application,
    ``extra["app"]``, is the job's ``jobname``, numbered the same way (names in
    ``Workload.names["app"]``; -1 when absent).

    Args:
        path: the log (``.gz`` is decompressed).
        lenient: skip malformed lines and records (counted in
            ``skipped["malformed_line"]``, the first five messages kept in
            ``settings["lenient_examples"]``) instead of raising.
        cores_per_node, size_field, missing_walltime, missing_runtime: see
            :class:`~toposched.workload.normalize.NormalizeSettings` (``cores_per_node``
            None means 1). Only jobs whose node count the log does not give use
            ``cores_per_node``.

    Raises:
        TraceFormatError: naming the file, the line and the attribute, for a line that is
            not ``MM/DD/YYYY HH:MM:SS;T;id;message``, a job id that does not start with a
            number, a bad time, duration, host list or resource spec in an attribute this
            reader uses, or a file with no ``E`` records.
    """
    settings = NormalizeSettings(
        cores_per_node=1 if cores_per_node is None else cores_per_node,
        size_field=size_field,
        missing_walltime=missing_walltime,
        missing_runtime=missing_runtime,
    )
    src = str(path)
    # bytes that are not UTF-8 kept as \xNN: replaced by U+FFFD, two different Latin-1
    # names (josé, josè) would silently become one user, account or app
    data = read_bytes(path)
    refuse_utf16(data, path)
    text = data.decode("utf-8", errors="backslashreplace")
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        # lone carriage returns end lines, as in read_swf (no PBS value holds one): read
        # as one line, the log's records ran together into the first one's attributes
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]

    records = 0
    skipped: dict[str, int] = {}
    repairs: dict[str, int] = {}
    tally = Tally(src, lenient, skipped)
    other_types: dict[str, int] = {}
    runtime_disagrees = 0

    def count(d: dict[str, int], key: str) -> None:
        d[key] = d.get(key, 0) + 1

    cols: dict[str, list[int]] = {
        k: [] for k in ("job_id", "submit", "start", "end", "runtime_s", "walltime_s", "procs_alloc", "procs_req", "nodes_alloc", "line")
    }
    hosts_col: list[list[str]] = []
    nodelist_col: list[str] = []
    ids_col: list[str] = []
    queue_col: list[str] = []
    user_col: list[str] = []
    account_col: list[str] = []
    jobname_col: list[str] = []
    exit_col: list[str] = []
    seen: set[tuple[int, str, int, int, int]] = set()
    seen_ids: set[tuple[int, str]] = set()

    for line_no, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        m = LINE_RE.match(line.strip())
        if m is None:
            records += 1
            tally.fail(f"expected a PBS accounting line 'MM/DD/YYYY HH:MM:SS;T;job id;key=value ...', got {line[:60]!r}", line=line_no)
            continue
        month, day, _year, hour, minute, second, rtype, jobid_text, message = m.groups()
        if rtype != "E":
            other_types[rtype] = other_types.get(rtype, 0) + 1
            continue
        records += 1
        if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31 and int(hour) <= 23 and int(minute) <= 59 and int(second) <= 60):
            tally.fail(f"bad record time {line[:19]!r}", line=line_no, field="datetime")
            continue
        attrs = _split_message(message)
        try:
            row = _parse_end_record(jobid_text.strip(), attrs)
        except _FieldError as exc:
            tally.fail(exc.message, line=line_no, field=exc.field)
            continue
        (jid, index, submit, start, end, rt, wt, nodes, pa, pr, hosts, nodelist, fixes, disagree) = row
        try:
            record_s = _month_start_s(int(_year), int(month)) + (int(day) - 1) * 86_400 + int(hour) * 3600 + int(minute) * 60 + int(second)
        except ValueError:  # year 0000
            tally.fail(f"bad record time {line[:19]!r}", line=line_no, field="datetime")
            continue
        bad = _out_of_range(row, record_s, MAX_SPAN_LONG_S if allow_long_span else MAX_SPAN_S, attrs)
        if bad is not None:
            tally.fail(bad[1], line=line_no, field=bad[0])
            continue
        key = (jid, index, submit, start, end)
        if key in seen:
            count(skipped, "duplicate_record")
            continue
        seen.add(key)
        # another job with a number already read (numbers wrap, servers restart): kept,
        # counted; array subjobs (123[4], 123[5]) differ by their index
        if (jid, index) in seen_ids:
            count(repairs, "duplicate_job_id")
        seen_ids.add((jid, index))
        for f in fixes:
            count(repairs, f)
        runtime_disagrees += disagree
        cols["job_id"].append(jid)
        cols["submit"].append(submit)
        cols["start"].append(start)
        cols["end"].append(end)
        cols["runtime_s"].append(rt)
        cols["walltime_s"].append(wt)
        cols["nodes_alloc"].append(nodes)
        cols["procs_alloc"].append(pa)
        cols["procs_req"].append(pr)
        cols["line"].append(line_no)
        hosts_col.append(hosts)
        nodelist_col.append(nodelist)
        ids_col.append(jobid_text.strip())
        queue_col.append(attrs.get("queue", ""))
        user_col.append(attrs.get("user", ""))
        account_col.append(attrs.get("account", ""))
        jobname_col.append(attrs.get("jobname", "").strip())
        exit_col.append(attrs.get("Exit_status", ""))

    if records == 0:
        found = ", ".join(f"{k}={v}" for k, v in sorted(other_types.items()))
        raise TraceFormatError(src, "no job records found: no E (job end) records" + (f" (only {found})" if found else " (the file is empty)"))
    if not cols["job_id"]:
        raise tally.no_valid_records()

    submits = np.asarray(cols["submit"], dtype=np.int64)
    known = submits[submits >= 0]
    origin = int(known.min()) if len(known) else None

    def rel(a: list[int]) -> np.ndarray:
        x = np.asarray(a, dtype=np.int64)
        if origin is None:
            return x
        return np.where(x >= 0, x - origin, -1)

    columns = {
        "job_id": np.asarray(cols["job_id"], dtype=np.int64),
        "submit_s": rel(cols["submit"]),
        "runtime_s": np.asarray(cols["runtime_s"], dtype=np.int64),
        "walltime_s": np.asarray(cols["walltime_s"], dtype=np.int64),
        "procs_alloc": np.asarray(cols["procs_alloc"], dtype=np.int64),
        "procs_req": np.asarray(cols["procs_req"], dtype=np.int64),
        "nodes_alloc": np.asarray(cols["nodes_alloc"], dtype=np.int64),
        "line": np.asarray(cols["line"], dtype=np.int64),
    }
    extra = {
        "logged_start_s": rel(cols["start"]),
        # a start before the earliest submit is negative, not "none" (see sacct's)
        "logged_started": np.asarray(cols["start"], dtype=np.int64) >= 0,
        "logged_end_s": rel(cols["end"]),
        "logged_hosts": hosts_col,
        "logged_nodelist": nodelist_col,
        "log_job_id": ids_col,
        "queue": queue_col,
        "user": user_col,
        "exit_status": exit_col,
    }
    # the id columns priority/multifactor and a site's network mix read, by name as sacct's
    # (PBS has no QOS; its queue is the partition; the group is not an account)
    names: dict[str, list[str]] = {}
    # the application is the job's name (what --network rules call `app`, matched by name)
    for name, texts in (("user_id", user_col), ("account_id", account_col), ("partition_id", queue_col), ("app", jobname_col)):
        extra[name], names[name] = ids_of_names(texts)
    note: dict[str, Any] = {"record_types_ignored": dict(sorted(other_types.items()))}
    if runtime_disagrees:
        note["runtime_differs_from_end_minus_start"] = runtime_disagrees
    if lenient:
        note["lenient_examples"] = tally.examples
    return normalize(
        columns,
        source=src,
        fmt="pbs",
        settings=settings,
        records=records,
        repairs=repairs,
        skipped=skipped,
        header={},
        time_origin_epoch_s=origin,
        extra=extra,
        names=names,
        settings_note=note,
        lenient=lenient,
        allow_long_span=allow_long_span,
        field_names={"submit_s": "qtime", "runtime_s": "resources_used.walltime", "walltime_s": "Resource_List.walltime", "procs_alloc": "ncpus", "procs_req": "Resource_List.ncpus", "nodes_alloc": "exec_host (or Resource_List.nodect/nodes/select without it)"},
    )


def _requested_nodes(attrs: dict[str, str], fixes: list[str]) -> tuple[int, int]:
    """(nodes, cpus) the job asked for: nodect, else nodes spec, else select; -1 unknown."""
    nodes = cpus = -1
    sel = attrs.get("Resource_List.select")
    spec = attrs.get("Resource_List.nodes")
    if sel:
        try:
            n, c = parse_resource_spec(sel, "ncpus")
        except ValueError as exc:
            raise _FieldError("Resource_List.select", str(exc)) from None
        nodes, cpus = n, c
    if spec:
        try:
            n, c = parse_resource_spec(spec, "ppn")
        except ValueError as exc:
            raise _FieldError("Resource_List.nodes", str(exc)) from None
        nodes = n
        cpus = c if cpus < 0 else cpus
    nodect = attrs.get("Resource_List.nodect")
    if nodect:
        v = nodect.strip()
        if _is_uint(v):
            nodes = int(v)
        elif _LEADING_COUNT_RE.match(v):
            # e.g. "1:ppn=24:gpu=4": a nodes spec written into nodect
            try:
                nodes, c = parse_resource_spec(v, "ppn")
            except ValueError as exc:
                raise _FieldError("Resource_List.nodect", str(exc)) from None
            cpus = c if cpus < 0 else cpus
            fixes.append("nodect_read_as_nodes_spec")
        else:
            raise _FieldError("Resource_List.nodect", f"expected a whole number, got {nodect!r}")
    ncpus = attrs.get("Resource_List.ncpus")
    if cpus < 0 and ncpus:
        if not _is_uint(ncpus.strip()):
            raise _FieldError("Resource_List.ncpus", f"expected a whole number, got {ncpus!r}")
        cpus = int(ncpus)
    return nodes, cpus


#: How far a job's times may lie after the record's own time stamp: the stamp is local
#: time, the times are UTC (at most 14 hours apart), plus slack.
_AFTER_RECORD_S = 2 * 86_400


def _out_of_range(row: _EndRecord, record_s: int, max_span_s: int, attrs: dict[str, str]) -> tuple[str, str] | None:
    """(field, message) for the first value of a parsed E record out of range, else None.

    Counts and durations must fit the engine's integers; qtime, start and end must lie
    within 1970-2200 and not after the record's own time stamp (an E record is written when
    the job ends), nor more than the maximum span before it, nor before the job's
    ``ctime`` (its creation): a record cut short (a ``qtime=12`` left of
    ``qtime=1234567890``) would otherwise move the whole log to 1970.
    """
    try:
        created = _epoch(attrs, "ctime")
    except _FieldError:
        created = None
    _, _, submit, start, end, rt, wt, nodes, pa, pr = row[:10]
    for field, v in (("resources_used.walltime", rt), ("Resource_List.walltime", wt), ("exec_host", nodes),
                     ("resources_used.ncpus", pa), ("Resource_List.ncpus", pr)):  # fmt: skip
        if v > MAX_INT64:
            return field, f"{v} is out of range (at most 2^63 - 1)"
    for field, t in (("qtime", submit), ("start", start), ("end", end)):
        if t < 0:
            continue
        if not EPOCH_MIN_S <= t < EPOCH_MAX_S:
            return field, f"{t} is outside 1970-2200 (docs/reliability.md)"
        if t > record_s + _AFTER_RECORD_S:
            return field, f"{t} is after the record's own time ({record_s}): the record is corrupt or cut short"
        if created is not None and created > 0 and t < created:
            return field, f"{t} is before the job's ctime ({created}): the record is corrupt or cut short"
        if t < record_s - max_span_s:
            return field, (
                f"{t} is more than {years(max_span_s)} before the record's own time ({record_s}): the record is "
                "corrupt or cut short; pass --allow-long-span to accept it"
            )
    return None


#: What an E record gives: (job number, array index, submit, start, end, run time, time
#: limit, nodes, processors allocated, processors requested, hosts, node list, repairs,
#: run-time disagreement), times -1 when absent.
_EndRecord = tuple[int, str, int, int, int, int, int, int, int, int, Any, Any, list[str], int]


def _parse_end_record(jobid: str, attrs: dict[str, str]) -> _EndRecord:
    m = _JOBID_RE.match(jobid)
    if m is None:
        raise _FieldError("job_id", f"expected a job id like 123 or 123.server, got {jobid!r}")
    jid = int(m.group(1))
    if jid > 2**63 - 1:
        raise _FieldError("job_id", f"job number out of range, got {jobid!r}")
    index = m.group(2) or ""
    fixes: list[str] = []

    submit = _epoch(attrs, "qtime")
    if submit is None:
        submit = _epoch(attrs, "ctime")
        if submit is not None:
            fixes.append("submit_from_ctime")
        else:
            submit = _epoch(attrs, "etime")
            if submit is not None:
                fixes.append("submit_from_etime")
    start = _epoch(attrs, "start")
    end = _epoch(attrs, "end")
    if start == 0:  # PBS Pro writes start=0 for a job that never ran
        start = None

    disagree = 0
    used = attrs.get("resources_used.walltime")
    if start is None:
        rt = -1
    elif used:
        try:
            rt = parse_pbs_duration(used)
        except ValueError as exc:
            raise _FieldError("resources_used.walltime", str(exc)) from None
        if end is not None and end >= start and end - start != rt:
            disagree = 1
    elif end is not None and end >= start:
        rt = end - start
        fixes.append("runtime_from_end_minus_start")
    else:
        rt = -1

    limit = attrs.get("Resource_List.walltime")
    wt = -1
    if limit:
        try:
            wt = parse_pbs_duration(limit)
        except ValueError as exc:
            raise _FieldError("Resource_List.walltime", str(exc)) from None

    req_nodes, req_cpus = _requested_nodes(attrs, fixes)

    hosts: list[str] = []
    slots = -1
    nodelist = ""
    exec_host = attrs.get("exec_host", "").strip()
    exec_vnode = attrs.get("exec_vnode", "").strip()
    if start is not None and exec_host:
        try:
            hosts, slots = parse_exec_host(exec_host)
        except ValueError as exc:
            raise _FieldError("exec_host", f"bad host list {exec_host[:60]!r}: {exc}") from None
        nodelist = exec_host
    elif start is not None and exec_vnode:
        try:
            hosts, slots = parse_exec_vnode(exec_vnode)
        except ValueError as exc:
            raise _FieldError("exec_vnode", f"bad vnode list {exec_vnode[:60]!r}: {exc}") from None
        nodelist = exec_vnode

    if hosts:
        nodes = len(hosts)
        if req_nodes > 0 and req_nodes != nodes:
            fixes.append("nodes_from_exec_host")
    else:
        nodes = req_nodes

    pa = -1
    used_cpus = attrs.get("resources_used.ncpus")
    if used_cpus:
        if not _is_uint(used_cpus.strip()):
            raise _FieldError("resources_used.ncpus", f"expected a whole number, got {used_cpus!r}")
        pa = int(used_cpus)
    if pa <= 0 and slots > 0:
        pa = slots
    if pa <= 0:
        ncpus = attrs.get("Resource_List.ncpus", "").strip()
        pa = int(ncpus) if _is_uint(ncpus) else -1
    return (
        jid,
        index,
        -1 if submit is None else submit,
        -1 if start is None else start,
        -1 if end is None else end,
        rt,
        wt,
        nodes,
        pa,
        req_cpus,
        hosts,
        nodelist,
        fixes,
        disagree,
    )

"""Standard Workload Format (SWF) reader.

SWF (Parallel Workloads Archive) is one job per line, 18 whitespace-separated numeric
fields, ``-1`` for unknown; lines starting with ``;`` are header/comment lines, the header
ones written ``; Key: value``. Extended SWF files (e.g. Alea's ``wagap-2013.swf``) append
more, non-numeric fields after the 18th; they are accepted and ignored here.

The reader only *collects* raw columns and hands them to
:func:`toposched.workload.normalize.normalize`; every rule that changes or drops a job
lives there.

Speed. Logs reach hundreds of thousands of lines (CEA-Curie: 312k jobs, 29 MB), so the
body is parsed in chunks of about 1 MiB with NumPy only (no per-line Python work): a chunk
that is plain SWF (only digits, ``-``, ``.`` and whitespace; exactly 18 tokens on every
non-blank line; every token ``-?digits[.digits]``) is tokenized and converted to integers
with vectorized array operations. Any chunk that is not (comments in the body, extended
fields, bad tokens, exotic number spellings) is re-read line by line by the slow path,
which is the reference implementation: it finds the exact line and field of every error
and decides what lenient mode skips. The fast path only ever accepts a subset of what the
slow path accepts, with the same values, so the two cannot disagree.

Chunks also keep the memory touched small: on the VMs we run on, first-touch page faults
on freshly allocated memory are slow and erratic, and whole-file temporaries of a 29 MB
log (a few hundred MB of index arrays) made load times vary from 0.5 s to 1.4 s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import numpy as np
import numpy.typing as npt

from ..errors import TraceFormatError
from ..limits import EPOCH_MAX_S, EPOCH_MIN_S, MAX_COUNT
from ..readahead import read_swf_bytes
from ._io import refuse_utf16
from ..swf_layout import CHUNK_BYTES, FIELD_NAMES, MAX_FAST_DIGITS, N_FIELDS, USED
from .model import Workload
from .normalize import NormalizeSettings, normalize
from .tally import Tally

__all__ = ["FIELD_NAMES", "N_FIELDS", "parse_header_line", "read_swf"]

# FIELD_NAMES, the fields kept (_USED), the chunk size and the digit limit are defined in
# toposched.swf_layout, which the native read-ahead uses too.
_USED = USED
_USED_SET = frozenset(_USED)
# Position of each kept field in the per-record rows we collect.
_JOB, _SUBMIT, _WAIT, _RUN, _PALLOC, _PREQ, _REQTIME, _STATUS, _USER, _GROUP, _EXEC, _QUEUE, _PART = range(len(_USED))

_CHUNK_BYTES = CHUNK_BYTES  # fast-path chunk size (a name tests can patch)

_WHITESPACE = b" \t\r\n"

# The number syntax the slow path accepts (Python's float() also takes "nan", "inf" and
# "1_000", which are not numbers in a job log).
_NUMBER_RE = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# What a kept field may hold: an integer in digits, a zero fraction at most ("3600.0",
# "5."): the fast path's syntax (-?d+(.0*)?), plus a '+' and a ".0" without digits, which
# send a chunk to the slow path. The value is group 1 (".0": "0").
_INTEGER_RE = re.compile(rb"([+-]?\d+)\.?0*\Z|[+-]?\.0+\Z()")

# `; Key: value`: a short key right after ";" (no space or one), then ':'. Indented lines
# (";    http://...", ";\tsee: http://...") are continuations, and "http://x" is not a key
# because ':' is followed by '//'.
# A value may follow the colon without a blank (";MaxNodes:184"), but "://" is a URL.
_HEADER_RE = re.compile(r"; ?([A-Za-z][A-Za-z0-9_\- ]{0,40}?)[ \t]*:(?!//)[ \t]*(.*)$")
_LEADING_INT_RE = re.compile(r"\s*(\d+)")
_INT_RE = re.compile(r"\s*([+-]?\d+)\s*\Z")


def parse_header_line(text: str) -> tuple[str, str] | None:
    """Split a ``; Key: value`` line into ``(key, value)``; None when it has no key.

    The key is returned as written, the value stripped of surrounding blanks.
    """
    m = _HEADER_RE.match(text.rstrip("\r\n"))
    if m is None:
        return None
    return m.group(1).strip(), (m.group(2) or "").strip()


@dataclass
class _Header:
    """Accumulates header lines in file order.

    A repeated key (``Note``, ``Queue``, ``Partition``) keeps every value, joined with
    newlines; an indented or key-less comment line continues the previous key's value; an
    empty ``;`` line ends the continuation. ``first`` keeps each key's first value alone,
    for the numeric fields (``MaxNodes``, ``MaxProcs``, ``UnixStartTime``).
    """

    values: dict[str, str] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)
    first_line: dict[str, int] = field(default_factory=dict)  # 1-based line of each key's first value
    #: (key, line, value) of every later value of a key that differs from the one before
    #: it: a header of another log further down (logs put together)
    changed: list[tuple[str, int, str]] = field(default_factory=list)
    last: dict[str, str] = field(default_factory=dict)  # each key's latest value
    last_key: str | None = None

    def feed(self, raw: bytes, line: int) -> None:
        text = raw.decode("utf-8", errors="replace").strip()
        kv = parse_header_line(text)
        if kv is not None:
            key, value = kv
            if key in self.last and value != self.last[key]:
                self.changed.append((key, line, value))
            self.last[key] = value
            self.first.setdefault(key, value)
            self.first_line.setdefault(key, line)
            old = self.values.get(key)
            self.values[key] = value if old is None else f"{old}\n{value}"
            self.last_key = key
            return
        rest = text[1:].strip()
        if not rest:
            self.last_key = None
        elif self.last_key is not None:
            old = self.values[self.last_key]
            self.values[self.last_key] = f"{old}\n{rest}" if old else rest
        # Key-less lines before any key (e.g. a title banner) carry nothing we use.


class _Collector:
    """Per-file parse state shared by the fast and slow paths."""

    def __init__(self, path: str, lenient: bool) -> None:
        self.path = path
        self.lenient = lenient
        self.header = _Header()
        self.rows: list[np.ndarray] = []  # (k, len(_USED)) int64 blocks, in file order
        self.lines: list[np.ndarray] = []  # matching 1-based line numbers
        self.records = 0
        self.tally = Tally(path, lenient)
        self.extended_lines = 0  # records with more than 18 fields

    def problem(self, line: int, field_index: int | None, message: str) -> None:
        """A malformed record: raise (strict) or count and skip it (lenient)."""
        self.tally.fail(message, line=line, field=FIELD_NAMES[field_index] if field_index is not None else None)


def _token_text(tok: bytes) -> str:
    text = tok.decode("utf-8", errors="replace")
    return text if len(text) <= 40 else text[:37] + "..."


def _parse_token(tok: bytes, index: int) -> tuple[int | None, str | None]:
    """Value of one token of field ``index`` (0-based), or ``(None, error message)``.

    Kept fields are integers, as the SWF standard writes them: digits, with a sign or a
    zero fraction at most ("3600", "+5", "3600.0", "5."). "3600.5" is refused (we do not
    round a time or a size silently), and so is "3.6e3": an exponent is a floating-point
    spelling (rounded through a float, "1.0000000000000001" would pass as 1), and no log
    of the archive writes one in these fields. Ignored fields only need to be numbers
    (field 6 of several archive logs is "142.00", "0.03").
    """
    if not _NUMBER_RE.match(tok):
        return None, f"expected a number, got '{_token_text(tok)}'"
    if index not in _USED_SET:
        return 0, None
    m = _INTEGER_RE.match(tok)
    if m is None:
        why = " (an integer is written in digits, without an exponent)" if b"e" in tok.lower() else ""
        return None, f"expected an integer, got '{_token_text(tok)}'{why}"
    value = int(m.group(1) or 0)  # exact, whatever the length (".0": 0)
    if not _INT64_MIN <= value <= _INT64_MAX:
        return None, f"integer out of range, got '{_token_text(tok)}'"
    return value, None


def _slow_chunk(chunk: bytes, first_line: int, col: _Collector) -> int:
    """Read ``chunk`` line by line (the reference path); ``first_line`` is its 1-based
    line number. Comment lines go to the header; bad records raise or are skipped.
    Returns the number of lines read."""
    rows: list[list[int]] = []
    lines: list[int] = []
    pieces = chunk.split(b"\n")
    for offset, raw in enumerate(pieces):
        s = raw.strip()
        if not s:
            continue
        line_no = first_line + offset
        if s[:1] == b";":
            col.header.feed(s, line_no)
            continue
        col.records += 1
        toks = s.split()
        if len(toks) < N_FIELDS:
            col.problem(
                line_no,
                len(toks),
                f"expected {N_FIELDS} fields, found {len(toks)} (truncated line?)",
            )
            continue
        if len(toks) > N_FIELDS:
            col.extended_lines += 1  # extended SWF: extra fields are not ours to parse
        row: list[int] = []
        for i in range(N_FIELDS):
            value, error = _parse_token(toks[i], i)
            if error is not None:
                col.problem(line_no, i, error)
                break
            if i in _USED_SET:
                row.append(value)  # type: ignore[arg-type]  # an int: _parse_token gives None only with an error
        else:
            rows.append(row)
            lines.append(line_no)
    if rows:
        col.rows.append(np.array(rows, dtype=np.int64).reshape(-1, len(_USED)))
        col.lines.append(np.array(lines, dtype=np.int64))
    # A final newline leaves an empty last piece that is not a line.
    return len(pieces) - 1 if chunk.endswith(b"\n") else len(pieces)


def _fast_chunk(chunk: bytes, first_line: int, col: _Collector) -> int | None:
    """Parse a plain-SWF chunk with the native parser (``_core.swf_plain_chunk``: one pass,
    no temporaries) and return the number of lines read; None (nothing recorded) if the
    chunk is anything but plain. (Its NumPy predecessor is its reference in
    tests/swf_numpy_reference.py.)"""
    from .. import _core

    parsed = _core.swf_plain_chunk(chunk, list(_USED), N_FIELDS, MAX_FAST_DIGITS)
    if parsed is None:
        return None
    return _record_plain(parsed, first_line, col)


def _record_plain(parsed: _Parsed, first_line: int, col: _Collector) -> int:
    """Record the native parser's result for a chunk starting at line ``first_line``
    (parsed now, or ahead by the read-ahead); the number of lines read."""
    values, data_lines, n_lines = parsed
    if len(data_lines):
        col.records += len(data_lines)
        col.rows.append(values.reshape(len(data_lines), len(_USED)))
        col.lines.append(first_line + data_lines)
    return n_lines


# _core.swf_plain_chunk's result: (values, data line offsets, lines read).
_Parsed = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]


def _tidy_fast_chunk(chunk: bytes, first_line: int, col: _Collector) -> int | None:
    """Second try for a chunk the fast path refused: drop comment lines (kept for the
    header) and fields past the 18th (extended SWF), keeping every line in place so line
    numbers stay exact, then run the fast path on the result.

    This is what makes extended SWF logs and logs with comments between records fast. On
    failure nothing is recorded and the caller falls back to :func:`_slow_chunk`.
    """
    lines = chunk.split(b"\n")
    comments: list[tuple[bytes, int]] = []
    extended = 0
    for i, raw in enumerate(lines):
        s = raw.lstrip()
        if s[:1] == b";":
            comments.append((s, first_line + i))
            lines[i] = b""
            continue
        toks = raw.split()
        if len(toks) > N_FIELDS:
            extended += 1
            lines[i] = b" ".join(toks[:N_FIELDS])
    n_lines = _fast_chunk(b"\n".join(lines), first_line, col)
    if n_lines is None:
        return None
    for c, at in comments:
        col.header.feed(c, at)
    col.extended_lines += extended
    return n_lines


def _leading_int(text: str | None) -> int | None:
    if text is None:
        return None
    m = _LEADING_INT_RE.match(text)
    return int(m.group(1)) if m else None


_TYPES_RE = re.compile(r"\s*(\d+)\s*\(\s*(\d+(?:\s*,\s*\d+)+)\s*\)\s*\Z")


def node_types_from_header(first: dict[str, str]) -> list[dict[str, int]] | None:
    """Node types of a heterogeneous machine, from ``MaxNodes: 184 (6, 171, 7)`` and
    ``MaxProcs: 1664 (72, 1368, 224)`` (the SWF convention: the total, then one count per
    type, in the same order in both fields). None when the header does not list types
    (or the two lists disagree in length or do not add up to their totals)."""
    m_nodes = _TYPES_RE.match(first.get("MaxNodes", ""))
    m_procs = _TYPES_RE.match(first.get("MaxProcs", ""))
    if m_nodes is None or m_procs is None:
        return None
    nodes = [int(x) for x in m_nodes.group(2).split(",")]
    procs = [int(x) for x in m_procs.group(2).split(",")]
    if len(nodes) != len(procs) or sum(nodes) != int(m_nodes.group(1)) or sum(procs) != int(m_procs.group(1)) or min(nodes) <= 0:
        return None
    return [{"nodes": n, "procs": p, "cores_per_node": max(1, p // n)} for n, p in zip(nodes, procs)]


def _cores_per_node_from_header(first: dict[str, str]) -> tuple[int, str] | None:
    """Cores per node from the header, and how it was found: the most numerous node type's
    when ``MaxNodes``/``MaxProcs`` list types (first listed wins a tie), else ``MaxProcs //
    MaxNodes`` (at least 1) when both start with an integer and MaxNodes is positive.
    Leading integers, because some logs annotate the value (CTC: ``MaxNodes: 338 (batch
    partition; 512 total)``)."""
    types = node_types_from_header(first)
    if types is not None:
        main = max(types, key=lambda t: t["nodes"])  # max() keeps the first of equals
        return main["cores_per_node"], (
            f"header node types: the most numerous type ({main['nodes']} nodes of "
            f"{main['cores_per_node']} cores)"
        )
    procs = _leading_int(first.get("MaxProcs"))
    nodes = _leading_int(first.get("MaxNodes"))
    if procs is None or nodes is None or nodes <= 0:
        return None
    return max(1, procs // nodes), "header MaxProcs/MaxNodes"


_YES = ("yes", "true", "y", "1")
_NO = ("no", "false", "n", "0")


def allow_overuse_from_header(first: dict[str, str]) -> bool | None:
    """``AllowOveruse: yes``/``true``: jobs could run past their requested time on the
    logged machine. None when the header does not say (or says something else)."""
    value = first.get("AllowOveruse", "").strip().lower()
    word = value.split()[0] if value else ""
    if word in _YES:
        return True
    if word in _NO:
        return False
    return None


def check_flag_options(**flags: Any) -> None:
    """Refuse a true/false reading option (``lenient``, ``allow_long_span``) that is not a
    bool (ValueError): ``lenient="no"`` is truthy, and read the log leniently."""
    for name, value in flags.items():
        if not isinstance(value, bool) and not (type(value).__module__ == "numpy" and isinstance(getattr(value, "item", lambda: None)(), bool)):
            raise ValueError(f"{name} must be True or False, got {value!r}")


def check_read_options(cores_per_node: int | None, size_field: str, missing_walltime: Any, missing_runtime: str) -> None:
    """Refuse bad reading options (ValueError) before any time is spent on the file: the
    whole read's and the streamed read's check."""
    if cores_per_node is not None and (
        isinstance(cores_per_node, bool) or int(cores_per_node) != cores_per_node or cores_per_node < 1
    ):
        raise ValueError(f"cores_per_node must be a positive integer, got {cores_per_node!r}")
    NormalizeSettings(size_field=size_field, missing_walltime=missing_walltime, missing_runtime=missing_runtime)  # type: ignore[arg-type]


def read_swf(
    path: str | Path,
    *,
    lenient: bool = False,
    cores_per_node: int | None = None,
    size_field: Literal["auto", "allocated", "requested"] = "auto",
    missing_walltime: Literal["runtime"] | int = "runtime",
    missing_runtime: Literal["skip", "zero"] = "skip",
    allow_long_span: bool = False,
) -> Workload:
    """Read an SWF job log (plain or gzip) and normalize it.

    Args:
        path: the log file.
        lenient: skip malformed records (counted in ``skipped["malformed_line"]``, the
            first five quoted in ``settings["lenient_examples"]``) instead of raising.
        cores_per_node: processors per node, to turn SWF processor counts into nodes.
            None derives it from the header (``MaxProcs // MaxNodes``), else 1;
            ``settings["cores_per_node_from"]`` says which.
        size_field, missing_walltime, missing_runtime: see
            :class:`~toposched.workload.normalize.NormalizeSettings`.

    Returns:
        The normalized :class:`Workload`. Extra per-job columns: ``logged_start_s``
        (submit + wait, -1 when unknown), ``status``, ``partition``, ``queue``, ``user``.
        Id columns: ``user_id`` (field 12), ``account_id`` (the group, field 13),
        ``qos_id`` (the queue, field 15), ``partition_id`` (field 16).

    Raises:
        TraceFormatError: the file is missing, not gzip-decodable, has no job records,
            or (unless ``lenient``) has a record with fewer than 18 fields, a token that is
            not a number, or a non-integral value in a field that must be an integer.
    """
    spath = str(path)
    check_read_options(cores_per_node, size_field, missing_walltime, missing_runtime)
    check_flag_options(lenient=lenient, allow_long_span=allow_long_span)
    # The bytes, and the body chunks the read-ahead parsed if one ran (commands/simulate)
    data, ahead = read_swf_bytes(path)
    # Lone carriage returns (old Mac line ends) would glue records into one long line,
    # which would then pass as an extended-SWF record: make them line breaks. "\r\n" is
    # fine as it is ('\r' is just a blank at the end of a line).
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        ahead = []  # parsed from the bytes before the repair
    # A chunk parsed ahead is used only where this walk cuts the same chunk (start and
    # end), and only if the native parser took it: every other chunk is read here.
    parsed_at = {start: (end, parsed) for start, end, parsed in ahead if parsed is not None}
    col = _Collector(spath, lenient)

    # Leading header block: comment and blank lines before the first record, read line by
    # line (a few dozen lines). Comments later in the body go through the slow path.
    pos = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # tolerate a UTF-8 byte-order mark
    pos, line_no = _header_block(data, pos, 1, col)
    nl = data.find(b"\n", pos, pos + 65536)
    not_swf(data[pos : nl if nl >= 0 else pos + 65536], line_no, spath)
    _checked_header(col, cores_per_node)  # a bad value there stops the read before the body, as --stream's

    # Body, in chunks of whole lines.
    n = len(data)
    while pos < n:
        nl = data.find(b"\n", min(pos + _CHUNK_BYTES, n))
        end = n if nl < 0 else nl + 1
        got = parsed_at.get(pos)
        if got is not None and got[0] == end:
            line_no += _record_plain(got[1], line_no, col)
        else:
            line_no += _body_chunk(data[pos:end], line_no, col)
        pos = end

    if col.records == 0:
        raise TraceFormatError(spath, "no job records found")
    if not col.rows:
        raise col.tally.no_valid_records()

    # The fields column by column (the table's transpose made contiguous, then viewed
    # back: each field's values contiguous, as normalize and the engine take them, made
    # in one pass over the parsed blocks instead of a copy per field)
    by_field = np.empty((len(_USED), sum(len(r) for r in col.rows)), dtype=np.int64)
    table = np.concatenate([r.T for r in col.rows], axis=1, out=by_field).T
    line = col.lines[0] if len(col.lines) == 1 else np.concatenate(col.lines)
    settings, note, origin = _header_settings(col, cores_per_node, size_field, missing_walltime, missing_runtime)
    if lenient:
        note["lenient_examples"] = list(col.tally.examples)
    if col.extended_lines:
        note["extended_fields_ignored"] = col.extended_lines
    skipped = dict(col.tally.skipped)  # {"malformed_line": n}, or empty
    repairs: dict[str, int] = {}
    table = later_headers(col, table, line, repairs, cores_per_node)
    table, line = repeated_records(table, line, skipped, repairs)
    raw, extra = _raw_columns(table, line)
    return normalize(
        raw,
        source=spath,
        fmt="swf",
        settings=settings,
        records=col.records,
        repairs=repairs,
        skipped=skipped,
        header=col.header.values,
        time_origin_epoch_s=origin,
        extra=extra,
        settings_note=note,
        lenient=lenient,
        allow_long_span=allow_long_span,
        field_names=FIELD_NAMES_OF_COLUMNS,
    )


#: Header keys that decide how the records are read (what _header_settings looks at): a
#: later header line (another log put after the first) that changes one is a repair
#: (UnixStartTime) or an error (the others); --stream refuses it.
SETTING_KEYS = ("MaxNodes", "MaxProcs", "UnixStartTime", "AllowOveruse")


def later_headers(col: _Collector, table: np.ndarray, line: np.ndarray, repairs: dict[str, int], cores_per_node: int | None) -> np.ndarray:
    """Headers further down the log (logs put together, each with its header) that change
    how records are read. A new ``UnixStartTime``: the records after it count their submit
    times from that origin, so they are moved to the first one's (counted in
    ``repairs["submit_rebased_to_first_origin"]``). A new ``MaxNodes``, ``MaxProcs`` (unless
    ``cores_per_node`` is given: then they are not used) or ``AllowOveruse``: the records
    cannot all be read one way, and the read stops naming the line. The (possibly new)
    table; ``line`` holds each row's line number."""
    # after the first record only: a header before the jobs that gives a key twice keeps
    # its first value, as it always has
    first_record = int(line[0]) if len(line) else 0
    changed = [
        (k, n, v) for k, n, v in col.header.changed
        if n > first_record and k in SETTING_KEYS and not (k in ("MaxNodes", "MaxProcs") and cores_per_node is not None)
        and not _same_setting(k, v, col.header.first[k])
    ]
    if not changed:
        return table
    for key, n, value in changed:
        if key == "UnixStartTime":
            continue
        raise TraceFormatError(
            col.path,
            f"a second header sets {key}: {value!r} where line {col.header.first_line[key]} set {col.header.first[key]!r}: "
            "logs put together that read differently; replay each log on its own"
            + (" (or give --cores-per-node, which makes MaxNodes and MaxProcs unused)" if key != "AllowOveruse" else ""),
            line=n,
            field=key,
        )
    first = _INT_RE.match(col.header.first.get("UnixStartTime", ""))
    cuts, offsets = [], []
    for _, n, value in changed:
        m = _INT_RE.match(value)
        if first is None or m is None or not EPOCH_MIN_S <= int(m.group(1)) <= EPOCH_MAX_S:
            why = (
                f"{value!r} is no Unix time within {EPOCH_MIN_S}..{EPOCH_MAX_S}" if first is not None
                else "the header before the jobs gives none, so the times before it have no origin to be moved to"
            )
            raise TraceFormatError(col.path, f"a second header sets UnixStartTime: {why}; replay each log on its own", line=n, field="UnixStartTime")
        cuts.append(n)
        offsets.append(int(m.group(1)) - int(first.group(1)))
    # each record: the offset of the last header line before it (0 before the first)
    shift = np.array([0, *offsets], dtype=np.int64)[np.searchsorted(np.array(cuts, dtype=np.int64), line)]
    # an unknown submit (-1) stays unknown; one so large that the move would wrap around
    # int64 stays as it is (out of range either way: the range check names it)
    move = (shift != 0) & (table[:, _SUBMIT] >= 0) & (table[:, _SUBMIT] <= np.iinfo(np.int64).max - np.maximum(shift, 0))
    if move.any():
        table = table.copy()
        table[move, _SUBMIT] += shift[move]
        repairs["submit_rebased_to_first_origin"] = int(move.sum())
    return table


def _same_setting(key: str, a: str, b: str) -> bool:
    """Whether two values of a header key read the same ("338 (batch partition)" and "338";
    "Yes" and "yes"): only a different reading is a change."""
    if key in ("MaxNodes", "MaxProcs"):
        ma, mb = _HEADER_COUNT_RE.match(a), _HEADER_COUNT_RE.match(b)
        return ma is not None and mb is not None and int(ma.group(1)) == int(mb.group(1))
    if key == "AllowOveruse":
        return _yes_or_no(a) and _yes_or_no(b) and (a.split()[0].lower() in _YES) == (b.split()[0].lower() in _YES)
    m1, m2 = _INT_RE.match(a), _INT_RE.match(b)
    return m1 is not None and m2 is not None and int(m1.group(1)) == int(m2.group(1))


#: The SWF fields behind the raw columns, for normalize's error messages.
FIELD_NAMES_OF_COLUMNS = {"submit_s": "submit time (field 2)", "runtime_s": "run time (field 4)", "walltime_s": "requested time (field 9)", "procs_alloc": "allocated processors (field 5)", "procs_req": "requested processors (field 8)"}


def repeated_records(
    table: np.ndarray, line: np.ndarray, skipped: dict[str, int], repairs: dict[str, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Records whose job number an earlier record already has (SWF numbers jobs with a
    counter, so a repeat is a repeated line or logs put together), treated as the sacct
    and PBS readers treat theirs: a record equal to an earlier one with its number in
    every field we read is the same job printed again, left out and counted in
    ``skipped["duplicate_record"]``; one that differs is another job and is kept, counted
    in ``repairs["duplicate_job_id"]`` (its ``job_id`` is then not unique in the
    outputs). Numbers below 0 are unknown, not ids. The rows kept, in file order.

    >>> t = np.array([[1, 0], [2, 5], [1, 0], [1, 9], [-1, 3], [-1, 3]]); sk, rep = {}, {}
    >>> kept, _ = repeated_records(t, np.arange(1, 7), sk, rep)
    >>> kept[:, 0].tolist(), sk, rep
    ([1, 2, 1, -1, -1], {'duplicate_record': 1}, {'duplicate_job_id': 1})
    """
    ids = table[:, _JOB]
    if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()):
        return table, line  # numbers increasing (every archive log): no repeat, one pass
    known = np.flatnonzero(ids >= 0)
    order = known[np.argsort(ids[known], kind="stable")]
    s = ids[order]
    again = np.zeros(len(ids), dtype=bool)  # the number is shared with another record
    same = np.flatnonzero(s[1:] == s[:-1])
    if not same.size:
        return table, line
    again[order[same]] = True
    again[order[same + 1]] = True
    drop: list[int] = []
    other_jobs = 0
    seen: dict[int, set[tuple[int, ...]]] = {}
    for i in np.flatnonzero(again).tolist():  # file order
        row = tuple(table[i].tolist())
        earlier = seen.setdefault(row[_JOB], set())
        if row in earlier:
            drop.append(i)
        elif earlier:
            other_jobs += 1
        earlier.add(row)
    if other_jobs:
        repairs["duplicate_job_id"] = repairs.get("duplicate_job_id", 0) + other_jobs
    if not drop:
        return table, line
    skipped["duplicate_record"] = skipped.get("duplicate_record", 0) + len(drop)
    keep = np.ones(len(ids), dtype=bool)
    keep[drop] = False
    return table[keep], line[keep]


# The first line of a Slurm sacct dump (`sacct -P`: '|' between fields, a header row
# `JobID|...` or not) and of a PBS/Torque accounting log (`01/26/2016 00:00:37;E;...`):
# never an SWF record, which holds only numbers and blanks.
_PBS_LINE_RE = re.compile(rb"\s*\d\d/\d\d/\d{4} \d\d:\d\d:\d\d;[A-Za-z];")


def not_swf(first_record: bytes, line: int, path: str) -> None:
    """Refuse a log of another format read as SWF, from its first record (the line after
    the header): one line naming the format to pass, rather than the first record's
    field error and its advice to skip records with --lenient (which would skip them all)."""
    refuse_utf16(first_record, path)
    if first_record.count(b"|") >= 2 and len(first_record.split()) < N_FIELDS:  # not an SWF record with a stray '|'
        what = "a Slurm sacct log (fields separated by '|'" + (", a 'JobID|...' header)" if first_record.lstrip().lower().startswith(b"jobid") else ")")
        fmt = "sacct"
    elif _PBS_LINE_RE.match(first_record):
        what, fmt = "a PBS/Torque accounting log ('MM/DD/YYYY HH:MM:SS;T;job id;...')", "pbs"
    else:
        return
    raise TraceFormatError(path, f"this is {what}, not SWF: pass --format {fmt}", line=line)


def _header_block(data: bytes, pos: int, line_no: int, col: _Collector) -> tuple[int, int]:
    """Feed the comment and blank lines from ``pos`` up to the first record (or the end
    of ``data``) to the header; the position and line number where they stop."""
    n = len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        end = n if nl < 0 else nl + 1
        s = data[pos:end].strip()
        if s and s[:1] != b";":
            break
        if s:
            col.header.feed(s, line_no)
        pos = end
        line_no += 1
    return pos, line_no


def _body_chunk(chunk: bytes, line_no: int, col: _Collector) -> int:
    """Parse whole lines of the body into ``col``: the fast path, then the fast path
    without comments and extended fields, then line by line. The lines read."""
    n_lines = _fast_chunk(chunk, line_no, col)
    if n_lines is None:
        n_lines = _tidy_fast_chunk(chunk, line_no, col)
    if n_lines is None:
        n_lines = _slow_chunk(chunk, line_no, col)
    return n_lines


def _header_settings(
    col: _Collector,
    cores_per_node: int | None,
    size_field: Literal["auto", "allocated", "requested"],
    missing_walltime: Literal["runtime"] | int,
    missing_runtime: Literal["skip", "zero"],
) -> tuple[NormalizeSettings, dict[str, Any], int | None]:
    """What the header (read so far) and the options decide: the normalize settings, the
    notes the summary records about them, and the log's time origin."""
    note: dict[str, Any] = {}
    first, ignored = _checked_header(col, cores_per_node)
    if ignored:
        note["header_ignored"] = ignored
    if cores_per_node is not None:
        cpn = int(cores_per_node)
        note["cores_per_node_from"] = "option"
    else:
        derived = _cores_per_node_from_header(first)
        cpn, note["cores_per_node_from"] = derived if derived is not None else (1, "default")
    types = node_types_from_header(first)
    if types is not None:
        note["node_types"] = types
    overuse = allow_overuse_from_header(first)
    if overuse is not None:
        note["allow_overuse"] = overuse
    settings = NormalizeSettings(
        cores_per_node=cpn,
        size_field=size_field,
        missing_walltime=missing_walltime,
        missing_runtime=missing_runtime,
    )
    origin = None
    m = _INT_RE.match(first.get("UnixStartTime", ""))
    if m:
        origin = int(m.group(1))
    return settings, note, origin


#: A count at the start of a header value: digits (a zero fraction allowed, as in the
#: records), then the end, a blank or "(" (CTC's ``338 (batch partition; 512 total)``).
#: "1e1" or "9.5" would otherwise be read as 1 or 9, silently.
_HEADER_COUNT_RE = re.compile(r"\s*(\d+)(?:\.0*)?(?=[\s(]|\Z)")


def _positive_leading_int(value: str) -> bool:
    # below 2^31 as every count (docs/reliability.md): a larger one overflowed int64 on
    # its way into the job table, an internal error
    m = _HEADER_COUNT_RE.match(value)
    return m is not None and 0 < int(m.group(1)) < MAX_COUNT


def _yes_or_no(value: str) -> bool:
    return bool(value.split()) and value.split()[0].lower() in _YES + _NO


#: The header fields the reader uses: (key, value accepted, what is expected, the flag
#: that makes the value irrelevant, None when only --lenient does).
_USED_HEADER: tuple[tuple[str, Callable[[str], bool], str, str | None], ...] = (
    ("MaxNodes", _positive_leading_int, "a positive integer below 2^31 (a note may follow it)", "--cores-per-node N sets the size of a node instead"),
    ("MaxProcs", _positive_leading_int, "a positive integer below 2^31 (a note may follow it)", "--cores-per-node N sets the size of a node instead"),
    ("UnixStartTime", lambda v: _INT_RE.match(v) is not None, "an integer (Unix time of submit time 0)", None),
    ("AllowOveruse", _yes_or_no, "yes or no", None),
)


def _checked_header(col: _Collector, cores_per_node: int | None) -> tuple[dict[str, str], list[str]]:
    """The first value of each header key, without the values of fields the reader uses
    that it cannot read (``MaxNodes: abc``): those stop the read with one line naming the
    line, the field and the way out, or with ``lenient`` are left out and listed (the
    second result, for ``settings["header_ignored"]``). MaxNodes and MaxProcs are not
    looked at when ``cores_per_node`` is given: they are not used then."""
    first = dict(col.header.first)
    ignored: list[str] = []
    for key, ok, expected, way_out in _USED_HEADER:
        if key not in first or ok(first[key]) or (way_out is not None and cores_per_node is not None):
            continue
        message = f"expected {expected}, got {_token_text(first[key].encode())!r}"
        line = col.header.first_line[key]
        if not col.lenient:
            hint = "--lenient reads the log without it" if way_out is None else f"{way_out}, or --lenient reads the log without it"
            raise TraceFormatError(col.path, message, line=line, field=key, hint=hint)
        ignored.append(f"line {line}: field {key}: {message}")
        del first[key]
    return first, ignored


def _raw_columns(table: np.ndarray, line: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """normalize's raw columns and extra columns of parsed records (rows of _USED fields)."""
    submit = table[:, _SUBMIT]
    wait = table[:, _WAIT]
    # The log's own start time, for comparing replayed schedules with the real one.
    # Unknown (-1) when the wait or the submit is unknown.
    logged_start = np.where((wait >= 0) & (submit >= 0), submit + wait, -1)
    raw = {
        "job_id": table[:, _JOB],
        "submit_s": submit,
        "runtime_s": table[:, _RUN],
        "walltime_s": table[:, _REQTIME],
        "procs_alloc": table[:, _PALLOC],
        "procs_req": table[:, _PREQ],
        "nodes_alloc": np.full(len(table), -1, dtype=np.int64),  # SWF has no node count
        "line": line,
    }
    extra = {
        "logged_start_s": logged_start,
        "status": np.ascontiguousarray(table[:, _STATUS]),
        "partition": np.ascontiguousarray(table[:, _PART]),
        "queue": np.ascontiguousarray(table[:, _QUEUE]),
        "user": np.ascontiguousarray(table[:, _USER]),
        # the executable (application) number, field 14: what --network rules call `app`
        "app": np.ascontiguousarray(table[:, _EXEC]),
        # the Workload's id columns (SWF has no account or QOS: its group and queue stand for them)
        "user_id": table[:, _USER],
        "account_id": table[:, _GROUP],
        "qos_id": table[:, _QUEUE],
        "partition_id": table[:, _PART],
    }
    return raw, extra

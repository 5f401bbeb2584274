"""What a record of a Slurm accounting log is: the layout of the columns, and where one
record ends and the next begins. :mod:`toposched.workload.sacct` maps the columns onto a
job table; this module only cuts the text into records and finds the fields it is asked for.

Two layouts are read:

* **sacct with a header** (``sacct -P`` / ``--parsable2``, or ``-p`` / ``--parsable``,
  which adds a trailing ``|``): the first line names the columns, as ``--format`` (or
  ``--format=ALL``) prints them. Columns are found by name, case-insensitively, so any
  column order and any extra columns work.
* **Open XDMoD's shredder layout**: no header, 26 fields in the fixed order of
  :data:`XDMOD_FIELDS`. It is recognised when the first line has at least 26 fields and
  its second field (``jobidraw``) is an integer.

Free text is not escaped by sacct, which makes the format ambiguous in two ways, both
seen in real logs:

* a field may contain a line break (``SubmitLine`` of a job submitted with a script on
  the command line, ``Comment``): a record continues on the next physical line while it
  has fewer fields than the header, unless that line is a complete record by itself
  (then the record was cut off, and is malformed);
* a field may contain ``|`` (``JobName``, a ``Constraints`` OR such as ``cpu-a|cpu-b``, a
  ``--wrap`` shell pipeline in ``SubmitLine``): a record then has *more* fields than the
  header. The extra ``|`` can only belong to one of the free-text columns of
  :data:`FREE_TEXT`; every other column has a known shape (a number, a duration, a
  time, ...). The splitter finds every way of giving the extra pieces to free-text columns
  such that each typed column gets a value of its shape. If the fields the reader uses
  land on the same pieces in every such way, the record is read; if not (or if there is
  no such way), the record is malformed: an error, or skipped and counted with
  ``lenient=True``. Nothing is guessed. A free-text column the reader would like to have
  (``JobName``) is taken only when it gets the same pieces in every such way; otherwise
  it is unknown, and the record is read all the same.

Both at once (a text field with ``|`` before a line break) can end a record too early;
such a record cannot be split, and is extended line by line until it can (see
:class:`Splitter`). When only text columns follow the field, the early end cannot be
detected and the rest of the text is reported as a cut-off record: the reader needs none
of those columns, so leave them out of ``--format``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import TraceFormatError
from ._io import read_bytes, refuse_utf16

__all__ = ["FREE", "FREE_TEXT", "XDMOD_FIELDS", "Layout", "Splitter", "positions", "read_layout", "read_lines", "split_message", "split_positions"]

#: Open XDMoD's shredder field order (``docs/resource-manager-slurm.md`` of xdmod), with the
#: names sacct's header would use for them.
XDMOD_FIELDS: tuple[str, ...] = (
    "JobID", "JobIDRaw", "Cluster", "Partition", "QOS", "Account", "Group", "GID", "User",
    "UID", "Submit", "Eligible", "Start", "End", "Elapsed", "ExitCode", "State", "NNodes",
    "NCPUS", "ReqCPUS", "ReqMem", "ReqTRES", "AllocTRES", "Timelimit", "NodeList", "JobName",
)  # fmt: skip

#: Columns whose text the user controls (lower case): the only places a ``|`` or a line
#: break inside a field can be.
FREE_TEXT: frozenset[str] = frozenset(
    {
        "admincomment", "comment", "constraints", "container", "extra", "jobname",
        "licenses", "stderr", "stdin", "stdout", "submitline", "systemcomment", "workdir",
    }
)  # fmt: skip

# Shapes of the typed columns, used only to decide where the extra '|' of a record go
# (see the module docstring). They are deliberately a little looser than what sacct
# prints, so that a correct record is never refused; columns not listed accept any text
# without '|' or a line break.
_INT = r"\d*"
_INT1 = r"\d+"
_NUM = r"(?:\d+(?:\.\d+)?[KMGTPE]?)?"
_DUR = r"(?:(?:\d+-)?\d+:\d\d:\d\d|\d+:\d\d(?:\.\d+)?|\d+|(?i:unlimited|partition_limit|invalid|unknown)|)"
_DATE = r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|Unknown|None|)"
_EXIT = r"(?:\d+:\d+)?"
_STATE = r"(?:[A-Za-z_]+(?: by \d+)?)?"
_JOBID = r"\d+(?:_(?:\d+|\[[^\]\n]*\]))?(?:\+\d+)?(?:\.[\w-]+)?"
_JOBIDRAW = r"\d+(?:\+\d+)?(?:\.[\w-]+)?"
_TRES = r"(?:[^=,\s]+=[^,\s]*(?:,[^=,\s]+=[^,\s]*)*)?"
_MEM = r"(?:\d+(?:\.\d+)?[KMGTPE?]?[cn]?)?"

_SHAPES: dict[str, str] = {
    **dict.fromkeys(
        ("alloccpus", "allocnodes", "associd", "consumedenergyraw", "cputimeraw", "dbindex",
         "elapsedraw", "gid", "ntasks", "priority", "qosraw", "reqcpus", "reqnodes",
         "reservationid", "resvcpuraw", "uid", "wckeyid"),
        _INT,
    ),
    **dict.fromkeys(("nnodes", "ncpus"), _INT1),
    **dict.fromkeys(
        ("consumedenergy", "avecpufreq", "avediskread", "avediskwrite", "avepages", "averss",
         "avevmsize", "maxdiskread", "maxdiskwrite", "maxpages", "maxrss", "maxvmsize"),
        _NUM,
    ),
    **dict.fromkeys(
        ("avecpu", "cputime", "elapsed", "mincpu", "planned", "plannedcpu", "reserved",
         "resvcpu", "suspended", "systemcpu", "timelimit", "totalcpu", "usercpu"),
        _DUR,
    ),
    **dict.fromkeys(("submit", "start", "end", "eligible"), _DATE),
    **dict.fromkeys(("exitcode", "derivedexitcode"), _EXIT),
    **dict.fromkeys(
        ("alloctres", "reqtres", "tresusageinave", "tresusageinmax", "tresusageinmaxnode",
         "tresusageinmaxtask", "tresusageinmin", "tresusageinminnode", "tresusageinmintask",
         "tresusageintot", "tresusageoutave", "tresusageoutmax", "tresusageoutmaxnode",
         "tresusageoutmaxtask", "tresusageoutmin", "tresusageoutminnode",
         "tresusageoutmintask", "tresusageouttot"),
        _TRES,
    ),
    "state": _STATE,
    "jobid": _JOBID,
    "jobidraw": _JOBIDRAW,
    "reqmem": _MEM,
    "timelimitraw": r"(?:\d+|(?i:partition_limit|unlimited|invalid)|)",
    # `sacct -p` ends every line with '|': the header then has an unnamed last column,
    # which must stay empty.
    "": r"",
}  # fmt: skip
_COMPILED = {k: re.compile(v, re.ASCII) for k, v in _SHAPES.items()}
#: The kind of a free-text column (any number of pieces).
FREE = "free"

_RE_UINT = re.compile(r"\d+", re.ASCII)


def read_lines(path: str | Path) -> list[str]:
    """The physical lines of the log, without their line ends."""
    # Bytes, split on '\n' only: universal newlines would also split at a bare '\r',
    # which can occur inside a SubmitLine.
    # A byte-order mark would become part of the first column's name: that column (the
    # header's first, e.g. Account) would then be missing, silently for an optional one.
    # Bytes that are not UTF-8 (a Latin-1 job or user name) are kept as \xNN: replaced by
    # U+FFFD, two different names (josé, josè) would silently become one user or app.
    data = read_bytes(path)
    refuse_utf16(data, path)
    text = data.decode("utf-8", errors="backslashreplace").removeprefix("\ufeff")
    if "\r" in text and "\n" not in text:
        # a log whose lines all end in a lone '\r' (a bare '\r' inside a SubmitLine
        # comes with '\n' line ends): read as one line, it was "only a header"
        text = text.replace("\r", "\n")
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line does not start another
    return lines


# --------------------------------------------------------------------------- layout


@dataclass
class Layout:
    """Column names and what the reader needs to know about them."""

    kind: Literal["header", "xdmod"]
    names: list[str]  # as printed (header) or XDMOD_FIELDS
    kinds: list[Any]  # per column: FREE, a compiled shape, or None (any one piece)
    index: dict[str, int]  # lower-case name -> column
    header_line: int | None  # 1-based line of the header, None for xdmod

    def col(self, *names: str) -> int | None:
        """Index of the first of ``names`` present."""
        for n in names:
            i = self.index.get(n.lower())
            if i is not None:
                return i
        return None


def read_layout(path: str, lines: list[str], unique: frozenset[str]) -> tuple[Layout, int]:
    """The layout of a log, and the 0-based line where its records start.

    ``unique``: lower-case names of the columns the reader takes values from, none of which
    may appear twice in a header.

    Raises:
        TraceFormatError: for an empty file, a first line that is neither a header nor
            Open XDMoD's layout, or a header naming a column of ``unique`` twice.
    """
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None:
        raise TraceFormatError(path, "no job records found (the file is empty)")
    layout = _detect_layout(path, lines[first], first + 1, unique)
    return layout, (first + 1 if layout.kind == "header" else first)


def _make_layout(
    path: str, names: list[str], kind: Literal["header", "xdmod"], header_line: int | None, unique: frozenset[str]
) -> Layout:
    index: dict[str, int] = {}
    kinds: list[Any] = []
    for i, name in enumerate(names):
        low = name.strip().lower()
        if low in index and low in unique:
            # Two columns of the same name may hold different values: which one is right
            # cannot be told, so refuse rather than silently take the first.
            raise TraceFormatError(
                path,
                f"column {name.strip()!r} appears twice in the header (columns {index[low] + 1} and {i + 1}); "
                "list each column once in sacct --format",
                line=header_line,
                field=name.strip(),
            )
        index.setdefault(low, i)
        if low in FREE_TEXT:
            kinds.append(FREE)
        else:
            kinds.append(_COMPILED.get(low))
    return Layout(kind, [n.strip() for n in names], kinds, index, header_line)


#: Lower-case names of the columns sacct prints that this module knows.
_KNOWN_COLUMNS: frozenset[str] = frozenset({n.lower() for n in XDMOD_FIELDS} | set(_SHAPES) | FREE_TEXT) - {""}
#: Separators a sacct dump is written with by mistake (``--delimiter=,``, or the
#: fixed-width table sacct prints without ``-P``), and how a message names them.
_OTHER_SEPARATORS: tuple[tuple[str | None, str], ...] = ((",", "','"), (";", "';'"), ("\t", "tabs"), (None, "blanks"))


def wrong_separator(line: str) -> str | None:
    """If ``line`` is a sacct header whose columns are separated by something other than
    ``|`` (three column names or more once split by it), the one-line message saying so
    and how to write a readable dump; else None."""
    if "|" in line:
        return None
    for sep, said in _OTHER_SEPARATORS:
        names = [f.strip().lower() for f in line.split(sep)]
        if sum(n in _KNOWN_COLUMNS for n in names) >= 3:
            return (
                f"this looks like a sacct header with columns separated by {said}, not '|': "
                "write the dump with sacct --parsable2 (-P), without --delimiter"
            )
    return None


def _detect_layout(path: str, first: str, line_no: int, unique: frozenset[str]) -> Layout:
    fields = first.split("|")
    if len(fields) >= len(XDMOD_FIELDS) and _RE_UINT.fullmatch(fields[1].strip()):
        return _make_layout(path, list(XDMOD_FIELDS), "xdmod", None, unique)
    wrong = wrong_separator(first)
    if wrong is not None:
        raise TraceFormatError(path, wrong, line=line_no)
    known = _KNOWN_COLUMNS
    if not any(f.strip().lower() in known and f.strip() for f in fields):
        raise TraceFormatError(
            path,
            "the first line is neither a sacct header (column names, as sacct -P prints "
            f"them without --noheader) nor Open XDMoD's {len(XDMOD_FIELDS)}-field layout: {first[:80]!r}",
            line=line_no,
        )
    return _make_layout(path, fields, "header", line_no, unique)


# --------------------------------------------------------------------------- records


def positions(tokens: list[str], kinds: list[Any], need: list[int]) -> dict[int, list[int]] | None:
    """Where each column of ``need`` can sit, over every valid split of ``tokens``.

    ``tokens`` are the record split at every '|'. Each free-text column takes one or more
    consecutive pieces (joined back with '|'); every other column takes exactly one piece,
    which must fit its shape (``None``: anything without a line break). Returns, for each
    column in ``need``, the piece indices it takes in at least one valid split, or None
    when there is no valid split. Dynamic programming over (column, piece), each column
    looked at only where it can start: O(columns x (extra pieces + 1)), run only for
    records whose piece count differs from the header's.
    """
    found = split_positions(tokens, kinds, need, [])
    return None if found is None else found[0]


def split_positions(
    tokens: list[str], kinds: list[Any], need: list[int], text: list[int]
) -> tuple[dict[int, list[int]], dict[int, list[tuple[int, int]]]] | None:
    """:func:`positions`, and for each free-text column of ``text`` the spans of pieces
    ``(first, end)`` (``tokens[first:end]``) it takes in at least one valid split (at most
    two are listed: one span means the column is located, two that it is not)."""
    n_tok, n_col = len(tokens), len(kinds)
    # Every column takes at least one piece, so in any valid split column c starts at a
    # piece c + k with k in [0, extra]: only that window is looked at, each column's shape
    # checked once per piece of it (O(columns x (extra + 1)), not O(columns x pieces): a
    # --format=ALL record with a few '|' in its free text has ~110 pieces for 107 columns).
    extra = n_tok - n_col
    if extra < 0:
        return None
    span = extra + 1

    def fits_at(c: int) -> list[bool]:
        """Whether column c's shape takes piece c + k, for k in [0, extra]."""
        shape = kinds[c]
        if shape is FREE:
            return [True] * span
        if shape is None:
            return ["\n" not in t for t in tokens[c : c + span]]
        return [shape.fullmatch(t) is not None for t in tokens[c : c + span]]

    fits = [fits_at(c) for c in range(n_col)]

    # fwd[c][k]: columns [0, c) can take pieces [0, c + k)
    fwd = [[False] * span for _ in range(n_col + 1)]
    fwd[0][0] = True
    for c in range(n_col):
        cur, nxt, ok = fwd[c], fwd[c + 1], fits[c]
        if kinds[c] is FREE:
            # pieces [c + k, (c + 1) + m) for any m >= k: from its first possible start on
            first = next((k for k in range(span) if cur[k]), None)
            if first is None:
                return None
            for m in range(first, span):
                nxt[m] = True
        else:
            for k in range(span):
                if cur[k] and ok[k]:
                    nxt[k] = True  # piece c + k taken: column c + 1 starts at (c + 1) + k
    if not fwd[n_col][extra]:
        return None
    # bwd[c][k]: columns [c, n_col) can take pieces [c + k, n_tok)
    bwd = [[False] * span for _ in range(n_col + 1)]
    bwd[n_col][extra] = True
    for c in range(n_col - 1, -1, -1):
        after, cur, ok = bwd[c + 1], bwd[c], fits[c]
        if kinds[c] is FREE:
            last = max((m for m in range(span) if after[m]), default=None)
            if last is None:
                return None
            for k in range(last + 1):
                cur[k] = True  # pieces [c + k, (c + 1) + last): at least one
        else:
            for k in range(span):
                if after[k] and ok[k]:
                    cur[k] = True
    out: dict[int, list[int]] = {}
    for c in need:
        if kinds[c] is FREE:
            raise AssertionError("free-text columns are never needed")
        out[c] = [c + k for k in range(span) if fwd[c][k] and bwd[c + 1][k] and fits[c][k]]
    spans: dict[int, list[tuple[int, int]]] = {}
    for c in text:
        if kinds[c] is not FREE:
            raise AssertionError("only free-text columns are located as spans")
        # a free-text column takes pieces [i, j), any text, when the columns before it can
        # take [0, i) and those after it [j, n_tok)
        starts = [c + k for k in range(span) if fwd[c][k]]
        ends = [c + 1 + m for m in range(span) if bwd[c + 1][m]]
        found: list[tuple[int, int]] = []
        for i in starts:
            for j in ends:
                if j > i:
                    found.append((i, j))
                    if len(found) == 2:
                        break
            if len(found) == 2:
                break
        spans[c] = found
    return out, spans


class Splitter:
    """Cuts the physical lines of a log into records and finds the fields in ``need``.

    Rules (see ``docs/sacct.md``):

    1. A record goes on to the next physical line while it has fewer fields than the
       header (a line break inside a text field), unless that next line is itself a
       complete record (then this one was cut off, and is malformed).
    2. A record with more fields than the header has '|' inside text fields: every way of
       giving the extra pieces to the free-text columns is tried (:func:`positions`).
    3. A '|' inside a text field that also holds a line break can make rule 1 stop too
       early; the record then cannot be split. It is extended line by line, while the
       next line is not itself a complete record, until it can.

    ``text``: free-text columns whose value is wanted when it can be told (``JobName``).
    They never decide where a record ends or whether it is read: a record's value holds
    such a column only when every valid split gives it the same pieces (joined back with
    '|'), and leaves it out otherwise.
    """

    #: how far rule 3 looks ahead, in physical lines
    MAX_EXTEND = 1000

    def __init__(self, layout: Layout, need: list[int], lines: list[str], text: list[int] | None = None) -> None:
        # A needed column cannot be a free-text one (the reader needs none), but a header
        # could repeat a name; treat such a column as untyped rather than free.
        for c in need:
            if layout.kinds[c] is FREE:
                layout.kinds[c] = None
        self.layout = layout
        self.need = need
        self.text = [c for c in (text or []) if layout.kinds[c] is FREE and c not in need]
        self.lines = lines
        self.n_col = len(layout.names)
        self.relaxed_kinds = list(layout.kinds)
        for c in need:
            self.relaxed_kinds[c] = None
        self._is_record: dict[int, bool] = {}

    def locate(self, pieces: list[str], multi: bool) -> tuple[str, Any, bool]:
        """Find the ``need`` columns in a record's pieces.

        Returns ``(status, detail, strict)``: ``("ok", (values, relaxed), ...)``,
        ``("ambiguous", column, ...)`` or ``("nosplit", None, ...)``. ``relaxed`` means the
        values were only found by ignoring the shapes of the columns we use, so one of
        them is bad and its parser will say which; ``strict`` tells whether the record
        splits with every shape honoured.
        """
        if not multi and len(pieces) == self.n_col:
            # one piece per column: every column, free-text ones included, is its piece
            return "ok", ({c: pieces[c] for c in (*self.need, *self.text)}, False), True
        status, detail = self._locate_dp(pieces, self.layout.kinds)
        if status == "ok":
            return status, (detail, False), True
        if status == "nosplit":
            # A bad value in a field we use also leaves no valid split: find the split
            # without those fields' shapes, so that the bad value itself is reported.
            st2, det2 = self._locate_dp(pieces, self.relaxed_kinds)
            if st2 == "ok":
                return st2, (det2, True), False
        return status, detail, False

    def _locate_dp(self, pieces: list[str], kinds: list[Any]) -> tuple[str, Any]:
        found = split_positions(pieces, kinds, self.need, [c for c in self.text if kinds[c] is FREE])
        if found is None:
            return "nosplit", None
        pos, spans = found
        for c, p in pos.items():
            if len(p) != 1:
                return "ambiguous", c
        values = {c: pieces[p[0]] for c, p in pos.items()}
        for c, s in spans.items():
            if len(s) == 1:
                values[c] = "|".join(pieces[s[0][0] : s[0][1]])
        return "ok", values

    def is_record(self, j: int) -> bool:
        """Whether physical line ``j`` (0-based) is, on its own, a complete record.

        It is if it splits with every shape honoured, or if it has exactly as many
        fields as the header and splits once the shapes of our fields are ignored (a
        record with a bad value, which must be reported, not swallowed).
        """
        hit = self._is_record.get(j)
        if hit is None:
            pieces = self.lines[j].split("|")
            hit = False
            if len(pieces) >= self.n_col:
                hit = self._locate_dp(pieces, self.layout.kinds)[0] == "ok" or (
                    len(pieces) == self.n_col and self._locate_dp(pieces, self.relaxed_kinds)[0] == "ok"
                )
            self._is_record[j] = hit
        return hit

    @staticmethod
    def join(pieces: list[str], line: str) -> list[str]:
        more = line.split("|")
        return pieces[:-1] + [pieces[-1] + "\n" + more[0]] + more[1:]

    def records(self, start: int) -> Iterator[tuple[int, int, list[str], str, Any]]:
        """Yield (first, last, pieces, status, detail) per record; lines 0-based."""
        lines, n, n_col = self.lines, len(self.lines), self.n_col
        i = start
        while i < n:
            if lines[i].strip() == "":
                i += 1  # blank lines between records
                continue
            first = i
            pieces = lines[i].split("|")
            while len(pieces) < n_col and i + 1 < n and not self.is_record(i + 1):
                i += 1
                pieces = self.join(pieces, lines[i])
            last = i
            i = last + 1
            if len(pieces) < n_col:
                yield first, last, pieces, "short", (last + 1 if last + 1 < n else None)
                continue
            status, detail, strict = self.locate(pieces, last > first)
            if not strict and status != "ambiguous":
                ext, j = pieces, last
                while j + 1 < n and j - last < self.MAX_EXTEND and not self.is_record(j + 1):
                    j += 1
                    ext = self.join(ext, lines[j])
                    st2, det2, strict2 = self.locate(ext, True)
                    if strict2:
                        pieces, last, status, detail = ext, j, st2, det2
                        i = j + 1
                        break
            yield first, last, pieces, status, detail


def split_message(layout: Layout, n_pieces: int, first: int, last: int, status: str, detail: Any) -> tuple[str | None, str]:
    """(field, message) for a record that could not be read; lines are 1-based."""
    n_col = len(layout.names)
    free = [layout.names[c] for c, k in enumerate(layout.kinds) if k is FREE]
    span = f" (lines {first}-{last})" if last > first else ""
    if status == "short":
        if detail is None:
            return None, f"the file ends inside this record: it has {n_pieces} of the {n_col} fields{span}"
        return None, (
            f"the record has only {n_pieces} of the {n_col} fields{span}, and line {detail + 1} starts the "
            "next record: a cut-off line, or the end of the record above if one of its text fields "
            "holds both '|' and a line break"
        )
    what = f"the record has {n_pieces} fields where the header has {n_col}{span}"
    if status == "ambiguous":
        return layout.names[detail], (
            f"{what}, and the extra '|' could belong to more than one text field "
            f"({', '.join(free)}), so this field cannot be located"
        )
    if not free:
        return None, what
    return None, (
        f"{what}, and no way of reading the extra '|' or line breaks as part of a text field "
        f"({', '.join(free)}) gives every other field a valid value"
    )


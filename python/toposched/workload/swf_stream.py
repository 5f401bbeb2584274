"""An SWF log read a chunk of jobs at a time (``toposched simulate --stream``): memory in
proportion to the chunk, not to the log.

The same parsing as :func:`toposched.workload.swf.read_swf` (its fast, tidy and slow
paths, on blocks of whole lines), the same header settings, and the same normalization
(:func:`toposched.workload.normalize.normalize`, applied to each chunk: its rules are per
row), with the counts of repairs and skipped jobs summed over the chunks. What is not
per row is checked instead of done:

* **Submit order.** The whole read sorts the jobs by submit time (stably); a chunk
  cannot be sorted against the jobs after it. The streamed read requires the jobs it
  keeps to be in submit order already (ties in any order: the sort is stable) and
  otherwise stops with one line naming the first job out of order, saying to drop
  ``--stream``: it never orders jobs differently from the whole read.
* **Outlier submits** (normalize.check_ranges: ``submit_span``): refused, with one line,
  when the log spans more than the limit.
* **Repeated job numbers.** The whole read compares a record whose job number an earlier
  record has with that record (the same: left out; another job: kept and counted), which
  needs every record kept. The streamed read keeps only the numbers seen, as ranges
  (one range for a log numbered 1, 2, 3, ...), and stops at the first repeat with one
  line saying to drop ``--stream``.
* **The header** is read before the jobs: a header line after the first job record that
  would change how the log is read (``MaxNodes``, ``MaxProcs``, ``UnixStartTime``,
  ``AllowOveruse``) stops the read with one line saying to drop ``--stream``.

Errors name the same file, line and field as the whole read's; a log with several
problems may report another of them first (the whole read parses the whole file before
checking ranges; this one checks each chunk once parsed). With ``--lenient``, the
out-of-range records quoted in the settings (at most five) are the first of each chunk
in turn, where the whole read quotes them rule by rule.

>>> import tempfile, os
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "x.swf")
>>> _ = open(p, "w").write("; MaxNodes: 4\\n; MaxProcs: 8\\n" + "".join(
...     f"{i} {10 * i} 0 50 2 -1 -1 2 100 -1 1 1 1 1 1 1 -1 -1\\n" for i in range(1, 6)))
>>> s = SwfStream(p, chunk_rows=2)
>>> [w["job_id"].tolist() for w in s.chunks()]
[[1, 2], [3, 4], [5]]
>>> s.describe()["jobs"], s.describe()["settings"]["cores_per_node"]
(5, 2)
"""

from __future__ import annotations

import zlib
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator, Literal

import numpy as np

from ..errors import TraceFormatError
from ._io import open_binary
from .model import Workload
from .normalize import _MAX_EXAMPLES, NormalizeSettings, normalize
from .swf import (
    FIELD_NAMES,
    FIELD_NAMES_OF_COLUMNS,
    SETTING_KEYS,
    _same_setting,
    _body_chunk,
    _Collector,
    _header_block,
    _header_settings,
    _raw_columns,
    check_read_options,
    not_swf,
)

__all__ = ["SwfStream"]

#: Bytes read from the file at a time (the whole read parses chunks of this size too).
_BLOCK_BYTES = 1 << 20



class SwfStream:
    """An SWF log as chunks of at most ``chunk_rows`` records each (:meth:`chunks`, once),
    normalized; :meth:`describe` is then what ``read_swf(...).describe()`` gives. The
    options are :func:`~toposched.workload.swf.read_swf`'s."""

    def __init__(
        self,
        path: str | Path,
        *,
        chunk_rows: int = 100_000,
        lenient: bool = False,
        cores_per_node: int | None = None,
        size_field: Literal["auto", "allocated", "requested"] = "auto",
        missing_walltime: Literal["runtime"] | int = "runtime",
        missing_runtime: Literal["skip", "zero"] = "skip",
        allow_long_span: bool = False,
    ) -> None:
        check_read_options(cores_per_node, size_field, missing_walltime, missing_runtime)
        if chunk_rows < 1:
            raise ValueError(f"chunk_rows must be at least 1, got {chunk_rows}")
        self.path = str(path)
        self.chunk_rows = int(chunk_rows)
        self.lenient = lenient
        self._options = (cores_per_node, size_field, missing_walltime, missing_runtime)
        self.allow_long_span = allow_long_span
        self.col = _Collector(self.path, lenient)
        self.jobs = 0
        self.parsed = 0  # records parsed (not malformed)
        self.repairs: dict[str, int] = {}
        self.skipped: dict[str, int] = {}
        self.out_of_range_examples: list[str] = []
        self._settings: tuple[NormalizeSettings, dict[str, Any], int | None] | None = None
        self._span: list[int] = []
        self._last_submit: int | None = None
        self._last_line = 0
        self._done = False
        self._ids = _SeenIds()

    def chunks(self) -> Iterator[Workload]:
        """The normalized chunks, in file order (a chunk whose records were all left out
        is not yielded). Raises what read_swf raises, and the refusals above."""
        col = self.col
        pending: list[tuple[np.ndarray, np.ndarray]] = []
        held = 0
        in_header = True
        line_no = 1
        for block in _blocks(self.path):
            body = block
            if in_header:
                pos, line_no = _header_block(block, 0, line_no, col)
                if pos == len(block):
                    continue
                in_header = False
                body = block[pos:]
                nl = body.find(b"\n")
                not_swf(body if nl < 0 else body[:nl], line_no, self.path)
                self._settings = _header_settings(col, *self._options)
                self._first_keys = {k: col.header.first.get(k) for k in SETTING_KEYS}
                self._changes_before = len(col.header.changed)  # those of the header before the jobs
            line_no += _body_chunk(body, line_no, col)
            # before this block's jobs reach the engine: found only at the end, a late
            # header line would refuse a replay already run to its end
            self._check_late_header()
            for rows, lines in zip(col.rows, col.lines):
                pending.append((rows, lines))
                held += len(rows)
                self.parsed += len(rows)
            col.rows.clear()
            col.lines.clear()
            while held >= self.chunk_rows:
                table = np.concatenate([r for r, _ in pending]) if len(pending) > 1 else pending[0][0]
                lines = np.concatenate([ln for _, ln in pending]) if len(pending) > 1 else pending[0][1]
                k = self.chunk_rows
                for a in range(0, len(table) - k + 1, k):
                    w = self._normalize(table[a : a + k], lines[a : a + k])
                    if len(w):
                        yield w
                rest = len(table) - len(table) % k
                pending = [(table[rest:], lines[rest:])] if rest < len(table) else []
                held = len(table) - rest
        if held:
            table = np.concatenate([r for r, _ in pending])
            lines = np.concatenate([ln for _, ln in pending])
            w = self._normalize(table, lines)
            if len(w):
                yield w
        if col.records == 0:
            raise TraceFormatError(self.path, "no job records found")
        if self.parsed == 0:
            raise col.tally.no_valid_records()
        self._done = True

    def _check_late_header(self) -> None:
        """Refuse a header line after the first job record that sets one of the keys that
        decide how jobs are read (one the header before the jobs did not set), naming its
        line and key."""
        header = self.col.header
        # a key the header before the jobs did not set, or set to another value (a later
        # log's header: the whole read moves its times to the first origin, which needs
        # every record; the other keys it refuses too)
        line_of = {k: n for k, n, v in reversed(header.changed[self._changes_before :]) if k in SETTING_KEYS and not _same_setting(k, v, header.first[k])}
        line_of.update((k, header.first_line[k]) for k in SETTING_KEYS if header.first.get(k) != self._first_keys.get(k))
        changed = [k for k in SETTING_KEYS if k in line_of]
        if changed:
            first = min(changed, key=lambda k: line_of[k])
            raise TraceFormatError(
                self.path,
                f"a header line after the first job record sets {', '.join(changed)}, which decides how the jobs are read: "
                "--stream reads the header before the jobs; replay without --stream",
                line=line_of[first],
                field=first,
            )

    def _normalize(self, table: np.ndarray, lines: np.ndarray) -> Workload:
        assert self._settings is not None
        settings, note, origin = self._settings
        repeat = self._ids.first_repeat(table[:, 0])
        if repeat is not None:
            raise TraceFormatError(
                self.path,
                f"job number {int(table[repeat, 0])} is that of an earlier record: the whole read compares the two records "
                "(the same job printed again is left out, another job kept and counted), which --stream cannot; replay without --stream",
                line=int(lines[repeat]),
                field=FIELD_NAMES[0],
            )
        self._ids.add(table[:, 0])
        raw, extra = _raw_columns(table, lines)
        w = normalize(
            raw,
            source=self.path,
            fmt="swf",
            settings=settings,
            records=len(table),
            header=self.col.header.values,
            time_origin_epoch_s=origin,
            extra=extra,
            settings_note=note,
            lenient=self.lenient,
            allow_long_span=self.allow_long_span,
            field_names=FIELD_NAMES_OF_COLUMNS,
            submit_span=self._span,
        )
        self._check_order(w)
        for k, v in w.repairs.items():
            self.repairs[k] = self.repairs.get(k, 0) + v
        for k, v in w.skipped.items():
            self.skipped[k] = self.skipped.get(k, 0) + v
        examples = w.settings.get("out_of_range_examples", [])
        self.out_of_range_examples += examples[: _MAX_EXAMPLES - len(self.out_of_range_examples)]
        self.jobs += len(w)
        return w

    def _check_order(self, w: Workload) -> None:
        """The kept jobs of this chunk, in file order, continue the submit order."""
        if not len(w):
            return
        submit, line = w["submit_s"], w["line"]
        if w.repairs.get("submit_unsorted"):
            order = np.argsort(line, kind="stable")  # back to file order
            submit, line = submit[order], line[order]
        prev = np.concatenate([[self._last_submit if self._last_submit is not None else submit[0]], submit[:-1]])
        late = np.flatnonzero(submit < prev)
        if len(late):
            i = int(late[0])
            before = int(prev[i])
            where = "the job before it" if i else f"the job before it (line {self._last_line})"
            raise TraceFormatError(
                self.path,
                f"submit time {int(submit[i])} is earlier than that of {where}, {before}: --stream needs the jobs in submit order "
                "(the whole read sorts them); replay without --stream",
                line=int(line[i]),
                field=FIELD_NAMES_OF_COLUMNS["submit_s"],
            )
        self._last_submit = int(submit[-1])
        self._last_line = int(line[-1])

    @property
    def settings(self) -> dict[str, Any]:
        """The settings of the read, as ``Workload.settings`` (complete once the chunks are
        exhausted: the lenient examples are known only then)."""
        if self._settings is None:
            return {}
        settings, note, _ = self._settings
        used: dict[str, Any] = asdict(settings)
        if self.out_of_range_examples:
            used["out_of_range_examples"] = list(self.out_of_range_examples)
        used.update(note)
        if self.lenient:
            used["lenient_examples"] = list(self.col.tally.examples)
        if self.col.extended_lines:
            used["extended_fields_ignored"] = self.col.extended_lines
        return used

    @property
    def time_origin_epoch_s(self) -> int | None:
        return self._settings[2] if self._settings is not None else None

    def describe(self) -> dict[str, Any]:
        """What ``Workload.describe()`` of the whole read gives (for the summary)."""
        skipped = dict(self.col.tally.skipped)
        for k, v in self.skipped.items():
            skipped[k] = skipped.get(k, 0) + v
        return {
            "source": self.path,
            "format": "swf",
            "records": self.col.records,
            "jobs": self.jobs,
            "time_origin_epoch_s": self.time_origin_epoch_s,
            "repairs": dict(sorted(self.repairs.items())),
            "skipped": dict(sorted(skipped.items())),
            "settings": self.settings,
        }


class _SeenIds:
    """The job numbers seen so far, as sorted disjoint ranges ``lo[i]..hi[i]`` (inclusive,
    not touching): a log numbered by a counter is one range, whatever its length.
    Numbers below 0 are unknown, not ids (as :func:`~toposched.workload.swf.repeated_records`).

    >>> s = _SeenIds(); s.add(np.array([1, 2, 3, 7])); (s.lo.tolist(), s.hi.tolist())
    ([1, 7], [3, 7])
    >>> s.first_repeat(np.array([4, 8, 7])), s.first_repeat(np.array([5, -1, 6, -1, 5])), s.first_repeat(np.array([4, 5]))
    (2, 4, None)
    """

    def __init__(self) -> None:
        self.lo = np.zeros(0, dtype=np.int64)
        self.hi = np.zeros(0, dtype=np.int64)

    def first_repeat(self, ids: np.ndarray) -> int | None:
        """Index of the first of ``ids`` (in order) seen before or earlier in ``ids``."""
        known = np.flatnonzero(ids >= 0)
        if not known.size:
            return None
        order = known[np.argsort(ids[known], kind="stable")]
        s = ids[order]
        later = order[1:][s[1:] == s[:-1]]  # the stable sort puts the first occurrence first
        hits = [int(later.min())] if later.size else []
        if self.lo.size:
            k = np.searchsorted(self.lo, ids[known], side="right") - 1
            inside = (k >= 0) & (ids[known] <= self.hi[np.maximum(k, 0)])
            if inside.any():
                hits.append(int(known[np.argmax(inside)]))
        return min(hits) if hits else None

    def add(self, ids: np.ndarray) -> None:
        u = np.unique(ids[ids >= 0])
        if not u.size:
            return
        lo = np.concatenate([self.lo, u])
        hi = np.concatenate([self.hi, u])
        order = np.argsort(lo, kind="stable")
        lo, hi = lo[order], hi[order]
        reach = np.maximum.accumulate(hi)
        # a range starts where it neither overlaps nor touches everything before it
        # (lo >= 0, so lo - 1 cannot wrap)
        starts = np.concatenate([[0], np.flatnonzero(lo[1:] - 1 > reach[:-1]) + 1])
        ends = np.concatenate([starts[1:] - 1, [len(lo) - 1]])
        self.lo, self.hi = lo[starts], reach[ends]


def _blocks(path: str) -> Iterator[bytes]:
    """The file's bytes (decompressed) as blocks of whole lines, lone carriage returns
    made line breaks as read_swf does, a UTF-8 byte-order mark dropped."""
    fh = open_binary(path)
    pending = b""
    first = True
    try:
        with fh:
            while True:
                try:
                    data = fh.read(_BLOCK_BYTES)
                except (OSError, EOFError, zlib.error) as exc:
                    raise TraceFormatError(path, f"corrupt gzip data: {exc}") from None
                if not data:
                    break
                if first:
                    first = False
                    if data.startswith(b"\xef\xbb\xbf"):
                        data = data[3:]
                buf = pending + data
                hold = b""
                if buf.endswith(b"\r"):  # perhaps half of "\r\n": decided with the next block
                    buf, hold = buf[:-1], b"\r"
                if b"\r" in buf:
                    buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
                nl = buf.rfind(b"\n")
                if nl < 0:
                    pending = buf + hold
                    continue
                yield buf[: nl + 1]
                pending = buf[nl + 1 :] + hold
    except OSError as exc:
        raise TraceFormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if pending:
        yield pending.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

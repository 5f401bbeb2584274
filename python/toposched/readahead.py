"""A log read ahead (issue 17: the whole `simulate` command).

A command calls :func:`prefetch` as soon as it knows the log's path. With the native
extension, a Rust thread (``_core.SwfReadAhead``) then reads the file, inflates it if it
is gzip and parses the body of an SWF log into the very chunks
:func:`toposched.workload.swf.read_swf` cuts, all without the interpreter lock, while
the main thread loads the fabric and another one imports NumPy and PyArrow. Without the
extension, :func:`prefetch` reads and inflates the file on the calling thread (zlib too
runs without the lock).

The reader's :func:`read_bytes` (or :func:`read_swf_bytes`) then returns what was read,
or raises the error, at its own time, so the order of a command's errors does not
change. Whatever the read-ahead could not do (a read error, gzip data it declines)
the reader does itself, with its own error messages; the SWF reader uses a parsed chunk
only where its own walk cuts the same one. This module imports no NumPy (the readers'
package does): that is the point.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Union

from .errors import TraceFormatError

if TYPE_CHECKING:  # annotations only: importing NumPy is what this module avoids
    import numpy as np
    import numpy.typing as npt

    from ._core import SwfReadAhead

    #: A body chunk parsed ahead: (start, end, the native parser's result or None).
    Chunk = tuple[int, int, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int] | None]

#: What :func:`prefetch` started or read: path -> (the file's stat stamp then, the native
#: read-ahead, or the bytes or the error read on the calling thread).
_PREFETCHED: dict[str, tuple[tuple[int, int, int, int], Union["SwfReadAhead", bytes, Exception]]] = {}


def _stamp(path: str) -> tuple[int, int, int, int] | None:
    """Identity and version of a regular file; None for anything else (a pipe is read
    once, by its reader)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def prefetch(path: str | Path, format: str | None = None) -> None:
    """Start reading (decompressing and parsing) the SWF log ``path`` for the next
    :func:`read_bytes` or :func:`read_swf_bytes` of it, which then returns what was read,
    or raises that error, at its own time: so the order of a command's errors does not
    change. If the file has changed in between (device, inode, size, modification time),
    it is read again. Returns at once with the native extension; without it, reads and
    inflates the file first.

    Only an SWF log is read ahead: ``format`` (the command's ``--format``) says so, or,
    when None, the reader's own guess (:func:`looks_like_swf`). A sacct or PBS log is
    left to its reader: the read-ahead's thread would parse it as SWF for nothing."""
    key = str(path)
    discard_prefetched(key)
    stamp = _stamp(key)
    if stamp is None:
        return  # not a regular file: read_bytes reads it (or says why not)
    if not (format in ("swf", "swf-nodes") if format is not None else looks_like_swf(key)):
        return
    ahead = _native_read_ahead(key)
    if ahead is not None:
        _PREFETCHED[key] = (stamp, ahead)
        return
    try:
        result: bytes | Exception = _read_bytes(key)
    except Exception as exc:  # noqa: BLE001 - raised by read_bytes, where it was raised before
        result = exc
    _PREFETCHED[key] = (stamp, result)


# The start of a PBS accounting line (workload/pbs.py's LINE_RE, which needs the package
# and NumPy): "01/26/2016 00:00:37;E;".
_PBS_START = re.compile(rb"\d\d/\d\d/\d{4} \d\d:\d\d:\d\d;[A-Za-z];")
_SNIFF_BYTES = 1 << 16


def looks_like_swf(path: str) -> bool:
    """Whether :func:`toposched.workload.detect_format` would call ``path`` SWF: by its name
    (``.swf``, ``.swf.gz``: no read), else by its first non-blank line, from at most 64 KiB
    (inflated if gzip): a PBS line or a '|' is not SWF, a ';' or a number is. A wrong
    answer only costs speed: the reader reads what was not read ahead."""
    if path.lower().endswith((".swf", ".swf.gz")):
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError:
        return False
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, _SNIFF_BYTES)
        except zlib.error:
            return False
    for line in head.removeprefix(b"\xef\xbb\xbf").split(b"\n"):
        s = line.strip()
        if not s:
            continue
        if _PBS_START.match(s):
            return False
        if s.startswith(b";"):
            return True
        if b"|" in s:
            return False
        return s.split()[0].lstrip(b"-").isdigit()
    return False


def _native_read_ahead(path: str) -> SwfReadAhead | None:
    """The native read-ahead of ``path``, started; None without the extension (or with
    one built before it)."""
    try:
        from . import _core
    except ImportError:
        return None
    cls = getattr(_core, "SwfReadAhead", None)
    if cls is None:
        return None
    from .swf_layout import CHUNK_BYTES, MAX_FAST_DIGITS, N_FIELDS, USED

    ahead: SwfReadAhead = cls(path, CHUNK_BYTES, list(USED), N_FIELDS, MAX_FAST_DIGITS)
    return ahead


def discard_prefetched(path: str | Path) -> None:
    """Forget what :func:`prefetch` read of ``path`` and nobody asked for (an error
    stopped the command before its reader ran); a read-ahead still running stops
    parsing."""
    hit = _PREFETCHED.pop(str(path), None)
    if hit is not None and not isinstance(hit[1], (bytes, Exception)):
        hit[1].cancel()


def read_bytes(path: str | Path) -> bytes:
    """The whole file, decompressed if it is gzip (what :func:`prefetch` read of it, if
    the file has not changed since)."""
    return _take(path, chunks=False)[0]


def read_swf_bytes(path: str | Path) -> tuple[bytes, list[Chunk]]:
    """:func:`read_bytes`, and the body chunks the native read-ahead parsed, in file
    order (none without one)."""
    return _take(path, chunks=True)


def _take(path: str | Path, *, chunks: bool) -> tuple[bytes, list[Chunk]]:
    key = str(path)
    hit = _PREFETCHED.pop(key, None)
    if hit is not None:
        stamp, got = hit
        fresh = stamp == _stamp(key)
        if isinstance(got, Exception):
            if fresh:
                raise got
        elif isinstance(got, bytes):
            if fresh:
                return got, []
        elif not fresh:
            got.cancel()
        else:
            taken = got.take(chunks=chunks)
            if taken is not None:
                return taken
            # the read-ahead failed: the reader reads the file, and reports why not
    return _read_bytes(key), []


def log_file(path: str | Path) -> Path:
    """``path`` as a Path, or the one-line error for a log that is missing or a directory."""
    p = Path(path)
    if not p.exists():
        raise TraceFormatError(str(p), "no such file")
    if p.is_dir():
        raise TraceFormatError(str(p), "is a directory, not a log file")
    return p


def _read_bytes(path: str | Path) -> bytes:
    """The whole file, decompressed if it is gzip."""
    p = log_file(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise TraceFormatError(str(p), f"cannot read: {exc.strerror or exc}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceFormatError(str(p), f"corrupt gzip data: {exc}") from None
    return data

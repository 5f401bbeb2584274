"""A log's bytes read ahead (issue 17: the whole `simulate` command).

A command may call :func:`prefetch` early, while another thread imports NumPy and
PyArrow: reading a file and zlib's inflating run without the interpreter lock, so on two
cores the two overlap. The reader's :func:`read_bytes` then returns those bytes, or
raises that error, at its own time, so the order of a command's errors does not change.
This module imports no NumPy (the readers' package does): that is the point.
"""

from __future__ import annotations

import gzip
import os
import stat
import zlib
from pathlib import Path

from .errors import TraceFormatError

#: What :func:`prefetch` read: path -> (the file's stat stamp then, its bytes or the error).
_PREFETCHED: dict[str, tuple[tuple[int, int, int, int], bytes | Exception]] = {}


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


def prefetch(path: str | Path) -> None:
    """Read (and decompress) ``path`` now, for the next :func:`read_bytes` of it, which
    then returns those bytes, or raises that error, at its own time: so the order of a
    command's errors does not change. A command calls it while another thread imports
    (reading and zlib run without the interpreter lock). If the file has changed in
    between (device, inode, size, modification time), it is read again."""
    key = str(path)
    stamp = _stamp(key)
    if stamp is None:
        return  # not a regular file: read_bytes reads it (or says why not)
    try:
        result: bytes | Exception = _read_bytes(key)
    except Exception as exc:  # noqa: BLE001 - raised by read_bytes, where it was raised before
        result = exc
    _PREFETCHED[key] = (stamp, result)


def discard_prefetched(path: str | Path) -> None:
    """Forget what :func:`prefetch` read of ``path`` and nobody asked for (an error
    stopped the command before its reader ran)."""
    _PREFETCHED.pop(str(path), None)


def read_bytes(path: str | Path) -> bytes:
    """The whole file, decompressed if it is gzip (what :func:`prefetch` read of it, if
    the file has not changed since)."""
    hit = _PREFETCHED.pop(str(path), None)
    if hit is not None and hit[0] == _stamp(str(path)):
        if isinstance(hit[1], Exception):
            raise hit[1]
        return hit[1]
    return _read_bytes(path)


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

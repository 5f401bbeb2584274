"""Opening logs: plain or gzip, always as UTF-8 text (undecodable bytes replaced, a
byte-order mark dropped)."""

from __future__ import annotations

import gzip
import io
import os
import stat
from pathlib import Path
from typing import IO

from ..errors import TraceFormatError
from ..readahead import log_file, read_bytes

__all__ = ["is_pipe", "open_binary", "open_text", "read_bytes", "read_once", "refuse_utf16"]


def read_once(path: str | Path, why: str = ": give --format, so that its format is not guessed from it first, or save it to a file") -> str:
    """Why a log that can be read only once (:func:`is_pipe`) is refused, naming what it
    is (/dev/null is no pipe): a guess of its format, say, would consume what the reader
    needs. ``why``: the rest of the sentence (what the user can do)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0
    kind = (
        "a pipe" if stat.S_ISFIFO(mode)
        else "a character device" if stat.S_ISCHR(mode)
        else "a socket" if stat.S_ISSOCK(mode)
        else "a block device" if stat.S_ISBLK(mode)
        else "not a regular file"
    )
    return f"is {kind}, which can be read only once{why}"


def refuse_utf16(head: bytes, path: str | Path) -> None:
    """One line for a log in UTF-16 (a Windows editor's "Unicode"), from its first bytes:
    read as UTF-8, every other byte is a NUL, and each reader said something beside the
    point ("expected 18 fields, found 3", "cannot tell the log's format")."""
    head = head[:256]
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        why = f"it starts with the byte-order mark {head[:2].hex(' ').upper()}"
    elif len(head) >= 8 and head.count(b"\x00") * 3 >= len(head):
        why = "every other byte is a NUL"
    else:
        return
    raise TraceFormatError(str(path), f"is UTF-16 text ({why}), not UTF-8: convert it first, e.g. iconv -f UTF-16 -t UTF-8", line=1)


def is_pipe(path: str | Path) -> bool:
    """True for a log that can be read only once: a FIFO, ``/dev/stdin`` on a pipe or a
    terminal, a socket (anything neither a regular file nor a directory)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # the reader says why (no such file, ...)
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


class _Prefixed(io.RawIOBase):
    """The bytes already read from the start of a pipe, then the rest of the pipe."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        super().__init__()
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, b: "memoryview | bytearray") -> int:  # type: ignore[override]
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self._rest.close()
        finally:
            super().close()


class _GzipOwning(gzip.GzipFile):
    """A gzip stream that closes the file it reads (``gzip.open`` reopens by name, which
    a pipe cannot be)."""

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def open_binary(path: str | Path) -> IO[bytes]:
    """Open ``path`` for reading bytes, decompressing gzip files (detected by magic bytes).
    Opened once, a pipe is read as a file is (``--stream --format swf`` on ``/dev/stdin``)."""
    p = log_file(path)
    try:
        fh: IO[bytes] = open(p, "rb")
        magic = fh.read(2)
        if fh.seekable():
            fh.seek(0)
        else:  # a pipe: what the look at the magic bytes took is given back in front
            fh = io.BufferedReader(_Prefixed(magic, fh))
    except OSError as exc:
        raise TraceFormatError(str(p), f"cannot read: {exc.strerror or exc}") from None
    if magic == b"\x1f\x8b":
        return _GzipOwning(fh)  # type: ignore[return-value]  # a binary stream
    return fh


def open_text(path: str | Path) -> IO[str]:
    """Open ``path`` for reading text, decompressing gzip files (detected by magic bytes).
    A leading UTF-8 byte-order mark is dropped (``utf-8-sig``), as every reader drops it:
    left in, it would hide the first line's ``;``, ``|`` or PBS date from the format guess."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", errors="replace", newline=None)

"""Opening logs: plain or gzip, always as UTF-8 text (undecodable bytes replaced, a
byte-order mark dropped)."""

from __future__ import annotations

import errno
import gzip
import io
from pathlib import Path
from typing import IO

from ..errors import TraceFormatError
from ..readahead import log_file, read_bytes

__all__ = ["open_binary", "open_text", "read_bytes"]


def open_binary(path: str | Path) -> IO[bytes]:
    """Open ``path`` for reading bytes, decompressing gzip files (detected by magic bytes)."""
    p = log_file(path)
    try:
        fh = open(p, "rb")
        magic = fh.read(2)
        fh.seek(0)
    except OSError as exc:
        if isinstance(exc, io.UnsupportedOperation) or exc.errno == errno.ESPIPE:
            # /dev/stdin or a FIFO, opened a second time: once to guess the format from
            # its first lines, then to read it (a streamed replay opens it twice too)
            raise TraceFormatError(
                str(p),
                "is a pipe, which can be read only once: give --format, so that its format is not "
                "guessed from it first, or save it to a file (--stream needs a file)",
            ) from None
        raise TraceFormatError(str(p), f"cannot read: {exc.strerror or exc}") from None
    if magic == b"\x1f\x8b":
        fh.close()  # a GzipFile given a file object would not close it: let gzip own the file
        return gzip.open(p, "rb")  # type: ignore[return-value]  # a binary stream
    return fh


def open_text(path: str | Path) -> IO[str]:
    """Open ``path`` for reading text, decompressing gzip files (detected by magic bytes).
    A leading UTF-8 byte-order mark is dropped (``utf-8-sig``), as every reader drops it:
    left in, it would hide the first line's ``;``, ``|`` or PBS date from the format guess."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", errors="replace", newline=None)

"""Opening logs: plain or gzip, always as UTF-8 text (undecodable bytes replaced)."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import IO

from ..errors import TraceFormatError
from ..readahead import log_file, read_bytes

__all__ = ["open_text", "read_bytes"]


def open_text(path: str | Path) -> IO[str]:
    """Open ``path`` for reading text, decompressing ``.gz`` files (detected by magic bytes)."""
    p = log_file(path)
    try:
        with open(p, "rb") as fh:
            magic = fh.read(2)
    except OSError as exc:
        raise TraceFormatError(str(p), f"cannot read: {exc.strerror or exc}") from None
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8", errors="replace", newline=None)
    return open(p, encoding="utf-8", errors="replace", newline=None)

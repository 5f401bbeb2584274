"""Job logs in, one normalized job table out.

``read_trace(path)`` picks the reader from the file (or ``format=``), and every reader
applies the rules of :mod:`toposched.workload.normalize`.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any, Callable

from ..errors import TraceFormatError
from .model import COLUMNS, Workload
from .normalize import NormalizeSettings
from .pbs import LINE_RE as PBS_LINE_RE

FORMATS = ("swf", "sacct", "pbs", "swf-nodes")

__all__ = ["COLUMNS", "FORMATS", "NormalizeSettings", "Workload", "detect_format", "read_trace"]


def detect_format(path: str | Path) -> str:
    """Guess a log's format from its name, then from its first non-blank line. An SWF
    log whose records carry a node list (Alea's extended SWF) is ``"swf-nodes"``. A pipe
    is refused (TraceFormatError): it can be read only once, by the reader."""
    p = Path(path)
    from ._io import is_pipe, read_once

    if is_pipe(p):
        # A look at its first lines would consume them, and opening it again for the
        # read would wait forever on a FIFO whose writer is gone: refuse before reading.
        raise TraceFormatError(str(p), read_once(p))
    try:
        fmt = _guess_format(p)
    except (OSError, EOFError, zlib.error) as exc:
        # gzip data corrupt in its first lines, as read_trace says it: --stream (and any
        # other caller) calls this without read_trace's own net
        raise TraceFormatError(str(p), f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if fmt == "swf":
        from .swf_nodes import has_node_lists

        if has_node_lists(p):
            return "swf-nodes"
    return fmt


def _guess_format(p: Path) -> str:
    name = p.name.lower()
    if name.endswith((".swf", ".swf.gz")):
        return "swf"
    from ._io import open_binary, open_text, refuse_utf16

    with open_binary(p) as raw:
        refuse_utf16(raw.read(256), p)
    with open_text(p) as fh:
        for line_no, line in enumerate(fh, 1):
            s = line.strip()
            if not s:
                continue
            if PBS_LINE_RE.match(s):
                return "pbs"
            if s.startswith(";"):
                return "swf"
            if "|" in s:
                return "sacct"
            if s.split()[0].lstrip("-").isdigit():
                return "swf"
            from .sacct_records import wrong_separator

            wrong = wrong_separator(line.rstrip("\r\n"))
            if wrong is not None:
                # a sacct dump with another delimiter: --format would not help
                raise TraceFormatError(str(p), wrong, line=line_no)
            break
        else:
            # no format to pass would help: every reader says this of an empty file
            raise TraceFormatError(str(p), "no job records found (the file is empty or blank)")
    raise TraceFormatError(str(p), "cannot tell the log's format; pass --format (one of: " + ", ".join(FORMATS) + ")")


def read_trace(path: str | Path, format: str | None = None, **options: Any) -> Workload:
    """Read and normalize a job log.

    Args:
        path: the log file; ``.gz`` files are decompressed on the fly.
        format: one of :data:`FORMATS`; guessed from the file when None.
        **options: reader options (``lenient``) and the fields of
            :class:`NormalizeSettings` (``cores_per_node``, ``size_field``,
            ``missing_walltime``, ``missing_runtime``).
    """
    from .swf import check_flag_options

    # every reader takes them; "no" read the log leniently (a truthy string)
    check_flag_options(**{k: v for k, v in options.items() if k in ("lenient", "allow_long_span")})
    try:
        return _read(path, format, options)
    except (OSError, EOFError, zlib.error) as exc:
        # e.g. gzip data corrupt past the first lines, which are read when guessing the format
        raise TraceFormatError(str(path), f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def _read(path: str | Path, format: str | None, options: dict[str, Any]) -> Workload:
    fmt = format or detect_format(path)
    try:
        return _read_as(path, fmt, options)
    except TypeError as exc:
        unknown = _unknown_option(fmt, options, exc)
        if unknown is None:
            raise
        raise unknown from None


def _unknown_option(fmt: str, options: dict[str, Any], exc: TypeError) -> TypeError | None:
    """read_trace's own error for an option the log's reader does not take (the reader's
    was "read_swf() got an unexpected keyword argument 'cores'"), or None for another
    TypeError."""
    import difflib
    import inspect

    from .pbs import read_pbs
    from .sacct import read_sacct
    from .swf import read_swf
    from .swf_nodes import read_swf_with_nodes

    readers: dict[str, Callable[..., Workload]] = {"swf": read_swf, "sacct": read_sacct, "pbs": read_pbs, "swf-nodes": read_swf_with_nodes}
    reader = readers[fmt]
    takes = [n for n, p in inspect.signature(reader).parameters.items() if p.kind is p.KEYWORD_ONLY]
    bad = [k for k in options if k not in takes]
    if not bad or f"{reader.__name__}() got an unexpected keyword argument" not in str(exc):
        return None
    close = difflib.get_close_matches(bad[0], takes, n=1, cutoff=0.5)
    meant = f" (did you mean {close[0]}?)" if close else ""
    return TypeError(f"read_trace(): unknown option {bad[0]!r} for a {fmt} log{meant}; options are: {', '.join(takes)}")


def _read_as(path: str | Path, fmt: str, options: dict[str, Any]) -> Workload:
    if fmt == "swf":
        from .swf import read_swf

        return read_swf(path, **options)
    if fmt == "sacct":
        from .sacct import read_sacct

        # read_sacct and read_pbs are not annotated yet (exempt from mypy: pyproject.toml)
        sacct: Workload = read_sacct(path, **options)
        return sacct
    if fmt == "pbs":
        from .pbs import read_pbs

        pbs: Workload = read_pbs(path, **options)
        return pbs
    if fmt == "swf-nodes":
        from .swf_nodes import read_swf_with_nodes

        return read_swf_with_nodes(path, **options)
    raise TraceFormatError(str(path), f"unknown format {fmt!r}; expected one of: " + ", ".join(FORMATS))

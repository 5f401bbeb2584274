"""Writing result files so that a reader never sees half of one.

Every file toposched writes as a result goes through :func:`write_atomic`: it is written
under a temporary name in the same directory, given the usual mode (``0666 & ~umask``;
``mkstemp`` would leave ``0600``, which hides results from colleagues on a shared file
system), then renamed into place. An interrupted run leaves either the old file, the new
one, or a ``.NAME.*.tmp`` file that nothing reads as a result.
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Callable


@lru_cache(maxsize=1)
def file_mode() -> int:
    """The mode a new ordinary file gets under the process's umask. Read from /proc
    where possible: changing the umask to read it would race with other threads (Dask
    workers run several)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: str | Path, write: Callable[[str], None]) -> Path:
    """Call ``write(tmp_path)`` to produce the file, then move it to ``path``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_atomic(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))

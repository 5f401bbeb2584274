"""The on-disk layout of a sweep directory, shared by the runner (which writes it) and the
catalog (which reads it): ``runs/<run id>/`` directories, each whole once its marker
``run.json`` is written, temporary names, and the driver's lock."""

from __future__ import annotations

import fcntl
import json
import os
import socket
from pathlib import Path
from typing import Any

from ..errors import ToposchedError

RUNS = "runs"
MARKER = "run.json"
TMP_PREFIX = ".tmp-"


def run_status(run_dir: Path) -> dict[str, Any] | None:
    """The run's marker (``run.json``) if the directory holds a finished run, else None."""
    try:
        marker = json.loads((run_dir / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("status") not in ("complete", "failed"):
        return None
    return marker


class SweepLock:
    """``DIR/.lock``, held by the one driver working on DIR (flock: released if it dies)."""

    def __init__(self, out: Path) -> None:
        self.path = out / ".lock"
        self.fd: int | None = None

    def __enter__(self) -> "SweepLock":
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.fd)
            self.fd = None
            raise ToposchedError(f"{self.path.parent}: another toposched sweep, compare or frontier is working on this directory (lock {self.path} is held)") from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, f"{socket.gethostname()} {os.getpid()}\n".encode())
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

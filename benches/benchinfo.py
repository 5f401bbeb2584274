"""What every benchmark prints beside its figures: the commit it measured.

Imported by the bench scripts of this directory (run as ``python benches/NAME.py``, so
this directory is on ``sys.path``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Where the real logs are: $TOPOSCHED_TRACES, else ../shared/data/traces beside the repo.
DEFAULT_TRACE_DIR = Path(os.environ.get("TOPOSCHED_TRACES", HERE.parent.parent / "shared" / "data" / "traces"))


def commit() -> str:
    """The short commit of this checkout, with ``+dirty`` if tracked files changed."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE, capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"

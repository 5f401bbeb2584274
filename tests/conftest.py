"""Shared test fixtures: where the real data lives."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# ../shared/data beside the repository (CI clones it there); the bundled example otherwise.
SHARED_DATA = REPO.parent / "shared" / "data"
TRACES = SHARED_DATA / "traces"
SLURM = SHARED_DATA / "slurm"
EXAMPLE_TRACE = REPO / "examples" / "data" / "LLNL-Atlas-2006-2.1-cln.swf.gz"


def shared(path: Path) -> Path:
    """A file of ../shared/data; skip the test (loudly) if the checkout has no shared data."""
    if not path.exists():
        pytest.skip(f"shared data not found: {path}")
    return path

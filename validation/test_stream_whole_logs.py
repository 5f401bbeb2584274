"""`toposched simulate --stream` on every whole SWF log of the data set: the five files are
byte for byte the whole replay's (``python -m pytest validation/test_stream_whole_logs.py``;
tests/test_stream_simulate.py checks the same on the bundled cut traces). The data set is
found as in test_whole_logs.py; without it this module stops with one line saying so."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOPOSCHED_SHARED_DATA", REPO.parent / "shared" / "data"))
TRACES = SHARED / "traces"
if not TRACES.is_dir():
    pytest.fail(f"validation/test_stream_whole_logs.py needs the full data set: {TRACES} not found (set TOPOSCHED_SHARED_DATA=DIR)", pytrace=False)

from toposched.simulate import RunConfig, simulate  # noqa: E402
from toposched.stream import simulate_stream  # noqa: E402
from toposched.topology import load_fabric  # noqa: E402
from toposched.workload import read_trace  # noqa: E402

LOGS = sorted(p for p in TRACES.iterdir() if ".swf" in p.name and not p.name.endswith(".machines") and "wagap" not in p.name)
FILES = ("jobs.parquet", "utilization.parquet", "skipped.parquet", "summary.json", "fabric.json")


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name.split("-")[0] + "-" + p.name.split("-")[1])
def test_whole_log_streams_to_the_same_files(log: Path, tmp_path: Path) -> None:
    fabric = load_fabric("cab" if "LLNL" in log.name else "fattree:K=18,S=18,P=18")
    config = RunConfig(queue="easy", alloc="isolated")
    simulate(read_trace(log), fabric, config).write(tmp_path / "whole")
    simulate_stream(log, fabric, config, tmp_path / "stream", chunk_jobs=9_973)
    for name in FILES:
        assert (tmp_path / "whole" / name).read_bytes() == (tmp_path / "stream" / name).read_bytes(), name

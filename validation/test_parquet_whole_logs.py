"""The native Parquet writer (crates/toposched-io/src/parquet.rs) on whole logs, against
pyarrow's writer with the options the package gave it before: HPC2N on
`fattree:K=16,S=15,P=1`, LLNL Thunder on cab, CEA Curie on `fattree:K=18,S=18,P=18`
(EASY + linear), each replayed whole and `--stream`. For every result file, pyarrow's
writer is given the table read back from toposched's file; the two files read back equal,
with equal Arrow schemas and metadata, footer keys, row groups and column encodings. The
streamed replay's files are the whole replay's bytes.

Needs the full data set (see validation/test_whole_logs.py): ``python -m pytest
validation/test_parquet_whole_logs.py``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from toposched.cli import main

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(os.environ.get("TOPOSCHED_SHARED_DATA", REPO.parent / "shared" / "data")) / "traces"
if not TRACES.is_dir():
    pytest.fail(f"validation/test_parquet_whole_logs.py needs the full data set: {TRACES} not found (TOPOSCHED_SHARED_DATA=DIR)", pytrace=False)

CASES = [
    ("HPC2N-2002-2.2-cln.swf.gz", "fattree:K=16,S=15,P=1"),
    ("LLNL-Thunder-2007-1.1-cln.swf.gz", "cab"),
    ("CEA-Curie-2011-2.1-cln.swf.gz", "fattree:K=18,S=18,P=18"),
]

#: pyarrow's options of each file before the native writer (jobs.parquet's ids and times
#: delta-encoded since, as the native writer writes them: docs/reliability.md).
FORMER: dict[str, dict[str, Any]] = {
    "jobs": {
        "row_group_size": 1 << 17,
        "use_dictionary": ["nodes", "killed", "alloc_class", "leaves", "pods"],
        "column_encoding": {
            **{c: "DELTA_BINARY_PACKED" for c in ("job_id", "submit_s", "start_s", "end_s", "wait_s", "walltime_s", "runtime_s", "log_runtime_s")},
            "node_ranges.list.element.first": "DELTA_BINARY_PACKED",
            "node_ranges.list.element.count": "DELTA_BINARY_PACKED",
        },
    },
    "utilization": {"row_group_size": 1 << 20, "use_dictionary": ["busy_nodes", "utilization"], "column_encoding": {"time_s": "DELTA_BINARY_PACKED"}},
    "skipped": {},
}


def _layout(f: Any) -> list[tuple[Any, ...]]:
    md = f.metadata
    return [
        (g, md.row_group(g).num_rows, c.path_in_schema, c.compression, c.has_dictionary_page, "DELTA_BINARY_PACKED" in c.encodings)
        for g in range(md.num_row_groups)
        for c in (md.row_group(g).column(i) for i in range(md.num_columns))
    ]


@pytest.mark.parametrize("trace, system", CASES, ids=[c[0].split("-")[0] + "-" + c[0].split("-")[1] for c in CASES])
def test_whole_log_files_read_as_pyarrows(trace: str, system: str, tmp_path: Path) -> None:
    for mode in ("whole", "stream"):
        argv = ["simulate", "--trace", str(TRACES / trace), "--system", system, "--queue", "easy", "--alloc", "linear", "--out", str(tmp_path / mode), "--quiet"]
        assert main(argv + (["--stream"] if mode == "stream" else [])) == 0
    for name in ("jobs.parquet", "utilization.parquet", "skipped.parquet", "summary.json", "fabric.json"):
        assert (tmp_path / "whole" / name).read_bytes() == (tmp_path / "stream" / name).read_bytes(), name
    for kind, options in FORMER.items():
        ours = pq.ParquetFile(tmp_path / "whole" / f"{kind}.parquet")
        table = ours.read()
        ref_path = tmp_path / f"ref-{kind}.parquet"
        pq.write_table(table, ref_path, **options)
        ref = pq.ParquetFile(ref_path)
        assert ours.metadata.created_by.startswith("parquet-rs") and ref.metadata.created_by.startswith("parquet-cpp")
        assert pq.read_table(ref_path).equals(table, check_metadata=True), kind
        assert ours.schema_arrow.equals(ref.schema_arrow, check_metadata=True), kind
        assert list(ours.metadata.metadata) == list(ref.metadata.metadata) == [b"ARROW:schema", b"toposched.run_id"], kind
        assert ours.metadata.metadata[b"toposched.run_id"] == ref.metadata.metadata[b"toposched.run_id"]
        assert _layout(ours) == _layout(ref), kind

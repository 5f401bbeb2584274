"""The result files' native Parquet writer (crates/toposched-io/src/parquet.rs, through
toposched.parquet_out) against pyarrow's writer, the one the package used before: on
random tables (Hypothesis: empty tables, nulls in aph, empty node lists, strings) and on
tables of more than one row group, the file read back by pyarrow is the table pyarrow's
own file gives, with the same Arrow schema, metadata, row groups and encodings (pyarrow's
``pq.write_table`` with the options the package passed it, kept here as the reference).
The same table written twice, or in pieces, is the same bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toposched import parquet_out
from toposched.nodelists import NODE_RANGES, ranges_array
from toposched.utilization import UtilizationSeries

RUN_ID = b"0123456789abcdef"
ROW_GROUP = 1 << 17

#: The encodings the native writer gives each column, as pyarrow options (the reference's:
#: what results.py passed pyarrow before the native writer, with the times and ids of
#: jobs.parquet delta-encoded since).
JOBS_OPTIONS: dict[str, Any] = {
    "use_dictionary": ["nodes", "killed", "alloc_class", "leaves", "pods"],
    "column_encoding": {
        **{c: "DELTA_BINARY_PACKED" for c in ("job_id", "submit_s", "start_s", "end_s", "wait_s", "walltime_s", "runtime_s", "log_runtime_s")},
        f"{NODE_RANGES}.list.element.first": "DELTA_BINARY_PACKED",
        f"{NODE_RANGES}.list.element.count": "DELTA_BINARY_PACKED",
    },
}
UTILIZATION_OPTIONS: dict[str, Any] = {"use_dictionary": ["busy_nodes", "utilization"], "column_encoding": {"time_s": "DELTA_BINARY_PACKED"}}


def _reference(table: pa.Table, path: Path, kind: str) -> None:
    """The file pyarrow wrote before: the same table, metadata and options."""
    t = table.replace_schema_metadata({**(table.schema.metadata or {}), b"toposched.run_id": RUN_ID})
    if kind == "jobs":
        pq.write_table(t, path, row_group_size=ROW_GROUP, **JOBS_OPTIONS)
    elif kind == "utilization":
        pq.write_table(t, path, row_group_size=1 << 20, **UTILIZATION_OPTIONS)
    else:
        pq.write_table(t, path)


def _encodings(md: Any) -> list[tuple[str, str, bool, bool]]:
    """Per column chunk: path, codec, dictionary page or not, delta-encoded or not."""
    out = []
    for g in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(g).column(c)
            out.append((col.path_in_schema, col.compression, col.has_dictionary_page, "DELTA_BINARY_PACKED" in col.encodings))
    return out


def _same_as_pyarrow(table: pa.Table, tmp: Path, kind: str) -> None:
    ref, got = tmp / f"ref-{kind}.parquet", tmp / f"got-{kind}.parquet"
    _reference(table, ref, kind)
    parquet_out.write_table(got, kind, table, RUN_ID)
    a, b = pq.ParquetFile(ref), pq.ParquetFile(got)
    assert b.schema_arrow.equals(a.schema_arrow, check_metadata=True)
    assert b.schema_arrow.metadata == a.schema_arrow.metadata == {b"toposched.run_id": RUN_ID}
    # the footer: the same keys (the Arrow schema and the run id), the same run id
    assert list(b.metadata.metadata) == list(a.metadata.metadata) == [b"ARROW:schema", b"toposched.run_id"]
    assert b.metadata.metadata[b"toposched.run_id"] == RUN_ID
    ta, tb = pq.read_table(ref), pq.read_table(got)
    assert tb.equals(ta, check_metadata=True)
    assert tb.to_pylist() == table.to_pylist()  # (NaN-free tables: nulls stay nulls)
    assert [b.metadata.row_group(i).num_rows for i in range(b.num_row_groups)] == [a.metadata.row_group(i).num_rows for i in range(a.num_row_groups)]
    assert _encodings(b.metadata) == _encodings(a.metadata)
    assert b.metadata.row_group(0).column(0).compression == "SNAPPY"


@st.composite
def _jobs_tables(draw: Any, max_rows: int = 40) -> pa.Table:
    n = draw(st.integers(0, max_rows))
    ints = st.lists(st.integers(-(2**40), 2**40), min_size=n, max_size=n)
    node_lists = draw(st.lists(st.lists(st.tuples(st.integers(0, 2**32 - 1_000), st.integers(1, 999)), max_size=4), min_size=n, max_size=n))
    aph = draw(st.lists(st.one_of(st.none(), st.floats(0, 10, allow_nan=False)), min_size=n, max_size=n))
    roff = np.zeros(n + 1, np.int64)
    np.cumsum([len(x) for x in node_lists], out=roff[1:])
    first = np.array([f for x in node_lists for f, _ in x], np.uint32)
    count = np.array([c for x in node_lists for _, c in x], np.uint32)
    cols: dict[str, Any] = {name: pa.array(np.array(draw(ints), np.int64)) for name in ("job_id", "submit_s", "start_s", "end_s", "wait_s", "nodes", "walltime_s", "runtime_s", "log_runtime_s")}
    cols["killed"] = pa.array(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool))
    cols["bounded_slowdown"] = pa.array(np.array(draw(st.lists(st.floats(1, 1e6), min_size=n, max_size=n)), np.float64))
    cols["aph"] = pa.array(aph, pa.float64())
    cols["alloc_class"] = pa.array(np.array(draw(st.lists(st.integers(-1, 3), min_size=n, max_size=n)), np.int8))
    cols["leaves"] = pa.array(np.array(draw(st.lists(st.integers(0, 99), min_size=n, max_size=n)), np.int32))
    cols["pods"] = pa.array(np.array(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)), np.int32))
    cols[NODE_RANGES] = ranges_array(roff, first, count)
    if draw(st.booleans()):  # a network run's columns: strings and more floats
        cols["net_pattern"] = pa.array(draw(st.lists(st.sampled_from(["all-to-all", "ring", "é-unicode"]), min_size=n, max_size=n)), pa.string())
        cols["net_slowdown"] = pa.array(np.array(draw(st.lists(st.floats(1, 5), min_size=n, max_size=n)), np.float64))
    table = pa.table(cols)
    if n > 2 and draw(st.booleans()):  # several record batches, sliced
        k = draw(st.integers(1, n - 1))
        table = pa.concat_tables([table.slice(0, k), table.slice(k)])
    return table


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=_jobs_tables())
def test_jobs_file_reads_back_as_pyarrows(table: pa.Table, tmp_path: Path) -> None:
    _same_as_pyarrow(table, tmp_path, "jobs")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 50), data=st.data())
def test_skipped_file_reads_back_as_pyarrows(n: int, data: Any, tmp_path: Path) -> None:
    ints = st.lists(st.integers(0, 2**40), min_size=n, max_size=n)
    table = pa.table(
        {
            "job_id": pa.array(np.array(data.draw(ints), np.int64)),
            "submit_s": pa.array(np.array(data.draw(ints), np.int64)),
            "nodes": pa.array(np.array(data.draw(ints), np.int64)),
            "reason": pa.array(data.draw(st.lists(st.text(max_size=30), min_size=n, max_size=n)), pa.string()),
        }
    )
    _same_as_pyarrow(table, tmp_path, "skipped")


def test_several_row_groups_as_pyarrow(tmp_path: Path) -> None:
    """More than 2^17 jobs (three row groups of jobs.parquet), random values, null APHs
    and empty node lists among them; and two row groups of utilization samples."""
    rng = np.random.default_rng(7)
    n = 2 * ROW_GROUP + 1234
    lens = rng.integers(0, 4, n)
    roff = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=roff[1:])
    first = np.sort(rng.integers(0, 2**31, int(roff[-1]))).astype(np.uint32)
    count = rng.integers(1, 64, int(roff[-1])).astype(np.uint32)
    aph = rng.random(n)
    table = pa.table(
        {
            "job_id": pa.array(np.arange(n, dtype=np.int64)),
            "start_s": pa.array(rng.integers(0, 10**9, n)),
            "nodes": pa.array(rng.integers(1, 64, n)),
            "killed": pa.array(rng.random(n) < 0.1),
            "aph": pa.array(aph, mask=rng.random(n) < 0.3),
            "alloc_class": pa.array(rng.integers(0, 3, n).astype(np.int8)),
            "leaves": pa.array(rng.integers(0, 9, n).astype(np.int32)),
            NODE_RANGES: ranges_array(roff, first, count),
        }
    )
    _same_as_pyarrow(table, tmp_path, "jobs")
    assert pq.ParquetFile(tmp_path / "got-jobs.parquet").num_row_groups == 3
    samples = (1 << 20) + 999
    util = pa.table({"time_s": pa.array(60 * np.arange(samples, dtype=np.int64)), "busy_nodes": pa.array(rng.integers(0, 240, samples)), "utilization": pa.array(rng.random(samples))})
    _same_as_pyarrow(util, tmp_path, "utilization")


def test_same_table_same_bytes_whole_or_in_pieces(tmp_path: Path) -> None:
    """Written twice, or a few rows at a time through one writer: the same bytes."""
    rng = np.random.default_rng(3)
    n = ROW_GROUP + 777
    roff = np.arange(n + 1, dtype=np.int64)
    table = pa.table({"job_id": pa.array(np.arange(n, dtype=np.int64)), "aph": pa.array(rng.random(n), mask=rng.random(n) < 0.5), NODE_RANGES: ranges_array(roff, np.arange(n, dtype=np.uint32), np.ones(n, np.uint32))})
    for name in ("a", "b"):
        parquet_out.write_table(tmp_path / name, "jobs", table, RUN_ID)
    w = parquet_out.TableWriter(tmp_path / "c", "jobs", parquet_out.file_metadata(None, RUN_ID))
    for lo, hi in ((0, 1), (1, 1), (1, 5000), (5000, n)):
        w.write_table(table.slice(lo, hi - lo))
    assert w.close() == n
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes() == (tmp_path / "c").read_bytes()


def test_utilization_file_in_chunks_is_the_whole_tables(tmp_path: Path) -> None:
    """results._write_utilization (a chunk of samples at a time) writes the file the whole
    table gives, and it reads back as pyarrow's."""
    from toposched.results import _write_utilization

    rng = np.random.default_rng(1)
    n_samples = 3000
    start = np.sort(rng.integers(0, n_samples * 60, 200))
    series = UtilizationSeries.from_jobs(start, start + rng.integers(0, 9000, 200), rng.integers(1, 50, 200), 0, (n_samples - 1) * 60, 60, 64)
    whole = series.table()
    _same_as_pyarrow(whole, tmp_path, "utilization")
    _write_utilization(series, str(tmp_path / "written.parquet"), RUN_ID)
    # chunks of 1,000 samples: still the one row group of the whole table
    w = parquet_out.TableWriter(tmp_path / "chunked.parquet", "utilization", parquet_out.file_metadata(None, RUN_ID))
    for times, busy, util in series.arrays(1000):
        w.write_columns([("time_s", times, None, True), ("busy_nodes", busy, None, True), ("utilization", util, None, True)])
    assert w.close() == n_samples
    assert (tmp_path / "written.parquet").read_bytes() == (tmp_path / "got-utilization.parquet").read_bytes()
    assert (tmp_path / "chunked.parquet").read_bytes() == (tmp_path / "got-utilization.parquet").read_bytes()


def test_refusals_name_the_column(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="column when: type timestamp"):
        parquet_out.write_table(tmp_path / "x", "jobs", pa.table({"when": pa.array([1], pa.timestamp("s"))}), RUN_ID)
    with pytest.raises(ValueError, match="kind must be"):
        parquet_out.TableWriter(tmp_path / "x", "nope", [])
    with pytest.raises(FileNotFoundError):
        parquet_out.write_table(tmp_path / "missing" / "x", "skipped", pa.table({"a": [1]}), RUN_ID)


def test_simulate_twice_gives_the_same_files(tmp_path: Path) -> None:
    """Two runs of the command on a bundled log: the same five files, byte for byte."""
    from conftest import TRACES
    from toposched.cli import main

    trace = str(TRACES / "LLNL-Thunder-2007-1.1-cln.first6124lines.swf.gz")
    for name in ("a", "b"):
        assert main(["simulate", "--trace", trace, "--system", "cab", "--queue", "easy", "--alloc", "linear", "--out", str(tmp_path / name), "--quiet"]) == 0
    for f in ("jobs.parquet", "utilization.parquet", "skipped.parquet", "summary.json", "fabric.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    assert pq.ParquetFile(tmp_path / "a" / "jobs.parquet").metadata.created_by.startswith("parquet-rs")

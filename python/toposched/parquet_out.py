"""The result's Parquet files, written by the native writer (``_core.ParquetFileWriter``,
crates/toposched-io/src/parquet.rs): jobs.parquet, utilization.parquet, skipped.parquet.

The encodings, row groups and metadata of each file are the native writer's
(``ResultFile`` there); this module only hands it a table's columns as NumPy arrays, read
from the Arrow buffers (no copy here; the writer copies them into its own arrays). What a
reader gets back is what pyarrow's ``pq.write_table`` with the files' former options gave
(tests/test_parquet_native.py).

Column types written: integers, floats, booleans (nulls allowed), strings and the
``node_ranges`` list (toposched.nodelists); any other type is refused with a ValueError
naming the column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np

from . import _core
from .nodelists import _chunk_ranges

#: Key of the run id in the Parquet files' metadata.
RUN_ID_KEY = b"toposched.run_id"

Column = tuple[str, Any, "np.ndarray | None", bool]


def file_metadata(schema_metadata: dict[bytes, bytes] | None, run_id: bytes | None) -> list[tuple[str, str]]:
    """The footer's key-value pairs: a table's schema metadata, then the run id."""
    meta = dict(schema_metadata or {})
    if run_id is not None:
        meta[RUN_ID_KEY] = run_id
    return [(k.decode(), v.decode()) for k, v in meta.items()]


def _validity(a: Any) -> np.ndarray | None:
    if not a.null_count:
        return None
    bits = np.unpackbits(np.frombuffer(a.buffers()[0], np.uint8), bitorder="little")
    return bits[a.offset : a.offset + len(a)].astype(bool)


def array_column(name: str, a: Any, nullable: bool = True) -> Column:
    """One pyarrow Array as the native writer's column."""
    import pyarrow as pa

    from .nodelists import RANGE_TYPE

    t = a.type
    if pa.types.is_list(t):
        if t.value_type != RANGE_TYPE or t.value_field.nullable:
            raise ValueError(f"column {name}: only node ranges ({RANGE_TYPE}) are written as lists, not {t}")
        if a.null_count:
            raise ValueError(f"column {name}: node ranges cannot be null")
        roff, first, count = _chunk_ranges("node_ranges", a)
        return (name, (np.asarray(roff, np.int64), np.asarray(first, np.uint32), np.asarray(count, np.uint32)), None, nullable)
    if pa.types.is_string(t):
        return (name, a.to_pylist(), None, nullable)
    if pa.types.is_boolean(t):
        bits = np.unpackbits(np.frombuffer(a.buffers()[1], np.uint8), bitorder="little")
        return (name, bits[a.offset : a.offset + len(a)].astype(bool), _validity(a), nullable)
    if pa.types.is_integer(t) or (pa.types.is_floating(t) and not pa.types.is_float16(t)):
        dtype = np.dtype(t.to_pandas_dtype())
        values = np.frombuffer(a.buffers()[1], dtype=dtype, count=len(a), offset=a.offset * dtype.itemsize) if len(a) else np.zeros(0, dtype)
        return (name, values, _validity(a), nullable)
    raise ValueError(f"column {name}: type {t} is not one toposched writes to Parquet (integers, floats, booleans, strings, node ranges)")


def batches_columns(table: Any) -> Iterable[list[Column]]:
    """A pyarrow Table's columns a record batch at a time (at least one, for the schema)."""
    import pyarrow as pa

    schema = table.schema
    batches = table.to_batches()
    if not batches:
        batches = [pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)]
    for b in batches:
        yield [array_column(f.name, b.column(i), f.nullable) for i, f in enumerate(schema)]


class TableWriter:
    """One result file (``kind``: "jobs", "utilization", "skipped") written a table (or
    NumPy columns) at a time; the native writer cuts the rows into the file's row groups
    whatever the pieces, so the file is the one written whole."""

    def __init__(self, path: str | Path, kind: str, metadata: list[tuple[str, str]], row_group_rows: int | None = None) -> None:
        self._w = _core.ParquetFileWriter(str(path), kind, metadata, row_group_rows)

    def write_table(self, table: Any) -> None:
        for cols in batches_columns(table):
            self._w.write(cols)

    def write_columns(self, columns: list[Column]) -> None:
        self._w.write(columns)

    def close(self) -> int:
        """Write the footer; the number of rows."""
        return self._w.close()


def write_table(path: str | Path, kind: str, table: Any, run_id: bytes | None, row_group_rows: int | None = None) -> None:
    """``table`` (a pyarrow Table) as the result file ``kind``, with ``run_id`` in its
    metadata beside the table's own (row groups: the file's own size unless given)."""
    w = TableWriter(path, kind, file_metadata(table.schema.metadata, run_id), row_group_rows)
    w.write_table(table)
    w.close()

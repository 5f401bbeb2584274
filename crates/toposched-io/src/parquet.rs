//! The result's Parquet files (jobs.parquet, utilization.parquet, skipped.parquet), written
//! with arrow-rs: one writer for the whole replay, the streamed replay (a row group at a
//! time) and the Python API alike.
//!
//! What a reader sees is what pyarrow's writer gave before (the files' contract, checked by
//! tests/test_parquet_native.py against `pq.write_table` on random tables): the same Arrow
//! schema (field names, types, nullability; a list's item field named `item`, stored as
//! Parquet's `element`), the run id under [`RUN_ID_KEY`] in the footer's key-value metadata
//! and in the Arrow schema kept there (`ARROW:schema`), the same row groups, and the same
//! encodings: dictionary only on the columns each file lists ([`ResultFile`]),
//! DELTA_BINARY_PACKED where it lists it, snappy pages (pyarrow's default codec), chunk
//! statistics and no page index (pyarrow's defaults). The bytes differ from pyarrow's
//! (`created_by`, page layout); the same batches always give the same bytes.

use std::fmt;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, Int8Array, ListArray, RecordBatch, StringArray,
    StructArray, UInt32Array,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema, SchemaRef};

use crate::collect::FinishedJobs;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;

/// Key of the run id in the files' metadata (what `toposched check` compares).
pub const RUN_ID_KEY: &str = "toposched.run_id";
/// jobs.parquet's node lists as ranges: `list<item: struct<first: uint32, count: uint32>>`
/// (python/toposched/nodelists.py says why ranges).
pub const NODE_RANGES: &str = "node_ranges";
/// Rows per row group of jobs.parquet (bounds the writer's buffers: memory per job).
pub const JOBS_ROW_GROUP: usize = 1 << 17;
/// Rows per row group of utilization.parquet (its chunk of samples) and skipped.parquet
/// (pyarrow's default row group, kept so that the files read as before).
pub const UTILIZATION_ROW_GROUP: usize = 1 << 20;
pub const SKIPPED_ROW_GROUP: usize = 1 << 20;

/// Which result file: each has its own encodings and row groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultFile {
    /// jobs.parquet. Dictionary encoding only where values are few (on every column, as
    /// pyarrow does by default, it doubled the time to write the file, times and ids being
    /// nearly all distinct); ids and times are delta-encoded (ids and submits ascend, and
    /// times are close to the row before: a third less space, and snappy has far less to
    /// compress), and so are a job's ranges, which ascend.
    Jobs,
    /// utilization.parquet: sample times are a regular grid (delta encoding stores it in
    /// almost nothing), busy counts take few values (dictionary on every column took twice
    /// the time and 13x the space: HPC2N, 1.8 M samples).
    Utilization,
    /// skipped.parquet: pyarrow's defaults (dictionary on every column).
    Skipped,
}

impl ResultFile {
    /// The kind of the name Python passes (`"jobs"`, `"utilization"`, `"skipped"`).
    pub fn from_name(name: &str) -> Option<ResultFile> {
        match name {
            "jobs" => Some(ResultFile::Jobs),
            "utilization" => Some(ResultFile::Utilization),
            "skipped" => Some(ResultFile::Skipped),
            _ => None,
        }
    }

    /// Rows per row group.
    pub fn row_group_rows(self) -> usize {
        match self {
            ResultFile::Jobs => JOBS_ROW_GROUP,
            ResultFile::Utilization => UTILIZATION_ROW_GROUP,
            ResultFile::Skipped => SKIPPED_ROW_GROUP,
        }
    }

    /// Top-level columns dictionary-encoded (None: every column).
    pub fn dictionary_columns(self) -> Option<&'static [&'static str]> {
        match self {
            ResultFile::Jobs => Some(&["nodes", "killed", "alloc_class", "leaves", "pods"]),
            ResultFile::Utilization => Some(&["busy_nodes", "utilization"]),
            ResultFile::Skipped => None,
        }
    }

    /// Parquet column paths written DELTA_BINARY_PACKED (those present in a file's schema).
    pub fn delta_columns(self) -> &'static [&'static [&'static str]] {
        match self {
            ResultFile::Jobs => &[
                &["job_id"],
                &["submit_s"],
                &["start_s"],
                &["end_s"],
                &["wait_s"],
                &["walltime_s"],
                &["runtime_s"],
                &["log_runtime_s"],
                &[NODE_RANGES, "list", "element", "first"],
                &[NODE_RANGES, "list", "element", "count"],
            ],
            ResultFile::Utilization => &[&["time_s"]],
            ResultFile::Skipped => &[],
        }
    }

    fn properties(self, schema: &Schema, row_group_rows: usize, metadata: Vec<KeyValue>) -> WriterProperties {
        let mut b = WriterProperties::builder()
            .set_key_value_metadata(Some(metadata))
            .set_writer_version(WriterVersion::PARQUET_1_0)
            .set_compression(Compression::SNAPPY)
            // pyarrow's defaults: statistics per column chunk, no page index
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_offset_index_disabled(true)
            // a list's items are `element` in the Parquet schema, as pyarrow writes them
            // (the Arrow schema kept in the footer still says `item`)
            .set_coerce_types(true)
            .set_max_row_group_row_count(Some(row_group_rows.max(1)))
            .set_max_row_group_bytes(None);
        if let Some(dict) = self.dictionary_columns() {
            b = b.set_dictionary_enabled(false);
            for name in dict {
                if schema.field_with_name(name).is_ok() {
                    b = b.set_column_dictionary_enabled(ColumnPath::from(*name), true);
                }
            }
        }
        for path in self.delta_columns() {
            if schema.field_with_name(path[0]).is_ok() {
                let p = ColumnPath::new(path.iter().map(|s| s.to_string()).collect());
                b = b.set_column_dictionary_enabled(p.clone(), false).set_column_encoding(p, Encoding::DELTA_BINARY_PACKED);
            }
        }
        b.build()
    }
}

/// A result file that could not be written: the message names the file.
#[derive(Debug)]
pub enum WriteError {
    /// The file system refused (permissions, a full disk): an OSError in Python.
    Io { path: PathBuf, error: std::io::Error },
    /// The data does not make a valid table of this file (a bug of the caller).
    Data { path: PathBuf, message: String },
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Io { path, error } => write!(f, "{}: cannot write: {error}", path.display()),
            WriteError::Data { path, message } => write!(f, "{}: {message}", path.display()),
        }
    }
}

impl std::error::Error for WriteError {}

impl WriteError {
    fn of(path: &Path, e: ParquetError) -> WriteError {
        match e {
            ParquetError::External(inner) => match inner.downcast::<std::io::Error>() {
                Ok(io) => WriteError::Io { path: path.to_path_buf(), error: *io },
                Err(other) => WriteError::Data { path: path.to_path_buf(), message: other.to_string() },
            },
            ParquetError::ArrowError(m) => WriteError::Data { path: path.to_path_buf(), message: m },
            other => WriteError::Data { path: path.to_path_buf(), message: other.to_string() },
        }
    }
}

/// One result file being written, a batch (or row group) at a time. Rows go into row
/// groups of [`ResultFile::row_group_rows`] whatever the batches' sizes, so a file written
/// in pieces is the file written whole, byte for byte.
pub struct ResultWriter {
    path: PathBuf,
    inner: ArrowWriter<BufWriter<File>>,
    schema: SchemaRef,
    row_group_rows: usize,
    /// Rows not written yet (less than a row group): see [`ResultWriter::write`].
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    rows: usize,
}

impl ResultWriter {
    /// Create `path` for `file` with the columns of `schema`; `metadata` is the footer's
    /// key-value metadata, in this order (the run id under [`RUN_ID_KEY`] among it).
    ///
    /// The Arrow schema kept in the footer carries the run id as its metadata, as
    /// pyarrow's did (the streamed replay patches it there: python/toposched/stream.py);
    /// other keys are in the footer only (arrow-rs keeps a schema's metadata in a hash
    /// map, whose order would make the bytes vary from run to run; readers take a file's
    /// metadata from the footer).
    pub fn create(path: &Path, file: ResultFile, schema: SchemaRef, metadata: &[(String, String)]) -> Result<ResultWriter, WriteError> {
        Self::create_with_row_groups(path, file, schema, metadata, file.row_group_rows())
    }

    /// [`ResultWriter::create`] with row groups of `row_group_rows` rows (tests make
    /// small ones to reach the paths of many groups).
    pub fn create_with_row_groups(path: &Path, file: ResultFile, schema: SchemaRef, metadata: &[(String, String)], row_group_rows: usize) -> Result<ResultWriter, WriteError> {
        let out = File::create(path).map_err(|error| WriteError::Io { path: path.to_path_buf(), error })?;
        let kept: std::collections::HashMap<String, String> =
            metadata.iter().filter(|(k, _)| k == RUN_ID_KEY).cloned().collect();
        let schema = Arc::new(Schema::new_with_metadata(schema.fields().clone(), kept));
        // the footer's pairs, then the Arrow schema (the writer appends it), as pyarrow
        // orders them
        let pairs = metadata.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())).collect();
        let props = file.properties(&schema, row_group_rows, pairs);
        let inner = ArrowWriter::try_new(BufWriter::with_capacity(1 << 20, out), schema.clone(), Some(props)).map_err(|e| WriteError::of(path, e))?;
        Ok(ResultWriter { path: path.to_path_buf(), inner, schema, row_group_rows: row_group_rows.max(1), pending: Vec::new(), pending_rows: 0, rows: 0 })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append the rows of `batch` (its columns those of the schema given to `create`).
    ///
    /// Rows are held until a row group is full and each row group is handed to the
    /// encoder whole: the encoder cuts pages at its own batch boundaries, so rows handed
    /// over in other pieces would make other pages (the same rows, other bytes).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), WriteError> {
        let want = self.schema.fields();
        let got = batch.schema();
        if got.fields().len() != want.len() || got.fields().iter().zip(want.iter()).any(|(a, b)| a.name() != b.name() || a.data_type() != b.data_type() || a.is_nullable() != b.is_nullable()) {
            return Err(WriteError::Data { path: self.path.clone(), message: format!("rows of another schema than the file's: {} vs {}", got, self.schema) });
        }
        if batch.num_rows() == 0 {
            return Ok(());
        }
        // the batch under the file's schema (its metadata is the file's)
        let batch = RecordBatch::try_new(self.schema.clone(), batch.columns().to_vec()).map_err(|e| WriteError::of(&self.path, e.into()))?;
        self.rows += batch.num_rows();
        self.pending_rows += batch.num_rows();
        self.pending.push(batch);
        if self.pending_rows >= self.row_group_rows {
            let all = self.take_pending()?;
            let whole = all.num_rows() - all.num_rows() % self.row_group_rows;
            for at in (0..whole).step_by(self.row_group_rows) {
                self.inner.write(&all.slice(at, self.row_group_rows)).map_err(|e| WriteError::of(&self.path, e))?;
            }
            if whole < all.num_rows() {
                // the rest copied out: a slice would keep every row group's rows alive
                let rest = all.slice(whole, all.num_rows() - whole);
                let rest = arrow_select::concat::concat_batches(&self.schema, [&rest, &rest.slice(0, 0)]).map_err(|e| WriteError::of(&self.path, e.into()))?;
                self.pending_rows = rest.num_rows();
                self.pending.push(rest);
            }
        }
        Ok(())
    }

    /// The rows held, as one batch (none held after).
    fn take_pending(&mut self) -> Result<RecordBatch, WriteError> {
        let parts = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        if parts.len() == 1 {
            return Ok(parts.into_iter().next().expect("one part"));
        }
        arrow_select::concat::concat_batches(&self.schema, &parts).map_err(|e| WriteError::of(&self.path, e.into()))
    }

    /// Write the last row group and the footer; the number of rows written.
    pub fn finish(mut self) -> Result<usize, WriteError> {
        if self.pending_rows > 0 {
            let last = self.take_pending()?;
            self.inner.write(&last).map_err(|e| WriteError::of(&self.path, e))?;
        }
        let ResultWriter { path, inner, rows, .. } = self;
        let err = |e| WriteError::of(&path, e);
        let mut out = if rows == 0 {
            // no rows: one empty row group, as pyarrow writes an empty table (a reader
            // going through the row groups sees one group, with no rows)
            let (mut file, columns) = inner.into_serialized_writer().map_err(err)?;
            let chunks = columns.create_column_writers(0).map_err(err)?.into_iter().map(|c| c.close()).collect::<Result<Vec<_>, _>>().map_err(err)?;
            let mut group = file.next_row_group().map_err(err)?;
            for chunk in chunks {
                chunk.append_to_row_group(&mut group).map_err(err)?;
            }
            group.close().map_err(err)?;
            file.into_inner().map_err(err)?
        } else {
            inner.into_inner().map_err(err)?
        };
        use std::io::Write;
        out.flush().map_err(|error| WriteError::Io { path: path.clone(), error })?;
        Ok(rows)
    }
}

/// Write `batches` (all of `schema`) as `path`, whole.
pub fn write_file(path: &Path, file: ResultFile, schema: SchemaRef, metadata: &[(String, String)], batches: &[RecordBatch]) -> Result<usize, WriteError> {
    let mut w = ResultWriter::create(path, file, schema, metadata)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()
}

/// The `node_ranges` column's type: `list<item: struct<first: uint32 not null, count:
/// uint32 not null> not null>`.
pub fn node_ranges_type() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Struct(range_fields()), false)))
}

fn range_fields() -> Fields {
    Fields::from(vec![Field::new("first", DataType::UInt32, false), Field::new("count", DataType::UInt32, false)])
}

/// The `node_ranges` column of CSR ranges: job `j` holds the ranges
/// `range_offsets[j]..range_offsets[j + 1]` of `first` / `count`.
pub fn node_ranges_array(range_offsets: &[i64], first: Vec<u32>, count: Vec<u32>) -> Result<ListArray, String> {
    if first.len() != count.len() {
        return Err(format!("node ranges: {} firsts but {} counts", first.len(), count.len()));
    }
    let Some(&last) = range_offsets.last() else {
        return Err("node ranges: no offsets (one more than the jobs, starting at 0)".into());
    };
    if range_offsets[0] != 0 || last != first.len() as i64 || range_offsets.windows(2).any(|w| w[1] < w[0]) {
        return Err(format!("node ranges: offsets must ascend from 0 to the {} ranges", first.len()));
    }
    if last > i32::MAX as i64 {
        return Err(format!("{last} node ranges: more than a list column holds (2^31)"));
    }
    let offsets = OffsetBuffer::new(ScalarBuffer::from(range_offsets.iter().map(|&o| o as i32).collect::<Vec<i32>>()));
    let values = StructArray::try_new(range_fields(), vec![Arc::new(UInt32Array::from(first)) as ArrayRef, Arc::new(UInt32Array::from(count))], None).map_err(|e| e.to_string())?;
    ListArray::try_new(Arc::new(Field::new("item", DataType::Struct(range_fields()), false)), offsets, Arc::new(values), None).map_err(|e| e.to_string())
}

/// A batch of named columns, every field nullable (as a table pyarrow builds from arrays),
/// but for `not_null` ones.
pub fn batch_of(columns: Vec<(String, ArrayRef, bool)>) -> Result<RecordBatch, ArrowError> {
    let fields: Vec<Field> = columns.iter().map(|(n, a, nullable)| Field::new(n, a.data_type().clone(), *nullable)).collect();
    let arrays = columns.into_iter().map(|(_, a, _)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
}

/// utilization.parquet's schema: `time_s int64, busy_nodes int64, utilization double`.
pub fn utilization_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("time_s", DataType::Int64, true),
        Field::new("busy_nodes", DataType::Int64, true),
        Field::new("utilization", DataType::Float64, true),
    ]))
}

/// One chunk of utilization samples.
pub fn utilization_batch(time_s: Vec<i64>, busy_nodes: Vec<i64>, utilization: Vec<f64>) -> Result<RecordBatch, ArrowError> {
    RecordBatch::try_new(utilization_schema(), vec![Arc::new(Int64Array::from(time_s)), Arc::new(Int64Array::from(busy_nodes)), Arc::new(Float64Array::from(utilization))])
}

/// utilization.parquet of `n` samples: sample `k` is at `t0 + k * step_s`, with
/// `busy_at(k0, k1)` nodes busy and `busy / max(n_nodes, 1)` of the fabric, made and
/// written [`crate::utilization::CHUNK_SAMPLES`] at a time (no sample: the schema alone).
/// The values are those `toposched.utilization.SampledUtilization.arrays` makes with
/// NumPy: int64 arithmetic that wraps, the fraction as a division of the two as doubles.
pub fn write_utilization(
    path: &Path,
    metadata: &[(String, String)],
    n: u64,
    t0: i64,
    step_s: i64,
    n_nodes: i64,
    mut busy_at: impl FnMut(u64, u64) -> Vec<i64>,
) -> Result<usize, WriteError> {
    let mut w = ResultWriter::create(path, ResultFile::Utilization, utilization_schema(), metadata)?;
    let batch_error = |e: ArrowError| WriteError::Data { path: path.to_path_buf(), message: e.to_string() };
    if n == 0 {
        w.write(&utilization_batch(Vec::new(), Vec::new(), Vec::new()).map_err(batch_error)?)?;
    }
    let nodes = n_nodes.max(1) as f64;
    let mut k0 = 0u64;
    while k0 < n {
        let k1 = n.min(k0 + crate::utilization::CHUNK_SAMPLES);
        let busy = busy_at(k0, k1);
        let times: Vec<i64> = (k0..k1).map(|k| t0.wrapping_add(step_s.wrapping_mul(k as i64))).collect();
        let util: Vec<f64> = busy.iter().map(|&b| b as f64 / nodes).collect();
        w.write(&utilization_batch(times, busy, util).map_err(batch_error)?)?;
        k0 = k1;
    }
    w.finish()
}

/// skipped.parquet's schema: `job_id int64, submit_s int64, nodes int64, reason string`.
pub fn skipped_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("job_id", DataType::Int64, true),
        Field::new("submit_s", DataType::Int64, true),
        Field::new("nodes", DataType::Int64, true),
        Field::new("reason", DataType::Utf8, true),
    ]))
}

/// The jobs that never ran and why.
pub fn skipped_batch(job_id: Vec<i64>, submit_s: Vec<i64>, nodes: Vec<i64>, reason: Vec<String>) -> Result<RecordBatch, ArrowError> {
    RecordBatch::try_new(skipped_schema(), vec![Arc::new(Int64Array::from(job_id)), Arc::new(Int64Array::from(submit_s)), Arc::new(Int64Array::from(nodes)), Arc::new(StringArray::from(reason))])
}

impl FinishedJobs {
    /// The columns as one batch, in jobs.parquet's order (`aph` NaN: a null), for a
    /// caller that writes jobs.parquet from Rust.
    pub fn into_batch(self) -> Result<RecordBatch, String> {
        let ranges = node_ranges_array(&self.range_offsets, self.range_first, self.range_count)?;
        let c = |n: &str, a: ArrayRef| (n.to_string(), a, true);
        batch_of(vec![
            c("job_id", Arc::new(Int64Array::from(self.job_id))),
            c("submit_s", Arc::new(Int64Array::from(self.submit_s))),
            c("start_s", Arc::new(Int64Array::from(self.start_s))),
            c("end_s", Arc::new(Int64Array::from(self.end_s))),
            c("wait_s", Arc::new(Int64Array::from(self.wait_s))),
            c("nodes", Arc::new(Int64Array::from(self.nodes))),
            c("walltime_s", Arc::new(Int64Array::from(self.walltime_s))),
            c("runtime_s", Arc::new(Int64Array::from(self.runtime_s))),
            c("log_runtime_s", Arc::new(Int64Array::from(self.log_runtime_s))),
            c("killed", Arc::new(BooleanArray::from(self.killed))),
            c("bounded_slowdown", Arc::new(Float64Array::from(self.bounded_slowdown))),
            c("aph", Arc::new(self.aph.iter().map(|&a| (!a.is_nan()).then_some(a)).collect::<Float64Array>())),
            c("alloc_class", Arc::new(Int8Array::from(self.alloc_class))),
            c("leaves", Arc::new(Int32Array::from(self.leaves))),
            c("pods", Arc::new(Int32Array::from(self.pods))),
            c(NODE_RANGES, Arc::new(ranges)),
        ])
        .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    fn jobs(n: usize) -> FinishedJobs {
        let mut roff = vec![0i64];
        let (mut first, mut count) = (vec![], vec![]);
        for j in 0..n {
            for k in 0..(j % 3) {
                first.push((j * 10 + k * 3) as u32);
                count.push((k + 1) as u32);
            }
            roff.push(first.len() as i64);
        }
        let v = |f: fn(usize) -> i64| (0..n).map(f).collect::<Vec<i64>>();
        FinishedJobs {
            job_id: v(|j| j as i64 + 1),
            submit_s: v(|j| j as i64 * 7),
            start_s: v(|j| j as i64 * 9),
            end_s: v(|j| j as i64 * 11),
            wait_s: v(|j| j as i64 * 2),
            nodes: v(|j| (j % 5) as i64),
            walltime_s: v(|_| 3600),
            runtime_s: v(|j| j as i64 * 2),
            log_runtime_s: v(|j| j as i64 * 2),
            killed: (0..n).map(|j| j % 7 == 0).collect(),
            bounded_slowdown: (0..n).map(|j| 1.0 + j as f64 / 3.0).collect(),
            aph: (0..n).map(|j| if j % 4 != 0 { j as f64 / 5.0 } else { f64::NAN }).collect(),
            alloc_class: (0..n).map(|j| (j % 3) as i8).collect(),
            leaves: (0..n).map(|j| (j % 3) as i32).collect(),
            pods: (0..n).map(|j| (j % 2) as i32).collect(),
            range_offsets: roff,
            range_first: first,
            range_count: count,
            ..FinishedJobs::default()
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("toposched-io-parquet-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join(name)
    }

    fn meta() -> Vec<(String, String)> {
        vec![(RUN_ID_KEY.to_string(), "0123456789abcdef".to_string())]
    }

    #[test]
    fn row_groups_encodings_and_metadata_are_the_files_policy() {
        let n = JOBS_ROW_GROUP * 2 + 5;
        let batch = jobs(n).into_batch().unwrap();
        let p = tmp("jobs.parquet");
        write_file(&p, ResultFile::Jobs, batch.schema(), &meta(), std::slice::from_ref(&batch)).unwrap();
        let r = SerializedFileReader::new(File::open(&p).unwrap()).unwrap();
        let md = r.metadata();
        let groups: Vec<i64> = md.row_groups().iter().map(|g| g.num_rows()).collect();
        assert_eq!(groups, vec![JOBS_ROW_GROUP as i64, JOBS_ROW_GROUP as i64, 5]);
        let kv: Vec<&str> = md.file_metadata().key_value_metadata().unwrap().iter().map(|k| k.key.as_str()).collect();
        assert_eq!(kv, vec![RUN_ID_KEY, "ARROW:schema"]);
        for col in md.row_group(0).columns() {
            let path = col.column_path().string();
            assert_eq!(col.compression(), Compression::SNAPPY, "{path}");
            let dict = col.dictionary_page_offset().is_some();
            // (Parquet has no dictionary for booleans: `killed` is listed but stays plain, as with pyarrow)
            let want_dict = ["nodes", "alloc_class", "leaves", "pods"].contains(&path.as_str());
            assert_eq!(dict, want_dict, "{path}");
            let delta = col.encodings().any(|e| e == Encoding::DELTA_BINARY_PACKED);
            let want_delta = path.starts_with("node_ranges.list.element.")
                || ["job_id", "submit_s", "start_s", "end_s", "wait_s", "walltime_s", "runtime_s", "log_runtime_s"].contains(&path.as_str());
            assert_eq!(delta, want_delta, "{path}");
            assert!(col.statistics().is_some(), "{path}");
            assert!(col.column_index_offset().is_none() && col.offset_index_offset().is_none(), "{path}: no page index");
        }
        // read back: the same rows
        let back: Vec<RecordBatch> = ParquetRecordBatchReaderBuilder::try_new(File::open(&p).unwrap()).unwrap().build().unwrap().map(|b| b.unwrap()).collect();
        let back = arrow_select::concat::concat_batches(&back[0].schema(), &back).unwrap();
        assert_eq!(back.num_rows(), n);
        for (a, b) in back.columns().iter().zip(batch.columns()) {
            match (a.as_any().downcast_ref::<ListArray>(), b.as_any().downcast_ref::<ListArray>()) {
                // (read back by arrow-rs, a list's item is named `element`, as stored)
                (Some(a), Some(b)) => assert!(a.offsets() == b.offsets() && a.values().to_data() == b.values().to_data(), "node ranges differ"),
                _ => assert!(a.to_data() == b.to_data(), "{:?} differs", a.data_type()),
            }
        }
    }

    #[test]
    fn the_same_rows_give_the_same_bytes_in_any_pieces() {
        let n = JOBS_ROW_GROUP + 1000;
        let batch = jobs(n).into_batch().unwrap();
        let whole = tmp("whole.parquet");
        write_file(&whole, ResultFile::Jobs, batch.schema(), &meta(), std::slice::from_ref(&batch)).unwrap();
        let pieces = tmp("pieces.parquet");
        let mut w = ResultWriter::create(&pieces, ResultFile::Jobs, batch.schema(), &meta()).unwrap();
        let mut at = 0;
        for size in [1, 999, 70_000, 0, JOBS_ROW_GROUP] {
            let k = size.min(n - at);
            w.write(&batch.slice(at, k)).unwrap();
            at += k;
        }
        assert_eq!(at, n);
        assert_eq!(w.finish().unwrap(), n);
        assert!(std::fs::read(&whole).unwrap() == std::fs::read(&pieces).unwrap(), "other bytes");
    }

    #[test]
    fn an_empty_table_is_one_empty_row_group() {
        let p = tmp("empty.parquet");
        let batch = jobs(0).into_batch().unwrap();
        assert_eq!(write_file(&p, ResultFile::Jobs, batch.schema(), &meta(), &[batch]).unwrap(), 0);
        let r = SerializedFileReader::new(File::open(&p).unwrap()).unwrap();
        assert_eq!(r.metadata().num_row_groups(), 1);
        assert_eq!(r.metadata().row_group(0).num_rows(), 0);
        assert_eq!(r.metadata().file_metadata().num_rows(), 0);
        let back: Vec<RecordBatch> = ParquetRecordBatchReaderBuilder::try_new(File::open(&p).unwrap()).unwrap().build().unwrap().map(|b| b.unwrap()).collect();
        assert_eq!(back.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
    }

    #[test]
    fn utilization_samples_are_the_per_sample_rule_in_row_groups_of_the_file() {
        // jobs (start, end, nodes) and the per-sample rule: a job counts at t when start <= t < end
        let jobs = [(5i64, 200i64, 3i64), (0, 7, 2), (100, 101, 1), (150, 150, 9), (-4, 30, 5)];
        let (t0, step_s, n_nodes) = (-3i64, 7i64, 4i64);
        let n = 1 << 20 | 5; // two chunks, two row groups
        let t1 = t0 + step_s * (n as i64 - 1);
        let (s, e, k): (Vec<i64>, Vec<i64>, Vec<i64>) = (jobs.iter().map(|j| j.0).collect(), jobs.iter().map(|j| j.1).collect(), jobs.iter().map(|j| j.2).collect());
        let series = crate::utilization::UtilizationSeries::from_jobs(&s, &e, &k, t0, t1, step_s, n_nodes).unwrap();
        let p = tmp("util-series.parquet");
        assert_eq!(write_utilization(&p, &meta(), series.n_samples(), t0, step_s, n_nodes, |a, b| series.busy_at(a, b)).unwrap(), n as usize);
        let r = SerializedFileReader::new(File::open(&p).unwrap()).unwrap();
        let groups: Vec<i64> = r.metadata().row_groups().iter().map(|g| g.num_rows()).collect();
        assert_eq!(groups, vec![1 << 20, 5]);
        let mut k = 0i64;
        for b in ParquetRecordBatchReaderBuilder::try_new(File::open(&p).unwrap()).unwrap().build().unwrap() {
            let b = b.unwrap();
            let time = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            let busy = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
            let util = b.column(2).as_any().downcast_ref::<Float64Array>().unwrap();
            for i in 0..b.num_rows() {
                let t = t0 + step_s * k;
                let want: i64 = jobs.iter().filter(|j| j.0 >= 0 && j.0 <= t && t < j.1).map(|j| j.2).sum();
                assert_eq!((time.value(i), busy.value(i)), (t, want), "sample {k}");
                assert_eq!(util.value(i), want as f64 / 4.0);
                k += 1;
            }
        }
        assert_eq!(k, n as i64);
        // no sample: the schema alone, one empty row group
        let p = tmp("util-empty.parquet");
        assert_eq!(write_utilization(&p, &meta(), 0, 0, 60, 0, |_, _| Vec::new()).unwrap(), 0);
        let r = SerializedFileReader::new(File::open(&p).unwrap()).unwrap();
        assert_eq!(r.metadata().file_metadata().schema_descr().num_columns(), 3);
    }

    #[test]
    fn bad_ranges_and_schemas_are_refused_with_a_message() {
        assert!(node_ranges_array(&[0, 2, 1], vec![1, 2], vec![1, 1]).unwrap_err().contains("ascend"));
        assert!(node_ranges_array(&[], vec![], vec![]).unwrap_err().contains("no offsets"));
        assert!(node_ranges_array(&[0, 1], vec![1], vec![]).unwrap_err().contains("counts"));
        let p = tmp("bad.parquet");
        let mut w = ResultWriter::create(&p, ResultFile::Utilization, utilization_schema(), &meta()).unwrap();
        let other = skipped_batch(vec![1], vec![2], vec![3], vec!["x".into()]).unwrap();
        let e = w.write(&other).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: rows of another schema", p.display())), "{e}");
        let e = ResultWriter::create(Path::new("/nonexistent-dir/x.parquet"), ResultFile::Skipped, skipped_schema(), &meta()).err().unwrap();
        assert!(matches!(e, WriteError::Io { .. }), "{e}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Any cut of the rows into pieces, through one writer, gives the bytes of the whole
        /// table written at once, and row groups of `group` rows but the last.
        #[test]
        fn pieces_give_the_whole_files_bytes(n in 0usize..60, group in 1usize..20, cuts in proptest::collection::vec(0usize..60, 0..6)) {
            let batch = jobs(n).into_batch().unwrap();
            let whole = tmp(&format!("pw-{n}-{group}.parquet"));
            let mut w = ResultWriter::create_with_row_groups(&whole, ResultFile::Jobs, batch.schema(), &meta(), group).unwrap();
            w.write(&batch).unwrap();
            w.finish().unwrap();
            let mut at: Vec<usize> = cuts.into_iter().map(|c| c.min(n)).collect();
            at.push(0);
            at.push(n);
            at.sort_unstable();
            let pieces = tmp(&format!("pp-{n}-{group}.parquet"));
            let mut w = ResultWriter::create_with_row_groups(&pieces, ResultFile::Jobs, batch.schema(), &meta(), group).unwrap();
            for ab in at.windows(2) {
                w.write(&batch.slice(ab[0], ab[1] - ab[0])).unwrap();
            }
            proptest::prop_assert_eq!(w.finish().unwrap(), n);
            proptest::prop_assert!(std::fs::read(&whole).unwrap() == std::fs::read(&pieces).unwrap(), "other bytes");
            let r = SerializedFileReader::new(File::open(&pieces).unwrap()).unwrap();
            let groups: Vec<usize> = r.metadata().row_groups().iter().map(|g| g.num_rows() as usize).collect();
            let mut want: Vec<usize> = (0..n / group).map(|_| group).collect();
            if n % group != 0 || n == 0 {
                want.push(n % group);
            }
            proptest::prop_assert_eq!(groups, want);
        }
    }
}

//! `ParquetFileWriter`: the result files' native writer (toposched-io `parquet`) for Python.
//! Python hands it a table's columns as NumPy arrays (python/toposched/parquet_out.py makes
//! them from a pyarrow Table); they are copied into Arrow arrays with the interpreter lock
//! held, then encoded and written without it (jobs.parquet is written on a second thread
//! beside the other files).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, BooleanArray, Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, StringArray, UInt16Array, UInt32Array, UInt64Array, UInt8Array};
use arrow_buffer::{BooleanBuffer, NullBuffer, ScalarBuffer};
use numpy::{Element, PyReadonlyArray1};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use toposched_io::parquet::{batch_of, node_ranges_array, write_utilization, ResultFile, ResultWriter, WriteError};
use toposched_io::utilization::{n_samples, series_busy_at};

/// One column as Python gives it: (name, values, validity or None, nullable).
type PyColumn<'py> = (String, Bound<'py, PyAny>, Option<Bound<'py, PyAny>>, bool);

fn to_py(e: WriteError) -> PyErr {
    match &e {
        WriteError::Io { path, error } => match error.raw_os_error() {
            // OSError(errno, strerror, filename) is the errno's subclass (PermissionError, ...)
            Some(code) => PyOSError::new_err((code, error.to_string(), path.display().to_string())),
            None => PyOSError::new_err(e.to_string()),
        },
        WriteError::Data { .. } => PyValueError::new_err(e.to_string()),
    }
}

fn values_of<T: Element + Copy>(a: &PyReadonlyArray1<'_, T>) -> Vec<T> {
    match a.as_slice() {
        Ok(s) => s.to_vec(),
        Err(_) => a.as_array().iter().copied().collect(), // strided: element by element
    }
}

/// A NumPy column (any integer width, float32/64, bool) as an Arrow array.
fn primitive(name: &str, values: &Bound<'_, PyAny>, nulls: Option<NullBuffer>) -> PyResult<ArrayRef> {
    macro_rules! try_as {
        ($t:ty, $arr:ty) => {
            if let Ok(a) = values.extract::<PyReadonlyArray1<'_, $t>>() {
                return Ok(Arc::new(<$arr>::try_new(ScalarBuffer::from(values_of(&a)), nulls).map_err(|e| PyValueError::new_err(format!("column {name}: {e}")))?));
            }
        };
    }
    try_as!(i64, Int64Array);
    try_as!(f64, Float64Array);
    try_as!(i32, Int32Array);
    try_as!(i8, Int8Array);
    try_as!(i16, Int16Array);
    try_as!(u8, UInt8Array);
    try_as!(u16, UInt16Array);
    try_as!(u32, UInt32Array);
    try_as!(u64, UInt64Array);
    try_as!(f32, Float32Array);
    if let Ok(a) = values.extract::<PyReadonlyArray1<'_, bool>>() {
        let v = values_of(&a);
        if nulls.as_ref().is_some_and(|n| n.len() != v.len()) {
            return Err(PyValueError::new_err(format!("column {name}: its validity is not as long as its values")));
        }
        return Ok(Arc::new(BooleanArray::new(BooleanBuffer::from(v), nulls)));
    }
    Err(PyValueError::new_err(format!("column {name}: a one-dimensional NumPy array of integers, floats or booleans expected, got {}", values.get_type().name()?)))
}

fn column(col: PyColumn<'_>) -> PyResult<(String, ArrayRef, bool)> {
    let (name, values, valid, nullable) = col;
    let nulls = match &valid {
        None => None,
        Some(v) => {
            let mask: PyReadonlyArray1<'_, bool> = v.extract().map_err(|_| PyValueError::new_err(format!("column {name}: its validity must be a NumPy bool array")))?;
            Some(NullBuffer::from(values_of(&mask)))
        }
    };
    let array: ArrayRef = if values.is_instance_of::<PyTuple>() {
        let (roff, first, count) = values
            .extract::<(PyReadonlyArray1<'_, i64>, PyReadonlyArray1<'_, u32>, PyReadonlyArray1<'_, u32>)>()
            .map_err(|_| PyValueError::new_err(format!("column {name}: node ranges are (range_offsets int64, first uint32, count uint32) arrays")))?;
        if nulls.is_some() {
            return Err(PyValueError::new_err(format!("column {name}: node ranges cannot be null")));
        }
        Arc::new(node_ranges_array(&values_of(&roff), values_of(&first), values_of(&count)).map_err(|e| PyValueError::new_err(format!("column {name}: {e}")))?)
    } else if values.is_instance_of::<PyList>() {
        let strings: Vec<Option<String>> = values.extract().map_err(|_| PyValueError::new_err(format!("column {name}: a list of str or None expected")))?;
        if nulls.is_some() {
            return Err(PyValueError::new_err(format!("column {name}: a string column's nulls are None values")));
        }
        Arc::new(StringArray::from(strings))
    } else {
        primitive(&name, &values, nulls)?
    };
    if let Some(n) = array.nulls() {
        if n.null_count() > 0 && !nullable {
            return Err(PyValueError::new_err(format!("column {name}: nulls in a column that is not nullable")));
        }
    }
    Ok((name, array, nullable))
}

/// jobs.parquet, utilization.parquet or skipped.parquet being written.
///
/// `ParquetFileWriter(path, kind, metadata, row_group_rows=None)`: `kind` is "jobs",
/// "utilization" or "skipped"; `metadata` the footer's key-value pairs (the run id under
/// "toposched.run_id"); `row_group_rows` the file's own unless given. `write(columns)` appends rows: a list of (name, values, valid,
/// nullable), values a NumPy array (validity: a bool array, True where valid, or None),
/// a list of str / None (a string column) or (range_offsets int64, first uint32, count
/// uint32) (a node-ranges column); the first call fixes the columns. `close()` writes the
/// footer and returns the number of rows.
#[pyclass(module = "toposched._core")]
pub struct ParquetFileWriter {
    path: PathBuf,
    file: ResultFile,
    metadata: Vec<(String, String)>,
    row_group_rows: usize,
    /// None until the first write (which gives the columns); a Mutex because a Python
    /// object may be used from any thread (the encoder's own parts are Send, not Sync).
    inner: Mutex<Option<ResultWriter>>,
    closed: bool,
}

#[pymethods]
impl ParquetFileWriter {
    #[new]
    #[pyo3(signature = (path, kind, metadata, row_group_rows = None))]
    fn new(path: PathBuf, kind: &str, metadata: Vec<(String, String)>, row_group_rows: Option<usize>) -> PyResult<Self> {
        let file = ResultFile::from_name(kind).ok_or_else(|| PyValueError::new_err(format!("kind must be jobs, utilization or skipped, not {kind:?}")))?;
        let row_group_rows = row_group_rows.unwrap_or(file.row_group_rows());
        if row_group_rows == 0 {
            return Err(PyValueError::new_err("row_group_rows must be positive"));
        }
        Ok(ParquetFileWriter { path, file, metadata, row_group_rows, inner: Mutex::new(None), closed: false })
    }

    fn write(&mut self, py: Python<'_>, columns: Vec<PyColumn<'_>>) -> PyResult<()> {
        if self.closed {
            return Err(PyValueError::new_err(format!("{}: written after close()", self.path.display())));
        }
        crate::numpy_api(py)?;
        let cols = columns.into_iter().map(column).collect::<PyResult<Vec<_>>>()?;
        let batch = batch_of(cols).map_err(|e| PyValueError::new_err(format!("{}: {e}", self.path.display())))?;
        let (path, file, metadata, rows) = (&self.path, self.file, &self.metadata, self.row_group_rows);
        let inner = &self.inner;
        py.allow_threads(move || {
            let mut inner = inner.lock().unwrap_or_else(|e| e.into_inner());
            if inner.is_none() {
                *inner = Some(ResultWriter::create_with_row_groups(path, file, batch.schema(), metadata, rows)?);
            }
            inner.as_mut().map_or(Ok(()), |w| w.write(&batch))
        })
        .map_err(to_py)
    }

    fn close(&mut self, py: Python<'_>) -> PyResult<usize> {
        if self.closed {
            return Err(PyValueError::new_err(format!("{}: closed twice", self.path.display())));
        }
        self.closed = true;
        let Some(w) = self.inner.get_mut().unwrap_or_else(|e| e.into_inner()).take() else {
            return Err(PyValueError::new_err(format!("{}: closed before any write (its columns are not known)", self.path.display())));
        };
        py.allow_threads(move || w.finish()).map_err(to_py)
    }
}

/// utilization.parquet of the busy-node step function (`change_s`, `busy`: what
/// `toposched.utilization.UtilizationSeries` holds) sampled at t0, t0 + step_s, ... up to
/// t1: the samples made and written in Rust, without the interpreter lock (the file
/// `_write_utilization` writes from NumPy's arrays of the same samples). Returns the rows.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the series' fields, as Python holds them
fn write_utilization_series(
    py: Python<'_>,
    path: PathBuf,
    metadata: Vec<(String, String)>,
    change_s: PyReadonlyArray1<'_, i64>,
    busy: PyReadonlyArray1<'_, i64>,
    t0: i64,
    t1: i64,
    step_s: i64,
    n_nodes: i64,
) -> PyResult<usize> {
    let (change_s, busy) = (values_of(&change_s), values_of(&busy));
    if change_s.len() != busy.len() || step_s <= 0 {
        return Err(PyValueError::new_err("change_s and busy differ in length, or step_s is not positive"));
    }
    let n = n_samples(t0, t1, step_s);
    py.allow_threads(|| write_utilization(&path, &metadata, n, t0, step_s, n_nodes, |k0, k1| series_busy_at(&change_s, &busy, t0, step_s, k0, k1))).map_err(to_py)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ParquetFileWriter>()?;
    m.add_function(wrap_pyfunction!(write_utilization_series, m)?)
}

//! `toposched.workload.normalize` calls these: the rules live in toposched-io's
//! `normalize`; this file converts arrays and arguments, and turns the rules' error into
//! the Python package's `TraceFormatError`.

use std::borrow::Cow;

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use toposched_io::normalize::{self as rules, Counts, MissingRuntime, MissingWalltime, NormalizeError, Options, RawColumns, Settings, SizeField};

/// The values of an int64 array: its memory when contiguous, else a copy.
fn values<'a>(a: &'a PyReadonlyArray1<'_, i64>) -> Cow<'a, [i64]> {
    match a.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(a.as_array().iter().copied().collect()),
    }
}

/// `TraceFormatError(source, message, line=..., field=...)`.
fn trace_format_error(py: Python<'_>, e: NormalizeError) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let class = py.import("toposched.errors")?.getattr("TraceFormatError")?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("line", e.line)?;
        kwargs.set_item("field", e.field)?;
        Ok(PyErr::from_value(class.call((e.source, e.message), Some(&kwargs))?))
    })();
    made.unwrap_or_else(|err| err)
}

/// The span list of a streamed read: `[]` or `[min, max]`.
fn span_of(list: &Option<Bound<'_, PyList>>) -> PyResult<Option<(i64, i64)>> {
    match list {
        Some(l) if l.len() == 2 => Ok(Some((l.get_item(0)?.extract()?, l.get_item(1)?.extract()?))),
        Some(l) if l.is_empty() => Ok(None),
        None => Ok(None),
        Some(_) => Err(PyValueError::new_err("submit_span must be [] or [min, max]")),
    }
}

/// Write the span back into the caller's list (also when the rules refused it, as the
/// Python code did).
fn set_span(list: &Option<Bound<'_, PyList>>, span: Option<(i64, i64)>) -> PyResult<()> {
    if let (Some(l), Some((lo, hi))) = (list, span) {
        l.del_slice(0, l.len())?;
        l.append(lo)?;
        l.append(hi)?;
    }
    Ok(())
}

fn options(
    source: String,
    time_origin_epoch_s: Option<i128>,
    time_origin_text: Option<String>,
    lenient: bool,
    allow_long_span: bool,
    field_names: Option<Vec<(String, String)>>,
) -> Options {
    Options { source, time_origin_epoch_s, time_origin_text, lenient, allow_long_span, field_names: field_names.unwrap_or_default() }
}

fn raw_of<'a>(cols: &'a [Cow<'a, [i64]>]) -> PyResult<RawColumns<'a>> {
    if cols.len() != rules::RAW_COLUMNS.len() {
        return Err(PyValueError::new_err(format!("expected the {} raw columns {:?}, got {}", rules::RAW_COLUMNS.len(), rules::RAW_COLUMNS, cols.len())));
    }
    let raw = RawColumns {
        job_id: &cols[0],
        submit_s: &cols[1],
        runtime_s: &cols[2],
        walltime_s: &cols[3],
        procs_alloc: &cols[4],
        procs_req: &cols[5],
        nodes_alloc: &cols[6],
        line: &cols[7],
    };
    raw.len().map_err(PyValueError::new_err)?;
    Ok(raw)
}

type Columns<'py> = Vec<Bound<'py, PyArray1<i64>>>;

/// The rules of normalize on the raw columns (in `RAW_COLUMNS` order) and the id columns
/// `ids`: (the 7 output columns job_id, submit_s, nodes, walltime_s, runtime_s, procs,
/// line; the id columns taken in order; the raw row of each output row; the repairs and
/// the skips, `(name, count)` in the order the rules count them; the out-of-range
/// examples). `missing_walltime` None is "runtime". Raises `TraceFormatError` as the
/// Python rules did.
#[pyfunction]
#[pyo3(signature = (raw, ids, *, source, cores_per_node, size_field, missing_walltime, missing_runtime, time_origin_epoch_s=None, time_origin_text=None, lenient=false, allow_long_span=false, field_names=None, submit_span=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn normalize_columns<'py>(
    py: Python<'py>,
    raw: Vec<PyReadonlyArray1<'py, i64>>,
    ids: Vec<PyReadonlyArray1<'py, i64>>,
    source: String,
    cores_per_node: i64,
    size_field: &str,
    missing_walltime: Option<i64>,
    missing_runtime: &str,
    time_origin_epoch_s: Option<i128>,
    time_origin_text: Option<String>,
    lenient: bool,
    allow_long_span: bool,
    field_names: Option<Vec<(String, String)>>,
    submit_span: Option<Bound<'py, PyList>>,
) -> PyResult<(Columns<'py>, Columns<'py>, Bound<'py, PyArray1<i64>>, Vec<(String, i64)>, Vec<(String, i64)>, Vec<String>)> {
    crate::numpy_api(py)?;
    let settings = Settings {
        cores_per_node: if cores_per_node >= 1 { cores_per_node } else { return Err(PyValueError::new_err(format!("cores_per_node must be >= 1, got {cores_per_node}"))) },
        size_field: match size_field {
            "auto" => SizeField::Auto,
            "allocated" => SizeField::Allocated,
            "requested" => SizeField::Requested,
            other => return Err(PyValueError::new_err(format!("size_field must be auto, allocated or requested, got {other:?}"))),
        },
        missing_walltime: missing_walltime.map_or(MissingWalltime::Runtime, MissingWalltime::Seconds),
        missing_runtime: match missing_runtime {
            "skip" => MissingRuntime::Skip,
            "zero" => MissingRuntime::Zero,
            other => return Err(PyValueError::new_err(format!("missing_runtime must be skip or zero, got {other:?}"))),
        },
    };
    let opts = options(source, time_origin_epoch_s, time_origin_text, lenient, allow_long_span, field_names);
    let cols: Vec<Cow<[i64]>> = raw.iter().map(values).collect();
    let raw = raw_of(&cols)?;
    let id_cols: Vec<Cow<[i64]>> = ids.iter().map(values).collect();
    let id_slices: Vec<&[i64]> = id_cols.iter().map(|c| &c[..]).collect();
    if let Some(c) = id_slices.iter().find(|c| c.len() != raw.job_id.len()) {
        return Err(PyValueError::new_err(format!("an id column has {} rows, the raw columns have {}", c.len(), raw.job_id.len())));
    }
    let mut span = span_of(&submit_span)?;
    let (mut repairs, mut skipped) = (Counts::default(), Counts::default());
    let streamed = submit_span.is_some();
    let got = py.allow_threads(|| {
        let span = streamed.then_some(&mut span);
        rules::normalize(&raw, &id_slices, &settings, &opts, &mut repairs, &mut skipped, span)
    });
    set_span(&submit_span, span)?;
    let w = got.map_err(|e| trace_format_error(py, e))?;
    let order: Vec<i64> = w.order.iter().map(|&i| i as i64).collect();
    let columns = [w.job_id, w.submit_s, w.nodes, w.walltime_s, w.runtime_s, w.procs, w.line].into_iter().map(|c| PyArray1::from_vec(py, c)).collect();
    let ids = w.ids.into_iter().map(|c| PyArray1::from_vec(py, c)).collect();
    Ok((columns, ids, PyArray1::from_vec(py, order), repairs.0, skipped.0, w.out_of_range_examples))
}

/// `check_ranges` of normalize: (the rows within the limits, the examples given extended
/// with those of the values left out). Raises `TraceFormatError` as the Python rules did.
#[pyfunction]
#[pyo3(signature = (raw, *, source, time_origin_epoch_s=None, time_origin_text=None, lenient=false, allow_long_span=false, field_names=None, examples=None, submit_span=None))]
#[allow(clippy::too_many_arguments)]
pub fn check_ranges_columns<'py>(
    py: Python<'py>,
    raw: Vec<PyReadonlyArray1<'py, i64>>,
    source: String,
    time_origin_epoch_s: Option<i128>,
    time_origin_text: Option<String>,
    lenient: bool,
    allow_long_span: bool,
    field_names: Option<Vec<(String, String)>>,
    examples: Option<Vec<String>>,
    submit_span: Option<Bound<'py, PyList>>,
) -> PyResult<(Bound<'py, PyArray1<bool>>, Vec<String>)> {
    crate::numpy_api(py)?;
    let opts = options(source, time_origin_epoch_s, time_origin_text, lenient, allow_long_span, field_names);
    let cols: Vec<Cow<[i64]>> = raw.iter().map(values).collect();
    let raw = raw_of(&cols)?;
    let mut examples = examples.unwrap_or_default();
    let mut span = span_of(&submit_span)?;
    let streamed = submit_span.is_some();
    let got = py.allow_threads(|| {
        let span = streamed.then_some(&mut span);
        rules::check_ranges(&raw, &opts, &mut examples, span)
    });
    set_span(&submit_span, span)?;
    let ok = got.map_err(|e| trace_format_error(py, e))?;
    Ok((PyArray1::from_vec(py, ok), examples))
}

/// Register the functions and the constants (`toposched.limits` takes its values from
/// `NORMALIZE_LIMITS`, `toposched.workload.normalize` its MAX_ID and example count: one
/// definition, in toposched-io).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(normalize_columns, m)?)?;
    m.add_function(wrap_pyfunction!(check_ranges_columns, m)?)?;
    let limits = PyDict::new(m.py());
    for (name, value) in toposched_io::limits::ALL {
        limits.set_item(name, value)?;
    }
    m.add("NORMALIZE_LIMITS", limits)?;
    m.add("NORMALIZE_MAX_EXAMPLES", rules::MAX_EXAMPLES)?;
    m.add("NORMALIZE_MAX_ID", rules::MAX_ID)?;
    Ok(())
}

//! The Python face of toposched-io's collection of a replay's results: the finished
//! jobs' columns (`collect.rs`), the utilization samples (`utilization.rs`) and the
//! summary's statistics (`summary.rs`). Conversions only: the rules live in toposched-io.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyAssertionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use toposched_io::collect::{self as io_collect, JobColumns, Outcomes, SpanRanks};
use toposched_io::exact::ExactFloatSum;
use toposched_io::summary::{self, Chunk, Stats};
use toposched_io::utilization::{self, series_busy_at, BusySamples, UtilizationSeries};

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| PyValueError::new_err(format!("column {name} must be a contiguous array")))
}

type ChunkArrays<'py> = (PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, f64>, PyReadonlyArray1<'py, f64>, PyReadonlyArray1<'py, i64>);

fn chunk<'a>(a: &'a ChunkArrays<'_>) -> PyResult<Chunk<'a>> {
    let c = Chunk {
        wait_s: slice(&a.0, "wait_s")?,
        bounded_slowdown: slice(&a.1, "bounded_slowdown")?,
        aph: slice(&a.2, "aph")?,
        nodes: slice(&a.3, "nodes")?,
    };
    let n = c.nodes.len();
    if c.wait_s.len() != n || c.bounded_slowdown.len() != n || c.aph.len() != n {
        return Err(PyValueError::new_err("wait_s, bounded_slowdown, aph and nodes differ in length"));
    }
    Ok(c)
}

fn statistics_dict<'py>(py: Python<'py>, s: &summary::Statistics) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("wait_s", stats_dict(py, &s.wait_s)?)?;
    out.set_item("bounded_slowdown", stats_dict(py, &s.bounded_slowdown)?)?;
    out.set_item("aph", stats_dict(py, &s.aph)?)?;
    let bins = PyList::empty(py);
    for b in &s.by_size {
        let d = PyDict::new(py);
        d.set_item("bin", b.bin)?;
        d.set_item("min_nodes", b.min_nodes)?;
        d.set_item("max_nodes", b.max_nodes)?;
        d.set_item("jobs", b.jobs)?;
        d.set_item("wait_s", stats_dict(py, &b.wait_s)?)?;
        d.set_item("bounded_slowdown", stats_dict(py, &b.bounded_slowdown)?)?;
        d.set_item("aph", stats_dict(py, &b.aph)?)?;
        bins.append(d)?;
    }
    out.set_item("by_size", bins)?;
    Ok(out)
}

fn stats_dict<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("mean", s.mean)?;
    d.set_item("median", s.median)?;
    d.set_item("p95", s.p95)?;
    d.set_item("max", s.max)?;
    Ok(d)
}

/// Accumulators of the summary's statistics (toposched.summary_stats.SummaryStats wraps it).
#[pyclass(module = "toposched._core", name = "SummaryStats")]
struct PySummaryStats {
    inner: summary::SummaryStats,
}

#[pymethods]
impl PySummaryStats {
    #[new]
    #[pyo3(signature = (keep_all=false))]
    fn new(keep_all: bool) -> Self {
        PySummaryStats { inner: summary::SummaryStats::new(keep_all) }
    }

    /// Rows added so far.
    #[getter]
    fn rows(&self) -> u64 {
        self.inner.rows()
    }

    /// A chunk of finished jobs (contiguous int64 wait_s and nodes, float64
    /// bounded_slowdown and aph, NaN: no APH); keys kept while at most keep_rows rows.
    fn add(&mut self, wait_s: PyReadonlyArray1<i64>, bounded_slowdown: PyReadonlyArray1<f64>, aph: PyReadonlyArray1<f64>, nodes: PyReadonlyArray1<i64>, keep_rows: u64) -> PyResult<()> {
        let arrays = (wait_s, bounded_slowdown, aph, nodes);
        self.inner.add(chunk(&arrays)?, keep_rows);
        Ok(())
    }

    /// The summary's wait_s, bounded_slowdown, aph and by_size blocks. `source()` yields
    /// the same rows again as (wait_s, bounded_slowdown, aph, nodes) tuples; it is called
    /// only when the keys were dropped (once per selection pass).
    fn finish<'py>(&mut self, py: Python<'py>, source: Bound<'py, PyAny>, gather_keys: u64) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.finish(gather_keys, |f| -> PyResult<()> {
            for item in source.call0()?.try_iter()? {
                let arrays: ChunkArrays = item?.extract()?;
                f(chunk(&arrays)?);
            }
            Ok(())
        })?;
        statistics_dict(py, &s)
    }
}

/// The exact sum of finite float64 values times 2^1126 (an integer), as little-endian
/// two's complement bytes (int.from_bytes(..., "little", signed=True)).
#[pyfunction]
fn exact_float_sum_bytes<'py>(py: Python<'py>, x: PyReadonlyArray1<f64>) -> PyResult<Bound<'py, PyBytes>> {
    let mut s = ExactFloatSum::default();
    for &v in slice(&x, "x")? {
        if !v.is_finite() {
            return Err(PyValueError::new_err("exact_float_sum: the values must be finite"));
        }
        s.add(v);
    }
    Ok(PyBytes::new(py, &s.scaled().to_le_bytes()))
}

/// The engine's outcome arrays and the same rows' job columns, as Python passes them.
type RowArrays<'py> = (
    (PyReadonlyArray1<'py, i8>, PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i8>, PyReadonlyArray1<'py, bool>),
    (PyReadonlyArray1<'py, f64>, PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, u32>, PyReadonlyArray1<'py, u32>),
    (PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, i64>),
);

fn views<'a>(a: &'a RowArrays<'_>) -> PyResult<(Outcomes<'a>, JobColumns<'a>)> {
    let ((status, start_s, end_s, alloc_class, killed), (aph, range_offsets, range_first, range_count), (job_id, submit_s, nodes, walltime_s, runtime_s)) = a;
    let o = Outcomes {
        status: slice(status, "status")?,
        start_s: slice(start_s, "start_s")?,
        end_s: slice(end_s, "end_s")?,
        alloc_class: slice(alloc_class, "alloc_class")?,
        killed: slice(killed, "killed")?,
        aph: slice(aph, "aph")?,
        range_offsets: slice(range_offsets, "range_offsets")?,
        range_first: slice(range_first, "range_first")?,
        range_count: slice(range_count, "range_count")?,
    };
    let c = JobColumns {
        job_id: slice(job_id, "job_id")?,
        submit_s: slice(submit_s, "submit_s")?,
        nodes: slice(nodes, "nodes")?,
        walltime_s: slice(walltime_s, "walltime_s")?,
        runtime_s: slice(runtime_s, "runtime_s")?,
    };
    Ok((o, c))
}

fn finished_dict(py: Python<'_>, f: io_collect::FinishedJobs) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("rows", PyArray1::from_vec(py, f.rows.into_iter().map(i64::from).collect()))?;
    d.set_item("job_id", PyArray1::from_vec(py, f.job_id))?;
    d.set_item("submit_s", PyArray1::from_vec(py, f.submit_s))?;
    d.set_item("start_s", PyArray1::from_vec(py, f.start_s))?;
    d.set_item("end_s", PyArray1::from_vec(py, f.end_s))?;
    d.set_item("wait_s", PyArray1::from_vec(py, f.wait_s))?;
    d.set_item("nodes", PyArray1::from_vec(py, f.nodes))?;
    d.set_item("walltime_s", PyArray1::from_vec(py, f.walltime_s))?;
    d.set_item("runtime_s", PyArray1::from_vec(py, f.runtime_s))?;
    d.set_item("log_runtime_s", PyArray1::from_vec(py, f.log_runtime_s))?;
    d.set_item("killed", PyArray1::from_vec(py, f.killed))?;
    d.set_item("bounded_slowdown", PyArray1::from_vec(py, f.bounded_slowdown))?;
    d.set_item("aph", PyArray1::from_vec(py, f.aph))?;
    d.set_item("alloc_class", PyArray1::from_vec(py, f.alloc_class))?;
    d.set_item("leaves", PyArray1::from_vec(py, f.leaves))?;
    d.set_item("pods", PyArray1::from_vec(py, f.pods))?;
    d.set_item("range_offsets", PyArray1::from_vec(py, f.range_offsets))?;
    d.set_item("range_first", PyArray1::from_vec(py, f.range_first))?;
    d.set_item("range_count", PyArray1::from_vec(py, f.range_count))?;
    d.set_item("killed_count", f.killed_count)?;
    Ok(d)
}

/// jobs.parquet's columns of the finished jobs among the engine's rows (the arrays of
/// `Simulation.results()` / `drain()`: status, start_s, end_s, alloc_class, killed; aph,
/// range_offsets, range_first, range_count) with the same rows' job columns (job_id,
/// submit_s, nodes, walltime_s, runtime_s): a dict of arrays (`rows`: which rows
/// finished), and `killed_count`.
#[pyfunction]
fn finished_jobs<'py>(py: Python<'py>, topology: &crate::Topology, outcomes: RowArrays<'py>) -> PyResult<Bound<'py, PyDict>> {
    let (o, c) = views(&outcomes)?;
    let spans = SpanRanks::of_topology(&topology.inner);
    let f = io_collect::finished_jobs(&o, &c, &spans).map_err(PyValueError::new_err)?;
    finished_dict(py, f)
}

/// The whole replay's collection (toposched-io `collect_replay`): `finished` (as
/// `finished_jobs`), the utilization step function (`change_s`, `busy`, `t0`, `t1`) and
/// the summary's `statistics` (as `SummaryStats.finish`).
#[pyfunction]
fn collect_replay<'py>(py: Python<'py>, topology: &crate::Topology, outcomes: RowArrays<'py>, step_s: i64, n_nodes: i64) -> PyResult<Bound<'py, PyDict>> {
    let (o, c) = views(&outcomes)?;
    let spans = SpanRanks::of_topology(&topology.inner);
    let all = io_collect::collect_replay(&o, &c, &spans, step_s, n_nodes).map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("finished", finished_dict(py, all.finished)?)?;
    d.set_item("change_s", PyArray1::from_vec(py, all.utilization.change_s))?;
    d.set_item("busy", PyArray1::from_vec(py, all.utilization.busy))?;
    d.set_item("t0", all.utilization.t0)?;
    d.set_item("t1", all.utilization.t1)?;
    d.set_item("statistics", statistics_dict(py, &all.statistics)?)?;
    Ok(d)
}

type ArrayPair<'py, T> = (Bound<'py, PyArray1<T>>, Bound<'py, PyArray1<T>>);

/// Distinct leaves and pods (int32) of every job's ascending CSR node ranges, from the
/// leaf of every node and the pod of every leaf.
#[pyfunction]
fn span_counts<'py>(
    py: Python<'py>,
    range_offsets: PyReadonlyArray1<i64>,
    first: PyReadonlyArray1<u32>,
    count: PyReadonlyArray1<u32>,
    leaf_of: PyReadonlyArray1<u32>,
    pod_of_leaf: PyReadonlyArray1<u32>,
) -> PyResult<ArrayPair<'py, i32>> {
    let spans = SpanRanks::new(slice(&leaf_of, "leaf_of")?, slice(&pod_of_leaf, "pod_of_leaf")?).map_err(PyValueError::new_err)?;
    let (leaves, pods) = spans
        .span_counts(slice(&range_offsets, "range_offsets")?, slice(&first, "first")?, slice(&count, "count")?)
        .map_err(PyValueError::new_err)?;
    Ok((PyArray1::from_vec(py, leaves), PyArray1::from_vec(py, pods)))
}

/// The busy-node step function of jobs: (change_s, busy) arrays (`busy[i]` nodes busy
/// from `change_s[i]` on), zero-length and negative-start jobs left out.
#[pyfunction]
fn utilization_changes<'py>(
    py: Python<'py>,
    start_s: PyReadonlyArray1<i64>,
    end_s: PyReadonlyArray1<i64>,
    nodes: PyReadonlyArray1<i64>,
    step_s: i64,
) -> PyResult<ArrayPair<'py, i64>> {
    let s = UtilizationSeries::from_jobs(slice(&start_s, "start_s")?, slice(&end_s, "end_s")?, slice(&nodes, "nodes")?, 0, -1, step_s, 0)
        .map_err(PyValueError::new_err)?;
    Ok((PyArray1::from_vec(py, s.change_s), PyArray1::from_vec(py, s.busy)))
}

/// Busy nodes at samples k0 <= k < k1 of the step function (change_s, busy).
#[pyfunction]
fn utilization_busy_at<'py>(py: Python<'py>, change_s: PyReadonlyArray1<i64>, busy: PyReadonlyArray1<i64>, t0: i64, step_s: i64, k0: u64, k1: u64) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let (c, b) = (slice(&change_s, "change_s")?, slice(&busy, "busy")?);
    if c.len() != b.len() || step_s <= 0 {
        return Err(PyValueError::new_err("change_s and busy differ in length, or step_s is not positive"));
    }
    Ok(PyArray1::from_vec(py, series_busy_at(c, b, t0, step_s, k0, k1)))
}

/// np.mean of the samples' utilization (busy / n_nodes) of the step function, bit for
/// bit, without the sample array (None: no sample).
#[pyfunction]
fn utilization_mean(change_s: PyReadonlyArray1<i64>, busy: PyReadonlyArray1<i64>, t0: i64, t1: i64, step_s: i64, n_nodes: i64) -> PyResult<Option<f64>> {
    let (c, b) = (slice(&change_s, "change_s")?, slice(&busy, "busy")?);
    if c.len() != b.len() || step_s <= 0 {
        return Err(PyValueError::new_err("change_s and busy differ in length, or step_s is not positive"));
    }
    let n = utilization::n_samples(t0, t1, step_s);
    Ok(utilization::pairwise_mean::<()>(n, n_nodes, &mut |a, z| Ok(series_busy_at(c, b, t0, step_s, a, z))).expect("in memory"))
}

/// The busy-node samples of a streamed replay (toposched.utilization.BusySamples wraps it).
#[pyclass(module = "toposched._core", name = "BusySamples")]
struct PyBusySamples {
    inner: BusySamples,
}

#[pymethods]
impl PyBusySamples {
    #[new]
    #[pyo3(signature = (t0, step_s, n_nodes, spill=None))]
    fn new(t0: i64, step_s: i64, n_nodes: i64, spill: Option<std::path::PathBuf>) -> PyResult<Self> {
        Ok(PyBusySamples { inner: BusySamples::new(t0, step_s, n_nodes, spill).map_err(PyValueError::new_err)? })
    }

    #[getter]
    fn t0(&self) -> i64 {
        self.inner.t0
    }
    #[setter]
    fn set_t0(&mut self, t0: i64) {
        self.inner.t0 = t0;
    }
    #[getter]
    fn t1(&self) -> i64 {
        self.inner.t1
    }
    #[setter]
    fn set_t1(&mut self, t1: i64) {
        self.inner.t1 = t1;
    }
    /// Samples before it are in the spill file.
    #[getter]
    fn base(&self) -> u64 {
        self.inner.base()
    }
    #[getter]
    fn n_samples(&self) -> u64 {
        self.inner.n_samples()
    }

    /// Finished jobs (int64 arrays); t1 becomes the latest end so far.
    fn add(&mut self, start_s: PyReadonlyArray1<i64>, end_s: PyReadonlyArray1<i64>, nodes: PyReadonlyArray1<i64>) -> PyResult<()> {
        self.inner
            .add(slice(&start_s, "start_s")?, slice(&end_s, "end_s")?, slice(&nodes, "nodes")?)
            .map_err(PyAssertionError::new_err)
    }

    /// No job added from now on counts at a sample before k; past spill_samples of them,
    /// they are appended to the spill file.
    fn final_before(&mut self, k: i64, spill_samples: u64) -> PyResult<()> {
        Ok(self.inner.final_before(k, spill_samples)?)
    }

    fn busy_at<'py>(&mut self, py: Python<'py>, k0: u64, k1: u64) -> PyResult<Bound<'py, PyArray1<i64>>> {
        Ok(PyArray1::from_vec(py, self.inner.busy_at(k0, k1)?))
    }

    fn mean(&mut self) -> PyResult<Option<f64>> {
        Ok(self.inner.mean()?)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySummaryStats>()?;
    m.add_function(wrap_pyfunction!(exact_float_sum_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(finished_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(collect_replay, m)?)?;
    m.add_function(wrap_pyfunction!(span_counts, m)?)?;
    m.add_function(wrap_pyfunction!(utilization_changes, m)?)?;
    m.add_function(wrap_pyfunction!(utilization_busy_at, m)?)?;
    m.add_function(wrap_pyfunction!(utilization_mean, m)?)?;
    m.add_class::<PyBusySamples>()?;
    m.add("UTILIZATION_CHUNK_SAMPLES", utilization::CHUNK_SAMPLES)?;
    m.add("UTILIZATION_SPILL_SAMPLES", utilization::SPILL_SAMPLES)?;
    m.add("SUMMARY_SIZE_BINS", summary::SIZE_BINS.to_vec())?;
    m.add("SUMMARY_KEEP_ROWS", summary::KEEP_ROWS)?;
    m.add("SUMMARY_GATHER_KEYS", summary::GATHER_KEYS)?;
    Ok(())
}

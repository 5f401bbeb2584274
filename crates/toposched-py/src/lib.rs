//! `toposched._core`: the Python face of toposched-core. Thin wrappers only: every rule
//! lives in the core crate; this file converts arguments and arrays.

mod collect;
mod json;
mod live;
mod network;
mod normalize;
mod parquet;
mod policies;
mod readahead;
mod readers;

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use toposched_core::metrics;
use toposched_core::registry;
use toposched_core::{Engine, EngineOptions, EventOrder, Job, JobStatus};

/// A 2- or 3-level fat-tree (see toposched-core `topology`).
#[pyclass(module = "toposched._core", frozen)]
#[derive(Clone)]
struct Topology {
    inner: toposched_core::Topology,
}

#[pymethods]
impl Topology {
    /// A built-in fabric by name.
    #[staticmethod]
    fn preset(name: &str) -> PyResult<Topology> {
        toposched_core::Topology::preset(name).map(|inner| Topology { inner }).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown system preset {name:?}; presets are: {}",
                toposched_core::topology::PRESETS.join(", ")
            ))
        })
    }

    /// A regular fat-tree.
    #[staticmethod]
    #[pyo3(signature = (name, nodes_per_leaf, leaves_per_pod, pods, uplinks_per_leaf=None, uplinks_per_l2=None))]
    fn fat_tree(
        name: &str,
        nodes_per_leaf: u32,
        leaves_per_pod: u32,
        pods: u32,
        uplinks_per_leaf: Option<u32>,
        uplinks_per_l2: Option<u32>,
    ) -> PyResult<Topology> {
        toposched_core::Topology::fat_tree(name, nodes_per_leaf, leaves_per_pod, pods, uplinks_per_leaf, uplinks_per_l2)
            .map(|inner| Topology { inner })
            .map_err(|e| PyValueError::new_err(e.0))
    }

    /// A fabric from the node count of every leaf, pod by pod.
    #[staticmethod]
    #[pyo3(signature = (name, levels, pods, uplinks_per_leaf=None, uplinks_per_l2=None, leaf_names=None, pod_names=None))]
    fn from_leaf_sizes(
        name: &str,
        levels: u8,
        pods: Vec<Vec<u32>>,
        uplinks_per_leaf: Option<u32>,
        uplinks_per_l2: Option<u32>,
        leaf_names: Option<Vec<String>>,
        pod_names: Option<Vec<String>>,
    ) -> PyResult<Topology> {
        toposched_core::Topology::from_leaf_sizes(
            name,
            levels,
            &pods,
            uplinks_per_leaf,
            uplinks_per_l2,
            leaf_names.as_deref(),
            pod_names.as_deref(),
        )
        .map(|inner| Topology { inner })
        .map_err(|e| PyValueError::new_err(e.0))
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }
    #[getter]
    fn levels(&self) -> u8 {
        self.inner.levels()
    }
    #[getter]
    fn n_nodes(&self) -> usize {
        self.inner.n_nodes()
    }
    #[getter]
    fn n_leaves(&self) -> usize {
        self.inner.n_leaves()
    }
    #[getter]
    fn n_pods(&self) -> usize {
        self.inner.n_pods()
    }
    #[getter]
    fn nodes_per_leaf(&self) -> u32 {
        self.inner.nodes_per_leaf()
    }
    #[getter]
    fn leaves_per_pod(&self) -> u32 {
        self.inner.leaves_per_pod()
    }
    #[getter]
    fn max_pod_nodes(&self) -> u32 {
        self.inner.max_pod_nodes()
    }
    #[getter]
    fn uplinks_per_leaf(&self) -> u32 {
        self.inner.uplinks_per_leaf()
    }
    #[getter]
    fn uplinks_per_l2(&self) -> u32 {
        self.inner.uplinks_per_l2()
    }
    /// Leaf of every node, as an int32 array.
    fn leaf_of_nodes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i32>> {
        let t = &self.inner;
        PyArray1::from_vec(py, (0..t.n_nodes() as u32).map(|n| t.leaf_of(n) as i32).collect())
    }
    /// Pod of every leaf, as an int32 array.
    fn pod_of_leaves<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i32>> {
        let t = &self.inner;
        PyArray1::from_vec(py, (0..t.n_leaves() as u32).map(|l| t.pod_of_leaf(l) as i32).collect())
    }
    /// Padded routing id of every node (brief §6.3), as an int64 array.
    fn padded_ids<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let t = &self.inner;
        PyArray1::from_vec(py, (0..t.n_nodes() as u32).map(|n| t.padded_id(n) as i64).collect())
    }
    /// Inter-switch links between two nodes: 0, 2 or 4.
    fn hops(&self, a: u32, b: u32) -> PyResult<u32> {
        let n = self.inner.n_nodes() as u32;
        if a >= n || b >= n {
            return Err(PyValueError::new_err(format!("node ids must be below {n}")));
        }
        Ok(self.inner.hops(a, b))
    }
    fn __repr__(&self) -> String {
        let t = &self.inner;
        format!(
            "Topology(name={:?}, levels={}, nodes={}, leaves={}, pods={}, nodes_per_leaf={}, uplinks_per_leaf={}, uplinks_per_l2={})",
            t.name(),
            t.levels(),
            t.n_nodes(),
            t.n_leaves(),
            t.n_pods(),
            t.nodes_per_leaf(),
            t.uplinks_per_leaf(),
            t.uplinks_per_l2()
        )
    }
}

/// One replay. Build it, call `step` until it returns True, then read `results()`.
#[pyclass(module = "toposched._core")]
struct Simulation {
    engine: Engine,
    /// Set when the engine panicked: its state is then unknown and it is not run again.
    broken: Option<String>,
}

thread_local! {
    /// Message and place of the last panic on this thread (set by the hook installed at import).
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Run `f`, turning a panic (a bug: inputs are checked before the engine sees them) into a
/// RuntimeError naming what was running, instead of unwinding into Python as a
/// PanicException (a BaseException no `except Exception` catches).
fn guarded<T>(what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(PyRuntimeError::new_err(panic_message(what, payload))),
    }
}

fn panic_message(what: &str, payload: Box<dyn std::any::Any + Send>) -> String {
    let text = LAST_PANIC.with(|p| p.borrow_mut().take()).unwrap_or_else(|| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into())
    });
    format!("internal error in the engine while {what} (a bug in toposched; please report it with the input): {text}")
}

/// Load NumPy's C API now, as a Python error if it fails. The numpy crate loads it on
/// first use by running Python code (importing numpy, building its version object) and
/// panics if that raises; a Ctrl-C landing there reached Python as a PanicException with a
/// traceback (seen with `simulate`'s read-ahead, whose `take` can be the first to make an
/// array while the import thread still imports NumPy). Called before a function makes its
/// first arrays; once loaded it is a check of a cached pointer.
pub(crate) fn numpy_api(py: Python<'_>) -> PyResult<()> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        PyArray1::<i64>::zeros(py, 0, false);
    })) {
        Ok(()) => Ok(()),
        Err(payload) => {
            let text = panic_message("loading NumPy's C API", payload);
            if text.contains("KeyboardInterrupt") {
                Err(pyo3::exceptions::PyKeyboardInterrupt::new_err(()))
            } else {
                Err(pyo3::exceptions::PyImportError::new_err(text))
            }
        }
    }
}

/// Keep panic messages for [`guarded`] instead of printing them; TOPOSCHED_DEBUG=1 prints
/// them as well (with RUST_BACKTRACE, a backtrace).
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg}{place}")));
        if std::env::var_os("TOPOSCHED_DEBUG").is_some_and(|v| !v.is_empty() && v != "0") {
            default(info);
        }
    }));
}

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| PyValueError::new_err(format!("column {name} must be a contiguous array")))
}

/// The job columns of `Simulation(...)` and `Simulation.append(...)`.
struct JobColumns<'py> {
    job_id: PyReadonlyArray1<'py, i64>,
    submit_s: PyReadonlyArray1<'py, i64>,
    nodes: PyReadonlyArray1<'py, i64>,
    walltime_s: PyReadonlyArray1<'py, i64>,
    runtime_s: PyReadonlyArray1<'py, i64>,
    user_id: Option<PyReadonlyArray1<'py, i64>>,
    account_id: Option<PyReadonlyArray1<'py, i64>>,
    qos_id: Option<PyReadonlyArray1<'py, i64>>,
    partition_id: Option<PyReadonlyArray1<'py, i64>>,
}

impl JobColumns<'_> {
    /// The rows, named in errors from `row0` on (the rows appended before them).
    fn jobs(&self, row0: usize) -> PyResult<Vec<Job>> {
        let (id, sub, n, wt, rt) = (
            slice(&self.job_id, "job_id")?,
            slice(&self.submit_s, "submit_s")?,
            slice(&self.nodes, "nodes")?,
            slice(&self.walltime_s, "walltime_s")?,
            slice(&self.runtime_s, "runtime_s")?,
        );
        let len = id.len();
        if [sub.len(), n.len(), wt.len(), rt.len()].iter().any(|&l| l != len) {
            return Err(PyValueError::new_err("job columns differ in length"));
        }
        let mut jobs = Vec::with_capacity(len);
        for i in 0..len {
            let nodes = u32::try_from(n[i])
                .map_err(|_| PyValueError::new_err(format!("job row {} (id {}): field 'nodes' out of range: {}", row0 + i, id[i], n[i])))?;
            jobs.push(Job { id: id[i], submit_s: sub[i], nodes, walltime_s: wt[i], runtime_s: rt[i], ..Default::default() });
        }
        // the per-job ids (-1: the log has none)
        for (name, col) in [("user_id", &self.user_id), ("account_id", &self.account_id), ("qos_id", &self.qos_id), ("partition_id", &self.partition_id)] {
            let Some(col) = col else { continue };
            let v = slice(col, name)?;
            if v.len() != len {
                return Err(PyValueError::new_err("job columns differ in length"));
            }
            for (i, (job, &x)) in jobs.iter_mut().zip(v).enumerate() {
                let id = match x {
                    -1 => None,
                    x => Some(u32::try_from(x).ok().filter(|&x| x < u32::MAX).ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "job row {} (id {}): field '{name}' out of range: {x} (-1 for none, else 0..{})",
                            row0 + i,
                            job.id,
                            u32::MAX - 1
                        ))
                    })?),
                };
                match name {
                    "user_id" => job.user = id,
                    "account_id" => job.account = id,
                    "qos_id" => job.qos = id,
                    _ => job.partition = id,
                }
            }
        }
        Ok(jobs)
    }
}

/// Slurm `--switches` limits per row from the `max_leaves` / `switch_wait_s` columns.
fn switches_of(
    jobs: &[Job],
    row0: usize,
    max_leaves: Option<PyReadonlyArray1<i64>>,
    switch_wait_s: Option<PyReadonlyArray1<i64>>,
) -> PyResult<Option<Vec<(u32, i64)>>> {
    let len = jobs.len();
    match (max_leaves, switch_wait_s) {
        (None, None) => Ok(None),
        (Some(l), Some(w)) => {
            let (l, w) = (slice(&l, "max_leaves")?, slice(&w, "switch_wait_s")?);
            if l.len() != len || w.len() != len {
                return Err(PyValueError::new_err("max_leaves and switch_wait_s must have one entry per job"));
            }
            if let Some(i) = (0..len).find(|&i| !(0..=i64::from(u32::MAX)).contains(&l[i])) {
                return Err(PyValueError::new_err(format!("job row {} (id {}): field 'max_leaves' out of range: {}", row0 + i, jobs[i].id, l[i])));
            }
            if let Some(i) = (0..len).find(|&i| !(0..=toposched_core::workload::MAX_TIME_S).contains(&w[i])) {
                return Err(PyValueError::new_err(format!("job row {} (id {}): field 'switch_wait_s' out of range: {}", row0 + i, jobs[i].id, w[i])));
            }
            Ok(Some(l.iter().zip(w).map(|(&l, &w)| (l as u32, w)).collect()))
        }
        _ => Err(PyValueError::new_err("give both max_leaves and switch_wait_s, or neither")),
    }
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (
        topology, job_id, submit_s, nodes, walltime_s, runtime_s, *,
        queue="easy", alloc=None, options=None, kill_at_walltime=true, queue_depth=None,
        record_reservations=false, check_interference_free=false, down=None,
        max_leaves=None, switch_wait_s=None, queue_order=None, event_order="per-instant",
        user_id=None, account_id=None, qos_id=None, partition_id=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        topology: &Topology,
        job_id: PyReadonlyArray1<i64>,
        submit_s: PyReadonlyArray1<i64>,
        nodes: PyReadonlyArray1<i64>,
        walltime_s: PyReadonlyArray1<i64>,
        runtime_s: PyReadonlyArray1<i64>,
        queue: &str,
        alloc: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
        kill_at_walltime: bool,
        queue_depth: Option<usize>,
        record_reservations: bool,
        check_interference_free: bool,
        down: Option<Vec<u32>>,
        max_leaves: Option<PyReadonlyArray1<i64>>,
        switch_wait_s: Option<PyReadonlyArray1<i64>>,
        queue_order: Option<&Bound<'_, PyAny>>,
        event_order: &str,
        user_id: Option<PyReadonlyArray1<i64>>,
        account_id: Option<PyReadonlyArray1<i64>>,
        qos_id: Option<PyReadonlyArray1<i64>>,
        partition_id: Option<PyReadonlyArray1<i64>>,
    ) -> PyResult<Simulation> {
        let columns = JobColumns { job_id, submit_s, nodes, walltime_s, runtime_s, user_id, account_id, qos_id, partition_id };
        let jobs = columns.jobs(0)?;
        let switches = switches_of(&jobs, 0, max_leaves, switch_wait_s)?;
        let options = options.map(json::dict_to_options).transpose()?.unwrap_or_default();
        let alloc_name: Option<String> = match alloc {
            None => Some("linear".into()),
            Some(a) if a.is_instance_of::<pyo3::types::PyString>() => Some(a.extract()?),
            Some(_) => None,
        };
        let (mut queue_policy, built) =
            registry::build(queue, alloc_name.as_deref(), &options).map_err(PyValueError::new_err)?;
        let allocator: Box<dyn toposched_core::alloc::Allocator> = match (built, alloc) {
            (Some(a), _) => a,
            (None, Some(obj)) => Box::new(policies::PyAllocator::new(obj.py(), obj.clone().unbind())?),
            (None, None) => unreachable!("no allocation policy object means linear"),
        };
        if let Some(order) = queue_order {
            queue_policy = Box::new(policies::PyQueueOrder::new(order.py(), order.clone().unbind(), queue_policy)?);
        }
        let opts = EngineOptions {
            kill_at_walltime,
            queue_depth: queue_depth.unwrap_or(usize::MAX).max(1),
            record_reservations,
            check_interference_free,
            event_order: EventOrder::by_name(event_order).ok_or_else(|| {
                PyValueError::new_err(format!("event_order must be one of {}, not {event_order:?}", EventOrder::NAMES.join(", ")))
            })?,
        };
        let mut engine = guarded("checking the job table", || {
            Engine::new(topology.inner.clone(), jobs, allocator, queue_policy, opts, &down.unwrap_or_default())
                .map_err(|e| PyValueError::new_err(e.0))
        })?;
        if let Some(sw) = switches {
            engine.set_switches(sw).map_err(|e| PyValueError::new_err(e.0))?;
        }
        Ok(Simulation { engine, broken: None })
    }

    /// Handle at most `max_instants` event instants (all of them by default); True when
    /// the replay is complete. The GIL is released meanwhile.
    #[pyo3(signature = (max_instants=None))]
    fn step(&mut self, py: Python<'_>, max_instants: Option<u64>) -> PyResult<bool> {
        let max = max_instants.unwrap_or(u64::MAX);
        self.run(py, move |e| e.step(max))
    }

    /// Streamed replays: declare how far the input goes, then step. `before_s` an int: more
    /// rows will be appended, none submitted before it, so only instants before it are
    /// handled; None: the input is complete. Handles at most `max_instants` instants (all by
    /// default). True when the replay went as far as its input allows (finished, or every
    /// instant before `before_s` handled); call again while False.
    #[pyo3(signature = (before_s, max_instants=None))]
    fn step_until(&mut self, py: Python<'_>, before_s: Option<i64>, max_instants: Option<u64>) -> PyResult<bool> {
        let max = max_instants.unwrap_or(u64::MAX);
        if self.broken.is_none() {
            // a bad input end is the caller's input error, not a failure of the replay
            self.engine.set_input_end(before_s).map_err(|e| PyValueError::new_err(e.0))?;
        }
        self.run(py, move |e| e.step_until(before_s, max))
    }

    /// Append job rows after the last one (same columns as the constructor; `max_leaves` /
    /// `switch_wait_s` exactly when the constructor had them). Submit times must not go
    /// back, nor fall before the last `before_s` given to `step_until`. Refused for the
    /// `slurm` / `slurm-bf` queues and with a network model (they need the whole log).
    #[pyo3(signature = (
        job_id, submit_s, nodes, walltime_s, runtime_s, *,
        max_leaves=None, switch_wait_s=None, user_id=None, account_id=None, qos_id=None, partition_id=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn append(
        &mut self,
        job_id: PyReadonlyArray1<i64>,
        submit_s: PyReadonlyArray1<i64>,
        nodes: PyReadonlyArray1<i64>,
        walltime_s: PyReadonlyArray1<i64>,
        runtime_s: PyReadonlyArray1<i64>,
        max_leaves: Option<PyReadonlyArray1<i64>>,
        switch_wait_s: Option<PyReadonlyArray1<i64>>,
        user_id: Option<PyReadonlyArray1<i64>>,
        account_id: Option<PyReadonlyArray1<i64>>,
        qos_id: Option<PyReadonlyArray1<i64>>,
        partition_id: Option<PyReadonlyArray1<i64>>,
    ) -> PyResult<()> {
        if let Some(why) = &self.broken {
            return Err(PyRuntimeError::new_err(why.clone()));
        }
        let row0 = self.engine.n_rows();
        let columns = JobColumns { job_id, submit_s, nodes, walltime_s, runtime_s, user_id, account_id, qos_id, partition_id };
        let jobs = columns.jobs(row0)?;
        let switches = switches_of(&jobs, row0, max_leaves, switch_wait_s)?;
        let engine = &mut self.engine;
        guarded("appending rows", || engine.append_with_switches(jobs, switches).map_err(|e| PyValueError::new_err(e.0)))
    }

    /// Hand over and forget the longest prefix of rows that are final (done or skipped; a
    /// pending or running row ends it). A dict shaped like `results()` for those rows
    /// (`status`, `start_s`, `end_s`, `alloc_class`, `killed`, `aph`, `range_offsets`,
    /// `range_first`, `range_count`), plus `first_row` (int: the first drained row; the
    /// arrays may be empty) and `skipped` (list of (row, reason) of the drained skipped
    /// rows, in row order). Afterwards `results()` and `skipped()` cover only the rows
    /// left, from `first_row`.
    fn drain<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if let Some(why) = &self.broken {
            return Err(PyRuntimeError::new_err(why.clone()));
        }
        let engine = &mut self.engine;
        let d = guarded("draining rows", || Ok(engine.drain()))?;
        let ranges = |i: usize| &d.ranges[d.range_offsets[i]..d.range_offsets[i + 1]];
        let dict = results_dict(py, self.engine.topology(), d.outcomes.iter().enumerate().map(|(i, o)| (o, ranges(i))))?;
        dict.set_item("first_row", d.first_row)?;
        dict.set_item("skipped", d.skipped)?;
        Ok(dict)
    }

    /// First row still held (rows before it were drained).
    #[getter]
    fn first_row(&self) -> usize {
        self.engine.first_row()
    }
    /// Rows held now, from `first_row` to the last appended.
    #[getter]
    fn held_rows(&self) -> usize {
        self.engine.held_rows()
    }
    /// The input end last declared (`step_until`): None when the input is complete.
    #[getter]
    fn input_end(&self) -> Option<i64> {
        self.engine.input_end()
    }

    /// Rows appended so far (the constructor's and every `append`'s).
    #[getter]
    fn n_jobs(&self) -> usize {
        self.engine.n_rows()
    }
    /// Jobs submitted so far.
    #[getter]
    fn submitted(&self) -> usize {
        self.engine.submitted()
    }
    #[getter]
    fn now(&self) -> i64 {
        self.engine.now()
    }
    #[getter]
    fn passes(&self) -> u64 {
        self.engine.passes()
    }
    #[getter]
    fn finished(&self) -> bool {
        self.engine.is_finished()
    }

    /// Per-job results in job-row order, from `first_row` (every row unless some were
    /// drained), as NumPy arrays: `status` (0 pending, 1 running,
    /// 2 done, 3 skipped), `start_s`, `end_s` (-1 if never started), `alloc_class` (1 one
    /// leaf, 2 one pod, 3 several pods; 0 if never started), `killed`, `aph` (NaN below two
    /// nodes or never started), and the node lists as ranges of consecutive ids:
    /// `range_offsets` (int64, length rows + 1), `range_first` and `range_count` (uint32;
    /// row i holds, ascending, the ids `range_first[k] .. range_first[k] + range_count[k]`
    /// for k in `range_offsets[i]:range_offsets[i+1]`; `toposched.nodelists` expands them).
    /// With `release=True` the engine frees its own copy afterwards (then neither
    /// `results` nor `step` may be called again).
    #[pyo3(signature = (release=false))]
    fn results<'py>(&mut self, py: Python<'py>, release: bool) -> PyResult<Bound<'py, PyDict>> {
        if let Some(why) = &self.broken {
            return Err(PyRuntimeError::new_err(why.clone()));
        }
        let d = guarded("collecting results", || self.results_unguarded(py))?;
        if release {
            // The caller holds the copies: free the engine's (a third of a finished run's memory).
            self.engine.release_outcomes();
            self.broken = Some("the results were released (results(release=True)); the replay cannot be read or stepped again".into());
        }
        Ok(d)
    }

    /// Jobs that could never run: list of (job row, reason); drained rows' are in `drain()`'s.
    fn skipped(&self) -> Vec<(u32, String)> {
        self.engine.skipped().to_vec()
    }

    /// Reservations made (only with record_reservations=True): arrays pass_s, job_row, start_s.
    fn reservations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.engine.reservations();
        let d = PyDict::new(py);
        d.set_item("pass_s", PyArray1::from_vec(py, r.iter().map(|x| x.pass_s).collect()))?;
        d.set_item("job_row", PyArray1::from_vec(py, r.iter().map(|x| x.job as i64).collect()))?;
        d.set_item("start_s", PyArray1::from_vec(py, r.iter().map(|x| x.start_s).collect()))?;
        Ok(d)
    }
}

impl Simulation {
    /// Step the engine with the GIL released; a panic marks the replay broken.
    fn run(&mut self, py: Python<'_>, f: impl FnOnce(&mut Engine) -> Result<bool, toposched_core::SimError> + Send) -> PyResult<bool> {
        if let Some(why) = &self.broken {
            return Err(PyRuntimeError::new_err(why.clone()));
        }
        let engine = &mut self.engine;
        let r = py.allow_threads(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(engine))));
        match r {
            // a Ctrl-C inside a policy written in Python: an interruption, as between steps
            Ok(r) => r.map_err(|e| {
                if e.0 == policies::INTERRUPTED {
                    pyo3::exceptions::PyKeyboardInterrupt::new_err(e.0)
                } else {
                    PyRuntimeError::new_err(e.0)
                }
            }),
            Err(payload) => {
                let what = format!("replaying (simulated time {} s, {} jobs submitted)", self.engine.now(), self.engine.submitted());
                let why = panic_message(&what, payload);
                self.broken = Some(why.clone());
                Err(PyRuntimeError::new_err(why))
            }
        }
    }

    fn results_unguarded<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let e = &self.engine;
        let first = e.first_row();
        let rows = e.outcomes().iter().enumerate().map(|(i, o)| {
            let ranges: &[(u32, u32)] = if o.start_s >= 0 && matches!(o.status, JobStatus::Running | JobStatus::Done) {
                e.node_ranges_of((first + i) as u32)
            } else {
                &[]
            };
            (o, ranges)
        });
        results_dict(py, e.topology(), rows)
    }
}

/// Per-row results as the dict `results()` and `drain()` give (see `results`).
fn results_dict<'py, 'a>(
    py: Python<'py>,
    topo: &toposched_core::Topology,
    rows: impl ExactSizeIterator<Item = (&'a toposched_core::Outcome, &'a [(u32, u32)])>,
) -> PyResult<Bound<'py, PyDict>> {
    // the columns are made by toposched-io (the native collect path makes them the same way)
    let o = toposched_io::collect::OutcomeColumns::from_rows(topo, rows);
    let d = PyDict::new(py);
    d.set_item("status", PyArray1::from_vec(py, o.status))?;
    d.set_item("start_s", PyArray1::from_vec(py, o.start_s))?;
    d.set_item("end_s", PyArray1::from_vec(py, o.end_s))?;
    d.set_item("alloc_class", PyArray1::from_vec(py, o.alloc_class))?;
    d.set_item("killed", PyArray1::from_vec(py, o.killed))?;
    d.set_item("aph", PyArray1::from_vec(py, o.aph))?;
    d.set_item("range_offsets", PyArray1::from_vec(py, o.range_offsets))?;
    d.set_item("range_first", PyArray1::from_vec(py, o.range_first))?;
    d.set_item("range_count", PyArray1::from_vec(py, o.range_count))?;
    Ok(d)
}

/// Average pairwise hops of a node set; None below two nodes.
#[pyfunction]
fn aph(topology: &Topology, nodes: Vec<u32>) -> PyResult<Option<f64>> {
    let n = topology.inner.n_nodes() as u32;
    if let Some(bad) = nodes.iter().find(|&&x| x >= n) {
        return Err(PyValueError::new_err(format!("node {bad} is not on the fabric ({n} nodes)")));
    }
    Ok(metrics::aph(&topology.inner, &nodes))
}

/// The smallest APH any placement of `n` nodes can have on the empty fabric.
#[pyfunction]
fn ideal_aph(topology: &Topology, n: u32) -> Option<f64> {
    metrics::ideal_aph(&topology.inner, n)
}

/// Most samples [`busy_nodes_sampled`] returns (2^28: 2 GiB of int64).
const MAX_SAMPLES: i64 = 1 << 28;

/// Busy nodes sampled at t0, t0+step, ..., t1 (a job counts while start <= t < end).
#[pyfunction]
fn busy_nodes_sampled<'py>(
    py: Python<'py>,
    start_s: PyReadonlyArray1<i64>,
    end_s: PyReadonlyArray1<i64>,
    nodes: PyReadonlyArray1<i64>,
    t0: i64,
    t1: i64,
    step_s: i64,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    if step_s <= 0 {
        return Err(PyValueError::new_err("step_s must be positive"));
    }
    let (s, e, n) = (slice(&start_s, "start_s")?, slice(&end_s, "end_s")?, slice(&nodes, "nodes")?);
    if s.len() != e.len() || s.len() != n.len() {
        return Err(PyValueError::new_err("start_s, end_s and nodes differ in length"));
    }
    // Bound the output before allocating it: a span of centuries at 60 s would need
    // gigabytes, and a failed allocation aborts the process (no exception).
    if t1 >= t0 && ((t1 as i128 - t0 as i128) / step_s as i128 + 1) > MAX_SAMPLES as i128 {
        return Err(PyValueError::new_err(format!(
            "{t0}..{t1} every {step_s} s is more than {MAX_SAMPLES} samples; use a longer step"
        )));
    }
    let n32: Vec<u32> = n.iter().map(|&x| x.clamp(0, i64::from(u32::MAX)) as u32).collect();
    let busy = metrics::busy_nodes_sampled(s, e, &n32, t0, t1, step_s);
    Ok(PyArray1::from_vec(py, busy.into_iter().map(i64::from).collect()))
}

/// Every registered policy: a list of dicts with `name`, `kind` ("queue" or "alloc"),
/// `summary`, `doc` (the policy file's documentation), `fungible` and `topology_aware`
/// (allocation policies; None for queue policies) and `options` (the JSON schema of its
/// options: `properties` maps each option to its type, `description` and `default`).
#[pyfunction(name = "policies")]
fn policies_of_registry(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut out = Vec::new();
    let mut push = |kind: &str, name: &str, summary: &str, doc: &str, flags: Option<(bool, bool)>, schema: schemars::Schema| -> PyResult<()> {
        let d = PyDict::new(py);
        d.set_item("name", name)?;
        d.set_item("kind", kind)?;
        d.set_item("summary", summary)?;
        d.set_item("doc", doc)?;
        d.set_item("fungible", flags.map(|f| f.0))?;
        d.set_item("topology_aware", flags.map(|f| f.1))?;
        d.set_item("options", json::to_py(py, schema.as_value())?)?;
        out.push(d);
        Ok(())
    };
    for r in registry::queues() {
        let p = r.policy;
        push("queue", p.name, p.summary, r.doc, None, (p.options)())?;
    }
    for r in registry::allocs() {
        let p = r.policy;
        push("alloc", p.name, p.summary, r.doc, Some((p.fungible, p.topology_aware)), (p.options)())?;
    }
    Ok(out)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    install_panic_hook();
    m.add_class::<Topology>()?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(aph, m)?)?;
    m.add_function(wrap_pyfunction!(ideal_aph, m)?)?;
    m.add_function(wrap_pyfunction!(busy_nodes_sampled, m)?)?;
    m.add_function(wrap_pyfunction!(readers::swf_plain_chunk, m)?)?;
    m.add_class::<readahead::SwfReadAhead>()?;
    m.add("PRESETS", toposched_core::topology::PRESETS.to_vec())?;
    m.add("ALLOCATORS", registry::alloc_names())?;
    m.add("QUEUES", registry::queue_names())?;
    m.add_function(wrap_pyfunction!(policies_of_registry, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    network::register(m)?;
    policies::register(m)?;
    live::register(m)?;
    normalize::register(m)?;
    collect::register(m)?;
    parquet::register(m)?;
    Ok(())
}

//! Policies written in Python, run inside the Rust engine.
//!
//! `PyAllocator` wraps an object with `select(nodes, free) -> list[int] | None` (see
//! python/toposched/policies.py for the documented base class); `PyQueueOrder` wraps an
//! object with `key(job_id, submit_s, nodes, walltime_s, now_s)` and reorders the queue
//! before the built-in queue policy runs. Everything a Python policy returns is checked
//! here; a bad answer or a Python exception is kept and stops the run with a message
//! naming the policy, the job and what was wrong.

use numpy::PyArray1;
use pyo3::prelude::*;

use toposched_core::alloc::{fits_in_machine, Allocator, Guard};
use toposched_core::queue::{PassCtx, QueuePolicy};
use toposched_core::state::ClusterState;
use toposched_core::Topology;

/// What a policy's callback answered with a Ctrl-C (KeyboardInterrupt): the run stops as
/// an interrupted one (`Simulation.step` raises KeyboardInterrupt; the result holds the
/// jobs finished so far), not as a policy's failure.
pub const INTERRUPTED: &str = "interrupted (Ctrl-C) while a policy written in Python ran";

/// The error of a callback `what` (e.g. "select(4, free)") that raised `err`.
fn raised(py: Python<'_>, what: &str, err: &PyErr) -> String {
    if err.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
        return INTERRUPTED.to_string();
    }
    format!("{what} raised {}", describe(py, err))
}

/// A select answer as node ids: a sequence of ints (NumPy's too), never bools (True
/// was taken as node 1). Err: what it is instead ("a list holding float 3.0").
fn node_ids(v: &Bound<'_, PyAny>) -> Result<Vec<i64>, String> {
    let type_of = |x: &Bound<'_, PyAny>| x.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    let items: Vec<Bound<'_, PyAny>> = match v.try_iter() {
        Ok(it) if !v.is_instance_of::<pyo3::types::PyString>() => it.collect::<PyResult<_>>().map_err(|_| format!("a {} that cannot be read", type_of(v)))?,
        _ => return Err(format!("{} {}", type_of(v), v.repr().map(|r| r.to_string()).unwrap_or_default().chars().take(40).collect::<String>())),
    };
    items
        .iter()
        .map(|x| {
            let bad = || format!("a {} holding {} {}", type_of(v), type_of(x), x.repr().map(|r| r.to_string()).unwrap_or_default().chars().take(40).collect::<String>());
            if x.is_instance_of::<pyo3::types::PyBool>() || x.get_type().name().map(|n| n == "bool_").unwrap_or(false) {
                return Err(bad());
            }
            x.extract::<i64>().map_err(|_| bad())
        })
        .collect()
}

fn describe(py: Python<'_>, err: &PyErr) -> String {
    let tb = err
        .traceback(py)
        .and_then(|tb| tb.format().ok())
        .map(|t| format!("\n{}", t.trim_end()))
        .unwrap_or_default();
    format!("{err}{tb}")
}

/// An allocation policy implemented by a Python object.
pub struct PyAllocator {
    obj: Py<PyAny>,
    name: String,
    fungible: bool,
    /// The first bad answer or exception (a lock: fits_ever is asked through `&self`).
    error: std::sync::Mutex<Option<String>>,
}

impl PyAllocator {
    pub fn new(py: Python<'_>, obj: Py<PyAny>) -> PyResult<PyAllocator> {
        let b = obj.bind(py);
        let name = match b.getattr("name") {
            Ok(n) if !n.is_none() => n.extract::<String>()?,
            _ => b.get_type().qualname()?.to_string(),
        };
        let fungible = match b.getattr("fungible") {
            Ok(f) => f.extract::<bool>()?,
            Err(_) => false,
        };
        if !b.hasattr("select")? {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!("allocation policy {name} has no select(nodes, free) method")));
        }
        Ok(PyAllocator { obj, name, fungible, error: std::sync::Mutex::new(None) })
    }

    fn fail(&self, msg: String) {
        let mut error = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if error.is_none() {
            *error = Some(if msg == INTERRUPTED { msg } else { format!("allocation policy {}: {msg}", self.name) });
        }
    }

    fn failed(&self) -> bool {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }
}

impl Allocator for PyAllocator {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn fungible(&self) -> bool {
        self.fungible
    }

    fn check_fits_ever(&self, _topo: &Topology, empty: &ClusterState, nodes: u32) -> Result<(), String> {
        // Larger than the machine never fits, whatever the policy says.
        fits_in_machine(empty, nodes)?;
        Python::with_gil(|py| {
            let b = self.obj.bind(py);
            if !b.hasattr("fits_ever").unwrap_or(false) {
                return Ok(());
            }
            match b.call_method1("fits_ever", (nodes,)) {
                Ok(v) if v.is_instance_of::<pyo3::types::PyString>() => Err(v.extract::<String>().unwrap_or_default()),
                // a forgotten `return` skipped every job, and the run ended "successfully"
                Ok(v) if v.is_none() => {
                    self.fail(format!("fits_ever({nodes}) must return True, False or a reason string, not None"));
                    Err("fits_ever gave no answer".to_string())
                }
                Ok(v) if v.is_truthy().unwrap_or(false) => Ok(()),
                Ok(_) => Err(format!("policy {} says a job of {nodes} nodes can never fit", self.name)),
                // an exception stops the run (it skipped the job with the traceback as reason)
                Err(e) => {
                    self.fail(raised(py, &format!("fits_ever({nodes})"), &e));
                    Err("fits_ever raised".to_string())
                }
            }
        })
    }

    fn select(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        if self.failed() || nodes > state.n_free() {
            return None;
        }
        let free: Vec<i32> = state.free_set().iter_range(0..topo.n_nodes() as u32).filter(|&n| !guard.excludes(n)).map(|n| n as i32).collect();
        let answer: Result<Option<Vec<i64>>, String> = Python::with_gil(|py| {
            let arr = PyArray1::from_vec(py, free);
            match self.obj.bind(py).call_method1("select", (nodes, arr)) {
                Ok(v) if v.is_none() => Ok(None),
                Ok(v) => node_ids(&v).map(Some).map_err(|what| format!("select({nodes}, free) must return a list of int node ids or None, not {what}")),
                Err(e) => Err(raised(py, &format!("select({nodes}, free)"), &e)),
            }
        });
        let chosen = match answer {
            Ok(Some(v)) => v,
            Ok(None) => return None,
            Err(msg) => {
                self.fail(msg);
                return None;
            }
        };
        if chosen.len() != nodes as usize {
            self.fail(format!("select({nodes}, free) returned {} nodes instead of {nodes}", chosen.len()));
            return None;
        }
        let mut out = Vec::with_capacity(chosen.len());
        for &n in &chosen {
            if n < 0 || n >= topo.n_nodes() as i64 {
                self.fail(format!("select({nodes}, free) returned node {n}, which is not on the fabric (0..{})", topo.n_nodes()));
                return None;
            }
            let n = n as u32;
            if !state.is_free(n) {
                self.fail(format!("select({nodes}, free) returned node {n}, which is busy"));
                return None;
            }
            if guard.excludes(n) {
                self.fail(format!("select({nodes}, free) returned node {n}, which is reserved for another job (not in `free`)"));
                return None;
            }
            out.push(n);
        }
        let mut sorted = out.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            self.fail(format!("select({nodes}, free) returned a node twice: {chosen:?}"));
            return None;
        }
        Some(out)
    }

    fn take_error(&mut self) -> Option<String> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// A queue order implemented by a Python object, in front of a built-in queue policy.
pub struct PyQueueOrder {
    obj: Py<PyAny>,
    name: String,
    inner: Box<dyn QueuePolicy>,
    error: Option<String>,
}

impl PyQueueOrder {
    pub fn new(py: Python<'_>, obj: Py<PyAny>, inner: Box<dyn QueuePolicy>) -> PyResult<PyQueueOrder> {
        let b = obj.bind(py);
        if !b.hasattr("key")? {
            return Err(pyo3::exceptions::PyTypeError::new_err("a queue order needs a key(job_id, submit_s, nodes, walltime_s, now_s) method"));
        }
        let name = b.get_type().qualname()?.to_string();
        Ok(PyQueueOrder { obj, name, inner, error: None })
    }
}

impl QueuePolicy for PyQueueOrder {
    fn name(&self) -> String {
        format!("{}+{}", self.inner.name(), self.name)
    }

    fn pass(&mut self, ctx: &mut PassCtx) {
        if self.error.is_some() {
            return;
        }
        let now = ctx.now();
        let keyed: Result<Vec<(Py<PyAny>, usize, u32)>, String> = Python::with_gil(|py| {
            let b = self.obj.bind(py);
            ctx.queue()
                .iter()
                .enumerate()
                .map(|(i, &row)| {
                    let j = ctx.jobs[row as usize];
                    b.call_method1("key", (j.id, j.submit_s, j.nodes, j.walltime_s, now))
                        .map(|k| (k.unbind(), i, row))
                        .map_err(|e| match raised(py, "key()", &e) {
                            m if m == INTERRUPTED => m,
                            m => format!("queue order {}: {m}", self.name),
                        })
                })
                .collect()
        });
        let mut keyed = match keyed {
            Ok(k) => k,
            Err(e) => {
                self.error = Some(e);
                return;
            }
        };
        let mut failure = None;
        Python::with_gil(|py| {
            // Stable: equal keys keep queue (submit) order.
            keyed.sort_by(|a, b| match a.0.bind(py).lt(b.0.bind(py)) {
                Ok(true) => std::cmp::Ordering::Less,
                Ok(false) => match b.0.bind(py).lt(a.0.bind(py)) {
                    Ok(true) => std::cmp::Ordering::Greater,
                    Ok(false) => a.1.cmp(&b.1),
                    Err(e) => {
                        failure.get_or_insert_with(|| describe(py, &e));
                        a.1.cmp(&b.1)
                    }
                },
                Err(e) => {
                    failure.get_or_insert_with(|| describe(py, &e));
                    a.1.cmp(&b.1)
                }
            });
        });
        if let Some(e) = failure {
            self.error = Some(format!("queue order {}: keys cannot be compared: {e}", self.name));
            return;
        }
        *ctx.queue_mut() = keyed.into_iter().map(|k| k.2).collect();
        self.inner.pass(ctx);
    }

    fn take_error(&mut self) -> Option<String> {
        self.error.take().or_else(|| self.inner.take_error())
    }

    fn whole_log_only(&self) -> Option<String> {
        self.inner.whole_log_only()
    }
}

/// Nothing to register: the classes above are used through `Simulation(alloc=obj, queue_order=obj)`.
pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}

//! `Placer`: the core's live placement table (toposched-core `live`), for `toposched serve`.
//! Thin wrapper: node ids in and out; names are the Python side's business.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use pyo3::types::PyDict;
use toposched_core::live::{self, Decision};

use crate::Topology;

/// A live allocation table using a built-in allocation policy exactly as a replay does.
#[pyclass(module = "toposched._core")]
pub struct Placer {
    inner: live::Placer,
}

type Answer = (String, Option<Vec<u32>>, Option<i64>, Option<String>);

impl Placer {
    fn check_node(&self, node: u32) -> PyResult<()> {
        let n = self.inner.topology().n_nodes() as u32;
        if node >= n {
            return Err(PyValueError::new_err(format!("node id {node} is not on the fabric ({n} nodes)")));
        }
        Ok(())
    }
}

#[pymethods]
impl Placer {
    /// `options`: the allocation policy's options, as `Simulation(options=...)` takes them.
    #[new]
    #[pyo3(signature = (topology, alloc, *, options=None))]
    fn new(topology: &Topology, alloc: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Placer> {
        let options = options.map(crate::json::dict_to_options).transpose()?.unwrap_or_default();
        let inner = live::Placer::new(topology.inner.clone(), alloc, options).map_err(PyValueError::new_err)?;
        Ok(Placer { inner })
    }

    /// Place `job` now: ("placed", nodes, None, None); ("reserved", nodes, start_s, None)
    /// with `reserve` when it cannot start now; ("refused", None, None, why) when it cannot
    /// start now; ("never", None, None, why) when it can never run here.
    /// ``exclude``: node ids that may not be chosen now (hosts whose agents refuse the job).
    #[pyo3(signature = (job, nodes, walltime_s, now_s, reserve=false, exclude=None))]
    fn allocate(&mut self, job: &str, nodes: u32, walltime_s: i64, now_s: i64, reserve: bool, exclude: Option<Vec<u32>>) -> Answer {
        match self.inner.allocate(job, nodes, walltime_s, now_s, reserve, &exclude.unwrap_or_default()) {
            Decision::Placed(n) => ("placed".into(), Some(n), None, None),
            Decision::Reserved { start_s, nodes } => ("reserved".into(), Some(nodes), Some(start_s), None),
            Decision::Refused(why) => ("refused".into(), None, None, Some(why)),
            Decision::Never(why) => ("never".into(), None, None, Some(why)),
        }
    }

    /// Take the job's nodes back; None if it holds none.
    fn release(&mut self, job: &str) -> Option<Vec<u32>> {
        self.inner.release(job)
    }

    /// Record a placement made elsewhere (restart, resource manager); ValueError if a node
    /// is taken or not on the fabric (nothing changes then).
    fn assign(&mut self, job: &str, nodes: Vec<u32>, start_s: i64, walltime_s: i64) -> PyResult<Vec<u32>> {
        self.inner.assign(job, nodes, start_s, walltime_s).map_err(PyValueError::new_err)
    }

    /// Replace every allocation by `table`: (job, nodes, start_s, walltime_s) rows. Checked
    /// first: on ValueError nothing changes.
    fn replace_all(&mut self, table: Vec<(String, Vec<u32>, i64, i64)>) -> PyResult<()> {
        self.inner.replace_all(table).map_err(PyValueError::new_err)
    }

    /// Never allocate the node until resumed; True if it was not drained.
    fn drain(&mut self, node: u32) -> PyResult<bool> {
        self.check_node(node)?;
        Ok(self.inner.drain(node))
    }
    /// Put a drained node back in service; True if it was drained.
    fn resume(&mut self, node: u32) -> PyResult<bool> {
        self.check_node(node)?;
        Ok(self.inner.resume(node))
    }
    fn drained(&self) -> Vec<u32> {
        self.inner.drained()
    }

    /// Whether a job of `nodes` nodes could ever run: (why not on the whole fabric, why not
    /// with the drained nodes left out), None meaning it could.
    fn satisfiable(&self, nodes: u32) -> (Option<String>, Option<String>) {
        let (whole, now) = self.inner.satisfiable(nodes);
        (whole.err(), now.err())
    }

    /// Held jobs: (job, nodes, start_s, walltime_s), by job name.
    fn jobs(&self) -> Vec<(String, Vec<u32>, i64, i64)> {
        self.inner.held().iter().map(|(k, h)| (k.clone(), h.nodes.clone(), h.start_s, h.walltime_s)).collect()
    }

    /// The reservation held, if any: (job, nodes asked, start_s, nodes).
    fn reservation(&self) -> Option<(String, u32, i64, Vec<u32>)> {
        self.inner.reservation().map(|r| (r.job.clone(), r.nodes_asked, r.start_s, r.nodes.clone()))
    }
    fn clear_reservation(&mut self) {
        self.inner.clear_reservation()
    }

    /// Job holding the node, if any.
    fn holder(&self, node: u32) -> PyResult<Option<String>> {
        self.check_node(node)?;
        Ok(self.inner.holder(node).map(str::to_string))
    }

    /// Free nodes per leaf.
    fn leaf_free(&self) -> Vec<u32> {
        let s = self.inner.state();
        (0..self.inner.topology().n_leaves() as u32).map(|l| s.leaf_free(l)).collect()
    }
    /// Per leaf: does a job spanning leaves hold a node of it.
    fn leaf_spanned(&self) -> Vec<bool> {
        self.inner.leaf_spanned()
    }
    /// Per pod: does a job spanning pods hold a node of it.
    fn pod_spanned(&self) -> Vec<bool> {
        self.inner.pod_spanned()
    }
    #[getter]
    fn n_free(&self) -> u32 {
        self.inner.state().n_free()
    }
    #[getter]
    fn n_nodes(&self) -> usize {
        self.inner.topology().n_nodes()
    }
    #[getter]
    fn alloc(&self) -> String {
        self.inner.alloc_name().to_string()
    }
    #[getter]
    fn fungible(&self) -> bool {
        self.inner.fungible()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Placer>()
}

//! Python bindings of the core's `network` module (registered into toposched._core):
//! `NetworkModel` (links, D-mod-k routes, demands, one-shot evaluation) and the hooks
//! that put the closed-loop network model into a `Simulation`.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use toposched_core::network::demand::{check_traffic, for_each_node_flow};
use toposched_core::network::{
    check_flow_bytes, Bandwidth, Fairness, Filling, JobSpec, JobTraffic, NetConfig, NetReplay, Network, Pattern, Reference, Traffic, CATALYST_SL_WEIGHTS,
    MAX_FLOW_BYTES, PATTERNS,
};

use crate::{Simulation, Topology};

fn value_err(e: String) -> PyErr {
    PyValueError::new_err(e)
}

/// Build the core's settings from the Python keyword arguments.
pub(crate) fn net_config(bandwidth: (f64, f64, f64), fairness: &str, sl_weights: Option<Vec<f64>>) -> PyResult<NetConfig> {
    let cfg = NetConfig {
        bandwidth: Bandwidth { host: bandwidth.0, leaf: bandwidth.1, core: bandwidth.2 },
        fairness: Fairness::parse(fairness).map_err(value_err)?,
        sl_weights: sl_weights.unwrap_or_else(|| vec![1.0]),
        filling: Filling::Auto,
    };
    cfg.check().map_err(value_err)?;
    Ok(cfg)
}

/// A pattern from its name, or explicit flows when given.
pub(crate) fn traffic(pattern: &str, bytes: f64, ranks_per_node: u32, seed: u64, flows: Option<Vec<(u32, u32, f64)>>) -> PyResult<Traffic> {
    let pattern = match flows {
        Some(f) => Pattern::Explicit(f),
        None => Pattern::parse(pattern).map_err(value_err)?,
    };
    if ranks_per_node == 0 {
        return Err(PyValueError::new_err("ranks_per_node must be at least 1"));
    }
    check_flow_bytes(bytes).map_err(value_err)?;
    if let Pattern::Explicit(flows) = &pattern {
        for (k, &(_, _, b)) in flows.iter().enumerate() {
            check_flow_bytes(b).map_err(|e| PyValueError::new_err(format!("flow {k}: {e}")))?;
        }
    }
    Ok(Traffic { pattern, bytes, ranks_per_node, seed })
}

/// The network of one fabric: every directed link, static D-mod-k routes, communication
/// patterns as per-link demands, and the job-level fair-bottleneck sharing model.
#[pyclass(module = "toposched._core", frozen)]
pub struct NetworkModel {
    inner: Network,
}

#[pymethods]
impl NetworkModel {
    #[new]
    /// `packet_per_latency`: one packet's serialization time over a message's latency,
    /// turning on the queueing delay of latency parts (0, the default here: off).
    #[pyo3(signature = (topology, *, bandwidth=(1.0, 1.0, 1.0), fairness="flows", sl_weights=None, filling="auto", packet_per_latency=0.0))]
    fn new(topology: &Topology, bandwidth: (f64, f64, f64), fairness: &str, sl_weights: Option<Vec<f64>>, filling: &str, packet_per_latency: f64) -> PyResult<NetworkModel> {
        let mut cfg = net_config(bandwidth, fairness, sl_weights)?;
        cfg.filling = Filling::parse(filling).map_err(value_err)?;
        cfg.check().map_err(value_err)?;
        let net = Network::new(&topology.inner, cfg).map_err(value_err)?.with_queueing(packet_per_latency).map_err(value_err)?;
        Ok(NetworkModel { inner: net })
    }

    /// One packet's time over a message's latency (0: queueing delay off).
    #[getter]
    fn packet_per_latency(&self) -> f64 {
        self.inner.packet_per_latency()
    }

    /// Number of directed links (ids are 0..n_links).
    #[getter]
    fn n_links(&self) -> usize {
        self.inner.links().len()
    }
    #[getter]
    fn fairness(&self) -> &'static str {
        self.inner.config().fairness.name()
    }
    /// `auto`, `steady` or `progressive` (docs/network.md, "Progressive filling").
    #[getter]
    fn filling(&self) -> &'static str {
        self.inner.config().filling.name()
    }
    #[getter]
    fn sl_weights(&self) -> Vec<f64> {
        self.inner.config().sl_weights.clone()
    }
    /// (host, leaf, core) link bandwidth.
    #[getter]
    fn bandwidth(&self) -> (f64, f64, f64) {
        let b = self.inner.config().bandwidth;
        (b.host, b.leaf, b.core)
    }

    /// The D-mod-k route from node `src` to node `dst`: directed link ids, in order.
    fn route(&self, src: u32, dst: u32) -> PyResult<Vec<u32>> {
        let n = self.inner.topology().n_nodes() as u32;
        if src >= n || dst >= n {
            return Err(PyValueError::new_err(format!("node ids must be below {n}")));
        }
        Ok(self.inner.route(src, dst).links().to_vec())
    }
    fn link_name(&self, link: u32) -> PyResult<String> {
        self.check_link(link)?;
        Ok(self.inner.link_name(link))
    }
    /// 0 node-leaf, 1 leaf-L2, 2 L2-core.
    fn link_level(&self, link: u32) -> PyResult<u8> {
        self.check_link(link)?;
        Ok(self.inner.links().level(link))
    }
    fn link_capacity(&self, link: u32) -> PyResult<f64> {
        self.check_link(link)?;
        Ok(self.inner.links().capacity(link))
    }

    /// The node-level flows one iteration of a pattern sends on `nodes` (block rank
    /// mapping; flows inside a node dropped): arrays `src`, `dst` (node ids), `bytes`.
    #[pyo3(signature = (nodes, pattern, *, bytes=1.0, ranks_per_node=1, seed=0, flows=None))]
    #[allow(clippy::too_many_arguments)]
    fn pattern_flows<'py>(
        &self,
        py: Python<'py>,
        nodes: Vec<u32>,
        pattern: &str,
        bytes: f64,
        ranks_per_node: u32,
        seed: u64,
        flows: Option<Vec<(u32, u32, f64)>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let tr = traffic(pattern, bytes, ranks_per_node, seed, flows)?;
        // the flows the demand and progressive filling see (one rank-to-node mapping)
        let router = self.inner.router();
        check_traffic(router, &nodes, &tr).map_err(value_err)?;
        let (mut s, mut d, mut b) = (Vec::new(), Vec::new(), Vec::new());
        for_each_node_flow(router, &nodes, &tr, &mut |x, y, z| {
            s.push(x as i64);
            d.push(y as i64);
            b.push(z);
        });
        let out = PyDict::new(py);
        out.set_item("src", PyArray1::from_vec(py, s))?;
        out.set_item("dst", PyArray1::from_vec(py, d))?;
        out.set_item("bytes", PyArray1::from_vec(py, b))?;
        Ok(out)
    }

    /// A job's demand: `links` (ascending ids), per-link `bytes`, `flows`, `ports`, and
    /// `t_ideal`, `t_alone`, `placement_penalty`, `n_flows`, `total_bytes`.
    #[pyo3(signature = (nodes, pattern, *, bytes=1.0, ranks_per_node=1, seed=0, flows=None))]
    #[allow(clippy::too_many_arguments)]
    fn demand<'py>(
        &self,
        py: Python<'py>,
        nodes: Vec<u32>,
        pattern: &str,
        bytes: f64,
        ranks_per_node: u32,
        seed: u64,
        flows: Option<Vec<(u32, u32, f64)>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let tr = traffic(pattern, bytes, ranks_per_node, seed, flows)?;
        let mut b = self.inner.builder();
        let dem = py.allow_threads(|| b.build(self.inner.router(), &nodes, &tr, true)).map_err(value_err)?;
        let out = PyDict::new(py);
        out.set_item("links", PyArray1::from_vec(py, dem.links.iter().map(|&x| x as i64).collect()))?;
        out.set_item("bytes", PyArray1::from_vec(py, dem.bytes.clone()))?;
        out.set_item("flows", PyArray1::from_vec(py, dem.flows.iter().map(|&x| x as i64).collect()))?;
        out.set_item("ports", PyArray1::from_vec(py, dem.ports.iter().map(|&x| x as i64).collect()))?;
        out.set_item("t_ideal", dem.t_ideal)?;
        out.set_item("t_alone", dem.t_alone)?;
        out.set_item("placement_penalty", dem.placement_penalty())?;
        out.set_item("n_flows", dem.n_flows)?;
        out.set_item("total_bytes", dem.total_bytes)?;
        Ok(out)
    }

    /// Evaluate co-running jobs in steady state. Each job is a dict with `nodes` (list of
    /// node ids) and optionally `pattern` (default "none"), `bytes` (1.0),
    /// `ranks_per_node` (1), `seed` (0), `service_level` (0), `phi` (1.0), `latency` (0.0: the
    /// latency fraction queueing stretches), `flows`
    /// (explicit rank-level (src, dst, bytes) triples instead of a pattern). Returns a dict:
    /// `jobs` (one dict per job), `hot_links` (list of (link, load, capacity)),
    /// `shared_links`, `rounds`.
    fn evaluate<'py>(&self, py: Python<'py>, jobs: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyDict>> {
        let mut specs = Vec::with_capacity(jobs.len());
        for (i, item) in jobs.iter().enumerate() {
            let d = item.downcast::<PyDict>().map_err(|_| PyValueError::new_err(format!("job {i}: expected a dict")))?;
            let get = |k: &str| d.get_item(k);
            let nodes: Vec<u32> = match get("nodes")? {
                Some(v) => v.extract().map_err(|_| PyValueError::new_err(format!("job {i}: 'nodes' must be a list of node ids")))?,
                None => return Err(PyValueError::new_err(format!("job {i}: 'nodes' is missing"))),
            };
            let pattern: String = get("pattern")?.map(|v| v.extract()).transpose()?.unwrap_or_else(|| "none".into());
            let bytes: f64 = get("bytes")?.map(|v| v.extract()).transpose()?.unwrap_or(1.0);
            let ppn: u32 = get("ranks_per_node")?.map(|v| v.extract()).transpose()?.unwrap_or(1);
            let seed: u64 = get("seed")?.map(|v| v.extract()).transpose()?.unwrap_or(0);
            let sl: u32 = get("service_level")?.map(|v| v.extract()).transpose()?.unwrap_or(0);
            let phi: f64 = get("phi")?.map(|v| v.extract()).transpose()?.unwrap_or(1.0);
            let latency: f64 = get("latency")?.map(|v| v.extract()).transpose()?.unwrap_or(0.0);
            let flows: Option<Vec<(u32, u32, f64)>> = match get("flows")? {
                Some(v) if !v.is_none() => Some(v.extract()?),
                _ => None,
            };
            let tr = traffic(&pattern, bytes, ppn, seed, flows).map_err(|e| PyValueError::new_err(format!("job {i}: {e}")))?;
            specs.push(JobSpec { nodes, traffic: tr, service_level: sl, phi, latency });
        }
        let net = &self.inner;
        let ev = py.allow_threads(|| net.evaluate(&specs)).map_err(value_err)?;
        let out = PyDict::new(py);
        let list = PyList::empty(py);
        for j in &ev.jobs {
            let d = PyDict::new(py);
            d.set_item("flows", j.flows)?;
            d.set_item("bytes", j.bytes)?;
            d.set_item("t_ideal", j.t_ideal)?;
            d.set_item("t_alone", j.t_alone)?;
            d.set_item("t_shared", j.t_shared)?;
            d.set_item("placement_penalty", j.placement_penalty)?;
            d.set_item("x", j.x)?;
            d.set_item("comm_slowdown", j.comm_slowdown)?;
            d.set_item("phibar", j.phibar)?;
            d.set_item("slowdown", j.slowdown)?;
            d.set_item("slowdown_vs_ideal", j.slowdown_vs_ideal)?;
            d.set_item("queue_wait", j.queue_wait)?;
            d.set_item("queueing", j.queueing)?;
            d.set_item("links_used", j.links_used)?;
            d.set_item("inter_switch_links", j.inter_switch_links)?;
            d.set_item("links_shared", j.links_shared)?;
            d.set_item("hot_links", j.hot_links)?;
            d.set_item("shared_with", j.shared_with.clone())?;
            list.append(d)?;
        }
        out.set_item("jobs", list)?;
        out.set_item("hot_links", ev.hot_links.clone())?;
        out.set_item("shared_links", ev.shared_links)?;
        out.set_item("rounds", ev.rounds)?;
        out.set_item("filling", if ev.progressive { "progressive" } else { "steady" })?;
        Ok(out)
    }

    fn __repr__(&self) -> String {
        let c = self.inner.config();
        format!(
            "NetworkModel(topology={:?}, links={}, bandwidth=({}, {}, {}), fairness={:?}, sl_weights={:?})",
            self.inner.topology().name(),
            self.inner.links().len(),
            c.bandwidth.host,
            c.bandwidth.leaf,
            c.bandwidth.core,
            c.fairness.name(),
            c.sl_weights
        )
    }
}

impl NetworkModel {
    fn check_link(&self, link: u32) -> PyResult<()> {
        let n = self.inner.links().len();
        if link as usize >= n {
            return Err(PyValueError::new_err(format!("link ids must be below {n}")));
        }
        Ok(())
    }
}

fn column<'a, T: numpy::Element + Copy>(a: &'a Option<PyReadonlyArray1<'_, T>>, name: &str, n: usize) -> PyResult<Option<&'a [T]>> {
    match a {
        None => Ok(None),
        Some(a) => {
            let s = a.as_slice().map_err(|_| PyValueError::new_err(format!("{name} must be a contiguous array")))?;
            if s.len() != n {
                return Err(PyValueError::new_err(format!("{name} has {} values for {n} jobs", s.len())));
            }
            Ok(Some(s))
        }
    }
}

/// Turn on the network model's closed loop in a simulation (before its first step): each
/// job's progress then follows its predicted slowdown (docs/network.md). Per job row:
/// `pattern` indexes `patterns`; `phi` its communication fraction; optional `bytes`,
/// `ranks_per_node`, `seed`, `service_level` (defaults 1.0, 1, the row, 0).
#[pyfunction]
#[pyo3(signature = (
    simulation, patterns, pattern, phi, *, bytes=None, ranks_per_node=None, seed=None, service_level=None,
    reference="alone", bandwidth=(1.0, 1.0, 1.0), fairness="flows", sl_weights=None, overrun="run-on"
))]
#[allow(clippy::too_many_arguments)]
fn network_attach(
    simulation: &Bound<'_, Simulation>,
    patterns: Vec<String>,
    pattern: PyReadonlyArray1<'_, i64>,
    phi: PyReadonlyArray1<'_, f64>,
    bytes: Option<PyReadonlyArray1<'_, f64>>,
    ranks_per_node: Option<PyReadonlyArray1<'_, i64>>,
    seed: Option<PyReadonlyArray1<'_, i64>>,
    service_level: Option<PyReadonlyArray1<'_, i64>>,
    reference: &str,
    bandwidth: (f64, f64, f64),
    fairness: &str,
    sl_weights: Option<Vec<f64>>,
    overrun: &str,
) -> PyResult<()> {
    let kill_on_overrun = match overrun {
        "run-on" => false,
        "kill" => true,
        other => return Err(PyValueError::new_err(format!("overrun must be 'run-on' or 'kill', not {other:?}"))),
    };
    let cfg = net_config(bandwidth, fairness, sl_weights)?;
    let reference = Reference::parse(reference).map_err(value_err)?;
    let table = patterns.iter().map(|p| Pattern::parse(p)).collect::<Result<Vec<_>, _>>().map_err(value_err)?;
    let pat = pattern.as_slice().map_err(|_| PyValueError::new_err("pattern must be a contiguous array"))?;
    let n = pat.len();
    let phi = Some(phi);
    let phi = column(&phi, "phi", n)?.expect("given");
    let bytes = column(&bytes, "bytes", n)?;
    let ppn = column(&ranks_per_node, "ranks_per_node", n)?;
    let seed = column(&seed, "seed", n)?;
    let sl = column(&service_level, "service_level", n)?;
    let mut traffic = Vec::with_capacity(n);
    for i in 0..n {
        let bad = |what: &str, v: i64| PyValueError::new_err(format!("job row {i}: {what} out of range: {v}"));
        // a non-finite or huge demand made every sum over a link inf, and slowdowns NaN
        if let Some(b) = bytes {
            check_flow_bytes(b[i]).map_err(|e| PyValueError::new_err(format!("job row {i}: {e}")))?;
        }
        if !(0.0..=1.0).contains(&phi[i]) {
            return Err(PyValueError::new_err(format!("job row {i}: phi (the communication fraction) must be from 0 to 1, got {}", phi[i])));
        }
        traffic.push(JobTraffic {
            pattern: u16::try_from(pat[i]).map_err(|_| bad("pattern", pat[i]))?,
            bytes: bytes.map_or(1.0, |b| b[i]),
            ranks_per_node: ppn.map_or(Ok(1), |p| u32::try_from(p[i]).map_err(|_| bad("ranks_per_node", p[i])))?,
            seed: seed.map_or(Ok(i as u64), |s| u64::try_from(s[i]).map_err(|_| bad("seed", s[i])))?,
            phi: phi[i],
            service_level: sl.map_or(Ok(0), |s| u32::try_from(s[i]).map_err(|_| bad("service_level", s[i])))?,
        });
    }
    let mut sim = simulation.borrow_mut();
    let topo = sim.engine.topology().clone();
    let mut net = NetReplay::new(&topo, cfg, reference, table, traffic).map_err(value_err)?;
    net.set_kill_on_overrun(kill_on_overrun);
    sim.engine.set_network(net).map_err(|e| PyValueError::new_err(e.0))
}

/// Per-job results of the network model in job-row order (NaN / -1 for jobs that have not
/// ended): `time_alone_s`, `slowdown`, `links_shared`, `placement_penalty`, `p_rel`; and
/// `stats` (counters). None if the simulation runs without the network model.
#[pyfunction]
fn network_results<'py>(py: Python<'py>, simulation: &Bound<'py, Simulation>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let sim = simulation.borrow();
    let Some(net) = sim.engine.network() else { return Ok(None) };
    let n = sim.engine.jobs().len();
    let (mut alone, mut slow, mut shared, mut pen, mut prel) =
        (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for row in 0..n as u32 {
        match net.result(row) {
            Some(r) => {
                alone.push(r.time_alone_s);
                slow.push(r.slowdown);
                shared.push(r.links_shared as i64);
                pen.push(r.placement_penalty);
                prel.push(r.p_rel);
            }
            None => {
                alone.push(f64::NAN);
                slow.push(f64::NAN);
                shared.push(-1);
                pen.push(f64::NAN);
                prel.push(f64::NAN);
            }
        }
    }
    let d = PyDict::new(py);
    d.set_item("time_alone_s", PyArray1::from_vec(py, alone))?;
    d.set_item("slowdown", PyArray1::from_vec(py, slow))?;
    d.set_item("links_shared", PyArray1::from_vec(py, shared))?;
    d.set_item("placement_penalty", PyArray1::from_vec(py, pen))?;
    d.set_item("p_rel", PyArray1::from_vec(py, prel))?;
    let s = net.stats();
    let st = PyDict::new(py);
    for (k, v) in [
        ("starts", s.starts),
        ("ends", s.ends),
        ("on_network", s.on_network),
        ("flows_routed", s.flows_routed),
        ("solves", s.solves),
        ("solved_jobs", s.solved_jobs),
        ("rounds", s.rounds),
        ("end_moves", s.end_moves),
    ] {
        st.set_item(k, v)?;
    }
    d.set_item("stats", st)?;
    d.set_item("reference", net.reference().name())?;
    Ok(Some(d))
}

/// Add this file's classes and functions to the module.
/// The canonical name of a communication pattern as the core reads it (`Pattern::parse`:
/// `alltoall` -> `a2a`, `sub-a2a(4)` -> `sub-a2a:4`); ValueError with the core's reason
/// for what it refuses. Python checks and maps patterns through this, not a copy of the
/// parser's rules.
#[pyfunction]
fn pattern_name(text: &str) -> PyResult<String> {
    Ok(Pattern::parse(text).map_err(value_err)?.name())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NetworkModel>()?;
    m.add_function(wrap_pyfunction!(pattern_name, m)?)?;
    m.add_function(wrap_pyfunction!(network_attach, m)?)?;
    m.add_function(wrap_pyfunction!(network_results, m)?)?;
    m.add("PATTERNS", PATTERNS.to_vec())?;
    m.add("MAX_FLOW_BYTES", MAX_FLOW_BYTES)?;
    m.add("CATALYST_SL_WEIGHTS", CATALYST_SL_WEIGHTS.to_vec())?;
    Ok(())
}

//! A fabric's network model and the one-shot evaluation of a set of co-running jobs
//! (`toposched interfere`).

use super::demand::{Demand, DemandBuilder, Traffic};
use super::links::{Bandwidth, Links};
use super::progressive::{simulate, FlowSet};
use super::queueing::PairFlows;
use super::routing::{Route, Router};
use super::share::{dilation, Active, Fairness, Shared};
use crate::topology::Topology;

/// Settings of the network model.
#[derive(Clone, Debug, PartialEq)]
pub struct NetConfig {
    pub bandwidth: Bandwidth,
    pub fairness: Fairness,
    /// Weight of each service level (index = level). Default: one level of weight 1.
    pub sl_weights: Vec<f64>,
    /// How `evaluate` finds the per-flow shares (only `fairness=flows` is per-flow).
    pub filling: Filling,
}

/// Under `fairness=flows`: the steady-state job-level solve, or per-flow progressive
/// filling in time (`progressive`), where flows that finish early release their bandwidth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Filling {
    /// Progressive under `fairness=flows` when every job is at a level of the same weight
    /// (progressive filling has no service levels) and the jobs have at most
    /// [`PROGRESSIVE_AUTO_MAX_FLOWS`] flows (its cost grows with the square of the flows);
    /// the steady-state solve otherwise.
    #[default]
    Auto,
    Steady,
    Progressive,
}

impl Filling {
    pub fn parse(text: &str) -> Result<Filling, String> {
        match text {
            "auto" => Ok(Filling::Auto),
            "steady" => Ok(Filling::Steady),
            "progressive" => Ok(Filling::Progressive),
            other => Err(format!("filling must be 'auto', 'steady' or 'progressive', not {other:?}")),
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Filling::Auto => "auto",
            Filling::Steady => "steady",
            Filling::Progressive => "progressive",
        }
    }
}

/// Communication phases each job completes in a progressive evaluation (the first is not
/// measured): enough for the mean to settle on the random scenarios of the tests (a
/// job's iterations drift against each other's within two or three phases).
pub const PROGRESSIVE_ITERATIONS: u32 = 6;

/// Above this many flows, `filling=auto` keeps the steady-state solve: progressive filling
/// solves every flow at every flow end, about flows² · iterations work (4,000 flows: a few
/// seconds; docs/network.md).
pub const PROGRESSIVE_AUTO_MAX_FLOWS: u64 = 4_000;

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig { bandwidth: Bandwidth::default(), fairness: Fairness::Flows, sl_weights: vec![1.0], filling: Filling::Auto }
    }
}

/// Service-level weights of seed 003's Catalyst: SL 0:1 and 2:3 are 9:1 pairs, the high
/// pair gets 254 times the low pair: effective 2286:254:9:1.
pub const CATALYST_SL_WEIGHTS: [f64; 4] = [2286.0, 254.0, 9.0, 1.0];

impl NetConfig {
    pub fn check(&self) -> Result<(), String> {
        let b = self.bandwidth;
        for (name, v) in [("host", b.host), ("leaf", b.leaf), ("core", b.core)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name} link bandwidth must be a positive number, got {v}"));
            }
        }
        if self.sl_weights.is_empty() {
            return Err("at least one service level weight is needed".into());
        }
        if let Some(w) = self.sl_weights.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
            return Err(format!("service level weights must be positive numbers, got {w}"));
        }
        if self.filling == Filling::Progressive && self.fairness != Fairness::Flows {
            return Err(format!("filling=progressive is per-flow max-min: it needs fairness=flows, not {}", self.fairness.name()));
        }
        Ok(())
    }
    pub fn sl_weight(&self, level: u32) -> Result<f64, String> {
        self.sl_weights.get(level as usize).copied().ok_or_else(|| {
            format!("service level {level} is not defined ({} level(s): 0..{})", self.sl_weights.len(), self.sl_weights.len() - 1)
        })
    }
}

/// One fabric's links, routes and sharing rules.
#[derive(Clone, Debug)]
pub struct Network {
    topo: Topology,
    router: Router,
    config: NetConfig,
    /// Queueing delay (docs/network.md, "Queueing delay"): one packet's serialization time
    /// over a message's latency (MTU / link rate / message latency); 0 = off (default).
    packet_per_latency: f64,
}

/// A job of a one-shot evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    pub nodes: Vec<u32>,
    pub traffic: Traffic,
    pub service_level: u32,
    /// Fraction of the job's time alone spent communicating, in [0, 1].
    pub phi: f64,
    /// Fraction of its time alone spent on message latency (the job model's latency
    /// part), in [0, 1 - phi]: what queueing delay stretches.
    pub latency: f64,
}

/// What the model predicts for one job.
#[derive(Clone, Debug, PartialEq)]
pub struct JobResult {
    pub flows: u64,
    pub bytes: f64,
    pub t_ideal: f64,
    pub t_alone: f64,
    /// Communication time per iteration with the other jobs (`t_alone / x`).
    pub t_shared: f64,
    /// `t_alone / t_ideal`: what the placement itself costs.
    pub placement_penalty: f64,
    /// Relative communication speed (1 = as alone).
    pub x: f64,
    /// `1 / x`.
    pub comm_slowdown: f64,
    pub phibar: f64,
    /// Whole-job slowdown relative to alone on the same placement (duty-cycle corrected).
    pub slowdown: f64,
    /// Whole-job time relative to the ideal placement, alone and with the others.
    pub slowdown_vs_ideal: f64,
    /// Mean queueing wait per message the other jobs add, in packets, and what it adds to
    /// `slowdown` (`latency x wait x packet_per_latency`; both 0 with queueing off).
    pub queue_wait: f64,
    pub queueing: f64,
    pub links_used: usize,
    pub inter_switch_links: usize,
    pub links_shared: usize,
    pub hot_links: usize,
    /// Indices of the other jobs it shares at least one link with, ascending.
    pub shared_with: Vec<usize>,
}

/// Result of [`Network::evaluate`].
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    pub jobs: Vec<JobResult>,
    /// Links whose offered load exceeds capacity: (link, offered load, capacity).
    pub hot_links: Vec<(u32, f64, f64)>,
    /// Links used by two jobs or more.
    pub shared_links: usize,
    /// Solver rounds (with progressive filling, also the links it saturated).
    pub rounds: u64,
    /// Whether progressive filling gave the jobs' times (else the steady-state solve).
    pub progressive: bool,
}

impl Network {
    pub fn new(topo: &Topology, config: NetConfig) -> Result<Network, String> {
        config.check()?;
        let links = Links::new(topo, config.bandwidth);
        Ok(Network { topo: topo.clone(), router: Router::new(topo, links), config, packet_per_latency: 0.0 })
    }
    /// Turn the queueing delay on: `packet_per_latency` is one packet's serialization time
    /// over a message's latency (0 turns it off).
    pub fn with_queueing(mut self, packet_per_latency: f64) -> Result<Network, String> {
        if !(packet_per_latency.is_finite() && packet_per_latency >= 0.0) {
            return Err(format!("packet_per_latency must be a finite number >= 0, got {packet_per_latency}"));
        }
        self.packet_per_latency = packet_per_latency;
        Ok(self)
    }
    pub fn packet_per_latency(&self) -> f64 {
        self.packet_per_latency
    }
    fn queueing_on(&self) -> bool {
        self.packet_per_latency > 0.0
    }
    pub fn topology(&self) -> &Topology {
        &self.topo
    }
    pub fn links(&self) -> &Links {
        self.router.links()
    }
    pub fn router(&self) -> &Router {
        &self.router
    }
    pub fn config(&self) -> &NetConfig {
        &self.config
    }
    /// The D-mod-k route between two nodes.
    pub fn route(&self, s: u32, d: u32) -> Route {
        self.router.route(s, d)
    }
    pub fn link_name(&self, link: u32) -> String {
        self.links().name(link, &self.topo)
    }
    pub fn builder(&self) -> DemandBuilder {
        DemandBuilder::new(self.links().len())
    }
    /// A job's per-link demand.
    pub fn demand(&self, builder: &mut DemandBuilder, nodes: &[u32], traffic: &Traffic) -> Result<Demand, String> {
        builder.build(&self.router, nodes, traffic, self.config.fairness == Fairness::Ports || self.queueing_on())
    }
    /// An empty sharing state with this fabric's capacities.
    pub fn shared(&self) -> Shared {
        let l = self.links();
        Shared::with_levels(
            (0..l.len() as u32).map(|x| l.capacity(x)).collect(),
            self.config.sl_weights.clone(),
            self.config.fairness == Fairness::Jobs,
        )
    }
    /// The job's claim/demand record on the network.
    pub fn active(&self, dem: &Demand, service_level: u32, phi: f64) -> Result<Active, String> {
        self.config.sl_weight(service_level)?;
        let l = self.links();
        Ok(Active::from_demand(dem, |x| l.is_inter_switch(x), self.config.fairness, service_level, phi))
    }

    /// [`Network::active`] with the queueing data when queueing is on (the job's per-flow
    /// load alone on its links: one water filling of its flows).
    pub fn active_queued(&self, dem: &Demand, service_level: u32, phi: f64, nodes: &[u32], traffic: &Traffic) -> Result<Active, String> {
        let mut a = self.active(dem, service_level, phi)?;
        if self.queueing_on() && !a.links.is_empty() {
            let l = self.links();
            let cap: Vec<f64> = (0..l.len() as u32).map(|x| l.capacity(x)).collect();
            let rho1 = super::queueing::flow_loads(&self.router, &cap, nodes, traffic, &dem.links)?;
            a.set_queueing(dem, &rho1);
        }
        Ok(a)
    }

    /// Whether `evaluate` uses progressive filling for these jobs (see [`Filling`]).
    /// `flows` is the jobs' number of flows leaving their nodes.
    pub fn progressive_for(&self, jobs: &[JobSpec], flows: u64) -> Result<bool, String> {
        let c = &self.config;
        let one_weight = {
            let mut w = jobs.iter().map(|j| self.config.sl_weight(j.service_level));
            match w.next() {
                None => true,
                Some(first) => {
                    let first = first?;
                    w.try_fold(true, |same, x| Ok::<bool, String>(same && x? == first))?
                }
            }
        };
        match c.filling {
            Filling::Steady => Ok(false),
            Filling::Auto => Ok(c.fairness == Fairness::Flows && one_weight && flows <= PROGRESSIVE_AUTO_MAX_FLOWS),
            Filling::Progressive if one_weight => Ok(true),
            Filling::Progressive => Err("filling=progressive has no service levels: the jobs are at levels of different weights (use filling=steady or auto)".into()),
        }
    }

    /// Evaluate jobs running together (steady-state solve or progressive filling). Node lists must not overlap.
    pub fn evaluate(&self, jobs: &[JobSpec]) -> Result<Evaluation, String> {
        let n = self.topo.n_nodes();
        let mut owner = vec![usize::MAX; n];
        for (i, j) in jobs.iter().enumerate() {
            if !(j.phi.is_finite() && (0.0..=1.0).contains(&j.phi)) {
                return Err(format!("job {i}: phi must be in [0, 1], got {}", j.phi));
            }
            if !(j.latency.is_finite() && j.latency >= 0.0 && j.phi + j.latency <= 1.0 + 1e-9) {
                return Err(format!("job {i}: latency must be in [0, 1 - phi], got {} (phi {})", j.latency, j.phi));
            }
            for &x in &j.nodes {
                if x as usize >= n {
                    return Err(format!("job {i}: node {x} is not on the fabric ({n} nodes)"));
                }
                if owner[x as usize] != usize::MAX {
                    let o = owner[x as usize];
                    return Err(if o == i {
                        format!("job {i}: node {x} is listed twice")
                    } else {
                        format!("job {i}: node {x} is already used by job {o}")
                    });
                }
                owner[x as usize] = i;
            }
        }
        let mut builder = self.builder();
        let mut shared = self.shared();
        let mut demands = Vec::with_capacity(jobs.len());
        let mut slots = Vec::with_capacity(jobs.len());
        for (i, j) in jobs.iter().enumerate() {
            let dem = self.demand(&mut builder, &j.nodes, &j.traffic).map_err(|e| format!("job {i}: {e}"))?;
            let act = self.active_queued(&dem, j.service_level, j.phi, &j.nodes, &j.traffic).map_err(|e| format!("job {i}: {e}"))?;
            slots.push(shared.insert(act));
            demands.push(dem);
        }
        let comp = shared.component(&slots);
        if !comp.is_empty() {
            shared.solve(&comp);
        }
        if self.queueing_on() {
            // the jobs' loads among each other: one per-flow max-min of all their flows
            let l = self.links();
            let cap: Vec<f64> = (0..l.len() as u32).map(|x| l.capacity(x)).collect();
            let mut pf = PairFlows::new(cap);
            for j in jobs {
                pf.add_job(&self.router, &j.nodes, &j.traffic)?;
            }
            let rate = pf.rates();
            let mut scratch = vec![0.0; l.len()];
            for (i, &slot) in slots.iter().enumerate() {
                let load = pf.loads(i, &rate, &shared.get(slot).links, &mut scratch);
                shared.set_loads(slot, &load);
            }
        }
        shared.update_waits(&slots);
        let n_flows: u64 = demands.iter().map(|d: &Demand| d.n_flows).sum();
        let timing = if self.progressive_for(jobs, n_flows)? {
            let l = self.links();
            let mut fs = FlowSet::new((0..l.len() as u32).map(|x| l.capacity(x)).collect());
            for j in jobs {
                let k = fs.add_job(j.phi);
                fs.add_traffic(&self.router, k, &j.nodes, &j.traffic)?;
            }
            match simulate(&fs, PROGRESSIVE_ITERATIONS) {
                Ok(t) => Some(t),
                // auto falls back to the steady solve; an explicit choice says why it cannot
                Err(_) if self.config.filling == Filling::Auto => None,
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        let slot_to_job: std::collections::BTreeMap<u32, usize> = slots.iter().enumerate().map(|(i, &s)| (s, i)).collect();
        let mut out = Vec::with_capacity(jobs.len());
        for (i, j) in jobs.iter().enumerate() {
            let dem = &demands[i];
            let a = shared.get(slots[i]);
            let (x, phibar) = (a.x, a.phibar);
            let mut with: Vec<usize> = Vec::new();
            for &l in &a.links {
                for &o in shared.jobs_on(l) {
                    if o != slots[i] {
                        with.push(slot_to_job[&o]);
                    }
                }
            }
            with.sort_unstable();
            with.dedup();
            // steady state: the job-level solve and the duty-cycle correction; progressive:
            // the simulated times (phibar is then not used: the quiet phases are simulated)
            let (t_alone, t_shared, x, phibar, slow) = match &timing {
                Some(t) if t.t_alone[i] > 0.0 => (t.t_alone[i], t.t_shared[i], t.x(i), 1.0, t.slowdown(i)),
                Some(_) => (dem.t_alone, dem.t_alone, 1.0, 1.0, 1.0),
                None => (dem.t_alone, dem.t_alone / x, x, phibar, dilation(j.phi, x, phibar)),
            };
            // the latency part stretched by the queueing the other jobs add on its links
            let queueing = j.latency * a.wait * self.packet_per_latency;
            let p = if dem.t_ideal > 0.0 { t_alone / dem.t_ideal } else { 1.0 };
            out.push(JobResult {
                flows: dem.n_flows,
                bytes: dem.total_bytes,
                t_ideal: dem.t_ideal,
                t_alone,
                t_shared,
                placement_penalty: p,
                x,
                comm_slowdown: 1.0 / x,
                phibar,
                slowdown: slow + queueing,
                slowdown_vs_ideal: (1.0 - j.phi) + j.phi * p * (1.0 + (1.0 / x - 1.0) * phibar) + queueing,
                queue_wait: a.wait,
                queueing,
                links_used: dem.links.len(),
                inter_switch_links: a.links.len(),
                links_shared: a.shared_now as usize,
                hot_links: shared.hot_links_of(slots[i]),
                shared_with: with,
            });
        }
        let mut hot = Vec::new();
        let mut n_shared = 0;
        for l in 0..shared.n_links() as u32 {
            if shared.jobs_on(l).len() >= 2 {
                n_shared += 1;
            }
            if shared.is_hot(l) {
                hot.push((l, shared.load(l), shared.capacity(l)));
            }
        }
        let rounds = shared.rounds + timing.as_ref().map_or(0, |t| t.rounds);
        Ok(Evaluation { jobs: out, hot_links: hot, shared_links: n_shared, rounds, progressive: timing.is_some() })
    }
}

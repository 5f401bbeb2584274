//! The set of jobs on the network and how they share it: per-link offered load, the jobs
//! on each link, hot-link components, and the solve (fair bottleneck + duty cycle).
//!
//! Both the one-shot evaluation (`model::Network::evaluate`) and the replay
//! (`replay::NetReplay`) use this, so a scenario evaluated alone and the same jobs met in a
//! replay get the same numbers.
//!
//! Only links between switches are tracked: a node link carries one job's traffic and, by
//! the normalisation of demands, never more than its capacity.

use super::demand::Demand;
use super::solver::{Problem, Solver, EPS};

/// Fairness unit on a shared link (the `kappa` of the research note §3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fairness {
    /// A job's claim on a link is its number of flows there (default; closest to a
    /// per-flow max-min flow-level simulator such as SimGrid's).
    Flows,
    /// Its number of distinct input ports there (a guess at per-input-port arbitration of
    /// InfiniBand switches).
    Ports,
    /// One claim per job, on every link the job shares with another job, hot or not:
    /// SimGrid's ptask_L07 fair-bottleneck solver (Batsim's parallel tasks), which lets
    /// every shared link offer each live task `remaining / tasks` per round.
    Jobs,
    /// One claim per job on hot links only: job-level weighted max-min (progressive
    /// filling), without the ptask heuristic's binding of cold shared links.
    JobMaxMin,
}

impl Fairness {
    pub fn parse(text: &str) -> Result<Fairness, String> {
        match text {
            "flows" | "flow" => Ok(Fairness::Flows),
            "ports" | "port" => Ok(Fairness::Ports),
            "jobs" | "job" | "ptask" => Ok(Fairness::Jobs),
            "job-maxmin" => Ok(Fairness::JobMaxMin),
            other => Err(format!("fairness must be 'flows', 'ports', 'jobs' or 'job-maxmin', not {other:?}")),
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Fairness::Flows => "flows",
            Fairness::Ports => "ports",
            Fairness::Jobs => "jobs",
            Fairness::JobMaxMin => "job-maxmin",
        }
    }
}

/// A job on the network: its inter-switch links with demand at full speed and claim.
#[derive(Clone, Debug, Default)]
pub struct Active {
    /// Inter-switch links, ascending.
    pub links: Vec<u32>,
    /// Demand on each link at x = 1 (bytes per iteration / time alone).
    pub d: Vec<f64>,
    /// Claim `kappa` (fairness unit) on each link.
    pub claim: Vec<f64>,
    /// Service level (virtual lane); its weight is the fabric's.
    pub level: u32,
    /// Communication fraction (duty cycle) of the job.
    pub phi: f64,
    /// Relative communication speed from the last solve (1 = as alone).
    pub x: f64,
    /// Demand-weighted duty cycle of the competitors on its hot links (1 if none).
    pub phibar: f64,
    /// Links currently shared with at least one other job, and the most ever.
    pub shared_now: u32,
    pub shared_max: u32,
    /// Queueing (docs/network.md, "Queueing delay"; empty when the model has it off): on
    /// each link, the share of the job's messages crossing it (`bytes_l / total bytes`),
    /// its load alone at per-flow max-min rates (over capacity), and the input ports its
    /// flows enter the link's switch by.
    pub msg: Vec<f64>,
    pub rho1: Vec<f64>,
    pub inputs: Vec<f64>,
    /// Its load on each link among the other jobs (per-flow max-min rates of every job's
    /// flows together, over capacity); `rho1` until [`Shared::set_loads`] sets it.
    pub rho: Vec<f64>,
    /// Mean wait per message added by the other jobs, in packets (from [`Shared::update_waits`]).
    pub wait: f64,
}

impl Active {
    /// Build from a demand: keep links between switches, normalise by the time alone.
    pub fn from_demand(dem: &Demand, is_inter_switch: impl Fn(u32) -> bool, fairness: Fairness, level: u32, phi: f64) -> Active {
        let mut a = Active { phi, x: 1.0, phibar: 1.0, level, ..Active::default() };
        if dem.t_alone <= 0.0 {
            return a;
        }
        for k in 0..dem.links.len() {
            let l = dem.links[k];
            if !is_inter_switch(l) {
                continue;
            }
            let kappa = match fairness {
                Fairness::Flows => dem.flows[k] as f64,
                Fairness::Ports => dem.ports[k].max(1) as f64,
                Fairness::Jobs | Fairness::JobMaxMin => 1.0,
            };
            a.links.push(l);
            a.d.push(dem.bytes[k] / dem.t_alone);
            a.claim.push(kappa);
        }
        a
    }

    /// Attach what the queueing term needs: `rho1[k]` is the job's per-flow load alone on
    /// `links[k]` of the demand (all its links, node links included), as `flow_loads`
    /// gives it; kept for the inter-switch links this job keeps.
    pub fn set_queueing(&mut self, dem: &Demand, rho1: &[f64]) {
        self.msg.clear();
        self.rho1.clear();
        self.inputs.clear();
        self.rho.clear();
        if dem.total_bytes <= 0.0 {
            return;
        }
        let mut k = 0;
        for &l in &self.links {
            while dem.links[k] != l {
                k += 1;
            }
            self.msg.push(dem.bytes[k] / dem.total_bytes);
            self.rho1.push(rho1[k]);
            self.inputs.push(dem.ports[k].max(1) as f64);
        }
        self.rho.clone_from(&self.rho1);
    }

    /// Slowdown of the whole job relative to running alone on its placement, with the
    /// duty-cycle correction: `(1 - phi) + phi · (1 + (1/x - 1) · phibar)`.
    pub fn dilation(&self) -> f64 {
        dilation(self.phi, self.x, self.phibar)
    }
}

/// `(1 - phi) + phi · (1 + (1/x - 1) · phibar)` (research note §2.3 / §3.1).
pub fn dilation(phi: f64, x: f64, phibar: f64) -> f64 {
    (1.0 - phi) + phi * (1.0 + (1.0 / x - 1.0) * phibar)
}

/// The jobs on the network, by slot.
#[derive(Clone, Debug)]
pub struct Shared {
    cap: Vec<f64>,
    /// Weight of each service level.
    level_weight: Vec<f64>,
    /// Links shared by two jobs bind even when not oversubscribed (`Fairness::Jobs`,
    /// SimGrid's ptask solver); otherwise only hot links do.
    shared_links_bind: bool,
    load: Vec<f64>,
    on_link: Vec<Vec<u32>>,
    jobs: Vec<Option<Active>>,
    free: Vec<u32>,
    // scratch
    mark: Vec<u32>,
    mark_gen: u32,
    local: Vec<u32>,
    local_gen: Vec<u32>,
    problem: Problem,
    solver: Solver,
    x: Vec<f64>,
    sum_d: Vec<f64>,
    sum_dphi: Vec<f64>,
    /// Statistics: solves, jobs solved, rounds.
    pub solves: u64,
    pub solved_jobs: u64,
    pub rounds: u64,
}

impl Shared {
    /// `cap[l]` is the capacity of link l; one service level of weight 1; hot links bind.
    pub fn new(cap: Vec<f64>) -> Shared {
        Shared::with_levels(cap, vec![1.0], false)
    }

    /// `level_weight[s]` is the weight of service level s; with `shared_links_bind`, every
    /// link used by two jobs or more is a constraint (SimGrid's ptask solver).
    pub fn with_levels(cap: Vec<f64>, level_weight: Vec<f64>, shared_links_bind: bool) -> Shared {
        let n = cap.len();
        Shared {
            cap,
            level_weight,
            shared_links_bind,
            load: vec![0.0; n],
            on_link: vec![Vec::new(); n],
            jobs: Vec::new(),
            free: Vec::new(),
            mark: Vec::new(),
            mark_gen: 0,
            local: vec![0; n],
            local_gen: vec![0; n],
            problem: Problem::default(),
            solver: Solver::default(),
            x: Vec::new(),
            sum_d: Vec::new(),
            sum_dphi: Vec::new(),
            solves: 0,
            solved_jobs: 0,
            rounds: 0,
        }
    }

    #[inline]
    pub fn is_hot(&self, l: u32) -> bool {
        self.load[l as usize] > self.cap[l as usize] * (1.0 + EPS)
    }
    /// Whether link l is a constraint of the solve: hot, or shared when shared links bind.
    #[inline]
    pub fn binds(&self, l: u32) -> bool {
        self.is_hot(l) || (self.shared_links_bind && self.on_link[l as usize].len() >= 2)
    }
    pub fn load(&self, l: u32) -> f64 {
        self.load[l as usize]
    }
    pub fn capacity(&self, l: u32) -> f64 {
        self.cap[l as usize]
    }
    pub fn jobs_on(&self, l: u32) -> &[u32] {
        &self.on_link[l as usize]
    }
    pub fn get(&self, slot: u32) -> &Active {
        self.jobs[slot as usize].as_ref().expect("live slot")
    }
    pub fn n_links(&self) -> usize {
        self.cap.len()
    }

    /// Put a job on the network; returns its slot. Loads and shared-link counts follow.
    pub fn insert(&mut self, a: Active) -> u32 {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.jobs.push(None);
                self.mark.push(0);
                (self.jobs.len() - 1) as u32
            }
        };
        let mut a = a;
        a.shared_now = 0;
        for k in 0..a.links.len() {
            let l = a.links[k] as usize;
            self.load[l] += a.d[k];
            let on = &mut self.on_link[l];
            if on.len() == 1 {
                let other = on[0] as usize;
                let o = self.jobs[other].as_mut().expect("live slot");
                o.shared_now += 1;
                o.shared_max = o.shared_max.max(o.shared_now);
            }
            if !on.is_empty() {
                a.shared_now += 1;
            }
            on.push(slot);
        }
        a.shared_max = a.shared_max.max(a.shared_now);
        self.jobs[slot as usize] = Some(a);
        slot
    }

    /// Take a job off the network.
    pub fn remove(&mut self, slot: u32) -> Active {
        let a = self.jobs[slot as usize].take().expect("live slot");
        for k in 0..a.links.len() {
            let l = a.links[k] as usize;
            self.load[l] -= a.d[k];
            let on = &mut self.on_link[l];
            if let Some(p) = on.iter().position(|&s| s == slot) {
                on.swap_remove(p);
            }
            if on.is_empty() {
                self.load[l] = 0.0; // no drift on an idle link
            } else if on.len() == 1 {
                let other = on[0] as usize;
                self.jobs[other].as_mut().expect("live slot").shared_now -= 1;
            }
        }
        self.free.push(slot);
        a
    }

    /// Jobs on the binding links of `slot` (other than itself), appended to `out`.
    pub fn hot_neighbours(&self, slot: u32, out: &mut Vec<u32>) {
        let a = self.get(slot);
        for &l in &a.links {
            if self.binds(l) {
                out.extend(self.on_link[l as usize].iter().copied().filter(|&s| s != slot));
            }
        }
    }

    /// All jobs reachable from `seeds` through binding links (seeds included), ascending.
    pub fn component(&mut self, seeds: &[u32]) -> Vec<u32> {
        self.mark_gen = self.mark_gen.wrapping_add(1);
        if self.mark_gen == 0 {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.mark_gen = 1;
        }
        let g = self.mark_gen;
        let mut out = Vec::new();
        let mut stack: Vec<u32> = Vec::new();
        for &s in seeds {
            if self.jobs[s as usize].is_some() && self.mark[s as usize] != g {
                self.mark[s as usize] = g;
                stack.push(s);
            }
        }
        while let Some(s) = stack.pop() {
            out.push(s);
            let a = self.jobs[s as usize].as_ref().expect("live slot");
            for &l in &a.links {
                if self.binds(l) {
                    for &o in &self.on_link[l as usize] {
                        if self.mark[o as usize] != g {
                            self.mark[o as usize] = g;
                            stack.push(o);
                        }
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Solve the jobs of `comp` (a union of whole components): set their `x` and `phibar`.
    pub fn solve(&mut self, comp: &[u32]) {
        self.solves += 1;
        self.solved_jobs += comp.len() as u64;
        let gen = self.solves as u32;
        let shared_links_bind = self.shared_links_bind;
        let p = &mut self.problem;
        p.clear();
        p.level_weight.clear();
        p.level_weight.extend_from_slice(&self.level_weight);
        self.sum_d.clear();
        self.sum_dphi.clear();
        for &s in comp {
            let a = self.jobs[s as usize].as_ref().expect("live slot");
            for k in 0..a.links.len() {
                let l = a.links[k] as usize;
                let hot = self.load[l] > self.cap[l] * (1.0 + EPS);
                if !(hot || (shared_links_bind && self.on_link[l].len() >= 2)) {
                    continue;
                }
                if self.local_gen[l] != gen {
                    self.local_gen[l] = gen;
                    self.local[l] = p.cap.len() as u32;
                    p.cap.push(self.cap[l]);
                    self.sum_d.push(0.0);
                    self.sum_dphi.push(0.0);
                }
                let ll = self.local[l];
                p.push_entry(ll, a.d[k], a.claim[k]);
                self.sum_d[ll as usize] += a.d[k];
                self.sum_dphi[ll as usize] += a.d[k] * a.phi;
            }
            p.end_job_at(a.level);
        }
        self.solver.solve(p, &mut self.x);
        self.rounds += self.solver.rounds as u64;
        for (i, &s) in comp.iter().enumerate() {
            let (mut num, mut den, mut all) = (0.0, 0.0, 0.0);
            let phi = self.jobs[s as usize].as_ref().expect("live slot").phi;
            for e in p.off[i]..p.off[i + 1] {
                let ll = p.link[e] as usize;
                den += self.sum_d[ll] - p.d[e];
                num += self.sum_dphi[ll] - p.d[e] * phi;
                all += self.sum_d[ll];
            }
            let a = self.jobs[s as usize].as_mut().expect("live slot");
            a.x = self.x[i];
            // the competitors' demand against all the demand on these links, not against
            // an absolute number: demands are in bandwidth units (bytes over the time
            // alone), so a fixed threshold changed the answer with the unit (a uniform
            // bandwidth of 1e-12 read every competitor as none); below EPS of the whole
            // it is the subtraction's rounding, not a competitor
            a.phibar = if den > EPS * all { (num / den).clamp(0.0, 1.0) } else { 1.0 };
        }
    }

    /// Set the queueing wait of every job in `slots` from the current solve: on each of
    /// its links, the M/D/1 wait at the utilization of every job there (each at its load
    /// `rho` among the others times its duty cycle `phi / dilation`), bounded by the input
    /// ports feeding the link, minus the wait it would meet alone (its load alone `rho1`
    /// times `phi`); the mean over its messages (docs/network.md, "Queueing delay"). A job
    /// without queueing data gets 0.
    pub fn update_waits(&mut self, slots: &[u32]) {
        for &s in slots {
            let a = self.jobs[s as usize].as_ref().expect("live slot");
            let mut wait = 0.0;
            if !a.msg.is_empty() {
                for k in 0..a.links.len() {
                    let l = a.links[k];
                    let (mut rho, mut inputs) = (0.0, 0.0);
                    for &o in &self.on_link[l as usize] {
                        let b = self.jobs[o as usize].as_ref().expect("live slot");
                        if b.rho1.is_empty() {
                            continue;
                        }
                        let m = b.links.binary_search(&l).expect("a job is on its own links");
                        rho += b.rho[m] * b.phi / b.dilation();
                        inputs += b.inputs[m];
                    }
                    let alone = super::queueing::md1_wait(a.rho1[k] * a.phi, a.inputs[k]);
                    let together = super::queueing::md1_wait(rho, inputs);
                    wait += a.msg[k] * (together - alone).max(0.0);
                }
            }
            self.jobs[s as usize].as_mut().expect("live slot").wait = wait;
        }
    }

    /// Set a job's loads among the others (`load[k]` on its `links[k]`); ignored for a
    /// job without queueing data.
    pub fn set_loads(&mut self, slot: u32, load: &[f64]) {
        let a = self.jobs[slot as usize].as_mut().expect("live slot");
        if !a.rho.is_empty() {
            a.rho.copy_from_slice(load);
        }
    }

    /// Hot links of a job.
    pub fn hot_links_of(&self, slot: u32) -> usize {
        self.get(slot).links.iter().filter(|&&l| self.is_hot(l)).count()
    }
}

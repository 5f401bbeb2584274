//! The network model inside a replay: a running job's progress follows its current
//! slowdown, and its end moves when the jobs around it change (docs/network.md, "Closed
//! loop").
//!
//! A job's logged run time `R` is its time alone on a *reference* placement. It splits
//! into computation and communication with its communication fraction `phi`. On its
//! actual placement, with the other jobs, it progresses at
//!
//! ```text
//! rate = 1 / ((1 - phi) + phi · p_rel · (1 + (1/x - 1) · phibar))      logged seconds per second
//! ```
//!
//! where `p_rel` is its placement penalty relative to the reference ([`Reference`]), `x`
//! its communication speed from the fair-bottleneck solve and `phibar` its competitors'
//! duty cycle. Its time alone is `R / rate(x = 1)`; it ends when `R` logged seconds are
//! done (at the next whole second, as every time in the replay), or at its limit.
//!
//! The engine calls [`NetReplay::on_start`] when a job starts, [`NetReplay::on_end`] when
//! one ends, and [`NetReplay::flush`] once per instant after the scheduling pass; `flush`
//! re-solves only the jobs joined by oversubscribed links to the ones that started or
//! ended, settles their progress, and returns the end times that moved.

use std::collections::BTreeMap;

use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::demand::{DemandBuilder, Traffic};
use super::model::{NetConfig, Network};
use super::patterns::Pattern;
use super::share::{Active, Shared};
use crate::topology::Topology;
use crate::workload::Job;

/// What placement a job's logged run time refers to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reference {
    /// Its own placement in this replay: only interference stretches it (default).
    Alone,
    /// The ideal placement (injection bound): a scattered placement also stretches it.
    Ideal,
    /// A uniformly random placement of the same size on the empty machine (mean penalty of
    /// `samples` draws): a compact placement can make it faster than logged.
    Random { samples: u32 },
}

impl Reference {
    pub fn parse(text: &str) -> Result<Reference, String> {
        match text {
            "alone" => Ok(Reference::Alone),
            "ideal" => Ok(Reference::Ideal),
            "random" => Ok(Reference::Random { samples: 4 }),
            other => Err(format!("reference must be 'alone', 'ideal' or 'random', not {other:?}")),
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Reference::Alone => "alone",
            Reference::Ideal => "ideal",
            Reference::Random { .. } => "random",
        }
    }
}

/// The traffic of one job row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobTraffic {
    /// Index into the pattern table.
    pub pattern: u16,
    pub bytes: f64,
    pub ranks_per_node: u32,
    pub seed: u64,
    pub phi: f64,
    pub service_level: u32,
}

/// Per-job results of the closed loop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobNetResult {
    /// Whole job alone on its placement, in seconds (`R / rate(x = 1)`).
    pub time_alone_s: f64,
    /// Time it ran over its time alone for the work it did (1 = never slowed).
    pub slowdown: f64,
    /// Most links it shared with other jobs at once.
    pub links_shared: u32,
    /// Its placement penalty `t_alone / t_ideal` and the factor relative to the reference.
    pub placement_penalty: f64,
    pub p_rel: f64,
}

/// Counters of the closed loop (for benchmarks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayStats {
    pub starts: u64,
    pub ends: u64,
    /// Jobs that touched links between switches.
    pub on_network: u64,
    pub flows_routed: u64,
    pub solves: u64,
    pub solved_jobs: u64,
    pub rounds: u64,
    pub end_moves: u64,
}

const NONE: u32 = u32::MAX;
/// Work below this (logged seconds) counts as done.
const WORK_EPS: f64 = 1e-9;

#[derive(Clone, Copy, Debug)]
struct JobState {
    slot: u32,
    work: f64,
    rate: f64,
    r_alone: f64,
    t_last: i64,
    start: i64,
    fluid_end: f64,
    p: f64,
    p_rel: f64,
    stamp: u64,
    result: Option<JobNetResult>,
}

/// The network state of one replay.
pub struct NetReplay {
    net: Network,
    builder: DemandBuilder,
    shared: Shared,
    patterns: Vec<Pattern>,
    traffic: Vec<JobTraffic>,
    reference: Reference,
    kill_at_walltime: bool,
    /// Kill a job that the predicted slowdown pushes past its limit (`overrun=kill`);
    /// otherwise (default) it runs on, and only the log's own overrun is cut (its work
    /// is its limit, as without the model).
    kill_on_overrun: bool,
    walltime: Vec<i64>,
    /// Logged seconds of work: the log's run time, cut to the limit when jobs are killed
    /// at it and the log ran over.
    runtime: Vec<i64>,
    /// The log ran over the limit and jobs are killed at it.
    log_over: Vec<bool>,
    state: Vec<JobState>,
    slot_job: Vec<u32>,
    seeds: Vec<u32>,
    started: Vec<u32>,
    out: Vec<(u32, i64)>,
    ref_cache: BTreeMap<(u16, u32, u32, u64), f64>,
    flush_stamp: u64,
    stats: ReplayStats,
}

impl NetReplay {
    /// `traffic[row]` describes job row `row`; `patterns` is the table its `pattern`
    /// indexes. The engine binds it to its jobs ([`Engine::set_network`](crate::Engine::set_network)).
    pub fn new(
        topo: &Topology,
        config: NetConfig,
        reference: Reference,
        patterns: Vec<Pattern>,
        traffic: Vec<JobTraffic>,
    ) -> Result<NetReplay, String> {
        let net = Network::new(topo, config)?;
        if patterns.is_empty() || patterns.len() > u16::MAX as usize {
            return Err("the pattern table must have between 1 and 65535 patterns".into());
        }
        for (row, t) in traffic.iter().enumerate() {
            if t.pattern as usize >= patterns.len() {
                return Err(format!("job row {row}: pattern index {} is not in the table of {} patterns", t.pattern, patterns.len()));
            }
            if !(t.phi.is_finite() && (0.0..=1.0).contains(&t.phi)) {
                return Err(format!("job row {row}: phi must be in [0, 1], got {}", t.phi));
            }
            if !(t.bytes.is_finite() && t.bytes >= 0.0) {
                return Err(format!("job row {row}: bytes must be a finite number >= 0, got {}", t.bytes));
            }
            if t.ranks_per_node == 0 {
                return Err(format!("job row {row}: ranks_per_node must be at least 1"));
            }
            net.config().sl_weight(t.service_level).map_err(|e| format!("job row {row}: {e}"))?;
        }
        Ok(NetReplay {
            builder: net.builder(),
            shared: net.shared(),
            net,
            patterns,
            traffic,
            reference,
            kill_at_walltime: true,
            kill_on_overrun: false,
            walltime: Vec::new(),
            log_over: Vec::new(),
            runtime: Vec::new(),
            state: Vec::new(),
            slot_job: Vec::new(),
            seeds: Vec::new(),
            started: Vec::new(),
            out: Vec::new(),
            ref_cache: BTreeMap::new(),
            flush_stamp: 0,
            stats: ReplayStats::default(),
        })
    }

    /// Kill jobs that the predicted slowdown pushes past their limit (default: they run on).
    pub fn set_kill_on_overrun(&mut self, kill: bool) {
        self.kill_on_overrun = kill;
    }

    /// Take the jobs' run times and limits, and the engine's kill rule.
    pub(crate) fn bind(&mut self, jobs: &[Job], kill_at_walltime: bool) -> Result<(), String> {
        if jobs.len() != self.traffic.len() {
            return Err(format!("network traffic given for {} jobs, the workload has {}", self.traffic.len(), jobs.len()));
        }
        self.log_over = jobs.iter().map(|j| kill_at_walltime && j.runtime_s > j.walltime_s).collect();
        self.runtime = jobs.iter().map(|j| if kill_at_walltime { j.runtime_s.min(j.walltime_s) } else { j.runtime_s }).collect();
        self.walltime = jobs.iter().map(|j| j.walltime_s).collect();
        self.kill_at_walltime = kill_at_walltime;
        let blank = JobState {
            slot: NONE,
            work: 0.0,
            rate: 1.0,
            r_alone: 1.0,
            t_last: 0,
            start: 0,
            fluid_end: 0.0,
            p: 1.0,
            p_rel: 1.0,
            stamp: 0,
            result: None,
        };
        self.state = vec![blank; jobs.len()];
        Ok(())
    }

    pub fn network(&self) -> &Network {
        &self.net
    }
    pub fn stats(&self) -> ReplayStats {
        let mut s = self.stats;
        s.solves = self.shared.solves;
        s.solved_jobs = self.shared.solved_jobs;
        s.rounds = self.shared.rounds;
        s
    }
    pub fn reference(&self) -> Reference {
        self.reference
    }
    /// Results of a finished job row (None while it has not ended).
    pub fn result(&self, row: u32) -> Option<JobNetResult> {
        self.state[row as usize].result
    }

    fn traffic_of(&self, row: u32) -> Traffic {
        let t = self.traffic[row as usize];
        Traffic { pattern: self.patterns[t.pattern as usize].clone(), bytes: t.bytes, ranks_per_node: t.ranks_per_node, seed: t.seed }
    }

    fn communicates(&self, row: u32) -> bool {
        let t = self.traffic[row as usize];
        t.phi > 0.0 && self.patterns[t.pattern as usize] != Pattern::None
    }

    /// Mean placement penalty of the job's pattern on uniformly random nodes of the empty
    /// machine (cached by pattern, size, ranks per node and bytes).
    fn random_penalty(&mut self, row: u32, n: u32, samples: u32) -> f64 {
        let t = self.traffic[row as usize];
        let key = (t.pattern, n, t.ranks_per_node, t.bytes.to_bits());
        if let Some(&p) = self.ref_cache.get(&key) {
            return p;
        }
        let total = self.net.topology().n_nodes();
        let mut rng = ChaCha8Rng::seed_from_u64(0x9e37_79b9_7f4a_7c15 ^ ((t.pattern as u64) << 32 | n as u64));
        let mut tr = self.traffic_of(row);
        let mut sum = 0.0;
        for k in 0..samples.max(1) {
            let mut nodes: Vec<u32> = sample(&mut rng, total, n as usize).into_iter().map(|x| x as u32).collect();
            nodes.sort_unstable();
            tr.seed = k as u64;
            let dem = self.builder.build(self.net.router(), &nodes, &tr, false).expect("nodes are on the fabric");
            sum += dem.placement_penalty();
        }
        let p = sum / samples.max(1) as f64;
        self.ref_cache.insert(key, p);
        p
    }

    fn rate_of(phi: f64, p_rel: f64, x: f64, phibar: f64) -> f64 {
        1.0 / ((1.0 - phi) + phi * p_rel * (1.0 + (1.0 / x.max(1e-12) - 1.0) * phibar))
    }

    /// A job starts at `now` on `nodes` (ascending).
    pub fn on_start(&mut self, row: u32, nodes: &[u32], now: i64) {
        self.stats.starts += 1;
        let phi = self.traffic[row as usize].phi;
        let mut st = JobState {
            slot: NONE,
            work: self.runtime[row as usize] as f64,
            rate: 1.0,
            r_alone: 1.0,
            t_last: now,
            start: now,
            fluid_end: now as f64,
            p: 1.0,
            p_rel: 1.0,
            stamp: 0,
            result: None,
        };
        if self.communicates(row) {
            let tr = self.traffic_of(row);
            let ports = self.net.config().fairness == super::share::Fairness::Ports;
            let dem = self.builder.build(self.net.router(), nodes, &tr, ports).expect("nodes are on the fabric");
            self.stats.flows_routed += dem.n_flows;
            st.p = dem.placement_penalty();
            st.p_rel = match self.reference {
                Reference::Alone => 1.0,
                Reference::Ideal => st.p,
                Reference::Random { samples } => st.p / self.random_penalty(row, nodes.len() as u32, samples),
            };
            let sl = self.traffic[row as usize].service_level;
            let act: Active = self.net.active(&dem, sl, phi).expect("service levels were checked");
            if !act.links.is_empty() {
                self.stats.on_network += 1;
                let slot = self.shared.insert(act);
                if self.slot_job.len() <= slot as usize {
                    self.slot_job.resize(slot as usize + 1, NONE);
                }
                self.slot_job[slot as usize] = row;
                st.slot = slot;
                self.seeds.push(slot);
            }
        }
        st.r_alone = Self::rate_of(phi, st.p_rel, 1.0, 1.0);
        st.rate = st.r_alone;
        self.state[row as usize] = st;
        self.started.push(row);
    }

    /// A job ends at `now` (its end event fired). Returns whether it was killed at its
    /// limit before its work was done.
    pub fn on_end(&mut self, row: u32, now: i64) -> bool {
        self.stats.ends += 1;
        let mut st = self.state[row as usize];
        st.work -= (now - st.t_last) as f64 * st.rate;
        st.t_last = now;
        let mut links_shared = 0;
        if st.slot != NONE {
            self.shared.hot_neighbours(st.slot, &mut self.seeds);
            let a = self.shared.remove(st.slot);
            links_shared = a.shared_max;
            self.slot_job[st.slot as usize] = NONE;
            st.slot = NONE;
        }
        let limit = st.start + self.walltime[row as usize];
        let cut = self.kill_at_walltime && self.kill_on_overrun && st.fluid_end > limit as f64 + 1e-9;
        let killed = cut || self.log_over[row as usize];
        let runtime = self.runtime[row as usize] as f64;
        let (duration, work_done) = if cut {
            ((limit - st.start) as f64, (runtime - st.work.max(0.0)).max(0.0))
        } else {
            (st.fluid_end - st.start as f64, runtime)
        };
        let alone = work_done / st.r_alone;
        // a job never slowed gets exactly 1 (its time alone is fractional when the
        // reference placement scales it; the ratio would carry rounding noise)
        let slowdown = if alone > 0.0 { (duration / alone).max(1.0) } else { 1.0 };
        let slowdown = if slowdown - 1.0 < 1e-9 { 1.0 } else { slowdown };
        st.result =
            Some(JobNetResult { time_alone_s: runtime / st.r_alone, slowdown, links_shared, placement_penalty: st.p, p_rel: st.p_rel });
        self.state[row as usize] = st;
        killed
    }

    /// After the instant's pass: re-solve the jobs joined to those that started or ended,
    /// and return `(row, end_s)` for every job whose end moved and every job started now.
    pub fn flush(&mut self, now: i64) -> &[(u32, i64)] {
        self.out.clear();
        self.flush_stamp += 1;
        let stamp = self.flush_stamp;
        if !self.seeds.is_empty() {
            let comp = self.shared.component(&self.seeds);
            self.seeds.clear();
            for &slot in &comp {
                let row = self.slot_job[slot as usize];
                let st = &mut self.state[row as usize];
                st.work -= (now - st.t_last) as f64 * st.rate;
                st.t_last = now;
            }
            self.shared.solve(&comp);
            for &slot in &comp {
                let row = self.slot_job[slot as usize];
                let a = self.shared.get(slot);
                let (x, phibar) = (a.x, a.phibar);
                let phi = self.traffic[row as usize].phi;
                let st = &mut self.state[row as usize];
                let is_new = st.start == now && st.stamp == 0;
                if st.work <= WORK_EPS && !is_new {
                    continue; // done, waiting for its whole-second end
                }
                let rate = Self::rate_of(phi, st.p_rel, x, phibar);
                if is_new || (rate - st.rate).abs() > 1e-12 * st.rate {
                    st.rate = rate;
                    st.stamp = stamp;
                    let end = self.end_of(row, now);
                    self.out.push((row, end));
                }
            }
        }
        for i in 0..self.started.len() {
            let row = self.started[i];
            if self.state[row as usize].stamp != stamp {
                self.state[row as usize].stamp = stamp;
                let end = self.end_of(row, now);
                self.out.push((row, end));
            }
        }
        self.started.clear();
        self.stats.end_moves += self.out.len() as u64;
        &self.out
    }

    /// The end event of a job from its remaining work and current rate: the next whole
    /// second at or after the fluid end, capped at its limit with `overrun=kill`.
    fn end_of(&mut self, row: u32, now: i64) -> i64 {
        let st = &mut self.state[row as usize];
        st.fluid_end = if st.work > WORK_EPS { now as f64 + st.work / st.rate } else { now as f64 };
        let mut end = (st.fluid_end - 1e-9).ceil() as i64;
        end = end.max(now);
        if self.kill_at_walltime && self.kill_on_overrun {
            end = end.min(st.start + self.walltime[row as usize]);
        }
        end
    }
}

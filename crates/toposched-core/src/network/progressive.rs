//! Per-flow progressive filling in time: every flow of every job is a fluid flow on its
//! D-mod-k route; at each instant the flows share the links by max-min (water filling,
//! SimGrid's default network model without latency), and whenever a flow ends, or a job
//! starts its next iteration, the rates are solved again (event-driven). A job's
//! communication phase ends with its last flow, so flows that finish early release their
//! bandwidth to the job's other flows and to the other jobs: this is what the steady-state
//! job-level solve (`share`, `solver`) cannot see, and what made it miss all-to-all jobs on
//! tapered trees (docs/network.md, "Accuracy").
//!
//! Iterations are bulk-synchronous, as the rest of the model defines them: an iteration
//! is a communication phase (all the job's flows start together, it ends with the last)
//! followed by a quiet phase (compute and latency, which sharing does not stretch) of
//! `t_alone · (1 - phi) / phi`, so that alone the job communicates a fraction `phi` of
//! its time. Every job repeats iterations back to back from time 0 until every job has
//! finished `iterations` communication phases; a job's communication time together is
//! the mean of its phases after the first (the first starts in lock-step with every other
//! job, which no steady state does). Its time alone is one phase simulated alone.
//!
//! Cost: one water filling per event, O(flows · hops · log links), and about one event per
//! distinct flow end (measured in docs/network.md, "Progressive filling"). It is used by `interfere` under
//! `fairness=flows` (docs/network.md says when), not by the replay.
//!
//! Checked against `validation/flowsim.py`, an independent pure-Python simulator of the same
//! definition (tests/test_network_progressive.py), to 1e-6 relative.

use super::demand::{check_traffic, for_each_node_flow, Traffic};
use super::routing::Router;

/// Two instants closer than this (relative to the step) are one event: flows that end
/// together in exact arithmetic end together in floating point too, in any implementation.
pub const TIE: f64 = 1e-9;

/// Flows of a set of jobs, in compressed rows: flow f crosses `link[off[f]..off[f+1]]`.
#[derive(Clone, Debug, Default)]
pub struct FlowSet {
    /// Capacity of every link id the flows use (indexed by link id).
    pub cap: Vec<f64>,
    pub off: Vec<usize>,
    pub link: Vec<u32>,
    pub bytes: Vec<f64>,
    /// Job of each flow (index into `phi`).
    pub job: Vec<u32>,
    /// Bandwidth-bound fraction of each job's time alone, in (0, 1]; 0 = never communicates.
    pub phi: Vec<f64>,
}

impl FlowSet {
    pub fn new(cap: Vec<f64>) -> FlowSet {
        FlowSet { cap, off: vec![0], ..FlowSet::default() }
    }
    /// Add a job; returns its index.
    pub fn add_job(&mut self, phi: f64) -> u32 {
        self.phi.push(phi);
        (self.phi.len() - 1) as u32
    }
    /// Add a flow of `job` over `links`.
    pub fn add_flow(&mut self, job: u32, links: &[u32], bytes: f64) {
        assert!(!links.is_empty(), "a flow crosses at least its node links");
        self.link.extend_from_slice(links);
        self.off.push(self.link.len());
        self.bytes.push(bytes);
        self.job.push(job);
    }
    /// Add every flow of `traffic` on `nodes` for `job`, routed by D-mod-k.
    pub fn add_traffic(&mut self, router: &Router, job: u32, nodes: &[u32], traffic: &Traffic) -> Result<(), String> {
        check_traffic(router, nodes, traffic)?;
        for_each_node_flow(router, nodes, traffic, &mut |s, d, b| {
            let r = router.route(s, d);
            self.add_flow(job, r.links(), b);
        });
        Ok(())
    }
    pub fn n_flows(&self) -> usize {
        self.bytes.len()
    }
    pub fn n_jobs(&self) -> usize {
        self.phi.len()
    }
    fn flows_of(&self, f: usize) -> &[u32] {
        &self.link[self.off[f]..self.off[f + 1]]
    }
}

/// What the simulation found for each job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timing {
    /// Communication time of one iteration alone (0 for a job without flows or `phi = 0`).
    pub t_alone: Vec<f64>,
    /// Mean communication time of an iteration together (phases after the first).
    pub t_shared: Vec<f64>,
    /// Quiet time of each iteration: `t_alone · (1 - phi) / phi`.
    pub t_quiet: Vec<f64>,
    /// Events simulated and water-filling rounds, over the alone and together runs.
    pub events: u64,
    pub rounds: u64,
}

impl Timing {
    /// Slowdown of job j's whole iteration relative to alone.
    pub fn slowdown(&self, j: usize) -> f64 {
        let alone = self.t_alone[j] + self.t_quiet[j];
        if alone > 0.0 {
            (self.t_shared[j] + self.t_quiet[j]) / alone
        } else {
            1.0
        }
    }
    /// Relative communication speed (1 = as alone).
    pub fn x(&self, j: usize) -> f64 {
        if self.t_shared[j] > 0.0 {
            self.t_alone[j] / self.t_shared[j]
        } else {
            1.0
        }
    }
}

/// Per-flow max-min (water filling) over the active flows: every unfrozen flow rises at
/// the same pace (the fill level); the link that fills first saturates and freezes its
/// flows at the fill level; repeat. A link with `n` unfrozen flows and frozen usage `u`
/// fills at level `(c - u) / n`; levels only grow as flows freeze, so a heap of levels
/// (stale entries skipped) gives each saturation in O(log links): O(flows · hops · log)
/// per solve. Reusable buffers.
#[derive(Clone, Debug, Default)]
struct WaterFill {
    used: Vec<f64>,
    n: Vec<u32>,
    version: Vec<u32>,
    touched: Vec<u32>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(Level, u32, u32)>>,
    /// Flows on each link (all flows of the set, built once), compressed rows.
    on_off: Vec<usize>,
    on: Vec<u32>,
    /// Links saturated, over all solves.
    rounds: u64,
}

/// A fill level, ordered by `total_cmp` (levels are finite and positive); the water
/// filling here and the grouped one of [`super::queueing`] keep their heaps of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Level(pub(super) f64);
impl Eq for Level {}
impl PartialOrd for Level {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Level {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl WaterFill {
    fn new(fs: &FlowSet) -> WaterFill {
        let nl = fs.cap.len();
        let mut count = vec![0usize; nl + 1];
        for &l in &fs.link {
            count[l as usize + 1] += 1;
        }
        for l in 0..nl {
            count[l + 1] += count[l];
        }
        let mut on = vec![0u32; fs.link.len()];
        let mut pos = count.clone();
        for f in 0..fs.n_flows() {
            for &l in fs.flows_of(f) {
                on[pos[l as usize]] = f as u32;
                pos[l as usize] += 1;
            }
        }
        WaterFill {
            used: vec![0.0; nl],
            n: vec![0; nl],
            version: vec![0; nl],
            touched: Vec::new(),
            heap: Default::default(),
            on_off: count,
            on,
            rounds: 0,
        }
    }

    /// Rates of the flows in `active` (flow ids, each once) into `rate` (indexed by flow
    /// id), where the caller has set every active flow's rate to -1 (not frozen yet).
    fn solve(&mut self, fs: &FlowSet, active: &[u32], rate: &mut [f64]) {
        self.touched.clear();
        self.heap.clear();
        for &f in active {
            for &l in fs.flows_of(f as usize) {
                let li = l as usize;
                if self.n[li] == 0 {
                    self.touched.push(l);
                    self.used[li] = 0.0;
                }
                self.n[li] += 1;
            }
        }
        for &l in &self.touched {
            let li = l as usize;
            self.version[li] = 0;
            self.heap.push(std::cmp::Reverse((Level(fs.cap[li] / self.n[li] as f64), l, 0)));
        }
        while let Some(std::cmp::Reverse((Level(level), l, v))) = self.heap.pop() {
            let li = l as usize;
            if v != self.version[li] || self.n[li] == 0 {
                continue; // stale: the link's level moved, or its flows froze elsewhere
            }
            self.rounds += 1;
            self.n[li] = 0;
            for &f in &self.on[self.on_off[li]..self.on_off[li + 1]] {
                let fi = f as usize;
                if rate[fi] >= 0.0 {
                    continue; // not active, or frozen already
                }
                rate[fi] = level;
                for &m in fs.flows_of(fi) {
                    let mi = m as usize;
                    if mi == li || self.n[mi] == 0 {
                        continue;
                    }
                    self.used[mi] += level;
                    self.n[mi] -= 1;
                    if self.n[mi] > 0 {
                        self.version[mi] += 1;
                        // never below the current level (rounding): levels only grow
                        let next = ((fs.cap[mi] - self.used[mi]) / self.n[mi] as f64).max(level);
                        self.heap.push(std::cmp::Reverse((Level(next), m, self.version[mi])));
                    }
                }
            }
        }
        for &l in &self.touched {
            self.n[l as usize] = 0;
        }
    }
}

/// Per-flow max-min rates of every flow of `fs`, all active at once with unbounded demand
/// (one water filling): each flow as fast as its bottleneck allows.
pub fn max_min_rates(fs: &FlowSet) -> Vec<f64> {
    let mut wf = WaterFill::new(fs);
    let mut rate = vec![-1.0; fs.n_flows()];
    let active: Vec<u32> = (0..fs.n_flows() as u32).collect();
    wf.solve(fs, &active, &mut rate);
    rate
}

/// Work budget of one [`simulate`] call, in flow-solves (the active flows of every event
/// summed): about a minute on one core. Jobs whose iterations differ by orders of magnitude
/// (one must repeat millions of times while another finishes six) exceed it.
pub const MAX_FLOW_SOLVES: u64 = 500_000_000;

/// Simulate the jobs of `fs` together until each has finished `iterations` (>= 2)
/// communication phases, and each alone for one. See the module doc. An error when the
/// work exceeds [`MAX_FLOW_SOLVES`].
pub fn simulate(fs: &FlowSet, iterations: u32) -> Result<Timing, String> {
    simulate_within(fs, iterations, MAX_FLOW_SOLVES)
}

/// [`simulate`] with another work budget.
pub fn simulate_within(fs: &FlowSet, iterations: u32, max_flow_solves: u64) -> Result<Timing, String> {
    assert!(iterations >= 2, "the first phase is not measured: at least 2 iterations");
    let nj = fs.n_jobs();
    let mut wf = WaterFill::new(fs);
    let mut flows_of_job: Vec<Vec<u32>> = vec![Vec::new(); nj];
    for f in 0..fs.n_flows() {
        flows_of_job[fs.job[f] as usize].push(f as u32);
    }
    let mut out = Timing { t_alone: vec![0.0; nj], t_shared: vec![0.0; nj], t_quiet: vec![0.0; nj], events: 0, rounds: 0 };
    let mut comm: Vec<bool> = (0..nj).map(|j| fs.phi[j] > 0.0 && !flows_of_job[j].is_empty()).collect();
    for (j, communicates) in comm.iter_mut().enumerate() {
        if *communicates {
            let (times, ev) = run(fs, &mut wf, &flows_of_job, &[j as u32], &[0.0], 1, max_flow_solves)?;
            out.events += ev;
            let quiet = times[0][0] * (1.0 - fs.phi[j]) / fs.phi[j];
            if quiet.is_finite() {
                out.t_alone[j] = times[0][0];
                out.t_quiet[j] = quiet;
            } else {
                // phi so small that its quiet phase overflows: it never meets anyone
                *communicates = false;
            }
        }
    }
    let jobs: Vec<u32> = (0..nj as u32).filter(|&j| comm[j as usize]).collect();
    if !jobs.is_empty() {
        let quiet: Vec<f64> = jobs.iter().map(|&j| out.t_quiet[j as usize]).collect();
        let (times, ev) = run(fs, &mut wf, &flows_of_job, &jobs, &quiet, iterations, max_flow_solves)?;
        out.events += ev;
        for (k, &j) in jobs.iter().enumerate() {
            let t = &times[k][1..];
            out.t_shared[j as usize] = t.iter().sum::<f64>() / t.len() as f64;
        }
    }
    out.rounds = wf.rounds;
    Ok(out)
}

/// The event loop: `jobs` repeat (communication phase, quiet phase of `quiet[k]`) from
/// time 0 until each has `iterations` phases; returns every phase's duration per job.
#[allow(clippy::too_many_arguments)] // the event loop's inputs, each used once
fn run(
    fs: &FlowSet,
    wf: &mut WaterFill,
    flows_of_job: &[Vec<u32>],
    jobs: &[u32],
    quiet: &[f64],
    iterations: u32,
    max_flow_solves: u64,
) -> Result<(Vec<Vec<f64>>, u64), String> {
    let nf = fs.n_flows();
    let mut rem = vec![0.0; nf];
    let mut rate = vec![0.0; nf];
    let mut active: Vec<u32> = Vec::new();
    // per job (index k into jobs): flows still running, phase start, quiet until (NaN: communicating)
    let mut running = vec![0usize; jobs.len()];
    let mut start = vec![0.0; jobs.len()];
    let mut quiet_until = vec![f64::NAN; jobs.len()];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); jobs.len()];
    let mut slot_of_job = vec![usize::MAX; fs.n_jobs()];
    for (k, &j) in jobs.iter().enumerate() {
        slot_of_job[j as usize] = k;
    }
    let begin = |k: usize, t: f64, rem: &mut [f64], active: &mut Vec<u32>, running: &mut [usize], start: &mut [f64]| {
        for &f in &flows_of_job[jobs[k] as usize] {
            rem[f as usize] = fs.bytes[f as usize];
            active.push(f);
        }
        running[k] = flows_of_job[jobs[k] as usize].len();
        start[k] = t;
    };
    let mut t = 0.0;
    for k in 0..jobs.len() {
        begin(k, t, &mut rem, &mut active, &mut running, &mut start);
    }
    let mut events = 0u64;
    let mut work = 0u64;
    let mut short = jobs.len(); // jobs with fewer than `iterations` phases
    while short > 0 {
        events += 1;
        work += active.len() as u64;
        if work > max_flow_solves {
            return Err(format!(
                "progressive filling gave up after {events} events ({work} flow solves): the jobs' iteration times differ too much \
                 for every job to finish {iterations} iterations (use filling=steady)"
            ));
        }
        active.sort_unstable(); // a deterministic order whatever the history
        for &f in &active {
            rate[f as usize] = -1.0;
        }
        wf.solve(fs, &active, &mut rate);
        let mut dt = f64::INFINITY;
        for &f in &active {
            dt = dt.min(rem[f as usize] / rate[f as usize]);
        }
        for &u in &quiet_until {
            if !u.is_nan() {
                dt = dt.min(u - t);
            }
        }
        let now = t + dt;
        let mut ended: Vec<usize> = Vec::new();
        active.retain(|&f| {
            let fi = f as usize;
            if rem[fi] / rate[fi] <= dt * (1.0 + TIE) {
                let k = slot_of_job[fs.job[fi] as usize];
                running[k] -= 1;
                if running[k] == 0 {
                    ended.push(k);
                }
                false
            } else {
                rem[fi] -= rate[fi] * dt;
                true
            }
        });
        // quiet phases ending now (checked before the phases that end now go quiet)
        let mut restart: Vec<usize> = Vec::new();
        for (k, u) in quiet_until.iter_mut().enumerate() {
            if !u.is_nan() && *u - t <= dt * (1.0 + TIE) {
                *u = f64::NAN;
                restart.push(k);
            }
        }
        ended.sort_unstable();
        for &k in &ended {
            times[k].push(now - start[k]);
            if times[k].len() == iterations as usize {
                short -= 1;
            }
            if quiet[k] > 0.0 {
                quiet_until[k] = now + quiet[k];
            } else {
                restart.push(k);
            }
        }
        t = now;
        restart.sort_unstable();
        for k in restart {
            begin(k, t, &mut rem, &mut active, &mut running, &mut start);
        }
    }
    Ok((times, events))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn water_filling_is_max_min() {
        // link 0 (cap 1): flows a, b; link 1 (cap 1): b, c; link 2 (cap 0.2): c
        let mut fs = FlowSet::new(vec![1.0, 1.0, 0.2]);
        let j = fs.add_job(1.0);
        fs.add_flow(j, &[0], 1.0);
        fs.add_flow(j, &[0, 1], 1.0);
        fs.add_flow(j, &[1, 2], 1.0);
        let mut wf = WaterFill::new(&fs);
        let mut rate = vec![-1.0; 3];
        wf.solve(&fs, &[0, 1, 2], &mut rate);
        assert!(close(rate[2], 0.2) && close(rate[0], 0.5) && close(rate[1], 0.5), "{rate:?}");
    }

    #[test]
    fn a_flow_that_finishes_early_releases_its_share() {
        // one job, flows of 1 and 3 bytes through one link: both at 1/2 until t = 2, then
        // the long one alone at 1: the phase ends at 4 (= all bytes over the capacity)
        let mut fs = FlowSet::new(vec![1.0]);
        let j = fs.add_job(1.0);
        fs.add_flow(j, &[0], 1.0);
        fs.add_flow(j, &[0], 3.0);
        let t = simulate(&fs, 2).unwrap();
        assert!(close(t.t_alone[0], 4.0) && close(t.t_shared[0], 4.0), "{t:?}");
    }

    #[test]
    fn a_job_with_a_quiet_phase_lends_the_link_to_the_other() {
        // job A: 1 byte, phi 1/2 (quiet 1 after each phase); job B: 3 bytes, phi 1; one link.
        // By hand: A's phases [0,2] [3,5] [6,8], B's [0,5] [5,9], then it repeats from 9.
        let mut fs = FlowSet::new(vec![1.0]);
        let a = fs.add_job(0.5);
        let b = fs.add_job(1.0);
        fs.add_flow(a, &[0], 1.0);
        fs.add_flow(b, &[0], 3.0);
        let t = simulate(&fs, 4).unwrap();
        // B's 4th phase ends at 18; A then has 6 phases of 2; B's after the first: 4, 5, 4
        assert!(close(t.t_alone[0], 1.0) && close(t.t_quiet[0], 1.0), "{t:?}");
        assert!(close(t.t_shared[0], 2.0), "{t:?}");
        assert!(close(t.t_shared[1], 13.0 / 3.0), "{t:?}");
        assert!(close(t.slowdown(0), 1.5) && close(t.x(1), 3.0 / (13.0 / 3.0)));
    }

    #[test]
    fn a_vanishing_communication_fraction_runs_as_alone() {
        let mut fs = FlowSet::new(vec![1.0]);
        let a = fs.add_job(1e-320);
        let b = fs.add_job(1.0);
        fs.add_flow(a, &[0], 1.0);
        fs.add_flow(b, &[0], 1.0);
        let t = simulate(&fs, 3).unwrap();
        assert_eq!((t.slowdown(0), t.slowdown(1)), (1.0, 1.0));
    }

    #[test]
    fn jobs_whose_iterations_differ_too_much_give_up() {
        // a 1e-9-byte job would repeat 6e9 times while the other finishes six
        let mut fs = FlowSet::new(vec![1.0, 1.0]);
        let a = fs.add_job(1.0);
        let b = fs.add_job(1.0);
        fs.add_flow(a, &[0], 1e-9);
        fs.add_flow(b, &[0, 1], 1.0);
        let e = simulate_within(&fs, 6, 10_000).unwrap_err();
        assert!(e.contains("filling=steady"), "{e}");
    }

    #[test]
    fn jobs_without_flows_run_as_alone() {
        let mut fs = FlowSet::new(vec![1.0]);
        let a = fs.add_job(1.0);
        let _b = fs.add_job(1.0);
        let c = fs.add_job(0.0);
        fs.add_flow(a, &[0], 2.0);
        fs.add_flow(c, &[0], 2.0);
        let t = simulate(&fs, 3).unwrap();
        assert_eq!((t.slowdown(1), t.slowdown(2), t.x(2)), (1.0, 1.0, 1.0));
        assert!(close(t.t_shared[0], 2.0));
    }

    use proptest::prelude::*;

    proptest! {
        /// The water filling is max-min: no link is over capacity, and every flow has a
        /// bottleneck, a full link on its path where no flow runs faster than it (the
        /// definition of max-min fairness, independent of how the filling computes it).
        #[test]
        fn water_filling_meets_the_max_min_definition(
            caps in proptest::collection::vec(0.1f64..3.0, 1..8),
            paths in proptest::collection::vec(proptest::collection::btree_set(0u32..8, 1..4), 1..12),
        ) {
            let nl = caps.len() as u32;
            let mut fs = FlowSet::new(caps.clone());
            let j = fs.add_job(1.0);
            for p in &paths {
                let links: Vec<u32> = p.iter().map(|&l| l % nl).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
                fs.add_flow(j, &links, 1.0);
            }
            let active: Vec<u32> = (0..fs.n_flows() as u32).collect();
            let mut rate = vec![-1.0; fs.n_flows()];
            WaterFill::new(&fs).solve(&fs, &active, &mut rate);
            let mut load = vec![0.0; caps.len()];
            for (f, &r) in rate.iter().enumerate() {
                prop_assert!(r > 0.0);
                for &l in fs.flows_of(f) {
                    load[l as usize] += r;
                }
            }
            for l in 0..caps.len() {
                prop_assert!(load[l] <= caps[l] * (1.0 + 1e-9), "link {} over capacity", l);
            }
            for f in 0..fs.n_flows() {
                let bottleneck = fs.flows_of(f).iter().any(|&l| {
                    let li = l as usize;
                    load[li] >= caps[li] * (1.0 - 1e-9)
                        && (0..fs.n_flows()).all(|g| !fs.flows_of(g).contains(&l) || rate[g] <= rate[f] * (1.0 + 1e-9))
                });
                prop_assert!(bottleneck, "flow {} has no bottleneck: {:?}", f, rate);
            }
        }

        /// Same flows, same times, whatever the order the jobs are given in.
        #[test]
        fn job_order_does_not_change_the_times(
            sizes in proptest::collection::vec((0u32..4, 0u32..4, 0.5f64..4.0), 2..10),
            phis in proptest::collection::vec(0.2f64..1.0, 3),
        ) {
            let build = |order: &[usize]| {
                let mut fs = FlowSet::new(vec![1.0, 1.5, 0.7, 2.0]);
                for &k in order {
                    fs.add_job(phis[k]);
                }
                for (i, &(a, b, bytes)) in sizes.iter().enumerate() {
                    let k = i % 3;
                    let job = order.iter().position(|&o| o == k).unwrap() as u32;
                    let links: Vec<u32> = if a == b { vec![a] } else { vec![a.min(b), a.max(b)] };
                    fs.add_flow(job, &links, bytes);
                }
                simulate(&fs, 3).unwrap()
            };
            let t1 = build(&[0, 1, 2]);
            let t2 = build(&[2, 0, 1]);
            for k in 0..3 {
                let k2 = [1, 2, 0][k];
                prop_assert!((t1.slowdown(k) - t2.slowdown(k2)).abs() <= 1e-9 * t1.slowdown(k));
            }
        }
    }
}

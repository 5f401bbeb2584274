//! `adaptive`: isolate a job only when the network model predicts that sharing would hurt,
//! and only for a bounded wait.
//!
//! *What it does*, for a job of N nodes the policy has held back for w seconds (since it
//! first declined the job free nodes it could have had: enough free nodes that no
//! reservation excluded; `Guard::held_back_s`, counted as Slurm counts a `--switches` wait
//! from its first attempt):
//! 1. **Share when harmless.** `least-interference`'s candidates (same generation, same
//!    model, same order: smallest predicted increase of interference node-seconds first)
//!    are scored with the *worst slowdown* each adds: the largest of the job's own
//!    predicted dilation - 1 and the increase of any running job's dilation. The best
//!    candidate whose worst slowdown is at most `slowdown_threshold` is taken. A candidate
//!    on one leaf uses no link between switches and adds 0, so a job that fits on a leaf's
//!    free nodes is always placed at once.
//! 2. **Else isolate**: `isolated`'s placement (SC18 tiers: a leaf-spanning job alone among
//!    leaf-spanning jobs on its leaves, a pod-spanning one alone in its pods), if the
//!    running jobs let it place the job now.
//! 3. **Else wait**, while w < `isolation_wait_s`: the job is refused and tried again at the
//!    next pass; the engine runs one when the wait runs out (`Allocator::patience_s`).
//! 4. **After the wait** (w >= `isolation_wait_s`), or at once for a job no isolated
//!    placement could hold even on the idle machine (e.g. a one-leaf-sized job larger than
//!    every healthy leaf): the least-interfering candidate, whatever its score, as
//!    `least-interference` places it. With `isolation_wait_s = 0` the policy never waits
//!    (it only prefers harmless or isolated placements); with `slowdown_threshold` large it
//!    places a job wherever `least-interference` would on the same machine state (but its
//!    reservations stay node sets, below, so EASY backfills differently).
//!
//! *Reservations* (node sets, not fungible: the policy declines free nodes while a job
//! waits for isolation). A reservation is planned on a projection of the future, where the
//! model's prediction cannot be trusted (the jobs then running are not known), so there the
//! policy answers with steps 2 to 4 only (`Guard::projected`): isolated placements, and any
//! placement from the instant the job's wait would run out. What the guard's reservations
//! forbid is `isolated`'s reading (a job still running when a reservation spanning leaves
//! starts may not span leaves on its leaves; one spanning pods closes its pods to jobs
//! spanning pods), applied to every step. So the head of an EASY queue can be placed when
//! its reservation starts, as under `isolated` (the engine's invariant tests check it).
//! *Traffic and model*: `least-interference`'s defaults (every job's pattern by its size as
//! the replay's default `--network bins` maps it, communication fraction 0.3, default
//! bandwidths, flow fairness); the threshold is a fraction of run time under that model.
//! *When to use*: to keep isolation's benefit where the model says sharing costs, and
//! linear-like packing elsewhere; sweep `slowdown_threshold` (0 isolates every job whose
//! best placement would share an oversubscribed link) and `isolation_wait_s`.
//! *Cost*: `least-interference`'s per placement (the model's sync and up to 8 candidates
//! scored), plus `isolated`'s when the threshold refuses; reservations cost `isolated`'s.
//! *Live placement* (`toposched serve`): how long a job has been held back is not known
//! there (0), so the wait bound does not apply.
//! *Reference*: this project (issue 18); the idea of isolating only contention-prone jobs
//! is the contention-aware allocation the issue cites (2012); the bounded wait is Slurm's
//! `--switches=N@wait`.

use super::least_interference::{LeastInterference, LeastInterferenceOptions};
use super::tiers::{tier, LeafOrder, TieBreak, Tiered};
use super::{fits_in_machine, free_unguarded, AllocEntry, Allocator, Guard, Tracker};
use crate::options::{parse_options, schema_of};
use crate::state::ClusterState;
use crate::topology::{SpanClass, Topology};

/// Options of `adaptive`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AdaptiveOptions {
    /// Largest slowdown (a fraction of run time: 0.05 is 5 %) the network model may predict a shared placement adds to the job or to any running job; above it the job waits for an isolated placement.
    #[schemars(range(min = 0.0))]
    pub slowdown_threshold: f64,
    /// Longest wait for an isolated placement, in seconds since the policy first declined the job free nodes it could have had; after it the job takes the least-interfering placement (0: never wait).
    #[schemars(range(min = 0))]
    pub isolation_wait_s: i64,
}

impl Default for AdaptiveOptions {
    fn default() -> AdaptiveOptions {
        AdaptiveOptions { slowdown_threshold: 0.05, isolation_wait_s: 86_400 }
    }
}

impl AdaptiveOptions {
    /// A finite, non-negative threshold and wait, or an error naming the option.
    pub fn check(self) -> Result<AdaptiveOptions, String> {
        if !(self.slowdown_threshold.is_finite() && self.slowdown_threshold >= 0.0) {
            return Err(format!("adaptive: slowdown_threshold must be a fraction >= 0 (0.05 is 5 %), got {}", self.slowdown_threshold));
        }
        if self.isolation_wait_s < 0 {
            return Err(format!("adaptive: isolation_wait_s must be at least 0 seconds, got {}", self.isolation_wait_s));
        }
        Ok(self)
    }
}

pub static POLICY: AllocEntry = AllocEntry {
    name: "adaptive",
    summary: "share the least-interfering placement when the network model predicts it slows no job by more than a threshold, else wait (bounded) for an isolated one",
    fungible: false,
    topology_aware: true,
    options: schema_of::<AdaptiveOptions>,
    build: |o| Ok(Box::new(Adaptive::new(parse_options::<AdaptiveOptions>("adaptive", o)?)?)),
};

/// The policy.
#[derive(Clone, Debug)]
pub struct Adaptive {
    opts: AdaptiveOptions,
    shared: LeastInterference,
    isolated: Tiered,
    ranked: RankedCache,
}

/// `least-interference`'s ranked candidates for the questions asked about one machine
/// state (its stamp): a queue policy asks the same one for every waiting job of a size at
/// every pass, and most passes (a submission) leave the state as it was. The ranking is a
/// function of the state's contents, the size and the guard, so an exact match of those
/// gives the same answer.
#[derive(Clone, Debug, Default)]
struct RankedCache {
    stamp: u64,
    entries: Vec<(Question, Ranked)>,
}

/// Candidates best first, each with the worst slowdown it adds.
type Ranked = Vec<(Vec<u32>, f64)>;

/// A placement question but for the state: size, excluded nodes, reservations.
#[derive(Clone, Debug, PartialEq)]
struct Question {
    nodes: u32,
    excluded: Option<Vec<u64>>,
    reserved: Vec<(Vec<u32>, SpanClass)>,
}

/// Entries kept per state: enough for the sizes and guards one pass asks about.
const RANKED_CACHE_ENTRIES: usize = 256;

impl Adaptive {
    pub fn new(opts: AdaptiveOptions) -> Result<Adaptive, String> {
        let opts = opts.check()?;
        Ok(Adaptive {
            opts,
            shared: LeastInterference::new(LeastInterferenceOptions::default())?,
            isolated: Tiered::new(1, 1, LeafOrder::default(), TieBreak::default()),
            ranked: RankedCache::default(),
        })
    }

    /// `least-interference`'s candidates, best first, with the worst slowdown each adds
    /// (from the cache when the same question was asked about the same state).
    fn ranked(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> &[(Vec<u32>, f64)] {
        let q = Question {
            nodes,
            excluded: guard.excluded.map(|e| e.words().to_vec()),
            reserved: guard.reserved.iter().map(|r| (r.nodes.to_vec(), r.class)).collect(),
        };
        let cache = &mut self.ranked;
        if cache.stamp != state.stamp() {
            cache.stamp = state.stamp();
            cache.entries.clear();
        }
        let at = match cache.entries.iter().position(|(k, _)| *k == q) {
            Some(at) => at,
            None => {
                if cache.entries.len() >= RANKED_CACHE_ENTRIES {
                    cache.entries.clear();
                }
                let ranked = self.shared.ranked(topo, state, nodes, guard);
                cache.entries.push((q, ranked));
                cache.entries.len() - 1
            }
        };
        &cache.entries[at].1
    }

    /// The job still waits for isolation: it has been held back less than the bound, and some
    /// isolated placement could hold it on the idle machine (its tier fits the largest
    /// healthy leaf, pod or machine).
    fn waits_for_isolation(&self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> bool {
        if guard.held_back_s >= self.opts.isolation_wait_s {
            return false;
        }
        let leaf = |l: u32| state.leaf_healthy(topo, l);
        match tier(topo, nodes) {
            SpanClass::Leaf => (0..topo.n_leaves() as u32).any(|l| leaf(l) >= nodes),
            SpanClass::Pod => (0..topo.n_pods() as u32).any(|p| topo.pod_leaves(p).map(leaf).sum::<u32>() >= nodes),
            SpanClass::Pods => state.n_healthy() >= nodes,
        }
    }

    /// The best shared candidate whose worst added slowdown is at most `threshold` and
    /// that honours what the guard's reservations close.
    fn shared_placement(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard, threshold: f64) -> Option<Vec<u32>> {
        self.ranked(topo, state, nodes, guard)
            .iter()
            .find(|(c, worst)| *worst <= threshold && honours_reservations(topo, c, guard))
            .map(|(c, _)| c.clone())
    }
}

/// `isolated`'s reading of the guard's reservations: a candidate spanning leaves may not
/// touch the leaves of a reservation spanning leaves, one spanning pods the pods of a
/// reservation spanning pods. (The excluded nodes are the candidates' business.)
fn honours_reservations(topo: &Topology, cand: &[u32], guard: &Guard) -> bool {
    let class = topo.span_class(cand);
    guard.reserved.iter().all(|r| {
        let leaf_clash = class.spans_leaves()
            && r.class.spans_leaves()
            && cand.iter().any(|&c| r.nodes.iter().any(|&n| topo.leaf_of(n) == topo.leaf_of(c)));
        let pod_clash = class.spans_pods()
            && r.class.spans_pods()
            && cand.iter().any(|&c| r.nodes.iter().any(|&n| topo.pod_of(n) == topo.pod_of(c)));
        !leaf_clash && !pod_clash
    })
}

impl Allocator for Adaptive {
    fn name(&self) -> String {
        "adaptive".into()
    }
    fn fungible(&self) -> bool {
        false
    }
    fn tracker(&self, topo: &Topology) -> Option<Box<dyn Tracker>> {
        self.isolated.tracker(topo)
    }
    fn check_fits_ever(&self, _topo: &Topology, empty: &ClusterState, nodes: u32) -> Result<(), String> {
        // after its wait a job takes any placement, as least-interference would
        fits_in_machine(empty, nodes)
    }
    fn select(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        if nodes == 0 || nodes > state.n_free() {
            return None;
        }
        if !self.waits_for_isolation(topo, state, nodes, guard) {
            return self.shared_placement(topo, state, nodes, guard, f64::INFINITY);
        }
        if !guard.projected {
            if let Some(c) = self.shared_placement(topo, state, nodes, guard, self.opts.slowdown_threshold) {
                return Some(c);
            }
        }
        self.isolated.select(topo, state, nodes, guard)
    }
    fn feasible(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> bool {
        if nodes == 0 || free_unguarded(state, topo, guard).take(nodes as usize).count() < nodes as usize {
            return false;
        }
        if guard.projected && self.waits_for_isolation(topo, state, nodes, guard) {
            return self.isolated.feasible(topo, state, nodes, guard);
        }
        self.select(topo, state, nodes, guard).is_some()
    }
    fn patience_s(&self) -> Option<i64> {
        Some(self.opts.isolation_wait_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::{new_state, Reserved};
    use crate::state::NodeSet;

    fn adaptive(threshold: f64, wait_s: i64) -> Adaptive {
        Adaptive::new(AdaptiveOptions { slowdown_threshold: threshold, isolation_wait_s: wait_s }).unwrap()
    }

    fn sorted(v: Option<Vec<u32>>) -> Option<Vec<u32>> {
        v.map(|mut v| {
            v.sort_unstable();
            v
        })
    }

    /// 2 pods x 3 leaves x 4 nodes, one uplink per leaf (4:1 oversubscribed).
    fn tapered() -> Topology {
        Topology::fat_tree("tapered", 4, 3, 2, Some(1), None).unwrap()
    }

    /// `tapered` with a running 4-node job X on nodes {0, 1, 4, 5} (leaves 0 and 1, pod
    /// 0) and one 4-node job on each leaf of pod 1: only pod 0's nodes 2, 3 (leaf 0), 6, 7
    /// (leaf 1) and 8-11 (leaf 2) are free.
    fn busy(a: &Adaptive) -> (Topology, ClusterState) {
        let t = tapered();
        let mut s = new_state(a, &t, &[]);
        s.allocate(&t, 0, &[0, 1, 4, 5], SpanClass::Pod);
        for (j, l) in [(1u32, 3u32), (2, 4), (3, 5)] {
            let nodes: Vec<u32> = t.leaf_nodes(l).collect();
            s.allocate(&t, j, &nodes, SpanClass::Leaf);
        }
        (t, s)
    }

    #[test]
    fn a_job_that_fits_on_a_leaf_is_placed_at_once() {
        let mut a = adaptive(0.0, 100);
        let (t, s) = busy(&a);
        // leaf 2 is free: a one-leaf placement shares no link, even at threshold 0
        let got = sorted(a.select(&t, &s, 4, &Guard::NONE)).unwrap();
        assert_eq!(got, vec![8, 9, 10, 11]);
    }

    #[test]
    fn a_harmful_shared_placement_waits_then_is_taken() {
        let mut a = adaptive(0.05, 100);
        let (t, s) = busy(&a);
        // 6 nodes span leaves wherever they go, and any placement takes nodes of leaf 0
        // or 1, whose one uplink X already loads. An isolated one needs leaves without a
        // spanning job: only leaf 2 (4 nodes): none.
        let ranked = a.shared.ranked(&t, &s, 6, &Guard::NONE);
        assert!(!ranked.is_empty());
        let best_worst = ranked.iter().map(|(_, w)| *w).fold(f64::INFINITY, f64::min);
        assert!(best_worst > 0.05, "every 6-node placement here slows someone by over 5 %: {ranked:?}");
        assert_eq!(a.select(&t, &s, 6, &Guard { held_back_s: 99, ..Guard::NONE }), None);
        assert!(!a.feasible(&t, &s, 6, &Guard::NONE));
        // after the wait: least-interference's choice, exactly
        let mut li = LeastInterference::new(LeastInterferenceOptions::default()).unwrap();
        let want = sorted(li.select(&t, &s, 6, &Guard::NONE));
        assert!(want.is_some());
        assert_eq!(sorted(a.select(&t, &s, 6, &Guard { held_back_s: 100, ..Guard::NONE })), want);
        // with no wait at all, the same at once
        assert_eq!(sorted(adaptive(0.05, 0).select(&t, &s, 6, &Guard::NONE)), want);
        // a threshold at the smallest worst slowdown shares at once: the best-ranked
        // candidate among those within it
        let mut lenient = adaptive(best_worst, 100);
        let within = ranked.iter().find(|(_, w)| *w <= best_worst).map(|(c, _)| c.clone());
        assert_eq!(sorted(lenient.select(&t, &s, 6, &Guard::NONE)), sorted(within));
    }

    #[test]
    fn isolation_is_taken_when_sharing_would_hurt() {
        // X = {0, 4} spans leaves 0 and 1 (pod 0); the rest is idle. A 6-node job spans
        // leaves wherever it goes; with threshold 0 any predicted slowdown is too much, so
        // unless a shared placement is harmless it gets isolated's: off X's leaves.
        let t = tapered();
        let mut a = adaptive(0.0, 100);
        let mut s = new_state(&a, &t, &[]);
        s.allocate(&t, 0, &[0, 4], SpanClass::Pod);
        let got = sorted(a.select(&t, &s, 6, &Guard::NONE)).unwrap();
        assert!(got.iter().all(|&n| t.leaf_of(n) != 0 && t.leaf_of(n) != 1), "{got:?}");
        // least-interference alone may share X's leaves; adaptive at threshold 0 never
        // adds a predicted slowdown
        let ranked = a.shared.ranked(&t, &s, 6, &Guard::NONE);
        let chosen_worst = ranked.iter().find(|(c, _)| *c == got).map_or(0.0, |(_, w)| *w);
        assert_eq!(chosen_worst, 0.0, "{ranked:?}");
    }

    #[test]
    fn projected_states_get_only_isolated_or_patient_answers() {
        let mut lenient = adaptive(f64::MAX, 100);
        let (t, s) = busy(&lenient);
        // now, a lenient threshold shares at once
        assert!(lenient.select(&t, &s, 6, &Guard::NONE).is_some());
        // planned for the future, the model is not asked: no isolated placement, so none
        let planned = Guard { projected: true, held_back_s: 50, ..Guard::NONE };
        assert_eq!(lenient.select(&t, &s, 6, &planned), None);
        assert!(!lenient.feasible(&t, &s, 6, &planned));
        // from the instant the wait runs out, any placement
        let late = Guard { projected: true, held_back_s: 100, ..Guard::NONE };
        assert!(lenient.feasible(&t, &s, 6, &late) && lenient.select(&t, &s, 6, &late).is_some());
        // a job that fits on a leaf is isolated there in the plan too
        assert_eq!(sorted(lenient.select(&t, &s, 4, &planned)), Some(vec![8, 9, 10, 11]));
    }

    #[test]
    fn reservations_close_leaves_and_pods_as_isolated_reads_them() {
        // a reservation of {6, 9} spans pods (leaves 2 and 3): a leaf-spanning job may not
        // touch leaves 2 and 3, a pod-spanning one not pods 0 and 1
        let t = Topology::preset("toy18").unwrap();
        let reserved = [Reserved { nodes: &[6, 9], class: SpanClass::Pods, stamp: 0 }];
        let mut ex = NodeSet::new(18);
        ex.insert(6);
        ex.insert(9);
        let g = Guard { excluded: Some(&ex), reserved: &reserved, ..Guard::NONE };
        assert!(honours_reservations(&t, &[0, 3], &g));
        assert!(!honours_reservations(&t, &[0, 7], &g), "leaf 2 is closed to spanning jobs");
        assert!(honours_reservations(&t, &[7, 8], &g), "one leaf: no link shared");
        assert!(honours_reservations(&t, &[12, 15], &g), "leaves 4 and 5: not reserved ones, one pod");
        assert!(!honours_reservations(&t, &[0, 12], &g), "pods 0 and 1 are closed to pod-spanning jobs");
    }

    #[test]
    fn options_are_checked() {
        let mut o = crate::options::Options::new();
        o.insert("slowdown_threshold".into(), (-0.1).into());
        assert!((POLICY.build)(&o).err().unwrap().contains("slowdown_threshold must be a fraction >= 0"));
        o.insert("slowdown_threshold".into(), 0.1.into());
        o.insert("isolation_wait_s".into(), (-1).into());
        assert!((POLICY.build)(&o).err().unwrap().starts_with("adaptive:"));
        o.insert("isolation_wait_s".into(), 0.into());
        assert!((POLICY.build)(&o).is_ok());
    }
}

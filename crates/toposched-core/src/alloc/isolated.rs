//! `isolated`: the interference-free T1/T2/T3 policy of Pollard et al. (SC18), as the brief
//! (§2.3–2.5, §7) specifies it.
//!
//! *What it does*: classifies a job by its node count N against the fabric's nominal leaf
//! size K and pod size p: T1 (N <= K) stays on one leaf, T2 (N <= p) on one pod, T3 spans
//! pods. A leaf holding any T2/T3 node is closed to other T2/T3 jobs; a pod holding any T3
//! node is closed to other T3 jobs; T1 jobs go anywhere a leaf has room. So no two running
//! jobs can share an inter-switch link (invariants I1 and I2, brief §2.10). Span never
//! grows: a T1 job never spans leaves, a T2 job never spans pods.
//! *Orders* (they are part of the specification):
//! T1: least-available pod, then least-available leaf. T2: least-available pod, then
//! most-available leaves. T3: most-available pods; leaves least-available first in the
//! published code (`LeafOrder::FluxTopo`, default, for reproduction) or most-available first
//! as the paper's text says (`LeafOrder::Paper`). Ties go by name (`TieBreak::Name`; a
//! descending sort reverses name order too, as the code's strcmp keys do) or by index
//! (`TieBreak::Index`, ascending in both sorts).
//! *Reservations* (node sets): a job that would still run when a reservation starts may
//! not take its nodes, nor, if the reservation spans leaves, leaves it touches (if it
//! spans pods, pods it touches) unless the job stays on one leaf (one pod).
//! *State*: the spanning jobs per leaf and per pod are [`SpanCounts`], a tracker the
//! policy installs in the machine state (`Allocator::tracker`).
//! *When to use*: to measure what isolating jobs costs in waiting and utilization.
//! *Cost*: O(leaves + log) per selection; the feasibility test used for EASY reservations
//! is O(leaves).
//! *Reference*: Pollard, Jain, Herbein, Bhatele, SC18; sampollard/flux-sched@668c0dc
//! `sched/sched_topo.c`.

use std::any::Any;

use super::{AllocEntry, Allocator, Guard, Tracker};
use crate::options::{parse_options, schema_of};
use crate::state::ClusterState;
use crate::topology::{SpanClass, Topology};

/// Leaf order of T3 jobs inside a pod.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LeafOrder {
    /// Least-available leaf first, as the published plugin code does.
    #[default]
    FluxTopo,
    /// Most-available leaf first, as the paper's Algorithm 1 and text say.
    Paper,
}

/// How equal availabilities are ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TieBreak {
    /// By switch name (zero-padded preset names sort like indices); descending sorts reverse it.
    #[default]
    Name,
    /// By index, ascending in every sort.
    Index,
}

/// Options of `isolated`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct IsolatedOptions {
    /// T3 leaf order inside a pod: flux-topo (least-available first, the published code) or
    /// paper (most-available first, as the paper's text says).
    pub leaf_order: LeafOrder,
    /// How equal availabilities are ordered: by switch name (the published code) or by index.
    pub tie_break: TieBreak,
}

pub static POLICY: AllocEntry = AllocEntry {
    name: "isolated",
    summary: "interference-free T1/T2/T3 placement of Pollard et al. (SC18): no two jobs share an inter-switch link",
    fungible: false,
    topology_aware: true,
    options: schema_of::<IsolatedOptions>,
    build: |o| Ok(Box::new(Isolated::new(parse_options("isolated", o)?))),
};

/// Running jobs spanning leaves on each leaf and spanning pods in each pod: the tracker
/// `isolated` installs in the machine state (`Allocator::tracker`), told of every
/// allocation and release.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpanCounts {
    /// Jobs spanning several leaves (T2, T3) holding a node of each leaf.
    leaf: Vec<u32>,
    /// Jobs spanning several pods (T3) holding a node of each pod.
    pod: Vec<u32>,
}

impl SpanCounts {
    pub fn new(topo: &Topology) -> SpanCounts {
        SpanCounts { leaf: vec![0; topo.n_leaves()], pod: vec![0; topo.n_pods()] }
    }

    /// Counted from scratch from who holds what (for a state carrying no tracker).
    pub fn of_state(topo: &Topology, state: &ClusterState) -> SpanCounts {
        let mut c = SpanCounts::new(topo);
        for (_, nodes) in state.holdings() {
            c.allocate(topo, &nodes, topo.span_class(&nodes));
        }
        c
    }

    /// Jobs spanning leaves with a node on `leaf`.
    #[inline]
    pub fn leaf_spanning(&self, leaf: u32) -> u32 {
        self.leaf[leaf as usize]
    }
    /// Jobs spanning pods with a node in `pod`.
    #[inline]
    pub fn pod_spanning(&self, pod: u32) -> u32 {
        self.pod[pod as usize]
    }

    /// Add `delta` to the leaves (and pods) of one job's ascending `nodes`, once each.
    fn add(&mut self, topo: &Topology, nodes: &[u32], class: SpanClass, delta: i32) {
        if !class.spans_leaves() {
            return;
        }
        let bump = |c: &mut u32| *c = c.checked_add_signed(delta).expect("span counts follow allocations");
        for_each_leaf(topo, nodes, |leaf, new_pod| {
            bump(&mut self.leaf[leaf as usize]);
            if new_pod && class.spans_pods() {
                bump(&mut self.pod[topo.pod_of_leaf(leaf) as usize]);
            }
        });
    }
}

/// Call `f(leaf, first leaf of its pod in this walk)` once for each leaf holding some of
/// the ascending `nodes` (leaf-major ids: leaves, and pods, come in order). O(leaves
/// touched x log nodes).
pub(crate) fn for_each_leaf(topo: &Topology, nodes: &[u32], mut f: impl FnMut(u32, bool)) {
    debug_assert!(nodes.windows(2).all(|w| w[0] < w[1]), "nodes must be ascending");
    let (mut i, mut last_pod) = (0, u32::MAX);
    while i < nodes.len() {
        let leaf = topo.leaf_of(nodes[i]);
        let pod = topo.pod_of_leaf(leaf);
        f(leaf, pod != last_pod);
        last_pod = pod;
        let end = topo.leaf_nodes(leaf).end;
        i += nodes[i..].partition_point(|&n| n < end).max(1);
    }
}

impl Tracker for SpanCounts {
    fn allocate(&mut self, topo: &Topology, nodes: &[u32], class: SpanClass) {
        self.add(topo, nodes, class, 1);
    }
    fn release(&mut self, topo: &Topology, nodes: &[u32], class: SpanClass) {
        self.add(topo, nodes, class, -1);
    }
    fn clone_box(&self) -> Box<dyn Tracker> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The interference-free allocator.
#[derive(Clone, Debug, Default)]
pub struct Isolated {
    opts: IsolatedOptions,
    // Scratch space reused across calls (the allocator runs millions of times per replay).
    leaf_avail: Vec<u32>,
    pod_avail: Vec<u32>,
    order: Vec<u32>,
    leaf_order: Vec<u32>,
    /// The guard's reservations spanning leaves on each leaf, and spanning pods in each
    /// pod (filled by `count_reserved` when the guard has any).
    reserved_leaf: Vec<u32>,
    reserved_pod: Vec<u32>,
    any_reserved: bool,
    /// Healthy nodes of the best leaf and of the best pod: the empty machine never changes
    /// during a run, so the submit check computes them once.
    best_healthy: std::sync::OnceLock<(u32, u32)>,
}

/// T1, T2 or T3 for a job of `nodes` nodes on `topo` (brief §2.3: `<=` comparisons, K and
/// p the largest leaf and pod).
pub fn tier(topo: &Topology, nodes: u32) -> SpanClass {
    if nodes <= topo.nodes_per_leaf() {
        SpanClass::Leaf
    } else if nodes <= topo.max_pod_nodes() {
        SpanClass::Pod
    } else {
        SpanClass::Pods
    }
}

impl Isolated {
    pub fn new(opts: IsolatedOptions) -> Isolated {
        Isolated { opts, ..Default::default() }
    }

    /// Free nodes per leaf and per pod that the guard leaves available.
    fn compute_avail(&mut self, topo: &Topology, state: &ClusterState, guard: &Guard) {
        self.leaf_avail.clear();
        match guard.excluded {
            None => self.leaf_avail.extend((0..topo.n_leaves() as u32).map(|l| state.leaf_free(l))),
            Some(ex) => self.leaf_avail.extend(
                (0..topo.n_leaves() as u32)
                    .map(|l| state.free_set().count_range_minus(topo.leaf_nodes(l), ex)),
            ),
        }
        self.pod_avail.clear();
        for p in 0..topo.n_pods() as u32 {
            let sum = topo.pod_leaves(p).map(|l| self.leaf_avail[l as usize]).sum();
            self.pod_avail.push(sum);
        }
    }

    /// Sort `ids` by (availability, name rank): ascending, or descending with the tie
    /// order the profile asks for.
    fn sort(ids: &mut [u32], avail: &[u32], rank: impl Fn(u32) -> u32, descending: bool, tie: TieBreak) {
        if !descending {
            ids.sort_unstable_by_key(|&i| (avail[i as usize], rank(i)));
        } else {
            match tie {
                TieBreak::Name => ids.sort_unstable_by_key(|&i| std::cmp::Reverse((avail[i as usize], rank(i)))),
                TieBreak::Index => ids.sort_unstable_by_key(|&i| (std::cmp::Reverse(avail[i as usize]), i)),
            }
        }
    }

    fn sorted_pods(&mut self, topo: &Topology, min_avail: u32, descending: bool) {
        self.order.clear();
        self.order.extend((0..topo.n_pods() as u32).filter(|&p| self.pod_avail[p as usize] >= min_avail));
        let tie = self.opts.tie_break;
        let rank = |p: u32| if tie == TieBreak::Name { topo.pod_name_rank(p) } else { p };
        Self::sort(&mut self.order, &self.pod_avail, rank, descending, tie);
    }

    fn sorted_leaves(&mut self, topo: &Topology, pod: u32, min_avail: u32, descending: bool) {
        self.leaf_order.clear();
        self.leaf_order.extend(topo.pod_leaves(pod).filter(|&l| self.leaf_avail[l as usize] >= min_avail));
        let tie = self.opts.tie_break;
        let rank = |l: u32| if tie == TieBreak::Name { topo.leaf_name_rank(l) } else { l };
        Self::sort(&mut self.leaf_order, &self.leaf_avail, rank, descending, tie);
    }

    /// What the guard's reservations close: per leaf, those spanning leaves that touch it;
    /// per pod, those spanning pods (brief §2.6: the reserved job's leaves and pods).
    fn count_reserved(&mut self, topo: &Topology, guard: &Guard) {
        self.any_reserved = guard.reserved.iter().any(|r| r.class.spans_leaves());
        if !self.any_reserved {
            return;
        }
        self.reserved_leaf.clear();
        self.reserved_leaf.resize(topo.n_leaves(), 0);
        self.reserved_pod.clear();
        self.reserved_pod.resize(topo.n_pods(), 0);
        for r in guard.reserved.iter().filter(|r| r.class.spans_leaves()) {
            for_each_leaf(topo, r.nodes, |leaf, new_pod| {
                self.reserved_leaf[leaf as usize] += 1;
                if new_pod && r.class.spans_pods() {
                    self.reserved_pod[topo.pod_of_leaf(leaf) as usize] += 1;
                }
            });
        }
    }

    /// A leaf is open to a job spanning leaves when no running job spanning leaves holds a
    /// node of it and no reservation spanning leaves touches it.
    #[inline]
    fn leaf_open(&self, counts: &SpanCounts, leaf: u32) -> bool {
        counts.leaf_spanning(leaf) + if self.any_reserved { self.reserved_leaf[leaf as usize] } else { 0 } < 1
    }
    /// The same for pods and jobs spanning pods.
    #[inline]
    fn pod_open(&self, counts: &SpanCounts, pod: u32) -> bool {
        counts.pod_spanning(pod) + if self.any_reserved { self.reserved_pod[pod as usize] } else { 0 } < 1
    }

    /// Walk `leaf_order`, skipping leaves closed to spanning jobs, taking what each leaf
    /// has until `chosen` holds `nodes`; true when it does.
    fn fill_from_open_leaves(&self, topo: &Topology, state: &ClusterState, counts: &SpanCounts, guard: &Guard, nodes: u32, chosen: &mut Vec<u32>) -> bool {
        for &leaf in &self.leaf_order {
            if !self.leaf_open(counts, leaf) {
                continue;
            }
            let m = self.leaf_avail[leaf as usize].min(nodes - chosen.len() as u32);
            Self::take(topo, state, guard, leaf, m, chosen);
            if chosen.len() == nodes as usize {
                return true;
            }
        }
        false
    }

    /// Take up to `m` available nodes of `leaf`, lowest ids first.
    fn take(topo: &Topology, state: &ClusterState, guard: &Guard, leaf: u32, m: u32, out: &mut Vec<u32>) {
        out.extend(state.free_set().iter_range(topo.leaf_nodes(leaf)).filter(|&n| !guard.excludes(n)).take(m as usize));
    }
}

/// The state's [`SpanCounts`], or (a state built without the policy's tracker) counted
/// now into `recounted`: correct, at O(nodes) per call.
fn span_counts<'a>(topo: &Topology, state: &'a ClusterState, recounted: &'a mut Option<SpanCounts>) -> &'a SpanCounts {
    match state.tracked::<SpanCounts>() {
        Some(c) => c,
        None => recounted.insert(SpanCounts::of_state(topo, state)),
    }
}

impl Allocator for Isolated {
    fn name(&self) -> String {
        "isolated".into()
    }

    fn fungible(&self) -> bool {
        false
    }

    fn tracker(&self, topo: &Topology) -> Option<Box<dyn Tracker>> {
        Some(Box::new(SpanCounts::new(topo)))
    }

    fn check_fits_ever(&self, topo: &Topology, empty: &ClusterState, nodes: u32) -> Result<(), String> {
        if nodes == 0 {
            return Err("job asks for 0 nodes".into());
        }
        let &(best_leaf, best_pod) = self.best_healthy.get_or_init(|| {
            let leaf = (0..topo.n_leaves() as u32).map(|l| empty.leaf_healthy(topo, l)).max().unwrap_or(0);
            let pod = (0..topo.n_pods() as u32)
                .map(|p| topo.pod_leaves(p).map(|l| empty.leaf_healthy(topo, l)).sum::<u32>())
                .max()
                .unwrap_or(0);
            (leaf, pod)
        });
        match tier(topo, nodes) {
            SpanClass::Leaf if best_leaf < nodes => {
                Err(format!("T1 job of {nodes} nodes needs one leaf with {nodes} healthy nodes; the best leaf has {best_leaf}"))
            }
            SpanClass::Pod if best_pod < nodes => {
                Err(format!("T2 job of {nodes} nodes needs one pod with {nodes} healthy nodes; the best pod has {best_pod}"))
            }
            SpanClass::Pods if empty.n_healthy() < nodes => {
                Err(format!("asks for {nodes} nodes; the machine has {} healthy nodes", empty.n_healthy()))
            }
            _ => Ok(()),
        }
    }

    fn select(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        if nodes == 0 || nodes > state.n_free() {
            return None;
        }
        self.compute_avail(topo, state, guard);
        let mut chosen = Vec::with_capacity(nodes as usize);
        match tier(topo, nodes) {
            SpanClass::Leaf => {
                self.sorted_pods(topo, nodes, false);
                for i in 0..self.order.len() {
                    let pod = self.order[i];
                    self.sorted_leaves(topo, pod, nodes, false);
                    // The plugin tries only the best-fit leaf of each pod; with exact
                    // counts it always fills.
                    if let Some(&leaf) = self.leaf_order.first() {
                        Self::take(topo, state, guard, leaf, nodes, &mut chosen);
                        debug_assert_eq!(chosen.len(), nodes as usize);
                        return Some(chosen);
                    }
                }
                None
            }
            SpanClass::Pod => {
                let mut recounted = None;
                let counts = span_counts(topo, state, &mut recounted);
                self.count_reserved(topo, guard);
                self.sorted_pods(topo, nodes, false);
                for i in 0..self.order.len() {
                    let pod = self.order[i];
                    chosen.clear();
                    self.sorted_leaves(topo, pod, 1, true);
                    if self.fill_from_open_leaves(topo, state, counts, guard, nodes, &mut chosen) {
                        return Some(chosen);
                    }
                    // A T2 job never spans pods: drop this pod's nodes, try the next pod.
                }
                None
            }
            _ => {
                let mut recounted = None;
                let counts = span_counts(topo, state, &mut recounted);
                self.count_reserved(topo, guard);
                self.sorted_pods(topo, 1, true);
                let leaves_descending = self.opts.leaf_order == LeafOrder::Paper;
                for i in 0..self.order.len() {
                    let pod = self.order[i];
                    if !self.pod_open(counts, pod) {
                        continue;
                    }
                    self.sorted_leaves(topo, pod, 1, leaves_descending);
                    // A T3 job accumulates across pods: keep what this pod gave.
                    if self.fill_from_open_leaves(topo, state, counts, guard, nodes, &mut chosen) {
                        return Some(chosen);
                    }
                }
                None
            }
        }
    }

    /// Within a tier, placement is a threshold on free nodes of one leaf (T1), of the open
    /// leaves of one pod (T2) or of all open leaves (T3): monotone in the job's size.
    fn monotone_class(&self, topo: &Topology, nodes: u32) -> Option<u8> {
        Some(tier(topo, nodes).number())
    }

    fn feasible(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> bool {
        if nodes == 0 || nodes > state.n_free() {
            return false;
        }
        self.compute_avail(topo, state, guard);
        let class = tier(topo, nodes);
        if class == SpanClass::Leaf {
            return self.leaf_avail.iter().any(|&a| a >= nodes);
        }
        let mut recounted = None;
        let counts = span_counts(topo, state, &mut recounted);
        self.count_reserved(topo, guard);
        let open_avail = |l: u32| if self.leaf_open(counts, l) { self.leaf_avail[l as usize] } else { 0 };
        match class {
            SpanClass::Pod => (0..topo.n_pods() as u32).any(|p| topo.pod_leaves(p).map(open_avail).sum::<u32>() >= nodes),
            _ => {
                (0..topo.n_pods() as u32)
                    .filter(|&p| self.pod_open(counts, p))
                    .map(|p| topo.pod_leaves(p).map(open_avail).sum::<u32>())
                    .sum::<u32>()
                    >= nodes
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The brief's worked examples E1–E7 (§3), node ids 0-based on the toy tree.
    use super::*;

    fn toy() -> Topology {
        Topology::preset("toy18").unwrap()
    }

    /// Place jobs one after another on an empty machine; None for a failure.
    fn place(topo: &Topology, opts: IsolatedOptions, down: &[u32], sizes: &[u32]) -> Vec<Option<Vec<u32>>> {
        let mut a = Isolated::new(opts);
        let mut s = crate::alloc::new_state(&a, topo, down);
        sizes
            .iter()
            .enumerate()
            .map(|(j, &n)| {
                let got = a.select(topo, &s, n, &Guard::NONE);
                assert_eq!(got.is_some(), a.feasible(topo, &s, n, &Guard::NONE), "feasible disagrees for job {j}");
                if let Some(nodes) = &got {
                    let mut sorted = nodes.clone();
                    sorted.sort_unstable();
                    s.allocate(topo, j as u32, &sorted, topo.span_class(&sorted));
                    assert_eq!(s.tracked::<SpanCounts>(), Some(&SpanCounts::of_state(topo, &s)), "tracked counts drift");
                }
                got.map(|mut v| {
                    v.sort_unstable();
                    v
                })
            })
            .collect()
    }

    fn r(v: &[u32]) -> Option<Vec<u32>> {
        Some(v.to_vec())
    }

    #[test]
    fn e1_thresholds() {
        let t = toy();
        assert_eq!([3, 4, 9, 10, 18].map(|n| tier(&t, n).number()), [1, 2, 2, 3, 3]);
        let empty = ClusterState::new(&t, &[]);
        assert!(Isolated::default().check_fits_ever(&t, &empty, 18).is_ok());
        assert!(Isolated::default().check_fits_ever(&t, &empty, 19).is_err());
    }

    #[test]
    fn e2_arrivals_on_an_empty_machine() {
        let got = place(&toy(), IsolatedOptions::default(), &[], &[2, 5, 3, 10, 1, 4]);
        assert_eq!(
            got,
            vec![r(&[0, 1]), r(&[3, 4, 6, 7, 8]), r(&[9, 10, 11]), None, r(&[2]), r(&[12, 15, 16, 17])]
        );
    }

    #[test]
    fn e3_fig3_allocation_both_profiles() {
        let got = place(&toy(), IsolatedOptions::default(), &[], &[10, 5, 2, 1]);
        let blue: Vec<u32> = std::iter::once(0).chain(9..18).collect();
        assert_eq!(got, vec![Some(blue), r(&[3, 4, 6, 7, 8]), r(&[1, 2]), r(&[5])]);
        let paper = IsolatedOptions { leaf_order: LeafOrder::Paper, tie_break: TieBreak::Name };
        let got = place(&toy(), paper, &[], &[10, 5, 2, 1]);
        let blue: Vec<u32> = std::iter::once(6).chain(9..18).collect();
        assert_eq!(got, vec![Some(blue), r(&[0, 1, 3, 4, 5]), r(&[7, 8]), r(&[2])]);
    }

    #[test]
    fn e4_t3_blocks_a_t2_job() {
        let got = place(&toy(), IsolatedOptions::default(), &[], &[10, 8, 2]);
        let x: Vec<u32> = std::iter::once(0).chain(9..18).collect();
        assert_eq!(got, vec![Some(x), None, r(&[1, 2])]);
    }

    #[test]
    fn e5_t2_and_t3_share_a_pod() {
        for opts in [IsolatedOptions::default(), IsolatedOptions { leaf_order: LeafOrder::Paper, tie_break: TieBreak::Name }] {
            let got = place(&toy(), opts, &[], &[5, 12]);
            let y: Vec<u32> = [0, 1, 2].into_iter().chain(9..18).collect();
            assert_eq!(got, vec![r(&[3, 4, 6, 7, 8]), Some(y)]);
        }
    }

    #[test]
    fn e6_second_t3_refused() {
        let got = place(&toy(), IsolatedOptions::default(), &[], &[10, 3, 10]);
        assert_eq!(got[1], r(&[3, 4, 5]));
        assert_eq!(got[2], None);
    }

    #[test]
    fn e7_drained_node() {
        let t = toy();
        let got = place(&t, IsolatedOptions::default(), &[4], &[3, 3, 9, 3]);
        let c: Vec<u32> = (9..18).collect();
        assert_eq!(got, vec![r(&[0, 1, 2]), r(&[6, 7, 8]), Some(c), None]);
    }

    #[test]
    fn guard_excludes_nodes_and_closes_leaves() {
        let t = toy();
        let s = ClusterState::new(&t, &[]);
        let mut ex = crate::state::NodeSet::new(18);
        for n in 0..9 {
            ex.insert(n);
        }
        let g = Guard { excluded: Some(&ex), ..Guard::NONE };
        let mut a = Isolated::default();
        let got = a.select(&t, &s, 3, &g).unwrap();
        assert!(got.iter().all(|&n| n >= 9));
        // a reservation spanning the leaves of pod 1 closes them to spanning jobs
        let reserved = [crate::alloc::Reserved { nodes: &[9, 12, 15], class: SpanClass::Pod }];
        let g = Guard { reserved: &reserved, ..Guard::NONE };
        let got = a.select(&t, &s, 5, &g).unwrap();
        assert!(got.iter().all(|&n| n < 9));
        let got = a.select(&t, &s, 9, &g);
        assert!(got.is_some());
        assert!(a.select(&t, &s, 12, &g).is_none());
        // T1 jobs ignore closed leaves (pod 0 excluded: only the closed leaves have room)
        let g1 = Guard { excluded: Some(&ex), reserved: &reserved };
        assert!(a.select(&t, &s, 3, &g1).unwrap().iter().all(|&n| n >= 9));
        assert!(a.select(&t, &s, 4, &g1).is_none());
        // the same reservation on one leaf (T1) closes nothing
        let one_leaf = [crate::alloc::Reserved { nodes: &[9, 10, 11], class: SpanClass::Leaf }];
        assert!(a.select(&t, &s, 12, &Guard { reserved: &one_leaf, ..Guard::NONE }).is_some());
        // spanning pods, it closes its pods to T3 jobs, and its leaves to T2/T3 jobs
        let pods = [crate::alloc::Reserved { nodes: &[0, 9], class: SpanClass::Pods }];
        let g = Guard { reserved: &pods, ..Guard::NONE };
        assert!(a.select(&t, &s, 10, &g).is_none());
        assert_eq!(a.select(&t, &s, 6, &g).map(|mut v| { v.sort_unstable(); v }), Some(vec![3, 4, 5, 6, 7, 8]));
    }

    #[test]
    fn a_state_without_the_tracker_is_counted_from_scratch() {
        let t = toy();
        let mut a = Isolated::default();
        let mut tracked = crate::alloc::new_state(&a, &t, &[]);
        let mut bare = ClusterState::new(&t, &[]);
        for (job, n) in [(0u32, 5u32), (1, 2), (2, 10), (3, 4)] {
            let x = a.select(&t, &tracked, n, &Guard::NONE);
            assert_eq!(x, a.select(&t, &bare, n, &Guard::NONE), "job {job}");
            if let Some(mut x) = x {
                x.sort_unstable();
                tracked.allocate(&t, job, &x, t.span_class(&x));
                bare.allocate(&t, job, &x, t.span_class(&x));
            }
        }
    }

    #[test]
    fn index_tie_break_prefers_low_indices_in_descending_sorts() {
        let opts = IsolatedOptions { leaf_order: LeafOrder::FluxTopo, tie_break: TieBreak::Index };
        let got = place(&toy(), opts, &[], &[10]);
        let x: Vec<u32> = (0..9).chain(std::iter::once(9)).collect();
        assert_eq!(got, vec![Some(x)]);
    }
}

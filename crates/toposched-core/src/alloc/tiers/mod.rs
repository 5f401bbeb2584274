//! What `isolated` and `capped` share: the SC18 tiers (T1 one leaf, T2 one pod, T3 across
//! pods), the per-leaf and per-pod counts of running jobs spanning leaves and pods (a
//! [`Tracker`] the policies install in the machine state), and the placement itself
//! ([`Tiered`]): the SC18 orders, with a leaf open to a job spanning leaves while fewer
//! than `leaf_cap` such jobs (running, or reserved in the guard) touch it, and a pod open
//! to a job spanning pods while fewer than `pod_cap` do. `isolated` is `Tiered` with both
//! caps 1 (brief §2.3–2.6); `capped` lets the caps grow.
//!
//! Not a policy file (a directory, so build.rs does not register it).

use std::any::Any;

use super::{Guard, Tracker};
use crate::state::{ClusterState, NodeSet};
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

/// Running jobs spanning leaves on each leaf and spanning pods in each pod: the tracker
/// `isolated` and `capped` install in the machine state (`Allocator::tracker`), told of
/// every allocation and release. Counts of jobs (a job counts once per leaf, however many
/// of its nodes the leaf holds).
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
/// touched) when the job holds its leaves' nodes in runs (the usual case), O(leaves touched
/// x log leaf size) at worst.
pub(crate) fn for_each_leaf(topo: &Topology, nodes: &[u32], mut f: impl FnMut(u32, bool)) {
    debug_assert!(nodes.windows(2).all(|w| w[0] < w[1]), "nodes must be ascending");
    let (mut i, mut last_pod) = (0, u32::MAX);
    while i < nodes.len() {
        let leaf = topo.leaf_of(nodes[i]);
        let pod = topo.pod_of_leaf(leaf);
        f(leaf, pod != last_pod);
        last_pod = pod;
        let end = topo.leaf_nodes(leaf).end;
        // Ascending distinct ids: at most `end - nodes[i]` of them are on this leaf, all of
        // them if the last of those is.
        let window = &nodes[i..nodes.len().min(i + (end - nodes[i]) as usize)];
        i += if window.last().is_some_and(|&n| n < end) { window.len() } else { window.partition_point(|&n| n < end) };
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

/// Placement by tiers under caps: the engine of `isolated` and `capped`.
#[derive(Clone, Debug)]
pub struct Tiered {
    /// Leaf-spanning jobs (running or reserved) a leaf may host; 1 for `isolated`.
    leaf_cap: u32,
    /// Pod-spanning jobs (running or reserved) a pod may host; 1 for `isolated`.
    pod_cap: u32,
    /// T3 leaf order inside a pod.
    t3_leaf_order: LeafOrder,
    tie_break: TieBreak,
    /// What the last few guards' reservations close ([`Closed`]), and what the last few
    /// (state, guard) pairs asked about give ([`View`]).
    closed: Vec<Closed>,
    views: Vec<View>,
    /// Counts lookups, to replace the least recently used entry; and numbers `Closed`s.
    clock: u64,
    // Scratch space reused across calls (the allocator runs millions of times per replay).
    order: Vec<u32>,
    leaf_order: Vec<u32>,
    plan: Vec<(u32, u32)>,
    /// Healthy nodes of the best leaf and of the best pod: the empty machine never changes
    /// during a run, so the submit check computes them once.
    best_healthy: std::sync::OnceLock<(u32, u32)>,
}

/// Views kept: EASY's backfill asks under up to three guards (reserved nodes excluded,
/// reserved tiers closed, none) about one state, between questions about copies of it
/// (its reservation search).
const VIEWS: usize = 4;
/// `Closed`s kept: EASY's guards carry the head's reservation or none.
const CLOSED: usize = 3;

/// What a guard's reservations close (brief §2.6: the reserved job's leaves to jobs
/// spanning leaves, its pods to jobs spanning pods), kept while the guard's reservations
/// are the same: EASY's backfill asks under one reservation about many states.
#[derive(Clone, Debug, Default)]
struct Closed {
    /// Names this computation (a [`View`] built with it records it).
    id: u64,
    // The key: the guard's reservations spanning leaves (the others close nothing), class
    // and node count of each, their nodes one after another in `nodes`.
    reserved: Vec<(SpanClass, usize, u64)>,
    nodes: Vec<u32>,
    last_used: u64,
    /// The reservations spanning leaves that touch each leaf, and spanning pods that touch
    /// each pod (zeros for a guard without any).
    leaf: Vec<u32>,
    pod: Vec<u32>,
}

impl Closed {
    fn matches(&self, guard: &Guard) -> bool {
        let (mut kept, mut off) = (self.reserved.iter(), 0);
        for r in guard.reserved.iter().filter(|r| r.class.spans_leaves()) {
            match kept.next() {
                // a nonzero stamp names the contents (`Reserved::stamp`)
                Some(&(class, len, stamp)) if class == r.class && len == r.nodes.len() && ((stamp != 0 && stamp == r.stamp) || self.nodes[off..off + len] == *r.nodes) => off += len,
                _ => return false,
            }
        }
        kept.next().is_none()
    }

    fn rebuild(&mut self, topo: &Topology, guard: &Guard, id: u64) {
        self.id = id;
        self.reserved.clear();
        self.nodes.clear();
        for r in guard.reserved.iter().filter(|r| r.class.spans_leaves()) {
            self.reserved.push((r.class, r.nodes.len(), r.stamp));
            self.nodes.extend_from_slice(r.nodes);
        }
        self.leaf.clear();
        self.leaf.resize(topo.n_leaves(), 0);
        self.pod.clear();
        self.pod.resize(topo.n_pods(), 0);
        let mut off = 0;
        for &(class, len, _) in &self.reserved {
            for_each_leaf(topo, &self.nodes[off..off + len], |leaf, new_pod| {
                self.leaf[leaf as usize] += 1;
                if new_pod && class.spans_pods() {
                    self.pod[topo.pod_of_leaf(leaf) as usize] += 1;
                }
            });
            off += len;
        }
    }
}

/// What placement reads from one machine state under one guard, computed once and kept
/// while both are the same (the state's stamp, the guard's contents): a queue policy asks
/// about many jobs between two changes of the state (EASY tries every queued job behind
/// the head, under the same guard), and most of them do not fit. Recomputing it per
/// question was most of the time of an EASY+isolated replay on a large fabric.
#[derive(Clone, Debug, Default)]
struct View {
    // The key: the state's stamp, the guard's excluded nodes, and its `Closed`.
    stamp: u64,
    excluded: Option<Vec<u64>>,
    closed_id: u64,
    last_used: u64,
    // What it gives.
    /// Free nodes the guard leaves available per leaf and per pod.
    leaf_avail: Vec<u32>,
    pod_avail: Vec<u32>,
    /// The largest T1 job that can be placed: the most available nodes on one leaf.
    best_leaf: u32,
    /// Whether the three below are computed (T1 questions do not need them).
    open_done: bool,
    /// Per pod, the available nodes of its leaves open to spanning jobs.
    pod_open_avail: Vec<u32>,
    /// The largest T2 job and T3 job that can be placed: the most available nodes on the
    /// open leaves of one pod, and on the open leaves of open pods.
    best_pod_open: u32,
    open_total: u32,
}

impl View {
    fn matches(&self, state: &ClusterState, guard: &Guard, closed_id: u64) -> bool {
        self.stamp == state.stamp() && self.closed_id == closed_id && self.same_excluded(guard)
    }

    fn same_excluded(&self, guard: &Guard) -> bool {
        self.excluded.as_deref() == guard.excluded.map(NodeSet::words)
    }

    fn rebuild(&mut self, topo: &Topology, state: &ClusterState, guard: &Guard, closed_id: u64) {
        (self.stamp, self.closed_id, self.open_done) = (state.stamp(), closed_id, false);
        self.leaf_avail.clear();
        self.pod_avail.clear();
        match guard.excluded {
            None => {
                self.excluded = None;
                self.leaf_avail.extend_from_slice(state.leaf_frees());
                self.pod_avail.extend_from_slice(state.pod_frees());
            }
            Some(ex) => {
                let words = self.excluded.get_or_insert_with(Vec::new);
                words.clear();
                words.extend_from_slice(ex.words());
                let bounds = (0..topo.n_leaves() as u32).map(|l| topo.leaf_nodes(l).start).chain([topo.n_nodes() as u32]);
                state.free_set().count_between_minus(bounds, ex, &mut self.leaf_avail);
                for p in 0..topo.n_pods() as u32 {
                    let sum = topo.pod_leaves(p).map(|l| self.leaf_avail[l as usize]).sum();
                    self.pod_avail.push(sum);
                }
            }
        }
        self.best_leaf = self.leaf_avail.iter().copied().max().unwrap_or(0);
    }

    /// Bring a view of the state that carried `stamp_before` up to `state`, whose last
    /// change touched only `leaves` (an inclusive leaf range; their pods are the only pods
    /// it touched): recount those leaves and pods, and the maxima and total. The same
    /// result as [`rebuild`](Self::rebuild) (tested), at the cost of the change's leaves.
    #[allow(clippy::too_many_arguments)]
    fn update(&mut self, topo: &Topology, state: &ClusterState, guard: &Guard, closed: &Closed, leaves: std::ops::RangeInclusive<u32>, leaf_cap: u32, pod_cap: u32) {
        self.stamp = state.stamp();
        let pods = topo.pod_of_leaf(*leaves.start())..=topo.pod_of_leaf(*leaves.end());
        // The best leaf: the largest new count, unless a leaf that had the best lost some
        // (then all are looked at).
        let (mut best, mut lowered) = (self.best_leaf, false);
        for l in leaves.clone() {
            let now = match guard.excluded {
                None => state.leaf_free(l),
                Some(ex) => state.free_set().count_range_minus(topo.leaf_nodes(l), ex),
            };
            let was = std::mem::replace(&mut self.leaf_avail[l as usize], now);
            lowered |= was == self.best_leaf && now < was;
            best = best.max(now);
        }
        self.best_leaf = if lowered { self.leaf_avail.iter().copied().max().unwrap_or(0) } else { best };
        for p in pods.clone() {
            self.pod_avail[p as usize] = match guard.excluded {
                None => state.pod_free(p),
                Some(_) => topo.pod_leaves(p).map(|l| self.leaf_avail[l as usize]).sum(),
            };
        }
        if self.open_done {
            let mut recounted = None;
            let counts = span_counts(topo, state, &mut recounted);
            for p in pods {
                self.pod_open_avail[p as usize] = self.open_avail(topo, counts, closed, p, leaf_cap);
            }
            self.open_totals(topo, counts, closed, pod_cap);
        }
    }

    /// Available nodes on the leaves of `pod` open to spanning jobs.
    #[inline]
    fn open_avail(&self, topo: &Topology, counts: &SpanCounts, closed: &Closed, pod: u32, leaf_cap: u32) -> u32 {
        let leaves = topo.pod_leaves(pod);
        let r = leaves.start as usize..leaves.end as usize;
        // Without branches on the data: this runs for every state a reservation search
        // projects (the sum of free nodes cannot overflow).
        self.leaf_avail[r.clone()].iter().zip(&counts.leaf[r.clone()]).zip(&closed.leaf[r]).fold(0u32, |sum, ((&avail, &spanning), &reserved)| {
            sum.wrapping_add(if spanning < leaf_cap.saturating_sub(reserved) { avail } else { 0 })
        })
    }

    /// `best_pod_open` and `open_total` from `pod_open_avail`.
    fn open_totals(&mut self, topo: &Topology, counts: &SpanCounts, closed: &Closed, pod_cap: u32) {
        self.best_pod_open = self.pod_open_avail.iter().copied().max().unwrap_or(0);
        self.open_total = (0..topo.n_pods() as u32).filter(|&p| pod_open(counts, closed, p, pod_cap)).map(|p| self.pod_open_avail[p as usize]).sum();
    }

    /// Compute the open sums if not yet done.
    fn open(&mut self, topo: &Topology, state: &ClusterState, closed: &Closed, leaf_cap: u32, pod_cap: u32) {
        if self.open_done {
            return;
        }
        let mut recounted = None;
        let counts = span_counts(topo, state, &mut recounted);
        self.pod_open_avail.clear();
        for p in 0..topo.n_pods() as u32 {
            let open = self.open_avail(topo, counts, closed, p, leaf_cap);
            self.pod_open_avail.push(open);
        }
        self.open_totals(topo, counts, closed, pod_cap);
        self.open_done = true;
    }
}

/// A leaf is open to a job spanning leaves while the running jobs spanning leaves that
/// hold a node of it, plus the reservations spanning leaves that touch it, are fewer than
/// `leaf_cap` (`isolated`: none of either).
#[inline]
fn leaf_open(counts: &SpanCounts, closed: &Closed, leaf: u32, leaf_cap: u32) -> bool {
    counts.leaf_spanning(leaf) + closed.leaf[leaf as usize] < leaf_cap
}
/// The same for pods, jobs spanning pods and `pod_cap`.
#[inline]
fn pod_open(counts: &SpanCounts, closed: &Closed, pod: u32, pod_cap: u32) -> bool {
    counts.pod_spanning(pod) + closed.pod[pod as usize] < pod_cap
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

/// A slot of `entries` to fill: a new one below `max`, else the least recently used.
fn lru_slot<T: Default>(entries: &mut Vec<T>, max: usize, last_used: impl Fn(&T) -> u64) -> usize {
    if entries.len() < max {
        entries.push(T::default());
        entries.len() - 1
    } else {
        (0..entries.len()).min_by_key(|&i| last_used(&entries[i])).expect("max > 0")
    }
}

/// Sort `ids` by (availability, name rank): ascending, or descending with the tie order
/// the profile asks for.
fn sort_by_avail(ids: &mut [u32], avail: &[u32], rank: impl Fn(u32) -> u32, descending: bool, tie: TieBreak) {
    if !descending {
        ids.sort_unstable_by_key(|&i| (avail[i as usize], rank(i)));
    } else {
        match tie {
            TieBreak::Name => ids.sort_unstable_by_key(|&i| std::cmp::Reverse((avail[i as usize], rank(i)))),
            TieBreak::Index => ids.sort_unstable_by_key(|&i| (std::cmp::Reverse(avail[i as usize]), i)),
        }
    }
}

impl Tiered {
    /// Caps of at least 1 (0 would close every leaf to spanning jobs: checked by the
    /// policies' options).
    pub fn new(leaf_cap: u32, pod_cap: u32, t3_leaf_order: LeafOrder, tie_break: TieBreak) -> Tiered {
        assert!(leaf_cap >= 1 && pod_cap >= 1, "caps must be at least 1");
        Tiered {
            leaf_cap,
            pod_cap,
            t3_leaf_order,
            tie_break,
            closed: Vec::new(),
            views: Vec::new(),
            clock: 0,
            order: Vec::new(),
            leaf_order: Vec::new(),
            plan: Vec::new(),
            best_healthy: std::sync::OnceLock::new(),
        }
    }

    pub fn caps(&self) -> (u32, u32) {
        (self.leaf_cap, self.pod_cap)
    }

    /// The indices in `views` and `closed` for (`state`, `guard`), computed now where no
    /// kept one matches (replacing the least recently used); with the open sums if `open`.
    fn view(&mut self, topo: &Topology, state: &ClusterState, guard: &Guard, open: bool) -> (usize, usize) {
        self.clock += 1;
        let ci = match self.closed.iter().position(|c| c.matches(guard)) {
            Some(i) => i,
            None => {
                let i = lru_slot(&mut self.closed, CLOSED, |c| c.last_used);
                self.closed[i].rebuild(topo, guard, self.clock);
                i
            }
        };
        self.closed[ci].last_used = self.clock;
        let closed_id = self.closed[ci].id;
        let vi = match self.views.iter().position(|v| v.matches(state, guard, closed_id)) {
            Some(i) => i,
            None => {
                // The view of the state before its last change, if kept, brought up to
                // date in place (that state is usually gone: a job started, or a copy
                // released one); else a new one.
                let before = state.last_change().and_then(|(stamp, leaves)| {
                    let i = self.views.iter().position(|v| v.stamp == stamp && v.closed_id == closed_id && v.same_excluded(guard))?;
                    Some((i, leaves))
                });
                match before {
                    Some((i, leaves)) => {
                        self.views[i].update(topo, state, guard, &self.closed[ci], leaves, self.leaf_cap, self.pod_cap);
                        i
                    }
                    None => {
                        let i = lru_slot(&mut self.views, VIEWS, |v| v.last_used);
                        self.views[i].rebuild(topo, state, guard, closed_id);
                        i
                    }
                }
            }
        };
        self.views[vi].last_used = self.clock;
        if open {
            self.views[vi].open(topo, state, &self.closed[ci], self.leaf_cap, self.pod_cap);
        }
        (vi, ci)
    }

    /// Name rank of a pod or leaf for ties, or its index, as the profile asks.
    fn rank(&self, name_rank: u32, index: u32) -> u32 {
        if self.tie_break == TieBreak::Name {
            name_rank
        } else {
            index
        }
    }

    /// Walk `leaf_order`, skipping leaves closed to spanning jobs, planning to take what
    /// each leaf has (`plan`: leaf, count) until `planned` reaches `nodes`; true when it does.
    #[allow(clippy::too_many_arguments)]
    fn plan_from_open_leaves(leaf_order: &[u32], view: &View, closed: &Closed, leaf_cap: u32, counts: &SpanCounts, nodes: u32, planned: &mut u32, plan: &mut Vec<(u32, u32)>) -> bool {
        for &leaf in leaf_order {
            if !leaf_open(counts, closed, leaf, leaf_cap) {
                continue;
            }
            let m = view.leaf_avail[leaf as usize].min(nodes - *planned);
            plan.push((leaf, m));
            *planned += m;
            if *planned == nodes {
                return true;
            }
        }
        false
    }

    /// The nodes `plan` asks for, ascending: each leaf's lowest available ids, leaves in
    /// id order (callers sort what they are given: a sorted list costs them one scan).
    fn take_plan(topo: &Topology, state: &ClusterState, guard: &Guard, plan: &mut [(u32, u32)], out: &mut Vec<u32>) {
        plan.sort_unstable_by_key(|&(leaf, _)| leaf);
        for &(leaf, m) in plan.iter() {
            Self::take(topo, state, guard, leaf, m, out);
        }
    }

    /// The leaves of `pod` with at least `min_avail` available nodes into `out`, in the
    /// SC18 order (availability, then the tie order).
    fn sorted_leaves(&self, out: &mut Vec<u32>, view: &View, topo: &Topology, pod: u32, min_avail: u32, descending: bool) {
        out.clear();
        out.extend(topo.pod_leaves(pod).filter(|&l| view.leaf_avail[l as usize] >= min_avail));
        sort_by_avail(out, &view.leaf_avail, |l| self.rank(topo.leaf_name_rank(l), l), descending, self.tie_break);
    }

    /// Take up to `m` available nodes of `leaf`, lowest ids first.
    fn take(topo: &Topology, state: &ClusterState, guard: &Guard, leaf: u32, m: u32, out: &mut Vec<u32>) {
        state.free_set().take_range_minus(topo.leaf_nodes(leaf), guard.excluded, m, out);
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

/// What a policy built on [`Tiered`] answers to the `Allocator` questions (its own file
/// forwards them; neither policy is fungible).
impl Tiered {
    /// Its counters: a [`SpanCounts`].
    pub fn tracker(&self, topo: &Topology) -> Option<Box<dyn Tracker>> {
        Some(Box::new(SpanCounts::new(topo)))
    }

    /// T1 needs a leaf, T2 a pod, T3 the machine with enough healthy nodes.
    pub fn check_fits_ever(&self, topo: &Topology, empty: &ClusterState, nodes: u32) -> Result<(), String> {
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

    /// The SC18 orders. T1: pods by ascending availability, in each the leaves by
    /// ascending availability, the first leaf that fits. T2: pods the same way, the first
    /// whose open leaves (most available first) hold the job. T3: pods by descending
    /// availability, their open leaves in the profile's order, until the job is placed.
    /// The view's per-tier bounds answer a job that cannot be placed without a walk, and
    /// pick the T1 leaf and the T2 pod the walk would reach (the sorts' keys end with a
    /// name rank or an index, unique, so the first in the order is the minimum).
    pub fn select(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        if nodes == 0 || nodes > state.n_free() {
            return None;
        }
        let class = tier(topo, nodes);
        let (vi, ci) = self.view(topo, state, guard, class != SpanClass::Leaf);
        let (view, closed) = (&self.views[vi], &self.closed[ci]);
        let mut chosen = Vec::with_capacity(nodes as usize);
        match class {
            SpanClass::Leaf => {
                if view.best_leaf < nodes {
                    return None;
                }
                // The plugin tries only the best-fit leaf of each pod; with exact counts
                // it always fills.
                // The first pod in that order with a leaf that fits (a pod's key is unique:
                // pods keyed no better than the best so far are not searched), then its
                // first leaf that fits.
                let fits = |l: u32| view.leaf_avail[l as usize] >= nodes;
                let mut best: Option<((u32, u32), u32)> = None;
                for p in 0..topo.n_pods() as u32 {
                    let key = (view.pod_avail[p as usize], self.rank(topo.pod_name_rank(p), p));
                    if key.0 >= nodes && best.map_or(true, |(k, _)| key < k) && topo.pod_leaves(p).any(fits) {
                        best = Some((key, p));
                    }
                }
                let pod = best?.1;
                let leaf = topo.pod_leaves(pod).filter(|&l| fits(l)).min_by_key(|&l| (view.leaf_avail[l as usize], self.rank(topo.leaf_name_rank(l), l)))?;
                Self::take(topo, state, guard, leaf, nodes, &mut chosen);
                debug_assert_eq!(chosen.len(), nodes as usize);
                Some(chosen)
            }
            SpanClass::Pod => {
                if view.best_pod_open < nodes {
                    return None;
                }
                // Pods whose open leaves hold fewer nodes fail (a T2 job never spans pods).
                let pod = (0..topo.n_pods() as u32)
                    .filter(|&p| view.pod_open_avail[p as usize] >= nodes)
                    .min_by_key(|&p| (view.pod_avail[p as usize], self.rank(topo.pod_name_rank(p), p)))?;
                let mut recounted = None;
                let counts = span_counts(topo, state, &mut recounted);
                let (mut leaf_order, mut plan) = (std::mem::take(&mut self.leaf_order), std::mem::take(&mut self.plan));
                self.sorted_leaves(&mut leaf_order, view, topo, pod, 1, true);
                plan.clear();
                let filled = Self::plan_from_open_leaves(&leaf_order, view, closed, self.leaf_cap, counts, nodes, &mut 0, &mut plan);
                debug_assert!(filled, "the pod's open leaves hold the job");
                Self::take_plan(topo, state, guard, &mut plan, &mut chosen);
                (self.leaf_order, self.plan) = (leaf_order, plan);
                filled.then_some(chosen)
            }
            _ => {
                if view.open_total < nodes {
                    return None;
                }
                let mut recounted = None;
                let counts = span_counts(topo, state, &mut recounted);
                let (mut order, mut leaf_order, mut plan) =
                    (std::mem::take(&mut self.order), std::mem::take(&mut self.leaf_order), std::mem::take(&mut self.plan));
                order.clear();
                order.extend((0..topo.n_pods() as u32).filter(|&p| view.pod_avail[p as usize] >= 1));
                sort_by_avail(&mut order, &view.pod_avail, |p| self.rank(topo.pod_name_rank(p), p), true, self.tie_break);
                let leaves_descending = self.t3_leaf_order == LeafOrder::Paper;
                let (mut filled, mut planned) = (false, 0);
                plan.clear();
                for &pod in &order {
                    if !pod_open(counts, closed, pod, self.pod_cap) {
                        continue;
                    }
                    self.sorted_leaves(&mut leaf_order, view, topo, pod, 1, leaves_descending);
                    // A T3 job accumulates across pods: keep what this pod gave.
                    if Self::plan_from_open_leaves(&leaf_order, view, closed, self.leaf_cap, counts, nodes, &mut planned, &mut plan) {
                        filled = true;
                        break;
                    }
                }
                debug_assert!(filled, "the open pods' open leaves hold the job");
                Self::take_plan(topo, state, guard, &mut plan, &mut chosen);
                (self.order, self.leaf_order, self.plan) = (order, leaf_order, plan);
                filled.then_some(chosen)
            }
        }
    }

    /// Within a tier, placement is a threshold on free nodes of one leaf (T1), of the open
    /// leaves of one pod (T2) or of all open leaves (T3): monotone in the job's size.
    pub fn monotone_class(&self, topo: &Topology, nodes: u32) -> Option<u8> {
        Some(tier(topo, nodes).number())
    }

    /// Those thresholds, read from the view.
    pub fn feasible(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> bool {
        if nodes == 0 || nodes > state.n_free() {
            return false;
        }
        let class = tier(topo, nodes);
        let (vi, _) = self.view(topo, state, guard, class != SpanClass::Leaf);
        let view = &self.views[vi];
        let best = match class {
            SpanClass::Leaf => view.best_leaf,
            SpanClass::Pod => view.best_pod_open,
            SpanClass::Pods => view.open_total,
        };
        nodes <= best
    }
}

#[cfg(test)]
mod tests {
    //! `Tiered` against the placement written out plainly, as it was before the views: per
    //! question, availability recounted, pods and leaves sorted and walked in the SC18
    //! orders. Many questions go to one long-lived `Tiered`, about states that change, are
    //! copied and change separately, under guards that alternate: whatever it keeps must
    //! never answer for another state or guard.
    use super::*;
    use crate::alloc::Reserved;
    use proptest::prelude::*;

    struct Plain {
        leaf_cap: u32,
        pod_cap: u32,
        t3_leaf_order: LeafOrder,
        tie: TieBreak,
    }

    impl Plain {
        fn rank(&self, name_rank: u32, index: u32) -> u32 {
            if self.tie == TieBreak::Name {
                name_rank
            } else {
                index
            }
        }

        /// (leaf_avail, pod_avail, reserved_leaf, reserved_pod)
        fn avail(&self, t: &Topology, s: &ClusterState, g: &Guard) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>) {
            let leaf: Vec<u32> =
                (0..t.n_leaves() as u32).map(|l| t.leaf_nodes(l).filter(|&n| s.is_free(n) && !g.excludes(n)).count() as u32).collect();
            let pod = (0..t.n_pods() as u32).map(|p| t.pod_leaves(p).map(|l| leaf[l as usize]).sum()).collect();
            let (mut rl, mut rp) = (vec![0; t.n_leaves()], vec![0; t.n_pods()]);
            for r in g.reserved.iter().filter(|r| r.class.spans_leaves()) {
                let mut leaves: Vec<u32> = r.nodes.iter().map(|&n| t.leaf_of(n)).collect();
                leaves.dedup();
                let mut pods: Vec<u32> = leaves.iter().map(|&l| t.pod_of_leaf(l)).collect();
                pods.dedup();
                leaves.iter().for_each(|&l| rl[l as usize] += 1);
                if r.class.spans_pods() {
                    pods.iter().for_each(|&p| rp[p as usize] += 1);
                }
            }
            (leaf, pod, rl, rp)
        }

        fn select(&self, t: &Topology, s: &ClusterState, nodes: u32, g: &Guard) -> Option<Vec<u32>> {
            if nodes == 0 || nodes > s.n_free() {
                return None;
            }
            let (la, pa, rl, rp) = self.avail(t, s, g);
            let counts = SpanCounts::of_state(t, s);
            let leaf_open = |l: u32| counts.leaf_spanning(l) + rl[l as usize] < self.leaf_cap;
            let pod_open = |p: u32| counts.pod_spanning(p) + rp[p as usize] < self.pod_cap;
            let sorted = |ids: Vec<u32>, avail: &[u32], rank: &dyn Fn(u32) -> u32, desc: bool| {
                let mut ids = ids;
                sort_by_avail(&mut ids, avail, rank, desc, self.tie);
                ids
            };
            let pods = |min: u32, desc: bool| {
                let ids = (0..t.n_pods() as u32).filter(|&p| pa[p as usize] >= min).collect();
                sorted(ids, &pa, &|p| self.rank(t.pod_name_rank(p), p), desc)
            };
            let leaves = |pod: u32, min: u32, desc: bool| {
                let ids = t.pod_leaves(pod).filter(|&l| la[l as usize] >= min).collect();
                sorted(ids, &la, &|l| self.rank(t.leaf_name_rank(l), l), desc)
            };
            let take = |leaf: u32, m: u32, out: &mut Vec<u32>| {
                out.extend(t.leaf_nodes(leaf).filter(|&n| s.is_free(n) && !g.excludes(n)).take(m as usize));
            };
            let fill = |order: &[u32], chosen: &mut Vec<u32>| {
                for &l in order.iter().filter(|&&l| leaf_open(l)) {
                    take(l, la[l as usize].min(nodes - chosen.len() as u32), chosen);
                    if chosen.len() == nodes as usize {
                        return true;
                    }
                }
                false
            };
            let mut chosen = vec![];
            match tier(t, nodes) {
                SpanClass::Leaf => {
                    for p in pods(nodes, false) {
                        if let Some(&l) = leaves(p, nodes, false).first() {
                            take(l, nodes, &mut chosen);
                            return Some(chosen);
                        }
                    }
                    None
                }
                SpanClass::Pod => {
                    for p in pods(nodes, false) {
                        chosen.clear();
                        if fill(&leaves(p, 1, true), &mut chosen) {
                            return Some(chosen);
                        }
                    }
                    None
                }
                SpanClass::Pods => {
                    for p in pods(1, true).into_iter().filter(|&p| pod_open(p)) {
                        if fill(&leaves(p, 1, self.t3_leaf_order == LeafOrder::Paper), &mut chosen) {
                            return Some(chosen);
                        }
                    }
                    None
                }
            }
        }
    }

    /// Pods of leaves of 1 to 4 nodes, leaf and pod names in a shuffled order (ties by name
    /// are not ties by index).
    fn fabric() -> impl Strategy<Value = Topology> {
        (prop::collection::vec(prop::collection::vec(1u32..5, 1..4), 1..4), any::<u64>()).prop_map(|(pods, salt)| {
            let n_leaves: usize = pods.iter().map(Vec::len).sum();
            let name = |i: usize, what: &str| format!("{what}{}", (i as u64).wrapping_mul(salt | 1) % 1000);
            let leaves: Vec<String> = (0..n_leaves).map(|i| name(i, "l") + &format!("_{i}")).collect();
            let pod_names: Vec<String> = (0..pods.len()).map(|i| name(i, "p") + &format!("_{i}")).collect();
            Topology::from_leaf_sizes("t", 3, &pods, None, None, Some(&leaves), Some(&pod_names)).unwrap()
        })
    }

    /// One step on the newest state (or, for `Place(_, true)`, on the first one, which
    /// copies were made from): place a job of this size, release a running job, or copy
    /// the state.
    #[derive(Clone, Debug)]
    enum Step {
        Place(u32, bool),
        Release(usize),
        Copy,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => (1u32..16, any::<bool>()).prop_map(|(n, c)| Step::Place(n, c)),
            2 => (0usize..8).prop_map(Step::Release),
            1 => Just(Step::Copy),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Each leaf holding some of the nodes once, in order, flagged when its pod is new.
        #[test]
        fn for_each_leaf_visits_the_leaves_of_the_nodes(topo in fabric(), pick in prop::collection::vec(any::<bool>(), 64)) {
            let nodes: Vec<u32> = (0..topo.n_nodes() as u32).filter(|&n| pick[n as usize % 64]).collect();
            let mut want: Vec<(u32, bool)> = vec![];
            for &n in &nodes {
                let leaf = topo.leaf_of(n);
                if want.last().map(|w| w.0) != Some(leaf) {
                    let new_pod = want.last().map_or(true, |w| topo.pod_of_leaf(w.0) != topo.pod_of_leaf(leaf));
                    want.push((leaf, new_pod));
                }
            }
            let mut got = vec![];
            for_each_leaf(&topo, &nodes, |leaf, new_pod| got.push((leaf, new_pod)));
            prop_assert_eq!(got, want);
        }

        #[test]
        fn views_answer_as_the_plain_walk(
            topo in fabric(),
            caps in (1u32..3, 1u32..3),
            paper in any::<bool>(),
            by_index in any::<bool>(),
            steps in prop::collection::vec(step(), 1..30),
            excluded_bits in prop::collection::vec(any::<bool>(), 48),
            reserved_pick in prop::collection::vec(any::<bool>(), 48),
            stamped in any::<bool>(),
        ) {
            let order = if paper { LeafOrder::Paper } else { LeafOrder::FluxTopo };
            let tie = if by_index { TieBreak::Index } else { TieBreak::Name };
            let mut a = Tiered::new(caps.0, caps.1, order, tie);
            let plain = Plain { leaf_cap: caps.0, pod_cap: caps.1, t3_leaf_order: order, tie };
            let n = topo.n_nodes() as u32;
            let mut ex = NodeSet::new(n as usize);
            (0..n).filter(|&i| excluded_bits[i as usize % 48]).for_each(|i| ex.insert(i));
            let reserved_nodes: Vec<u32> = (0..n).filter(|&i| reserved_pick[i as usize % 48]).collect();
            // named or not (`Reserved::stamp`): asked about again and again, it must be recognised either way
            let stamp = if stamped { Reserved::fresh_stamp() } else { 0 };
            let reserved = [Reserved { nodes: &reserved_nodes, class: topo.span_class(&reserved_nodes), stamp }];
            let guards = [
                Guard::NONE,
                Guard { excluded: Some(&ex), reserved: &reserved, ..Guard::NONE },
                Guard { reserved: &reserved, ..Guard::NONE },
                Guard { excluded: Some(&ex), ..Guard::NONE },
            ];
            let mut states = vec![crate::alloc::new_state(&Isolated(a.clone()), &topo, &[])];
            let mut running: Vec<Vec<(u32, Vec<u32>)>> = vec![vec![]];
            let mut next_job = 0u32;
            for st in steps {
                let k = states.len() - 1;
                match st {
                    Step::Place(size, from_copy) => {
                        let k = if from_copy { 0 } else { k };
                        if let Some(mut nodes) = a.select(&topo, &states[k], size, &Guard::NONE) {
                            nodes.sort_unstable();
                            states[k].allocate(&topo, next_job, &nodes, topo.span_class(&nodes));
                            running[k].push((next_job, nodes));
                            next_job += 1;
                        }
                    }
                    Step::Release(i) if !running[k].is_empty() => {
                        let at = i % running[k].len();
                        let (job, nodes) = running[k].remove(at);
                        states[k].release(&topo, job, &nodes, topo.span_class(&nodes));
                    }
                    Step::Release(_) => {}
                    Step::Copy => {
                        states.push(states[k].clone());
                        running.push(running[k].clone());
                    }
                }
                // Every size, under every guard, about every state kept, twice over.
                for _ in 0..2 {
                    for s in &states {
                        for g in &guards {
                            for size in 0..=n + 1 {
                                // The same nodes (the order is no part of the answer; ours
                                // is ascending).
                                let want = plain.select(&topo, s, size, g).map(|mut v| {
                                    v.sort_unstable();
                                    v
                                });
                                prop_assert_eq!(a.select(&topo, s, size, g), want.clone(), "size {} guard {:?}", size, g);
                                prop_assert_eq!(a.feasible(&topo, s, size, g), want.is_some(), "size {}", size);
                            }
                        }
                    }
                }
            }
        }
    }

    /// `isolated`'s wrapper, to build a state with the tracker (the test's states carry it).
    struct Isolated(Tiered);
    impl crate::alloc::Allocator for Isolated {
        fn name(&self) -> String {
            "t".into()
        }
        fn fungible(&self) -> bool {
            false
        }
        fn check_fits_ever(&self, t: &Topology, e: &ClusterState, n: u32) -> Result<(), String> {
            self.0.check_fits_ever(t, e, n)
        }
        fn select(&mut self, t: &Topology, s: &ClusterState, n: u32, g: &Guard) -> Option<Vec<u32>> {
            self.0.select(t, s, n, g)
        }
        fn tracker(&self, t: &Topology) -> Option<Box<dyn Tracker>> {
            self.0.tracker(t)
        }
    }
}

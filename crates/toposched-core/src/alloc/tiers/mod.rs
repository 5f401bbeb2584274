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
            leaf_avail: Vec::new(),
            pod_avail: Vec::new(),
            order: Vec::new(),
            leaf_order: Vec::new(),
            reserved_leaf: Vec::new(),
            reserved_pod: Vec::new(),
            any_reserved: false,
            best_healthy: std::sync::OnceLock::new(),
        }
    }

    pub fn caps(&self) -> (u32, u32) {
        (self.leaf_cap, self.pod_cap)
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
        let tie = self.tie_break;
        let rank = |p: u32| if tie == TieBreak::Name { topo.pod_name_rank(p) } else { p };
        Self::sort(&mut self.order, &self.pod_avail, rank, descending, tie);
    }

    fn sorted_leaves(&mut self, topo: &Topology, pod: u32, min_avail: u32, descending: bool) {
        self.leaf_order.clear();
        self.leaf_order.extend(topo.pod_leaves(pod).filter(|&l| self.leaf_avail[l as usize] >= min_avail));
        let tie = self.tie_break;
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

    /// A leaf is open to a job spanning leaves while the running jobs spanning leaves that
    /// hold a node of it, plus the reservations spanning leaves that touch it, are fewer
    /// than `leaf_cap` (`isolated`: none of either).
    #[inline]
    fn leaf_open(&self, counts: &SpanCounts, leaf: u32) -> bool {
        counts.leaf_spanning(leaf) + if self.any_reserved { self.reserved_leaf[leaf as usize] } else { 0 } < self.leaf_cap
    }
    /// The same for pods, jobs spanning pods and `pod_cap`.
    #[inline]
    fn pod_open(&self, counts: &SpanCounts, pod: u32) -> bool {
        counts.pod_spanning(pod) + if self.any_reserved { self.reserved_pod[pod as usize] } else { 0 } < self.pod_cap
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

    pub fn select(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
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
                let leaves_descending = self.t3_leaf_order == LeafOrder::Paper;
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
    pub fn monotone_class(&self, topo: &Topology, nodes: u32) -> Option<u8> {
        Some(tier(topo, nodes).number())
    }

    pub fn feasible(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> bool {
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


//! `jigsaw`: interference-free placement that packs tighter than `isolated`, after the idea
//! of Jigsaw (Smith and Lowenthal, HPDC'21): a job spanning leaves gets whole *uplink
//! columns*, so two jobs may share a leaf, or a pod, as long as they use disjoint columns.
//! This is this project's own design from that idea, not a reproduction of the paper.
//!
//! *Columns*: under D-mod-k routing (`network::routing`) traffic towards node d leaves
//! its source leaf on uplink `j = padded(d) mod W1` and enters d's leaf on the down-link
//! of the same index j; between pods it crosses L2 switch j of both pods. So a job only
//! ever uses the leaf uplinks, leaf down-links and L2 links of the columns of its own
//! nodes (`C(A)`), on the leaves and in the pods it occupies.
//! *Rule*: on every leaf, the running jobs spanning leaves that hold a node of it have
//! pairwise disjoint column sets; in every pod, the running jobs spanning pods that hold a
//! node of it have pairwise disjoint column sets. Then no two running jobs share an
//! inter-switch link (tested through the router on random workloads). A leaf hosting a
//! spanning job on columns 0-8 can host another on columns 9-17, where `isolated` closes
//! the whole leaf. Jobs on one leaf use no inter-switch link and go anywhere.
//! *Placement*: tiers as `isolated` (T1 N <= K on one leaf, T2 N <= p in one pod, T3
//! across pods; span never grows). T1: the leaf with the fewest available nodes that holds
//! the job, taking first the nodes whose columns a spanning job already owns there (no
//! spanning job could use them). T2/T3: for every interval of columns `[a, b)` (and, T2,
//! every pod), the leaves on which no column of the interval is owned (T3: nor in their
//! pod) offer their free nodes in those columns; among the shapes that hold the job, the
//! one with the fewest leaves, then the fewest columns, then the least spare capacity,
//! then (T2) the least available pod, then the lowest interval; its leaves are taken most
//! capacity first, nodes lowest id first. Searching intervals is exact: if some interval
//! holds the job, one is found.
//! *Reservations* (node sets: not fungible): a job that would still run when a reservation
//! starts may not take its nodes, nor, if it spans leaves, own a column of the
//! reservation's column hull (lowest to highest of its columns) on a leaf it touches, nor,
//! if it spans pods, in a pod it touches. The reserved job can then still be placed at the
//! reservation's start (the head never starts after its shadow time: tested).
//! *Cost*: counts kept per (state, guard, tier), brought up to date by the leaves changed
//! since (`ClusterState::changes_since`), interval totals kept leaf by leaf: a fit test is
//! one comparison, a placement a counting sort of leaves, widest intervals first with a
//! leaf-count bound; a state change costs O(W1^2) per changed leaf.
//! *Reference*: S. Smith, D. Lowenthal, "Jigsaw: A High-Utilization, Interference-Free
//! Job Scheduler for Fat-Tree Clusters", HPDC 2021 (the idea); this project (issue 18).

use std::any::Any;
use std::sync::OnceLock;

use super::tiers::{for_each_leaf, tier};
use super::{AllocEntry, Allocator, Guard, Tracker};
use crate::options::{parse_options, schema_of, NoOptions};
use crate::state::{ClusterState, NodeSet};
use crate::topology::{SpanClass, Topology};

pub static POLICY: AllocEntry = AllocEntry {
    name: "jigsaw",
    summary: "interference-free placement on whole uplink columns (after Jigsaw, HPDC'21): spanning jobs share a leaf or pod on disjoint columns",
    fungible: false,
    topology_aware: true,
    options: schema_of::<NoOptions>,
    build: |o| {
        parse_options::<NoOptions>("jigsaw", o)?;
        Ok(Box::new(Jigsaw::default()))
    },
};

/// Leaf uplinks per leaf (at least 1: a fabric of one leaf has none, and no spanning job).
fn width(topo: &Topology) -> usize {
    topo.uplinks_per_leaf().max(1) as usize
}

/// The uplink column traffic towards `node` uses (D-mod-k: padded id mod W1).
#[inline]
pub fn column(topo: &Topology, node: u32) -> usize {
    (topo.padded_id(node) % width(topo) as u64) as usize
}

/// Columns of `nodes`, ascending, each once.
fn columns_of(topo: &Topology, nodes: &[u32]) -> Vec<usize> {
    let mut cols: Vec<usize> = nodes.iter().map(|&n| column(topo, n)).collect();
    cols.sort_unstable();
    cols.dedup();
    cols
}

/// Per leaf and column, the running jobs spanning leaves on that leaf that own the column
/// (hold a node of that column somewhere); per pod and column, the same for jobs spanning
/// pods. The tracker `jigsaw` installs in the machine state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnOwners {
    w1: usize,
    leaf: Vec<u32>,
    pod: Vec<u32>,
}

impl ColumnOwners {
    pub fn new(topo: &Topology) -> ColumnOwners {
        let w1 = width(topo);
        ColumnOwners { w1, leaf: vec![0; topo.n_leaves() * w1], pod: vec![0; topo.n_pods() * w1] }
    }

    /// Counted from scratch from who holds what (a state carrying no tracker).
    pub fn of_state(topo: &Topology, state: &ClusterState) -> ColumnOwners {
        let mut c = ColumnOwners::new(topo);
        for (_, nodes) in state.holdings() {
            c.allocate(topo, &nodes, topo.span_class(&nodes));
        }
        c
    }

    /// Running spanning jobs on `leaf` owning `col`.
    pub fn on_leaf(&self, leaf: u32, col: usize) -> u32 {
        self.leaf[leaf as usize * self.w1 + col]
    }
    /// Running pod-spanning jobs in `pod` owning `col`.
    pub fn in_pod(&self, pod: u32, col: usize) -> u32 {
        self.pod[pod as usize * self.w1 + col]
    }

    fn add(&mut self, topo: &Topology, nodes: &[u32], class: SpanClass, delta: i32) {
        if !class.spans_leaves() {
            return;
        }
        let cols = columns_of(topo, nodes);
        let w1 = self.w1;
        let bump = |c: &mut u32| *c = c.checked_add_signed(delta).expect("column owners follow allocations");
        for_each_leaf(topo, nodes, |leaf, new_pod| {
            cols.iter().for_each(|&j| bump(&mut self.leaf[leaf as usize * w1 + j]));
            if new_pod && class.spans_pods() {
                let pod = topo.pod_of_leaf(leaf) as usize;
                cols.iter().for_each(|&j| bump(&mut self.pod[pod * w1 + j]));
            }
        });
    }
}

impl Tracker for ColumnOwners {
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

/// A shape that holds the job: columns `[a, b)`, in `pod` (T2) or anywhere (T3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Shape {
    leaves: u32,
    columns: u32,
    spare: u32,
    pod_key: (u32, u32),
    a: u32,
    b: u32,
}

/// The column allocator.
#[derive(Clone, Debug, Default)]
pub struct Jigsaw {
    /// What the last few (state, guard, tier) questions read ([`Counts`]), and a clock
    /// for replacing the least recently used.
    views: Vec<Counts>,
    clock: u64,
    // Scratch reused across calls.
    cand: Vec<(u32, u32)>,
    /// Leaves per capacity (a counting sort: the shape's leaf count and spare capacity
    /// depend only on the multiset of capacities).
    hist: Vec<u32>,
    best_healthy: OnceLock<(u32, u32)>,
}

/// Views kept: EASY asks under up to three guards about one state (T2 and T3 questions
/// close different columns), between questions about copies of it (its reservation
/// search asks `feasible`, then `select`, about each).
const VIEWS: usize = 8;

/// What placement reads from one machine state under one guard, for jobs spanning pods or
/// not: counted once and kept while all three are the same (the state's stamp names its
/// contents, tracker included; the guard is compared by contents). EASY asks about every
/// queued job behind its head under one state and guard; counting per question was most
/// of the time of an EASY+jigsaw replay on Curie.
#[derive(Clone, Debug, Default)]
struct Counts {
    // The key.
    stamp: u64,
    pods: bool,
    excluded: Option<Vec<u64>>,
    /// The guard's reservations spanning leaves (the others close nothing): class, node
    /// count and stamp of each, their nodes one after another in `reserved_nodes`.
    reserved: Vec<(SpanClass, usize, u64)>,
    reserved_nodes: Vec<u32>,
    last_used: u64,
    /// The reservations' column hulls per leaf and column, and per pod and column.
    res_leaf: Vec<u32>,
    res_pod: Vec<u32>,
    // What it gives.
    /// Per leaf, prefix sums over columns of available nodes (free, not excluded).
    free_pre: Vec<u32>,
    /// Per leaf, prefix sums over columns of "closed to this job" (owned on the leaf, or
    /// for a T3 job in the pod, by a running job or a reservation).
    closed_pre: Vec<u32>,
    /// Available nodes per leaf and per pod.
    leaf_avail: Vec<u32>,
    pod_avail: Vec<u32>,
    /// The most available nodes on one leaf.
    best_leaf: u32,
    /// Per group (T2 views: each pod; T3 views: the machine) and column interval `[a, b)`
    /// (at `a * (W1 + 1) + b`), the open available nodes of its leaves: kept leaf by leaf
    /// as rows are recounted.
    totals: Vec<u32>,
    /// [`Jigsaw::largest`], once asked.
    largest: Option<u32>,
    /// Per pod, prefix sums over columns of available nodes on its leaves (open or not),
    /// and the same over the machine: a bound that rejects an interval without its leaves.
    pod_col_pre: Vec<u32>,
    col_pre: Vec<u32>,
}

impl Counts {
    fn matches(&self, state: &ClusterState, guard: &Guard, pods: bool) -> bool {
        self.stamp == state.stamp() && self.same_guard(guard, pods)
    }

    /// The same guard and tier (the state aside).
    fn same_guard(&self, guard: &Guard, pods: bool) -> bool {
        if self.pods != pods || self.excluded.as_deref() != guard.excluded.map(NodeSet::words) {
            return false;
        }
        let (mut kept, mut off) = (self.reserved.iter(), 0);
        for r in guard.reserved.iter().filter(|r| r.class.spans_leaves()) {
            match kept.next() {
                // a nonzero stamp names the contents (`Reserved::stamp`)
                Some(&(class, len, stamp))
                    if class == r.class && len == r.nodes.len() && ((stamp != 0 && stamp == r.stamp) || self.reserved_nodes[off..off + len] == *r.nodes) =>
                {
                    off += len
                }
                _ => return false,
            }
        }
        kept.next().is_none()
    }

    /// Free nodes of `leaf` in columns `[a, b)` if none of them is closed, else 0.
    #[inline]
    fn capacity(&self, w1: usize, leaf: u32, a: usize, b: usize) -> u32 {
        let row = leaf as usize * (w1 + 1);
        if self.closed_pre[row + b] != self.closed_pre[row + a] {
            return 0;
        }
        self.free_pre[row + b] - self.free_pre[row + a]
    }
}

/// The state's [`ColumnOwners`], or counted now into `recounted`.
fn owners<'a>(topo: &Topology, state: &'a ClusterState, recounted: &'a mut Option<ColumnOwners>) -> &'a ColumnOwners {
    match state.tracked::<ColumnOwners>() {
        Some(c) => c,
        None => recounted.insert(ColumnOwners::of_state(topo, state)),
    }
}

impl Jigsaw {
    /// The index in `views` of the counts for (`state`, `guard`, `pods`), counted now where
    /// no kept one matches (replacing the least recently used): from the counts of an
    /// earlier state of the same guard a few changes back ([`ClusterState::changes_since`]),
    /// recounting only the leaves they touched, else from scratch.
    fn view(&mut self, topo: &Topology, state: &ClusterState, guard: &Guard, pods: bool) -> usize {
        self.clock += 1;
        let i = match self.views.iter().position(|v| v.matches(state, guard, pods)) {
            Some(i) => i,
            None => {
                let i = if self.views.len() < VIEWS {
                    self.views.push(Counts::default());
                    self.views.len() - 1
                } else {
                    (0..self.views.len()).min_by_key(|&i| self.views[i].last_used).expect("VIEWS > 0")
                };
                // the earlier state's counts stay (it may be asked about again: EASY's
                // projections start as copies of the machine now)
                let earlier = self.views.iter().enumerate().find_map(|(k, v)| Some((k, state.changes_since(v.stamp)?)).filter(|_| v.same_guard(guard, pods)));
                let mut v = std::mem::take(&mut self.views[i]);
                let mut recounted = None;
                let owners = owners(topo, state, &mut recounted);
                match earlier {
                    Some((k, leaves)) => {
                        if k != i {
                            v.clone_from(&self.views[k]);
                        }
                        Self::update(&mut v, topo, state, guard, owners, leaves);
                    }
                    None => Self::count(&mut v, topo, state, guard, owners, pods),
                }
                self.views[i] = v;
                i
            }
        };
        self.views[i].last_used = self.clock;
        i
    }

    /// Bring `v`, counts of an earlier state under the same guard, up to `state`, whose
    /// changes since touched only `leaves` (and, for owners spanning pods, their pods):
    /// the same counts as [`count`](Self::count) (tested), at the cost of those leaves.
    fn update(v: &mut Counts, topo: &Topology, state: &ClusterState, guard: &Guard, owners: &ColumnOwners, leaves: std::ops::RangeInclusive<u32>) {
        v.stamp = state.stamp();
        if leaves.is_empty() {
            return;
        }
        v.largest = None;
        let pods = topo.pod_of_leaf(*leaves.start())..=topo.pod_of_leaf(*leaves.end());
        // a job's pod owners close columns on every leaf of its pods (T3 questions)
        let rows = if v.pods { topo.pod_leaves(*pods.start()).start..topo.pod_leaves(*pods.end()).end } else { *leaves.start()..*leaves.end() + 1 };
        for leaf in rows {
            Self::count_leaf(v, topo, state, guard, owners, leaf);
        }
        Self::count_pods(v, topo, *pods.start()..*pods.end() + 1);
    }

    /// Available nodes per leaf and pod, per leaf and column (prefix sums), and what is
    /// closed to a job spanning leaves (`pods`: and spanning pods), into `v` with its key.
    fn count(v: &mut Counts, topo: &Topology, state: &ClusterState, guard: &Guard, owners: &ColumnOwners, pods: bool) {
        let (nl, np, w1) = (topo.n_leaves(), topo.n_pods(), width(topo));
        v.stamp = state.stamp();
        v.pods = pods;
        v.largest = None;
        match guard.excluded {
            None => v.excluded = None,
            Some(ex) => {
                let words = v.excluded.get_or_insert_with(Vec::new);
                words.clear();
                words.extend_from_slice(ex.words());
            }
        }
        v.reserved.clear();
        v.reserved_nodes.clear();
        v.res_leaf.clear();
        v.res_leaf.resize(nl * w1, 0);
        v.res_pod.clear();
        v.res_pod.resize(np * w1, 0);
        for r in guard.reserved.iter().filter(|r| r.class.spans_leaves()) {
            v.reserved.push((r.class, r.nodes.len(), r.stamp));
            v.reserved_nodes.extend_from_slice(r.nodes);
            let cols = columns_of(topo, r.nodes);
            let (Some(&lo), Some(&hi)) = (cols.first(), cols.last()) else { continue };
            for_each_leaf(topo, r.nodes, |leaf, new_pod| {
                (lo..=hi).for_each(|j| v.res_leaf[leaf as usize * w1 + j] += 1);
                if new_pod && r.class.spans_pods() {
                    let pod = topo.pod_of_leaf(leaf) as usize;
                    (lo..=hi).for_each(|j| v.res_pod[pod * w1 + j] += 1);
                }
            });
        }
        v.free_pre.clear();
        v.free_pre.resize(nl * (w1 + 1), 0);
        v.closed_pre.clear();
        v.closed_pre.resize(nl * (w1 + 1), 0);
        v.leaf_avail.clear();
        v.leaf_avail.resize(nl, 0);
        v.pod_col_pre.clear();
        v.pod_col_pre.resize(np * (w1 + 1), 0);
        v.pod_avail.clear();
        v.pod_avail.resize(np, 0);
        v.totals.clear();
        v.totals.resize(if pods { 1 } else { np } * (w1 + 1) * (w1 + 1), 0);
        for leaf in 0..nl as u32 {
            Self::count_leaf(v, topo, state, guard, owners, leaf);
        }
        Self::count_pods(v, topo, 0..np as u32);
    }

    /// A leaf's row of `free_pre` and `closed_pre`, and its available nodes.
    fn count_leaf(v: &mut Counts, topo: &Topology, state: &ClusterState, guard: &Guard, owners: &ColumnOwners, leaf: u32) {
        let w1 = width(topo);
        let row = leaf as usize * (w1 + 1);
        let span = topo.leaf_nodes(leaf);
        Self::add_to_totals(v, topo, leaf, false);
        v.free_pre[row..row + w1 + 1].iter_mut().for_each(|c| *c = 0);
        // a leaf's nodes have consecutive padded ids: their columns count up from the
        // first one's, mod W1
        let first_col = column(topo, span.start);
        let mut avail = 0;
        for n in state.free_set().iter_range(span.clone()).filter(|&n| !guard.excludes(n)) {
            v.free_pre[row + (first_col + (n - span.start) as usize) % w1 + 1] += 1;
            avail += 1;
        }
        v.leaf_avail[leaf as usize] = avail;
        let pod = topo.pod_of_leaf(leaf) as usize;
        for j in 0..w1 {
            v.free_pre[row + j + 1] += v.free_pre[row + j];
            let mut closed = owners.on_leaf(leaf, j) + v.res_leaf[leaf as usize * w1 + j] > 0;
            if v.pods {
                closed |= owners.in_pod(pod as u32, j) + v.res_pod[pod * w1 + j] > 0;
            }
            v.closed_pre[row + j + 1] = v.closed_pre[row + j] + closed as u32;
        }
        Self::add_to_totals(v, topo, leaf, true);
    }

    /// Add (`add`) or take away the capacities of `leaf`'s rows to its group's totals.
    fn add_to_totals(v: &mut Counts, topo: &Topology, leaf: u32, add: bool) {
        let w1 = width(topo);
        let row = leaf as usize * (w1 + 1);
        let group = if v.pods { 0 } else { topo.pod_of_leaf(leaf) as usize };
        let totals = &mut v.totals[group * (w1 + 1) * (w1 + 1)..(group + 1) * (w1 + 1) * (w1 + 1)];
        let (free, closed) = (&v.free_pre[row..row + w1 + 1], &v.closed_pre[row..row + w1 + 1]);
        for a in 0..w1 {
            if free[w1] == free[a] {
                // nothing available from column a on
                break;
            }
            for b in a + 1..=w1 {
                // a closed column closes every wider interval too
                if closed[b] != closed[a] {
                    break;
                }
                let t = &mut totals[a * (w1 + 1) + b];
                *t = if add { *t + (free[b] - free[a]) } else { *t - (free[b] - free[a]) };
            }
        }
    }

    /// From the leaves' rows: `pods`' column sums and available nodes, then the machine's
    /// column sums and best leaf.
    fn count_pods(v: &mut Counts, topo: &Topology, pods: std::ops::Range<u32>) {
        let w1 = width(topo);
        for p in pods {
            let prow = p as usize * (w1 + 1);
            v.pod_col_pre[prow..prow + w1 + 1].iter_mut().for_each(|c| *c = 0);
            for l in topo.pod_leaves(p) {
                let row = l as usize * (w1 + 1);
                for j in 0..=w1 {
                    v.pod_col_pre[prow + j] += v.free_pre[row + j];
                }
            }
            v.pod_avail[p as usize] = topo.pod_leaves(p).map(|l| v.leaf_avail[l as usize]).sum();
        }
        v.col_pre.clear();
        v.col_pre.resize(w1 + 1, 0);
        for p in 0..topo.n_pods() {
            for j in 0..=w1 {
                v.col_pre[j] += v.pod_col_pre[p * (w1 + 1) + j];
            }
        }
        v.best_leaf = v.leaf_avail.iter().copied().max().unwrap_or(0);
    }

    /// The largest job the view's tier can place: the most open available nodes of one
    /// column interval, in one pod (T2 views, `pods` false) or on the machine (T3). Placement
    /// within the tier is a threshold on it (a shape holds the job iff its interval's total
    /// does); computed once per view, most questions in a pass fail.
    fn largest(v: &mut Counts) -> u32 {
        if let Some(x) = v.largest {
            return x;
        }
        let best = v.totals.iter().copied().max().unwrap_or(0);
        v.largest = Some(best);
        best
    }

    /// The best shape holding `nodes` among the leaves `leaves` (one pod for T2, all for
    /// T3; `col_pre`: prefix sums over columns of their available nodes), if better than
    /// `best`.
    #[allow(clippy::too_many_arguments)]
    fn search(hist: &mut Vec<u32>, v: &Counts, topo: &Topology, leaves: std::ops::Range<u32>, col_pre: &[u32], pod_key: (u32, u32), nodes: u32, best: &mut Option<Shape>) {
        let w1 = width(topo);
        // no leaf holds more than its available nodes, nor more than `per_col` in a column
        hist.clear();
        hist.resize(v.best_leaf as usize + 1, 0);
        let per_col = topo.nodes_per_leaf().div_ceil(w1 as u32).max(1);
        // Widest intervals first: a shape is judged by its leaves first, and an interval of
        // w columns needs at least nodes / (most a leaf holds in w columns) leaves, which
        // only grows as w shrinks; once above the best shape's, no narrower one can win.
        for w in (1..=w1).rev() {
            let most = (w as u32 * per_col).min(v.best_leaf).max(1);
            if best.is_some_and(|s| nodes.div_ceil(most) > s.leaves) {
                break;
            }
            for a in 0..=w1 - w {
                let b = a + w;
                // the interval's available nodes, open or not, bound its capacity
                if col_pre[b] - col_pre[a] < nodes {
                    continue;
                }
                let (mut total, mut top) = (0u32, 0usize);
                for l in leaves.clone() {
                    let c = v.capacity(w1, l, a, b);
                    total += c;
                    hist[c as usize] += 1;
                    top = top.max(c as usize);
                }
                hist[0] = 0;
                if total < nodes {
                    hist[1..=top].iter_mut().for_each(|h| *h = 0);
                    continue;
                }
                // The leaves taken most capacity first until they hold the job: how many,
                // and how much they hold, by capacity from the top.
                let (mut got, mut used) = (0u32, 0u32);
                for c in (1..=top).rev() {
                    let k = std::mem::take(&mut hist[c]);
                    if got >= nodes || k == 0 {
                        continue;
                    }
                    let need = (nodes - got).div_ceil(c as u32);
                    let t = need.min(k);
                    got += t * c as u32;
                    used += t;
                }
                let shape = Shape { leaves: used, columns: (b - a) as u32, spare: got - nodes, pod_key, a: a as u32, b: b as u32 };
                match best {
                    Some(s) if *s <= shape => {}
                    _ => *best = Some(shape),
                }
            }
        }
    }

    /// Take `nodes` nodes of `shape` from `leaves`.
    #[allow(clippy::too_many_arguments)]
    fn take(&mut self, vi: usize, topo: &Topology, state: &ClusterState, guard: &Guard, leaves: std::ops::Range<u32>, shape: Shape, nodes: u32) -> Vec<u32> {
        let w1 = width(topo);
        let (a, b) = (shape.a as usize, shape.b as usize);
        let v = &self.views[vi];
        self.cand.clear();
        for l in leaves {
            let c = v.capacity(w1, l, a, b);
            if c > 0 {
                self.cand.push((c, l));
            }
        }
        self.cand.sort_unstable_by_key(|&(c, l)| (std::cmp::Reverse(c), l));
        let mut out = Vec::with_capacity(nodes as usize);
        for &(_, leaf) in &self.cand {
            let want = nodes as usize - out.len();
            out.extend(
                state
                    .free_set()
                    .iter_range(topo.leaf_nodes(leaf))
                    .filter(|&n| !guard.excludes(n) && (a..b).contains(&column(topo, n)))
                    .take(want),
            );
            if out.len() == nodes as usize {
                break;
            }
        }
        debug_assert_eq!(out.len(), nodes as usize);
        out
    }

    fn place(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard, only_test: bool) -> Option<Vec<u32>> {
        if nodes == 0 || nodes > state.n_free() {
            return None;
        }
        let class = tier(topo, nodes);
        let vi = self.view(topo, state, guard, class == SpanClass::Pods);
        let w1 = width(topo);
        match class {
            SpanClass::Leaf => {
                // the leaf with the fewest available nodes that holds the job
                let v = &self.views[vi];
                let leaf = (0..v.leaf_avail.len() as u32).filter(|&l| v.leaf_avail[l as usize] >= nodes).min_by_key(|&l| (v.leaf_avail[l as usize], l))?;
                if only_test {
                    return Some(Vec::new());
                }
                // nodes in columns a spanning job owns here first: no spanning job could use them
                let row = leaf as usize * (w1 + 1);
                let closed = |n: &u32| {
                    let j = column(topo, *n);
                    v.closed_pre[row + j + 1] != v.closed_pre[row + j]
                };
                let avail = || state.free_set().iter_range(topo.leaf_nodes(leaf)).filter(|&n| !guard.excludes(n));
                let mut out: Vec<u32> = avail().filter(closed).take(nodes as usize).collect();
                let more = nodes as usize - out.len();
                out.extend(avail().filter(|n| !closed(n)).take(more));
                Some(out)
            }
            SpanClass::Pod => {
                if nodes > Self::largest(&mut self.views[vi]) {
                    return None;
                }
                if only_test {
                    return Some(Vec::new());
                }
                let mut best = None;
                let v = &self.views[vi];
                for pod in 0..topo.n_pods() as u32 {
                    if v.pod_avail[pod as usize] < nodes {
                        continue;
                    }
                    let col_pre = &v.pod_col_pre[pod as usize * (w1 + 1)..(pod as usize + 1) * (w1 + 1)];
                    Self::search(&mut self.hist, v, topo, topo.pod_leaves(pod), col_pre, (v.pod_avail[pod as usize], pod), nodes, &mut best);
                }
                let shape = best.expect("a shape holds a job up to the largest");
                let pod = shape.pod_key.1;
                Some(self.take(vi, topo, state, guard, topo.pod_leaves(pod), shape, nodes))
            }
            SpanClass::Pods => {
                if nodes > Self::largest(&mut self.views[vi]) {
                    return None;
                }
                if only_test {
                    return Some(Vec::new());
                }
                let mut best = None;
                let all = 0..topo.n_leaves() as u32;
                let v = &self.views[vi];
                Self::search(&mut self.hist, v, topo, all.clone(), &v.col_pre, (0, 0), nodes, &mut best);
                let shape = best.expect("a shape holds a job up to the largest");
                Some(self.take(vi, topo, state, guard, all, shape, nodes))
            }
        }
    }
}

impl Allocator for Jigsaw {
    fn name(&self) -> String {
        "jigsaw".into()
    }

    fn fungible(&self) -> bool {
        false
    }

    fn tracker(&self, topo: &Topology) -> Option<Box<dyn Tracker>> {
        Some(Box::new(ColumnOwners::new(topo)))
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
        self.place(topo, state, nodes, guard, false)
    }

    fn feasible(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> bool {
        self.place(topo, state, nodes, guard, true).is_some()
    }

    /// Within a tier, placement is a threshold on available nodes: of one leaf (T1), of
    /// the open columns of one interval in one pod (T2) or anywhere (T3); what is open does
    /// not depend on the job's size.
    fn monotone_class(&self, topo: &Topology, nodes: u32) -> Option<u8> {
        Some(tier(topo, nodes).number())
    }

    /// A job ending frees nodes and, if it spanned leaves, its columns: every (leaf,
    /// interval) capacity and every leaf's and pod's availability only grows, so a shape
    /// that held the job still does. The answer reads the state and the guard's nodes only.
    fn release_monotone(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::test_util::place_in_turn;
    use crate::alloc::{new_state, Reserved};

    /// Place jobs one after another on `topo`; None for a refusal. Checks `feasible`
    /// against `select` and the tracked owners against a recount at every step.
    fn place(topo: &Topology, pre: &[Vec<u32>], sizes: &[u32]) -> Vec<Option<Vec<u32>>> {
        place_in_turn(topo, &mut Jigsaw::default(), pre, sizes, |s| assert_eq!(s.tracked::<ColumnOwners>(), Some(&ColumnOwners::of_state(topo, s))))
    }

    fn r(v: &[u32]) -> Option<Vec<u32>> {
        Some(v.to_vec())
    }

    /// The rule as the module doc states it, counted from scratch per question and with
    /// the usable leaves of every interval sorted: what the kept counts, the per-interval
    /// bound and the counting sort must answer exactly.
    fn plain(topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        if nodes == 0 || nodes > state.n_free() {
            return None;
        }
        let (nl, np, w1) = (topo.n_leaves(), topo.n_pods(), width(topo));
        let class = tier(topo, nodes);
        let owners = ColumnOwners::of_state(topo, state);
        let (mut res_leaf, mut res_pod) = (vec![0u32; nl * w1], vec![0u32; np * w1]);
        for r in guard.reserved.iter().filter(|r| r.class.spans_leaves()) {
            let cols: Vec<usize> = columns_of(topo, r.nodes);
            let (lo, hi) = (cols[0], cols[cols.len() - 1]);
            let leaves: std::collections::BTreeSet<u32> = r.nodes.iter().map(|&n| topo.leaf_of(n)).collect();
            let pods: std::collections::BTreeSet<u32> = leaves.iter().map(|&l| topo.pod_of_leaf(l)).collect();
            for &l in &leaves {
                (lo..=hi).for_each(|j| res_leaf[l as usize * w1 + j] += 1);
            }
            if r.class.spans_pods() {
                for &p in &pods {
                    (lo..=hi).for_each(|j| res_pod[p as usize * w1 + j] += 1);
                }
            }
        }
        let avail = |n: u32| state.is_free(n) && !guard.excludes(n);
        let closed = |l: u32, j: usize| {
            let p = topo.pod_of_leaf(l);
            owners.on_leaf(l, j) + res_leaf[l as usize * w1 + j] > 0 || (class == SpanClass::Pods && owners.in_pod(p, j) + res_pod[p as usize * w1 + j] > 0)
        };
        let leaf_avail = |l: u32| topo.leaf_nodes(l).filter(|&n| avail(n)).count() as u32;
        let cap = |l: u32, a: usize, b: usize| -> u32 {
            if (a..b).any(|j| closed(l, j)) {
                0
            } else {
                topo.leaf_nodes(l).filter(|&n| avail(n) && (a..b).contains(&column(topo, n))).count() as u32
            }
        };
        // (leaves used, columns, spare, pod key, a, b) of the shapes holding the job
        let shapes = |leaves: std::ops::Range<u32>, key: (u32, u32)| {
            let mut out = vec![];
            for a in 0..w1 {
                for b in a + 1..=w1 {
                    let mut caps: Vec<u32> = leaves.clone().map(|l| cap(l, a, b)).filter(|&c| c > 0).collect();
                    caps.sort_unstable_by(|x, y| y.cmp(x));
                    let (mut got, mut used) = (0, 0);
                    for c in caps {
                        if got >= nodes {
                            break;
                        }
                        got += c;
                        used += 1;
                    }
                    if got >= nodes {
                        out.push((used, (b - a) as u32, got - nodes, key, a, b));
                    }
                }
            }
            out
        };
        let take = |leaves: std::ops::Range<u32>, a: usize, b: usize| {
            let mut order: Vec<u32> = leaves.filter(|&l| cap(l, a, b) > 0).collect();
            order.sort_by_key(|&l| (std::cmp::Reverse(cap(l, a, b)), l));
            let ns: Vec<u32> = order.iter().flat_map(|&l| topo.leaf_nodes(l)).filter(|&n| avail(n) && (a..b).contains(&column(topo, n))).collect();
            ns[..nodes as usize].to_vec()
        };
        match class {
            SpanClass::Leaf => {
                let leaf = (0..nl as u32).filter(|&l| leaf_avail(l) >= nodes).min_by_key(|&l| (leaf_avail(l), l))?;
                let (mut own, mut open): (Vec<u32>, Vec<u32>) = topo.leaf_nodes(leaf).filter(|&n| avail(n)).partition(|&n| closed(leaf, column(topo, n)));
                own.append(&mut open);
                Some(own[..nodes as usize].to_vec())
            }
            SpanClass::Pod => {
                let pod_avail = |p: u32| topo.pod_leaves(p).map(leaf_avail).sum::<u32>();
                let best = (0..np as u32).filter(|&p| pod_avail(p) >= nodes).flat_map(|p| shapes(topo.pod_leaves(p), (pod_avail(p), p))).min()?;
                Some(take(topo.pod_leaves(best.3 .1), best.4, best.5))
            }
            SpanClass::Pods => {
                let best = shapes(0..nl as u32, (0, 0)).into_iter().min()?;
                Some(take(0..nl as u32, best.4, best.5))
            }
        }
    }

    use proptest::prelude::*;

    /// Pods of leaves of 1 to 6 nodes, with 1 to 4 uplinks per leaf or the default (W1 = K).
    fn fabric() -> impl Strategy<Value = Topology> {
        (prop::collection::vec(prop::collection::vec(1u32..7, 1..4), 1..4), prop::option::of(1u32..5))
            .prop_map(|(pods, w1)| Topology::from_leaf_sizes("t", 3, &pods, w1, None, None, None).unwrap())
    }

    /// One step on the newest state (`Place(_, true)`: on the first one, copies were made
    /// from it): place a job of this size, release running jobs (several: changes between
    /// two questions), or copy the state.
    #[derive(Clone, Debug)]
    enum Step {
        Place(u32, bool),
        Release(usize, usize),
        Copy,
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// One policy asked again and again, about states that change one job at a time and
        /// copies of them, under the guards EASY gives, answers as the plain rule (nodes,
        /// and `feasible`), and its tracked owners equal a recount.
        #[test]
        fn kept_counts_answer_as_the_plain_rule(
            topo in fabric(),
            steps in prop::collection::vec(prop_oneof![
                3 => (1u32..24, any::<bool>()).prop_map(|(n, c)| Step::Place(n, c)),
                2 => (0usize..8, 1usize..4).prop_map(|(i, k)| Step::Release(i, k)),
                1 => Just(Step::Copy),
            ], 1..24),
            excluded_bits in prop::collection::vec(any::<bool>(), 48),
            reserved_pick in prop::collection::vec(any::<bool>(), 48),
            stamped in any::<bool>(),
        ) {
            let mut a = Jigsaw::default();
            let n = topo.n_nodes() as u32;
            let mut ex = crate::state::NodeSet::new(n as usize);
            (0..n).filter(|&i| excluded_bits[i as usize % 48]).for_each(|i| ex.insert(i));
            let reserved_nodes: Vec<u32> = (0..n).filter(|&i| reserved_pick[i as usize % 48]).collect();
            // named or not (`Reserved::stamp`): it must be recognised either way
            let stamp = if stamped { Reserved::fresh_stamp() } else { 0 };
            let reserved = [Reserved { nodes: &reserved_nodes, class: topo.span_class(&reserved_nodes), stamp }];
            let reserved = if reserved_nodes.is_empty() { &reserved[..0] } else { &reserved[..] };
            let guards = [
                Guard::NONE,
                Guard { excluded: Some(&ex), reserved, ..Guard::NONE },
                Guard { reserved, ..Guard::NONE },
                Guard { excluded: Some(&ex), ..Guard::NONE },
            ];
            let mut states = vec![new_state(&a, &topo, &[])];
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
                    Step::Release(i, many) => {
                        for _ in 0..many.min(running[k].len()) {
                            let at = i % running[k].len();
                            let (job, nodes) = running[k].remove(at);
                            states[k].release(&topo, job, &nodes, topo.span_class(&nodes));
                        }
                    }
                    Step::Copy => {
                        states.push(states[k].clone());
                        running.push(running[k].clone());
                    }
                }
                for s in &states {
                    prop_assert_eq!(s.tracked::<ColumnOwners>(), Some(&ColumnOwners::of_state(&topo, s)));
                }
                // Every size, under every guard, about every state kept, twice over.
                for _ in 0..2 {
                    for s in &states {
                        for g in &guards {
                            for size in 0..=n + 1 {
                                let want = plain(&topo, s, size, g);
                                // the nodes in the policy's order
                                prop_assert_eq!(a.select(&topo, s, size, g), want.clone(), "size {} guard {:?}", size, g);
                                prop_assert_eq!(a.feasible(&topo, s, size, g), want.is_some(), "size {}", size);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn columns_follow_d_mod_k() {
        // toy18: K = W1 = 3, so a node's column is its port on its leaf
        let t = Topology::preset("toy18").unwrap();
        assert_eq!((0..9).map(|n| column(&t, n)).collect::<Vec<_>>(), vec![0, 1, 2, 0, 1, 2, 0, 1, 2]);
        // Cab with a 2:1 taper: W1 = 9, ports 0 and 9 of a leaf share uplink 0
        let cab2 = Topology::fat_tree("c", 18, 18, 4, Some(9), Some(18)).unwrap();
        assert_eq!((column(&cab2, 0), column(&cab2, 9), column(&cab2, 10)), (0, 0, 1));
    }

    #[test]
    fn two_spanning_jobs_share_leaves_on_disjoint_columns() {
        // One pod of 5 leaves x 4 nodes (W1 = 4). One-leaf jobs hold columns 0-2 of leaves
        // 2, 3 and 4. A (6) takes the fewest leaves, then the fewest columns: columns 0-2
        // of leaves 0 and 1. C (5) then takes column 3 of all five leaves, sharing leaves 0
        // and 1 with A on a column A does not use; isolated closes leaves 0 and 1 to it.
        let t = Topology::fat_tree("t", 4, 5, 1, None, None).unwrap();
        assert_eq!(t.uplinks_per_leaf(), 4);
        let pre = vec![vec![8, 9, 10], vec![12, 13, 14], vec![16, 17, 18]];
        let got = place(&t, &pre, &[6, 5]);
        assert_eq!(got, vec![r(&[0, 1, 2, 4, 5, 6]), r(&[3, 7, 11, 15, 19])]);
        let mut iso = crate::alloc::isolated::Isolated::default();
        let mut s = new_state(&iso, &t, &[]);
        for (j, nodes) in pre.iter().enumerate() {
            s.allocate(&t, 10 + j as u32, nodes, SpanClass::Leaf);
        }
        s.allocate(&t, 0, &[0, 1, 2, 4, 5, 6], SpanClass::Pod);
        assert!(iso.select(&t, &s, 5, &Guard::NONE).is_none());
    }

    #[test]
    fn a_job_owns_its_columns_on_every_leaf_it_occupies() {
        // toy18, pod 1 full. A (4) takes columns 0-1 of leaves 0 and 1. B (4) would need
        // column 2 of leaves 0 and 1 plus nodes of leaf 2 in columns 0-1: from leaf 0 its
        // traffic to those would use A's uplinks 0-1. No interval holds it: refused.
        let t = Topology::preset("toy18").unwrap();
        let pre = vec![vec![9, 10, 11], vec![12, 13, 14], vec![15, 16, 17]];
        let got = place(&t, &pre, &[4, 4, 3]);
        assert_eq!(got, vec![r(&[0, 1, 3, 4]), None, r(&[6, 7, 8])]);
    }

    #[test]
    fn one_leaf_jobs_fill_owned_columns_first() {
        // A (4) on leaves 0-1 columns 0-1 leaves nodes 2 and 5 (column 2) open; after a
        // spanning job takes column 2 of leaves 0, 1 (B), a 1-node job takes a node of a
        // column already owned on its leaf.
        let t = Topology::preset("toy18").unwrap();
        let pre = vec![vec![0, 3], vec![9, 10, 11], vec![12, 13, 14], vec![15, 16, 17]];
        // pre[0] spans leaves 0, 1 on column 0; leaf 2 is empty
        let got = place(&t, &pre, &[1]);
        // best-fit leaf: leaves 0 and 1 have 2 free (tie: leaf 0); column 0 is owned there
        // but node 0 is taken; nodes 1, 2 are in open columns: it takes node 1
        assert_eq!(got, vec![r(&[1])]);
        let pre = vec![vec![1, 4], vec![9, 10, 11], vec![12, 13, 14], vec![15, 16, 17], vec![0]];
        // leaf 0: node 0 held (T1), node 1 owned by a spanning job (column 1), node 2 free
        // in column 2 (open); a 1-node job goes to leaf 0 (1 free, best fit)
        assert_eq!(place(&t, &pre, &[1]), vec![r(&[2])]);
    }

    #[test]
    fn a_reservation_closes_its_column_hull() {
        // toy18, pod 1 full. A reservation of {0, 2, 3, 5} spans leaves 0 and 1 on columns
        // 0 and 2: its hull 0..=2 is closed on leaves 0 and 1 to a spanning job that would
        // overlap it, so a 4-node job finds only leaf 2 (3 nodes): refused.
        let t = Topology::preset("toy18").unwrap();
        let mut a = Jigsaw::default();
        let mut s = new_state(&a, &t, &[]);
        let pod1: Vec<u32> = (9..18).collect();
        s.allocate(&t, 0, &pod1, SpanClass::Pod);
        let reserved = [Reserved { nodes: &[0, 2, 3, 5], class: SpanClass::Pod, stamp: 0 }];
        let mut ex = crate::state::NodeSet::new(18);
        [0, 2, 3, 5].iter().for_each(|&n| ex.insert(n));
        let g = Guard { excluded: Some(&ex), reserved: &reserved, ..Guard::NONE };
        assert!(a.select(&t, &s, 4, &g).is_none());
        assert!(!a.feasible(&t, &s, 4, &g));
        // without the reservation, column 1 of leaves 0, 1 and leaf 2 hold it
        let g = Guard { excluded: Some(&ex), ..Guard::NONE };
        assert!(a.select(&t, &s, 4, &g).is_some());
        // a one-leaf job may still use node 1 or 4
        let g = Guard { excluded: Some(&ex), reserved: &reserved, ..Guard::NONE };
        assert!(a.select(&t, &s, 2, &g).is_some());
    }
}

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
//! *Cost*: O(free nodes + leaves x W1) per call to count, then O(W1^2 x leaves) intervals
//! (T2 per pod), with a sort of the usable leaves for shapes that hold the job.
//! *Reference*: S. Smith, D. Lowenthal, "Jigsaw: A High-Utilization, Interference-Free
//! Job Scheduler for Fat-Tree Clusters", HPDC 2021 (the idea); this project (issue 18).

use std::any::Any;
use std::sync::OnceLock;

use super::tiers::{for_each_leaf, tier};
use super::{AllocEntry, Allocator, Guard, Tracker};
use crate::options::{parse_options, schema_of, NoOptions};
use crate::state::ClusterState;
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
    // Scratch reused across calls.
    /// Per leaf, prefix sums over columns of available nodes (free, not excluded).
    free_pre: Vec<u32>,
    /// Per leaf, prefix sums over columns of "closed to this job" (owned on the leaf, or
    /// for a T3 job in the pod, by a running job or a reservation).
    closed_pre: Vec<u32>,
    /// Available nodes per leaf and per pod.
    leaf_avail: Vec<u32>,
    pod_avail: Vec<u32>,
    /// Reservations' column hulls per leaf and column, and per pod and column.
    res_leaf: Vec<u32>,
    res_pod: Vec<u32>,
    cand: Vec<(u32, u32)>,
    best_healthy: OnceLock<(u32, u32)>,
}

/// The state's [`ColumnOwners`], or counted now into `recounted`.
fn owners<'a>(topo: &Topology, state: &'a ClusterState, recounted: &'a mut Option<ColumnOwners>) -> &'a ColumnOwners {
    match state.tracked::<ColumnOwners>() {
        Some(c) => c,
        None => recounted.insert(ColumnOwners::of_state(topo, state)),
    }
}

impl Jigsaw {
    /// Available nodes per leaf and pod, per leaf and column (prefix sums), and what is
    /// closed to a job spanning leaves (`pods`: and spanning pods).
    fn count(&mut self, topo: &Topology, state: &ClusterState, guard: &Guard, owners: &ColumnOwners, pods: bool) {
        let (nl, w1) = (topo.n_leaves(), width(topo));
        self.res_leaf.clear();
        self.res_leaf.resize(nl * w1, 0);
        self.res_pod.clear();
        self.res_pod.resize(topo.n_pods() * w1, 0);
        for r in guard.reserved.iter().filter(|r| r.class.spans_leaves()) {
            let cols = columns_of(topo, r.nodes);
            let (Some(&lo), Some(&hi)) = (cols.first(), cols.last()) else { continue };
            for_each_leaf(topo, r.nodes, |leaf, new_pod| {
                (lo..=hi).for_each(|j| self.res_leaf[leaf as usize * w1 + j] += 1);
                if new_pod && r.class.spans_pods() {
                    let pod = topo.pod_of_leaf(leaf) as usize;
                    (lo..=hi).for_each(|j| self.res_pod[pod * w1 + j] += 1);
                }
            });
        }
        self.free_pre.clear();
        self.free_pre.resize(nl * (w1 + 1), 0);
        self.closed_pre.clear();
        self.closed_pre.resize(nl * (w1 + 1), 0);
        self.leaf_avail.clear();
        self.leaf_avail.resize(nl, 0);
        for leaf in 0..nl as u32 {
            let row = leaf as usize * (w1 + 1);
            for n in state.free_set().iter_range(topo.leaf_nodes(leaf)).filter(|&n| !guard.excludes(n)) {
                self.free_pre[row + column(topo, n) + 1] += 1;
                self.leaf_avail[leaf as usize] += 1;
            }
            let pod = topo.pod_of_leaf(leaf);
            for j in 0..w1 {
                self.free_pre[row + j + 1] += self.free_pre[row + j];
                let mut closed = owners.on_leaf(leaf, j) + self.res_leaf[leaf as usize * w1 + j] > 0;
                if pods {
                    closed |= owners.in_pod(pod, j) + self.res_pod[pod as usize * w1 + j] > 0;
                }
                self.closed_pre[row + j + 1] = self.closed_pre[row + j] + closed as u32;
            }
        }
        self.pod_avail.clear();
        for p in 0..topo.n_pods() as u32 {
            let sum = topo.pod_leaves(p).map(|l| self.leaf_avail[l as usize]).sum();
            self.pod_avail.push(sum);
        }
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

    /// The best shape holding `nodes` among the leaves `leaves` (one pod for T2, all for
    /// T3); with `first`, any shape (feasibility).
    fn search(&mut self, topo: &Topology, leaves: std::ops::Range<u32>, pod_key: (u32, u32), nodes: u32, first: bool, best: &mut Option<Shape>) -> bool {
        let w1 = width(topo);
        for a in 0..w1 {
            for b in a + 1..=w1 {
                let total: u32 = leaves.clone().map(|l| self.capacity(w1, l, a, b)).sum();
                if total < nodes {
                    continue;
                }
                if first {
                    return true;
                }
                self.cand.clear();
                for l in leaves.clone() {
                    let c = self.capacity(w1, l, a, b);
                    if c > 0 {
                        self.cand.push((c, l));
                    }
                }
                self.cand.sort_unstable_by_key(|&(c, l)| (std::cmp::Reverse(c), l));
                let (mut got, mut used) = (0, 0);
                for &(c, _) in &self.cand {
                    got += c;
                    used += 1;
                    if got >= nodes {
                        break;
                    }
                }
                let shape = Shape { leaves: used, columns: (b - a) as u32, spare: got - nodes, pod_key, a: a as u32, b: b as u32 };
                match best {
                    Some(s) if *s <= shape => {}
                    _ => *best = Some(shape),
                }
            }
        }
        false
    }

    /// Take `nodes` nodes of `shape` from `leaves`.
    fn take(&mut self, topo: &Topology, state: &ClusterState, guard: &Guard, leaves: std::ops::Range<u32>, shape: Shape, nodes: u32) -> Vec<u32> {
        let w1 = width(topo);
        let (a, b) = (shape.a as usize, shape.b as usize);
        self.cand.clear();
        for l in leaves {
            let c = self.capacity(w1, l, a, b);
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

    /// T1: the leaf with the fewest available nodes that holds the job.
    fn one_leaf(&self, nodes: u32) -> Option<u32> {
        (0..self.leaf_avail.len() as u32).filter(|&l| self.leaf_avail[l as usize] >= nodes).min_by_key(|&l| (self.leaf_avail[l as usize], l))
    }

    fn place(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard, only_test: bool) -> Option<Vec<u32>> {
        if nodes == 0 || nodes > state.n_free() {
            return None;
        }
        let class = tier(topo, nodes);
        let mut recounted = None;
        let owners = owners(topo, state, &mut recounted);
        self.count(topo, state, guard, owners, class == SpanClass::Pods);
        let w1 = width(topo);
        match class {
            SpanClass::Leaf => {
                let leaf = self.one_leaf(nodes)?;
                if only_test {
                    return Some(Vec::new());
                }
                // nodes in columns a spanning job owns here first: no spanning job could use them
                let row = leaf as usize * (w1 + 1);
                let closed = |n: &u32| {
                    let j = column(topo, *n);
                    self.closed_pre[row + j + 1] != self.closed_pre[row + j]
                };
                let avail = || state.free_set().iter_range(topo.leaf_nodes(leaf)).filter(|&n| !guard.excludes(n));
                let mut out: Vec<u32> = avail().filter(closed).take(nodes as usize).collect();
                let more = nodes as usize - out.len();
                out.extend(avail().filter(|n| !closed(n)).take(more));
                Some(out)
            }
            SpanClass::Pod => {
                let mut best = None;
                for pod in 0..topo.n_pods() as u32 {
                    if self.pod_avail[pod as usize] < nodes {
                        continue;
                    }
                    if self.search(topo, topo.pod_leaves(pod), (self.pod_avail[pod as usize], pod), nodes, only_test, &mut best) {
                        return Some(Vec::new());
                    }
                }
                let shape = best?;
                if only_test {
                    return Some(Vec::new());
                }
                let pod = shape.pod_key.1;
                Some(self.take(topo, state, guard, topo.pod_leaves(pod), shape, nodes))
            }
            SpanClass::Pods => {
                let mut best = None;
                let all = 0..topo.n_leaves() as u32;
                if self.search(topo, all.clone(), (0, 0), nodes, only_test, &mut best) {
                    return Some(Vec::new());
                }
                let shape = best?;
                if only_test {
                    return Some(Vec::new());
                }
                Some(self.take(topo, state, guard, all, shape, nodes))
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

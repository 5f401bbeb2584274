//! Who holds which node right now, with the per-leaf and per-pod free counts every
//! allocation policy reads, and the [`Tracker`] an allocation policy may install to keep
//! counters of its own (e.g. `isolated`'s spanning jobs per leaf and pod).
//!
//! Counters are updated at every allocation and release (not lazily at the next
//! scheduling pass, as the paper's plugin does), which the brief (§2.5) shows gives the
//! same decisions.

use std::any::Any;

use crate::topology::{SpanClass, Topology};

/// Marker in [`ClusterState::owner`] for a free node.
pub const FREE: u32 = u32::MAX;
/// Marker for a node that is down or drained: never free, and it carries no tier mark.
pub const DOWN: u32 = u32::MAX - 1;

/// A fixed-size set of node ids.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSet {
    words: Vec<u64>,
}

impl NodeSet {
    pub fn new(n: usize) -> NodeSet {
        NodeSet { words: vec![0; n.div_ceil(64)] }
    }
    #[inline]
    pub fn contains(&self, i: u32) -> bool {
        self.words[(i >> 6) as usize] >> (i & 63) & 1 == 1
    }
    #[inline]
    pub fn insert(&mut self, i: u32) {
        self.words[(i >> 6) as usize] |= 1 << (i & 63);
    }
    #[inline]
    pub fn remove(&mut self, i: u32) {
        self.words[(i >> 6) as usize] &= !(1 << (i & 63));
    }
    pub fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }
    /// Insert (`insert`) or remove every id of `range`, a word at a time.
    pub fn set_range(&mut self, range: std::ops::Range<u32>, insert: bool) {
        let (lo, hi) = (range.start, range.end);
        if lo >= hi {
            return;
        }
        let (first, last) = ((lo >> 6) as usize, ((hi - 1) >> 6) as usize);
        for w in first..=last {
            let mut bits = !0u64;
            if w == first {
                bits &= !0u64 << (lo & 63);
            }
            if w == last && hi & 63 != 0 {
                bits &= !0u64 >> (64 - (hi & 63));
            }
            let word = &mut self.words[w];
            *word = if insert { *word | bits } else { *word & !bits };
        }
    }
    /// Members in `range`, ascending.
    pub fn iter_range(&self, range: std::ops::Range<u32>) -> impl Iterator<Item = u32> + '_ {
        let (lo, hi) = (range.start, range.end);
        let mut w = (lo >> 6) as usize;
        let last = if hi == 0 { 0 } else { ((hi - 1) >> 6) as usize + 1 };
        let mut cur = if lo < hi { self.words.get(w).copied().unwrap_or(0) & (!0u64 << (lo & 63)) } else { 0 };
        std::iter::from_fn(move || loop {
            if cur != 0 {
                let bit = cur.trailing_zeros();
                cur &= cur - 1;
                let i = (w as u32) * 64 + bit;
                return if i < hi { Some(i) } else { None };
            }
            w += 1;
            if w >= last {
                return None;
            }
            cur = self.words[w];
        })
    }
    /// Members in `range` that are not in `minus`, counted a word at a time.
    pub fn count_range_minus(&self, range: std::ops::Range<u32>, minus: &NodeSet) -> u32 {
        let (lo, hi) = (range.start, range.end);
        if lo >= hi {
            return 0;
        }
        let (first, last) = ((lo >> 6) as usize, ((hi - 1) >> 6) as usize);
        let mut total = 0;
        for w in first..=last {
            let mut mask = !0u64;
            if w == first {
                mask &= !0u64 << (lo & 63);
            }
            if w == last && hi & 63 != 0 {
                mask &= !0u64 >> (64 - (hi & 63));
            }
            total += (self.words[w] & !minus.words[w] & mask).count_ones();
        }
        total
    }

    /// For consecutive `bounds` b0 <= b1 <= ... (ascending), push the members of each
    /// b(i)..b(i+1) not in `minus` onto `out`. A prefix count a word at a time: one
    /// popcount per bound, however the ranges fall on words (a leaf of 18 nodes spans one
    /// or two words).
    pub fn count_between_minus(&self, bounds: impl IntoIterator<Item = u32>, minus: &NodeSet, out: &mut Vec<u32>) {
        // Members below `x`, counted from word `w` (whose preceding words hold `before`).
        let (mut w, mut before, mut prev) = (0usize, 0u32, None);
        let word = |w: usize| self.words.get(w).map_or(0, |&x| x & !minus.words.get(w).copied().unwrap_or(0));
        for x in bounds {
            while w < (x >> 6) as usize {
                before += word(w).count_ones();
                w += 1;
            }
            let below = before + (word(w) & ((1u64 << (x & 63)) - 1)).count_ones();
            if let Some(p) = prev {
                out.push(below - p);
            }
            prev = Some(below);
        }
    }

    /// Push up to `m` members of `range` not in `minus` onto `out`, ascending.
    pub fn take_range_minus(&self, range: std::ops::Range<u32>, minus: Option<&NodeSet>, m: u32, out: &mut Vec<u32>) {
        let (lo, hi) = (range.start, range.end);
        let mut left = m;
        if lo >= hi || left == 0 {
            return;
        }
        for w in (lo >> 6) as usize..=((hi - 1) >> 6) as usize {
            let mut bits = self.words[w] & !minus.map_or(0, |s| s.words[w]);
            if w == (lo >> 6) as usize {
                bits &= !0u64 << (lo & 63);
            }
            if w == ((hi - 1) >> 6) as usize && hi & 63 != 0 {
                bits &= !0u64 >> (64 - (hi & 63));
            }
            // A run of consecutive members (a free leaf, mostly) goes in as a range.
            let (low, count) = (bits.trailing_zeros(), bits.count_ones());
            if bits != 0 && bits >> low == (!0u64 >> (64 - count)) && count <= left {
                let first = (w as u32) * 64 + low;
                out.extend(first..first + count);
                left -= count;
                if left == 0 {
                    return;
                }
                continue;
            }
            while bits != 0 {
                out.push((w as u32) * 64 + bits.trailing_zeros());
                bits &= bits - 1;
                left -= 1;
                if left == 0 {
                    return;
                }
            }
        }
    }

    pub fn count(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// The bits, 64 ids a word (id `i` is bit `i % 64` of word `i / 64`): to compare or
    /// copy a set a word at a time.
    #[inline]
    pub fn words(&self) -> &[u64] {
        &self.words
    }
    /// The words, to write a set a word at a time (bit `i & 63` of word `i >> 6` is `i`).
    #[inline]
    pub fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }
}

/// A number no state has carried before: [`ClusterState::stamp`]. Global (not per state)
/// so that a copy and its original, changed separately, never share one.
fn fresh_stamp() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Counters an allocation policy keeps over the jobs holding nodes, told of every
/// allocation and release of the [`ClusterState`] that carries it (installed with
/// [`ClusterState::install_tracker`], built by `Allocator::tracker`). A copy of the state
/// (a queue policy's projection of the future) copies its tracker, so the counters always
/// describe the state they travel with.
pub trait Tracker: std::fmt::Debug + Send + Sync + 'static {
    /// `nodes` (ascending) were given to one job of span `class`.
    fn allocate(&mut self, topo: &Topology, nodes: &[u32], class: SpanClass);
    /// `nodes` (ascending) of one job of span `class` were taken back.
    fn release(&mut self, topo: &Topology, nodes: &[u32], class: SpanClass);
    /// A copy (the state is cloned).
    fn clone_box(&self) -> Box<dyn Tracker>;
    /// For the policy that installed it to read its own type back
    /// ([`ClusterState::tracked`]).
    fn as_any(&self) -> &dyn Any;
}

/// The allocation state of every node.
#[derive(Debug)]
pub struct ClusterState {
    /// Job index holding each node, or [`FREE`] / [`DOWN`].
    owner: Vec<u32>,
    free: NodeSet,
    n_free: u32,
    /// Nodes not down (fixed for a run).
    n_healthy: u32,
    leaf_free: Vec<u32>,
    pod_free: Vec<u32>,
    /// The allocation policy's own counters, if it keeps any.
    tracker: Option<Box<dyn Tracker>>,
    /// Changes (to a number never used before) at every change of the state.
    stamp: u64,
    /// The last [`RECENT`] changes, newest first: the stamp before each (0: none known),
    /// and the leaves it touched (first, last).
    recent: [(u64, u32, u32); RECENT],
}

/// Changes a state remembers ([`ClusterState::changes_since`]): a reservation search takes
/// or releases a few jobs between two questions, and each job is one change.
const RECENT: usize = 16;

impl Clone for ClusterState {
    fn clone(&self) -> ClusterState {
        ClusterState {
            owner: self.owner.clone(),
            free: self.free.clone(),
            n_free: self.n_free,
            n_healthy: self.n_healthy,
            leaf_free: self.leaf_free.clone(),
            pod_free: self.pod_free.clone(),
            tracker: self.tracker.as_ref().map(|t| t.clone_box()),
            // Same contents, same stamp: the first change to either gives it a fresh one.
            stamp: self.stamp,
            recent: self.recent,
        }
    }
}

impl ClusterState {
    /// Every node free except `down` ones.
    pub fn new(topo: &Topology, down: &[u32]) -> ClusterState {
        let n = topo.n_nodes();
        let mut s = ClusterState {
            owner: vec![FREE; n],
            free: NodeSet::new(n),
            n_free: 0,
            n_healthy: 0,
            leaf_free: vec![0; topo.n_leaves()],
            pod_free: vec![0; topo.n_pods()],
            tracker: None,
            stamp: fresh_stamp(),
            recent: [(0, 0, 0); RECENT],
        };
        for &d in down {
            if (d as usize) < n {
                s.owner[d as usize] = DOWN;
            }
        }
        s.n_healthy = s.owner.iter().filter(|&&o| o != DOWN).count() as u32;
        for i in 0..n as u32 {
            if s.owner[i as usize] == FREE {
                s.free.insert(i);
                s.n_free += 1;
                let leaf = topo.leaf_of(i);
                s.leaf_free[leaf as usize] += 1;
                s.pod_free[topo.pod_of_leaf(leaf) as usize] += 1;
            }
        }
        s
    }

    /// Two states with the same stamp hold the same nodes for the same owners, with the
    /// same tracker counts (a copy keeps its original's stamp until one of them changes):
    /// an allocation policy may keep what it derived from a state under its stamp.
    #[inline]
    pub fn stamp(&self) -> u64 {
        self.stamp
    }
    /// The stamp this state had before its last change, and the leaves (an inclusive
    /// range of leaf ids) that change touched: nothing outside them differs from the state
    /// that carried that stamp (free nodes, owners, the tracker's counts of those leaves
    /// and their pods). None when not known (a new state, a tracker installed).
    #[inline]
    pub fn last_change(&self) -> Option<(u64, std::ops::RangeInclusive<u32>)> {
        let (before, first, last) = self.recent[0];
        (before != 0).then_some((before, first..=last))
    }
    /// The leaves (an inclusive range) the changes since the state carried `stamp` touched,
    /// if it did within its last few changes: nothing outside them differs from that state
    /// (free nodes, owners, the tracker's counts of those leaves and their pods). Some
    /// empty range (`1..=0`) if the state carries `stamp`; None when not known.
    pub fn changes_since(&self, stamp: u64) -> Option<std::ops::RangeInclusive<u32>> {
        if stamp == self.stamp {
            #[allow(clippy::reversed_empty_ranges)] // no leaf: empty on purpose
            return Some(1..=0);
        }
        let (mut first, mut last) = (u32::MAX, 0);
        for &(before, f, l) in &self.recent {
            if before == 0 {
                return None;
            }
            (first, last) = (first.min(f), last.max(l));
            if before == stamp {
                return Some(first..=last);
            }
        }
        None
    }
    /// A new stamp after a change that touched leaves `first..=last`.
    fn changed(&mut self, first: u32, last: u32) {
        self.recent.copy_within(0..RECENT - 1, 1);
        self.recent[0] = (self.stamp, first, last);
        self.stamp = fresh_stamp();
    }
    #[inline]
    pub fn n_free(&self) -> u32 {
        self.n_free
    }
    #[inline]
    pub fn is_free(&self, node: u32) -> bool {
        self.owner[node as usize] == FREE
    }
    #[inline]
    pub fn owner(&self, node: u32) -> u32 {
        self.owner[node as usize]
    }
    #[inline]
    pub fn free_set(&self) -> &NodeSet {
        &self.free
    }
    #[inline]
    pub fn leaf_free(&self, leaf: u32) -> u32 {
        self.leaf_free[leaf as usize]
    }
    #[inline]
    pub fn pod_free(&self, pod: u32) -> u32 {
        self.pod_free[pod as usize]
    }
    /// Free nodes of every leaf, by leaf index.
    #[inline]
    pub fn leaf_frees(&self) -> &[u32] {
        &self.leaf_free
    }
    /// Free nodes of every pod, by pod index (each the sum over its leaves).
    #[inline]
    pub fn pod_frees(&self) -> &[u32] {
        &self.pod_free
    }
    /// Install an allocation policy's tracker (replacing any): it is told of the jobs
    /// holding nodes now (their nodes ascending, span class as `Topology::span_class`
    /// gives it, in increasing owner id), then of every allocation and release.
    pub fn install_tracker(&mut self, topo: &Topology, mut tracker: Box<dyn Tracker>) {
        for (_, nodes) in self.holdings() {
            tracker.allocate(topo, &nodes, topo.span_class(&nodes));
        }
        self.tracker = Some(tracker);
        self.stamp = fresh_stamp();
        self.recent = [(0, 0, 0); RECENT];
    }
    /// The installed tracker, if any.
    pub fn tracker(&self) -> Option<&dyn Tracker> {
        self.tracker.as_deref()
    }
    /// The installed tracker if it is a `T` (what the policy that installed it reads).
    pub fn tracked<T: Tracker>(&self) -> Option<&T> {
        self.tracker.as_deref().and_then(|t| t.as_any().downcast_ref::<T>())
    }
    /// Every owner holding nodes, with its nodes ascending, in increasing owner id.
    pub fn holdings(&self) -> Vec<(u32, Vec<u32>)> {
        let mut by_owner: std::collections::BTreeMap<u32, Vec<u32>> = std::collections::BTreeMap::new();
        for (n, &o) in self.owner.iter().enumerate() {
            if o != FREE && o != DOWN {
                by_owner.entry(o).or_default().push(n as u32);
            }
        }
        by_owner.into_iter().collect()
    }
    /// Healthy (not down) node count.
    pub fn n_healthy(&self) -> u32 {
        self.n_healthy
    }
    /// Healthy nodes of a leaf.
    pub fn leaf_healthy(&self, topo: &Topology, leaf: u32) -> u32 {
        topo.leaf_nodes(leaf).filter(|&n| self.owner[n as usize] != DOWN).count() as u32
    }

    /// Give `nodes` (ascending) to `job`; `class` is the job's span class.
    /// Panics if a node is not free: that would be an allocator bug, never a user error.
    pub fn allocate(&mut self, topo: &Topology, job: u32, nodes: &[u32], class: SpanClass) {
        self.transfer(topo, nodes, FREE, job, job);
        self.n_free -= nodes.len() as u32;
        if let Some(t) = self.tracker.as_mut() {
            t.allocate(topo, nodes, class);
        }
    }

    /// Hand `nodes` from owner `from` to owner `to` (one of them [`FREE`]), keeping the
    /// free set and the leaf and pod counters; panics if a node is not `from`'s (`job`
    /// names the job for the message). Works a run of consecutive ids on one leaf at a
    /// time (a job's ascending nodes mostly come in whole leaves): owners are checked and
    /// written as a slice, the free set a word at a time, the counters once per run. A
    /// reservation search releases hundreds of millions of nodes over a Curie replay.
    /// Correct in any order; ascending makes the runs longest.
    fn transfer(&mut self, topo: &Topology, nodes: &[u32], from: u32, to: u32, job: u32) {
        let freeing = to == FREE;
        let (mut i, mut first_leaf, mut last_leaf) = (0, u32::MAX, 0);
        while i < nodes.len() {
            let a = nodes[i];
            let leaf = topo.leaf_of(a);
            let end = topo.leaf_nodes(leaf).end;
            // The longest run a, a+1, ... on this leaf: all of the rest of the leaf (checked
            // without early exit, vectorized) or up to the first gap.
            let rest = &nodes[i + 1..nodes.len().min(i + (end - a) as usize)];
            let next = a + 1;
            let at = |k: usize, x: u32| x.wrapping_sub(k as u32) == next;
            let whole = rest.iter().enumerate().fold(true, |ok, (k, &x)| ok & at(k, x));
            let run = if whole { rest.len() } else { rest.iter().enumerate().take_while(|&(k, &x)| at(k, x)).count() };
            let (j, b) = (i + 1 + run, a + 1 + run as u32);
            let owners = &mut self.owner[a as usize..b as usize];
            // Checked without early exit (vectorized); the loop below names the node.
            if !owners.iter().fold(true, |ok, &o| ok & (o == from)) {
                let n = (a..b).find(|&n| self.owner[n as usize] != from).expect("some node is not from's");
                if freeing {
                    panic!("node {n} released by job {job} is not held by it");
                }
                panic!("node {n} given to job {job} is not free");
            }
            owners.fill(to);
            self.free.set_range(a..b, freeing);
            let run = b - a;
            let pod = topo.pod_of_leaf(leaf);
            if freeing {
                self.leaf_free[leaf as usize] += run;
                self.pod_free[pod as usize] += run;
            } else {
                self.leaf_free[leaf as usize] -= run;
                self.pod_free[pod as usize] -= run;
            }
            (first_leaf, last_leaf) = (first_leaf.min(leaf), last_leaf.max(leaf));
            i = j;
        }
        if !nodes.is_empty() {
            self.changed(first_leaf, last_leaf);
        }
    }

    /// Take a free node out of service (drained or down): it is never free until
    /// [`mark_up`](Self::mark_up). Live placement only; a replay fixes its down nodes at
    /// construction. Panics if the node is not free.
    pub fn mark_down(&mut self, topo: &Topology, node: u32) {
        assert_eq!(self.owner[node as usize], FREE, "node {node} marked down is not free");
        self.owner[node as usize] = DOWN;
        self.free.remove(node);
        let leaf = topo.leaf_of(node);
        self.leaf_free[leaf as usize] -= 1;
        self.pod_free[topo.pod_of_leaf(leaf) as usize] -= 1;
        self.n_free -= 1;
        self.n_healthy -= 1;
        self.changed(leaf, leaf);
    }

    /// Put a node marked down back in service, free. Panics if it is not down.
    pub fn mark_up(&mut self, topo: &Topology, node: u32) {
        assert_eq!(self.owner[node as usize], DOWN, "node {node} marked up is not down");
        self.owner[node as usize] = FREE;
        self.free.insert(node);
        let leaf = topo.leaf_of(node);
        self.leaf_free[leaf as usize] += 1;
        self.pod_free[topo.pod_of_leaf(leaf) as usize] += 1;
        self.n_free += 1;
        self.n_healthy += 1;
        self.changed(leaf, leaf);
    }

    /// Take `nodes` (ascending, as given) back from `job`.
    /// Panics if a node is not held by `job`: an engine bug, never a user error.
    pub fn release(&mut self, topo: &Topology, job: u32, nodes: &[u32], class: SpanClass) {
        self.transfer(topo, nodes, job, FREE, job);
        self.n_free += nodes.len() as u32;
        if let Some(t) = self.tracker.as_mut() {
            t.release(topo, nodes, class);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodeset_iterates_ranges() {
        let mut s = NodeSet::new(200);
        for i in [0u32, 5, 63, 64, 65, 130, 199] {
            s.insert(i);
        }
        assert_eq!(s.iter_range(0..200).collect::<Vec<_>>(), vec![0, 5, 63, 64, 65, 130, 199]);
        assert_eq!(s.iter_range(5..65).collect::<Vec<_>>(), vec![5, 63, 64]);
        assert_eq!(s.iter_range(66..130).count(), 0);
        assert_eq!(s.iter_range(130..131).collect::<Vec<_>>(), vec![130]);
        assert_eq!(s.iter_range(7..7).count(), 0);
        let mut minus = NodeSet::new(200);
        minus.insert(64);
        minus.insert(199);
        for (lo, hi) in [(0, 200), (5, 65), (63, 64), (64, 128), (66, 130), (7, 7), (130, 200), (0, 64)] {
            let expected = s.iter_range(lo..hi).filter(|&i| !minus.contains(i)).count() as u32;
            assert_eq!(s.count_range_minus(lo..hi, &minus), expected, "{lo}..{hi}");
        }
        // Per range between consecutive bounds, and the first m members of a range, against
        // a bit-by-bit walk.
        let bounds = [0u32, 0, 5, 63, 64, 65, 66, 127, 128, 130, 131, 199, 200];
        let mut counts = vec![];
        s.count_between_minus(bounds, &minus, &mut counts);
        let want: Vec<u32> = bounds.windows(2).map(|b| s.iter_range(b[0]..b[1]).filter(|&i| !minus.contains(i)).count() as u32).collect();
        assert_eq!(counts, want);
        for (lo, hi) in [(0, 200), (5, 65), (63, 64), (64, 128), (66, 130), (7, 7), (130, 200), (0, 64)] {
            for m in [0, 1, 2, 7] {
                for minus in [None, Some(&minus)] {
                    let mut got = vec![];
                    s.take_range_minus(lo..hi, minus, m, &mut got);
                    let want: Vec<u32> =
                        s.iter_range(lo..hi).filter(|&i| minus.map_or(true, |x| !x.contains(i))).take(m as usize).collect();
                    assert_eq!(got, want, "{lo}..{hi} m={m}");
                }
            }
        }
        for (lo, hi) in [(0, 200), (5, 65), (63, 64), (64, 128), (66, 130), (7, 7), (130, 200), (0, 64)] {
            for insert in [true, false] {
                let mut got = s.clone();
                got.set_range(lo..hi, insert);
                for i in 0..200 {
                    let want = if (lo..hi).contains(&i) { insert } else { s.contains(i) };
                    assert_eq!(got.contains(i), want, "{lo}..{hi} {insert} at {i}");
                }
            }
        }
        assert_eq!(s.count(), 7);
        s.remove(64);
        assert!(!s.contains(64));
    }

    /// Nodes held per span class: a tracker for the tests.
    #[derive(Clone, Debug, Default)]
    struct ByClass([i64; 4]);
    impl Tracker for ByClass {
        fn allocate(&mut self, _t: &Topology, nodes: &[u32], class: SpanClass) {
            self.0[class.number() as usize] += nodes.len() as i64;
        }
        fn release(&mut self, _t: &Topology, nodes: &[u32], class: SpanClass) {
            self.0[class.number() as usize] -= nodes.len() as i64;
        }
        fn clone_box(&self) -> Box<dyn Tracker> {
            Box::new(self.clone())
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn counters_follow_allocations() {
        let t = Topology::preset("toy18").unwrap();
        let mut s = ClusterState::new(&t, &[4]);
        assert_eq!(s.n_free(), 17);
        assert_eq!(s.leaf_free(1), 2);
        s.allocate(&t, 7, &[0, 3], SpanClass::Pod);
        assert_eq!(s.pod_free(0), 6);
        s.release(&t, 7, &[0, 3], SpanClass::Pod);
        assert_eq!(s.n_free(), 17);
        assert_eq!(s.n_healthy(), 17);
    }

    #[test]
    fn a_tracker_hears_of_every_allocation_and_travels_with_copies() {
        let t = Topology::preset("toy18").unwrap();
        let mut s = ClusterState::new(&t, &[]);
        s.allocate(&t, 7, &[0, 3], SpanClass::Pod);
        s.allocate(&t, 2, &[1], SpanClass::Leaf);
        assert!(s.tracker().is_none() && s.tracked::<ByClass>().is_none());
        // installed late: told of the jobs already holding nodes, with their span class
        s.install_tracker(&t, Box::new(ByClass::default()));
        assert_eq!(s.tracked::<ByClass>().unwrap().0, [0, 1, 2, 0]);
        s.allocate(&t, 8, &[4, 9], SpanClass::Pods);
        let mut projected = s.clone();
        projected.release(&t, 7, &[0, 3], SpanClass::Pod);
        assert_eq!(projected.tracked::<ByClass>().unwrap().0, [0, 1, 0, 2]);
        assert_eq!(s.tracked::<ByClass>().unwrap().0, [0, 1, 2, 2], "the original keeps its own counts");
        assert_eq!(s.holdings(), vec![(2, vec![1]), (7, vec![0, 3]), (8, vec![4, 9])]);
    }

    #[test]
    #[should_panic(expected = "node 0 given to job 2 is not free")]
    fn double_allocation_panics() {
        let t = Topology::preset("toy18").unwrap();
        let mut s = ClusterState::new(&t, &[]);
        s.allocate(&t, 1, &[0], SpanClass::Leaf);
        s.allocate(&t, 2, &[0], SpanClass::Leaf);
    }

    #[test]
    #[should_panic(expected = "node 1 given to job 1 is not free")]
    fn a_node_twice_in_one_allocation_panics() {
        let t = Topology::preset("toy18").unwrap();
        let mut s = ClusterState::new(&t, &[]);
        s.allocate(&t, 1, &[0, 1, 1], SpanClass::Leaf);
    }

    #[test]
    #[should_panic(expected = "node 4 released by job 1 is not held by it")]
    fn releasing_a_node_held_by_another_job_panics() {
        let t = Topology::preset("toy18").unwrap();
        let mut s = ClusterState::new(&t, &[]);
        s.allocate(&t, 1, &[2, 3], SpanClass::Pod);
        s.allocate(&t, 2, &[4], SpanClass::Leaf);
        s.release(&t, 1, &[2, 3, 4], SpanClass::Pod);
    }

    use proptest::prelude::*;

    proptest! {
        /// Allocations and releases of node lists in any order keep the counters, the free
        /// set and the owners equal to a recount, and the last change names a leaf range
        /// holding every node it changed, and a stamp the state had just before.
        #[test]
        fn counters_follow_any_node_order(
            sizes in prop::collection::vec((1u32..5, 1u32..4), 1..4),
            ops in prop::collection::vec((any::<bool>(), prop::collection::vec(0u32..64, 0..12)), 1..40),
        ) {
            let pods: Vec<Vec<u32>> = sizes.iter().map(|&(k, l)| vec![k; l as usize]).collect();
            let t = Topology::from_leaf_sizes("t", 3, &pods, None, None, None, None).unwrap();
            let n = t.n_nodes() as u32;
            let mut s = ClusterState::new(&t, &[]);
            let mut held: Vec<(u32, Vec<u32>)> = vec![];
            // every stamp the state carried, with the leaves changed since
            let mut history: Vec<(u64, Vec<u32>)> = vec![];
            for (job, (release, picks)) in ops.into_iter().enumerate() {
                let before = s.stamp();
                let changed: Vec<u32> = if release && !held.is_empty() {
                    let (j, mut nodes) = held.remove(picks.first().copied().unwrap_or(0) as usize % held.len());
                    nodes.reverse();
                    s.release(&t, j, &nodes, SpanClass::Pods);
                    nodes
                } else {
                    let mut nodes: Vec<u32> = picks.iter().map(|&p| p % n).filter(|&x| s.is_free(x)).collect();
                    nodes.dedup();
                    let mut seen = NodeSet::new(n as usize);
                    nodes.retain(|&x| { let new = !seen.contains(x); seen.insert(x); new });
                    s.allocate(&t, job as u32, &nodes, SpanClass::Pods);
                    held.push((job as u32, nodes.clone()));
                    nodes
                };
                if history.last().map(|h| h.0) != Some(before) {
                    history.push((before, vec![]));
                }
                if s.stamp() != before {
                    let leaves: Vec<u32> = changed.iter().map(|&x| t.leaf_of(x)).collect();
                    history.iter_mut().for_each(|h| h.1.extend(&leaves));
                    history.push((s.stamp(), vec![]));
                }
                // the last RECENT changes are known, and cover every leaf changed since
                for (k, (stamp, leaves)) in history.iter().rev().enumerate() {
                    let since = s.changes_since(*stamp);
                    if k > RECENT {
                        prop_assert!(since.is_none());
                        continue;
                    }
                    let since = since.unwrap();
                    prop_assert!(leaves.iter().all(|l| since.contains(l)), "{:?} {:?}", leaves, since);
                    prop_assert_eq!(since.is_empty(), leaves.is_empty());
                }
                prop_assert!(s.changes_since(u64::MAX).is_none());
                if changed.is_empty() {
                    prop_assert_eq!(s.stamp(), before);
                } else {
                    let (was, leaves) = s.last_change().unwrap();
                    prop_assert_eq!(was, before);
                    prop_assert!(s.stamp() != before);
                    prop_assert!(changed.iter().all(|&x| leaves.contains(&t.leaf_of(x))));
                    prop_assert!(changed.iter().any(|&x| t.leaf_of(x) == *leaves.start()));
                    prop_assert!(changed.iter().any(|&x| t.leaf_of(x) == *leaves.end()));
                }
                for l in 0..t.n_leaves() as u32 {
                    prop_assert_eq!(s.leaf_free(l), t.leaf_nodes(l).filter(|&x| s.owner(x) == FREE).count() as u32);
                }
                for p in 0..t.n_pods() as u32 {
                    prop_assert_eq!(s.pod_free(p), t.pod_leaves(p).map(|l| s.leaf_free(l)).sum::<u32>());
                }
                prop_assert_eq!(s.n_free(), s.free_set().count());
                for x in 0..n {
                    prop_assert_eq!(s.free_set().contains(x), s.owner(x) == FREE);
                    let holder = held.iter().find(|(_, v)| v.contains(&x)).map(|h| h.0);
                    prop_assert_eq!(s.owner(x), holder.unwrap_or(FREE));
                }
            }
        }
    }
}

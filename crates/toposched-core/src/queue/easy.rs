//! `easy`: EASY backfilling (Mu'alem & Feitelson 2001; Lifka's EASY), with the
//! topology-constrained reservation of the SC18 paper's plugin when the allocation policy
//! is not fungible (brief §2.6).
//!
//! The rules, exactly (docs/semantics.md repeats them for users):
//!
//! 1. **Phase 1.** Walk the queue in order; start each job the allocation policy can place
//!    now. The first job it cannot place is the *head*; the walk stops there.
//! 2. **Reservation for the head**, from *requested* times only. Running jobs are taken in
//!    order of expected end `start + walltime` (ties: lower job row first; a job past its
//!    limit, possible only with run-on, counts as ending now).
//!    * Fungible policies (`linear`, `random`): the *shadow time* is the expected end at
//!      which free nodes first reach the head's size; *extra* nodes are all the nodes free
//!      at the shadow time (every job expected to end by then released, including several
//!      ending at that same instant) beyond the head's size.
//!    * Non-fungible policies (`isolated`): on a copy of the state, release the running
//!      jobs one by one in that order and run the allocation policy after each release;
//!      jobs expected to end at the same instant are released together; the first success
//!      gives the reservation: a node set, and a start time (the shadow time) equal to the
//!      last released jobs' expected end. The reservation (node set and span class) is
//!      handed to the allocation policy in its guard, which says what else it forbids
//!      (`isolated`: the leaves it touches to other jobs spanning leaves if the head spans
//!      leaves, and its pods to other jobs spanning pods if it spans pods).
//! 3. **Phase 2 (backfill).** Walk the rest of the queue in order (stopping early when no
//!    node is free). A job that fits in the free nodes starts now if:
//!    * fungible: it ends by the shadow time (`now + walltime <= shadow`), or else it needs
//!      no more than the extra nodes (which it then uses up);
//!    * non-fungible: the allocation policy places it, where a job ending after the shadow
//!      time may not use reserved nodes nor what the policy's reading of the reservation
//!      forbids (`isolated`: its closed leaves/pods). A job ending by the shadow time is
//!      unconstrained.
//! 4. The reservation is recomputed at every pass (it is not binding); the head starts
//!    when phase 1 can place it. A job never delays the head beyond a shadow time computed
//!    for it: shadow times only move earlier (tested as a property).
//!
//! Options reproduce the published plugin where it differs: `flux_window` records the
//! reservation as starting 2 s after the expected end and counts a backfill job ending
//! exactly then as overlapping (brief §2.6 note 4); `reserved_tiers_always` closes the
//! reservation's leaves/pods to spanning jobs even when they end before it (note 3).
//!
//! *Cost*: phase 1 is one allocation call per job started and one for the head. Phase 2
//! asks the allocation policy only about jobs rule 3 does not rule out by their size and
//! end (and, on node sets, that no smaller failure of their class rules out): an index of
//! the queue in buckets by class and node count, kept across passes (`QueueIndex`), finds
//! them in O(buckets x log rows) each (a bucket's answer reused while its bounds stand; a
//! pass after one that asked about no job starts after the rows that one looked at:
//! `Quiet`), so a pass costs O((jobs tried + 1) x buckets x log rows), not O(queue): with
//! thousands queued (a log on a fabric smaller than its machine) the walk over every
//! queued job was most of the replay (RICC and Curie on cab: BENCHMARKS.md, "EASY on a
//! long queue"). A queue order that re-sorts the queue gets the plain walk
//! (tests/easy_indexed.rs compares the two). The reservation (the
//! planner's `shadow` on counts, its `Projection` for node sets: `crate::planner`) is
//! O(running) for fungible policies, stopping at the shadow time, and O(running x
//! allocation) from scratch otherwise; either is cached while the machine state does not
//! change. For node sets, when the allocation policy promises that placement only gets
//! easier as jobs end (`Allocator::release_monotone`: `isolated`, `capped`, `jigsaw`) and
//! has no patience, the projected state at the reservation instant is kept across passes
//! and brought up to date by the running set's changes since (the engine's log,
//! `PassCtx::take_running_changes`): a job ended since whose expected end was after the
//! reservation is released on it, a job started since that ends after it is taken; then
//! the instant steps back while the previous end instant still places the head (tried
//! only if a job expected to end after that instant has ended, or it was never searched),
//! or forward until one does, and the head is placed again only if the projected state
//! changed. That is O(changes) state changes plus allocation calls for the instants
//! stepped over, where the search from scratch copies the state and releases every job
//! up to the reservation (EASY+isolated on Curie: loop 3.4-3.6 s -> 1.26-1.31 s,
//! BENCHMARKS.md section 3). It gives the search's reservation exactly
//! (`Easy::update_kept` says why; tests/easy_incremental.rs compares them at every pass).
//! A new head, a kept instant already past (a job running on past its limit), an unknown
//! log, or a policy without the promise: the search from scratch.

use std::collections::BTreeSet;
use std::ops::Bound;

use super::{PassCtx, QueueEntry, QueuePolicy};
use crate::alloc::{Allocator, Guard, Reserved};
use crate::options::{parse_options, schema_of};
use crate::pass::{Core, RunningChange};
use crate::planner::{shadow, Projection};
use crate::state::{ClusterState, NodeSet};
use crate::topology::{SpanClass, Topology};

/// Options of `easy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EasyOptions {
    /// With a non-fungible allocation policy: reservation window as the flux-sched plugin
    /// records it (start = expected end + 2 s, inclusive overlap test).
    pub flux_window: bool,
    /// With a non-fungible allocation policy: reserved leaves/pods are closed to spanning
    /// backfill jobs even if they end before the reservation.
    pub reserved_tiers_always: bool,
}

pub static POLICY: QueueEntry = QueueEntry {
    name: "easy",
    summary: "EASY backfilling: the first job that cannot start gets a reservation no backfilled job may delay",
    options: schema_of::<EasyOptions>,
    build: |o| Ok(Box::new(Easy::new(parse_options("easy", o)?))),
};

#[derive(Clone, Debug)]
struct NodeReservation {
    head: u32,
    version: u64,
    start_s: i64,
    /// The reserved nodes, ascending, and as a set.
    list: Vec<u32>,
    nodes: NodeSet,
    class: SpanClass,
    /// Names the node list for the allocation policy (`Reserved::stamp`): new at every
    /// change of the list.
    stamp: u64,
}

impl NodeReservation {
    fn new(topo: &Topology, head: u32, version: u64, start_s: i64) -> NodeReservation {
        let nodes = NodeSet::new(topo.n_nodes());
        NodeReservation { head, version, start_s, list: Vec::new(), nodes, class: SpanClass::Leaf, stamp: Reserved::fresh_stamp() }
    }

    /// Reserve `nodes` (any order).
    fn set_nodes(&mut self, topo: &Topology, mut nodes: Vec<u32>) {
        // the same nodes as before (the projection may have changed away from them): the
        // set and class stand; compared before sorting too (policies that list them
        // ascending then cost one comparison, not a scan and a comparison)
        if self.list == nodes {
            return;
        }
        nodes.sort_unstable();
        if self.list == nodes {
            return;
        }
        self.nodes.clear();
        // ascending: a run of consecutive ids at a time
        let mut rest = &nodes[..];
        while let Some(&first) = rest.first() {
            let run = rest.iter().enumerate().take_while(|&(k, &n)| n - first == k as u32).count();
            self.nodes.set_range(first..first + run as u32, true);
            rest = &rest[run..];
        }
        self.class = topo.span_class(&nodes);
        self.list = nodes;
        self.stamp = Reserved::fresh_stamp();
    }
}

/// How [`Easy`] brings its node-set reservation up to date after the machine changed. Not
/// an option of the policy (both ways give the same reservation): tests compare them.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReservationUpdate {
    /// By what changed, when the allocation policy promises
    /// [`Allocator::release_monotone`] and has no patience; else the full search.
    #[default]
    Incremental,
    /// The full search at every change (what the incremental update must equal).
    Full,
    /// Both, panicking if instant or nodes differ.
    Checked,
}

/// The projection behind the last node-set reservation, kept across passes so that the
/// next one is found by what changed since (see *Cost* above).
#[derive(Clone, Debug)]
struct Kept {
    head: u32,
    /// The reservation instant: `state` is the machine when it was kept (the running
    /// set's changes are logged since) with every job expected to end by `at` released
    /// (a job past its limit: at the instant then).
    at: i64,
    /// The first end instant then: the head fails at every end instant from it up to
    /// `at` excluded.
    first: i64,
    state: ClusterState,
}

#[derive(Clone, Debug, Default)]
pub struct Easy {
    opts: EasyOptions,
    cached: Option<NodeReservation>,
    update: ReservationUpdate,
    kept: Option<Kept>,
    /// The running set's changes since the projection was kept, and scratch: the jobs
    /// among them still running (expected end, row).
    changes: Vec<RunningChange>,
    started: Vec<(i64, u32)>,
    /// Scratch: the nodes of an ended job.
    nodes: Vec<u32>,
    /// Reservations found by `update_kept`, and its steps back and forward (tests check
    /// that each path is taken).
    updated: [u64; 3],
    /// How phase 2 finds its candidates (tests compare the ways).
    scan: BackfillScan,
    /// Phase 2's index of the queue by row, and what it covers: `(edits, len)` when it
    /// holds exactly the rows of the queue this pass left, of length `len`, after which
    /// the queue's edit count was `edits` (`PassCtx::queue_edits`); None: rebuilt at the
    /// next pass.
    index: ClassIndex,
    known: Option<(u64, usize)>,
    /// Scratch: the rows phase 2 started, in queue order.
    backfilled: Vec<u32>,
    /// The last pass, if its phase 2 asked the allocation policy about no job.
    quiet: Option<Quiet>,
    /// Scratch: phase 2's last answer per bucket (`next_candidate`).
    answers: Vec<Answer>,
    /// Passes run with the index and with the plain scan, and passes that started after
    /// the rows a quiet pass looked at (tests check each is taken).
    scans: [u64; 3],
}

/// A pass whose phase 2 asked the allocation policy about no job: every job it looked at
/// was ruled out by rule 3 alone (on counts by size against the free and extra nodes and
/// by end against the shadow time, on node sets by size against the free nodes: no
/// failure was recorded). While the machine state (`version`) and the head are the same
/// and only rows were appended, a later pass rules them out again (the free nodes are the
/// same, and on counts its time to the shadow and extra nodes are no larger), so it
/// starts at `resume`.
#[derive(Clone, Copy, Debug)]
struct Quiet {
    version: u64,
    head: u32,
    /// On counts: shadow time - now, and the extra nodes (0 on node sets).
    wall_max_s: i64,
    extra: u32,
    /// The first row it did not look at: the end of its depth (`--queue-depth`: after
    /// the jobs phase 1 started leave, the next pass's depth reaches further), else one
    /// past the last row queued (rows appended since come after it).
    resume: u32,
}

/// A bucket's first candidate from `from` on (within the pass's depth) under `bounds`
/// (short, long: see [`QueueIndex::first`]).
#[derive(Clone, Copy, Debug)]
struct Answer {
    bounds: (u32, u32),
    from: u32,
    row: Option<u32>,
}

impl Answer {
    /// No answer yet (no bounds are these: `long` is at most the free nodes).
    const NONE: Answer = Answer { bounds: (u32::MAX, u32::MAX), from: u32::MAX, row: None };
}

/// How phase 2 walks the queue. Not an option of the policy (both ways start the same
/// jobs): tests compare them.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackfillScan {
    /// Through [`QueueIndex`] when the queue is in row order (no queue order re-sorts
    /// it); else the plain scan.
    #[default]
    Indexed,
    /// Every queued job behind the head in turn (what the index must equal).
    Plain,
}

/// Phase 2's candidates on a long queue, found without looking at the others. Phase 2
/// skips, by rule 3 and without asking the allocation policy, every job larger than the
/// free nodes and, on counts, every job that ends after the shadow time and needs more
/// than the extra nodes (on node sets, every job no smaller than a failed one of its
/// class: `Hopeless`). So a candidate is a queued job with `walltime_s <= wall_max_s` and
/// `nodes <= short`, or `walltime_s > wall_max_s` and `nodes <= long`.
///
/// The queued jobs are kept in buckets ([`QueueIndex`] each) by (monotone class, node
/// count bucket: one per count up to 16, then two per doubling), each a segment tree over
/// its rows of the smallest node count and the smallest time limit of each range; a
/// range is entered only if its minima leave a candidate possible. Within a bucket of one
/// node count the minima never come from two rows that each fail one half of the test, so
/// the search goes straight to the first candidate; with one bucket for all, a queue of
/// small long jobs and large short ones sent it into most of the tree at every pass. A
/// pass costs O((jobs tried + 1) x buckets x log rows) instead of O(queue): with tens of
/// thousands queued (a log on a fabric smaller than its machine) the plain walk was most
/// of the replay.
#[derive(Clone, Debug, Default)]
struct QueueIndex {
    /// The rows, ascending; a row taken out stays (its leaf `NONE`) until the next rebuild.
    rows: Vec<u32>,
    /// Rows not taken out.
    live: usize,
    /// Leaves, a power of two; tree node 1 is the root, node `v` has children `2v` and
    /// `2v + 1`, leaf `i` (for `rows[i]`) is node `cap + i`.
    cap: usize,
    /// Per tree node: the smallest node count and the smallest `walltime_s` of the queued
    /// rows below it (side by side: a search reads both).
    min: Vec<(u32, i64)>,
}

impl QueueIndex {
    const NONE: (u32, i64) = (u32::MAX, i64::MAX);

    #[inline]
    fn both_min(a: (u32, i64), b: (u32, i64)) -> (u32, i64) {
        (a.0.min(b.0), a.1.min(b.1))
    }

    /// Hold exactly `rows` (ascending, with their leaves), with room for as many again.
    fn build(&mut self, rows: impl Iterator<Item = (u32, (u32, i64))>) {
        self.rows.clear();
        let leaves: Vec<(u32, i64)> = rows.map(|(row, leaf)| {
            self.rows.push(row);
            leaf
        }).collect();
        self.live = leaves.len();
        self.cap = (2 * leaves.len()).next_power_of_two().max(16);
        self.min.clear();
        self.min.resize(2 * self.cap, Self::NONE);
        self.min[self.cap..self.cap + leaves.len()].copy_from_slice(&leaves);
        for v in (1..self.cap).rev() {
            self.min[v] = Self::both_min(self.min[2 * v], self.min[2 * v + 1]);
        }
    }

    /// Rebuild with the rows not taken out.
    fn compact(&mut self) {
        let rows = std::mem::take(&mut self.rows);
        let min = std::mem::take(&mut self.min);
        let cap = self.cap;
        self.build(rows.iter().enumerate().map(|(i, &row)| (row, min[cap + i])).filter(|&(_, leaf)| leaf != Self::NONE));
    }

    fn set(&mut self, i: usize, leaf: (u32, i64)) {
        let mut v = self.cap + i;
        self.min[v] = leaf;
        while v > 1 {
            v /= 2;
            let m = Self::both_min(self.min[2 * v], self.min[2 * v + 1]);
            if m == self.min[v] {
                break; // the minima above are unchanged too
            }
            self.min[v] = m;
        }
    }

    /// Add `row`, after every row held.
    fn push(&mut self, row: u32, leaf: (u32, i64)) {
        debug_assert!(self.rows.last().map_or(true, |&last| last < row));
        if self.rows.len() == self.cap {
            self.compact();
        }
        self.rows.push(row);
        self.live += 1;
        self.set(self.rows.len() - 1, leaf);
    }

    /// Take `row` out (a row held).
    fn remove(&mut self, row: u32) {
        let i = self.rows.binary_search(&row).expect("an indexed row");
        self.set(i, Self::NONE);
        self.live -= 1;
        if self.live * 4 < self.rows.len() && self.rows.len() > 64 {
            self.compact();
        }
    }

    /// The first queued row in `[from, to)` with `walltime_s <= wall_max_s` and `nodes <=
    /// short`, or `walltime_s > wall_max_s` and `nodes <= long`.
    fn first(&self, from: u32, to: u32, wall_max_s: i64, short: u32, long: u32) -> Option<u32> {
        // Necessary for a candidate below a node (its minima may come from two rows), and
        // exact at a leaf.
        let leaf = self.cap;
        let may_hold = |v: usize| {
            let (n, w) = self.min[v];
            if v >= leaf {
                if w <= wall_max_s {
                    n <= short
                } else {
                    n <= long
                }
            } else {
                n <= long || (w <= wall_max_s && n <= short)
            }
        };
        // most buckets hold no candidate at all: no search for the range then
        if self.live == 0 || !may_hold(1) {
            return None;
        }
        let lo = if self.rows.first().is_some_and(|&r| r >= from) { 0 } else { self.rows.partition_point(|&r| r < from) };
        let hi = if self.rows.last().is_some_and(|&r| r < to) { self.rows.len() } else { self.rows.partition_point(|&r| r < to) };
        if lo >= hi {
            return None;
        }
        // Depth-first, left to right, over the nodes inside [lo, hi) that may hold one.
        let mut stack = [(0usize, 0usize, 0usize); 66];
        stack[0] = (1, 0, self.cap);
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let (v, l, r) = stack[top];
            if r <= lo || hi <= l || !may_hold(v) {
                continue;
            }
            if r - l == 1 {
                return Some(self.rows[l]);
            }
            let m = (l + r) / 2;
            stack[top] = (2 * v + 1, m, r);
            stack[top + 1] = (2 * v, l, m);
            top += 2;
        }
        None
    }
}

/// A bucket's key: the allocation policy's monotone class of the node count
/// (`Allocator::monotone_class`; None on counts, where phase 2 does not use classes), and
/// the node count's bucket. The class of a node count is taken to depend on the fabric
/// and the count only, as `Hopeless` takes it.
type BucketKey = (Option<u8>, u8);

/// The bucket of a node count: itself up to 16, then two per doubling.
fn size_bucket(nodes: u32) -> u8 {
    if nodes <= 16 {
        return nodes as u8;
    }
    let octave = 31 - nodes.leading_zeros(); // >= 4
    let half = (nodes >> (octave - 1)) & 1;
    (16 + 2 * (octave - 4) + half + 1) as u8
}

/// The smallest node count of a bucket.
fn bucket_floor(bucket: u8) -> u32 {
    if bucket <= 16 {
        return bucket as u32;
    }
    let k = bucket as u32 - 17;
    let (octave, half) = (4 + k / 2, k % 2);
    // 16 itself has a bucket of its own
    ((1 << octave) | (half << (octave - 1))).max(17)
}

/// The queue's buckets, ordered by key (within a class, by node count).
#[derive(Clone, Debug, Default)]
struct ClassIndex {
    trees: Vec<(BucketKey, QueueIndex)>,
}

impl ClassIndex {
    fn key_of(ctx: &PassCtx, nodes: u32) -> BucketKey {
        let class = if ctx.alloc.fungible() { None } else { ctx.alloc.monotone_class(ctx.topo, nodes) };
        (class, size_bucket(nodes))
    }

    fn leaf_of(ctx: &PassCtx, row: u32) -> (u32, i64) {
        let job = ctx.jobs[row as usize];
        (job.nodes, job.walltime_s)
    }

    /// Index exactly the rows of `queue` (ascending).
    fn build(&mut self, ctx: &PassCtx, queue: &[u32]) {
        let mut rows: Vec<(BucketKey, u32)> = queue.iter().map(|&row| (Self::key_of(ctx, ctx.jobs[row as usize].nodes), row)).collect();
        rows.sort_by_key(|&(key, _)| key); // stable: rows ascend within a bucket
        self.trees.clear();
        for chunk in rows.chunk_by(|a, b| a.0 == b.0) {
            let mut tree = QueueIndex::default();
            tree.build(chunk.iter().map(|&(_, row)| (row, Self::leaf_of(ctx, row))));
            self.trees.push((chunk[0].0, tree));
        }
    }

    /// Index `row`, after every row indexed.
    fn insert(&mut self, ctx: &PassCtx, row: u32) {
        let key = Self::key_of(ctx, ctx.jobs[row as usize].nodes);
        let i = match self.trees.binary_search_by_key(&key, |&(k, _)| k) {
            Ok(i) => i,
            Err(i) => {
                let mut tree = QueueIndex::default();
                tree.build(std::iter::empty());
                self.trees.insert(i, (key, tree));
                i
            }
        };
        self.trees[i].1.push(row, Self::leaf_of(ctx, row));
    }

    fn remove(&mut self, ctx: &PassCtx, row: u32) {
        let key = Self::key_of(ctx, ctx.jobs[row as usize].nodes);
        let i = self.trees.binary_search_by_key(&key, |&(k, _)| k).expect("an indexed row's bucket");
        self.trees[i].1.remove(row);
    }
}

/// The end instant of a running job: its expected end, or `now` if that has passed (run-on).
#[inline]
fn instant(expected_end: i64, now: i64) -> i64 {
    expected_end.max(now)
}

/// The running jobs released at end instant `t` (`t >= now`): at `now`, every job expected
/// to end by then.
fn ending_at(running: &BTreeSet<(i64, u32)>, now: i64, t: i64) -> impl Iterator<Item = u32> + '_ {
    let from = if t <= now { Bound::Unbounded } else { Bound::Included((t, 0)) };
    running.range((from, Bound::Included((t, u32::MAX)))).map(|&(_, job)| job)
}

/// The last end instant at or before `t`.
fn instant_at_or_before(running: &BTreeSet<(i64, u32)>, now: i64, t: i64) -> Option<i64> {
    running.range(..=(t, u32::MAX)).next_back().map(|&(e, _)| instant(e, now)).filter(|&i| i <= t)
}

/// The last end instant before `t`.
fn instant_before(running: &BTreeSet<(i64, u32)>, now: i64, t: i64) -> Option<i64> {
    if t <= now {
        return None;
    }
    running.range(..(t, 0)).next_back().map(|&(e, _)| instant(e, now))
}

/// The first end instant after `t` (after none: the first).
fn instant_after(running: &BTreeSet<(i64, u32)>, now: i64, t: Option<i64>) -> Option<i64> {
    let from = match t {
        Some(t) if t >= now => Bound::Excluded((t, u32::MAX)),
        _ => Bound::Unbounded,
    };
    running.range((from, Bound::Unbounded)).next().map(|&(e, _)| instant(e, now))
}

impl Easy {
    pub fn new(opts: EasyOptions) -> Easy {
        Easy { opts, ..Easy::default() }
    }

    /// Choose how the node-set reservation is updated (tests only: see [`ReservationUpdate`]).
    #[doc(hidden)]
    pub fn with_update(mut self, update: ReservationUpdate) -> Easy {
        self.update = update;
        self
    }

    /// Choose how phase 2 walks the queue (tests only: see [`BackfillScan`]).
    #[doc(hidden)]
    pub fn with_scan(mut self, scan: BackfillScan) -> Easy {
        self.scan = scan;
        self
    }

    /// Passes run with the queue index and with the plain scan, and passes that started
    /// after the rows a quiet one looked at (tests).
    #[doc(hidden)]
    pub fn scans(&self) -> [u64; 3] {
        self.scans
    }

    /// How many reservations were found by what changed, not by the full search, and the
    /// steps back and forward taken to find them (tests).
    #[doc(hidden)]
    pub fn incremental_updates(&self) -> [u64; 3] {
        self.updated
    }

    /// Fungible reservation: (shadow time, extra nodes), by the planner's [`shadow`] over
    /// the running jobs' expected ends (a job past its limit counts as ending now).
    fn count_reservation(ctx: &PassCtx, head_nodes: u32) -> Option<(i64, u32)> {
        let jobs = ctx.jobs;
        let ends = ctx.running().iter().map(|&(expected_end, job)| (expected_end, jobs[job as usize].nodes));
        shadow(ctx.now(), ctx.n_free(), head_nodes, ends)
    }

    /// Rule 2's search from scratch: the planner's [`Projection`] of the running jobs
    /// ending (past-limit ones now), and the first end instant at which the allocation
    /// policy places the head on it: (instant, nodes, the projected state then).
    fn full_search(core: &Core, alloc: &mut dyn Allocator, topo: &Topology, head: u32, need: u32) -> Option<(i64, Vec<u32>, ClusterState)> {
        let now = core.now;
        let ends = core.running().iter().map(|&(expected_end, job)| (instant(expected_end, now), job));
        let release = |state: &mut ClusterState, job: u32| state.release(topo, job, core.nodes_of(job), core.class_of(job));
        let mut projection = Projection::new(core.state().clone(), ends, release);
        // a policy that declines free nodes only until it has held the head back long
        // enough: the instant its patience runs out is planned for too
        let wait_ends = core.patience_ends(head, alloc.patience_s()).filter(|&t| t > now);
        let (t, nodes) = projection.first_placement(wait_ends, |t, state| {
            let guard = Guard { held_back_s: core.held_back_s(head, t), projected: true, ..Guard::NONE };
            if need <= state.n_free() && alloc.feasible(topo, state, need, &guard) {
                alloc.select(topo, state, need, &guard)
            } else {
                None
            }
        })?;
        Some((t, nodes, projection.into_state()))
    }

    /// Rule 2's search by what changed since `kept` was the projection (allocation
    /// policies that promise [`Allocator::release_monotone`], no patience): the instant,
    /// and whether the projected state at it differs from the kept one (else the kept
    /// nodes stand). None when it cannot tell (the full search then decides).
    ///
    /// Why it equals the full search, with `at` the kept instant and `now <= at`: a job
    /// running then and now is released by `at` in both (its instant is its expected end
    /// or `now`, on the same side of `at`). So `state` becomes the projection at `at` of
    /// the machine now by releasing the jobs ended since whose instant was after `at` and
    /// taking the nodes of the jobs started since whose instant is after `at` (free there:
    /// a job started on nodes that were free or held by a job ended since). Placement is
    /// monotone in time (a later instant's state is an earlier one's with more jobs
    /// released), so the first instant that places the head is found by stepping: back
    /// while the previous instant places it, or forward until one does. An earlier
    /// instant is tried only if a job expected to end after it has ended (its state may
    /// have gained nodes) or it is before the kept `first` (never searched); otherwise its
    /// state is one that failed, with the started jobs' nodes taken.
    fn update_kept(&mut self, core: &Core, alloc: &mut dyn Allocator, topo: &Topology, head: u32, need: u32, known: bool) -> Option<(i64, bool)> {
        if !known {
            return None;
        }
        let now = core.now;
        let Easy { kept, changes, started, nodes, updated, .. } = self;
        let kept = kept.as_mut().filter(|k| k.head == head && k.at >= now)?;
        let at = kept.at;
        let running = core.running();
        let state = &mut kept.state;
        // What changed, in order: a job that started and ended since changes nothing (its
        // nodes were free then and are now). `latest_ended`: the latest expected end among
        // the ended jobs.
        let (mut latest_ended, mut changed) = (i64::MIN, false);
        started.clear();
        for c in changes.iter() {
            if c.started {
                started.push((c.expected_end, c.job));
            } else if let Some(i) = started.iter().position(|&(_, j)| j == c.job) {
                started.swap_remove(i);
            } else {
                latest_ended = latest_ended.max(c.expected_end);
                if c.expected_end > at {
                    // its node list went with it; its ranges stay
                    nodes.clear();
                    nodes.extend(core.node_ranges_of(c.job).iter().flat_map(|&(first, count)| (0..count).map(move |k| first + k)));
                    state.release(topo, c.job, nodes, core.class_of(c.job));
                    changed = true;
                }
            }
        }
        for &(end, job) in started.iter() {
            if end > at {
                state.allocate(topo, job, core.nodes_of(job), core.class_of(job));
                changed = true;
            }
        }
        let mut place = |state: &ClusterState, t: i64| {
            let guard = Guard { held_back_s: core.held_back_s(head, t), projected: true, ..Guard::NONE };
            need <= state.n_free() && alloc.feasible(topo, state, need, &guard)
        };
        let take = |state: &mut ClusterState, t: i64| {
            for job in ending_at(running, now, t) {
                state.allocate(topo, job, core.nodes_of(job), core.class_of(job));
            }
        };
        let release = |state: &mut ClusterState, t: i64| {
            for job in ending_at(running, now, t) {
                state.release(topo, job, core.nodes_of(job), core.class_of(job));
            }
        };
        let mut pos = instant_at_or_before(running, now, at);
        let mut moved = false;
        match pos {
            Some(mut p) if !changed || place(state, p) => {
                while let Some(prev) = instant_before(running, now, p) {
                    // no job ended after `prev` and `prev` was searched before: its state
                    // is the failed one with the started jobs' nodes taken
                    if latest_ended <= prev && prev >= kept.first {
                        break;
                    }
                    // too few nodes without the jobs ending at `p`: no need to take them
                    let held: usize = ending_at(running, now, p).map(|job| core.nodes_of(job).len()).sum();
                    if (state.n_free() as usize) < need as usize + held {
                        break;
                    }
                    take(state, p);
                    if place(state, prev) {
                        (p, moved) = (prev, true);
                        updated[1] += 1;
                    } else {
                        release(state, p);
                        break;
                    }
                }
                pos = Some(p);
            }
            _ => loop {
                // None: the head fits at no instant; the full search says so
                let next = instant_after(running, now, pos)?;
                release(state, next);
                (pos, moved) = (Some(next), true);
                updated[2] += 1;
                if place(state, next) {
                    break;
                }
            },
        }
        let t = pos.expect("an instant was found");
        kept.at = t;
        kept.first = running.first().map(|&(e, _)| instant(e, now)).expect("an instant was found");
        Some((t, changed || moved))
    }

    /// Node-set reservation, recomputed only when the machine state or the head changed:
    /// the first end instant at which the allocation policy places the head on the
    /// projection of the running jobs ending (past-limit ones now), searched anew or moved
    /// by what changed (`update_kept`).
    fn node_reservation(&mut self, ctx: &mut PassCtx, head: u32) -> Option<&NodeReservation> {
        let version = ctx.version();
        if self.cached.as_ref().is_some_and(|r| r.head == head && r.version == version) {
            return self.cached.as_ref();
        }
        let need = ctx.jobs[head as usize].nodes;
        let topo = ctx.topo;
        let incremental = self.update != ReservationUpdate::Full && ctx.alloc.release_monotone() && ctx.alloc.patience_s().is_none();
        // The log of changes starts (again) where a projection is kept.
        let known = incremental && ctx.take_running_changes(&mut self.changes);
        let (core, alloc) = ctx.split();
        // (instant, nodes: None if the kept ones stand)
        let mut found: Option<(i64, Option<Vec<u32>>)> = None;
        if incremental {
            if let Some((t, changed)) = self.update_kept(core, alloc, topo, head, need, known) {
                self.updated[0] += 1;
                if !changed {
                    found = Some((t, None));
                } else {
                    let kept = self.kept.as_ref().expect("updated");
                    let guard = Guard { held_back_s: core.held_back_s(head, t), projected: true, ..Guard::NONE };
                    found = alloc.select(topo, &kept.state, need, &guard).map(|nodes| (t, Some(nodes)));
                }
            }
            if found.is_none() {
                self.kept = None;
            }
        }
        if let (ReservationUpdate::Checked, Some((t, nodes))) = (self.update, &found) {
            let mut nodes = nodes.clone().unwrap_or_else(|| self.cached.as_ref().expect("kept nodes").list.clone());
            nodes.sort_unstable();
            let full = Self::full_search(core, alloc, topo, head, need).map(|(t, mut n, _)| {
                n.sort_unstable();
                (t, n)
            });
            assert_eq!(Some((*t, nodes)), full, "EASY's incremental reservation differs from the full search at {} for row {head}", core.now);
        }
        let (t, nodes) = match found {
            Some(f) => f,
            None => {
                let Some((t, nodes, state)) = Self::full_search(core, alloc, topo, head, need) else {
                    self.kept = None;
                    return None;
                };
                if incremental {
                    let first = core.running().first().map_or(t, |&(e, _)| instant(e, core.now));
                    self.kept = Some(Kept { head, at: t, first, state });
                }
                (t, Some(nodes))
            }
        };
        let start_s = if self.opts.flux_window { t + 2 } else { t };
        let r = match (self.cached.as_mut(), &nodes) {
            (Some(r), _) => {
                (r.head, r.version, r.start_s) = (head, version, start_s);
                r
            }
            (None, Some(_)) => self.cached.insert(NodeReservation::new(topo, head, version, start_s)),
            (None, None) => unreachable!("a kept projection has its reservation cached"),
        };
        if let Some(nodes) = nodes {
            r.set_nodes(topo, nodes);
        }
        self.cached.as_ref()
    }
}

/// The head's reservation in one pass.
enum Reservation {
    /// Fungible policies: a shadow time and the extra nodes backfill jobs may still use.
    Count { shadow_s: i64, extra: u32 },
    /// Other policies: a node set (the allocation policy says what else it closes).
    Nodes(NodeReservation),
}

impl Reservation {
    fn start_s(&self) -> i64 {
        match self {
            Reservation::Count { shadow_s, .. } => *shadow_s,
            Reservation::Nodes(r) => r.start_s,
        }
    }
}

/// Within one pass: the smallest job size of each (monotone class, guard kind) that the
/// allocation policy could not place, valid while the machine state (version) is unchanged.
/// A larger job of the same class would fail too, so it is not tried (pure speed-up).
#[derive(Default)]
struct Hopeless {
    version: u64,
    smallest_failed: Vec<((u8, u8), u32)>,
}

impl Hopeless {
    fn covers(&mut self, version: u64, class: Option<u8>, kind: u8, nodes: u32) -> bool {
        if version != self.version {
            self.version = version;
            self.smallest_failed.clear();
        }
        let Some(class) = class else { return false };
        self.smallest_failed.iter().any(|&(k, n)| k == (class, kind) && nodes >= n)
    }

    /// The smallest size of `class` that failed as `kind` in this state (`u32::MAX`: none).
    fn smallest_failed(&self, version: u64, class: u8, kind: u8) -> u32 {
        if version != self.version {
            return u32::MAX;
        }
        self.smallest_failed.iter().find(|&&(k, _)| k == (class, kind)).map_or(u32::MAX, |&(_, n)| n)
    }

    fn record(&mut self, version: u64, class: Option<u8>, kind: u8, nodes: u32) {
        let Some(class) = class else { return };
        debug_assert_eq!(version, self.version);
        match self.smallest_failed.iter_mut().find(|(k, _)| *k == (class, kind)) {
            Some((_, n)) => *n = (*n).min(nodes),
            None => self.smallest_failed.push(((class, kind), nodes)),
        }
    }
}

impl Easy {
    /// Phase 2 for one job that fits in the free nodes and would end at `end_s`.
    fn try_backfill(&self, ctx: &mut PassCtx, res: &mut Reservation, hopeless: &mut Hopeless, job: u32, end_s: i64) -> bool {
        match res {
            Reservation::Count { shadow_s, extra } => {
                let nodes = ctx.jobs[job as usize].nodes;
                if end_s <= *shadow_s {
                    ctx.try_start(job, &Guard::NONE)
                } else if nodes <= *extra && ctx.try_start(job, &Guard::NONE) {
                    *extra -= nodes;
                    true
                } else {
                    false
                }
            }
            Reservation::Nodes(r) => {
                let overlaps = if self.opts.flux_window { end_s >= r.start_s } else { end_s > r.start_s };
                let reserved = [Reserved { nodes: &r.list, class: r.class, stamp: r.stamp }];
                let closes = Guard { reserved: &reserved, ..Guard::NONE };
                let (guard, kind) = if overlaps {
                    (Guard { excluded: Some(&r.nodes), ..closes }, 0)
                } else if self.opts.reserved_tiers_always {
                    (closes, 1)
                } else {
                    (Guard::NONE, 2)
                };
                let nodes = ctx.jobs[job as usize].nodes;
                // A --switches refusal is not monotone in size: no skipping then.
                let class = if ctx.has_switch_limits() { None } else { ctx.alloc.monotone_class(ctx.topo, nodes) };
                if hopeless.covers(ctx.version(), class, kind, nodes) {
                    return false;
                }
                let started = ctx.try_start(job, &guard);
                if !started {
                    hopeless.record(ctx.version(), class, kind, nodes);
                }
                started
            }
        }
    }
}

impl Easy {
    /// Rule 2: the head's reservation (None: even an empty machine could not place the
    /// head now, which cannot happen for jobs that passed the submit check).
    fn reserve(&mut self, ctx: &mut PassCtx, head: u32) -> Option<Reservation> {
        if ctx.alloc.fungible() {
            let head_nodes = ctx.jobs[head as usize].nodes;
            Self::count_reservation(ctx, head_nodes).map(|(shadow_s, extra)| Reservation::Count { shadow_s, extra })
        } else if self.node_reservation(ctx, head).is_some() {
            // Taken out of the cache for the pass (so that starting jobs may borrow ctx
            // mutably), put back after it.
            self.cached.take().map(Reservation::Nodes)
        } else {
            None
        }
    }

    /// Put a node reservation back in the cache after the pass.
    fn keep(&mut self, res: Reservation) {
        if let Reservation::Nodes(r) = res {
            self.cached = Some(r);
        }
    }

    /// Bring the index up to date with the queue: by the rows appended since the last pass
    /// if nothing else changed it, else rebuilt. False if the queue is not in row order (a
    /// queue order re-sorted it): the plain scan then.
    fn sync_index(&mut self, ctx: &PassCtx) -> bool {
        let queue = ctx.queue();
        if let Some((edits, len)) = self.known {
            // the engine appends rows in row order after the ones left
            if edits == ctx.queue_edits() && len <= queue.len() && (len == 0 || len == queue.len() || queue[len - 1] < queue[len]) {
                for &row in &queue[len..] {
                    self.index.insert(ctx, row);
                }
                return true;
            }
        }
        self.known = None;
        self.quiet = None;
        if !queue.windows(2).all(|w| w[0] < w[1]) {
            return false;
        }
        self.index.build(ctx, queue);
        true
    }

    /// The first row in `[from, to)` that phase 2 would not skip without asking the
    /// allocation policy (`try_backfill` decides on it), with `free` nodes free: on counts
    /// one ending by the shadow time within the free nodes, or any within the extra ones
    /// too; on node sets one within the free nodes that no failure of its class covers
    /// (`Hopeless`, for the kind its end gives it).
    ///
    /// `self.answers` (one per bucket, cleared at the start of phase 2, while the index
    /// does not change) keeps each bucket's last answer with the bounds and start it was found
    /// for: a bucket whose bounds are unchanged (no job started, no failure of its class)
    /// and whose answer is not behind `from` is not searched again.
    fn next_candidate(&mut self, ctx: &PassCtx, res: &Reservation, hopeless: &Hopeless, from: u32, to: u32, free: u32) -> Option<u32> {
        let now = ctx.now();
        let (wall_max_s, kinds) = match *res {
            Reservation::Count { shadow_s, .. } => (shadow_s.saturating_sub(now), None),
            // a job overlaps (kind 0) if it ends after the reservation starts (flux_window:
            // at or after)
            Reservation::Nodes(ref r) => {
                let last_end_s = if self.opts.flux_window { r.start_s - 1 } else { r.start_s };
                (last_end_s.saturating_sub(now), Some(if self.opts.reserved_tiers_always { 1 } else { 2 }))
            }
        };
        let version = ctx.version();
        let hopeless_apply = !ctx.has_switch_limits();
        let mut best: Option<u32> = None;
        self.answers.resize(self.index.trees.len(), Answer::NONE);
        for (&((class, bucket), ref tree), answer) in self.index.trees.iter().zip(self.answers.iter_mut()) {
            let (short, long) = match (res, kinds, class) {
                (Reservation::Count { extra, .. }, _, _) => (free, (*extra).min(free)),
                (_, Some(kind), Some(class)) if hopeless_apply => {
                    let below = |kind| hopeless.smallest_failed(version, class, kind).saturating_sub(1).min(free);
                    (below(kind), below(0))
                }
                _ => (free, free),
            };
            if bucket_floor(bucket) > short.max(long) {
                continue; // every job of the bucket is too large
            }
            let row = if answer.bounds == (short, long) && answer.from <= from && answer.row.map_or(true, |row| row >= from) {
                answer.row
            } else {
                let row = tree.first(from, to, wall_max_s, short, long);
                *answer = Answer { bounds: (short, long), from, row };
                row
            };
            if let Some(row) = row.filter(|&row| best.map_or(true, |b| row < b)) {
                best = Some(row);
            }
        }
        best
    }

    /// One pass with the index (the queue in row order): the plain scan's rules, each job
    /// the plain scan would skip without asking the allocation policy left out by the
    /// index instead.
    fn pass_indexed(&mut self, ctx: &mut PassCtx) {
        let len = ctx.queue().len();
        let depth = len.min(ctx.queue_depth);
        // Phase 1: the started jobs are the queue's first `head_pos`.
        let mut head_pos = depth;
        for i in 0..depth {
            let job = ctx.queue()[i];
            if !ctx.try_start(job, &Guard::NONE) {
                head_pos = i;
                break;
            }
        }
        self.backfilled.clear();
        let mut quiet = None;
        if head_pos < depth {
            let head = ctx.queue()[head_pos];
            let now = ctx.now();
            if let Some(mut res) = self.reserve(ctx, head) {
                ctx.log_reservation(now, head, res.start_s());
                // Phase 2 over the rows after the head up to the depth (the queue ascends).
                let to = if depth < len { ctx.queue()[depth] } else { u32::MAX };
                let (wall_max_s, extra) = match res {
                    Reservation::Count { shadow_s, extra } => (shadow_s - now, extra),
                    Reservation::Nodes(_) => (0, 0),
                };
                let mut from = head + 1;
                if let Some(q) = self.quiet.filter(|q| q.version == ctx.version() && q.head == head && wall_max_s <= q.wall_max_s && extra <= q.extra) {
                    from = from.max(q.resume);
                    self.scans[2] += 1;
                }
                let mut hopeless = Hopeless::default();
                let mut asked = false;
                self.answers.clear();
                loop {
                    let free = ctx.n_free();
                    if free == 0 {
                        break;
                    }
                    let Some(job) = self.next_candidate(ctx, &res, &hopeless, from, to, free) else { break };
                    asked = true;
                    let end_s = now + ctx.jobs[job as usize].walltime_s;
                    if self.try_backfill(ctx, &mut res, &mut hopeless, job, end_s) {
                        self.backfilled.push(job);
                    }
                    from = job + 1;
                }
                self.keep(res);
                if !asked {
                    let seen_to = ctx.queue().last().map_or(0, |&row| row + 1);
                    quiet = Some(Quiet { version: ctx.version(), head, wall_max_s, extra, resume: to.min(seen_to) });
                }
            }
        }
        self.quiet = quiet;
        // Take the started jobs out of the index and the queue (in place: the runs between
        // them move down once).
        if head_pos > 0 || !self.backfilled.is_empty() {
            for i in 0..head_pos {
                self.index.remove(ctx, ctx.queue()[i]);
            }
            for &row in &self.backfilled {
                self.index.remove(ctx, row);
            }
            let queue = ctx.queue_mut();
            let (mut write, mut read) = (0, head_pos);
            for &row in &self.backfilled {
                let at = read + queue[read..].binary_search(&row).expect("a backfilled job is queued");
                if write != read {
                    queue.copy_within(read..at, write);
                }
                write += at - read;
                read = at + 1;
            }
            if write != read {
                queue.copy_within(read..len, write);
            }
            queue.truncate(write + (len - read));
        }
        self.known = Some((ctx.queue_edits(), ctx.queue().len()));
    }

    /// One pass walking every queued job behind the head (any queue order).
    fn pass_plain(&mut self, ctx: &mut PassCtx) {
        let queue = std::mem::take(ctx.queue_mut());
        let depth = queue.len().min(ctx.queue_depth);
        let mut started = vec![false; depth];
        // Phase 1
        let mut head_pos = depth;
        for (i, &job) in queue[..depth].iter().enumerate() {
            if ctx.try_start(job, &Guard::NONE) {
                started[i] = true;
            } else {
                head_pos = i;
                break;
            }
        }
        if head_pos < depth {
            let head = queue[head_pos];
            let now = ctx.now();
            if let Some(mut res) = self.reserve(ctx, head) {
                ctx.log_reservation(now, head, res.start_s());
                let mut hopeless = Hopeless::default();
                for i in head_pos + 1..depth {
                    let free = ctx.n_free();
                    if free == 0 {
                        break;
                    }
                    let job = queue[i];
                    let spec = ctx.jobs[job as usize];
                    if spec.nodes > free {
                        continue;
                    }
                    started[i] = self.try_backfill(ctx, &mut res, &mut hopeless, job, now + spec.walltime_s);
                }
                self.keep(res);
            }
        }
        let mut rest = Vec::with_capacity(queue.len());
        for (i, &job) in queue.iter().enumerate() {
            if i >= depth || !started[i] {
                rest.push(job);
            }
        }
        *ctx.queue_mut() = rest;
        self.known = None;
        self.quiet = None;
    }
}

impl QueuePolicy for Easy {
    fn name(&self) -> String {
        "easy".into()
    }

    fn pass(&mut self, ctx: &mut PassCtx) {
        if self.scan == BackfillScan::Indexed && self.sync_index(ctx) {
            self.scans[0] += 1;
            self.pass_indexed(ctx);
        } else {
            self.scans[1] += 1;
            self.pass_plain(ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// `QueueIndex::first` after a build, pushes (compacting when out of room) and
        /// removals (compacting when mostly empty) = the first row held meeting the
        /// condition, found by looking at each.
        #[test]
        fn first_equals_a_scan(
            gaps in prop::collection::vec((1u32..40, 1u32..20, 1i64..100), 0..300),
            removed in prop::collection::vec(any::<prop::sample::Index>(), 0..250),
            split in any::<prop::sample::Index>(),
            queries in prop::collection::vec((0u32..9000, 0u32..9000, 0i64..110, 0u32..22, 0u32..22), 1..40),
        ) {
            let mut row = 0;
            let all: Vec<(u32, (u32, i64))> = gaps.iter().map(|&(gap, n, w)| { row += gap; (row, (n, w)) }).collect();
            // built on a prefix, the rest pushed
            let at = if all.is_empty() { 0 } else { split.index(all.len() + 1) };
            let mut held: Vec<(u32, (u32, i64))> = all[..at].to_vec();
            let mut index = QueueIndex::default();
            index.build(held.iter().copied());
            for &(row, leaf) in &all[at..] {
                held.push((row, leaf));
                index.push(row, leaf);
            }
            for r in &removed {
                if !held.is_empty() {
                    let (row, _) = held.remove(r.index(held.len()));
                    index.remove(row);
                }
            }
            prop_assert_eq!(index.live, held.len());
            for &(from, to, wall_max_s, short, long) in &queries {
                let scan = held.iter().find(|&&(row, (n, w))| row >= from && row < to && if w <= wall_max_s { n <= short } else { n <= long });
                prop_assert_eq!(index.first(from, to, wall_max_s, short, long), scan.map(|&(row, _)| row));
            }
        }

        /// Buckets ascend with the node count, and `bucket_floor` is the smallest count of
        /// each (what lets a search skip a bucket whose floor is too large).
        #[test]
        fn buckets_ascend_from_their_floor(n in any::<u32>()) {
            bucket_checks(n);
        }
    }

    fn bucket_checks(n: u32) {
        let b = size_bucket(n);
        assert!(bucket_floor(b) <= n, "{n}");
        assert_eq!(size_bucket(bucket_floor(b)), b, "{n}");
        if n > 0 {
            assert!(size_bucket(n - 1) <= b, "{n}");
        }
        if n < u32::MAX {
            assert!(size_bucket(n + 1) >= b, "{n}");
        }
    }

    /// Every count up to 2^17 (every bucket's edges there), and the largest.
    #[test]
    fn small_buckets_ascend_from_their_floor() {
        for n in (0..=1u32 << 17).chain([u32::MAX - 1, u32::MAX]) {
            bucket_checks(n);
        }
    }
}

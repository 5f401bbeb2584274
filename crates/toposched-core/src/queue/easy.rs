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
//! *Cost*: phase 1 and 2 are O(queue depth) allocation calls; the reservation (the
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

impl QueuePolicy for Easy {
    fn name(&self) -> String {
        "easy".into()
    }

    fn pass(&mut self, ctx: &mut PassCtx) {
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
            let head_nodes = ctx.jobs[head as usize].nodes;
            // Taken out of the cache for the pass (so that starting jobs may borrow ctx
            // mutably), put back after it.
            let reservation = if ctx.alloc.fungible() {
                Self::count_reservation(ctx, head_nodes).map(|(shadow_s, extra)| Reservation::Count { shadow_s, extra })
            } else if self.node_reservation(ctx, head).is_some() {
                self.cached.take().map(Reservation::Nodes)
            } else {
                None
            };
            // No reservation means even an empty machine could not place the head now (it
            // cannot happen for jobs that passed the submit check): nothing is backfilled.
            if let Some(mut res) = reservation {
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
                if let Reservation::Nodes(r) = res {
                    self.cached = Some(r);
                }
            }
        }
        let mut rest = Vec::with_capacity(queue.len());
        for (i, &job) in queue.iter().enumerate() {
            if i >= depth || !started[i] {
                rest.push(job);
            }
        }
        *ctx.queue_mut() = rest;
    }
}

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
//! allocation) otherwise, cached while the machine state does not change.

use super::{PassCtx, QueueEntry, QueuePolicy};
use crate::alloc::{Guard, Reserved};
use crate::options::{parse_options, schema_of};
use crate::planner::{shadow, Projection};
use crate::state::{ClusterState, NodeSet};
use crate::topology::SpanClass;

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
}

#[derive(Clone, Debug, Default)]
pub struct Easy {
    opts: EasyOptions,
    cached: Option<NodeReservation>,
}

impl Easy {
    pub fn new(opts: EasyOptions) -> Easy {
        Easy { opts, cached: None }
    }

    /// Fungible reservation: (shadow time, extra nodes), by the planner's [`shadow`] over
    /// the running jobs' expected ends (a job past its limit counts as ending now).
    fn count_reservation(ctx: &PassCtx, head_nodes: u32) -> Option<(i64, u32)> {
        let jobs = ctx.jobs;
        let ends = ctx.running().iter().map(|&(expected_end, job)| (expected_end, jobs[job as usize].nodes));
        shadow(ctx.now(), ctx.n_free(), head_nodes, ends)
    }

    /// Node-set reservation, recomputed only when the machine state or the head changed:
    /// the planner's [`Projection`] of the running jobs ending (past-limit ones now), and
    /// the first instant at which the allocation policy places the head on it.
    fn node_reservation(&mut self, ctx: &mut PassCtx, head: u32) -> Option<&NodeReservation> {
        let version = ctx.version();
        if self.cached.as_ref().is_some_and(|r| r.head == head && r.version == version) {
            return self.cached.as_ref();
        }
        let now = ctx.now();
        let need = ctx.jobs[head as usize].nodes;
        let topo = ctx.topo;
        let (core, alloc) = ctx.split();
        let ends = core.running().iter().map(|&(expected_end, job)| (expected_end.max(now), job));
        let release = |state: &mut ClusterState, job: u32| state.release(topo, job, core.nodes_of(job), core.class_of(job));
        let mut projection = Projection::new(core.state().clone(), ends, release);
        // a policy that declines free nodes only until it has held the head back long
        // enough: the instant its patience runs out is planned for too
        let wait_ends = core.patience_ends(head, alloc.patience_s()).filter(|&t| t > now);
        let found = projection.first_placement(wait_ends, |t, state| {
            let guard = Guard { held_back_s: core.held_back_s(head, t), projected: true, ..Guard::NONE };
            if need <= state.n_free() && alloc.feasible(topo, state, need, &guard) {
                alloc.select(topo, state, need, &guard)
            } else {
                None
            }
        });
        let (end, mut nodes) = found?;
        nodes.sort_unstable();
        let mut set = self.cached.take().map(|r| r.nodes).unwrap_or_else(|| NodeSet::new(topo.n_nodes()));
        set.clear();
        for &n in &nodes {
            set.insert(n);
        }
        self.cached = Some(NodeReservation {
            head,
            version,
            start_s: if self.opts.flux_window { end + 2 } else { end },
            class: topo.span_class(&nodes),
            list: nodes,
            nodes: set,
        });
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
                let reserved = [Reserved { nodes: &r.list, class: r.class }];
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
            // Cloned out of the cache so that starting jobs may borrow ctx mutably.
            let reservation = if ctx.alloc.fungible() {
                Self::count_reservation(ctx, head_nodes).map(|(shadow_s, extra)| Reservation::Count { shadow_s, extra })
            } else {
                self.node_reservation(ctx, head).cloned().map(Reservation::Nodes)
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

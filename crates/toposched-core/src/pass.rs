//! One scheduling pass's view of the machine: `Core` (the engine's mutable state, private
//! to the engine) and `PassCtx`, all a queue policy may read or do. Queue policies get only
//! a `PassCtx`, whose `core` is private: every start goes through `try_start` /
//! `try_start_on`, which check free nodes, counts and the job's `--switches` limit.
//! Neither the engine nor the queue policies are imported here (no module cycle).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use crate::alloc::{free_unguarded, Allocator, Guard};
use crate::network::replay::NetReplay;
use crate::rows::{RowVec, Rows};
use crate::state::ClusterState;
use crate::topology::{SpanClass, Topology};
use crate::workload::Job;

/// What became of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// Not submitted yet, or waiting in the queue.
    Pending,
    Running,
    Done,
    /// Could never be placed on this fabric with this policy, or held pending forever by
    /// the queue policy ([`PassCtx::hold`], e.g. a Slurm partition limit); see
    /// [`Engine::skipped`] for the reason.
    Skipped,
}

/// Per-job result, indexed by job row.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    pub status: JobStatus,
    pub start_s: i64,
    pub end_s: i64,
    /// How far the job's nodes spread; None if it never started.
    pub class: Option<SpanClass>,
    /// Log run time exceeded the limit and the job was killed at it.
    pub killed: bool,
    /// The job's node list as ranges of consecutive ids: `Core::node_ranges[node_off ..
    /// node_off + node_len]` (set when it starts, kept after it ends).
    pub(crate) node_off: u32,
    pub(crate) node_len: u32,
    /// While it runs: its slot in `Core::held` (the full node list).
    pub(crate) slot: u32,
}

/// When scheduling passes run within one instant (docs/semantics.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EventOrder {
    /// All ends, then all submissions, then one pass (the default).
    #[default]
    PerInstant,
    /// Submissions first, then ends in start order, one pass after each (pyss's order).
    PerEvent,
}

impl EventOrder {
    pub const NAMES: &'static [&'static str] = &["per-instant", "per-event"];

    pub fn by_name(name: &str) -> Option<EventOrder> {
        match name {
            "per-instant" => Some(EventOrder::PerInstant),
            "per-event" => Some(EventOrder::PerEvent),
            _ => None,
        }
    }
}

/// One reservation, as the engine logs it for tests and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReservationRecord {
    /// When the pass ran.
    pub pass_s: i64,
    /// Job row of the head.
    pub job: u32,
    /// The shadow time: the latest the head may start.
    pub start_s: i64,
}

/// The machine state a queue policy works on.
pub struct Core {
    pub(crate) now: i64,
    pub(crate) state: ClusterState,
    /// Waiting jobs (rows), in queue order.
    pub(crate) queue: Vec<u32>,
    /// Running jobs ordered by expected end `start + walltime`, then row.
    pub(crate) running: BTreeSet<(i64, u32)>,
    /// Bumped at every start and end: lets policies cache work while nothing changed.
    pub(crate) version: u64,
    /// (end, start sequence, row): the sequence is 0 in the per-instant order (ends at one
    /// instant then go by row) and the start count in the per-event order (start order).
    pub(crate) ends: BinaryHeap<Reverse<(i64, u64, u32)>>,
    /// Per-event order only: start sequence of each job row.
    pub(crate) start_seq: RowVec<u64>,
    pub(crate) starts: u64,
    pub(crate) event_order: EventOrder,
    /// Instants at which a policy asked for a pass (e.g. a reservation starts), each once.
    pub(crate) wakeups: BTreeSet<i64>,
    /// Jobs that have ended so far (lets policies notice early ends).
    pub(crate) ended: u64,
    /// Per job row, over the engine's window of rows (`crate::rows`).
    pub(crate) outcomes: RowVec<Outcome>,
    /// Node lists of every started job of the window as (first, count) ranges of
    /// consecutive ids, in the list's (ascending) order, appended at each start. What the
    /// results hand over: a few ranges per job where one id per node grows with fabric x
    /// jobs (Curie with nodes = processors: 225 M node ids). One flat vector (one push per
    /// start, no allocation per job) rather than per-row storage: `Engine::drain` hands the
    /// drained rows' ranges over and compacts it to the rows left in the window.
    pub(crate) node_ranges: Vec<(u32, u32)>,
    /// Full node lists of the running jobs only (policies read them while projecting the
    /// future), by slot; a job's list is dropped when it ends, so this follows the running
    /// set, not the whole history.
    pub(crate) held: Vec<Vec<u32>>,
    /// Slots of `held` free for the next start.
    pub(crate) free_slots: Vec<u32>,
    pub(crate) kill_at_walltime: bool,
    pub(crate) record_reservations: bool,
    pub(crate) reservations: Vec<ReservationRecord>,
    /// Slurm `--switches=N@wait` per job row: (max leaves, max wait s); empty = none.
    pub(crate) switches: RowVec<(u32, i64)>,
    /// Some row appended so far has a `--switches` limit (sticky: see `has_switch_limits`).
    pub(crate) any_switch_limit: bool,
    /// When each job was first tried (for the switch wait), -1 before.
    pub(crate) first_tried: RowVec<i64>,
    /// When the allocation policy first declined each job free nodes it could have had, -1
    /// before; empty unless the policy has a patience (`Allocator::patience_s`).
    pub(crate) first_declined: RowVec<i64>,
    /// The network model's closed loop (`--network`), if on: it owns the end times.
    pub(crate) net: Option<Box<NetReplay>>,
    /// Jobs a queue policy held this pass (row, reason); the engine moves them to its
    /// skipped list after the pass.
    pub(crate) held_jobs: Vec<(u32, String)>,
    /// The changes of `running` since the queue policy last took them
    /// ([`PassCtx::take_running_changes`]); None while unknown (before it first asks, and
    /// after too many piled up): nothing is logged then.
    pub(crate) running_log: Option<Vec<RunningChange>>,
    /// Bumped whenever a queue policy may have changed the queue (`PassCtx::queue_mut`,
    /// `PassCtx::hold`); the engine only appends between passes. Lets a policy keep an
    /// index of the queue and bring it up to date by the rows appended since.
    pub(crate) queue_edits: u64,
}

/// One change of the running set: a job started or ended, with its key there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunningChange {
    pub expected_end: i64,
    pub job: u32,
    pub started: bool,
}

/// Changes kept for a policy that stopped asking, beyond which the log is dropped (it
/// then gets "unknown" and looks at the whole running set).
const RUNNING_LOG_MAX: usize = 1 << 16;

impl Core {
    /// Seconds the allocation policy has held `job` back at instant `t`: since it first
    /// declined the job free nodes it could have had (0 before, and for policies without
    /// a patience). What [`Guard::held_back_s`] carries.
    pub fn held_back_s(&self, job: u32, t: i64) -> i64 {
        match self.first_declined.get(job as usize) {
            Some(&first) if first >= 0 => t - first,
            _ => 0,
        }
    }
    /// The instant a policy's patience of `patience_s` with `job` runs out, if it has
    /// declined the job.
    pub fn patience_ends(&self, job: u32, patience_s: Option<i64>) -> Option<i64> {
        let first = *self.first_declined.get(job as usize)?;
        (first >= 0).then_some(first.saturating_add(patience_s?))
    }
    /// Log a change of the running set, if a policy follows them.
    pub(crate) fn log_running(&mut self, expected_end: i64, job: u32, started: bool) {
        if let Some(log) = self.running_log.as_mut() {
            if log.len() < RUNNING_LOG_MAX {
                log.push(RunningChange { expected_end, job, started });
            } else {
                self.running_log = None;
            }
        }
    }
    /// Note that the allocation policy declined `job` free nodes it could have had now.
    pub(crate) fn note_declined(&mut self, job: u32) {
        if let Some(first) = self.first_declined.get_mut(job as usize).filter(|f| **f < 0) {
            *first = self.now;
        }
    }
    /// Who holds which node now.
    pub fn state(&self) -> &ClusterState {
        &self.state
    }
    /// Running jobs ordered by expected end `start + walltime`, then row.
    pub fn running(&self) -> &BTreeSet<(i64, u32)> {
        &self.running
    }
    /// Nodes held by a running job (ascending).
    pub fn nodes_of(&self, job: u32) -> &[u32] {
        let o = &self.outcomes[job as usize];
        debug_assert_eq!(o.status, JobStatus::Running, "nodes_of job row {job}, which is not running");
        &self.held[o.slot as usize]
    }
    /// The node list of a started job (running or done) as (first, count) ranges.
    pub fn node_ranges_of(&self, job: u32) -> &[(u32, u32)] {
        let o = &self.outcomes[job as usize];
        &self.node_ranges[o.node_off as usize..(o.node_off + o.node_len) as usize]
    }
    /// A running job's full node list, taken out as it ends (its ranges stay).
    pub(crate) fn take_nodes(&mut self, job: u32) -> Vec<u32> {
        let slot = self.outcomes[job as usize].slot;
        self.free_slots.push(slot);
        std::mem::take(&mut self.held[slot as usize])
    }
    pub fn class_of(&self, job: u32) -> SpanClass {
        self.outcomes[job as usize].class.expect("class_of a job that never started")
    }

    /// Start `job` now on `nodes`. Called by [`PassCtx::try_start`].
    pub(crate) fn start(&mut self, topo: &Topology, jobs: Rows<'_, Job>, job: u32, mut nodes: Vec<u32>) {
        let spec = jobs[job as usize];
        assert_eq!(nodes.len(), spec.nodes as usize, "allocator returned the wrong node count for job row {job}");
        nodes.sort_unstable();
        let class = topo.span_class(&nodes);
        self.state.allocate(topo, job, &nodes, class);
        let killed = self.kill_at_walltime && spec.runtime_s > spec.walltime_s;
        let run = if killed { spec.walltime_s } else { spec.runtime_s };
        let end = self.now + run;
        let o = &mut self.outcomes[job as usize];
        o.status = JobStatus::Running;
        o.start_s = self.now;
        o.end_s = end;
        o.class = Some(class);
        o.killed = killed;
        let off = self.node_ranges.len();
        push_ranges(&mut self.node_ranges, &nodes);
        o.node_off = u32::try_from(off).expect("more than 2^32 node ranges");
        o.node_len = (self.node_ranges.len() - off) as u32;
        self.running.insert((self.now + spec.walltime_s, job));
        self.log_running(self.now + spec.walltime_s, job, true);
        if self.event_order == EventOrder::PerEvent {
            self.starts += 1;
            self.start_seq[job as usize] = self.starts;
        }
        match self.net.as_mut() {
            // the end is pushed by `flush_network` once the instant's starts are known
            Some(net) => net.on_start(job, &nodes, self.now),
            None => self.push_end(end, job),
        }
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.held[s as usize] = nodes;
                s
            }
            None => {
                self.held.push(nodes);
                (self.held.len() - 1) as u32
            }
        };
        self.outcomes[job as usize].slot = slot;
        self.version += 1;
    }

    pub(crate) fn push_end(&mut self, end: i64, job: u32) {
        let seq = self.start_seq.get(job as usize).copied().unwrap_or(0);
        self.ends.push(Reverse((end, seq, job)));
    }

    /// A heap entry for a job whose end has moved since (network model) or that has ended
    /// (and may have left the window since).
    #[inline]
    pub(crate) fn end_is_stale(&self, end: i64, job: u32) -> bool {
        self.outcomes.get(job as usize).map_or(true, |o| o.status != JobStatus::Running || o.end_s != end)
    }

    /// Some running job ends at `t` and has not been released yet: only between the
    /// passes of one instant in the per-event order, which releases the instant's ends one
    /// by one (the per-instant order releases them all before its one pass). A scan of
    /// the ends; asked only when a due reservation cannot start.
    pub(crate) fn ends_pending_at(&self, t: i64) -> bool {
        self.ends.iter().any(|&Reverse((end, _, job))| end == t && !self.end_is_stale(end, job))
    }

    /// Network model: after the instant's pass, push the ends that moved.
    pub(crate) fn flush_network(&mut self) {
        if let Some(net) = self.net.as_mut() {
            for &(job, end) in net.flush(self.now) {
                self.outcomes[job as usize].end_s = end;
                let seq = self.start_seq.get(job as usize).copied().unwrap_or(0);
                self.ends.push(Reverse((end, seq, job)));
            }
        }
    }

    /// Ask for a scheduling pass at `t` (ignored if `t` is not in the future).
    pub(crate) fn wake_at(&mut self, t: i64) {
        if t > self.now {
            self.wakeups.insert(t);
        }
    }

    /// True when some job appended so far has a `--switches` limit (a refusal that is not
    /// monotone in size). Over the rows appended so far, kept when rows leave the window: a
    /// whole-log replay asks it of every row; only a skipping shortcut reads it.
    pub(crate) fn has_switch_limits(&self) -> bool {
        self.any_switch_limit
    }

    /// Slurm's `--switches=N@wait` rule: a selection spanning more than N leaves is
    /// refused until the job has waited `wait` seconds since it was first tried.
    pub(crate) fn switches_allow(&mut self, topo: &Topology, job: u32, nodes: &[u32]) -> bool {
        let Some(&(max_leaves, wait_s)) = self.switches.get(job as usize) else { return true };
        if max_leaves == 0 {
            return true;
        }
        let first = &mut self.first_tried[job as usize];
        if *first < 0 {
            *first = self.now;
        }
        if self.now - *first >= wait_s {
            return true;
        }
        let first = *first;
        let mut leaves: Vec<u32> = nodes.iter().map(|&n| topo.leaf_of(n)).collect();
        leaves.sort_unstable();
        leaves.dedup();
        let ok = leaves.len() as u32 <= max_leaves;
        if !ok {
            // Try again when the wait runs out, even if nothing else happens by then.
            self.wake_at(first + wait_s);
        }
        ok
    }

    pub(crate) fn log_reservation(&mut self, pass_s: i64, job: u32, start_s: i64) {
        if self.record_reservations {
            self.reservations.push(ReservationRecord { pass_s, job, start_s });
        }
    }
}

/// Append `nodes` to `out` as maximal runs of consecutive ids, in list order: (first,
/// count) with each next id equal to the previous plus one. Expanding the runs gives the
/// list back exactly, whatever its order or repeats.
pub fn push_ranges(out: &mut Vec<(u32, u32)>, nodes: &[u32]) {
    let mut it = nodes.iter();
    let Some(&first) = it.next() else { return };
    let (mut start, mut count) = (first, 1u32);
    for &n in it {
        if n.checked_sub(start) == Some(count) {
            count += 1;
        } else {
            out.push((start, count));
            (start, count) = (n, 1);
        }
    }
    out.push((start, count));
}

/// The node ids of (first, count) ranges, in order.
pub fn expand_ranges(ranges: &[(u32, u32)]) -> Vec<u32> {
    let mut out = Vec::with_capacity(ranges.iter().map(|r| r.1 as usize).sum());
    for &(first, count) in ranges {
        out.extend((0..count).map(|k| first + k)); // first + count may be 2^32
    }
    out
}

/// Everything a queue policy may read or do during one pass.
pub struct PassCtx<'a> {
    pub topo: &'a Topology,
    /// The job table by absolute row (`ctx.jobs[row as usize]`); holds the engine's window
    /// of rows, which always contains every queued and running job.
    pub jobs: Rows<'a, Job>,
    pub alloc: &'a mut dyn Allocator,
    /// Private: a queue policy reads the machine through the accessors below and starts
    /// jobs only through `try_start` / `try_start_on`, which apply the checks.
    core: &'a mut Core,
    /// Only the first `queue_depth` queued jobs are considered in a pass.
    pub queue_depth: usize,
}

impl<'a> PassCtx<'a> {
    pub(crate) fn new(topo: &'a Topology, jobs: Rows<'a, Job>, alloc: &'a mut dyn Allocator, core: &'a mut Core, queue_depth: usize) -> PassCtx<'a> {
        PassCtx { topo, jobs, alloc, core, queue_depth }
    }
}

impl PassCtx<'_> {
    /// The machine read-only together with the allocation policy (a policy that projects
    /// the future asks the allocator while it walks the running jobs).
    pub fn split(&mut self) -> (&Core, &mut dyn Allocator) {
        (&*self.core, &mut *self.alloc)
    }
    /// Who holds which node now.
    pub fn state(&self) -> &ClusterState {
        &self.core.state
    }
    /// Waiting jobs (rows), in queue order.
    pub fn queue(&self) -> &[u32] {
        &self.core.queue
    }
    /// The queue, to remove the jobs a pass started (or, for a queue order, to permute it):
    /// the relative order of the others must not change and no job may be added.
    pub fn queue_mut(&mut self) -> &mut Vec<u32> {
        self.core.queue_edits += 1;
        &mut self.core.queue
    }
    /// Counts the calls that may have changed the queue other than by the engine's appends
    /// (`queue_mut`, `hold`): while it is unchanged since a policy's own last edit, the
    /// queue is what the policy left followed by the rows submitted since, in row order.
    pub fn queue_edits(&self) -> u64 {
        self.core.queue_edits
    }
    /// Running jobs ordered by expected end `start + walltime`, then row.
    pub fn running(&self) -> &BTreeSet<(i64, u32)> {
        &self.core.running
    }
    /// Bumped at every start and end: lets policies cache work while nothing changed.
    pub fn version(&self) -> u64 {
        self.core.version
    }
    /// The starts and ends since the last call, in order, moved into `out`; false (and
    /// `out` empty) when they are not known: at the first call, which starts the log, and
    /// if too many piled up since. Lets a policy keep what it derived from the running
    /// set and update it by what changed.
    pub fn take_running_changes(&mut self, out: &mut Vec<RunningChange>) -> bool {
        out.clear();
        match self.core.running_log.as_mut() {
            Some(log) => {
                std::mem::swap(log, out);
                true
            }
            None => {
                self.core.running_log = Some(Vec::new());
                false
            }
        }
    }
    /// Jobs that have ended so far (lets policies notice early ends).
    pub fn ended(&self) -> u64 {
        self.core.ended
    }
    /// Nodes held by a running job.
    pub fn nodes_of(&self, job: u32) -> &[u32] {
        self.core.nodes_of(job)
    }
    /// When a started job started.
    pub fn start_of(&self, job: u32) -> i64 {
        self.core.outcomes[job as usize].start_s
    }
    /// Span class of a running job.
    pub fn class_of(&self, job: u32) -> SpanClass {
        self.core.class_of(job)
    }
    /// True when some job has a `--switches` limit (a refusal that is not monotone in size).
    pub fn has_switch_limits(&self) -> bool {
        self.core.has_switch_limits()
    }
    /// Ask for a scheduling pass at `t` (ignored if `t` is not in the future).
    pub fn wake_at(&mut self, t: i64) {
        self.core.wake_at(t)
    }
    /// Hold a queued job pending forever (a rule that will not change during the run keeps
    /// it from ever starting, e.g. Slurm's `PartitionTimeLimit`): it leaves the queue, and
    /// the run reports it `Skipped` with `reason`, not as a stuck queue.
    pub fn hold(&mut self, job: u32, reason: String) {
        let Some(i) = self.core.queue.iter().position(|&j| j == job) else {
            panic!("hold: job row {job} is not queued");
        };
        self.core.queue.remove(i);
        self.core.queue_edits += 1;
        self.core.outcomes[job as usize].status = JobStatus::Skipped;
        self.core.held_jobs.push((job, reason));
    }
    /// Record a reservation (kept only with `record_reservations`).
    pub fn log_reservation(&mut self, pass_s: i64, job: u32, start_s: i64) {
        self.core.log_reservation(pass_s, job, start_s)
    }
    /// More jobs end at this instant after this pass (per-event order only): what they
    /// free is part of the machine at `now` (see [`Core::ends_pending_at`]).
    pub fn ends_pending_now(&self) -> bool {
        self.core.ends_pending_at(self.core.now)
    }

    pub fn now(&self) -> i64 {
        self.core.now
    }
    pub fn n_free(&self) -> u32 {
        self.core.state.n_free()
    }
    /// Ask the allocation policy for nodes and start the job on them if it finds some.
    pub fn try_start(&mut self, job: u32, guard: &Guard) -> bool {
        let nodes = self.jobs[job as usize].nodes;
        if nodes > self.core.state.n_free() {
            return false;
        }
        // the machine now, and how long the policy has held the job back (`adaptive`)
        let guard = Guard { held_back_s: self.core.held_back_s(job, self.core.now), projected: false, ..*guard };
        match self.alloc.select(self.topo, &self.core.state, nodes, &guard) {
            Some(chosen) if self.core.switches_allow(self.topo, job, &chosen) => {
                self.core.start(self.topo, self.jobs, job, chosen);
                true
            }
            Some(_) => false,
            None => {
                self.note_if_declined(job, &guard);
                false
            }
        }
    }

    /// After the allocation policy refused `job` under `guard`: if it has a patience and
    /// enough free nodes were outside the guard's excluded ones, it declined nodes the job
    /// could have had: note when it first did, and ask for a pass when its patience ends.
    pub fn note_if_declined(&mut self, job: u32, guard: &Guard) {
        if self.alloc.patience_s().is_none() {
            return;
        }
        let nodes = self.jobs[job as usize].nodes as usize;
        if free_unguarded(&self.core.state, self.topo, guard).take(nodes).count() == nodes {
            self.note_declined(job);
        }
    }

    /// Note that the allocation policy declined `job` free nodes it could have had now
    /// (if it has a patience), and ask for a pass when its patience with the job ends.
    pub fn note_declined(&mut self, job: u32) {
        let Some(patience_s) = self.alloc.patience_s() else { return };
        self.core.note_declined(job);
        if let Some(t) = self.core.patience_ends(job, Some(patience_s)) {
            self.core.wake_at(t);
        }
    }
}

impl PassCtx<'_> {
    /// Start `job` on exactly `nodes` (a binding reservation) if they are all free and the
    /// job's `--switches` limit allows them now.
    pub fn try_start_on(&mut self, job: u32, nodes: &[u32]) -> bool {
        if nodes.len() != self.jobs[job as usize].nodes as usize || !nodes.iter().all(|&n| self.core.state.is_free(n)) {
            return false;
        }
        if !self.core.switches_allow(self.topo, job, nodes) {
            return false;
        }
        self.core.start(self.topo, self.jobs, job, nodes.to_vec());
        true
    }
}


//! The discrete-event engine.
//!
//! **Total order of events.** Time advances to the next instant `t` at which a job ends or
//! is submitted. At `t`:
//! 1. every job ending at `t` releases its nodes, in increasing job row (trace order);
//! 2. every job submitted at `t` joins the queue, in trace order (a job that could never
//!    be placed, even on an empty machine, is reported as skipped instead);
//! 3. one scheduling pass runs (the queue policy, see `crate::queue`).
//!
//! An instant may also be one at which the queue policy asked to be woken (conservative
//! backfilling does, when a reservation starts); then steps 1 and 2 have nothing to do.
//!
//! A job started with run time 0 ends at `t` too: its end is handled in a new round at the
//! same `t` (steps 1–3 again), so a zero-length job holds its nodes for no time but is
//! still scheduled like any other. Ends before submits means a job may start on nodes
//! freed at the very instant it arrives. Nothing depends on hash order or wall-clock time:
//! the same inputs and seed give the same schedule, bit for bit.
//!
//! **Per-event order** (`EventOrder::PerEvent`, the order of the pyss simulator and
//! simulators derived from it): at `t`, each submission (trace order) joins the queue and
//! is followed by its own pass; then each end, in the order the jobs started, releases its
//! nodes and is followed by its own pass. An instant with only a wake-up runs one pass.
//!
//! **Network model.** With [`Engine::set_network`] a running job's end follows its
//! predicted slowdown and can move when jobs start or end; a moved end leaves a stale heap
//! entry, which is skipped. The order above is unchanged (docs/network.md).
//!
//! **Run time.** A job runs `min(runtime, walltime)` and is marked killed when its log run
//! time exceeds its limit, unless `kill_at_walltime` is off (then it runs its full log run
//! time, and reservations treat it as ending any moment once past its limit).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use crate::alloc::Allocator;
use crate::network::replay::NetReplay;
use crate::queue::ReservationRecord;
use crate::queue::{PassCtx, QueuePolicy};
use crate::state::ClusterState;
use crate::topology::Topology;
use crate::workload::{validate, Job};

/// What became of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// Not submitted yet, or waiting in the queue.
    Pending,
    Running,
    Done,
    /// Could never be placed on this fabric with this policy; see [`Engine::skipped`].
    Skipped,
}

/// Per-job result, indexed by job row.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    pub status: JobStatus,
    pub start_s: i64,
    pub end_s: i64,
    /// 1 = one leaf, 2 = one pod, 3 = several pods.
    pub class: u8,
    /// Log run time exceeded the limit and the job was killed at it.
    pub killed: bool,
    node_off: u32,
    node_len: u32,
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

/// Engine settings that are not policies.
#[derive(Clone, Copy, Debug)]
pub struct EngineOptions {
    /// Kill jobs at their requested time (default). Off: they run their log run time.
    pub kill_at_walltime: bool,
    /// Look at most this many queued jobs per pass (the flux plugin used 128).
    pub queue_depth: usize,
    /// Keep every reservation in [`Engine::reservations`] (tests, reports).
    pub record_reservations: bool,
    /// After every pass, check that no leaf hosts two jobs spanning leaves and no pod two
    /// jobs spanning pods (brief §2.10). A violation stops the run with an error.
    pub check_interference_free: bool,
    pub event_order: EventOrder,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            kill_at_walltime: true,
            queue_depth: usize::MAX,
            record_reservations: false,
            check_interference_free: false,
            event_order: EventOrder::PerInstant,
        }
    }
}

/// The machine state a queue policy works on.
pub struct Core {
    pub now: i64,
    pub state: ClusterState,
    /// Waiting jobs (rows), in queue order.
    pub queue: Vec<u32>,
    /// Running jobs ordered by expected end `start + walltime`, then row.
    pub running: BTreeSet<(i64, u32)>,
    /// Bumped at every start and end: lets policies cache work while nothing changed.
    pub version: u64,
    /// (end, start sequence, row): the sequence is 0 in the per-instant order (ends at one
    /// instant then go by row) and the start count in the per-event order (start order).
    ends: BinaryHeap<Reverse<(i64, u64, u32)>>,
    /// Per-event order only: start sequence of each job row.
    start_seq: Vec<u64>,
    starts: u64,
    event_order: EventOrder,
    /// Instants at which the queue policy asked for a pass (e.g. a reservation starts).
    wakeups: BinaryHeap<Reverse<i64>>,
    /// Jobs that have ended so far (lets policies notice early ends).
    pub ended: u64,
    outcomes: Vec<Outcome>,
    node_lists: Vec<u32>,
    kill_at_walltime: bool,
    record_reservations: bool,
    reservations: Vec<ReservationRecord>,
    /// Slurm `--switches=N@wait` per job row: (max leaves, max wait s); empty = none.
    switches: Vec<(u32, i64)>,
    /// When each job was first tried (for the switch wait), -1 before.
    first_tried: Vec<i64>,
    /// The network model's closed loop (`--network`), if on: it owns the end times.
    net: Option<Box<NetReplay>>,
}

impl Core {
    /// Nodes held (or last held) by a started job.
    pub fn nodes_of(&self, job: u32) -> &[u32] {
        let o = &self.outcomes[job as usize];
        &self.node_lists[o.node_off as usize..(o.node_off + o.node_len) as usize]
    }
    pub fn class_of(&self, job: u32) -> u8 {
        self.outcomes[job as usize].class
    }

    /// Start `job` now on `nodes`. Called by [`PassCtx::try_start`].
    pub(crate) fn start(&mut self, topo: &Topology, jobs: &[Job], job: u32, mut nodes: Vec<u32>) {
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
        o.class = class;
        o.killed = killed;
        o.node_off = self.node_lists.len() as u32;
        o.node_len = nodes.len() as u32;
        self.node_lists.extend_from_slice(&nodes);
        self.running.insert((self.now + spec.walltime_s, job));
        if self.event_order == EventOrder::PerEvent {
            self.starts += 1;
            self.start_seq[job as usize] = self.starts;
        }
        match self.net.as_mut() {
            // the end is pushed by `flush_network` once the instant's starts are known
            Some(net) => net.on_start(job, &nodes, self.now),
            None => self.push_end(end, job),
        }
        self.version += 1;
    }

    fn push_end(&mut self, end: i64, job: u32) {
        let seq = self.start_seq.get(job as usize).copied().unwrap_or(0);
        self.ends.push(Reverse((end, seq, job)));
    }

    /// A heap entry for a job whose end has moved since (network model) or that has ended.
    #[inline]
    fn end_is_stale(&self, end: i64, job: u32) -> bool {
        let o = &self.outcomes[job as usize];
        o.status != JobStatus::Running || o.end_s != end
    }

    /// Network model: after the instant's pass, push the ends that moved.
    fn flush_network(&mut self) {
        if let Some(net) = self.net.as_mut() {
            for &(job, end) in net.flush(self.now) {
                self.outcomes[job as usize].end_s = end;
                let seq = self.start_seq.get(job as usize).copied().unwrap_or(0);
                self.ends.push(Reverse((end, seq, job)));
            }
        }
    }

    /// Ask for a scheduling pass at `t` (ignored if `t` is not in the future).
    pub fn wake_at(&mut self, t: i64) {
        if t > self.now {
            self.wakeups.push(Reverse(t));
        }
    }

    /// True when some job has a `--switches` limit (a refusal that is not monotone in size).
    pub fn has_switch_limits(&self) -> bool {
        self.switches.iter().any(|&(l, _)| l > 0)
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

/// Why a run could not go on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimError(pub String);

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for SimError {}

/// A replay of one workload on one fabric under one pair of policies.
pub struct Engine {
    topo: Topology,
    jobs: Vec<Job>,
    alloc: Box<dyn Allocator>,
    queue_policy: Box<dyn QueuePolicy>,
    opts: EngineOptions,
    empty: ClusterState,
    core: Core,
    next_submit: usize,
    skipped: Vec<(u32, String)>,
    passes: u64,
    finished: bool,
}

impl Engine {
    /// `down` nodes are never available (drained); everything else starts free.
    pub fn new(
        topo: Topology,
        jobs: Vec<Job>,
        alloc: Box<dyn Allocator>,
        queue_policy: Box<dyn QueuePolicy>,
        opts: EngineOptions,
        down: &[u32],
    ) -> Result<Engine, SimError> {
        validate(&jobs).map_err(SimError)?;
        if let Some(&d) = down.iter().find(|&&d| d as usize >= topo.n_nodes()) {
            return Err(SimError(format!("down node {d} is not on the fabric ({} nodes)", topo.n_nodes())));
        }
        let state = ClusterState::new(&topo, down);
        let blank = Outcome { status: JobStatus::Pending, start_s: -1, end_s: -1, class: 0, killed: false, node_off: 0, node_len: 0 };
        let core = Core {
            now: i64::MIN,
            state: state.clone(),
            queue: Vec::new(),
            running: BTreeSet::new(),
            version: 0,
            ends: BinaryHeap::new(),
            start_seq: if opts.event_order == EventOrder::PerEvent { vec![0; jobs.len()] } else { Vec::new() },
            starts: 0,
            event_order: opts.event_order,
            wakeups: BinaryHeap::new(),
            ended: 0,
            outcomes: vec![blank; jobs.len()],
            node_lists: Vec::new(),
            kill_at_walltime: opts.kill_at_walltime,
            record_reservations: opts.record_reservations,
            reservations: Vec::new(),
            switches: Vec::new(),
            first_tried: Vec::new(),
            net: None,
        };
        Ok(Engine {
            topo,
            jobs,
            alloc,
            queue_policy,
            opts,
            empty: state,
            core,
            next_submit: 0,
            skipped: Vec::new(),
            passes: 0,
            finished: false,
        })
    }

    /// Slurm `--switches=N@wait` for every job row: (max leaves, max wait in seconds); 0
    /// leaves means no limit. Call before the first [`step`](Self::step).
    pub fn set_switches(&mut self, switches: Vec<(u32, i64)>) -> Result<(), SimError> {
        if switches.len() != self.jobs.len() {
            return Err(SimError(format!("switches given for {} jobs, the workload has {}", switches.len(), self.jobs.len())));
        }
        self.core.first_tried = vec![-1; switches.len()];
        self.core.switches = switches;
        Ok(())
    }

    /// Turn on the network model's closed loop (docs/network.md): job ends then follow
    /// their predicted slowdown. Call before the first [`step`](Self::step).
    pub fn set_network(&mut self, mut net: NetReplay) -> Result<(), SimError> {
        if self.core.now != i64::MIN {
            return Err(SimError("the network model must be set before the replay starts".into()));
        }
        net.bind(&self.jobs, self.opts.kill_at_walltime).map_err(SimError)?;
        self.core.net = Some(Box::new(net));
        Ok(())
    }

    /// The network model's state, if on.
    pub fn network(&self) -> Option<&NetReplay> {
        self.core.net.as_deref()
    }

    /// Run until the end, or until `max_instants` instants have been handled (so a caller
    /// can show progress). Returns true once every job is done or skipped.
    pub fn step(&mut self, max_instants: u64) -> Result<bool, SimError> {
        let mut handled = 0;
        while !self.finished && handled < max_instants {
            while let Some(&Reverse((end, _, job))) = self.core.ends.peek() {
                if !self.core.end_is_stale(end, job) {
                    break;
                }
                self.core.ends.pop();
            }
            let next_end = self.core.ends.peek().map(|r| r.0 .0);
            let next_submit = self.jobs.get(self.next_submit).map(|j| j.submit_s);
            // A wake-up alone never keeps the run going: with nothing running and nothing
            // to submit, the queue is empty or a policy is stuck (reported below).
            let next_wakeup = if next_end.is_some() || next_submit.is_some() || !self.core.queue.is_empty() {
                self.core.wakeups.peek().map(|r| r.0)
            } else {
                None
            };
            let Some(t) = [next_end, next_submit, next_wakeup].into_iter().flatten().min() else {
                self.finished = true;
                break;
            };
            self.core.now = t;
            match self.opts.event_order {
                EventOrder::PerInstant => self.handle_instant(t)?,
                EventOrder::PerEvent => self.handle_instant_per_event(t)?,
            }
            handled += 1;
        }
        if self.finished && !self.core.queue.is_empty() {
            return Err(SimError(format!(
                "{} jobs were still queued when nothing was left running (first: row {}); this is a policy bug",
                self.core.queue.len(),
                self.core.queue[0]
            )));
        }
        Ok(self.finished)
    }

    fn handle_instant(&mut self, t: i64) -> Result<(), SimError> {
        // 1. ends
        while self.end_one(t) {}
        self.clear_wakeups(t);
        // 2. submits
        while self.submit_one(t)? {}
        // 3. one pass
        self.pass()?;
        self.core.flush_network();
        Ok(())
    }

    /// pyss's order: each submission, then each end in start order, with a pass after each.
    fn handle_instant_per_event(&mut self, t: i64) -> Result<(), SimError> {
        self.clear_wakeups(t);
        let mut events = 0;
        while self.submit_one(t)? {
            self.pass()?;
            events += 1;
        }
        while self.end_one(t) {
            self.pass()?;
            events += 1;
        }
        if events == 0 {
            self.pass()?; // a wake-up
        }
        self.core.flush_network();
        Ok(())
    }

    fn clear_wakeups(&mut self, t: i64) {
        while self.core.wakeups.peek().is_some_and(|r| r.0 <= t) {
            self.core.wakeups.pop();
        }
    }

    /// End the next job ending at `t`, if any (stale entries skipped). False when none is left.
    fn end_one(&mut self, t: i64) -> bool {
        while let Some(&Reverse((end, _, job))) = self.core.ends.peek() {
            if end != t {
                return false;
            }
            self.core.ends.pop();
            if self.core.end_is_stale(end, job) {
                continue;
            }
            let spec = self.jobs[job as usize];
            let start = self.core.outcomes[job as usize].start_s;
            self.core.running.remove(&(start + spec.walltime_s, job));
            let class = self.core.outcomes[job as usize].class;
            let o = self.core.outcomes[job as usize];
            let nodes = &self.core.node_lists[o.node_off as usize..(o.node_off + o.node_len) as usize];
            self.core.state.release(&self.topo, job, nodes, class);
            self.core.outcomes[job as usize].status = JobStatus::Done;
            if let Some(net) = self.core.net.as_mut() {
                self.core.outcomes[job as usize].killed = net.on_end(job, t);
            }
            self.core.version += 1;
            self.core.ended += 1;
            return true;
        }
        false
    }

    /// Queue (or skip) the next job submitted at `t`, if any. False when none is left.
    fn submit_one(&mut self, t: i64) -> Result<bool, SimError> {
        let Some(spec) = self.jobs.get(self.next_submit) else { return Ok(false) };
        if spec.submit_s != t {
            return Ok(false);
        }
        let row = self.next_submit as u32;
        self.next_submit += 1;
        match self.alloc.check_fits_ever(&self.topo, &self.empty, spec.nodes) {
            Ok(()) => self.core.queue.push(row),
            Err(why) => {
                if let Some(e) = self.alloc.take_error() {
                    return Err(SimError(e));
                }
                self.core.outcomes[row as usize].status = JobStatus::Skipped;
                self.skipped.push((row, why));
            }
        }
        Ok(true)
    }

    /// One scheduling pass, if anything is queued.
    fn pass(&mut self) -> Result<(), SimError> {
        if self.core.queue.is_empty() {
            return Ok(());
        }
        let mut ctx = PassCtx {
            topo: &self.topo,
            jobs: &self.jobs,
            alloc: self.alloc.as_mut(),
            core: &mut self.core,
            queue_depth: self.opts.queue_depth,
        };
        self.queue_policy.pass(&mut ctx);
        self.passes += 1;
        if let Some(e) = self.alloc.take_error().or_else(|| self.queue_policy.take_error()) {
            return Err(SimError(e));
        }
        if self.opts.check_interference_free {
            self.check_interference_free()?;
        }
        Ok(())
    }

    /// I1: every leaf hosts nodes of at most one running job spanning leaves.
    /// I2: every pod hosts nodes of at most one running job spanning pods.
    fn check_interference_free(&self) -> Result<(), SimError> {
        let mut leaf_job = vec![u32::MAX; self.topo.n_leaves()];
        let mut pod_job = vec![u32::MAX; self.topo.n_pods()];
        for &(_, job) in &self.core.running {
            let class = self.core.class_of(job);
            for &n in self.core.nodes_of(job) {
                let leaf = self.topo.leaf_of(n);
                let pod = self.topo.pod_of_leaf(leaf);
                let checks = [(class >= 2, &leaf_job[leaf as usize], "leaf", leaf), (class >= 3, &pod_job[pod as usize], "pod", pod)];
                for (applies, holder, what, id) in checks {
                    if applies && *holder != u32::MAX && *holder != job {
                        return Err(SimError(format!(
                            "interference-free invariant broken at t={}: {what} {id} hosts spanning jobs rows {} and {job}",
                            self.core.now, *holder
                        )));
                    }
                }
                if class >= 2 {
                    leaf_job[leaf as usize] = job;
                }
                if class >= 3 {
                    pod_job[pod as usize] = job;
                }
            }
        }
        Ok(())
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }
    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }
    pub fn outcomes(&self) -> &[Outcome] {
        &self.core.outcomes
    }
    /// Nodes a started job held.
    pub fn nodes_of(&self, job: u32) -> &[u32] {
        self.core.nodes_of(job)
    }
    /// Jobs that could never run, with the reason, in submit order.
    pub fn skipped(&self) -> &[(u32, String)] {
        &self.skipped
    }
    /// Free the per-job outcomes and node lists once a caller has copied them out (the
    /// binding's `results(release=True)`): a finished replay then holds little memory
    /// while its results are written. Afterwards [`outcomes`](Self::outcomes) is empty and
    /// the engine must not be stepped again.
    pub fn release_outcomes(&mut self) {
        self.finished = true;
        self.core.outcomes = Vec::new();
        self.core.node_lists = Vec::new();
    }
    pub fn reservations(&self) -> &[ReservationRecord] {
        &self.core.reservations
    }
    pub fn passes(&self) -> u64 {
        self.passes
    }
    pub fn is_finished(&self) -> bool {
        self.finished
    }
    /// Jobs submitted so far.
    pub fn submitted(&self) -> usize {
        self.next_submit
    }
    pub fn now(&self) -> i64 {
        self.core.now
    }
    pub fn allocator_name(&self) -> String {
        self.alloc.name()
    }
    pub fn queue_name(&self) -> String {
        self.queue_policy.name()
    }
}

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
//!
//! **Streamed input** (rows, window, horizon; ARCHITECTURE.md rule 12). A replay need not
//! be built with every job: [`Engine::append`] adds rows after the last one (submit times
//! never going back), [`Engine::set_input_end`] / [`Engine::step_until`] say how far the
//! input goes (`Some(t)`: more rows may come, none submitted before `t`; `None`: complete,
//! what [`Engine::new`] assumes), and [`Engine::drain`] hands over and forgets the longest
//! prefix of final rows (done or skipped). Per-row state lives in [`RowVec`]s indexed by
//! absolute row, so the engine holds only the window from the oldest row not final to the
//! last appended. The horizon rule: no instant at or after the input end is handled, and
//! nothing is finished (or reported stuck) before the input is complete; rows at an
//! instant may be split across chunks, since that instant is handled only once the next
//! chunk (whose first submit is the input end) is in. Hence the order above is the whole
//! replay's, instant for instant, and so are the outcomes (tests/streaming.rs). Refused
//! when streamed: the network model and queue policies that read the whole log up front
//! (`slurm`, `slurm-bf`: [`QueuePolicy::whole_log_only`]). `--switches` limits stream:
//! every chunk carries its rows' limits.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use crate::alloc::Allocator;
use crate::network::replay::NetReplay;
use crate::pass::Core;
pub use crate::pass::{EventOrder, JobStatus, Outcome};
use crate::pass::{PassCtx, ReservationRecord};
use crate::queue::QueuePolicy;
use crate::rows::RowVec;
use crate::state::ClusterState;
use crate::topology::Topology;
use crate::workload::{validate_rows, Appended, Job};

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

/// Why a run could not go on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimError(pub String);

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for SimError {}

/// What [`Engine::drain`] hands over: the rows `first_row .. first_row + outcomes.len()`,
/// all final (done or skipped), which the engine then forgets.
#[derive(Clone, Debug, Default)]
pub struct Drained {
    pub first_row: u32,
    /// One per row, in row order.
    pub outcomes: Vec<Outcome>,
    /// Row `first_row + i` ran on the node ranges `ranges[range_offsets[i] ..
    /// range_offsets[i + 1]]` (empty if it never started); `range_offsets` has one entry
    /// more than `outcomes`.
    pub range_offsets: Vec<usize>,
    pub ranges: Vec<(u32, u32)>,
    /// The skipped rows among them with the reason, in row order.
    pub skipped: Vec<(u32, String)>,
}

/// A replay of one workload on one fabric under one pair of policies.
pub struct Engine {
    topo: Topology,
    /// The window of job rows (`crate::rows`): every row from the oldest not drained to the
    /// last appended.
    jobs: RowVec<Job>,
    alloc: Box<dyn Allocator>,
    queue_policy: Box<dyn QueuePolicy>,
    opts: EngineOptions,
    empty: ClusterState,
    core: Core,
    next_submit: usize,
    skipped: Vec<(u32, String)>,
    passes: u64,
    finished: bool,
    /// Rows appended so far and what they promise to the next chunk.
    appended: Appended,
    /// `Some(t)`: more rows may be appended, none submitted before `t`; the replay handles
    /// no instant at or after `t`. `None`: the input is complete (the whole-log default).
    input_end: Option<i64>,
    /// Rows were appended after construction (a streamed replay).
    streamed: bool,
    /// [`set_switches`](Self::set_switches) was called: every row carries a limit.
    switches_on: bool,
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
        let appended = validate_rows(&jobs, &Appended::default()).map_err(SimError)?;
        if let Some(&d) = down.iter().find(|&&d| d as usize >= topo.n_nodes()) {
            return Err(SimError(format!("down node {d} is not on the fabric ({} nodes)", topo.n_nodes())));
        }
        // with the allocation policy's own counters, if it keeps any
        let state = crate::alloc::new_state(alloc.as_ref(), &topo, down);
        let blank = Outcome { status: JobStatus::Pending, start_s: -1, end_s: -1, class: None, killed: false, node_off: 0, node_len: 0, slot: 0 };
        let core = Core {
            now: i64::MIN,
            state: state.clone(),
            queue: Vec::new(),
            running: BTreeSet::new(),
            version: 0,
            ends: BinaryHeap::new(),
            start_seq: if opts.event_order == EventOrder::PerEvent { RowVec::from_vec(vec![0; jobs.len()]) } else { RowVec::new() },
            starts: 0,
            event_order: opts.event_order,
            wakeups: BTreeSet::new(),
            ended: 0,
            outcomes: RowVec::from_vec(vec![blank; jobs.len()]),
            node_ranges: Vec::new(),
            held_jobs: Vec::new(),
            running_log: None,
            queue_edits: 0,
            free_slots: Vec::new(),
            kill_at_walltime: opts.kill_at_walltime,
            record_reservations: opts.record_reservations,
            reservations: Vec::new(),
            switches: RowVec::new(),
            any_switch_limit: false,
            first_tried: RowVec::new(),
            first_declined: if alloc.patience_s().is_some() { RowVec::from_vec(vec![-1; jobs.len()]) } else { RowVec::new() },
            net: None,
            held: Vec::new(),
        };
        Ok(Engine {
            topo,
            jobs: RowVec::from_vec(jobs),
            alloc,
            queue_policy,
            opts,
            empty: state,
            core,
            next_submit: 0,
            skipped: Vec::new(),
            passes: 0,
            finished: false,
            appended,
            input_end: None,
            streamed: false,
            switches_on: false,
        })
    }

    /// Append rows after the last one (a streamed replay): their submit times must not be
    /// before the last row's, nor before the input end last declared
    /// ([`set_input_end`](Self::set_input_end)), and must be after every instant handled
    /// so far. With `--switches` limits on ([`set_switches`](Self::set_switches)), every
    /// chunk carries its rows' limits; without, none may. Refused with the network model
    /// and with a queue policy that needs the whole log up front
    /// ([`QueuePolicy::whole_log_only`]).
    pub fn append(&mut self, jobs: Vec<Job>) -> Result<(), SimError> {
        self.append_with_switches(jobs, None)
    }

    /// [`append`](Self::append) with the rows' `--switches=N@wait` limits.
    pub fn append_with_switches(&mut self, jobs: Vec<Job>, switches: Option<Vec<(u32, i64)>>) -> Result<(), SimError> {
        if let Some(why) = self.queue_policy.whole_log_only() {
            return Err(SimError(format!("rows cannot be appended with queue policy {}: {why}", self.queue_policy.name())));
        }
        if self.core.net.is_some() {
            return Err(SimError(
                "rows cannot be appended with the network model on: it draws every job's traffic from the whole log up front".into(),
            ));
        }
        if self.finished {
            return Err(SimError("rows cannot be appended: the replay has finished (its input was declared complete)".into()));
        }
        match (&switches, self.switches_on) {
            (Some(sw), true) if sw.len() != jobs.len() => {
                return Err(SimError(format!("switches given for {} appended jobs, the chunk has {}", sw.len(), jobs.len())))
            }
            (None, true) if !jobs.is_empty() => {
                return Err(SimError("this replay has --switches limits: every appended chunk must give its rows' limits".into()))
            }
            (Some(_), false) => {
                return Err(SimError("switches given for appended jobs, but the replay was built without --switches limits".into()))
            }
            _ => {}
        }
        let Some(first) = jobs.first() else { return Ok(()) };
        if let Some(t) = self.input_end.filter(|&t| first.submit_s < t) {
            return Err(SimError(format!(
                "job row {} (id {}): field 'submit_s' is {} but the input end was declared at {t}: no row may be submitted before it",
                self.appended.rows, first.id, first.submit_s
            )));
        }
        if self.core.now != i64::MIN && first.submit_s <= self.core.now {
            return Err(SimError(format!(
                "job row {} (id {}): field 'submit_s' is {} but the replay has already handled instant {}",
                self.appended.rows, first.id, first.submit_s, self.core.now
            )));
        }
        self.appended = validate_rows(&jobs, &self.appended).map_err(SimError)?;
        let n = jobs.len();
        let blank = Outcome { status: JobStatus::Pending, start_s: -1, end_s: -1, class: None, killed: false, node_off: 0, node_len: 0, slot: 0 };
        self.core.outcomes.extend(std::iter::repeat(blank).take(n));
        if self.opts.event_order == EventOrder::PerEvent {
            self.core.start_seq.extend(std::iter::repeat(0).take(n));
        }
        if self.alloc.patience_s().is_some() {
            self.core.first_declined.extend(std::iter::repeat(-1).take(n));
        }
        if let Some(sw) = switches {
            self.core.any_switch_limit |= sw.iter().any(|&(l, _)| l > 0);
            self.core.first_tried.extend(std::iter::repeat(-1).take(n));
            self.core.switches.extend(sw);
        }
        self.jobs.extend(jobs);
        self.streamed = true;
        Ok(())
    }

    /// Say how far the input goes. `Some(t)`: more rows may come, none submitted before
    /// `t`, so [`step`](Self::step) handles only instants before `t` (and never reports the
    /// replay finished). `None`: the input is complete (the default: a replay built with
    /// the whole log). Refused once the replay has finished, or when an instant at or after
    /// `t` was already handled.
    pub fn set_input_end(&mut self, input_end: Option<i64>) -> Result<(), SimError> {
        if let Some(t) = input_end {
            if self.finished {
                return Err(SimError("the replay has finished: its input was declared complete".into()));
            }
            if self.core.now != i64::MIN && t <= self.core.now {
                return Err(SimError(format!("input end {t} is not after instant {}, which the replay has already handled", self.core.now)));
            }
        }
        self.input_end = input_end;
        Ok(())
    }

    /// The input end last declared (see [`set_input_end`](Self::set_input_end)).
    pub fn input_end(&self) -> Option<i64> {
        self.input_end
    }

    /// [`set_input_end`](Self::set_input_end)`(before_s)` then [`step`](Self::step)`(max_instants)`.
    /// True when the replay went as far as its input allows: finished (input complete), or
    /// every instant before `before_s` handled.
    pub fn step_until(&mut self, before_s: Option<i64>, max_instants: u64) -> Result<bool, SimError> {
        self.set_input_end(before_s)?;
        let (finished, blocked) = self.run(max_instants)?;
        Ok(finished || blocked)
    }

    /// Hand over and forget the longest prefix of the window's rows that are final (done,
    /// or skipped): a pending (queued or not yet submitted) or running row ends it. The
    /// engine then holds the rows from the oldest one not final to the last appended, and
    /// the node ranges of those of them that started.
    pub fn drain(&mut self) -> Drained {
        let first = self.jobs.first_row();
        let mut end = first;
        while self.core.outcomes.get(end).is_some_and(|o| matches!(o.status, JobStatus::Done | JobStatus::Skipped)) {
            end += 1;
        }
        let mut out = Drained { first_row: first as u32, range_offsets: vec![0], ..Drained::default() };
        if end == first {
            return out;
        }
        out.outcomes.reserve(end - first);
        out.range_offsets.reserve(end - first);
        for row in first..end {
            let o = self.core.outcomes[row];
            if o.status == JobStatus::Done {
                out.ranges.extend_from_slice(self.core.node_ranges_of(row as u32));
            }
            out.outcomes.push(o);
            out.range_offsets.push(out.ranges.len());
        }
        // the skipped list keeps its own order; the drained rows' reasons leave it
        let (mut gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.skipped).into_iter().partition(|&(r, _)| (r as usize) < end);
        gone.sort_by_key(|&(r, _)| r);
        out.skipped = gone;
        self.skipped = kept;
        self.jobs.drop_before(end);
        self.core.outcomes.drop_before(end);
        self.core.start_seq.drop_before(end.min(self.core.start_seq.len()));
        self.core.first_declined.drop_before(end.min(self.core.first_declined.len()));
        self.core.switches.drop_before(end.min(self.core.switches.len()));
        self.core.first_tried.drop_before(end.min(self.core.first_tried.len()));
        // keep only the ranges of the window's started rows, offsets rewritten
        let mut ranges = Vec::new();
        for row in end..self.core.outcomes.len() {
            let o = self.core.outcomes[row];
            if matches!(o.status, JobStatus::Running | JobStatus::Done) {
                let off = ranges.len();
                ranges.extend_from_slice(self.core.node_ranges_of(row as u32));
                self.core.outcomes[row].node_off = off as u32;
            }
        }
        self.core.node_ranges = ranges;
        out
    }

    /// First row of the window (rows before it were drained).
    pub fn first_row(&self) -> usize {
        self.jobs.first_row()
    }
    /// Rows held now: the window, from [`first_row`](Self::first_row) to the last appended.
    pub fn held_rows(&self) -> usize {
        self.jobs.held()
    }
    /// Rows appended so far (the constructor's included).
    pub fn n_rows(&self) -> usize {
        self.jobs.len()
    }

    /// Slurm `--switches=N@wait` for every job row: (max leaves, max wait in seconds); 0
    /// leaves means no limit. Call before the first [`step`](Self::step).
    pub fn set_switches(&mut self, switches: Vec<(u32, i64)>) -> Result<(), SimError> {
        if self.streamed {
            return Err(SimError("switches must be set before rows are appended".into()));
        }
        if switches.len() != self.jobs.len() {
            return Err(SimError(format!("switches given for {} jobs, the workload has {}", switches.len(), self.jobs.len())));
        }
        self.core.first_tried = RowVec::from_vec(vec![-1; switches.len()]);
        self.core.any_switch_limit = switches.iter().any(|&(l, _)| l > 0);
        self.core.switches = RowVec::from_vec(switches);
        self.switches_on = true;
        Ok(())
    }

    /// Turn on the network model's closed loop (docs/network.md): job ends then follow
    /// their predicted slowdown. Call before the first [`step`](Self::step).
    pub fn set_network(&mut self, mut net: NetReplay) -> Result<(), SimError> {
        if self.core.now != i64::MIN {
            return Err(SimError("the network model must be set before the replay starts".into()));
        }
        if self.streamed {
            return Err(SimError("the network model cannot be used once rows were appended: it needs the whole log up front".into()));
        }
        net.bind(self.jobs.as_slice(), self.opts.kill_at_walltime).map_err(SimError)?;
        self.core.net = Some(Box::new(net));
        Ok(())
    }

    /// The network model's state, if on.
    pub fn network(&self) -> Option<&NetReplay> {
        self.core.net.as_deref()
    }

    /// Run until the end, or until `max_instants` instants have been handled (so a caller
    /// can show progress). Returns true once every job is done or skipped and the input is
    /// complete. With an input end declared ([`set_input_end`](Self::set_input_end)) it
    /// stops before the first instant at or after it.
    pub fn step(&mut self, max_instants: u64) -> Result<bool, SimError> {
        self.run(max_instants).map(|(finished, _)| finished)
    }

    /// (finished, stopped at the input end).
    fn run(&mut self, max_instants: u64) -> Result<(bool, bool), SimError> {
        let mut handled = 0;
        let mut blocked = false;
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
            // to submit, the queue is empty or a policy is stuck (reported below). Rows not
            // appended yet are not counted: the whole log would handle such a wake-up, but
            // with nothing queued or running it changes nothing (its pass has no queue).
            let next_wakeup = if next_end.is_some() || next_submit.is_some() || !self.core.queue.is_empty() {
                self.core.wakeups.first().copied()
            } else {
                None
            };
            let next = [next_end, next_submit, next_wakeup].into_iter().flatten().min();
            // The horizon: no instant at or after the first submit not yet appended.
            if let Some(end) = self.input_end {
                if next.map_or(true, |t| t >= end) {
                    blocked = true;
                    break;
                }
            }
            let Some(t) = next else {
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
            // named: with a policy written in Python the bug is the user's code, not ours
            return Err(SimError(format!(
                "{} jobs were still queued when nothing was left running (first: row {}); this is a bug of the policies {} + {}: \
                 a job that fits the empty machine must be placed once every node is free",
                self.core.queue.len(),
                self.core.queue[0],
                self.queue_policy.name(),
                self.alloc.name()
            )));
        }
        Ok((self.finished, blocked))
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
        while self.core.wakeups.first().is_some_and(|&w| w <= t) {
            self.core.wakeups.pop_first();
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
            self.core.log_running(start + spec.walltime_s, job, false);
            let class = self.core.class_of(job);
            let nodes = self.core.take_nodes(job);
            self.core.state.release(&self.topo, job, &nodes, class);
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
        let mut ctx = PassCtx::new(&self.topo, self.jobs.view(), self.alloc.as_mut(), &mut self.core, self.opts.queue_depth);
        self.queue_policy.pass(&mut ctx);
        self.passes += 1;
        self.skipped.append(&mut self.core.held_jobs);
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
                let checks = [(class.spans_leaves(), &leaf_job[leaf as usize], "leaf", leaf), (class.spans_pods(), &pod_job[pod as usize], "pod", pod)];
                for (applies, holder, what, id) in checks {
                    if applies && *holder != u32::MAX && *holder != job {
                        return Err(SimError(format!(
                            "interference-free invariant broken at t={}: {what} {id} hosts spanning jobs rows {} and {job}",
                            self.core.now, *holder
                        )));
                    }
                }
                if class.spans_leaves() {
                    leaf_job[leaf as usize] = job;
                }
                if class.spans_pods() {
                    pod_job[pod as usize] = job;
                }
            }
        }
        Ok(())
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }
    /// The window's rows, from [`first_row`](Self::first_row) (all of them unless drained).
    pub fn jobs(&self) -> &[Job] {
        self.jobs.as_slice()
    }
    /// The window's outcomes, from [`first_row`](Self::first_row) (all unless drained).
    pub fn outcomes(&self) -> &[Outcome] {
        self.core.outcomes.as_slice()
    }
    /// Nodes a started job holds or held, ascending (expanded from its ranges).
    pub fn nodes_of(&self, job: u32) -> Vec<u32> {
        crate::pass::expand_ranges(self.core.node_ranges_of(job))
    }
    /// A started job's nodes as (first, count) ranges of consecutive ids, ascending.
    pub fn node_ranges_of(&self, job: u32) -> &[(u32, u32)] {
        self.core.node_ranges_of(job)
    }
    /// Jobs that could never run, with the reason: those that could never fit, in submit
    /// order, and those a queue policy held (`PassCtx::hold`), as it held them.
    pub fn skipped(&self) -> &[(u32, String)] {
        &self.skipped
    }
    /// Free the per-job outcomes and node lists once a caller has copied them out (the
    /// binding's `results(release=True)`): a finished replay then holds little memory
    /// while its results are written. Afterwards [`outcomes`](Self::outcomes) is empty and
    /// the engine must not be stepped again.
    pub fn release_outcomes(&mut self) {
        self.finished = true;
        self.core.outcomes = RowVec::new();
        self.core.node_ranges = Vec::new();
        self.core.held = Vec::new();
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

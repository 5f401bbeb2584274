//! `conservative`: conservative backfilling (Mu'alem & Feitelson 2001): every queued job
//! holds a reservation, and no job may delay any of them.
//!
//! The rules, exactly (docs/semantics.md repeats them):
//!
//! 1. **Reservations.** A job gets a reservation when it is first seen by a pass (the pass
//!    of its submit instant), in queue order: the earliest start time `s >= now` at which
//!    it fits for its whole *requested* time `[s, s + walltime)`, given the running jobs
//!    (each assumed to run until `start + walltime`) and every reservation made before.
//!    * Fungible allocation policies: "fits" means enough free nodes at every instant of
//!      the window (a profile of free node counts).
//!    * Non-fungible policies (`isolated`, Python policies): "fits" means the allocation
//!      policy places the job on a projection of the machine at `s` (running jobs expected
//!      to end by `s` released) with the nodes of every reservation overlapping the window
//!      excluded, and the reservations in the guard for the policy to honour (`isolated`:
//!      their leaves/pods closed to spanning jobs) as EASY does. The
//!      reservation is that node set. Candidate starts are `now` and every expected end of
//!      a running job or reservation.
//! 2. **Compression.** When jobs have ended since the last pass (early ends open holes),
//!    each reservation, in order of start time (ties: queue order), is taken out and
//!    re-made at the earliest start no later than its current one; it moves only if that
//!    is strictly earlier. Moving a job into space that every other reservation leaves
//!    free never delays another job.
//! 3. **Starts.** Every job whose reservation starts now starts, in order of reservation
//!    start then queue order: on any free nodes the allocation policy picks (fungible), or
//!    on exactly its reserved nodes (non-fungible: reservations are binding). While a job
//!    runs past its limit (only with --run-on), and for a reservation left in the past
//!    (below), the allocation policy must also accept the reserved nodes on the machine as
//!    it is (isolated: no spanning job left on their leaves/pods by the overrunning job or
//!    by another such reservation started in the same pass); otherwise the job is
//!    re-reserved. In the per-event order, a due job that cannot start while jobs ending
//!    at this same instant still hold their nodes keeps its reservation: the pass after
//!    those ends starts it.
//! 4. The engine is asked to wake at every reservation start, so a job starts exactly at
//!    its reservation even when no job ends or arrives then.
//!
//! **Guarantee** (tested as a property): with jobs killed at their limit, no job starts
//! later than the reservation it got at submission. With `--run-on`, a job past its limit
//! is assumed to end within a second; a job whose reservation it blocks is re-reserved.
//! Reservations resting on such a job (blocked by it, or placed after one that is) do
//! not wake the engine: passes run at events, not every few seconds of the overrun, and
//! a reservation left in the past is due again at the next pass, for the same length.
//!
//! `--queue-depth` does not apply: every queued job holds a reservation.
//!
//! *Cost*: fungible policies search a [`Planner`] (free nodes over time) built at most
//! once per pass, at its first use: at most O(breakpoints) per reservation made or moved,
//! and compression searches the plan as it is, each window cut at the reservation's own
//! start, taking a reservation out only when it moves. The engine is asked once per
//! reservation to wake at its start, not at every pass. Non-fungible policies project the
//! node state at each candidate start (the planner's [`Projection`]); the nodes of the
//! reservations overlapping the candidate window are kept as the window advances
//! ([`Overlap`]: each reservation added and removed once per search, a few operations per
//! 64 nodes), and the allocation policy is asked only at candidates where at least the
//! job's nodes are free outside them (a popcount; no policy places a job on fewer).

use super::{PassCtx, QueueEntry, QueuePolicy};
use crate::alloc::{Guard, Reserved};
use crate::planner::{Planner, Projection};
use crate::options::{parse_options, schema_of, NoOptions};
use crate::pass::RunningChange;
use crate::rows::RowVec;
use crate::state::{ClusterState, NodeSet};
use crate::topology::SpanClass;

#[derive(Clone, Debug)]
struct Reservation {
    start: i64,
    end: i64,
    /// Node set, ascending (non-fungible policies only).
    nodes: Vec<u32>,
    /// The same as a set (non-fungible policies only; empty otherwise), for [`Overlap`]:
    /// a word at a time instead of a node at a time (a reservation holds hundreds of nodes
    /// on a congested large machine).
    bits: NodeSet,
    class: SpanClass,
    /// Only with --run-on: the start rests on a job past its limit ending "within a
    /// second" (directly, after another such reservation, or because that job blocked
    /// this one's start), so it moves with time and waking at it would only move it
    /// again (see step 4).
    drifting: bool,
    /// The engine was asked to wake at `start` (step 4). The engine keeps a wake-up until
    /// its instant is reached and `start` never changes while this is set (a moved
    /// reservation is a new one), so asking again would only re-insert the same instant:
    /// once per reservation, not once per reservation per pass (a BTreeSet insert each,
    /// a quarter of a congested run's time).
    woken: bool,
    /// [`Growth`]'s sequence number when this start was last searched for (made, or
    /// compressed): none earlier fitted then (counts only).
    checked: u64,
}

/// The largest value pushed after a given sequence number, in O(log n): the pushes no
/// later push reaches, sequence ascending and value strictly descending.
#[derive(Clone, Debug, Default)]
struct SuffixMax {
    stack: Vec<(u64, i64)>,
}

impl SuffixMax {
    fn push(&mut self, seq: u64, value: i64) {
        while self.stack.last().is_some_and(|&(_, v)| v <= value) {
            self.stack.pop();
        }
        self.stack.push((seq, value));
    }

    fn after(&self, seq: u64) -> Option<i64> {
        let i = self.stack.partition_point(|&(s, _)| s <= seq);
        self.stack.get(i).map(|&(_, v)| v)
    }

    /// Drop what no query after `seq` needs (memory only).
    fn forget_up_to(&mut self, seq: u64) {
        let i = self.stack.partition_point(|&(s, _)| s <= seq);
        if 2 * i > self.stack.len() {
            self.stack.drain(..i);
        }
    }
}

/// Where the plan on counts has grown, for compression (counts only). A reservation
/// searched for at some moment had no earlier start then: it was made, or compressed, at
/// the earliest. Outside it, the plan has since grown only over `[now, expected end)` of a
/// job that ended (early), over the window a reservation left (moved or re-made), or
/// anywhere after a change this log does not follow (a job past its limit, a reservation
/// shifted, running changes unknown, nodes appearing); everywhere else it only shrank
/// (new reservations, time passing). An earlier start now needs a window that meets some
/// growth, and where the plan did not grow a window that did not fit still does not: the
/// search looks only at the starts whose window meets growth, most of a congested queue
/// looks at none, and the answer is the full search's.
#[derive(Clone, Debug, Default)]
struct Growth {
    seq: u64,
    /// The end of each `[now, end)` growth (jobs ended; `i64::MAX`: everywhere).
    ended: SuffixMax,
    /// Left windows: the start (negated: the least) and the end.
    left_start: SuffixMax,
    left_end: SuffixMax,
}

impl Growth {
    fn ended(&mut self, end: i64) {
        self.seq += 1;
        self.ended.push(self.seq, end);
    }

    fn everywhere(&mut self) {
        self.ended(i64::MAX);
    }

    fn left(&mut self, start: i64, end: i64) {
        self.seq += 1;
        self.left_start.push(self.seq, -start);
        self.left_end.push(self.seq, end);
    }

    /// Starts in `[now, limit]` whose window of `walltime_s` meets growth since `checked`:
    /// at most two ranges, ascending and disjoint.
    fn candidates(&self, checked: u64, now: i64, walltime_s: i64, limit: i64) -> Vec<(i64, i64)> {
        let mut ranges: Vec<(i64, i64)> = Vec::with_capacity(2);
        if let Some(end) = self.ended.after(checked) {
            ranges.push((now, end.saturating_sub(1).min(limit)));
        }
        if let (Some(neg_start), Some(end)) = (self.left_start.after(checked), self.left_end.after(checked)) {
            // a window [s, s + max(walltime, 1)) meets [start, end) iff start - max(walltime, 1) < s < end
            let from = (-neg_start).saturating_sub(walltime_s.max(1)).saturating_add(1).max(now);
            ranges.push((from, end.saturating_sub(1).min(limit)));
        }
        ranges.retain(|r| r.0 <= r.1);
        // the first starts at `now`, the second no earlier: one range if they meet
        if let [a, b] = ranges[..] {
            if b.0 <= a.1.saturating_add(1) {
                ranges = vec![(a.0, a.1.max(b.1))];
            }
        }
        ranges
    }

    fn forget_up_to(&mut self, seq: u64) {
        self.ended.forget_up_to(seq);
        self.left_start.forget_up_to(seq);
        self.left_end.forget_up_to(seq);
    }
}

/// The nodes of the reservations whose window `[start, end)` overlaps a candidate window
/// `[t, window_end)`, for candidates ascending (`t` and `window_end` never decrease): a
/// reservation begins to overlap once its start falls before `window_end` and stops for
/// good once its end is at or before `t`, so each one is added and removed at most once
/// per search instead of every overlapping reservation being added at every candidate.
/// A node may lie in several overlapping reservations (disjoint in time from each other),
/// so each node keeps a count of them, excluded while it is not 0. The counts are
/// bit-sliced (plane `p` holds bit `p` of every node's count, a word per 64 nodes): adding
/// or removing a reservation is a few operations per word of its node set, not one per
/// node.
struct Overlap {
    spans: Vec<(i64, i64)>,
    /// Indices into `spans` by start, and by end, ascending; the next of each to reach.
    by_start: Vec<usize>,
    by_end: Vec<usize>,
    next_start: usize,
    next_end: usize,
    /// Per reservation: 0 not yet overlapping, 1 overlapping, 2 no longer (never again).
    phase: Vec<u8>,
    /// `planes[p][w]`: bit `p` of the counts of nodes `64 w ..`; as many planes as the
    /// largest count needs.
    planes: Vec<Vec<u64>>,
    /// Nodes whose count is not 0: the OR of the planes.
    excluded: NodeSet,
}

impl Overlap {
    fn new(n_nodes: usize, spans: impl Iterator<Item = (i64, i64)>) -> Overlap {
        let spans: Vec<(i64, i64)> = spans.collect();
        let mut by_start: Vec<usize> = (0..spans.len()).collect();
        by_start.sort_by_key(|&i| spans[i].0);
        let mut by_end: Vec<usize> = (0..spans.len()).collect();
        by_end.sort_by_key(|&i| spans[i].1);
        let phase = vec![0; spans.len()];
        Overlap { spans, by_start, by_end, next_start: 0, next_end: 0, phase, planes: Vec::new(), excluded: NodeSet::new(n_nodes) }
    }

    /// Move the window to `[t, window_end)`, no earlier than the last; `bits_of(i)` is
    /// reservation `i`'s node set (as many words as the machine's).
    fn advance<'a>(&mut self, t: i64, window_end: i64, bits_of: impl Fn(usize) -> &'a [u64]) {
        // ended first: a reservation ended by `t` never overlaps again, even if its start
        // is reached only now
        while let Some(&i) = self.by_end.get(self.next_end).filter(|&&i| self.spans[i].1 <= t) {
            self.next_end += 1;
            if self.phase[i] == 1 {
                self.remove(bits_of(i));
            }
            self.phase[i] = 2;
        }
        while let Some(&i) = self.by_start.get(self.next_start).filter(|&&i| self.spans[i].0 < window_end) {
            self.next_start += 1;
            if self.phase[i] == 0 {
                self.phase[i] = 1;
                self.add(bits_of(i));
            }
        }
    }

    /// Count +1 on every node of `bits`: a ripple carry through the planes, word by word.
    fn add(&mut self, bits: &[u64]) {
        let words = self.excluded.words().len();
        for (w, &b) in bits.iter().enumerate() {
            let mut carry = b;
            let mut p = 0;
            while carry != 0 {
                if p == self.planes.len() {
                    self.planes.push(vec![0; words]);
                }
                let plane = &mut self.planes[p][w];
                let next = *plane & carry;
                *plane ^= carry;
                carry = next;
                p += 1;
            }
            self.excluded.words_mut()[w] |= b;
        }
    }

    /// Count -1 on every node of `bits` (each counted at least once): a ripple borrow.
    fn remove(&mut self, bits: &[u64]) {
        for (w, &b) in bits.iter().enumerate() {
            if b == 0 {
                continue;
            }
            let mut borrow = b;
            let mut p = 0;
            while borrow != 0 {
                let plane = &mut self.planes[p][w];
                let next = !*plane & borrow;
                *plane ^= borrow;
                borrow = next;
                p += 1;
            }
            self.excluded.words_mut()[w] = self.planes.iter().fold(0, |any, plane| any | plane[w]);
        }
    }

    fn overlaps(&self, i: usize) -> bool {
        self.phase[i] == 1
    }

    fn excluded(&self) -> &NodeSet {
        &self.excluded
    }
}

pub static POLICY: QueueEntry = QueueEntry {
    name: "conservative",
    summary: "conservative backfilling: every queued job holds a reservation no later job may delay",
    options: schema_of::<NoOptions>,
    build: |o| {
        parse_options::<NoOptions>("conservative", o)?;
        Ok(Box::new(Conservative::new()))
    },
};

/// A pass's [`Planner`], sorted and built at its first use: a pass that makes and moves no
/// reservation (a wake-up that only starts jobs) needs none, and building it (a sort of
/// every running job and reservation) was most of such a pass. Its inputs are taken at the
/// pass start, so it is the same planner whenever it is built.
struct LazyPlan {
    now: i64,
    free_now: i64,
    /// Nodes held by running jobs.
    busy: i64,
    changes: Vec<(i64, i64)>,
    plan: Option<Planner>,
}

impl LazyPlan {
    fn get(&mut self) -> &mut Planner {
        self.plan.get_or_insert_with(|| Planner::new(self.now, self.free_now, &mut self.changes))
    }
}

#[derive(Clone, Debug, Default)]
pub struct Conservative {
    /// Indexed by job row, from the oldest queued row (rows before it never queue again)
    /// to the last row: bounded by the queue's span, not the log.
    reservations: RowVec<Option<Reservation>>,
    ended_seen: u64,
    /// Counts only: where the plan grew, and what it needs to know that.
    growth: Growth,
    running_changes: Vec<RunningChange>,
    /// Nodes free plus nodes held by running jobs at the last pass.
    capacity: Option<i64>,
    error: Option<String>,
}

impl Conservative {
    pub fn new() -> Conservative {
        Conservative::default()
    }

    /// Cover rows up to `n` and forget those before the oldest queued row.
    fn window(&mut self, n: usize, queue: &[u32]) {
        while self.reservations.len() < n {
            self.reservations.push(None);
        }
        let oldest = queue.iter().min().map_or(n, |&q| q as usize);
        // in bulk, once the rows to forget are as many as those kept: dropping moves the
        // kept ones, so this costs O(1) a row, not O(window) a pass
        if oldest - self.reservations.first_row() >= n - oldest {
            self.reservations.drop_before(oldest);
        }
    }

    /// The free node counts over time this pass starts from: running jobs end at their
    /// expected end (a job past its limit, possible only with run-on, within a second),
    /// every queued job's reservation holds its nodes over its window.
    fn planner(&self, ctx: &PassCtx) -> LazyPlan {
        let now = ctx.now();
        let mut changes: Vec<(i64, i64)> = Vec::with_capacity(ctx.running().len() + 2 * ctx.queue().len());
        let mut busy = 0;
        for &(expected_end, r) in ctx.running() {
            changes.push((expected_end.max(now + 1), ctx.jobs[r as usize].nodes as i64));
            busy += ctx.jobs[r as usize].nodes as i64;
        }
        for &q in ctx.queue() {
            if let Some(res) = &self.reservations[q as usize] {
                let n = ctx.jobs[q as usize].nodes as i64;
                changes.push((res.start, -n));
                changes.push((res.end, n));
            }
        }
        LazyPlan { now, free_now: ctx.n_free() as i64, busy, changes, plan: None }
    }

    /// Counts: the earliest start in `ranges` (`[from, limit]` each, ascending) for `job`,
    /// with its current reservation (`held`) taken out of `plan` for the search. The chosen
    /// window (the new one, or `held` when none is found) is put (back) into `plan`.
    fn reserve_in_plan(plan: &mut Planner, ctx: &PassCtx, job: u32, held: Option<&Reservation>, ranges: &[(i64, i64)]) -> Option<Reservation> {
        let spec = ctx.jobs[job as usize];
        let n = spec.nodes as i64;
        let limit = ranges.last()?.1;
        let start = match held {
            // Compression (`limit` before `held`'s start): a window starting before `held`
            // ends inside it, where taking `held` out leaves `n` free or more as long as the
            // plan has no step below 0 there, which holds unless a job runs past its limit
            // (--run-on). Then the search cuts each window at `held`'s start and needs no
            // change to the plan: most reservations of a congested queue do not move, and
            // need not be taken out and put back (two walks over their window) to learn it.
            Some(h) if limit < h.start && (h.end == h.start || plan.min_over(h.start, h.end) >= 0) => {
                let start = ranges.iter().find_map(|&(from, upto)| plan.earliest_capped(n, spec.walltime_s, from, upto, h.start))?;
                plan.add(h.start, h.end - h.start, n);
                start
            }
            _ => {
                if let Some(h) = held {
                    plan.add(h.start, h.end - h.start, n);
                }
                match ranges.iter().find_map(|&(from, upto)| plan.earliest(n, spec.walltime_s, from, upto)) {
                    Some(start) => start,
                    None => {
                        if let Some(h) = held {
                            plan.add(h.start, h.end - h.start, -n);
                        }
                        return None;
                    }
                }
            }
        };
        plan.add(start, spec.walltime_s, -n);
        Some(Reservation { start, end: start + spec.walltime_s, nodes: Vec::new(), bits: NodeSet::default(), class: SpanClass::Leaf, drifting: false, woken: false, checked: 0 })
    }

    /// Earliest start in `[now, limit]` for `job` as a node set, ignoring its own reservation.
    fn earliest_nodes(&self, ctx: &mut PassCtx, job: u32, limit: i64) -> Option<(i64, Vec<u32>)> {
        let now = ctx.now();
        let topo = ctx.topo;
        let spec = ctx.jobs[job as usize];
        let others: Vec<&Reservation> =
            ctx.queue().iter().filter(|&&q| q != job).filter_map(|&q| self.reservations[q as usize].as_ref()).collect();
        let mut candidates: Vec<i64> = vec![now];
        candidates.extend(ctx.running().iter().map(|&(e, _)| e.max(now + 1)));
        candidates.extend(others.iter().map(|r| r.end.max(now)));
        // a policy that declines free nodes until it has held the job back long enough
        let patience_s = ctx.alloc.patience_s();
        candidates.extend(ctx.split().0.patience_ends(job, patience_s).map(|t| t.max(now)));
        candidates.retain(|&t| t <= limit);
        candidates.sort_unstable();
        candidates.dedup();
        // the machine at each candidate: running jobs end at their expected end (a job
        // past its limit within a second)
        let (core, alloc) = ctx.split();
        let ends = core.running().iter().map(|&(expected_end, r)| (expected_end.max(now + 1), r));
        let release = |state: &mut ClusterState, r: u32| state.release(topo, r, core.nodes_of(r), core.class_of(r));
        let mut projection = Projection::new(core.state().clone(), ends, release);
        // the nodes of the reservations overlapping each candidate window, kept as the
        // window moves right (candidates ascend) rather than rebuilt per candidate: that
        // rebuild was half of a congested isolated replay
        let mut overlap = Overlap::new(topo.n_nodes(), others.iter().map(|r| (r.start, r.end)));
        let (mut found, mut declined_now) = (None, false);
        for t in candidates {
            projection.advance_to(t);
            let projected = projection.state();
            if spec.nodes > projected.n_free() {
                continue;
            }
            overlap.advance(t, t + spec.walltime_s, |i| others[i].bits.words());
            let excluded = overlap.excluded();
            // Free nodes outside the overlapping reservations: no policy places the job on
            // fewer (it may take only free nodes the guard does not exclude), so the
            // allocation policy is not asked (most candidates of a congested queue).
            let unreserved = projected.free_set().count_range_minus(0..topo.n_nodes() as u32, excluded);
            if unreserved < spec.nodes {
                continue;
            }
            let overlapping: Vec<Reserved> = others
                .iter()
                .enumerate()
                .filter(|&(i, _)| overlap.overlaps(i))
                .map(|(_, r)| Reserved { nodes: &r.nodes, class: r.class, stamp: 0 })
                .collect();
            // at `now` the projection is the machine itself; later instants are planned
            let guard = Guard { excluded: Some(excluded), reserved: &overlapping, held_back_s: core.held_back_s(job, t), projected: t > now };
            if alloc.feasible(topo, projected, spec.nodes, &guard) {
                if let Some(nodes) = alloc.select(topo, projected, spec.nodes, &guard) {
                    found = Some((t, nodes));
                    break;
                }
            }
            // declined now though enough nodes outside the reservations were free
            declined_now |= t == now && patience_s.is_some();
        }
        if declined_now {
            ctx.note_declined(job);
        }
        found
    }

    /// Make (or re-make, in `ranges`) the reservation of `job`: on counts in `plan`
    /// (fungible policies), else as a node set (`ranges` is then `[now, limit]`).
    fn reserve(&mut self, plan: Option<&mut Planner>, ctx: &mut PassCtx, job: u32, held: Option<&Reservation>, ranges: &[(i64, i64)]) -> Option<Reservation> {
        let walltime = ctx.jobs[job as usize].walltime_s;
        let mut r = match plan {
            Some(plan) => {
                let mut r = Self::reserve_in_plan(plan, ctx, job, held, ranges)?;
                r.checked = self.growth.seq;
                r
            }
            None => {
                let limit = ranges.last()?.1;
                let (start, mut nodes) = self.earliest_nodes(ctx, job, limit)?;
                nodes.sort_unstable();
                let class = ctx.topo.span_class(&nodes);
                let mut bits = NodeSet::new(ctx.topo.n_nodes());
                nodes.iter().for_each(|&n| bits.insert(n));
                Reservation { start, end: start + walltime, nodes, bits, class, drifting: false, woken: false, checked: 0 }
            }
        };
        r.drifting = self.rests_on_overrun(ctx, job, r.start);
        Some(r)
    }

    /// Log where the plan grew since the last pass (counts only): over `[now, expected
    /// end)` of each job that ended, or everywhere after what the log does not follow.
    fn note_growth(&mut self, ctx: &mut PassCtx, plan: &LazyPlan, shifted: bool) {
        let now = ctx.now();
        let known = ctx.take_running_changes(&mut self.running_changes);
        for c in self.running_changes.iter().filter(|c| !c.started) {
            self.growth.ended(c.expected_end.max(now + 1));
        }
        let capacity = plan.free_now + plan.busy;
        if !known || shifted || Self::overrun(ctx) || self.capacity != Some(capacity) {
            self.growth.everywhere();
        }
        self.capacity = Some(capacity);
    }

    /// Some running job is past its limit (only with --run-on).
    fn overrun(ctx: &PassCtx) -> bool {
        ctx.running().first().is_some_and(|&(expected_end, _)| expected_end <= ctx.now())
    }

    /// True when `start` comes from the `now + 1` assumed for a job past its limit, or
    /// from the end of a reservation that does (only with --run-on).
    fn rests_on_overrun(&self, ctx: &PassCtx, job: u32, start: i64) -> bool {
        let now = ctx.now();
        Self::overrun(ctx)
            && (start == now + 1
                || ctx.queue().iter().any(|&q| {
                    q != job && self.reservations[q as usize].as_ref().is_some_and(|r| r.drifting && r.end == start)
                }))
    }
}

impl QueuePolicy for Conservative {
    fn name(&self) -> String {
        "conservative".into()
    }

    fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }

    fn pass(&mut self, ctx: &mut PassCtx) {
        let now = ctx.now();
        let queue = ctx.queue().to_vec();
        self.window(ctx.jobs.len(), &queue);
        let position = |q: u32| queue.iter().position(|&x| x == q).unwrap_or(usize::MAX);
        // A reservation left in the past (only with --run-on: its start was blocked by a
        // job past its limit, and no pass ran each second meanwhile, see step 4) is due
        // now, for the same length: what a pass every second would have made of it.
        // Shifted reservations made for windows that did not overlap may overlap now: their
        // node sets were never checked against each other at `now` (step 3 checks them).
        let mut shifted_rows: Vec<u32> = Vec::new();
        for &q in &queue {
            if let Some(r) = self.reservations[q as usize].as_mut().filter(|r| r.start < now) {
                r.end = now + (r.end - r.start);
                r.start = now;
                r.woken = false;
                shifted_rows.push(q);
            }
        }
        let shifted = !shifted_rows.is_empty();
        // built after the shift above: it projects the reservations as they now stand
        let mut plan = if ctx.alloc.fungible() { Some(self.planner(ctx)) } else { None };
        if let Some(p) = &plan {
            self.note_growth(ctx, p, shifted);
        }
        // 2. compression after ends
        if ctx.ended() != self.ended_seen {
            self.ended_seen = ctx.ended();
            let mut order: Vec<(i64, usize, u32)> = queue
                .iter()
                .enumerate()
                .filter_map(|(i, &q)| self.reservations[q as usize].as_ref().map(|r| (r.start, i, q)))
                .collect();
            order.sort_unstable();
            for (start, _, q) in order {
                if start <= now {
                    continue;
                }
                let held = self.reservations[q as usize].clone().expect("ordered jobs have a reservation");
                // counts: only starts whose window meets growth since its last search
                let ranges = match plan {
                    Some(_) => self.growth.candidates(held.checked, now, held.end - held.start, start - 1),
                    None => vec![(now, start - 1)],
                };
                match self.reserve(plan.as_mut().map(LazyPlan::get), ctx, q, Some(&held), &ranges) {
                    Some(mut better) => {
                        if plan.is_some() {
                            // the window it left is growth for the others, not for itself
                            self.growth.left(held.start, held.end);
                            better.checked = self.growth.seq;
                        }
                        ctx.log_reservation(now, q, better.start);
                        self.reservations[q as usize] = Some(better);
                    }
                    None => {
                        let seq = self.growth.seq;
                        self.reservations[q as usize].as_mut().expect("ordered jobs have a reservation").checked = seq;
                    }
                }
            }
            // what no reservation's next search asks for
            if let Some(oldest) = queue.iter().filter_map(|&q| self.reservations[q as usize].as_ref().map(|r| r.checked)).min() {
                self.growth.forget_up_to(oldest);
            }
        }
        // 1. new jobs, in queue order
        for &q in &queue {
            if self.reservations[q as usize].is_none() {
                match self.reserve(plan.as_mut().map(LazyPlan::get), ctx, q, None, &[(now, i64::MAX)]) {
                    Some(r) => {
                        ctx.log_reservation(now, q, r.start);
                        self.reservations[q as usize] = Some(r);
                    }
                    // Cannot happen for a job that passed the submit check (with every
                    // running job and reservation gone the machine is empty), unless an
                    // allocation policy placed nothing on an empty machine: stop the run.
                    None => {
                        self.error.get_or_insert_with(|| {
                            format!(
                                "conservative: no start time found for job row {q} ({} nodes) even on an empty machine: \
                                 the allocation policy {} never places it; its fits_ever check should refuse such jobs",
                                ctx.jobs[q as usize].nodes,
                                ctx.alloc.name()
                            )
                        });
                        return;
                    }
                }
            }
        }
        // 3. starts
        let mut due: Vec<(i64, usize, u32)> = queue
            .iter()
            .filter_map(|&q| self.reservations[q as usize].as_ref().filter(|r| r.start <= now).map(|r| (r.start, position(q), q)))
            .collect();
        due.sort_unstable();
        let mut started = Vec::with_capacity(due.len());
        for (_, _, q) in due {
            let res = self.reservations[q as usize].take().expect("due job has a reservation");
            let ok = if ctx.alloc.fungible() {
                ctx.try_start(q, &Guard::NONE)
            } else if Self::overrun(ctx) || shifted_rows.contains(&q) {
                // With --run-on a job past its limit may still run beside the reserved
                // nodes, where the reservation assumed it gone: what the allocation policy
                // forbids around it (isolated: a second spanning job on its leaf or pod)
                // may now refuse them. So may a job started just before from another
                // shifted reservation: the two sets were made for windows apart and now
                // start together (two spanning jobs on one leaf). The policy is asked to
                // place the job on exactly the reserved nodes; if it cannot, the job is
                // re-reserved (below).
                let mut outside = NodeSet::new(ctx.topo.n_nodes());
                (0..ctx.topo.n_nodes() as u32).for_each(|n| outside.insert(n));
                res.nodes.iter().for_each(|&n| outside.remove(n));
                ctx.try_start(q, &Guard { excluded: Some(&outside), ..Guard::NONE })
            } else {
                ctx.try_start_on(q, &res.nodes)
            };
            if ok {
                started.push(q);
            } else if ctx.ends_pending_now() {
                // Per-event order: jobs ending at this very instant still hold their nodes
                // (each end is released with a pass of its own). The reservation stands,
                // due: the pass after those ends starts it, as the per-instant order's one
                // pass would have. Re-reserving it here put it behind later jobs, which
                // then took its place (a start past the reservation it got at submission).
                self.reservations[q as usize] = Some(res);
            } else {
                // Only with --run-on (a job past its limit still holds nodes it was
                // expected to free; such jobs are assumed to end within a second), or when
                // the job's --switches limit refuses the reserved nodes for now.
                let mut again = self.reserve(plan.as_mut().map(LazyPlan::get), ctx, q, Some(&res), &[(now, i64::MAX)]).expect("an empty machine fits every queued job");
                if plan.is_some() {
                    self.growth.left(res.start, res.end);
                    again.checked = self.growth.seq;
                }
                // its new start rests on the job past its limit (which blocked this one)
                again.drifting |= Self::overrun(ctx);
                ctx.log_reservation(now, q, again.start);
                self.reservations[q as usize] = Some(again);
            }
        }
        ctx.queue_mut().retain(|q| !started.contains(q));
        // 4. wake at every reservation start. With --run-on, a job past its limit is
        // assumed to end at `now + 1`, so the reservations it blocks sit at `now + 1` or
        // after one another from there: they drift. Waking at them would re-run the pass
        // every few seconds of the overrun (10^8 passes for a 10^9 s overrun); the job's
        // real end is an event of its own and brings the pass that can start them.
        // Only reservations not yet woken for: the others' starts are still in the engine's
        // wake-ups (see `Reservation::woken`).
        let mut starts: Vec<i64> = Vec::new();
        for &q in ctx.queue() {
            if let Some(r) = self.reservations[q as usize].as_mut().filter(|r| !r.drifting && !r.woken) {
                r.woken = true;
                starts.push(r.start);
            }
        }
        for s in starts {
            ctx.wake_at(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;
    use proptest::prelude::*;

    /// The reference: what the search did per candidate before [`Overlap`], rebuilt from
    /// scratch: every reservation overlapping `[t, t + walltime)`, and their nodes.
    fn rebuilt(n_nodes: usize, res: &[(i64, i64, Vec<u32>)], t: i64, walltime_s: i64) -> (NodeSet, Vec<usize>) {
        let mut excluded = NodeSet::new(n_nodes);
        let window_end = t + walltime_s;
        let overlapping: Vec<usize> = (0..res.len()).filter(|&i| res[i].0 < window_end && res[i].1 > t).collect();
        for &i in &overlapping {
            res[i].2.iter().for_each(|&n| excluded.insert(n));
        }
        (excluded, overlapping)
    }

    fn bits_of(n_nodes: usize, nodes: &[u32]) -> NodeSet {
        let mut s = NodeSet::new(n_nodes);
        nodes.iter().for_each(|&n| s.insert(n));
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        /// Congested: many reservations, dense node sets on few nodes (counts up to the
        /// number of reservations, several planes), windows of 0 s and up, candidates
        /// ascending with gaps (the search skips those the free count rules out).
        #[test]
        fn overlap_is_the_per_candidate_rebuild(
            n_nodes in 1usize..200,
            raw in prop::collection::vec((0i64..60, 0i64..30, prop::collection::vec(any::<u32>(), 0..80)), 0..30),
            walltime_s in 0i64..25,
            mut candidates in prop::collection::vec(0i64..100, 1..40),
        ) {
            let res: Vec<(i64, i64, Vec<u32>)> = raw
                .into_iter()
                .map(|(start, len, picks)| {
                    let mut nodes: Vec<u32> = picks.into_iter().map(|p| p % n_nodes as u32).collect();
                    nodes.sort_unstable();
                    nodes.dedup();
                    (start, start + len, nodes)
                })
                .collect();
            let bits: Vec<NodeSet> = res.iter().map(|r| bits_of(n_nodes, &r.2)).collect();
            candidates.sort_unstable();
            candidates.dedup();
            let mut overlap = Overlap::new(n_nodes, res.iter().map(|r| (r.0, r.1)));
            for t in candidates {
                overlap.advance(t, t + walltime_s, |i| bits[i].words());
                let (excluded, overlapping) = rebuilt(n_nodes, &res, t, walltime_s);
                prop_assert_eq!(overlap.excluded(), &excluded, "excluded nodes at t = {}", t);
                let got: Vec<usize> = (0..res.len()).filter(|&i| overlap.overlaps(i)).collect();
                prop_assert_eq!(got, overlapping, "overlapping reservations at t = {}", t);
            }
        }

        /// The search skips a candidate when fewer free nodes lie outside the overlapping
        /// reservations than the job needs: no non-fungible policy places it there.
        #[test]
        fn too_few_unreserved_nodes_never_place(
            pods in prop::collection::vec(prop::collection::vec(1u32..6, 1..4), 1..4),
            policy in prop::sample::select(vec!["isolated", "capped", "jigsaw"]),
            sizes in prop::collection::vec(1u32..12, 0..12),
            excluded_picks in prop::collection::vec(any::<u32>(), 0..40),
            reserved_picks in prop::collection::vec(any::<u32>(), 0..20),
            want in 1u32..20,
        ) {
            let topo = Topology::from_leaf_sizes("t", 3, &pods, None, None, None, None).unwrap();
            let n = topo.n_nodes() as u32;
            let mut alloc = crate::alloc::by_name(policy, &Default::default()).unwrap();
            let mut state = crate::alloc::new_state(alloc.as_ref(), &topo, &[]);
            for (job, &size) in sizes.iter().enumerate() {
                if let Some(mut nodes) = alloc.select(&topo, &state, size, &Guard::NONE) {
                    nodes.sort_unstable();
                    state.allocate(&topo, job as u32, &nodes, topo.span_class(&nodes));
                }
            }
            let excluded = bits_of(n as usize, &excluded_picks.iter().map(|p| p % n).collect::<Vec<_>>());
            let mut reserved_nodes: Vec<u32> = reserved_picks.iter().map(|p| p % n).filter(|&x| excluded.contains(x)).collect();
            reserved_nodes.sort_unstable();
            reserved_nodes.dedup();
            let reserved = [Reserved { nodes: &reserved_nodes, class: topo.span_class(&reserved_nodes), stamp: 0 }];
            let guard = Guard { excluded: Some(&excluded), reserved: if reserved_nodes.is_empty() { &[] } else { &reserved }, held_back_s: 0, projected: true };
            let unreserved = state.free_set().count_range_minus(0..n, &excluded);
            if unreserved < want {
                prop_assert!(!alloc.feasible(&topo, &state, want, &guard));
                prop_assert!(alloc.select(&topo, &state, want, &guard).is_none());
            }
        }
    }
}

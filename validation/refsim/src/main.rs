//! refsim: an independent reference scheduler for validating toposched on whole logs.
//!
//! It shares no code with toposched-core and is written the way the pyss simulator is:
//! the machine's future is a *profile* (free nodes as a step function of time, from the
//! running jobs' expected ends and the reservations), and a job "fits" when the profile
//! has room for it over its whole requested time. toposched's engine instead counts a
//! shadow time and extra nodes (EASY) and folds sorted deltas (conservative); the two
//! must agree job by job.
//!
//! Input (stdin): a line `total_nodes`, then one line per job in replay order:
//! `submit_s nodes walltime_s runtime_s`. Output (stdout): the start time of every job,
//! one per line (-1: larger than the machine, never run). Jobs are killed at their
//! requested time.
//!
//! Usage: `refsim fcfs|easy|conservative [--per-event]`
//!   default event order: at each instant all ends, then all submits, then one pass;
//!   --per-event (pyss): a pass after each submit, then after each end in start order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, BufRead, BufWriter, Write};

#[derive(Clone, Copy)]
struct Job {
    submit: i64,
    nodes: i64,
    wall: i64,
    run: i64,
}

/// Free nodes over time from `times[0]` on: `free[i]` holds on `[times[i], times[i+1])`,
/// the last value forever.
struct Profile {
    times: Vec<i64>,
    free: Vec<i64>,
}

impl Profile {
    /// `changes`: (time, nodes freed (+) or taken (-)) at that time; a change at or
    /// before `now` counts from now on.
    fn build(now: i64, free_now: i64, mut changes: Vec<(i64, i64)>) -> Profile {
        changes.sort_unstable();
        let mut p = Profile { times: vec![now], free: vec![free_now] };
        for (t, d) in changes {
            if t <= now || *p.times.last().unwrap() == t {
                *p.free.last_mut().unwrap() += d;
            } else {
                let f = *p.free.last().unwrap() + d;
                p.times.push(t);
                p.free.push(f);
            }
        }
        p
    }

    /// Index of a breakpoint at `t` (inserted if needed; `t >= times[0]`).
    fn split(&mut self, t: i64) -> usize {
        match self.times.binary_search(&t) {
            Ok(i) => i,
            Err(i) => {
                let f = self.free[i - 1];
                self.times.insert(i, t);
                self.free.insert(i, f);
                i
            }
        }
    }

    fn add(&mut self, start: i64, dur: i64, delta: i64) {
        if dur <= 0 {
            return;
        }
        let a = self.split(start);
        let b = self.split(start + dur);
        for f in &mut self.free[a..b] {
            *f += delta;
        }
    }

    /// `m[i]` = the least free count over slices `0..=i`.
    fn prefix_min(&self) -> Vec<i64> {
        let mut m = Vec::with_capacity(self.free.len());
        let mut low = i64::MAX;
        for &f in &self.free {
            low = low.min(f);
            m.push(low);
        }
        m
    }

    /// The least free count over `[times[0], end)` (`end > times[0]`).
    fn min_from_start(&self, prefix_min: &[i64], end: i64) -> i64 {
        // slices starting before `end`: at least the first
        let n = self.times.partition_point(|&t| t < end);
        prefix_min[n.max(1) - 1]
    }

    /// Earliest `s >= from` with at least `nodes` free during all of `[s, s + dur)` (at
    /// instant `s` itself when `dur` is 0).
    fn earliest(&self, nodes: i64, dur: i64, from: i64) -> Option<i64> {
        let len = self.times.len();
        // the slice holding `from`
        let mut i = match self.times.binary_search(&from) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        while i < len {
            let s = self.times[i].max(from);
            let end = s + dur.max(1);
            let mut j = i;
            let mut ok = true;
            while j < len && self.times[j] < end {
                if self.free[j] < nodes {
                    ok = false;
                    break;
                }
                j += 1;
            }
            if ok {
                return Some(s);
            }
            i = j + 1;
        }
        None
    }
}

struct Sim {
    jobs: Vec<Job>,
    total: i64,
    per_event: bool,
    queue_kind: String,
    now: i64,
    free: i64,
    start: Vec<i64>,
    /// (end, start sequence, row)
    ends: BinaryHeap<Reverse<(i64, u64, usize)>>,
    running: Vec<usize>,
    queue: Vec<usize>,
    reservation: Vec<Option<i64>>,
    starts: u64,
    ended: u64,
    ended_at_last_pass: u64,
}

impl Sim {
    fn begin(&mut self, r: usize) {
        let j = self.jobs[r];
        assert!(j.nodes <= self.free, "job row {r} started on {} nodes with {} free", j.nodes, self.free);
        self.start[r] = self.now;
        self.free -= j.nodes;
        self.starts += 1;
        self.ends.push(Reverse((self.now + j.run.min(j.wall), if self.per_event { self.starts } else { 0 }, r)));
        self.running.push(r);
    }

    fn end(&mut self, r: usize) {
        self.free += self.jobs[r].nodes;
        let k = self.running.iter().position(|&x| x == r).unwrap();
        self.running.swap_remove(k);
        self.ended += 1;
    }

    /// The profile of the running jobs' expected ends (start + requested time). In the
    /// per-event order a job ending now may not have released its nodes yet: it is free
    /// from now on in the profile, though not in `free`.
    fn running_profile(&self) -> Profile {
        let changes = self.running.iter().map(|&r| (self.start[r] + self.jobs[r].wall, self.jobs[r].nodes)).collect();
        Profile::build(self.now, self.free, changes)
    }

    fn pass(&mut self) {
        if self.queue.is_empty() {
            return;
        }
        match self.queue_kind.as_str() {
            "fcfs" => self.fcfs(),
            "easy" => self.easy(),
            _ => self.conservative(),
        }
        self.ended_at_last_pass = self.ended;
    }

    /// Start jobs in queue order while the first one fits.
    fn fcfs(&mut self) {
        while let Some(&r) = self.queue.first() {
            if self.jobs[r].nodes > self.free {
                break;
            }
            self.queue.remove(0);
            self.begin(r);
        }
    }

    /// pyss's EASY: FCFS, then the first waiting job is assigned its earliest slot in the
    /// profile, and every later job that fits in the profile from now on starts now.
    fn easy(&mut self) {
        self.fcfs();
        if self.queue.len() < 2 {
            return;
        }
        // nothing to backfill when no waiting job fits in the free nodes (saves the profile)
        if !self.queue[1..].iter().any(|&r| self.jobs[r].nodes <= self.free) {
            return;
        }
        let mut prof = self.running_profile();
        let head = self.jobs[self.queue[0]];
        let at = prof.earliest(head.nodes, head.wall, self.now).expect("the head fits an empty machine");
        prof.add(at, head.wall, -head.nodes);
        // A job fits from now on iff the profile's minimum over [now, now + wall) holds it:
        // prefix minima answer that by a binary search, rebuilt after each start.
        let mut pmin = prof.prefix_min();
        let mut k = 1;
        while k < self.queue.len() && self.free > 0 {
            let r = self.queue[k];
            let j = self.jobs[r];
            if j.nodes <= self.free && prof.min_from_start(&pmin, self.now + j.wall.max(1)) >= j.nodes {
                debug_assert_eq!(prof.earliest(j.nodes, j.wall, self.now), Some(self.now));
                prof.add(self.now, j.wall, -j.nodes);
                pmin = prof.prefix_min();
                self.queue.remove(k);
                self.begin(r);
            } else {
                k += 1;
            }
        }
    }

    /// Conservative backfilling with the rules of docs/semantics.md, on a profile of the
    /// running jobs and every reservation.
    fn conservative(&mut self) {
        let now = self.now;
        // a running job expected to end by now (its end not handled yet) is taken to end
        // within a second, as the engine's rule for jobs past their limit says
        let mut changes: Vec<(i64, i64)> =
            self.running.iter().map(|&r| ((self.start[r] + self.jobs[r].wall).max(now + 1), self.jobs[r].nodes)).collect();
        for &q in &self.queue {
            if let Some(s) = self.reservation[q] {
                let j = self.jobs[q];
                if j.wall > 0 {
                    if s > now {
                        changes.push((s, -j.nodes));
                    }
                    changes.push((s + j.wall, j.nodes));
                }
            }
        }
        // reservations starting now hold their nodes from now
        let due_now: i64 = self.queue.iter().filter(|&&q| self.reservation[q].is_some_and(|s| s <= now) && self.jobs[q].wall > 0).map(|&q| self.jobs[q].nodes).sum();
        let mut prof = Profile::build(now, self.free - due_now, changes);
        if self.ended != self.ended_at_last_pass {
            let mut order: Vec<(i64, usize, usize)> =
                self.queue.iter().enumerate().filter_map(|(i, &q)| self.reservation[q].map(|s| (s, i, q))).collect();
            order.sort_unstable();
            for (s, _, q) in order {
                if s <= now {
                    continue;
                }
                let j = self.jobs[q];
                prof.add(s, j.wall, j.nodes);
                let better = prof.earliest(j.nodes, j.wall, now).expect("its own slot is free");
                let chosen = better.min(s);
                prof.add(chosen, j.wall, -j.nodes);
                self.reservation[q] = Some(chosen);
            }
        }
        for k in 0..self.queue.len() {
            let q = self.queue[k];
            if self.reservation[q].is_none() {
                let j = self.jobs[q];
                let s = prof.earliest(j.nodes, j.wall, now).expect("an empty machine fits every job");
                prof.add(s, j.wall, -j.nodes);
                self.reservation[q] = Some(s);
            }
        }
        let mut due: Vec<(i64, usize, usize)> = self
            .queue
            .iter()
            .enumerate()
            .filter_map(|(i, &q)| self.reservation[q].filter(|&s| s <= now).map(|s| (s, i, q)))
            .collect();
        due.sort_unstable();
        for &(_, _, q) in &due {
            self.reservation[q] = None;
            self.begin(q);
        }
        let started: Vec<usize> = due.iter().map(|d| d.2).collect();
        self.queue.retain(|q| !started.contains(q));
    }

    fn next_time(&self, next_submit: usize) -> Option<i64> {
        let mut t = self.ends.peek().map(|e| e.0 .0);
        if let Some(j) = self.jobs.get(next_submit) {
            t = Some(t.map_or(j.submit, |x| x.min(j.submit)));
        }
        if self.queue_kind == "conservative" {
            for &q in &self.queue {
                if let Some(s) = self.reservation[q].filter(|&s| s > self.now) {
                    t = Some(t.map_or(s, |x| x.min(s)));
                }
            }
        }
        t
    }

    fn run(&mut self) {
        let mut next = 0;
        self.now = i64::MIN;
        while let Some(t) = self.next_time(next) {
            self.now = t;
            if self.per_event {
                let mut events = 0;
                while next < self.jobs.len() && self.jobs[next].submit == t {
                    if self.jobs[next].nodes <= self.total {
                        self.queue.push(next);
                    }
                    next += 1;
                    self.pass();
                    events += 1;
                }
                while self.ends.peek().is_some_and(|e| e.0 .0 == t) {
                    let Reverse((_, _, r)) = self.ends.pop().unwrap();
                    self.end(r);
                    self.pass();
                    events += 1;
                }
                if events == 0 {
                    self.pass();
                }
            } else {
                while self.ends.peek().is_some_and(|e| e.0 .0 == t) {
                    let Reverse((_, _, r)) = self.ends.pop().unwrap();
                    self.end(r);
                }
                while next < self.jobs.len() && self.jobs[next].submit == t {
                    if self.jobs[next].nodes <= self.total {
                        self.queue.push(next);
                    }
                    next += 1;
                }
                self.pass();
            }
        }
        assert!(self.queue.is_empty(), "jobs left in the queue at the end");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let queue_kind = args.first().cloned().unwrap_or_default();
    if !["fcfs", "easy", "conservative"].contains(&queue_kind.as_str()) || args.len() > 2 || (args.len() == 2 && args[1] != "--per-event") {
        eprintln!("usage: refsim fcfs|easy|conservative [--per-event] < jobs.txt > starts.txt");
        std::process::exit(2);
    }
    let stdin = io::stdin();
    let mut lines = stdin.lock().lines();
    let total: i64 = lines.next().expect("total_nodes line").unwrap().trim().parse().expect("total_nodes");
    let mut jobs = Vec::new();
    for line in lines {
        let line = line.unwrap();
        let v: Vec<i64> = line.split_whitespace().map(|x| x.parse().expect("integer field")).collect();
        assert_eq!(v.len(), 4, "expected: submit_s nodes walltime_s runtime_s");
        assert!(v[1] >= 1, "a job needs at least one node");
        jobs.push(Job { submit: v[0], nodes: v[1], wall: v[2], run: v[3] });
    }
    assert!(jobs.windows(2).all(|w| w[0].submit <= w[1].submit), "jobs must be in submit order");
    let n = jobs.len();
    let mut sim = Sim {
        jobs,
        total,
        per_event: args.len() == 2,
        queue_kind,
        now: 0,
        free: total,
        start: vec![-1; n],
        ends: BinaryHeap::new(),
        running: Vec::new(),
        queue: Vec::new(),
        reservation: vec![None; n],
        starts: 0,
        ended: 0,
        ended_at_last_pass: 0,
    };
    sim.run();
    let out = io::stdout();
    let mut w = BufWriter::new(out.lock());
    for s in &sim.start {
        writeln!(w, "{s}").unwrap();
    }
}

//! The machine's projected future, in one place for every queue policy that reserves
//! (flux-sched calls its equivalent the planner). Running jobs are assumed to end at their
//! expected end `start + walltime`; the policies differ only in where a job past its limit
//! (possible only with run-on) is assumed to end (EASY: now, its reservation is remade at
//! every pass; conservative: within a second, its reservations are binding), which they
//! pass in as `ends`' times.
//!
//! - [`shadow`]: EASY's reservation on counts (the free-node step function walked lazily,
//!   stopping at the first instant that frees enough nodes).
//! - [`Planner`]: the same step function built whole, with reservations added and taken
//!   out in place: conservative backfilling on counts. A search jumps from one step short
//!   of the job's nodes to the next and over blocks of steps that cannot stop it (at worst
//!   O(breakpoints) per query), and an update is O(breakpoints), instead of re-sorting
//!   every running job and reservation for every query.
//! - [`Projection`]: the node state as jobs end, for node-set reservations (EASY's and
//!   conservative's with a non-fungible allocation policy, the live placer's): a copy of
//!   the state on which running jobs are released instant by instant.

use crate::state::ClusterState;

/// EASY's reservation on counts: walking `ends` (expected ends ascending, each with the
/// nodes that job frees), the shadow time is the first instant at which the free nodes
/// reach `need` (`now` if they already do), and the extra nodes are *every* node free at
/// that instant beyond `need`: jobs ending at that same instant add to it too (stopping
/// at the first job that reaches the size undercounts ties). `None` if even every end
/// does not free enough.
pub fn shadow(now: i64, free_now: u32, need: u32, ends: impl IntoIterator<Item = (i64, u32)>) -> Option<(i64, u32)> {
    let mut avail = free_now;
    let mut shadow = now;
    let mut ends = ends.into_iter().peekable();
    while avail < need {
        let (end, freed) = ends.next()?;
        avail += freed;
        shadow = end.max(now);
    }
    while let Some((_, freed)) = ends.next_if(|&(end, _)| end.max(now) <= shadow) {
        avail += freed;
    }
    Some((shadow, avail - need))
}

/// The node state as running jobs end: a copy of the state on which `release` takes each
/// job of `ends` (expected ends ascending) off the machine when time reaches its end.
/// Jobs ending at one instant are released together, so a placement asked for at an
/// instant sees all of them gone.
pub struct Projection<J, I: Iterator<Item = (i64, J)>, R: FnMut(&mut ClusterState, J)> {
    state: ClusterState,
    ends: std::iter::Peekable<I>,
    release: R,
}

impl<J, I: Iterator<Item = (i64, J)>, R: FnMut(&mut ClusterState, J)> Projection<J, I, R> {
    pub fn new(state: ClusterState, ends: I, release: R) -> Self {
        Projection { state, ends: ends.peekable(), release }
    }

    /// The next instant at which jobs not yet released end.
    pub fn next_end(&mut self) -> Option<i64> {
        self.ends.peek().map(|&(t, _)| t)
    }

    /// Release every job expected to end at or before `t`.
    pub fn advance_to(&mut self, t: i64) {
        while let Some((_, job)) = self.ends.next_if(|&(end, _)| end <= t) {
            (self.release)(&mut self.state, job);
        }
    }

    /// The projected state (every job ending by the last `advance_to` released).
    pub fn state(&self) -> &ClusterState {
        &self.state
    }

    /// The projected state, kept (EASY updates it across passes: `crate::queue::easy`).
    pub fn into_state(self) -> ClusterState {
        self.state
    }

    /// EASY's reservation on node sets: advance end instant by end instant (and to
    /// `also_at` among them: an instant at which the answer may change though no job ends,
    /// e.g. a wait running out) and return the first instant at which `place` (told the
    /// instant) finds nodes on the projected state, with them.
    pub fn first_placement(
        &mut self,
        mut also_at: Option<i64>,
        mut place: impl FnMut(i64, &ClusterState) -> Option<Vec<u32>>,
    ) -> Option<(i64, Vec<u32>)> {
        loop {
            let t = match (self.next_end(), also_at) {
                (Some(end), Some(x)) if x <= end => also_at.take().expect("matched"),
                (Some(end), _) => end,
                (None, Some(_)) => also_at.take().expect("matched"),
                (None, None) => return None,
            };
            self.advance_to(t);
            if let Some(nodes) = place(t, &self.state) {
                return Some((t, nodes));
            }
        }
    }
}

/// Breakpoints per block of [`Planner`]'s summaries: a search skips a block whose least
/// (or most) free nodes rule it out, and looks inside at most two blocks a jump.
const BLOCK: usize = 32;

/// Free nodes from `times[0]` (`now`) on, a step function: `free[i]` holds on
/// `[times[i], times[i + 1])`, the last value for ever. Times are strictly increasing.
///
/// Conservative backfilling searches it for every queued job at every pass that re-plans,
/// on queues of thousands of reservations, so the breakpoints stay in flat, sorted vectors
/// (a search walks them in order, as the cache likes) with the least and most free nodes of
/// every block of [`BLOCK`] breakpoints beside them: a search jumps over the blocks that
/// cannot hold its answer instead of visiting every breakpoint.
#[derive(Clone, Debug)]
pub struct Planner {
    times: Vec<i64>,
    free: Vec<i64>,
    /// Least and most of `free` over block `k` = breakpoints `[k * BLOCK, (k + 1) * BLOCK)`.
    block_min: Vec<i64>,
    block_max: Vec<i64>,
}

impl Planner {
    /// `free_now` nodes free at `now`, then `changes` (time, nodes freed (+) or taken (-)).
    /// A change at or before `now` counts from `now` on. `changes` is sorted in place.
    pub fn new(now: i64, free_now: i64, changes: &mut [(i64, i64)]) -> Planner {
        changes.sort_unstable();
        let mut p = Planner {
            times: Vec::with_capacity(changes.len() + 1),
            free: Vec::with_capacity(changes.len() + 1),
            block_min: Vec::new(),
            block_max: Vec::new(),
        };
        p.times.push(now);
        p.free.push(free_now);
        for &(t, d) in changes.iter() {
            let last = p.times.len() - 1;
            if t <= now || p.times[last] == t {
                p.free[last] += d;
            } else {
                let f = p.free[last] + d;
                p.times.push(t);
                p.free.push(f);
            }
        }
        p.summarize_from(0);
        p
    }

    /// Recompute the block summaries from block `first` on (breakpoints moved or changed).
    fn summarize_from(&mut self, first: usize) {
        let blocks = self.free.len().div_ceil(BLOCK);
        self.block_min.resize(blocks, 0);
        self.block_max.resize(blocks, 0);
        for k in first..blocks {
            let b = &self.free[k * BLOCK..((k + 1) * BLOCK).min(self.free.len())];
            self.block_min[k] = b.iter().copied().min().expect("blocks are not empty");
            self.block_max[k] = b.iter().copied().max().expect("blocks are not empty");
        }
    }

    /// Index of the step holding instant `t` (0 for `t <= now`).
    fn index_at(&self, t: i64) -> usize {
        self.times.partition_point(|&x| x <= t).saturating_sub(1)
    }

    /// Free nodes at instant `t` (`t >= now`).
    pub fn free_at(&self, t: i64) -> i64 {
        self.free[self.index_at(t)]
    }

    /// Index of a breakpoint at `t`, inserted if needed (`t > now`), without the summaries:
    /// the caller recomputes them from the inserted index's block.
    fn split(&mut self, t: i64) -> (usize, bool) {
        match self.times.binary_search(&t) {
            Ok(i) => (i, false),
            Err(0) => (0, false),
            Err(i) => {
                let f = self.free[i - 1];
                self.times.insert(i, t);
                self.free.insert(i, f);
                (i, true)
            }
        }
    }

    /// Add `delta` free nodes over `[start, start + duration)` (negative: take them).
    /// Nothing for an empty interval; a start before `now` counts from `now`.
    pub fn add(&mut self, start: i64, duration_s: i64, delta: i64) {
        let end = start.saturating_add(duration_s);
        let start = start.max(self.times[0]);
        if end <= start {
            return;
        }
        let (a, inserted_a) = self.split(start);
        let (b, inserted_b) = self.split(end);
        for f in &mut self.free[a..b] {
            *f += delta;
        }
        if inserted_a || inserted_b {
            // every breakpoint after the first insertion moved to another block
            return self.summarize_from(a / BLOCK);
        }
        let (first, last) = (a / BLOCK, (b - 1) / BLOCK);
        for k in first..=last {
            if k * BLOCK >= a && ((k + 1) * BLOCK).min(self.free.len()) <= b {
                self.block_min[k] += delta;
                self.block_max[k] += delta;
            } else {
                let blk = &self.free[k * BLOCK..((k + 1) * BLOCK).min(self.free.len())];
                self.block_min[k] = blk.iter().copied().min().expect("blocks are not empty");
                self.block_max[k] = blk.iter().copied().max().expect("blocks are not empty");
            }
        }
    }

    /// The first index at or after `i` whose step has at least `nodes` free.
    fn first_at_least(&self, i: usize, nodes: i64) -> Option<usize> {
        let len = self.free.len();
        let mut j = i;
        // the rest of `i`'s block, then whole blocks, then inside the first that may hold it
        while j < len {
            if j % BLOCK == 0 && self.block_max[j / BLOCK] < nodes {
                j += BLOCK;
                continue;
            }
            if self.free[j] >= nodes {
                return Some(j);
            }
            j += 1;
        }
        None
    }

    /// The last index in `[lo, hi)` whose step has fewer than `nodes` free.
    fn last_below(&self, lo: usize, hi: usize, nodes: i64) -> Option<usize> {
        let mut j = hi;
        while j > lo {
            // a whole block inside `[lo, j)` ending at `j`: skip it if it holds no such step
            if j % BLOCK == 0 && j - BLOCK >= lo && self.block_min[j / BLOCK - 1] >= nodes {
                j -= BLOCK;
                continue;
            }
            j -= 1;
            if self.free[j] < nodes {
                return Some(j);
            }
        }
        None
    }

    /// The first index at or after `i` whose breakpoint is at or after `t`: galloping from
    /// `i`, as a window's end is mostly a few breakpoints away (a binary search over all of
    /// them was a third of a congested run).
    fn first_at_or_after(&self, i: usize, t: i64) -> usize {
        let len = self.times.len();
        let (mut lo, mut step) = (i, 1);
        // every breakpoint before `lo` is before `t`
        while lo + step <= len && self.times[lo + step - 1] < t {
            lo += step;
            step *= 2;
        }
        let hi = (lo + step).min(len);
        lo + self.times[lo..hi].partition_point(|&x| x < t)
    }

    /// The least free nodes over `[start, end)` (`now <= start < end`).
    pub fn min_over(&self, start: i64, end: i64) -> i64 {
        let (lo, hi) = (self.index_at(start), self.times.partition_point(|&x| x < end));
        let mut least = i64::MAX;
        let mut j = lo;
        while j < hi {
            if j % BLOCK == 0 && j + BLOCK <= hi {
                least = least.min(self.block_min[j / BLOCK]);
                j += BLOCK;
            } else {
                least = least.min(self.free[j]);
                j += 1;
            }
        }
        least
    }

    /// The first instant at or after `from` (and `now`) with at least `nodes` free.
    pub fn first_free(&self, nodes: i64, from: i64) -> Option<i64> {
        let from = from.max(self.times[0]);
        let i = self.index_at(from);
        if self.free[i] >= nodes {
            return Some(from);
        }
        self.first_at_least(i + 1, nodes).map(|j| self.times[j])
    }

    /// The earliest `s` in `[from, limit]` with at least `nodes` free during all of
    /// `[s, s + duration)` (at the instant `s` itself when the duration is 0).
    pub fn earliest(&self, nodes: i64, duration_s: i64, from: i64, limit: i64) -> Option<i64> {
        self.earliest_capped(nodes, duration_s, from, limit, i64::MAX)
    }

    /// `earliest` with every window cut at `cap` (`limit < cap`): the room needed before a
    /// reservation starting at `cap` moves earlier (see `Conservative::reserve_in_plan`).
    ///
    /// Only `from` and the breakpoints can be a first such instant. From a candidate `s`
    /// that has `nodes` free, the *last* step short of them before its window ends rules
    /// out every start up to it (their windows hold it too), and the next candidate is the
    /// first breakpoint after it with `nodes` free again: a jump passes every short run of
    /// free nodes inside a window at once, and a block that cannot stop it at once too.
    pub fn earliest_capped(&self, nodes: i64, duration_s: i64, from: i64, limit: i64, cap: i64) -> Option<i64> {
        let from = from.max(self.times[0]);
        let mut i = self.index_at(from);
        let mut s = from;
        if self.free[i] < nodes {
            i = self.first_at_least(i + 1, nodes)?;
            s = self.times[i];
        }
        loop {
            if s > limit {
                return None;
            }
            let end = s.saturating_add(duration_s.max(1)).min(cap);
            // steps starting inside the window (`i`'s own step holds `nodes`)
            let hi = self.first_at_or_after(i + 1, end);
            match self.last_below(i + 1, hi, nodes) {
                None => return Some(s),
                Some(short) => {
                    i = self.first_at_least(short + 1, nodes)?;
                    s = self.times[i];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{SpanClass, Topology};
    use proptest::prelude::*;

    /// The step function as a sorted vector, searched breakpoint by breakpoint: the
    /// planner before the block summaries (commit 57ba331), kept as the reference it must agree with.
    struct LinearPlanner {
        times: Vec<i64>,
        free: Vec<i64>,
    }

    impl LinearPlanner {
        fn new(now: i64, free_now: i64, changes: &mut [(i64, i64)]) -> LinearPlanner {
            changes.sort_unstable();
            let mut p = LinearPlanner { times: vec![now], free: vec![free_now] };
            for &(t, d) in changes.iter() {
                let last = p.times.len() - 1;
                if t <= now || p.times[last] == t {
                    p.free[last] += d;
                } else {
                    let f = p.free[last] + d;
                    p.times.push(t);
                    p.free.push(f);
                }
            }
            p
        }

        fn free_at(&self, t: i64) -> i64 {
            match self.times.binary_search(&t) {
                Ok(i) => self.free[i],
                Err(0) => self.free[0],
                Err(i) => self.free[i - 1],
            }
        }

        fn split(&mut self, t: i64) -> usize {
            match self.times.binary_search(&t) {
                Ok(i) => i,
                Err(0) => 0,
                Err(i) => {
                    let f = self.free[i - 1];
                    self.times.insert(i, t);
                    self.free.insert(i, f);
                    i
                }
            }
        }

        fn add(&mut self, start: i64, duration_s: i64, delta: i64) {
            let now = self.times[0];
            let end = start.saturating_add(duration_s);
            let start = start.max(now);
            if end <= start {
                return;
            }
            let a = self.split(start);
            let b = self.split(end);
            for f in &mut self.free[a..b] {
                *f += delta;
            }
        }

        fn earliest(&self, nodes: i64, duration_s: i64, from: i64, limit: i64) -> Option<i64> {
            let len = self.times.len();
            let mut i = match self.times.binary_search(&from) {
                Ok(i) => i,
                Err(0) => 0,
                Err(i) => i - 1,
            };
            while i < len {
                let s = self.times[i].max(from);
                if s > limit {
                    return None;
                }
                let end = s.saturating_add(duration_s.max(1));
                let mut j = i;
                loop {
                    if j >= len || self.times[j] >= end {
                        return Some(s);
                    }
                    if self.free[j] < nodes {
                        break;
                    }
                    j += 1;
                }
                i = j + 1;
            }
            None
        }
    }

    /// Free nodes at `t` by summing every change: the definition, without the step function.
    fn free_by_sum(now: i64, free_now: i64, changes: &[(i64, i64)], t: i64) -> i64 {
        free_now + changes.iter().filter(|&&(c, _)| c <= t.max(now)).map(|&(_, d)| d).sum::<i64>()
    }

    #[test]
    fn earliest_on_a_hand_profile() {
        // 2 free now; +3 at 10; +5 at 20; -4 at 30 (a reservation from 30)
        let p = Planner::new(0, 2, &mut [(20, 5), (10, 3), (30, -4)]);
        assert_eq!(p.earliest(2, 100, 0, i64::MAX), Some(0));
        assert_eq!(p.earliest(4, 5, 0, i64::MAX), Some(10));
        assert_eq!(p.earliest(5, 25, 0, i64::MAX), Some(10)); // [10,35): 5, 10, 6 free
        assert_eq!(p.earliest(7, 5, 0, i64::MAX), Some(20)); // [20,25): 10 free
        assert_eq!(p.earliest(7, 15, 0, i64::MAX), None); // from 30 on only 6 are free
        assert_eq!(p.earliest(4, 5, 0, 9), None);
        assert_eq!(p.earliest(4, 5, 12, i64::MAX), Some(12));
    }

    #[test]
    fn add_and_take_back_restore_the_profile() {
        let mut p = Planner::new(0, 4, &mut [(10, 4)]);
        p.add(5, 20, -3);
        assert_eq!((p.free_at(0), p.free_at(5), p.free_at(10), p.free_at(25)), (4, 1, 5, 8));
        p.add(5, 20, 3);
        assert_eq!((p.free_at(5), p.free_at(24), p.free_at(25)), (4, 8, 8));
        p.add(-5, 10, -1); // starts before now: counts from now
        assert_eq!((p.free_at(0), p.free_at(5)), (3, 4));
    }

    #[test]
    fn shadow_on_a_hand_queue() {
        // 2 free at 100; jobs free 3 at 90 (past its limit), 4 at 120, 1 at 120, 6 at 150
        let ends = [(90, 3), (120, 4), (120, 1), (150, 6)];
        assert_eq!(shadow(100, 2, 2, ends), Some((100, 3))); // the past-limit job counts as ending now
        assert_eq!(shadow(100, 2, 5, ends), Some((100, 0)));
        assert_eq!(shadow(100, 2, 6, ends), Some((120, 4))); // both jobs ending at 120 count
        assert_eq!(shadow(100, 2, 16, ends), Some((150, 0)));
        assert_eq!(shadow(100, 2, 17, ends), None);
    }

    /// A 2-pod, 2-leaf, 2-node fabric with jobs 0..3 running: job j on nodes 2j, 2j+1.
    fn busy_fabric() -> (Topology, ClusterState) {
        let topo = Topology::fat_tree("t", 2, 2, 2, None, None).unwrap();
        let mut state = ClusterState::new(&topo, &[]);
        for j in 0..4u32 {
            state.allocate(&topo, j, &[2 * j, 2 * j + 1], SpanClass::Leaf);
        }
        (topo, state)
    }

    #[test]
    fn projection_releases_by_instant() {
        let (topo, state) = busy_fabric();
        let ends = [(10, 2u32), (10, 0), (20, 3), (30, 1)];
        let release = |s: &mut ClusterState, j: u32| s.release(&topo, j, &[2 * j, 2 * j + 1], SpanClass::Leaf);
        let mut p = Projection::new(state, ends.into_iter(), release);
        assert_eq!(p.next_end(), Some(10));
        p.advance_to(9);
        assert_eq!(p.state().n_free(), 0);
        p.advance_to(25);
        assert_eq!(p.state().n_free(), 6);
        assert!(p.state().is_free(0) && p.state().is_free(4) && p.state().is_free(6) && !p.state().is_free(2));
        assert_eq!(p.next_end(), Some(30));
    }

    #[test]
    fn first_placement_sees_every_job_ending_at_the_instant() {
        let (topo, state) = busy_fabric();
        // job 2 ends at 5, jobs 0 and 1 (pod 0) both at 10: 3 nodes first fit at 10, and
        // with both released (asking after job 0 alone would give nodes 0, 1 and 4)
        let ends = [(5, 2u32), (10, 0), (10, 1), (40, 3)];
        let release = |s: &mut ClusterState, j: u32| s.release(&topo, j, &[2 * j, 2 * j + 1], SpanClass::Leaf);
        let mut p = Projection::new(state, ends.into_iter(), release);
        let mut asked = Vec::new();
        let found = p.first_placement(None, |_, s| {
            asked.push(s.n_free());
            // the lowest 3 free nodes
            let free: Vec<u32> = (0..8).filter(|&n| s.is_free(n)).take(3).collect();
            (free.len() == 3).then_some(free)
        });
        assert_eq!(found, Some((10, vec![0, 1, 2])));
        assert_eq!(asked, vec![2, 6]);
    }

    proptest! {
        /// `shadow` equals the definition: the first instant (now or an end) at which the
        /// free nodes, counted by summing every end up to it, reach the size.
        #[test]
        fn shadow_matches_the_definition(
            now in 0i64..20,
            free_now in 0u32..5,
            mut ends in proptest::collection::vec((0i64..40, 0u32..4), 0..8),
            need in 0u32..14,
        ) {
            ends.sort_unstable();
            let free_at = |t: i64| free_now + ends.iter().filter(|&&(e, _)| e.max(now) <= t).map(|&(_, n)| n).sum::<u32>();
            let instants = std::iter::once(now).chain(ends.iter().map(|&(e, _)| e.max(now)));
            let expected = instants.filter(|&t| free_at(t) >= need).min().map(|t| (t, free_at(t) - need));
            prop_assert_eq!(shadow(now, free_now, need, ends.iter().copied()), expected);
        }

        /// The planner answers as the linear one (the planner it replaced) through a
        /// conservative pass's life: reservations made where `earliest` finds room, taken
        /// out and put back, windows from before `now` and very long ones; every `earliest`
        /// and the value at every breakpoint agree after every step. (Not at `i64::MAX`:
        /// the linear search took a breakpoint there for an empty window; no time reaches
        /// it, ends are checked sums.)
        #[test]
        fn planner_matches_the_linear_one(
            now in 0i64..50,
            free_now in 0i64..12,
            changes in proptest::collection::vec((0i64..400, -4i64..6), 0..150),
            ops in proptest::collection::vec((0u8..5, 0i64..400, 0i64..120, 1i64..10, 0i64..400), 1..80),
        ) {
            let (mut a, mut b) = (changes.clone(), changes.clone());
            let mut p = Planner::new(now, free_now, &mut a);
            let mut lin = LinearPlanner::new(now, free_now, &mut b);
            let mut made: Vec<(i64, i64, i64)> = Vec::new();
            for (kind, t, dur, nodes, span) in ops {
                match kind {
                    // a reservation where there is room, no later than `t + span`
                    0 => {
                        let limit = t + span;
                        let found = p.earliest(nodes, dur, t, limit);
                        prop_assert_eq!(found, lin.earliest(nodes, dur, t, limit));
                        if let Some(s) = found {
                            p.add(s, dur, -nodes);
                            lin.add(s, dur, -nodes);
                            made.push((s, dur, nodes));
                        }
                    }
                    // one taken back out
                    1 if !made.is_empty() => {
                        let (s, d, n) = made.remove(t as usize % made.len());
                        p.add(s, d, n);
                        lin.add(s, d, n);
                    }
                    // a range change anywhere, also from before `now` or for ever
                    2 => {
                        let d = if span % 7 == 0 { 1 << 40 } else { dur };
                        p.add(t - 60, d, nodes - 5);
                        lin.add(t - 60, d, nodes - 5);
                    }
                    // compression: a reservation moved earlier. The capped search on the
                    // plan as it is answers as taking it out and searching before its start,
                    // where the plan has no negative step over it (always, but with --run-on)
                    3 if !made.is_empty() => {
                        let (start, d, n) = made[t as usize % made.len()];
                        let from = start - span;
                        let limit = start - 1;
                        let mut out = LinearPlanner { times: lin.times.clone(), free: lin.free.clone() };
                        out.add(start, d, n);
                        let expected = out.earliest(n, d, from, limit);
                        if d == 0 || p.min_over(start.max(now), start.max(now) + d) >= 0 {
                            prop_assert_eq!(p.earliest_capped(n, d, from, limit, start), expected);
                        }
                        let least = (start.max(now)..(start.max(now) + d).max(start.max(now) + 1)).map(|x| lin.free_at(x)).min();
                        prop_assert_eq!(Some(p.min_over(start.max(now), (start.max(now) + d).max(start.max(now) + 1))), least);
                    }
                    _ => {
                        prop_assert_eq!(p.earliest(nodes, dur, t, i64::MAX), lin.earliest(nodes, dur, t, i64::MAX));
                        prop_assert_eq!(p.first_free(nodes, t), lin.earliest(nodes, 0, t, i64::MAX));
                    }
                }
                for &time in lin.times.iter().chain([now - 1, t, t + dur].iter()) {
                    prop_assert_eq!(p.free_at(time.max(now)), lin.free_at(time.max(now)));
                }
            }
        }

        /// `earliest` equals a second-by-second scan of the definition.
        #[test]
        fn earliest_matches_a_scan(
            free_now in 0i64..6,
            changes in proptest::collection::vec((0i64..40, -3i64..4), 0..8),
            nodes in 1i64..8,
            duration in 0i64..15,
            from in 0i64..20,
        ) {
            let mut c = changes.clone();
            let p = Planner::new(0, free_now, &mut c);
            let fits = |s: i64| (s..s + duration.max(1)).all(|t| free_by_sum(0, free_now, &changes, t) >= nodes);
            let scan = (from..200).find(|&s| fits(s));
            prop_assert_eq!(p.earliest(nodes, duration, from, i64::MAX), scan);
        }
    }
}

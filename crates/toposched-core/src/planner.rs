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
//!   out in place: conservative backfilling on counts. Searching it is O(breakpoints) per
//!   query and an update O(breakpoints), instead of re-sorting every running job and
//!   reservation for every query.
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

/// Free nodes from `times[0]` on: `free[i]` holds on `[times[i], times[i + 1])`, the last
/// value forever. Times are strictly increasing.
#[derive(Clone, Debug)]
pub struct Planner {
    times: Vec<i64>,
    free: Vec<i64>,
}

impl Planner {
    /// `free_now` nodes free at `now`, then `changes` (time, nodes freed (+) or taken (-)).
    /// A change at or before `now` counts from `now` on. `changes` is sorted in place.
    pub fn new(now: i64, free_now: i64, changes: &mut [(i64, i64)]) -> Planner {
        changes.sort_unstable();
        let mut p = Planner { times: Vec::with_capacity(changes.len() + 1), free: Vec::with_capacity(changes.len() + 1) };
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
        p
    }

    /// Free nodes at instant `t` (`t >= now`).
    pub fn free_at(&self, t: i64) -> i64 {
        match self.times.binary_search(&t) {
            Ok(i) => self.free[i],
            Err(0) => self.free[0],
            Err(i) => self.free[i - 1],
        }
    }

    /// Index of a breakpoint at `t`, inserted if needed (`t >= now`).
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

    /// Add `delta` free nodes over `[start, start + duration)` (negative: take them).
    /// Nothing for an empty interval; a start before `now` counts from `now`.
    pub fn add(&mut self, start: i64, duration_s: i64, delta: i64) {
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

    /// The earliest `s` in `[from, limit]` with at least `nodes` free during all of
    /// `[s, s + duration)` (at the instant `s` itself when the duration is 0). Only `from`
    /// and the breakpoints can be such a first instant.
    pub fn earliest(&self, nodes: i64, duration_s: i64, from: i64, limit: i64) -> Option<i64> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{SpanClass, Topology};
    use proptest::prelude::*;

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

//! The machine's projected future as free node counts over time (flux-sched calls its
//! equivalent the planner): a step function built once per pass from the running jobs'
//! expected ends and the reservations, then updated in place as reservations are taken
//! out and put back. Queue policies that reason on counts (conservative backfilling with
//! fungible allocation policies) ask it for the earliest start of a job.
//!
//! Searching the step function is O(breakpoints) per query and an update O(breakpoints),
//! instead of re-sorting every running job and reservation for every query.

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

    proptest! {
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

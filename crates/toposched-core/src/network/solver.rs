//! The job-level weighted fair-bottleneck solve (research/network-model.md §3.4).
//!
//! Every job is one fluid variable `x_j` in (0, 1]: its communication speed relative to
//! running alone on its placement. Its demand on link l at `x_j = 1` is `d_jl` (bytes per
//! iteration over its time alone, so that alone it saturates exactly its busiest link).
//! Only *hot* links (offered load above capacity) are constraints: a cold link can never
//! bind because `x <= 1`. Each job has a service level `s_j` (weight `omega_s`) and a claim
//! `kappa_jl` on each link, the fairness unit (its flows on the link by default; its input
//! ports there; or 1, which is SimGrid's ptask / Batsim solver).
//!
//! Service levels are arbitrated as InfiniBand does (virtual lanes): on each link the
//! levels with live traffic share the remaining capacity by weighted round robin, and a
//! level's share is split among its own live jobs by their claims. One flow at level
//! weight 9 against three flows at weight 1 therefore splits a link 0.9 / 0.1, not
//! 9:3 = 0.75 / 0.25. A level counts on a link only while it wants more there: the share
//! of a level whose jobs another link holds back goes to the others
//! (`Solver::between_levels`; with one level the solve is SimGrid's, untouched).
//!
//! ```text
//! rem_l = c_l; x_j = 0; live = every job with a constraint link
//! repeat until live is empty:
//!     K_ls  = sum over live j of level s on l of kappa_jl
//!     W_l   = sum over levels s with K_ls > 0 of omega_s
//!     inc_j = min(1 - x_j, min over l of j: (omega_sj / W_l) * (kappa_jl / K_lsj) * rem_l / d_jl)
//!     x_j  += inc_j;   rem_l -= sum_j d_jl * inc_j
//!     drop the jobs with x_j = 1 or on a link with rem_l = 0
//! ```
//!
//! With one level this is SimGrid's `FairBottleneck::bottleneck_solve` with per-element
//! weights and a bound of 1. Independent components (jobs that share no hot link, directly or through others)
//! do not influence each other, so solving a component alone gives the same numbers as
//! solving the whole machine.

/// A constraint system in compressed rows: job j's entries are `off[j]..off[j+1]`.
#[derive(Clone, Debug, Default)]
pub struct Problem {
    /// Capacity of each constraint (hot link), indexed by local link number.
    pub cap: Vec<f64>,
    pub off: Vec<usize>,
    /// Local link number of each entry.
    pub link: Vec<u32>,
    /// Demand of the job on the link at x = 1.
    pub d: Vec<f64>,
    /// Claim `kappa` (fairness unit) of the job on the link.
    pub claim: Vec<f64>,
    /// Service level of each job and the weight of each level.
    pub level: Vec<u32>,
    pub level_weight: Vec<f64>,
}

impl Problem {
    pub fn clear(&mut self) {
        self.cap.clear();
        self.off.clear();
        self.link.clear();
        self.d.clear();
        self.claim.clear();
        self.level.clear();
        self.off.push(0);
    }
    pub fn n_jobs(&self) -> usize {
        self.off.len().saturating_sub(1)
    }
    pub fn push_entry(&mut self, link: u32, d: f64, claim: f64) {
        self.link.push(link);
        self.d.push(d);
        self.claim.push(claim);
    }
    /// Close the current job's entries; `level` is its service level (an index into
    /// `level_weight`).
    pub fn end_job_at(&mut self, level: u32) {
        self.off.push(self.link.len());
        self.level.push(level);
    }
    /// Close the current job's entries at level 0.
    pub fn end_job(&mut self) {
        self.end_job_at(0);
    }
    fn n_levels(&self) -> usize {
        self.level.iter().map(|&s| s as usize + 1).max().unwrap_or(1).max(1)
    }
    fn weight_of(&self, level: u32) -> f64 {
        self.level_weight.get(level as usize).copied().unwrap_or(1.0)
    }
}

/// Relative tolerance: a link whose remaining capacity falls below `EPS · c` is saturated,
/// a job within `EPS` of 1 runs at full speed.
pub const EPS: f64 = 1e-9;
/// Safety cap on rounds (each round saturates a link, finishes a job, or shrinks every
/// remaining capacity geometrically; real systems need a few dozen at most).
pub const MAX_ROUNDS: usize = 100_000;

/// Reusable buffers of the solve.
#[derive(Clone, Debug, Default)]
pub struct Solver {
    rem: Vec<f64>,
    /// Sum of live claims per (link, level): index `link * n_levels + level`.
    k: Vec<f64>,
    /// Sum of the weights of the levels with live traffic, per link.
    w: Vec<f64>,
    sat: Vec<bool>,
    live: Vec<bool>,
    mu: Vec<f64>,
    /// Per entry: the job's offer on that link in the current round (several levels only).
    offer: Vec<f64>,
    /// Per (link, level): some live job of the level takes its round's increment from
    /// this link (several levels only).
    backlogged: Vec<bool>,
    /// Per link: the round's use by the jobs of levels not backlogged there.
    used: Vec<f64>,
    /// Per link: the weight of the levels backlogged there.
    backlogged_weight: Vec<f64>,
    plain: Vec<f64>,
    /// Rounds the last solve took.
    pub rounds: usize,
}

/// Refinements of a round's increments between levels (several levels only): each moves
/// the share of levels limited elsewhere to the backlogged levels of a link; a few settle
/// it (the cases seen settle in two or three), the cap keeps a round bounded.
const REFINE_ROUNDS: usize = 16;

impl Solver {
    /// Solve `p`; returns `x` per job (1 for a job without entries).
    #[allow(clippy::needless_range_loop)] // x, live and mu are indexed together
    pub fn solve(&mut self, p: &Problem, x: &mut Vec<f64>) {
        let nj = p.n_jobs();
        let nl = p.cap.len();
        x.clear();
        x.resize(nj, 0.0);
        self.rem.clear();
        self.rem.extend_from_slice(&p.cap);
        self.sat.clear();
        self.sat.resize(nl, false);
        let ns = p.n_levels();
        self.w.clear();
        self.w.resize(nl, 0.0);
        self.k.clear();
        self.k.resize(nl * ns, 0.0);
        self.live.clear();
        self.mu.clear();
        self.mu.resize(nj, 0.0);
        let mut n_live = 0;
        for j in 0..nj {
            let has = p.off[j + 1] > p.off[j];
            self.live.push(has);
            if has {
                n_live += 1;
            } else {
                x[j] = 1.0;
            }
        }
        self.rounds = 0;
        while n_live > 0 {
            self.rounds += 1;
            for w in self.w.iter_mut() {
                *w = 0.0;
            }
            for k in self.k.iter_mut() {
                *k = 0.0;
            }
            for j in 0..nj {
                if self.live[j] {
                    let s = p.level[j] as usize;
                    let omega = p.weight_of(p.level[j]);
                    for e in p.off[j]..p.off[j + 1] {
                        let l = p.link[e] as usize;
                        let k = &mut self.k[l * ns + s];
                        if *k == 0.0 {
                            self.w[l] += omega; // first live job of this level on the link
                        }
                        *k += p.claim[e];
                    }
                }
            }
            for j in 0..nj {
                if !self.live[j] {
                    continue;
                }
                let mut inc = 1.0 - x[j];
                let s = p.level[j] as usize;
                let omega = p.weight_of(p.level[j]);
                for e in p.off[j]..p.off[j + 1] {
                    let l = p.link[e] as usize;
                    if p.d[e] > 0.0 {
                        let share = (omega / self.w[l]) * (p.claim[e] / self.k[l * ns + s]);
                        let offer = share * self.rem[l] / p.d[e];
                        if offer < inc {
                            inc = offer;
                        }
                    }
                }
                self.mu[j] = inc.max(0.0);
            }
            if ns > 1 {
                self.between_levels(p, x, ns);
            }
            for j in 0..nj {
                if self.live[j] {
                    x[j] += self.mu[j];
                    for e in p.off[j]..p.off[j + 1] {
                        self.rem[p.link[e] as usize] -= p.d[e] * self.mu[j];
                    }
                }
            }
            for l in 0..nl {
                if !self.sat[l] && self.rem[l] <= EPS * p.cap[l] {
                    self.sat[l] = true;
                    self.rem[l] = 0.0;
                }
            }
            let last_round = self.rounds >= MAX_ROUNDS;
            for j in 0..nj {
                if !self.live[j] {
                    continue;
                }
                let done = x[j] >= 1.0 - EPS || last_round || (p.off[j]..p.off[j + 1]).any(|e| self.sat[p.link[e] as usize]);
                if done {
                    if x[j] >= 1.0 - EPS {
                        x[j] = 1.0;
                    }
                    self.live[j] = false;
                    n_live -= 1;
                }
            }
        }
    }
}

impl Solver {
    /// Weighted round robin between the levels that want more, on every link at once.
    ///
    /// The round's increments above give each level its weight's share of every link it
    /// uses, also where its jobs are held back by another link: that share then goes
    /// unused this round while a level that wants more on the link is held to its own
    /// weight, and may be frozen by another link before a later round hands it the rest
    /// (levels 3:1, a level-1 job crossing a link where three level-0 jobs are held
    /// elsewhere got half its weight). Here a level counts on a link only while one of its
    /// jobs takes its increment from that link (it is backlogged there): the others' use
    /// of the link is set aside and the rest split by weight among the backlogged levels,
    /// as an arbiter serving only the lanes with packets waiting does; repeated until the
    /// increments settle. Within a level nothing changes (its share is split by claims,
    /// as with one level, where this is never called: one level is the SimGrid solve).
    /// Increments that would overfill a link are dropped for the plain ones.
    #[allow(clippy::needless_range_loop)] // x, live and mu are indexed together
    fn between_levels(&mut self, p: &Problem, x: &[f64], ns: usize) {
        let nj = p.n_jobs();
        let nl = p.cap.len();
        self.offer.clear();
        self.offer.resize(p.link.len(), f64::INFINITY);
        for j in 0..nj {
            if !self.live[j] {
                continue;
            }
            let s = p.level[j] as usize;
            let omega = p.weight_of(p.level[j]);
            for e in p.off[j]..p.off[j + 1] {
                let l = p.link[e] as usize;
                if p.d[e] > 0.0 {
                    self.offer[e] = (omega / self.w[l]) * (p.claim[e] / self.k[l * ns + s]) * self.rem[l] / p.d[e];
                }
            }
        }
        self.plain.clone_from(&self.mu);
        for _ in 0..REFINE_ROUNDS {
            self.backlogged.clear();
            self.backlogged.resize(nl * ns, false);
            for j in 0..nj {
                if self.live[j] {
                    let s = p.level[j] as usize;
                    for e in p.off[j]..p.off[j + 1] {
                        if self.offer[e] <= self.mu[j] * (1.0 + EPS) {
                            self.backlogged[p.link[e] as usize * ns + s] = true;
                        }
                    }
                }
            }
            self.used.clear();
            self.used.resize(nl, 0.0);
            for j in 0..nj {
                if self.live[j] {
                    let s = p.level[j] as usize;
                    for e in p.off[j]..p.off[j + 1] {
                        let l = p.link[e] as usize;
                        if !self.backlogged[l * ns + s] {
                            self.used[l] += p.d[e] * self.mu[j];
                        }
                    }
                }
            }
            self.backlogged_weight.clear();
            self.backlogged_weight.extend((0..nl).map(|l| (0..ns).filter(|&t| self.backlogged[l * ns + t]).map(|t| p.weight_of(t as u32)).sum::<f64>()));
            let mut moved = false;
            for j in 0..nj {
                if !self.live[j] {
                    continue;
                }
                let s = p.level[j] as usize;
                let omega = p.weight_of(p.level[j]);
                let mut inc = 1.0 - x[j];
                for e in p.off[j]..p.off[j + 1] {
                    let l = p.link[e] as usize;
                    if p.d[e] > 0.0 && self.backlogged[l * ns + s] {
                        self.offer[e] = (omega / self.backlogged_weight[l]) * (p.claim[e] / self.k[l * ns + s]) * (self.rem[l] - self.used[l]).max(0.0) / p.d[e];
                    }
                    inc = inc.min(self.offer[e]);
                }
                let inc = inc.max(0.0);
                moved |= (inc - self.mu[j]).abs() > 1e-12 * self.mu[j].max(1e-300);
                self.mu[j] = inc;
            }
            if !moved {
                break;
            }
        }
        // never more than a link has left: else the round keeps its plain increments
        self.used.clear();
        self.used.resize(nl, 0.0);
        for j in 0..nj {
            if self.live[j] {
                for e in p.off[j]..p.off[j + 1] {
                    self.used[p.link[e] as usize] += p.d[e] * self.mu[j];
                }
            }
        }
        if (0..nl).any(|l| self.used[l] > self.rem[l] + EPS * p.cap[l]) {
            self.mu.clone_from(&self.plain);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One level per job (job j at level j, weight = its single claim) keeps the old
    /// per-job weighted cases readable: `(link, d, weight)`.
    fn problem(cap: &[f64], jobs: &[&[(u32, f64, f64)]]) -> Problem {
        let mut p = Problem::default();
        p.clear();
        p.cap.extend_from_slice(cap);
        for (j, entries) in jobs.iter().enumerate() {
            let mut w = 1.0;
            for &(l, d, c) in *entries {
                p.push_entry(l, d, 1.0);
                w = c;
            }
            p.level_weight.push(w);
            p.end_job_at(j as u32);
        }
        p
    }

    /// Jobs as `(level, [(link, d, kappa)])` with level weights `weights`.
    #[allow(clippy::type_complexity)] // a test helper: the literal shapes read best inline
    fn leveled(cap: &[f64], weights: &[f64], jobs: &[(u32, &[(u32, f64, f64)])]) -> Problem {
        let mut p = Problem::default();
        p.clear();
        p.cap.extend_from_slice(cap);
        p.level_weight.extend_from_slice(weights);
        for (s, entries) in jobs {
            for &(l, d, k) in *entries {
                p.push_entry(l, d, k);
            }
            p.end_job_at(*s);
        }
        p
    }

    #[test]
    fn levels_share_by_weight_whatever_their_flow_counts() {
        // the issue's case: one flow at weight 9 against three flows at weight 1 -> 0.9 / 0.1
        let x = solve(&leveled(&[1.0], &[9.0, 1.0], &[(0, &[(0, 1.0, 1.0)]), (1, &[(0, 1.0, 3.0)])]));
        assert!((x[0] - 0.9).abs() < 1e-12 && (x[1] - 0.1).abs() < 1e-12, "{x:?}");
        // within one level, claims (flows) split the level's share: level 1 gets 0.1,
        // its jobs with 3 and 1 flows get 0.075 and 0.025
        let x = solve(&leveled(&[1.0], &[9.0, 1.0], &[(0, &[(0, 1.0, 1.0)]), (1, &[(0, 1.0, 3.0)]), (1, &[(0, 1.0, 1.0)])]));
        assert!((x[0] - 0.9).abs() < 1e-12, "{x:?}");
        assert!((x[1] - 0.075).abs() < 1e-12 && (x[2] - 0.025).abs() < 1e-12, "{x:?}");
        // a level whose jobs need little leaves the rest to the other level (work conserving)
        let x = solve(&leveled(&[1.0], &[1.0, 9.0], &[(0, &[(0, 1.0, 5.0)]), (1, &[(0, 0.3, 1.0)])]));
        assert_eq!(x[1], 1.0);
        assert!((x[0] - 0.7).abs() < 1e-9, "{x:?}");
    }

    #[test]
    fn a_level_held_elsewhere_leaves_its_weight_to_the_backlogged_level() {
        // levels 3:1, capacity 1, one flow per job (d = 1). Link 0 (an up-link): A, B, E at
        // level 0 and C at level 1. Link 1 (a down-link): A at level 0, C, F, G at level 1.
        // Weighted round robin: on link 0 both levels want more, level 1 gets 1/4: C = 1/4,
        // A = B = E = 1/4; on link 1 A (held to 1/4 by link 0) leaves the rest to level 1:
        // C, F, G 1/4 each. Every job 0.25, both links full. (C got 0.125: its level's
        // share of link 1 was a quarter, three quarters kept for A, who could not use them.)
        let one = |l: u32| (l, 1.0, 1.0);
        let p = leveled(
            &[1.0, 1.0],
            &[3.0, 1.0],
            &[(0, &[one(0), one(1)]), (0, &[one(0)]), (0, &[one(0)]), (1, &[one(0), one(1)]), (1, &[one(1)]), (1, &[one(1)])],
        );
        let x = solve(&p);
        for (j, v) in x.iter().enumerate() {
            assert!((v - 0.25).abs() < 1e-8, "job {j}: {x:?}");
        }
        // with one level the round is SimGrid's: unchanged (here 0.25 each as well)
        let x1 = solve(&leveled(&[1.0, 1.0], &[1.0], &[(0, &[one(0), one(1)]), (0, &[one(0)]), (0, &[one(0)]), (0, &[one(0), one(1)]), (0, &[one(1)]), (0, &[one(1)])]));
        assert!(x1.iter().all(|v| (v - 0.25).abs() < 1e-9), "{x1:?}");
    }

    fn solve(p: &Problem) -> Vec<f64> {
        let mut x = Vec::new();
        Solver::default().solve(p, &mut x);
        x
    }

    #[test]
    fn two_jobs_one_link_share_by_weight() {
        // two jobs that each saturate the link alone, weights 9:1 -> 0.9 / 0.1 (brief §3.9)
        let x = solve(&problem(&[1.0], &[&[(0, 1.0, 9.0)], &[(0, 1.0, 1.0)]]));
        assert!((x[0] - 0.9).abs() < 1e-12 && (x[1] - 0.1).abs() < 1e-12, "{x:?}");
        let x = solve(&problem(&[1.0], &[&[(0, 1.0, 1.0)], &[(0, 1.0, 1.0)]]));
        assert_eq!(x, vec![0.5, 0.5]);
        // 254:1
        let x = solve(&problem(&[1.0], &[&[(0, 1.0, 254.0)], &[(0, 1.0, 1.0)]]));
        assert!((x[0] - 254.0 / 255.0).abs() < 1e-12);
    }

    #[test]
    fn flow_weights_favour_many_flows() {
        // one level; job 0 has 3 flows on the link, job 1 one: claims 3:1
        let x = solve(&leveled(&[1.0], &[1.0], &[(0, &[(0, 1.0, 3.0)]), (0, &[(0, 1.0, 1.0)])]));
        assert!((x[0] - 0.75).abs() < 1e-12 && (x[1] - 0.25).abs() < 1e-12);
    }

    #[test]
    fn leftover_goes_to_the_unconstrained() {
        // job 0 needs only 0.4 of the link at full speed: it gets x = 1, job 1 the rest
        let x = solve(&problem(&[1.0], &[&[(0, 0.4, 1.0)], &[(0, 1.0, 1.0)]]));
        assert_eq!(x[0], 1.0);
        assert!((x[1] - 0.6).abs() < 1e-9, "{x:?}");
    }

    #[test]
    fn capacity_is_never_exceeded_and_jobs_without_links_run_free() {
        let p = problem(&[1.0, 2.0], &[&[(0, 1.0, 2.0), (1, 1.0, 2.0)], &[(1, 2.0, 1.0)], &[]]);
        let x = solve(&p);
        assert_eq!(x[2], 1.0);
        let load0 = 1.0 * x[0];
        let load1 = 1.0 * x[0] + 2.0 * x[1];
        assert!(load0 <= 1.0 + 1e-9 && load1 <= 2.0 + 1e-9);
        assert!((load1 - 2.0).abs() < 1e-6, "link 1 saturates: {x:?}");
    }
}

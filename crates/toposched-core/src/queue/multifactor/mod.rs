//! Slurm 22.05's `priority/multifactor`: the job priority and the queue order it gives the
//! `slurm` and `slurm-bf` policies (a directory, so not a policy of its own).
//!
//! Followed from SchedMD/slurm tag `slurm-22-05-8-1`:
//! - **The sum** (`_get_priority_internal`, priority_multifactor.c l. 519-600): every factor
//!   in [0, 1] times its weight (`uint32`), summed as a `double` in the order age,
//!   association, fair-share, job size, partition, QOS, at least 1 (0 means held), then
//!   truncated to an integer (`(uint64_t) priority`). Here the factors are age, fair-share,
//!   job size, partition and QOS; the others (association, TRES, site, nice) are 0 as in a
//!   site with their weights at 0 and no `nice`.
//! - **Partition** (`set_priority_factors`, l. 2157-2161; `norm_priority` in read_config.c):
//!   the job's partition's `PriorityJobFactor` over the highest of any partition (at least
//!   1), from the policy's partitions option (`queue/partitions/mod.rs`).
//! - **QOS** (`set_priority_factors`, l. 2173-2178, and `_set_qos_norm_priority`,
//!   src/common/assoc_mgr.c): the priority of the job's QOS over the highest priority of any
//!   QOS (`g_qos_max_priority`); 0 when the job's QOS has priority 0 (or the job none). The
//!   QOS priorities are option `priority_qos` (`ID:PRIORITY;...`, ids as the Workload
//!   numbers them, every QOS of the site listed, as the maximum is over all of them).
//! - **Fair-share** (`_get_fairshare_priority`, l. 421-470): under Fair Tree, the
//!   `fs_factor` of the job's association (account, user) as the decay thread last ranked
//!   it (`fair_tree.rs`, which also keeps the decayed usage).
//! - **Age** (`set_priority_factors`, l. 2068-2083): `diff = start_time - accrue_time` in
//!   whole seconds (`time_t`), `diff / PriorityMaxAge`, 1 from `PriorityMaxAge` on; 0 while
//!   the job has no `accrue_time`. Without `AccountingStorageEnforce=limits`,
//!   `acct_policy_handle_accrue_time` (acct_policy.c l. 4625-4630) sets `accrue_time` to the
//!   job's begin time (its submit second, `job_independent`), but only when the job is first
//!   seen pending by `build_job_queue` (job_scheduler.c l. 583 and 1387-1394: every
//!   main-scheduler pass under multifactor, and every backfill cycle), never at submission
//!   (acct_policy.c l. 836-843).
//! - **Job size** (l. 2088-2153): favor large (default): `(min_nodes / node_record_count +
//!   cpus / cluster_cpus) / 2`; `PriorityFavorSmall=YES`: `((N - min_nodes) / N + (C - cpus)
//!   / C) / 2`; clipped to [0, 1]. The engine counts nodes, so every node is taken as one
//!   CPU and a job holds its nodes whole (the lab of `validate-slurm`): the CPU term equals
//!   the node term, and the sum halved is the node term, exactly in floating point.
//!   `PriorityFlags=SMALL_RELATIVE_TO_TIME` is not modelled.
//! - **When** (l. 1202-1400 and fair_tree.c `fair_tree_decay`): a job gets its priority at
//!   submission (`priority_p_set`, age 0 then); the decay thread recalculates every pending
//!   job (`decay_apply_weighted_factors`, l. 2020-2048) at its start and then every
//!   `PriorityCalcPeriod` (`abs.tv_sec += calc_period`), with `start_time = time(NULL)` at
//!   each wake-up. Between two recalculations priorities do not change. Fair Tree (22.05's
//!   default) recalculates on the first wake-up too. Each run first decays the usage and
//!   adds the running jobs' (`fair_tree_decay`), ranks the associations, then recalculates.
//! - **Order** (`sort_job_queue2`, job_scheduler.c l. 2043-2202): higher priority first,
//!   ties by increasing job id; here by row (the replay's rows are in submit order, which is
//!   job id order for jobs of one controller). Every pass of the main scheduler and every
//!   backfill cycle sorts its queue so; the engine's queue is kept in that order.
//! - A recalculation of a pending job sets `last_job_update`, which is "more work" for the
//!   backfill agent (`_more_work`, backfill.c).
//!
//! Checked against the real Slurm 22.05 (docs/validation.md, "Multifactor priority"): every
//! priority it logged in six recorded runs but one job's in two of them is this formula's,
//! and the replays start jobs within tens to hundreds of milliseconds of Slurm.

pub mod fair_tree;

use crate::pass::PassCtx;
use fair_tree::{AssocKey, FairTree, UNKNOWN};

/// priority/multifactor's settings, in engine units where they are times.
#[derive(Clone, Debug, PartialEq)]
pub struct MultifactorParams {
    /// `PriorityWeightAge`.
    pub weight_age: u32,
    /// `PriorityWeightJobSize`.
    pub weight_job_size: u32,
    /// `PriorityMaxAge` (seconds).
    pub max_age_s: i64,
    /// `PriorityCalcPeriod` (seconds).
    pub calc_period_s: i64,
    /// `PriorityFavorSmall=YES`.
    pub favor_small: bool,
    /// One instant at which the decay thread ran (engine units): it runs at `calc_phase + k * period`.
    pub calc_phase: i64,
    /// The controller's clock at time 0 (engine units): where its whole seconds begin.
    pub clock_offset: i64,
    /// Engine time units per second.
    pub ticks_per_s: i64,
    /// `PriorityWeightFairshare`.
    pub weight_fairshare: u32,
    /// `PriorityWeightQOS`.
    pub weight_qos: u32,
    /// QOS id -> its priority (`sacctmgr ... qos priority=`), as option `priority_qos` writes it.
    pub qos_priority: String,
    /// `PriorityDecayHalfLife` (seconds; 0: no decay).
    pub decay_half_life_s: i64,
    /// The association tree (option `priority_fs_tree`, [`fair_tree::parse_tree`]).
    pub fs_tree: String,
    /// `PriorityWeightPartition`.
    pub weight_partition: u32,
    /// Each partition's (id, `PriorityJobFactor`), the default partition first (jobs without
    /// one); from the policy's partitions option.
    pub partition_job_factors: Vec<(u32, u32)>,
}

/// `ID:PRIORITY;...` -> (id, priority) pairs.
pub fn parse_qos(text: &str) -> Result<Vec<(u32, u32)>, String> {
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (id, prio) = item.split_once(':').ok_or_else(|| format!("priority_qos: {item:?}: expected QOS_ID:PRIORITY"))?;
            match (id.trim().parse::<u32>(), prio.trim().parse::<u32>()) {
                (Ok(i), Ok(p)) if i < UNKNOWN => Ok((i, p)),
                _ => Err(format!("priority_qos: {item:?}: expected QOS_ID:PRIORITY, whole numbers (ids 0..{})", UNKNOWN - 1)),
            }
        })
        .collect()
}

impl MultifactorParams {
    /// Slurm's own bounds (read_config.c): periods and ages of at least one second here
    /// (Slurm reads them in minutes).
    /// The weights as a policy's options hold them (any integer) before they become the
    /// 32-bit `PriorityWeight*` of the params: in range or an error naming the option.
    pub fn check_weights(policy: &str, prefix: &str, weights: &[(&str, i64)]) -> Result<(), String> {
        for &(k, v) in weights {
            if !(0..=u32::MAX as i64).contains(&v) {
                return Err(format!("queue {policy}: {prefix}priority_{k}={v} is out of range (0..={})", u32::MAX));
            }
        }
        Ok(())
    }

    pub fn check(&self, policy: &str, prefix: &str) -> Result<(), String> {
        for (k, v) in [("max_age_s", self.max_age_s), ("calc_period_s", self.calc_period_s)] {
            if v < 1 || v > u32::MAX as i64 {
                return Err(format!("queue {policy}: {prefix}priority_{k}={v} is out of range (1..={})", u32::MAX));
            }
        }
        if !(0..=u32::MAX as i64).contains(&self.decay_half_life_s) {
            return Err(format!("queue {policy}: {prefix}priority_decay_half_life_s={} is out of range (0..={})", self.decay_half_life_s, u32::MAX));
        }
        parse_qos(&self.qos_priority).map_err(|e| format!("queue {policy}: {prefix}{e}"))?;
        fair_tree::parse_tree(&self.fs_tree).map_err(|e| format!("queue {policy}: {prefix}{e}"))?;
        Ok(())
    }

    /// Whether priorities differ at all: with every weight 0 each job has priority 1 and the
    /// order is job id order, `priority/basic`'s.
    pub fn enabled(&self) -> bool {
        self.weight_age > 0 || self.weight_job_size > 0 || self.weight_fairshare > 0 || self.weight_qos > 0 || self.weight_partition > 0
    }

    /// The partition factor of a job in partition `id` (`norm_priority`, read_config.c:
    /// its `PriorityJobFactor` over the highest of any partition, at least 1); 0 without
    /// partitions.
    pub fn partition_factor(&self, id: Option<u32>) -> f64 {
        let max = self.partition_job_factors.iter().map(|&(_, f)| f).max().unwrap_or(0).max(1);
        let f = match id {
            None => self.partition_job_factors.first().map(|&(_, f)| f),
            Some(id) => self.partition_job_factors.iter().find(|&&(p, _)| p == id).map(|&(_, f)| f),
        };
        f.map_or(0.0, |f| f as f64 / max as f64)
    }

    /// `decay_factor` of the decay thread: `1 - 0.693 / PriorityDecayHalfLife`, 1 without one.
    pub fn decay_factor(&self) -> f64 {
        if self.decay_half_life_s > 0 {
            1.0 - (0.693 / self.decay_half_life_s as f64)
        } else {
            1.0
        }
    }
}

/// The job size factor of a job of `nodes` nodes on a cluster of `cluster_nodes` (one CPU
/// each), as `set_priority_factors` computes it.
pub fn job_size_factor(nodes: u32, cluster_nodes: u32, favor_small: bool) -> f64 {
    let (n, c) = (nodes as f64, cluster_nodes as f64);
    let js = if favor_small {
        let mut js = (cluster_nodes as f64 - n) / c;
        js += (cluster_nodes as f64 - n) / c; // the CPU term: one CPU per node
        js / 2.0
    } else {
        let mut js = n / c;
        js += n / c;
        js / 2.0
    };
    js.clamp(0.0, 1.0)
}

/// The age factor after `diff_s` whole seconds since `accrue_time`.
pub fn age_factor(diff_s: u32, max_age_s: u32) -> f64 {
    if diff_s < max_age_s {
        diff_s as f64 / max_age_s as f64
    } else {
        1.0
    }
}

/// `_get_priority_internal`'s sum of weighted factors, at least 1, truncated.
pub fn priority(age: f64, weight_age: u32, job_size: f64, weight_job_size: u32) -> u32 {
    priority_of(&[(age, weight_age), (job_size, weight_job_size)])
}

/// The same for any factors, `(factor, weight)` in Slurm's order of the sum (age,
/// association, fair-share, job size, partition, QOS).
pub fn priority_of(terms: &[(f64, u32)]) -> u32 {
    let mut p = 0.0;
    for &(f, w) in terms {
        p += f * w as f64;
    }
    if p < 1.0 {
        p = 1.0;
    }
    (p as u64).min(u32::MAX as u64) as u32
}

/// The QOS factor of a QOS of priority `prio` when the highest is `max`.
pub fn qos_factor(prio: u32, max: u32) -> f64 {
    if prio == 0 || max == 0 {
        0.0
    } else {
        prio as f64 / max as f64
    }
}

/// The queue order of a Slurm controller under priority/multifactor.
#[derive(Clone, Debug)]
pub struct Multifactor {
    p: MultifactorParams,
    /// Priority by row; 0: not submitted yet (Slurm's priorities are at least 1).
    prio: Vec<u32>,
    /// Row -> when `build_job_queue` first saw it pending (its `accrue_time` was set then).
    accrued_at: Vec<Option<i64>>,
    /// The last decay-thread run applied.
    last_recalc: Option<i64>,
    /// The next run the engine was asked to wake up for.
    wake: Option<i64>,
    /// QOS id -> priority, and the highest.
    qos: std::collections::HashMap<u32, u32>,
    qos_max: u32,
    /// The association tree, built at the first pass (it needs every job's association).
    tree: Option<FairTree>,
    /// Row -> its user association in the tree.
    assoc: Vec<usize>,
    /// The controller's second of the decay thread's last run (`g_last_ran`).
    last_ran_s: Option<i64>,
}

/// A job's association key: its account and user, [`UNKNOWN`] where the log has none.
fn assoc_key(job: &crate::workload::Job) -> AssocKey {
    (job.account.unwrap_or(UNKNOWN), job.user.unwrap_or(UNKNOWN))
}

impl Multifactor {
    pub fn new(p: MultifactorParams) -> Multifactor {
        let qos: std::collections::HashMap<u32, u32> = parse_qos(&p.qos_priority).unwrap_or_default().into_iter().collect();
        let qos_max = qos.values().copied().max().unwrap_or(0);
        Multifactor {
            p,
            prio: Vec::new(),
            accrued_at: Vec::new(),
            last_recalc: None,
            wake: None,
            qos,
            qos_max,
            tree: None,
            assoc: Vec::new(),
            last_ran_s: None,
        }
    }

    /// The fair-share tree (after the first pass; None when the fair-share weight is 0).
    pub fn tree(&self) -> Option<&FairTree> {
        self.tree.as_ref()
    }

    /// One run of the decay thread at `run` (`_decay_thread` then `fair_tree_decay`): decay
    /// by the whole seconds since the last run, add every running job's usage since then
    /// (or its start), rank the associations.
    fn decay_run(&mut self, ctx: &PassCtx, run: i64) {
        let Some(tree) = self.tree.as_mut() else { return };
        let now_s = (run + self.p.clock_offset).div_euclid(self.p.ticks_per_s);
        let df = self.p.decay_factor();
        if let Some(last) = self.last_ran_s {
            let delta = now_s - last;
            if delta > 0 {
                let real = df.powf(delta as f64).max(f64::MIN_POSITIVE);
                if real != 1.0 {
                    tree.decay(real);
                }
            }
        }
        for &(_, row) in ctx.running() {
            let start = ctx.start_of(row);
            if start > run {
                continue;
            }
            let start_s = (start + self.p.clock_offset).div_euclid(self.p.ticks_per_s);
            let from = self.last_ran_s.map_or(start_s, |l| l.max(start_s));
            let delta = (now_s - from).max(0) as f64;
            let run_decay = delta * df.powf(delta);
            // billable TRES = the job's CPUs: one per node here
            tree.add_usage(self.assoc[row as usize], run_decay * ctx.jobs[row as usize].nodes as f64);
        }
        tree.rank();
        self.last_ran_s = Some(now_s);
    }

    pub fn enabled(&self) -> bool {
        self.p.enabled()
    }

    /// The controller's whole second of an engine instant (`time(NULL)` then).
    fn second(&self, t: i64) -> i64 {
        (t + self.p.clock_offset).div_euclid(self.p.ticks_per_s)
    }

    /// A job's priority at decay-thread run `t` (or at submission with `t` None: age 0).
    fn compute(&self, ctx: &PassCtx, row: u32, t: Option<i64>) -> u32 {
        let spec = ctx.jobs[row as usize];
        let age = match (t, self.accrued_at[row as usize]) {
            (Some(t), Some(acc)) if self.p.weight_age > 0 && acc <= t => {
                let diff = (self.second(t) - self.second(spec.submit_s)).clamp(0, u32::MAX as i64) as u32;
                age_factor(diff, self.p.max_age_s as u32)
            }
            _ => 0.0,
        };
        let js = if self.p.weight_job_size > 0 { job_size_factor(spec.nodes, ctx.topo.n_nodes() as u32, self.p.favor_small) } else { 0.0 };
        let fs = match &self.tree {
            Some(tree) if self.p.weight_fairshare > 0 => tree.fs_factor(self.assoc[row as usize]),
            _ => 0.0,
        };
        let qos = match spec.qos {
            Some(q) if self.p.weight_qos > 0 => qos_factor(self.qos.get(&q).copied().unwrap_or(0), self.qos_max),
            _ => 0.0,
        };
        let part = if self.p.weight_partition > 0 { self.p.partition_factor(spec.partition) } else { 0.0 };
        // _get_priority_internal's order of the sum: age, (assoc), fs, js, part, qos
        priority_of(&[(age, self.p.weight_age), (fs, self.p.weight_fairshare), (js, self.p.weight_job_size), (part, self.p.weight_partition), (qos, self.p.weight_qos)])
    }

    /// Call at the start of every engine pass, before anything is scheduled: gives new jobs
    /// their priority at submission, applies the decay thread's latest run if one is due
    /// (to the jobs pending then), puts the queue in priority order and asks to be woken at
    /// the next run. True when a run recalculated some pending job (`last_job_update`).
    pub fn before_pass(&mut self, ctx: &mut PassCtx) -> bool {
        if !self.enabled() {
            return false;
        }
        let n = ctx.jobs.len();
        if self.prio.len() < n {
            self.prio.resize(n, 0);
            self.accrued_at.resize(n, None);
        }
        if self.tree.is_none() && self.p.weight_fairshare > 0 {
            let entries = fair_tree::parse_tree(&self.p.fs_tree).unwrap_or_default();
            let tree = FairTree::new(&entries, ctx.jobs.iter().map(assoc_key));
            self.assoc = ctx.jobs.iter().map(|j| tree.user(assoc_key(j)).expect("every job's association is in the tree")).collect();
            self.tree = Some(tree);
        }
        let now = ctx.now();
        let period = self.p.calc_period_s * self.p.ticks_per_s;
        let run = self.p.calc_phase + (now - self.p.calc_phase).div_euclid(period) * period;
        let queue: Vec<u32> = ctx.queue().to_vec();
        let mut changed = false;
        let mut recalculated = false;
        if self.last_recalc.map_or(true, |last| run > last) {
            // every run since the last one applied (the engine wakes for each while jobs run
            // or wait, so normally one): usage and ranks move at each
            if self.tree.is_some() {
                let first = self.last_recalc.map_or(run, |last| last + period);
                let mut r = first;
                while r <= run {
                    self.decay_run(ctx, r);
                    r += period;
                }
            }
            self.last_recalc = Some(run);
            for &row in &queue {
                if ctx.jobs[row as usize].submit_s <= run {
                    self.prio[row as usize] = self.compute(ctx, row, Some(run));
                    recalculated = true;
                }
            }
        }
        for &row in &queue {
            if self.prio[row as usize] == 0 {
                self.prio[row as usize] = self.compute(ctx, row, None);
                changed = true;
            }
        }
        if changed || recalculated {
            let prio = &self.prio;
            ctx.queue_mut().sort_by_key(|&row| (std::cmp::Reverse(prio[row as usize]), row));
        }
        // usage accrues at every run while jobs run: wake for those too under fair-share
        let busy = !ctx.queue().is_empty() || (self.tree.is_some() && !ctx.running().is_empty());
        if busy && self.wake != Some(run + period) {
            self.wake = Some(run + period);
            ctx.wake_at(run + period);
        }
        recalculated
    }

    /// A main-scheduler pass or a backfill cycle built its job queue: every pending job
    /// without an `accrue_time` gets one now.
    pub fn queue_built(&mut self, ctx: &PassCtx) {
        if !self.enabled() {
            return;
        }
        let now = ctx.now();
        for &row in ctx.queue() {
            self.accrued_at[row as usize].get_or_insert(now);
        }
    }

    /// The priority a job holds now (0: not submitted yet or multifactor off).
    pub fn priority_of(&self, row: u32) -> u32 {
        self.prio.get(row as usize).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_factor_is_the_job_factor_over_the_highest_at_least_one() {
        let mut p = MultifactorParams { weight_partition: 1, partition_job_factors: vec![(3, 2), (5, 8)], ..crate::queue::SlurmOptions::default().multifactor() };
        assert_eq!((p.partition_factor(Some(3)), p.partition_factor(Some(5)), p.partition_factor(None)), (0.25, 1.0, 0.25));
        // part_max_priority starts at DEF_PART_MAX_PRIORITY (1): factors of 0 give 0, not NaN
        p.partition_job_factors = vec![(0, 0), (1, 0)];
        assert_eq!(p.partition_factor(Some(1)), 0.0);
        p.partition_job_factors = vec![];
        assert_eq!(p.partition_factor(None), 0.0);
    }

    #[test]
    fn factors_and_sum_as_slurm_computes_them() {
        // numbers logged by the real Slurm 22.05 of validate-slurm's multifactor run
        // (PriorityWeightAge=5000, PriorityWeightJobSize=5000, PriorityMaxAge=2 min, 32
        // nodes): "initial priority for job 4 is 3906" (25 nodes: 5000 * 25 / 32 = 3906.25),
        // "priority for job 24 is now 2354" (2 nodes, 49 s: 5000 * 49 / 120 + 5000 * 2 / 32
        // = 2041.67 + 312.5)
        assert_eq!(priority(0.0, 5000, job_size_factor(25, 32, false), 5000), 3906);
        assert_eq!(priority(age_factor(49, 120), 5000, job_size_factor(2, 32, false), 5000), 2354);
        // favor small: (32 - 5) / 32 * 5000 = 4218.75
        assert_eq!(priority(0.0, 0, job_size_factor(5, 32, true), 5000), 4218);
        // the age factor saturates at MaxAge
        assert_eq!(age_factor(120, 120), 1.0);
        assert_eq!(age_factor(500, 120), 1.0);
        assert_eq!(age_factor(60, 120), 0.5);
        // at least 1 (0 is a held job), at most 2^32 - 1
        assert_eq!(priority(0.0, 0, 0.0, 0), 1);
        assert_eq!(priority(1.0, u32::MAX, 1.0, u32::MAX), u32::MAX);
        // a job larger than the cluster is clipped to 1
        assert_eq!(job_size_factor(40, 32, false), 1.0);
        assert_eq!(job_size_factor(40, 32, true), 0.0);
    }
}

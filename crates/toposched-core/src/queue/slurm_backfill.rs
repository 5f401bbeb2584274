//! `slurm`: when Slurm 22.05's main scheduler runs its FIFO pass (`sched/builtin`).
//!
//! *What it does*: the pass itself is strict FIFO, as `fcfs` (`_schedule` walks the queue
//! in priority order, submit order under `priority/basic`, and the first job that cannot
//! start blocks its partition). What this policy adds is *when* passes happen, from
//! `slurmctld` 22.05:
//! - a batch job is never started at submission (`job_allocate` with `allocate=0` only
//!   tests it); the submission asks for a pass (`queue_job_scheduler`);
//! - the background thread (`_slurmctld_background`, one loop per second) runs a pass when
//!   one was asked for and `batch_sched_delay` seconds (default 3) have passed since its
//!   last one;
//! - when the last node of an ended job reports its epilog complete, the controller runs a
//!   pass at once (`_slurm_rpc_epilog_complete` -> `schedule()`): here, at the instant
//!   nodes come back (the engine frees a job's nodes together);
//! - the background loop also runs a pass every `sched_interval` seconds (slurm.conf
//!   `SchedulerParameters=sched_interval=`, default 60) since its last one, asked for or
//!   not, while jobs wait: what retries a job whose `--switches` wait ran out, or whose
//!   priority changed, when nothing else asks (without it such a job waited for the next
//!   submission or end, for ever at the end of a log).
//!
//! All of it in simulated time: the background loop ticks at multiples of `tick` (its
//! phase against the real controller's clock is unknown), and `ticks_per_s` lets a replay
//! count time in milliseconds (`slurm:ticks_per_s=1000`), as `toposched validate-slurm`
//! does. Parameters: `slurm:batch_sched_delay_s=3,ticks_per_s=1,tick_phase=0,last_pass=T`
//! (the loop wakes at `tick_phase + k * ticks_per_s`; `last_pass`: when it last ran a pass
//! before the replay began; a replay of a real controller's run sets both from its log).
//!
//! *Priority*: `priority/basic` (submit order) unless a weight is set: then
//! `priority/multifactor`'s age and job size factors (`priority_weight_age`,
//! `priority_weight_job_size`, `priority_max_age_s`, `priority_calc_period_s`,
//! `priority_favor_small`; defaults Slurm's: 0, 0, 7 days, 5 min, no), Fair Tree's
//! fair-share (`priority_weight_fairshare`, `priority_decay_half_life_s` (7 days),
//! `priority_fs_tree`: the job's account and user ids) and QOS (`priority_weight_qos`,
//! `priority_qos`: the job's QOS id -> priority) factors, recalculated when
//! Slurm's decay thread does (every `priority_calc_period_s` from `priority_calc_phase`,
//! engine units; whole seconds of the controller's clock placed by `clock_offset`). The
//! arithmetic and its source lines are in `multifactor/mod.rs`.
//! *Partitions* (`partitions`): each job runs on its partition's nodes only, a job beyond
//! a partition limit is held pending (reported skipped with Slurm's reason), and a job that
//! cannot start blocks only its own partition (and that partition's nodes) for the rest of
//! the pass (`queue/partitions/mod.rs`).
//! *When to use*: to replay a FIFO Slurm's start times, not only its order.
//! *Cost*: as `fcfs`, plus one wake-up per pending second.
//! *Reference*: SchedMD/slurm tag `slurm-22-05-8-1`: `src/slurmctld/controller.c`
//! (`_slurmctld_background`, `batch_sched_delay`), `job_mgr.c` (`job_allocate`),
//! `proc_req.c` (`_slurm_rpc_epilog_complete`), `job_scheduler.c` (`_schedule`).
//! `sched/backfill`'s cycles (`bf_interval`, `bf_window`, ...) are the `slurm-bf` policy (`slurm_bf.rs`).

use super::multifactor::{Multifactor, MultifactorParams};
use super::partitions::{self, Partitions};
use super::{PassCtx, QueueEntry, QueuePolicy};
use crate::options::{parse_options, schema_of};

/// Options of `slurm` (also written `slurm:KEY=VALUE,...`).
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SlurmOptions {
    /// `SchedulerParameters=batch_sched_delay=` (seconds).
    #[schemars(range(min = 0))]
    pub batch_sched_delay_s: i64,
    /// Engine time units per second (1000 when the replay counts milliseconds).
    #[schemars(range(min = 1))]
    pub ticks_per_s: i64,
    /// The background loop's phase: it wakes at `tick_phase + k * ticks_per_s`.
    #[schemars(range(min = 0))]
    pub tick_phase: i64,
    /// When its last pass before the replay began ran (none: long ago).
    pub last_pass: Option<i64>,
    /// `SchedulerParameters=sched_interval=` (seconds): the background loop's pass at least
    /// this often while jobs wait (0: only passes asked for, as before this option).
    #[schemars(range(min = 0))]
    pub sched_interval_s: i64,
    /// `PriorityWeightAge` (priority/multifactor; every weight 0: priority/basic's submit order).
    pub priority_weight_age: i64,
    /// `PriorityWeightJobSize`.
    pub priority_weight_job_size: i64,
    /// `PriorityMaxAge` (seconds; Slurm reads minutes): the age factor is 1 from this wait on.
    pub priority_max_age_s: i64,
    /// `PriorityCalcPeriod` (seconds; Slurm reads minutes): how often priorities are recalculated.
    pub priority_calc_period_s: i64,
    /// `PriorityFavorSmall=YES`: the job size factor favours small jobs.
    pub priority_favor_small: bool,
    /// An instant (engine units) at which the decay thread recalculated priorities.
    pub priority_calc_phase: i64,
    /// `PriorityWeightFairshare`: Fair Tree's factor (the association tree: `priority_fs_tree`).
    pub priority_weight_fairshare: i64,
    /// `PriorityWeightQOS`: the job's QOS priority over the highest (`priority_qos`).
    pub priority_weight_qos: i64,
    /// `PriorityWeightPartition`: the job's partition's `priority_job_factor` over the highest (`partitions`).
    pub priority_weight_partition: i64,
    /// QOS priorities, `QOS_ID:PRIORITY;...` (ids as the Workload numbers them; every QOS of the site).
    pub priority_qos: String,
    /// `PriorityDecayHalfLife` (seconds; Slurm reads minutes; 0: no decay).
    pub priority_decay_half_life_s: i64,
    /// The association tree under root: `ACCOUNT[:SHARES]`, `ACCOUNT/USER[:SHARES]`,
    /// `root/USER[:SHARES]`, separated by `;` (jobs' own associations are added, shares 1).
    pub priority_fs_tree: String,
    /// The controller's clock at time 0 (engine units): where its whole seconds begin.
    pub clock_offset: i64,
    /// Partitions with limits, `ID=NODES[:max_time_s=S][:max_nodes=N][:min_nodes=N][:priority_tier=N];...`
    /// (NODES: `0-15`, `0-7+16-23`; ID: the job's partition id; empty: one partition of
    /// every node; `queue/partitions/mod.rs`).
    pub partitions: String,
}

impl Default for SlurmOptions {
    fn default() -> Self {
        SlurmOptions {
            batch_sched_delay_s: 3,
            ticks_per_s: 1,
            tick_phase: 0,
            last_pass: None,
            sched_interval_s: 60,
            priority_weight_age: 0,
            priority_weight_job_size: 0,
            priority_max_age_s: 7 * 86_400,
            priority_calc_period_s: 300,
            priority_favor_small: false,
            priority_calc_phase: 0,
            priority_weight_fairshare: 0,
            priority_weight_qos: 0,
            priority_weight_partition: 0,
            priority_qos: String::new(),
            priority_decay_half_life_s: 7 * 86_400,
            priority_fs_tree: String::new(),
            clock_offset: 0,
            partitions: String::new(),
        }
    }
}

pub static POLICY: QueueEntry = QueueEntry {
    name: "slurm",
    summary: "Slurm 22.05's FIFO main scheduler, with its pass timing (batch_sched_delay, the 1 s background loop, passes at epilog completion)",
    options: schema_of::<SlurmOptions>,
    build: |o| {
        let opts: SlurmOptions = parse_options("slurm", o)?;
        opts.check()?;
        Ok(Box::new(SlurmSched::new(opts)))
    },
};

impl SlurmOptions {
    /// The ranges `parse` enforces, for options given as a JSON object.
    pub fn check(&self) -> Result<(), String> {
        for (k, v, min) in [("batch_sched_delay_s", self.batch_sched_delay_s, 0), ("ticks_per_s", self.ticks_per_s, 1), ("tick_phase", self.tick_phase, 0), ("sched_interval_s", self.sched_interval_s, 0)] {
            if v < min {
                return Err(format!("queue slurm: {k}={v} is out of range"));
            }
        }
        MultifactorParams::check_weights(
            "slurm",
            "",
            &[
                ("weight_age", self.priority_weight_age),
                ("weight_job_size", self.priority_weight_job_size),
                ("weight_fairshare", self.priority_weight_fairshare),
                ("weight_qos", self.priority_weight_qos),
                ("weight_partition", self.priority_weight_partition),
            ],
        )?;
        partitions::parse(&self.partitions, self.ticks_per_s, "queue slurm: partitions")?;
        self.multifactor().check("slurm", "")
    }

    /// The priority/multifactor settings these options give.
    pub fn multifactor(&self) -> MultifactorParams {
        MultifactorParams {
            weight_age: self.priority_weight_age as u32,
            weight_job_size: self.priority_weight_job_size as u32,
            max_age_s: self.priority_max_age_s,
            calc_period_s: self.priority_calc_period_s,
            favor_small: self.priority_favor_small,
            calc_phase: self.priority_calc_phase,
            weight_fairshare: self.priority_weight_fairshare as u32,
            weight_qos: self.priority_weight_qos as u32,
            qos_priority: self.priority_qos.clone(),
            decay_half_life_s: self.priority_decay_half_life_s,
            fs_tree: self.priority_fs_tree.clone(),
            weight_partition: self.priority_weight_partition as u32,
            partition_job_factors: partitions::parse(&self.partitions, self.ticks_per_s, "").map(|ps| ps.iter().map(|p| (p.id, p.priority_job_factor)).collect()).unwrap_or_default(),
            clock_offset: self.clock_offset,
            ticks_per_s: self.ticks_per_s,
        }
    }

    /// `key=value` pairs separated by commas (the part after `slurm:`), read as the
    /// registry reads them (`split_params`, then the options struct), so one rule.
    pub fn parse(text: &str) -> Result<SlurmOptions, String> {
        let (_, options) = crate::options::split_params(&format!("slurm:{text}"), &crate::options::Options::new())?;
        let o: SlurmOptions = parse_options("slurm", &options)?;
        o.check()?;
        Ok(o)
    }
}

/// When Slurm's main scheduler runs its pass (the timing rules of this file's header),
/// shared by `slurm` and `slurm-bf` (`slurm_bf.rs`), which run the same main scheduler.
#[derive(Clone, Debug)]
pub(crate) struct MainPassClock {
    batch_sched_delay_s: i64,
    ticks_per_s: i64,
    tick_phase: i64,
    /// When the background loop last ran a pass.
    last_periodic: Option<i64>,
    /// Its pass at least this often while jobs wait (engine units; None: only when asked).
    interval: Option<i64>,
    /// A pass was asked for (a submission or an end) and the background loop has not run one since.
    requested: bool,
    free_after: u32,
    queued_after: usize,
}

impl MainPassClock {
    pub(crate) fn new(batch_sched_delay_s: i64, ticks_per_s: i64, tick_phase: i64, last_pass: Option<i64>) -> MainPassClock {
        MainPassClock { batch_sched_delay_s, ticks_per_s, tick_phase, last_periodic: last_pass, interval: None, requested: false, free_after: u32::MAX, queued_after: 0 }
    }

    /// The background loop's pass also every `interval_s` seconds while jobs wait (0: never).
    pub(crate) fn with_interval(mut self, interval_s: i64) -> MainPassClock {
        self.interval = (interval_s > 0).then(|| interval_s.saturating_mul(self.ticks_per_s));
        self
    }

    /// Whether the main scheduler runs a pass now (asks the engine to wake it up for the
    /// next one otherwise). Call once per engine pass, before any start.
    pub(crate) fn due(&mut self, ctx: &mut PassCtx) -> bool {
        let now = ctx.now();
        let tick = self.ticks_per_s;
        let nodes_back = self.free_after != u32::MAX && ctx.n_free() > self.free_after;
        if nodes_back || ctx.queue().len() > self.queued_after {
            self.requested = true;
        }
        // the background loop: on a tick, once batch_sched_delay has passed since its last pass
        let mut run = nodes_back;
        // asked for: batch_sched_delay after its last pass; not asked for: sched_interval after it
        let asked = self.requested.then(|| self.last_periodic.map_or(now, |t| t + self.batch_sched_delay_s * tick));
        // (with nothing running, only a --switches wait running out can let a waiting job
        // start on the idle machine: without one, waking would only repeat the same pass,
        // and a job no pass can start would keep the replay going for ever)
        let may_change = !ctx.running().is_empty() || ctx.has_switch_limits();
        let periodic = self.interval.filter(|_| may_change).map(|iv| self.last_periodic.map_or(now, |t| t.saturating_add(iv)));
        let earliest = match (asked, periodic) {
            (Some(a), Some(p)) => Some(a.min(p)),
            (a, p) => a.or(p),
        };
        if let (Some(earliest), false) = (earliest, ctx.queue().is_empty()) {
            let t = earliest.max(now);
            let phase = self.tick_phase.rem_euclid(tick);
            let next_tick = (t - phase + tick - 1).div_euclid(tick) * tick + phase;
            if next_tick == now {
                run = true;
                self.requested = false;
                self.last_periodic = Some(now);
            } else {
                ctx.wake_at(next_tick);
            }
        }
        run
    }

    /// Record the machine as the engine pass leaves it (call last).
    pub(crate) fn after(&mut self, ctx: &PassCtx) {
        self.free_after = ctx.n_free();
        self.queued_after = ctx.queue().len();
    }
}

#[derive(Clone, Debug)]
pub struct SlurmSched {
    clock: MainPassClock,
    priority: Multifactor,
    partitions: Partitions,
}

impl SlurmSched {
    pub fn new(opts: SlurmOptions) -> SlurmSched {
        let priority = Multifactor::new(opts.multifactor());
        let parts = partitions::parse(&opts.partitions, opts.ticks_per_s, "queue slurm: partitions").expect("options checked when built");
        let clock = MainPassClock::new(opts.batch_sched_delay_s, opts.ticks_per_s, opts.tick_phase, opts.last_pass).with_interval(opts.sched_interval_s);
        SlurmSched { clock, priority, partitions: Partitions::new(parts, opts.ticks_per_s) }
    }
}

impl QueuePolicy for SlurmSched {
    fn name(&self) -> String {
        "slurm".into()
    }

    fn pass(&mut self, ctx: &mut PassCtx) {
        self.priority.before_pass(ctx);
        // a held job's submission still asks for a pass (queue_job_scheduler), so the
        // clock sees it before it leaves the queue
        let due = self.clock.due(ctx);
        self.partitions.hold_over_limits(ctx, "slurm");
        self.partitions.order_by_tier(ctx);
        if self.partitions.take_error_peek().is_some() {
            return;
        }
        if due {
            self.priority.queue_built(ctx);
            self.partitions.fifo(ctx);
        }
        self.clock.after(ctx);
    }

    fn whole_log_only(&self) -> Option<String> {
        Some("its fair-share tree is built from every job's association at the first pass, and its per-row tables grow with the log".into())
    }

    fn take_error(&mut self) -> Option<String> {
        self.partitions.take_error()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_and_refuse_clearly() {
        let o = SlurmOptions::parse("batch_sched_delay_s=5,ticks_per_s=1000").unwrap();
        assert_eq!((o.batch_sched_delay_s, o.ticks_per_s), (5, 1000));
        assert!(SlurmOptions::parse("bf_interval=3").unwrap_err().contains("unknown field"));
        let o = SlurmOptions::parse("priority_weight_age=10,priority_favor_small=true").unwrap();
        assert_eq!((o.priority_weight_age, o.priority_favor_small), (10, true));
        assert!(SlurmOptions::parse("ticks_per_s=0").unwrap_err().contains("out of range"));
        assert!(SlurmOptions::parse("ticks_per_s").unwrap_err().contains("KEY=VALUE"));
    }
}

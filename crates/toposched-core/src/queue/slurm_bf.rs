//! `slurm-bf`: Slurm 22.05's `sched/backfill`: the main scheduler's FIFO pass (as `slurm`)
//! plus the backfill agent's cycles, with their main `SchedulerParameters`.
//!
//! *What it does*, rule by rule, from `src/plugins/sched/backfill/backfill.c` (tag
//! `slurm-22-05-8-1`):
//! - **Main scheduler**: exactly `slurm`'s pass and its timing (`_schedule` in
//!   `job_scheduler.c`: priority order, the first job that cannot start blocks its
//!   partition; shared code, `slurm_backfill.rs`). Priority is `priority/basic`'s (submit
//!   order, then job id, `sort_job_queue2`, the engine's queue order), or
//!   `priority/multifactor`'s age, job size, fair-share (Fair Tree) and QOS factors when a
//!   `sched_priority_weight_*` is set (as `slurm`'s `priority_*` options;
//!   `multifactor/mod.rs`, `multifactor/fair_tree.rs`): both the main pass and
//!   the cycles walk the queue in that order, and a recalculation is more work for the agent.
//! - **When a cycle runs** (`backfill_agent`): the agent sleeps `bf_interval` seconds after
//!   a cycle ends, then runs one if anything changed since the last cycle (`_more_work`:
//!   a job submitted, started or ended; a node planned or unplanned by the last cycle);
//!   otherwise it sleeps 1 s and looks again. Here a cycle takes no time, so `bf_continue`
//!   (resume after the lock yields of a cycle longer than 2 s, `_yield_locks`) changes
//!   nothing; it is accepted for completeness.
//! - **A cycle** (`_attempt_backfill`): the plan (`node_space`) starts empty on the
//!   `bf_resolution` grid: `[floor(now), floor(now + bf_window))`. Running jobs are not in
//!   the plan; the select plugin's will-run test (`_try_sched` ->
//!   `_will_run_test`) projects their ends (start + time limit). Every pending job, in
//!   priority order, up to `bf_max_job_test` jobs that reach the will-run test:
//!   1. its usable nodes are those no planned reservation holds during
//!      `[start_res, start_res + limit]` (the end inclusive); `later_start` is the end of
//!      the first plan record from which a node it holds is free again;
//!   2. the will-run test on those nodes gives the earliest start `S` and its nodes:
//!      `select/linear` releases running jobs one at a time in order of expected end
//!      (`select_linear.c`); `select/cons_tres` releases them in groups ending within
//!      windows of 30 s, doubled after each group (`cons_common/job_test.c`,
//!      `bf_will_run_window_s=30`);
//!   3. `S <= now`: the job starts now on nodes outside the plan (`_start_job`);
//!   4. `S > later_start`: tried again from `later_start`; `S > now + bf_window`: no
//!      reservation (`StartTime set to time after current backfill window`);
//!   5. otherwise its nodes are reserved over `[floor(S), floor(S + limit))` on the
//!      resolution grid (at least one resolution long, `_add_reservation`), unless that
//!      overlaps an existing reservation (`_test_resv_overlap`): then tried again from `S`.
//!
//!   So every tested job gets a whole-node reservation (a conservative backfill), and the
//!   highest-priority blocked job is nothing special: the first one tested.
//!
//! The plan holds node *sets*, not counts (so not `crate::planner`'s step function): which
//! nodes a reservation holds decides where a backfilled job may go, and the allocation
//! policy (the select plugin) chooses them, on a copy of the machine with running jobs
//! released in order of expected end.
//!
//! Parameters (`slurm-bf:bf_interval_s=30,...`; defaults are Slurm's): `bf_interval_s`
//! (30), `bf_window_s` (86400: `bf_window=1440` minutes), `bf_resolution_s` (60),
//! `bf_max_job_test` (500), `bf_continue`, `bf_will_run_window_s` (0: `select/linear`,
//! 30: `select/cons_tres`), `bf_last_cycle` (when the agent's last cycle before the replay
//! ran; none: it is due at time 0), `bf_clock_offset` (the controller's clock at time 0,
//! in engine units, which places the resolution grid). The main scheduler's are `slurm`'s
//! under other names (an option name belongs to one policy): `sched_batch_delay_s`,
//! `sched_ticks_per_s`, `sched_tick_phase`, `sched_last_pass`, and the
//! priority options `sched_priority_weight_age`, `sched_priority_weight_job_size`,
//! `sched_priority_max_age_s`, `sched_priority_calc_period_s`, `sched_priority_favor_small`,
//! `sched_priority_calc_phase` (its seconds placed by `bf_clock_offset`),
//! `sched_priority_weight_fairshare`, `sched_priority_weight_qos`, `sched_priority_qos`,
//! `sched_priority_decay_half_life_s`, `sched_priority_fs_tree`. Times given in
//! seconds are scaled by `sched_ticks_per_s`.
//! - **Partitions** (`sched_partitions`, `queue/partitions/mod.rs`): the main pass blocks
//!   a failed job's partition only; a cycle tests each job on its partition's nodes only
//!   (one plan for all partitions, as 22.05's); a job beyond a partition limit is held.
//!
//! *Not modelled*: QOS and association limits, `bf_min_age_reserve`,
//! `bf_min_prio_reserve`, `bf_max_job_start`, per-user limits, time-min jobs, COMPLETING
//! nodes (the engine frees a job's nodes together).
//! *When to use*: to replay a Slurm configured with `SchedulerType=sched/backfill`.
//! *Cost*: per cycle, for each tested job a few allocator calls per running job (the
//! will-run projection) and O(plan records x nodes) for the plan.

use super::multifactor::{Multifactor, MultifactorParams};
use super::partitions::{self, Partitions};
use super::slurm_backfill::MainPassClock;
use super::{PassCtx, QueueEntry, QueuePolicy};
use crate::alloc::Guard;
use crate::options::{parse_options, schema_of};
use crate::state::NodeSet;

/// Options of `slurm-bf`; defaults are Slurm 22.05's.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SlurmBfOptions {
    /// `SchedulerParameters=bf_interval=` (seconds between backfill cycles).
    #[schemars(range(min = 1, max = 10_800))]
    pub bf_interval_s: i64,
    /// `bf_window=` (Slurm takes minutes; here seconds): how far ahead reservations are made.
    #[schemars(range(min = 60, max = 2_592_000))]
    pub bf_window_s: i64,
    /// `bf_resolution=` (seconds): the time grid of reservations.
    #[schemars(range(min = 1, max = 3600))]
    pub bf_resolution_s: i64,
    /// `bf_max_job_test=`: jobs a cycle puts through the will-run test.
    #[schemars(range(min = 1, max = 1_000_000))]
    pub bf_max_job_test: u32,
    /// `bf_continue`: no effect here (a cycle takes no simulated time, so never yields).
    pub bf_continue: bool,
    /// The select plugin's will-run grouping of ending jobs: 0 = one at a time
    /// (`select/linear`), 30 = `select/cons_tres`'s 30 s windows, doubled per group.
    #[schemars(range(min = 0, max = 3600))]
    pub bf_will_run_window_s: i64,
    /// When the backfill agent's last cycle before the replay ran (none: due at time 0).
    pub bf_last_cycle: Option<i64>,
    /// The controller's clock at time 0 (engine units): places the resolution grid.
    pub bf_clock_offset: i64,
    /// Main scheduler: `batch_sched_delay=` (seconds).
    pub sched_batch_delay_s: i64,
    /// Engine time units per second (1000 when the replay counts milliseconds).
    #[schemars(range(min = 1, max = 1_000_000))]
    pub sched_ticks_per_s: i64,
    /// The controller's background loop wakes at `sched_tick_phase + k * sched_ticks_per_s`.
    pub sched_tick_phase: i64,
    /// When the main scheduler's background loop last ran a pass before the replay.
    pub sched_last_pass: Option<i64>,
    /// `PriorityWeightAge` (priority/multifactor; every weight 0: priority/basic's submit order).
    pub sched_priority_weight_age: i64,
    /// `PriorityWeightJobSize`.
    pub sched_priority_weight_job_size: i64,
    /// `PriorityMaxAge` (seconds; Slurm reads minutes).
    pub sched_priority_max_age_s: i64,
    /// `PriorityCalcPeriod` (seconds; Slurm reads minutes).
    pub sched_priority_calc_period_s: i64,
    /// `PriorityFavorSmall=YES`.
    pub sched_priority_favor_small: bool,
    /// An instant (engine units) at which the decay thread recalculated priorities.
    pub sched_priority_calc_phase: i64,
    /// `PriorityWeightFairshare`: Fair Tree's factor (the association tree: `sched_priority_fs_tree`).
    pub sched_priority_weight_fairshare: i64,
    /// `PriorityWeightQOS`: the job's QOS priority over the highest (`sched_priority_qos`).
    pub sched_priority_weight_qos: i64,
    /// `PriorityWeightPartition`: the job's partition's `priority_job_factor` over the highest (`sched_partitions`).
    pub sched_priority_weight_partition: i64,
    /// QOS priorities, `QOS_ID:PRIORITY;...` (ids as the Workload numbers them; every QOS of the site).
    pub sched_priority_qos: String,
    /// `PriorityDecayHalfLife` (seconds; Slurm reads minutes; 0: no decay).
    pub sched_priority_decay_half_life_s: i64,
    /// The association tree under root: `ACCOUNT[:SHARES]`, `ACCOUNT/USER[:SHARES]`,
    /// `root/USER[:SHARES]`, separated by `;` (jobs' own associations are added, shares 1).
    pub sched_priority_fs_tree: String,
    /// Partitions with limits, as `slurm`'s `partitions` (`ID=NODES[:max_time_s=S]
    /// [:max_nodes=N][:min_nodes=N][:priority_tier=N];...`; `queue/partitions/mod.rs`).
    pub sched_partitions: String,
}

impl Default for SlurmBfOptions {
    fn default() -> Self {
        SlurmBfOptions {
            bf_interval_s: 30,
            bf_window_s: 1440 * 60,
            bf_resolution_s: 60,
            bf_max_job_test: 500,
            bf_continue: false,
            bf_will_run_window_s: 0,
            bf_last_cycle: None,
            bf_clock_offset: 0,
            sched_batch_delay_s: 3,
            sched_ticks_per_s: 1,
            sched_tick_phase: 0,
            sched_last_pass: None,
            sched_priority_weight_age: 0,
            sched_priority_weight_job_size: 0,
            sched_priority_max_age_s: 7 * 86_400,
            sched_priority_calc_period_s: 300,
            sched_priority_favor_small: false,
            sched_priority_calc_phase: 0,
            sched_priority_weight_fairshare: 0,
            sched_priority_weight_qos: 0,
            sched_priority_weight_partition: 0,
            sched_priority_qos: String::new(),
            sched_priority_decay_half_life_s: 7 * 86_400,
            sched_priority_fs_tree: String::new(),
            sched_partitions: String::new(),
        }
    }
}

impl SlurmBfOptions {
    /// Slurm's own bounds (`_load_config`), so a replay never runs what Slurm would refuse.
    pub fn check(&self) -> Result<(), String> {
        let bounds: [(&str, i64, i64, i64); 7] = [
            ("bf_interval_s", self.bf_interval_s, 1, 10_800),
            ("bf_window_s", self.bf_window_s, 60, 30 * 86_400),
            ("bf_resolution_s", self.bf_resolution_s, 1, 3600),
            ("bf_max_job_test", self.bf_max_job_test as i64, 1, 1_000_000),
            ("bf_will_run_window_s", self.bf_will_run_window_s, 0, 3600),
            ("sched_batch_delay_s", self.sched_batch_delay_s, 0, i64::MAX),
            ("sched_ticks_per_s", self.sched_ticks_per_s, 1, 1_000_000),
        ];
        for (k, v, lo, hi) in bounds {
            if v < lo || v > hi {
                return Err(format!("queue slurm-bf: {k}={v} is out of range ({lo}..={hi})"));
            }
        }
        if self.sched_tick_phase < 0 {
            return Err(format!("queue slurm-bf: sched_tick_phase={} is out of range", self.sched_tick_phase));
        }
        MultifactorParams::check_weights(
            "slurm-bf",
            "sched_",
            &[
                ("weight_age", self.sched_priority_weight_age),
                ("weight_job_size", self.sched_priority_weight_job_size),
                ("weight_fairshare", self.sched_priority_weight_fairshare),
                ("weight_qos", self.sched_priority_weight_qos),
                ("weight_partition", self.sched_priority_weight_partition),
            ],
        )?;
        partitions::parse(&self.sched_partitions, self.sched_ticks_per_s, "queue slurm-bf: sched_partitions")?;
        self.multifactor().check("slurm-bf", "sched_")
    }

    /// The priority/multifactor settings these options give.
    pub fn multifactor(&self) -> MultifactorParams {
        MultifactorParams {
            weight_age: self.sched_priority_weight_age as u32,
            weight_job_size: self.sched_priority_weight_job_size as u32,
            max_age_s: self.sched_priority_max_age_s,
            calc_period_s: self.sched_priority_calc_period_s,
            favor_small: self.sched_priority_favor_small,
            calc_phase: self.sched_priority_calc_phase,
            weight_fairshare: self.sched_priority_weight_fairshare as u32,
            weight_qos: self.sched_priority_weight_qos as u32,
            qos_priority: self.sched_priority_qos.clone(),
            decay_half_life_s: self.sched_priority_decay_half_life_s,
            fs_tree: self.sched_priority_fs_tree.clone(),
            weight_partition: self.sched_priority_weight_partition as u32,
            partition_job_factors: partitions::parse(&self.sched_partitions, self.sched_ticks_per_s, "").map(|ps| ps.iter().map(|p| (p.id, p.priority_job_factor)).collect()).unwrap_or_default(),
            clock_offset: self.bf_clock_offset,
            ticks_per_s: self.sched_ticks_per_s,
        }
    }
}

pub static POLICY: QueueEntry = QueueEntry {
    name: "slurm-bf",
    summary: "Slurm 22.05's sched/backfill: the FIFO main scheduler plus backfill cycles (bf_interval, bf_window, bf_resolution, bf_max_job_test) with whole-node reservations",
    options: schema_of::<SlurmBfOptions>,
    build: |o| {
        let opts: SlurmBfOptions = parse_options("slurm-bf", o)?;
        opts.check()?;
        Ok(Box::new(SlurmBf::new(opts)))
    },
};

/// One record of the backfill plan (`node_space_map_t`): nodes reserved over `[begin, end)`.
#[derive(Clone, Debug)]
struct PlanRecord {
    begin: i64,
    end: i64,
    reserved: NodeSet,
}

#[derive(Clone, Debug)]
pub struct SlurmBf {
    opts: SlurmBfOptions,
    clock: MainPassClock,
    /// The agent's next wake-up (after a cycle: + bf_interval; idle: every second).
    next_wake: i64,
    /// `_more_work`: something changed since the last cycle.
    dirty: bool,
    /// (version, queue length) when the last cycle ended.
    seen: (u64, usize),
    /// Some reserved node was free (NODE_STATE_PLANNED) after the last cycle.
    planned: bool,
    priority: Multifactor,
    partitions: Partitions,
}

impl SlurmBf {
    pub fn new(opts: SlurmBfOptions) -> SlurmBf {
        let tick = opts.sched_ticks_per_s;
        let clock = MainPassClock::new(opts.sched_batch_delay_s, tick, opts.sched_tick_phase, opts.sched_last_pass);
        let next_wake = opts.bf_last_cycle.map_or(0, |t| t + opts.bf_interval_s * tick);
        let priority = Multifactor::new(opts.multifactor());
        let parts = partitions::parse(&opts.sched_partitions, tick, "queue slurm-bf: sched_partitions").expect("options checked when built");
        SlurmBf { opts, clock, next_wake, dirty: false, seen: (u64::MAX, usize::MAX), planned: false, priority, partitions: Partitions::new(parts, tick) }
    }

    /// `backfill_agent`: whether a cycle runs now; asks for the next wake-up otherwise.
    fn cycle_due(&mut self, ctx: &mut PassCtx) -> bool {
        let now = ctx.now();
        let tick = self.opts.sched_ticks_per_s;
        if (ctx.version(), ctx.queue().len()) != self.seen {
            self.dirty = true;
        }
        if now < self.next_wake {
            if self.dirty {
                ctx.wake_at(self.next_wake);
            }
            return false;
        }
        // idle: the agent wakes every second (short_sleep) from next_wake on
        let on_grid = (now - self.next_wake) % tick == 0;
        if self.dirty && on_grid {
            return true;
        }
        let next = self.next_wake + ((now - self.next_wake) / tick + 1) * tick;
        self.next_wake = next;
        if self.dirty {
            ctx.wake_at(next);
        }
        false
    }

    fn floor_res(&self, t: i64) -> i64 {
        let res = self.opts.bf_resolution_s * self.opts.sched_ticks_per_s;
        (t + self.opts.bf_clock_offset).div_euclid(res) * res - self.opts.bf_clock_offset
    }

    /// The select plugin's will-run test (`_will_run_test`): the earliest start of `job`
    /// outside `excluded`, projecting running jobs' ends, and the nodes it would get.
    fn will_run(&self, ctx: &mut PassCtx, job: u32, excluded: &NodeSet) -> Option<(i64, Vec<u32>)> {
        let now = ctx.now();
        let need = ctx.jobs[job as usize].nodes;
        let guard = Guard { excluded: Some(excluded), held_back_s: ctx.split().0.held_back_s(job, now), ..Guard::NONE };
        let topo = ctx.topo;
        let (core, alloc) = ctx.split();
        if let Some(nodes) = alloc.select(topo, &core.state, need, &guard) {
            return Some((now, nodes));
        }
        let mut projected = core.state.clone();
        let running: Vec<(i64, u32)> = core.running().iter().copied().collect();
        let tick = self.opts.sched_ticks_per_s;
        let mut window = self.opts.bf_will_run_window_s * tick;
        // cons_tres: jobs whose nodes are all outside the usable set are skipped
        let usable = |job: u32| core.nodes_of(job).iter().any(|&n| !excluded.contains(n));
        let mut group_end: Option<i64> = None;
        let mut i = 0;
        while i < running.len() {
            // release one job (linear) or one group of jobs ending close together (cons_tres)
            let mut last_end = None;
            while i < running.len() {
                let (end, r) = running[i];
                i += 1;
                if window > 0 && !usable(r) {
                    continue;
                }
                projected.release(topo, r, core.nodes_of(r), core.class_of(r));
                last_end = Some(end);
                if window == 0 {
                    break;
                }
                // aligned on the controller's clock (epoch seconds % time_window in job_test.c)
                let offset = self.opts.bf_clock_offset;
                let barrier = *group_end.get_or_insert_with(|| end + (window - (end + offset).rem_euclid(window)));
                match running.get(i) {
                    Some(&(next, _)) if next <= barrier + window => continue,
                    _ => break,
                }
            }
            let Some(last_end) = last_end else { break };
            if window > 0 {
                let barrier = group_end.unwrap_or(last_end);
                loop {
                    window *= 2;
                    match running.get(i) {
                        Some(&(next, _)) if next > barrier + window => continue,
                        _ => break,
                    }
                }
            }
            let start = if last_end <= now { now + tick } else { last_end };
            let guard = Guard { held_back_s: core.held_back_s(job, start), projected: true, ..guard };
            if let Some(nodes) = alloc.select(topo, &projected, need, &guard) {
                return Some((start, nodes));
            }
        }
        None
    }

    /// `_attempt_backfill`: one cycle at `ctx.now()`. Reservations are not logged with
    /// `PassCtx::log_reservation`: Slurm's are not binding (a job may start after its
    /// planned start, e.g. behind a higher-priority job at the next main pass).
    fn cycle(&mut self, ctx: &mut PassCtx) {
        let now = ctx.now();
        let tick = self.opts.sched_ticks_per_s;
        let res = self.opts.bf_resolution_s * tick;
        let n = ctx.topo.n_nodes();
        let mut tested = 0;
        let begin0 = self.floor_res(now);
        let window_end = self.floor_res(now + self.opts.bf_window_s * tick);
        let mut plan = vec![PlanRecord { begin: begin0, end: window_end, reserved: NodeSet::new(n) }];
        let queue: Vec<u32> = ctx.queue().iter().take(ctx.queue_depth).copied().collect();
        let mut started = Vec::new();
        for &job in &queue {
            if tested >= self.opts.bf_max_job_test {
                break; // "bf_max_job_test: limit of %d reached"
            }
            let spec = ctx.jobs[job as usize];
            let mut start_res = now;
            let mut counted = false;
            // Slurm bounds these retries by bf_max_time; the plan's boundaries lie on the
            // grid, so each retry moves start_res forward and the loop ends.
            for _ in 0..4 * plan.len() + 8 {
                let end_time = start_res + spec.walltime_s;
                let (mut excluded, later_start) = usable_nodes(&plan, start_res, end_time, n);
                // bit_and(avail_bitmap, part_ptr->node_bitmap): only the job's partition
                if let Some(outside) = self.partitions.excluded_for(job) {
                    for x in outside.iter_range(0..n as u32) {
                        excluded.insert(x);
                    }
                }
                let usable = (0..n as u32).filter(|&x| !excluded.contains(x) && ctx.state().owner(x) != crate::state::DOWN).count() as u32;
                if usable < spec.nodes {
                    match later_start {
                        Some(l) => {
                            start_res = l;
                            continue;
                        }
                        None => break,
                    }
                }
                if !counted {
                    tested += 1;
                    counted = true;
                }
                let Some((s, nodes)) = self.will_run(ctx, job, &excluded) else {
                    match later_start {
                        Some(l) => {
                            start_res = l;
                            continue;
                        }
                        None => break,
                    }
                };
                let s = s.max(start_res);
                let mut later_start = later_start;
                if s <= now {
                    // _start_job: the nodes of the plan are excluded from the selection
                    if ctx.try_start(job, &Guard { excluded: Some(&excluded), ..Guard::NONE }) {
                        started.push(job);
                        break;
                    }
                    later_start = None; // "planned start failed": reserve what the test found
                }
                if let Some(l) = later_start {
                    if s > l {
                        start_res = l; // "Try later when some nodes currently reserved ... are free"
                        continue;
                    }
                }
                if s > now + self.opts.bf_window_s * tick {
                    break; // "StartTime set to time after current backfill window"
                }
                let start_r = self.floor_res(s);
                let end_r = self.floor_res(s + spec.walltime_s);
                if s > now && overlaps(&plan, &nodes, start_r, end_r) {
                    start_res = s;
                    continue;
                }
                add_reservation(&mut plan, start_r, end_r, res, &nodes);
                break;
            }
        }
        if !started.is_empty() {
            ctx.queue_mut().retain(|j| !started.contains(j));
        }
        // _handle_planned(true): reserved nodes that are free now become PLANNED
        let planned_now = plan.iter().any(|r| (0..n as u32).any(|x| r.reserved.contains(x) && ctx.state().is_free(x)));
        // the next cycle's _handle_planned(false) updates the nodes again: more work
        self.dirty = planned_now || self.planned;
        self.planned = planned_now;
    }
}

/// The plan walk before `_try_sched`: nodes reserved in any record overlapping
/// `[start_res, end_time]` (the end inclusive, as backfill.c compares `begin_time <=
/// end_time`), and `later_start`: the end of the first such record after which some node
/// it (or an earlier overlapping record) holds is free (`!bit_super_set(next, current)`).
fn usable_nodes(plan: &[PlanRecord], start_res: i64, end_time: i64, n: usize) -> (NodeSet, Option<i64>) {
    let mut excluded = NodeSet::new(n);
    let mut later_start = None;
    for (j, rec) in plan.iter().enumerate() {
        if rec.end <= start_res {
            continue;
        }
        if later_start.is_none() {
            if let Some(next) = plan.get(j + 1) {
                let freed = (0..n as u32).any(|x| (excluded.contains(x) || rec.reserved.contains(x)) && !next.reserved.contains(x));
                if freed {
                    later_start = Some(rec.end);
                }
            }
        }
        if rec.begin <= end_time {
            for x in rec.reserved.iter_range(0..n as u32) {
                excluded.insert(x);
            }
        } else {
            break;
        }
    }
    (excluded, later_start)
}

/// `_test_resv_overlap`: would `nodes` over `[start, end)` take a node the plan reserves?
fn overlaps(plan: &[PlanRecord], nodes: &[u32], start: i64, end: i64) -> bool {
    plan.iter().any(|r| r.end > start && r.begin < end && nodes.iter().any(|&x| r.reserved.contains(x)))
}

/// `_add_reservation`: reserve `nodes` over `[start, end)`, at least one resolution long,
/// from the plan's start on; records are split at both ends; a record left equal to its
/// neighbour is merged with it.
fn add_reservation(plan: &mut Vec<PlanRecord>, start: i64, end: i64, res: i64, nodes: &[u32]) {
    let start = start.max(plan[0].begin);
    let end = end.max(start + res);
    for t in [start, end] {
        if let Some(i) = plan.iter().position(|r| r.begin < t && t < r.end) {
            let mut tail = plan[i].clone();
            tail.begin = t;
            plan[i].end = t;
            plan.insert(i + 1, tail);
        }
    }
    for r in plan.iter_mut().filter(|r| r.begin >= start && r.end <= end) {
        for &x in nodes {
            r.reserved.insert(x);
        }
    }
    let mut i = 0;
    while i + 1 < plan.len() {
        if plan[i].reserved == plan[i + 1].reserved {
            plan[i].end = plan[i + 1].end;
            plan.remove(i + 1);
        } else {
            i += 1;
        }
    }
}

impl QueuePolicy for SlurmBf {
    fn name(&self) -> String {
        "slurm-bf".into()
    }

    fn pass(&mut self, ctx: &mut PassCtx) {
        // a recalculation sets last_job_update: more work for the agent (_more_work)
        if self.priority.before_pass(ctx) {
            self.dirty = true;
        }
        // the main scheduler first: an event's pass runs at once, a cycle waits for the agent
        let due = self.clock.due(ctx);
        self.partitions.hold_over_limits(ctx, "slurm-bf");
        self.partitions.order_by_tier(ctx);
        if self.partitions.take_error_peek().is_some() {
            return;
        }
        if due {
            self.priority.queue_built(ctx);
            self.partitions.fifo(ctx);
        }
        if self.cycle_due(ctx) {
            self.priority.queue_built(ctx);
            self.cycle(ctx);
            self.seen = (ctx.version(), ctx.queue().len());
            self.next_wake = ctx.now() + self.opts.bf_interval_s * self.opts.sched_ticks_per_s;
            if self.dirty {
                ctx.wake_at(self.next_wake);
            }
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

    fn set(n: usize, nodes: &[u32]) -> NodeSet {
        let mut s = NodeSet::new(n);
        nodes.iter().for_each(|&x| s.insert(x));
        s
    }

    fn plan(begin: i64, end: i64) -> Vec<PlanRecord> {
        vec![PlanRecord { begin, end, reserved: NodeSet::new(4) }]
    }

    #[test]
    fn a_reservation_is_at_least_one_resolution_long_and_starts_at_the_plan() {
        // _add_reservation: start = MAX(start, node_space[0].begin_time); end at least start + resolution
        let mut p = plan(60, 600);
        add_reservation(&mut p, 0, 70, 60, &[1]);
        let spans: Vec<(i64, i64, bool)> = p.iter().map(|r| (r.begin, r.end, r.reserved.contains(1))).collect();
        assert_eq!(spans, vec![(60, 120, true), (120, 600, false)]);
    }

    #[test]
    fn records_split_and_merge_back() {
        let mut p = plan(0, 600);
        add_reservation(&mut p, 120, 240, 60, &[0, 1]);
        add_reservation(&mut p, 240, 360, 60, &[0, 1]);
        // same nodes on both sides of 240: one record, as Slurm's merge of identical bitmaps
        let spans: Vec<(i64, i64, u32)> = p.iter().map(|r| (r.begin, r.end, r.reserved.count())).collect();
        assert_eq!(spans, vec![(0, 120, 0), (120, 360, 2), (360, 600, 0)]);
    }

    #[test]
    fn the_walk_excludes_reservations_touching_the_end_and_finds_later_start() {
        let mut p = plan(0, 600);
        add_reservation(&mut p, 120, 240, 60, &[0, 1]);
        // a job over [30, 120]: the reservation beginning at 120 counts (begin_time <= end_time)
        let (ex, later) = usable_nodes(&p, 30, 120, 4);
        assert_eq!((ex, later), (set(4, &[0, 1]), Some(240)));
        // over [30, 119]: it does not; later_start is still looked for in the first record
        // past the job's end, before the walk stops there (backfill.c tests it first)
        let (ex, later) = usable_nodes(&p, 30, 119, 4);
        assert_eq!((ex, later), (set(4, &[]), Some(240)));
        // from 240 on the nodes are free again
        let (ex, later) = usable_nodes(&p, 240, 400, 4);
        assert_eq!((ex, later), (set(4, &[]), None));
    }

    #[test]
    fn overlap_is_half_open() {
        let mut p = plan(0, 600);
        add_reservation(&mut p, 120, 240, 60, &[2]);
        assert!(overlaps(&p, &[2], 60, 121));
        assert!(!overlaps(&p, &[2], 60, 120));
        assert!(!overlaps(&p, &[2], 240, 300));
        assert!(!overlaps(&p, &[1, 3], 0, 600));
    }

    #[test]
    fn the_grid_follows_the_controller_clock() {
        let bf = SlurmBf::new(SlurmBfOptions { sched_ticks_per_s: 1000, bf_clock_offset: 45_000, ..Default::default() });
        // time 0 is 00:00:45 on the controller: the minute begins at -45 s
        assert_eq!(bf.floor_res(0), -45_000);
        assert_eq!(bf.floor_res(15_000), 15_000);
        assert_eq!(bf.floor_res(14_999), -45_000);
    }

    #[test]
    fn options_are_slurms_defaults_and_bounds() {
        let o = SlurmBfOptions::default();
        assert_eq!((o.bf_interval_s, o.bf_window_s, o.bf_resolution_s, o.bf_max_job_test, o.bf_continue), (30, 86_400, 60, 500, false));
        let bad = SlurmBfOptions { bf_interval_s: 0, ..Default::default() };
        assert!(bad.check().unwrap_err().contains("bf_interval_s=0 is out of range"));
        let err = super::super::by_name("slurm-bf:bf_intervl_s=3", &Default::default()).err().unwrap();
        assert!(err.contains("unknown field"), "{err}");
    }
}

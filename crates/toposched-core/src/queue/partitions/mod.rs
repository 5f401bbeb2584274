//! Slurm 22.05's partitions with limits, as `slurm` and `slurm-bf` apply them (not a
//! policy; a directory, so not registered).
//!
//! A partition is a node set with limits (`PartitionName=... Nodes=... MaxTime=...
//! MaxNodes=... MinNodes=...`). What 22.05 does with them (tag `slurm-22-05-8-1`):
//! - **Where a job runs**: only on its partition's nodes. The allocation policy is not told
//!   about partitions: the queue policy passes every node outside the partition as the
//!   Guard's `excluded` set (as `sched/backfill` does with its plan), so every allocation
//!   policy that honours `excluded` works unchanged.
//! - **Limits** (`_part_access_check` in `job_mgr.c`, reached from `job_limits_check`), in
//!   this order: nodes asked > the partition's node count, < `MinNodes` or > `MaxNodes`:
//!   `PartitionNodeLimit`; time limit > `MaxTime`: `PartitionTimeLimit`. With
//!   `EnforcePartLimits=NO` (the default) the job is accepted and stays pending with that
//!   reason: `build_job_queue` leaves it out of the queue (`_job_runnable_test2`), so it
//!   never starts and never blocks another job. The limits never change during a replay,
//!   so such a job is *held*: it leaves the queue and the run reports it skipped with the
//!   reason (`PassCtx::hold`). (`EnforcePartLimits=ANY|ALL` refuses it at submission; a
//!   replay of such a site would not have the job at all.)
//! - **The main scheduler's FIFO pass** (`_schedule` in `job_scheduler.c`): a job that
//!   cannot start marks its partition failed (`fail_by_part`, `failed_parts`): later jobs
//!   of that partition are skipped (`_failed_partition`), and the partition's nodes are
//!   taken out of the pass's available nodes (`bit_and_not(avail_node_bitmap,
//!   part_ptr->node_bitmap)`), so a job of an overlapping partition cannot take them
//!   either. Jobs of other partitions go on.
//! - **Backfill** (`_attempt_backfill`): each job's usable nodes are its partition's
//!   (`bit_and(avail_bitmap, part_ptr->node_bitmap)`); the plan is shared by all partitions.
//! - A job without a partition runs in the first one listed (Slurm's `Default=YES`).
//! - **`PriorityTier`**: the job queue of both the main scheduler and backfill is sorted by
//!   the partition's tier first (higher first), then by priority (`sort_job_queue2` in
//!   `job_scheduler.c`): here a stable sort of the queue by tier at every pass, over the
//!   priority order the policy keeps.
//!
//! - **`PriorityJobFactor`** (`priority_job_factor`, default 1): multifactor's partition
//!   factor, the job's partition's factor over the highest (`norm_priority`), weighted by
//!   `PriorityWeightPartition` (the policy's `priority_weight_partition`).
//!
//! Written in options as `ID=NODES[:max_time_s=S][:max_nodes=N][:min_nodes=N][:priority_tier=N][:priority_job_factor=N]`, partitions
//! separated by `;`, NODES node id ranges joined by `+` (`0-15`, `0-7+16-23`, `4`), ID the
//! job's `partition` id (the Workload's `partition_id`). Empty: one partition of every node
//! without limits (the FIFO pass is then exactly `fcfs`'s).
//! *Not modelled*: `DefaultTime` (the job table always has a time limit: a log or stream
//! without one should be given the partition's `DefaultTime`, else its `MaxTime`, when it
//! is read), jobs asking for several partitions,
//! `PartitionName=... State=DOWN`, `AllowAccounts`/`AllowQos`, `OverSubscribe`.

use crate::alloc::Guard;
use crate::pass::PassCtx;
use crate::state::NodeSet;

/// One partition's settings, engine units (`max_time` in ticks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub id: u32,
    /// Node id ranges, inclusive at both ends.
    pub ranges: Vec<(u32, u32)>,
    pub max_time: Option<i64>,
    pub max_nodes: Option<u32>,
    pub min_nodes: u32,
    /// `PriorityTier`: jobs of a higher tier come first in the queue.
    pub priority_tier: u32,
    /// `PriorityJobFactor` (default 1): multifactor's partition factor.
    pub priority_job_factor: u32,
}

impl Partition {
    /// Its nodes, ascending, without repeats.
    pub fn nodes(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.ranges.iter().flat_map(|&(a, b)| a..=b).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// `_part_access_check`'s verdict for a job of `nodes` nodes and time limit `walltime`
    /// (ticks): the pending reason Slurm gives it, or None when it may run here.
    pub fn limit_reason(&self, nodes: u32, walltime: i64) -> Option<&'static str> {
        self.limit_broken(nodes, walltime, 1).map(|(reason, _)| reason)
    }

    /// As [`limit_reason`](Self::limit_reason), with the limit broken in words (times in
    /// seconds of `ticks_per_s` ticks).
    pub fn limit_broken(&self, nodes: u32, walltime: i64, ticks_per_s: i64) -> Option<(&'static str, String)> {
        let total = self.nodes().len() as u32;
        let node_limit = |what: String| Some(("PartitionNodeLimit", format!("{nodes} nodes, {what}")));
        if nodes > total {
            return node_limit(format!("the partition has {total}"));
        }
        if nodes < self.min_nodes {
            return node_limit(format!("MinNodes {}", self.min_nodes));
        }
        if let Some(m) = self.max_nodes.filter(|&m| nodes > m) {
            return node_limit(format!("MaxNodes {m}"));
        }
        if let Some(t) = self.max_time.filter(|&t| walltime > t) {
            let s = |x: i64| x as f64 / ticks_per_s as f64;
            return Some(("PartitionTimeLimit", format!("time limit {} s, MaxTime {} s", s(walltime), s(t))));
        }
        None
    }
}

/// Parse the `partitions` option (the format of this file's header); times in seconds
/// are scaled by `ticks_per_s`. `what` names the option in errors.
pub fn parse(text: &str, ticks_per_s: i64, what: &str) -> Result<Vec<Partition>, String> {
    let mut out: Vec<Partition> = Vec::new();
    for item in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = |why: String| format!("{what}: partition {item:?}: {why} (expected ID=NODES[:max_time_s=S][:max_nodes=N][:min_nodes=N][:priority_tier=N][:priority_job_factor=N], NODES like 0-15 or 0-7+16-23)");
        let mut fields = item.split(':');
        let head = fields.next().unwrap_or("");
        let (id, nodes) = head.split_once('=').ok_or_else(|| bad("no '='".into()))?;
        let id: u32 = id.trim().parse().map_err(|_| bad(format!("id {id:?} is not a whole number")))?;
        if out.iter().any(|p| p.id == id) {
            return Err(bad(format!("partition {id} is given twice")));
        }
        let mut ranges = Vec::new();
        for r in nodes.split('+') {
            let (a, b) = r.split_once('-').unwrap_or((r, r));
            let a: u32 = a.trim().parse().map_err(|_| bad(format!("node range {r:?} is not N or N-M")))?;
            let b: u32 = b.trim().parse().map_err(|_| bad(format!("node range {r:?} is not N or N-M")))?;
            if b < a {
                return Err(bad(format!("node range {r:?} ends before it starts")));
            }
            ranges.push((a, b));
        }
        let mut p = Partition { id, ranges, max_time: None, max_nodes: None, min_nodes: 0, priority_tier: 0, priority_job_factor: 1 };
        for f in fields {
            let (k, v) = f.split_once('=').ok_or_else(|| bad(format!("field {f:?} is not KEY=VALUE")))?;
            let v: i64 = v.trim().parse().map_err(|_| bad(format!("{k}={v:?} is not a whole number")))?;
            if v < 0 || v > u32::MAX as i64 {
                return Err(bad(format!("{k}={v} is out of range")));
            }
            match k.trim() {
                "max_time_s" => p.max_time = Some(v.saturating_mul(ticks_per_s)),
                "max_nodes" => p.max_nodes = Some(v as u32),
                "min_nodes" => p.min_nodes = v as u32,
                "priority_tier" => p.priority_tier = v as u32,
                "priority_job_factor" => p.priority_job_factor = v as u32,
                k => return Err(bad(format!("unknown field {k:?}"))),
            }
        }
        out.push(p);
    }
    Ok(out)
}

/// The partitions of one run, their node sets built for the fabric at the first pass.
#[derive(Clone, Debug, Default)]
pub struct Partitions {
    parts: Vec<Partition>,
    /// Per partition: every node outside it (what its jobs may not take).
    outside: Vec<NodeSet>,
    /// Per job row: its partition's index in `parts`, once looked at.
    index_of: Vec<Option<u32>>,
    /// Engine time units per second (for the reasons' words).
    ticks_per_s: i64,
    error: Option<String>,
}

impl Partitions {
    pub fn new(parts: Vec<Partition>, ticks_per_s: i64) -> Partitions {
        Partitions { parts, ticks_per_s: ticks_per_s.max(1), ..Partitions::default() }
    }

    /// True when partitions were given (otherwise every rule here is a no-op).
    pub fn enabled(&self) -> bool {
        !self.parts.is_empty()
    }

    /// An error that must stop the run (a job asks for an undefined partition, a
    /// partition names nodes the fabric does not have).
    pub fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }

    /// Whether an error is waiting (the walk must not run then).
    pub fn take_error_peek(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Hold the queued jobs a partition limit keeps pending forever (looked at once per
    /// job); call at every pass, before the queue is walked.
    pub fn hold_over_limits(&mut self, ctx: &mut PassCtx, policy: &str) {
        if !self.enabled() || self.error.is_some() {
            return;
        }
        let n = ctx.topo.n_nodes();
        if self.outside.is_empty() {
            for p in &self.parts {
                if let Some(&(_, b)) = p.ranges.iter().find(|&&(_, b)| b as usize >= n) {
                    self.error = Some(format!("queue {policy}: partition {} names node {b}, the fabric has {n} nodes (ids 0-{})", p.id, n.saturating_sub(1)));
                    return;
                }
                let mut out = NodeSet::new(n);
                out.set_range(0..n as u32, true);
                for x in p.nodes() {
                    out.remove(x);
                }
                self.outside.push(out);
            }
        }
        if self.index_of.len() < ctx.jobs.len() {
            self.index_of.resize(ctx.jobs.len(), None);
        }
        let mut held = Vec::new();
        for &row in ctx.queue() {
            if self.index_of[row as usize].is_some() {
                continue;
            }
            let job = &ctx.jobs[row as usize];
            let k = match job.partition {
                None => 0,
                Some(id) => match self.parts.iter().position(|p| p.id == id) {
                    Some(k) => k,
                    None => {
                        let ids: Vec<String> = self.parts.iter().map(|p| p.id.to_string()).collect();
                        self.error = Some(format!("queue {policy}: job row {row} asks for partition {id}; the partitions option defines {}", ids.join(", ")));
                        return;
                    }
                },
            };
            self.index_of[row as usize] = Some(k as u32);
            let p = &self.parts[k];
            if let Some((reason, what)) = p.limit_broken(job.nodes, job.walltime_s, self.ticks_per_s) {
                held.push((row, format!("held pending by partition {}'s limits (Slurm reason {reason}): {what}", p.id)));
            }
        }
        for (row, why) in held {
            ctx.hold(row, why);
        }
    }

    /// `sort_job_queue2`: jobs of a higher `PriorityTier` first, the policy's order kept
    /// within a tier. Call after [`hold_over_limits`](Self::hold_over_limits).
    pub fn order_by_tier(&self, ctx: &mut PassCtx) {
        if !self.parts.iter().any(|p| p.priority_tier != self.parts[0].priority_tier) {
            return;
        }
        let tier: Vec<u32> = ctx.queue().iter().map(|&row| self.parts[self.outside_of(row).0].priority_tier).collect();
        if tier.windows(2).all(|w| w[0] >= w[1]) {
            return;
        }
        let mut keyed: Vec<(u32, u32)> = tier.into_iter().zip(ctx.queue().iter().copied()).collect();
        keyed.sort_by_key(|&(t, _)| std::cmp::Reverse(t)); // stable
        *ctx.queue_mut() = keyed.into_iter().map(|(_, row)| row).collect();
    }

    /// The nodes a queued job may not take (outside its partition). Call after
    /// [`hold_over_limits`](Self::hold_over_limits) has seen the job.
    fn outside_of(&self, row: u32) -> (usize, &NodeSet) {
        let k = self.index_of[row as usize].expect("partition looked up before the walk") as usize;
        (k, &self.outside[k])
    }

    /// Every node outside the job's partition, or None without partitions.
    pub fn excluded_for(&self, row: u32) -> Option<&NodeSet> {
        self.enabled().then(|| self.outside_of(row).1)
    }

    /// `_schedule`'s walk: jobs in queue order (at most `queue_depth`); a job that cannot
    /// start fails its partition: later jobs of it are skipped and its nodes are out of the
    /// pass for everyone. Without partitions, exactly `fcfs`'s pass.
    pub fn fifo(&self, ctx: &mut PassCtx) {
        if !self.enabled() {
            super::fcfs::fifo(ctx);
            return;
        }
        let n = ctx.topo.n_nodes();
        let mut failed = vec![false; self.parts.len()];
        // nodes of failed partitions (bit_and_not(avail_node_bitmap, part nodes))
        let mut taken_out = NodeSet::new(n);
        let mut started = Vec::new();
        let depth = ctx.queue().len().min(ctx.queue_depth);
        let queue: Vec<u32> = ctx.queue()[..depth].to_vec();
        for job in queue {
            let (k, outside) = self.outside_of(job);
            if failed[k] {
                continue;
            }
            let mut excluded = outside.clone();
            for x in taken_out.iter_range(0..n as u32) {
                excluded.insert(x);
            }
            if ctx.try_start(job, &Guard { excluded: Some(&excluded), ..Guard::NONE }) {
                started.push(job);
            } else {
                failed[k] = true;
                for x in self.parts[k].nodes() {
                    taken_out.insert(x);
                }
                if failed.iter().all(|&f| f) {
                    break;
                }
            }
        }
        if !started.is_empty() {
            ctx.queue_mut().retain(|j| !started.contains(j));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_form_and_refuses_clearly() {
        let p = parse("0=0-15:max_time_s=300:max_nodes=8; 1=16-31+4:min_nodes=2:priority_tier=3", 1000, "queue slurm").unwrap();
        assert_eq!((p[0].priority_tier, p[1].priority_tier), (0, 3));
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].max_time, p[0].max_nodes, p[0].min_nodes), (Some(300_000), Some(8), 0));
        assert_eq!(p[1].nodes().len(), 17);
        assert_eq!(p[1].min_nodes, 2);
        assert!(parse("0=0-15;0=16-31", 1, "q").unwrap_err().contains("given twice"));
        assert!(parse("0=15-3", 1, "q").unwrap_err().contains("ends before"));
        assert!(parse("0=0-3:max_time=5", 1, "q").unwrap_err().contains("unknown field"));
        assert!(parse("a=0-3", 1, "q").unwrap_err().contains("not a whole number"));
        assert!(parse("", 1, "q").unwrap().is_empty());
    }
}

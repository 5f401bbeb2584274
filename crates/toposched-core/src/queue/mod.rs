//! Queue policies: who goes next, and what a reservation protects. One file per policy.
//!
//! A queue policy runs once per scheduling pass (see `crate::engine` for when passes
//! happen). It walks the queue (submit order, ties in trace order) and starts jobs through
//! [`PassCtx::try_start`]; the allocation policy chooses the nodes.

mod conservative;
mod easy;
mod fcfs;
mod slurm_backfill;

pub use conservative::Conservative;
pub use easy::{Easy, EasyOptions, ReservationRecord};
pub use fcfs::Fcfs;
pub use slurm_backfill::{SlurmOptions, SlurmSched};

use crate::alloc::{Allocator, Guard};
use crate::engine::Core;
use crate::topology::Topology;
use crate::workload::Job;

/// Everything a queue policy may read or do during one pass.
pub struct PassCtx<'a> {
    pub topo: &'a Topology,
    pub jobs: &'a [Job],
    pub alloc: &'a mut dyn Allocator,
    pub core: &'a mut Core,
    /// Only the first `queue_depth` queued jobs are considered in a pass.
    pub queue_depth: usize,
}

impl PassCtx<'_> {
    pub fn now(&self) -> i64 {
        self.core.now
    }
    pub fn n_free(&self) -> u32 {
        self.core.state.n_free()
    }
    /// Ask the allocation policy for nodes and start the job on them if it finds some.
    pub fn try_start(&mut self, job: u32, guard: &Guard) -> bool {
        let nodes = self.jobs[job as usize].nodes;
        if nodes > self.core.state.n_free() {
            return false;
        }
        match self.alloc.select(self.topo, &self.core.state, nodes, guard) {
            Some(chosen) if self.core.switches_allow(self.topo, job, &chosen) => {
                self.core.start(self.topo, self.jobs, job, chosen);
                true
            }
            _ => false,
        }
    }
}

impl PassCtx<'_> {
    /// Start `job` on exactly `nodes` (a binding reservation) if they are all free and the
    /// job's `--switches` limit allows them now.
    pub fn try_start_on(&mut self, job: u32, nodes: &[u32]) -> bool {
        if nodes.len() != self.jobs[job as usize].nodes as usize || !nodes.iter().all(|&n| self.core.state.is_free(n)) {
            return false;
        }
        if !self.core.switches_allow(self.topo, job, nodes) {
            return false;
        }
        self.core.start(self.topo, self.jobs, job, nodes.to_vec());
        true
    }
}

/// A queue policy.
pub trait QueuePolicy: Send + Sync {
    fn name(&self) -> String;
    /// One scheduling pass at `ctx.now()`. Started jobs must be removed from
    /// `ctx.core.queue`; the relative order of the others must not change.
    fn pass(&mut self, ctx: &mut PassCtx);

    /// An error that must stop the run (see [`Allocator::take_error`]).
    fn take_error(&mut self) -> Option<String> {
        None
    }
}

/// Names the CLI accepts.
pub const QUEUES: &[&str] = &["fcfs", "easy", "conservative", "slurm"];

/// Build a queue policy from its CLI name (`slurm` takes parameters: `slurm:KEY=V,..`;
/// bad ones give None, as an unknown name does).
pub fn by_name(name: &str, easy: EasyOptions) -> Option<Box<dyn QueuePolicy>> {
    if let Some(params) = name.strip_prefix("slurm:") {
        return SlurmOptions::parse(params).ok().map(|o| Box::new(SlurmSched::new(o)) as Box<dyn QueuePolicy>);
    }
    match name {
        "slurm" => Some(Box::new(SlurmSched::new(SlurmOptions::default()))),
        "fcfs" => Some(Box::new(Fcfs)),
        "easy" => Some(Box::new(Easy::new(easy))),
        "conservative" => Some(Box::new(Conservative::new())),
        _ => None,
    }
}

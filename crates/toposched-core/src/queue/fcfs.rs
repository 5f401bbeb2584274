//! `fcfs`: strict first come, first served.
//!
//! *What it does*: starts queued jobs in submit order while the allocation policy can
//! place them; the first job it cannot place blocks every job behind it.
//! *When to use*: the baseline without backfilling.
//! *Cost*: O(started jobs) per pass.

use super::{PassCtx, QueueEntry, QueuePolicy};
use crate::alloc::Guard;
use crate::options::{parse_options, schema_of, NoOptions};

#[derive(Clone, Copy, Debug, Default)]
pub struct Fcfs;

pub static POLICY: QueueEntry = QueueEntry {
    name: "fcfs",
    summary: "strict first come, first served: the first job that cannot start blocks the queue",
    options: schema_of::<NoOptions>,
    build: |o| {
        parse_options::<NoOptions>("fcfs", o)?;
        Ok(Box::new(Fcfs))
    },
};

impl QueuePolicy for Fcfs {
    fn name(&self) -> String {
        "fcfs".into()
    }
    fn pass(&mut self, ctx: &mut PassCtx) {
        fifo(ctx);
    }
}

/// Start queued jobs in order while they can be placed (also Slurm's main-scheduler pass).
pub(crate) fn fifo(ctx: &mut PassCtx) {
    let mut started = 0;
    while started < ctx.queue().len() && started < ctx.queue_depth {
        let job = ctx.queue()[started];
        if !ctx.try_start(job, &Guard::NONE) {
            break;
        }
        started += 1;
    }
    ctx.queue_mut().drain(..started);
}

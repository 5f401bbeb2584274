//! Queue policies: who goes next, and what a reservation protects. One file per policy.
//!
//! A queue policy runs once per scheduling pass (see `crate::engine` for when passes
//! happen). It walks the queue (submit order, ties in trace order) and starts jobs through
//! [`PassCtx::try_start`]; the allocation policy chooses the nodes.

// `pub mod fcfs; ...` for every file of this directory, and `REGISTERED` (build.rs).
include!(concat!(env!("OUT_DIR"), "/queue_registry.rs"));
/// Slurm's priority/multifactor: the queue order of `slurm` and `slurm-bf` (not a policy).
pub mod multifactor;
/// Slurm's partitions with limits: what `slurm` and `slurm-bf` share (not a policy).
pub mod partitions;

pub use conservative::Conservative;
pub use easy::{BackfillScan, Easy, EasyOptions, ReservationUpdate};
pub use fcfs::Fcfs;
pub use slurm_backfill::{SlurmOptions, SlurmSched};
pub use slurm_bf::{SlurmBf, SlurmBfOptions};

pub use crate::pass::{PassCtx, ReservationRecord};
use crate::options::Options;

/// A queue policy.
pub trait QueuePolicy: Send + Sync {
    fn name(&self) -> String;
    /// One scheduling pass at `ctx.now()`. Started jobs must be removed from
    /// `ctx.queue_mut()`; the relative order of the others must not change.
    fn pass(&mut self, ctx: &mut PassCtx);

    /// An error that must stop the run (see [`crate::alloc::Allocator::take_error`]).
    fn take_error(&mut self) -> Option<String> {
        None
    }

    /// Why this policy needs every row before the replay starts, if it does: then rows
    /// cannot be appended to a running replay (`Engine::append`). A streamable policy
    /// reads only queued and running rows and keeps no state that grows with the log.
    fn whole_log_only(&self) -> Option<String> {
        None
    }
}

/// What a queue policy file declares as `pub static POLICY` (collected by build.rs into
/// [`REGISTERED`]; `crate::registry` reads it).
pub struct QueueEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub options: fn() -> schemars::Schema,
    pub build: fn(&Options) -> Result<Box<dyn QueuePolicy>, String>,
}


/// Build a registered queue policy from its CLI name and its options (see `crate::registry`).
/// A name may carry options after a colon, `slurm:ticks_per_s=1000,tick_phase=3`
/// (see [`crate::options::split_params`]).
pub fn by_name(name: &str, options: &Options) -> Result<Box<dyn QueuePolicy>, String> {
    let (name, options) = crate::options::split_params(name, options)?;
    let name = name.as_str();
    let entry = REGISTERED.iter().map(|r| r.policy).find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = REGISTERED.iter().map(|r| r.policy.name).collect();
        format!("unknown queue policy {name:?}; built-ins are: {}", names.join(", "))
    })?;
    (entry.build)(&options)
}

//! Queue policies: who goes next, and what a reservation protects. One file per policy.
//!
//! A queue policy runs once per scheduling pass (see `crate::engine` for when passes
//! happen). It walks the queue (submit order, ties in trace order) and starts jobs through
//! [`PassCtx::try_start`]; the allocation policy chooses the nodes.

// `pub mod fcfs; ...` for every file of this directory, and `REGISTERED` (build.rs).
include!(concat!(env!("OUT_DIR"), "/queue_registry.rs"));

pub use conservative::Conservative;
pub use easy::{Easy, EasyOptions};
pub use fcfs::Fcfs;

pub use crate::pass::{PassCtx, ReservationRecord};

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
}

/// Build a registered queue policy from its CLI name and its options (see `crate::registry`).
pub fn by_name(name: &str, options: &crate::registry::Options) -> Result<Box<dyn QueuePolicy>, String> {
    let entry = crate::registry::queue(name)
        .ok_or_else(|| format!("unknown queue policy {name:?}; built-ins are: {}", crate::registry::queue_names().join(", ")))?;
    (entry.build)(options)
}

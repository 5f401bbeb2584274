//! toposched-core: a topology-aware HPC scheduling simulator, in pure Rust.
//!
//! Module map (ARCHITECTURE.md says more):
//! - [`topology`]: fat-tree fabrics, presets, hops.
//! - [`workload`]: the job table the engine replays.
//! - [`state`]: who holds which node.
//! - [`alloc`]: allocation policies (which nodes), one file each.
//! - [`queue`]: queue policies (who goes next), one file each.
//! - [`registry`]: every policy's name, docs, options schema and builder (generated list).
//! - [`engine`]: the discrete-event loop and its total event order.
//! - [`rows`]: per-row vectors addressed by absolute job row over a window (streamed replays).
//! - [`planner`]: free nodes over time, the projected future queue policies reason on.
//! - [`live`]: live placement (`toposched serve`): the same allocators, one request at a time.
//! - [`metrics`]: APH, bounded slowdown, utilization sampling.

pub mod alloc;
pub mod engine;
pub mod live;
pub mod metrics;
pub mod network;
pub mod options;
pub mod pass;
pub mod planner;
pub mod queue;
pub mod registry;
pub mod rows;
pub mod state;
pub mod topology;
pub mod workload;

pub use engine::{Engine, EngineOptions, EventOrder, JobStatus, Outcome, SimError};
pub use topology::{Topology, TopologyError};
pub use workload::Job;

//! Network interference model: which links each job loads, and how co-running jobs share
//! them (research/network-model.md §3; docs/network.md).
//!
//! - [`links`]: every directed link of the fat-tree (split duplex), dense ids, capacities.
//! - [`routing`]: static D-mod-k routes in O(levels), from padded node ids.
//! - [`patterns`]: communication patterns as rank-level flows per iteration.
//! - [`demand`]: a job's per-link bytes, flows and input ports; its time alone and ideal.
//! - [`solver`]: the weighted job-level fair-bottleneck solve.
//! - [`progressive`]: per-flow max-min in time (event-driven progressive filling).
//! - [`queueing`]: queueing delay of messages on loaded links (M/D/1 per link).
//! - [`share`]: the set of jobs on the network, hot-link components, duty-cycle correction.
//! - [`model`]: a fabric's model and the one-shot evaluation of co-running jobs.
//! - [`replay`]: the closed loop inside the replay engine (progress follows slowdown).

pub mod demand;
pub mod links;
pub mod model;
pub mod patterns;
pub mod progressive;
pub mod queueing;
pub mod replay;
pub mod routing;
pub mod share;
pub mod solver;

#[cfg(test)]
mod tests;

pub use demand::{check_flow_bytes, Demand, DemandBuilder, Traffic, MAX_FLOW_BYTES};
pub use links::{Bandwidth, LinkKind, Links};
pub use model::{Evaluation, Filling, JobResult, JobSpec, NetConfig, Network, CATALYST_SL_WEIGHTS, PROGRESSIVE_AUTO_MAX_FLOWS, PROGRESSIVE_ITERATIONS};
pub use patterns::{Pattern, PATTERNS};
pub use replay::{JobNetResult, JobTraffic, NetReplay, Reference, ReplayStats};
pub use routing::{Route, Router};
pub use share::{dilation, Active, Fairness, Shared};

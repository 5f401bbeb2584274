//! Allocation policies: which nodes a job gets. One file per policy, one trait for all.
//!
//! An allocation policy only *chooses*; the engine applies the choice to the
//! [`ClusterState`]. A policy never sees the queue: who goes next and which reservation
//! holds is the queue policy's business (`crate::queue`).

// `pub mod linear; ...` for every file of this directory, and `REGISTERED` (build.rs).
include!(concat!(env!("OUT_DIR"), "/alloc_registry.rs"));

// Helpers shared by several policy files (a directory: build.rs registers files only).
pub mod tiers;

pub use isolated::{Isolated, IsolatedOptions, LeafOrder, TieBreak};
pub use linear::Linear;
pub use random::{Random, RandomOptions};
pub use slurm_tree::{SlurmProfile, SlurmTree, SlurmTreeOptions};

use crate::options::Options;
use crate::state::{ClusterState, NodeSet};
pub use crate::state::Tracker;
use crate::topology::{SpanClass, Topology};

/// What a reservation held by the queue policy holds: its node set and how far that set
/// spreads. Each allocation policy decides what that forbids a job that would still be
/// running when the reservation starts (beyond the guard's excluded nodes); `isolated`,
/// for one, closes the reservation's leaves to leaf-spanning jobs if it spans leaves.
#[derive(Clone, Copy, Debug)]
pub struct Reserved<'a> {
    /// The reserved nodes, ascending.
    pub nodes: &'a [u32],
    /// The span class of the reserved node set.
    pub class: SpanClass,
    /// Names the reservation's contents, or 0: two reservations with the same nonzero
    /// stamp hold the same nodes and class, so a policy that keeps what a guard gives may
    /// recognise it without comparing the node lists (EASY asks about every backfill
    /// candidate under one reservation of up to thousands of nodes). From
    /// [`Reserved::fresh_stamp`].
    pub stamp: u64,
}

impl Reserved<'_> {
    /// A stamp no reservation has carried before (never 0).
    pub fn fresh_stamp() -> u64 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

/// The circumstances of one placement question: what the reservations held by the queue
/// policy forbid a job that would still be running when they start, how long the policy
/// has held the job back, and whether the state asked about is the machine now or a projection of it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Guard<'a> {
    /// Nodes the job may not take.
    pub excluded: Option<&'a NodeSet>,
    /// The reservations the job must not make impossible (EASY: the head's; conservative:
    /// every reservation overlapping the job's window). What they forbid beyond
    /// `excluded` is the allocation policy's business: fungible policies ignore them.
    pub reserved: &'a [Reserved<'a>],
    /// Seconds the allocation policy has held the job back at the instant asked about:
    /// since it first declined the job free nodes it could have had (enough free nodes
    /// that no reservation excluded), as Slurm counts a `--switches` wait from the first
    /// attempt; 0 before, for policies without [`Allocator::patience_s`], and in live
    /// placement. Only a policy that trades waiting against placement (`adaptive`) reads it.
    pub held_back_s: i64,
    /// True when the state is a projection of the future (a reservation being planned)
    /// rather than the machine now. A policy whose answer depends on more than which
    /// nodes are free and the guard (`adaptive`: the network model's prediction) must
    /// then answer only what the guard keeps true until the reservation starts, so that
    /// the job can be placed when it does.
    pub projected: bool,
}

impl Guard<'_> {
    pub const NONE: Guard<'static> = Guard { excluded: None, reserved: &[], held_back_s: 0, projected: false };

    #[inline]
    pub fn excludes(&self, node: u32) -> bool {
        self.excluded.is_some_and(|s| s.contains(node))
    }
}

/// A node-allocation policy.
pub trait Allocator: Send + Sync {
    /// Name as the CLI spells it.
    fn name(&self) -> String;

    /// True when any free nodes serve a job equally, so that reservations can be node
    /// *counts* (classic EASY). False when the policy's constraints make a reservation a
    /// specific node set (brief §2.6).
    fn fungible(&self) -> bool;

    /// `Ok` if a job of `nodes` nodes could be placed on this fabric with every healthy
    /// node free; otherwise why not. Jobs that fail this are reported and skipped.
    fn check_fits_ever(&self, topo: &Topology, empty: &ClusterState, nodes: u32) -> Result<(), String>;

    /// Choose `nodes` free nodes (ascending ids are not required), honouring `guard`, or
    /// None when the policy cannot place the job now.
    fn select(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>>;

    /// Whether [`select`](Self::select) would succeed. Policies with a cheaper exact test
    /// override it; it must agree with `select`.
    fn feasible(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> bool {
        self.select(topo, state, nodes, guard).is_some()
    }

    /// A class within which placement only gets harder as jobs grow: for a fixed machine
    /// state and guard, if a job of `n` nodes of this class cannot be placed, no larger
    /// job of the same class can. Queue policies use it to skip hopeless jobs. None (the
    /// default) promises nothing.
    fn monotone_class(&self, _topo: &Topology, _nodes: u32) -> Option<u8> {
        None
    }

    /// Counters of the policy's own that must follow every allocation and release (e.g.
    /// `isolated`'s spanning jobs per leaf and pod), or None (the default). Whoever builds
    /// the [`ClusterState`] a policy works on installs it ([`new_state`]); the state then
    /// tells it of every allocation and release and copies it with itself (projections).
    /// A wrapper around another allocator must forward this.
    fn tracker(&self, _topo: &Topology) -> Option<Box<dyn Tracker>> {
        None
    }

    /// True when the policy promises that placement only gets easier as jobs end: for a
    /// fixed job size and guard, if [`select`](Self::select) places the job on a state, it
    /// also places it on that state with any running job released; and its answer depends
    /// on nothing but the state's contents and the guard's `excluded` and `reserved` (not
    /// on `held_back_s`, `projected`, the time, or anything the policy remembers). EASY
    /// then keeps its projection of the machine across passes and moves its reservation
    /// instant by what changed instead of rebuilding it (`crate::queue::easy`, *Cost*);
    /// both give the same reservation only under this promise. False (the default): a
    /// policy must show it by its own rule (`isolated`, `capped`, `jigsaw` do); one that
    /// cannot (policies written in Python, `adaptive`'s patience) gets the full search.
    fn release_monotone(&self) -> bool {
        false
    }

    /// How long the policy may refuse a job free nodes it could use while it waits for a
    /// better placement (`adaptive`: the bound on the wait for isolation, seconds since it
    /// first declined the job: `Guard::held_back_s`), or None (the default: a refusal
    /// means the job cannot be placed). The engine then notes when the policy first
    /// declines each job, runs a pass when the bound runs out (so the job is placed then
    /// even if nothing else happens), and plans reservations for that instant too.
    fn patience_s(&self) -> Option<i64> {
        None
    }

    /// An error that must stop the run (a policy written in Python that raised or returned
    /// an invalid allocation). The engine asks after every pass and every submit check.
    fn take_error(&mut self) -> Option<String> {
        None
    }
}

/// The state a replay or a live placer starts from: every node free but `down`, with the
/// allocator's tracker installed.
pub fn new_state(alloc: &dyn Allocator, topo: &Topology, down: &[u32]) -> ClusterState {
    let mut state = ClusterState::new(topo, down);
    if let Some(t) = alloc.tracker(topo) {
        state.install_tracker(topo, t);
    }
    state
}

/// Free nodes not excluded by the guard, ascending.
pub(crate) fn free_unguarded<'a>(state: &'a ClusterState, topo: &Topology, guard: &'a Guard) -> impl Iterator<Item = u32> + 'a {
    state.free_set().iter_range(0..topo.n_nodes() as u32).filter(move |&n| !guard.excludes(n))
}

/// The check every policy starts from: enough healthy nodes in total.
pub fn fits_in_machine(empty: &ClusterState, nodes: u32) -> Result<(), String> {
    let healthy = empty.n_healthy();
    if nodes == 0 {
        Err("job asks for 0 nodes".into())
    } else if nodes > healthy {
        Err(format!("asks for {nodes} nodes; the machine has {healthy}"))
    } else {
        Ok(())
    }
}

/// What an allocation policy file declares as `pub static POLICY` (collected by build.rs
/// into [`REGISTERED`]; `crate::registry` reads it).
pub struct AllocEntry {
    /// Name as the CLI spells it (`--alloc NAME`).
    pub name: &'static str,
    /// One line for `--help` and the catalogue.
    pub summary: &'static str,
    /// Any free nodes serve a job equally: reservations can be counts (brief §2.6). Must
    /// agree with [`Allocator::fungible`] of what `build` returns (tested).
    pub fungible: bool,
    /// Placement depends on the fabric, so the speedup scenarios apply to its runs.
    pub topology_aware: bool,
    /// JSON schema of the options object (`schemars::schema_for!(TheOptions)`).
    pub options: fn() -> schemars::Schema,
    /// The policy, from its options (already checked to be a JSON object).
    pub build: fn(&Options) -> Result<Box<dyn Allocator>, String>,
}


/// Build a registered allocation policy from its CLI name and its options (a JSON object;
/// an empty one for the defaults). See `crate::registry`.
pub fn by_name(name: &str, options: &Options) -> Result<Box<dyn Allocator>, String> {
    let entry = REGISTERED.iter().map(|r| r.policy).find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = REGISTERED.iter().map(|r| r.policy.name).collect();
        format!("unknown allocation policy {name:?}; built-ins are: {}", names.join(", "))
    })?;
    (entry.build)(options)
}

/// What the allocation policies' unit tests share.
#[cfg(test)]
pub(crate) mod test_util {
    use super::{new_state, Allocator, Guard};
    use crate::state::ClusterState;
    use crate::topology::Topology;

    /// Place jobs one after another with `a` on `topo` (after `pre`: jobs 1000, 1001, ...
    /// on the given nodes); None for a refusal. Checks that `feasible` agrees with `select`,
    /// and runs `check` on the state after every placement.
    pub fn place_in_turn(
        topo: &Topology,
        a: &mut dyn Allocator,
        pre: &[Vec<u32>],
        sizes: &[u32],
        check: impl Fn(&ClusterState),
    ) -> Vec<Option<Vec<u32>>> {
        let mut s = new_state(a, topo, &[]);
        for (j, nodes) in pre.iter().enumerate() {
            s.allocate(topo, 1000 + j as u32, nodes, topo.span_class(nodes));
        }
        sizes
            .iter()
            .enumerate()
            .map(|(j, &n)| {
                let got = a.select(topo, &s, n, &Guard::NONE).map(|mut v| {
                    v.sort_unstable();
                    v
                });
                assert_eq!(got.is_some(), a.feasible(topo, &s, n, &Guard::NONE), "feasible disagrees for job {j}");
                if let Some(nodes) = &got {
                    s.allocate(topo, j as u32, nodes, topo.span_class(nodes));
                    check(&s);
                }
                got
            })
            .collect()
    }
}

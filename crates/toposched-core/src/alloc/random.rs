//! `random`: free nodes drawn uniformly at random (seeded).
//!
//! *What it does*: a uniform sample of the free nodes, from a ChaCha8 stream seeded by the
//! run's seed, so the same seed gives the same placements on every platform.
//! *When to use*: the worst case of topology obliviousness (a long-running machine whose
//! free list has been shuffled by churn).
//! *Cost*: O(nodes) per selection.
//! *Reference*: the scattered allocations of the SC18 paper's Fig. 1.

use rand::seq::index::sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{AllocEntry, Allocator, Guard, fits_in_machine, free_unguarded};
use crate::options::{parse_options, schema_of};
use crate::state::ClusterState;
use crate::topology::Topology;

/// Options of `random`.
#[derive(Clone, Copy, Debug, Default, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RandomOptions {
    /// Seed of the ChaCha8 stream the nodes are drawn from (the run's --seed).
    pub seed: u64,
}

pub static POLICY: AllocEntry = AllocEntry {
    name: "random",
    summary: "free nodes drawn uniformly at random from a seeded stream",
    fungible: true,
    topology_aware: false,
    options: schema_of::<RandomOptions>,
    build: |o| Ok(Box::new(Random::new(parse_options::<RandomOptions>("random", o)?.seed))),
};

#[derive(Clone, Debug)]
pub struct Random {
    rng: ChaCha8Rng,
}

impl Random {
    pub fn new(seed: u64) -> Random {
        Random { rng: ChaCha8Rng::seed_from_u64(seed) }
    }
}

impl Allocator for Random {
    fn name(&self) -> String {
        "random".into()
    }
    fn fungible(&self) -> bool {
        true
    }
    fn check_fits_ever(&self, _topo: &Topology, empty: &ClusterState, nodes: u32) -> Result<(), String> {
        fits_in_machine(empty, nodes)
    }
    fn select(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        if nodes > state.n_free() {
            return None;
        }
        let free: Vec<u32> = free_unguarded(state, topo, guard).collect();
        if free.len() < nodes as usize {
            return None;
        }
        let mut chosen: Vec<u32> = sample(&mut self.rng, free.len(), nodes as usize).into_iter().map(|i| free[i]).collect();
        chosen.sort_unstable();
        Some(chosen)
    }
    fn feasible(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> bool {
        // Must not draw from the stream: a feasibility probe may not change later choices.
        nodes <= state.n_free() && free_unguarded(state, topo, guard).take(nodes as usize).count() == nodes as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_nodes() {
        let t = Topology::preset("cab").unwrap();
        let s = ClusterState::new(&t, &[]);
        let a = Random::new(7).select(&t, &s, 40, &Guard::NONE).unwrap();
        let b = Random::new(7).select(&t, &s, 40, &Guard::NONE).unwrap();
        let c = Random::new(8).select(&t, &s, 40, &Guard::NONE).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 40);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
    }
}

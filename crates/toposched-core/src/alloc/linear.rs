//! `linear`: the lowest free node ids, whatever the topology.
//!
//! *What it does*: first fit over node ids in leaf-major order, i.e. what a resource
//! manager does when it ignores the fabric (Flux's fast backfill walks its resource tree
//! depth-first; Slurm without a topology plugin fills a 1-D node array).
//! *When to use*: the topology-oblivious baseline ("TO" in the SC18 paper).
//! *Cost*: O(nodes / 64 + job size) per selection.
//! *Reference*: brief §5.4.

use super::{AllocEntry, Allocator, Guard, fits_in_machine, free_unguarded};
use crate::options::{parse_options, schema_of, NoOptions};
use crate::state::ClusterState;
use crate::topology::Topology;

#[derive(Clone, Copy, Debug, Default)]
pub struct Linear;

pub static POLICY: AllocEntry = AllocEntry {
    name: "linear",
    summary: "the lowest free node ids, whatever the topology (the topology-oblivious baseline)",
    fungible: true,
    topology_aware: false,
    options: schema_of::<NoOptions>,
    build: |o| {
        parse_options::<NoOptions>("linear", o)?;
        Ok(Box::new(Linear))
    },
};

impl Allocator for Linear {
    fn name(&self) -> String {
        "linear".into()
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
        let chosen: Vec<u32> = free_unguarded(state, topo, guard).take(nodes as usize).collect();
        (chosen.len() == nodes as usize).then_some(chosen)
    }
    fn feasible(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> bool {
        if guard.excluded.is_none() {
            nodes <= state.n_free()
        } else {
            free_unguarded(state, topo, guard).take(nodes as usize).count() == nodes as usize
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_lowest_free_ids() {
        let t = Topology::preset("toy18").unwrap();
        let mut s = ClusterState::new(&t, &[1]);
        s.allocate(&t, 0, &[0, 3], crate::topology::SpanClass::Pod);
        let got = Linear.select(&t, &s, 3, &Guard::NONE).unwrap();
        assert_eq!(got, vec![2, 4, 5]);
        assert!(Linear.select(&t, &s, 16, &Guard::NONE).is_none());
        assert!(Linear.check_fits_ever(&t, &ClusterState::new(&t, &[1]), 18).is_err());
    }
}

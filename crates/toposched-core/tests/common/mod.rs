//! What several integration test files share (a directory, so cargo does not build it as
//! a test of its own). Each file uses a part of it.
#![allow(dead_code)]

use proptest::prelude::*;
use toposched_core::alloc::{self, Allocator, IsolatedOptions, LeafOrder, RandomOptions, TieBreak};
use toposched_core::registry::Options;
use toposched_core::{Job, Topology};

/// A policy's options struct as the JSON object the registry takes.
pub fn options_of<T: serde::Serialize>(t: T) -> Options {
    serde_json::to_value(t).unwrap().as_object().unwrap().clone()
}

/// 1 to 39 jobs of 1 to `max_nodes` nodes (every one fits the fabric), submitted in
/// [0, 50) s, limits 1 to 39 s, run times 0 to 49 s (some past their limit), rows in
/// submit order.
pub fn workload(max_nodes: u32) -> impl Strategy<Value = Vec<Job>> {
    prop::collection::vec((0i64..50, 1u32..=max_nodes, 1i64..40, 0i64..50), 1..40).prop_map(|mut v| {
        v.sort_by_key(|x| x.0);
        v.into_iter()
            .enumerate()
            .map(|(i, (s, n, w, r))| Job { id: i as i64, submit_s: s, nodes: n, walltime_s: w, runtime_s: r, ..Default::default() })
            .collect()
    })
}

/// A registered allocation policy, its options varied by `variant` (random's seed,
/// isolated's leaf order and tie break, capped's caps; the others take none).
pub fn alloc_of(name: &str, variant: u8) -> Box<dyn Allocator> {
    let o = match name {
        "random" => options_of(RandomOptions { seed: variant as u64 }),
        "isolated" => options_of(IsolatedOptions {
            leaf_order: if variant & 1 == 0 { LeafOrder::FluxTopo } else { LeafOrder::Paper },
            tie_break: if variant & 2 == 0 { TieBreak::Name } else { TieBreak::Index },
        }),
        "capped" => options_of(serde_json::json!({"leaf_cap": 1 + variant % 3, "pod_cap": 1 + (variant / 3) % 2})),
        _ => Options::new(),
    };
    alloc::by_name(name, &o).unwrap()
}

/// Small fabrics of every shape: the toy preset, regular fat trees of 2 to 5 nodes per
/// leaf, and trees of uneven leaves and pods.
pub fn small_fabrics() -> impl Strategy<Value = Topology> {
    prop_oneof![
        Just(Topology::preset("toy18").unwrap()),
        (2u32..6, 1u32..4, 1u32..4).prop_map(|(k, s, p)| Topology::fat_tree("r", k, s, p, None, None).unwrap()),
        prop::collection::vec(prop::collection::vec(1u32..6, 1..4), 2..4)
            .prop_map(|pods| Topology::from_leaf_sizes("u", 3, &pods, None, None, None, None).unwrap()),
    ]
}

/// Jobs of (submit, nodes, limit, run time) tuples, put in submit order (rows and ids).
pub fn jobs_in_submit_order(mut v: Vec<(i64, u32, i64, i64)>) -> Vec<Job> {
    v.sort_by_key(|x| x.0);
    v.into_iter()
        .enumerate()
        .map(|(i, (s, nodes, w, r))| Job { id: i as i64, submit_s: s, nodes, walltime_s: w, runtime_s: r, ..Default::default() })
        .collect()
}

//! `jigsaw` against its documented promise, through the network model's own D-mod-k
//! router: at every instant of any schedule, no inter-switch link carries traffic of two
//! running jobs (each job's traffic taken as all-to-all between its nodes, the most links
//! a job can use).

mod common;

use common::workload;
use proptest::prelude::*;
use toposched_core::alloc;
use toposched_core::network::{Bandwidth, Links, Router};
use toposched_core::queue::{self, EasyOptions};
use toposched_core::registry::Options;
use toposched_core::{Engine, EngineOptions, Job, JobStatus, Topology};

fn fabric() -> impl Strategy<Value = Topology> {
    prop_oneof![
        Just(Topology::preset("toy18").unwrap()),
        (1u32..6, 1u32..5, 1u32..4).prop_map(|(k, s, p)| Topology::fat_tree("r", k, s, p, None, None).unwrap()),
        // tapered: fewer leaf uplinks than nodes per leaf (columns of several nodes)
        (2u32..6, 1u32..4, 1u32..4, 1u32..3).prop_map(|(k, s, p, t)| {
            let w1 = (k / (t + 1)).max(1);
            Topology::fat_tree("tap", k, s, p, Some(w1), None).unwrap()
        }),
        prop::collection::vec(prop::collection::vec(1u32..5, 1..4), 2..4)
            .prop_map(|pods| Topology::from_leaf_sizes("u", 3, &pods, None, None, None, None).unwrap()),
    ]
}

fn case() -> impl Strategy<Value = (Topology, Vec<Job>)> {
    fabric().prop_flat_map(|t| {
        let n = t.n_nodes() as u32;
        (Just(t), workload(n))
    })
}

/// The inter-switch links all-to-all traffic between `nodes` uses (routes minus their
/// first and last link, the node's own cables).
fn switch_links(router: &Router, nodes: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    for &s in nodes {
        for &d in nodes {
            let r = router.route(s, d);
            if r.len() > 2 {
                out.extend_from_slice(&r.links()[1..r.len() - 1]);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// (instant, job a, job b, link) of the first link two running jobs share, if any.
fn first_shared_link(topo: &Topology, e: &Engine) -> Option<(i64, usize, usize, String)> {
    let router = Router::new(topo, Links::new(topo, Bandwidth::default()));
    let held: Vec<(usize, i64, i64, Vec<u32>)> = (0..e.jobs().len())
        .filter_map(|i| {
            let o = e.outcomes()[i];
            (o.status == JobStatus::Done && o.end_s > o.start_s).then(|| (i, o.start_s, o.end_s, switch_links(&router, &e.nodes_of(i as u32))))
        })
        .collect();
    for &(_, t, _, _) in &held {
        let mut owner = std::collections::BTreeMap::new();
        for (i, _, _, links) in held.iter().filter(|j| j.1 <= t && t < j.2) {
            for &l in links {
                if let Some(other) = owner.insert(l, *i) {
                    return Some((t, other, *i, router.links().name(l, topo)));
                }
            }
        }
    }
    None
}

fn run(topo: &Topology, jobs: &[Job], queue: &str, flux: bool, kill: bool) -> Engine {
    let a = alloc::by_name("jigsaw", &Options::new()).unwrap();
    let easy = EasyOptions { flux_window: flux, reserved_tiers_always: flux };
    let o = if queue == "easy" { serde_json::to_value(easy).unwrap().as_object().unwrap().clone() } else { Options::new() };
    let q = queue::by_name(queue, &o).unwrap();
    let opts = EngineOptions { kill_at_walltime: kill, record_reservations: true, ..Default::default() };
    let mut e = Engine::new(topo.clone(), jobs.to_vec(), a, q, opts, &[]).unwrap();
    assert!(e.step(u64::MAX).unwrap());
    e
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn no_two_running_jobs_share_an_inter_switch_link(
        (topo, jobs) in case(),
        queue in prop::sample::select(vec!["fcfs", "easy", "conservative"]),
        flux in any::<bool>(),
        kill in any::<bool>(),
    ) {
        let e = run(&topo, &jobs, queue, flux, kill);
        let shared = first_shared_link(&topo, &e);
        prop_assert!(shared.is_none(), "{:?}", shared);
    }
}

#[test]
fn jigsaw_runs_more_spanning_jobs_at_once_than_isolated_and_shares_no_link() {
    // One pod of 5 leaves x 4 nodes. Eight 5-node jobs submitted together: isolated runs
    // 2 of them at once (each closes the leaves it spans). jigsaw, fewest leaves first,
    // puts two on columns 0-2 of leaves 0-1 and 2-3, and a third on column 3 of all five
    // leaves, beside them.
    let topo = Topology::fat_tree("t", 4, 5, 1, None, None).unwrap();
    let jobs: Vec<Job> = (0..8).map(|i| Job { id: i, submit_s: 0, nodes: 5, walltime_s: 100, runtime_s: 100, ..Default::default() }).collect();
    let j = run(&topo, &jobs, "easy", false, true);
    assert_eq!(first_shared_link(&topo, &j), None);
    let at_zero = |e: &Engine| e.outcomes().iter().filter(|o| o.start_s == 0).count();
    let a = alloc::by_name("isolated", &Options::new()).unwrap();
    let q = queue::by_name("easy", &Options::new()).unwrap();
    let mut iso = Engine::new(topo.clone(), jobs, a, q, EngineOptions::default(), &[]).unwrap();
    iso.step(u64::MAX).unwrap();
    assert_eq!(at_zero(&iso), 2);
    assert_eq!(at_zero(&j), 3);
    let cols = |i: u32| j.nodes_of(i).to_vec();
    assert_eq!((cols(0), cols(1), cols(2)), (vec![0, 1, 2, 4, 5], vec![8, 9, 10, 12, 13], vec![3, 7, 11, 15, 19]));
}

//! `capped` against its documented rule: with caps of 1 it schedules exactly as
//! `isolated` (EASY and conservative, random workloads), and at every instant of any
//! schedule no leaf hosts more than `leaf_cap` running jobs spanning leaves nor any pod
//! more than `pod_cap` running jobs spanning pods, counted from the outcome (nodes and
//! times), not from the policy's own counters.

mod common;

use common::{workload, options_of};
use proptest::prelude::*;
use toposched_core::alloc::{self, capped::CappedOptions};
use toposched_core::queue::{self, EasyOptions};
use toposched_core::registry::Options;
use toposched_core::{Engine, EngineOptions, Job, JobStatus, Topology};

fn fabric() -> impl Strategy<Value = Topology> {
    prop_oneof![
        Just(Topology::preset("toy18").unwrap()),
        (1u32..6, 1u32..4, 1u32..4).prop_map(|(k, s, p)| Topology::fat_tree("r", k, s, p, None, None).unwrap()),
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

fn run(topo: &Topology, jobs: &[Job], queue: &str, easy: EasyOptions, alloc_name: &str, o: Options, kill: bool) -> Engine {
    let a = alloc::by_name(alloc_name, &o).unwrap();
    let q = queue::by_name(queue, &if queue == "easy" { options_of(easy) } else { Options::new() }).unwrap();
    let opts = EngineOptions { kill_at_walltime: kill, ..Default::default() };
    let mut e = Engine::new(topo.clone(), jobs.to_vec(), a, q, opts, &[]).unwrap();
    assert!(e.step(u64::MAX).unwrap());
    e
}

/// Every job's (status, start, end, nodes).
fn schedule(e: &Engine) -> Vec<(JobStatus, i64, i64, Vec<u32>)> {
    (0..e.jobs().len()).map(|i| {
        let o = e.outcomes()[i];
        let nodes = if o.status == JobStatus::Done { e.nodes_of(i as u32).to_vec() } else { Vec::new() };
        (o.status, o.start_s, o.end_s, nodes)
    }).collect()
}

/// The most jobs spanning leaves on one leaf, and spanning pods in one pod, at any instant,
/// from the schedule alone. A job holds its nodes over `[start, end)`.
fn most_sharing(topo: &Topology, e: &Engine) -> (usize, usize) {
    let s = schedule(e);
    let held: Vec<&(JobStatus, i64, i64, Vec<u32>)> = s.iter().filter(|j| j.0 == JobStatus::Done && j.2 > j.1).collect();
    let (mut most_leaf, mut most_pod) = (0, 0);
    for t in held.iter().map(|j| j.1) {
        let mut leaf = vec![0usize; topo.n_leaves()];
        let mut pod = vec![0usize; topo.n_pods()];
        for (_, _, _, nodes) in held.iter().copied().filter(|j| j.1 <= t && t < j.2) {
            let mut leaves: Vec<u32> = nodes.iter().map(|&n| topo.leaf_of(n)).collect();
            leaves.dedup();
            let mut pods: Vec<u32> = leaves.iter().map(|&l| topo.pod_of_leaf(l)).collect();
            pods.dedup();
            if leaves.len() > 1 {
                leaves.iter().for_each(|&l| leaf[l as usize] += 1);
            }
            if pods.len() > 1 {
                pods.iter().for_each(|&p| pod[p as usize] += 1);
            }
        }
        most_leaf = most_leaf.max(leaf.into_iter().max().unwrap_or(0));
        most_pod = most_pod.max(pod.into_iter().max().unwrap_or(0));
    }
    (most_leaf, most_pod)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// k = m = 1 is isolated: the same schedule, job by job (start, end, nodes).
    #[test]
    fn caps_of_one_schedule_as_isolated((topo, jobs) in case(), conservative in any::<bool>(), kill in any::<bool>(), flux in any::<bool>()) {
        let queue = if conservative { "conservative" } else { "easy" };
        let easy = EasyOptions { flux_window: flux, reserved_tiers_always: flux };
        let one = options_of(CappedOptions { leaf_cap: 1, pod_cap: 1 });
        let capped = run(&topo, &jobs, queue, easy, "capped", one, kill);
        let isolated = run(&topo, &jobs, queue, easy, "isolated", Options::new(), kill);
        prop_assert_eq!(schedule(&capped), schedule(&isolated));
    }

    /// At every instant: at most k jobs spanning leaves per leaf, m spanning pods per pod.
    #[test]
    fn no_leaf_or_pod_exceeds_its_cap(
        (topo, jobs) in case(),
        k in 1u32..4,
        m in 1u32..4,
        queue in prop::sample::select(vec!["fcfs", "easy", "conservative"]),
        flux in any::<bool>(),
        kill in any::<bool>(),
    ) {
        let easy = EasyOptions { flux_window: flux, reserved_tiers_always: flux };
        let e = run(&topo, &jobs, queue, easy, "capped", options_of(CappedOptions { leaf_cap: k, pod_cap: m }), kill);
        let (leaf, pod) = most_sharing(&topo, &e);
        prop_assert!(leaf <= k as usize, "a leaf hosts {} leaf-spanning jobs (cap {})", leaf, k);
        prop_assert!(pod <= m as usize, "a pod hosts {} pod-spanning jobs (cap {})", pod, m);
    }
}

#[test]
fn larger_caps_let_spanning_jobs_share_and_caps_of_one_do_not() {
    // toy18, four T2 jobs of 5 nodes submitted together, long enough to overlap: with
    // k = 1 at most one per pod runs at a time; with k = 2 they share leaves.
    let topo = Topology::preset("toy18").unwrap();
    let jobs: Vec<Job> = (0..4).map(|i| Job { id: i, submit_s: 0, nodes: 4, walltime_s: 100, runtime_s: 100, ..Default::default() }).collect();
    let one = run(&topo, &jobs, "easy", EasyOptions::default(), "capped", options_of(CappedOptions { leaf_cap: 1, pod_cap: 1 }), true);
    let two = run(&topo, &jobs, "easy", EasyOptions::default(), "capped", options_of(CappedOptions { leaf_cap: 2, pod_cap: 1 }), true);
    assert_eq!(most_sharing(&topo, &one), (1, 0));
    assert_eq!(most_sharing(&topo, &two), (2, 0));
    let starts = |e: &Engine| e.outcomes().iter().map(|o| o.start_s).collect::<Vec<_>>();
    assert_eq!(starts(&two), vec![0, 0, 0, 0]);
    assert!(starts(&one).iter().filter(|&&s| s == 0).count() < 4, "{:?}", starts(&one));
}

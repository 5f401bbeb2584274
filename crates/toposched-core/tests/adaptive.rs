//! `adaptive` against its documented rule, with the slowdowns recomputed here from scratch
//! by the network model's one-shot evaluation (`Network::evaluate`: every job solved
//! together, steady state), not by the policy's incremental scoring. Then the engine's
//! promises with it: every job placed, no node shared, an EASY head never started after a
//! reservation made for it, a conservative job never after its reservation.

mod common;

use common::{options_of, workload};
use proptest::prelude::*;
use toposched_core::alloc::adaptive::{Adaptive, AdaptiveOptions};
use toposched_core::alloc::least_interference::{LeastInterference, LeastInterferenceOptions};
use toposched_core::alloc::{self, Allocator, Guard, Isolated};
use toposched_core::engine::JobStatus;
use toposched_core::network::{Filling, JobSpec, NetConfig, Network, Pattern, Traffic};
use toposched_core::queue;
use toposched_core::{Engine, EngineOptions, Topology};

/// The traffic `least-interference`'s defaults give a job of `n` nodes (bins, written out
/// again here: the pattern the replay's `--network bins` maps that size to).
fn pattern_of(n: usize) -> Pattern {
    match n {
        0 | 1 => Pattern::None,
        2..=16 => Pattern::parse("stencil3d").unwrap(),
        17..=128 => Pattern::parse("stencil4d").unwrap(),
        129..=512 => Pattern::parse("unstructured").unwrap(),
        _ => Pattern::parse("subcom-a2a").unwrap(),
    }
}

/// Slowdown of each job of `jobs` evaluated together (communication fraction 0.3).
fn slowdowns(net: &Network, jobs: &[Vec<u32>]) -> Vec<f64> {
    let specs: Vec<JobSpec> =
        jobs.iter().map(|n| JobSpec { nodes: n.clone(), traffic: Traffic::new(pattern_of(n.len())), service_level: 0, phi: 0.3, latency: 0.0 }).collect();
    net.evaluate(&specs).unwrap().jobs.iter().map(|r| r.slowdown).collect()
}

/// The worst slowdown placing `cand` adds: the largest of its own slowdown - 1 and any
/// running job's increase.
fn worst_added(net: &Network, running: &[Vec<u32>], cand: &[u32]) -> f64 {
    let before = slowdowns(net, running);
    let mut all = running.to_vec();
    all.push(cand.to_vec());
    let after = slowdowns(net, &all);
    let own = after.last().unwrap() - 1.0;
    before.iter().zip(&after).map(|(b, a)| a - b).fold(own, f64::max)
}

fn fabric() -> impl Strategy<Value = Topology> {
    prop_oneof![
        Just(Topology::preset("toy18").unwrap()),
        // tapered: fewer uplinks than nodes per leaf, so links get oversubscribed
        (2u32..6, 2u32..5, 1u32..4).prop_map(|(k, s, p)| Topology::fat_tree("tap", k, s, p, Some(1), None).unwrap()),
    ]
}

/// A fabric, running jobs (disjoint node sets), a job size.
fn scene() -> impl Strategy<Value = (Topology, Vec<Vec<u32>>, u32)> {
    fabric().prop_flat_map(|t| {
        let n = t.n_nodes() as u32;
        (Just(t), prop::collection::vec(0u32..10, n as usize), 1u32..=(n / 2).max(1)).prop_map(|(t, owner, size)| {
            // owner below 5: free (about half the nodes); 5..9: running job owner - 5
            let mut jobs: Vec<Vec<u32>> = vec![Vec::new(); 5];
            owner.iter().enumerate().filter(|(_, &o)| o >= 5).for_each(|(x, &o)| jobs[o as usize - 5].push(x as u32));
            (t, jobs.into_iter().filter(|j| !j.is_empty()).collect(), size)
        })
    })
}

fn sorted(v: Option<Vec<u32>>) -> Option<Vec<u32>> {
    v.map(|mut v| {
        v.sort_unstable();
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 800, ..ProptestConfig::default() })]

    #[test]
    fn shares_only_within_the_threshold_else_isolates_else_waits(
        (topo, running, size) in scene(),
        threshold in prop::sample::select(vec![0.0, 0.01, 0.05, 0.2]),
    ) {
        let opts = AdaptiveOptions { slowdown_threshold: threshold, isolation_wait_s: 100 };
        let mut policy = Adaptive::new(opts).unwrap();
        let mut state = alloc::new_state(&policy, &topo, &[]);
        for (j, nodes) in running.iter().enumerate() {
            state.allocate(&topo, j as u32, nodes, topo.span_class(nodes));
        }
        let net = Network::new(&topo, NetConfig { filling: Filling::Steady, ..NetConfig::default() }).unwrap();
        let cands = LeastInterference::new(LeastInterferenceOptions::default()).unwrap().candidates(&topo, &state, size, &Guard::NONE);
        let worst: Vec<f64> = cands.iter().map(|c| worst_added(&net, &running, c)).collect();
        // far from the threshold, so that the two computations' rounding cannot matter
        let tol = 1e-6;
        prop_assume!(worst.iter().all(|w| (w - threshold).abs() > tol));
        let pick = sorted(policy.select(&topo, &state, size, &Guard::NONE));
        let isolated = sorted(Isolated::default().select(&topo, &state, size, &Guard::NONE));
        let within: Vec<&Vec<u32>> = cands.iter().zip(&worst).filter(|(_, &w)| w <= threshold).map(|(c, _)| c).collect();
        match &pick {
            Some(p) if within.contains(&p) => {}
            Some(p) => {
                prop_assert!(within.is_empty(), "{:?} is beyond the threshold though {:?} are within", p, within);
                prop_assert_eq!(Some(p), isolated.as_ref(), "not within the threshold: isolated's placement");
            }
            None => {
                prop_assert!(within.is_empty() && isolated.is_none(), "refused though {:?} are within or isolated has {:?}", within, isolated);
                prop_assert!(size <= state.n_free() || cands.is_empty());
            }
        }
        // after the wait, least-interference's pick whatever it costs
        let late = sorted(policy.select(&topo, &state, size, &Guard { held_back_s: 100, ..Guard::NONE }));
        let li = sorted(LeastInterference::new(LeastInterferenceOptions::default()).unwrap().select(&topo, &state, size, &Guard::NONE));
        prop_assert_eq!(late, li);
    }

    #[test]
    fn the_engine_keeps_its_promises(
        topo in fabric(),
        jobs in workload(9),
        queue_name in prop::sample::select(vec!["easy", "conservative", "fcfs"]),
        threshold in prop::sample::select(vec![0.0, 0.05, 1e9]),
        wait_s in prop::sample::select(vec![0i64, 7, 40, 1_000_000]),
    ) {
        let n = topo.n_nodes() as u32;
        let jobs: Vec<_> = jobs.into_iter().map(|mut j| { j.nodes = j.nodes.min(n); j }).collect();
        let a = alloc::by_name("adaptive", &options_of(AdaptiveOptions { slowdown_threshold: threshold, isolation_wait_s: wait_s })).unwrap();
        let q = queue::by_name(queue_name, &Default::default()).unwrap();
        let opts = EngineOptions { record_reservations: true, ..EngineOptions::default() };
        let mut e = Engine::new(topo.clone(), jobs.clone(), a, q, opts, &[]).unwrap();
        prop_assert!(e.step(u64::MAX).unwrap());
        let o = e.outcomes();
        let mut busy: Vec<Vec<(i64, i64)>> = vec![Vec::new(); topo.n_nodes()];
        for (i, (j, o)) in jobs.iter().zip(o).enumerate() {
            prop_assert_eq!(o.status, JobStatus::Done, "row {} not run", i);
            prop_assert!(o.start_s >= j.submit_s);
            prop_assert_eq!(e.nodes_of(i as u32).len(), j.nodes as usize);
            if o.end_s > o.start_s {
                e.nodes_of(i as u32).iter().for_each(|&x| busy[x as usize].push((o.start_s, o.end_s)));
            }
        }
        for iv in &mut busy {
            iv.sort_unstable();
            prop_assert!(iv.windows(2).all(|w| w[0].1 <= w[1].0), "a node held by two jobs at once");
        }
        for r in e.reservations() {
            let start = o[r.job as usize].start_s;
            prop_assert!(start <= r.start_s, "row {} reserved for {} at pass {} but started {}", r.job, r.start_s, r.pass_s, start);
        }
    }
}

#[test]
fn waits_for_isolation_then_gives_up_at_the_bound() {
    // One pod of 4 leaves x 4 nodes, one uplink per leaf (4:1). At 0, B (4 nodes) takes a
    // leaf and A (6 nodes) spans two others, leaving 6 free nodes: 2 on A's second leaf,
    // 4 on the last. J (6 nodes, at 1) can only go there, sharing an uplink with A: at
    // threshold 0 it waits for isolation, which comes when A and B end at 1000, unless
    // its wait bound runs out first (then it starts at 1 + the bound, the engine waking
    // up for it though nothing else happens then). A lenient threshold starts it at once.
    let topo = Topology::fat_tree("t", 4, 4, 1, Some(1), None).unwrap();
    let job = |id: i64, submit_s: i64, nodes: u32| toposched_core::Job { id, submit_s, nodes, walltime_s: 1000, runtime_s: 1000, ..Default::default() };
    let jobs = vec![job(0, 0, 4), job(1, 0, 6), job(2, 1, 6)];
    for (threshold, wait_s, start) in [(0.0, 50, 51), (0.0, 5000, 1000), (1e9, 50, 1), (0.0, 0, 1)] {
        let a = alloc::by_name("adaptive", &options_of(AdaptiveOptions { slowdown_threshold: threshold, isolation_wait_s: wait_s })).unwrap();
        let q = queue::by_name("fcfs", &Default::default()).unwrap();
        let mut e = Engine::new(topo.clone(), jobs.clone(), a, q, EngineOptions::default(), &[]).unwrap();
        assert!(e.step(u64::MAX).unwrap());
        let o = e.outcomes();
        assert_eq!((o[0].start_s, o[1].start_s), (0, 0));
        assert_eq!(o[2].start_s, start, "threshold {threshold}, wait {wait_s}: J's nodes {:?}", e.nodes_of(2));
    }
    // The bound counts from the first time the policy declined J nodes it could have had,
    // not from J's submission: with X (1 node, 0-10 s) also running, only 5 nodes are free
    // for J until 10, so its 50 s start then and it starts at 60 (from submission: 51).
    let mut jobs = jobs;
    jobs.insert(2, toposched_core::Job { id: 3, submit_s: 0, nodes: 1, walltime_s: 10, runtime_s: 10, ..Default::default() });
    let a = alloc::by_name("adaptive", &options_of(AdaptiveOptions { slowdown_threshold: 0.0, isolation_wait_s: 50 })).unwrap();
    let q = queue::by_name("fcfs", &Default::default()).unwrap();
    let mut e = Engine::new(topo.clone(), jobs, a, q, EngineOptions::default(), &[]).unwrap();
    assert!(e.step(u64::MAX).unwrap());
    let o = e.outcomes();
    assert_eq!((o[2].start_s, o[2].end_s), (0, 10), "X");
    assert_eq!(o[3].start_s, 60, "J: X held one of the 6 free nodes until 10 ({:?})", e.nodes_of(2));
}

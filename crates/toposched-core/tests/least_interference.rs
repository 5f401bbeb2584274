//! `least-interference` against its documented rule. The objective is recomputed here
//! from scratch with the network model's one-shot evaluation (`Network::evaluate`, every
//! job solved together, steady state), not with the policy's incremental scoring: the
//! policy's pick must be the candidate a brute-force evaluation of that objective ranks
//! first. Then invariants through the engine: exactly the requested count, free and
//! never excluded nodes, determinism, and (fungible) the schedule of `linear`.

mod common;

use common::{workload, options_of};
use proptest::prelude::*;
use toposched_core::alloc::least_interference::{AssumedTraffic, LeastInterference, LeastInterferenceOptions};
use toposched_core::alloc::{self, Allocator, Guard};
use toposched_core::network::{Filling, JobSpec, NetConfig, Network, Pattern, Traffic};
use toposched_core::queue;
use toposched_core::registry::Options;
use toposched_core::state::{ClusterState, NodeSet};
use toposched_core::{Engine, EngineOptions, Job, Topology};

fn opts(candidates: u32, traffic: &str, phi: f64) -> LeastInterferenceOptions {
    let assumed_traffic = serde_json::from_value(serde_json::Value::from(traffic)).unwrap();
    LeastInterferenceOptions { candidates, assumed_traffic, assumed_phi: phi }
}

fn traffic_name(o: &LeastInterferenceOptions) -> String {
    serde_json::to_value(o.assumed_traffic).unwrap().as_str().unwrap().to_string()
}

/// The documented traffic of a job of `n` nodes, written out again (not the policy's).
fn pattern_of(traffic: &str, n: usize) -> Pattern {
    if n <= 1 {
        return Pattern::None;
    }
    match traffic {
        "bins" if n <= 16 => Pattern::parse("stencil3d").unwrap(),
        "bins" if n <= 128 => Pattern::parse("stencil4d").unwrap(),
        "bins" if n <= 512 => Pattern::parse("unstructured").unwrap(),
        "bins" => Pattern::parse("subcom-a2a").unwrap(),
        other => Pattern::parse(other).unwrap(),
    }
}

/// `sum nodes x (slowdown - 1)` over `jobs` evaluated together, and the links the last
/// one shares.
fn lost(net: &Network, traffic: &str, phi: f64, jobs: &[Vec<u32>]) -> (f64, usize) {
    let specs: Vec<JobSpec> = jobs
        .iter()
        .map(|n| JobSpec { nodes: n.clone(), traffic: Traffic::new(pattern_of(traffic, n.len())), service_level: 0, phi, latency: 0.0 })
        .collect();
    let ev = net.evaluate(&specs).unwrap();
    let total = ev.jobs.iter().zip(jobs).map(|(r, n)| n.len() as f64 * (r.slowdown - 1.0)).sum();
    (total, ev.jobs.last().map_or(0, |r| r.links_shared))
}

fn distinct(it: impl Iterator<Item = u32>) -> usize {
    it.collect::<std::collections::BTreeSet<_>>().len()
}

fn fabric() -> impl Strategy<Value = Topology> {
    prop_oneof![
        Just(Topology::preset("toy18").unwrap()),
        (2u32..6, 1u32..5, 1u32..4).prop_map(|(k, s, p)| Topology::fat_tree("r", k, s, p, None, None).unwrap()),
        // tapered: fewer uplinks than nodes per leaf, so links get oversubscribed
        (2u32..6, 2u32..5, 1u32..4).prop_map(|(k, s, p)| Topology::fat_tree("tap", k, s, p, Some(1), None).unwrap()),
    ]
}

/// A fabric, running jobs (disjoint node sets), excluded nodes, a job size, options.
#[allow(clippy::type_complexity)]
fn scene() -> impl Strategy<Value = (Topology, Vec<Vec<u32>>, Vec<u32>, u32, LeastInterferenceOptions)> {
    fabric().prop_flat_map(|t| {
        let n = t.n_nodes() as u32;
        (
            Just(t),
            prop::collection::vec(0u32..10, n as usize),
            prop::collection::vec(any::<bool>(), n as usize),
            1u32..=(n / 2).max(1),
            1u32..10,
            prop::sample::select(vec!["bins", "a2a", "stencil3d", "pairs", "flood"]),
            prop::sample::select(vec![0.3, 1.0]),
        )
            .prop_map(|(t, owner, excl, size, c, tr, phi)| {
                // owner below 5: free (about half the nodes); 5..9: running job owner - 5
                let mut jobs: Vec<Vec<u32>> = vec![Vec::new(); 5];
                owner.iter().enumerate().filter(|(_, &o)| o >= 5).for_each(|(x, &o)| jobs[o as usize - 5].push(x as u32));
                let jobs: Vec<Vec<u32>> = jobs.into_iter().filter(|j| !j.is_empty()).collect();
                let excluded: Vec<u32> = (0..owner.len() as u32).filter(|&x| owner[x as usize] < 5 && excl[x as usize] && x % 3 == 0).collect();
                (t, jobs, excluded, size, opts(c, tr, phi))
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn picks_the_candidate_a_brute_force_evaluation_ranks_first((topo, running, excluded, size, o) in scene()) {
        let mut state = ClusterState::new(&topo, &[]);
        for (j, nodes) in running.iter().enumerate() {
            state.allocate(&topo, j as u32, nodes, topo.span_class(nodes));
        }
        let mut ex = NodeSet::new(topo.n_nodes());
        excluded.iter().for_each(|&x| ex.insert(x));
        let guard = Guard { excluded: Some(&ex), ..Guard::NONE };
        let mut policy = LeastInterference::new(o.clone()).unwrap();
        let pick = policy.select(&topo, &state, size, &guard);
        let room = (0..topo.n_nodes() as u32).filter(|&x| state.is_free(x) && !ex.contains(x)).count() as u32;
        prop_assert_eq!(pick.is_some(), size <= room, "places exactly when the free, unexcluded nodes suffice");
        prop_assert_eq!(policy.feasible(&topo, &state, size, &guard), size <= room);
        let Some(mut pick) = pick else { return Ok(()) };
        pick.sort_unstable();
        prop_assert_eq!(pick.len(), size as usize);
        prop_assert!(pick.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(pick.iter().all(|&x| state.is_free(x) && !ex.contains(x)));
        // the same again: deterministic, and the model the first call built changes nothing
        let mut again = policy.select(&topo, &state, size, &guard).unwrap();
        again.sort_unstable();
        prop_assert_eq!(&again, &pick);

        if o.candidates == 1 {
            // the first candidate of the documented order: slurm-tree's when it places the job
            if let Some(mut st) = alloc::SlurmTree::new(alloc::SlurmProfile::Current).select(&topo, &state, size, &guard) {
                st.sort_unstable();
                prop_assert_eq!(&st, &pick);
            }
        }
        let cands = LeastInterference::new(o.clone()).unwrap().candidates(&topo, &state, size, &guard);
        prop_assert!(!cands.is_empty() && cands.len() <= o.candidates as usize);
        let at = cands.iter().position(|c| *c == pick);
        prop_assert!(at.is_some(), "the pick {:?} is one of the candidates {:?}", pick, cands);
        let net = Network::new(&topo, NetConfig { filling: Filling::Steady, ..NetConfig::default() }).unwrap();
        let (base, _) = lost(&net, &traffic_name(&o), o.assumed_phi, &running);
        // (score, links shared, leaves, pods, index) of each candidate, computed here
        let keys: Vec<(f64, usize, usize, usize, usize)> = cands
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut all = running.clone();
                all.push(c.clone());
                let (with, shared) = lost(&net, &traffic_name(&o), o.assumed_phi, &all);
                ((with - base).max(0.0), shared, distinct(c.iter().map(|&x| topo.leaf_of(x))), distinct(c.iter().map(|&x| topo.pod_of(x))), i)
            })
            .collect();
        let best = keys.iter().map(|k| k.0).fold(f64::INFINITY, f64::min);
        let mine = keys[at.unwrap()];
        let tol = 1e-6 * (1.0 + best.abs());
        prop_assert!(mine.0 <= best + tol, "pick scores {} > best {} ({:?})", mine.0, best, keys);
        for k in keys.iter().filter(|k| (k.0 - mine.0).abs() <= tol) {
            prop_assert!((mine.1, mine.2, mine.3, mine.4) <= (k.1, k.2, k.3, k.4), "tie broken wrongly: {:?} vs {:?}", mine, k);
        }
    }
}

#[test]
fn avoids_the_leaves_whose_uplinks_a_running_job_saturates() {
    // One pod of 4 leaves x 4 nodes, one uplink per leaf (4:1 taper). Job A (all-to-all)
    // runs on nodes 0, 1 (leaf 0) and 4, 5 (leaf 1): their uplinks are oversubscribed.
    // One-node jobs hold 8, 9, 12, 13. A new 4-node job: linear takes 2, 3, 6, 7 and
    // shares A's hot uplinks; least-interference takes leaves 2 and 3.
    let topo = Topology::fat_tree("t", 4, 4, 1, Some(1), None).unwrap();
    let mut state = ClusterState::new(&topo, &[]);
    let a = vec![0, 1, 4, 5];
    state.allocate(&topo, 0, &a, topo.span_class(&a));
    for (j, x) in [8u32, 9, 12, 13].into_iter().enumerate() {
        state.allocate(&topo, 1 + j as u32, &[x], topo.span_class(&[x]));
    }
    let mut lin = alloc::Linear;
    assert_eq!(lin.select(&topo, &state, 4, &Guard::NONE), Some(vec![2, 3, 6, 7]));
    let mut li = LeastInterference::new(opts(8, "a2a", 0.5)).unwrap();
    let mut got = li.select(&topo, &state, 4, &Guard::NONE).unwrap();
    got.sort_unstable();
    assert_eq!(got, vec![10, 11, 14, 15]);
    // and the model agrees this is better: A is not slowed by it, it is by linear's
    let net = Network::new(&topo, NetConfig { filling: Filling::Steady, ..NetConfig::default() }).unwrap();
    let run = |b: Vec<u32>| lost(&net, "a2a", 0.5, &[a.clone(), b]).0;
    assert!(run(vec![2, 3, 6, 7]) > run(got.clone()) + 0.1, "{} vs {}", run(vec![2, 3, 6, 7]), run(got));
}

#[test]
fn a_one_leaf_fit_wins_outright() {
    // toy18: 2 pods x 3 leaves x 3 nodes. Leaf 0 has 1 free node, leaf 1 has 2, the rest
    // 3. A 2-node job fits on leaf 1 (the fullest leaf that holds it): taken whatever the
    // number of candidates, as nothing beats a one-leaf set.
    let topo = Topology::preset("toy18").unwrap();
    let mut state = ClusterState::new(&topo, &[]);
    state.allocate(&topo, 0, &[0, 1, 3], topo.span_class(&[0, 1, 3]));
    for c in [1, 2, 8] {
        let mut li = LeastInterference::new(opts(c, "bins", 0.3)).unwrap();
        let mut got = li.select(&topo, &state, 2, &Guard::NONE).unwrap();
        got.sort_unstable();
        assert_eq!(got, vec![4, 5], "candidates = {c}");
    }
}

#[test]
fn options_are_checked() {
    let build = |o: LeastInterferenceOptions| (alloc::least_interference::POLICY.build)(&options_of(o)).err();
    assert!(build(opts(0, "bins", 0.3)).unwrap().contains("candidates must be at least 1"));
    assert!(build(opts(4, "bins", 1.5)).unwrap().contains("assumed_phi must be in [0, 1]"));
    let mut o = options_of(opts(4, "bins", 0.3));
    o.insert("assumed_traffic".into(), "nonsense".into());
    let e = (alloc::least_interference::POLICY.build)(&o).err().unwrap();
    assert!(e.starts_with("least-interference:") && e.contains("unknown variant"), "{e}");
    // every choice is a pattern name the network model reads, or bins
    for name in ["a2a", "sub-a2a", "subcom-a2a", "stencil2d", "stencil3d", "stencil4d", "unstructured", "pairs", "flood", "ring", "incast", "adjacent-leaf"] {
        assert_eq!(opts(4, name, 0.3).assumed_traffic.pattern(5), Pattern::parse(name).unwrap(), "{name}");
    }
    assert_eq!(AssumedTraffic::Bins.pattern(17), Pattern::parse("stencil4d").unwrap());
    assert_eq!(AssumedTraffic::A2a.pattern(1), Pattern::None);
    let schema = (alloc::least_interference::POLICY.options)();
    let props = &schema.as_object().unwrap()["properties"];
    assert_eq!(props["candidates"]["default"], 8);
    assert_eq!(props["assumed_traffic"]["default"], "bins");
}

fn run(topo: &Topology, jobs: &[Job], alloc_name: &str, o: &Options, queue: &str) -> Engine {
    let a = alloc::by_name(alloc_name, o).unwrap();
    let q = queue::by_name(queue, &Options::new()).unwrap();
    let mut e = Engine::new(topo.clone(), jobs.to_vec(), a, q, EngineOptions::default(), &[]).unwrap();
    assert!(e.step(u64::MAX).unwrap());
    e
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn replays_are_deterministic_and_keep_linears_schedule(
        (topo, jobs) in fabric().prop_flat_map(|t| { let n = t.n_nodes() as u32; (Just(t), workload(n)) }),
        queue in prop::sample::select(vec!["fcfs", "easy", "conservative"]),
        c in 1u32..10,
        tr in prop::sample::select(vec!["bins", "a2a", "pairs"]),
    ) {
        let o = options_of(opts(c, tr, 0.3));
        let a = run(&topo, &jobs, "least-interference", &o, queue);
        let b = run(&topo, &jobs, "least-interference", &o, queue);
        let lin = run(&topo, &jobs, "linear", &Options::new(), queue);
        for (i, job) in jobs.iter().enumerate() {
            let (oa, ob, ol) = (a.outcomes()[i], b.outcomes()[i], lin.outcomes()[i]);
            prop_assert_eq!(a.nodes_of(i as u32), b.nodes_of(i as u32));
            prop_assert_eq!((oa.status, oa.start_s, oa.end_s), (ob.status, ob.start_s, ob.end_s));
            // fungible: the same starts and ends as linear, only the nodes differ
            prop_assert_eq!((oa.status, oa.start_s, oa.end_s), (ol.status, ol.start_s, ol.end_s), "job {}", i);
            if oa.start_s >= 0 {
                prop_assert_eq!(a.nodes_of(i as u32).len(), job.nodes as usize);
            }
        }
    }
}

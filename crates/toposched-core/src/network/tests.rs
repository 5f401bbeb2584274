//! Hand-computed sharing cases and the research note's numbers (docs/network.md says
//! which case each test pins).

use super::*;
use crate::alloc::{self, Guard};
use crate::state::ClusterState;
use crate::topology::Topology;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn tree288(w1: Option<u32>) -> Topology {
    // the research note's 288-node 2-level tree: 16 leaves x 18 nodes
    Topology::fat_tree("t288", 18, 16, 1, w1, None).unwrap()
}

fn job(nodes: Vec<u32>, pattern: Pattern) -> JobSpec {
    JobSpec { nodes, traffic: Traffic::new(pattern), service_level: 0, phi: 1.0, latency: 0.0 }
}

/// The steady-state job-level solve (these cases pin it; progressive.rs has its own).
fn eval(t: &Topology, jobs: &[JobSpec]) -> Evaluation {
    Network::new(t, NetConfig { filling: Filling::Steady, ..NetConfig::default() }).unwrap().evaluate(jobs).unwrap()
}

fn interleaved_9_9() -> (Vec<u32>, Vec<u32>) {
    let a = (0..16).flat_map(|l| (0..9).map(move |p| l * 18 + p)).collect();
    let b = (0..16).flat_map(|l| (9..18).map(move |p| l * 18 + p)).collect();
    (a, b)
}

#[test]
fn interleaved_floods_share_no_link_on_a_full_tree() {
    let (a, b) = interleaved_9_9();
    let e = eval(&tree288(None), &[job(a, Pattern::Flood), job(b, Pattern::Flood)]);
    for j in &e.jobs {
        assert_eq!(j.slowdown, 1.0);
        assert_eq!(j.links_shared, 0);
        assert_eq!(j.placement_penalty, 1.0);
    }
    assert_eq!(e.shared_links, 0);
    assert!(e.hot_links.is_empty());
}

#[test]
fn interleaved_floods_halve_on_a_2_to_1_taper() {
    let (a, b) = interleaved_9_9();
    let e = eval(&tree288(Some(9)), &[job(a, Pattern::Flood), job(b, Pattern::Flood)]);
    for j in &e.jobs {
        assert!((j.slowdown - 2.0).abs() < 1e-9, "{j:?}");
        assert_eq!(j.placement_penalty, 1.0, "alone each job still fits");
        assert_eq!(j.links_shared, 16 * 9 * 2);
    }
}

fn random_split(n: u32, k: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<u32>> {
    let mut all: Vec<u32> = (0..n).collect();
    all.shuffle(rng);
    let per = n as usize / k;
    (0..k)
        .map(|i| {
            let mut v = all[i * per..(i + 1) * per].to_vec();
            v.sort_unstable();
            v
        })
        .collect()
}

#[test]
fn random_pairs_lose_to_routing_collisions_even_alone() {
    let t = tree288(None);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut together = Vec::new();
    for seed in 0..20 {
        let parts = random_split(288, 2, &mut rng);
        let mut jobs: Vec<JobSpec> = parts.into_iter().map(|n| job(n, Pattern::Pairs)).collect();
        jobs[0].traffic.seed = seed;
        jobs[1].traffic.seed = seed + 100;
        let e = eval(&t, &jobs);
        for j in &e.jobs {
            // a full-bisection tree, yet the job alone is slower than its injection bound
            assert!(j.placement_penalty > 1.0, "{j:?}");
            together.push(j.slowdown);
        }
    }
    let mean = together.iter().sum::<f64>() / together.len() as f64;
    // SimGrid (research note §2.1): 1.33 for both jobs of one such draw
    assert!((1.15..1.5).contains(&mean), "mean slowdown {mean}");
}

#[test]
fn isolated_placements_share_nothing() {
    for (name, seed) in [("cab", 3u64), ("toy18", 4), ("hype", 5), ("quartz", 6)] {
        let t = Topology::preset(name).unwrap();
        let mut state = ClusterState::new(&t, &[]);
        let mut a = alloc::by_name("isolated", &Default::default()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let patterns = [Pattern::Pairs, Pattern::AllToAll, Pattern::Stencil(4), Pattern::Unstructured, Pattern::Flood, Pattern::SubA2a(8)];
        let mut jobs = Vec::new();
        for k in 0..400u32 {
            let max = (t.n_nodes() as u32 / 4).max(2);
            let size = if rng.gen_bool(0.5) { rng.gen_range(1..=t.nodes_per_leaf()) } else { rng.gen_range(1..=max) };
            if let Some(mut nodes) = a.select(&t, &state, size, &Guard::NONE) {
                nodes.sort_unstable();
                state.allocate(&t, k, &nodes, t.span_class(&nodes));
                let mut js = job(nodes, patterns[k as usize % patterns.len()].clone());
                if let Pattern::AllToAll = js.traffic.pattern {
                    if js.nodes.len() > 128 {
                        js.traffic.pattern = Pattern::Pairs;
                    }
                }
                jobs.push(js);
            }
        }
        assert!(jobs.len() > 5 && state.n_free() < t.n_nodes() as u32 / 4, "{name}: machine filled");
        let e = eval(&t, &jobs);
        assert_eq!(e.shared_links, 0, "{name}");
        for j in &e.jobs {
            assert_eq!(j.links_shared, 0);
            assert_eq!(j.x, 1.0);
            assert_eq!(j.slowdown, 1.0);
        }
    }
}

#[test]
fn same_seed_same_numbers() {
    let t = Topology::preset("cab").unwrap();
    let run = |seed: u64| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let parts = random_split(1296, 4, &mut rng);
        let pats = [Pattern::Pairs, Pattern::Unstructured, Pattern::Stencil(3), Pattern::SubA2a(8)];
        let jobs: Vec<JobSpec> = parts
            .into_iter()
            .zip(pats)
            .map(|(n, p)| {
                let mut j = job(n, p);
                j.traffic.seed = seed;
                j
            })
            .collect();
        eval(&t, &jobs)
    };
    assert_eq!(run(9), run(9));
    assert_ne!(run(9), run(10));
}

#[test]
fn service_levels_split_a_shared_link_by_weight() {
    // the tapered 9+9 case, job A at SL 0 and B at SL 1 with weights 9:1 -> 0.9 / 0.1
    let (a, b) = interleaved_9_9();
    let cfg = NetConfig { sl_weights: vec![9.0, 1.0], ..NetConfig::default() };
    let net = Network::new(&tree288(Some(9)), cfg).unwrap();
    let mut jb = job(b, Pattern::Flood);
    jb.service_level = 1;
    let e = net.evaluate(&[job(a, Pattern::Flood), jb]).unwrap();
    assert!((e.jobs[0].x - 0.9).abs() < 1e-9 && (e.jobs[1].x - 0.1).abs() < 1e-9, "{:?}", e.jobs);
    // total throughput is conserved: 0.9 + 0.1 = 0.5 + 0.5
    let mut bad = job(vec![0], Pattern::None);
    bad.service_level = 2;
    assert!(net.evaluate(&[bad]).unwrap_err().contains("service level 2"));
}

#[test]
fn duty_cycle_correction_matches_the_research_note() {
    // §2.3: comm slowdowns 2.16 / 1.80 / 1.00 / 1.80 at phi = 0.5 for all four jobs give
    // 1.29 / 1.20 / 1.00 / 1.20 (SimGrid: 1.24 / 1.17 / 1.00 / 1.16); naive: 1.58 / 1.40.
    let got: Vec<f64> = [2.16, 1.80, 1.00, 1.80].iter().map(|&s| dilation(0.5, 1.0 / s, 0.5)).collect();
    for (g, want) in got.iter().zip([1.29, 1.20, 1.00, 1.20]) {
        assert!((g - want).abs() < 0.005, "{got:?}");
    }
    for (g, simgrid) in got.iter().zip([1.24, 1.17, 1.00, 1.16]) {
        assert!((g / simgrid - 1.0).abs() < 0.05, "within the note's 4 %: {got:?}");
    }
}

#[test]
fn phibar_is_the_competitors_duty_cycle() {
    let (a, b) = interleaved_9_9();
    let mut ja = job(a, Pattern::Flood);
    let mut jb = job(b, Pattern::Flood);
    ja.phi = 0.5;
    jb.phi = 0.25;
    let e = eval(&tree288(Some(9)), &[ja, jb]);
    assert!((e.jobs[0].phibar - 0.25).abs() < 1e-12 && (e.jobs[1].phibar - 0.5).abs() < 1e-12);
    assert!((e.jobs[0].slowdown - (0.5 + 0.5 * (1.0 + 1.0 * 0.25))).abs() < 1e-12);
}

#[test]
fn slowdowns_do_not_depend_on_the_bandwidth_unit() {
    // Every rate scales with a uniform bandwidth, so the slowdowns must not: phibar's
    // test for "no competitor" once compared the competitors' demand (bytes over the
    // time alone) with an absolute 1e-9, and at a bandwidth of 1e-12 read every
    // competitor as none (phibar 1: slowdown 1.5 here instead of 1.125).
    let (a, b) = interleaved_9_9();
    let mut ja = job(a, Pattern::Flood);
    let mut jb = job(b, Pattern::Flood);
    ja.phi = 0.5;
    jb.phi = 0.25;
    let at = |scale: f64| {
        let config = NetConfig { filling: Filling::Steady, bandwidth: Bandwidth { host: scale, leaf: scale, core: scale }, ..NetConfig::default() };
        Network::new(&tree288(Some(9)), config).unwrap().evaluate(&[ja.clone(), jb.clone()]).unwrap()
    };
    let unit = at(1.0);
    assert!((unit.jobs[0].slowdown - 1.125).abs() < 1e-12, "{}", unit.jobs[0].slowdown);
    for scale in [1e-15, 1e-12, 1e-6, 1e6, 1e12] {
        let e = at(scale);
        for k in 0..2 {
            let (got, want) = (e.jobs[k].slowdown, unit.jobs[k].slowdown);
            assert!((got / want - 1.0).abs() < 1e-9, "bandwidth {scale}: job {k} slowdown {got}, {want} at 1");
            assert!((e.jobs[k].phibar - unit.jobs[k].phibar).abs() < 1e-9, "bandwidth {scale}: job {k} phibar");
        }
    }
}

#[test]
fn overlapping_or_bad_inputs_are_refused() {
    let t = Topology::preset("toy18").unwrap();
    let net = Network::new(&t, NetConfig::default()).unwrap();
    assert!(net.evaluate(&[job(vec![0, 1], Pattern::Ring), job(vec![1, 2], Pattern::Ring)]).unwrap_err().contains("already used by job 0"));
    assert!(net.evaluate(&[job(vec![0, 0], Pattern::Ring)]).unwrap_err().contains("twice"));
    assert!(net.evaluate(&[job(vec![40], Pattern::Ring)]).is_err());
    let mut j = job(vec![0, 5], Pattern::Ring);
    j.phi = 1.5;
    assert!(net.evaluate(&[j]).is_err());
    assert!(Network::new(&t, NetConfig { sl_weights: vec![], ..NetConfig::default() }).is_err());
}

// ------------------------------------------------------------------ closed loop (replay)

mod replay {
    use super::*;
    use crate::alloc::{Allocator, Guard};
    use crate::engine::{Engine, EngineOptions, JobStatus};
    use crate::network::replay::{JobTraffic, NetReplay, Reference};
    use crate::queue;
    use crate::workload::Job;

    /// Hands out the first listed node set of the requested size whose nodes are all free.
    struct Scripted(Vec<Vec<u32>>);
    impl Allocator for Scripted {
        fn name(&self) -> String {
            "scripted".into()
        }
        fn fungible(&self) -> bool {
            true
        }
        fn check_fits_ever(&self, _t: &Topology, _e: &ClusterState, _n: u32) -> Result<(), String> {
            Ok(())
        }
        fn select(&mut self, _t: &Topology, s: &ClusterState, n: u32, _g: &Guard) -> Option<Vec<u32>> {
            self.0.iter().find(|l| l.len() == n as usize && l.iter().all(|&x| s.is_free(x))).cloned()
        }
    }

    fn job(id: i64, submit: i64, nodes: u32, runtime: i64, walltime: i64) -> Job {
        Job { id, submit_s: submit, nodes, walltime_s: walltime, runtime_s: runtime, ..Default::default() }
    }

    fn run(topo: &Topology, jobs: Vec<Job>, lists: Vec<Vec<u32>>, phis: &[f64], pattern: Pattern, kill: bool) -> Engine {
        run_with(topo, jobs, lists, phis, pattern, kill, false)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_with(topo: &Topology, jobs: Vec<Job>, lists: Vec<Vec<u32>>, phis: &[f64], pattern: Pattern, kill: bool, kill_on_overrun: bool) -> Engine {
        let opts = EngineOptions { kill_at_walltime: kill, ..EngineOptions::default() };
        let q = queue::by_name("fcfs", &Default::default()).unwrap();
        let traffic =
            phis.iter().map(|&phi| JobTraffic { pattern: 0, bytes: 1.0, ranks_per_node: 1, seed: 0, phi, service_level: 0 }).collect();
        let mut net = NetReplay::new(topo, NetConfig::default(), Reference::Alone, vec![pattern], traffic).unwrap();
        net.set_kill_on_overrun(kill_on_overrun);
        let mut e = Engine::new(topo.clone(), jobs, Box::new(Scripted(lists)), q, opts, &[]).unwrap();
        e.set_network(net).unwrap();
        assert!(e.step(u64::MAX).unwrap());
        e
    }

    fn ends(e: &Engine) -> Vec<i64> {
        e.outcomes().iter().map(|o| o.end_s).collect()
    }

    #[test]
    fn a_job_alone_finishes_at_its_logged_runtime() {
        let (a, _) = interleaved_9_9();
        let e = run(&tree288(Some(9)), vec![job(1, 0, 144, 777, 1000)], vec![a], &[1.0], Pattern::Flood, true);
        assert_eq!(ends(&e), vec![777]);
        let r = e.network().unwrap().result(0).unwrap();
        assert_eq!((r.slowdown, r.time_alone_s), (1.0, 777.0));
    }

    #[test]
    fn two_sharing_jobs_stretch_by_their_slowdown() {
        let (a, b) = interleaved_9_9();
        let t = tree288(Some(9));
        let e = run(
            &t,
            vec![job(1, 0, 144, 100, 1000), job(2, 0, 144, 100, 1000)],
            vec![a.clone(), b.clone()],
            &[1.0, 1.0],
            Pattern::Flood,
            true,
        );
        assert_eq!(ends(&e), vec![200, 200]);
        let r = e.network().unwrap().result(1).unwrap();
        assert!((r.slowdown - 2.0).abs() < 1e-9 && r.links_shared == 16 * 9 * 2, "{r:?}");
        // half the time communicating: 1 / (0.5 + 0.5 * (1 + 1 * 0.5)) -> 125 s
        let e = run(
            &t,
            vec![job(1, 0, 144, 100, 1000), job(2, 0, 144, 100, 1000)],
            vec![a.clone(), b.clone()],
            &[0.5, 0.5],
            Pattern::Flood,
            true,
        );
        assert_eq!(ends(&e), vec![125, 125]);
        // on a full tree they share nothing
        let e =
            run(&tree288(None), vec![job(1, 0, 144, 100, 1000), job(2, 0, 144, 100, 1000)], vec![a, b], &[1.0, 1.0], Pattern::Flood, true);
        assert_eq!(ends(&e), vec![100, 100]);
    }

    #[test]
    fn work_is_conserved_when_rates_change_mid_run() {
        // A: 100 s from 0; B arrives at 50 for 1000 s. A does 50 s alone, then half speed:
        // the other 50 s of work take 100 s -> ends at 150. B does 50 s by 150, then the
        // remaining 950 s alone -> 1100.
        let (a, b) = interleaved_9_9();
        let e = run(
            &tree288(Some(9)),
            vec![job(1, 0, 144, 100, 5000), job(2, 50, 144, 1000, 5000)],
            vec![a, b],
            &[1.0, 1.0],
            Pattern::Flood,
            true,
        );
        assert_eq!(ends(&e), vec![150, 1100]);
        let n = e.network().unwrap();
        assert!((n.result(0).unwrap().slowdown - 1.5).abs() < 1e-9);
        assert!((n.result(1).unwrap().slowdown - 1.05).abs() < 1e-9);
        assert_eq!(n.stats().ends, 2);
    }

    #[test]
    fn fractional_ends_round_up_to_the_next_second() {
        // A 100 s, B 101 s, both slowed 2x while together: A ends at 200; B has 1 s left,
        // alone -> 201.  With B at 0.75 phi and A at 1.0: rates differ, ends are ceilings.
        let (a, b) = interleaved_9_9();
        let t = tree288(Some(9));
        let e = run(
            &t,
            vec![job(1, 0, 144, 100, 5000), job(2, 0, 144, 101, 5000)],
            vec![a.clone(), b.clone()],
            &[1.0, 1.0],
            Pattern::Flood,
            true,
        );
        assert_eq!(ends(&e), vec![200, 201]);
        let e = run(&t, vec![job(1, 0, 144, 10, 5000), job(2, 0, 144, 10, 5000)], vec![a, b], &[1.0, 0.3], Pattern::Flood, true);
        // A: x = 0.5, phibar = 0.3 -> 1 / (1 + 0.3) -> 13 s; B: 1 / (0.7 + 0.3 * 2) -> 13 s
        assert_eq!(ends(&e), vec![13, 13]);
    }

    #[test]
    fn a_slowed_job_runs_past_its_limit_by_default() {
        // Both jobs: limit 120, 100 s of work, slowed 2x while together (full overlap):
        // they end at 200, past their limit, and are not killed: the prediction shows.
        let (a, b) = interleaved_9_9();
        let e = run(&tree288(Some(9)), vec![job(1, 0, 144, 100, 120), job(2, 0, 144, 100, 120)], vec![a, b], &[1.0, 1.0], Pattern::Flood, true);
        assert_eq!(ends(&e), vec![200, 200]);
        assert!(e.outcomes().iter().all(|o| !o.killed));
        // the log's own overrun is still cut: 150 s logged, limit 120 -> 120 s of work
        let (a, b) = interleaved_9_9();
        let e = run(&tree288(Some(9)), vec![job(1, 0, 144, 150, 120), job(2, 0, 144, 150, 120)], vec![a, b], &[1.0, 1.0], Pattern::Flood, true);
        assert_eq!(ends(&e), vec![240, 240]);
        assert!(e.outcomes().iter().all(|o| o.killed));
    }

    #[test]
    fn a_slowed_job_is_killed_at_its_limit_with_overrun_kill() {
        let (a, b) = interleaved_9_9();
        let e = run_with(
            &tree288(Some(9)),
            vec![job(1, 0, 144, 100, 120), job(2, 0, 144, 100, 1000)],
            vec![a.clone(), b.clone()],
            &[1.0, 1.0],
            Pattern::Flood,
            true,
            true,
        );
        let o = e.outcomes();
        assert_eq!((o[0].end_s, o[0].killed), (120, true));
        assert!(!o[1].killed);
        // B: 60 s of work by 120 at half speed, then 40 s alone
        assert_eq!(o[1].end_s, 160);
        let r = e.network().unwrap().result(0).unwrap();
        assert!((r.slowdown - 2.0).abs() < 1e-9);
        // run-on: no kill
        let e = run(
            &tree288(Some(9)),
            vec![job(1, 0, 144, 100, 120), job(2, 0, 144, 100, 1000)],
            vec![a, b],
            &[1.0, 1.0],
            Pattern::Flood,
            false,
        );
        assert_eq!(ends(&e), vec![200, 200]);
        assert!(e.outcomes().iter().all(|o| !o.killed && o.status == JobStatus::Done));
    }

    #[test]
    fn zero_length_and_silent_jobs_keep_their_times() {
        let (a, b) = interleaved_9_9();
        let e = run(&tree288(Some(9)), vec![job(1, 0, 144, 0, 10), job(2, 0, 144, 50, 100)], vec![a, b], &[1.0, 0.0], Pattern::Flood, true);
        assert_eq!(ends(&e), vec![0, 50]);
    }

    #[test]
    fn isolated_replays_are_never_slowed() {
        let t = Topology::preset("cab").unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let mut jobs = Vec::new();
        for i in 0..300 {
            let n = if rng.gen_bool(0.5) { rng.gen_range(1..=18) } else { rng.gen_range(1..=400) };
            let run = rng.gen_range(10..5000);
            jobs.push(job(i, i * 30, n, run, run + rng.gen_range(0..100)));
        }
        let pats = vec![Pattern::Pairs, Pattern::AllToAll, Pattern::Stencil(4), Pattern::Unstructured];
        let traffic: Vec<JobTraffic> = (0..300)
            .map(|i| JobTraffic { pattern: (i % 4) as u16, bytes: 1.0, ranks_per_node: 1, seed: i as u64, phi: 0.8, service_level: 0 })
            .collect();
        let run_with = |alloc: &str, reference: Reference| {
            let traffic = traffic.clone();
            let net = NetReplay::new(&t, NetConfig::default(), reference, pats.clone(), traffic).unwrap();
            let a = alloc::by_name(alloc, &Default::default()).unwrap();
            let q = queue::by_name("easy", &Default::default()).unwrap();
            let mut e = Engine::new(t.clone(), jobs.clone(), a, q, EngineOptions::default(), &[]).unwrap();
            e.set_network(net).unwrap();
            assert!(e.step(u64::MAX).unwrap());
            e
        };
        let e = run_with("isolated", Reference::Alone);
        for (i, o) in e.outcomes().iter().enumerate() {
            let r = e.network().unwrap().result(i as u32).unwrap();
            assert_eq!((r.slowdown, r.links_shared), (1.0, 0), "row {i}");
            assert_eq!(o.end_s - o.start_s, jobs[i].runtime_s.min(jobs[i].walltime_s));
        }
        // random placement: some jobs share links and slow down; same seed, same schedule
        let e1 = run_with("random", Reference::Alone);
        let e2 = run_with("random", Reference::Alone);
        assert_eq!(ends(&e1), ends(&e2));
        let slowed = (0..300).filter(|&i| e1.network().unwrap().result(i).unwrap().slowdown > 1.0).count();
        assert!(slowed > 10, "{slowed}");
        assert!(e1.network().unwrap().stats().solves > 0);
    }
}

mod reference {
    use super::*;
    use crate::engine::{Engine, EngineOptions};
    use crate::network::replay::{JobTraffic, NetReplay, Reference};
    use crate::queue;
    use crate::workload::Job;

    fn one_job(nodes: u32, alloc: &str, reference: Reference, pattern: Pattern) -> (i64, f64) {
        let t = Topology::preset("cab").unwrap();
        let jobs = vec![Job { id: 1, submit_s: 0, nodes, walltime_s: 100_000, runtime_s: 1000, ..Default::default() }];
        let traffic = vec![JobTraffic { pattern: 0, bytes: 1.0, ranks_per_node: 1, seed: 3, phi: 0.5, service_level: 0 }];
        let net = NetReplay::new(&t, NetConfig::default(), reference, vec![pattern], traffic).unwrap();
        let mut o = crate::registry::Options::new();
        if alloc == "random" {
            o.insert("seed".into(), 5.into());
        }
        let a = alloc::by_name(alloc, &o).unwrap();
        let mut e =
            Engine::new(t, jobs, a, queue::by_name("fcfs", &Default::default()).unwrap(), EngineOptions::default(), &[]).unwrap();
        e.set_network(net).unwrap();
        e.step(u64::MAX).unwrap();
        let r = e.network().unwrap().result(0).unwrap();
        (e.outcomes()[0].end_s, r.p_rel)
    }

    #[test]
    fn the_reference_placement_sets_what_the_logged_runtime_means() {
        // alone: the log is the time alone wherever the job lands
        assert_eq!(one_job(300, "random", Reference::Alone, Pattern::Pairs).0, 1000);
        // ideal: a scattered placement of random pairs costs extra even alone
        let (end, p_rel) = one_job(300, "random", Reference::Ideal, Pattern::Pairs);
        assert!(p_rel > 1.0 && end > 1000 && end == (1000.0 * (0.5 + 0.5 * p_rel) - 1e-9).ceil() as i64, "{end} {p_rel}");
        // random: a compact flood (one pod) beats the mean random placement of its size
        let (end, p_rel) = one_job(324, "linear", Reference::Random { samples: 4 }, Pattern::Flood);
        assert!(p_rel < 1.0 && end < 1000, "{end} {p_rel}");
    }
}

/// Queueing delay (docs/network.md, "Queueing delay"): a latency-bound job next to a
/// streaming one on a 2:1 taper waits on the up-links they share; alone, with no latency
/// part, or with queueing off it gets nothing, and the term adds to the bandwidth slowdown.
#[test]
fn queueing_delay_stretches_only_latency_parts_next_to_other_traffic() {
    let t = tree288(Some(9));
    let a: Vec<u32> = (0..4).chain(18..22).collect();
    let b: Vec<u32> = (9..18).chain(27..36).collect();
    let app = JobSpec { phi: 0.2, latency: 0.3, ..job(a.clone(), Pattern::Flood) };
    let bully = job(b, Pattern::Flood);
    let cfg = NetConfig { fairness: Fairness::Jobs, ..NetConfig::default() };
    let on = Network::new(&t, cfg.clone()).unwrap().with_queueing(0.5).unwrap();
    let off = Network::new(&t, cfg).unwrap();
    let both = on.evaluate(&[app.clone(), bully.clone()]).unwrap();
    let plain = off.evaluate(&[app.clone(), bully.clone()]).unwrap();
    let (qa, qb) = (&both.jobs[0], &both.jobs[1]);
    assert!(qa.queue_wait > 0.0 && qa.queueing > 0.0, "{qa:?}");
    assert!((qa.queueing - 0.3 * qa.queue_wait * 0.5).abs() < 1e-12);
    assert!((qa.slowdown - qa.queueing - plain.jobs[0].slowdown).abs() < 1e-12);
    assert!((qa.slowdown_vs_ideal - qa.queueing - plain.jobs[0].slowdown_vs_ideal).abs() < 1e-12);
    assert_eq!(qb.queueing, 0.0, "no latency part, nothing to stretch");
    assert!(plain.jobs.iter().all(|j| j.queueing == 0.0 && j.queue_wait == 0.0));
    let alone = on.evaluate(std::slice::from_ref(&app)).unwrap();
    assert_eq!(alone.jobs[0].queueing, 0.0);
    assert_eq!(alone.jobs[0].slowdown, 1.0);
    let no_latency = on.evaluate(&[JobSpec { latency: 0.0, ..app.clone() }, bully.clone()]).unwrap();
    assert_eq!(no_latency.jobs[0].queueing, 0.0);
    // a latency part that does not fit beside phi is refused
    assert!(on.evaluate(&[JobSpec { latency: 0.9, ..app }]).unwrap_err().contains("latency"));
}

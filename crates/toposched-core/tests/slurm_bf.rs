//! Hand-worked cases of `slurm-bf` (Slurm 22.05's sched/backfill), one per rule of
//! backfill.c it models. Times in seconds (`ticks_per_s=1`); one leaf of 4 nodes.
//!
//! The common scene: A (2 nodes, limit 100) starts at 0 on an idle machine; B (4 nodes)
//! arrives at 1 and cannot start before A ends; C (1 node) arrives at 2. The main
//! scheduler's FIFO pass stops at B, so only a backfill cycle can start C before B.

use toposched_core::registry::Options;
use toposched_core::{alloc, queue, Engine, EngineOptions, Job, Topology};

fn job(id: i64, submit_s: i64, nodes: u32, walltime_s: i64, runtime_s: i64) -> Job {
    Job { id, submit_s, nodes, walltime_s, runtime_s, ..Default::default() }
}

fn starts(jobs: Vec<Job>, queue_spec: &str) -> Vec<i64> {
    let topo = Topology::fat_tree("t", 4, 1, 1, None, None).unwrap();
    let a = alloc::by_name("linear", &Options::new()).unwrap();
    let q = queue::by_name(queue_spec, &Options::new()).unwrap();
    let mut e = Engine::new(topo, jobs, a, q, EngineOptions::default(), &[]).unwrap();
    assert!(e.step(u64::MAX).unwrap());
    e.outcomes().iter().map(|o| o.start_s).collect()
}

fn scene(c_limit_s: i64) -> Vec<Job> {
    vec![job(1, 0, 2, 100, 100), job(2, 1, 4, 100, 100), job(3, 2, 1, c_limit_s, c_limit_s)]
}

#[test]
fn no_start_outside_a_cycle_or_a_main_pass() {
    // C (limit 50) fits before B's reservation at 100 (resolution 1 s), but nothing starts
    // it at 2: the main pass stops at B and the next cycle is at 30 (the cycle at 0 ran
    // with an empty queue; the agent sleeps bf_interval after it). EASY starts it at once.
    assert_eq!(starts(scene(50), "slurm-bf:bf_resolution_s=1"), vec![0, 100, 30]);
    assert_eq!(starts(scene(50), "slurm-bf:bf_resolution_s=1,bf_interval_s=10"), vec![0, 100, 10]);
    assert_eq!(starts(scene(50), "easy"), vec![0, 100, 2]);
}

#[test]
fn the_main_pass_starts_jobs_between_cycles() {
    // B starts at 100, when A's nodes come back (the main scheduler runs at once then),
    // not at a cycle (cycles run at 30, 60, 90, 120, ...: B's reservation holds a free
    // node, so every cycle leaves more work). D (1 node, limit 20), submitted at 45 while
    // a node is free, is behind B: the main pass stops at B and D waits for the cycle at
    // 60. E, submitted at 250 on an idle machine, starts at its submission's main pass.
    let mut jobs = scene(50);
    jobs.push(job(4, 45, 1, 20, 20));
    jobs.push(job(5, 250, 4, 10, 10));
    assert_eq!(starts(jobs, "slurm-bf:bf_resolution_s=1"), vec![0, 100, 30, 60, 250]);
}

#[test]
fn bf_resolution_rounds_reservations_down_on_its_grid() {
    // B's planned start is 100 (A's limit); on the 60 s grid its reservation begins at 60,
    // so C (30..80) would run into it and is not backfilled: it runs after B. On a 1 s
    // grid it fits.
    assert_eq!(starts(scene(50), "slurm-bf:bf_resolution_s=60"), vec![0, 100, 200]);
    assert_eq!(starts(scene(50), "slurm-bf:bf_resolution_s=1"), vec![0, 100, 30]);
    // C ending at 60 exactly still touches a reservation that begins at 60 (begin <= end)
    assert_eq!(starts(scene(30), "slurm-bf:bf_resolution_s=60"), vec![0, 100, 200]);
    assert_eq!(starts(scene(29), "slurm-bf:bf_resolution_s=60"), vec![0, 100, 30]);
}

#[test]
fn a_job_beyond_bf_window_gets_no_reservation() {
    // C (limit 200) would delay B: with the default window B is reserved at 100 and C
    // waits for B; with a 60 s window B's start (100 > 30 + 60) is beyond it, B gets no
    // reservation, C backfills at 30 and B waits for C (230).
    assert_eq!(starts(scene(200), "slurm-bf:bf_resolution_s=1"), vec![0, 100, 200]);
    assert_eq!(starts(scene(200), "slurm-bf:bf_resolution_s=1,bf_window_s=60"), vec![0, 230, 30]);
    // at the cycle of 60 B's start is inside the window (100 <= 60 + 60): with cycles
    // every 60 s (the first at 60), B is reserved first and C waits
    assert_eq!(starts(scene(200), "slurm-bf:bf_resolution_s=1,bf_window_s=60,bf_interval_s=60"), vec![0, 100, 200]);
}

#[test]
fn bf_max_job_test_cuts_the_cycle() {
    // one job tested per cycle: B (reserved); C is never reached, and runs after B
    assert_eq!(starts(scene(50), "slurm-bf:bf_resolution_s=1,bf_max_job_test=1"), vec![0, 100, 200]);
    assert_eq!(starts(scene(50), "slurm-bf:bf_resolution_s=1,bf_max_job_test=2"), vec![0, 100, 30]);
}

#[test]
fn an_idle_agent_looks_every_second_once_bf_interval_has_passed() {
    // A (3 nodes, limit 100) at 0, B (4 nodes) at 1; bf_window 60 s. The cycle at 30
    // leaves B without a reservation (100 > 30 + 60): nothing planned, nothing changed,
    // so the agent does not cycle at 60 but looks again every second (short_sleep,
    // _more_work). C (1 node, limit 10) arrives at 75: a cycle runs at 75 (not at 90),
    // reserves B at 100 and backfills C, which ends before it.
    let jobs = vec![job(1, 0, 3, 100, 100), job(2, 1, 4, 50, 50), job(3, 75, 1, 10, 10)];
    assert_eq!(starts(jobs, "slurm-bf:bf_resolution_s=1,bf_window_s=60"), vec![0, 100, 75]);
}

#[test]
fn cons_tres_projects_ends_in_windows_aligned_on_the_controller_clock() {
    // A (2 nodes, limit 100) and B (1 node, limit 150) run from 0; P (3 nodes) waits; Q
    // (1 node, limit 100) arrives at 45; the cycle after the one at 30 runs at 60
    // (bf_window 60 s: up to 120). select/linear's will-run releases A alone: P can start
    // at 100, inside the window, and is reserved on A's nodes and the free node 3, so Q
    // waits for B (150). select/cons_tres releases A and B together (B ends within A's
    // 30 s window, aligned to 120): P's start 150 is past the window, P is not reserved,
    // Q backfills at 60 and P starts when B ends (150). On a controller clock 10 s later
    // the window ends at 110, B is its own group and cons_tres behaves as linear.
    let jobs = vec![job(1, 0, 2, 100, 100), job(2, 0, 1, 150, 150), job(3, 1, 3, 100, 100), job(4, 45, 1, 100, 100)];
    let base = "slurm-bf:bf_resolution_s=1,bf_window_s=60";
    assert_eq!(starts(jobs.clone(), &format!("{base},bf_will_run_window_s=0")), vec![0, 0, 100, 150]);
    assert_eq!(starts(jobs.clone(), &format!("{base},bf_will_run_window_s=30")), vec![0, 0, 150, 60]);
    assert_eq!(starts(jobs, &format!("{base},bf_will_run_window_s=30,bf_clock_offset=10")), vec![0, 0, 100, 150]);
}

fn schedule(topo: &Topology, jobs: &[Job], queue_spec: &str, alloc_name: &str) -> Vec<(i64, Vec<u32>)> {
    let a = alloc::by_name(alloc_name, &Options::new()).unwrap();
    let q = queue::by_name(queue_spec, &Options::new()).unwrap();
    let mut e = Engine::new(topo.clone(), jobs.to_vec(), a, q, EngineOptions::default(), &[]).unwrap();
    assert!(e.step(u64::MAX).unwrap());
    (0..jobs.len()).map(|i| (e.outcomes()[i].start_s, e.nodes_of(i as u32).to_vec())).collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 200, ..Default::default() })]

    /// With no backfill cycle ever due, slurm-bf is exactly `slurm` (the same main
    /// scheduler, one piece of code), nodes included. (Every registered queue policy also
    /// goes through tests/engine.rs's schedule invariants.)
    #[test]
    fn without_cycles_slurm_bf_is_the_main_scheduler(
        k in 1u32..5, s in 1u32..4,
        raw in proptest::collection::vec((0i64..300, 1u32..9, 1i64..200, 0i64..200), 1..40),
    ) {
        let topo = Topology::fat_tree("t", k, s, 2, None, None).unwrap();
        let n = topo.n_nodes() as u32;
        let mut raw = raw;
        raw.sort_by_key(|x| x.0);
        let jobs: Vec<Job> = raw.iter().enumerate().map(|(i, &(t, nodes, w, r))| job(i as i64, t, nodes.min(n), w, r)).collect();
        let fifo = schedule(&topo, &jobs, "slurm", "slurm-tree");
        let none = schedule(&topo, &jobs, "slurm-bf:bf_last_cycle=1000000000", "slurm-tree");
        proptest::prop_assert_eq!(&fifo, &none);
    }
}

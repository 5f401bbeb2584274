//! Engine-level tests: the plugin's own regression test (brief E9/E10) and property tests
//! of the invariants every schedule must keep.

mod common;

use common::options_of;
use proptest::prelude::*;
use toposched_core::alloc::{self, Allocator, IsolatedOptions, LeafOrder, RandomOptions, TieBreak};
use toposched_core::registry::Options;
use toposched_core::queue::{self, EasyOptions, QueuePolicy};
use toposched_core::{Engine, EngineOptions, EventOrder, Job, JobStatus, Topology};

fn job(id: i64, submit_s: i64, nodes: u32, walltime_s: i64, runtime_s: i64) -> Job {
    Job { id, submit_s, nodes, walltime_s, runtime_s, ..Default::default() }
}

/// A registered allocation policy with the options these tests vary.
fn alloc_named(name: &str, seed: u64, iso: IsolatedOptions) -> Box<dyn Allocator> {
    let o = match name {
        "random" => options_of(RandomOptions { seed }),
        "isolated" => options_of(iso),
        _ => Options::new(),
    };
    alloc::by_name(name, &o).unwrap()
}

fn queue_named(name: &str, easy: EasyOptions) -> Box<dyn QueuePolicy> {
    queue::by_name(name, &if name == "easy" { options_of(easy) } else { Options::new() }).unwrap()
}

fn run(topo: Topology, jobs: Vec<Job>, queue: &str, alloc_name: &str, iso: IsolatedOptions, easy: EasyOptions, opts: EngineOptions) -> Engine {
    let a = alloc_named(alloc_name, 42, iso);
    let q = queue_named(queue, easy);
    let mut e = Engine::new(topo, jobs, a, q, opts, &[]).unwrap();
    assert!(e.step(u64::MAX).unwrap());
    e
}

/// hype: 3 pods x 4 switches x 8 nodes, named hype1..hype96 (1-based).
fn hype_names(nodes: &[u32]) -> Vec<u32> {
    nodes.iter().map(|n| n + 1).collect()
}

fn e9_jobs() -> Vec<Job> {
    vec![job(1, 1, 33, 600, 360), job(2, 1, 33, 57_600, 57_609), job(3, 1, 30, 57_600, 38_109), job(4, 1, 1, 60, 60)]
}

#[test]
fn e9_plugin_regression_test() {
    for (flux_window, tiers_always) in [(true, true), (false, false)] {
        let easy = EasyOptions { flux_window, reserved_tiers_always: tiers_always };
        let opts = EngineOptions { record_reservations: true, check_interference_free: true, ..Default::default() };
        let e = run(Topology::preset("hype").unwrap(), e9_jobs(), "easy", "isolated", IsolatedOptions::default(), easy, opts);
        let o = e.outcomes();
        let starts: Vec<i64> = o.iter().map(|o| o.start_s).collect();
        assert_eq!(starts, vec![1, 361, 1, 1], "start order 1, 3, 4, 2");
        let ends: Vec<i64> = o.iter().map(|o| o.end_s).collect();
        assert_eq!(ends, vec![361, 57_961, 38_110, 61]);
        assert!(o[1].killed && !o[2].killed);
        let mut expected_12: Vec<u32> = vec![33];
        expected_12.extend(65..=96);
        assert_eq!(hype_names(&e.nodes_of(0)), expected_12);
        assert_eq!(hype_names(&e.nodes_of(1)), expected_12);
        let mut expected_3: Vec<u32> = (1..=6).collect();
        expected_3.extend(9..=32);
        assert_eq!(hype_names(&e.nodes_of(2)), expected_3);
        assert_eq!(hype_names(&e.nodes_of(3)), vec![7]);
        // The reservation for job 2 at t=1 starts at job 1's expected end, 601 (+2 in the plugin's window).
        let first = e.reservations()[0];
        assert_eq!((first.pass_s, first.job, first.start_s), (1, 1, if flux_window { 603 } else { 601 }));
    }
}

#[test]
fn e10_paper_leaf_order() {
    let iso = IsolatedOptions { leaf_order: LeafOrder::Paper, tie_break: TieBreak::Name };
    let e = run(Topology::preset("hype").unwrap(), e9_jobs(), "easy", "isolated", iso, EasyOptions::default(), EngineOptions::default());
    let mut expected: Vec<u32> = vec![57];
    expected.extend(65..=96);
    assert_eq!(hype_names(&e.nodes_of(0)), expected);
    assert_eq!(hype_names(&e.nodes_of(1)), expected);
    let starts: Vec<i64> = e.outcomes().iter().map(|o| o.start_s).collect();
    assert_eq!(starts, vec![1, 361, 1, 1]);
}

#[test]
fn classic_easy_backfills_around_the_head() {
    // 10 nodes. A(6 nodes, 100 s) runs; B(8) must wait for A; C(4, 50 s) ends before the
    // shadow time (100) so it backfills; D(4, 500 s) does not end in time and needs 4 > 2
    // extra nodes, so it waits; E(2, 500 s) fits in the 2 extra nodes.
    let topo = Topology::fat_tree("t", 10, 1, 1, None, None).unwrap();
    let jobs = vec![job(1, 0, 6, 100, 100), job(2, 0, 8, 100, 100), job(3, 0, 4, 50, 50), job(4, 0, 4, 500, 500), job(5, 0, 2, 500, 500)];
    let opts = EngineOptions { record_reservations: true, ..Default::default() };
    let e = run(topo, jobs, "easy", "linear", IsolatedOptions::default(), EasyOptions::default(), opts);
    let starts: Vec<i64> = e.outcomes().iter().map(|o| o.start_s).collect();
    // C (4 nodes) takes the last 4 free nodes at t=0, so E cannot fit at t=0; at t=50 C
    // ends, 4 free, shadow 100 with 2 extra → E (2 nodes, long) backfills, D (4, long) not.
    assert_eq!(starts, vec![0, 100, 0, 200, 50]);
}

#[test]
fn fcfs_blocks_behind_the_head() {
    let topo = Topology::fat_tree("t", 10, 1, 1, None, None).unwrap();
    let jobs = vec![job(1, 0, 6, 100, 100), job(2, 0, 8, 100, 100), job(3, 0, 1, 10, 10)];
    let e = run(topo, jobs, "fcfs", "linear", IsolatedOptions::default(), EasyOptions::default(), EngineOptions::default());
    let starts: Vec<i64> = e.outcomes().iter().map(|o| o.start_s).collect();
    assert_eq!(starts, vec![0, 100, 100]);
}

#[test]
fn zero_length_jobs_and_too_large_jobs() {
    let topo = Topology::fat_tree("t", 4, 1, 1, None, None).unwrap();
    let jobs = vec![job(1, 0, 4, 10, 0), job(2, 0, 5, 10, 5), job(3, 0, 4, 10, 10)];
    let e = run(topo, jobs, "easy", "linear", IsolatedOptions::default(), EasyOptions::default(), EngineOptions::default());
    let o = e.outcomes();
    assert_eq!((o[0].start_s, o[0].end_s), (0, 0));
    assert_eq!(o[1].status, JobStatus::Skipped);
    assert_eq!(e.skipped()[0].0, 1);
    assert!(e.skipped()[0].1.contains("5 nodes"));
    assert_eq!(o[2].start_s, 0, "the zero-length job frees its nodes in a new round at t=0");
}

#[test]
fn run_on_lets_jobs_exceed_their_limit() {
    let topo = Topology::fat_tree("t", 4, 1, 1, None, None).unwrap();
    let jobs = vec![job(1, 0, 4, 10, 30), job(2, 5, 4, 10, 10)];
    let killed = run(topo.clone(), jobs.clone(), "easy", "linear", IsolatedOptions::default(), EasyOptions::default(), EngineOptions::default());
    assert_eq!(killed.outcomes()[0].end_s, 10);
    assert!(killed.outcomes()[0].killed);
    let opts = EngineOptions { kill_at_walltime: false, ..Default::default() };
    let ran_on = run(topo, jobs, "easy", "linear", IsolatedOptions::default(), EasyOptions::default(), opts);
    assert_eq!(ran_on.outcomes()[0].end_s, 30);
    assert_eq!(ran_on.outcomes()[1].start_s, 30);
}

#[test]
fn conservative_run_on_does_not_step_per_second_of_overrun() {
    // issue 13: a 10^9 s overrun used to cost one pass per second (it never finished).
    let topo = Topology::fat_tree("t", 4, 1, 1, None, None).unwrap();
    let overrun = 1_000_000_000;
    let jobs = vec![job(1, 0, 4, 10, overrun), job(2, 5, 4, 10, 10), job(3, 6, 2, 10, 10)];
    for alloc_name in ["linear", "isolated"] {
        let opts = EngineOptions { kill_at_walltime: false, ..Default::default() };
        let e = run(topo.clone(), jobs.clone(), "conservative", alloc_name, IsolatedOptions::default(), EasyOptions::default(), opts);
        let o = e.outcomes();
        assert_eq!(o[0].end_s, overrun);
        // the machine is full until the overrunning job ends; then both run, one after the other
        assert!(o[1].start_s >= overrun && o[2].start_s >= overrun, "{alloc_name}: {:?}", o);
        assert!(o[1].start_s.max(o[2].start_s) <= overrun + 10, "{alloc_name}: {:?}", o);
        assert!(e.passes() < 20, "{alloc_name}: {} passes", e.passes());
    }
}

#[test]
fn times_that_would_overflow_are_refused_with_the_row() {
    let topo = Topology::preset("toy18").unwrap();
    let jobs = vec![job(1, 0, 1, 10, 10), job(2, i64::MAX - 100, 1, 1000, 1000)];
    let a = alloc_named("linear", 0, IsolatedOptions::default());
    let q = queue_named("easy", EasyOptions::default());
    let err = Engine::new(topo, jobs, a, q, EngineOptions::default(), &[]).err().unwrap();
    assert!(err.0.contains("row 1") && err.0.contains("submit_s"), "{err}");
}

#[test]
fn unsorted_input_is_refused_with_the_row() {
    let topo = Topology::preset("toy18").unwrap();
    let jobs = vec![job(1, 10, 1, 10, 10), job(2, 5, 1, 10, 10)];
    let a = alloc_named("linear", 0, IsolatedOptions::default());
    let q = queue_named("fcfs", EasyOptions::default());
    let err = Engine::new(topo, jobs, a, q, EngineOptions::default(), &[]).err().unwrap();
    assert!(err.0.contains("row 1") && err.0.contains("submit_s"), "{err}");
}

// ---------- properties ----------

fn fabric() -> impl Strategy<Value = Topology> {
    prop_oneof![
        Just(Topology::preset("toy18").unwrap()),
        (1u32..6, 1u32..4, 1u32..4).prop_map(|(k, s, p)| Topology::fat_tree("r", k, s, p, None, None).unwrap()),
        prop::collection::vec(prop::collection::vec(1u32..5, 1..4), 2..4)
            .prop_map(|pods| Topology::from_leaf_sizes("u", 3, &pods, None, None, None, None).unwrap()),
    ]
}

fn workload(max_nodes: u32) -> impl Strategy<Value = Vec<Job>> {
    prop::collection::vec((0i64..50, 1u32..=max_nodes + 2, 1i64..40, 0i64..50), 1..40).prop_map(|mut v| {
        v.sort_by_key(|x| x.0);
        v.into_iter().enumerate().map(|(i, (s, n, w, r))| job(i as i64, s, n, w, r)).collect()
    })
}

fn case() -> impl Strategy<Value = (Topology, Vec<Job>)> {
    fabric().prop_flat_map(|t| {
        let n = t.n_nodes() as u32;
        (Just(t), workload(n))
    })
}

/// Check every invariant of a finished run.
fn check_schedule(e: &Engine, queue: &str, kill: bool) -> Result<(), TestCaseError> {
    let jobs = e.jobs();
    let o = e.outcomes();
    let topo = e.topology();
    // every job done or skipped; start >= submit; run time honoured
    for (i, (j, o)) in jobs.iter().zip(o).enumerate() {
        prop_assert!(o.status == JobStatus::Done || o.status == JobStatus::Skipped, "row {i} is {:?}", o.status);
        if o.status == JobStatus::Done {
            prop_assert!(o.start_s >= j.submit_s, "row {i} starts before submit");
            let run = if kill { j.runtime_s.min(j.walltime_s) } else { j.runtime_s };
            prop_assert_eq!(o.end_s - o.start_s, run);
            prop_assert_eq!(e.nodes_of(i as u32).len(), j.nodes as usize);
        } else {
            // only a policy that constrains where a job goes (not fungible) may find no
            // place for a job the machine could hold
            let constrained = toposched_core::registry::alloc(&e.allocator_name()).is_some_and(|p| !p.fungible);
            prop_assert!(j.nodes as usize > topo.n_nodes() || constrained);
        }
    }
    // no node held by two jobs at once
    let mut intervals: Vec<Vec<(i64, i64, usize)>> = vec![Vec::new(); topo.n_nodes()];
    for (i, o) in o.iter().enumerate() {
        if o.status == JobStatus::Done && o.end_s > o.start_s {
            for &n in &e.nodes_of(i as u32) {
                intervals[n as usize].push((o.start_s, o.end_s, i));
            }
        }
    }
    for iv in &mut intervals {
        iv.sort();
        for w in iv.windows(2) {
            prop_assert!(w[0].1 <= w[1].0, "node shared by rows {} and {}", w[0].2, w[1].2);
        }
    }
    // FCFS keeps order
    if queue == "fcfs" {
        let mut last = i64::MIN;
        for o in o.iter().filter(|o| o.status == JobStatus::Done) {
            prop_assert!(o.start_s >= last, "FCFS started a job before an earlier one");
            last = o.start_s;
        }
    }
    // EASY: the head never starts after a shadow time computed for it; conservative: no
    // job starts after the reservation it got at submission (nor any later one)
    if kill {
        for r in e.reservations() {
            let start = o[r.job as usize].start_s;
            prop_assert!(start <= r.start_s, "row {} reserved for {} at pass {} but started {}", r.job, r.start_s, r.pass_s, start);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn schedules_keep_their_invariants((topo, jobs) in case(), qi in 0usize..64, ai in 0usize..64, kill in any::<bool>(), flux in any::<bool>()) {
        // Every registered pair (a new policy file is tested here without an edit).
        let (queues, allocs) = (toposched_core::registry::queue_names(), toposched_core::registry::alloc_names());
        let queue = queues[qi % queues.len()];
        let alloc_name = allocs[ai % allocs.len()];
        let opts = EngineOptions { kill_at_walltime: kill, record_reservations: true, check_interference_free: alloc_name == "isolated", ..Default::default() };
        let easy = EasyOptions { flux_window: flux, reserved_tiers_always: flux };
        let a = alloc_named(alloc_name, 7, IsolatedOptions::default());
        let q = queue_named(queue, easy);
        let mut e = Engine::new(topo, jobs, a, q, opts, &[]).unwrap();
        let done = e.step(u64::MAX);
        prop_assert!(done.is_ok(), "{:?}", done);
        check_schedule(&e, queue, kill)?;
    }

    #[test]
    fn same_inputs_same_schedule((topo, jobs) in case(), ai in 0usize..64) {
        let allocs = toposched_core::registry::alloc_names();
        let alloc_name = allocs[ai % allocs.len()];
        let mut runs = Vec::new();
        for _ in 0..2 {
            let e = run(topo.clone(), jobs.clone(), "easy", alloc_name, IsolatedOptions::default(), EasyOptions::default(), EngineOptions::default());
            let s: Vec<(i64, Vec<u32>)> = (0..jobs.len()).map(|i| (e.outcomes()[i].start_s, e.nodes_of(i as u32).to_vec())).collect();
            runs.push(s);
        }
        prop_assert_eq!(&runs[0], &runs[1]);
    }
}

#[test]
fn conservative_does_not_let_a_backfill_delay_a_later_job() {
    // 10 nodes. A(6, 100 s) starts at 0. B(8) waits: EASY's head, reserved at 100 with 2
    // extra nodes. C(10) waits behind B. D(2 nodes, 1000 s) arrives at 1.
    // EASY protects only the head: D ends after B's shadow time but fits in the 2 extra
    // nodes, so it backfills at 1, and C (not the head) then waits for D: 1001.
    // Conservative gives C a reservation at 200 (after B) before D arrives; D may not
    // delay it, so D goes after C: 300.
    let topo = Topology::fat_tree("t", 10, 1, 1, None, None).unwrap();
    let jobs = vec![job(1, 0, 6, 100, 100), job(2, 0, 8, 100, 100), job(3, 0, 10, 100, 100), job(4, 1, 2, 1000, 1000)];
    let cons = run(topo.clone(), jobs.clone(), "conservative", "linear", IsolatedOptions::default(), EasyOptions::default(), EngineOptions::default());
    let starts: Vec<i64> = cons.outcomes().iter().map(|o| o.start_s).collect();
    assert_eq!(starts, vec![0, 100, 200, 300]);
    let easy = run(topo, jobs, "easy", "linear", IsolatedOptions::default(), EasyOptions::default(), EngineOptions::default());
    let starts: Vec<i64> = easy.outcomes().iter().map(|o| o.start_s).collect();
    assert_eq!(starts, vec![0, 100, 1001, 1], "EASY lets the backfill delay C (the case conservative exists for)");
}

#[test]
fn conservative_run_on_keeps_isolated_interference_free() {
    // A job running past its limit is assumed to end within a second; a reservation made
    // on that assumption must not start beside it on the pod it spans (found by the
    // schedules_keep_their_invariants proptest: pod 0 hosted rows 11 and 12 at t=75).
    let topo = Topology::fat_tree("r", 1, 3, 3, None, None).unwrap();
    let raw = [
        (1, 1, 23, 29), (1, 9, 11, 0), (1, 8, 35, 0), (1, 1, 31, 38), (4, 5, 26, 11), (4, 3, 22, 0), (4, 3, 1, 29), (4, 8, 19, 0),
        (6, 2, 1, 42), (6, 3, 1, 37), (6, 2, 20, 0), (6, 4, 1, 0), (7, 4, 1, 4), (7, 3, 1, 21), (7, 5, 17, 0), (9, 2, 1, 21),
        (9, 4, 16, 0), (17, 1, 7, 12), (18, 1, 13, 3), (22, 4, 16, 0), (43, 4, 1, 0), (43, 3, 3, 0),
    ];
    let jobs: Vec<Job> = raw.iter().enumerate().map(|(i, &(s, n, w, r))| job(i as i64, s, n, w, r)).collect();
    let opts = EngineOptions { kill_at_walltime: false, check_interference_free: true, ..Default::default() };
    let e = run(topo, jobs, "conservative", "isolated", IsolatedOptions::default(), EasyOptions::default(), opts);
    assert!(e.outcomes().iter().all(|o| o.status == JobStatus::Done));
}

#[test]
fn conservative_run_on_checks_overdue_reservations_that_start_together() {
    // 12 nodes, leaves of 3, pods of 6. A (1 node, limit 3) runs on to 30 on leaf 0; B (9
    // nodes) runs [0, 10); C (7 nodes) and D (5 nodes) are reserved [12, 13) and [10, 12):
    // windows apart, so both sets use leaf 0. Both rest on A, and at 30 both are due at
    // once: the second of them must be checked against the first (I1: two spanning jobs
    // on leaf 0), not started on its reserved nodes unchecked. (tests/test_sched_references.py)
    let topo = Topology::fat_tree("f", 3, 2, 2, None, None).unwrap();
    let jobs = vec![job(1, 0, 1, 3, 30), job(2, 0, 9, 5, 10), job(3, 0, 7, 1, 10), job(4, 2, 5, 2, 1)];
    let opts = EngineOptions { kill_at_walltime: false, check_interference_free: true, ..Default::default() };
    let e = run(topo, jobs, "conservative", "isolated", IsolatedOptions::default(), EasyOptions::default(), opts);
    assert!(e.outcomes().iter().all(|o| o.status == JobStatus::Done));
    let starts: Vec<i64> = e.outcomes().iter().map(|o| o.start_s).collect();
    assert_eq!(starts[..3], [0, 0, 30], "C, first in the queue, starts at 30 on its nodes; D is re-reserved after it");
    assert!(starts[3] >= 30);
}

#[test]
fn per_event_conservative_keeps_a_reservation_due_while_the_instant_still_has_ends() {
    // 2 nodes. A and B (1 node each) run [0, 10); C (2 nodes) arrives at 1 and is reserved
    // at 10, D (1 node) at 2 and is reserved at 15. At 10, in the per-event order, A's end
    // runs a pass while B still holds its node: C cannot start yet, but B's end at the same
    // instant frees it. C must keep its reservation (the guarantee: no job starts later
    // than the reservation it got at submission); re-reserved, it went behind D, whom
    // compression then moved to 10 in its place (C 15, D 10).
    let topo = Topology::fat_tree("t", 2, 1, 1, None, None).unwrap();
    let jobs = vec![job(1, 0, 1, 10, 10), job(2, 0, 1, 10, 10), job(3, 1, 2, 5, 5), job(4, 2, 1, 5, 5)];
    for order in [EventOrder::PerEvent, EventOrder::PerInstant] {
        let opts = EngineOptions { event_order: order, ..Default::default() };
        let e = run(topo.clone(), jobs.clone(), "conservative", "linear", IsolatedOptions::default(), EasyOptions::default(), opts);
        let starts: Vec<i64> = e.outcomes().iter().map(|o| o.start_s).collect();
        assert_eq!(starts, vec![0, 0, 10, 15], "{order:?}");
    }
}

#[test]
fn conservative_wakes_up_for_a_reservation_between_events() {
    // A(4, limit 100, runs 10) and B(4, limit 50) on 4 nodes; C(4, limit 10) arrives at 1.
    // B is reserved at 100 (A's limit). A ends at 10: compression moves B to 10. C gets
    // [60, 70) after B... it must start at exactly its reservation although nothing ends
    // or arrives then except B's end at 60.
    let topo = Topology::fat_tree("t", 4, 1, 1, None, None).unwrap();
    let jobs = vec![job(1, 0, 4, 100, 10), job(2, 0, 4, 50, 5), job(3, 1, 4, 10, 10)];
    let e = run(topo, jobs, "conservative", "linear", IsolatedOptions::default(), EasyOptions::default(), EngineOptions { record_reservations: true, ..Default::default() });
    let starts: Vec<i64> = e.outcomes().iter().map(|o| o.start_s).collect();
    // B moves to 10 and ends at 15; C was reserved at 150 then moved to 60 at t=10, then
    // at t=15 (B ended early) to 15.
    assert_eq!(starts, vec![0, 10, 15]);
}

#[test]
fn switches_limit_waits_then_gives_up() {
    // toy18 with nodes 3, 6, 9, 12, 15 down: leaves 1-5 have 2 healthy nodes. A (1 node,
    // 100 s) takes node 0, so no leaf has 3 free nodes until t=100. J (3 nodes, submitted
    // at 1) with --switches=1@50 waits until t=51, then takes two leaves; with 1@500 it
    // waits for A to end and gets leaf 0 whole.
    let topo = Topology::preset("toy18").unwrap();
    let jobs = vec![job(1, 0, 1, 100, 100), job(2, 1, 3, 10, 10)];
    for (wait, start, leaves) in [(50i64, 51i64, vec![1u32, 2, 4]), (500, 100, vec![0, 1, 2])] {
        let a = alloc_named("linear", 0, IsolatedOptions::default());
        let q = queue_named("easy", EasyOptions::default());
        let mut e = Engine::new(topo.clone(), jobs.clone(), a, q, EngineOptions::default(), &[3, 6, 9, 12, 15]).unwrap();
        e.set_switches(vec![(0, 0), (1, wait)]).unwrap();
        assert!(e.step(u64::MAX).unwrap());
        assert_eq!(e.outcomes()[1].start_s, start, "wait {wait}");
        assert_eq!(e.nodes_of(1), &leaves[..]);
    }
}

/// `isolated` without its monotone-class promise: EASY then tries every job.
struct NoSkipping(alloc::Isolated);

impl alloc::Allocator for NoSkipping {
    fn name(&self) -> String {
        self.0.name()
    }
    fn fungible(&self) -> bool {
        self.0.fungible()
    }
    fn check_fits_ever(&self, t: &Topology, e: &toposched_core::state::ClusterState, n: u32) -> Result<(), String> {
        self.0.check_fits_ever(t, e, n)
    }
    fn select(&mut self, t: &Topology, s: &toposched_core::state::ClusterState, n: u32, g: &alloc::Guard) -> Option<Vec<u32>> {
        self.0.select(t, s, n, g)
    }
    fn feasible(&mut self, t: &Topology, s: &toposched_core::state::ClusterState, n: u32, g: &alloc::Guard) -> bool {
        self.0.feasible(t, s, n, g)
    }
    // a wrapper forwards the tracker (the counters isolated keeps in the machine state)
    fn tracker(&self, t: &Topology) -> Option<Box<dyn alloc::Tracker>> {
        self.0.tracker(t)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Skipping hopeless backfill candidates is a pure speed-up.
    #[test]
    fn skipping_hopeless_jobs_changes_no_schedule((topo, jobs) in case(), flux in any::<bool>()) {
        let easy = EasyOptions { flux_window: flux, reserved_tiers_always: flux };
        let mut schedules = Vec::new();
        for skip in [true, false] {
            let a: Box<dyn alloc::Allocator> = if skip {
                Box::new(alloc::Isolated::new(IsolatedOptions::default()))
            } else {
                Box::new(NoSkipping(alloc::Isolated::new(IsolatedOptions::default())))
            };
            let mut e = Engine::new(topo.clone(), jobs.clone(), a, queue_named("easy", easy), EngineOptions::default(), &[]).unwrap();
            e.step(u64::MAX).unwrap();
            schedules.push((0..jobs.len()).map(|i| (e.outcomes()[i].start_s, e.nodes_of(i as u32).to_vec())).collect::<Vec<_>>());
        }
        prop_assert_eq!(&schedules[0], &schedules[1]);
    }
}

// ---------- fuzzing the job-table checks (issue 13) ----------

/// Times from ordinary to extreme: the engine must refuse what it cannot replay exactly
/// (an error naming the row), and replay the rest without overflow or panic.
fn wild_time() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => 0i64..2_000,
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        1 => Just(-1i64),
        1 => Just(1i64 << 53),
        1 => Just((1i64 << 53) + 1),
        1 => Just(1i64 << 61),
        1 => Just(1_000_000_000_000_000_000i64),
        1 => any::<i64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn job_table_checks_refuse_or_replay_soundly(
        raw in prop::collection::vec((wild_time(), prop_oneof![3 => 1u32..6, 1 => any::<u32>()], wild_time(), wild_time()), 1..12),
        queue in prop::sample::select(vec!["fcfs", "easy", "conservative"]),
        kill in any::<bool>(),
    ) {
        let mut jobs: Vec<Job> = raw.iter().enumerate().map(|(i, &(s, n, w, r))| job(i as i64, s, n, w, r)).collect();
        jobs.sort_by_key(|j| j.submit_s);
        let topo = Topology::fat_tree("f", 4, 2, 2, None, None).unwrap();
        let a = alloc_named("linear", 0, IsolatedOptions::default());
        let q = queue_named(queue, EasyOptions::default());
        let opts = EngineOptions { kill_at_walltime: kill, ..Default::default() };
        match Engine::new(topo, jobs.clone(), a, q, opts, &[]) {
            Err(e) => prop_assert!(e.0.contains("job row"), "{}", e),
            Ok(mut e) => {
                // accepted: every time fits, and the replay ends with sound times
                for j in &jobs {
                    prop_assert!(j.submit_s.unsigned_abs() <= 1 << 53 && j.walltime_s >= 1 && j.runtime_s >= 0);
                }
                prop_assert!(e.step(u64::MAX).unwrap());
                for (o, j) in e.outcomes().iter().zip(e.jobs()) {
                    if o.status == JobStatus::Done {
                        prop_assert!(o.start_s >= j.submit_s && o.end_s >= o.start_s);
                        prop_assert!(o.end_s - o.start_s <= j.runtime_s);
                    }
                }
            }
        }
    }
}

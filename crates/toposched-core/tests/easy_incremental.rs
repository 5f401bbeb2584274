//! EASY's node-set reservation moved by what changed since the last pass (`queue::easy`,
//! `update_kept`) against the full search at every change (`ReservationUpdate::Full`, the
//! rule as written: a fresh projection of the running jobs, searched instant by instant):
//! same schedule and same reservations, on random workloads and fabrics, for the policies
//! that take the incremental path and for those that do not.

mod common;

use std::sync::{Arc, Mutex};

use common::{alloc_of, jobs_in_submit_order, small_fabrics};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use toposched_core::queue::{Easy, EasyOptions, PassCtx, QueuePolicy, ReservationUpdate};
use toposched_core::{Engine, EngineOptions, EventOrder, Job, JobStatus, Topology};

/// Lets the test read the policy's counters after the engine has run it.
struct Shared(Arc<Mutex<Easy>>);

impl QueuePolicy for Shared {
    fn name(&self) -> String {
        "easy".into()
    }
    fn pass(&mut self, ctx: &mut PassCtx) {
        self.0.lock().unwrap().pass(ctx)
    }
}

const ALLOCS: [&str; 5] = ["isolated", "capped", "jigsaw", "slurm-tree", "linear"];


#[derive(Clone, Debug)]
struct Case {
    topo: Topology,
    jobs: Vec<Job>,
    alloc: &'static str,
    variant: u8,
    easy: EasyOptions,
    kill: bool,
    per_event: bool,
    /// Slurm `--switches` per row, or none: a job then may fail to start where the
    /// allocation policy places it (the head's reservation may be at the first instant).
    switches: Option<Vec<(u32, i64)>>,
}

/// What a run gives: every job's (status, start, end, nodes), and every reservation
/// (pass instant, row, start).
type Run = (Vec<(JobStatus, i64, i64, Vec<u32>)>, Vec<(i64, u32, i64)>);

fn run(c: &Case, update: ReservationUpdate) -> (Run, [u64; 3]) {
    let easy = Arc::new(Mutex::new(Easy::new(c.easy).with_update(update)));
    let opts = EngineOptions {
        kill_at_walltime: c.kill,
        record_reservations: true,
        event_order: if c.per_event { EventOrder::PerEvent } else { EventOrder::default() },
        ..EngineOptions::default()
    };
    let mut e = Engine::new(c.topo.clone(), c.jobs.clone(), alloc_of(c.alloc, c.variant), Box::new(Shared(easy.clone())), opts, &[]).unwrap();
    if let Some(s) = &c.switches {
        e.set_switches(s.clone()).unwrap();
    }
    e.step(u64::MAX).unwrap();
    let jobs = (0..c.jobs.len())
        .map(|i| {
            let o = e.outcomes()[i];
            let nodes = if o.status == JobStatus::Done { e.nodes_of(i as u32) } else { Vec::new() };
            (o.status, o.start_s, o.end_s, nodes)
        })
        .collect();
    let res = e.reservations().iter().map(|r| (r.pass_s, r.job, r.start_s)).collect();
    let counts = easy.lock().unwrap().incremental_updates();
    ((jobs, res), counts)
}

/// Busy queues: 10 to 90 jobs submitted in [0, 120) s, most small, some as large as the
/// machine (heads that wait), limits 1 to 59 s, run times 0 to 79 s (many end early, some
/// past their limit: killed or run on).
fn workload(n: u32) -> impl Strategy<Value = Vec<Job>> {
    let size = prop_oneof![3 => 1u32..=n.div_ceil(4).max(1), 2 => 1u32..=n];
    prop::collection::vec((0i64..120, size, 1i64..60, 0i64..80), 10..90).prop_map(jobs_in_submit_order)
}

fn case() -> impl Strategy<Value = Case> {
    (small_fabrics(), 0usize..ALLOCS.len(), any::<u8>(), any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()).prop_flat_map(
        |(topo, ai, variant, flux, always, kill, per_event)| {
            let n = topo.n_nodes() as u32;
            let switches = prop::option::weighted(0.3, prop::collection::vec((0u32..3, 0i64..60), 90));
            (Just(topo), workload(n), switches).prop_map(move |(topo, jobs, switches)| Case {
                switches: switches.map(|s| s[..jobs.len()].to_vec()),
                topo,
                jobs,
                alloc: ALLOCS[ai],
                variant,
                easy: EasyOptions { flux_window: flux, reserved_tiers_always: always },
                kill,
                per_event,
            })
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    /// Same schedule and reservations with the incremental update, the full search, and
    /// both at every pass (`Checked` panics at the first pass where instant or nodes differ).
    #[test]
    fn incremental_reservation_equals_the_full_search(c in case()) {
        let (full, _) = run(&c, ReservationUpdate::Full);
        let (incremental, _) = run(&c, ReservationUpdate::Incremental);
        prop_assert_eq!(&incremental, &full);
        let (checked, _) = run(&c, ReservationUpdate::Checked);
        prop_assert_eq!(&checked, &full);
    }
}

/// The comparison above is not vacuous: on such workloads the incremental path finds
/// most reservations of the policies that promise monotone placement, stepping both back
/// and forward, and none of the others'.
#[test]
fn the_incremental_path_is_taken() {
    let mut runner = TestRunner::deterministic();
    let mut total = [[0u64; 3]; ALLOCS.len()];
    let strategy = case();
    for _ in 0..300 {
        let c = strategy.new_tree(&mut runner).unwrap().current();
        let (_, counts) = run(&c, ReservationUpdate::Incremental);
        let ai = ALLOCS.iter().position(|&a| a == c.alloc).unwrap();
        for k in 0..3 {
            total[ai][k] += counts[k];
        }
    }
    eprintln!("incremental updates (all, back, forward) per policy {ALLOCS:?}: {total:?}");
    for (ai, name) in ALLOCS.iter().enumerate() {
        let [updates, back, forward] = total[ai];
        if matches!(*name, "isolated" | "capped" | "jigsaw") {
            assert!(updates > 200 && back > 10 && forward > 10, "{name}: {:?}", total[ai]);
        } else {
            assert_eq!(updates, 0, "{name} is fungible: reservations on counts");
        }
    }
}

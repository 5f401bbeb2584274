//! EASY's phase 2 through its queue index (`queue::easy`, `QueueIndex` kept across passes
//! by the rows appended and the jobs started; after a pass that asked about no job, only
//! the rows it did not look at while nothing else changed) against the plain scan of every queued job
//! behind the head (`BackfillScan::Plain`, the rule as written): same schedule and same
//! reservations on random long queues, for every registered allocation policy, with
//! `--queue-depth`, `--switches`, run-on, both event orders, and a queue order in front
//! that leaves the queue alone, touches it, holds jobs or re-sorts it (the index is then
//! rebuilt, or the plain scan runs).

mod common;

use std::sync::{Arc, Mutex};

use common::{alloc_of, jobs_in_submit_order, small_fabrics};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use toposched_core::queue::{BackfillScan, Easy, EasyOptions, PassCtx, QueuePolicy};
use toposched_core::{Engine, EngineOptions, EventOrder, Job, JobStatus, Topology};

/// What the queue order in front of EASY does before each pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Front {
    /// Nothing (the index follows the queue by its appends).
    None,
    /// Takes the queue mutably every third pass without changing it (a rebuild).
    Touch,
    /// Holds the last queued job every fifth pass (`PassCtx::hold`).
    Hold,
    /// Moves the last queued job to the front every fourth pass (the plain scan then,
    /// and a rebuild once the queue is in row order again).
    Reorder,
}

/// EASY behind `front`; lets the test read its counters after the run.
struct Fronted {
    easy: Arc<Mutex<Easy>>,
    front: Front,
    passes: u64,
}

impl QueuePolicy for Fronted {
    fn name(&self) -> String {
        "easy".into()
    }
    fn pass(&mut self, ctx: &mut PassCtx) {
        self.passes += 1;
        match self.front {
            Front::None => {}
            Front::Touch if self.passes % 3 == 0 => {
                ctx.queue_mut();
            }
            Front::Hold if self.passes % 5 == 0 => {
                let last = *ctx.queue().last().expect("a pass runs with jobs queued");
                ctx.hold(last, "held by the test".into());
            }
            Front::Reorder if self.passes % 4 == 0 => {
                let q = ctx.queue_mut();
                let last = q.pop().expect("a pass runs with jobs queued");
                q.insert(0, last);
            }
            _ => {}
        }
        if !ctx.queue().is_empty() {
            self.easy.lock().unwrap().pass(ctx)
        }
    }
}

const ALLOCS: [&str; 7] = ["linear", "random", "isolated", "capped", "jigsaw", "slurm-tree", "least-interference"];


#[derive(Clone, Debug)]
struct Case {
    topo: Topology,
    jobs: Vec<Job>,
    alloc: &'static str,
    variant: u8,
    easy: EasyOptions,
    kill: bool,
    per_event: bool,
    depth: Option<usize>,
    front: Front,
    switches: Option<Vec<(u32, i64)>>,
}

/// Every job's (status, start, end, nodes), every reservation (pass instant, row, start),
/// the passes run.
type Run = (Vec<(JobStatus, i64, i64, Vec<u32>)>, Vec<(i64, u32, i64)>, u64);

fn run(c: &Case, scan: BackfillScan) -> (Run, [u64; 3]) {
    let easy = Arc::new(Mutex::new(Easy::new(c.easy).with_scan(scan)));
    let opts = EngineOptions {
        kill_at_walltime: c.kill,
        record_reservations: true,
        queue_depth: c.depth.unwrap_or(usize::MAX),
        event_order: if c.per_event { EventOrder::PerEvent } else { EventOrder::default() },
        ..EngineOptions::default()
    };
    let front = Fronted { easy: easy.clone(), front: c.front, passes: 0 };
    let mut e = Engine::new(c.topo.clone(), c.jobs.clone(), alloc_of(c.alloc, c.variant), Box::new(front), opts, &[]).unwrap();
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
    let scans = easy.lock().unwrap().scans();
    ((jobs, res, e.passes()), scans)
}

/// Long queues: 30 to 200 jobs submitted in [0, 150) s on a machine of n nodes, sizes
/// mostly small (many fit beside the others, many do not), some the whole machine, limits
/// 1 to 119 s (short ones end by a shadow time, long ones do not), run times 0 to 129 s.
fn workload(n: u32) -> impl Strategy<Value = Vec<Job>> {
    let size = prop_oneof![4 => 1u32..=n.div_ceil(4).max(1), 2 => 1u32..=n, 1 => Just(n)];
    prop::collection::vec((0i64..150, size, 1i64..120, 0i64..130), 30..200).prop_map(jobs_in_submit_order)
}

fn case() -> impl Strategy<Value = Case> {
    let front = prop_oneof![4 => Just(Front::None), 1 => Just(Front::Touch), 1 => Just(Front::Hold), 1 => Just(Front::Reorder)];
    let depth = prop::option::weighted(0.2, 1usize..12);
    (small_fabrics(), 0usize..ALLOCS.len(), any::<u8>(), any::<(bool, bool, bool, bool)>(), depth, front).prop_flat_map(
        |(topo, ai, variant, (flux, always, kill, per_event), depth, front)| {
            let n = topo.n_nodes() as u32;
            let switches = prop::option::weighted(0.2, prop::collection::vec((0u32..3, 0i64..60), 200));
            (Just(topo), workload(n), switches).prop_map(move |(topo, jobs, switches)| Case {
                switches: switches.map(|s| s[..jobs.len()].to_vec()),
                topo,
                jobs,
                alloc: ALLOCS[ai],
                variant,
                easy: EasyOptions { flux_window: flux, reserved_tiers_always: always },
                kill,
                per_event,
                depth,
                front,
            })
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Same schedule, reservations and passes through the index as with the plain scan.
    #[test]
    fn indexed_backfill_equals_the_plain_scan(c in case()) {
        let (plain, _) = run(&c, BackfillScan::Plain);
        let (indexed, _) = run(&c, BackfillScan::Indexed);
        prop_assert_eq!(indexed, plain);
    }
}

/// The comparison above is not vacuous: most passes go through the index, some through
/// the plain scan (a re-sorted queue), many start after the rows a pass that asked about
/// no job looked at, and phase 2 starts jobs.
#[test]
fn both_scans_are_taken_on_long_queues() {
    let mut runner = TestRunner::deterministic();
    let strategy = case();
    let (mut scans, mut backfilled, mut reorder_plain) = ([0u64; 3], 0usize, 0u64);
    for _ in 0..200 {
        let c = strategy.new_tree(&mut runner).unwrap().current();
        let ((jobs, res, _), s) = run(&c, BackfillScan::Indexed);
        scans[0] += s[0];
        scans[1] += s[1];
        scans[2] += s[2];
        if c.front == Front::Reorder {
            reorder_plain += s[1];
        } else {
            assert_eq!(s[1], 0, "the queue stays in row order without a re-sort");
        }
        // a job started while an earlier-submitted one waited with a reservation
        backfilled += jobs
            .iter()
            .enumerate()
            .filter(|&(row, j)| j.0 == JobStatus::Done && res.iter().any(|&(t, head, _)| t == j.1 && (head as usize) < row && jobs[head as usize].1 > t))
            .count();
    }
    eprintln!("passes indexed/plain/after a quiet one {scans:?}, backfilled {backfilled}");
    assert!(scans[0] > 3 * scans[1] && reorder_plain > 100 && scans[2] > scans[0] / 20, "{scans:?}");
    assert!(backfilled > 1000, "{backfilled}");
}

/// A queue of thousands on a small machine (the case the index is for): the same
/// schedule, with linear and isolated.
#[test]
fn a_long_queue_gives_the_same_schedule() {
    let topo = Topology::fat_tree("r", 4, 3, 2, None, None).unwrap();
    let n = topo.n_nodes() as u32;
    // deterministic pseudo-random sizes and times (an LCG)
    let mut x: u64 = 12345;
    let mut next = |m: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let jobs: Vec<Job> = (0..4000)
        .map(|i| {
            let nodes = if next(5) == 0 { 1 + next(n as u64) as u32 } else { 1 + next(4) as u32 };
            Job { id: i, submit_s: i / 4, nodes, walltime_s: 1 + next(3000) as i64, runtime_s: next(3000) as i64, ..Default::default() }
        })
        .collect();
    for alloc in ["linear", "isolated"] {
        let c = Case {
            topo: topo.clone(),
            jobs: jobs.clone(),
            alloc,
            variant: 0,
            easy: EasyOptions::default(),
            kill: true,
            per_event: false,
            depth: None,
            front: Front::None,
            switches: None,
        };
        let (plain, _) = run(&c, BackfillScan::Plain);
        let (indexed, scans) = run(&c, BackfillScan::Indexed);
        assert_eq!(scans[1], 0);
        assert!(indexed == plain, "{alloc}: schedules differ");
        assert!(plain.0.iter().all(|j| j.0 == JobStatus::Done));
    }
}

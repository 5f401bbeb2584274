//! Streamed replays (rows appended in chunks, an input end declared, final rows drained)
//! give exactly the whole-log replay's outcomes, row by row; and the engine's window of
//! rows really shrinks as rows are drained. The reference is the whole-log replay of the
//! same engine: what this checks is that the window, the horizon and the drain change
//! nothing (the schedules themselves are checked against independent references in
//! engine.rs and tests/*.py).

mod common;

use proptest::prelude::*;
use toposched_core::registry::{self, Options};
use toposched_core::{Engine, EngineOptions, EventOrder, Job, JobStatus, Topology};

const QUEUES: &[&str] = &["fcfs", "easy", "conservative"];
const ALLOCS: &[&str] = &["linear", "random", "isolated", "slurm-tree", "capped", "jigsaw", "least-interference", "adaptive"];

/// 4 nodes per leaf, 3 leaves per pod, 2 pods: 24 nodes.
fn topo() -> Topology {
    Topology::fat_tree("t", 4, 3, 2, None, None).unwrap()
}

fn options(alloc: &str) -> Options {
    let v = match alloc {
        "random" => serde_json::json!({"seed": 7}),
        // a patience short enough to run out within the workloads below
        "adaptive" => serde_json::json!({"isolation_wait_s": 20}),
        _ => serde_json::json!({}),
    };
    v.as_object().unwrap().clone()
}

#[derive(Clone, Debug)]
struct Case {
    queue: &'static str,
    alloc: &'static str,
    kill: bool,
    per_event: bool,
    jobs: Vec<Job>,
    /// `--switches` (max leaves, wait) per row, or none.
    switches: Option<Vec<(u32, i64)>>,
    /// Where the rows are cut into chunks (sorted, may repeat, may be 0 or n).
    cuts: Vec<usize>,
    /// Drives the streamed run's step sizes and drain calls.
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    let jobs = prop::collection::vec((0i64..60, 1u32..=28, 1i64..30, 0i64..40), 0..45);
    (
        prop::sample::select(QUEUES),
        prop::sample::select(ALLOCS),
        any::<bool>(),
        any::<bool>(),
        jobs,
        any::<bool>(),
        prop::collection::vec((0u32..4, 0i64..25), 45),
        prop::collection::vec(0usize..=45, 0..6),
        any::<u64>(),
    )
        .prop_map(|(queue, alloc, kill, per_event, raw, with_switches, sw, cuts, seed)| {
            let mut raw = raw;
            // few distinct submit times: many equal ones, which the cuts split across chunks
            raw.sort_by_key(|x| x.0 / 4);
            let jobs: Vec<Job> = raw
                .into_iter()
                .enumerate()
                .map(|(i, (s, n, w, r))| Job { id: 1000 + i as i64, submit_s: (s / 4) * 4, nodes: n, walltime_s: w, runtime_s: r, ..Default::default() })
                .collect();
            let n = jobs.len();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(n)).collect();
            cuts.sort_unstable();
            let switches = with_switches.then(|| sw[..n].to_vec());
            Case { queue, alloc, kill, per_event, jobs, switches, cuts, seed }
        })
}

fn engine(c: &Case, jobs: Vec<Job>) -> Engine {
    let (q, a) = registry::build(c.queue, Some(c.alloc), &options(c.alloc)).unwrap();
    let opts = EngineOptions {
        kill_at_walltime: c.kill,
        event_order: if c.per_event { EventOrder::PerEvent } else { EventOrder::PerInstant },
        ..EngineOptions::default()
    };
    Engine::new(topo(), jobs, a.unwrap(), q, opts, &[]).unwrap()
}

/// Everything the results hand over for one row.
type Row = (JobStatus, i64, i64, Option<u8>, bool, Vec<(u32, u32)>, Option<String>);

fn whole(c: &Case) -> (Vec<Row>, u64) {
    let mut e = engine(c, c.jobs.clone());
    if let Some(sw) = &c.switches {
        e.set_switches(sw.clone()).unwrap();
    }
    assert!(e.step(u64::MAX).unwrap());
    let mut reasons: Vec<Option<String>> = vec![None; c.jobs.len()];
    for (r, why) in e.skipped() {
        assert!(reasons[*r as usize].replace(why.clone()).is_none(), "row {r} skipped twice");
    }
    let rows = e
        .outcomes()
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let ranges = if o.status == JobStatus::Done { e.node_ranges_of(i as u32).to_vec() } else { Vec::new() };
            (o.status, o.start_s, o.end_s, o.class.map(|c| c.number()), o.killed, ranges, reasons[i].take())
        })
        .collect();
    (rows, e.passes())
}

/// A small deterministic generator for the streamed run's choices.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn collect(e: &mut Engine, out: &mut Vec<Row>) {
    let d = e.drain();
    assert_eq!(d.first_row as usize, out.len(), "drain hands rows over in order, without gaps");
    assert_eq!(d.range_offsets.len(), d.outcomes.len() + 1);
    let mut reasons = d.skipped.into_iter().peekable();
    for (i, o) in d.outcomes.iter().enumerate() {
        let row = d.first_row + i as u32;
        assert!(matches!(o.status, JobStatus::Done | JobStatus::Skipped), "row {row} drained while {:?}", o.status);
        let why = reasons.next_if(|(r, _)| *r == row).map(|(_, w)| w);
        let ranges = d.ranges[d.range_offsets[i]..d.range_offsets[i + 1]].to_vec();
        out.push((o.status, o.start_s, o.end_s, o.class.map(|c| c.number()), o.killed, ranges, why));
    }
    assert!(reasons.next().is_none(), "every drained reason belongs to a drained row, in row order");
}

fn streamed(c: &Case) -> (Vec<Row>, u64, usize) {
    let mut rng = Lcg(c.seed);
    let mut bounds = vec![0];
    bounds.extend(&c.cuts);
    bounds.push(c.jobs.len());
    let chunk = |k: usize| c.jobs[bounds[k]..bounds[k + 1]].to_vec();
    let sw_chunk = |k: usize| c.switches.as_ref().map(|s| s[bounds[k]..bounds[k + 1]].to_vec());
    let mut e = engine(c, chunk(0));
    if let Some(sw) = sw_chunk(0) {
        e.set_switches(sw).unwrap();
    }
    let mut out = Vec::new();
    let mut max_held = e.held_rows();
    for (k, &first) in bounds.iter().enumerate().take(bounds.len() - 1).skip(1) {
        let next = chunk(k);
        // the first submit not appended yet is the input end (no row left: any time)
        let end = c.jobs.get(first).map_or(i64::MAX, |j| j.submit_s);
        while !e.step_until(Some(end), 1 + rng.next(4)).unwrap() {
            if rng.next(3) == 0 {
                collect(&mut e, &mut out);
            }
        }
        assert!(!e.is_finished(), "a replay waiting for input is not finished");
        if rng.next(2) == 0 {
            collect(&mut e, &mut out);
        }
        e.append_with_switches(next, sw_chunk(k)).unwrap();
        max_held = max_held.max(e.held_rows());
    }
    while !e.step_until(None, 1 + rng.next(4)).unwrap() {
        if rng.next(3) == 0 {
            collect(&mut e, &mut out);
        }
    }
    assert!(e.is_finished());
    collect(&mut e, &mut out);
    assert_eq!(e.held_rows(), 0, "a finished replay drains every row");
    (out, e.passes(), max_held)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    /// Rule (ARCHITECTURE.md, rows and window): a replay fed in chunks, stepped up to each
    /// input end and drained at random points, gives every row the whole replay's status,
    /// start, end, span class, kill flag, node ranges and skip reason, and runs as many
    /// passes.
    #[test]
    fn streamed_equals_whole(c in case()) {
        let (want, passes) = whole(&c);
        let (got, got_passes, _) = streamed(&c);
        prop_assert_eq!(got.len(), want.len());
        for (row, (g, w)) in got.iter().zip(&want).enumerate() {
            prop_assert_eq!(g, w, "row {} of {:?}", row, c);
        }
        prop_assert_eq!(got_passes, passes);
    }
}

fn job(id: i64, submit_s: i64, nodes: u32, walltime_s: i64, runtime_s: i64) -> Job {
    Job { id, submit_s, nodes, walltime_s, runtime_s, ..Default::default() }
}

/// The window shrinks: 2,000 one-node jobs, 100 per chunk, each running 5 s, one every
/// 2 s on 24 nodes (never more than three at once): after each drain the engine holds
/// only the rows from the oldest running one on, never more than a chunk and a few.
#[test]
fn window_shrinks_as_rows_are_drained() {
    let jobs: Vec<Job> = (0..2000).map(|i| job(i, 2 * i, 1, 10, 5)).collect();
    let c = Case { queue: "easy", alloc: "linear", kill: true, per_event: false, jobs: jobs.clone(), switches: None, cuts: vec![], seed: 0 };
    let mut e = engine(&c, jobs[..100].to_vec());
    let mut out = Vec::new();
    let mut max_held = 0;
    for k in 1..20 {
        let next = jobs[100 * k..100 * (k + 1)].to_vec();
        assert!(e.step_until(Some(next[0].submit_s), u64::MAX).unwrap());
        collect(&mut e, &mut out);
        // done rows are gone: what is left started at most 5 s ago
        assert!(e.held_rows() <= 3, "chunk {k}: {} rows held", e.held_rows());
        e.append(next).unwrap();
        max_held = max_held.max(e.held_rows());
    }
    assert!(e.step_until(None, u64::MAX).unwrap());
    collect(&mut e, &mut out);
    assert_eq!((out.len(), e.held_rows(), e.first_row(), e.n_rows()), (2000, 0, 2000, 2000));
    assert!(max_held <= 103, "{max_held}");
    // the same rows as the whole replay
    let (want, _) = whole(&c);
    assert_eq!(out, want);
    assert!(out.iter().all(|r| r.0 == JobStatus::Done));
}

/// A row that waits keeps every later row in the window (the prefix stops at it), and
/// draining hands the rest over once it is final.
#[test]
fn a_waiting_row_holds_the_window() {
    // row 0 runs 100 s on all 24 nodes; rows 1.. (one node) wait behind it under fcfs
    let c = Case { queue: "fcfs", alloc: "linear", kill: true, per_event: false, jobs: vec![], switches: None, cuts: vec![], seed: 0 };
    let mut e = engine(&c, vec![job(0, 0, 24, 100, 100), job(1, 1, 1, 10, 10)]);
    assert!(e.step_until(Some(50), u64::MAX).unwrap());
    let d = e.drain();
    assert!(d.outcomes.is_empty() && e.held_rows() == 2, "row 0 runs: nothing is final");
    e.append(vec![job(2, 50, 1, 10, 10), job(3, 60, 30, 10, 10)]).unwrap();
    assert!(e.step_until(None, u64::MAX).unwrap());
    let d = e.drain();
    assert_eq!(d.outcomes.iter().map(|o| (o.status, o.start_s)).collect::<Vec<_>>(), vec![
        (JobStatus::Done, 0),
        (JobStatus::Done, 100),
        (JobStatus::Done, 100),
        (JobStatus::Skipped, -1)
    ]);
    assert_eq!(d.skipped.len(), 1);
    assert_eq!(d.skipped[0].0, 3);
    assert_eq!(&d.ranges[d.range_offsets[0]..d.range_offsets[1]], &[(0, 24)]);
}

/// Bad appends are refused with one clear message, and leave the replay as it was.
#[test]
fn bad_appends_are_refused() {
    let c = Case { queue: "easy", alloc: "linear", kill: true, per_event: false, jobs: vec![], switches: None, cuts: vec![], seed: 0 };
    let mut e = engine(&c, vec![job(0, 10, 1, 10, 10)]);
    let err = e.append(vec![job(1, 5, 1, 10, 10)]).unwrap_err().0;
    assert!(err.contains("job row 1") && err.contains("sorted by submit time"), "{err}");
    let err = e.append(vec![job(1, 20, 1, 10, 10), job(2, 15, 1, 10, 10)]).unwrap_err().0;
    assert!(err.contains("job row 2") && err.contains("'submit_s'"), "{err}");
    assert!(e.step_until(Some(30), u64::MAX).unwrap());
    let err = e.append(vec![job(1, 25, 1, 10, 10)]).unwrap_err().0;
    assert!(err.contains("input end was declared at 30"), "{err}");
    assert_eq!(e.n_rows(), 1, "refused rows are not kept");
    let err = e.set_input_end(Some(15)).unwrap_err().0;
    assert!(err.contains("already handled"), "{err}");
    e.append(vec![job(1, 30, 1, 10, 10)]).unwrap();
    assert!(e.step_until(None, u64::MAX).unwrap());
    let err = e.append(vec![job(2, 100, 1, 10, 10)]).unwrap_err().0;
    assert!(err.contains("has finished"), "{err}");
    // switches: every chunk carries them once the replay has them, none otherwise
    let err = engine(&c, vec![]).append_with_switches(vec![job(0, 1, 1, 1, 1)], Some(vec![(1, 0)])).unwrap_err().0;
    assert!(err.contains("without --switches"), "{err}");
    let mut e = engine(&c, vec![job(0, 1, 1, 1, 1)]);
    e.set_switches(vec![(1, 5)]).unwrap();
    let err = e.append(vec![job(1, 2, 1, 1, 1)]).unwrap_err().0;
    assert!(err.contains("must give its rows' limits"), "{err}");
    // the Slurm models need the whole log
    for queue in ["slurm", "slurm-bf"] {
        let c = Case { queue, ..c.clone() };
        let err = engine(&c, vec![]).append(vec![job(0, 1, 1, 1, 1)]).unwrap_err().0;
        assert!(err.contains(queue) && err.contains("fair-share"), "{err}");
    }
}

/// A replay built whole behaves as before: complete input, `step` reports the end, and a
/// stuck queue is still an error (only once the input is complete).
#[test]
fn input_end_defers_finishing() {
    let c = Case { queue: "fcfs", alloc: "linear", kill: true, per_event: false, jobs: vec![], switches: None, cuts: vec![], seed: 0 };
    let mut e = engine(&c, vec![]);
    assert!(e.step_until(Some(100), u64::MAX).unwrap());
    assert!(!e.is_finished() && e.input_end() == Some(100));
    e.append(vec![job(0, 100, 2, 10, 3)]).unwrap();
    assert!(e.step_until(Some(200), u64::MAX).unwrap());
    assert!(!e.is_finished());
    assert_eq!(e.outcomes()[0].end_s, 103);
    assert!(e.step_until(None, u64::MAX).unwrap() && e.is_finished());
}

//! One code path: a live `Placer`, driven by allocate/release calls in the order an FCFS
//! replay makes its decisions, gives the same node sets and start times as the replay, for
//! every built-in allocation policy (the random one included: the same calls consume its
//! stream the same way).

use proptest::prelude::*;
use toposched_core::alloc;
use toposched_core::registry::{self, Options};
use toposched_core::live::{Decision, Placer};
use toposched_core::queue;
use toposched_core::{Engine, EngineOptions, Job, JobStatus, Topology};

/// The policy's options as a replay passes them: seed 7 for `random`, defaults otherwise.
fn options(alloc_name: &str) -> Options {
    let mut o = Options::new();
    if alloc_name == "random" {
        o.insert("seed".into(), 7.into());
    }
    o
}

fn replay(topo: &Topology, jobs: &[Job], alloc_name: &str) -> Engine {
    let a = alloc::by_name(alloc_name, &options(alloc_name)).unwrap();
    let q = queue::by_name("fcfs", &Options::new()).unwrap();
    let mut e = Engine::new(topo.clone(), jobs.to_vec(), a, q, EngineOptions::default(), &[]).unwrap();
    assert!(e.step(u64::MAX).unwrap());
    e
}

/// FCFS written against the placer: at each instant, ends (job order), submits, then
/// allocate queued jobs in order until one is refused. Returns (start, nodes) per job,
/// None for jobs that can never run.
fn drive(topo: &Topology, jobs: &[Job], alloc_name: &str) -> Vec<Option<(i64, Vec<u32>)>> {
    let mut p = Placer::new(topo.clone(), alloc_name, options(alloc_name)).unwrap();
    let mut out: Vec<Option<(i64, Vec<u32>)>> = vec![None; jobs.len()];
    let mut end_of: Vec<Option<i64>> = vec![None; jobs.len()];
    let mut queue: Vec<usize> = Vec::new();
    let mut next = 0;
    loop {
        let next_end = end_of.iter().flatten().min().copied();
        let next_submit = jobs.get(next).map(|j| j.submit_s);
        let Some(t) = [next_end, next_submit].into_iter().flatten().min() else { break };
        for (i, e) in end_of.iter_mut().enumerate() {
            if *e == Some(t) {
                p.release(&i.to_string()).unwrap();
                *e = None;
            }
        }
        while next < jobs.len() && jobs[next].submit_s == t {
            queue.push(next);
            next += 1;
        }
        while let Some(&i) = queue.first() {
            let j = jobs[i];
            match p.allocate(&i.to_string(), j.nodes, j.walltime_s, t, false, &[]) {
                Decision::Placed(nodes) => {
                    queue.remove(0);
                    out[i] = Some((t, nodes));
                    end_of[i] = Some(t + j.runtime_s.min(j.walltime_s));
                }
                Decision::Never(_) => {
                    queue.remove(0);
                }
                Decision::Refused(_) => break,
                Decision::Reserved { .. } => unreachable!("no reservation asked"),
            }
        }
    }
    assert!(queue.is_empty());
    out
}

fn jobs_strategy(max_nodes: u32) -> impl Strategy<Value = Vec<Job>> {
    prop::collection::vec((0i64..40, 1u32..=max_nodes, 1i64..60, 1i64..80), 1..40).prop_map(|rows| {
        let mut t = 0;
        rows.into_iter()
            .enumerate()
            .map(|(i, (gap, nodes, run, wall))| {
                t += gap;
                Job { id: i as i64, submit_s: t, nodes, walltime_s: wall, runtime_s: run, ..Default::default() }
            })
            .collect()
    })
}

fn same_decisions(topo: &Topology, jobs: &[Job], alloc_name: &str) {
    let e = replay(topo, jobs, alloc_name);
    let live = drive(topo, jobs, alloc_name);
    for (i, o) in e.outcomes().iter().enumerate() {
        match (&live[i], o.status) {
            (Some((start, nodes)), JobStatus::Done) => {
                assert_eq!(*start, o.start_s, "{alloc_name}: job {i} start");
                assert_eq!(nodes.as_slice(), e.nodes_of(i as u32), "{alloc_name}: job {i} nodes");
            }
            (None, JobStatus::Skipped) => {}
            (l, s) => panic!("{alloc_name}: job {i}: live {l:?}, replay {s:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn placer_makes_the_replays_decisions(jobs in jobs_strategy(40)) {
        let topo = Topology::preset("hype").unwrap();
        for a in registry::alloc_names() {
            same_decisions(&topo, &jobs, a);
        }
    }
}

#[test]
fn placer_matches_on_toy18_with_jobs_too_large() {
    let topo = Topology::preset("toy18").unwrap();
    let jobs: Vec<Job> = (0..30)
        .map(|i| Job { id: i, submit_s: i * 3, nodes: (i as u32 * 7) % 20 + 1, walltime_s: 30 + i % 7, runtime_s: 5 + (i * 11) % 40, ..Default::default() })
        .collect();
    for a in registry::alloc_names() {
        same_decisions(&topo, &jobs, a);
    }
}

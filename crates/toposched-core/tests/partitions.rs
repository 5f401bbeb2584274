//! Slurm 22.05's partitions with limits in `slurm` and `slurm-bf`
//! (src/queue/partitions/mod.rs). The expected schedules are worked out by hand here from
//! Slurm's source (tag slurm-22-05-8-1), not from the code under test:
//! - `_schedule` (job_scheduler.c): a job that cannot start adds its partition to
//!   `failed_parts` (later jobs of it are skipped, `_failed_partition`) and removes the
//!   partition's nodes from the pass's `avail_node_bitmap`; jobs of other partitions go on;
//! - `_part_access_check` (job_mgr.c), in this order: nodes > the partition's nodes, <
//!   MinNodes, > MaxNodes -> `ESLURM_INVALID_NODE_COUNT` (reason PartitionNodeLimit); time
//!   limit > MaxTime -> `ESLURM_INVALID_TIME_LIMIT` (PartitionTimeLimit); under
//!   `EnforcePartLimits=NO` the job stays pending, out of the queue (`_job_runnable_test2`);
//! - `_attempt_backfill` (backfill.c): `bit_and(avail_bitmap, part_ptr->node_bitmap)`.
//!
//! Times in seconds (`ticks_per_s=1`, `batch_sched_delay_s=0`: a pass at every event).
//! Fabric: 8 nodes, 2 leaves of 4 (ids 0-3, 4-7); allocation policy `linear`.

use proptest::prelude::*;
use toposched_core::registry::Options;
use toposched_core::{alloc, queue, Engine, EngineOptions, Job, JobStatus, Topology};

fn job(id: i64, submit_s: i64, nodes: u32, walltime_s: i64, runtime_s: i64, partition: Option<u32>) -> Job {
    Job { id, submit_s, nodes, walltime_s, runtime_s, partition, ..Default::default() }
}

fn topo() -> Topology {
    Topology::fat_tree("t", 4, 2, 1, None, None).unwrap()
}

struct Run {
    starts: Vec<i64>,
    nodes: Vec<Vec<u32>>,
    status: Vec<JobStatus>,
    skipped: Vec<(u32, String)>,
}

fn run(jobs: &[Job], queue_spec: &str) -> Result<Run, String> {
    let a = alloc::by_name("linear", &Options::new()).unwrap();
    let q = queue::by_name(queue_spec, &Options::new())?;
    let mut e = Engine::new(topo(), jobs.to_vec(), a, q, EngineOptions::default(), &[]).map_err(|e| e.to_string())?;
    e.step(u64::MAX).map_err(|e| e.to_string())?;
    let n = jobs.len();
    Ok(Run {
        starts: (0..n).map(|i| e.outcomes()[i].start_s).collect(),
        nodes: (0..n).map(|i| if e.outcomes()[i].status == JobStatus::Done { e.nodes_of(i as u32) } else { vec![] }).collect(),
        status: (0..n).map(|i| e.outcomes()[i].status).collect(),
        skipped: e.skipped().to_vec(),
    })
}

const SLURM: &str = "slurm:batch_sched_delay_s=0";

#[test]
fn a_blocked_job_blocks_only_its_own_partition() {
    // A holds all of partition 0 (nodes 0-3) over [0, 100). B (partition 0) cannot start;
    // C, behind B in the queue, is of partition 1 (4-7) and starts at once.
    let jobs = [job(1, 0, 4, 100, 100, Some(0)), job(2, 1, 2, 50, 50, Some(0)), job(3, 2, 2, 50, 50, Some(1))];
    let r = run(&jobs, &format!("{SLURM},partitions=0=0-3;1=4-7")).unwrap();
    assert_eq!(r.starts, vec![0, 100, 2]);
    assert!(r.nodes[1].iter().all(|&n| n < 4) && r.nodes[2].iter().all(|&n| n >= 4), "{:?}", r.nodes);
    // one machine-wide FIFO (no partitions): B takes nodes 4-5 at 1, C 6-7 at 2
    let r = run(&jobs, SLURM).unwrap();
    assert_eq!(r.starts, vec![0, 1, 2]);
}

#[test]
fn a_failed_partition_takes_its_nodes_out_of_the_pass_for_overlapping_partitions() {
    // Partition 0 = 0-5, partition 1 = 4-7 (they share 4 and 5). R (partition 1, 1 node)
    // holds node 4 over [0, 50). At 1, J1 (partition 0, 6 nodes: all of 0-5) cannot start:
    // partition 0 fails and nodes 0-5 leave the pass, so J2 (partition 1, 3 nodes) finds
    // only 6 and 7 free and cannot start either, though 5, 6, 7 are free. At 50 R's node
    // comes back: J1 starts on 0-5, J2 again finds only 6-7; it starts when J1 ends (80).
    let jobs = [job(1, 0, 1, 50, 50, Some(1)), job(2, 1, 6, 30, 30, Some(0)), job(3, 1, 3, 30, 30, Some(1))];
    let r = run(&jobs, &format!("{SLURM},partitions=0=0-5;1=4-7")).unwrap();
    assert_eq!(r.nodes[0], vec![4]);
    assert_eq!(r.starts, vec![0, 50, 80]);
    assert_eq!(r.nodes[1], vec![0, 1, 2, 3, 4, 5]);
    // partitions that do not overlap: J2's partition keeps its nodes, J2 starts at 1
    let jobs = [job(1, 0, 1, 50, 50, Some(1)), job(2, 1, 4, 30, 30, Some(0)), job(3, 1, 3, 30, 30, Some(1))];
    let r = run(&jobs, &format!("{SLURM},partitions=0=0-3;1=4-7")).unwrap();
    assert_eq!(r.starts, vec![0, 1, 1]);
}

#[test]
fn jobs_beyond_a_limit_are_held_with_slurms_reason_and_block_nothing() {
    // partition 0 = 0-3, MaxTime 100 s, MaxNodes 2, MinNodes 2; partition 1 = 4-7.
    let parts = "partitions=0=0-3:max_time_s=100:max_nodes=2:min_nodes=2;1=4-7";
    let jobs = [
        job(1, 0, 2, 200, 10, Some(0)), // time limit 200 > MaxTime 100
        job(2, 0, 3, 50, 10, Some(0)),  // 3 nodes > MaxNodes 2
        job(3, 0, 3, 200, 10, Some(0)), // both: the node count is checked first
        job(4, 0, 5, 50, 10, Some(1)),  // 5 > partition 1's 4 nodes (no MaxNodes)
        job(5, 0, 1, 50, 10, Some(0)),  // 1 < MinNodes 2
        job(6, 0, 2, 100, 10, Some(0)), // at the limits: runs, at once (the held jobs do not block)
        job(7, 0, 4, 100, 10, Some(1)),
    ];
    let r = run(&jobs, &format!("{SLURM},{parts}")).unwrap();
    let held: Vec<(u32, &str)> = r.skipped.iter().map(|(row, why)| (*row, if why.contains("PartitionTimeLimit") { "time" } else if why.contains("PartitionNodeLimit") { "nodes" } else { "?" })).collect();
    assert_eq!(held, vec![(0, "time"), (1, "nodes"), (2, "nodes"), (3, "nodes"), (4, "nodes")]);
    let words: Vec<&str> = r.skipped.iter().map(|(_, why)| why.split(": ").last().unwrap()).collect();
    assert_eq!(words, vec!["time limit 200 s, MaxTime 100 s", "3 nodes, MaxNodes 2", "3 nodes, MaxNodes 2", "5 nodes, the partition has 4", "1 nodes, MinNodes 2"]);
    for row in 0..5 {
        assert_eq!(r.status[row], JobStatus::Skipped);
    }
    assert_eq!((r.status[5], r.starts[5], r.status[6], r.starts[6]), (JobStatus::Done, 0, JobStatus::Done, 0));
    // the same under slurm-bf
    let r = run(&jobs, &format!("slurm-bf:sched_batch_delay_s=0,sched_{parts}")).unwrap();
    assert_eq!(r.skipped.len(), 5);
    assert_eq!((r.starts[5], r.starts[6]), (0, 0));
}

#[test]
fn a_job_without_a_partition_runs_in_the_first_one() {
    let jobs = [job(1, 0, 2, 50, 50, None), job(2, 0, 2, 50, 50, None), job(3, 0, 2, 50, 50, None)];
    let r = run(&jobs, &format!("{SLURM},partitions=1=4-7;0=0-3")).unwrap();
    // partition 1 (4-7, listed first) takes two jobs; the third waits for one to end
    assert_eq!(r.starts, vec![0, 0, 50]);
    assert!(r.nodes.iter().flatten().all(|&n| n >= 4), "{:?}", r.nodes);
}

#[test]
fn bad_partitions_are_one_clear_line() {
    let jobs = [job(1, 0, 2, 50, 50, Some(3))];
    let e = run(&jobs, &format!("{SLURM},partitions=0=0-3;1=4-7")).err().unwrap();
    assert!(e.contains("job row 0 asks for partition 3") && e.contains("0, 1"), "{e}");
    let e = run(&[job(1, 0, 2, 50, 50, Some(0))], &format!("{SLURM},partitions=0=0-8")).err().unwrap();
    assert!(e.contains("names node 8, the fabric has 8 nodes"), "{e}");
    let e = run(&[job(1, 0, 2, 50, 50, Some(0))], "slurm:partitions=0=0-3:max_nodes=x").err().unwrap();
    assert!(e.contains("max_nodes") && e.contains("not a whole number"), "{e}");
    let e = run(&[job(1, 0, 2, 50, 50, Some(0))], "slurm-bf:sched_partitions=0=3-1").err().unwrap();
    assert!(e.contains("sched_partitions") && e.contains("ends before"), "{e}");
}

#[test]
fn backfill_tests_each_job_on_its_partition_only() {
    // A holds partition 0 (0-3) over [0, 100). B (partition 0, 1 node, 10 s) waits behind
    // it; the backfill cycle must not put it on the free nodes 4-7 of partition 1.
    let jobs = [job(1, 0, 4, 100, 100, Some(0)), job(2, 1, 1, 10, 10, Some(0)), job(3, 2, 1, 10, 10, Some(1))];
    let r = run(&jobs, "slurm-bf:sched_batch_delay_s=0,bf_interval_s=1,sched_partitions=0=0-3;1=4-7").unwrap();
    assert_eq!(r.starts[1], 100);
    assert!(r.nodes[1][0] < 4);
    assert_eq!(r.starts[2], 2);
    // without partitions, backfill starts B at once on a free node
    let r = run(&jobs, "slurm-bf:sched_batch_delay_s=0,bf_interval_s=1").unwrap();
    assert!(r.starts[1] < 100);
}

#[test]
fn a_higher_priority_tier_goes_first_and_submit_order_is_kept_within_a_tier() {
    // sort_job_queue2: partition PriorityTier first (higher first), then priority
    // (priority/basic: submit order). Partitions 0 and 1 share nodes 0-3; 1 has tier 5.
    // A holds 0-3 over [0, 100); B (partition 0) is submitted at 1, C and D (partition 1)
    // at 2 and 3, all 4 nodes for 10 s: at 100 C goes first, then D (110), then B (120).
    let jobs = [job(1, 0, 4, 100, 100, Some(0)), job(2, 1, 4, 10, 10, Some(0)), job(3, 2, 4, 10, 10, Some(1)), job(4, 3, 4, 10, 10, Some(1))];
    let r = run(&jobs, &format!("{SLURM},partitions=0=0-3;1=0-3:priority_tier=5")).unwrap();
    assert_eq!(r.starts, vec![0, 120, 100, 110]);
    let r = run(&jobs, "slurm-bf:sched_batch_delay_s=0,bf_interval_s=1,sched_partitions=0=0-3;1=0-3:priority_tier=5").unwrap();
    assert_eq!(r.starts, vec![0, 120, 100, 110]);
    // equal tiers: submit order
    let r = run(&jobs, &format!("{SLURM},partitions=0=0-3:priority_tier=5;1=0-3:priority_tier=5")).unwrap();
    assert_eq!(r.starts, vec![0, 100, 110, 120]);
}

#[test]
fn priority_job_factor_is_multifactors_partition_factor() {
    // _get_priority_internal: W_partition * PriorityJobFactor / (the highest, at least 1),
    // read_config.c's norm_priority. Factors 1 and 4, weight 1000: B (partition 0) 1000 *
    // 1/4 = 250, C (partition 1) 1000 * 4/4 = 1000: C goes first at 100 though submitted
    // after B. Equal factors: equal priorities, submit order.
    let jobs = [job(1, 0, 4, 100, 100, Some(0)), job(2, 1, 4, 10, 10, Some(0)), job(3, 2, 4, 10, 10, Some(1))];
    let r = run(&jobs, &format!("{SLURM},priority_weight_partition=1000,partitions=0=0-3;1=0-3:priority_job_factor=4")).unwrap();
    assert_eq!(r.starts, vec![0, 110, 100]);
    let r = run(&jobs, "slurm-bf:sched_batch_delay_s=0,bf_interval_s=1,sched_priority_weight_partition=1000,sched_partitions=0=0-3;1=0-3:priority_job_factor=4").unwrap();
    assert_eq!(r.starts, vec![0, 110, 100]);
    let r = run(&jobs, &format!("{SLURM},priority_weight_partition=1000,partitions=0=0-3:priority_job_factor=4;1=0-3:priority_job_factor=4")).unwrap();
    assert_eq!(r.starts, vec![0, 100, 110]);
    // without the weight the factor does nothing
    let r = run(&jobs, &format!("{SLURM},partitions=0=0-3;1=0-3:priority_job_factor=4")).unwrap();
    assert_eq!(r.starts, vec![0, 100, 110]);
}

fn arb_jobs() -> impl Strategy<Value = Vec<Job>> {
    prop::collection::vec((0i64..40, 1u32..=8, 1i64..60, 1i64..60, 0u32..3), 1..30).prop_map(|v| {
        let mut jobs: Vec<Job> = v
            .into_iter()
            .enumerate()
            .map(|(i, (submit, nodes, wall, run, p))| job(i as i64, submit, nodes, wall, run.min(wall), Some(p)))
            .collect();
        jobs.sort_by_key(|j| j.submit_s);
        jobs
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every job runs inside its partition; a job is held exactly when it breaks one of
    /// its partition's limits (checked here from the limits themselves); every other job
    /// runs to its end.
    #[test]
    fn jobs_stay_in_their_partition_and_only_limit_breakers_are_held(jobs in arb_jobs(), bf in any::<bool>()) {
        // 0 = 0-5 (MaxTime 40, MaxNodes 4), 1 = 4-7, 2 = 0-7 (MinNodes 2)
        let parts = "0=0-5:max_time_s=40:max_nodes=4;1=4-7;2=0-7:min_nodes=2";
        let spec = if bf { format!("slurm-bf:sched_batch_delay_s=0,bf_interval_s=1,sched_partitions={parts}") } else { format!("{SLURM},partitions={parts}") };
        let r = run(&jobs, &spec).unwrap();
        let range = [(0u32, 5u32), (4, 7), (0, 7)];
        for (i, j) in jobs.iter().enumerate() {
            let p = j.partition.unwrap() as usize;
            let breaks = match p {
                0 => j.nodes > 6 || j.nodes > 4 || j.walltime_s > 40,
                1 => j.nodes > 4,
                _ => j.nodes < 2,
            };
            prop_assert_eq!(r.status[i] == JobStatus::Skipped, breaks, "job {} ({} nodes, {} s, partition {})", i, j.nodes, j.walltime_s, p);
            if !breaks {
                prop_assert_eq!(r.status[i], JobStatus::Done);
                prop_assert!(r.nodes[i].iter().all(|&n| range[p].0 <= n && n <= range[p].1), "job {} on {:?}", i, r.nodes[i]);
            }
        }
    }

    /// One partition of every node without limits is no partition at all: the same
    /// schedule as `slurm` / `slurm-bf` without the option.
    #[test]
    fn one_partition_of_every_node_changes_nothing(jobs in arb_jobs(), bf in any::<bool>()) {
        let jobs: Vec<Job> = jobs.into_iter().map(|j| Job { partition: None, ..j }).collect();
        let (with, without) = if bf {
            ("slurm-bf:sched_batch_delay_s=0,bf_interval_s=1,sched_partitions=0=0-7".to_string(), "slurm-bf:sched_batch_delay_s=0,bf_interval_s=1".to_string())
        } else {
            (format!("{SLURM},partitions=0=0-7"), SLURM.to_string())
        };
        let a = run(&jobs, &with).unwrap();
        let b = run(&jobs, &without).unwrap();
        prop_assert_eq!(a.starts, b.starts);
        prop_assert_eq!(a.nodes, b.nodes);
    }
}

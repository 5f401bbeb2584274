//! Slurm 22.05's priority/multifactor as the queue order of `slurm` and `slurm-bf`
//! (src/queue/multifactor/mod.rs). Expected priorities are computed here from Slurm's
//! documented formula (`_get_priority_internal`, `set_priority_factors`):
//! `trunc(max(1, W_age * min(1, wait / MaxAge) + W_size * nodes / N))`, not by the code
//! under test. Times in seconds (`ticks_per_s=1`); one leaf of 4 nodes.

use toposched_core::registry::Options;
use toposched_core::{alloc, queue, Engine, EngineOptions, Job, JobStatus, Topology};

fn job(id: i64, submit_s: i64, nodes: u32, walltime_s: i64, runtime_s: i64) -> Job {
    Job { id, submit_s, nodes, walltime_s, runtime_s, ..Default::default() }
}

fn schedule(topo: &Topology, jobs: &[Job], queue_spec: &str) -> Vec<(i64, Vec<u32>)> {
    let a = alloc::by_name("slurm-tree", &Options::new()).unwrap();
    let q = queue::by_name(queue_spec, &Options::new()).unwrap();
    let mut e = Engine::new(topo.clone(), jobs.to_vec(), a, q, EngineOptions::default(), &[]).unwrap();
    assert!(e.step(u64::MAX).unwrap());
    (0..jobs.len()).map(|i| (e.outcomes()[i].start_s, e.nodes_of(i as u32).to_vec())).collect()
}

fn starts(jobs: &[Job], queue_spec: &str) -> Vec<i64> {
    let topo = Topology::fat_tree("t", 4, 1, 1, None, None).unwrap();
    schedule(&topo, jobs, queue_spec).into_iter().map(|s| s.0).collect()
}

/// Slurm's formula, written out: the factors in [0, 1], weighted, summed, at least 1, truncated.
fn slurm_priority(wait_s: f64, max_age_s: f64, w_age: f64, nodes: f64, n: f64, w_size: f64) -> u32 {
    let age = if wait_s < max_age_s { wait_s / max_age_s } else { 1.0 };
    (age * w_age + nodes / n * w_size).max(1.0) as u32
}

/// A (4 nodes) holds the machine over [0, 120). B (1 node) is submitted at 1, C (4 nodes)
/// at 60. When A ends, strict priority order starts whichever is first; the other waits for it.
fn scene() -> Vec<Job> {
    vec![job(1, 0, 4, 200, 120), job(2, 1, 1, 100, 50), job(3, 60, 4, 100, 50)]
}

#[test]
fn job_size_favours_large_jobs_and_favor_small_the_small_ones() {
    // initial priorities (age 0 at submission): B 1000 * 1/4 = 250, C 1000 * 4/4 = 1000
    assert!(slurm_priority(0.0, 100.0, 0.0, 4.0, 4.0, 1000.0) > slurm_priority(0.0, 100.0, 0.0, 1.0, 4.0, 1000.0));
    let opts = "slurm:priority_weight_job_size=1000";
    assert_eq!(starts(&scene(), opts), vec![0, 170, 120]); // C first, then B
    // favor small: B (4 - 1) / 4 = 0.75, C 0: B first
    assert_eq!(starts(&scene(), &format!("{opts},priority_favor_small=true")), vec![0, 120, 170]);
    // priority/basic: submit order
    assert_eq!(starts(&scene(), "slurm"), vec![0, 120, 170]);
}

#[test]
fn age_counts_from_the_first_pass_and_changes_the_order_only_at_a_recalculation() {
    // weights age 1000, size 500, PriorityMaxAge 100 s. B's accrue_time is its submit
    // second (1), set by the main pass at 4 (batch_sched_delay 3 s after the pass at 0)
    // that first sees it pending; C's likewise (60, pass at 60).
    let at_100_b = slurm_priority(99.0, 100.0, 1000.0, 1.0, 4.0, 500.0); // 990 + 125
    let at_100_c = slurm_priority(40.0, 100.0, 1000.0, 4.0, 4.0, 500.0); // 400 + 500
    assert_eq!((at_100_b, at_100_c), (1115, 900));
    let initial_b = slurm_priority(0.0, 100.0, 1000.0, 1.0, 4.0, 500.0);
    let initial_c = slurm_priority(0.0, 100.0, 1000.0, 4.0, 4.0, 500.0);
    assert!(initial_c > initial_b);
    let base = "slurm:priority_weight_age=1000,priority_weight_job_size=500,priority_max_age_s=100";
    // recalculated every 50 s from 0: at 100 B overtakes C, so B goes first at 120
    assert_eq!(starts(&scene(), &format!("{base},priority_calc_period_s=50")), vec![0, 120, 170]);
    // every 200 s from 0: at 120 the last run (0) saw neither job, C keeps its higher
    // submission priority and goes first
    assert_eq!(starts(&scene(), &format!("{base},priority_calc_period_s=200")), vec![0, 170, 120]);
    // every 200 s from 110 (phase): the run at 110 sees B at 109 s (1090 + 125), C at 50 s (500 + 500)
    assert!(slurm_priority(109.0, 100.0, 1000.0, 1.0, 4.0, 500.0) > slurm_priority(50.0, 100.0, 1000.0, 4.0, 4.0, 500.0));
    assert_eq!(starts(&scene(), &format!("{base},priority_calc_period_s=200,priority_calc_phase=110")), vec![0, 120, 170]);
    // the same in slurm-bf (no backfill possible: nothing fits beside A)
    let bf = "slurm-bf:sched_priority_weight_age=1000,sched_priority_weight_job_size=500,sched_priority_max_age_s=100";
    assert_eq!(starts(&scene(), &format!("{bf},sched_priority_calc_period_s=50")), vec![0, 120, 170]);
    assert_eq!(starts(&scene(), &format!("{bf},sched_priority_calc_period_s=200")), vec![0, 170, 120]);
}

#[test]
fn milliseconds_scale_the_periods() {
    // The same scene counted in milliseconds (ticks_per_s=1000, as validate-slurm replays):
    // MaxAge and the calc period are still seconds; whole seconds of the controller's clock
    // (clock_offset 999 ms: B's submission at 1.999 s is second 1, the run at 100.999 s is
    // second 100) leave B 99 s old, C 40 s: the same order as in seconds.
    let ms = |j: Job| Job { submit_s: j.submit_s * 1000, walltime_s: j.walltime_s * 1000, runtime_s: j.runtime_s * 1000, ..j };
    let jobs: Vec<Job> = scene().into_iter().map(ms).collect();
    let base = "slurm:ticks_per_s=1000,priority_weight_age=1000,priority_weight_job_size=500,priority_max_age_s=100";
    assert_eq!(starts(&jobs, &format!("{base},priority_calc_period_s=50,clock_offset=999")), vec![0, 120_000, 170_000]);
    assert_eq!(starts(&jobs, &format!("{base},priority_calc_period_s=200")), vec![0, 170_000, 120_000]);
}

/// A (account 0, 4 nodes) holds the machine over [0, 120); B (account 0) submitted at 1, C
/// (account 1) at 2, both 4 nodes. Slurm's decay thread runs at 0, 50, 100.
fn accounts_scene() -> Vec<Job> {
    let mut jobs = scene();
    jobs[2].submit_s = 2;
    for (j, acct) in jobs.iter_mut().zip([0, 0, 1]) {
        j.account = Some(acct);
        j.user = Some(7);
    }
    jobs
}

#[test]
fn fair_share_puts_the_account_that_ran_less_first() {
    // Fair Tree (fair_tree.html): at the run at 50, account 0 has used 50 s x 4 CPUs (A),
    // account 1 nothing: its Level FS is infinite, ranked first. Two user associations
    // (0, 7) and (1, 7): C's gets 2/2, B's 1/2; with weight 1000, C 1000 > B 500: at 120
    // C starts first, B after it (170). In submit order (no fair-share) B goes first.
    let base = "slurm:priority_weight_fairshare=1000,priority_calc_period_s=50";
    assert_eq!(starts(&accounts_scene(), base), vec![0, 170, 120]);
    assert_eq!(starts(&accounts_scene(), "slurm:priority_weight_age=1,priority_calc_period_s=50"), vec![0, 120, 170]);
    // before any run saw usage (calc period 200: runs at 0 and 200), both accounts are
    // unused and tied at 1: submit order
    assert_eq!(starts(&accounts_scene(), "slurm:priority_weight_fairshare=1000,priority_calc_period_s=200"), vec![0, 120, 170]);
    // a tree with account 1 holding 0 shares: its Level FS is 0 whatever its usage, B first
    assert_eq!(starts(&accounts_scene(), &format!("{base},priority_fs_tree=1:0")), vec![0, 120, 170]);
    // the same in slurm-bf
    assert_eq!(starts(&accounts_scene(), "slurm-bf:sched_priority_weight_fairshare=1000,sched_priority_calc_period_s=50"), vec![0, 170, 120]);
}

#[test]
fn qos_priority_over_the_highest() {
    // QOS 1 priority 10, QOS 2 priority 40 (the highest): B in QOS 1 gets 1000 * 10 / 40 =
    // 250 at submission, C in QOS 2 gets 1000: C first.
    let mut jobs = accounts_scene();
    jobs[1].qos = Some(1);
    jobs[2].qos = Some(2);
    assert_eq!(starts(&jobs, "slurm:priority_weight_qos=1000,priority_qos=1:10;2:40"), vec![0, 170, 120]);
    // B's QOS the higher one: B first; a QOS of priority 0 (or unlisted) counts 0
    assert_eq!(starts(&jobs, "slurm:priority_weight_qos=1000,priority_qos=1:40;2:10"), vec![0, 120, 170]);
    assert_eq!(starts(&jobs, "slurm:priority_weight_qos=1000,priority_qos=1:40;2:0"), vec![0, 120, 170]);
    assert_eq!(starts(&jobs, "slurm:priority_weight_qos=1000,priority_qos=2:40"), vec![0, 170, 120]);
}

#[test]
fn bad_fair_share_and_qos_options_are_refused_with_their_names() {
    let err = queue::by_name("slurm:priority_qos=1-3", &Options::new()).err().unwrap();
    assert!(err.contains("priority_qos") && err.contains("1-3"), "{err}");
    let err = queue::by_name("slurm-bf:sched_priority_fs_tree=x:1", &Options::new()).err().unwrap();
    assert!(err.contains("sched_priority_fs_tree") && err.contains("x:1"), "{err}");
    let err = queue::by_name("slurm:priority_weight_fairshare=-2", &Options::new()).err().unwrap();
    assert!(err.contains("priority_weight_fairshare=-2 is out of range"), "{err}");
    let err = queue::by_name("slurm:priority_decay_half_life_s=-1", &Options::new()).err().unwrap();
    assert!(err.contains("priority_decay_half_life_s=-1 is out of range"), "{err}");
}

#[test]
fn bad_priority_options_are_refused_with_their_names() {
    let err = queue::by_name("slurm:priority_calc_period_s=0", &Options::new()).err().unwrap();
    assert!(err.contains("priority_calc_period_s=0 is out of range"), "{err}");
    let err = queue::by_name("slurm-bf:sched_priority_max_age_s=-5", &Options::new()).err().unwrap();
    assert!(err.contains("sched_priority_max_age_s=-5 is out of range"), "{err}");
    let err = queue::by_name("slurm:priority_weight_age=-1", &Options::new()).err().unwrap();
    assert!(err.contains("priority_weight_age=-1 is out of range"), "{err}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 150, ..Default::default() })]

    /// Only the age weight: an older job has waited at least as long and was first seen
    /// pending no later, so its priority is never lower; ties go by job id (row). The
    /// order is submit order and the schedule is priority/basic's, nodes included,
    /// whatever the weight, MaxAge, calc period and phase.
    #[test]
    fn age_alone_keeps_submit_order(
        k in 1u32..5, s in 1u32..4,
        raw in proptest::collection::vec((0i64..300, 1u32..9, 1i64..200, 0i64..200), 1..40),
        w in 1u32..100_000, max_age in 1i64..500, period in 1i64..200, phase in 0i64..200,
    ) {
        let topo = Topology::fat_tree("t", k, s, 2, None, None).unwrap();
        let n = topo.n_nodes() as u32;
        let mut raw = raw;
        raw.sort_by_key(|x| x.0);
        let jobs: Vec<Job> = raw.iter().enumerate().map(|(i, &(t, nodes, wl, r))| job(i as i64, t, nodes.min(n), wl, r)).collect();
        let basic = schedule(&topo, &jobs, "slurm");
        let age = schedule(&topo, &jobs, &format!("slurm:priority_weight_age={w},priority_max_age_s={max_age},priority_calc_period_s={period},priority_calc_phase={phase}"));
        proptest::prop_assert_eq!(&basic, &age);
    }

    /// Only the job size weight, every job of one size: equal priorities, job id order.
    #[test]
    fn one_size_keeps_submit_order(
        raw in proptest::collection::vec((0i64..300, 1i64..200, 0i64..200), 1..40),
        nodes in 1u32..9, w in 1u32..100_000, small in proptest::bool::ANY,
    ) {
        let topo = Topology::fat_tree("t", 4, 2, 2, None, None).unwrap();
        let mut raw = raw;
        raw.sort_by_key(|x| x.0);
        let jobs: Vec<Job> = raw.iter().enumerate().map(|(i, &(t, wl, r))| job(i as i64, t, nodes, wl, r)).collect();
        let basic = schedule(&topo, &jobs, "slurm");
        let size = schedule(&topo, &jobs, &format!("slurm:priority_weight_job_size={w},priority_favor_small={small}"));
        proptest::prop_assert_eq!(&basic, &size);
    }

    /// Any weights, periods and phase, in both policies and with every allocator: every job
    /// runs once, after its submission, for its run time clipped at its limit, on nodes no
    /// other job holds then; and the same inputs give the same schedule.
    #[test]
    fn schedules_stay_valid_under_any_priority(
        raw in proptest::collection::vec((0i64..300, 1u32..12, 1i64..200, 0i64..200), 1..40),
        wa in 0u32..5000, ws in 0u32..5000, max_age in 1i64..400, period in 1i64..100, phase in 0i64..100,
        small in proptest::bool::ANY, bf in proptest::bool::ANY, ai in 0usize..16,
        wf in 0u32..5000, wq in 0u32..5000, half_life in 0i64..300, assoc in proptest::collection::vec((0u32..3, 0u32..3, 0u32..3), 40),
    ) {
        let topo = Topology::fat_tree("t", 4, 2, 1, None, None).unwrap();
        let mut raw = raw;
        raw.sort_by_key(|x| x.0);
        let jobs: Vec<Job> = raw.iter().zip(&assoc).enumerate().map(|(i, (&(t, nodes, wl, r), &(a, u, q)))| {
            Job { account: Some(a), user: Some(u), qos: Some(q), ..job(i as i64, t, nodes, wl, r) }
        }).collect();
        let (policy, pre) = if bf { ("slurm-bf:bf_interval_s=5,bf_resolution_s=1,", "sched_") } else { ("slurm:", "") };
        let spec = format!(
            "{policy}{pre}priority_weight_age={wa},{pre}priority_weight_job_size={ws},{pre}priority_max_age_s={max_age},\
             {pre}priority_calc_period_s={period},{pre}priority_calc_phase={phase},{pre}priority_favor_small={small},\
             {pre}priority_weight_fairshare={wf},{pre}priority_weight_qos={wq},{pre}priority_decay_half_life_s={half_life},\
             {pre}priority_qos=0:0;1:5;2:50,{pre}priority_fs_tree=root/0;2:3"
        );
        let allocs = toposched_core::registry::alloc_names();
        let alloc_name = allocs[ai % allocs.len()];
        let mut runs = Vec::new();
        for _ in 0..2 {
            let a = alloc::by_name(alloc_name, &Options::new()).unwrap();
            let q = queue::by_name(&spec, &Options::new()).unwrap();
            let mut e = Engine::new(topo.clone(), jobs.clone(), a, q, EngineOptions::default(), &[]).unwrap();
            let done = e.step(u64::MAX);
            proptest::prop_assert!(done.is_ok(), "{:?}", done);
            let mut held: Vec<(u32, i64, i64)> = Vec::new();
            for (i, (j, o)) in jobs.iter().zip(e.outcomes()).enumerate() {
                if o.status != JobStatus::Done {
                    proptest::prop_assert!(o.status == JobStatus::Skipped, "row {i}: {:?}", o.status);
                    continue;
                }
                proptest::prop_assert!(o.start_s >= j.submit_s);
                proptest::prop_assert_eq!(o.end_s - o.start_s, j.runtime_s.min(j.walltime_s));
                proptest::prop_assert_eq!(e.nodes_of(i as u32).len(), j.nodes as usize);
                held.extend(e.nodes_of(i as u32).iter().map(|&n| (n, o.start_s, o.end_s)));
            }
            held.sort();
            for w in held.windows(2) {
                proptest::prop_assert!(w[0].0 != w[1].0 || w[0].2 <= w[1].1 || w[0].1 == w[0].2 || w[1].1 == w[1].2, "node {} shared", w[0].0);
            }
            runs.push((0..jobs.len()).map(|i| (e.outcomes()[i].start_s, e.nodes_of(i as u32).to_vec())).collect::<Vec<_>>());
        }
        proptest::prop_assert_eq!(&runs[0], &runs[1]);
    }

    /// Job size alone, favouring large jobs: whenever the main scheduler starts a job, no
    /// larger job submitted before that instant is still waiting (it would have been
    /// first in the queue and blocked it), unless it was submitted at that very instant
    /// (the pass may run before it is queued).
    #[test]
    fn large_jobs_first(
        raw in proptest::collection::vec((0i64..300, 1u32..9, 1i64..200, 0i64..200), 1..40),
    ) {
        let topo = Topology::fat_tree("t", 4, 2, 1, None, None).unwrap();
        let mut raw = raw;
        raw.sort_by_key(|x| x.0);
        let jobs: Vec<Job> = raw.iter().enumerate().map(|(i, &(t, nodes, wl, r))| job(i as i64, t, nodes, wl, r)).collect();
        let out = schedule(&topo, &jobs, "slurm:priority_weight_job_size=100000");
        for (i, a) in jobs.iter().enumerate() {
            let start = out[i].0;
            for (j, b) in jobs.iter().enumerate() {
                let waiting = b.submit_s < start && out[j].0 > start;
                proptest::prop_assert!(!(waiting && b.nodes > a.nodes), "job {i} ({} nodes) started at {start} while job {j} ({} nodes, submitted {}) waited until {}", a.nodes, b.nodes, b.submit_s, out[j].0);
            }
        }
    }
}

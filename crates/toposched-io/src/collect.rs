//! The finished jobs of a replay as jobs.parquet's columns: from the engine's per-row
//! outcomes (status, times, span class, kills, APH, node lists as ranges) and the same
//! rows' job columns, the rows whose job is done, in row order, with their wait, run
//! time, bounded slowdown and the leaves and pods they spanned. The whole replay calls it
//! once with every row, the streamed one with each drain's rows (`toposched.results.
//! finished_jobs` is its Python face).

use toposched_core::{JobStatus, Outcome, Topology};

use crate::summary::{Chunk, Statistics, SummaryStats};
use crate::utilization::UtilizationSeries;

/// Bounded-slowdown threshold (seconds), as in Feitelson's definition.
pub const BSLD_TAU_S: i64 = 10;

/// `Simulation.results()`'s status code of a finished job.
pub const STATUS_DONE: i8 = 2;

/// The engine's per-row outcomes as columns (what `Simulation.results()` and `drain()`
/// give): status 0 pending / 1 running / 2 done / 3 skipped, start and end, span class
/// (0: never started), killed at the limit, APH (NaN: none), and the node lists as CSR
/// ranges of consecutive ids (row j's are `range_offsets[j]..range_offsets[j + 1]`).
#[derive(Clone, Copy, Debug)]
pub struct Outcomes<'a> {
    pub status: &'a [i8],
    pub start_s: &'a [i64],
    pub end_s: &'a [i64],
    pub alloc_class: &'a [i8],
    pub killed: &'a [bool],
    pub aph: &'a [f64],
    pub range_offsets: &'a [i64],
    pub range_first: &'a [u32],
    pub range_count: &'a [u32],
}

/// [`Outcomes`] owned: made from the core's outcome records (`OutcomeColumns::from_rows`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OutcomeColumns {
    pub status: Vec<i8>,
    pub start_s: Vec<i64>,
    pub end_s: Vec<i64>,
    pub alloc_class: Vec<i8>,
    pub killed: Vec<bool>,
    pub aph: Vec<f64>,
    pub range_offsets: Vec<i64>,
    pub range_first: Vec<u32>,
    pub range_count: Vec<u32>,
}

impl OutcomeColumns {
    /// The columns of the core's outcomes, each row with its node ranges (empty for a job
    /// that never started) and its APH from them.
    pub fn from_rows<'a>(topo: &Topology, rows: impl ExactSizeIterator<Item = (&'a Outcome, &'a [(u32, u32)])>) -> OutcomeColumns {
        let n = rows.len();
        let mut o = OutcomeColumns {
            status: Vec::with_capacity(n),
            start_s: Vec::with_capacity(n),
            end_s: Vec::with_capacity(n),
            alloc_class: Vec::with_capacity(n),
            killed: Vec::with_capacity(n),
            aph: Vec::with_capacity(n),
            range_offsets: Vec::with_capacity(n + 1),
            range_first: Vec::new(),
            range_count: Vec::new(),
        };
        o.range_offsets.push(0);
        for (r, ranges) in rows {
            o.status.push(match r.status {
                JobStatus::Pending => 0,
                JobStatus::Running => 1,
                JobStatus::Done => STATUS_DONE,
                JobStatus::Skipped => 3,
            });
            o.start_s.push(r.start_s);
            o.end_s.push(r.end_s);
            o.alloc_class.push(r.class.map_or(0, |c| c.number() as i8));
            o.killed.push(r.killed);
            o.aph.push(toposched_core::metrics::aph_of_ranges(topo, ranges).unwrap_or(f64::NAN));
            o.range_first.extend(ranges.iter().map(|x| x.0));
            o.range_count.extend(ranges.iter().map(|x| x.1));
            o.range_offsets.push(o.range_first.len() as i64);
        }
        o
    }

    pub fn view(&self) -> Outcomes<'_> {
        Outcomes {
            status: &self.status,
            start_s: &self.start_s,
            end_s: &self.end_s,
            alloc_class: &self.alloc_class,
            killed: &self.killed,
            aph: &self.aph,
            range_offsets: &self.range_offsets,
            range_first: &self.range_first,
            range_count: &self.range_count,
        }
    }
}

/// The same rows' job columns (the workload's).
#[derive(Clone, Copy, Debug)]
pub struct JobColumns<'a> {
    pub job_id: &'a [i64],
    pub submit_s: &'a [i64],
    pub nodes: &'a [i64],
    pub walltime_s: &'a [i64],
    pub runtime_s: &'a [i64],
}

/// jobs.parquet's columns of the finished jobs, in row order (`aph` NaN: a null).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FinishedJobs {
    /// rows (of the outcomes given) of the finished jobs
    pub rows: Vec<u32>,
    pub job_id: Vec<i64>,
    pub submit_s: Vec<i64>,
    pub start_s: Vec<i64>,
    pub end_s: Vec<i64>,
    pub wait_s: Vec<i64>,
    pub nodes: Vec<i64>,
    pub walltime_s: Vec<i64>,
    pub runtime_s: Vec<i64>,
    pub log_runtime_s: Vec<i64>,
    pub killed: Vec<bool>,
    pub bounded_slowdown: Vec<f64>,
    pub aph: Vec<f64>,
    pub alloc_class: Vec<i8>,
    pub leaves: Vec<i32>,
    pub pods: Vec<i32>,
    pub range_offsets: Vec<i64>,
    pub range_first: Vec<u32>,
    pub range_count: Vec<u32>,
    /// jobs among them killed at their limit
    pub killed_count: u64,
}

/// Bounded slowdown of a job that waited `wait_s` and ran `run_s`: (wait + run) /
/// max(run, 10 s), at least 1 (NumPy's int64 arithmetic, wrapping as it does).
#[inline]
pub fn bounded_slowdown(wait_s: i64, run_s: i64) -> f64 {
    let x = wait_s.wrapping_add(run_s) as f64 / run_s.max(BSLD_TAU_S) as f64;
    if x.is_nan() || x > 1.0 {
        x
    } else {
        1.0
    }
}

/// Distinct leaves and pods a node list touches, from the fabric's leaf of every node and
/// pod of every leaf: a node's rank counts the leaf (pod) changes up to it, so a range
/// touches the leaves ranked rank(first) ..= rank(last) (ids are leaf-major, pods hold
/// consecutive leaves); a job's next range shares one only where it starts in the leaf
/// the previous one ended in. Work in proportion to the ranges, not the nodes.
#[derive(Clone, Debug)]
pub struct SpanRanks {
    leaf_rank: Vec<u32>,
    pod_rank: Vec<u32>,
}

impl SpanRanks {
    pub fn new(leaf_of: &[u32], pod_of_leaf: &[u32]) -> Result<SpanRanks, String> {
        let mut leaf_rank = Vec::with_capacity(leaf_of.len());
        let mut pod_rank = Vec::with_capacity(leaf_of.len());
        let (mut lr, mut pr) = (0u32, 0u32);
        for (i, &leaf) in leaf_of.iter().enumerate() {
            let pod = *pod_of_leaf.get(leaf as usize).ok_or_else(|| format!("node {i} is on leaf {leaf}, which has no pod ({} leaves)", pod_of_leaf.len()))?;
            if i > 0 {
                lr += u32::from(leaf != leaf_of[i - 1]);
                pr += u32::from(pod != pod_of_leaf[leaf_of[i - 1] as usize]);
            }
            leaf_rank.push(lr);
            pod_rank.push(pr);
        }
        Ok(SpanRanks { leaf_rank, pod_rank })
    }

    pub fn of_topology(t: &Topology) -> SpanRanks {
        let leaf_of: Vec<u32> = (0..t.n_nodes() as u32).map(|n| t.leaf_of(n)).collect();
        let pod_of_leaf: Vec<u32> = (0..t.n_leaves() as u32).map(|l| t.pod_of_leaf(l)).collect();
        SpanRanks::new(&leaf_of, &pod_of_leaf).expect("a topology's leaves have pods")
    }

    /// Leaves and pods spanned by each job of CSR ranges (each range of at least one
    /// node, on the fabric).
    pub fn span_counts(&self, range_offsets: &[i64], first: &[u32], count: &[u32]) -> Result<(Vec<i32>, Vec<i32>), String> {
        let n_nodes = self.leaf_rank.len();
        let jobs = range_offsets.len().saturating_sub(1);
        let mut leaves = Vec::with_capacity(jobs);
        let mut pods = Vec::with_capacity(jobs);
        for j in 0..jobs {
            let (a, b) = (range_offsets[j], range_offsets[j + 1]);
            if a < 0 || b < a || b as usize > first.len() || b as usize > count.len() {
                return Err(format!("job {j}'s node ranges {a}..{b} are not among the {} ranges", first.len().min(count.len())));
            }
            let (mut nl, mut np) = (0i64, 0i64);
            let mut prev: Option<(u32, u32)> = None; // (leaf rank, pod rank) where the last range ended
            for k in a as usize..b as usize {
                let (f, c) = (first[k] as usize, count[k] as usize);
                if c == 0 || f + c > n_nodes {
                    return Err(format!("node range {f}+{c} of job {j} is not on the fabric ({n_nodes} nodes)"));
                }
                let last = f + c - 1;
                let (l0, l1, p0, p1) = (self.leaf_rank[f], self.leaf_rank[last], self.pod_rank[f], self.pod_rank[last]);
                nl += i64::from(l1 - l0 + 1);
                np += i64::from(p1 - p0 + 1);
                if let Some((pl, pp)) = prev {
                    nl -= i64::from(pl == l0);
                    np -= i64::from(pp == p0);
                }
                prev = Some((l1, p1));
            }
            leaves.push(nl as i32);
            pods.push(np as i32);
        }
        Ok((leaves, pods))
    }
}

/// The finished jobs among the rows of `o`, with `cols` the same rows' job columns.
pub fn finished_jobs(o: &Outcomes<'_>, cols: &JobColumns<'_>, spans: &SpanRanks) -> Result<FinishedJobs, String> {
    let n = o.status.len();
    let lens = [o.start_s.len(), o.end_s.len(), o.alloc_class.len(), o.killed.len(), o.aph.len(), cols.job_id.len(), cols.submit_s.len(), cols.nodes.len(), cols.walltime_s.len(), cols.runtime_s.len()];
    if lens.iter().any(|&l| l != n) || o.range_offsets.len() != n + 1 {
        return Err(format!("finished jobs: the outcome and job columns differ in length ({n} rows, {} range offsets)", o.range_offsets.len()));
    }
    let rows: Vec<u32> = (0..n as u32).filter(|&i| o.status[i as usize] == STATUS_DONE).collect();
    let pick = |a: &[i64]| -> Vec<i64> { rows.iter().map(|&i| a[i as usize]).collect() };
    let mut f = FinishedJobs {
        job_id: pick(cols.job_id),
        submit_s: pick(cols.submit_s),
        start_s: pick(o.start_s),
        end_s: pick(o.end_s),
        nodes: pick(cols.nodes),
        walltime_s: pick(cols.walltime_s),
        log_runtime_s: pick(cols.runtime_s),
        killed: rows.iter().map(|&i| o.killed[i as usize]).collect(),
        aph: rows.iter().map(|&i| o.aph[i as usize]).collect(),
        alloc_class: rows.iter().map(|&i| o.alloc_class[i as usize]).collect(),
        ..FinishedJobs::default()
    };
    f.wait_s = f.start_s.iter().zip(&f.submit_s).map(|(&s, &q)| s.wrapping_sub(q)).collect();
    f.runtime_s = f.end_s.iter().zip(&f.start_s).map(|(&e, &s)| e.wrapping_sub(s)).collect();
    f.bounded_slowdown = f.wait_s.iter().zip(&f.runtime_s).map(|(&w, &r)| bounded_slowdown(w, r)).collect();
    f.killed_count = f.killed.iter().filter(|&&k| k).count() as u64;
    // the finished jobs' node ranges only
    f.range_offsets.reserve(rows.len() + 1);
    f.range_offsets.push(0);
    for &i in &rows {
        let (a, b) = (o.range_offsets[i as usize], o.range_offsets[i as usize + 1]);
        if a < 0 || b < a || b as usize > o.range_first.len() || b as usize > o.range_count.len() {
            return Err(format!("row {i}'s node ranges {a}..{b} are not among the {} ranges", o.range_first.len()));
        }
        f.range_first.extend_from_slice(&o.range_first[a as usize..b as usize]);
        f.range_count.extend_from_slice(&o.range_count[a as usize..b as usize]);
        f.range_offsets.push(f.range_first.len() as i64);
    }
    let (leaves, pods) = spans.span_counts(&f.range_offsets, &f.range_first, &f.range_count)?;
    f.leaves = leaves;
    f.pods = pods;
    f.rows = rows;
    Ok(f)
}

/// What the whole replay makes of its outcomes: the finished jobs' columns, the busy
/// nodes over time, and the summary's statistics.
#[derive(Clone, Debug)]
pub struct Collected {
    pub finished: FinishedJobs,
    /// sampled from the first row's submit to the last end (none without a finished job)
    pub utilization: UtilizationSeries,
    pub statistics: Statistics,
}

/// The whole replay's collection (`toposched.results.collect`'s columns, samples and
/// statistics; the streamed replay makes the same from its drains): `o` and `cols` hold
/// every row of the replay, in row order.
pub fn collect_replay(o: &Outcomes<'_>, cols: &JobColumns<'_>, spans: &SpanRanks, step_s: i64, n_nodes: i64) -> Result<Collected, String> {
    let finished = finished_jobs(o, cols, spans)?;
    let (t0, t1) = match finished.end_s.iter().max() {
        Some(&last_end) => (cols.submit_s[0], last_end),
        None => (0, -1),
    };
    let f = &finished;
    let utilization = || UtilizationSeries::from_jobs(&f.start_s, &f.end_s, &f.nodes, t0, t1, step_s, n_nodes);
    let statistics = || {
        // every key kept: the columns are in memory already, no pass over them again
        let mut stats = SummaryStats::new(true);
        stats.add(Chunk { wait_s: &f.wait_s, bounded_slowdown: &f.bounded_slowdown, aph: &f.aph, nodes: &f.nodes }, u64::MAX);
        stats.finish(0, |_| Err("the whole replay's statistics keep every key: no pass over the rows".to_string()))
    };
    // The two read the finished columns and nothing else: on two cores they take the time
    // of the longer (HPC2N: the statistics' sorts about 20 ms, the step function 10 ms).
    let (utilization, statistics) = std::thread::scope(|scope| {
        match std::thread::Builder::new().name("toposched-collect".into()).spawn_scoped(scope, utilization) {
            Ok(on_thread) => {
                let statistics = statistics();
                (on_thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), statistics)
            }
            Err(_) => (utilization(), statistics()), // no thread to be had: one after the other
        }
    });
    Ok(Collected { finished, utilization: utilization?, statistics: statistics? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn bounded_slowdown_cases() {
        assert_eq!(bounded_slowdown(0, 0), 1.0);
        assert_eq!(bounded_slowdown(90, 10), 10.0);
        assert_eq!(bounded_slowdown(90, 5), 9.5); // (90 + 5) / 10
        assert_eq!(bounded_slowdown(3, 1000), 1.003);
    }

    /// Fabrics as leaf sizes per pod (some leaves empty); jobs as sets of nodes, written
    /// as maximal runs: the span counts are the distinct leaves and pods of the sets.
    fn fabric_and_jobs() -> impl Strategy<Value = (Vec<Vec<usize>>, Vec<Vec<bool>>)> {
        prop::collection::vec(prop::collection::vec(0usize..4, 1..4), 1..4).prop_flat_map(|pods| {
            let n: usize = pods.iter().flatten().sum();
            (Just(pods), prop::collection::vec(prop::collection::vec(any::<bool>(), n), 0..8))
        })
    }

    proptest! {
        #[test]
        fn span_counts_are_distinct_leaves_and_pods((pods, picks) in fabric_and_jobs()) {
            let mut leaf_of = Vec::new();
            let mut pod_of_leaf = Vec::new();
            for (p, leaves) in pods.iter().enumerate() {
                for &size in leaves {
                    leaf_of.extend(vec![pod_of_leaf.len() as u32; size]);
                    pod_of_leaf.push(p as u32);
                }
            }
            let mut offsets = vec![0i64];
            let (mut first, mut count) = (Vec::new(), Vec::new());
            let mut want = Vec::new();
            for pick in &picks {
                let ids: Vec<usize> = (0..pick.len()).filter(|&i| pick[i]).collect();
                let mut k = 0;
                while k < ids.len() {
                    let mut e = k;
                    while e + 1 < ids.len() && ids[e + 1] == ids[e] + 1 {
                        e += 1;
                    }
                    first.push(ids[k] as u32);
                    count.push((e - k + 1) as u32);
                    k = e + 1;
                }
                offsets.push(first.len() as i64);
                let l: BTreeSet<u32> = ids.iter().map(|&i| leaf_of[i]).collect();
                let p: BTreeSet<u32> = l.iter().map(|&x| pod_of_leaf[x as usize]).collect();
                want.push((l.len() as i32, p.len() as i32));
            }
            let (leaves, pods_used) = SpanRanks::new(&leaf_of, &pod_of_leaf).unwrap().span_counts(&offsets, &first, &count).unwrap();
            let got: Vec<(i32, i32)> = leaves.into_iter().zip(pods_used).collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn finished_rows_only_in_row_order() {
        // 3 rows: done on nodes 0-1 and 4 (2 leaves of 2 nodes... on a 2x2x2 fabric), pending, done on 2
        let leaf_of = [0u32, 0, 1, 1, 2, 2, 3, 3];
        let pod_of_leaf = [0u32, 0, 1, 1];
        let spans = SpanRanks::new(&leaf_of, &pod_of_leaf).unwrap();
        let o = Outcomes {
            status: &[2, 0, 2],
            start_s: &[10, -1, 20],
            end_s: &[15, -1, 1020],
            alloc_class: &[2, 0, 1],
            killed: &[true, false, false],
            aph: &[2.5, f64::NAN, f64::NAN],
            range_offsets: &[0, 2, 2, 3],
            range_first: &[0, 4, 2],
            range_count: &[2, 1, 1],
        };
        let c = JobColumns { job_id: &[7, 8, 9], submit_s: &[0, 5, 20], nodes: &[3, 4, 1], walltime_s: &[5, 60, 2000], runtime_s: &[99, 1, 1000] };
        let f = finished_jobs(&o, &c, &spans).unwrap();
        assert_eq!(f.rows, vec![0, 2]);
        assert_eq!(f.job_id, vec![7, 9]);
        assert_eq!(f.wait_s, vec![10, 0]);
        assert_eq!(f.runtime_s, vec![5, 1000]);
        assert_eq!(f.log_runtime_s, vec![99, 1000]);
        assert_eq!(f.bounded_slowdown, vec![1.5, 1.0]);
        assert_eq!((f.leaves.clone(), f.pods.clone()), (vec![2, 1], vec![2, 1]));
        assert_eq!((f.range_offsets.clone(), f.range_first.clone(), f.range_count.clone()), (vec![0, 2, 3], vec![0, 4, 2], vec![2, 1, 1]));
        assert_eq!(f.killed_count, 1);
        let bad = Outcomes { range_first: &[0, 8, 2], ..o };
        assert!(finished_jobs(&bad, &c, &spans).unwrap_err().contains("not on the fabric"));
        // the whole replay's chain: these columns, samples from the first submit (0) to
        // the last end (1020), the statistics of the two finished jobs
        let all = collect_replay(&o, &c, &spans, 60, 8).unwrap();
        assert_eq!(format!("{:?}", all.finished), format!("{f:?}")); // (NaN APH: compared as text)
        assert_eq!((all.utilization.t0, all.utilization.t1, all.utilization.n_samples()), (0, 1020, 18));
        assert_eq!(all.utilization.busy_at(0, 3), vec![0, 1, 1]); // job 7 ran 10..15, between samples; job 9 from 20
        assert_eq!(all.statistics.wait_s.mean, Some(5.0));
        assert_eq!(all.statistics.by_size.iter().map(|b| (b.bin, b.jobs)).collect::<Vec<_>>(), vec![("1", 1), ("2-4", 1)]);
        let none = Outcomes { status: &[0, 0, 3], ..o };
        let empty = collect_replay(&none, &c, &spans, 60, 8).unwrap();
        assert_eq!((empty.utilization.n_samples(), empty.statistics.wait_s), (0, crate::summary::Stats::default()));
    }
}

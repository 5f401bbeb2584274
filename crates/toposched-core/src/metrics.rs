//! Metrics of a schedule: average pairwise hops, bounded slowdown, utilization.

use crate::topology::Topology;

/// Average pairwise hops of a node set (brief §2.8): the mean over ordered pairs of
/// distinct nodes of the inter-switch links between them (0 / 2 / 4). None for fewer
/// than two nodes, where it is undefined. O(n) via per-leaf and per-pod counts:
/// `sum H = 2·(Σ_P n_P² − Σ_L n_L²) + 4·(n² − Σ_P n_P²)`.
pub fn aph(topo: &Topology, nodes: &[u32]) -> Option<f64> {
    let n = nodes.len() as u64;
    if n < 2 {
        return None;
    }
    let (sum_leaf_sq, sum_pod_sq) = grouped_square_sums(topo, nodes);
    let total = 2 * (sum_pod_sq - sum_leaf_sq) + 4 * (n * n - sum_pod_sq);
    Some(total as f64 / (n * (n - 1)) as f64)
}

/// [`aph`] of a node set given as (first, count) ranges of consecutive ids, ascending and
/// disjoint (the engine's node lists): the same value, in time proportional to the ranges
/// and the leaves they touch rather than to the nodes. Ids are leaf-major and pods hold
/// consecutive leaves, so walking the ranges in order meets each leaf and each pod in
/// one stretch.
pub fn aph_of_ranges(topo: &Topology, ranges: &[(u32, u32)]) -> Option<f64> {
    let n: u64 = ranges.iter().map(|r| u64::from(r.1)).sum();
    if n < 2 {
        return None;
    }
    let (mut leaf_sq, mut pod_sq) = (0u64, 0u64);
    let (mut leaf, mut pod) = (u32::MAX, u32::MAX);
    let (mut leaf_run, mut pod_run) = (0u64, 0u64);
    for &(first, count) in ranges {
        let (mut a, b) = (first, first + count);
        while a < b {
            let l = topo.leaf_of(a);
            let take = b.min(topo.leaf_nodes(l).end) - a;
            if l != leaf {
                leaf_sq += leaf_run * leaf_run;
                (leaf, leaf_run) = (l, 0);
                let p = topo.pod_of_leaf(l);
                if p != pod {
                    pod_sq += pod_run * pod_run;
                    (pod, pod_run) = (p, 0);
                }
            }
            leaf_run += u64::from(take);
            pod_run += u64::from(take);
            a += take;
        }
    }
    leaf_sq += leaf_run * leaf_run;
    pod_sq += pod_run * pod_run;
    let total = 2 * (pod_sq - leaf_sq) + 4 * (n * n - pod_sq);
    Some(total as f64 / (n * (n - 1)) as f64)
}

/// (Σ over leaves of n_L², Σ over pods of n_P²) for a node set.
fn grouped_square_sums(topo: &Topology, nodes: &[u32]) -> (u64, u64) {
    let mut sorted: Vec<(u32, u32)> = nodes.iter().map(|&x| (topo.pod_of(x), topo.leaf_of(x))).collect();
    sorted.sort_unstable();
    let (mut leaf_sq, mut pod_sq) = (0u64, 0u64);
    let (mut leaf_run, mut pod_run) = (0u64, 0u64);
    for i in 0..sorted.len() {
        leaf_run += 1;
        pod_run += 1;
        let last = i + 1 == sorted.len();
        if last || sorted[i + 1].1 != sorted[i].1 {
            leaf_sq += leaf_run * leaf_run;
            leaf_run = 0;
        }
        if last || sorted[i + 1].0 != sorted[i].0 {
            pod_sq += pod_run * pod_run;
            pod_run = 0;
        }
    }
    (leaf_sq, pod_sq)
}

/// The smallest APH any placement of `n` nodes can have on an empty fabric: fill whole
/// leaves inside whole pods, largest first (brief §2.8 "ideal APH").
pub fn ideal_aph(topo: &Topology, n: u32) -> Option<f64> {
    if n < 2 || n as usize > topo.n_nodes() {
        return None;
    }
    let mut pods: Vec<Vec<u32>> = (0..topo.n_pods() as u32)
        .map(|p| {
            let mut sizes: Vec<u32> = topo.pod_leaves(p).map(|l| topo.leaf_size(l)).collect();
            sizes.sort_unstable_by(|a, b| b.cmp(a));
            sizes
        })
        .collect();
    pods.sort_unstable_by_key(|sizes| std::cmp::Reverse(sizes.iter().sum::<u32>()));
    let (mut left, mut leaf_sq, mut pod_sq) = (n as u64, 0u64, 0u64);
    for sizes in pods {
        let mut in_pod = 0u64;
        for s in sizes {
            let take = left.min(s as u64);
            leaf_sq += take * take;
            in_pod += take;
            left -= take;
            if left == 0 {
                break;
            }
        }
        pod_sq += in_pod * in_pod;
        if left == 0 {
            break;
        }
    }
    let n = n as u64;
    Some((2 * (pod_sq - leaf_sq) + 4 * (n * n - pod_sq)) as f64 / (n * (n - 1)) as f64)
}

/// Bounded slowdown `max(1, (wait + run) / max(run, tau))`.
pub fn bounded_slowdown(wait_s: i64, run_s: i64, tau_s: i64) -> f64 {
    let denom = run_s.max(tau_s).max(1) as f64;
    (((wait_s + run_s) as f64) / denom).max(1.0)
}

/// Busy nodes at `t0, t0+step, ...` up to and including `t1`: a job counts at `t` when
/// `start <= t < end` (a zero-length job never counts).
pub fn busy_nodes_sampled(starts: &[i64], ends: &[i64], nodes: &[u32], t0: i64, t1: i64, step: i64) -> Vec<u32> {
    assert!(step > 0);
    if t1 < t0 {
        return Vec::new();
    }
    let samples = ((t1 - t0) / step + 1) as usize;
    // Difference array over sample indices: a job covers samples k with start <= t0+k*step < end.
    let mut diff = vec![0i64; samples + 1];
    for i in 0..starts.len() {
        let (s, e) = (starts[i], ends[i]);
        if s < 0 || e <= s {
            continue;
        }
        let first = if s <= t0 { 0 } else { (s - t0 + step - 1) / step };
        let last_excl = if e <= t0 { 0 } else { (e - t0 + step - 1) / step };
        let (first, last_excl) = (first.min(samples as i64) as usize, last_excl.min(samples as i64) as usize);
        if first < last_excl {
            diff[first] += nodes[i] as i64;
            diff[last_excl] -= nodes[i] as i64;
        }
    }
    let mut out = Vec::with_capacity(samples);
    let mut acc = 0i64;
    for d in diff.iter().take(samples) {
        acc += d;
        out.push(acc as u32);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_aph(topo: &Topology, nodes: &[u32]) -> f64 {
        let mut sum = 0u64;
        for &a in nodes {
            for &b in nodes {
                if a != b {
                    sum += topo.hops(a, b) as u64;
                }
            }
        }
        sum as f64 / (nodes.len() * (nodes.len() - 1)) as f64
    }

    #[test]
    fn e8_aph_values() {
        let t = Topology::preset("toy18").unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-3;
        assert!(close(aph(&t, &[2, 3, 5, 10, 11]).unwrap(), 2.8));
        assert!(close(aph(&t, &[1, 4]).unwrap(), 2.0));
        assert!(close(aph(&t, &[7, 13, 14]).unwrap(), 8.0 / 3.0));
        assert!(close(ideal_aph(&t, 5).unwrap(), 1.2));
        assert!(close(ideal_aph(&t, 10).unwrap(), 2.0));
        let all: Vec<u32> = (0..18).collect();
        assert!(close(aph(&t, &all).unwrap(), 2.8235));
        let y: Vec<u32> = [0, 1, 2].into_iter().chain(9..18).collect();
        assert!(close(aph(&t, &y).unwrap(), 2.4545));
        assert_eq!(aph(&t, &[3]), None);
        // E4's X reaches the ideal
        let x: Vec<u32> = std::iter::once(0).chain(9..18).collect();
        assert!(close(aph(&t, &x).unwrap(), 2.0));
    }

    #[test]
    fn aph_matches_brute_force() {
        let t = Topology::preset("cab").unwrap();
        let sets: [Vec<u32>; 3] = [(0..40).collect(), (0..1296).step_by(37).collect(), vec![5, 17, 18, 400, 401, 1295]];
        for s in sets {
            assert!((aph(&t, &s).unwrap() - brute_aph(&t, &s)).abs() < 1e-9);
        }
    }

    proptest::proptest! {
        /// From ranges, APH is bit for bit the value of the node list (uneven leaves and
        /// pods, any ascending set of nodes).
        #[test]
        fn aph_of_ranges_equals_aph(
            pods in proptest::collection::vec(proptest::collection::vec(1u32..7, 1..5), 1..4),
            pick in proptest::collection::vec(proptest::bool::ANY, 0..200),
        ) {
            let t = Topology::from_leaf_sizes("t", 3, &pods, None, None, None, None).unwrap();
            let nodes: Vec<u32> = (0..t.n_nodes() as u32).filter(|&n| pick.get(n as usize).copied().unwrap_or(false)).collect();
            let mut ranges = Vec::new();
            crate::pass::push_ranges(&mut ranges, &nodes);
            proptest::prop_assert_eq!(aph_of_ranges(&t, &ranges).map(f64::to_bits), aph(&t, &nodes).map(f64::to_bits));
        }

        /// Ranges give back exactly the list they were made of, in any order, with repeats.
        #[test]
        fn ranges_round_trip(nodes in proptest::collection::vec(proptest::prop_oneof![0u32..20, proptest::num::u32::ANY], 0..60)) {
            let mut ranges = Vec::new();
            crate::pass::push_ranges(&mut ranges, &nodes);
            proptest::prop_assert_eq!(crate::pass::expand_ranges(&ranges), nodes);
            proptest::prop_assert!(ranges.iter().all(|r| r.1 >= 1));
        }
    }

    #[test]
    fn slowdown_and_utilization() {
        assert_eq!(bounded_slowdown(0, 0, 10), 1.0);
        assert_eq!(bounded_slowdown(90, 5, 10), 9.5);
        assert_eq!(bounded_slowdown(100, 100, 10), 2.0);
        // jobs: [0,120) 2 nodes, [60,61) 1 node, zero-length at 60
        let busy = busy_nodes_sampled(&[0, 60, 60], &[120, 61, 60], &[2, 1, 5], 0, 180, 60);
        assert_eq!(busy, vec![2, 3, 0, 0]);
        let busy = busy_nodes_sampled(&[30], &[90], &[4], 0, 120, 60);
        assert_eq!(busy, vec![0, 4, 0]);
    }
}

//! Queueing delay of messages on loaded links: the one way the model lets other jobs
//! stretch the latency part of an iteration (docs/network.md, "Queueing delay").
//!
//! A message (one packet: the job model's messages are at most an MTU when their latency
//! matters) that crosses a link where other traffic is queued waits behind it. Per link,
//! the mean wait of an M/D/1 queue, `rho / (2 (1 - rho))` service times, where the service
//! time is one packet (an MTU at the link rate) and `rho` the link's utilization; bounded
//! by one packet per input port feeding the link (round-robin output arbitration serves
//! every input once per round: the wait on a saturated link). A job's wait is the extra
//! over running alone (its own load on both sides), summed along each message's path and
//! averaged over its messages (bytes-weighted: a job's messages have one size); the latency
//! part of its iteration grows by `wait x packet time / message latency`.
//!
//! Utilization counts every job's flows at their per-flow max-min rates, all jobs' flows
//! together (each flow as fast as its own bottleneck allows: the instantaneous load of a
//! streaming job such as a bully, whose pairs are not held to the pace of its busiest link;
//! [`PairFlows`]), times the job's duty cycle `phi / dilation` (the fraction of its time it
//! is in its bandwidth phase); the wait alone uses its flows' rates alone ([`flow_loads`]).
//! `Network::evaluate` (`interfere`) uses it; the replay's closed loop does not.

use super::demand::{check_traffic, for_each_node_flow, Traffic};
use super::progressive::Level;
use super::routing::Router;

/// Mean M/D/1 waiting time in service times (packets) at utilization `rho` (clamped to
/// [0, 1]), at most `bound` packets. 0 at `rho = 0`; non-decreasing in `rho` and `bound`.
pub fn md1_wait(rho: f64, bound: f64) -> f64 {
    let bound = if bound.is_nan() { 0.0 } else { bound.max(0.0) };
    let rho = if rho.is_nan() { 0.0 } else { rho.clamp(0.0, 1.0) };
    if rho >= 1.0 {
        return bound;
    }
    (rho / (2.0 * (1.0 - rho))).min(bound)
}

/// The flows of some jobs grouped by node pair: the `weight` flows of a pair (ranks of one
/// node sending to ranks of another) share its D-mod-k route and get equal max-min rates,
/// so each pair is solved once.
#[derive(Clone, Debug, Default)]
pub struct PairFlows {
    cap: Vec<f64>,
    off: Vec<usize>,
    link: Vec<u32>,
    weight: Vec<u64>,
    /// Job of each pair and the first pair of each job (`job_off[j]..job_off[j + 1]`).
    job_off: Vec<usize>,
}

/// Fewest pair entries [`PairFlows::add_job`] collects before merging them.
const MERGE_MIN: usize = 1 << 20;

/// Sort `(source, destination, count)` entries by pair and add up the counts of equal pairs.
fn merge_pairs(pairs: &mut Vec<(u32, u32, u64)>) {
    pairs.sort_unstable_by_key(|p| (p.0, p.1));
    let mut out = 0;
    for k in 0..pairs.len() {
        if out > 0 && pairs[out - 1].0 == pairs[k].0 && pairs[out - 1].1 == pairs[k].1 {
            pairs[out - 1].2 += pairs[k].2;
        } else {
            pairs[out] = pairs[k];
            out += 1;
        }
    }
    pairs.truncate(out);
}

impl PairFlows {
    /// `cap` is every link's capacity, by link id.
    pub fn new(cap: Vec<f64>) -> PairFlows {
        PairFlows { cap, off: vec![0], job_off: vec![0], ..PairFlows::default() }
    }

    /// Add the next job's flows (node-level, flows inside a node dropped).
    pub fn add_job(&mut self, router: &Router, nodes: &[u32], traffic: &Traffic) -> Result<(), String> {
        check_traffic(router, nodes, traffic)?;
        // (source, destination, flows): counted as they come and merged whenever the list
        // doubles, so memory follows the distinct node pairs, not the rank-level flows (a2a
        // on 1296 nodes x 16 ranks is 430 M flows: 3.4 GB as one entry each, and an abort)
        let mut pairs: Vec<(u32, u32, u64)> = Vec::new();
        let mut merge_at = MERGE_MIN;
        for_each_node_flow(router, nodes, traffic, &mut |s, d, _| {
            match pairs.last_mut() {
                Some(p) if p.0 == s && p.1 == d => p.2 += 1,
                _ => pairs.push((s, d, 1)),
            }
            if pairs.len() >= merge_at {
                merge_pairs(&mut pairs);
                merge_at = (2 * pairs.len()).max(MERGE_MIN);
            }
        });
        merge_pairs(&mut pairs);
        for &(s, d, count) in &pairs {
            let r = router.route(s, d);
            self.link.extend_from_slice(r.links());
            self.off.push(self.link.len());
            self.weight.push(count);
        }
        self.job_off.push(self.weight.len());
        Ok(())
    }

    fn pair_links(&self, p: usize) -> &[u32] {
        &self.link[self.off[p]..self.off[p + 1]]
    }

    /// Per-flow max-min rate of one flow of every pair (weighted water filling: a link
    /// with unfrozen weight `n` and frozen usage `u` fills at level `(c - u) / n`; the
    /// lowest level saturates first and freezes its pairs; levels only grow).
    pub fn rates(&self) -> Vec<f64> {
        use std::cmp::Reverse;
        let n_pairs = self.weight.len();
        let nl = self.cap.len();
        let mut rate = vec![-1.0f64; n_pairs];
        let (mut used, mut n, mut version) = (vec![0.0f64; nl], vec![0u64; nl], vec![0u32; nl]);
        let mut start = vec![0usize; nl + 1];
        for &l in &self.link {
            start[l as usize + 1] += 1;
        }
        for l in 0..nl {
            start[l + 1] += start[l];
        }
        let mut on = vec![0u32; self.link.len()];
        let mut pos = start.clone();
        for p in 0..n_pairs {
            for &l in self.pair_links(p) {
                on[pos[l as usize]] = p as u32;
                pos[l as usize] += 1;
                n[l as usize] += self.weight[p];
            }
        }
        let mut heap = std::collections::BinaryHeap::new();
        for (l, (&k, &c)) in n.iter().zip(&self.cap).enumerate() {
            if k > 0 {
                heap.push(Reverse((Level(c / k as f64), l as u32, 0u32)));
            }
        }
        while let Some(Reverse((Level(level), l, v))) = heap.pop() {
            let li = l as usize;
            if v != version[li] || n[li] == 0 {
                continue;
            }
            n[li] = 0;
            for &p in &on[start[li]..start[li + 1]] {
                let pi = p as usize;
                if rate[pi] >= 0.0 {
                    continue;
                }
                rate[pi] = level;
                for &m in self.pair_links(pi) {
                    let mi = m as usize;
                    if mi == li || n[mi] == 0 {
                        continue;
                    }
                    used[mi] += level * self.weight[pi] as f64;
                    n[mi] -= self.weight[pi];
                    if n[mi] > 0 {
                        version[mi] += 1;
                        let next = ((self.cap[mi] - used[mi]) / n[mi] as f64).max(level);
                        heap.push(Reverse((Level(next), m, version[mi])));
                    }
                }
            }
        }
        rate
    }

    /// Job `j`'s load on each of `links` under `rate` (from [`PairFlows::rates`]): its
    /// flows' rates on the link, summed, over the capacity. `scratch` has one zero per link
    /// and is left zero.
    pub fn loads(&self, j: usize, rate: &[f64], links: &[u32], scratch: &mut [f64]) -> Vec<f64> {
        let pairs = self.job_off[j]..self.job_off[j + 1];
        for (p, (&r, &w)) in pairs.clone().zip(rate[pairs.clone()].iter().zip(&self.weight[pairs])) {
            for &l in self.pair_links(p) {
                scratch[l as usize] += r * w as f64;
            }
        }
        let out = links.iter().map(|&l| scratch[l as usize] / self.cap[l as usize]).collect();
        for p in self.job_off[j]..self.job_off[j + 1] {
            for &l in self.pair_links(p) {
                scratch[l as usize] = 0.0;
            }
        }
        out
    }
}


/// A job's load alone on each of `links` (ascending link ids): the per-flow max-min rates
/// of its flows crossing the link, summed, over the link's capacity (`cap` by link id).
pub fn flow_loads(router: &Router, cap: &[f64], nodes: &[u32], traffic: &Traffic, links: &[u32]) -> Result<Vec<f64>, String> {
    let mut pf = PairFlows::new(cap.to_vec());
    pf.add_job(router, nodes, traffic)?;
    let rate = pf.rates();
    let mut scratch = vec![0.0; cap.len()];
    Ok(pf.loads(0, &rate, links, &mut scratch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn merged_pairs_are_the_sorted_pairs_counted(raw in proptest::collection::vec((0u32..6, 0u32..6, 1u64..4), 0..200), cut in 0usize..200) {
            // merging a prefix early, then all (as add_job does when its list doubles),
            // gives what sorting every flow and counting equal pairs gives
            let mut naive: Vec<(u32, u32)> = raw.iter().flat_map(|&(s, d, c)| std::iter::repeat((s, d)).take(c as usize)).collect();
            naive.sort_unstable();
            let mut want: Vec<(u32, u32, u64)> = Vec::new();
            for p in naive {
                match want.last_mut() {
                    Some(w) if (w.0, w.1) == p => w.2 += 1,
                    _ => want.push((p.0, p.1, 1)),
                }
            }
            let cut = cut.min(raw.len());
            let mut got = raw[..cut].to_vec();
            merge_pairs(&mut got);
            got.extend_from_slice(&raw[cut..]);
            merge_pairs(&mut got);
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn md1_values() {
        assert_eq!(md1_wait(0.0, 10.0), 0.0);
        assert!((md1_wait(0.5, 10.0) - 0.5).abs() < 1e-15);
        assert!((md1_wait(0.8, 10.0) - 2.0).abs() < 1e-12);
        assert_eq!(md1_wait(0.99, 3.0), 3.0);
        assert_eq!(md1_wait(1.0, 3.0), 3.0);
        assert_eq!(md1_wait(1.7, 3.0), 3.0);
        assert_eq!(md1_wait(f64::NAN, 3.0), 0.0);
    }

    /// Grouping flows by node pair gives every flow the rate the per-flow water filling of
    /// progressive filling gives it (an independent implementation, one flow at a time).
    #[test]
    fn pair_rates_equal_per_flow_max_min() {
        use crate::network::links::{Bandwidth, Links};
        use crate::network::patterns::Pattern;
        use crate::network::progressive::{max_min_rates, FlowSet};
        use crate::topology::Topology;
        let topo = Topology::fat_tree("t", 6, 4, 2, Some(3), Some(2)).unwrap();
        let router = Router::new(&topo, Links::new(&topo, Bandwidth::default()));
        let cap: Vec<f64> = (0..router.links().len() as u32).map(|l| router.links().capacity(l)).collect();
        let jobs: Vec<(Vec<u32>, Traffic)> = vec![
            ((0..12).collect(), Traffic { ranks_per_node: 3, ..Traffic::new(Pattern::parse("a2a").unwrap()) }),
            ((12..30).step_by(2).collect(), Traffic { seed: 4, ..Traffic::new(Pattern::parse("pairs").unwrap()) }),
            ((31..48).collect(), Traffic { ranks_per_node: 2, ..Traffic::new(Pattern::parse("stencil3d").unwrap()) }),
        ];
        let mut pf = PairFlows::new(cap.clone());
        let mut fs = FlowSet::new(cap.clone());
        for (nodes, tr) in &jobs {
            pf.add_job(&router, nodes, tr).unwrap();
            let k = fs.add_job(1.0);
            fs.add_traffic(&router, k, nodes, tr).unwrap();
        }
        let (pair_rate, flow_rate) = (pf.rates(), max_min_rates(&fs));
        let mut scratch = vec![0.0; cap.len()];
        let all: Vec<u32> = (0..cap.len() as u32).collect();
        for j in 0..jobs.len() {
            let by_pairs = pf.loads(j, &pair_rate, &all, &mut scratch);
            let mut by_flows = vec![0.0; cap.len()];
            for (f, &r) in flow_rate.iter().enumerate() {
                if fs.job[f] as usize == j {
                    for &l in &fs.link[fs.off[f]..fs.off[f + 1]] {
                        by_flows[l as usize] += r / cap[l as usize];
                    }
                }
            }
            for l in 0..cap.len() {
                assert!((by_pairs[l] - by_flows[l]).abs() < 1e-9, "job {j} link {l}: {} vs {}", by_pairs[l], by_flows[l]);
            }
            assert!(by_pairs.iter().all(|&r| r <= 1.0 + 1e-9));
        }
        assert!(scratch.iter().all(|&x| x == 0.0));
    }

    use crate::network::share::{Active, Shared};

    /// A job on `links` with the queueing data given directly (no demand).
    fn active(links: &[u32], msg: &[f64], rho: &[f64], inputs: &[f64], phi: f64) -> Active {
        Active {
            links: links.to_vec(),
            d: vec![0.0; links.len()],
            claim: vec![1.0; links.len()],
            phi,
            x: 1.0,
            phibar: 1.0,
            msg: msg.to_vec(),
            rho1: rho.to_vec(),
            inputs: inputs.to_vec(),
            rho: rho.to_vec(),
            ..Active::default()
        }
    }

    #[test]
    fn wait_by_hand() {
        // A (phi 0.5) alone loads link 5 at 0.2 per-flow, so 0.1 on average; B streams at
        // 0.6 there (phi 1). Together 0.7 over 1 + 2 input ports: 0.7 / 0.6 packets; alone
        // 0.1 / 1.8; A's every message crosses link 5, half of them link 6, which B does
        // not use.
        let mut sh = Shared::new(vec![1.0; 8]);
        let a = sh.insert(active(&[5, 6], &[1.0, 0.5], &[0.2, 0.2], &[1.0, 1.0], 0.5));
        let b = sh.insert(active(&[5], &[1.0], &[0.6], &[2.0], 1.0));
        sh.update_waits(&[a, b]);
        let want_a = 0.7 / (2.0 * 0.3) - 0.1 / (2.0 * 0.9);
        assert!((sh.get(a).wait - want_a).abs() < 1e-12, "{}", sh.get(a).wait);
        let want_b = 0.7 / (2.0 * 0.3) - 0.6 / (2.0 * 0.4);
        assert!((sh.get(b).wait - want_b).abs() < 1e-12, "{}", sh.get(b).wait);
        // alone, or with a job on other links: nothing added
        let mut sh = Shared::new(vec![1.0; 8]);
        let a = sh.insert(active(&[5, 6], &[1.0, 0.5], &[0.2, 0.2], &[1.0, 1.0], 0.5));
        let c = sh.insert(active(&[7], &[1.0], &[1.0], &[4.0], 1.0));
        sh.update_waits(&[a, c]);
        assert_eq!(sh.get(a).wait, 0.0);
        assert_eq!(sh.get(c).wait, 0.0);
    }

    proptest! {
        /// The wait is >= 0, 0 without other traffic on the job's links, and never
        /// decreases when another job loads a link more, sends more often (phi) or feeds
        /// it from more input ports.
        #[test]
        fn wait_is_nonnegative_zero_alone_and_monotone_in_load(
            own in proptest::collection::vec((0.0f64..1.0, 0.01f64..1.0, 1u32..4), 1..5),
            phi_a in 0.0f64..1.0,
            other in proptest::collection::vec((0usize..5, 0.0f64..1.0, 1u32..4), 0..6),
            phi_b in 0.0f64..1.0,
            bump in (0usize..6, 0.0f64..0.5, 0.0f64..0.5, 0u32..3),
        ) {
            let n = own.len();
            let links: Vec<u32> = (0..n as u32).collect();
            let msg: Vec<f64> = own.iter().map(|o| o.1).collect();
            let rho_a: Vec<f64> = own.iter().map(|o| o.0).collect();
            let in_a: Vec<f64> = own.iter().map(|o| o.2 as f64).collect();
            let build = |o: &[(usize, f64, u32)], phi_b: f64| {
                let mut sh = Shared::new(vec![1.0; 8]);
                let a = sh.insert(active(&links, &msg, &rho_a, &in_a, phi_a));
                let mut b_links: Vec<(u32, f64, f64)> = Vec::new();
                for &(l, r, k) in o {
                    let l = (l % n) as u32;
                    if !b_links.iter().any(|x| x.0 == l) {
                        b_links.push((l, r, k as f64));
                    }
                }
                b_links.sort_by_key(|x| x.0);
                let mut slots = vec![a];
                if !b_links.is_empty() {
                    let bl: Vec<u32> = b_links.iter().map(|x| x.0).collect();
                    let br: Vec<f64> = b_links.iter().map(|x| x.1).collect();
                    let bk: Vec<f64> = b_links.iter().map(|x| x.2).collect();
                    slots.push(sh.insert(active(&bl, &vec![1.0 / bl.len() as f64; bl.len()], &br, &bk, phi_b)));
                }
                sh.update_waits(&slots);
                sh.get(a).wait
            };
            let w = build(&other, phi_b);
            prop_assert!(w >= 0.0);
            if other.is_empty() {
                prop_assert_eq!(w, 0.0);
            }
            // more load, more input ports, a higher duty cycle: never less wait
            let mut more = other.clone();
            if !more.is_empty() {
                let k = bump.0 % more.len();
                more[k].1 = (more[k].1 + bump.1).min(1.0);
                more[k].2 += bump.3;
            }
            prop_assert!(build(&more, phi_b) >= w - 1e-12);
            prop_assert!(build(&other, (phi_b + bump.2).min(1.0)) >= w - 1e-12);
        }

        #[test]
        fn md1_is_nonnegative_bounded_and_monotone(a in 0.0f64..1.2, b in 0.0f64..1.2, k in 0.0f64..50.0, dk in 0.0f64..10.0) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let w = md1_wait(lo, k);
            prop_assert!(w >= 0.0 && w <= k);
            prop_assert!(md1_wait(hi, k) >= w);
            prop_assert!(md1_wait(lo, k + dk) >= w);
        }
    }
}

//! `capped`: `isolated`'s tiers with a cap on sharing instead of a ban: at most `leaf_cap`
//! (k) running jobs spanning leaves on any leaf, and at most `pod_cap` (m) running jobs
//! spanning pods in any pod. With k = m = 1 it is exactly `isolated` (same placements,
//! same schedules); larger caps relax isolation step by step, so the cost of isolation
//! (waiting, idle nodes) and what it buys (no shared inter-switch links) can be traded
//! continuously, as production sites do when they cap cross-switch jobs per switch.
//!
//! *What it does*: a job's tier is `isolated`'s: T1 (N <= K, the largest leaf) on one
//! leaf, T2 (N <= p, the largest pod) on one pod, T3 across pods. T1 jobs go anywhere a
//! leaf has room (they use no uplink). A T2 or T3 job may use a leaf only while fewer than
//! k jobs spanning leaves hold a node of it; a T3 job may use a pod only while fewer than
//! m jobs spanning pods hold a node in it. So at every instant every leaf hosts at most k
//! leaf-spanning jobs and every pod at most m pod-spanning jobs (its uplinks are shared by
//! at most k, resp. m, jobs). Span never grows.
//! *Orders*: `isolated`'s defaults (`--leaf-order flux-topo`, `--tie-break name`).
//! *Reservations* (node sets, not fungible: whether a job fits depends on which leaves
//! and pods hold the free nodes): a reservation spanning leaves counts as one more
//! leaf-spanning job on each leaf it touches, one spanning pods as one more pod-spanning
//! job in each pod, for every job that would still run when it starts.
//! *When to use*: to find how much isolation a workload needs: sweep k and m (`[run]
//! leaf_cap = [1, 2, 4]` in a sweep) between `isolated` (k = m = 1) and no isolation.
//! *Cost*: `isolated`'s: O(leaves + log) per selection, O(leaves) per feasibility test.
//! *Reference*: this project (issue 18); the rule generalises Pollard et al. (SC18).

use super::tiers::{LeafOrder, TieBreak, Tiered};
use super::{AllocEntry, Allocator, Guard, Tracker};
use crate::options::{parse_options, schema_of};
use crate::state::ClusterState;
use crate::topology::Topology;

/// Options of `capped`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CappedOptions {
    /// Most running jobs spanning leaves that may share a leaf (k >= 1; 1 is isolated's rule).
    #[schemars(range(min = 1))]
    pub leaf_cap: u32,
    /// Most running jobs spanning pods that may share a pod (m >= 1; 1 is isolated's rule).
    #[schemars(range(min = 1))]
    pub pod_cap: u32,
}

impl Default for CappedOptions {
    fn default() -> CappedOptions {
        CappedOptions { leaf_cap: 2, pod_cap: 1 }
    }
}

impl CappedOptions {
    /// Both caps at least 1, or an error naming the option.
    pub fn check(self) -> Result<CappedOptions, String> {
        for (name, value) in [("leaf_cap", self.leaf_cap), ("pod_cap", self.pod_cap)] {
            if value == 0 {
                return Err(format!(
                    "capped: {name} must be at least 1 (1 keeps isolated's rule, larger values let that many spanning jobs share), got 0"
                ));
            }
        }
        Ok(self)
    }
}

pub static POLICY: AllocEntry = AllocEntry {
    name: "capped",
    summary: "isolated's tiers with at most leaf_cap leaf-spanning jobs per leaf and pod_cap pod-spanning jobs per pod (1 and 1 is isolated)",
    fungible: false,
    topology_aware: true,
    options: schema_of::<CappedOptions>,
    build: |o| Ok(Box::new(Capped::new(parse_options::<CappedOptions>("capped", o)?.check()?))),
};

/// Tiered placement with caps on how many spanning jobs share a leaf and a pod.
#[derive(Clone, Debug)]
pub struct Capped(Tiered);

impl Capped {
    /// Panics on a cap of 0 ([`CappedOptions::check`] says why first).
    pub fn new(opts: CappedOptions) -> Capped {
        Capped(Tiered::new(opts.leaf_cap, opts.pod_cap, LeafOrder::default(), TieBreak::default()))
    }
}

impl Allocator for Capped {
    fn name(&self) -> String {
        "capped".into()
    }
    fn fungible(&self) -> bool {
        false
    }
    fn tracker(&self, topo: &Topology) -> Option<Box<dyn Tracker>> {
        self.0.tracker(topo)
    }
    fn check_fits_ever(&self, topo: &Topology, empty: &ClusterState, nodes: u32) -> Result<(), String> {
        self.0.check_fits_ever(topo, empty, nodes)
    }
    fn select(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        self.0.select(topo, state, nodes, guard)
    }
    fn feasible(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> bool {
        self.0.feasible(topo, state, nodes, guard)
    }
    /// As `isolated`'s: the caps do not depend on the job's size.
    fn monotone_class(&self, topo: &Topology, nodes: u32) -> Option<u8> {
        self.0.monotone_class(topo, nodes)
    }
    /// As `isolated`'s: a job ending only raises availability and lowers the counts the
    /// caps are compared with.
    fn release_monotone(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::isolated::{Isolated, SpanCounts};
    use crate::alloc::test_util::place_in_turn;
    use crate::alloc::{new_state, Reserved};
    use crate::topology::SpanClass;

    fn capped(k: u32, m: u32) -> Capped {
        Capped::new(CappedOptions { leaf_cap: k, pod_cap: m })
    }

    /// Place jobs one after another; None for a refusal. Checks `feasible` against `select`
    /// and the tracked counts against a recount at every step.
    fn place(topo: &Topology, a: &mut dyn Allocator, pre: &[Vec<u32>], sizes: &[u32]) -> Vec<Option<Vec<u32>>> {
        place_in_turn(topo, a, pre, sizes, |s| assert_eq!(s.tracked::<SpanCounts>(), Some(&SpanCounts::of_state(topo, s))))
    }

    fn r(v: &[u32]) -> Option<Vec<u32>> {
        Some(v.to_vec())
    }

    #[test]
    fn caps_of_one_are_isolated_on_the_briefs_examples() {
        let t = Topology::preset("toy18").unwrap();
        for sizes in [&[2u32, 5, 3, 10, 1, 4][..], &[10, 5, 2, 1], &[10, 8, 2], &[5, 12], &[10, 3, 10], &[5, 5, 4, 4, 2, 9]] {
            let iso = place(&t, &mut Isolated::default(), &[], sizes);
            assert_eq!(place(&t, &mut capped(1, 1), &[], sizes), iso, "{sizes:?}");
        }
    }

    #[test]
    fn two_t2_jobs_may_share_a_leaf_with_leaf_cap_2() {
        // toy18: 2 pods x 3 leaves x 3 nodes (K = 3, p = 9). A (5) takes leaf 2 and two
        // nodes of leaf 1; B (5) the same in pod 1. C (4) needs the last node of leaf 1 (or
        // leaf 4), which a leaf-spanning job already uses: refused by isolated, placed
        // with k = 2; D (4) likewise in pod 1.
        let t = Topology::preset("toy18").unwrap();
        let a = [3, 4, 6, 7, 8];
        let b = [12, 13, 15, 16, 17];
        assert_eq!(place(&t, &mut capped(1, 1), &[], &[5, 5, 4, 4]), vec![r(&a), r(&b), None, None]);
        assert_eq!(place(&t, &mut capped(2, 1), &[], &[5, 5, 4, 4]), vec![r(&a), r(&b), r(&[0, 1, 2, 5]), r(&[9, 10, 11, 14])]);
    }

    #[test]
    fn a_leaf_with_k_spanning_jobs_is_closed() {
        // Leaves 0 and 1 each host two T2 jobs (X = {0, 3}, Y = {1, 4}); pod 1 is full of
        // T1 jobs. A T2 job of 4 finds 5 free nodes in pod 0, but with k = 2 only leaf 2's
        // 3 are open to it; with k = 3 leaves 0 and 1 are open too (most available first:
        // leaf 2, then leaf 1 before leaf 0 by the descending name order).
        let t = Topology::preset("toy18").unwrap();
        let pre = vec![vec![0, 3], vec![1, 4], vec![9, 10, 11], vec![12, 13, 14], vec![15, 16, 17]];
        assert_eq!(place(&t, &mut capped(2, 1), &pre, &[4, 3]), vec![None, r(&[6, 7, 8])]);
        let got = place(&t, &mut capped(3, 1), &pre, &[4]);
        assert_eq!(got, vec![r(&[5, 6, 7, 8])]);
        // T1 jobs are not capped: a 1-node job still gets leaf 0's free node
        assert_eq!(place(&t, &mut capped(2, 1), &pre, &[1]), vec![r(&[2])]);
    }

    #[test]
    fn pod_cap_lets_t3_jobs_share_a_pod() {
        // 3 pods x 2 leaves x 2 nodes (K = 2, p = 4). T3 job A (5) spans two pods; with
        // m = 1 a second T3 job of 5 finds one open pod (4 nodes): refused. With m = 2 it
        // may share A's pod that has room (k = 1 still keeps it off A's leaves).
        let t = Topology::fat_tree("t", 2, 2, 3, None, None).unwrap();
        let one = place(&t, &mut capped(1, 1), &[], &[5, 5]);
        assert!(one[0].is_some() && one[1].is_none(), "{one:?}");
        let two = place(&t, &mut capped(1, 2), &[], &[5, 5]);
        let (a, b) = (two[0].clone().unwrap(), two[1].clone().unwrap());
        assert_eq!(a, one[0].clone().unwrap());
        let pods = |v: &[u32]| v.iter().map(|&n| t.pod_of(n)).collect::<std::collections::BTreeSet<_>>();
        assert!(pods(&a).intersection(&pods(&b)).count() == 1, "{a:?} {b:?}");
        let leaves = |v: &[u32]| v.iter().map(|&n| t.leaf_of(n)).collect::<std::collections::BTreeSet<_>>();
        assert!(leaves(&a).is_disjoint(&leaves(&b)), "k = 1: no shared leaf");
        // a third one finds every pod with two T3 jobs or full
        assert_eq!(place(&t, &mut capped(2, 2), &[], &[5, 5, 2]).len(), 3);
    }

    #[test]
    fn a_reservation_counts_as_one_more_spanning_job() {
        // X = {0, 3} spans leaves 0 and 1; pod 1 is held by one T2 job. A reservation of
        // {5, 8} spans leaves 1 and 2. For a job that would overlap it, with k = 2, leaf 1
        // (X and the reservation) is at its cap; leaves 0 (X) and 2 (the reservation) are
        // not. Free and not reserved: 1, 2 (leaf 0), 4 (leaf 1), 6, 7 (leaf 2).
        let t = Topology::preset("toy18").unwrap();
        let mut a = capped(2, 1);
        let mut s = new_state(&a, &t, &[]);
        s.allocate(&t, 0, &[0, 3], SpanClass::Pod);
        let pod1: Vec<u32> = (9..18).collect();
        s.allocate(&t, 1, &pod1, SpanClass::Pod);
        let reserved = [Reserved { nodes: &[5, 8], class: SpanClass::Pod, stamp: 0 }];
        let mut ex = crate::state::NodeSet::new(18);
        ex.insert(5);
        ex.insert(8);
        let g = Guard { excluded: Some(&ex), reserved: &reserved, ..Guard::NONE };
        let got = a.select(&t, &s, 4, &g).map(|mut v| {
            v.sort_unstable();
            v
        });
        assert_eq!(got, r(&[1, 2, 6, 7]));
        assert!(a.select(&t, &s, 5, &g).is_none(), "leaf 1 (X and the reservation) is closed");
        assert!(a.feasible(&t, &s, 4, &g) && !a.feasible(&t, &s, 5, &g));
    }

    #[test]
    fn options_are_checked() {
        let mut o = crate::options::Options::new();
        o.insert("leaf_cap".into(), 0.into());
        let err = (POLICY.build)(&o).err().unwrap();
        assert!(err.contains("leaf_cap must be at least 1"), "{err}");
        o.insert("leaf_cap".into(), 3.into());
        o.insert("pod_cap".into(), 0.into());
        assert!((POLICY.build)(&o).err().unwrap().contains("pod_cap must be at least 1"));
        o.insert("pod_cap".into(), (-1).into());
        assert!((POLICY.build)(&o).err().unwrap().starts_with("capped:"));
        o.insert("pod_cap".into(), 2.into());
        assert!((POLICY.build)(&o).is_ok());
        let schema = (POLICY.options)();
        let props = &schema.as_object().unwrap()["properties"];
        assert_eq!(props["leaf_cap"]["minimum"], 1);
        assert_eq!(props["pod_cap"]["default"], 1);
    }
}

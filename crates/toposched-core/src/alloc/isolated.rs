//! `isolated`: the interference-free T1/T2/T3 policy of Pollard et al. (SC18), as the brief
//! (§2.3–2.5, §7) specifies it.
//!
//! *What it does*: classifies a job by its node count N against the fabric's nominal leaf
//! size K and pod size p: T1 (N <= K) stays on one leaf, T2 (N <= p) on one pod, T3 spans
//! pods. A leaf holding any T2/T3 node is closed to other T2/T3 jobs; a pod holding any T3
//! node is closed to other T3 jobs; T1 jobs go anywhere a leaf has room. So no two running
//! jobs can share an inter-switch link (invariants I1 and I2, brief §2.10). Span never
//! grows: a T1 job never spans leaves, a T2 job never spans pods.
//! *Orders* (they are part of the specification):
//! T1: least-available pod, then least-available leaf. T2: least-available pod, then
//! most-available leaves. T3: most-available pods; leaves least-available first in the
//! published code (`LeafOrder::FluxTopo`, default, for reproduction) or most-available first
//! as the paper's text says (`LeafOrder::Paper`). Ties go by name (`TieBreak::Name`; a
//! descending sort reverses name order too, as the code's strcmp keys do) or by index
//! (`TieBreak::Index`, ascending in both sorts).
//! *Reservations* (node sets): a job that would still run when a reservation starts may
//! not take its nodes, nor, if the reservation spans leaves, leaves it touches (if it
//! spans pods, pods it touches) unless the job stays on one leaf (one pod).
//! *State*: the spanning jobs per leaf and per pod are [`SpanCounts`], a tracker the
//! policy installs in the machine state (`Allocator::tracker`). The placement is
//! `alloc::tiers::Tiered` with both caps 1, shared with `capped`.
//! *When to use*: to measure what isolating jobs costs in waiting and utilization.
//! *Cost*: what a (state, guard) pair gives is kept (`alloc::tiers`' views): a question
//! about a state and guard already seen is O(1) when the job does not fit; after a change
//! of the state, O(leaves the change touched); a selection that succeeds is O(leaves +
//! nodes taken). A new guard or state costs O(leaves) once.
//! *Reference*: Pollard, Jain, Herbein, Bhatele, SC18; sampollard/flux-sched@668c0dc
//! `sched/sched_topo.c`.

use super::tiers::Tiered;
pub use super::tiers::{tier, LeafOrder, SpanCounts, TieBreak};
use super::{AllocEntry, Allocator, Guard, Tracker};
use crate::options::{parse_options, schema_of};
use crate::state::ClusterState;
use crate::topology::Topology;

/// Options of `isolated`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct IsolatedOptions {
    /// T3 leaf order inside a pod: flux-topo (least-available first, the published code) or
    /// paper (most-available first, as the paper's text says).
    pub leaf_order: LeafOrder,
    /// How equal availabilities are ordered: by switch name (the published code) or by index.
    pub tie_break: TieBreak,
}

pub static POLICY: AllocEntry = AllocEntry {
    name: "isolated",
    summary: "interference-free T1/T2/T3 placement of Pollard et al. (SC18): no two jobs share an inter-switch link",
    fungible: false,
    topology_aware: true,
    options: schema_of::<IsolatedOptions>,
    build: |o| Ok(Box::new(Isolated::new(parse_options("isolated", o)?))),
};

/// The interference-free allocator: tiered placement with at most one spanning job per
/// leaf and per pod.
#[derive(Clone, Debug)]
pub struct Isolated(Tiered);

impl Isolated {
    pub fn new(opts: IsolatedOptions) -> Isolated {
        Isolated(Tiered::new(1, 1, opts.leaf_order, opts.tie_break))
    }
}

impl Default for Isolated {
    fn default() -> Isolated {
        Isolated::new(IsolatedOptions::default())
    }
}

impl Allocator for Isolated {
    fn name(&self) -> String {
        "isolated".into()
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
    fn monotone_class(&self, topo: &Topology, nodes: u32) -> Option<u8> {
        self.0.monotone_class(topo, nodes)
    }
    /// A job ending frees nodes (every leaf's and pod's availability only grows) and
    /// lowers the spanning counts (leaves and pods only open): each tier's threshold only
    /// grows. The answer reads the state and the guard's nodes only.
    fn release_monotone(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    //! The brief's worked examples E1–E7 (§3), node ids 0-based on the toy tree.
    use super::*;
    use crate::topology::SpanClass;

    fn toy() -> Topology {
        Topology::preset("toy18").unwrap()
    }

    /// Place jobs one after another on an empty machine; None for a failure.
    fn place(topo: &Topology, opts: IsolatedOptions, down: &[u32], sizes: &[u32]) -> Vec<Option<Vec<u32>>> {
        let mut a = Isolated::new(opts);
        let mut s = crate::alloc::new_state(&a, topo, down);
        sizes
            .iter()
            .enumerate()
            .map(|(j, &n)| {
                let got = a.select(topo, &s, n, &Guard::NONE);
                assert_eq!(got.is_some(), a.feasible(topo, &s, n, &Guard::NONE), "feasible disagrees for job {j}");
                if let Some(nodes) = &got {
                    let mut sorted = nodes.clone();
                    sorted.sort_unstable();
                    s.allocate(topo, j as u32, &sorted, topo.span_class(&sorted));
                    assert_eq!(s.tracked::<SpanCounts>(), Some(&SpanCounts::of_state(topo, &s)), "tracked counts drift");
                }
                got.map(|mut v| {
                    v.sort_unstable();
                    v
                })
            })
            .collect()
    }

    fn r(v: &[u32]) -> Option<Vec<u32>> {
        Some(v.to_vec())
    }

    #[test]
    fn e1_thresholds() {
        let t = toy();
        assert_eq!([3, 4, 9, 10, 18].map(|n| tier(&t, n).number()), [1, 2, 2, 3, 3]);
        let empty = ClusterState::new(&t, &[]);
        assert!(Isolated::default().check_fits_ever(&t, &empty, 18).is_ok());
        assert!(Isolated::default().check_fits_ever(&t, &empty, 19).is_err());
    }

    #[test]
    fn e2_arrivals_on_an_empty_machine() {
        let got = place(&toy(), IsolatedOptions::default(), &[], &[2, 5, 3, 10, 1, 4]);
        assert_eq!(
            got,
            vec![r(&[0, 1]), r(&[3, 4, 6, 7, 8]), r(&[9, 10, 11]), None, r(&[2]), r(&[12, 15, 16, 17])]
        );
    }

    #[test]
    fn e3_fig3_allocation_both_profiles() {
        let got = place(&toy(), IsolatedOptions::default(), &[], &[10, 5, 2, 1]);
        let blue: Vec<u32> = std::iter::once(0).chain(9..18).collect();
        assert_eq!(got, vec![Some(blue), r(&[3, 4, 6, 7, 8]), r(&[1, 2]), r(&[5])]);
        let paper = IsolatedOptions { leaf_order: LeafOrder::Paper, tie_break: TieBreak::Name };
        let got = place(&toy(), paper, &[], &[10, 5, 2, 1]);
        let blue: Vec<u32> = std::iter::once(6).chain(9..18).collect();
        assert_eq!(got, vec![Some(blue), r(&[0, 1, 3, 4, 5]), r(&[7, 8]), r(&[2])]);
    }

    #[test]
    fn e4_t3_blocks_a_t2_job() {
        let got = place(&toy(), IsolatedOptions::default(), &[], &[10, 8, 2]);
        let x: Vec<u32> = std::iter::once(0).chain(9..18).collect();
        assert_eq!(got, vec![Some(x), None, r(&[1, 2])]);
    }

    #[test]
    fn e5_t2_and_t3_share_a_pod() {
        for opts in [IsolatedOptions::default(), IsolatedOptions { leaf_order: LeafOrder::Paper, tie_break: TieBreak::Name }] {
            let got = place(&toy(), opts, &[], &[5, 12]);
            let y: Vec<u32> = [0, 1, 2].into_iter().chain(9..18).collect();
            assert_eq!(got, vec![r(&[3, 4, 6, 7, 8]), Some(y)]);
        }
    }

    #[test]
    fn e6_second_t3_refused() {
        let got = place(&toy(), IsolatedOptions::default(), &[], &[10, 3, 10]);
        assert_eq!(got[1], r(&[3, 4, 5]));
        assert_eq!(got[2], None);
    }

    #[test]
    fn e7_drained_node() {
        let t = toy();
        let got = place(&t, IsolatedOptions::default(), &[4], &[3, 3, 9, 3]);
        let c: Vec<u32> = (9..18).collect();
        assert_eq!(got, vec![r(&[0, 1, 2]), r(&[6, 7, 8]), Some(c), None]);
    }

    #[test]
    fn guard_excludes_nodes_and_closes_leaves() {
        let t = toy();
        let s = ClusterState::new(&t, &[]);
        let mut ex = crate::state::NodeSet::new(18);
        for n in 0..9 {
            ex.insert(n);
        }
        let g = Guard { excluded: Some(&ex), ..Guard::NONE };
        let mut a = Isolated::default();
        let got = a.select(&t, &s, 3, &g).unwrap();
        assert!(got.iter().all(|&n| n >= 9));
        // a reservation spanning the leaves of pod 1 closes them to spanning jobs
        let reserved = [crate::alloc::Reserved { nodes: &[9, 12, 15], class: SpanClass::Pod, stamp: 0 }];
        let g = Guard { reserved: &reserved, ..Guard::NONE };
        let got = a.select(&t, &s, 5, &g).unwrap();
        assert!(got.iter().all(|&n| n < 9));
        let got = a.select(&t, &s, 9, &g);
        assert!(got.is_some());
        assert!(a.select(&t, &s, 12, &g).is_none());
        // T1 jobs ignore closed leaves (pod 0 excluded: only the closed leaves have room)
        let g1 = Guard { excluded: Some(&ex), reserved: &reserved, ..Guard::NONE };
        assert!(a.select(&t, &s, 3, &g1).unwrap().iter().all(|&n| n >= 9));
        assert!(a.select(&t, &s, 4, &g1).is_none());
        // the same reservation on one leaf (T1) closes nothing
        let one_leaf = [crate::alloc::Reserved { nodes: &[9, 10, 11], class: SpanClass::Leaf, stamp: 0 }];
        assert!(a.select(&t, &s, 12, &Guard { reserved: &one_leaf, ..Guard::NONE }).is_some());
        // spanning pods, it closes its pods to T3 jobs, and its leaves to T2/T3 jobs
        let pods = [crate::alloc::Reserved { nodes: &[0, 9], class: SpanClass::Pods, stamp: 0 }];
        let g = Guard { reserved: &pods, ..Guard::NONE };
        assert!(a.select(&t, &s, 10, &g).is_none());
        assert_eq!(a.select(&t, &s, 6, &g).map(|mut v| { v.sort_unstable(); v }), Some(vec![3, 4, 5, 6, 7, 8]));
    }

    #[test]
    fn a_state_without_the_tracker_is_counted_from_scratch() {
        let t = toy();
        let mut a = Isolated::default();
        let mut tracked = crate::alloc::new_state(&a, &t, &[]);
        let mut bare = ClusterState::new(&t, &[]);
        for (job, n) in [(0u32, 5u32), (1, 2), (2, 10), (3, 4)] {
            let x = a.select(&t, &tracked, n, &Guard::NONE);
            assert_eq!(x, a.select(&t, &bare, n, &Guard::NONE), "job {job}");
            if let Some(mut x) = x {
                x.sort_unstable();
                tracked.allocate(&t, job, &x, t.span_class(&x));
                bare.allocate(&t, job, &x, t.span_class(&x));
            }
        }
    }

    #[test]
    fn index_tie_break_prefers_low_indices_in_descending_sorts() {
        let opts = IsolatedOptions { leaf_order: LeafOrder::FluxTopo, tie_break: TieBreak::Index };
        let got = place(&toy(), opts, &[], &[10]);
        let x: Vec<u32> = (0..9).chain(std::iter::once(9)).collect();
        assert_eq!(got, vec![Some(x)]);
    }
}

//! `slurm-tree`: Slurm's `topology/tree` node selection, as the brief (§4.2–4.3) reads it
//! from the Slurm sources, with the fabric's leaves, pods and (with several pods) a root
//! as Slurm's switch tree.
//!
//! *What it does*, profile `current` (Slurm 21.08 and later, `eval_nodes_tree.c`): start
//! from the highest switch with enough usable nodes; then repeatedly pick a leaf: one that
//! alone holds the remainder, the tightest such (fewest usable nodes); otherwise the leaf
//! inside the smallest ancestor subtree that holds the remainder, most usable first; a leaf
//! closer (in switch hops) to the leaves already chosen wins when it holds the remainder.
//! All usable nodes of the chosen leaf are taken (lowest ids first) until the job is
//! satisfied. Profile `classic` (17.02 `_eval_nodes_topo`): the lowest-level switch with
//! enough usable nodes, fewest usable on ties (first index); inside it, repeatedly the
//! leaf with the fewest usable nodes that holds the remainder, else the leaf with the most.
//! Profile `cons-tres` (Slurm 22.05 `select/cons_tres` `_eval_nodes_topo`): as `current`, but
//! the pod counts stay those of the start and a closer leaf wins when not ranked worse.
//! Profile `select-linear` (Slurm 22.05 `select/linear`, `_job_test_topo`, the plugin of
//! whole-node sites): the same lowest-level best-fit switch; inside it, repeatedly the leaf
//! with the fewest usable nodes (first index on ties), whether or not it holds the
//! remainder ("more leaf switches, better bandwidth", says its comment), all of its usable
//! nodes taken.
//! *When to use*: to replay what a Slurm site with a tree `topology.conf` would do.
//! *Cost*: O(leaves² · levels) per selection in the current profile, O(leaves) classic.
//! *Reference*: SchedMD/slurm `src/plugins/topology/tree/eval_nodes_tree.c` (25.11,
//! fdcff640a9b2), `select/cons_res/job_test.c` (slurm-17-02-0-1) and
//! `select/linear/select_linear.c` `_job_test_topo` phases 3-5 (slurm-22-05-8-1, the
//! version Debian 12 ships).
//!
//! Nodes are fungible for this policy (any N free nodes can be placed), so queue policies
//! reserve counts. Node weights are not modelled (all equal).

use super::{AllocEntry, Allocator, Guard, fits_in_machine};
use crate::options::{parse_options, schema_of};
use crate::state::ClusterState;
use crate::topology::Topology;

/// Which Slurm generation's leaf choice to follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SlurmProfile {
    /// 21.08 and later (`_eval_nodes_topo` with `_topo_compare`-style climbing).
    #[default]
    Current,
    /// 17.02 (the "smallest sub-tree, then best fit" that the SC18 paper cites).
    Classic,
    /// 22.05 `select/linear` (whole nodes): fewest-usable leaf first inside the best fit.
    SelectLinear,
    /// 22.05 `select/cons_tres` (`_eval_nodes_topo`): like `current`, but switch counts
    /// above the leaves stay what they were when the selection began, and a closer leaf
    /// wins whenever it is not worse (Slurm's `_topo_compare_switches(..) >= 0`).
    ConsTres,
}

impl SlurmProfile {
    pub const NAMES: &'static [&'static str] = &["current", "classic", "select-linear", "cons-tres"];

    pub fn by_name(name: &str) -> Option<SlurmProfile> {
        match name {
            "current" => Some(SlurmProfile::Current),
            "classic" => Some(SlurmProfile::Classic),
            "select-linear" => Some(SlurmProfile::SelectLinear),
            "cons-tres" => Some(SlurmProfile::ConsTres),
            _ => None,
        }
    }
}

/// Options of `slurm-tree`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SlurmTreeOptions {
    /// Leaf choice of Slurm 21.08+ select/cons_tres (current), 17.02 (classic), 22.05
    /// select/linear (select-linear) or 22.05 select/cons_tres (cons-tres).
    pub slurm_profile: SlurmProfile,
}

pub static POLICY: AllocEntry = AllocEntry {
    name: "slurm-tree",
    summary: "Slurm's topology/tree node selection (best-fit switch, then leaves), in three Slurm generations",
    fungible: true,
    topology_aware: true,
    options: schema_of::<SlurmTreeOptions>,
    build: |o| Ok(Box::new(SlurmTree::new(parse_options::<SlurmTreeOptions>("slurm-tree", o)?.slurm_profile))),
};

#[derive(Clone, Debug, Default)]
pub struct SlurmTree {
    profile: SlurmProfile,
    leaf_usable: Vec<u32>,
    pod_usable: Vec<u32>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pick {
    First,
    Second,
    Undecided,
}

impl SlurmTree {
    pub fn new(profile: SlurmProfile) -> SlurmTree {
        SlurmTree { profile, ..Default::default() }
    }

    fn usable(&mut self, topo: &Topology, state: &ClusterState, guard: &Guard) {
        self.leaf_usable.clear();
        match guard.excluded {
            None => self.leaf_usable.extend((0..topo.n_leaves() as u32).map(|l| state.leaf_free(l))),
            Some(ex) => self.leaf_usable.extend(
                (0..topo.n_leaves() as u32)
                    .map(|l| state.free_set().count_range_minus(topo.leaf_nodes(l), ex)),
            ),
        }
        self.pod_usable.clear();
        for p in 0..topo.n_pods() as u32 {
            let sum = topo.pod_leaves(p).map(|l| self.leaf_usable[l as usize]).sum();
            self.pod_usable.push(sum);
        }
    }

    fn take(topo: &Topology, state: &ClusterState, guard: &Guard, leaf: u32, m: u32, out: &mut Vec<u32>) {
        out.extend(state.free_set().iter_range(topo.leaf_nodes(leaf)).filter(|&n| !guard.excludes(n)).take(m as usize));
    }

    /// Slurm's leaf comparison, climbing from two leaves towards the root. Returns the
    /// preference and whether the first leaf's subtree "fits" at the level the comparison
    /// was decided (Slurm uses that flag for the hop-distance rule).
    fn compare(&self, topo: &Topology, a: u32, b: u32, rem: u32) -> (Pick, bool) {
        // Level 0: the leaves themselves; level 1: their pods.
        let (mut ua, mut ub) = (self.leaf_usable[a as usize], self.leaf_usable[b as usize]);
        let (pa, pb) = (topo.pod_of_leaf(a), topo.pod_of_leaf(b));
        let mut level = 0;
        loop {
            let (fa, fb) = (ua >= rem, ub >= rem);
            if fa && fb {
                return match ua.cmp(&ub) {
                    std::cmp::Ordering::Less => (Pick::First, true),
                    std::cmp::Ordering::Greater => (Pick::Second, true),
                    std::cmp::Ordering::Equal => (Pick::Undecided, true),
                };
            }
            if fa != fb {
                return (if fa { Pick::First } else { Pick::Second }, fa);
            }
            if level == 0 && pa != pb {
                ua = self.pod_usable[pa as usize];
                ub = self.pod_usable[pb as usize];
                level = 1;
                continue;
            }
            // Neither subtree fits at this level: more usable nodes wins.
            return match ua.cmp(&ub) {
                std::cmp::Ordering::Greater => (Pick::First, false),
                std::cmp::Ordering::Less => (Pick::Second, false),
                std::cmp::Ordering::Equal => (Pick::Undecided, false),
            };
        }
    }

    /// The leaves under the highest switch with enough usable nodes (current and 22.05
    /// cons_tres): the root when there are several pods (it holds every leaf), else the last
    /// pod that has enough.
    fn top_switch_leaves(&self, topo: &Topology, nodes: u32) -> Option<Vec<u32>> {
        let total: u32 = self.pod_usable.iter().sum();
        if topo.n_pods() > 1 && total >= nodes {
            return Some((0..topo.n_leaves() as u32).collect());
        }
        let pod = (0..topo.n_pods() as u32).rev().find(|&p| self.pod_usable[p as usize] >= nodes)?;
        Some(topo.pod_leaves(pod).collect())
    }

    fn select_current(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        let leaves = self.top_switch_leaves(topo, nodes)?;
        let mut dist = vec![0u32; topo.n_leaves()];
        let mut chosen = Vec::with_capacity(nodes as usize);
        while (chosen.len() as u32) < nodes {
            let rem = nodes - chosen.len() as u32;
            let mut best: Option<u32> = None;
            for &i in &leaves {
                if self.leaf_usable[i as usize] == 0 {
                    continue;
                }
                let Some(b) = best else {
                    best = Some(i);
                    continue;
                };
                let (pick, fits) = self.compare(topo, i, b, rem);
                let (di, db) = (dist[i as usize], dist[b as usize]);
                if (di < db && fits) || (di == db && pick == Pick::First) {
                    best = Some(i);
                }
            }
            let leaf = best?;
            let take = self.leaf_usable[leaf as usize].min(rem);
            Self::take(topo, state, guard, leaf, take, &mut chosen);
            self.leaf_usable[leaf as usize] -= take;
            self.pod_usable[topo.pod_of_leaf(leaf) as usize] -= take;
            let pod = topo.pod_of_leaf(leaf);
            for &l in &leaves {
                dist[l as usize] += if l == leaf {
                    0
                } else if topo.pod_of_leaf(l) == pod {
                    2
                } else {
                    4
                };
            }
        }
        Some(chosen)
    }

    /// Phase 3 of both the classic and the select/linear profiles: the leaves under the
    /// lowest-level switch with enough usable nodes (fewest usable, then first index).
    fn best_fit_leaves(&self, topo: &Topology, nodes: u32) -> Option<Vec<u32>> {
        let fewest = |it: &mut dyn Iterator<Item = (u32, u32)>| it.filter(|&(_, u)| u >= nodes).min_by_key(|&(i, u)| (u, i)).map(|(i, _)| i);
        let leaves: Vec<u32> = if let Some(l) = fewest(&mut (0..topo.n_leaves() as u32).map(|l| (l, self.leaf_usable[l as usize]))) {
            vec![l]
        } else if let Some(p) = fewest(&mut (0..topo.n_pods() as u32).map(|p| (p, self.pod_usable[p as usize]))) {
            topo.pod_leaves(p).collect()
        } else if self.pod_usable.iter().sum::<u32>() >= nodes {
            (0..topo.n_leaves() as u32).collect()
        } else {
            return None;
        };
        Some(leaves)
    }

    fn select_classic(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        let leaves = self.best_fit_leaves(topo, nodes)?;
        let mut chosen = Vec::with_capacity(nodes as usize);
        while (chosen.len() as u32) < nodes {
            let rem = nodes - chosen.len() as u32;
            let usable = |l: &u32| self.leaf_usable[*l as usize];
            let leaf = leaves
                .iter()
                .copied()
                .filter(|l| usable(l) >= rem)
                .min_by_key(|l| (usable(l), *l))
                .or_else(|| leaves.iter().copied().filter(|l| usable(l) > 0).min_by_key(|l| (std::cmp::Reverse(usable(l)), *l)))?;
            let take = self.leaf_usable[leaf as usize].min(rem);
            Self::take(topo, state, guard, leaf, take, &mut chosen);
            self.leaf_usable[leaf as usize] -= take;
        }
        Some(chosen)
    }
}

impl SlurmTree {
    fn select_linear(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        let leaves = self.best_fit_leaves(topo, nodes)?;
        let mut chosen = Vec::with_capacity(nodes as usize);
        while (chosen.len() as u32) < nodes {
            let rem = nodes - chosen.len() as u32;
            // phase 5: the leaf with the fewest usable nodes, first index on ties
            let leaf = leaves.iter().copied().filter(|&l| self.leaf_usable[l as usize] > 0).min_by_key(|&l| (self.leaf_usable[l as usize], l))?;
            let take = self.leaf_usable[leaf as usize].min(rem);
            Self::take(topo, state, guard, leaf, take, &mut chosen);
            self.leaf_usable[leaf as usize] = 0; // used up, as Slurm marks it
        }
        Some(chosen)
    }
}

impl SlurmTree {
    /// Slurm 22.05 `_topo_compare_switches`: 1 when leaf `a` is the better choice for `rem`
    /// nodes, -1 when `b` is, 0 when equal. Climbs to the pods when neither leaf holds the
    /// remainder and they sit in different pods; pod counts are those at the start.
    fn compare_2205(&self, topo: &Topology, pod_start: &[u32], a: u32, b: u32, rem: u32) -> i32 {
        let (mut ca, mut cb) = (self.leaf_usable[a as usize], self.leaf_usable[b as usize]);
        let (pa, pb) = (topo.pod_of_leaf(a), topo.pod_of_leaf(b));
        for level in 0..2 {
            let (fa, fb) = (ca >= rem, cb >= rem);
            if fa && fb {
                return match ca.cmp(&cb) {
                    std::cmp::Ordering::Less => 1,
                    std::cmp::Ordering::Greater => -1,
                    std::cmp::Ordering::Equal => 0,
                };
            }
            if fa != fb {
                return if fa { 1 } else { -1 };
            }
            if level == 0 && pa != pb {
                ca = pod_start[pa as usize];
                cb = pod_start[pb as usize];
                continue;
            }
            break;
        }
        // neither fits: more nodes wins (same level here, so Slurm's level rule never decides)
        match ca.cmp(&cb) {
            std::cmp::Ordering::Greater => 1,
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Equal => 0,
        }
    }

    fn select_cons_tres(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        let leaves = self.top_switch_leaves(topo, nodes)?;
        let pod_start = self.pod_usable.clone();
        let mut dist = vec![0u32; topo.n_leaves()];
        let mut chosen = Vec::with_capacity(nodes as usize);
        while (chosen.len() as u32) < nodes {
            let rem = nodes - chosen.len() as u32;
            // `_topo_choose_best_switch`, leaves in index order
            let mut best: Option<u32> = None;
            for &i in &leaves {
                if self.leaf_usable[i as usize] == 0 {
                    continue;
                }
                let Some(b) = best else {
                    best = Some(i);
                    continue;
                };
                let tcs = self.compare_2205(topo, &pod_start, i, b, rem);
                let (di, db) = (dist[i as usize], dist[b as usize]);
                if (di < db && tcs >= 0) || (di == db && tcs > 0) {
                    best = Some(i);
                }
            }
            let leaf = best?;
            let take = self.leaf_usable[leaf as usize].min(rem);
            Self::take(topo, state, guard, leaf, take, &mut chosen);
            self.leaf_usable[leaf as usize] = 0; // "Used all"
            let pod = topo.pod_of_leaf(leaf);
            for &l in &leaves {
                dist[l as usize] += if l == leaf {
                    0
                } else if topo.pod_of_leaf(l) == pod {
                    2
                } else {
                    4
                };
            }
        }
        Some(chosen)
    }
}

impl Allocator for SlurmTree {
    fn name(&self) -> String {
        "slurm-tree".into()
    }
    fn fungible(&self) -> bool {
        true
    }
    fn check_fits_ever(&self, _topo: &Topology, empty: &ClusterState, nodes: u32) -> Result<(), String> {
        fits_in_machine(empty, nodes)
    }
    fn select(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        if nodes == 0 || nodes > state.n_free() {
            return None;
        }
        self.usable(topo, state, guard);
        match self.profile {
            SlurmProfile::Current => self.select_current(topo, state, nodes, guard),
            SlurmProfile::Classic => self.select_classic(topo, state, nodes, guard),
            SlurmProfile::SelectLinear => self.select_linear(topo, state, nodes, guard),
            SlurmProfile::ConsTres => self.select_cons_tres(topo, state, nodes, guard),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The brief's §4.3 worked example: toy tree, busy nodes 0, 6, 7, 9, 10, 11, 17.
    fn example() -> (Topology, ClusterState) {
        let t = Topology::preset("toy18").unwrap();
        let mut s = ClusterState::new(&t, &[]);
        for (j, n) in [0u32, 6, 7, 9, 10, 11, 17].into_iter().enumerate() {
            s.allocate(&t, j as u32, &[n], crate::topology::SpanClass::Leaf);
        }
        (t, s)
    }

    fn sorted(mut v: Vec<u32>) -> Vec<u32> {
        v.sort_unstable();
        v
    }

    #[test]
    fn brief_example_both_profiles() {
        let (t, s) = example();
        for profile in [SlurmProfile::Current, SlurmProfile::Classic] {
            let mut a = SlurmTree::new(profile);
            assert_eq!(sorted(a.select(&t, &s, 4, &Guard::NONE).unwrap()), vec![12, 13, 14, 15], "{profile:?} N=4");
            assert_eq!(sorted(a.select(&t, &s, 2, &Guard::NONE).unwrap()), vec![1, 2], "{profile:?} N=2");
            assert!(a.select(&t, &s, 12, &Guard::NONE).is_none());
            assert_eq!(a.select(&t, &s, 11, &Guard::NONE).unwrap().len(), 11);
        }
    }

    /// The FIFO stream of research/live-slurm.md (16 nodes, 4 leaves of 4, jobs of 3, 2, 5,
    /// 1 nodes, none ending) as a real Slurm 22.05 with select/linear placed it:
    /// n[01-03], n[05-06], n[04,07-10], n11 (ids here 0-based). The next two, 2 and 3
    /// nodes, follow from the code: n[13-14] (the only leaf holding 2), then n12 (fewest
    /// usable) and n[15-16].
    #[test]
    fn select_linear_reproduces_real_slurm_on_the_probe_stream() {
        let t = Topology::fat_tree("probe", 4, 4, 1, None, None).unwrap();
        let mut s = ClusterState::new(&t, &[]);
        let mut a = SlurmTree::new(SlurmProfile::SelectLinear);
        let expected: [&[u32]; 6] = [&[0, 1, 2], &[4, 5], &[3, 6, 7, 8, 9], &[10], &[12, 13], &[11, 14, 15]];
        for (j, want) in expected.iter().enumerate() {
            let got = sorted(a.select(&t, &s, want.len() as u32, &Guard::NONE).unwrap());
            assert_eq!(&got, want, "job {j}");
            let class = t.span_class(&got);
            s.allocate(&t, j as u32, &got, class);
        }
        // the current (cons_tres) profile keeps the 5-node job on two leaves instead
        let mut s = ClusterState::new(&t, &[]);
        let mut c = SlurmTree::new(SlurmProfile::Current);
        for (j, n) in [3u32, 2, 5].into_iter().enumerate() {
            let got = sorted(c.select(&t, &s, n, &Guard::NONE).unwrap());
            let class = t.span_class(&got);
            s.allocate(&t, j as u32, &got, class);
            if n == 5 {
                assert_eq!(got, vec![3, 8, 9, 10, 11]);
            }
        }
    }

    /// Two placements a real Slurm 22.05 with select/cons_tres made (validate-slurm, 32 nodes,
    /// 4 leaves of 8 in 2 pods): 23 nodes with leaf 1 busy went to n[00-06,16-31], and 17
    /// nodes with n[00-11] busy to n[12,16-31]. Both follow from the pod counts staying
    /// those of the start; `current` (which lowers them) differs on both.
    #[test]
    fn cons_tres_reproduces_real_slurm_2205() {
        let t = Topology::fat_tree("lab", 8, 2, 2, None, None).unwrap();
        let cases: [(&[u32], u32, Vec<u32>); 2] = [
            (&[8, 9, 10, 11, 12, 13, 14, 15], 23, (0..7).chain(16..32).collect()),
            (&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 17, std::iter::once(12).chain(16..32).collect()),
        ];
        for (busy, n, want) in cases {
            let mut s = ClusterState::new(&t, &[]);
            s.allocate(&t, 0, busy, t.span_class(busy));
            let got = sorted(SlurmTree::new(SlurmProfile::ConsTres).select(&t, &s, n, &Guard::NONE).unwrap());
            assert_eq!(got, want, "{n} nodes");
            let cur = sorted(SlurmTree::new(SlurmProfile::Current).select(&t, &s, n, &Guard::NONE).unwrap());
            assert_ne!(cur, want, "current differs from 22.05 here");
        }
    }

    #[test]
    fn classic_and_current_differ_on_the_first_leaf() {
        // pod0 free: 3+3+3 = 9; pod1 free: 3+1+0 = 4. N=5 needs two leaves.
        // classic: lowest-level switch that fits is a pod; fewest usable is pod1 (4)? no,
        // 4 < 5 does not fit, so pod0 (9): most usable leaf first (L0), then the tightest
        // leaf holding the remaining 2 (L1, first index) -> {0,1,2,3,4}.
        // current: the root; the leaf in the smallest subtree holding the remainder...
        let t = Topology::preset("toy18").unwrap();
        let mut s = ClusterState::new(&t, &[]);
        for (j, n) in [13u32, 14, 15, 16, 17].into_iter().enumerate() {
            s.allocate(&t, j as u32, &[n], crate::topology::SpanClass::Leaf);
        }
        let classic = sorted(SlurmTree::new(SlurmProfile::Classic).select(&t, &s, 5, &Guard::NONE).unwrap());
        assert_eq!(classic, vec![0, 1, 2, 3, 4]);
        let current = sorted(SlurmTree::new(SlurmProfile::Current).select(&t, &s, 5, &Guard::NONE).unwrap());
        assert_eq!(current.len(), 5);
        assert!(current.iter().all(|&n| t.pod_of(n) == 0), "current keeps the job in one pod: {current:?}");
    }
}

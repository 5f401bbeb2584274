//! `least-interference`: among a few candidate node sets, the one the network model
//! predicts to slow the job and the running jobs it shares links with the least.
//!
//! *Candidates* (at most `candidates` distinct node sets, generated in this order, each of
//! free nodes the guard does not exclude): `slurm-tree`'s placement (profile `current`:
//! the smallest subtree, then the tightest leaves); `tiers`' best fit without isolation
//! (T1: the fullest leaf that holds the job; T2: one pod; T3: across pods: SC18 orders);
//! `isolated`'s placement (when the running jobs let it place the job now); then, for
//! each pod that holds the job (quietest first: fewest running jobs spanning pods in it,
//! then fewest free nodes), its leaves quietest first (fewest running jobs spanning leaves
//! on them, then most free nodes); then the same over the whole machine (quiet leaves of
//! quiet pods first); then `linear`'s lowest free ids. The machine-wide one always holds
//! a job that fits in the free nodes, so the policy places a job exactly when `linear`
//! does: it is *fungible* (EASY reserves counts, and without the network model the
//! schedule is linear's: only the nodes differ).
//! *Objective*: the network model of the replay (`network::{routing, demand, share}`:
//! D-mod-k routes, fair-bottleneck sharing of the links between switches, duty-cycle
//! correction) holds the running jobs; a candidate is put on it, the jobs joined to it by
//! oversubscribed links are solved again, and its score is the increase of
//! `sum over jobs of nodes x (dilation - 1)` (dilation: whole-job slowdown over running
//! alone on its own nodes), i.e. the rate at which interference node-seconds accrue, its
//! own plus its neighbours' (a negative increase counts as 0). Lowest score wins; ties
//! (e.g. every candidate on a quiet network scores 0) go to the fewest inter-switch links
//! shared with running jobs, then the fewest leaves, then the fewest pods, then the
//! earliest candidate. A candidate on one leaf uses no link between switches: it scores 0
//! with nothing shared, and the first such candidate is taken without scoring the rest.
//! *Traffic*: an allocation policy does not see the replay's per-job traffic (it chooses
//! nodes for a node count), so the model assumes it: `assumed_traffic = bins` (default)
//! gives every job the pattern the replay's default `--network bins` gives a job of its
//! size (1 node: none; up to 16: stencil3d; 128: stencil4d; 512: unstructured; larger:
//! subcom-a2a), the replay's own pattern under that spec (its random patterns drawn here
//! with seed 0, in the replay with each job's seed); or one pattern for every job (one
//! rank per node, unit bytes, seed 0). `assumed_phi` is every job's communication
//! fraction: the shares the solve gives do not depend on it, so one value for all jobs
//! scales every score by the same factor (0 turns the model off: the ties decide). One
//! service level; the model's default bandwidths and flow fairness (a fabric's taper is in
//! its topology, so the model sees it).
//! *When to use*: to remove part of linear's interference (15-49 % on the logs of
//! docs/frontier.md) at no utilization cost: who starts when stays linear's, only the
//! nodes change. It sees only the links oversubscribed when a job starts.
//! *Cost*: per placement, the model's sync with the running jobs (O(nodes) plus a demand
//! for each job started or ended since), then, unless a one-leaf candidate exists, up to
//! `candidates` demands (O(flows)) and two solves of the component each joins.
//! *Reference*: this project (issue 18): scoring placements by predicted contention, as
//! the contention-aware allocation the issue cites does, with the replay's own model.

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::slurm_tree::{SlurmProfile, SlurmTree};
use super::tiers::{LeafOrder, SpanCounts, TieBreak, Tiered};
use super::{fits_in_machine, free_unguarded, AllocEntry, Allocator, Guard, Tracker};
use crate::network::{Active, DemandBuilder, NetConfig, Network, Pattern, Shared, Traffic};
use crate::options::{parse_options, schema_of};
use crate::state::ClusterState;
use crate::topology::Topology;

/// Options of `least-interference`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LeastInterferenceOptions {
    /// Most candidate node sets scored per placement (>= 1; with 1, the first of the documented order that places the job).
    #[schemars(range(min = 1))]
    pub candidates: u32,
    /// Traffic the model assumes for every job: bins (the pattern the replay's default --network bins gives a job of that size) or one pattern for all jobs.
    pub assumed_traffic: AssumedTraffic,
    /// Communication fraction (phi, in [0, 1]) the model assumes for every job; one value for all jobs only scales the scores.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub assumed_phi: f64,
}

impl Default for LeastInterferenceOptions {
    fn default() -> Self {
        LeastInterferenceOptions { candidates: 8, assumed_traffic: AssumedTraffic::Bins, assumed_phi: 0.3 }
    }
}

/// The traffic the model gives every job (a closed list, so a wrong name is refused with
/// the flag's choices before the run; `sub-a2a` is groups of 8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AssumedTraffic {
    // the replay's default `bins` mapping by size (python/toposched/network_spec.py
    // DEFAULT_BINS); no doc comments on the variants: the schema stays a plain list of names
    #[default]
    Bins,
    A2a,
    SubA2a,
    SubcomA2a,
    Stencil2d,
    Stencil3d,
    Stencil4d,
    Unstructured,
    Pairs,
    Flood,
    Ring,
    Incast,
    AdjacentLeaf,
}

impl AssumedTraffic {
    /// The pattern of a job of `nodes` nodes (a one-node job never uses the network).
    pub fn pattern(self, nodes: usize) -> Pattern {
        use AssumedTraffic as A;
        match self {
            _ if nodes <= 1 => Pattern::None,
            A::Bins if nodes <= 16 => Pattern::Stencil(3),
            A::Bins if nodes <= 128 => Pattern::Stencil(4),
            A::Bins if nodes <= 512 => Pattern::Unstructured,
            A::Bins | A::SubcomA2a => Pattern::SubcomA2a,
            A::A2a => Pattern::AllToAll,
            A::SubA2a => Pattern::SubA2a(8),
            A::Stencil2d => Pattern::Stencil(2),
            A::Stencil3d => Pattern::Stencil(3),
            A::Stencil4d => Pattern::Stencil(4),
            A::Unstructured => Pattern::Unstructured,
            A::Pairs => Pattern::Pairs,
            A::Flood => Pattern::Flood,
            A::Ring => Pattern::Ring,
            A::Incast => Pattern::Incast,
            A::AdjacentLeaf => Pattern::AdjacentLeaf,
        }
    }
}

impl LeastInterferenceOptions {
    pub fn check(&self) -> Result<(), String> {
        if self.candidates == 0 {
            return Err("least-interference: candidates must be at least 1, got 0".into());
        }
        if !(self.assumed_phi.is_finite() && (0.0..=1.0).contains(&self.assumed_phi)) {
            return Err(format!("least-interference: assumed_phi must be in [0, 1], got {}", self.assumed_phi));
        }
        Ok(())
    }
}

pub static POLICY: AllocEntry = AllocEntry {
    name: "least-interference",
    summary: "of a few candidate node sets (slurm-tree's, tier best fit, isolated's, quiet pods and leaves, linear), the one the network model predicts slows the job and its neighbours least",
    fungible: true,
    topology_aware: true,
    options: schema_of::<LeastInterferenceOptions>,
    build: |o| Ok(Box::new(LeastInterference::new(parse_options::<LeastInterferenceOptions>("least-interference", o)?)?)),
};

const NONE: u32 = u32::MAX;

/// The network model as the running jobs load it (kept in step with the machine state at
/// every placement).
#[derive(Clone, Debug)]
struct Model {
    net: Network,
    builder: DemandBuilder,
    shared: Shared,
    /// Running jobs the model holds: owner id -> (nodes, slot or NONE when off the network).
    placed: BTreeMap<u32, (Vec<u32>, u32)>,
    /// Node count of the job in each slot.
    slot_nodes: Vec<u32>,
    /// A job's links and demands as fresh from its node list (the traffic and duty cycle
    /// are functions of the node count, fixed per policy): the same candidate sets come
    /// back pass after pass, and building flows and routes is most of a score's cost.
    actives: ActiveCache,
}

/// Fresh `Active`s by node list, the oldest forgotten first beyond [`ACTIVE_CACHE_ENTRIES`].
#[derive(Clone, Debug, Default)]
struct ActiveCache {
    by_nodes: HashMap<Vec<u32>, Active>,
    order: VecDeque<Vec<u32>>,
}

/// Node lists whose links are kept (a few MB on Cab-sized fabrics).
const ACTIVE_CACHE_ENTRIES: usize = 2048;

/// A scored candidate: (score in micro node-units, links shared, leaves, pods, index).
type Key = (i64, u32, u32, u32, usize);

/// The policy.
#[derive(Clone, Debug)]
pub struct LeastInterference {
    opts: LeastInterferenceOptions,
    traffic: AssumedTraffic,
    slurm: SlurmTree,
    best_fit: Tiered,
    isolated: Tiered,
    model: Option<Model>,
}

impl LeastInterference {
    pub fn new(opts: LeastInterferenceOptions) -> Result<LeastInterference, String> {
        opts.check()?;
        let traffic = opts.assumed_traffic;
        Ok(LeastInterference {
            opts,
            traffic,
            slurm: SlurmTree::new(SlurmProfile::Current),
            best_fit: Tiered::new(u32::MAX, u32::MAX, LeafOrder::default(), TieBreak::default()),
            isolated: Tiered::new(1, 1, LeafOrder::default(), TieBreak::default()),
            model: None,
        })
    }

    fn traffic_of(&self, nodes: usize) -> Option<Traffic> {
        let p = self.traffic.pattern(nodes);
        (p != Pattern::None && self.opts.assumed_phi > 0.0).then(|| Traffic::new(p))
    }

    /// Bring the model in step with the running jobs of `state` (re-solving what changed).
    fn sync(&mut self, topo: &Topology, holdings: &[(u32, Vec<u32>)]) {
        let stale = self.model.as_ref().is_some_and(|m| m.net.topology().n_nodes() != topo.n_nodes() || m.net.topology().name() != topo.name());
        if self.model.is_none() || stale {
            let net = Network::new(topo, NetConfig::default()).expect("the default network settings are valid");
            self.model = Some(Model { builder: net.builder(), shared: net.shared(), net, placed: BTreeMap::new(), slot_nodes: Vec::new(), actives: ActiveCache::default() });
        }
        let phi = self.opts.assumed_phi;
        let traffic: Vec<Option<Traffic>> = holdings.iter().map(|(_, n)| self.traffic_of(n.len())).collect();
        let m = self.model.as_mut().expect("built above");
        let mut seeds = Vec::new();
        let live: BTreeMap<u32, &Vec<u32>> = holdings.iter().map(|(j, n)| (*j, n)).collect();
        let gone: Vec<u32> = m.placed.iter().filter(|(j, (n, _))| live.get(j).map_or(true, |l| *l != n)).map(|(j, _)| *j).collect();
        for j in gone {
            let (_, slot) = m.placed.remove(&j).expect("listed above");
            if slot != NONE {
                m.shared.hot_neighbours(slot, &mut seeds);
                m.shared.remove(slot);
            }
        }
        for ((j, nodes), tr) in holdings.iter().zip(traffic) {
            if m.placed.contains_key(j) {
                continue;
            }
            let slot = match tr {
                Some(tr) => m.insert(nodes, &tr, phi),
                None => NONE,
            };
            if slot != NONE {
                seeds.push(slot);
            }
            m.placed.insert(*j, (nodes.clone(), slot));
        }
        if !seeds.is_empty() {
            let comp = m.shared.component(&seeds);
            if !comp.is_empty() {
                m.shared.solve(&comp);
            }
        }
    }

    /// Candidate node sets (each ascending, distinct), at most `candidates`, in the
    /// documented order; stops at the first one on a single leaf (it cannot be beaten).
    pub fn candidates(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Vec<Vec<u32>> {
        self.candidates_with(topo, state, nodes, guard, &mut None)
    }

    /// `holdings`: the state's running jobs, read here if a generator needs them first.
    fn candidates_with(
        &mut self,
        topo: &Topology,
        state: &ClusterState,
        nodes: u32,
        guard: &Guard,
        holdings: &mut Option<Vec<(u32, Vec<u32>)>>,
    ) -> Vec<Vec<u32>> {
        let bound = self.opts.candidates as usize;
        let mut out: Vec<Vec<u32>> = Vec::new();
        let n = nodes as usize;
        if nodes == 0 || nodes > state.n_free() {
            return out;
        }
        // fungible: reservations are counts, the guard's excluded nodes are all it forbids
        let g = Guard { reserved: &[], ..*guard };
        let push = |c: Option<Vec<u32>>, out: &mut Vec<Vec<u32>>| -> bool {
            if let Some(mut c) = c {
                c.sort_unstable();
                if c.len() == n && !out.contains(&c) {
                    let one_leaf = topo.leaf_of(c[0]) == topo.leaf_of(c[n - 1]);
                    out.push(c);
                    return one_leaf || out.len() >= bound;
                }
            }
            out.len() >= bound
        };
        if push(self.slurm.select(topo, state, nodes, &g), &mut out) {
            return out;
        }
        if push(self.best_fit.select(topo, state, nodes, &g), &mut out) || push(self.isolated.select(topo, state, nodes, &g), &mut out) {
            return out;
        }
        // free nodes per leaf, and how many running jobs spanning leaves (pods) touch each
        let mut avail = vec![0u32; topo.n_leaves()];
        free_unguarded(state, topo, &g).for_each(|x| avail[topo.leaf_of(x) as usize] += 1);
        let mut spans = SpanCounts::new(topo);
        for (_, h) in holdings.get_or_insert_with(|| state.holdings()).iter() {
            spans.allocate(topo, h, topo.span_class(h));
        }
        let pod_avail: Vec<u32> = (0..topo.n_pods() as u32).map(|p| topo.pod_leaves(p).map(|l| avail[l as usize]).sum()).collect();
        let quiet_leaves = |leaves: &mut Vec<u32>| leaves.sort_by_key(|&l| (spans.leaf_spanning(l), std::cmp::Reverse(avail[l as usize]), l));
        let take = |leaves: &[u32]| -> Option<Vec<u32>> {
            let mut c = Vec::with_capacity(n);
            for &l in leaves {
                c.extend(topo.leaf_nodes(l).filter(|&x| state.is_free(x) && !g.excludes(x)).take(n - c.len()));
                if c.len() == n {
                    return Some(c);
                }
            }
            None
        };
        let mut pods: Vec<u32> = (0..topo.n_pods() as u32).filter(|&p| pod_avail[p as usize] >= nodes).collect();
        pods.sort_by_key(|&p| (spans.pod_spanning(p), pod_avail[p as usize], p));
        for p in pods {
            let mut leaves: Vec<u32> = topo.pod_leaves(p).collect();
            quiet_leaves(&mut leaves);
            if push(take(&leaves), &mut out) {
                return out;
            }
        }
        let mut pods: Vec<u32> = (0..topo.n_pods() as u32).collect();
        pods.sort_by_key(|&p| (spans.pod_spanning(p), std::cmp::Reverse(pod_avail[p as usize]), p));
        let mut leaves = Vec::with_capacity(topo.n_leaves());
        for p in pods {
            let mut part: Vec<u32> = topo.pod_leaves(p).collect();
            quiet_leaves(&mut part);
            leaves.extend(part);
        }
        if push(take(&leaves), &mut out) {
            return out;
        }
        push(Some(free_unguarded(state, topo, &g).take(n).collect()), &mut out);
        out
    }

    /// The key of a candidate (model in step with the state), and the worst slowdown it
    /// adds ([`Model::score`]).
    fn key(&mut self, topo: &Topology, cand: &[u32], index: usize) -> (Key, f64) {
        let leaves = count_changes(cand.iter().map(|&x| topo.leaf_of(x)));
        let pods = count_changes(cand.iter().map(|&x| topo.pod_of(x)));
        let (score, shared, worst) = match self.traffic_of(cand.len()) {
            Some(tr) if leaves > 1 => self.model.as_mut().expect("synced").score(cand, &tr, self.opts.assumed_phi),
            _ => (0.0, 0, 0.0),
        };
        (((score.max(0.0) * 1e6).round() as i64, shared, leaves, pods, index), worst)
    }

    /// The candidates for a job of `nodes` nodes, best first by the documented key, each
    /// with the worst slowdown the model predicts it adds: the largest of the job's own
    /// dilation - 1 and the increase of any running job's dilation (0 for a candidate on
    /// one leaf, which uses no link between switches). `adaptive` reads it.
    pub fn ranked(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Vec<(Vec<u32>, f64)> {
        let mut holdings = None;
        let cands = self.candidates_with(topo, state, nodes, guard, &mut holdings);
        self.rank(topo, state, cands, holdings)
    }

    /// `cands` in key order with their worst added slowdowns (`holdings`: the state's
    /// running jobs if already read).
    fn rank(&mut self, topo: &Topology, state: &ClusterState, mut cands: Vec<Vec<u32>>, holdings: Option<Vec<(u32, Vec<u32>)>>) -> Vec<(Vec<u32>, f64)> {
        let Some(last) = cands.last() else { return Vec::new() };
        if topo.leaf_of(last[0]) == topo.leaf_of(last[last.len() - 1]) {
            // generation stops at the first one-leaf candidate: score 0, nothing shared,
            // fewest leaves and pods, so no earlier candidate beats it
            return vec![(cands.pop().expect("not empty"), 0.0)];
        }
        let holdings = holdings.unwrap_or_else(|| state.holdings());
        self.sync(topo, &holdings);
        let mut keyed: Vec<(Key, f64, Vec<u32>)> = Vec::with_capacity(cands.len());
        for (i, c) in cands.into_iter().enumerate() {
            let (k, worst) = self.key(topo, &c, i);
            keyed.push((k, worst, c));
        }
        keyed.sort_by_key(|(k, _, _)| *k);
        keyed.into_iter().map(|(_, worst, c)| (c, worst)).collect()
    }
}

/// Distinct values of an ascending-grouped sequence.
fn count_changes(it: impl Iterator<Item = u32>) -> u32 {
    let mut last = u32::MAX;
    let mut k = 0;
    for v in it {
        if v != last {
            k += 1;
            last = v;
        }
    }
    k
}

impl Model {
    /// Put a job on the network; its slot, or NONE if it uses no link between switches.
    fn insert(&mut self, nodes: &[u32], tr: &Traffic, phi: f64) -> u32 {
        let act = match self.actives.by_nodes.get(nodes) {
            Some(act) => act.clone(),
            None => {
                let dem = self.net.demand(&mut self.builder, nodes, tr).expect("nodes are on the fabric");
                let act = self.net.active(&dem, 0, phi).expect("level 0 exists");
                if self.actives.order.len() >= ACTIVE_CACHE_ENTRIES {
                    let oldest = self.actives.order.pop_front().expect("full");
                    self.actives.by_nodes.remove(&oldest);
                }
                self.actives.order.push_back(nodes.to_vec());
                self.actives.by_nodes.insert(nodes.to_vec(), act.clone());
                act
            }
        };
        if act.links.is_empty() {
            return NONE;
        }
        let slot = self.shared.insert(act);
        if self.slot_nodes.len() <= slot as usize {
            self.slot_nodes.resize(slot as usize + 1, 0);
        }
        self.slot_nodes[slot as usize] = nodes.len() as u32;
        slot
    }

    /// `nodes x (dilation - 1)` summed over `comp` (skipping `skip`).
    fn lost(&self, comp: &[u32], skip: u32) -> f64 {
        comp.iter().filter(|&&s| s != skip).map(|&s| self.slot_nodes[s as usize] as f64 * (self.shared.get(s).dilation() - 1.0)).sum()
    }

    /// (increase of the node-weighted slowdown `sum nodes x (dilation - 1)`, links shared,
    /// worst slowdown added: the largest of the job's own dilation - 1 and any running
    /// job's increase of dilation) if the job ran on `nodes`; the model is left as it was.
    fn score(&mut self, nodes: &[u32], tr: &Traffic, phi: f64) -> (f64, u32, f64) {
        let slot = self.insert(nodes, tr, phi);
        if slot == NONE {
            return (0.0, 0, 0.0);
        }
        let shared = self.shared.get(slot).shared_now;
        let comp = self.shared.component(&[slot]);
        // dilation of every job of the component before the job joins (its own: 1)
        let before: Vec<f64> = comp.iter().map(|&s| if s == slot { 1.0 } else { self.shared.get(s).dilation() }).collect();
        let lost_before = self.lost(&comp, slot);
        self.shared.solve(&comp);
        let lost = self.lost(&comp, NONE) - lost_before;
        let worst = comp.iter().zip(&before).map(|(&s, b)| self.shared.get(s).dilation() - b).fold(0.0f64, f64::max);
        self.shared.remove(slot);
        let rest: Vec<u32> = comp.into_iter().filter(|&s| s != slot).collect();
        if !rest.is_empty() {
            self.shared.solve(&rest);
        }
        (lost, shared, worst)
    }
}

impl Allocator for LeastInterference {
    fn name(&self) -> String {
        "least-interference".into()
    }
    fn fungible(&self) -> bool {
        true
    }
    fn check_fits_ever(&self, _topo: &Topology, empty: &ClusterState, nodes: u32) -> Result<(), String> {
        fits_in_machine(empty, nodes)
    }
    fn select(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> Option<Vec<u32>> {
        // read once, and only when needed: most one-leaf jobs are placed without it
        let mut holdings = None;
        let cands = self.candidates_with(topo, state, nodes, guard, &mut holdings);
        if cands.len() <= 1 {
            return cands.into_iter().next();
        }
        self.rank(topo, state, cands, holdings).into_iter().next().map(|(c, _)| c)
    }
    fn feasible(&mut self, topo: &Topology, state: &ClusterState, nodes: u32, guard: &Guard) -> bool {
        if guard.excluded.is_none() {
            nodes <= state.n_free()
        } else {
            free_unguarded(state, topo, guard).take(nodes as usize).count() == nodes as usize
        }
    }
}

//! Live placement: the replay's allocation policies answering one request at a time, for
//! `toposched serve` (docs/live.md).
//!
//! A [`Placer`] holds a fabric, a [`ClusterState`] and an allocator built by
//! [`alloc::by_name`](crate::alloc::by_name), exactly as a replay builds it. `allocate` calls
//! the allocator's `select` on the current state and applies the answer with
//! `ClusterState::allocate`, as `PassCtx::try_start` does in a replay, so for the same
//! sequence of starts and ends the same nodes come out (tested in `tests/live.rs` and
//! `tests/test_live_placer.py` against replays).
//!
//! **Reservations** follow EASY (`crate::queue::easy`, rule 2) on the current state: the
//! running jobs are taken in order of expected end (`start + walltime`, a job past its limit
//! counting as ending now, ties by job name); for a non-fungible policy the state is
//! projected by releasing them one by one until the policy places the job, for a fungible
//! one free nodes are counted. One reservation is held at a time (EASY has one head); a
//! request that may not start now and asks to reserve takes it. Jobs that would still run
//! at the reservation's start are then placed under the same guard as EASY's backfill
//! (rule 3). A request that asks to reserve is never guarded: it stands for a job ahead of
//! the head, or the head itself (the bridge asks to reserve until one job is reserved in a
//! pass, exactly like EASY's phase 1).
//!
//! **Drained nodes** are never allocated: a free node is taken out of the state at once; a
//! held one when its job releases it.

use std::collections::BTreeMap;

use crate::alloc::{self, Allocator, Guard, Reserved};
use crate::options::Options;
use crate::planner::{shadow, Projection};
use crate::state::{ClusterState, NodeSet, DOWN, FREE};
use crate::topology::{SpanClass, Topology};

/// A job holding nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Owner id in the [`ClusterState`].
    slot: u32,
    /// Ascending node ids.
    pub nodes: Vec<u32>,
    /// How far the job's nodes spread.
    pub class: SpanClass,
    pub start_s: i64,
    pub walltime_s: i64,
}

impl Held {
    /// Expected end as reservations see it.
    pub fn expected_end_s(&self) -> i64 {
        self.start_s.saturating_add(self.walltime_s)
    }
}

/// The one reservation held (EASY's head).
#[derive(Clone, Debug)]
pub struct Reservation {
    pub job: String,
    pub nodes_asked: u32,
    /// Shadow time: the latest the job may start if running jobs end by their limits.
    pub start_s: i64,
    /// Nodes it would get then (ascending).
    pub nodes: Vec<u32>,
    set: NodeSet,
    /// How far `nodes` spread (what the allocation policy's guard reads).
    class: SpanClass,
    /// Fungible policies: free nodes at the shadow time beyond the job's size, which jobs
    /// running past the shadow time may still take.
    extra: u32,
}

/// The answer to an allocation request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Placed now on these nodes (ascending).
    Placed(Vec<u32>),
    /// Cannot start now; reserved to start by `start_s` on `nodes`.
    Reserved { start_s: i64, nodes: Vec<u32> },
    /// Cannot start now; why.
    Refused(String),
    /// Can never run on this fabric under this policy (with the nodes now drained); why.
    Never(String),
}

/// A fabric's live allocation table.
pub struct Placer {
    topo: Topology,
    alloc_name: String,
    options: Options,
    alloc: Box<dyn Allocator>,
    state: ClusterState,
    held: BTreeMap<String, Held>,
    free_slots: Vec<u32>,
    next_slot: u32,
    drained: Vec<bool>,
    reservation: Option<Reservation>,
}

impl Placer {
    /// A placer with every node free, the allocator built as a replay builds it.
    /// `options` are the policy's options, as in a replay (see `crate::registry`).
    pub fn new(topo: Topology, alloc_name: &str, options: Options) -> Result<Placer, String> {
        let alloc = alloc::by_name(alloc_name, &options)?;
        let state = alloc::new_state(alloc.as_ref(), &topo, &[]);
        let n = topo.n_nodes();
        Ok(Placer {
            topo,
            alloc_name: alloc_name.to_string(),
            options,
            alloc,
            state,
            held: BTreeMap::new(),
            free_slots: Vec::new(),
            next_slot: 0,
            drained: vec![false; n],
            reservation: None,
        })
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }
    pub fn state(&self) -> &ClusterState {
        &self.state
    }
    pub fn alloc_name(&self) -> &str {
        &self.alloc_name
    }
    pub fn fungible(&self) -> bool {
        self.alloc.fungible()
    }
    pub fn held(&self) -> &BTreeMap<String, Held> {
        &self.held
    }
    pub fn is_drained(&self, node: u32) -> bool {
        self.drained.get(node as usize).copied().unwrap_or(false)
    }
    pub fn drained(&self) -> Vec<u32> {
        (0..self.drained.len() as u32).filter(|&n| self.drained[n as usize]).collect()
    }
    pub fn reservation(&self) -> Option<&Reservation> {
        self.reservation.as_ref()
    }

    /// The empty machine with the drained nodes down, and a fresh allocator to ask about it
    /// (a fresh one so that the question consumes nothing of the live allocator, e.g. the
    /// random policy's stream).
    fn fresh(&self, with_drained: bool) -> (ClusterState, Box<dyn Allocator>) {
        let down = if with_drained { self.drained() } else { Vec::new() };
        let alloc = alloc::by_name(&self.alloc_name, &self.options).expect("the name and options were checked at construction");
        let empty = alloc::new_state(alloc.as_ref(), &self.topo, &down);
        (empty, alloc)
    }

    /// Whether a job of `nodes` nodes could ever run: on the whole fabric, and with the
    /// nodes now drained left out.
    pub fn satisfiable(&self, nodes: u32) -> (Result<(), String>, Result<(), String>) {
        let (empty, alloc) = self.fresh(false);
        let whole = alloc.check_fits_ever(&self.topo, &empty, nodes);
        let (empty, alloc) = self.fresh(true);
        let now = alloc.check_fits_ever(&self.topo, &empty, nodes);
        (whole, now)
    }

    fn take_slot(&mut self) -> u32 {
        self.free_slots.pop().unwrap_or_else(|| {
            self.next_slot += 1;
            assert!(self.next_slot < DOWN, "too many jobs held at once");
            self.next_slot - 1
        })
    }

    /// Apply a placement (the allocator's answer, or the resource manager's word).
    fn hold(&mut self, job: &str, mut nodes: Vec<u32>, start_s: i64, walltime_s: i64) -> Vec<u32> {
        nodes.sort_unstable();
        let class = self.topo.span_class(&nodes);
        let slot = self.take_slot();
        // A drained node can be held only when the resource manager says a job runs there.
        for &n in &nodes {
            if self.state.owner(n) == DOWN {
                self.state.mark_up(&self.topo, n);
            }
        }
        self.state.allocate(&self.topo, slot, &nodes, class);
        self.held.insert(job.to_string(), Held { slot, nodes: nodes.clone(), class, start_s, walltime_s });
        nodes
    }

    /// Place `job` now, or refuse, or (with `reserve`) reserve it. Asking again for a job
    /// already placed returns its nodes (requests may be retried). `exclude`: nodes that
    /// may not be chosen now (hosts whose node agents cannot meet the job's requirement);
    /// a reservation does not look at them (the hosts may change by then).
    pub fn allocate(&mut self, job: &str, nodes: u32, walltime_s: i64, now_s: i64, reserve: bool, exclude: &[u32]) -> Decision {
        if let Some(h) = self.held.get(job) {
            return if h.nodes.len() == nodes as usize {
                Decision::Placed(h.nodes.clone())
            } else {
                Decision::Refused(format!("job {job} already holds {} nodes; release it first", h.nodes.len()))
            };
        }
        if nodes == 0 {
            return Decision::Never("job asks for 0 nodes".into());
        }
        let end_s = now_s.saturating_add(walltime_s);
        let guarded = !reserve && self.reservation.as_ref().is_some_and(|r| r.job != job && end_s > r.start_s);
        if guarded && self.alloc.fungible() {
            let r = self.reservation.as_ref().expect("guarded implies a reservation");
            if nodes > r.extra {
                return Decision::Refused(format!(
                    "would delay the reservation of job {} (starting by t={}): {nodes} nodes asked beyond it, {} spare",
                    r.job, r.start_s, r.extra
                ));
            }
        }
        let filtered = (!exclude.is_empty()).then(|| {
            let mut set = NodeSet::new(self.topo.n_nodes());
            for &n in exclude.iter().filter(|&&n| (n as usize) < self.topo.n_nodes()) {
                set.insert(n);
            }
            set
        });
        let chosen = if nodes > self.state.n_free() {
            None
        } else if guarded && !self.alloc.fungible() {
            let r = self.reservation.as_ref().expect("guarded implies a reservation");
            let both = filtered.as_ref().map(|f| {
                let mut s = r.set.clone();
                for n in f.iter_range(0..self.topo.n_nodes() as u32) {
                    s.insert(n);
                }
                s
            });
            let reserved = [Reserved { nodes: &r.nodes, class: r.class, stamp: 0 }];
            let guard = Guard { excluded: Some(both.as_ref().unwrap_or(&r.set)), reserved: &reserved, ..Guard::NONE };
            self.alloc.select(&self.topo, &self.state, nodes, &guard)
        } else {
            let guard = Guard { excluded: filtered.as_ref(), ..Guard::NONE };
            self.alloc.select(&self.topo, &self.state, nodes, &guard)
        };
        if let Some(chosen) = chosen {
            let placed = self.hold(job, chosen, now_s, walltime_s);
            match self.reservation.as_mut() {
                Some(r) if r.job == job => self.reservation = None,
                Some(r) if guarded => r.extra = r.extra.saturating_sub(nodes),
                _ => {}
            }
            return Decision::Placed(placed);
        }
        if let (_, Err(why)) = self.satisfiable(nodes) {
            return Decision::Never(why);
        }
        if reserve {
            return match self.reserve(job, nodes, now_s) {
                Some(r) => {
                    let d = Decision::Reserved { start_s: r.start_s, nodes: r.nodes.clone() };
                    self.reservation = Some(r);
                    d
                }
                None => Decision::Refused(format!("job {job} cannot be placed even once every running job has ended")),
            };
        }
        let free = self.state.n_free();
        if guarded {
            let r = self.reservation.as_ref().expect("guarded implies a reservation");
            return Decision::Refused(format!(
                "cannot be placed now without delaying the reservation of job {} (starting by t={}), or at all",
                r.job, r.start_s
            ));
        }
        Decision::Refused(if nodes > free {
            format!("{nodes} nodes asked, {free} free")
        } else {
            format!("{} cannot place {nodes} nodes in the {free} free nodes now", self.alloc_name)
        })
    }

    /// EASY's reservation for a job of `nodes` nodes on the current state (rule 2), by
    /// the planner: [`shadow`] on counts, a [`Projection`] of the held jobs ending for the
    /// node set.
    fn reserve(&mut self, job: &str, nodes: u32, now_s: i64) -> Option<Reservation> {
        let (topo, drained, held) = (&self.topo, &self.drained, &self.held);
        // Running jobs by expected end (past-limit jobs end now), then name.
        let mut order: Vec<(i64, &str)> = held.iter().map(|(k, h)| (h.expected_end_s().max(now_s), k.as_str())).collect();
        order.sort();
        // Release a held job on the projected state; drained nodes stay out of service.
        let release = |projected: &mut ClusterState, h: &Held| {
            projected.release(topo, h.slot, &h.nodes, h.class);
            for &n in &h.nodes {
                if drained[n as usize] {
                    projected.mark_down(topo, n);
                }
            }
        };
        let mut projection = Projection::new(self.state.clone(), order.iter().map(|&(end, name)| (end, &held[name])), release);
        let (start_s, chosen, extra) = if self.alloc.fungible() {
            // Count free nodes as jobs end; the node set is what the policy would pick then
            // (asked of a fresh allocator: the count, not the set, is the reservation).
            let freed = order.iter().map(|&(end, name)| (end, held[name].nodes.iter().filter(|&&n| !drained[n as usize]).count() as u32));
            let (shadow_s, extra) = shadow(now_s, self.state.n_free(), nodes, freed)?;
            projection.advance_to(shadow_s);
            let (_, mut fresh) = self.fresh(false);
            (shadow_s, fresh.select(topo, projection.state(), nodes, &Guard::NONE)?, extra)
        } else {
            let alloc = &mut self.alloc;
            // a planned future: a policy answers only what holds until then (Guard::projected)
            let guard = Guard { projected: true, ..Guard::NONE };
            let (end, chosen) = projection.first_placement(None, |_, projected| {
                if nodes <= projected.n_free() && alloc.feasible(topo, projected, nodes, &guard) {
                    alloc.select(topo, projected, nodes, &guard)
                } else {
                    None
                }
            })?;
            (end, chosen, 0)
        };
        let mut chosen = chosen;
        chosen.sort_unstable();
        let topo = &self.topo;
        let mut set = NodeSet::new(topo.n_nodes());
        for &n in &chosen {
            set.insert(n);
        }
        Some(Reservation { job: job.to_string(), nodes_asked: nodes, start_s, class: topo.span_class(&chosen), nodes: chosen, set, extra })
    }

    /// Drop the reservation (e.g. the reserved job left the queue).
    pub fn clear_reservation(&mut self) {
        self.reservation = None;
    }

    /// Take `job`'s nodes back; None if it holds none. A reservation of the job is dropped.
    pub fn release(&mut self, job: &str) -> Option<Vec<u32>> {
        if self.reservation.as_ref().is_some_and(|r| r.job == job) {
            self.reservation = None;
        }
        let h = self.held.remove(job)?;
        self.state.release(&self.topo, h.slot, &h.nodes, h.class);
        for &n in &h.nodes {
            if self.drained[n as usize] {
                self.state.mark_down(&self.topo, n);
            }
        }
        self.free_slots.push(h.slot);
        Some(h.nodes)
    }

    /// Check a placement the resource manager reports before applying it.
    fn check_assignment(&self, job: &str, nodes: &[u32], taken: &mut BTreeMap<u32, String>) -> Result<(), String> {
        if nodes.is_empty() {
            return Err(format!("job {job}: no nodes"));
        }
        let n = self.topo.n_nodes() as u32;
        for &x in nodes {
            if x >= n {
                return Err(format!("job {job}: node id {x} is not on the fabric ({n} nodes)"));
            }
            if let Some(other) = taken.insert(x, job.to_string()) {
                return Err(format!("node id {x} is given to both job {other} and job {job}"));
            }
        }
        Ok(())
    }

    /// Record a placement decided elsewhere (a restart, the resource manager's view).
    /// Fails without changing anything if a node is taken or not on the fabric.
    pub fn assign(&mut self, job: &str, nodes: Vec<u32>, start_s: i64, walltime_s: i64) -> Result<Vec<u32>, String> {
        if self.held.contains_key(job) {
            return Err(format!("job {job} already holds nodes"));
        }
        let mut taken = BTreeMap::new();
        self.check_assignment(job, &nodes, &mut taken)?;
        for &x in &nodes {
            let owner = self.state.owner(x);
            if owner != FREE && owner != DOWN {
                let holder = self.held.iter().find(|(_, h)| h.slot == owner).map(|(k, _)| k.clone()).unwrap_or_default();
                return Err(format!("node id {x} is already held by job {holder}"));
            }
        }
        Ok(self.hold(job, nodes, start_s, walltime_s))
    }

    /// Replace the whole allocation table (the resource manager is the source of truth after
    /// a crash). Every entry is checked first; on error nothing changes. Drains stay.
    pub fn replace_all(&mut self, table: Vec<(String, Vec<u32>, i64, i64)>) -> Result<(), String> {
        let mut taken = BTreeMap::new();
        let mut seen = std::collections::BTreeSet::new();
        for (job, nodes, _, _) in &table {
            if !seen.insert(job.as_str()) {
                return Err(format!("job {job} is listed twice"));
            }
            self.check_assignment(job, nodes, &mut taken)?;
        }
        let names: Vec<String> = self.held.keys().cloned().collect();
        for name in names {
            self.release(&name);
        }
        self.reservation = None;
        for (job, nodes, start_s, walltime_s) in table {
            self.hold(&job, nodes, start_s, walltime_s);
        }
        Ok(())
    }

    /// Never allocate `node` again until resumed. True if it was not drained before.
    pub fn drain(&mut self, node: u32) -> bool {
        if self.drained[node as usize] {
            return false;
        }
        self.drained[node as usize] = true;
        if self.state.is_free(node) {
            self.state.mark_down(&self.topo, node);
        }
        // A reservation may count on the node.
        self.reservation = None;
        true
    }

    /// Put a drained node back in service. True if it was drained.
    pub fn resume(&mut self, node: u32) -> bool {
        if !self.drained[node as usize] {
            return false;
        }
        self.drained[node as usize] = false;
        if self.state.owner(node) == DOWN {
            self.state.mark_up(&self.topo, node);
        }
        true
    }

    /// Per leaf: whether a held job spanning leaves has a node on it.
    pub fn leaf_spanned(&self) -> Vec<bool> {
        let mut out = vec![false; self.topo.n_leaves()];
        for h in self.held.values().filter(|h| h.class.spans_leaves()) {
            h.nodes.iter().for_each(|&n| out[self.topo.leaf_of(n) as usize] = true);
        }
        out
    }

    /// Per pod: whether a held job spanning pods has a node in it.
    pub fn pod_spanned(&self) -> Vec<bool> {
        let mut out = vec![false; self.topo.n_pods()];
        for h in self.held.values().filter(|h| h.class.spans_pods()) {
            h.nodes.iter().for_each(|&n| out[self.topo.pod_of(n) as usize] = true);
        }
        out
    }

    /// Job holding `node`, if any.
    pub fn holder(&self, node: u32) -> Option<&str> {
        let owner = self.state.owner(node);
        if owner == FREE || owner == DOWN {
            return None;
        }
        self.held.iter().find(|(_, h)| h.slot == owner).map(|(k, _)| k.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placer(alloc: &str) -> Placer {
        Placer::new(Topology::preset("toy18").unwrap(), alloc, Options::default()).unwrap()
    }

    #[test]
    fn drained_nodes_are_never_given() {
        let mut p = placer("linear");
        assert!(p.drain(0));
        assert!(!p.drain(0));
        let Decision::Placed(n) = p.allocate("a", 3, 10, 0, false, &[]) else { panic!() };
        assert_eq!(n, vec![1, 2, 3]);
        assert!(p.drain(2));
        p.release("a").unwrap();
        assert!(!p.state().is_free(2) && p.state().is_free(1));
        let Decision::Placed(n) = p.allocate("b", 16, 10, 0, false, &[]) else { panic!() };
        assert!(!n.contains(&0) && !n.contains(&2));
        assert!(matches!(p.allocate("c", 1, 10, 0, false, &[]), Decision::Refused(_)));
        assert!(matches!(p.allocate("d", 17, 10, 0, false, &[]), Decision::Never(_)));
        p.release("b").unwrap();
        assert!(p.resume(0) && p.resume(2));
        assert_eq!(p.state().n_free(), 18);
    }

    #[test]
    fn reservation_guards_later_jobs() {
        // toy18: 2 pods x 3 leaves x 3 nodes. isolated.
        let mut p = placer("isolated");
        assert!(matches!(p.allocate("a", 9, 100, 0, false, &[]), Decision::Placed(_)));
        assert!(matches!(p.allocate("b", 6, 50, 0, false, &[]), Decision::Placed(_)));
        // 3 nodes left; a 9-node head must wait for b (ends 50)
        let d = p.allocate("h", 9, 100, 0, true, &[]);
        let Decision::Reserved { start_s, nodes } = d else { panic!("{d:?}") };
        assert_eq!(start_s, 50);
        assert_eq!(nodes.len(), 9);
        // A 3-node job ending after 50 may not take the reserved pod's nodes
        let free: Vec<u32> = (0..18).filter(|&n| p.state().is_free(n)).collect();
        let overlap = free.iter().any(|n| nodes.contains(n));
        let d = p.allocate("x", 3, 500, 0, false, &[]);
        if overlap {
            assert!(matches!(d, Decision::Refused(_)), "{d:?}");
        }
        // one ending before the shadow time may
        let d = p.allocate("y", 3, 10, 0, false, &[]);
        assert!(matches!(d, Decision::Placed(_)), "{d:?}");
        // the policy's counters live in the placer's state and follow its allocations
        let counts = p.state().tracked::<alloc::isolated::SpanCounts>().expect("isolated's tracker installed");
        assert_eq!(counts, &alloc::isolated::SpanCounts::of_state(p.topology(), p.state()));
        assert_eq!(p.leaf_spanned().iter().filter(|&&x| x).count(), 5, "a (9 nodes) and b (6) span 3 + 2 leaves");
        assert_eq!(p.release("zzz"), None);
    }

    #[test]
    fn replace_all_checks_first() {
        let mut p = placer("linear");
        p.allocate("a", 3, 10, 0, false, &[]);
        let bad = vec![("x".to_string(), vec![1, 2], 0, 10), ("y".to_string(), vec![2], 0, 10)];
        assert!(p.replace_all(bad).is_err());
        assert_eq!(p.held().len(), 1);
        p.replace_all(vec![("x".to_string(), vec![5, 6], 0, 10)]).unwrap();
        assert_eq!(p.held().keys().collect::<Vec<_>>(), vec!["x"]);
        assert_eq!(p.state().n_free(), 16);
        assert_eq!(p.holder(5), Some("x"));
    }

    #[test]
    fn excluded_hosts_are_never_chosen_now() {
        let topo = Topology::fat_tree("t", 4, 2, 1, None, None).unwrap();
        for alloc in ["linear", "isolated", "slurm-tree", "random"] {
            let mut p = Placer::new(topo.clone(), alloc, Options::default()).unwrap();
            // nodes 0, 1 and 5 cannot take the job (their agents refuse it)
            let Decision::Placed(n) = p.allocate("a", 3, 10, 0, false, &[0, 1, 5]) else { panic!("{alloc}") };
            assert!(n.iter().all(|x| ![0, 1, 5].contains(x)), "{alloc}: {n:?}");
            // only 2 usable free nodes remain: a 3-node job is refused, not placed on them
            assert!(matches!(p.allocate("b", 3, 10, 0, false, &[0, 1, 5]), Decision::Refused(_)), "{alloc}");
        }
    }
}
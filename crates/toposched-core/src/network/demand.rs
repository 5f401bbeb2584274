//! A job's demand on every link it uses: walk its pattern's flows, route each (D-mod-k),
//! and accumulate per link the bytes, the number of flows and the number of distinct
//! input ports the flows arrive from. Cost O(flows · levels); dense scratch arrays indexed
//! by link id with stamps, so building never clears the whole link table.

use super::patterns::Pattern;
use super::routing::Router;

/// One job's per-link load for one iteration. `links` is ascending.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Demand {
    pub links: Vec<u32>,
    pub bytes: Vec<f64>,
    /// Flows of the job crossing each link (the default fairness unit).
    pub flows: Vec<u32>,
    /// Distinct input ports those flows enter the link's switch by (0 unless asked for).
    pub ports: Vec<u32>,
    /// Communication time per iteration with the network to itself but every link at its
    /// own capacity and no routing limits: the busiest node link (injection/ejection bound).
    pub t_ideal: f64,
    /// Communication time per iteration alone on this placement: the busiest link,
    /// `max_l bytes_l / c_l` (the job-level fluid model's time alone).
    pub t_alone: f64,
    /// Flows that leave their node.
    pub n_flows: u64,
    /// Bytes that leave their node, per iteration.
    pub total_bytes: f64,
}

impl Demand {
    /// Intra-job placement penalty `t_alone / t_ideal` (1 for a job that does not communicate).
    pub fn placement_penalty(&self) -> f64 {
        if self.t_ideal > 0.0 {
            self.t_alone / self.t_ideal
        } else {
            1.0
        }
    }
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }
}

/// The most bytes one flow may carry per iteration. Only ratios within a job matter (each
/// job is normalised by its own time alone), but a link's sum over flows and jobs must stay
/// a finite double: near 1e308 it overflowed to inf, and slowdowns became NaN.
pub const MAX_FLOW_BYTES: f64 = 1e200;

/// `bytes` (of a job's flows, or of one explicit flow) as the model takes them: a finite
/// number from 0 to [`MAX_FLOW_BYTES`].
pub fn check_flow_bytes(bytes: f64) -> Result<(), String> {
    if (0.0..=MAX_FLOW_BYTES).contains(&bytes) {
        Ok(())
    } else {
        Err(format!("bytes must be a number from 0 to {MAX_FLOW_BYTES:e}, got {bytes:e}"))
    }
}

/// What a job sends, on which nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Traffic {
    pub pattern: Pattern,
    /// Bytes per flow per iteration (scale of the explicit flows' sizes is their own).
    pub bytes: f64,
    /// Ranks per node (block mapping). Node-level patterns ignore it.
    pub ranks_per_node: u32,
    /// Seed of the random patterns.
    pub seed: u64,
}

impl Traffic {
    pub fn new(pattern: Pattern) -> Traffic {
        Traffic { pattern, bytes: 1.0, ranks_per_node: 1, seed: 0 }
    }
}

/// Fewest (link, input port) pairs [`DemandBuilder::build`] keeps before deduplicating them.
const PORT_PAIRS_MIN: usize = 1 << 20;

/// Reusable scratch for building demands on one fabric.
#[derive(Clone, Debug)]
pub struct DemandBuilder {
    slot: Vec<u32>,
    stamp: Vec<u32>,
    cur: u32,
    acc: Demand,
    port_pairs: Vec<(u32, u32)>,
}

impl DemandBuilder {
    pub fn new(n_links: usize) -> DemandBuilder {
        DemandBuilder { slot: vec![0; n_links], stamp: vec![0; n_links], cur: 0, acc: Demand::default(), port_pairs: Vec::new() }
    }

    /// Build the demand of `traffic` on `nodes` (rank r's node is `nodes[r / ppn]`).
    /// With `ports`, also count distinct input ports per link.
    pub fn build(&mut self, router: &Router, nodes: &[u32], traffic: &Traffic, ports: bool) -> Result<Demand, String> {
        check_traffic(router, nodes, traffic)?;
        self.cur = self.cur.wrapping_add(1);
        if self.cur == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.cur = 1;
        }
        let acc = &mut self.acc;
        acc.links.clear();
        acc.bytes.clear();
        acc.flows.clear();
        acc.ports.clear();
        acc.n_flows = 0;
        acc.total_bytes = 0.0;
        self.port_pairs.clear();
        let (slot, stamp, cur, pairs) = (&mut self.slot, &mut self.stamp, self.cur, &mut self.port_pairs);
        // (link, input port) pairs are few, flows many: deduplicated whenever the list
        // doubles, memory follows the distinct pairs (a2a on 1296 nodes x 4 ranks: 27 M
        // flows, 1.4 GB of pairs kept one per flow and link)
        let mut dedup_at = PORT_PAIRS_MIN;
        let mut emit = |ns: u32, nd: u32, b: f64| {
            acc.n_flows += 1;
            acc.total_bytes += b;
            let route = router.route(ns, nd);
            let mut prev = u32::MAX - ns; // the source node itself is the first "input port"
            for &l in route.links() {
                let k = if stamp[l as usize] == cur {
                    slot[l as usize] as usize
                } else {
                    stamp[l as usize] = cur;
                    slot[l as usize] = acc.links.len() as u32;
                    acc.links.push(l);
                    acc.bytes.push(0.0);
                    acc.flows.push(0);
                    acc.links.len() - 1
                };
                acc.bytes[k] += b;
                acc.flows[k] += 1;
                if ports {
                    pairs.push((l, prev));
                }
                prev = l;
            }
            if pairs.len() >= dedup_at {
                pairs.sort_unstable();
                pairs.dedup();
                dedup_at = (2 * pairs.len()).max(PORT_PAIRS_MIN);
            }
        };
        for_each_node_flow(router, nodes, traffic, &mut emit);
        // sort by link id
        let mut order: Vec<usize> = (0..self.acc.links.len()).collect();
        order.sort_unstable_by_key(|&k| self.acc.links[k]);
        let links: Vec<u32> = order.iter().map(|&k| self.acc.links[k]).collect();
        let bytes: Vec<f64> = order.iter().map(|&k| self.acc.bytes[k]).collect();
        let flows: Vec<u32> = order.iter().map(|&k| self.acc.flows[k]).collect();
        let mut port_counts = vec![0u32; links.len()];
        if ports {
            self.port_pairs.sort_unstable();
            self.port_pairs.dedup();
            let mut k = 0;
            for &(l, _) in &self.port_pairs {
                while links[k] != l {
                    k += 1;
                }
                port_counts[k] += 1;
            }
        }
        let l = router.links();
        let mut t_ideal: f64 = 0.0;
        let mut t_alone: f64 = 0.0;
        for (k, &link) in links.iter().enumerate() {
            let t = bytes[k] / l.capacity(link);
            t_alone = t_alone.max(t);
            if l.level(link) == 0 {
                t_ideal = t_ideal.max(t);
            }
        }
        Ok(Demand {
            links,
            bytes,
            flows,
            ports: port_counts,
            t_ideal,
            t_alone,
            n_flows: self.acc.n_flows,
            total_bytes: self.acc.total_bytes,
        })
    }
}

/// Most rank-level flows one job's iteration may have: each is routed, every time the job's
/// traffic is evaluated (some minutes at 2^32); a2a on 10 nodes x 100,000 ranks per node
/// (10^12 flows) ran for hours and was killed for memory.
pub const MAX_JOB_FLOWS: u64 = 1 << 32;

/// Check what [`for_each_node_flow`] needs: nodes on the fabric, finite bytes, explicit
/// flows' ranks in range. The one check of every consumer of a job's flows.
pub fn check_traffic(router: &Router, nodes: &[u32], traffic: &Traffic) -> Result<(), String> {
    let n_nodes = router.links().n_nodes();
    if let Some(&bad) = nodes.iter().find(|&&x| x >= n_nodes) {
        return Err(format!("node {bad} is not on the fabric ({n_nodes} nodes)"));
    }
    if !(traffic.bytes.is_finite() && traffic.bytes >= 0.0) {
        return Err(format!("bytes must be a finite number >= 0, got {}", traffic.bytes));
    }
    let ppn = if traffic.pattern.node_level() { 1 } else { traffic.ranks_per_node.max(1) };
    let ranks = nodes.len() as u64 * ppn as u64;
    if ranks > u32::MAX as u64 {
        return Err("too many ranks".into());
    }
    let ranks = ranks as u32;
    let flows = traffic.pattern.max_flows(ranks);
    if flows > MAX_JOB_FLOWS {
        return Err(format!(
            "pattern {} on {} nodes x {ppn} ranks per node makes {flows} flows per iteration; at most {MAX_JOB_FLOWS} (2^32) are evaluated: give fewer ranks_per_node or nodes",
            traffic.pattern.name(),
            nodes.len()
        ));
    }
    if let Pattern::Explicit(flows) = &traffic.pattern {
        if let Some(&(s, d, b)) = flows.iter().find(|&&(s, d, b)| s >= ranks || d >= ranks || !(b.is_finite() && b >= 0.0)) {
            return Err(format!("explicit flow ({s}, {d}, {b}): ranks must be below {ranks} and bytes a finite number >= 0"));
        }
    }
    Ok(())
}

/// Call `emit(src_node, dst_node, bytes)` for every flow of one iteration that leaves its
/// node (ranks mapped to `nodes` in blocks; on-node and empty flows dropped). Both the
/// per-link demand and the per-flow progressive filling read a job's traffic through this.
/// The caller has run [`check_traffic`].
pub fn for_each_node_flow(router: &Router, nodes: &[u32], traffic: &Traffic, emit: &mut dyn FnMut(u32, u32, f64)) {
    let ppn = if traffic.pattern.node_level() { 1 } else { traffic.ranks_per_node.max(1) };
    let ranks = (nodes.len() as u64 * ppn as u64) as u32;
    let node_of = |r: u32| nodes[(r / ppn) as usize];
    let leaf_of_rank = |r: u32| router.leaf_of(node_of(r));
    let pod_of_rank = |r: u32| router.pod_of(node_of(r));
    traffic.pattern.for_each_flow(ranks, traffic.bytes, traffic.seed, &leaf_of_rank, &pod_of_rank, &mut |s, d, b| {
        let (ns, nd) = (node_of(s), node_of(d));
        if ns != nd && b > 0.0 {
            emit(ns, nd, b);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::super::links::{Bandwidth, Links};
    use super::*;
    use crate::topology::Topology;

    fn setup(t: &Topology) -> (Router, DemandBuilder) {
        let l = Links::new(t, Bandwidth::default());
        let n = l.len();
        (Router::new(t, l), DemandBuilder::new(n))
    }

    #[test]
    fn one_leaf_jobs_use_node_links_only() {
        let t = Topology::preset("cab").unwrap();
        let (r, mut b) = setup(&t);
        let d = b.build(&r, &(0..18).collect::<Vec<_>>(), &Traffic::new(Pattern::AllToAll), true).unwrap();
        assert_eq!(d.links.len(), 36);
        assert!(d.links.iter().all(|&l| !r.links().is_inter_switch(l)));
        assert_eq!(d.t_alone, 17.0);
        assert_eq!(d.t_ideal, 17.0);
        assert_eq!(d.placement_penalty(), 1.0);
        assert_eq!(d.n_flows, 18 * 17);
        assert!(d.ports.iter().all(|&p| p >= 1));
    }

    #[test]
    fn ports_count_distinct_inputs() {
        // incast of 4 nodes on leaf 1 into node 0 on leaf 0 (toy tree, same pod): the
        // down-link into node 0 gets 3 flows from one L2 switch... input ports differ by path
        let t = Topology::preset("toy18").unwrap();
        let (r, mut b) = setup(&t);
        let d = b.build(&r, &[0, 3, 4, 5], &Traffic::new(Pattern::Incast), true).unwrap();
        let k = d.links.iter().position(|&l| l == r.links().node_down(0)).unwrap();
        assert_eq!(d.flows[k], 3);
        assert_eq!(d.ports[k], 1); // all arrive through A(0,0)->leaf 0
        let up = r.links().leaf_up(1, 0);
        let k = d.links.iter().position(|&l| l == up).unwrap();
        assert_eq!((d.flows[k], d.ports[k]), (3, 3)); // from three node links of leaf 1
        assert_eq!(d.t_alone, 3.0);
    }

    #[test]
    fn input_ports_do_not_depend_on_ranks_per_node() {
        // ranks per node multiply the flows between the same node pairs: the distinct input
        // ports per link stay those of one rank per node, also when the pairs kept for
        // counting them (several million here) are deduplicated on the way
        let t = Topology::preset("toy18").unwrap();
        let (r, mut b) = setup(&t);
        let nodes: Vec<u32> = (0..t.n_nodes() as u32).collect();
        let one = b.build(&r, &nodes, &Traffic::new(Pattern::AllToAll), true).unwrap();
        let mut tr = Traffic::new(Pattern::AllToAll);
        tr.ranks_per_node = 60;
        let many = b.build(&r, &nodes, &tr, true).unwrap();
        assert!(many.n_flows as usize * 2 > PORT_PAIRS_MIN, "{} flows", many.n_flows); // each crosses 2 links or more
        assert_eq!(many.links, one.links);
        assert_eq!(many.ports, one.ports);
        assert!(many.ports.iter().any(|&p| p > 1));
    }

    #[test]
    fn a_job_of_more_flows_than_the_limit_is_refused_before_any_flow() {
        let t = Topology::preset("toy18").unwrap();
        let (r, mut b) = setup(&t);
        let nodes: Vec<u32> = (0..10).collect();
        let mut tr = Traffic::new(Pattern::AllToAll);
        tr.ranks_per_node = 100_000; // 10^6 ranks: 10^12 flows (ran for hours, then killed for memory)
        let err = b.build(&r, &nodes, &tr, false).unwrap_err();
        assert_eq!(err, "pattern a2a on 10 nodes x 100000 ranks per node makes 999999000000 flows per iteration; at most 4294967296 (2^32) are evaluated: give fewer ranks_per_node or nodes");
        tr.ranks_per_node = 6_553; // 65,530 ranks: 4,294,180,370 flows, just below
        assert!(check_traffic(&r, &nodes, &tr).is_ok());
        tr.pattern = Pattern::Ring; // linear patterns take far more ranks
        tr.ranks_per_node = 400_000_000;
        assert!(check_traffic(&r, &nodes, &tr).is_ok());
    }

    #[test]
    fn ranks_per_node_drop_on_node_traffic() {
        let t = Topology::preset("toy18").unwrap();
        let (r, mut b) = setup(&t);
        let mut tr = Traffic::new(Pattern::Ring);
        tr.ranks_per_node = 4;
        // 2 nodes x 4 ranks: ring 0..7, crossing node boundaries at 3->4 and 7->0
        let d = b.build(&r, &[0, 9], &tr, false).unwrap();
        assert_eq!(d.n_flows, 2);
        assert!(b.build(&r, &[99], &tr, false).is_err());
        tr.pattern = Pattern::Explicit(vec![(0, 8, 1.0)]);
        assert!(b.build(&r, &[0, 9], &tr, false).is_err());
    }
}

//! Fat-tree fabrics: compute nodes on leaf (L1) switches, leaves grouped into pods that
//! share L2 switches, pods joined by core (L3) switches.
//!
//! Node ids are dense and leaf-major: node 0 is the first node of the first leaf of the
//! first pod. Leaves and pods may be unequal or partly populated; the *nominal* sizes
//! (`nodes_per_leaf` = K, `leaves_per_pod` = S, the largest ones present) give the padded
//! ids that routing uses (`(pod·S + leaf_in_pod)·K + port`, brief §6.3), so that the
//! D-mod-k pattern does not shift at a missing node.
//!
//! Hops follow the SC18 paper: 0 between nodes of one leaf, 2 within a pod, 4 across pods
//! (inter-switch links only).

use std::fmt;

/// A 2- or 3-level fat-tree.
#[derive(Clone, Debug)]
pub struct Topology {
    name: String,
    levels: u8,
    nodes_per_leaf: u32,
    leaves_per_pod: u32,
    uplinks_per_leaf: u32,
    uplinks_per_l2: u32,
    leaf_of_node: Vec<u32>,
    /// First node of each leaf; one extra entry at the end (= node count).
    leaf_node_start: Vec<u32>,
    pod_of_leaf: Vec<u32>,
    /// First leaf of each pod; one extra entry at the end (= leaf count).
    pod_leaf_start: Vec<u32>,
    /// Rank of each leaf / pod in name order; used where the paper's code breaks ties by name.
    leaf_name_rank: Vec<u32>,
    pod_name_rank: Vec<u32>,
    max_pod_nodes: u32,
}

/// Why a fabric description was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyError(pub String);

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TopologyError {}

/// Names of the built-in fabrics, as `--system` accepts them.
pub const PRESETS: &[&str] = &["toy18", "hype", "cab", "pinot", "sim10k", "quartz"];

impl Topology {
    /// A regular fat-tree: `pods` pods of `leaves_per_pod` leaves of `nodes_per_leaf` nodes.
    /// `uplinks_per_leaf` (W1) and `uplinks_per_l2` (W2) default to full bisection (K and S).
    /// With one pod the tree has 2 levels (leaves and one spine layer).
    pub fn fat_tree(
        name: &str,
        nodes_per_leaf: u32,
        leaves_per_pod: u32,
        pods: u32,
        uplinks_per_leaf: Option<u32>,
        uplinks_per_l2: Option<u32>,
    ) -> Result<Topology, TopologyError> {
        if nodes_per_leaf == 0 || leaves_per_pod == 0 || pods == 0 {
            return Err(TopologyError(format!(
                "nodes per leaf, leaves per pod and pods must all be at least 1 (got {nodes_per_leaf}, {leaves_per_pod}, {pods})"
            )));
        }
        let pod_sizes = vec![vec![nodes_per_leaf; leaves_per_pod as usize]; pods as usize];
        let levels = if pods == 1 { 2 } else { 3 };
        Topology::from_leaf_sizes(name, levels, &pod_sizes, uplinks_per_leaf, uplinks_per_l2, None, None)
    }

    /// A fabric from the node count of every leaf, pod by pod. Leaves may differ in size
    /// (partly populated), pods in leaf count. `leaf_names`/`pod_names`, when given, set
    /// the name order used for tie-breaking; otherwise index order is name order.
    pub fn from_leaf_sizes(
        name: &str,
        levels: u8,
        pods: &[Vec<u32>],
        uplinks_per_leaf: Option<u32>,
        uplinks_per_l2: Option<u32>,
        leaf_names: Option<&[String]>,
        pod_names: Option<&[String]>,
    ) -> Result<Topology, TopologyError> {
        if !(levels == 2 || levels == 3) {
            return Err(TopologyError(format!("only 2- and 3-level fat-trees are modelled, not {levels} levels")));
        }
        if pods.is_empty() {
            return Err(TopologyError("a fabric needs at least one pod".into()));
        }
        if levels == 2 && pods.len() != 1 {
            return Err(TopologyError(format!("a 2-level fat-tree has exactly one pod, not {}", pods.len())));
        }
        let mut leaf_of_node = Vec::new();
        let mut leaf_node_start = vec![0u32];
        let mut pod_of_leaf = Vec::new();
        let mut pod_leaf_start = vec![0u32];
        let mut nodes_per_leaf = 0u32;
        let mut leaves_per_pod = 0u32;
        let mut max_pod_nodes = 0u32;
        for (p, leaves) in pods.iter().enumerate() {
            if leaves.is_empty() {
                return Err(TopologyError(format!("pod {p} has no leaf switches")));
            }
            leaves_per_pod = leaves_per_pod.max(leaves.len() as u32);
            let mut pod_nodes = 0u32;
            for (l, &size) in leaves.iter().enumerate() {
                if size == 0 {
                    return Err(TopologyError(format!("leaf {l} of pod {p} has no nodes")));
                }
                let leaf = pod_of_leaf.len() as u32;
                nodes_per_leaf = nodes_per_leaf.max(size);
                pod_nodes += size;
                leaf_of_node.extend(std::iter::repeat(leaf).take(size as usize));
                leaf_node_start.push(leaf_of_node.len() as u32);
                pod_of_leaf.push(p as u32);
            }
            max_pod_nodes = max_pod_nodes.max(pod_nodes);
            pod_leaf_start.push(pod_of_leaf.len() as u32);
        }
        let w1 = uplinks_per_leaf.unwrap_or(nodes_per_leaf);
        let w2 = uplinks_per_l2.unwrap_or(leaves_per_pod);
        if w1 == 0 || w2 == 0 {
            return Err(TopologyError("uplinks per leaf and per L2 switch must be at least 1".into()));
        }
        let n_leaves = pod_of_leaf.len();
        let leaf_name_rank = name_ranks(leaf_names, n_leaves, "leaf")?;
        let pod_name_rank = name_ranks(pod_names, pods.len(), "pod")?;
        Ok(Topology {
            name: name.to_string(),
            levels,
            nodes_per_leaf,
            leaves_per_pod,
            uplinks_per_leaf: w1,
            uplinks_per_l2: w2,
            leaf_of_node,
            leaf_node_start,
            pod_of_leaf,
            pod_leaf_start,
            leaf_name_rank,
            pod_name_rank,
            max_pod_nodes,
        })
    }

    /// A built-in fabric by name (see [`PRESETS`] and ARCHITECTURE.md for their sources).
    pub fn preset(name: &str) -> Option<Topology> {
        let t = match name {
            // The SC18 paper's Fig. 2 tree: radix-6 switches, 2 pods x 3 leaves x 3 nodes.
            "toy18" => Topology::fat_tree("toy18", 3, 3, 2, None, None),
            // The flux-sched plugin's own regression test machine (t2004-topo.t).
            "hype" => Topology::fat_tree("hype", 8, 4, 3, None, None),
            // LLNL Cab as the paper models it: 4 pods x 18 leaves x 18 nodes.
            "cab" => Topology::fat_tree("cab", 18, 18, 4, None, None),
            // The paper's hypothetical Pinot: twice Cab.
            "pinot" => Topology::fat_tree("pinot", 18, 18, 8, None, None),
            // The CODES study fabric: radix-44 switches, 22 x 22 x 22.
            "sim10k" => Topology::fat_tree("sim10k", 22, 22, 22, None, None),
            // LLNL Quartz (seed 004): 2,688 nodes, 32 per leaf, 2:1 taper at the leaves,
            // "10 pods". 84 leaves do not split evenly into 10 pods: we use 4 pods of 9
            // leaves then 6 pods of 8, and no taper above L2 (W2 = 9).
            "quartz" => {
                let mut pods = vec![vec![32u32; 9]; 4];
                pods.extend(vec![vec![32u32; 8]; 6]);
                Topology::from_leaf_sizes("quartz", 3, &pods, Some(16), Some(9), None, None)
            }
            _ => return None,
        };
        Some(t.expect("presets are valid"))
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn levels(&self) -> u8 {
        self.levels
    }
    /// Nominal K: the largest leaf's node count.
    pub fn nodes_per_leaf(&self) -> u32 {
        self.nodes_per_leaf
    }
    /// Nominal S: the largest pod's leaf count.
    pub fn leaves_per_pod(&self) -> u32 {
        self.leaves_per_pod
    }
    /// The largest pod's node count (the paper's p).
    pub fn max_pod_nodes(&self) -> u32 {
        self.max_pod_nodes
    }
    pub fn uplinks_per_leaf(&self) -> u32 {
        self.uplinks_per_leaf
    }
    pub fn uplinks_per_l2(&self) -> u32 {
        self.uplinks_per_l2
    }
    pub fn n_nodes(&self) -> usize {
        self.leaf_of_node.len()
    }
    pub fn n_leaves(&self) -> usize {
        self.pod_of_leaf.len()
    }
    pub fn n_pods(&self) -> usize {
        self.pod_leaf_start.len() - 1
    }
    #[inline]
    pub fn leaf_of(&self, node: u32) -> u32 {
        self.leaf_of_node[node as usize]
    }
    #[inline]
    pub fn pod_of_leaf(&self, leaf: u32) -> u32 {
        self.pod_of_leaf[leaf as usize]
    }
    #[inline]
    pub fn pod_of(&self, node: u32) -> u32 {
        self.pod_of_leaf[self.leaf_of_node[node as usize] as usize]
    }
    /// Nodes of a leaf, as a range of node ids.
    #[inline]
    pub fn leaf_nodes(&self, leaf: u32) -> std::ops::Range<u32> {
        self.leaf_node_start[leaf as usize]..self.leaf_node_start[leaf as usize + 1]
    }
    #[inline]
    pub fn leaf_size(&self, leaf: u32) -> u32 {
        self.leaf_node_start[leaf as usize + 1] - self.leaf_node_start[leaf as usize]
    }
    /// Leaves of a pod, as a range of leaf ids.
    #[inline]
    pub fn pod_leaves(&self, pod: u32) -> std::ops::Range<u32> {
        self.pod_leaf_start[pod as usize]..self.pod_leaf_start[pod as usize + 1]
    }
    /// Nodes of a pod, as a range of node ids (pods are contiguous in node order).
    #[inline]
    pub fn pod_nodes(&self, pod: u32) -> std::ops::Range<u32> {
        let leaves = self.pod_leaves(pod);
        self.leaf_node_start[leaves.start as usize]..self.leaf_node_start[leaves.end as usize]
    }
    #[inline]
    pub fn leaf_name_rank(&self, leaf: u32) -> u32 {
        self.leaf_name_rank[leaf as usize]
    }
    #[inline]
    pub fn pod_name_rank(&self, pod: u32) -> u32 {
        self.pod_name_rank[pod as usize]
    }

    /// Inter-switch links on a shortest path between two nodes: 0 on one leaf, 2 within a
    /// pod, 4 across pods (brief §2.8).
    #[inline]
    pub fn hops(&self, a: u32, b: u32) -> u32 {
        let (la, lb) = (self.leaf_of(a), self.leaf_of(b));
        if la == lb {
            0
        } else if self.pod_of_leaf(la) == self.pod_of_leaf(lb) {
            2
        } else {
            4
        }
    }

    /// Padded id used by routing: `(pod·S + leaf_in_pod)·K + port` with nominal S and K.
    pub fn padded_id(&self, node: u32) -> u64 {
        let leaf = self.leaf_of(node);
        let pod = self.pod_of_leaf(leaf);
        let leaf_in_pod = (leaf - self.pod_leaf_start[pod as usize]) as u64;
        let port = (node - self.leaf_node_start[leaf as usize]) as u64;
        ((pod as u64) * self.leaves_per_pod as u64 + leaf_in_pod) * self.nodes_per_leaf as u64 + port
    }

    /// How far a node set spreads. This is the allocation class reported per job; for the
    /// `isolated` policy it equals the job's tier (T1/T2/T3).
    pub fn span_class(&self, nodes: &[u32]) -> SpanClass {
        let Some(&first) = nodes.first() else { return SpanClass::Leaf };
        let leaf0 = self.leaf_of(first);
        let pod0 = self.pod_of_leaf(leaf0);
        let mut class = SpanClass::Leaf;
        for &n in &nodes[1..] {
            let l = self.leaf_of(n);
            if l != leaf0 {
                if self.pod_of_leaf(l) != pod0 {
                    return SpanClass::Pods;
                }
                class = SpanClass::Pod;
            }
        }
        class
    }
}

/// How far a node set spreads over the fabric (reported as 1, 2, 3 in `alloc_class`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum SpanClass {
    /// One leaf: the job's traffic stays under one leaf switch.
    Leaf = 1,
    /// Several leaves of one pod: it uses leaf uplinks.
    Pod = 2,
    /// Several pods: it uses pod uplinks too.
    Pods = 3,
}

impl SpanClass {
    /// The job uses the uplinks of the leaves it is on.
    #[inline]
    pub fn spans_leaves(self) -> bool {
        self >= SpanClass::Pod
    }
    /// The job uses the uplinks of the pods it is on.
    #[inline]
    pub fn spans_pods(self) -> bool {
        self == SpanClass::Pods
    }
    /// 1, 2 or 3, as outputs write it.
    #[inline]
    pub fn number(self) -> u8 {
        self as u8
    }
}

fn name_ranks(names: Option<&[String]>, n: usize, what: &str) -> Result<Vec<u32>, TopologyError> {
    match names {
        None => Ok((0..n as u32).collect()),
        Some(names) => {
            if names.len() != n {
                return Err(TopologyError(format!("{} {what} names given for {n} {what}s", names.len())));
            }
            let mut order: Vec<usize> = (0..n).collect();
            // Byte order, as the plugin's strcmp; index breaks exact ties.
            order.sort_by(|&a, &b| names[a].as_bytes().cmp(names[b].as_bytes()).then(a.cmp(&b)));
            let mut rank = vec![0u32; n];
            for (r, &i) in order.iter().enumerate() {
                rank[i] = r as u32;
            }
            Ok(rank)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_have_the_documented_sizes() {
        let sizes = [("toy18", 18), ("hype", 96), ("cab", 1296), ("pinot", 2592), ("sim10k", 10648), ("quartz", 2688)];
        for (name, n) in sizes {
            let t = Topology::preset(name).unwrap();
            assert_eq!(t.n_nodes(), n, "{name}");
        }
        let q = Topology::preset("quartz").unwrap();
        assert_eq!(q.n_pods(), 10);
        assert_eq!(q.n_leaves(), 84);
        assert_eq!(q.uplinks_per_leaf(), 16);
        assert_eq!(q.max_pod_nodes(), 9 * 32);
        assert!(Topology::preset("nope").is_none());
    }

    #[test]
    fn hops_follow_the_paper() {
        let t = Topology::preset("toy18").unwrap();
        assert_eq!(t.hops(0, 2), 0);
        assert_eq!(t.hops(0, 3), 2);
        assert_eq!(t.hops(0, 9), 4);
        assert_eq!(t.hops(8, 9), 4);
        assert_eq!(t.leaf_of(13), 4);
        assert_eq!(t.pod_of(13), 1);
        assert_eq!(t.pod_leaves(1), 3..6);
        assert_eq!(t.pod_nodes(1), 9..18);
    }

    #[test]
    fn one_pod_trees_have_two_levels() {
        let t = Topology::fat_tree("kth", 20, 5, 1, None, None).unwrap();
        assert_eq!(t.levels(), 2);
        assert_eq!(t.n_nodes(), 100);
        assert_eq!(t.hops(0, 99), 2);
    }

    #[test]
    fn padded_ids_keep_nominal_strides() {
        // pod 0: leaves of 3 and 2 nodes; pod 1: one leaf of 3
        let t = Topology::from_leaf_sizes("x", 3, &[vec![3, 2], vec![3]], None, None, None, None).unwrap();
        assert_eq!(t.n_nodes(), 8);
        assert_eq!(t.padded_id(3), 3); // leaf 1 port 0
        assert_eq!(t.padded_id(4), 4);
        assert_eq!(t.padded_id(5), 6); // pod 1 leaf 0 = global padded leaf 2
        assert_eq!(t.max_pod_nodes(), 5);
        assert_eq!(t.span_class(&[0, 1]), SpanClass::Leaf);
        assert_eq!(t.span_class(&[0, 3]), SpanClass::Pod);
        assert_eq!(t.span_class(&[4, 5]), SpanClass::Pods);
    }

    #[test]
    fn refuses_empty_or_malformed_fabrics() {
        assert!(Topology::fat_tree("x", 0, 1, 1, None, None).is_err());
        assert!(Topology::from_leaf_sizes("x", 4, &[vec![1]], None, None, None, None).is_err());
        assert!(Topology::from_leaf_sizes("x", 2, &[vec![1], vec![1]], None, None, None, None).is_err());
        assert!(Topology::from_leaf_sizes("x", 3, &[vec![]], None, None, None, None).is_err());
        assert!(Topology::from_leaf_sizes("x", 3, &[vec![0]], None, None, None, None).is_err());
    }

    #[test]
    fn name_ranks_sort_bytewise() {
        let names: Vec<String> = ["pod10", "pod2", "pod1"].iter().map(|s| s.to_string()).collect();
        let t = Topology::from_leaf_sizes("x", 3, &[vec![1], vec![1], vec![1]], None, None, None, Some(&names)).unwrap();
        assert_eq!((t.pod_name_rank(0), t.pod_name_rank(1), t.pod_name_rank(2)), (1, 2, 0));
    }
}

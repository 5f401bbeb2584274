//! Every directed link of a fat-tree, with a dense id, a level and a capacity.
//!
//! Each cable is two independent links, one per direction (split duplex). Ids, in blocks:
//!
//! | block | link | count | id |
//! |---|---|---|---|
//! | node up | node n → its leaf | N | `n` |
//! | node down | leaf → node n | N | `N + n` |
//! | leaf up | leaf L → L2 switch A(pod(L), j) | N_L·W1 | `2N + L·W1 + j` |
//! | leaf down | A(pod(L), j) → leaf L | N_L·W1 | `2N + N_L·W1 + L·W1 + j` |
//! | L2 up | A(p, j) → core C(j, i) | P·W1·W2 | `2N + 2·N_L·W1 + (p·W1 + j)·W2 + i` |
//! | L2 down | C(j, i) → A(p, j) | P·W1·W2 | `… + P·W1·W2 + (p·W1 + j)·W2 + i` |
//!
//! N nodes, N_L leaves, P pods, W1 uplinks per leaf (= L2 switches per pod), W2 uplinks per
//! L2 switch. A 2-level tree (one pod) has no L2–core links. Capacities follow the taper
//! through the link counts (a tapered leaf simply has fewer uplinks); every link of a level
//! has that level's bandwidth ([`Bandwidth`]).

use crate::topology::Topology;

/// Link bandwidth per level, in the unit the caller chooses ("link units" by default: 1.0
/// per link, so that times come out in bytes per link unit; or e.g. bytes per second).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bandwidth {
    /// node ↔ leaf links.
    pub host: f64,
    /// leaf ↔ L2 links.
    pub leaf: f64,
    /// L2 ↔ core links.
    pub core: f64,
}

impl Default for Bandwidth {
    fn default() -> Self {
        Bandwidth { host: 1.0, leaf: 1.0, core: 1.0 }
    }
}

impl Bandwidth {
    pub fn uniform(b: f64) -> Bandwidth {
        Bandwidth { host: b, leaf: b, core: b }
    }
    pub fn of_level(&self, level: u8) -> f64 {
        match level {
            0 => self.host,
            1 => self.leaf,
            _ => self.core,
        }
    }
}

/// What a link connects (for names and reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    NodeUp { node: u32 },
    NodeDown { node: u32 },
    LeafUp { leaf: u32, l2: u32 },
    LeafDown { leaf: u32, l2: u32 },
    L2Up { pod: u32, l2: u32, core: u32 },
    L2Down { pod: u32, l2: u32, core: u32 },
}

/// The link table of one fabric: id arithmetic, levels, capacities.
#[derive(Clone, Debug)]
pub struct Links {
    n_nodes: u32,
    n_leaves: u32,
    n_pods: u32,
    w1: u32,
    w2: u32,
    three_levels: bool,
    leaf_up0: u32,
    leaf_down0: u32,
    l2_up0: u32,
    l2_down0: u32,
    end: u32,
    bw: Bandwidth,
}

impl Links {
    pub fn new(topo: &Topology, bw: Bandwidth) -> Links {
        let n = topo.n_nodes() as u32;
        let nl = topo.n_leaves() as u32;
        let np = topo.n_pods() as u32;
        let w1 = topo.uplinks_per_leaf();
        let w2 = topo.uplinks_per_l2();
        let three = topo.levels() == 3;
        let leaf_up0 = 2 * n;
        let leaf_down0 = leaf_up0 + nl * w1;
        let l2_up0 = leaf_down0 + nl * w1;
        let per_dir = if three { np * w1 * w2 } else { 0 };
        let l2_down0 = l2_up0 + per_dir;
        let end = l2_down0 + per_dir;
        Links { n_nodes: n, n_leaves: nl, n_pods: np, w1, w2, three_levels: three, leaf_up0, leaf_down0, l2_up0, l2_down0, end, bw }
    }

    /// Number of directed links.
    #[inline]
    pub fn len(&self) -> usize {
        self.end as usize
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.end == 0
    }
    pub fn bandwidth(&self) -> Bandwidth {
        self.bw
    }
    #[inline]
    pub fn node_up(&self, node: u32) -> u32 {
        node
    }
    #[inline]
    pub fn node_down(&self, node: u32) -> u32 {
        self.n_nodes + node
    }
    #[inline]
    pub fn leaf_up(&self, leaf: u32, j: u32) -> u32 {
        self.leaf_up0 + leaf * self.w1 + j
    }
    #[inline]
    pub fn leaf_down(&self, leaf: u32, j: u32) -> u32 {
        self.leaf_down0 + leaf * self.w1 + j
    }
    #[inline]
    pub fn l2_up(&self, pod: u32, j: u32, i: u32) -> u32 {
        self.l2_up0 + (pod * self.w1 + j) * self.w2 + i
    }
    #[inline]
    pub fn l2_down(&self, pod: u32, j: u32, i: u32) -> u32 {
        self.l2_down0 + (pod * self.w1 + j) * self.w2 + i
    }

    /// 0 = node–leaf, 1 = leaf–L2, 2 = L2–core.
    #[inline]
    pub fn level(&self, link: u32) -> u8 {
        if link < self.leaf_up0 {
            0
        } else if link < self.l2_up0 {
            1
        } else {
            2
        }
    }
    /// True for links between switches (the paper's hops count these).
    #[inline]
    pub fn is_inter_switch(&self, link: u32) -> bool {
        link >= self.leaf_up0
    }
    #[inline]
    pub fn capacity(&self, link: u32) -> f64 {
        self.bw.of_level(self.level(link))
    }

    pub fn kind(&self, link: u32) -> Option<LinkKind> {
        if link >= self.end {
            return None;
        }
        Some(if link < self.n_nodes {
            LinkKind::NodeUp { node: link }
        } else if link < self.leaf_up0 {
            LinkKind::NodeDown { node: link - self.n_nodes }
        } else if link < self.leaf_down0 {
            let k = link - self.leaf_up0;
            LinkKind::LeafUp { leaf: k / self.w1, l2: k % self.w1 }
        } else if link < self.l2_up0 {
            let k = link - self.leaf_down0;
            LinkKind::LeafDown { leaf: k / self.w1, l2: k % self.w1 }
        } else {
            let up = link < self.l2_down0;
            let k = link - if up { self.l2_up0 } else { self.l2_down0 };
            let (sw, core) = (k / self.w2, k % self.w2);
            let (pod, l2) = (sw / self.w1, sw % self.w1);
            if up {
                LinkKind::L2Up { pod, l2, core }
            } else {
                LinkKind::L2Down { pod, l2, core }
            }
        })
    }

    /// A readable name: `node 3->leaf 0`, `leaf 0->A(0,1)`, `A(1,2)->C(2,0)`, ...
    pub fn name(&self, link: u32, topo: &Topology) -> String {
        match self.kind(link) {
            None => format!("link {link} (not on this fabric)"),
            Some(LinkKind::NodeUp { node }) => format!("node {node}->leaf {}", topo.leaf_of(node)),
            Some(LinkKind::NodeDown { node }) => format!("leaf {}->node {node}", topo.leaf_of(node)),
            Some(LinkKind::LeafUp { leaf, l2 }) => format!("leaf {leaf}->A({},{l2})", topo.pod_of_leaf(leaf)),
            Some(LinkKind::LeafDown { leaf, l2 }) => format!("A({},{l2})->leaf {leaf}", topo.pod_of_leaf(leaf)),
            Some(LinkKind::L2Up { pod, l2, core }) => format!("A({pod},{l2})->C({l2},{core})"),
            Some(LinkKind::L2Down { pod, l2, core }) => format!("C({l2},{core})->A({pod},{l2})"),
        }
    }

    pub fn n_nodes(&self) -> u32 {
        self.n_nodes
    }
    pub fn n_leaves(&self) -> u32 {
        self.n_leaves
    }
    pub fn n_pods(&self) -> u32 {
        self.n_pods
    }
    pub fn w1(&self) -> u32 {
        self.w1
    }
    pub fn w2(&self) -> u32 {
        self.w2
    }
    pub fn three_levels(&self) -> bool {
        self.three_levels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_and_invertible() {
        for name in ["toy18", "cab", "quartz"] {
            let t = Topology::preset(name).unwrap();
            let l = Links::new(&t, Bandwidth::default());
            let n = t.n_nodes() as u32;
            let nl = t.n_leaves() as u32;
            let (w1, w2, np) = (t.uplinks_per_leaf(), t.uplinks_per_l2(), t.n_pods() as u32);
            assert_eq!(l.len() as u32, 2 * n + 2 * nl * w1 + 2 * np * w1 * w2, "{name}");
            let mut seen = vec![false; l.len()];
            for id in 0..l.len() as u32 {
                let back = match l.kind(id).unwrap() {
                    LinkKind::NodeUp { node } => l.node_up(node),
                    LinkKind::NodeDown { node } => l.node_down(node),
                    LinkKind::LeafUp { leaf, l2 } => l.leaf_up(leaf, l2),
                    LinkKind::LeafDown { leaf, l2 } => l.leaf_down(leaf, l2),
                    LinkKind::L2Up { pod, l2, core } => l.l2_up(pod, l2, core),
                    LinkKind::L2Down { pod, l2, core } => l.l2_down(pod, l2, core),
                };
                assert_eq!(back, id);
                seen[id as usize] = true;
            }
            assert!(seen.iter().all(|&s| s));
            assert!(l.kind(l.len() as u32).is_none());
        }
    }

    #[test]
    fn cab_has_7776_links_and_levels_have_their_bandwidth() {
        // The research note counts 7,777 SimGrid links for Cab (one extra loopback); ours: 7,776.
        let t = Topology::preset("cab").unwrap();
        let l = Links::new(&t, Bandwidth { host: 1.0, leaf: 2.0, core: 4.0 });
        assert_eq!(l.len(), 7776);
        assert_eq!(l.capacity(l.node_down(5)), 1.0);
        assert_eq!(l.capacity(l.leaf_up(3, 2)), 2.0);
        assert_eq!(l.capacity(l.l2_down(1, 2, 3)), 4.0);
        assert_eq!(l.name(l.l2_up(1, 2, 3), &t), "A(1,2)->C(2,3)");
        assert_eq!(l.name(l.leaf_down(19, 4), &t), "A(1,4)->leaf 19");
    }

    #[test]
    fn two_level_trees_have_no_core_links() {
        let t = Topology::fat_tree("x", 18, 16, 1, Some(9), None).unwrap();
        let l = Links::new(&t, Bandwidth::default());
        assert_eq!(l.len(), 2 * 288 + 2 * 16 * 9);
        assert!(!l.three_levels());
    }
}

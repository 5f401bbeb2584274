//! Static D-mod-k routing (brief allocation-algorithms.md §6.1), one route in O(levels)
//! without any table of pairs.
//!
//! With `d` the padded id of the destination (`Topology::padded_id`), W1 uplinks per leaf
//! and W2 per L2 switch:
//!
//! ```text
//! route(s, d):
//!   same leaf:  [s->leaf, leaf->d]
//!   j := d mod W1                        (which L2 switch of the pod)
//!   same pod:   [s->leaf, leaf(s)->A(pod,j), A(pod,j)->leaf(d), leaf->d]
//!   i := (d div W1) mod W2               (which core of group j; the divisor is W1, not K)
//!   otherwise:  [s->leaf, leaf(s)->A(ps,j), A(ps,j)->C(j,i), C(j,i)->A(pd,j), A(pd,j)->leaf(d), leaf->d]
//! ```
//!
//! This is SimGrid's FatTreeZone D-mod-k (Zahavi's PGFT D-Mod-K) with one cable per switch
//! pair; the padded ids keep the pattern from shifting at a missing node (§6.3).

use super::links::Links;
use crate::topology::Topology;

/// The directed links of one route, in order from source to destination (2, 4 or 6 links;
/// empty from a node to itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    links: [u32; 6],
    len: u8,
}

impl Route {
    #[inline]
    pub fn links(&self) -> &[u32] {
        &self.links[..self.len as usize]
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Links between switches (what the paper's hop count counts): 0, 2 or 4.
    #[inline]
    pub fn inter_switch_hops(&self) -> usize {
        (self.len as usize).saturating_sub(2)
    }
}

/// Routes on one fabric. Holds per-node leaf, pod and padded id for speed.
#[derive(Clone, Debug)]
pub struct Router {
    links: Links,
    leaf: Vec<u32>,
    pod: Vec<u32>,
    padded: Vec<u64>,
}

impl Router {
    pub fn new(topo: &Topology, links: Links) -> Router {
        let n = topo.n_nodes() as u32;
        Router {
            links,
            leaf: (0..n).map(|x| topo.leaf_of(x)).collect(),
            pod: (0..n).map(|x| topo.pod_of(x)).collect(),
            padded: (0..n).map(|x| topo.padded_id(x)).collect(),
        }
    }

    pub fn links(&self) -> &Links {
        &self.links
    }
    #[inline]
    pub fn leaf_of(&self, node: u32) -> u32 {
        self.leaf[node as usize]
    }
    #[inline]
    pub fn pod_of(&self, node: u32) -> u32 {
        self.pod[node as usize]
    }

    /// The D-mod-k route from node `s` to node `d`.
    #[inline]
    pub fn route(&self, s: u32, d: u32) -> Route {
        let l = &self.links;
        let mut r = Route { links: [0; 6], len: 0 };
        if s == d {
            return r;
        }
        let (ls, ld) = (self.leaf[s as usize], self.leaf[d as usize]);
        r.links[0] = l.node_up(s);
        if ls == ld {
            r.links[1] = l.node_down(d);
            r.len = 2;
            return r;
        }
        let pd = self.padded[d as usize];
        let w1 = l.w1() as u64;
        let j = (pd % w1) as u32;
        let (ps, pdd) = (self.pod[s as usize], self.pod[d as usize]);
        r.links[1] = l.leaf_up(ls, j);
        if ps == pdd {
            r.links[2] = l.leaf_down(ld, j);
            r.links[3] = l.node_down(d);
            r.len = 4;
            return r;
        }
        let i = ((pd / w1) % l.w2() as u64) as u32;
        r.links[2] = l.l2_up(ps, j, i);
        r.links[3] = l.l2_down(pdd, j, i);
        r.links[4] = l.leaf_down(ld, j);
        r.links[5] = l.node_down(d);
        r.len = 6;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::super::links::{Bandwidth, LinkKind};
    use super::*;

    fn router(t: &Topology) -> Router {
        Router::new(t, Links::new(t, Bandwidth::default()))
    }

    fn names(r: &Router, t: &Topology, s: u32, d: u32) -> Vec<String> {
        r.route(s, d).links().iter().map(|&x| r.links().name(x, t)).collect()
    }

    #[test]
    fn e11_toy_tree_paths() {
        let t = Topology::preset("toy18").unwrap();
        let r = router(&t);
        // 0 -> 4 (same pod): L0 -> A(0,1) -> L1, because 4 mod 3 = 1.
        assert_eq!(names(&r, &t, 0, 4), ["node 0->leaf 0", "leaf 0->A(0,1)", "A(0,1)->leaf 1", "leaf 1->node 4"]);
        // 0 -> 13: j = 13 mod 3 = 1, i = (13 div 3) mod 3 = 1.
        assert_eq!(
            names(&r, &t, 0, 13),
            ["node 0->leaf 0", "leaf 0->A(0,1)", "A(0,1)->C(1,1)", "C(1,1)->A(1,1)", "A(1,1)->leaf 4", "leaf 4->node 13"]
        );
        // 13 -> 0: L4 -> A(1,0) -> C(0,0) -> A(0,0) -> L0.
        assert_eq!(
            names(&r, &t, 13, 0),
            ["node 13->leaf 4", "leaf 4->A(1,0)", "A(1,0)->C(0,0)", "C(0,0)->A(0,0)", "A(0,0)->leaf 0", "leaf 0->node 0"]
        );
        assert!(r.route(5, 5).is_empty());
        assert_eq!(names(&r, &t, 0, 2), ["node 0->leaf 0", "leaf 0->node 2"]);
    }

    #[test]
    fn hop_counts_match_the_topology() {
        let t = Topology::preset("hype").unwrap();
        let r = router(&t);
        for s in 0..t.n_nodes() as u32 {
            for d in 0..t.n_nodes() as u32 {
                if s != d {
                    assert_eq!(r.route(s, d).inter_switch_hops() as u32, t.hops(s, d));
                }
            }
        }
    }

    #[test]
    fn full_tree_down_links_serve_exactly_one_node() {
        // Full tree (W1 = K): A(pod,j)->leaf L carries traffic to exactly one node, (L, port j).
        let t = Topology::preset("toy18").unwrap();
        let r = router(&t);
        let n = t.n_nodes() as u32;
        let mut dests: Vec<Vec<u32>> = vec![Vec::new(); r.links().len()];
        for s in 0..n {
            for d in 0..n {
                for &l in r.route(s, d).links() {
                    if !dests[l as usize].contains(&d) {
                        dests[l as usize].push(d);
                    }
                }
            }
        }
        for id in 0..r.links().len() as u32 {
            if let Some(LinkKind::LeafDown { leaf, l2 }) = r.links().kind(id) {
                assert_eq!(dests[id as usize], vec![t.leaf_nodes(leaf).start + l2], "link {}", r.links().name(id, &t));
            }
        }
    }

    #[test]
    fn tapered_down_links_are_shared_and_second_divisor_is_w1() {
        // Cab with a 2:1 taper (W1 = 9): core index is (d div 9) mod 18, not (d div 18).
        let t = Topology::fat_tree("cab-taper2", 18, 18, 4, Some(9), Some(18)).unwrap();
        let r = router(&t);
        let d = 400u32; // pod 1, padded id 400
        let route = r.route(0, d);
        let kind = r.links().kind(route.links()[2]).unwrap();
        assert_eq!(kind, LinkKind::L2Up { pod: 0, l2: 400 % 9, core: (400 / 9) % 18 });
        // two destinations of one leaf with equal residues mod 9 share the down-link
        let a = r.route(0, 18 + 1).links()[2];
        let b = r.route(0, 18 + 10).links()[2];
        assert_eq!(a, b);
        assert_eq!(r.links().name(a, &t), "A(0,1)->leaf 1");
    }

    #[test]
    fn padded_ids_route_around_missing_nodes() {
        // pod 0: leaves of 3 and 2 nodes (K = 3): node 5 is pod 1's first node, padded id 6.
        let t = Topology::from_leaf_sizes("x", 3, &[vec![3, 2], vec![3]], None, None, None, None).unwrap();
        let r = router(&t);
        let route = r.route(0, 5);
        // j = 6 mod 3 = 0, i = (6 div 3) mod 2 = 0
        assert_eq!(r.links().kind(route.links()[1]).unwrap(), LinkKind::LeafUp { leaf: 0, l2: 0 });
        assert_eq!(r.links().kind(route.links()[2]).unwrap(), LinkKind::L2Up { pod: 0, l2: 0, core: 0 });
    }
}

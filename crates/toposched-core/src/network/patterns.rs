//! Communication patterns: the flows one iteration of a job sends, over its ranks.
//!
//! A job of `n` nodes with `ppn` ranks per node has `n·ppn` ranks, mapped in blocks (ranks
//! `r·ppn .. (r+1)·ppn` on the job's r-th node, node lists in ascending id order unless the
//! caller orders them otherwise). A pattern emits `(source rank, destination rank, bytes)`
//! flows; flows between ranks of one node never reach the network and are dropped by the
//! demand builder. Bytes only matter relative to each other inside a job: the job-level
//! model normalises every job by its own time alone (see `solver`).
//!
//! | name | flows per iteration |
//! |---|---|
//! | `none` | nothing (compute only) |
//! | `pairs` | Chatterbug's: rank i of the lower half exchanges (both ways) with a random rank of the upper half (a seeded permutation) |
//! | `flood` (alias `bisection`) | rank i of the lower half exchanges with rank i of the upper half |
//! | `a2a` | every ordered pair of ranks |
//! | `sub-a2a:k` | all-to-all inside consecutive groups of k ranks (default k = 8) |
//! | `subcom-a2a` | Chatterbug's subcom-a2a: all-to-all along each dimension of a balanced 3D rank grid |
//! | `stencil2d`, `stencil3d`, `stencil4d` (`stencil` = 4D, the paper's) | ±1 neighbours in every dimension of a balanced periodic rank grid |
//! | `unstructured` (alias `unstr-mesh`) | Chatterbug's unstr-mesh: 3D rank grid; each rank sends to 6..13 destinations (seeded) at offsets of at most 2 in each dimension (periodic) |
//! | `ring` | rank i sends to rank i+1 (mod n) |
//! | `incast` | every rank sends to rank 0 |
//! | `adjacent-leaf` | seed 004's adjacent-leaf bully: in each pod, the job's leaves in pairs (1st with 2nd, ...), the k-th node of one with the k-th node of the other, both ways |
//!
//! Seed 004's other bullies are placements of these patterns (python/toposched/network.py
//! builds them): the bisection bully is `pairs` over nodes ordered by pod (every pair
//! crosses the middle of the machine), the incast bully is `incast` with its root on its
//! first leaf.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One communication pattern.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    None,
    Pairs,
    Flood,
    AllToAll,
    SubA2a(u32),
    /// Chatterbug's subcom-a2a: all-to-all along each dimension of a balanced 3D rank grid.
    SubcomA2a,
    Stencil(u8),
    Unstructured,
    Ring,
    Incast,
    AdjacentLeaf,
    /// Explicit rank-level flows `(source, destination, bytes)`.
    Explicit(Vec<(u32, u32, f64)>),
}

/// `unstructured`: degrees are drawn in `[UNSTR_MIN_DEGREE, UNSTR_MAX_DEGREE)`, offsets below
/// `UNSTR_REACH` in each dimension (Chatterbug's minD, maxD, neighborhood).
pub const UNSTR_MIN_DEGREE: u32 = 6;
pub const UNSTR_MAX_DEGREE: u32 = 14;
pub const UNSTR_REACH: u32 = 3;

/// Names [`Pattern::parse`] accepts (the explicit form is given as a flow list instead).
pub const PATTERNS: &[&str] = &[
    "none",
    "pairs",
    "flood",
    "bisection",
    "a2a",
    "sub-a2a:K",
    "subcom-a2a",
    "stencil2d",
    "stencil3d",
    "stencil4d",
    "stencil",
    "unstructured",
    "unstr-mesh",
    "ring",
    "incast",
    "adjacent-leaf",
];

impl Pattern {
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let t = text.trim().to_ascii_lowercase();
        let p = match t.as_str() {
            "none" | "compute" => Pattern::None,
            "pairs" | "random-pairs" => Pattern::Pairs,
            "flood" | "bisection" | "flood-pairs" => Pattern::Flood,
            "a2a" | "all-to-all" | "alltoall" => Pattern::AllToAll,
            "sub-a2a" => Pattern::SubA2a(8),
            "subcom-a2a" => Pattern::SubcomA2a,
            "stencil2d" | "nearest-neighbor" => Pattern::Stencil(2),
            "stencil3d" => Pattern::Stencil(3),
            "stencil4d" | "stencil" => Pattern::Stencil(4),
            "unstructured" | "unstr-mesh" => Pattern::Unstructured,
            "ring" => Pattern::Ring,
            "incast" => Pattern::Incast,
            "adjacent-leaf" => Pattern::AdjacentLeaf,
            _ => {
                if let Some(k) = t.strip_prefix("sub-a2a:").or_else(|| t.strip_prefix("sub-a2a(").and_then(|s| s.strip_suffix(')'))) {
                    let k: u32 = k.parse().map_err(|_| format!("pattern {text:?}: the group size of sub-a2a must be a whole number"))?;
                    if k < 2 {
                        return Err(format!("pattern {text:?}: the group size of sub-a2a must be at least 2"));
                    }
                    Pattern::SubA2a(k)
                } else {
                    return Err(format!("unknown communication pattern {text:?}; patterns are: {}", PATTERNS.join(", ")));
                }
            }
        };
        Ok(p)
    }

    /// The canonical name (`sub-a2a:8`, `stencil4d`, `explicit`).
    pub fn name(&self) -> String {
        match self {
            Pattern::None => "none".into(),
            Pattern::Pairs => "pairs".into(),
            Pattern::Flood => "flood".into(),
            Pattern::AllToAll => "a2a".into(),
            Pattern::SubA2a(k) => format!("sub-a2a:{k}"),
            Pattern::SubcomA2a => "subcom-a2a".into(),
            Pattern::Stencil(d) => format!("stencil{d}d"),
            Pattern::Unstructured => "unstructured".into(),
            Pattern::Ring => "ring".into(),
            Pattern::Incast => "incast".into(),
            Pattern::AdjacentLeaf => "adjacent-leaf".into(),
            Pattern::Explicit(_) => "explicit".into(),
        }
    }

    /// Whether the pattern is defined on nodes (one rank per node regardless of `ppn`).
    pub fn node_level(&self) -> bool {
        matches!(self, Pattern::AdjacentLeaf)
    }

    /// At most how many flows [`Pattern::for_each_flow`] emits over `ranks` ranks (exact
    /// but for `unstructured`, whose drawn degrees it bounds by the largest, and the
    /// stencils, whose short dimensions have fewer neighbours, and `adjacent-leaf`, whose
    /// unpaired leaves send nothing): what one
    /// iteration costs, checked before any flow is made.
    pub fn max_flows(&self, ranks: u32) -> u64 {
        let n = ranks as u64;
        if n < 2 {
            return if let Pattern::Explicit(flows) = self { flows.len() as u64 } else { 0 };
        }
        match self {
            Pattern::None => 0,
            Pattern::Pairs | Pattern::Flood => 2 * (n / 2),
            Pattern::AllToAll => n * (n - 1),
            Pattern::SubA2a(k) => {
                let (k, rest) = (*k as u64, n % *k as u64);
                (n / k) * k * (k - 1) + rest * rest.saturating_sub(1)
            }
            Pattern::SubcomA2a => n * grid_dims(ranks, 3).iter().map(|&g| g as u64 - 1).sum::<u64>(),
            Pattern::Stencil(d) => n * 2 * *d as u64,
            Pattern::Unstructured => n * (UNSTR_MAX_DEGREE as u64 - 1),
            Pattern::Ring => n,
            Pattern::Incast => n - 1,
            Pattern::AdjacentLeaf => n,
            Pattern::Explicit(flows) => flows.len() as u64,
        }
    }

    /// Call `emit(src_rank, dst_rank, bytes)` for every flow of one iteration over `ranks`
    /// ranks. `leaf_of_rank` gives each rank's leaf (only `adjacent-leaf` reads it, with
    /// `pod_of_rank`). `seed` drives the random patterns.
    pub fn for_each_flow(
        &self,
        ranks: u32,
        bytes: f64,
        seed: u64,
        leaf_of_rank: &dyn Fn(u32) -> u32,
        pod_of_rank: &dyn Fn(u32) -> u32,
        emit: &mut dyn FnMut(u32, u32, f64),
    ) {
        let n = ranks;
        if n < 2 {
            if let Pattern::Explicit(flows) = self {
                for &(s, d, b) in flows {
                    emit(s, d, b);
                }
            }
            return;
        }
        match self {
            Pattern::None => {}
            Pattern::Pairs => {
                // Chatterbug `pairs`: the lower half matched to a random permutation of the upper half
                let h = n / 2;
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let mut upper: Vec<u32> = (h..2 * h).collect();
                upper.shuffle(&mut rng);
                for (i, &q) in upper.iter().enumerate() {
                    emit(i as u32, q, bytes);
                    emit(q, i as u32, bytes);
                }
            }
            Pattern::Flood => {
                let h = n / 2;
                for i in 0..h {
                    emit(i, i + h, bytes);
                    emit(i + h, i, bytes);
                }
            }
            Pattern::AllToAll => {
                for s in 0..n {
                    for d in 0..n {
                        if s != d {
                            emit(s, d, bytes);
                        }
                    }
                }
            }
            Pattern::SubA2a(k) => {
                let mut lo = 0;
                while lo < n {
                    let hi = (lo + k).min(n);
                    for s in lo..hi {
                        for d in lo..hi {
                            if s != d {
                                emit(s, d, bytes);
                            }
                        }
                    }
                    lo = hi;
                }
            }
            Pattern::SubcomA2a => {
                let g = grid_dims(n, 3);
                for r in 0..n {
                    let c = coords(r, &g);
                    for (k, &size) in g.iter().enumerate() {
                        for v in 0..size {
                            if v != c[k] {
                                let mut cc = c.clone();
                                cc[k] = v;
                                emit(r, index(&cc, &g), bytes);
                            }
                        }
                    }
                }
            }
            Pattern::Stencil(dims) => {
                let g = grid_dims(n, *dims as usize);
                let mut nbrs = Vec::with_capacity(2 * g.len());
                for r in 0..n {
                    nbrs.clear();
                    let c = coords(r, &g);
                    for (k, &size) in g.iter().enumerate() {
                        if size < 2 {
                            continue;
                        }
                        for step in [1, size - 1] {
                            let mut cc = c.clone();
                            cc[k] = (cc[k] + step) % size;
                            let q = index(&cc, &g);
                            if q != r && !nbrs.contains(&q) {
                                nbrs.push(q);
                            }
                        }
                    }
                    for &q in &nbrs {
                        emit(r, q, bytes);
                    }
                }
            }
            Pattern::Unstructured => {
                // Chatterbug `unstr-mesh`: a 3D rank grid; each rank draws a degree in
                // [UNSTR_MIN_DEGREE, UNSTR_MAX_DEGREE) and that many destinations at offsets of
                // at most UNSTR_REACH - 1 in each dimension (periodic); repeats add up, self is dropped.
                let g = grid_dims(n, 3);
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let reach = UNSTR_REACH as i64;
                let mut dests: Vec<(u32, f64)> = Vec::new();
                for r in 0..n {
                    dests.clear();
                    let c = coords(r, &g);
                    let degree = rng.gen_range(UNSTR_MIN_DEGREE..UNSTR_MAX_DEGREE);
                    for _ in 0..degree {
                        let cc: Vec<u32> = c
                            .iter()
                            .zip(g.iter())
                            .map(|(&ci, &gi)| {
                                let off = rng.gen_range(0..reach) * if rng.gen_bool(0.5) { -1 } else { 1 };
                                (ci as i64 + off).rem_euclid(gi as i64) as u32
                            })
                            .collect();
                        let q = index(&cc, &g);
                        if q == r {
                            continue;
                        }
                        match dests.iter_mut().find(|d| d.0 == q) {
                            Some(d) => d.1 += bytes,
                            None => dests.push((q, bytes)),
                        }
                    }
                    for &(q, b) in &dests {
                        emit(r, q, b);
                    }
                }
            }
            Pattern::Ring => {
                if n == 2 {
                    emit(0, 1, bytes);
                    emit(1, 0, bytes);
                } else {
                    for r in 0..n {
                        emit(r, (r + 1) % n, bytes);
                    }
                }
            }
            Pattern::Incast => {
                for r in 1..n {
                    emit(r, 0, bytes);
                }
            }
            Pattern::AdjacentLeaf => {
                // ranks are nodes here, in the job's node order; group them by leaf
                let mut groups: Vec<(u32, u32, Vec<u32>)> = Vec::new(); // (pod, leaf, ranks)
                for r in 0..n {
                    let (p, l) = (pod_of_rank(r), leaf_of_rank(r));
                    match groups.iter_mut().find(|g| g.1 == l) {
                        Some(g) => g.2.push(r),
                        None => groups.push((p, l, vec![r])),
                    }
                }
                groups.sort_by_key(|g| (g.0, g.1));
                let mut i = 0;
                while i < groups.len() {
                    let pod = groups[i].0;
                    let mut j = i;
                    while j < groups.len() && groups[j].0 == pod {
                        j += 1;
                    }
                    let mut a = i;
                    while a + 1 < j {
                        for (&x, &y) in groups[a].2.iter().zip(groups[a + 1].2.iter()) {
                            emit(x, y, bytes);
                            emit(y, x, bytes);
                        }
                        a += 2;
                    }
                    i = j;
                }
            }
            Pattern::Explicit(flows) => {
                for &(s, d, b) in flows {
                    emit(s, d, b);
                }
            }
        }
    }
}

/// A balanced factorisation of `n` into `d` dimensions (largest first), as MPI_Dims_create.
pub fn grid_dims(n: u32, d: usize) -> Vec<u32> {
    let mut dims = vec![1u32; d.max(1)];
    let mut factors = Vec::new();
    let mut m = n.max(1);
    let mut f = 2;
    while f * f <= m {
        while m % f == 0 {
            factors.push(f);
            m /= f;
        }
        f += 1;
    }
    if m > 1 {
        factors.push(m);
    }
    factors.sort_unstable_by(|a, b| b.cmp(a));
    for p in factors {
        // multiply the currently smallest dimension (first one on ties)
        let k = (0..dims.len()).min_by_key(|&k| (dims[k], k)).unwrap();
        dims[k] *= p;
    }
    dims.sort_unstable_by(|a, b| b.cmp(a));
    dims
}

fn coords(mut r: u32, g: &[u32]) -> Vec<u32> {
    let mut c = vec![0; g.len()];
    for k in (0..g.len()).rev() {
        c[k] = r % g[k];
        r /= g[k];
    }
    c
}

fn index(c: &[u32], g: &[u32]) -> u32 {
    let mut r = 0;
    for k in 0..g.len() {
        r = r * g[k] + c[k];
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flows(p: &Pattern, n: u32, seed: u64) -> Vec<(u32, u32, f64)> {
        let mut v = Vec::new();
        p.for_each_flow(n, 1.0, seed, &|r| r / 2, &|_| 0, &mut |s, d, b| v.push((s, d, b)));
        v
    }

    #[test]
    fn max_flows_counts_what_the_pattern_emits() {
        let explicit = Pattern::Explicit(vec![(0, 1, 1.0), (1, 0, 2.0), (2, 0, 1.0)]);
        for name in PATTERNS.iter().copied().chain(["sub-a2a:3", "sub-a2a:50"]) {
            let p = if name == "sub-a2a:K" { Pattern::parse("sub-a2a:4").unwrap() } else { Pattern::parse(name).unwrap() };
            for n in [0u32, 1, 2, 3, 7, 8, 12, 27, 30, 64, 97] {
                let emitted = flows(&p, n, 5).len() as u64;
                if matches!(p, Pattern::Unstructured | Pattern::Stencil(_) | Pattern::AdjacentLeaf) {
                    assert!(emitted <= p.max_flows(n), "{name} on {n}");
                } else {
                    assert_eq!(emitted, p.max_flows(n), "{name} on {n}");
                }
            }
        }
        for n in [0u32, 1, 2, 5] {
            assert_eq!(flows(&explicit, n, 0).len() as u64, explicit.max_flows(n));
        }
        // no overflow at the largest rank count
        assert_eq!(Pattern::AllToAll.max_flows(u32::MAX), u32::MAX as u64 * (u32::MAX as u64 - 1));
    }

    #[test]
    fn parse_names_round_trip() {
        for name in [
            "none",
            "pairs",
            "flood",
            "a2a",
            "sub-a2a:8",
            "subcom-a2a",
            "stencil2d",
            "stencil3d",
            "stencil4d",
            "unstructured",
            "ring",
            "incast",
            "adjacent-leaf",
        ] {
            assert_eq!(Pattern::parse(name).unwrap().name(), name);
        }
        assert_eq!(Pattern::parse("stencil").unwrap(), Pattern::Stencil(4));
        assert_eq!(Pattern::parse("sub-a2a(4)").unwrap(), Pattern::SubA2a(4));
        assert_eq!(Pattern::parse("bisection").unwrap(), Pattern::Flood);
        assert!(Pattern::parse("sub-a2a:1").is_err());
        assert!(Pattern::parse("bogus").unwrap_err().contains("patterns are"));
    }

    #[test]
    fn dims_are_balanced() {
        assert_eq!(grid_dims(16, 4), vec![2, 2, 2, 2]);
        assert_eq!(grid_dims(72, 3), vec![6, 4, 3]);
        assert_eq!(grid_dims(7, 2), vec![7, 1]);
        assert_eq!(grid_dims(64, 3), vec![4, 4, 4]);
        assert_eq!(grid_dims(1, 3), vec![1, 1, 1]);
    }

    #[test]
    fn flow_counts() {
        assert_eq!(flows(&Pattern::Flood, 10, 0).len(), 10);
        assert_eq!(flows(&Pattern::Pairs, 10, 0).len(), 10);
        assert_eq!(flows(&Pattern::Pairs, 11, 0).len(), 10);
        assert_eq!(flows(&Pattern::AllToAll, 5, 0).len(), 20);
        assert_eq!(flows(&Pattern::SubA2a(4), 10, 0).len(), 12 + 12 + 2);
        assert_eq!(flows(&Pattern::Ring, 6, 0).len(), 6);
        // 4x3x2 grid: 3 + 2 + 1 partners each
        assert_eq!(flows(&Pattern::SubcomA2a, 24, 0).len(), 24 * 6);
        assert_eq!(flows(&Pattern::Incast, 6, 0).len(), 5);
        // 3x3x3 periodic grid: 6 distinct neighbours each
        assert_eq!(flows(&Pattern::Stencil(3), 27, 0).len(), 27 * 6);
        // 2x2x2x2: +1 and -1 coincide, 4 neighbours each
        assert_eq!(flows(&Pattern::Stencil(4), 16, 0).len(), 16 * 4);
        // every flow of a symmetric pattern has its reverse
        for p in [Pattern::Pairs, Pattern::Flood, Pattern::Stencil(2)] {
            let f = flows(&p, 64, 3);
            for &(s, d, b) in &f {
                assert!(f.iter().any(|&(s2, d2, b2)| s2 == d && d2 == s && b2 == b), "{p:?}");
                assert_ne!(s, d);
            }
        }
    }

    #[test]
    fn random_patterns_follow_the_seed() {
        for p in [Pattern::Pairs, Pattern::Unstructured] {
            assert_eq!(flows(&p, 64, 7), flows(&p, 64, 7));
            assert_ne!(flows(&p, 64, 7), flows(&p, 64, 8));
        }
    }

    #[test]
    fn adjacent_leaf_pairs_leaves_of_a_pod() {
        // leaf_of_rank = r / 2: ranks 0,1 on leaf 0; 2,3 on leaf 1; 4,5 on leaf 2
        let f = flows(&Pattern::AdjacentLeaf, 6, 0);
        let mut pairs: Vec<(u32, u32)> = f.iter().map(|&(s, d, _)| (s, d)).collect();
        pairs.sort();
        assert_eq!(pairs, vec![(0, 2), (1, 3), (2, 0), (3, 1)]);
    }
}

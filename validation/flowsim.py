"""flowsim: an independent per-flow fluid simulator of bulk-synchronous jobs on a fat-tree,
the reference of the core's progressive filling (crates/toposched-core/src/network/progressive.rs).

It shares nothing with the core but the definitions: routes are written here from the
D-mod-k rule (docs/network.md, "Routing"), rates by max-min water filling over every
directed link (node links included), time by events (a flow ends, a quiet phase ends).

A job repeats iterations from time 0: a communication phase (all its flows start
together; it ends with its last flow) then a quiet phase of ``t_alone * (1 - phi) / phi``
(its compute and latency, which sharing does not stretch), ``t_alone`` being its phase
simulated alone. The run stops when every job has finished ``iterations`` phases; a
job's time together is the mean of its phases after the first. Instants closer than
``TIE`` (relative to the step) are one event, in the core as here.

Only complete trees (every leaf has K nodes, so node ids are the padded ids of the
D-mod-k rule) with one bandwidth per level.

    python validation/flowsim.py [--scenarios 30] [--seed 1]   # steady vs progressive vs flowsim
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

TIE = 1e-9


@dataclass(frozen=True)
class Tree:
    """``fattree:K=..,S=..,P=..,W1=..,W2=..``: K nodes per leaf, S leaves per pod, P pods,
    W1 up-links per leaf (one per L2 switch of its pod), W2 per L2 switch (3 levels if P > 1)."""

    K: int
    S: int
    P: int = 1
    W1: int | None = None
    W2: int | None = None
    host_bw: float = 1.0
    leaf_bw: float = 1.0
    core_bw: float = 1.0

    @property
    def w1(self) -> int:
        return self.K if self.W1 is None else self.W1

    @property
    def w2(self) -> int:
        return self.S if self.W2 is None else self.W2

    def route(self, s: int, d: int) -> list[tuple]:
        """Directed links from node s to node d, as readable tuples."""
        if s == d:
            return []
        leaf_s, leaf_d = s // self.K, d // self.K
        if leaf_s == leaf_d:
            return [("up", s), ("down", d)]
        j = d % self.w1  # the L2 switch (of each pod) the destination is reached through
        pod_s, pod_d = leaf_s // self.S, leaf_d // self.S
        if pod_s == pod_d:
            return [("up", s), ("leaf-up", leaf_s, j), ("leaf-down", leaf_d, j), ("down", d)]
        i = (d // self.w1) % self.w2  # core switch of group j; the divisor is W1
        return [("up", s), ("leaf-up", leaf_s, j), ("l2-up", pod_s, j, i), ("l2-down", pod_d, j, i), ("leaf-down", leaf_d, j), ("down", d)]

    def capacity(self, link: tuple) -> float:
        kind = link[0]
        return self.host_bw if kind in ("up", "down") else self.leaf_bw if kind.startswith("leaf") else self.core_bw


def max_min(paths: list[list[tuple]], cap: dict[tuple, float]) -> list[float]:
    """Max-min fair rates of flows with these paths (water filling): raise every unfrozen
    flow together until a link is full; freeze its flows; repeat."""
    rate = [0.0] * len(paths)
    unfrozen = set(range(len(paths)))
    remaining = {link: cap[link] for p in paths for link in p}
    while unfrozen:
        users: dict[tuple, list[int]] = {}
        for f in unfrozen:
            for link in paths[f]:
                users.setdefault(link, []).append(f)
        share = {link: remaining[link] / len(fs) for link, fs in users.items()}
        step = min(share.values())
        for f in unfrozen:
            rate[f] += step
        for link, fs in users.items():
            remaining[link] -= step * len(fs)
        full = [link for link, s in share.items() if s <= step * (1 + TIE)]
        for link in full:
            remaining[link] = 0.0
            unfrozen -= set(users[link])
    return rate


def _run(tree: Tree, jobs: list[list[tuple[int, int, float]]], quiet: list[float], iterations: int) -> list[list[float]]:
    """Every job repeats (communication phase, quiet phase) from time 0 until each has
    ``iterations`` phases; returns each job's phase durations."""
    flows = [(k, tree.route(s, d), b) for k, job in enumerate(jobs) for s, d, b in job if s != d and b > 0]
    cap = {link: tree.capacity(link) for _, p, _ in flows for link in p}
    left: dict[int, float] = {}  # flow -> bytes left, for the flows running
    phase_start = [0.0] * len(jobs)
    quiet_until: dict[int, float] = {}
    phases: list[list[float]] = [[] for _ in jobs]

    def start(k: int, t: float) -> None:
        phase_start[k] = t
        for f, (owner, _, b) in enumerate(flows):
            if owner == k:
                left[f] = b

    t = 0.0
    for k in range(len(jobs)):
        start(k, t)
    while min(len(p) for p in phases) < iterations:
        running = sorted(left)
        rates = dict(zip(running, max_min([flows[f][1] for f in running], cap)))
        dt = min([left[f] / rates[f] for f in running] + [u - t for u in quiet_until.values()])
        done = [f for f in running if left[f] / rates[f] <= dt * (1 + TIE)]
        for f in running:
            left[f] -= rates[f] * dt
        for f in done:
            del left[f]
        woken = [k for k, u in quiet_until.items() if u - t <= dt * (1 + TIE)]
        for k in woken:
            del quiet_until[k]
        t += dt
        busy = {flows[f][0] for f in left}
        for k in sorted({flows[f][0] for f in done} - busy):
            phases[k].append(t - phase_start[k])
            if quiet[k] > 0:
                quiet_until[k] = t + quiet[k]
            else:
                woken.append(k)
        for k in sorted(woken):
            start(k, t)
    return phases


def simulate(tree: Tree, jobs: list[list[tuple[int, int, float]]], phis: list[float], iterations: int = 6) -> list[dict[str, float]]:
    """Per job: t_alone, t_shared (mean phase together after the first), t_quiet, slowdown.
    A job without flows leaving its nodes, or with phi = 0, runs as alone (slowdown 1)."""
    comm = [k for k, job in enumerate(jobs) if phis[k] > 0 and any(s != d and b > 0 for s, d, b in job)]
    out = [{"t_alone": 0.0, "t_shared": 0.0, "t_quiet": 0.0, "slowdown": 1.0} for _ in jobs]
    for k in comm:
        alone = _run(tree, [jobs[k]], [0.0], 1)[0][0]
        out[k]["t_alone"] = alone
        out[k]["t_quiet"] = alone * (1 - phis[k]) / phis[k]
    if comm:
        phases = _run(tree, [jobs[k] for k in comm], [out[k]["t_quiet"] for k in comm], iterations)
        for k, p in zip(comm, phases):
            o = out[k]
            o["t_shared"] = sum(p[1:]) / len(p[1:])
            o["slowdown"] = (o["t_shared"] + o["t_quiet"]) / (o["t_alone"] + o["t_quiet"])
    return out


# ---------------------------------------------------------------------------- the comparison


PATTERNS = ["pairs", "flood", "ring", "stencil2d", "stencil3d", "sub-a2a:8", "a2a"]


def random_jobs(rng, n_nodes: int, min_nodes: int, max_nodes: int, max_a2a: int) -> list[dict]:
    """2-5 jobs of random sizes and patterns on random free nodes (the research note's sweep)."""
    perm, pos, jobs = rng.permutation(n_nodes), 0, []
    for _ in range(int(rng.integers(2, 6))):
        pat = PATTERNS[int(rng.integers(len(PATTERNS)))]
        n = int(rng.integers(min_nodes, (max_a2a if pat == "a2a" else max_nodes) + 1))
        if pos + n > n_nodes:
            break
        jobs.append({"nodes": sorted(perm[pos : pos + n].tolist()), "pattern": pat, "seed": int(rng.integers(1 << 30)), "phi": 1.0})
        pos += n
    return jobs


def node_flows(model, job: dict) -> list[tuple[int, int, float]]:
    """A job's flows as the model generates them (the traffic is shared, not the routes)."""
    f = model.pattern_flows(job["nodes"], job["pattern"], seed=job["seed"])
    return [(int(a), int(b), float(c)) for a, b, c in zip(f["src"], f["dst"], f["bytes"])]


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from toposched import _core

    ap = argparse.ArgumentParser(description="steady-state and progressive solves against flowsim on the research note's random sweep")
    ap.add_argument("--scenarios", type=int, default=30, help="scenarios per tree")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    for w1 in (18, 9):
        tree = Tree(K=18, S=16, W1=w1)
        topo = _core.Topology.fat_tree("t", 18, 16, 1, w1)
        steady = _core.NetworkModel(topo, fairness="flows", filling="steady")
        progressive = _core.NetworkModel(topo, fairness="flows", filling="progressive")
        rng = np.random.default_rng(args.seed)
        err: dict[str, list[float]] = {"steady": [], "progressive": []}
        for _ in range(args.scenarios):
            jobs = random_jobs(rng, 288, 16, 72, 32)
            ref = simulate(tree, [node_flows(steady, j) for j in jobs], [1.0] * len(jobs))
            for name, m in (("steady", steady), ("progressive", progressive)):
                est = m.evaluate(jobs)["jobs"]
                err[name] += [abs(e["slowdown"] / r["slowdown"] - 1) for e, r in zip(est, ref)]
        for name, e in err.items():
            a = np.array(e)
            print(f"{'full tree' if w1 == 18 else '2:1 taper'} {name:>11}: {len(a)} jobs, {100 * np.mean(a <= 0.10):.0f} % within 10 %, "
                  f"median error {100 * np.median(a):.2f} %, max {100 * a.max():.1f} %", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

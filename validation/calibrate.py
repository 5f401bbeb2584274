"""Calibration of the network model against the seeds' published measurements.

    python validation/calibrate.py            # print the table
    python validation/calibrate.py --write    # regenerate docs/validation-network.md's tables
    python validation/calibrate.py --fairness flows   # the same under another fairness unit

Every row is one published number (seed 000 §V-B, seed 003 §IV, seed 004's bully table),
how it was read from the OCR text, the scenario that reproduces its setting, the model's
prediction under the DEFAULT settings (docs/network.md), and the tolerance the tests
(tests/test_calibration.py) hold it to. Rows the model cannot reach are listed as misses,
with the reason, rather than left out. Deterministic: fixed seeds throughout.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toposched import _core
from toposched.network import evaluate_scenario
from toposched.nodelists import lists_from_ranges

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "validation-network.md"
START, END = "<!-- calibration:start -->", "<!-- calibration:end -->"


@dataclass
class Row:
    seed: str
    quantity: str
    published: float
    predicted: float
    #: "rel" (|pred/pub - 1| <= tol), "abs" (|pred - pub| <= tol, same unit), ">=" / "<="
    #: (one-sided bound: pred >= published - tol / pred <= published + tol)
    kind: str
    tol: float
    read: str
    #: Whether the tests hold this row (False: a documented miss, see ``why``).
    held: bool = True
    why: str = ""

    @property
    def ok(self) -> bool:
        p, q, t = self.published, self.predicted, self.tol
        if self.kind == "rel":
            return abs(q / p - 1) <= t
        if self.kind == "abs":
            return abs(q - p) <= t
        if self.kind == ">=":
            return q >= p - t
        if self.kind == "<=":
            return q <= p + t
        raise ValueError(self.kind)

    def tolerance_text(self) -> str:
        return {"rel": f"±{self.tol:.0%}", "abs": f"±{self.tol:g}", ">=": f"≥ published − {self.tol:g}", "<=": f"≤ published + {self.tol:g}"}[self.kind]


def _model(fairness: str | None) -> dict:
    return {"fairness": fairness} if fairness else {}


# ----------------------------------------------------------------------------- seed 000

PATTERNS_000 = ["stencil4d", "unstructured", "pairs", "subcom-a2a"]
NAMES_000 = {"stencil4d": "Stencil", "unstructured": "Unstr-mesh", "pairs": "Pairs", "subcom-a2a": "Sub-a2a"}


def _placements(system: str, sizes: list[int], alloc: str, seed: int) -> dict[int, list[int]]:
    """Where the engine's allocator puts jobs of ``sizes`` started together on an empty machine."""
    n = len(sizes)
    sim = _core.Simulation(
        _core.Topology.preset(system), np.arange(n, dtype=np.int64), np.zeros(n, np.int64), np.array(sizes, np.int64),
        np.full(n, 1000, np.int64), np.full(n, 1000, np.int64), queue="fcfs", alloc=alloc, options={"seed": seed} if alloc == "random" else None,
    )
    sim.step(1)
    r = sim.results()
    off, ids = lists_from_ranges(r["range_offsets"], r["range_first"], r["range_count"])
    return {i: ids[off[i] : off[i + 1]].tolist() for i in range(n) if r["status"][i] == 1}


def seed000_speedups(max_nodes: int, fairness: str | None = None, comm_fraction: float | None = None, reps: int = 8) -> dict[str, list[float]]:
    """000 §V-B on Cab: workloads of jobs of 4..max_nodes nodes packed to ~90 % of the
    machine, each a random Chatterbug pattern with 16 ranks per node; per job, its
    iteration time under topology-oblivious placement (the engine's ``random``
    allocator) over the time under interference-free placement (``isolated``), both with
    every other job running."""
    out: dict[str, list[float]] = {p: [] for p in PATTERNS_000}
    for rep in range(reps):
        rng = np.random.default_rng(rep)
        sizes: list[int] = []
        while sum(sizes) < 0.9 * 1296:
            sizes.append(int(rng.integers(4, max_nodes + 1)))
        pat = [PATTERNS_000[int(rng.integers(4))] for _ in sizes]
        iso, obl = _placements("cab", sizes, "isolated", rep), _placements("cab", sizes, "random", rep)
        both = sorted(set(iso) & set(obl))
        res = {}
        for name, pl in (("iso", iso), ("obl", obl)):
            jobs = []
            for i in both:
                j = {"nodes": pl[i], "pattern": pat[i], "ranks_per_node": 16, "seed": i}
                if comm_fraction is not None:
                    j["comm_fraction"] = comm_fraction
                jobs.append(j)
            r = evaluate_scenario({"fabric": "cab", "model": _model(fairness), "jobs": jobs})
            res[name] = [j["slowdown_vs_ideal"] for j in r["jobs"]]
        for k, i in enumerate(both):
            out[pat[i]].append(res["obl"][k] / res["iso"][k])
    return out


def rows_000(fairness: str | None) -> list[Row]:
    rows = []
    read = "§V-B 'Experimental results', running text (no table): "
    miss_a2a = (
        "Sub-a2a's all-to-alls run along the dimensions of a 3D grid of 16-rank nodes: much of "
        "its traffic stays on the node or its leaf, and what leaves is spread over many links "
        "by D-mod-k, so the model sees little to gain from isolation (1.2x); the measured "
        "1.55-1.74x must come from effects the fluid model lacks (congestion spreading, "
        "head-of-line blocking, collective synchronisation); 000's own packet-level simulation "
        "predicted 1.14x (for a2a along two dimensions; the experiments ran it along all three). "
        "Chatterbug's subcom3d-a2a takes the grid (nx, ny, nz) and a message size per dimension "
        "on its command line, which 000 does not give: the balanced grid with x fastest is an assumption"
    )
    for max_nodes, pub, overall in ((512, {"stencil4d": 1.26, "unstructured": 1.14, "pairs": 1.10, "subcom-a2a": 1.55}, 1.30),
                                    (128, {"stencil4d": 1.32, "unstructured": 1.29, "pairs": 1.08, "subcom-a2a": 1.74}, 1.35)):
        sp = seed000_speedups(max_nodes, fairness)
        for p in PATTERNS_000:
            a2a = p == "subcom-a2a"
            rows.append(Row("000", f"Cab 4-{max_nodes} nodes: mean speedup of isolation, {NAMES_000[p]}", pub[p], float(np.mean(sp[p])), "rel", 0.15,
                            read + f"'{NAMES_000[p]} ... {pub[p]}x'", held=not a2a, why=miss_a2a if a2a else ""))
        allv = [v for x in sp.values() for v in x]
        rows.append(Row("000", f"Cab 4-{max_nodes} nodes: mean speedup over all jobs", overall, float(np.mean(allv)), "rel", 0.15,
                        read + f"'average speedup over all jobs is {overall}x'"))
        if max_nodes == 512:
            rows.append(Row("000", "Cab 4-512 nodes: max speedup, Stencil", 1.5, float(np.max(sp["stencil4d"])), "rel", 0.15, read + "'maximum speedups of 1.5x and 1.4x respectively'"))
            rows.append(Row("000", "Cab 4-512 nodes: max speedup, Unstr-mesh", 1.4, float(np.max(sp["unstructured"])), "rel", 0.15, read + "'maximum speedups of 1.5x and 1.4x respectively'"))
    sp = seed000_speedups(128, fairness, comm_fraction=0.3)
    allv = np.array([v for x in sp.values() for v in x])
    rows.append(Row("000", "Cab 4-128 nodes, 30 % communication: mean speedup", 1.08, float(allv.mean()), "rel", 0.15, read + "'mean and maximum speedups obtained are 1.08x and 1.31x'"))
    rows.append(Row("000", "Cab 4-128 nodes, 30 % communication: max speedup", 1.31, float(allv.max()), "rel", 0.15, read + "same sentence"))
    return rows


# ----------------------------------------------------------------------------- seed 003

MICRO_003 = ["flood", "stencil2d", "a2a", "pairs"]  # Flood-Pairs, Nearest-Neighbor, All-to-all, Random-Pairs
APPS_003 = ["a2a", "stencil4d", "sub-a2a:8", "sub-a2a:8"]  # Qbox, MILC, Crystal Router, pF3D (stand-ins)
CATALYST = "fattree:K=20,S=15,P=1"  # 300 nodes, 2-level fat-tree (Catalyst's QLogic QDR tree, 20 nodes per leaf assumed)


def _catalyst_jobs(pats, rep, sls=None, comm_fraction=None, n_jobs=4, nodes=70):
    perm = np.random.default_rng(rep).permutation(300)
    jobs = []
    for k, p in enumerate(pats[:n_jobs]):
        # node-level traffic (one rank per node): 003's 22 ranks per node only multiply
        # the flows between two nodes, and per-port claims do not count flows
        j = {"nodes": sorted(perm[nodes * k : nodes * (k + 1)].tolist()), "pattern": p, "seed": rep * 10 + k}
        if p in MICRO_003 and comm_fraction is None:
            j["app"] = {"flood": "flood-pairs", "stencil2d": "nearest-neighbor", "a2a": "all-to-all", "pairs": "random-pairs"}[p]
        if comm_fraction is not None:
            j["app"] = "flood-pairs"
            j["comm_fraction"] = comm_fraction
        if sls is not None:
            j["service_level"] = sls[k]
        jobs.append(j)
    return jobs


def seed003(fairness: str | None = None, reps: int = 3) -> dict[str, float]:
    """003 on Catalyst: 4 jobs x 70 random nodes, 22 ranks per node; each job restarts
    until all finished once, so the sum of execution times is the sum of the jobs'
    slowdowns times their time alone (each tuned to ~30 s): penalty = mean slowdown - 1."""
    out: dict[str, list[float]] = {}

    def run(jobs, sl_table="default"):
        r = evaluate_scenario({"fabric": CATALYST, "model": {**_model(fairness), "service_levels": sl_table}, "jobs": jobs})
        return np.array([j["slowdown"] for j in r["jobs"]])

    for rep in range(reps):
        base = run(_catalyst_jobs(MICRO_003, rep))
        out.setdefault("penalty", []).append(base.mean() - 1)
        best4, worst_job, flood_high = np.inf, 0.0, np.inf
        for sls in itertools.permutations(range(4)):
            s = run(_catalyst_jobs(MICRO_003, rep, sls), "catalyst")
            best4 = min(best4, s.mean() / base.mean())
            worst_job = max(worst_job, float(np.max(s / base)))
            if sls[0] == 0:
                flood_high = min(flood_high, s[0] / base[0])
        out.setdefault("best_4sl", []).append(best4)
        out.setdefault("worst_job", []).append(worst_job)
        out.setdefault("flood_high", []).append(flood_high)
        for table in ("9:1", "254:1"):
            best = min(run(_catalyst_jobs(MICRO_003, rep, [int(b) for b in bits]), table).mean() / base.mean()
                       for bits in itertools.product("01", repeat=4) if len(set(bits)) == 2)
            out.setdefault(f"best_{table}", []).append(best)
        out.setdefault("penalty_50", []).append(run(_catalyst_jobs(MICRO_003, rep, comm_fraction=0.5)).mean() - 1)
        out.setdefault("penalty_100", []).append(run(_catalyst_jobs(MICRO_003, rep, comm_fraction=1.0)).mean() - 1)
        apps = [{**j, "comm_fraction": cf} for j, cf in zip(_catalyst_jobs(APPS_003, rep), (0.65, 0.65, 0.8, 0.5))]
        out.setdefault("penalty_apps", []).append(run(apps).mean() - 1)
        eight = _catalyst_jobs(MICRO_003 * 2, rep, n_jobs=8, nodes=35)
        out.setdefault("penalty_8", []).append(run(eight).mean() - 1)
    return {k: float(np.mean(v)) for k, v in out.items()}


def rows_003(fairness: str | None) -> list[Row]:
    r = seed003(fairness)
    read = "§IV-A running text: "
    return [
        Row("003", "4 micro-benchmarks: contention penalty, ideal -> default (mean slowdown - 1)", 0.20, r["penalty"], "abs", 0.10,
            read + "'The penalty ... is around 20% of execution time' (Fig. 1 is an image, not in the text)"),
        Row("003", "8 jobs of 35 nodes: penalty stays within 003's 'as high as 70%'", 0.70, r["penalty_8"], "<=", 0.0,
            read + "'additional tests with larger numbers of jobs ... as high as 70%' (job count and sizes not given: 8 x 35 nodes assumed)"),
        Row("003", "4 service levels (2286:254:9:1), best of 24 assignments: sum of times / default", 1.0, r["best_4sl"], ">=", 0.02,
            read + "'no assignment of jobs to service levels consistently outperforms the default'"),
        Row("003", "4 service levels: worst job's time / its default time (> 2 = 'more than 100%')", 2.0, r["worst_job"], ">=", 0.0,
            "abstract: 'may increase job execution times by more than 100%'"),
        Row("003", "Flood-Pairs at the top level: time / default time", 31 / 37, r["flood_high"], "abs", 0.10,
            "§IV-B: 'about 37 seconds to about 31 seconds' (slowest rank; ratio 0.84)"),
        Row("003", "2 levels 9:1, best assignment: sum of times / default", 1.0, r["best_9:1"], ">=", 0.02,
            "§IV-E: 'QoS still provides little to no benefit over a single default service level'"),
        Row("003", "2 levels 254:1, best assignment: sum of times / default", 1.0, r["best_254:1"], ">=", 0.02, "§IV-E, same sentence"),
        Row("003", "50 % communication: penalty below the 100 % one", r["penalty_100"], r["penalty_50"], "<=", 0.0,
            "§IV-F: 'as the amount of communication decreases the impact of contention also decreases' (no number; published = the model's 100 % penalty)"),
        Row("003", "applications (50-80 % communication): penalty below the micro-benchmarks'", r["penalty"], r["penalty_apps"], "<=", 0.0,
            "§IV-A: applications 'spend between 50% and 80% of their time in communication' and are hurt less (no number; published = the micro-benchmarks' penalty)"),
    ]


# ----------------------------------------------------------------------------- seed 004

APP_LEAVES_004 = [5, 6, 7, 8, 9, 10, 11, 12]
#: The poster's "Control": the application "runs on 8 leaf switches and 28 nodes per leaf
#: switch" (8 x 28 = the 224 nodes it names); leaves 5-12 span two of the preset's pods, so
#: the application has traffic through the second and third levels as well.
APP_PER_LEAF_004 = 28
#: Quartz leaves hold 32 nodes: 31 user nodes and one system node (poster).
USER_NODES_PER_LEAF_004 = 31
QUARTZ_LEAVES = 84
#: Random interleaved layouts averaged (the poster gives none; one layout alone varies from 0 to -10 %).
REPS_INTERLEAVED_004 = 8
APPS_004 = {"AMG": ("unstructured", "amg"), "UMT": ("stencil3d", "umt"), "pF3D": ("sub-a2a:36", "pf3d")}
# the poster's table, rows = traffic, columns in the order AMG, UMT, pF3D (see read_004)
TABLE_004 = {
    "light": (-0.70, -0.68, 0.00),
    "adjacent-leaf": (-1.74, -0.52, -0.02),
    "bisection": (-6.47, -1.94, 0.00),
    "incast": (-0.74, 0.01, -0.14),
    "interleaved": (-3.17, -0.47, -0.66),
}
READ_004 = (
    "poster table, OCR: rows 'Light Bully -0.70% -0.68% 0.00%', 'Adjacent Leaf Bully -1.74% -0.52% -0.02%', "
    "'Bisection Bully -6.47% -1.94% 0.00%', 'Incast Bully -0.74% 0.01% _0.14%' (the '_' read as '-'), "
    "'Interleaved -3.17% -0.47% -0.66%'; the column headers are lost (icons); columns read as AMG, UMT, pF3D "
    "because the conclusions say AMG was the most sensitive and bullies had 'negligible effect on pF3D'. "
    "Layouts from the poster's 'Experiments' panel: the application on 8 leaves x 28 nodes ('Application runs "
    "on 8 leaf switches and 28 nodes per leaf switch'; 'run on the Quartz system with 224 nodes'); the adjacent-leaf "
    "bully on 17 nodes per leaf (light: 10), the bisection bully on 17 per leaf, neither on the application's leaves "
    "(only 3 of their 31 user nodes are free), here on every other leaf of the machine; the incast bully on 3 nodes "
    "per leaf, i.e. the application's leaves' 3 free user nodes (28 + 3 = 31), rooted on the first"
)


def _interleaved_groups_004(rep: int) -> list[list[int]]:
    """The three applications dealt over the application's 8 leaves x 28 nodes in random
    runs per leaf (the poster: 'variable number of nodes per leaf switch run each
    application'; the runs themselves are not given)."""
    rng = np.random.default_rng(100 + rep)
    per = APP_PER_LEAF_004
    groups: list[list[int]] = [[], [], []]
    for leaf in APP_LEAVES_004:
        nodes = list(range(leaf * 32, leaf * 32 + per))
        cuts = np.sort(rng.integers(4, per - 3, size=2))
        bounds = [0, int(cuts[0]), int(cuts[1]), per]
        order = rng.permutation(3)
        for k in range(3):
            groups[int(order[k])].extend(nodes[bounds[k] : bounds[k + 1]])
    return groups


def seed004(fairness: str | None = None, reps: int = 4, reps_interleaved: int = REPS_INTERLEAVED_004) -> dict[str, tuple[float, float, float]]:
    """004 on Quartz (2:1 taper at the leaves), on the poster's layouts (READ_004): each
    application alone on 8 leaves x 28 nodes with 36 ranks per node, then with each bully:
    adjacent-leaf (17 nodes per leaf; light: 10) and bisection (17 per leaf, pairs across
    the machine's middle) on every other leaf, incast on the 3 free user nodes of each of
    the application's leaves into one node of the first; and interleaved (the three
    applications dealt over the same 8 x 28 nodes, ``reps_interleaved`` random layouts).
    Returns the degradation in percent (negative = slower, as the poster prints it)."""
    other_leaves = [leaf for leaf in range(QUARTZ_LEAVES) if leaf not in APP_LEAVES_004]
    free = USER_NODES_PER_LEAF_004 - APP_PER_LEAF_004
    bullies = {
        "light": ("adjacent-leaf", {"leaves": other_leaves, "per_leaf": 10}),
        "adjacent-leaf": ("adjacent-leaf", {"leaves": other_leaves, "per_leaf": 17}),
        "bisection": ("bisection", {"leaves": other_leaves, "per_leaf": 17}),
        "incast": ("incast", {"leaves": APP_LEAVES_004, "per_leaf": free, "offset": APP_PER_LEAF_004}),
    }
    out = {}
    for bully, (kind, place) in bullies.items():
        cells = []
        for pattern, app in APPS_004.values():
            vals = []
            for rep in range(reps if bully == "bisection" else 1):
                jobs = [
                    {"name": "app", "place": {"leaves": APP_LEAVES_004, "per_leaf": APP_PER_LEAF_004}, "pattern": pattern, "app": app, "ranks_per_node": 36},
                    {"name": "bully", "bully": kind, "place": place, "seed": rep},
                ]
                r = evaluate_scenario({"fabric": "quartz", "model": _model(fairness), "jobs": jobs})
                vals.append(-100 * (r["jobs"][0]["slowdown"] - 1))
            cells.append(float(np.mean(vals)))
        out[bully] = tuple(cells)
    sums = np.zeros(3)
    for rep in range(reps_interleaved):
        jobs = [{"name": n, "nodes": sorted(g), "pattern": p, "app": a, "ranks_per_node": 36, "seed": rep}
                for (n, (p, a)), g in zip(APPS_004.items(), _interleaved_groups_004(rep))]
        together = evaluate_scenario({"fabric": "quartz", "model": _model(fairness), "jobs": jobs})["jobs"]
        sums += [-100 * (j["slowdown"] - 1) for j in together]
    out["interleaved"] = tuple(float(v) for v in sums / reps_interleaved)
    return out


def bisection_link_load_004(fairness: str | None = None) -> dict[str, float]:
    """How hard the bisection bully loads the links it shares with AMG on the poster's
    layout (first bully seed): the links both use, the share of AMG's bytes on them, and
    the bully's utilization of each (its bytes on the link per unit of its steady-state
    iteration time, over the link's capacity): the time-average loads of the job-level
    solve, under which an M/D/1 queue adds a fraction of a packet time per hop (the model's
    queueing term reads the loads at per-flow rates instead; docs/validation-network.md)."""
    other_leaves = [leaf for leaf in range(QUARTZ_LEAVES) if leaf not in APP_LEAVES_004]
    pattern, app = APPS_004["AMG"]
    jobs = [
        {"name": "app", "place": {"leaves": APP_LEAVES_004, "per_leaf": APP_PER_LEAF_004}, "pattern": pattern, "app": app, "ranks_per_node": 36},
        {"name": "bully", "bully": "bisection", "place": {"leaves": other_leaves, "per_leaf": 17}, "seed": 0},
    ]
    amg, bully = evaluate_scenario({"fabric": "quartz", "model": _model(fairness), "jobs": jobs})["jobs"]
    model = _core.NetworkModel(_core.Topology.preset("quartz"))
    demand = {}
    for j in (amg, bully):
        d = model.demand(j["node_ids"], j["pattern"], ranks_per_node=j["ranks_per_node"], seed=j["seed"])
        demand[j["name"]] = dict(zip(d["links"].tolist(), d["bytes"].tolist()))
    a, b = demand["app"], demand["bully"]
    shared = sorted(set(a) & set(b))
    rho = np.array([b[link] / bully["t_shared"] / model.link_capacity(link) for link in shared])
    return {
        "shared_links": float(len(shared)),
        "amg_bytes_share": float(sum(a[link] for link in shared) / sum(a.values())),
        "rho_mean": float(rho.mean()) if len(rho) else 0.0,
        "rho_max": float(rho.max()) if len(rho) else 0.0,
    }


def rows_004(fairness: str | None) -> list[Row]:
    r = seed004(fairness)
    load = bisection_link_load_004(fairness)
    rows = []
    misses = {
        ("bisection", "AMG"): (
            f"on the poster's layout the bisection bully shares links with AMG (its pairs cross the second and third "
            f"levels AMG's traffic between its two pods uses) but none that is oversubscribed, so link sharing takes "
            f"nothing from AMG; what the model predicts ({r['bisection'][0]:.2f} %) is the queueing delay of AMG's "
            f"small messages on the links the bully loads (docs/network.md, 'Queueing delay'): it makes the bisection "
            f"bully the worst, as the poster found, but is a fraction of the -6.47 % measured. The shared links carry "
            f"{load['amg_bytes_share']:.1%} of AMG's bytes and {load['shared_links']:.0f} links; the bully's pairs at "
            f"per-flow rates saturate some of them (docs/validation-network.md, 'Mechanisms tried'). What is left is "
            f"congestion spreading from the bully's saturated links (credit back-pressure, head-of-line blocking), a "
            f"packet-level effect no fluid model represents"
        ),
        ("interleaved", "UMT"): (
            f"the poster gives no interleaving; on random runs per leaf UMT's stencil meets AMG's traffic on leaf "
            f"uplinks the 2:1 taper oversubscribes ({r['interleaved'][1]:.2f} % on average over {REPS_INTERLEAVED_004} random "
            f"layouts, against -0.47 %)"
        ),
    }
    for bully, pub in TABLE_004.items():
        for k, app in enumerate(APPS_004):
            why = misses.get((bully, app), "")
            rows.append(Row("004", f"Quartz, {bully} {'bully' if bully != 'interleaved' else 'workload'}: {app} change (%)", pub[k], r[bully][k], "abs", 3.0,
                            READ_004 if not rows else "see the first 004 row", held=not why, why=why))
    worst = min(v for cells in r.values() for v in cells)
    rows.append(Row("004", "every degradation at most 7 % (most negative cell, %)", -7.0, worst, ">=", 0.0, "poster abstract: 'all the performance degradation being 7% or less'"))
    return rows


# ------------------------------------------------- seed 004: mechanisms for the bisection bully
#
# Issue 12 asks for a mechanism that makes 004's "the bisection bully caused the largest
# performance impact" hold. Each candidate below is measured on the poster's layouts (the
# same scenarios as ``seed004``, first bully seed) as what it would ADD to each bully cell,
# since link sharing takes nothing from the applications there. Candidate (a) at the
# per-flow reading became the model's queueing delay (docs/network.md, "Queueing delay");
# the numbers (docs/validation-network.md, "Mechanisms tried for the bisection bully") say
# why the others were not kept.

#: Omni-Path carries 2-10 KB packets (MTU 2048, 4096, 8192 or 10240 bytes); the 4 KB of
#: InfiniBand-compatible verbs and the 10 KB maximum bracket what Quartz's MPI used.
MTU_BYTES_004 = (4096, 10240)
MECHANISMS_004 = {
    "a": "(a) M/D/1 queueing on each link, mean over AMG's messages",
    "b": "(b) the same waits, iteration paced by the slowest message (max over AMG's paths)",
    "b-node": "(b') each node waits for its slowest message (max per source node, mean over nodes)",
    "c": "(c) switch-level: every switch crossed delays by its busiest output port's M/D/1 wait",
}
MECH_BULLIES_004 = ("light", "adjacent-leaf", "bisection", "incast")


def _maxmin_rates(paths: list[np.ndarray], cap: np.ndarray) -> np.ndarray:
    """Per-flow max-min rates (water filling) of flows with unbounded demand: a bully's
    pairs stream independently, each as fast as its bottleneck allows."""
    n = len(paths)
    if n == 0:
        return np.zeros(0)
    flow_of = np.repeat(np.arange(n), [len(p) for p in paths])
    link_of = np.concatenate(paths)
    rate, active, rem = np.zeros(n), np.ones(n, bool), cap.astype(float).copy()
    while active.any():
        live = active[flow_of]
        count = np.bincount(link_of[live], minlength=len(cap))
        used = count > 0
        step = float(np.min(rem[used] / count[used]))
        rate[active] += step
        rem -= step * count
        saturated = used & (rem <= 1e-12 * cap)
        active[np.unique(flow_of[live & saturated[link_of]])] = False
    return rate


def _md1_wait_packets(rho: np.ndarray, inputs: np.ndarray) -> np.ndarray:
    """Mean M/D/1 waiting time in packet times, rho / (2 (1 - rho)), bounded by round-robin
    output arbitration: a packet waits at most one packet from each input port feeding the
    link (``inputs``), the bound that holds on a saturated link (rho = 1)."""
    rho = np.clip(rho, 0.0, 1.0)
    with np.errstate(divide="ignore"):
        w = np.where(rho < 1.0, rho / (2.0 * (1.0 - np.minimum(rho, 1.0 - 1e-12))), np.inf)
    return np.minimum(w, inputs)


def mechanisms_004(mtus: tuple[int, ...] = MTU_BYTES_004) -> list[dict]:
    """Each candidate mechanism's added degradation (%, negative = slower, as the poster
    prints it) for AMG and UMT next to each bully, under two readings of the bully's link
    load: ``model`` (time-average rates of the default solve: a job loads link l at
    ``bytes_l / t_alone x phi / slowdown``, the bully's pairs held to its busiest link's
    pace) and ``per-flow`` (the bully's pairs as independent streams at per-flow max-min
    rates). The latency part of an application's iteration is stretched by the added wait
    per message over its message latency: ``change = -100 x latency_fraction x wait /
    message_latency``. Waits are the extra over the application alone (its own load
    included on both sides). Also: the share of AMG's node-to-node paths that touch a link
    the bully uses, and one at more than 90 % load."""
    from toposched.jobmodel import timing_for

    timing = timing_for("quartz")
    model = _core.NetworkModel(_core.Topology.preset("quartz"))
    n_links = model.n_links
    cap = np.array([model.link_capacity(x) for x in range(n_links)])
    names = [model.link_name(x) for x in range(n_links)]
    tail = [s.split("->")[0] for s in names]
    head = [s.split("->")[1] for s in names]
    ports_of: dict[str, list[int]] = {}
    for x in range(n_links):
        ports_of.setdefault(tail[x], []).append(x)
    other_leaves = [leaf for leaf in range(QUARTZ_LEAVES) if leaf not in APP_LEAVES_004]
    free = USER_NODES_PER_LEAF_004 - APP_PER_LEAF_004
    places = {
        "light": ("adjacent-leaf", {"leaves": other_leaves, "per_leaf": 10}),
        "adjacent-leaf": ("adjacent-leaf", {"leaves": other_leaves, "per_leaf": 17}),
        "bisection": ("bisection", {"leaves": other_leaves, "per_leaf": 17}),
        "incast": ("incast", {"leaves": APP_LEAVES_004, "per_leaf": free, "offset": APP_PER_LEAF_004}),
    }

    def flows(j):
        f = model.pattern_flows(j["node_ids"], j["pattern"], ranks_per_node=j["ranks_per_node"], seed=j["seed"])
        return f["src"].tolist(), f["dst"].tolist(), f["bytes"]

    def model_rho(j):
        rho = np.zeros(n_links)
        if j["phi"] > 0 and j["pattern"] != "none":
            d = model.demand(j["node_ids"], j["pattern"], ranks_per_node=j["ranks_per_node"], seed=j["seed"])
            if d["t_alone"] > 0:
                # duty cycle from the bandwidth slowdown alone (without the queueing term)
                rho[d["links"]] = d["bytes"] / d["t_alone"] / cap[d["links"]] * j["phi"] / (j["slowdown"] - j["queueing"])
        return rho

    out = []
    for app in ("AMG", "UMT"):
        pattern, prof = APPS_004[app]
        for bully in MECH_BULLIES_004:
            kind, place = places[bully]
            jobs = [
                {"name": "app", "place": {"leaves": APP_LEAVES_004, "per_leaf": APP_PER_LEAF_004}, "pattern": pattern, "app": prof, "ranks_per_node": 36},
                {"name": "bully", "bully": kind, "place": place, "seed": 0},
            ]
            a, b = evaluate_scenario({"fabric": "quartz", "jobs": jobs})["jobs"]
            src, dst, nbytes = flows(a)
            pair_of: dict[tuple[int, int], float] = {}
            for s, d, w in zip(src, dst, nbytes.tolist()):
                pair_of[(s, d)] = pair_of.get((s, d), 0.0) + w
            pairs = sorted(pair_of)
            weight = np.array([pair_of[p] for p in pairs])
            a_paths = [np.array(model.route(s, d)) for s, d in pairs]
            bs, bd, _ = flows(b)
            b_paths = [np.array(model.route(s, d)) for s, d in zip(bs, bd)]
            inputs = np.zeros(n_links)
            feed: dict[int, set] = {}
            for p in b_paths:
                for u, v in zip(p[:-1].tolist(), p[1:].tolist()):
                    feed.setdefault(v, set()).add(u)
            for v, us in feed.items():
                inputs[v] = len(us)
            own = model_rho(a)
            used_by_bully = np.zeros(n_links, bool)
            for p in b_paths:
                used_by_bully[p] = True
            rate = _maxmin_rates(b_paths, cap)
            per_flow = np.zeros(n_links)
            for p, r in zip(b_paths, rate):
                per_flow[p] += r
            loads = {"model": model_rho(b), "per-flow": np.minimum(per_flow / cap, 1.0)}
            for source, rho_b in loads.items():
                extra = _md1_wait_packets(own + rho_b, inputs + 1) - _md1_wait_packets(own, np.ones(n_links))
                extra = np.maximum(extra, 0.0)
                # switch-level: the busiest output port's wait, for every switch a path crosses
                sw_wait = {sw: float(_md1_wait_packets(rho_b[ls], inputs[ls] + 1).max()) for sw, ls in ports_of.items()}
                link_sum = np.array([extra[p].sum() for p in a_paths]) if a_paths else np.zeros(0)
                switch_sum = np.array([sum(sw_wait[head[x]] for x in p[:-1].tolist()) for p in a_paths]) if a_paths else np.zeros(0)
                per_node: dict[int, float] = {}
                for (s, _), w in zip(pairs, link_sum):
                    per_node[s] = max(per_node.get(s, 0.0), float(w))
                touch = np.array([used_by_bully[p].any() for p in a_paths]) if a_paths else np.zeros(0, bool)
                hot = np.array([(rho_b[p] > 0.9).any() for p in a_paths]) if a_paths else np.zeros(0, bool)
                for mtu in mtus:
                    packet_s = mtu / timing.link_bytes_per_s
                    scale = -100.0 * (a["latency_fraction"] or 0.0) * packet_s / timing.message_latency_s
                    agg = {
                        "a": float(np.average(link_sum, weights=weight)) if len(link_sum) else 0.0,
                        "b": float(link_sum.max()) if len(link_sum) else 0.0,
                        "b-node": float(np.mean(list(per_node.values()))) if per_node else 0.0,
                        "c": float(np.average(switch_sum, weights=weight)) if len(switch_sum) else 0.0,
                    }
                    out.append({
                        "app": app, "bully": bully, "load": source, "mtu": mtu,
                        "paths_touched": float(touch.mean()) if len(touch) else 0.0,
                        "paths_hot": float(hot.mean()) if len(hot) else 0.0,
                        **{k: scale * v for k, v in agg.items()},
                    })
    return out


def mechanism_verdicts_004(meas: list[dict]) -> list[dict]:
    """Per mechanism, load reading and MTU: the four AMG bully cells it would predict (the
    fluid model's 0 plus its term), whether the bisection finding then holds (strictly
    worse by 0.1 point, as ``findings`` tests it), and how many of the 8 AMG and UMT bully
    cells stay within 3 points of the poster."""
    out = []
    keys = sorted({(m["load"], m["mtu"]) for m in meas})
    for mech in MECHANISMS_004:
        for load, mtu in keys:
            cell = {(m["app"], m["bully"]): m[mech] for m in meas if m["load"] == load and m["mtu"] == mtu}
            amg = {b: cell[("AMG", b)] for b in MECH_BULLIES_004}
            holds = all(amg["bisection"] < amg[b] - 0.1 for b in MECH_BULLIES_004 if b != "bisection")
            within = sum(abs(cell[(app, b)] - TABLE_004[b][k]) <= 3.0 for k, app in enumerate(("AMG", "UMT")) for b in MECH_BULLIES_004)
            out.append({"mechanism": mech, "load": load, "mtu": mtu, "amg": amg, "finding_holds": holds, "cells_within": within})
    return out


def mechanisms_markdown(meas: list[dict]) -> str:
    verdicts = mechanism_verdicts_004(meas)
    bis = next(m for m in meas if m["app"] == "AMG" and m["bully"] == "bisection" and m["load"] == "model")
    inc = next(m for m in meas if m["app"] == "AMG" and m["bully"] == "incast" and m["load"] == "model")
    bis_pf = next(m for m in meas if m["app"] == "AMG" and m["bully"] == "bisection" and m["load"] == "per-flow")
    inc_pf = next(m for m in meas if m["app"] == "AMG" and m["bully"] == "incast" and m["load"] == "per-flow")
    lines = [
        MECH_START,
        "",
        "Generated by `python validation/calibrate.py --write`. What each candidate would add to AMG's "
        "bully cells (%, negative = slower; link sharing takes nothing from AMG in any of them), on the "
        "poster's layouts, first bully seed, the bully's load alone (the model's queueing term is (a) at the "
        "per-flow reading with every job's flows together, over four seeds: the calibration table). Poster: light -0.70, adjacent-leaf -1.74, bisection -6.47, incast -0.74. "
        f"AMG's node-to-node paths touching a link the bully uses: bisection {bis['paths_touched']:.1%}, "
        f"incast {inc['paths_touched']:.1%}, adjacent-leaf and light none; touching one loaded above 90 %: "
        f"{bis['paths_hot']:.1%} and {inc['paths_hot']:.1%} under the model's rates, "
        f"{bis_pf['paths_hot']:.1%} and {inc_pf['paths_hot']:.1%} with the bully's pairs at per-flow max-min rates.",
        "",
        "| mechanism | bully load | MTU | light | adjacent-leaf | bisection | incast | bisection worst (by 0.1) | AMG+UMT bully cells within 3 points (of 8) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for v in verdicts:
        a = v["amg"]
        lines.append(
            f"| {MECHANISMS_004[v['mechanism']]} | {v['load']} | {v['mtu'] // 1024} KB | {a['light']:.2f} | {a['adjacent-leaf']:.2f} | "
            f"{a['bisection']:.2f} | {a['incast']:.2f} | {'yes' if v['finding_holds'] else 'no'} | {v['cells_within']} |"
        )
    lines += ["", MECH_END]
    return "\n".join(lines)


MECH_START, MECH_END = "<!-- mechanisms:start -->", "<!-- mechanisms:end -->"


# ----------------------------------------------------------------------------- output


def all_rows(fairness: str | None = None) -> list[Row]:
    return rows_000(fairness) + rows_003(fairness) + rows_004(fairness)


def findings(fairness: str | None = None) -> dict[str, bool]:
    """Each seed's qualitative finding under the given (default: the default) model."""
    sp = seed000_speedups(512, fairness)
    m = {p: float(np.mean(v)) for p, v in sp.items()}
    s3 = seed003(fairness, reps=3)
    s4 = seed004(fairness)
    return {
        "000: isolation helps Stencil and Unstr-mesh more than Pairs": min(m["stencil4d"], m["unstructured"]) > m["pairs"],
        "003: coarse service levels reorder jobs but do not raise throughput": s3["best_4sl"] >= 0.98 and s3["worst_job"] > 1.0,
        # strictly worse, by a visible margin: a tie at 0 (no bully slows anything) is not the finding
        "004: the bisection bully is the worst bully": all(min(s4["bisection"]) < min(s4[b]) - 0.1 for b in ("light", "adjacent-leaf", "incast")),
        "004: every degradation <= 7 %": min(v for c in s4.values() for v in c) >= -7.0,
    }


def markdown(rows: list[Row], found: dict[str, bool], fairness: str | None) -> str:
    lines = [
        START,
        "",
        f"Generated by `python validation/calibrate.py --write` (model settings: {'default' if not fairness else 'fairness=' + fairness}). "
        "Do not edit by hand; tests/test_calibration.py checks every held row and the findings.",
        "",
        "| seed | quantity | published | predicted | tolerance | within | held by tests |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r.seed} | {r.quantity} | {r.published:.3g} | {r.predicted:.3g} | {r.tolerance_text()} | {'yes' if r.ok else '**no**'} | {'yes' if r.held else 'no (miss)'} |")
    n_ok = sum(r.ok for r in rows)
    lines += ["", f"{n_ok} of {len(rows)} rows within tolerance.", "", "Findings under these settings:", ""]
    lines += [f"* {k}: {'holds' if v else '**does not hold**'}" for k, v in found.items()]
    lines += ["", "How each number was read (OCR text of the seeds):", ""]
    seen = set()
    for r in rows:
        if r.read not in seen and not r.read.startswith("see the first"):
            seen.add(r.read)
            lines.append(f"* {r.seed}, {r.quantity}: {r.read}")
    misses = [r for r in rows if not r.held]
    if misses:
        lines += ["", "Misses (not held by the tests) and why:", ""]
        lines += [f"* {r.seed}, {r.quantity}: {r.why}" for r in misses]
    lines += ["", END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite the table in docs/validation-network.md")
    ap.add_argument("--fairness", choices=["jobs", "job-maxmin", "ports", "flows"], help="evaluate under another fairness unit (not written)")
    args = ap.parse_args(argv)
    rows = all_rows(args.fairness)
    text = markdown(rows, findings(args.fairness), args.fairness)
    if args.write and not args.fairness:
        doc = DOC.read_text()
        a, b = doc.index(START), doc.index(END) + len(END)
        doc = doc[:a] + text + doc[b:]
        a, b = doc.index(MECH_START), doc.index(MECH_END) + len(MECH_END)
        doc = doc[:a] + mechanisms_markdown(mechanisms_004()) + doc[b:]
        DOC.write_text(doc)
        print(f"wrote {DOC}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How fast the node agent's best-radius placement answers (not a test).

    python benches/bench_node_placement.py

For each node shape: the time of one placement on the empty node for several sizes, and
the mean time per decision while filling the node with random jobs (1-16 cores) and
releasing random ones, as an agent under load would. Best of 3 runs.
"""

from __future__ import annotations

import random
import time

from toposched.node.hwloc import read_hwloc_xml, synthetic_topology
from toposched.node.placement import NodeState, best_placement, decide, holding_for
from toposched.node.requirement import Requirement

SHAPES = {
    "cab (2x8, real XML)": lambda: read_hwloc_xml("tests/data/hwloc/llnl-cab1234_node_hwloc.xml"),
    "4 pkg x 2 NUMA x 4 cores": lambda: read_hwloc_xml("tests/data/hwloc/synthetic-4pkg-2numa-32core.xml"),
    "2 pkg x 4 NUMA x 2 L3 x 8 cores x 2 PU (128 cores)": lambda: synthetic_topology(
        [("package", 2), ("numa", 4), ("l3", 2), ("l2", 8), ("core", 1), ("pu", 2)]),
}


def churn(topo, decisions: int, seed: int = 1) -> float:
    rng = random.Random(seed)
    state = NodeState(topo)
    t0 = time.perf_counter()
    for k in range(decisions):
        req = Requirement(cores=min(rng.choice([1, 2, 4, 8, 16]), len(topo.cores)))
        d = decide(topo, state, req)
        if d.status == "ok":
            state.add(holding_for(f"j{k}", req, d.placement))
        elif state.holdings:
            state.remove(rng.choice(sorted(state.holdings)))
    return (time.perf_counter() - t0) / decisions


def main() -> None:
    print("| node | empty node, cores=1 / 8 / all (ms) | mean decision under churn (ms) |")
    print("|---|---|---|")
    for name, make in SHAPES.items():
        topo = make()
        empties = []
        for n in (1, 8, len(topo.cores)):
            best = min(_time(lambda: best_placement(topo, NodeState(topo), Requirement(cores=n))) for _ in range(3))
            empties.append(f"{best * 1e3:.2f}")
        mean = min(churn(topo, 300) for _ in range(3))
        print(f"| {name} | {' / '.join(empties)} | {mean * 1e3:.2f} |")


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()

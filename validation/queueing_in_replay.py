"""What the replay's closed loop leaves out: the queueing delay (docs/network.md, "Queueing
delay") of the jobs a `simulate --network` replay runs together.

    python validation/queueing_in_replay.py [--trace LOG] [--system cab] [--transform scale:2]
                                            [--allocs linear,isolated] [--instants 24] [--markdown]

`interfere` adds to each job's slowdown the wait its small messages spend queued behind
other jobs' packets; the replay does not (it would need a per-flow solve of a whole
component at every start and end). This script measures what that omission is worth on a
real log: it replays the log with `--network bins` (the default traffic mapping), takes
`--instants` evenly spaced instants of the replay, and evaluates the jobs running at each
one as an `interfere` scenario (the same nodes, patterns and communication fractions the
replay gave them), once with the queueing delay (the model's default) and once without it
(`mtu_bytes: 0`). The difference is the queueing term, per job and instant; beside it, the
sharing part of the slowdown (`slowdown - 1` without queueing) says how large it is next to
what the closed loop does model. Single-node jobs send nothing and are left out.

Needs ../shared/data (or --trace); prints one line per policy, or a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
TRACES = Path(os.environ.get("TOPOSCHED_TRACES", str(HERE.parent.parent / "shared" / "data" / "traces")))


def replay(trace: Path, system: str, transform: list[str], alloc: str) -> Any:
    """The `simulate --network bins` replay (EASY) of ``trace`` on ``system``."""
    from toposched.config import RunConfig
    from toposched.simulate import simulate
    from toposched.topology import load_fabric
    from toposched.transforms import apply_transforms
    from toposched.workload import read_trace

    fabric = load_fabric(system)
    workload = read_trace(str(trace))
    if transform:
        workload = apply_transforms(workload, transform, fabric_nodes=fabric.n_nodes)
    return simulate(workload, fabric, RunConfig(queue="easy", alloc=alloc, network="bins"))


def running_scenarios(result: Any, system: str, instants: int) -> list[dict[str, Any]]:
    """One `interfere` scenario per sampled instant: the multi-node jobs running then."""
    from toposched.nodelists import table_ranges

    jobs = result.jobs
    start = jobs.column("start_s").to_numpy()
    end = jobs.column("end_s").to_numpy()
    size = jobs.column("nodes").to_numpy()
    pattern = jobs.column("net_pattern").to_pylist()
    rule = jobs.column("net_rule").to_numpy()
    comm = [b["comm_fraction"] for b in result.summary["network"]["bins"]]
    roff, first, count = table_ranges(jobs)
    lo, hi = int(start.min()), int(end.max())
    scenarios = []
    # instants strictly inside the span, evenly spaced (the ends are nearly empty)
    for t in np.linspace(lo, hi, instants + 2)[1:-1].astype(np.int64):
        running = np.flatnonzero((start <= t) & (t < end) & (size > 1))
        entries = []
        for i in running:
            i = int(i)
            if pattern[i] in (None, "none"):
                continue
            nodes: list[int] = []
            for k in range(int(roff[i]), int(roff[i + 1])):
                nodes.extend(range(int(first[k]), int(first[k]) + int(count[k])))
            entries.append({"name": f"row{i}", "nodes": nodes, "pattern": pattern[i], "comm_fraction": comm[int(rule[i])]})
        if len(entries) >= 2:
            scenarios.append({"fabric": system, "jobs": entries, "instant_s": int(t)})
    return scenarios


def queueing_terms(scenario: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(queueing term, sharing part of the slowdown without queueing) of every job of the
    scenario: the default model against the same model with ``mtu_bytes: 0``."""
    from toposched.network import evaluate_scenario

    body = {k: v for k, v in scenario.items() if k != "instant_s"}
    with_q = evaluate_scenario(body)["jobs"]
    without = evaluate_scenario({**body, "model": {"mtu_bytes": 0}})["jobs"]
    term = np.array([a["slowdown"] - b["slowdown"] for a, b in zip(with_q, without)])
    sharing = np.array([b["slowdown"] - 1.0 for b in without])
    # the result says the same per job: what queueing added to the slowdown
    reported = np.array([a["queueing"] for a in with_q])
    if not np.allclose(term, reported, rtol=1e-9, atol=1e-12):
        raise SystemExit("the queueing term differs from the result's 'queueing': the model's definition changed")
    return term, sharing


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default=str(TRACES / "LLNL-Thunder-2007-1.1-cln.swf.gz"))
    ap.add_argument("--system", default="cab")
    ap.add_argument("--transform", nargs="*", default=["scale:2"])
    ap.add_argument("--allocs", default="linear,isolated")
    ap.add_argument("--instants", type=int, default=24)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    trace = Path(args.trace)
    if not trace.exists():
        print(f"error: {trace}: not found (--trace, or TOPOSCHED_TRACES for the data folder)", file=sys.stderr)
        return 2
    rows = []
    for alloc in args.allocs.split(","):
        result = replay(trace, args.system, list(args.transform), alloc)
        terms, shares = [], []
        scenarios = running_scenarios(result, args.system, args.instants)
        for sc in scenarios:
            term, sharing = queueing_terms(sc)
            terms.append(term)
            shares.append(sharing)
        q = np.concatenate(terms) if terms else np.zeros(0)
        s = np.concatenate(shares) if shares else np.zeros(0)
        rows.append(
            {
                "alloc": alloc,
                "instants": len(scenarios),
                "job_instants": len(q),
                "queued": float(np.mean(q > 1e-6)) if len(q) else 0.0,
                "q_mean": float(q.mean()) if len(q) else 0.0,
                "q_p95": float(np.percentile(q, 95)) if len(q) else 0.0,
                "q_max": float(q.max()) if len(q) else 0.0,
                "s_mean": float(s.mean()) if len(s) else 0.0,
                "replay_mean": float(result.summary["network"]["slowdown"]["mean"]) - 1.0,
            }
        )
    name = f"{trace.name} ({' '.join(args.transform) or 'as logged'}) on {args.system}, EASY, --network bins, {args.instants} instants"
    if args.markdown:
        print(f"Queueing term the replay leaves out: {name}\n")
        print("| policy | instants | job-instants | jobs queued | queueing term: mean | p95 | max | sharing part (no queueing): mean | replay's mean slowdown - 1 |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['alloc']} | {r['instants']} | {r['job_instants']:,} | {100 * r['queued']:.1f} % | {r['q_mean']:.2e} | {r['q_p95']:.2e} | {r['q_max']:.2e} | "
                f"{r['s_mean']:.2e} | {r['replay_mean']:.2e} |"
            )
    else:
        print(name)
        for r in rows:
            print(
                f"{r['alloc']}: {r['job_instants']} job-instants at {r['instants']} instants; queued {100 * r['queued']:.1f} %; "
                f"queueing term mean {r['q_mean']:.3g}, p95 {r['q_p95']:.3g}, max {r['q_max']:.3g}; sharing part mean {r['s_mean']:.3g}; "
                f"replay mean slowdown - 1: {r['replay_mean']:.3g}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

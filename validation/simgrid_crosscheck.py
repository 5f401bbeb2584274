"""Cross-check of the network model against SimGrid's per-flow max-min (optional; not run
by the tests or CI).

    pip install "pybind11<3" && pip install --no-build-isolation simgrid   # ~10 CPU-minutes
    python validation/simgrid_crosscheck.py --scenarios 20 --seed 1 [--taper] [--fairness flows] [--filling steady]

Random multi-job scenarios on the research note's 288-node two-level tree
(``fattree:K=18,S=16,P=1``, or its 2:1 taper ``W1=9``): 2-5 jobs of 16-72 random nodes,
patterns pairs / flood / ring / stencil2d / stencil3d / sub-a2a:8 / a2a (a2a jobs at most
32 nodes), pure communication. Each job's node-level flows come from the model itself
(``NetworkModel.pattern_flows``), so both sides send the same traffic; SimGrid routes them
on its own FatTreeZone (D-mod-k, split duplex) with zero latency and no TCP window
(``network/model:CM02``, ``network/TCP-gamma:0``, ``network/crosstraffic:0``: plain
max-min). Every job repeats bulk-synchronous iterations (all its flows start together,
the iteration ends with its last flow) until ``--horizon``; its steady-state slowdown is
its mean iteration time together (first iteration skipped) over its time alone, each
alone run in a subprocess (one SimGrid engine per process). The horizon is 6 times the
slowest job's time alone unless ``--horizon-factor`` (or ``--horizon``) says otherwise: a
job next to one whose iterations are tens of times longer needs a longer window to settle
(docs/validation-network.md). Prints, per scenario and
overall, the share of jobs whose model slowdown is within 10 % of SimGrid's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

#: SimGrid sizes are whole bytes: flows of b model units send b x SCALE bytes on links of
#: SCALE bytes per second, so times stay in the model's units.
SCALE = 1_000_000

PATTERNS = ["pairs", "flood", "ring", "stencil2d", "stencil3d", "sub-a2a:8", "a2a"]


def platform_xml(taper: bool) -> str:
    up = 9 if taper else 18
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="world" routing="Full">
  <cluster id="t" prefix="n" suffix="" radical="0-287" speed="1Gf" bw="{SCALE}Bps" lat="0s"
           topology="FAT_TREE" topo_parameters="2;18,16;1,{up};1,1" sharing_policy="SPLITDUPLEX"/>
</zone>
</platform>
"""


def simgrid_times(flows: list[list[tuple[int, int, float]]], taper: bool, horizon: float) -> list[float]:
    """Mean steady-state iteration time of each job (SimGrid, per-flow max-min)."""
    from simgrid import Actor, Comm, Engine

    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write(platform_xml(taper))
        xml = f.name
    # one SimGrid engine per process: callers run this in a subprocess
    # (a cluster outside a zone crashes SimGrid 4.1's Python loader, hence the zone above)
    e = Engine(["crosscheck", "--cfg=network/model:CM02", "--cfg=network/TCP-gamma:0", "--cfg=network/crosstraffic:0", "--log=root.thres:critical"])
    e.load_platform(xml)
    hosts = {int(h.name[1:]): h for h in e.all_hosts}
    times: list[list[float]] = [[] for _ in flows]

    def job(k: int) -> None:
        while Engine.clock < horizon:
            t0 = Engine.clock
            comms = [Comm.sendto_async(hosts[s], hosts[d], int(round(b * SCALE))) for s, d, b in flows[k]]
            for c in comms:
                c.wait()
            times[k].append(Engine.clock - t0)

    for k in range(len(flows)):
        Actor.create(f"job{k}", hosts[0], job, k)  # (4.1 warns it is deprecated; it works)
    e.run_until(horizon * 4)
    return [float(np.mean(t[1:])) if len(t) > 1 else float(t[0]) for t in times]


def _env() -> dict[str, str]:
    """The environment of the SimGrid subprocesses: pip's simgrid wheel puts libsimgrid.so.4.1
    beside its extension without an rpath, so the loader is told where it is."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("simgrid")
    if spec is None or spec.origin is None:
        raise SystemExit("SimGrid's Python module is not installed: pip install 'pybind11<3' && pip install --no-build-isolation simgrid")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(Path(spec.origin).parent), env.get("LD_LIBRARY_PATH", "")]))
    return env


def _run(cmd: list[str]) -> str:
    """Run a SimGrid subprocess; on failure, its last lines of output (not its arguments)."""
    out = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    if out.returncode != 0:
        tail = "\n".join((out.stderr or out.stdout).strip().splitlines()[-5:])
        raise SystemExit(f"a SimGrid run failed (exit {out.returncode}):\n{tail}")
    return out.stdout.strip().splitlines()[-1]


def _alone(flows: list[tuple[int, int, float]], taper: bool, horizon: float) -> float:
    return float(_run([sys.executable, __file__, "--alone", json.dumps(flows), "--horizon", str(horizon)] + (["--taper"] if taper else [])))


def scenario(rng: np.random.Generator, model, fabric_nodes: int = 288) -> list[dict]:
    perm, pos, jobs = rng.permutation(fabric_nodes), 0, []
    for _ in range(int(rng.integers(2, 6))):
        pat = PATTERNS[int(rng.integers(len(PATTERNS)))]
        n = int(rng.integers(16, (32 if pat == "a2a" else 72) + 1))
        if pos + n > fabric_nodes:
            break
        jobs.append({"nodes": sorted(perm[pos : pos + n].tolist()), "pattern": pat, "seed": int(rng.integers(1 << 30)), "phi": 1})
        pos += n
    return jobs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--taper", action="store_true", help="2:1 tapered leaves (W1 = 9)")
    ap.add_argument("--fairness", default="flows", help="the model's fairness unit (flows compares like with like)")
    ap.add_argument("--filling", default="auto", choices=["auto", "steady", "progressive"],
                    help="under fairness=flows: progressive filling in time or the steady-state job-level solve (auto: progressive up to 4,000 flows)")
    ap.add_argument("--horizon", type=float, default=0.0, help="simulated seconds (default: --horizon-factor iterations of the slowest job alone)")
    ap.add_argument("--horizon-factor", type=float, default=6.0,
                    help="without --horizon: simulate this many times the slowest job's time alone (longer windows approach SimGrid's long-run slowdowns)")
    ap.add_argument("--alone", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    _env()  # fail early, with the install command, when SimGrid is missing
    if args.alone is not None:
        flows = [tuple(f) for f in json.loads(args.alone)]
        print(simgrid_times([flows], args.taper, args.horizon)[0])
        return 0

    from toposched import _core
    from toposched.network import evaluate_scenario

    fabric = "fattree:K=18,S=16,P=1" + (",W1=9" if args.taper else "")
    model = _core.NetworkModel(_core.Topology.fat_tree("t", 18, 16, 1, 9 if args.taper else 18))
    rng = np.random.default_rng(args.seed)
    errors = []
    for s in range(args.scenarios):
        jobs = scenario(rng, model)
        flows = []
        for j in jobs:
            f = model.pattern_flows(j["nodes"], j["pattern"], seed=j["seed"])
            flows.append([(int(a), int(b), float(c)) for a, b, c in zip(f["src"], f["dst"], f["bytes"])])
        model_settings = {"fairness": args.fairness} | ({"filling": args.filling} if args.filling != "auto" else {})
        est = evaluate_scenario({"fabric": fabric, "model": model_settings, "jobs": jobs})["jobs"]
        horizon = args.horizon or args.horizon_factor * max(j["t_alone"] for j in est)
        together = _together(flows, args.taper, horizon)
        alone = [_alone(f, args.taper, horizon) for f in flows]
        for k, j in enumerate(jobs):
            sg = together[k] / alone[k]
            err = est[k]["slowdown"] / sg - 1
            errors.append(err)
            print(f"scenario {s} job {k} {j['pattern']:>10} {len(j['nodes']):3d} nodes: SimGrid {sg:.3f} model {est[k]['slowdown']:.3f} error {100 * err:+.1f} %", flush=True)
    e = np.abs(np.array(errors))
    window = f"horizon {args.horizon:g}" if args.horizon else f"horizon {args.horizon_factor:g}x the slowest alone"
    print(f"{len(e)} jobs, {'2:1 taper' if args.taper else 'full tree'}, fairness={args.fairness}, filling={args.filling}, {window}: "
          f"{100 * np.mean(e <= 0.10):.0f} % within 10 %, median error {100 * np.median(e):.1f} %, max {100 * e.max():.1f} %")
    return 0


def _together(flows: list[list[tuple[int, int, float]]], taper: bool, horizon: float) -> list[float]:
    return json.loads(_run(
        [sys.executable, "-c", f"import json,sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import simgrid_crosscheck as m; "
         f"print(json.dumps(m.simgrid_times(json.loads(sys.argv[1]), {taper}, {horizon})))", json.dumps(flows)]
    ))


if __name__ == "__main__":
    sys.exit(main())

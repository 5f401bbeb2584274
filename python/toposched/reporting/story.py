"""The sentences a comparison's reader needs first: what was compared, what came out, and
what to be careful about. Generated from ``compare.json`` and the run summaries only, so
the HTML report's first screen and the terminal say the same thing.

Rules (docs/report.md):

* The *baseline* is the first topology-oblivious run (``linear`` or ``random``) without a
  speedup scenario; each topology-aware policy's run without a scenario is weighed
  against it: utilization in percentage points, mean wait and makespan in human units.
* A scenario "pays for" isolation when the policy's mean wait under it is at most the
  baseline's. Utilization is not the test there: a scenario shortens jobs, so the same
  work in less busy time is its benefit, not a cost.
* A window is called *lightly loaded* when the baseline is under 60% busy or its mean wait
  is under 10 minutes: placement then barely changes waiting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..units import fmt_count, fmt_duration, fmt_percent

#: One line per allocation policy: what it does.
POLICY_TEXT = {
    "linear": "topology-oblivious: the first free nodes in node order",
    "random": "topology-oblivious: free nodes drawn at random",
    "isolated": "interference-free (SC18): no two running jobs share a leaf's or a pod's uplinks",
    "slurm-tree": "Slurm's topology/tree best fit: as few leaf switches as possible",
    "as-logged": "the schedule the log itself records",
}

#: One line per speedup scenario: what it assumes.
SCENARIO_TEXT = {
    "none": "run times as logged",
    "ta5": "jobs over 4 nodes run 5% shorter when placed topology-aware (SC18's assumed benefit)",
    "ta10": "jobs over 4 nodes run 10% shorter when placed topology-aware (SC18's assumed benefit)",
    "ta20": "jobs over 4 nodes run 20% shorter when placed topology-aware (SC18's assumed benefit)",
    # what the runs get (toposched.transforms.apply_scenario: the paper's bins, the
    # reduction growing with the node count up to 512 nodes; docs/compare.md), not the
    # bins alone: v2's 5-128-node jobs are at most 5% shorter, not 20% (tested)
    "v1": "every job 0.02-30% shorter, more for larger jobs: at most 0.9% at 16 nodes, 10%, 20% or 30% from 512 nodes, by a bin drawn at random (SC18 V1)",
    "v2": "jobs of 5-128 nodes 0.1-5% shorter, larger ones 2.5-30% shorter, more for larger jobs; 1-4 nodes not at all (SC18 V2, bins drawn at random)",
}

OBLIVIOUS = ("linear", "random")
LIGHT_UTILIZATION = 0.60
LIGHT_WAIT_S = 600.0


@dataclass
class Story:
    compared: list[str] = field(default_factory=list)
    verdict: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)

    def text(self) -> str:
        """Plain text for the terminal."""
        parts = []
        for head, lines in (("Compared", self.compared), ("Verdict", self.verdict), ("Caveats", self.caveats)):
            if lines:
                parts.append(head + ":\n" + "\n".join(f"  - {x}" for x in lines))
        return "\n".join(parts)


def _s(summary: dict[str, Any], *keys: str) -> Any:
    x: Any = summary
    for k in keys:
        if not isinstance(x, dict):
            return None
        x = x.get(k)
    return x


def _wait(summary: dict[str, Any]) -> float | None:
    mean: float | None = _s(summary, "wait_s", "mean")  # summary.json: a number or null
    return mean


def _util(summary: dict[str, Any]) -> float | None:
    mean: float | None = _s(summary, "utilization", "mean")  # summary.json: a number or null
    return mean


def _policy_text(alloc: str) -> str:
    """What the policy does, in one line: ours above, else the registry's summary."""
    if alloc in POLICY_TEXT:
        return POLICY_TEXT[alloc]
    if ":" in alloc:
        return "a policy written in Python"
    from .. import registry

    p = registry.policy(alloc)
    return p.summary if p is not None and p.summary else alloc


def leaf_size_text(fabric: dict[str, Any]) -> str:
    """The nodes per leaf: ``18``, or ``32-102`` when the leaves differ (fabric.json's
    ``node_leaf``; from a summary's fabric block, which has only the largest,
    ``up to 102``). ``nodes_per_leaf`` alone is the largest leaf's."""
    npl = fabric.get("nodes_per_leaf", "?")
    node_leaf = fabric.get("node_leaf")
    if isinstance(node_leaf, list) and node_leaf:
        counts: dict[Any, int] = {}
        for leaf in node_leaf:
            counts[leaf] = counts.get(leaf, 0) + 1
        lo, hi = min(counts.values()), max(counts.values())
        return str(hi) if lo == hi else f"{lo}-{hi}"
    nodes, leaves = fabric.get("nodes"), fabric.get("leaves")
    if isinstance(nodes, int) and isinstance(leaves, int) and isinstance(npl, int) and nodes != leaves * npl:
        return f"up to {npl}"
    return str(npl)


def plural(n: Any, word: str) -> str:
    """``1 pod``, ``4 pods``, ``? pods``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _jobs(n: int) -> str:
    """``1 job``, ``2,345 jobs``."""
    return f"{n:,} job{'' if n == 1 else 's'}"


def _transforms_text(transforms: list[Any]) -> str:
    out = []
    for t in transforms:
        kind, _, arg = str(t).partition(":")
        if kind == "scale":
            try:
                factor = float(arg)
            except ValueError:
                factor = float("nan")
            why = " to load the machine more" if factor > 1 else " to load the machine less" if factor < 1 else ", i.e. unchanged" if factor == 1 else ""
            out.append(f"every job's node count multiplied by {arg} ({t}){why}")
        elif kind == "days":
            n, _, start = arg.partition("@")
            out.append(f"jobs submitted in days {start}-{float(start) + float(n):g}" if start else f"the first {n} days of the log")
        elif kind == "cores":
            out.append(f"node counts from processors at {arg} cores per node")
        elif kind in ("cap", "drop"):
            if arg:
                out.append(f"jobs larger than {arg} nodes {'cut to that size' if kind == 'cap' else 'left out'}")
            else:
                out.append(f"jobs larger than the machine {'cut to its size' if kind == 'cap' else 'left out'}")
        else:
            out.append(str(t))
    return "; ".join(out)


def _payback_sentences(base_key: tuple[str, str] | None, by: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """With the network model on: how much of each policy's busy-utilization cost against
    the oblivious baseline its faster jobs pay back (both measures from the runs' network
    blocks, so they count the same node-seconds)."""
    if base_key is None or not isinstance(by[base_key].get("network"), dict):
        return []
    bn = by[base_key]["network"]
    b_busy, b_useful = bn.get("busy_utilization"), bn.get("useful_utilization")
    if b_busy is None or b_useful is None:
        return []
    out = []
    for (a, s), summ in by.items():
        n = summ.get("network")
        # a policy's payback, under the log's run times: a speedup scenario shortens the
        # work itself (less busy time for the same jobs is its benefit, and useful
        # utilization then counts shortened work), so it is not weighed this way
        if (a, s) == base_key or s != "none" or a in OBLIVIOUS or a == "as-logged" or not isinstance(n, dict):
            continue
        busy, useful = n.get("busy_utilization"), n.get("useful_utilization")
        if busy is None or useful is None:
            continue
        cost = 100 * (b_busy - busy)  # points of busy utilization the policy gives up
        net = 100 * (useful - b_useful)  # points of useful utilization it ends up with, against the baseline
        name = a
        if cost <= 0.05:
            out.append(f"Payback, {name}: no busy utilization given up against {base_key[0]}; useful utilization {net:+.1f} points.")
            continue
        paid = cost + net  # the part of the cost that faster jobs recover
        if net >= 0:
            tail = f"its faster jobs pay it all back (useful utilization {net:+.1f} points against {base_key[0]}'s)"
        else:
            tail = (f"its faster jobs pay back {max(paid, 0.0):.1f} of them ({max(paid, 0.0) / cost:.0%}); "
                    f"useful utilization {net:+.1f} points against {base_key[0]}'s")
        out.append(f"Payback, {name}: {cost:.1f} points of busy utilization given up against {base_key[0]}; {tail}.")
    return out


def compare_story(meta: dict[str, Any], runs: list[tuple[str, str, dict[str, Any]]], fabric: dict[str, Any]) -> Story:
    """The story of one comparison. ``runs``: (alloc, scenario, summary) in plan order."""
    st = Story()
    if not runs:
        st.caveats.append("no run finished")
        return st
    first = runs[0][2]
    trace = Path(str(meta.get("trace", "the log"))).name
    n_jobs = _s(first, "jobs", "in_workload")
    transforms = meta.get("transforms") or []
    what = f"{trace}: {_jobs(n_jobs) if isinstance(n_jobs, int) else fmt_count(n_jobs) + ' jobs'}"
    if transforms:
        what += f" ({_transforms_text(transforms)})"
    st.compared.append(what + ".")
    if isinstance(fabric.get("nodes"), int):
        st.compared.append(
            f"Fabric {fabric.get('name', '?')}: {fabric['nodes']:,} nodes, {fabric.get('leaves', '?')} leaf switches of "
            f"{leaf_size_text(fabric)} nodes, {plural(fabric.get('pods', '?'), 'pod')}; queue policy {meta.get('queue', '?')}."
        )
    allocs = list(dict.fromkeys(a for a, _, _ in runs))
    for a in allocs:
        st.compared.append(f"{a}: {_policy_text(a)}.")
    scenarios = [s for s in dict.fromkeys(s for _, s, _ in runs) if s != "none"]
    for s in scenarios:
        st.compared.append(f"scenario {s}: {SCENARIO_TEXT.get(s, s)}; applied to the topology-aware policies only.")

    by = {(a, s): summ for a, s, summ in runs}
    base_key = next(((a, "none") for a in allocs if a in OBLIVIOUS and (a, "none") in by), None)
    if base_key is None:
        st.verdict.append("No topology-oblivious run without a scenario to compare against (add linear to --allocs).")
    else:
        base = by[base_key]
        bw, bu, bm = _wait(base), _util(base), base.get("makespan_s")
        if not _s(base, "jobs", "replayed"):
            st.verdict.append(f"{base_key[0]} (the baseline) replayed no job: there is nothing to weigh the other runs against.")
        else:
            st.verdict.append(
                f"{base_key[0]} (the baseline) keeps the machine {fmt_percent(bu)} busy; jobs wait {fmt_duration(bw)} on average; "
                f"makespan {fmt_duration(bm)}."
            )
        for a in allocs:
            if a in OBLIVIOUS or a == "as-logged" or (a, "none") not in by:
                continue
            s0 = by[(a, "none")]
            if not _s(s0, "jobs", "replayed"):
                st.verdict.append(f"{a} replayed no job: nothing to say of its placement.")
                continue
            w, u, m = _wait(s0), _util(s0), s0.get("makespan_s")
            aph_b, aph_a = _s(base, "aph", "mean"), _s(s0, "aph", "mean")
            does = []
            if aph_a is not None and aph_b is not None:
                # the words follow the numbers as printed: never "closer" for 1.00 vs 1.00
                shown_a, shown_b = round(aph_a, 2), round(aph_b, 2)
                how = "brings a job's nodes closer" if shown_a < shown_b else "spreads a job's nodes further apart" if shown_a > shown_b else f"keeps a job's nodes as close as {base_key[0]} does"
                does.append(f"{how} (mean pairwise hops {aph_a:.2f} vs {aph_b:.2f})")
            if a == "isolated":
                does.append("removes every shared switch link between jobs")
            lead = f"{a} placement" + (" " + " and ".join(does) if does else "")
            if w is not None and u is not None and bw is not None and bu is not None:
                du = (bu - u) * 100
                dw = w - bw
                cost = []
                cost.append(f"{abs(du):.1f} points of utilization {'lost' if du > 0.05 else 'gained' if du < -0.05 else '(no change)'}")
                cost.append(f"mean wait {fmt_duration(w)} against {fmt_duration(bw)} ({'+' if dw >= 0 else '-'}{fmt_duration(abs(dw))})")
                if m is not None and bm is not None:
                    cost.append(f"makespan {'+' if m >= bm else '-'}{fmt_duration(abs(m - bm))}")
                lead += "; on this workload: " + ", ".join(cost)
            st.verdict.append(lead + ".")
            for s in scenarios:
                if (a, s) not in by:
                    continue
                ws = _wait(by[(a, s)])
                if ws is None or bw is None:
                    continue
                pays = ws <= bw
                # two waits that print alike (14.9 h and 14.9 h) get their difference, so
                # that "above" or "below" is not read against equal numbers
                by_how_much = f" (by {fmt_duration(abs(ws - bw))})" if fmt_duration(ws) == fmt_duration(bw) and ws != bw else ""
                if not pays:
                    tail = f"still above the baseline's {fmt_duration(bw)}{by_how_much}: that speedup does not pay for it."
                elif w is not None and w <= bw:  # no wait to pay back: the policy waits no longer than the baseline without it
                    tail = f"at or below the baseline's{by_how_much}, as {a}'s is without it: there is no wait to pay back."
                else:
                    tail = f"at or below the baseline's{by_how_much}, so that speedup pays for {'isolation' if a == 'isolated' else a}'s cost."
                st.verdict.append(f"With {s} ({SCENARIO_TEXT.get(s, s).split(' (')[0]}), {a}'s mean wait is {fmt_duration(ws)}: " + tail)
        net = [(a, s, summ["network"]) for a, s, summ in runs if isinstance(summ.get("network"), dict)]
        for a, s, n in net:
            sd = n.get("slowdown", {})
            if sd.get("mean") is not None and n.get("useful_utilization") is not None:
                st.verdict.append(
                    f"Network model, {a}{'' if s == 'none' else ' ' + s}: predicted mean slowdown {sd['mean']:.3f}; "
                    f"useful utilization {fmt_percent(n['useful_utilization'])} of {fmt_percent(n.get('busy_utilization'))} busy."
                )
        st.verdict.extend(_payback_sentences(base_key, by))
        scales = [str(t) for t in transforms if str(t).startswith("scale:")]
        scale_advice = f"Scale the workload further ({', '.join(scales)} is applied)" if scales else "Scale the workload (--transform scale:2)"
        if bu is not None and bw is not None and (bu < LIGHT_UTILIZATION or bw < LIGHT_WAIT_S):
            st.caveats.append(
                f"The baseline is lightly loaded ({fmt_percent(bu)} busy, mean wait {fmt_duration(bw)}): placement barely changes "
                f"waiting here. {scale_advice} or pick a busier window to see the trade-off."
            )
    if not any(isinstance(summ.get("network"), dict) for _, _, summ in runs):
        st.caveats.append("Speedups are assumed by the scenarios, not predicted: add --network to predict interference from the jobs' placements.")
    nevers = {(a, s): _s(summ, "jobs", "skipped_never_fit") or 0 for a, s, summ in runs}
    def why(n: int) -> str:
        return ("could never be placed (too large for the fabric, or for their class under the policy) and "
                f"{'was' if n == 1 else 'were'} not replayed (see each run's skipped.parquet)")

    if len(set(nevers.values())) == 1 and runs[0] and next(iter(nevers.values())):
        n = next(iter(nevers.values()))
        share = n / max(n + (_s(first, "jobs", "replayed") or 0), 1)
        st.caveats.append(f"In every run {_jobs(n)} ({'<1%' if 0 < share < 0.005 else f'{share:.0%}'}) {why(n)}.")
    else:
        for (a, s), n in nevers.items():
            if n:
                st.caveats.append(f"{a}{'' if s == 'none' else ' ' + s}: {_jobs(n)} {why(n)}.")
    for a, s, summ in runs:
        if summ.get("complete") is False:
            st.caveats.append(f"{a} {s}: interrupted, partial results.")
    dropped = {k: v for k, v in (_s(first, "input", "skipped") or {}).items() if k.startswith("transform_")}
    if dropped:
        st.caveats.append("The transforms left out " + ", ".join(f"{v:,} jobs ({k.removeprefix('transform_').replace('_', ' ')})" for k, v in dropped.items()) + ".")
    return st

"""What a finished replay prints on the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    from ..simulate import SimResult
    from ..stream import StreamedRun


def fmt_number(x: float | None, digits: int = 1) -> str:
    """``x`` with thousands separators and ``digits`` decimals (``-`` for None)."""
    return "-" if x is None else f"{x:,.{digits}f}"


def _duration(x: float | None) -> str:
    """A duration in the unit that reads best (toposched.units)."""
    from ..units import fmt_duration

    return fmt_duration(x)


def terminal_summary(result: "SimResult | StreamedRun", *, read_s: float | None = None, sim_s: float | None = None) -> Table:
    """A short table: input, repairs, policies, and the headline metrics."""
    s = result.summary
    inp = s["input"]
    t = Table(title=f"toposched: {inp['source']} on {s['fabric']['name']} ({s['fabric']['nodes']} nodes)", show_header=False, title_justify="left")
    t.add_column(style="bold")
    t.add_column()
    if not s["complete"]:  # first: every number below is of the jobs finished so far
        t.add_row("status", "[red]interrupted: partial results (the jobs finished so far)[/red]")
    t.add_row("policies", f"queue={s['policy']['queue']}  alloc={s['policy']['alloc']}")
    jobs = s["jobs"]
    t.add_row(
        "jobs",
        f"{inp['records']:,} records, {jobs['in_workload']:,} in workload, {jobs['replayed']:,} replayed, "
        f"{jobs['skipped_never_fit']:,} not placed (see skipped.parquet), {jobs['killed_at_walltime']:,} killed at their limit",
    )
    rule = s["policy"].get("kill_at_walltime_rule")
    if rule:
        t.add_row("time limits", ("killed at the limit: " if s["policy"]["kill_at_walltime"] else "run on past the limit: ") + rule)
    settings = inp.get("settings", {})
    if "node_types" in settings:
        kinds = ", ".join(f"{k['nodes']} x {k['cores_per_node']} cores" for k in settings["node_types"])
        t.add_row("node types", f"{kinds}; cores per node {settings['cores_per_node']} ({settings['cores_per_node_from']})")
    if inp["skipped"]:
        t.add_row("left out", ", ".join(f"{k}={v:,}" for k, v in inp["skipped"].items()))
    if inp["repairs"]:
        t.add_row("repairs", ", ".join(f"{k}={v:,}" for k, v in inp["repairs"].items()))
    if s["skipped_reasons"]:
        reasons = sorted(s["skipped_reasons"].items(), key=lambda kv: (-kv[1], kv[0]))
        shown = "; ".join(f"{v:,} x {k}" for k, v in reasons[:3])
        if len(reasons) > 3:
            rest = sum(v for _, v in reasons[3:])
            shown += f"; and {len(reasons) - 3} more reasons for {rest:,} jobs (see skipped.parquet)"
        t.add_row("not placed", shown)
    t.add_row("makespan", _duration(s["makespan_s"]))
    u = s["utilization"]["mean"]
    t.add_row("utilization", "-" if u is None else f"{100 * u:.1f}% mean (sampled every {s['utilization']['step_s']} s)")
    w = s["wait_s"]
    t.add_row("wait", f"mean {_duration(w['mean'])}, median {_duration(w['median'])}, p95 {_duration(w['p95'])}")
    b = s["bounded_slowdown"]
    t.add_row("bounded slowdown", f"mean {fmt_number(b['mean'], 2)}, median {fmt_number(b['median'], 2)}, p95 {fmt_number(b['p95'], 2)}")
    a = s["aph"]
    t.add_row("APH (jobs >= 2 nodes)", f"mean {fmt_number(a['mean'], 3)}, median {fmt_number(a['median'], 3)}, max {fmt_number(a['max'], 3)}")
    net = s.get("network")
    if net:
        sd = net["slowdown"]
        t.add_row(
            "network model",
            f"slowdown mean {fmt_number(sd['mean'], 3)}, p95 {fmt_number(sd['p95'], 3)}, max {fmt_number(sd['max'], 3)}; "
            f"{sd['jobs_slowed']:,} jobs slowed, {net['jobs_sharing_links']:,} jobs shared links; useful utilization "
            f"{100 * net['useful_utilization']:.1f}% of {100 * net['busy_utilization']:.1f}% busy (spec {net['spec']})",
        )
    if read_s is not None and sim_s is not None:
        # an interrupted replay did not get through the workload: its rate is of the jobs
        # it finished, not of the whole workload over the partial time
        done, what = (jobs["in_workload"], "jobs/s") if s["complete"] else (jobs["replayed"], "jobs finished/s")
        rate = done / sim_s if sim_s > 0 else float("inf")
        t.add_row("time", f"read {read_s:.2f} s, replay {sim_s:.2f} s ({rate:,.0f} {what})")
    return t

"""`toposched contention`: what a tapered fabric would cost a schedule (seed 001's model).

Also the library entry for writing the results: :func:`write_outputs` (contention.json,
Parquet tables, figures, report.html) for an analysis made in Python.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ._args import output_dir, seed
from ._args import positive_int as _positive_int
from ..files import write_atomic as _atomic
from .. import _core

NAME = "contention"
HELP = "uplink contention of a schedule on tapered fabrics (seed 001: uplink removal, crossbar size, cores per node)"
DESCRIPTION = (
    "Evaluate seed 001's worst-case uplink contention model on a schedule: per-leaf uplink demand over time, "
    "the slowdown of every job as leaf uplinks are removed, the probabilistic variant for communication "
    "fractions J, and the same workload on other crossbar sizes and cores per node. The schedule is a "
    "toposched simulate output directory (--run), or a log replayed first (--trace/--system)."
)

EPILOG = """\
examples:
  toposched contention --run out/atlas --out out/atlas-contention
  toposched contention --trace examples/data/LLNL-Atlas-2006-2.1-cln.swf.gz --system fattree:K=12,S=96,P=1 \\
      --queue easy --alloc linear --out out/atlas-contention
  toposched contention --run out/ricc --uplinks 16,12,8,4,1 --comm-fractions 0.05,0.2 \\
      --crossbar-sizes none --cores-sweep none --out out/ricc-contention

Model (docs/contention.md): U(n,j) = min(nodes of job j on leaf n, its nodes elsewhere); D(n,t) sums U
over the jobs running at t; with R uplinks left per leaf a job is slowed, at each instant, by
max(1, D/R) on its most loaded leaf (worst case: every job communicates all the time). Outputs in --out:
contention.json (all numbers), leaf_demand.parquet, job_slowdowns.parquet, job_exposure.parquet,
sweeps.parquet, figures/*.png|svg, report.html. With --trace the replay is kept in OUT/run/.
"""


def _int_list(text: str) -> list[int] | None:
    if text.strip().lower() == "none":
        return None
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers or 'none', got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError("every value must be at least 1")
    return out


def _fraction_list(text: str) -> list[float]:
    if text.strip().lower() == "none":
        return []
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fractions, got {text!r}") from None
    if any(not 0.0 <= x <= 1.0 for x in out):
        raise argparse.ArgumentTypeError("communication fractions lie in [0, 1]")
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..contention import DEFAULT_COMM_FRACTIONS, DEFAULT_CROSSBAR_SIZES

    g = parser.add_argument_group("the schedule (one of)")
    g.add_argument("--run", metavar="DIR", help="a directory written by toposched simulate (jobs.parquet, fabric.json)")
    g.add_argument("--trace", metavar="LOG", help="a job log to replay first (with --system)")
    g = parser.add_argument_group("replaying a log (with --trace)")
    g.add_argument("--system", metavar="FABRIC", help="preset, fattree:K=..,S=..,P=.. or topology.conf")
    g.add_argument("--format", help="log format, as toposched simulate takes it (default: guessed from the file)")
    g.add_argument("--queue", default="easy", choices=_core.QUEUES, help="queue policy (default: easy)")
    g.add_argument(
        "--alloc", default="linear", metavar="POLICY",
        help="allocation policy, as toposched simulate takes it (default: linear, as 001 assumes); "
        "as-logged analyses the log's own starts and node lists (docs/as-logged.md)",
    )
    g.add_argument("--seed", type=seed, default=0, help="seed of the random policy (default: 0)")
    g.add_argument("--cores-per-node", type=_positive_int, help="processors per node to turn processor counts into nodes (default: from the log header)")
    g.add_argument("--lenient", action="store_true", help="skip and count malformed log records instead of stopping")
    g.add_argument("--allow-long-span", action="store_true", help="accept logs spanning more than 50 years, and run times as long (docs/reliability.md)")
    g = parser.add_argument_group("the model")
    g.add_argument("--uplinks", type=_int_list, metavar="R,..", help="uplinks left per leaf to evaluate (default: every R from the nonblocking K down to 1)")
    g.add_argument(
        "--comm-fractions", type=_fraction_list, default=list(DEFAULT_COMM_FRACTIONS), metavar="J,..",
        help=f"communication fractions of the probabilistic variant (default: {','.join(f'{j:g}' for j in DEFAULT_COMM_FRACTIONS)}; 'none': skip)",
    )
    g.add_argument(
        "--crossbar-sizes", type=_int_list, default=list(DEFAULT_CROSSBAR_SIZES), metavar="K,..",
        help=f"nodes per leaf of the crossbar-size sweep (default: {','.join(map(str, DEFAULT_CROSSBAR_SIZES))}; 'none': skip)",
    )
    g.add_argument("--cores-sweep", type=_int_list, default=[], metavar="C,..", help="cores per node of the multicore sweep (default: the schedule's own x 1, 2, 4, 8; 'none': skip)")
    g.add_argument("--base-cores-per-node", type=_positive_int, metavar="C", help="cores per node of the schedule's nodes (default: from the run's summary.json, else 1)")
    g = parser.add_argument_group("output")
    g.add_argument("--out", required=True, type=output_dir, metavar="DIR", help="directory for the results")
    g.add_argument("--no-figures", action="store_true", help="write no figures (and a report without them)")
    g.add_argument("--no-report", action="store_true", help="do not build report.html")
    g.add_argument("--quiet", action="store_true", help="print nothing but errors")


def _load_schedule(args: argparse.Namespace, out: Path, say: Callable[[str], None]) -> Any:
    from ..contention import Schedule

    if args.run:
        return Schedule.from_run_dir(args.run)
    from ..simulate import RunConfig, simulate
    from ..topology import load_fabric
    from ..workload import read_trace

    options: dict[str, Any] = {"lenient": args.lenient, "allow_long_span": args.allow_long_span}
    if args.cores_per_node is not None:
        options["cores_per_node"] = args.cores_per_node
    workload = read_trace(args.trace, format=args.format, **options)
    fabric = load_fabric(args.system, lenient=args.lenient)
    tick = time.perf_counter()
    result = simulate(workload, fabric, RunConfig(queue=args.queue, alloc=args.alloc, seed=args.seed))
    result.write(out / "run")
    say(f"replayed {len(result.jobs):,} jobs in {time.perf_counter() - tick:.1f} s (kept in {out / 'run'}/)")
    return Schedule.from_result(result)


def run(args: argparse.Namespace) -> int:
    from ..contention import run_contention

    if bool(args.run) == bool(args.trace):
        print("error: give exactly one of --run DIR or --trace LOG (with --system)", file=sys.stderr)
        return 2
    if args.trace and not args.system:
        print("error: --trace needs --system", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    say: Callable[[str], None] = (lambda _m: None) if args.quiet else (lambda m: print(m))
    schedule = _load_schedule(args, out, say)
    cores = None if args.cores_sweep == [] else args.cores_sweep
    tick = time.perf_counter()
    analysis, doc = run_contention(
        schedule,
        uplinks=args.uplinks,
        comm_fractions=args.comm_fractions,
        crossbar_sizes=args.crossbar_sizes,
        cores=cores,
        base_cores=args.base_cores_per_node,
        do_cores=args.cores_sweep is not None,
    )
    doc["source"] = {"run": args.run, "trace": args.trace, "system": args.system, "queue": args.queue if args.trace else None, "alloc": args.alloc if args.trace else None}
    say(f"analysed {schedule.n_jobs:,} jobs in {time.perf_counter() - tick:.2f} s")
    paths = write_outputs(analysis, doc, out, figures=not args.no_figures, report=not args.no_report)
    if not args.quiet:
        _print_summary(doc)
        say(f"results in {out}/ ({', '.join(sorted({p.name for p in paths if p.parent == out}))})")
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _print_summary(doc: dict[str, Any]) -> None:
    s = doc["schedule"]
    print(f"{s['name']}: {s['jobs']:,} jobs, {doc['exposed_jobs']:,} on two or more leaves; K={s['nodes_per_leaf']}, full R={s['full_uplinks']}")
    print(f"{'R':>4} {'taper':>6} {'system':>9} {'per node-s':>10} {'affected':>9} {'mean/job':>9} {'max/job':>9}")
    for r in doc["uplink_sweep"]:
        a = r["affected_job_slowdown"]
        print(
            f"{r['uplinks']:>4} {r['taper']:>5.2f}: {_pct(r['system_slowdown']):>9} {_pct(r['added_wall_per_node_second']):>10} "
            f"{r['affected_jobs']:>9,} {_pct(a['mean']):>9} {_pct(a['max']):>9}"
        )


# ------------------------------------------------------------------------------ writing


def write_outputs(analysis: Any, doc: dict[str, Any], out_dir: str | Path, *, figures: bool = True, report: bool = True) -> list[Path]:
    """Write contention.json, leaf_demand.parquet, job_slowdowns.parquet,
    job_exposure.parquet, sweeps.parquet, figures/ and report.html into ``out_dir``.
    Each file appears whole or not at all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..contention import sweep_rows

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def put_table(name: str, table: pa.Table) -> None:
        p = out / name
        _atomic(p, lambda t: pq.write_table(table, t))
        written.append(p)

    put_table("leaf_demand.parquet", analysis.leaf_demand_table())
    put_table("job_slowdowns.parquet", analysis.job_slowdowns_table())
    put_table("job_exposure.parquet", analysis.job_exposure_table())
    Js = doc.get("comm_fractions", [])
    rows = sweep_rows("base", [{"uplink_sweep": doc["uplink_sweep"], "nodes_per_leaf": doc["schedule"]["nodes_per_leaf"], "cores_per_node": doc["schedule"]["cores_per_node"]}])
    rows += sweep_rows("crossbar", doc.get("crossbar_sweep", []))
    rows += sweep_rows("cores_per_node", doc.get("cores_per_node_sweep", []))
    put_table("sweeps.parquet", pa.Table.from_pylist(rows))
    fig_files: dict[str, str] = {}
    if figures:
        fig_files = write_figures(doc, out / "figures")
        written += [out / "figures" / f"{stem}.{ext}" for stem in fig_files for ext in ("png", "svg")]
    doc = dict(doc, figures={k: f"figures/{k}.png" for k in fig_files})
    p = out / "contention.json"
    _atomic(p, lambda t: Path(t).write_text(json.dumps(doc, indent=1, default=_json_default) + "\n"))
    written.append(p)
    if report:
        page = build_report(doc, fig_files)
        p = out / "report.html"
        _atomic(p, lambda t: Path(t).write_text(page))
        written.append(p)
    return written


def _json_default(x: Any) -> Any:
    import numpy as np

    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x)}")


# ------------------------------------------------------------------------------ figures


def _save(fig: Any, base: Path) -> None:
    try:
        from ..reporting import save_figure
    except ImportError:  # fallback: plain savefig
        base.parent.mkdir(parents=True, exist_ok=True)
        for ext in ("png", "svg"):
            fig.savefig(base.with_name(base.name + "." + ext), dpi=150)
        return
    save_figure(fig, base)


def _figure(w: float, h: float, rows: int, cols: int) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.ravel():
        ax.grid(color="#e5e5e5", linewidth=0.8)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return fig, axes


def _series(sweep: list[dict[str, Any]], fn: Callable[[dict[str, Any]], float | None], *, log: bool = False) -> list[float]:
    """Percentages; None (and 0 on a log axis) become gaps."""
    out = []
    for r in sweep:
        v = fn(r)
        out.append(float("nan") if v is None or (log and v <= 0) else 100.0 * float(v))
    return out


def _prob(r: dict[str, Any], J: float, key: str) -> float | None:
    for p in r["probabilistic"]:
        if p["J"] == J:
            v = p[key]
            return v["mean"] if isinstance(v, dict) else v
    return None


def _log_axis(ax: Any) -> None:
    """Log y axis when there is something positive to show."""
    import numpy as np

    if any(np.isfinite(y) and y > 0 for line in ax.get_lines() for y in line.get_ydata()):
        ax.set_yscale("log")
        ax.set_ylim(bottom=1e-3)  # below 0.001% nothing is worth reading


def write_figures(doc: dict[str, Any], fig_dir: Path) -> dict[str, str]:
    """The figures of 001, as PNG and SVG; returns {stem: caption}."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    fig_dir.mkdir(parents=True, exist_ok=True)
    made: dict[str, str] = {}
    sched = doc["schedule"]
    sweep = doc["uplink_sweep"]
    Js = doc.get("comm_fractions", [])
    title = f"{sched['name']} ({sched['nodes']:,} nodes, {sched['nodes_per_leaf']} per leaf)"
    if sweep:
        x = [r["removed"] for r in sweep]
        fig, ax = _figure(11, 7.5, 2, 2)
        a = ax[0, 0]
        a.plot(x, _series(sweep, lambda r: r["system_slowdown"], log=True), "o-", color="black", label="worst case (J = 1)")
        for J in Js:
            a.plot(x, _series(sweep, lambda r, J=J: _prob(r, J, "system_slowdown"), log=True), ".--", label=f"expected, J = {J:g}")
        a.set_title("system-wide: added wall time / total wall time")
        a.set_ylabel("slowdown (%, log scale)")
        _log_axis(a)
        a.legend(fontsize=8)
        a = ax[0, 1]
        a.plot(x, _series(sweep, lambda r: r["added_wall_per_node_second"]), "o-", color="tab:purple", label="worst case")
        a.set_title("added wall time / node-seconds (001's magnitudes)")
        a.set_ylabel("%")
        a.legend(fontsize=8)
        a = ax[1, 0]
        a.plot(x, _series(sweep, lambda r: r["affected_job_slowdown"]["mean"], log=True), "o-", color="black", label="mean, worst case")
        a.plot(x, _series(sweep, lambda r: r["affected_job_slowdown"]["max"], log=True), "^:", color="tab:red", label="max, worst case")
        for J in Js:
            a.plot(x, _series(sweep, lambda r, J=J: _prob(r, J, "affected_job_slowdown"), log=True), ".--", label=f"mean, expected, J = {J:g}")
        a.set_title("per affected job")
        a.set_ylabel("slowdown (%, log scale)")
        _log_axis(a)
        a.legend(fontsize=8)
        a = ax[1, 1]
        a.plot(x, _series(sweep, lambda r: r["affected_fraction_of_jobs"]), "o-", color="tab:blue", label="affected jobs (% of all jobs)")
        a.plot(x, _series(sweep, lambda r: r["contended_exposed_time_fraction"]), "s--", color="tab:orange", label="contended time of multi-leaf jobs (%)")
        a.set_title("who is affected")
        a.set_ylabel("%")
        a.legend(fontsize=8)
        for a in ax[1]:
            a.set_xlabel(f"uplinks removed per leaf (of {sched['full_uplinks']})")
        fig.suptitle(f"Uplink removal: {title}")
        _save(fig, fig_dir / "uplink_removal")
        made["uplink_removal"] = "Slowdown against uplinks removed per leaf: system-wide (two normalisations) and per affected job, worst case and expected for each J; who is affected."
    for key, stem, label, cap in (
        ("crossbar_sweep", "crossbar_size", "nodes_per_leaf", "Crossbar size: the same schedule wired linearly to leaves of k nodes (crossbars of 2k ports)."),
        ("cores_per_node_sweep", "cores_per_node", "cores_per_node", "Cores per node: the same schedule on fatter nodes, fragmentation kept (001 §II-C)."),
    ):
        entries = doc.get(key) or []
        if not entries:
            continue
        fig, ax = _figure(11, 4.2, 1, 2)
        for e in entries:
            sw = e["uplink_sweep"]
            full = sw[0]["uplinks"] + sw[0]["removed"] if sw else 1
            xs = [100.0 * r["removed"] / full for r in sw]
            name = f"{e[label]} nodes/leaf" if label == "nodes_per_leaf" else f"{e[label]} cores/node"
            ax[0, 0].plot(xs, _series(sw, lambda r: r["system_slowdown"], log=True), ".-", label=name)
            ax[0, 1].plot(xs, _series(sw, lambda r: r["affected_job_slowdown"]["mean"], log=True), ".-", label=name)
        ax[0, 0].set_title("system-wide slowdown (worst case)")
        ax[0, 1].set_title("mean slowdown per affected job (worst case)")
        for a in ax[0]:
            a.set_xlabel("uplinks removed (% of the nonblocking count)")
            a.set_ylabel("slowdown (%, log scale)")
            _log_axis(a)
            a.legend(fontsize=8)
        fig.suptitle(f"{cap.split(':')[0]}: {sched['name']}")
        _save(fig, fig_dir / stem)
        made[stem] = cap
    curves = doc.get("probability_curves")
    if curves:
        fig, ax = _figure(6.5, 4.2, 1, 1)
        for c in curves["curves"]:
            ax[0, 0].plot(curves["J"], c["E"], label=f"{c['factor']:g}:1 (m = {c['m']})")
        ax[0, 0].set_xlabel("communication probability J")
        ax[0, 0].set_ylabel("probability of contention E(J)")
        ax[0, 0].set_title(f"001 eq. 4 for a {curves['n']}-port crossbar (n = {curves['n']})")
        ax[0, 0].legend(fontsize=8, title="oversubscription")
        _save(fig, fig_dir / "contention_probability")
        made["contention_probability"] = "001 Fig. 3: probability that more than m of n links transmit at once, against J."
    return made


# ------------------------------------------------------------------------------ report


def _plotly_sweep(doc: dict[str, Any]) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    sweep = doc["uplink_sweep"]
    x = [r["removed"] for r in sweep]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("system-wide slowdown (%)", "mean slowdown per affected job (%)"))
    fig.add_trace(go.Scatter(x=x, y=_series(sweep, lambda r: r["system_slowdown"], log=True), name="worst case", legendgroup="worst", mode="lines+markers", line={"color": "black"}), 1, 1)
    fig.add_trace(go.Scatter(x=x, y=_series(sweep, lambda r: r["affected_job_slowdown"]["mean"], log=True), name="worst case", legendgroup="worst", showlegend=False, mode="lines+markers", line={"color": "black"}), 1, 2)
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
    for i, J in enumerate(doc.get("comm_fractions", [])):
        style = {"color": palette[i % len(palette)], "dash": "dash"}
        fig.add_trace(go.Scatter(x=x, y=_series(sweep, lambda r, J=J: _prob(r, J, "system_slowdown"), log=True), name=f"expected, J={J:g}", legendgroup=f"J{J:g}", mode="lines+markers", line=style), 1, 1)
        fig.add_trace(go.Scatter(x=x, y=_series(sweep, lambda r, J=J: _prob(r, J, "affected_job_slowdown"), log=True), name=f"expected, J={J:g}", legendgroup=f"J{J:g}", showlegend=False, mode="lines+markers", line=style), 1, 2)
    for c in (1, 2):
        fig.update_xaxes(title_text=f"uplinks removed per leaf (of {doc['schedule']['full_uplinks']})", row=1, col=c)
        fig.update_yaxes(type="log", exponentformat="power", range=[-3, None], row=1, col=c)
    fig.update_layout(height=430, margin={"t": 40})
    return fig


def _plotly_family(entries: list[dict[str, Any]], label: str) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for e in entries:
        sw = e["uplink_sweep"]
        full = sw[0]["uplinks"] + sw[0]["removed"] if sw else 1
        fig.add_trace(
            go.Scatter(
                x=[100.0 * r["removed"] / full for r in sw], y=_series(sw, lambda r: r["system_slowdown"], log=True), mode="lines+markers",
                name=f"{e[label]} {'nodes/leaf' if label == 'nodes_per_leaf' else 'cores/node'}",
                text=[f"R={r['uplinks']}" for r in sw],
            )
        )
    fig.update_layout(height=400, margin={"t": 20}, xaxis_title="uplinks removed (% of nonblocking)", yaxis_title="system-wide slowdown, worst case (%)", yaxis_type="log")
    fig.update_yaxes(exponentformat="power")
    return fig


def _sweep_table(doc: dict[str, Any], table_html: Callable[..., str]) -> str:
    cols = ["R", "removed", "taper", "system slowdown", "added / node-s", "affected jobs", "mean / affected", "median", "p95", "max"]
    rows = []
    for r in doc["uplink_sweep"]:
        a = r["affected_job_slowdown"]
        row: list[Any] = [r["uplinks"], r["removed"], r["taper"], _pct(r["system_slowdown"]), _pct(r["added_wall_per_node_second"]), r["affected_jobs"]]
        row += [_pct(a[k]) for k in ("mean", "median", "p95", "max")]
        rows.append(row)
    out = table_html(cols, rows, caption="Worst case (every job communicates all the time). Slowdowns are added wall time over run time (100% = twice as long).")
    Js = doc.get("comm_fractions", [])
    if Js:
        cols = ["R"] + [f"P(contention) J={J:g}" for J in Js] + [f"system J={J:g}" for J in Js] + [f"mean / affected J={J:g}" for J in Js]
        rows = []
        for r in doc["uplink_sweep"]:
            rows.append(
                [r["uplinks"]]
                + [_pct(_prob(r, J, "contention_probability")) for J in Js]
                + [_pct(_prob(r, J, "system_slowdown")) for J in Js]
                + [_pct(_prob(r, J, "affected_job_slowdown")) for J in Js]
            )
        out += table_html(cols, rows, caption="Expected, jobs communicating a fraction J of the time (binomial model, docs/contention.md).")
    return out


def _family_table(entries: list[dict[str, Any]], label: str, table_html: Callable[..., str]) -> str:
    cols = [label.replace("_", " "), "exposed jobs", "system @ 3/4 uplinks", "system @ 1/2", "system @ 1/4", "system @ R=1", "max per job @ 1/2"]
    rows = []
    for e in entries:
        sw = {r["uplinks"]: r for r in e["uplink_sweep"]}
        full = max(sw) if sw else 1

        def at(frac: float, key: str = "system_slowdown") -> str:
            r = sw.get(max(1, round(full * frac)))
            if r is None:
                return "-"
            return _pct(r[key]) if key == "system_slowdown" else _pct(r["affected_job_slowdown"]["max"])

        rows.append([e[label], e["exposed_jobs"], at(0.75), at(0.5), at(0.25), at(1 / full), at(0.5, "max")])
    return table_html(cols, rows)


def build_report(doc: dict[str, Any], fig_files: dict[str, str]) -> str:
    """report.html: through :mod:`toposched.reporting` (the style of ``compare``), or a
    minimal static page if that module is not importable."""
    try:
        from ..reporting import build_page, image_html, plotly_div, table_html
    except ImportError:
        return _fallback_report(doc, fig_files)
    s = doc["schedule"]
    kv = [
        ("schedule", s["name"]),
        ("jobs", s["jobs"]),
        ("jobs on 2+ leaves (exposed)", doc["exposed_jobs"]),
        ("nodes, leaves", f"{s['nodes']:,} nodes on {s['leaves']:,} leaves of {s['nodes_per_leaf']}"),
        ("uplinks per leaf", f"{s['full_uplinks']} nonblocking; as built: {s['uplinks_per_leaf_as_built']}"),
        ("cores per node", s["cores_per_node"]),
        ("peak leaf demand", doc["leaf_demand"]["peak_uplinks"]),
        ("leaf demand stretches", doc["leaf_demand"]["stretches"]),
        ("analysis time", f"{sum(v for k, v in doc['timings_s'].items() if k in ('base_total', 'crossbar_sweep', 'cores_per_node_sweep')):.2f} s"),
    ]
    sections: list[tuple[str, str]] = [("Schedule", table_html(["", ""], [[k, v] for k, v in kv], css_class="data kv"))]
    if doc["uplink_sweep"]:
        frag = plotly_div(_plotly_sweep(doc)) + _sweep_table(doc, table_html)
        if "uplink_removal" in fig_files:
            frag += image_html("figures/uplink_removal.png", fig_files["uplink_removal"], svg="figures/uplink_removal.svg")
        sections.append(("Uplink removal", frag))
    for key, stem, label, heading in (
        ("crossbar_sweep", "crossbar_size", "nodes_per_leaf", "Crossbar size"),
        ("cores_per_node_sweep", "cores_per_node", "cores_per_node", "Cores per node"),
    ):
        entries = doc.get(key) or []
        if entries:
            frag = plotly_div(_plotly_family(entries, label)) + _family_table(entries, label, table_html)
            if stem in fig_files:
                frag += image_html(f"figures/{stem}.png", fig_files[stem], svg=f"figures/{stem}.svg")
            sections.append((heading, frag))
    if "contention_probability" in fig_files:
        sections.append(("Probability of contention", image_html("figures/contention_probability.png", fig_files["contention_probability"], svg="figures/contention_probability.svg")))
    sections.append(("Model", _model_html()))
    return build_page(f"Uplink contention: {s['name']}", sections)


def _model_html() -> str:
    return (
        "<p>Seed 001's worst-case model (every formula and every reading in <code>docs/contention.md</code>): "
        "U(n,j) = min(c(n,j), nodes of j on other leaves); D(n,t) = sum of U over the jobs running at t; "
        "with R uplinks per leaf, a job runs max(1, max over its leaves D/R) times slower at each instant. "
        "<b>System-wide slowdown</b> = total added wall time / total wall time of all jobs. "
        "<b>Added / node-s</b> divides the same added wall time by the jobs' node-seconds: the normalisation "
        "that reproduces 001's reported magnitudes (see the docs). The expected slowdowns take X ~ Binomial(D, J) "
        "links busy at once and the factor E[max(0, X/R - 1)].</p>"
    )


def _fallback_report(doc: dict[str, Any], fig_files: dict[str, str]) -> str:
    """FALLBACK page, used only when toposched.reporting cannot be imported."""
    s = doc["schedule"]
    esc = html.escape
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Uplink contention: {esc(s['name'])}</title></head><body>",
        "<!-- fallback page: toposched.reporting is not available -->",
        f"<h1>Uplink contention: {esc(s['name'])}</h1>",
        "<p><em>Fallback page (toposched.reporting not available): static figures and tables only.</em></p>",
        f"<p>{s['jobs']:,} jobs, {doc['exposed_jobs']:,} on two or more leaves; {s['nodes']:,} nodes, {s['nodes_per_leaf']} per leaf.</p>",
    ]

    def table(cols: Sequence[str], rows: Sequence[Sequence[Any]], caption: str | None = None) -> str:
        head = "".join(f"<th>{esc(str(c))}</th>" for c in cols)
        body = "".join("<tr>" + "".join(f"<td>{esc('-' if v is None else (f'{v:,}' if isinstance(v, int) else f'{v:.3g}' if isinstance(v, float) else str(v)))}</td>" for v in r) + "</tr>" for r in rows)
        cap = f"<caption>{esc(caption)}</caption>" if caption else ""
        return f"<table border='1'>{cap}<tr>{head}</tr>{body}</table>"

    if doc["uplink_sweep"]:
        parts.append("<h2>Uplink removal</h2>" + _sweep_table(doc, table))
    for key, label, heading in (("crossbar_sweep", "nodes_per_leaf", "Crossbar size"), ("cores_per_node_sweep", "cores_per_node", "Cores per node")):
        if doc.get(key):
            parts.append(f"<h2>{heading}</h2>" + _family_table(doc[key], label, table))
    for stem, cap in fig_files.items():
        parts.append(f"<figure><a href='figures/{stem}.svg'><img src='figures/{stem}.png' style='max-width:100%'></a><figcaption>{esc(cap)}</figcaption></figure>")
    parts.append("<h2>Model</h2>" + _model_html() + "</body></html>")
    return "\n".join(parts)

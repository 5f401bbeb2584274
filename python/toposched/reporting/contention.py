"""The outputs of ``toposched contention`` (seed 001's uplink model): contention.json,
the Parquet tables, the figures and report.html (:func:`write_outputs`, also the library
entry for an analysis made in Python)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from ..files import write_atomic as _atomic
from .figures import save_figure
from .html import build_page, image_html, plotly_div, table_html
from .story import leaf_size_text


def pct(x: float | None) -> str:
    """A fraction as a percentage with two decimals (``-`` for None)."""
    return "-" if x is None else f"{100 * x:.2f}%"


_pct = pct

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
            out: float | None = v["mean"] if isinstance(v, dict) else v  # contention.json values
            return out
    return None


def _prob_of(J: float, key: str) -> Callable[[dict[str, Any]], float | None]:
    """A series of :func:`_prob` at one comm fraction (bound now, not when called)."""
    return lambda r: _prob(r, J, key)


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
    title = f"{sched['name']} ({sched['nodes']:,} nodes, {leaf_size_text(sched)} per leaf)"
    if sweep:
        x = [r["removed"] for r in sweep]
        fig, ax = _figure(11, 7.5, 2, 2)
        a = ax[0, 0]
        a.plot(x, _series(sweep, lambda r: r["system_slowdown"], log=True), "o-", color="black", label="worst case (J = 1)")
        for J in Js:
            a.plot(x, _series(sweep, _prob_of(J, "system_slowdown"), log=True), ".--", label=f"expected, J = {J:g}")
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
            a.plot(x, _series(sweep, _prob_of(J, "affected_job_slowdown"), log=True), ".--", label=f"mean, expected, J = {J:g}")
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
        fig.add_trace(go.Scatter(x=x, y=_series(sweep, _prob_of(J, "system_slowdown"), log=True), name=f"expected, J={J:g}", legendgroup=f"J{J:g}", mode="lines+markers", line=style), 1, 1)
        fig.add_trace(go.Scatter(x=x, y=_series(sweep, _prob_of(J, "affected_job_slowdown"), log=True), name=f"expected, J={J:g}", legendgroup=f"J{J:g}", showlegend=False, mode="lines+markers", line=style), 1, 2)
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


def _sweep_table(doc: dict[str, Any]) -> str:
    cols = ["R", "removed", "taper", "system slowdown", "added / node-s", "affected jobs", "mean / affected", "median", "p95", "max"]
    rows = []
    # a tapered fabric's own cost is the row R = W1 (as the terminal marks it)
    built = doc["schedule"].get("uplinks_per_leaf_as_built")
    tapered = built is not None and built < doc["schedule"]["full_uplinks"]
    for r in doc["uplink_sweep"]:
        a = r["affected_job_slowdown"]
        row: list[Any] = [f"{r['uplinks']} (as built)" if tapered and r["uplinks"] == built else r["uplinks"], r["removed"], r["taper"], _pct(r["system_slowdown"]), _pct(r["added_wall_per_node_second"]), r["affected_jobs"]]
        row += [_pct(a[k]) for k in ("mean", "median", "p95", "max")]
        rows.append(row)
    out = table_html(cols, rows, caption="Worst case (every job communicates all the time). Slowdowns are added wall time over run time (100% = twice as long).")
    out += _beside_001(doc)
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


#: What seed 001 reports for its worst case (100 % communication), as its text says it
#: (§IV: "slowdowns of 350% were encountered [Jazz, Thunder], while slowdowns of 550%
#: occurred in the Atlas workload"; "the average slowdown being less than 50%"; "a 1:2
#: oversubscription ratio results in only a 5% system-wide slowdown"): (what, 001's figure,
#: the sweep row it is read at: one uplink, or half of them, the value of that row compared).
SEED_001_FIGURES = (
    ("max slowdown of a job, one uplink left", "550% (Atlas, 24-port crossbars), 350% (Jazz, Thunder, 16-port)", "one", "max"),
    ("mean slowdown of the affected jobs", "less than 50%", "half", "mean"),
    ("system-wide slowdown at 2:1", "about 5% (Jazz); under 5% on every workload", "half", "system"),
)


def _beside_001(doc: dict[str, Any]) -> str:
    """Seed 001's published worst-case figures beside this analysis's rows (issue 12: the
    per-affected-job distribution beside the paper's). docs/contention.md says why the
    maxima are twice 001's and which normalisation gives its system-wide magnitudes."""
    sweep = {r["uplinks"]: r for r in doc["uplink_sweep"]}
    full = doc["schedule"]["full_uplinks"]
    rows = []
    for what, paper, at, key in SEED_001_FIGURES:
        uplinks = 1 if at == "one" else max(1, full // 2)
        r = sweep.get(uplinks)
        if r is None:
            ours = "-"
        elif key == "system":
            ours = f"{_pct(r['system_slowdown'])} (added / node-s: {_pct(r['added_wall_per_node_second'])})"
        else:
            ours = _pct(r["affected_job_slowdown"][key])
        rows.append([what, paper, f"R = {uplinks}" + (f" of {full} (2:1)" if at == "half" else ""), ours])
    return table_html(
        ["seed 001 reports", "001's figure", "read here at", "this analysis"],
        rows,
        caption="Seed 001's published worst-case figures beside this schedule's (docs/contention.md: the maxima here are K - 1 = twice 001's, and 001's system-wide magnitudes match the per-node-second reading).",
    )


def _family_table(entries: list[dict[str, Any]], label: str) -> str:
    cols = [label.replace("_", " "), "exposed jobs", "system @ 3/4 uplinks", "system @ 1/2", "system @ 1/4", "system @ R=1", "max per job @ 1/2"]
    rows = []
    for e in entries:
        sw = {r["uplinks"]: r for r in e["uplink_sweep"]}
        full = max(sw) if sw else 1

        def at(frac: float, key: str = "system_slowdown") -> str:
            want = full * frac
            r = sw.get(max(1, round(want)))
            if r is None:
                return "-"
            text = _pct(r[key]) if key == "system_slowdown" else _pct(r["affected_job_slowdown"]["max"])
            # 3/4 of 18 uplinks is no whole number: say which row stands for it
            return text if abs(want - round(want)) < 1e-9 else f"{text} (R={r['uplinks']})"

        rows.append([e[label], e["exposed_jobs"], at(0.75), at(0.5), at(0.25), at(1 / full), at(0.5, "max")])
    return table_html(cols, rows)


def build_report(doc: dict[str, Any], fig_files: dict[str, str]) -> str:
    """report.html, in the style of ``compare``'s report."""
    s = doc["schedule"]
    kv = [
        ("schedule", s["name"]),
        ("jobs", s["jobs"]),
        ("jobs on 2+ leaves (exposed)", doc["exposed_jobs"]),
        ("nodes, leaves", f"{s['nodes']:,} nodes on {s['leaves']:,} leaves of {leaf_size_text(s)}"),  # K is the largest leaf's
        ("uplinks per leaf", f"{s['full_uplinks']} nonblocking; as built: {s['uplinks_per_leaf_as_built']}"),
        ("cores per node", s["cores_per_node"]),
        ("peak leaf demand", doc["leaf_demand"]["peak_uplinks"]),
        ("leaf demand stretches", doc["leaf_demand"]["stretches"]),
    ]
    kv += [("note", note) for note in s.get("notes", [])]  # e.g. run times that already hold the network model's slowdowns
    sections: list[tuple[str, str]] = [("Schedule", table_html(["", ""], [[k, v] for k, v in kv], css_class="data kv"))]
    if doc["uplink_sweep"]:
        frag = plotly_div(_plotly_sweep(doc)) + _sweep_table(doc)
        if "uplink_removal" in fig_files:
            frag += image_html("figures/uplink_removal.png", fig_files["uplink_removal"], svg="figures/uplink_removal.svg")
        sections.append(("Uplink removal", frag))
    for key, stem, label, heading in (
        ("crossbar_sweep", "crossbar_size", "nodes_per_leaf", "Crossbar size"),
        ("cores_per_node_sweep", "cores_per_node", "cores_per_node", "Cores per node"),
    ):
        entries = doc.get(key) or []
        if entries:
            frag = plotly_div(_plotly_family(entries, label)) + _family_table(entries, label)
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
        "<b>System-wide slowdown</b> = total added wall time / total wall time of all jobs: 001's own metric, the one it "
        "defines (\u201cthe aggregate wallclock time increase compared to the overall wallclock time used by jobs\u201d), "
        "hence the headline column. "
        "<b>Added / node-s</b> divides the same added wall time by the jobs' node-seconds: not 001's definition, but the "
        "normalisation that reproduces 001's reported magnitudes (see the docs). <b>Mean / affected</b> and the columns "
        "after it: the distribution of the slowdowns of the jobs the removal slows (added wall time over their run time). "
        "The expected slowdowns take X ~ Binomial(D, J) "
        "links busy at once and the factor E[max(0, X/R - 1)].</p>"
    )

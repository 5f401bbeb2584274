"""``DIR/report.html``: the sweep's runs and figures across its matrix.

Built from the run directories (the same rows as the catalog), for the runs of the last
sweep started on ``DIR`` (``plan.json``; every run when there is no plan). Figures:

* for every numeric axis that takes several values (``taper``, and each transform's
  number: ``t_scale``, ``t_days``, ...), mean wait, utilization, mean bounded slowdown
  and mean APH against it, one line per policy (queue/alloc, plus the speedup scenario
  when it varies), one panel per workload and fabric, averaged over seeds;
* when no numeric axis varies, the same metrics as grouped bars per policy;
* a table of every run (with links to its directory) and one of the failed runs.

The page is made with :func:`toposched.reporting.build_page` (the style of the compare
report, plotly.js inlined once, works offline).
"""

from __future__ import annotations

import html
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from ..sweep.catalog import catalog_rows
from ..files import write_text_atomic as _write_atomic

__all__ = ["write_report", "METRICS"]

#: (column, label, scale): what the figures show.
METRICS: tuple[tuple[str, str, float], ...] = (
    ("wait_mean_s", "mean wait (h)", 1 / 3600),
    ("utilization", "utilization (%)", 100.0),
    ("bsld_mean", "mean bounded slowdown", 1.0),
    ("aph_mean", "mean APH (hops)", 1.0),
)


def _policy(r: dict[str, Any], vary: dict[str, bool]) -> str:
    key = f"{r['queue']}/{r['alloc']}"
    if vary["speedup"]:
        key += f" {r['speedup']}"
    if vary.get("network"):
        key += f" net={r.get('network')}"
    return key


def _facet(r: dict[str, Any], x: str | None, taper_varies: bool = False) -> str:
    tf = [t for t in r["transforms"].split() if not (x and x.startswith("t_") and t.partition(":")[0] == x[2:])]
    wl = r["workload"] + (f" [{' '.join(tf)}]" if tf else "")
    fab = r["fabric"]
    if taper_varies and x != "taper" and r.get("taper") is not None:
        fab += f" (taper {r['taper']:g})"
    return f"{wl} on {fab}"


def _numeric_axes(rows: list[dict[str, Any]]) -> list[str]:
    axes = []
    keys = ["taper"] + sorted({k for r in rows for k in r if k.startswith("t_")})
    for k in keys:
        vals = {r.get(k) for r in rows}
        if len(vals) > 1 and all(isinstance(v, (int, float)) for v in vals if v is not None):
            axes.append(k)
    return axes


def _axis_label(x: str) -> str:
    if x == "taper":
        return "taper (K : W1)"
    return f"{x[2:]} (transform)"


def _mean(vals: list[float | None]) -> float | None:
    """The mean of the numbers, None and NaN left out (None when nothing is left)."""
    kept = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(kept) / len(kept) if kept else None


def _line_figures(rows: list[dict[str, Any]], x: str, vary: dict[str, bool], plotly_div: Callable[..., str]) -> list[tuple[str, str]]:
    import plotly.graph_objects as go
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    sections = []
    facets: dict[str, list[dict[str, Any]]] = defaultdict(list)
    taper_varies = len({r.get("taper") for r in rows}) > 1
    for r in rows:
        if r.get(x) is not None:
            facets[_facet(r, x, taper_varies)].append(r)
    for facet, frows in facets.items():
        if len({r[x] for r in frows}) < 2:  # nothing to draw a line through
            continue
        policies = sorted({_policy(r, vary) for r in frows})
        fig = make_subplots(rows=2, cols=2, subplot_titles=[m[1] for m in METRICS], horizontal_spacing=0.1, vertical_spacing=0.14)
        for pi, pol in enumerate(policies):
            color = qualitative.D3[pi % len(qualitative.D3)]
            prow = [r for r in frows if _policy(r, vary) == pol]
            xs = sorted({r[x] for r in prow})
            for mi, (col, label, scale) in enumerate(METRICS):
                ys = []
                for xv in xs:
                    m = _mean([r.get(col) for r in prow if r[x] == xv])
                    ys.append(None if m is None else m * scale)
                fig.add_trace(
                    go.Scatter(x=xs, y=ys, mode="lines+markers", name=pol, legendgroup=pol, showlegend=mi == 0, line={"color": color}, hovertemplate=f"{pol}<br>{x}=%{{x}}<br>{label}=%{{y:,.4~r}}<extra></extra>"),
                    row=mi // 2 + 1,
                    col=mi % 2 + 1,
                )
        xs_all = sorted({r[x] for r in frows})
        for i in range(1, 5):
            fig.update_xaxes(title_text=_axis_label(x), row=(i - 1) // 2 + 1, col=(i - 1) % 2 + 1)
            if len(xs_all) <= 12:
                fig.update_xaxes(tickmode="array", tickvals=xs_all, ticktext=[f"{v:g}" for v in xs_all], row=(i - 1) // 2 + 1, col=(i - 1) % 2 + 1)
        # waits, slowdowns, utilization and makespans cannot be negative: axes from 0, so that
        # equal values do not look different on a zoomed axis
        fig.update_yaxes(rangemode="tozero", tickformat=",.3~r")
        fig.update_layout(height=640, margin={"t": 60, "l": 60, "r": 20, "b": 50}, legend={"title": {"text": "policy"}})
        seeds = len({r["seed"] for r in frows})
        note = f'<p class="muted">Each point: mean over {seeds} seed{"s" if seeds != 1 else ""} (and any other axis not shown).</p>'
        sections.append((f"Against {_axis_label(x)}: {facet}", plotly_div(fig) + note))
    return sections


def _bar_figure(rows: list[dict[str, Any]], vary: dict[str, bool], plotly_div: Callable[..., str]) -> str:
    import plotly.graph_objects as go
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    taper_varies = len({r.get("taper") for r in rows}) > 1
    facets = sorted({_facet(r, None, taper_varies) for r in rows})
    policies = sorted({_policy(r, vary) for r in rows})
    fig = make_subplots(rows=2, cols=2, subplot_titles=[m[1] for m in METRICS], horizontal_spacing=0.1, vertical_spacing=0.18)
    for pi, pol in enumerate(policies):
        color = qualitative.D3[pi % len(qualitative.D3)]
        for mi, (col, _label, scale) in enumerate(METRICS):
            ys = []
            for f in facets:
                m = _mean([r.get(col) for r in rows if _policy(r, vary) == pol and _facet(r, None, taper_varies) == f])
                ys.append(None if m is None else m * scale)
            fig.add_trace(go.Bar(x=facets, y=ys, name=pol, legendgroup=pol, showlegend=mi == 0, marker={"color": color}), row=mi // 2 + 1, col=mi % 2 + 1)
    fig.update_yaxes(rangemode="tozero", tickformat=",.3~r")
    fig.update_layout(barmode="group", height=680, margin={"t": 60, "l": 60, "r": 20, "b": 80}, legend={"title": {"text": "policy"}})
    return plotly_div(fig)


def _hours(v: Any) -> float | None:
    return None if v is None else v / 3600


def write_report(out: str | Path, *, title: str | None = None) -> Path:
    """Write ``out/report.html`` (atomically) and return its path."""
    out = Path(out)
    from .html import Html, build_page, plotly_div, table_html
    rows = catalog_rows(out)
    plan_name = ""
    try:
        plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
        plan_name = plan.get("sweep") or ""
        desc = plan.get("description") or ""
    except (OSError, ValueError):
        desc = ""
    if any(r["in_plan"] for r in rows):
        rows = [r for r in rows if r["in_plan"]]
    ok = [r for r in rows if r["status"] == "complete"]
    failed = [r for r in rows if r["status"] != "complete"]
    vary = {k: len({r.get(k) for r in rows}) > 1 for k in ("speedup", "network", "seed", "workload", "fabric")}
    sections: list[tuple[str, str]] = []
    if ok:
        axes = _numeric_axes(ok)
        drawn = 0
        for x in axes:
            figs = _line_figures(ok, x, vary, plotly_div)
            sections += figs
            drawn += len(figs)
        if not drawn:
            sections.append(("Policies compared", _bar_figure(ok, vary, plotly_div)))
    columns = ["run", "workload", "transforms", "fabric", "taper", "queue", "alloc", "speedup", "seed", "status", "mean wait (h)", "mean bsld", "utilization (%)", "mean APH", "makespan (d)"]
    table_rows = []
    for r in rows:
        link = Html(f'<a href="{html.escape(r["dir"])}/">{html.escape(r["run_id"])}</a>')
        table_rows.append(
            [
                link,
                r["workload"],
                r["transforms"] or None,
                r["fabric"],
                r["taper"],
                r["queue"],
                r["alloc"],
                r["speedup"],
                r["seed"],
                r["status"],
                _hours(r["wait_mean_s"]),
                r["bsld_mean"],
                None if r["utilization"] is None else 100.0 * r["utilization"],
                r["aph_mean"],
                None if r["makespan_s"] is None else r["makespan_s"] / 86400,
            ]
        )
    sections.append(("Runs", table_html(columns, table_rows)))
    if failed:
        frows = [[Html(f'<a href="{html.escape(r["dir"])}/error.txt">{html.escape(r["run_id"])}</a>'), r["workload"], r["transforms"] or None, r["fabric"], r["queue"], r["alloc"], r["speedup"], r["seed"], r["error"]] for r in failed]
        sections.append(("Failed runs", table_html(["run", "workload", "transforms", "fabric", "queue", "alloc", "speedup", "seed", "error"], frows)))
    intro = (
        f"<p>{html.escape(desc)}</p>" if desc else ""
    ) + (
        f'<p class="muted">{len(rows)} runs: {len(ok)} complete, {len(failed)} failed. Every run\'s specification and '
        "metrics are in <code>catalog.duckdb</code> (<code>toposched runs DIR</code>, or DuckDB SQL); each run's "
        "per-job results are in <code>runs/&lt;run_id&gt;/jobs.parquet</code>.</p>"
    )
    page = build_page(title or f"Sweep {plan_name}".strip(), sections, intro=intro)
    path = out / "report.html"
    _write_atomic(path, page)
    return path

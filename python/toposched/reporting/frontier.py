"""The frontier's figure, terminal table and HTML page (``toposched frontier``).

``build_frontier_report(out_dir)`` reads ``out_dir/frontier.json`` (written by
:func:`toposched.frontier.run_frontier`) and writes ``out_dir/frontier.html`` with
``out_dir/figures/frontier.png`` and ``.svg``: utilization lost against interference
node-seconds (the Pareto front joined by a line, the target's box shaded), and beside it
the mean wait of each point against the same utilization axis.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from ..files import write_text_atomic
from .figures import save_figure
from .html import Html, build_page, image_html, table_html


def _pct(v: float | None) -> str:
    return "-" if v is None else _num(100 * v, 1)


def _num(v: float | None, digits: int = 2) -> str:
    if v is None:
        return "-"
    text = f"{v:.{digits}f}"
    # a tiny negative difference rounds to "-0.00": show it as the zero it is
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _node_hours(v: float | None) -> str:
    return "-" if v is None else f"{v / 3600:,.0f}"


def frontier_rows(document: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """The table of points, in grid order (the same for the terminal and the page)."""
    # every point ran without the network model (its cost: utilization) and with it (its
    # interference, useful utilization and waits): each column says which
    columns = [
        "policy", "utilization lost, without the model (pts)", "busy util., without the model (%)", "interference, with the model (node-h)",
        "interference removed (%)", "useful util., with the model (%)", "useful gained (pts)", "mean wait, with the model (h)",
        "wait ratio, with the model", "front", "target",
    ]
    rows = []
    for p in document["points"]:
        rel = p["vs_baseline"]
        rows.append([
            p["policy"],
            _num(rel["utilization_lost_pts"]),
            _pct(p["open_busy_utilization"]),
            _node_hours(p["interference_node_s"]),
            _pct(rel["interference_removed"]),
            _pct(p["useful_utilization"]),
            _num(rel["useful_gain_pts"]),
            _num(None if p["wait_mean_s"] is None else p["wait_mean_s"] / 3600, 2),
            _num(rel["wait_ratio"], 3),
            "yes" if p["on_front"] else "",
            "met" if p["meets_target"] else "",
        ])
    return columns, rows


def frontier_table(document: dict[str, Any]) -> Any:
    """A rich table of the points (``toposched frontier`` prints it)."""
    from rich import box
    from rich.table import Table

    _, full = frontier_rows(document)
    # short headers and the columns that matter most, so that the table fits 80 columns;
    # the caption, the CSV and the page have them all
    keep = [0, 1, 3, 4, 5, 8, 9, 10]
    columns = ["policy", "lost\npts", "interf.\nnode-h", "removed\n%", "useful\n%", "wait\nx", "front", "target"]
    rows = [[r[i] for i in keep] for r in full]
    title = f"{Path(document['trace']).name} on {document['system']} ({document['fabric_nodes']} nodes), {document['queue']}, network {document['network']}"
    if document["transforms"]:
        title += f" ({', '.join(document['transforms'])})"
    caption = (
        f"vs {document['baseline']}. lost pts: points of busy utilization lost without the network model; "
        "interf.: node-hours lost to predicted slowdown with the model, removed %: share of the baseline's removed; useful %: node-seconds / slowdown "
        "over the fabric's; wait x: mean wait with the model over the baseline's; front: Pareto front of (lost pts, interf.); "
        "target: docs/frontier.md. All columns: frontier.csv"
    )
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, title=title, title_justify="left", caption=caption, caption_justify="left")
    for i, c in enumerate(columns):
        if i == 0:
            t.add_column(c, justify="left", overflow="fold")  # a long label wraps; numbers never do
        else:
            width = max([len(str(r[i])) for r in rows] + [len(line) for line in c.split("\n")])
            t.add_column(c, justify="right", no_wrap=True, min_width=width)
    for r in rows:
        t.add_row(*[str(x) for x in r])
    return t


def frontier_figure(document: dict[str, Any]) -> Any:
    """Two panels sharing the utilization axis: interference (node-hours) and mean wait (h)."""
    from matplotlib.figure import Figure

    points = [p for p in document["points"] if p["vs_baseline"]["utilization_lost_pts"] is not None and p["interference_node_s"] is not None]
    fig = Figure(figsize=(11, 4.6), layout="constrained")
    ax, bx = fig.subplots(1, 2)
    xs = [p["vs_baseline"]["utilization_lost_pts"] for p in points]
    ys = [p["interference_node_s"] / 3600 for p in points]
    ws = [(p["wait_mean_s"] or 0) / 3600 for p in points]
    colors = ["#c0392b" if p["on_front"] else "#7f8c8d" for p in points]
    ax.scatter(xs, ys, c=colors, s=36, zorder=3, clip_on=False)  # a point at 0 (no interference) whole on the axis
    front = sorted((x, y) for x, y, p in zip(xs, ys, points) if p["on_front"])
    if front:
        ax.step([f[0] for f in front], [f[1] for f in front], where="post", color="#c0392b", linewidth=1.2, zorder=2, label="Pareto front")
    base_i = next((p["interference_node_s"] for p in points if p["policy"] == document["baseline"]), None)
    if base_i:
        from matplotlib.patches import Rectangle

        target = document["target"]
        # the target's box: at most that many points lost AND at most that share of the
        # baseline's interference left (the dashed line), not the whole height
        top = base_i / 3600 * (1 - target["interference_removed_at_least"])
        left = min(min(xs), 0)
        ax.add_patch(Rectangle((left, 0), target["utilization_lost_pts_at_most"] - left, top, color="#27ae60", alpha=0.06, zorder=0, linewidth=0))
        ax.axhline(top, color="#27ae60", linewidth=0.9, linestyle="--", label=f"target: {100 * target['interference_removed_at_least']:.0f} % of the baseline's interference removed")
    for x, y, p in zip(xs, ys, points):
        ax.annotate(p["policy"], (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
    ax.set_xlabel(f"utilization lost vs {document['baseline']} (points, without the network model)")
    ax.set_ylabel("interference (node-hours lost to predicted slowdown)")
    ax.legend(fontsize=8, loc="upper right")
    bx.scatter(xs, ws, c=colors, s=36, zorder=3, clip_on=False)
    for x, w, p in zip(xs, ws, points):
        bx.annotate(p["policy"], (x, w), textcoords="offset points", xytext=(4, 3), fontsize=7)
    bx.set_xlabel(f"utilization lost vs {document['baseline']} (points)")
    bx.set_ylabel("mean wait with the network model (h)")
    for a in (ax, bx):
        a.set_ylim(bottom=0)  # node-hours and waits: from 0, so that a small difference does not look large
        a.grid(color="#e5e5e5", linewidth=0.8)
        a.set_axisbelow(True)
        for side in ("top", "right"):
            a.spines[side].set_visible(False)
    fig.suptitle(f"{Path(document['trace']).name} on {document['system']}: cost and benefit of each allocation policy (red: Pareto front)", fontsize=10)
    return fig


def _verdict(document: dict[str, Any]) -> str:
    met = [p["policy"] for p in document["points"] if p["meets_target"]]
    front = [p["policy"] for p in document["points"] if p["on_front"]]
    t = document["target"]
    lines = [
        f"Target: remove at least {100 * t['interference_removed_at_least']:.0f} % of {document['baseline']}'s interference node-seconds, "
        f"lose at most {t['utilization_lost_pts_at_most']:g} point of busy utilization, keep the mean wait within {100 * (t['wait_ratio_at_most'] - 1):.0f} % "
        f"of {document['baseline']}'s, and beat {' and '.join(t['useful_utilization_above'])} on useful utilization.",
        ("Met by: " + ", ".join(met) + ".") if met else "No point meets the target on this workload.",
        "On the Pareto front: " + (", ".join(front) if front else "none") + ".",
    ]
    return "<ul class=\"verdict\">" + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>"


def build_frontier_report(out_dir: str | Path) -> Path:
    """Write ``out_dir/frontier.html`` and its figure; return the page's path."""
    out = Path(out_dir)
    document = json.loads((out / "frontier.json").read_text())
    fig = frontier_figure(document)
    save_figure(fig, out / "figures" / "frontier")
    columns, rows = frontier_rows(document)
    settings = table_html(
        ["setting", "value"],
        [
            ["trace", document["trace"]],
            ["fabric", f"{document['system']} ({document['fabric_nodes']} nodes)"],
            ["transforms", ", ".join(document["transforms"]) or "none"],
            ["queue policy", document["queue"]],
            ["network model", document["network"]],
            ["seed", document["seed"]],
            ["baseline", document["baseline"]],
        ],
    )
    sections = [
        ("Verdict", Html(_verdict(document))),
        ("Frontier", image_html("figures/frontier.png", "Left: utilization lost (without the network model) against node-hours lost to predicted slowdown (with it); the red step is the Pareto front. Right: mean wait.", svg="figures/frontier.svg")),
        ("Points", table_html(columns, rows)),
        ("Settings", settings),
    ]
    page = build_page("Allocation policy frontier", sections, intro='<p class="muted">toposched frontier: each point ran twice, without and with the network model (docs/frontier.md).</p>')
    path = out / "frontier.html"
    write_text_atomic(path, page)
    return path

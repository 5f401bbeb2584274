"""Fabric snapshot: the tree with the jobs running at one instant, and the links they share.

``draw_snapshot(run_dir, time_s, out_path)`` reads one simulate output directory
(``jobs.parquet``, ``fabric.json``) and draws, like the SC18 paper's Fig. 2-4:

* every leaf (L1) switch as a column of node squares, leaves grouped by pod; a node is
  coloured by the job that holds it at ``time_s`` (a job runs at ``t`` when
  ``start_s <= t < end_s``, the rule utilization uses), white when free;
* the L2 switches of each pod as one box and the L3 (core) switches as one box: links are
  drawn per bundle, one line per leaf for its leaf-L2 cables and one per pod for its
  L2-L3 cables;
* in red, the bundles that two or more running jobs can both use under the paper's
  conservative rule (brief ``allocation-algorithms.md`` §6.4, ``POSSIBLE_LINKS``): a job on
  several leaves can use every leaf-L2 link of each of its leaves; a job on several pods
  can also use every L2-L3 link of each of its pods. A leaf bundle is shared when two or
  more multi-leaf jobs hold nodes on that leaf (invariant I1 broken), a pod bundle when two
  or more multi-pod jobs hold nodes in that pod (I2 broken). Bundles one job can use are
  drawn dark, unused ones light grey.

``shared_links(run_dir, time_s)`` gives the same facts as data (what the drawing shows), and
``peak_time(run_dir)`` the first sampled instant of peak busy nodes and
``busiest_spanning_time(run_dir)`` the first instant with the most multi-leaf jobs running
(the report draws both for each policy).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .figures import save_figure
from ..files import column_numpy, read_parquet
from ..nodelists import file_node_column, lists_from_ranges, table_ranges

#: Job colours: qualitative palettes without reds, so that red means "shared link" only.
_JOB_COLORS: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
    "#dbdb8d", "#9edae5", "#393b79", "#637939", "#8c6d31", "#7b4173", "#5254a3", "#8ca252",
    "#bd9e39", "#a55194", "#6b6ecf", "#b5cf6b", "#e7ba52", "#ce6dbd", "#9c9ede", "#cedb9c",
    "#e7cb94", "#de9ed6", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363", "#6baed6",
    "#fd8d3c", "#74c476", "#9e9ac8", "#969696", "#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc",
)  # fmt: skip
SHARED_COLOR = "#d00000"
#: Jobs named in the legend (largest first); the rest are counted.
LEGEND_JOBS = 40


@dataclass
class Snapshot:
    """The running jobs at ``time_s`` and the link bundles they can use (§6.4).

    ``leaf_users[leaf]`` lists the multi-leaf running jobs with nodes on that leaf (they
    can use its leaf-L2 links); ``pod_users[pod]`` the multi-pod running jobs with nodes
    in that pod (they can use its L2-L3 links). A bundle with two or more users is shared.
    """

    time_s: int
    job_ids: list[int]
    job_nodes: list[np.ndarray]
    busy_nodes: int
    leaf_users: dict[int, list[int]] = field(default_factory=dict)
    pod_users: dict[int, list[int]] = field(default_factory=dict)

    @property
    def shared_leaves(self) -> list[int]:
        return sorted(leaf for leaf, users in self.leaf_users.items() if len(users) >= 2)

    @property
    def shared_pods(self) -> list[int]:
        return sorted(pod for pod, users in self.pod_users.items() if len(users) >= 2)

    def describe(self) -> dict[str, Any]:
        return {
            "time_s": self.time_s,
            "running_jobs": len(self.job_ids),
            "busy_nodes": self.busy_nodes,
            "shared_leaf_uplinks": self.shared_leaves,
            "shared_pod_uplinks": self.shared_pods,
        }


def _fabric(run_dir: Path) -> dict[str, Any]:
    fabric: dict[str, Any] = json.loads((run_dir / "fabric.json").read_text())  # SimResult.write's JSON object
    return fabric


def peak_time(run_dir: str | Path) -> int:
    """First sampled instant at which the run's busy node count is highest."""
    util = read_parquet(Path(run_dir) / "utilization.parquet", columns=["time_s", "busy_nodes"])
    busy = column_numpy(util, "busy_nodes")
    if len(busy) == 0:
        return 0
    return int(column_numpy(util, "time_s")[int(np.argmax(busy))])


def busiest_spanning_time(run_dir: str | Path) -> int | None:
    """First instant at which the most multi-leaf jobs run at once (the instant with the
    most chances of link sharing), or None when no job spans leaves."""
    t = read_parquet(Path(run_dir) / "jobs.parquet", columns=["start_s", "end_s", "leaves"])
    multi = column_numpy(t, "leaves") >= 2
    start = column_numpy(t, "start_s")[multi]
    end = column_numpy(t, "end_s")[multi]
    keep = end > start
    start, end = start[keep], end[keep]
    if len(start) == 0:
        return None
    times = np.concatenate([end, start])
    delta = np.concatenate([-np.ones(len(end), np.int64), np.ones(len(start), np.int64)])
    order = np.lexsort((delta, times))  # at one instant, ends (-1) before starts (+1)
    running = np.cumsum(delta[order])
    return int(times[order][int(np.argmax(running))])


def shared_links(run_dir: str | Path, time_s: int, fabric: dict[str, Any] | None = None) -> Snapshot:
    """Jobs running at ``time_s`` in the run and which link bundles they can share."""
    run_dir = Path(run_dir)
    fab = fabric if fabric is not None else _fabric(run_dir)
    table = read_parquet(run_dir / "jobs.parquet", columns=["job_id", "start_s", "end_s", file_node_column(run_dir / "jobs.parquet")])
    # All in NumPy from the columns' buffers: pyarrow.compute with a Python scalar, or a
    # NumPy array converted by pa.array, imports pandas (0.3 s), and Table.take imports
    # pyarrow.compute (30-50 ms, in each process that draws a snapshot).
    mask = (column_numpy(table, "start_s") <= time_s) & (column_numpy(table, "end_s") > time_s)
    rows = np.flatnonzero(mask)
    job_ids = [int(x) for x in np.asarray(column_numpy(table, "job_id"))[rows]]
    job_nodes = _rows_node_lists(table, rows)
    node_leaf = np.asarray(fab["node_leaf"], dtype=np.int64)
    leaf_pod = np.asarray(fab["leaf_pod"], dtype=np.int64)
    leaf_users: dict[int, list[int]] = {}
    pod_users: dict[int, list[int]] = {}
    for jid, nodes in zip(job_ids, job_nodes):
        leaves = np.unique(node_leaf[nodes])
        if len(leaves) < 2:
            continue
        for leaf in leaves:
            leaf_users.setdefault(int(leaf), []).append(jid)
        pods = np.unique(leaf_pod[leaves])
        if len(pods) < 2:
            continue
        for pod in pods:
            pod_users.setdefault(int(pod), []).append(jid)
    busy = int(sum(len(n) for n in job_nodes))
    return Snapshot(int(time_s), job_ids, job_nodes, busy, leaf_users, pod_users)


def _rows_node_lists(table: pa.Table, rows: np.ndarray) -> list[np.ndarray]:
    """The node lists (int64) of the given rows of a jobs table, from its CSR ranges."""
    roff, first, count = table_ranges(table)
    roff = np.asarray(roff, dtype=np.int64)
    lo, hi = roff[rows], roff[rows + 1]
    n = hi - lo
    sub_off = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(n, out=sub_off[1:])
    # the ranges of the rows, in order: row k's are lo[k] .. hi[k] - 1
    idx = np.arange(int(sub_off[-1]), dtype=np.int64) + np.repeat(lo - sub_off[:-1], n)
    off, ids = lists_from_ranges(sub_off, np.asarray(first)[idx], np.asarray(count)[idx])
    return [ids[a:b] for a, b in zip(off[:-1].tolist(), off[1:].tolist())]


def _squares(x0: np.ndarray, y0: np.ndarray, side: float) -> Any:
    """Corners of axis-aligned squares with lower-left corners (x0, y0): shape (n, 4, 2)
    (typed Any: matplotlib's stubs want a sequence of polygons, which this array is)."""
    xs = np.stack([x0, x0 + side, x0 + side, x0], axis=1)
    ys = np.stack([y0, y0, y0 + side, y0 + side], axis=1)
    return np.stack([xs, ys], axis=2)


def _clock(seconds: int) -> str:
    d, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    return f"day {d}, {h:02d}:{rest // 60:02d}"


def draw_snapshot(
    run_dir: str | Path,
    time_s: int,
    out_path: str | Path,
    *,
    title: str | None = None,
    formats: tuple[str, ...] = ("png", "svg"),
) -> Snapshot:
    """Draw the fabric of ``run_dir`` with the jobs running at ``time_s``.

    ``out_path`` is the file name without or with a suffix; one file per format in
    ``formats`` is written next to it (``snap.png``, ``snap.svg``). Returns the
    :class:`Snapshot` drawn (running jobs, shared leaf and pod bundles).
    """
    from matplotlib.artist import Artist
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    run_dir = Path(run_dir)
    fab = _fabric(run_dir)
    snap = shared_links(run_dir, time_s, fab)
    node_leaf = np.asarray(fab["node_leaf"], dtype=np.int64)
    leaf_pod = np.asarray(fab["leaf_pod"], dtype=np.int64)
    n_leaves = len(leaf_pod)
    n_pods = int(leaf_pod.max()) + 1 if n_leaves else 0
    three_levels = int(fab.get("levels", 3)) >= 3 and n_pods > 1
    leaf_sizes = np.bincount(node_leaf, minlength=n_leaves)
    leaf_first = np.concatenate([[0], np.cumsum(leaf_sizes)[:-1]])
    kmax = int(leaf_sizes.max()) if n_leaves else 1

    # Geometry (data units: one node square is 1 x 1). Leaves are columns, pods separated.
    gap = 1.6
    leaf_x = np.arange(n_leaves, dtype=float) + leaf_pod * gap
    level_gap = min(4.0, max(1.8, 0.22 * kmax))  # switch rows: far apart on big leaves only
    bh = min(0.6, 0.2 * level_gap)  # half height of the L2 and L3 boxes
    sw_y = 1.4  # leaf switch row (nodes hang below 0)
    l2_y = sw_y + level_gap
    l3_y = l2_y + level_gap
    width = float(leaf_x[-1] + 1) if n_leaves else 1.0

    # Colour jobs largest first so that the big (multi-leaf) jobs get distinct colours.
    order = sorted(range(len(snap.job_ids)), key=lambda i: (-len(snap.job_nodes[i]), snap.job_ids[i]))
    node_color = np.full(len(node_leaf), "#ffffff", dtype=object)
    job_color: dict[int, str] = {}
    for rank, i in enumerate(order):
        c = _JOB_COLORS[rank % len(_JOB_COLORS)]
        job_color[snap.job_ids[i]] = c
        node_color[snap.job_nodes[i]] = c

    # Width: about 0.2 in per leaf column (big fabrics), 0.75 in (tiny ones), 30 in at most.
    fig_w = min(30.0, max(8.0, 0.2 * width + 2.5), max(6.0, 0.75 * width + 2.0))
    ncol = max(1, min(8, int(fig_w // 2.2)))
    legend_rows = -(-(min(LEGEND_JOBS, len(order)) + 4) // ncol)
    data_h = kmax + (l3_y if three_levels else l2_y) + 1.5
    fig_h = min(24.0, max(4.0, (fig_w - 0.3) * data_h / (width + 1.0) + 1.1 + 0.19 * legend_rows))
    fig = Figure(figsize=(fig_w, fig_h), layout="constrained")
    ax = fig.add_subplot()
    ax.set_aspect("equal")
    ax.set_axis_off()

    # Nodes: 0.8 x 0.8 squares, as one collection of polygons built with NumPy (a Patch
    # object per node cost a quarter of a second on 1,296 nodes). Rasterized on big
    # fabrics: in the SVG the squares become one embedded image instead of thousands of
    # paths (what made the SVG slow to write and large); switches, links and text stay
    # vectors.
    node_x0 = leaf_x[node_leaf] + 0.1
    node_y0 = -(np.arange(len(node_leaf)) - leaf_first[node_leaf]) - 0.9
    ax.add_collection(
        PolyCollection(
            _squares(node_x0, node_y0, 0.8),
            closed=True,
            facecolors=list(node_color),
            edgecolors="#9a9a9a",
            linewidths=0.3,
            rasterized=len(node_leaf) > 120,
        )
    )
    if len(node_leaf) <= 120:  # small fabrics: node ids in the squares, as in the paper's Fig. 2
        for node in range(len(node_leaf)):
            leaf = node_leaf[node]
            ax.text(leaf_x[leaf] + 0.5, -(node - leaf_first[leaf]) - 0.5, str(node), fontsize=7, ha="center", va="center", color="#222222")

    # Leaf switches.
    ax.add_collection(
        PolyCollection(_squares(leaf_x + 0.05, np.full(n_leaves, sw_y - 0.45), 0.9), closed=True, facecolors="#d9d9d9", edgecolors="#555555", linewidths=0.5)
    )
    # Node-to-leaf wire stub.
    ax.add_collection(LineCollection([[(x + 0.5, 0.0), (x + 0.5, sw_y - 0.45)] for x in leaf_x], colors="#9a9a9a", linewidths=0.4))

    # Leaf -> L2 bundles: one line per leaf.
    def bundle_style(users: list[int] | None) -> tuple[str, float, str]:
        if users and len(users) >= 2:
            return SHARED_COLOR, 2.4, "-"
        if users:
            return "#333333", 1.0, "-"
        return "#c8c8c8", 0.6, ":"

    # One collection per style (not a line per leaf: hundreds of artists to lay out and draw).
    bundles: dict[tuple[str, float, str], list[list[tuple[float, float]]]] = {}
    for leaf in range(n_leaves):
        x = leaf_x[leaf] + 0.5
        bundles.setdefault(bundle_style(snap.leaf_users.get(leaf)), []).append([(x, sw_y + 0.45), (x, l2_y - bh)])
    for (c, lw, ls), segments in sorted(bundles.items()):
        ax.add_collection(LineCollection(segments, colors=c, linewidths=lw, linestyles=ls, capstyle="butt"))
    for leaf in range(n_leaves):
        x = leaf_x[leaf] + 0.5
        users = snap.leaf_users.get(leaf, [])
        if len(users) >= 2:
            ax.text(x, (sw_y + l2_y) / 2, str(len(users)), color=SHARED_COLOR, fontsize=7, ha="center", va="center",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none"})  # fmt: skip

    # L2 boxes per pod, L3 box, pod bundles.
    w1 = fab.get("uplinks_per_leaf")
    w2 = fab.get("uplinks_per_l2")
    pod_names = fab.get("pod_names") or [f"pod{p}" for p in range(n_pods)]
    for pod in range(n_pods):
        xs = leaf_x[leaf_pod == pod]
        x0, x1 = float(xs.min()), float(xs.max()) + 1
        ax.add_patch(Rectangle((x0, l2_y - bh), x1 - x0, 2 * bh, facecolor="#eeeeee", edgecolor="#555555", linewidth=0.6))
        label = f"{pod_names[pod]}: L2" + (f" x{w1}" if w1 else "")
        ax.text((x0 + x1) / 2, l2_y, label, fontsize=7, ha="center", va="center")
        if three_levels:
            users = snap.pod_users.get(pod, [])
            c, lw, ls = bundle_style(users)
            cx = (x0 + x1) / 2
            ax.plot([cx, cx], [l2_y + bh, l3_y - bh], color=c, linewidth=lw * 2, linestyle=ls, solid_capstyle="butt")
            if len(users) >= 2:
                ax.text(cx + 0.8, (l2_y + l3_y) / 2, f"{len(users)} jobs", color=SHARED_COLOR, fontsize=7, ha="left", va="center")
    if three_levels:
        cores = f" x{w1 * w2}" if w1 and w2 else ""
        ax.add_patch(Rectangle((0, l3_y - bh), width, 2 * bh, facecolor="#eeeeee", edgecolor="#555555", linewidth=0.6))
        ax.text(width / 2, l3_y, f"L3 core{cores}", fontsize=7, ha="center", va="center")

    ax.set_xlim(-0.5, width + 0.5)
    ax.set_ylim(-kmax - 0.5, (l3_y if three_levels else l2_y) + 1.0)

    n_nodes = len(node_leaf)
    head = title or f"{fab.get('name', '')} at t = {time_s} s"
    first_submit = None
    summary_path = run_dir / "summary.json"
    if summary_path.exists():
        first_submit = json.loads(summary_path.read_text()).get("first_submit_s")
    when = f" ({_clock(time_s - first_submit)} after the first submit)" if first_submit is not None else ""
    stats = f"{len(snap.job_ids)} running jobs on {snap.busy_nodes}/{n_nodes} nodes; shared leaf-L2 bundles: {len(snap.shared_leaves)}"
    if three_levels:
        stats += f", shared L2-L3 bundles: {len(snap.shared_pods)}"
    chars = max(30, int(fig_w * 11))  # about 11 characters per inch at 10 pt
    lines = textwrap.wrap(f"{head}{when}", chars) + textwrap.wrap(stats, chars)
    fig.suptitle("\n".join(lines), fontsize=10)

    handles: list[Artist] = [
        Patch(facecolor=job_color[snap.job_ids[i]], edgecolor="#9a9a9a", label=f"job {snap.job_ids[i]} ({len(snap.job_nodes[i])} n)")
        for i in order[:LEGEND_JOBS]
    ]
    rest = order[LEGEND_JOBS:]
    if rest:
        biggest = max(len(snap.job_nodes[i]) for i in rest)
        handles.append(Patch(facecolor="none", edgecolor="none", label=f"+{len(rest)} jobs of <= {biggest} n"))
    handles.append(Patch(facecolor="#ffffff", edgecolor="#9a9a9a", label="free node"))
    from matplotlib.lines import Line2D

    handles.append(Line2D([], [], color=SHARED_COLOR, linewidth=2.4, label="links >= 2 jobs can use"))
    handles.append(Line2D([], [], color="#333333", linewidth=1.0, label="links 1 job can use"))
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, fontsize=7, frameon=False)
    save_figure(fig, Path(out_path), formats)
    return snap

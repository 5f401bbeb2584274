"""The comparison figures, as the SC18 paper draws them (matplotlib, PNG and SVG).

Input is a ``toposched compare`` folder (:class:`CompareData`): ``compare.json`` and one
simulate output directory per (allocation policy, scenario) run. Each ``*_figure``
function returns a matplotlib ``Figure`` (object API, no pyplot, so no global backend is
touched); :func:`save_figure` writes it as PNG and SVG with fixed metadata and hash salt
so that the same inputs give the same bytes. :func:`write_figures` writes them all.

* ``aph_by_size``: average pairwise hops by job-size bin, one box per allocation policy
  (its baseline scenario) per bin, whiskers at min and max (paper Fig. 7), with the ideal
  APH of the bin's median job size (the most compact placement possible) as a black bar.
* ``utilization``: distribution of the per-minute utilization samples, one box per run
  (whiskers at min and max, diamond at the mean; paper Fig. 8).
* ``makespan``: first submit to last end, one bar per run, in the unit of the largest
  (paper Fig. 9).
* ``wait_by_size``: mean wait by job-size bin, grouped bars, last group all jobs (Fig. 10).
* ``mean_wait_table``: mean wait in hours laid out as the paper's Table I (rows workload on
  system, columns runs).
* ``network`` (runs made with ``--network`` only): the predicted slowdowns of the
  multi-leaf jobs, one box per run, and busy vs useful utilization per run with each
  topology-aware policy's payback against the first topology-oblivious run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..files import column_numpy, read_parquet
from ..simulate import SIZE_BINS

#: The paper's names for the allocation policies (TO topology-oblivious, TA topology-aware).
PAPER_ALIAS = {"linear": "TO", "isolated": "TA"}
#: Run colours (by run order), colour-blind-safe Okabe-Ito then tab10.
RUN_COLORS: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
    "#8c564b", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
PNG_DPI = 110


def scenario_label(scenario: str) -> str:
    """``none`` -> ``""``; a percentage (``ta10``, ``10``, ``x10``, ``10pct``, ``10%``) ->
    ``10%``; ``v1`` -> ``V1``; anything else as given."""
    if scenario in ("", "none", "baseline"):
        return ""
    m = re.fullmatch(r"(?:ta|x|s|speedup|minus|-)?(\d+)(?:%|pct|p)?", scenario, flags=re.I)
    if m:
        return f"{m.group(1)}%"
    if re.fullmatch(r"v\d+", scenario, flags=re.I):
        return scenario.upper()
    return scenario


def run_label(alloc: str, scenario: str) -> str:
    """``isolated`` + ``V1`` -> ``isolated V1``."""
    s = scenario_label(scenario)
    return f"{alloc} {s}" if s else alloc


def paper_label(alloc: str, scenario: str) -> str:
    """The paper's column name: ``TA V1``; policies without an alias keep their name."""
    s = scenario_label(scenario)
    a = PAPER_ALIAS.get(alloc, alloc)
    return f"{a} {s}" if s else a


@dataclass
class RunData:
    """One run of a comparison: its policy, scenario, directory and summary."""

    alloc: str
    scenario: str
    dir: Path
    rel_dir: str
    summary: dict[str, Any]
    color: str

    @property
    def label(self) -> str:
        return run_label(self.alloc, self.scenario)

    @property
    def paper_label(self) -> str:
        return paper_label(self.alloc, self.scenario)

    @property
    def is_baseline(self) -> bool:
        return scenario_label(self.scenario) == ""

    @cached_property
    def jobs(self) -> dict[str, np.ndarray]:
        """``nodes`` and ``aph`` (NaN for one-node jobs) of the finished jobs."""
        t = read_parquet(self.dir / "jobs.parquet", columns=["nodes", "aph", "wait_s"])
        aph = np.asarray(column_numpy(t, "aph"), dtype=float)
        return {"nodes": column_numpy(t, "nodes"), "aph": aph, "wait_s": column_numpy(t, "wait_s")}

    @cached_property
    def utilization(self) -> np.ndarray:
        return column_numpy(read_parquet(self.dir / "utilization.parquet", columns=["utilization"]), "utilization")


@dataclass
class CompareData:
    """A ``toposched compare`` output folder, read."""

    root: Path
    meta: dict[str, Any]
    runs: list[RunData] = field(default_factory=list)

    @classmethod
    def load(cls, out_dir: str | Path) -> "CompareData":
        root = Path(out_dir)
        meta = json.loads((root / "compare.json").read_text())
        runs = []
        for i, r in enumerate(meta.get("runs", [])):
            d = root / r["dir"]
            summary = r.get("summary")
            if summary is None and (d / "summary.json").exists():
                summary = json.loads((d / "summary.json").read_text())
            runs.append(RunData(r["alloc"], str(r.get("scenario", "none")), d, r["dir"], summary or {}, RUN_COLORS[i % len(RUN_COLORS)]))
        return cls(root, meta, runs)

    @cached_property
    def fabric(self) -> dict[str, Any]:
        """fabric.json of the first run (every run of a comparison has the same fabric)."""
        for r in self.runs:
            p = r.dir / "fabric.json"
            if p.exists():
                fabric: dict[str, Any] = json.loads(p.read_text())  # SimResult.write's JSON object
                return fabric
        return {}

    @property
    def baselines(self) -> list[RunData]:
        """One run per allocation policy: its baseline scenario (else its first run)."""
        out: dict[str, RunData] = {}
        for r in self.runs:
            if r.alloc not in out or (r.is_baseline and not out[r.alloc].is_baseline):
                out[r.alloc] = r
        return list(out.values())

    @property
    def workload_label(self) -> str:
        """``<trace> (<transforms>) on <system>``, the row name of Table I."""
        trace = Path(str(self.meta.get("trace", "workload"))).name
        for ext in (".gz", ".bz2", ".xz", ".swf", ".txt", ".log", ".csv"):
            if trace.endswith(ext):
                trace = trace[: -len(ext)]
        tr = transforms_text(self.meta.get("transforms") or [], pretty=True)
        system = self.fabric.get("name") or str(self.meta.get("system", ""))
        return f"{trace}{f' ({tr})' if tr else ''} on {system}"


def transforms_text(transforms: Sequence[Any], *, pretty: bool = False) -> str:
    """A list of transforms (strings or dicts) as one short line; ``pretty`` writes the
    paper's way (``scale:2`` -> ``2x``, ``days:15`` -> ``first 15 days``)."""
    parts = []
    for t in transforms:
        if isinstance(t, dict):
            parts.append(", ".join(f"{k}={v}" for k, v in t.items()))
            continue
        text = str(t)
        if pretty:
            kind, _, arg = text.partition(":")
            if kind == "scale" and arg:
                text = f"{arg}x"
            elif kind == "days" and arg:
                n, _, start = arg.partition("@")
                text = f"days {start}+{n}" if start else f"first {n} days"
        parts.append(text)
    return ", ".join(parts)


# ----------------------------------------------------------------------------- data


def size_bin_index(nodes: np.ndarray) -> np.ndarray:
    """Index into :data:`SIZE_BINS` of each node count."""
    highs = np.array([hi for _, _, hi in SIZE_BINS])
    return np.searchsorted(highs, nodes, side="left")


def aph_stats(data: CompareData) -> dict[str, Any]:
    """Five-number APH summaries per size bin and baseline policy, and the ideal APH.

    Returns ``{"bins": [label...], "runs": [RunData...], "boxes": {label: [(min, q1,
    median, q3, max, n) or None per bin]}, "ideal": [float or None per bin]}``; bins
    without any multi-node job are left out.
    """
    runs = data.baselines
    per_run: dict[str, list[tuple[float, ...] | None]] = {}
    used = np.zeros(len(SIZE_BINS), dtype=bool)
    for r in runs:
        j = r.jobs
        ok = ~np.isnan(j["aph"])
        b = size_bin_index(j["nodes"][ok])
        a = j["aph"][ok]
        row: list[tuple[float, ...] | None] = []
        for k in range(len(SIZE_BINS)):
            x = a[b == k]
            if len(x) == 0:
                row.append(None)
                continue
            used[k] = True
            q = np.percentile(x, [0, 25, 50, 75, 100])
            row.append((*map(float, q), float(len(x))))
        per_run[r.label] = row
    ideal = _ideal_per_bin(data, runs[0] if runs else None)
    keep = [k for k in range(len(SIZE_BINS)) if used[k]]
    return {
        "bins": [SIZE_BINS[k][0] for k in keep],
        "runs": runs,
        "boxes": {lbl: [row[k] for k in keep] for lbl, row in per_run.items()},
        "ideal": [ideal[k] for k in keep],
    }


def core_topology(fabric: dict[str, Any]) -> Any | None:
    """A core ``Topology`` rebuilt from a run's fabric.json (None if it cannot be)."""
    try:
        from ..fabric_spec import FabricSpec, LeafSpec, PodSpec
        from ..topology import Fabric

        names = fabric["node_names"]
        node_leaf = fabric["node_leaf"]
        leaf_pod = fabric["leaf_pod"]
        leaves = [LeafSpec(n, []) for n in fabric["leaf_names"]]
        for name, leaf in zip(names, node_leaf):
            leaves[leaf].nodes.append(name)
        pods = [PodSpec(n, []) for n in fabric["pod_names"]]
        for leaf, pod in zip(leaves, leaf_pod):
            pods[pod].leaves.append(leaf)
        spec = FabricSpec(
            fabric.get("name", "fabric"),
            pods,
            levels=int(fabric.get("levels", 3)),
            uplinks_per_leaf=fabric.get("uplinks_per_leaf"),
            uplinks_per_l2=fabric.get("uplinks_per_l2"),
        )
        return Fabric.from_spec(spec).core
    except Exception:  # noqa: BLE001 - the ideal line is optional
        return None


def _ideal_per_bin(data: CompareData, run: RunData | None) -> list[float | None]:
    """Ideal APH of the median multi-node job size of each bin."""
    out: list[float | None] = [None] * len(SIZE_BINS)
    if run is None:
        return out
    top = core_topology(data.fabric)
    if top is None:
        return out
    from .. import _core

    nodes = run.jobs["nodes"]
    nodes = nodes[nodes >= 2]
    b = size_bin_index(nodes)
    for k in range(len(SIZE_BINS)):
        x = nodes[b == k]
        if len(x):
            n = int(np.sort(x)[(len(x) - 1) // 2])
            try:
                v = _core.ideal_aph(top, n)
            except Exception:  # noqa: BLE001 - larger than the fabric
                v = None
            out[k] = None if v is None else float(v)
    return out


def wait_by_size(data: CompareData) -> dict[str, Any]:
    """Mean wait (s) per size bin and run, from the summaries; last group ``all``."""
    present = [lbl for lbl, _, _ in SIZE_BINS if any(b["bin"] == lbl for r in data.runs for b in r.summary.get("by_size", []))]
    groups = present + ["all"]
    values: dict[str, list[float | None]] = {}
    for r in data.runs:
        by = {b["bin"]: b["wait_s"]["mean"] for b in r.summary.get("by_size", [])}
        values[r.label] = [by.get(g) for g in present] + [r.summary.get("wait_s", {}).get("mean")]
    return {"groups": groups, "values": values}


def utilization_stats(run: RunData) -> tuple[float, float, float, float, float, float] | None:
    """(min, q1, median, q3, max, mean) of a run's utilization samples, as fractions."""
    u = run.utilization
    if len(u) == 0:
        return None
    lo, q1, median, q3, hi = (float(x) for x in np.percentile(u, [0, 25, 50, 75, 100]))
    return (lo, q1, median, q3, hi, float(np.mean(u)))


def time_unit(max_seconds: float) -> tuple[str, float]:
    """A unit that keeps numbers readable: (name, seconds per unit); toposched.units'."""
    from ..units import duration_unit

    return duration_unit(max_seconds)


def mean_wait_rows(datas: Sequence[CompareData]) -> tuple[list[str], list[list[Any]]]:
    """Table I: columns ``["Policy", <paper label of each run>...]``, one row per
    comparison (workload on system) with mean wait in hours (None where a run is absent)."""
    cols: list[str] = []
    for d in datas:
        for r in d.runs:
            if r.paper_label not in cols:
                cols.append(r.paper_label)
    rows = []
    for d in datas:
        by = {r.paper_label: r.summary.get("wait_s", {}).get("mean") for r in d.runs}
        rows.append([d.workload_label] + [None if by.get(c) is None else by[c] / 3600.0 for c in cols])
    return ["Policy"] + cols, rows


def fmt_hours(h: float | None) -> str:
    """Hours as the paper prints them: 3 significant digits; never scientific notation
    (a wait under 0.001 h, 3.6 s, prints as '<0.001')."""
    if h is None:
        return "-"
    if h == 0:
        return "0"
    if abs(h) < 0.001:
        return "<0.001"
    if abs(h) >= 99.95:  # whole hours: the g format turns 1,052 into '1.05e+03'
        return f"{h:,.0f}"
    return f"{h:,.3g}" if abs(h) >= 1 else f"{h:.3f}".rstrip("0")


# ----------------------------------------------------------------------------- figures


def save_figure(fig: Any, out_path: Path, formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    """Save ``fig`` as ``out_path`` with each suffix; byte-stable for the same figure.

    A figure with a layout engine (constrained layout) has it solved once, then removed:
    ``savefig`` would otherwise run a whole extra draw (without output) before each
    format, and solve the layout again inside the real draw. A constrained layout is
    solved at the PNG's dpi with the PNG's renderer when PNG comes first, as ``savefig``
    itself does it; any other layout by the first ``savefig``: the files are the same
    bytes as with the engine left on (checked on every figure of the reports)."""
    from matplotlib.backend_bases import FigureCanvasBase
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    base = out_path.with_suffix("") if out_path.suffix in (".png", ".svg", ".pdf") else out_path
    base.parent.mkdir(parents=True, exist_ok=True)
    # A figure made with the object API has the base canvas, whose renderer for the layout
    # is a throw-away one made by a dummy print: every text is then measured twice, once
    # for the layout and again for the PNG (matplotlib caches text extents per renderer).
    # On an Agg canvas the layout and the PNG use the same cached renderer (same size and
    # dpi): 7-12 % less CPU per figure, the same bytes. The canvas is given back after.
    canvas = fig.canvas
    if type(canvas) is FigureCanvasBase:
        FigureCanvasAgg(fig)
    try:
        written = _save_formats(fig, base, formats)
    finally:
        if fig.canvas is not canvas:
            fig.set_canvas(canvas)
    return written


def _save_formats(fig: Any, base: Path, formats: Sequence[str]) -> list[Path]:
    """:func:`save_figure`'s saves, one per format."""
    import matplotlib
    from matplotlib.layout_engine import ConstrainedLayoutEngine, PlaceHolderLayoutEngine

    written = []
    with matplotlib.rc_context({"svg.hashsalt": "toposched", "svg.fonttype": "path", "path.simplify": True}):
        engine = fig.get_layout_engine()
        if engine is not None and isinstance(engine, PlaceHolderLayoutEngine):
            fig.set_layout_engine(None)  # a placeholder lays nothing out but costs the extra draw
        elif isinstance(engine, ConstrainedLayoutEngine) and formats and formats[0] == "png":
            dpi = fig.dpi
            fig.dpi = PNG_DPI
            engine.execute(fig)
            fig.dpi = dpi
            fig.set_layout_engine(None)
        for fmt in formats:
            p = base.with_name(base.name + "." + fmt)
            meta: dict[str, Any]
            if fmt == "svg":
                meta = {"Date": None, "Creator": "toposched"}
            elif fmt == "pdf":
                meta = {"CreationDate": None, "ModDate": None, "Creator": "toposched"}
            else:
                meta = {"Software": "toposched"}
            fig.savefig(p, format=fmt, dpi=PNG_DPI, metadata=meta)
            written.append(p)
            # the layout is the same for every format: keep the one this save solved
            if fig.get_layout_engine() is not None:
                fig.set_layout_engine(None)
    return written


def _title(fig: Any, ax: Any, text: str) -> None:
    """A title wrapped to the figure's width (about 13 characters per inch at 10 pt), so
    that no line is cut at the right edge."""
    import textwrap

    width = max(30, int(fig.get_figwidth() * 13))
    ax.set_title("\n".join(textwrap.fill(line, width) for line in text.split("\n")), fontsize=10)


def _wrap(text: str, inches: float) -> str:
    """``text`` wrapped to ``inches`` of width at 9 pt (about 14 characters per inch)."""
    import textwrap

    width = max(24, int(inches * 14))
    return "\n".join(textwrap.fill(line, width) for line in text.split("\n"))


def _new_figure(w: float, h: float) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), layout="constrained")
    ax = fig.add_subplot()
    ax.grid(axis="y", color="#e5e5e5", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def aph_figure(data: CompareData) -> Any:
    st = aph_stats(data)
    bins, runs = st["bins"], st["runs"]
    fig, ax = _new_figure(min(12.0, max(6.5, 1.0 + 0.9 * len(bins) * max(1, len(runs)) / 2)), 4.2)
    width = 0.8 / max(1, len(runs))
    for i, r in enumerate(runs):
        stats = []
        pos = []
        for k, box in enumerate(st["boxes"][r.label]):
            if box is None:
                continue
            mn, q1, med, q3, mx, n = box
            stats.append({"whislo": mn, "q1": q1, "med": med, "q3": q3, "whishi": mx, "fliers": [], "label": ""})
            pos.append(k - 0.4 + width * (i + 0.5))
        if not stats:
            continue
        ax.bxp(
            stats,
            positions=pos,
            widths=width * 0.85,
            patch_artist=True,
            showfliers=False,
            boxprops={"facecolor": r.color, "alpha": 0.75, "edgecolor": "#333333"},
            medianprops={"color": "#000000", "linewidth": 1.4},
            whiskerprops={"color": "#333333"},
            capprops={"color": "#333333"},
            zorder=3,
        )
        ax.plot([], [], color=r.color, linewidth=8, alpha=0.75, label=f"{r.label} ({r.paper_label})")
    ideal = [(k, v) for k, v in enumerate(st["ideal"]) if v is not None]
    if ideal:
        for k, v in ideal:
            ax.plot([k - 0.42, k + 0.42], [v, v], color="#000000", linewidth=1.4, linestyle="--", zorder=1.5)
        ax.plot([], [], color="#000000", linewidth=1.4, linestyle="--", label="ideal APH (median job of the bin)")
    ax.set_xticks(range(len(bins)), bins)
    ax.set_xlim(-0.6, len(bins) - 0.4)
    ax.set_ylim(bottom=0)  # hops cannot be negative
    ax.set_xlabel("job size (nodes)")
    ax.set_ylabel("average pairwise hops")
    _title(fig, ax, f"APH by job size: {data.workload_label}\nbox 25th-75th percentile, line median, whiskers min and max")
    if ax.get_legend_handles_labels()[0]:  # no multi-node job anywhere: nothing to name (matplotlib warned on stderr)
        fig.legend(fontsize=8, loc="outside lower center", frameon=False, ncol=len(runs) + 1)
    return fig



def _box_with_mean(ax: Any, position: int, five: tuple[float, float, float, float, float], mean: float, run: Any) -> None:
    """One run's box (minimum, quartiles, maximum: no fliers) in its colour at ``position``,
    its mean a white diamond: the utilization and the network figures draw the same."""
    lo, q1, med, q3, hi = five
    ax.bxp(
        [{"whislo": lo, "q1": q1, "med": med, "q3": q3, "whishi": hi, "fliers": [], "label": run.label}],
        positions=[position],
        widths=0.6,
        patch_artist=True,
        showfliers=False,
        boxprops={"facecolor": run.color, "alpha": 0.75, "edgecolor": "#333333"},
        medianprops={"color": "#000000", "linewidth": 1.4},
    )
    ax.plot([position], [mean], marker="D", color="#ffffff", markeredgecolor="#000000", markersize=5)

def utilization_figure(data: CompareData) -> Any:
    fig, ax = _new_figure(min(12.0, max(5.5, 1.5 + 0.9 * len(data.runs))), 4.0)
    for i, r in enumerate(data.runs):
        s = utilization_stats(r)
        if s is None:
            continue
        mn, q1, med, q3, mx, mean = (100 * v for v in s)
        _box_with_mean(ax, i, (mn, q1, med, q3, mx), mean, r)
    ax.plot([], [], marker="D", linestyle="", color="#ffffff", markeredgecolor="#000000", label="mean")
    ax.set_xticks(range(len(data.runs)), [r.label for r in data.runs], rotation=20 if len(data.runs) > 4 else 0)
    ax.set_ylim(0, 102)
    ax.set_ylabel("utilization (% of nodes busy)")
    step = next((r.summary.get("utilization", {}).get("step_s") for r in data.runs), 60)
    _title(fig, ax, f"Utilization, one sample every {step} s: {data.workload_label}")
    fig.legend(fontsize=8, loc="outside lower right", frameon=False)
    return fig


def makespan_values(data: CompareData) -> tuple[list[float | None], str, list[str]]:
    """Each run's makespan in the unit of the largest, the unit, and each bar's label: the
    value and, after the first run, its difference from the first run's in percent
    (near-equal bars hide the differences). A run without a makespan (it replayed no
    job) is ``None``, labelled ``-``: it gets no bar, not a bar of 0."""
    secs = [r.summary.get("makespan_s") for r in data.runs]
    unit, div = time_unit(max([float(s) for s in secs if s is not None], default=0.0))
    vals = [None if s is None else float(s) / div for s in secs]
    first = vals[0] if vals else None
    labels = []
    for i, v in enumerate(vals):
        if v is None:
            labels.append("-")
        elif i == 0 or not first:
            labels.append(f"{v:,.1f}")
        else:
            labels.append(f"{v:,.1f} ({100 * (v - first) / first:+.1f}%)")
    return vals, unit, labels


def makespan_figure(data: CompareData) -> Any:
    fig, ax = _new_figure(min(12.0, max(5.5, 1.5 + 0.9 * len(data.runs))), 4.0)
    vals, unit, labels = makespan_values(data)
    bars = ax.bar(range(len(vals)), [np.nan if v is None else v for v in vals], color=[r.color for r in data.runs], width=0.65)
    ax.bar_label(bars, labels=labels, fontsize=9, padding=2)
    ax.set_xticks(range(len(vals)), [r.label for r in data.runs], rotation=20 if len(vals) > 4 else 0)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"makespan ({unit})")
    _title(fig, ax, f"Makespan (first submit to last end; % against {data.runs[0].label if data.runs else '-'}): {data.workload_label}")
    ax.margins(y=0.12)
    return fig


def wait_figure(data: CompareData) -> Any:
    st = wait_by_size(data)
    groups, values = st["groups"], st["values"]
    top = max([v for vs in values.values() for v in vs if v is not None] or [0.0])
    unit, div = time_unit(top)
    fig, ax = _new_figure(min(12.0, max(7.0, 1.2 + 0.3 * len(groups) * max(1, len(data.runs)))), 4.2)
    width = 0.8 / max(1, len(data.runs))
    for i, r in enumerate(data.runs):
        ys = [np.nan if v is None else v / div for v in values[r.label]]
        xs = np.arange(len(groups)) - 0.4 + width * (i + 0.5)
        ax.bar(xs, ys, width=width * 0.92, color=r.color, label=r.label)
    ax.axvline(len(groups) - 1.5, color="#999999", linewidth=0.8, linestyle=":")
    ax.set_xticks(range(len(groups)), groups)
    ax.set_xlabel("job size (nodes); last group: all jobs")
    ax.set_ylabel(f"mean wait ({unit})")
    ax.set_ylim(bottom=0)
    _title(fig, ax, f"Mean wait by job size: {data.workload_label}")
    fig.legend(fontsize=8, loc="outside lower center", frameon=False, ncol=min(8, len(data.runs)))
    return fig


def mean_wait_table_figure(datas: Sequence[CompareData]) -> Any:
    from matplotlib.figure import Figure

    cols, rows = mean_wait_rows(datas)
    names = {r.paper_label: r.label for d in datas for r in d.runs}
    header = [cols[0]] + [f"{c}\n{names[c]}" if names.get(c, c) != c else c for c in cols[1:]]
    cells = [[row[0]] + [fmt_hours(v) for v in row[1:]] for row in rows]
    first_w = 0.085 * max(len(str(r[0])) for r in rows + [["Policy"]])
    other_w = [0.085 * max(8, max(len(x) for x in h.split("\n"))) for h in header[1:]]
    width = 0.4 + first_w + sum(other_w)
    fig = Figure(figsize=(width, 0.75 + 0.3 * (len(rows) + 2)))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0 - 0.45 / (0.75 + 0.3 * (len(rows) + 2))))
    ax.set_axis_off()
    total = first_w + sum(other_w)
    table = ax.table(
        cellText=cells,
        colLabels=header,
        loc="upper center",
        cellLoc="right",
        colLoc="right",
        colWidths=[w / total * (width - 0.4) / width for w in [first_w] + other_w],
    )
    table.auto_set_font_size(False)
    table.set_fontsize(9)
    for (row, col), cell in table.get_celld().items():
        cell.set_edgecolor("#bbbbbb")
        cell.set_height(0.3 * (2 if row == 0 else 1) / (0.75 + 0.3 * (len(rows) + 2)) * (1.0 / (1.0 - 0.45 / (0.75 + 0.3 * (len(rows) + 2)))))
        if row == 0:
            cell.set_text_props(weight="bold")
            cell.set_facecolor("#f0f0f0")
        if col == 0:
            cell.get_text().set_horizontalalignment("left")
            cell._loc = "left"  # type: ignore[attr-defined]  # noqa: SLF001 - matplotlib has no public setter per cell
    fig.suptitle("Mean wait (hours), laid out as the paper's Table I", fontsize=10, y=0.98)
    return fig


def network_payback(data: CompareData) -> dict[str, dict[str, Any]] | None:
    """Per run made with the network model (by run label): ``busy`` and ``useful``
    utilization (%), the run's multi-leaf jobs' predicted slowdowns (``slowdowns``), and
    against the first topology-oblivious run without a scenario (``base``, the story's and
    the network table's baseline): ``busy_vs`` and ``useful_vs`` (points) and ``paid_back``
    (points of the busy utilization given up that faster jobs recover: ``useful_vs -
    busy_vs``), the last for topology-aware policies under the log's run times only (a
    speedup scenario shortens the work itself). None without the model."""
    runs = [r for r in data.runs if isinstance(r.summary.get("network"), dict)]
    if not runs:
        return None
    aware = {m["dir"]: bool(m.get("topology_aware")) for m in data.meta.get("runs", [])}
    base = next((r for r in runs if not aware.get(r.rel_dir, False) and r.is_baseline), None)

    def pct(r: RunData | None, key: str) -> float | None:
        v = None if r is None else r.summary["network"].get(key)
        return None if v is None else 100.0 * float(v)

    out: dict[str, dict[str, Any]] = {}
    for r in runs:
        busy, useful = pct(r, "busy_utilization"), pct(r, "useful_utilization")
        b_busy, b_useful = pct(base, "busy_utilization"), pct(base, "useful_utilization")
        busy_vs = None if busy is None or b_busy is None else busy - b_busy
        useful_vs = None if useful is None or b_useful is None else useful - b_useful
        paid = None
        if busy_vs is not None and useful_vs is not None and r is not base and r.is_baseline and aware.get(r.rel_dir, False):
            paid = useful_vs - busy_vs
        table = read_parquet(r.dir / "jobs.parquet", columns=["leaves", "net_slowdown"])
        leaves, slowdown = column_numpy(table, "leaves"), np.asarray(column_numpy(table, "net_slowdown"), dtype=float)
        out[r.label] = {
            "run": r,
            "base": None if base is None else base.label,
            "busy": busy,
            "useful": useful,
            "busy_vs": busy_vs,
            "useful_vs": useful_vs,
            "paid_back": paid,
            "slowdowns": slowdown[(leaves > 1) & ~np.isnan(slowdown)],
        }
    return out


def network_figure(data: CompareData) -> Any:
    """Left: the predicted slowdowns of the multi-leaf jobs, one box per run (25th-75th
    percentile, median, whiskers min and max, diamond mean). Right: busy and useful
    utilization per run, with each topology-aware policy's payback against the baseline."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    pb = network_payback(data)
    if pb is None:
        raise ValueError("no run of this comparison was made with --network")
    entries = list(pb.values())
    n = len(entries)
    fig = Figure(figsize=(min(14.0, max(9.0, 3.0 + 1.6 * n)), 4.4), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    for ax in (ax1, ax2):
        ax.grid(axis="y", color="#e5e5e5", linewidth=0.8)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    top = 1.0
    for i, e in enumerate(entries):
        v, r = e["slowdowns"], e["run"]
        if v.size == 0:
            continue
        q1, med, q3 = np.percentile(v, [25, 50, 75])
        mean = float(v.mean())
        _box_with_mean(ax1, i, (float(v.min()), float(q1), float(med), float(q3), float(v.max())), mean, r)
        ax1.annotate(f"mean {mean:.3f}", (i, float(v.max())), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=8)
        top = max(top, float(v.max()))
    ax1.set_xticks(range(n), [e["run"].label for e in entries], rotation=20 if n > 4 else 0)
    ax1.set_xlim(-0.6, n - 0.4)
    ax1.set_ylim(1.0 - 0.02 * (top - 1.0) - 1e-3, top + 0.12 * (top - 1.0) + 2e-3)
    ax1.set_ylabel("predicted slowdown (x its time alone)")
    ax1.set_title(_wrap("Predicted slowdown of multi-leaf jobs\nbox 25th-75th percentile, line median, whiskers min and max, diamond mean", fig.get_figwidth() / 2), fontsize=9)

    width = 0.38
    for i, e in enumerate(entries):
        r = e["run"]
        busy, useful = e["busy"], e["useful"]
        bars = ax2.bar([i - width / 2, i + width / 2], [np.nan if busy is None else busy, np.nan if useful is None else useful],
                       width=width * 0.95, color=r.color, edgecolor="#333333", linewidth=0.6)  # fmt: skip
        bars[1].set_hatch("//")
        bars[1].set_alpha(0.6)
        ax2.bar_label(bars, labels=["-" if busy is None else f"{busy:.1f}", "-" if useful is None else f"{useful:.1f}"], fontsize=8, padding=2)
        if e["paid_back"] is not None and e["busy_vs"] is not None:
            # points against the baseline: busy given up (negative), paid back by faster jobs,
            # and the useful utilization that leaves (the network table's last three columns)
            text = f"busy {e['busy_vs']:+.1f}\npaid back {e['paid_back']:+.1f}\nuseful {e['useful_vs']:+.1f}"
            ax2.annotate(text, (i, 0), textcoords="offset points", xytext=(0, 6), ha="center", va="bottom", fontsize=7.5,
                         bbox={"boxstyle": "round,pad=0.25", "facecolor": "#ffffff", "edgecolor": "#999999", "alpha": 0.9})  # fmt: skip
    handles = [
        Patch(facecolor="#bbbbbb", edgecolor="#333333", label="busy (node-seconds held)"),
        Patch(facecolor="#dddddd", edgecolor="#333333", hatch="//", label="useful (each job's node-seconds / its predicted slowdown)"),
    ]
    ax2.set_xticks(range(n), [e["run"].label for e in entries], rotation=20 if n > 4 else 0)
    ax2.set_ylim(0, 112)
    ax2.set_ylabel("utilization (%)")
    base = next((e["base"] for e in entries if e["base"] is not None), None)
    versus = f"; boxed: points against {base} (busy given up, paid back by faster jobs, useful)" if base is not None else ""
    ax2.set_title(_wrap(f"Busy vs useful utilization (% of the node-seconds from the first submit to the last end){versus}", fig.get_figwidth() / 2), fontsize=9)
    fig.legend(handles=handles, fontsize=8, loc="outside lower right", frameon=False, ncol=2)
    spec = entries[0]["run"].summary["network"].get("spec")
    fig.suptitle(f"Network model (--network {spec}): {data.workload_label}", fontsize=10)
    return fig


#: (file stem, builder, caption) of the per-comparison figures.
FIGURES: tuple[tuple[str, Any, str], ...] = (
    ("aph_by_size", aph_figure, "Average pairwise hops by job-size bin (paper Fig. 7)"),
    ("utilization", utilization_figure, "Utilization distribution per run (paper Fig. 8)"),
    ("makespan", makespan_figure, "Makespan per run (paper Fig. 9)"),
    ("wait_by_size", wait_figure, "Mean wait by job-size bin (paper Fig. 10)"),
    ("mean_wait_table", lambda d: mean_wait_table_figure([d]), "Mean wait, hours (paper Table I)"),
)

#: The figure of a comparison made with the network model (``--network``).
NETWORK_FIGURE: tuple[str, Any, str] = (
    "network",
    network_figure,
    "Network model: predicted slowdowns of multi-leaf jobs, busy vs useful utilization and the payback of isolation",
)


def figures_for(data: CompareData) -> tuple[tuple[str, Any, str], ...]:
    """The figures a comparison gets: :data:`FIGURES`, and :data:`NETWORK_FIGURE` when a
    run was made with the network model."""
    if any(isinstance(r.summary.get("network"), dict) for r in data.runs):
        return FIGURES + (NETWORK_FIGURE,)
    return FIGURES


def write_figures(data: CompareData, fig_dir: Path) -> list[tuple[str, str]]:
    """Write every figure of :func:`figures_for` into ``fig_dir``; returns (stem, caption)."""
    out = []
    for stem, build, caption in figures_for(data):
        fig = build(data)
        save_figure(fig, fig_dir / stem)
        out.append((stem, caption))
    return out

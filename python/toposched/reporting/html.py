"""Self-contained HTML reports: one file that opens in a browser with no network.

Page API (for any command that wants a report in the same style)::

    from toposched.reporting import build_page, table_html, plotly_div, image_html, Html

    page = build_page("My sweep", [
        ("Summary", table_html(["run", "mean wait (h)"], [["a", 1.5], ["b", 2.25]])),
        ("Waits", plotly_div(fig)),                      # a plotly.graph_objects.Figure
        ("Static", image_html("figures/x.png", "What x shows", svg="figures/x.svg")),
    ])
    Path("report.html").write_text(page)

* ``build_page(title, sections, *, intro="")`` returns the whole document. A section is
  ``(heading, html_fragment)``; fragments are inserted as given (escape text yourself
  with :func:`html.escape`, or build it with the helpers). If any fragment holds a plotly
  figure, plotly.js is inlined **once**, in ``<head>``; nothing is loaded from the network.
* ``table_html(columns, rows, *, caption=None, numeric=None)``: an HTML table. Cells
  are escaped unless they are :class:`Html`; ``None`` shows as ``-``; ints get thousands
  separators, floats 3 significant digits. Columns holding numbers are right-aligned.
* ``plotly_div(fig, *, div_id=None, height=None)``: the figure's ``<div>`` and its
  ``Plotly.newPlot`` call, without plotly.js. The id defaults to a hash of the figure, so
  the same figure gives the same text. ``fig`` is a ``go.Figure`` or a plain figure dict
  (``plotly_figure_dict(traces, layout)``), which is written without importing plotly.
* ``image_html(relative_path, caption, *, svg=None, alt=None)``: a ``<figure>`` with the
  image (a link to the SVG when given) and its caption.

``build_compare_report(out_dir)`` builds the report of a ``toposched compare`` folder:
``out_dir/report.html`` plus ``out_dir/figures/*.png`` and ``*.svg`` (see
``docs/report.md``), and returns the report's path.
"""

from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np
from ..files import column_numpy, read_parquet
from ..files import write_text_atomic as _write_atomic

if TYPE_CHECKING:
    from .figures import CompareData, RunData

#: Marker class of plotly's figure divs; its presence makes build_page inline plotly.js.
PLOTLY_CLASS = "plotly-graph-div"


class Html(str):
    """A string that is already HTML: table_html and friends insert it unescaped."""


# ----------------------------------------------------------------------------- helpers


def _cell(v: Any) -> tuple[str, bool]:
    """(html, is_number) of one table cell."""
    if isinstance(v, Html):
        return str(v), False
    if v is None:
        return "-", False
    if isinstance(v, (bool, np.bool_)):
        return ("yes" if v else "no"), False
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}", True
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if np.isnan(f):
            return "-", True
        if f == 0:
            return "0", True
        # three significant digits, thousands separated, never scientific notation
        a = abs(f)
        if a >= 100:
            return f"{f:,.0f}", True
        if a >= 0.001:
            return f"{f:.{max(0, 2 - int(np.floor(np.log10(a))))}f}", True
        return ("&lt;0.001" if f > 0 else "&gt;-0.001"), True
    return html.escape(str(v)), False


def table_html(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    caption: str | None = None,
    numeric: Sequence[bool] | None = None,
    css_class: str = "data",
) -> str:
    """An HTML table; see the module docstring for how cells are shown."""
    rendered = [[_cell(v) for v in row] for row in rows]
    if numeric is None:
        numeric = [bool(rendered) and all(r[i][1] or r[i][0] == "-" for r in rendered) and any(r[i][1] for r in rendered) for i in range(len(columns))]
    out = [f'<table class="{html.escape(css_class)}">']
    if caption:
        out.append(f"<caption>{html.escape(caption)}</caption>")
    heads = [str(c) if isinstance(c, Html) else html.escape(str(c)) for c in columns]
    out.append("<thead><tr>" + "".join(f'<th{" class=num" if numeric[i] else ""}>{h}</th>' for i, h in enumerate(heads)) + "</tr></thead>")
    out.append("<tbody>")
    for row in rendered:
        out.append("<tr>" + "".join(f'<td{" class=num" if numeric[i] else ""}>{text}</td>' for i, (text, _) in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    return Html("\n".join(out))


def plotly_div(fig: Any, *, div_id: str | None = None, height: int | None = None) -> str:
    """A plotly figure as a ``<div>`` plus its script, without plotly.js itself.

    ``fig`` is a ``plotly.graph_objects.Figure``, or a plain figure dict (``{"data": [trace
    dicts], "layout": {...}}``, as :func:`plotly_figure_dict` makes): a dict is written as
    it is, with the text plotly's ``to_html`` would write for it, without importing plotly."""
    if isinstance(fig, dict):
        return Html(f'<div class="plot">{_plotly_dict_html(fig, div_id=div_id, height=height)}</div>')
    if div_id is None:
        div_id = "plot-" + hashlib.sha1(fig.to_json().encode()).hexdigest()[:12]
    h = height or fig.layout.height or 460
    text = fig.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=div_id,
        default_height=f"{int(h)}px",
        default_width="100%",
        config=PLOTLY_CONFIG,
    )
    return Html(f'<div class="plot">{text}</div>')


#: The plotly.js config of every figure of the reports.
PLOTLY_CONFIG: dict[str, Any] = {"displaylogo": False, "responsive": True}


def plotly_template(name: str = "plotly_white") -> dict[str, Any]:
    """A plotly template as a figure's ``layout.template`` holds it once plotly has
    validated it (the same keys in the same order: the JSON is the same text).

    Stored beside this module (``plotly_white.json``, made from plotly's own, and checked
    against it by tests/test_reporting.py) rather than built by plotly: validating a
    template is most of the cost of a first ``go.Figure`` (0.3 s with the imports)."""
    import json

    if name not in _TEMPLATES:
        _TEMPLATES[name] = json.loads(Path(__file__).with_name(f"{name}.json").read_text(encoding="utf-8"))
    return _TEMPLATES[name]


_TEMPLATES: dict[str, dict[str, Any]] = {}

# What plotly.io.to_json_plotly escapes in its JSON (so that it is safe inside <script>).
_JSON_SWAPS = (("<", "\\u003c"), (">", "\\u003e"), ("/", "\\u002f"))
_ORJSON_SWAPS = _JSON_SWAPS + (("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def plotly_json(obj: Any) -> str:
    """``obj`` (plain dicts, lists, strings, numbers, None) as plotly.io.to_json_plotly
    writes it: orjson when it is installed (plotly's "auto" engine), else the json module
    with no spaces and NaN and infinities as null; then ``<``, ``>`` and ``/`` (and with
    orjson U+2028 and U+2029) escaped."""
    orjson: Any
    try:
        import orjson
    except ImportError:
        orjson = None
    if orjson is not None:
        text: str = orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY).decode("utf8")
        swaps: tuple[tuple[str, str], ...] = _ORJSON_SWAPS
    else:
        import json

        text = json.dumps(_finite_or_none(obj), separators=(",", ":"), default=_numpy_to_python)
        swaps = _JSON_SWAPS
    for unsafe, safe in swaps:
        if unsafe in text:
            text = text.replace(unsafe, safe)
    return text


def _numpy_to_python(obj: Any) -> Any:
    """NumPy scalars and arrays as Python numbers and lists (what orjson and plotly's
    encoder write for them)."""
    if isinstance(obj, (np.generic, np.ndarray)):
        return _finite_or_none(obj.tolist())
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _finite_or_none(obj: Any) -> Any:
    """NaN and infinities as None, as plotly's JSON encoder writes them (null)."""
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_or_none(v) for v in obj]
    return obj


def _plotly_dict_html(fig: dict[str, Any], *, div_id: str | None, height: int | None) -> str:
    """What ``plotly.io.to_html(fig, full_html=False, include_plotlyjs=False, ...)`` writes
    for a figure dict (its layout's width and height, else 100 % wide and ``height`` or
    460 px high; :data:`PLOTLY_CONFIG`), character for character."""
    import json

    data = fig.get("data", [])
    layout = fig.get("layout", {})
    if div_id is None:
        div_id = "plot-" + hashlib.sha1(plotly_json({"data": data, "layout": layout}).encode()).hexdigest()[:12]
    h = height or layout.get("height") or 460
    template_layout = layout.get("template", {}).get("layout", {})
    width = _css_size(layout.get("width", template_layout.get("width", "100%")))
    div_height = _css_size(layout.get("height", template_layout.get("height", f"{int(h)}px")))
    script = (
        f'                if (document.getElementById("{div_id}")) {{'
        f'                    Plotly.newPlot('
        f'                        "{div_id}",'
        f"                        {plotly_json(data)},"
        f"                        {plotly_json(layout)},"
        f"                        {json.dumps(PLOTLY_CONFIG)}"
        f"                    )"
        f"                }}"
    )
    return (
        f'<div style="height:{div_height}; width:{width};">'
        f"                            "
        f'<div id="{div_id}" class="plotly-graph-div" style="height:100%; width:100%;"></div>'
        f"            <script>"
        f"                window.PLOTLYENV=window.PLOTLYENV || {{}};"
        f"                {script};"
        f"            </script>"
        f"        </div>"
    )


def _css_size(v: Any) -> str:
    """A number as pixels, a CSS size as given (as plotly's to_html does)."""
    try:
        float(v)
    except (ValueError, TypeError):
        return str(v)
    return f"{v}px"


def plotly_figure_dict(data: Sequence[dict[str, Any]], layout: dict[str, Any]) -> dict[str, Any]:
    """A figure for :func:`plotly_div` as a plain dict: ``data`` (trace dicts, with their
    ``type``) and ``layout``, to which the plotly_white template is added (first, where
    plotly puts it)."""
    return {"data": list(data), "layout": {"template": plotly_template(), **layout}}


def image_html(relative_path: str, caption: str, *, svg: str | None = None, alt: str | None = None, wide: bool = False) -> str:
    """A figure: the image (linked to its SVG when given) and a caption. ``wide`` shows the
    image at its own size in a scrolling box instead of shrinking it to the page (fabric
    snapshots: shrunk, their labels would be unreadable)."""
    src = html.escape(relative_path, quote=True)
    img = f'<img src="{src}" alt="{html.escape(alt or caption, quote=True)}">'
    if svg:
        img = f'<a href="{html.escape(svg, quote=True)}">{img}</a>'
        caption_html = f'{html.escape(caption)} <span class="muted">(<a href="{html.escape(svg, quote=True)}">SVG</a>, <a href="{src}">PNG</a>)</span>'
    else:
        caption_html = html.escape(caption)
    cls = ' class="wide"' if wide else ""
    return Html(f"<figure{cls}>{img}<figcaption>{caption_html}</figcaption></figure>")


_CSS = """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 0; color: #1d1d1f; background: #fafafa; }
main { max-width: 1240px; margin: 0 auto; padding: 1.2em 2em 4em; background: #fff; }
h1 { font-size: 1.6em; margin: 0.3em 0 0.2em; }
h2 { font-size: 1.25em; margin: 1.8em 0 0.5em; padding-top: 0.4em; border-top: 1px solid #e3e3e3; }
nav { font-size: 0.9em; margin-bottom: 1em; }
nav a { margin-right: 1em; }
a { color: #0b5cad; }
.muted { color: #666; font-size: 0.9em; }
table.data { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.92em; }
table.data th, table.data td { border: 1px solid #d6d6d6; padding: 0.25em 0.6em; }
table.data th { background: #f1f3f5; text-align: left; }
table.data td.num, table.data th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.data tbody tr:nth-child(even) { background: #fafbfc; }
table.data caption { caption-side: top; text-align: left; color: #555; padding-bottom: 0.3em; white-space: nowrap; }
table.kv th { width: 13em; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figure.wide { overflow-x: auto; }
figure.wide img { max-width: none; }
h3 { font-size: 1.05em; margin: 1em 0 0.3em; }
ul.verdict li { margin-bottom: 0.3em; }
figcaption { color: #444; font-size: 0.92em; margin-top: 0.3em; }
.plot { margin: 0.5em 0 1.5em; }
code { background: #f3f3f3; padding: 0 0.25em; border-radius: 3px; }
"""


def _slug(text: str, used: set[str]) -> str:
    base = re.sub(r"-+", "-", "".join(c if c.isalnum() else "-" for c in text.lower())).strip("-") or "section"
    slug, i = base, 2
    while slug in used:
        slug, i = f"{base}-{i}", i + 1
    used.add(slug)
    return slug


def plotly_js() -> str:
    """The plotly.js bundled with the installed plotly package, read as
    ``plotly.offline.get_plotlyjs`` reads it, without importing ``plotly.offline`` (which
    imports most of plotly)."""
    import pkgutil

    raw = pkgutil.get_data("plotly", "package_data/plotly.min.js")
    if raw is None:  # pragma: no cover - a loader without get_data
        from plotly.offline import get_plotlyjs

        return str(get_plotlyjs())
    return raw.decode("utf-8")


def build_page(title: str, sections: Sequence[tuple[str, str]], *, intro: str = "") -> str:
    """The whole HTML document: title, a table of contents, then each (heading, fragment).

    plotly.js is inlined once in ``<head>`` when a fragment holds a plotly figure."""
    used: set[str] = set()
    slugs = [_slug(h, used) for h, _ in sections]
    needs_plotly = any(PLOTLY_CLASS in frag for _, frag in sections)
    head = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style>",
    ]
    if needs_plotly:
        js = plotly_js().replace("</script", "<\\/script")
        head.append('<script type="text/javascript">window.PlotlyConfig = {MathJaxConfig: "local"};</script>')
        head.append(f'<script type="text/javascript">{js}</script>')
    head.append("</head>")
    body = ["<body>", "<main>", f"<h1>{html.escape(title)}</h1>"]
    if intro:
        body.append(intro)
    if len(sections) > 1:
        body.append("<nav>" + "".join(f'<a href="#{s}">{html.escape(h)}</a>' for s, (h, _) in zip(slugs, sections)) + "</nav>")
    for slug, (heading, frag) in zip(slugs, sections):
        body.append(f'<section id="{slug}">')
        body.append(f"<h2>{html.escape(heading)}</h2>")
        body.append(frag)
        body.append("</section>")
    body += ["</main>", "</body>", "</html>", ""]
    return "\n".join(head + body)


# ----------------------------------------------------------------------------- compare report


def _summary_rows(data: Any) -> tuple[list[str], list[list[Any]]]:
    """One row per run; waits in one unit and makespans in another, each chosen by the
    largest value of its columns (toposched.units) and named in the header."""
    from ..units import duration_unit

    def get(s: dict[str, Any], *keys: str) -> Any:
        for k in keys:
            s = s.get(k, {}) if isinstance(s, dict) else {}
        return None if s == {} else s

    # one unit per column, chosen by its largest value
    units = {}
    for k in ("mean", "median", "p95"):
        units[k] = duration_unit(max([w for r in data.runs if (w := get(r.summary, "wait_s", k)) is not None], default=0))
    spans = [r.summary.get("makespan_s") for r in data.runs]
    mu, md = duration_unit(max([m for m in spans if m is not None], default=0))
    cols = [
        "policy",
        "scenario",
        "jobs",
        "never fit",
        f"mean wait ({units['mean'][0]})",
        f"median wait ({units['median'][0]})",
        f"p95 wait ({units['p95'][0]})",
        "mean bounded slowdown",
        "mean utilization (%)",
        f"makespan ({mu})",
        "mean APH (hops)",
    ]
    rows = []
    for r in data.runs:
        s = r.summary
        util = get(s, "utilization", "mean")
        w = [None if (x := get(s, "wait_s", k)) is None else x / units[k][1] for k in ("mean", "median", "p95")]
        mk = s.get("makespan_s")
        rows.append(
            [
                r.alloc,
                r.scenario,
                get(s, "jobs", "replayed"),
                get(s, "jobs", "skipped_never_fit"),
                *w,
                get(s, "bounded_slowdown", "mean"),
                None if util is None else 100.0 * util,
                None if mk is None else mk / md,
                get(s, "aph", "mean"),
            ]
        )
    return cols, rows


def _story_section(data: Any) -> str:
    from .story import compare_story

    st = compare_story(data.meta, [(r.alloc, r.scenario, r.summary) for r in data.runs], data.fabric)
    parts = []
    for head, lines, cls in (("Compared", st.compared, ""), ("Verdict", st.verdict, "verdict"), ("Caveats", st.caveats, "muted")):
        if lines:
            items = "".join(f"<li>{html.escape(x)}</li>" for x in lines)
            parts.append(f'<h3>{head}</h3><ul class="{cls}">{items}</ul>')
    return Html("".join(parts))


def _kv_table(pairs: Sequence[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{v if isinstance(v, Html) else html.escape(str(v))}</td></tr>" for k, v in pairs)
    return Html(f'<table class="data kv"><tbody>{rows}</tbody></table>')


def _counts(d: dict[str, Any] | None) -> str:
    if not d:
        return "none"
    return ", ".join(f"{k}: {v:,}" if isinstance(v, int) else f"{k}: {v}" for k, v in sorted(d.items()))


def _reasons(d: dict[str, Any] | None) -> str:
    """Skip reasons with their numbers folded (``asks for 1314 nodes`` and ``asks for 2000
    nodes`` -> ``asks for N nodes``), counts summed."""
    folded: dict[str, int] = {}
    for k, v in (d or {}).items():
        key = re.sub(r"\d+", "N", str(k))
        folded[key] = folded.get(key, 0) + int(v)
    return _counts(folded)


def _inputs_section(data: Any) -> str:
    from .figures import transforms_text
    from .story import leaf_size_text, plural

    meta = data.meta
    fab = data.fabric
    first = data.runs[0].summary if data.runs else {}
    inp = first.get("input", {})
    scenarios = list(dict.fromkeys(r.scenario for r in data.runs))
    allocs = list(dict.fromkeys(r.alloc for r in data.runs))
    fabric_text = (
        f"{fab.get('name', meta.get('system', '?'))}: {fab.get('nodes', '?'):,} nodes, {fab.get('leaves', '?')} leaves of "
        f"{leaf_size_text(fab)} nodes, {plural(fab.get('pods', '?'), 'pod')}, {fab.get('levels', '?')} levels"
        if isinstance(fab.get("nodes"), int)
        else str(meta.get("system", "?"))
    )
    # the reader counts over every record it read, each transform over the jobs it was
    # given: one row each, so that neither reads as a share of the jobs replayed
    def split(counts: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
        mine = {k: v for k, v in (counts or {}).items() if not k.startswith("transform_")}
        return mine, {k.removeprefix("transform_"): v for k, v in (counts or {}).items() if k.startswith("transform_")}

    reader_repairs, transform_repairs = split(inp.get("repairs"))
    reader_skips, transform_skips = split(inp.get("skipped"))
    of_records = f" (of the {inp['records']:,} records read)" if isinstance(inp.get("records"), int) else ""
    pairs: list[tuple[str, Any]] = [
        ("trace", meta.get("trace", "?")),
        ("jobs read", f"{inp.get('jobs', '?'):,} kept of {inp.get('records', '?'):,} records" if isinstance(inp.get("jobs"), int) and isinstance(inp.get("records"), int) else "?"),
        (f"reader repairs{of_records}", _counts(reader_repairs)),
        (f"reader skips{of_records}", _counts(reader_skips)),
        ("transforms: jobs changed", _counts(transform_repairs)),
        ("transforms: jobs left out", _counts(transform_skips)),
        ("system", meta.get("system", "?")),
        ("fabric", fabric_text),
    ]
    for note in fab.get("notes", []) or []:
        pairs.append(("fabric note", note))
    pairs += [
        ("queue policy", meta.get("queue", first.get("policy", {}).get("queue", "?"))),
        ("allocation policies", ", ".join(allocs)),
        ("scenarios", ", ".join(scenarios)),
        ("transforms", transforms_text(meta.get("transforms") or []) or "none"),
        ("seed", meta.get("seed", first.get("policy", {}).get("seed", "?"))),
        ("toposched", first.get("toposched_version", "?")),
    ]
    per_run = []
    for r in data.runs:
        s = r.summary
        j = s.get("jobs", {})
        per_run.append([r.label, j.get("in_workload"), j.get("skipped_never_fit"), Html(html.escape(_reasons(s.get("skipped_reasons")))), j.get("killed_at_walltime"), "yes" if s.get("complete", True) else Html("<b>no (interrupted)</b>")])
    return Html(
        _kv_table(pairs)
        + table_html(["run", "jobs in workload", "never fit (skipped)", "skip reasons", "killed at walltime", "complete"], per_run, caption="Per run")
    )


def _plotly_figures(data: Any) -> list[tuple[str, dict[str, Any]]]:
    """The interactive figures as plain figure dicts (:func:`plotly_figure_dict`), not
    ``go.Figure`` objects: building those imports and validates all of plotly (0.3-0.4 s of
    CPU) for four figures. The dicts hold what plotly made of the same calls (each
    trace's properties in plotly's order, ``type`` last; the layout's in the order
    ``update_layout`` set them): the page is the same text (tests/test_reporting.py checks
    them against plotly)."""
    from .figures import aph_stats, makespan_values, time_unit, utilization_stats, wait_by_size

    common = {"margin": {"l": 60, "r": 20, "t": 50, "b": 50}, "legend": {"orientation": "h", "y": -0.18}}  # every figure's
    out: list[tuple[str, dict[str, Any]]] = []

    st = aph_stats(data)
    traces: list[dict[str, Any]] = []
    for r in st["runs"]:
        boxes = st["boxes"][r.label]
        xs = [b for b, v in zip(st["bins"], boxes) if v is not None]
        vs = [v for v in boxes if v is not None]
        traces.append(
            {
                "hovertext": [f"{int(v[5])} jobs" for v in vs],
                "lowerfence": [v[0] for v in vs],
                "marker": {"color": r.color},
                "median": [v[2] for v in vs],
                "name": f"{r.label} ({r.paper_label})",
                "offsetgroup": r.label,
                "q1": [v[1] for v in vs],
                "q3": [v[3] for v in vs],
                "upperfence": [v[4] for v in vs],
                "x": xs,
                "type": "box",
            }
        )
    ideal = [(b, v) for b, v in zip(st["bins"], st["ideal"]) if v is not None]
    if ideal:
        traces.append(
            {
                "marker": {"color": "black", "line": {"width": 2}, "size": 40, "symbol": "line-ew-open"},
                "mode": "markers",
                "name": "ideal APH (median job of the bin)",
                "x": [b for b, _ in ideal],
                "y": [v for _, v in ideal],
                "type": "scatter",
            }
        )
    layout = {
        "xaxis": {"title": {"text": "job size (nodes)"}, "type": "category"},
        "yaxis": {"title": {"text": "average pairwise hops"}, "rangemode": "tozero"},
        **common,
        "title": {"text": "Average pairwise hops by job size (min, 25th, median, 75th, max)"},
        "boxmode": "group",
    }
    out.append(("APH by job size", plotly_figure_dict(traces, layout)))

    traces = []
    step = next((r.summary.get("utilization", {}).get("step_s") for r in data.runs), 60)  # as the static figure
    for r in data.runs:
        s = utilization_stats(r)
        if s is None:
            continue
        mn, q1, med, q3, mx, mean = (100 * v for v in s)
        traces.append(
            {
                "lowerfence": [mn],
                "marker": {"color": r.color},
                "mean": [mean],
                "median": [med],
                "name": r.label,
                "q1": [q1],
                "q3": [q3],
                "upperfence": [mx],
                "x": [r.label],
                "type": "box",
            }
        )
    layout = {
        "yaxis": {"title": {"text": "% nodes busy"}, "range": [0, 102]},
        **common,
        "title": {"text": f"Utilization {'per minute' if step == 60 else f'one sample every {step} s'} (min, 25th, median, 75th, max; dashed: mean)"},
        "showlegend": False,
        "height": 400,
    }
    out.append(("Utilization", plotly_figure_dict(traces, layout)))

    vals, m_unit, texts = makespan_values(data)  # None: no job replayed, no makespan (no bar, not 0)
    bar = {"marker": {"color": [r.color for r in data.runs]}, "text": texts, "textposition": "outside", "x": [r.label for r in data.runs], "y": vals, "type": "bar"}
    layout = {
        "yaxis": {"title": {"text": f"makespan ({m_unit})"}, "rangemode": "tozero"},
        **common,
        "title": {"text": "Makespan (first submit to last end; % against the first run)"},
        "showlegend": False,
        "height": 400,
    }
    out.append(("Makespan", plotly_figure_dict([bar], layout)))

    wb = wait_by_size(data)
    top = max([v for vs in wb["values"].values() for v in vs if v is not None] or [0.0])
    unit, div = time_unit(top)
    traces = [
        {"marker": {"color": r.color}, "name": r.label, "x": wb["groups"], "y": [None if v is None else v / div for v in wb["values"][r.label]], "type": "bar"}
        for r in data.runs
    ]
    layout = {
        "xaxis": {"title": {"text": "job size (nodes)"}, "type": "category"},
        "yaxis": {"title": {"text": f"mean wait ({unit})"}, "rangemode": "tozero"},
        **common,
        "title": {"text": "Mean wait by job size (last group: all jobs)"},
        "barmode": "group",
    }
    out.append(("Mean wait by job size", plotly_figure_dict(traces, layout)))
    return out


def network_rows(data: Any) -> tuple[list[str], list[list[Any]]] | None:
    """Per run, what the network model predicted (runs made with ``--network``): the
    distribution of predicted slowdowns, busy vs useful utilization, how long jobs ran
    against their logged run times, and each policy's net payback against the first
    topology-oblivious run (:func:`~toposched.reporting.figures.network_payback`, which
    the static figure draws). None without the model."""
    from .figures import network_payback

    pb = network_payback(data)
    if pb is None:
        return None
    cols = [
        "policy",
        "scenario",
        "mean slowdown",
        "p95 slowdown",
        "max slowdown",
        "jobs slowed",
        "busy utilization (%)",
        "useful utilization (%)",
        "node-hours run / logged",
        "multi-leaf jobs: run / logged",
        "busy utilization vs oblivious (points)",
        "paid back by faster jobs (points)",
        "useful utilization vs oblivious (points)",
    ]
    rows = []
    for e in pb.values():
        r = e["run"]
        net = r.summary["network"]
        sd = net.get("slowdown", {})
        table = read_parquet(r.dir / "jobs.parquet", columns=["nodes", "start_s", "end_s", "log_runtime_s", "leaves"])
        nodes, start, end, logged, leaves = (column_numpy(table, c) for c in table.column_names)
        ok = logged > 0
        ran = (end - start).astype(float)
        node_ratio = float((ran[ok] * nodes[ok]).sum() / max(1.0, float((logged[ok] * nodes[ok]).sum())))
        multi = ok & (leaves > 1)
        multi_ratio = float((ran[multi] / logged[multi]).mean()) if multi.any() else None
        rows.append(
            [
                r.alloc,
                r.scenario,
                sd.get("mean"),
                sd.get("p95"),
                sd.get("max"),
                sd.get("jobs_slowed"),
                e["busy"],
                e["useful"],
                node_ratio,
                multi_ratio,
                e["busy_vs"],
                e["paid_back"],
                e["useful_vs"],
            ]
        )
    return cols, rows


#: Columns of :func:`network_rows` shown with a fixed number of decimals: slowdowns near
#: 1 (1.003 against 1.000: three significant digits would show both as 1.00) and points.
_NETWORK_DECIMALS = {"mean slowdown": 3, "p95 slowdown": 3, "max slowdown": 3, "busy utilization vs oblivious (points)": 2,
                     "paid back by faster jobs (points)": 2, "useful utilization vs oblivious (points)": 2}  # fmt: skip


def _network_section(data: Any) -> str | None:
    nr = network_rows(data)
    if nr is None:
        return None
    cols, rows = nr
    shown = [[Html(f"{v:.{_NETWORK_DECIMALS[c]}f}") if c in _NETWORK_DECIMALS and isinstance(v, float) else v for c, v in zip(cols, row)] for row in rows]
    numeric = [c not in ("policy", "scenario") for c in cols]
    traces = []
    for r in data.runs:
        if not r.summary.get("network"):
            continue
        table = read_parquet(r.dir / "jobs.parquet", columns=["leaves", "net_slowdown"])
        leaves, slowdown = column_numpy(table, "leaves"), column_numpy(table, "net_slowdown")
        v = slowdown[(leaves > 1) & ~np.isnan(slowdown)]
        traces.append({"boxpoints": False, "boxmean": True, "marker": {"color": r.color}, "name": f"{r.label}", "y": v.tolist(), "type": "box"})
    fig = plotly_figure_dict(
        traces,
        {
            "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
            "title": {"text": "Predicted slowdown of multi-leaf jobs (box 25th-75th percentile, line median, dashed mean, whiskers min and max)"},
            "yaxis": {"title": {"text": "predicted slowdown (x its time alone)"}},
        },
    )
    spec = next(r.summary["network"].get("spec") for r in data.runs if r.summary.get("network"))
    return Html(
        f'<p>The network model was on (<code>--network {html.escape(str(spec))}</code>, docs/network.md): every run predicts '
        "interference from its own placements, so isolation's cost (waiting, idle nodes) and its payback (faster jobs) show in "
        "the same numbers. Slowdowns are a job's run time over its time alone on its placement (1 = never slowed); the table's "
        "over every replayed job, the figure's over the jobs on two or more leaves (one-leaf jobs share no switch link). "
        "<b>Busy</b> utilization counts node-seconds held; <b>useful</b> divides each job's by its predicted "
        "slowdown (the time its work would have taken alone); both over the nodes and the time from the first submit to the "
        "last end. Run / logged compares run times with the log's (below 1: faster "
        "than logged, e.g. a compact placement under <code>reference=random</code>; in a speedup scenario's run, with the "
        "scenario's shortened run times, which is what that run was given). The last three columns compare with the first "
        "topology-oblivious run: the busy utilization a policy gives up (negative), the part of it its faster jobs pay back "
        "(busy minus useful utilization of the baseline, less the policy's own), and the useful utilization that leaves: "
        "under the log's run times (scenario none), the policy's net payback; a "
        "speedup scenario's run did shortened work: its difference is no payback (and no payback is given).</p>"
    ) + table_html(cols, shown, numeric=numeric) + plotly_div(fig, div_id="plot-network-slowdowns")


def snapshot_runs(data: CompareData) -> list[RunData]:
    """The runs that get a fabric snapshot: each allocation policy's baseline run."""
    return data.baselines


def _snapshot_moments(run_dir: Path) -> list[tuple[str, int, str]]:
    """(key, time, what) of the instants a run's snapshots show: the first of peak busy
    nodes, and the first with the most multi-leaf jobs running (when any job spans leaves)."""
    from .snapshot import busiest_spanning_time, peak_time

    moments = [("peak", peak_time(run_dir), "at peak busy nodes")]
    spanning = busiest_spanning_time(run_dir)
    if spanning is not None:
        moments.append(("spanning", spanning, "when the most multi-leaf jobs run"))
    return moments


def _fork_ok() -> bool:
    """Whether :func:`_run_shared` may fork a helper: fork exists, two CPUs are ours, no
    other Python thread runs (a forked child could inherit a lock one of them holds), and
    TOPOSCHED_REPORT_PROCESSES is not 1."""
    import os
    import threading

    if os.environ.get("TOPOSCHED_REPORT_PROCESSES", "") == "1" or not hasattr(os, "fork") or threading.active_count() > 1:
        return False
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except (AttributeError, OSError):
        return (os.cpu_count() or 1) >= 2


def _run_shared(tasks: Sequence[Callable[[], Any]]) -> list[Any]:
    """Every task's result, in order, the tasks shared with one forked helper process.

    matplotlib holds the GIL while it draws (threads do not overlap: measured), so the
    second CPU is used by a child forked from this process, which starts with everything
    imported and every input read. Both processes take the next task from a shared
    counter until none is left (the figures differ in cost, so a fixed split leaves one
    waiting); the child then sends its results back pickled. A task's result does not
    depend on the process that ran it: the files are the same bytes either way. Any task
    the child did not deliver (it failed or died) is run here, so its error, if any, is
    raised here with its own traceback. Without a fork (:func:`_fork_ok`), all run here."""
    import os
    import pickle

    if len(tasks) < 2 or not _fork_ok():
        return [t() for t in tasks]
    import multiprocessing

    counter = multiprocessing.get_context("fork").Value("i", 0)

    def claim() -> int:
        with counter.get_lock():
            k = int(counter.value)
            counter.value = k + 1
        return k

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: run tasks until none is left, send the results, exit
        code = 0
        try:
            os.close(read_fd)
            done: dict[int, Any] = {}
            try:
                while (k := claim()) < len(tasks):
                    done[k] = tasks[k]()
            except BaseException:  # noqa: BLE001 - the parent runs the task again and raises
                code = 1
            with os.fdopen(write_fd, "wb") as out:
                pickle.dump(done, out, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:  # noqa: BLE001 - never return into the parent's code
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    results: dict[int, Any] = {}
    try:
        while (k := claim()) < len(tasks):
            results[k] = tasks[k]()
        with os.fdopen(read_fd, "rb") as back:
            read_fd = -1
            data = back.read()
        if data:
            results.update(pickle.loads(data))
    except BaseException:
        import signal

        os.kill(pid, signal.SIGTERM)  # our own helper; nothing of its work is kept
        raise
    finally:
        if read_fd >= 0:
            os.close(read_fd)
        os.waitpid(pid, 0)
    return [results[k] if k in results else tasks[k]() for k in range(len(tasks))]


#: The comparison figures from the costliest to draw to the cheapest (CPU seconds on the
#: demo: 0.21-0.25, 0.17-0.22, 0.13-0.16, 0.12-0.16, 0.06): the order the two processes
#: take them in (the files and the page do not depend on it).
_FIGURE_ORDER = ("aph_by_size", "network", "wait_by_size", "makespan", "utilization", "mean_wait_table")


def build_compare_report(out_dir: str | Path) -> Path:
    """Write ``out_dir/report.html`` and ``out_dir/figures/*`` for a compare folder.

    The figures (each written as PNG and SVG) and the interactive plots are made by two
    processes at once (:func:`_run_shared`)."""
    from .figures import CompareData, figures_for, fmt_hours, mean_wait_rows, save_figure
    from .snapshot import _clock, draw_snapshot
    from .story import plural

    root = Path(out_dir)
    data = CompareData.load(root)
    fig_dir = root / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    # imported before any fork, so that a helper process does not import them again
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.backends.backend_svg  # noqa: F401
    import matplotlib.figure  # noqa: F401

    fabric_name = data.fabric.get("name", "")
    snap_plan = [(r, stem, t, what) for r in snapshot_runs(data) for key, t, what in _snapshot_moments(r.dir) for stem in [f"snapshot_{r.alloc}__{r.scenario}__{key}"]]

    def snapshot_task(r: RunData, stem: str, t: int, what: str) -> Callable[[], Any]:
        return lambda: draw_snapshot(r.dir, t, fig_dir / stem, title=f"{r.label} ({r.paper_label}) on {fabric_name} {what}")

    def figure_task(stem: str, build: Callable[[Any], Any]) -> Callable[[], Any]:
        return lambda: save_figure(build(data), fig_dir / stem)

    def plotly_task() -> list[tuple[str, str]]:
        return [(heading, plotly_div(fig, div_id="plot-" + "".join(c for c in heading.lower() if c.isalnum()))) for heading, fig in _plotly_figures(data)]

    # The costliest first, so that neither process is left alone with a long task at the
    # end: the snapshots (0.2-0.4 s of CPU each), then the figures by their usual cost
    # (APH 0.2 s, wait by size, makespan, utilization, the table 0.06 s), the interactive
    # plots last (plain dicts: 0.03 s).
    figures = figures_for(data)
    by_cost = sorted(figures, key=lambda f: _FIGURE_ORDER.index(f[0]) if f[0] in _FIGURE_ORDER else len(_FIGURE_ORDER))
    tasks = [snapshot_task(*p) for p in snap_plan] + [figure_task(stem, build) for stem, build, _ in by_cost] + [plotly_task]
    results = _run_shared(tasks)
    infos = results[: len(snap_plan)]
    plotly_sections: list[tuple[str, str]] = results[-1]
    static = [(stem, caption) for stem, _, caption in figures]
    snaps = [(r, stem, what, info) for (r, stem, _, what), info in zip(snap_plan, infos)]

    sections: list[tuple[str, str]] = []
    sections.append(("What this report says", _story_section(data)))
    cols, rows = _summary_rows(data)
    sections.append(
        (
            "Summary",
            table_html(cols, rows)
            + Html('<p class="muted">Means over the replayed jobs; bounded slowdown with a 10 s threshold; APH over multi-node jobs. '
                   "Full statistics per run and job-size bin are in each run's summary.json (links at the end).</p>"),  # fmt: skip
        )
    )
    sections.append(("Inputs", _inputs_section(data)))
    net_section = _network_section(data)
    if net_section is not None:
        sections.append(("Network model: predicted interference and payback", net_section))

    tcols, trows = mean_wait_rows([data])
    names = {r.paper_label: r.label for r in data.runs}
    theads = [tcols[0]] + [Html(f'{html.escape(c)}<br><span class="muted">{html.escape(names[c])}</span>') if names.get(c, c) != c else c for c in tcols[1:]]
    sections.append(
        (
            "Mean wait (Table I)",
            table_html(theads, [[row[0]] + [Html(fmt_hours(v)) for v in row[1:]] for row in trows], caption="Mean wait in hours, as the SC18 paper's Table I (TO: topology-oblivious, TA: topology-aware)", numeric=[False] + [True] * (len(tcols) - 1)),
        )
    )
    sections += plotly_sections

    static_html = "".join(image_html(f"figures/{stem}.png", caption, svg=f"figures/{stem}.svg") for stem, caption in static)
    sections.append(("Static figures (PNG and SVG)", Html(static_html)))

    snap_parts: list[str] = [
        Html(
            "<p>Each leaf switch is a column of its nodes, coloured by the job holding them, for each policy at two instants: "
            "the first of peak busy nodes, and the first at which the most jobs spanning several leaves run at once. "
            "Red: link bundles that two or more running jobs can both use under the paper's conservative rule "
            "(a job on several leaves can use every leaf-L2 link of its leaves; a job on several pods every L2-L3 link of its pods); "
            "the red number is how many jobs can use that leaf's uplinks. An interference-free policy (isolated) has none.</p>"
        )
    ]
    three_levels = int(data.fabric.get("levels", 3)) >= 3 and int(data.fabric.get("pods", 2)) > 1
    for r, stem, what, info in snaps:
        first = r.summary.get("first_submit_s")
        when = f"t = {info.time_s:,} s" + (f": {_clock(info.time_s - first)} after the first submit" if isinstance(first, int) else "")  # as the figure's title
        cap = f"{r.label} {what} ({when}): {plural(len(info.job_ids), 'running job')}, {info.busy_nodes:,} busy nodes, {len(info.shared_leaves)} shared leaf-L2 bundles"
        if three_levels:
            cap += f", {len(info.shared_pods)} shared L2-L3 bundles"
        snap_parts.append(image_html(f"figures/{stem}.png", cap, svg=f"figures/{stem}.svg", wide=True))
    sections.append(("Fabric snapshots", Html("".join(snap_parts))))

    link_rows: list[list[Html | str | None]] = []
    for r in data.runs:
        cells: list[Html | str | None] = []
        for name in ("jobs.parquet", "utilization.parquet", "skipped.parquet", "summary.json", "fabric.json"):
            p = f"{r.rel_dir}/{name}"
            cells.append(Html(f'<a href="{html.escape(p, quote=True)}">{name}</a>') if (r.dir / name).exists() else None)
        link_rows.append([r.label, Html(f"<code>{html.escape(r.rel_dir)}</code>"), *cells])
    sections.append(
        (
            "Per-job data",
            table_html(["run", "folder", "jobs", "utilization", "skipped", "summary", "fabric"], link_rows)
            + Html('<p class="muted">jobs.parquet has one row per job (submit, start, end, wait, nodes, APH, node ids); '
                   'see <code>docs/report.md</code> and <code>python/toposched/simulate.py</code> for the columns.</p>'),  # fmt: skip
        )
    )

    title = f"toposched compare: {data.workload_label}"
    page = build_page(title, sections, intro=Html(f'<p class="muted">{len(data.runs)} runs; generated from <code>compare.json</code>.</p>'))
    report = root / "report.html"
    _write_atomic(report, page)
    return report

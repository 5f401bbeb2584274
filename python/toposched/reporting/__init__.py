"""Reports: figures like the SC18 paper's, fabric snapshots, self-contained HTML pages.

* :func:`build_compare_report` (``html.py``): ``report.html`` and ``figures/`` of a
  ``toposched compare`` folder.
* :func:`build_page`, :func:`table_html`, :func:`plotly_div`, :func:`plotly_figure_dict`, :func:`image_html`,
  :class:`Html` (``html.py``): the page API other commands use for reports in the same
  style (see that module's docstring).
* ``figures.py``: the matplotlib figures (APH, utilization, makespan, wait by size,
  Table I) and :func:`save_figure` (byte-stable PNG and SVG).
* ``snapshot.py``: :func:`draw_snapshot`, the fabric with the running jobs at one instant
  and the links two or more of them can use.
* ``terminal.py``: what ``toposched simulate`` prints; ``sweep.py``: a sweep's
  ``report.html``; ``contention.py``: ``toposched contention``'s files, figures and page;
  ``frontier.py``: ``toposched frontier``'s table, figure and page; ``story.py``: what a
  comparison says, in sentences.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the lazy names below are, for the type checker
    from .figures import save_figure
    from .html import Html, build_compare_report, build_page, image_html, plotly_div, plotly_figure_dict, table_html
    from .snapshot import Snapshot, busiest_spanning_time, draw_snapshot, peak_time, shared_links

# Loaded on first use (PEP 562): a command that only prints a terminal summary
# (reporting.terminal) does not pay for the figure and page modules' imports.
_WHERE = {
    "save_figure": "figures",
    "Html": "html",
    "build_compare_report": "html",
    "build_page": "html",
    "image_html": "html",
    "plotly_div": "html",
    "plotly_figure_dict": "html",
    "table_html": "html",
    "Snapshot": "snapshot",
    "busiest_spanning_time": "snapshot",
    "draw_snapshot": "snapshot",
    "peak_time": "snapshot",
    "shared_links": "snapshot",
}

__all__ = [
    "Html",
    "Snapshot",
    "build_compare_report",
    "build_page",
    "busiest_spanning_time",
    "draw_snapshot",
    "image_html",
    "peak_time",
    "plotly_div",
    "plotly_figure_dict",
    "save_figure",
    "shared_links",
    "table_html",
]


def __getattr__(name: str) -> object:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

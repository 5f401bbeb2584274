"""Reports: figures like the SC18 paper's, fabric snapshots, self-contained HTML pages.

* :func:`build_compare_report` (``html.py``): ``report.html`` and ``figures/`` of a
  ``toposched compare`` folder.
* :func:`build_page`, :func:`table_html`, :func:`plotly_div`, :func:`image_html`,
  :class:`Html` (``html.py``): the page API other commands use for reports in the same
  style (see that module's docstring).
* ``figures.py``: the matplotlib figures (APH, utilization, makespan, wait by size,
  Table I) and :func:`save_figure` (byte-stable PNG and SVG).
* ``snapshot.py``: :func:`draw_snapshot`, the fabric with the running jobs at one instant
  and the links two or more of them can use.
"""

from .figures import save_figure
from .html import Html, build_compare_report, build_page, image_html, plotly_div, table_html
from .snapshot import Snapshot, busiest_spanning_time, draw_snapshot, peak_time, shared_links

__all__ = [
    "Html",
    "Snapshot",
    "busiest_spanning_time",
    "build_compare_report",
    "build_page",
    "draw_snapshot",
    "image_html",
    "peak_time",
    "plotly_div",
    "save_figure",
    "shared_links",
    "table_html",
]

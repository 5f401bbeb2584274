"""Reports: figures, fabric snapshots and the offline HTML report of a comparison.

The comparison folder is made here the way ``toposched compare`` writes it (compare.json +
one simulate output directory per run), from the first 3,000 jobs of the bundled Atlas
trace on Cab.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import matplotlib
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE_TRACE
from toposched.reporting import build_compare_report, build_page, image_html, plotly_div, shared_links, table_html
from toposched.reporting.figures import FIGURES
from toposched.reporting.snapshot import busiest_spanning_time, draw_snapshot
from toposched.simulate import RunConfig, simulate
from toposched.topology import load_fabric
from toposched.workload import read_trace
from toposched.workload.model import Workload

N_JOBS = 3000


def make_compare_dir(out: Path, n_jobs: int = N_JOBS) -> Path:
    """A compare folder: linear and isolated on Cab, plus isolated with a 10% speedup of
    jobs over 4 nodes (a stand-in for the compare command's scenarios)."""
    w = read_trace(EXAMPLE_TRACE).take(np.arange(n_jobs))
    fabric = load_fabric("cab")
    runs = []
    cols = dict(w.columns)
    faster = cols["runtime_s"].copy()
    big = cols["nodes"] > 4
    faster[big] = (faster[big] * 9) // 10
    w10 = Workload(columns={**cols, "runtime_s": faster}, source=w.source, format=w.format, repairs=w.repairs, skipped=w.skipped, records=w.records)
    for alloc, scenario, workload in (("linear", "none", w), ("isolated", "none", w), ("isolated", "10", w10)):
        result = simulate(workload, fabric, RunConfig(queue="easy", alloc=alloc))
        rel = f"runs/{alloc}__{scenario}"
        result.write(out / rel)
        runs.append({"alloc": alloc, "scenario": scenario, "dir": rel, "summary": result.summary})
    meta = {"trace": str(EXAMPLE_TRACE), "system": "cab", "queue": "easy", "transforms": [], "seed": 0, "runs": runs}
    (out / "compare.json").write_text(json.dumps(meta, indent=1))
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = make_compare_dir(tmp_path_factory.mktemp("compare"))
    return build_compare_report(out)


def test_report_writes_every_figure_as_png_and_svg(report):
    figs = report.parent / "figures"
    stems = [stem for stem, _, _ in FIGURES] + [
        f"snapshot_{alloc}__none__{when}" for alloc in ("linear", "isolated") for when in ("peak", "spanning")
    ]
    for stem in stems:
        png = (figs / f"{stem}.png").read_bytes()
        svg = (figs / f"{stem}.svg").read_text()
        assert png.startswith(b"\x89PNG\r\n\x1a\n"), stem
        assert "<svg" in svg and "</svg>" in svg, stem


def test_save_figure_writes_what_matplotlibs_own_savefig_writes(report, tmp_path):
    """save_figure solves the constrained layout once, on an Agg canvas shared by the
    layout and the PNG, and drops the engine; the reference is plain ``savefig`` of a
    fresh copy of the same figure: the PNG with its engine left on (matplotlib solves the
    layout in a dry draw and again in the real one, on its own renderers), then the SVG
    with the engine removed (it keeps the PNG's layout, as save_figure does: solved again
    on the SVG renderer, positions move by a fraction of a point). Same bytes, for every
    comparison figure and a snapshot; and the caller's figure keeps its canvas."""
    from matplotlib.backend_bases import FigureCanvasBase

    from toposched.reporting.figures import CompareData, save_figure

    data = CompareData.load(report.parent)
    run = report.parent / "runs" / "linear__none"
    t = busiest_spanning_time(run)
    drawn: list = []

    def snapshot_figure():
        import toposched.reporting.snapshot as snapshot_module

        keep = snapshot_module.save_figure
        snapshot_module.save_figure = lambda fig, path, formats: drawn.append(fig)
        try:
            draw_snapshot(run, t, tmp_path / "unused")
        finally:
            snapshot_module.save_figure = keep
        return drawn.pop()

    builders = [(stem, lambda b=build: b(data)) for stem, build, _ in FIGURES] + [("snapshot", snapshot_figure)]
    for stem, make in builders:
        fig = make()
        assert type(fig.canvas) is FigureCanvasBase
        save_figure(fig, tmp_path / "ours" / stem)
        assert type(fig.canvas) is FigureCanvasBase, stem
        ref = make()
        with matplotlib.rc_context({"svg.hashsalt": "toposched", "svg.fonttype": "path", "path.simplify": True}):
            (tmp_path / "ref").mkdir(exist_ok=True)
            ref.savefig(tmp_path / "ref" / f"{stem}.png", format="png", dpi=110, metadata={"Software": "toposched"})
            ref.set_layout_engine(None)
            ref.savefig(tmp_path / "ref" / f"{stem}.svg", format="svg", dpi=110, metadata={"Date": None, "Creator": "toposched"})
        for ext in ("png", "svg"):
            assert (tmp_path / "ours" / f"{stem}.{ext}").read_bytes() == (tmp_path / "ref" / f"{stem}.{ext}").read_bytes(), f"{stem}.{ext}"


def test_figures_and_report_are_byte_identical_for_the_same_inputs(report, tmp_path):
    again = tmp_path / "again"
    shutil.copytree(report.parent / "runs", again / "runs")
    shutil.copy(report.parent / "compare.json", again / "compare.json")
    build_compare_report(again)
    first = sorted(p.name for p in (report.parent / "figures").iterdir())
    assert first == sorted(p.name for p in (again / "figures").iterdir())
    for name in first:
        assert (report.parent / "figures" / name).read_bytes() == (again / "figures" / name).read_bytes(), name
    assert report.read_bytes() == (again / "report.html").read_bytes()


def test_report_drawn_by_one_process_is_the_same_bytes_as_by_two(report, tmp_path, monkeypatch):
    """The figures are shared between this process and a forked helper; drawn all here
    (TOPOSCHED_REPORT_PROCESSES=1, the path with no fork) they are the same files."""
    alone = tmp_path / "alone"
    shutil.copytree(report.parent / "runs", alone / "runs")
    shutil.copy(report.parent / "compare.json", alone / "compare.json")
    monkeypatch.setenv("TOPOSCHED_REPORT_PROCESSES", "1")
    build_compare_report(alone)
    names = sorted(p.name for p in (report.parent / "figures").iterdir())
    assert names == sorted(p.name for p in (alone / "figures").iterdir())
    for name in names:
        assert (report.parent / "figures" / name).read_bytes() == (alone / "figures" / name).read_bytes(), name
    assert report.read_bytes() == (alone / "report.html").read_bytes()


# Run in a fresh interpreter: within the suite another test may have left a thread running,
# and then _run_shared rightly refuses to fork.
SHARED_TASKS = """
import json, os, time
from toposched.reporting.html import _fork_ok, _run_shared
if not _fork_ok():
    print(json.dumps("no fork"))
else:
    def task(i):
        def run():
            time.sleep(0.05)  # long enough for the helper to take some
            return (i, os.getpid())
        return run
    print(json.dumps({"me": os.getpid(), "out": _run_shared([task(i) for i in range(8)])}))
"""


def test_shared_tasks_run_in_two_processes_and_come_back_in_order():
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TOPOSCHED_REPORT_PROCESSES"}
    r = subprocess.run([sys.executable, "-c", SHARED_TASKS], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    if got == "no fork":
        assert not hasattr(os, "fork") or len(os.sched_getaffinity(0)) < 2, "a fresh interpreter on two CPUs must fork"
        pytest.skip("no fork or a single CPU here: everything runs in one process")
    out = got["out"]
    assert [i for i, _ in out] == list(range(8))
    assert got["me"] in {pid for _, pid in out}
    assert len({pid for _, pid in out}) == 2


def test_a_task_the_helper_fails_is_run_again_here_and_a_real_error_is_raised_here():
    import os

    from toposched.reporting.html import _run_shared

    me = os.getpid()

    def fails_in_helper(i: int):
        def run():
            if os.getpid() != me:
                raise RuntimeError("helper only")
            return i

        return run

    assert _run_shared([fails_in_helper(i) for i in range(6)]) == list(range(6))

    def broken():
        raise ValueError("bad figure")

    with pytest.raises(ValueError, match="bad figure"):
        _run_shared([broken, broken, broken])


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([pa.int8(), pa.int32(), pa.int64(), pa.uint16(), pa.float32(), pa.float64(), pa.bool_(), pa.string()]),
    st.lists(st.lists(st.one_of(st.none(), st.integers(-100, 100)), max_size=6), min_size=1, max_size=4),
    st.integers(0, 6),
    st.integers(0, 30),
)
def test_column_numpy_equals_pyarrows_to_numpy(tmp_path_factory, typ, chunks, offset, length):
    """Columns read from Parquet (several row groups: several chunks), sliced: the same
    values and dtype as pyarrow's own conversion, with or without nulls."""
    from toposched.files import column_numpy, read_parquet

    def cast(v):
        if v is None:
            return None
        if pa.types.is_boolean(typ):
            return v > 0
        if pa.types.is_string(typ):
            return str(v)
        if pa.types.is_unsigned_integer(typ):
            return abs(v)
        return v

    values = [[cast(v) for v in c] for c in chunks]
    path = tmp_path_factory.mktemp("col") / "t.parquet"
    with pq.ParquetWriter(path, pa.schema([("x", typ)])) as w:
        for c in values:
            w.write_table(pa.table({"x": pa.array(c, type=typ)}))
    table = read_parquet(path).slice(offset, length)
    got = column_numpy(table, "x")
    want = np.asarray(table.column("x").to_numpy(zero_copy_only=False))
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(got, want)  # NaN equal to NaN
    else:
        assert got.tolist() == want.tolist()
    before = table.column("x").to_pylist()
    got[:] = got[::-1].copy()  # a new array: writing to it is allowed and leaves the table alone
    assert table.column("x").to_pylist() == before


def test_summary_table_comes_before_every_figure(report):
    page = report.read_text()
    summary = page.index('<section id="summary">')
    table = page.index("<table", summary)
    first_plot = page.index('class="plotly-graph-div"')
    first_img = page.index("<img")
    assert table < first_plot and table < first_img
    # One row per run, in compare.json order.
    body = page[table : page.index("</table>", table)]
    assert [m for m in re.findall(r"<tr><td>(\w+)</td><td>(\w+)</td>", body)] == [("linear", "none"), ("isolated", "none"), ("isolated", "10")]


def test_plotly_js_is_inlined_exactly_once_and_nothing_comes_from_the_network(report):
    from plotly.offline import get_plotlyjs

    page = report.read_text()
    js = get_plotlyjs()
    assert page.count(js[:5000]) == 1
    assert page.count("* plotly.js v") == 1
    assert page.count('class="plotly-graph-div"') == 4
    tags = re.findall(r"<(?:script|link|img|iframe|source|embed)\b[^>]*>", page)
    remote = [t for t in tags if re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", t)]
    assert remote == []
    assert "cdn.plot.ly" not in page.split("<script", 2)[0]  # not in the head before plotly.js


def test_plotly_white_template_file_is_what_plotly_puts_in_a_figure():
    """reporting/plotly_white.json is the template as a figure's layout holds it once plotly
    has validated it: the same JSON text (keys in the same order) as plotly's own."""
    import plotly.graph_objects as go
    from plotly.io.json import to_json_plotly

    from toposched.reporting.html import plotly_json, plotly_template

    fig = go.Figure()
    fig.update_layout(template="plotly_white")
    assert plotly_json(plotly_template()) == to_json_plotly(fig.to_dict()["layout"]["template"])


@pytest.mark.parametrize("engine", ["orjson", "json"])
def test_plain_dict_figures_are_what_plotly_makes_of_them(report, engine, monkeypatch):
    """The report's interactive figures are plain dicts written without plotly. Plotly is
    the reference: validating each dict changes none of its values (every property exists
    and is kept as given), and plotly's own to_html of the dict is the same text as the
    report's div, with orjson (plotly's default when installed) and with the json module."""
    import json
    import sys

    import plotly.graph_objects as go
    import plotly.io as pio

    from toposched.reporting.figures import CompareData
    from toposched.reporting.html import PLOTLY_CONFIG, _plotly_figures

    if engine == "json":
        monkeypatch.setitem(sys.modules, "orjson", None)  # `import orjson` fails: the json module is used
        monkeypatch.setattr(pio.json.config, "default_engine", "json")
    else:
        pytest.importorskip("orjson")
    figures = _plotly_figures(CompareData.load(report.parent))
    assert [h for h, _ in figures] == ["APH by job size", "Utilization", "Makespan", "Mean wait by job size"]
    for heading, fig in figures:
        validated = go.Figure(fig).to_dict()
        assert json.loads(json.dumps(validated)) == json.loads(json.dumps(fig)), heading
        assert [t["type"] for t in validated["data"]] == [t["type"] for t in fig["data"]]
        want = pio.to_html(fig, validate=False, full_html=False, include_plotlyjs=False, div_id="plot-x", default_height="460px", default_width="100%", config=dict(PLOTLY_CONFIG))
        assert plotly_div(fig, div_id="plot-x") == f'<div class="plot">{want}</div>', heading
    # a NaN is written as null, as plotly writes it
    nan_fig = {"data": [{"y": [1.0, float("nan")], "type": "bar"}], "layout": {}}
    want = pio.to_html(nan_fig, validate=False, full_html=False, include_plotlyjs=False, div_id="n", default_height="460px", default_width="100%", config=dict(PLOTLY_CONFIG))
    assert plotly_div(nan_fig, div_id="n") == f'<div class="plot">{want}</div>' and "[1.0,null]" in want
    # NumPy values and characters unsafe in a <script>, as plotly's JSON writes them
    from plotly.io.json import to_json_plotly

    from toposched.reporting.html import plotly_json

    odd = {"n": np.int64(3), "a": np.array([1.5, np.nan]), "f": [np.float32(2.5)], "s": "</script> \u2028 é"}
    assert plotly_json(odd) == to_json_plotly(odd)


def test_the_compare_report_is_built_without_importing_plotlys_modules(report, tmp_path):
    """Only plotly.js is read from the plotly package (the interactive figures are plain
    dicts): graph_objects, io and offline are never imported (they cost 0.3-0.4 s)."""
    import subprocess
    import sys

    out = tmp_path / "fresh"
    shutil.copytree(report.parent / "runs", out / "runs")
    shutil.copy(report.parent / "compare.json", out / "compare.json")
    code = (
        "import sys\nfrom toposched.reporting import build_compare_report\n"
        f"build_compare_report({str(out)!r})\n"
        "print(sorted(m for m in sys.modules if m.startswith('plotly')))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "['plotly']"  # the package itself (lazy: 2 ms), none of its modules
    assert (out / "report.html").read_bytes() == report.read_bytes()


def test_report_links_point_at_files_that_exist(report):
    page = re.sub(r"<script\b.*?</script>", "", report.read_text(), flags=re.S)
    root = report.parent
    targets = set(re.findall(r'(?:href|src)="([^"#][^"]*)"', page))
    assert any(t.endswith("jobs.parquet") for t in targets)
    assert any(t.endswith("summary.json") for t in targets)
    for t in targets:
        assert (root / t).is_file(), t


def test_table_one_row_uses_the_papers_policy_names(report):
    page = report.read_text()
    section = page[page.index('<section id="mean-wait-table-i">') :]
    section = section[: section.index("</section>")]
    heads = re.findall(r"<th(?: [^>]*)?>(.*?)</th>", section)
    assert [re.sub(r"<br>.*", "", h) for h in heads] == ["Policy", "TO", "TA", "TA 10%"]
    assert "LLNL-Atlas-2006-2.1-cln on cab" in section


def _fig2_run(tmp_path: Path) -> Path:
    """The SC18 paper's Fig. 2 (seed 000 §III-A) on the toy tree: red on nodes 1 and 4,
    blue on 2, 3, 5, 10, 11, yellow on 7, 13, 14 (1-based)."""
    run = tmp_path / "fig2"
    run.mkdir()
    fabric = load_fabric("toy18")
    (run / "fabric.json").write_text(json.dumps(fabric.describe()))
    jobs = {"red": [1, 4], "blue": [2, 3, 5, 10, 11], "yellow": [7, 13, 14]}
    table = pa.table(
        {
            "job_id": pa.array([1, 2, 3], pa.int64()),
            "start_s": pa.array([0, 0, 0], pa.int64()),
            "end_s": pa.array([100, 100, 50], pa.int64()),
            "node_ids": pa.array([[n - 1 for n in nodes] for nodes in jobs.values()], pa.list_(pa.int32())),
        }
    )
    pq.write_table(table, run / "jobs.parquet")
    return run


def test_snapshot_marks_the_links_of_the_papers_fig2(tmp_path):
    run = _fig2_run(tmp_path)
    snap = draw_snapshot(run, 10, tmp_path / "fig2_snapshot")
    assert (tmp_path / "fig2_snapshot.png").exists() and (tmp_path / "fig2_snapshot.svg").exists()
    # Red and blue share the uplinks of leaves 0 and 1 (L1-L2); blue and yellow share the
    # L2-L3 links of both pods.
    assert snap.shared_leaves == [0, 1]
    assert snap.leaf_users[0] == [1, 2] and snap.leaf_users[1] == [1, 2]
    assert snap.shared_pods == [0, 1]
    assert snap.pod_users[0] == [2, 3]
    # Once yellow has ended (t = 50) no pod bundle is shared any more.
    later = shared_links(run, 50)
    assert later.job_ids == [1, 2] and later.shared_pods == [] and later.shared_leaves == [0, 1]


def test_snapshot_labels_only_the_shared_pod_bundles(tmp_path, monkeypatch):
    """The "N jobs" label on an L2-L3 bundle counts that pod's users (it once showed the
    last leaf's users on every pod)."""
    import toposched.reporting.snapshot as snapshot_module

    drawn = []
    monkeypatch.setattr(snapshot_module, "save_figure", lambda fig, path, formats: drawn.append(fig))
    run = _fig2_run(tmp_path)

    def pod_labels(t):
        draw_snapshot(run, t, tmp_path / f"snap{t}")
        return sorted(x.get_text() for x in drawn[-1].axes[0].texts if x.get_text().endswith(" jobs"))

    assert pod_labels(10) == ["2 jobs", "2 jobs"]  # blue and yellow share both pods' bundles
    assert pod_labels(50) == []  # yellow has ended: red and blue still share leaves, no pod


def test_snapshot_running_jobs_and_their_nodes_match_a_plain_python_reading(report):
    """shared_links picks the running rows and their node lists with NumPy from the
    columns' buffers; the reference reads the same file row by row in plain Python
    (to_pylist, node ranges expanded with range())."""
    run = report.parent / "runs" / "linear__none"
    table = pq.read_table(run / "jobs.parquet")
    rows = table.to_pylist()
    times = sorted({r["start_s"] for r in rows})
    for t in [times[0], *times[:: max(1, len(times) // 12)], busiest_spanning_time(run), times[-1] + 10**9]:
        want = [r for r in rows if r["start_s"] <= t < r["end_s"]]
        snap = shared_links(run, int(t))
        assert snap.job_ids == [r["job_id"] for r in want], t
        if "node_ranges" in table.column_names:
            want_nodes = [[n for rg in r["node_ranges"] for n in range(rg["first"], rg["first"] + rg["count"])] for r in want]
        else:
            want_nodes = [list(r["node_ids"]) for r in want]
        assert [x.tolist() for x in snap.job_nodes] == want_nodes, t
        assert snap.busy_nodes == sum(len(x) for x in want_nodes)


def test_snapshot_shared_links_linear_yes_isolated_never(report):
    runs = report.parent / "runs"
    t = busiest_spanning_time(runs / "linear__none")
    linear = shared_links(runs / "linear__none", t)
    assert len(linear.shared_leaves) > 0
    isolated_dir = runs / "isolated__none"
    jobs = pq.read_table(isolated_dir / "jobs.parquet", columns=["start_s", "leaves"])
    starts = jobs.column("start_s").to_numpy()[jobs.column("leaves").to_numpy() >= 2]
    # Every instant at which a multi-leaf job starts (where sharing would first appear).
    for t in np.unique(starts)[::5]:
        snap = shared_links(isolated_dir, int(t))
        assert snap.shared_leaves == [] and snap.shared_pods == [], t
    page = report.read_text()
    assert re.search(r"linear when the most multi-leaf jobs run \(t = [\d,]+ s: day \d+, \d\d:\d\d after the first submit\): \d+ running jobs, [\d,]+ busy nodes, [1-9]\d* shared leaf-L2", page)
    assert re.search(r"isolated when the most multi-leaf jobs run \(t = [\d,]+ s: day \d+, \d\d:\d\d after the first submit\): \d+ running jobs, [\d,]+ busy nodes, 0 shared leaf-L2 bundles, 0 shared L2-L3", page)


def test_build_page_api_without_plotly_has_no_script():
    page = build_page(
        "A <sweep>",
        [
            ("Numbers", table_html(["name", "value"], [["a<b", 1234], ["c", 0.000123], ["d", None]])),
            ("Picture", image_html("figures/x.png", "x & y", svg="figures/x.svg")),
        ],
    )
    assert "<script" not in page
    assert "<title>A &lt;sweep&gt;</title>" in page
    assert "<td>a&lt;b</td><td class=num>1,234</td>" in page
    assert "<td class=num>&lt;0.001</td>" in page and "<td class=num>-</td>" in page  # never scientific notation
    assert '<a href="figures/x.svg"><img src="figures/x.png"' in page


def test_build_page_inlines_plotly_once_for_several_divs():
    import plotly.graph_objects as go

    a = plotly_div(go.Figure(go.Bar(x=[1, 2], y=[3, 4])))
    b = plotly_div(go.Figure(go.Bar(x=[1, 2], y=[4, 3])))
    assert a != b and "plotly.js v" not in a
    assert a == plotly_div(go.Figure(go.Bar(x=[1, 2], y=[3, 4])))  # same figure, same text
    page = build_page("t", [("a", a), ("b", b)])
    assert page.count("* plotly.js v") == 1
    assert page.index("* plotly.js v") < page.index('class="plotly-graph-div"')


def test_report_of_a_two_level_fabric_with_an_empty_run(tmp_path):
    """One pod (no L3), runs listed without their summary, and a run whose only job never
    fits: the report still builds, and the empty run shows as such."""
    fabric = load_fabric("fattree:K=4,S=3,P=1")

    def workload(nodes: list[int]) -> Workload:
        n = len(nodes)
        cols = {"job_id": np.arange(1, n + 1), "submit_s": np.zeros(n, np.int64), "nodes": np.array(nodes),
                "walltime_s": np.full(n, 100), "runtime_s": np.full(n, 60), "procs": np.array(nodes), "line": np.arange(1, n + 1)}  # fmt: skip
        return Workload(columns=cols, source="inline", format="test")

    runs = []
    for alloc, scenario, nodes in (("linear", "none", [5, 5, 1, 3]), ("isolated", "none", [5, 5, 1, 3]), ("isolated", "v1", [50])):
        rel = f"runs/{alloc}__{scenario}"
        simulate(workload(nodes), fabric, RunConfig(alloc=alloc)).write(tmp_path / rel)
        runs.append({"alloc": alloc, "scenario": scenario, "dir": rel})
    meta = {"trace": "inline", "system": "fattree:K=4,S=3,P=1", "queue": "easy", "transforms": ["scale:2"], "seed": 0, "runs": runs}
    (tmp_path / "compare.json").write_text(json.dumps(meta))
    page = build_compare_report(tmp_path).read_text()
    assert "inline (2x) on fattree-4x3x1" in page
    assert "<tr><td>isolated</td><td>v1</td><td class=num>0</td><td class=num>1</td>" in page
    assert "asks for N nodes: 1" in page
    assert re.search(r"linear when the most multi-leaf jobs run \(t = 0 s: day 0, 00:00 after the first submit\): 3 running jobs, 11 busy nodes, 1 shared leaf-L2 bundles <", page)


def test_a_comparison_without_multi_node_jobs_reports_without_warnings(tmp_path):
    """compare on a one-node fabric (no job spans nodes, so no APH box is drawn) printed
    matplotlib's "UserWarning: No artists with labels found to put in legend" on stderr."""
    import subprocess
    import sys

    from conftest import DATA

    r = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-m", "toposched.cli", "compare", "--trace", str(DATA / "atlas-window-120.swf"),
         "--system", "fattree:K=1,S=1,P=1", "--scenarios", "none", "--jobs", "1", "--out", str(tmp_path), "--quiet"],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert (tmp_path / "figures" / "aph_by_size.png").exists()

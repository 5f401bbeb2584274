"""What a person reads: units on every axis and time column, no scientific notation, the
verdict of a comparison in plain sentences, and nothing cut short without saying so."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest

from conftest import EXAMPLE_TRACE
from test_engine import make_workload
from toposched.check import check_schedule
from toposched.compare import run_compare, summary_table
from toposched.nodelists import ranges_array_of_lists
from toposched.simulate import RunConfig, simulate
from toposched.topology import load_fabric

UNIT = re.compile(r"\((s|min|h|days|%|hours|% of nodes busy|nodes)\)|\bhops\b|%")


@pytest.fixture(scope="module")
def compare_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cmp")
    run_compare(EXAMPLE_TRACE, "cab", out, allocs=["linear", "isolated"], scenarios=["none", "ta10"], transforms=["days:20", "scale:3"], jobs=1)
    return out


def test_every_static_figure_has_units_on_its_value_axis_and_starts_at_zero(compare_dir):
    from toposched.reporting.figures import FIGURES, CompareData

    data = CompareData.load(compare_dir)
    for stem, build, _ in FIGURES:
        fig = build(data)
        for ax in fig.axes:
            if not ax.axison:
                continue  # the table figure
            label = ax.get_ylabel()
            assert UNIT.search(label), f"{stem}: y axis {label!r} names no unit"
            assert ax.get_ylim()[0] >= 0, f"{stem}: y axis starts below 0"
            # a wrapped title fits: no line longer than the figure allows
            width = max(30, int(fig.get_figwidth() * 13))
            assert all(len(line) <= width for line in ax.get_title().split("\n")), stem


def test_report_tables_name_their_time_units_and_never_use_scientific_notation(compare_dir):
    from toposched.reporting.figures import CompareData
    from toposched.reporting.html import _summary_rows

    cols, rows = _summary_rows(CompareData.load(compare_dir))
    for c in cols:
        if "wait" in c or "makespan" in c:
            assert re.search(r"\((s|min|h|days)\)$", c), c
    html = (compare_dir / "report.html").read_text() if (compare_dir / "report.html").exists() else ""
    from toposched.compare import build_report

    html = build_report(compare_dir).read_text()
    table_text = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    assert not re.search(r"\d\.\d+e[+-]\d\d", table_text), "scientific notation in the report"
    assert "What this report says" in html and "Verdict" in html


def test_terminal_compare_table_names_units(compare_dir):
    import json

    doc = json.loads((compare_dir / "compare.json").read_text())
    t = summary_table(doc)
    heads = [c.header for c in t.columns]
    assert any(re.fullmatch(r"wait (s|min|h|days)", h) for h in heads), heads
    assert any(re.fullmatch(r"makespan (s|min|h|days)", h) for h in heads), heads


def test_the_verdict_states_the_cost_of_isolation_in_numbers(compare_dir):
    import json

    from toposched.reporting.story import compare_story

    doc = json.loads((compare_dir / "compare.json").read_text())
    runs = [(r["alloc"], r["scenario"], r["summary"]) for r in doc["runs"]]
    st = compare_story(doc, runs, runs[0][2]["fabric"])
    text = st.text()
    base = next(s for a, sc, s in runs if a == "linear")
    iso = next(s for a, sc, s in runs if a == "isolated" and sc == "none")
    points = abs(100 * (base["utilization"]["mean"] - iso["utilization"]["mean"]))
    assert f"{points:.1f} points of utilization" in text
    assert "removes every shared switch link" in text
    assert "With ta10" in text and ("pays for isolation" in text or "does not pay" in text)
    assert "scenario ta10:" in text  # every scenario explained in one line
    assert "e+" not in text


def test_lightly_loaded_window_is_called_out():
    from toposched.reporting.story import compare_story

    summary = {"wait_s": {"mean": 60.0}, "utilization": {"mean": 0.4}, "makespan_s": 3600, "aph": {"mean": 1.0}, "jobs": {"in_workload": 10, "skipped_never_fit": 0, "replayed": 10}, "input": {}}
    st = compare_story({"trace": "x.swf", "queue": "easy"}, [("linear", "none", summary), ("isolated", "none", summary)], {})
    assert any("lightly loaded" in c for c in st.caveats)


def test_check_counts_every_problem_and_says_how_many_it_does_not_show():
    n = 30
    w = make_workload([0] * n, [1] * n, [10] * n, [10] * n)
    fabric = load_fabric("toy18")
    r = simulate(w, fabric, RunConfig(alloc="linear"))
    # put every job on node 0 at the same time: 29 overlapping neighbour pairs
    jobs = r.jobs.set_column(r.jobs.schema.get_field_index("node_ranges"), "node_ranges", ranges_array_of_lists([[0]] * n))
    jobs = jobs.set_column(jobs.schema.get_field_index("start_s"), "start_s", pa.array(np.zeros(n, np.int64)))
    jobs = jobs.set_column(jobs.schema.get_field_index("end_s"), "end_s", pa.array(np.full(n, 10, np.int64)))
    problems = check_schedule(jobs, fabric.describe())
    assert problems.total == n - 1
    assert problems[-1] == f"... and {n - 1 - 10} more nodes held by two jobs at once ({n - 1} in all)"
    assert len(problems) == 11


def test_terminal_summary_says_how_many_skip_reasons_it_leaves_out(tmp_path):
    from rich.console import Console

    from toposched.reporting.terminal import terminal_summary

    # jobs of 19..24 nodes never fit the 18-node toy fabric: six distinct reasons
    w = make_workload([0] * 6, [19, 20, 21, 22, 23, 24], [10] * 6, [10] * 6)
    r = simulate(w, load_fabric("toy18"), RunConfig())
    console = Console(record=True, width=300)
    console.print(terminal_summary(r))
    text = console.export_text()
    assert "and 3 more reasons for 3 jobs (see skipped.parquet)" in text


def test_progress_when_output_is_not_a_terminal(tmp_path):
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "toposched.cli", "simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--out", str(tmp_path / "o")]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert "toposched: replaying: started (39,207 jobs submitted)" in r.stderr
    assert "toposched: replaying: done in" in r.stderr
    q = subprocess.run(cmd + ["--quiet"], capture_output=True, text=True, check=True)
    assert q.stderr == "" and q.stdout == ""


def test_progress_lines_give_percentage_rate_and_eta():
    import logging

    from toposched.progress import Progress, log

    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    h = Keep()
    log.addHandler(h)
    level = log.level
    log.setLevel(logging.INFO)
    try:
        with Progress("replaying", total=200, unit="jobs", interval_s=0.0) as p:
            p.update(50)
            p.update(200)
    finally:
        log.removeHandler(h)
        log.setLevel(level)
    assert lines[0] == "replaying: started (200 jobs)"
    assert lines[1].startswith("replaying: 25% (50 of 200 jobs), ") and "ETA " in lines[1]
    assert lines[-1].startswith("replaying: done in ")


def test_the_verdict_says_how_much_of_isolations_cost_faster_jobs_pay_back():
    from toposched.reporting.story import compare_story

    def summary(busy: float, useful: float) -> dict:
        return {"wait_s": {"mean": 86400.0}, "utilization": {"mean": busy}, "makespan_s": 10**7, "aph": {"mean": 1.0},
                "jobs": {"in_workload": 10, "skipped_never_fit": 0, "replayed": 10}, "input": {},
                "network": {"slowdown": {"mean": 1.0}, "busy_utilization": busy, "useful_utilization": useful}}

    runs = [("linear", "none", summary(0.815, 0.776)), ("isolated", "none", summary(0.756, 0.756)), ("capped", "none", summary(0.794, 0.787))]
    lines = [v for v in compare_story({"trace": "x.swf", "queue": "easy"}, runs, {}).verdict if v.startswith("Payback")]
    # isolated gives up 81.5 - 75.6 = 5.9 points busy; its useful utilization is 2.0 below
    # linear's, so faster jobs recovered 5.9 - 2.0 = 3.9 points (66 %)
    assert lines[0] == ("Payback, isolated: 5.9 points of busy utilization given up against linear; its faster jobs pay back "
                        "3.9 of them (66%); useful utilization -2.0 points against linear's.")
    # capped gives up 2.1 points and ends 1.1 points of useful utilization above linear
    assert lines[1] == "Payback, capped: 2.1 points of busy utilization given up against linear; its faster jobs pay it all back (useful utilization +1.1 points against linear's)."
    # without the model there is nothing to say
    plain = [(a, s, {k: v for k, v in d.items() if k != "network"}) for a, s, d in runs]
    assert not [v for v in compare_story({"trace": "x.swf", "queue": "easy"}, plain, {}).verdict if v.startswith("Payback")]

"""What the reports claim is true of the runs' own files: the verdict sentences, the
figures and the printed tables checked against numbers computed here from the summaries
and the runs' Parquet files, on the edge cases a site meets (no job replayed, equal
values, a wide comparison on an 80-column terminal)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toposched.reporting.story import compare_story


def _summary(*, wait: float | None = 3600.0, util: float | None = 0.7, makespan: int | None = 10**6, aph: float | None = 1.0,
             replayed: int = 10, never_fit: int = 0) -> dict[str, Any]:
    return {"wait_s": {"mean": wait}, "utilization": {"mean": util}, "makespan_s": makespan, "aph": {"mean": aph},
            "jobs": {"in_workload": replayed + never_fit, "skipped_never_fit": never_fit, "replayed": replayed}, "input": {}}


META = {"trace": "x.swf", "queue": "easy"}


def test_the_verdict_says_closer_only_when_the_hops_are_fewer():
    base = _summary(aph=1.04)
    for aph, word in ((0.86, "closer"), (1.30, "further apart"), (1.041, "as close")):
        st = compare_story(META, [("linear", "none", base), ("slurm-tree", "none", _summary(aph=aph))], {})
        lead = next(v for v in st.verdict if v.startswith("slurm-tree placement"))
        assert word in lead, lead
        if word != "closer":
            assert "closer" not in lead, lead


def test_the_verdict_of_runs_that_replayed_no_job_says_so_and_claims_nothing():
    empty = _summary(wait=None, util=None, makespan=None, aph=None, replayed=0, never_fit=2)
    st = compare_story(META, [("linear", "none", empty), ("isolated", "none", empty), ("isolated", "ta10", empty)], {})
    text = "\n".join(st.verdict)
    assert "keeps the machine - busy" not in text and " - on average" not in text, text
    assert "isolated placement and" not in text, text
    assert "replayed no job" in text, text
    # a policy without multi-node jobs (no APH) still gets a sentence that reads
    one_node = _summary(aph=None)
    st = compare_story(META, [("linear", "none", one_node), ("isolated", "none", one_node)], {})
    lead = next(v for v in st.verdict if v.startswith("isolated"))
    assert lead.startswith("isolated placement removes every shared switch link"), lead


SWF_HEAD = "; MaxNodes: 100\n; MaxProcs: 100\n"


def _swf(path, rows: list[tuple[int, int, int, int]]) -> str:
    """An SWF log of (id, submit, runtime, nodes) rows, one processor per node."""
    lines = [f"{i} {sub} 0 {rt} {n} -1 -1 {n} {2 * rt} -1 1 1 1 -1 1 -1 -1 -1" for i, sub, rt, n in rows]
    path.write_text(SWF_HEAD + "\n".join(lines) + "\n")
    return str(path)


def _plotly(html: str, div: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    import json
    import re

    m = re.search(r'Plotly\.newPlot\(\s*"' + div + r'",\s*(\[.*?\]),\s*(\{.*?\}),\s*\{"displaylogo', html, flags=re.S)
    assert m, div
    return json.loads(m.group(1)), json.loads(m.group(2))


def test_a_run_without_a_makespan_gets_no_bar_and_no_zero(tmp_path):
    """Every job too large for toy18: no run has a makespan (summary: null). The figures
    drew a bar of 0 labelled "0.0" for each (a makespan of zero); now no bar and '-'."""
    from toposched.compare import build_report, run_compare
    from toposched.reporting.figures import CompareData, makespan_figure

    trace = _swf(tmp_path / "big.swf", [(1, 0, 100, 40), (2, 10, 100, 40)])
    out = tmp_path / "cmp"
    run_compare(trace, "toy18", out, allocs=["linear", "isolated"], scenarios=["none"], jobs=1)
    data = CompareData.load(out)
    assert all(r.summary["makespan_s"] is None for r in data.runs)
    fig = makespan_figure(data)
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert not [h for h in heights if h == h], heights  # NaN: no bar drawn
    labels = [t.get_text() for t in ax.texts]
    assert "0.0" not in labels, labels
    traces, _ = _plotly(build_report(out).read_text(), "plot-makespan")
    assert traces[0]["y"] == [None, None] and "0.0" not in traces[0]["text"], traces[0]


def _doc_run(alloc: str, scenario: str, *, wait: float, bsld: float, util: float, makespan: int, aph: float) -> dict[str, Any]:
    return {"alloc": alloc, "scenario": scenario, "summary": {
        "wait_s": {"mean": wait}, "bounded_slowdown": {"mean": bsld}, "utilization": {"mean": util}, "makespan_s": makespan,
        "aph": {"mean": aph}, "input": {"repairs": {}}, "fabric": {"name": "cab", "nodes": 1296}}}


def test_the_terminal_table_of_a_wide_comparison_shows_every_number_and_unit_whole():
    """Five policies, one of them named least-interference, on an 80-column terminal: the
    table cut numbers ('1,110.…') and the units of its headers ('wait…', 'util…')."""
    import re

    from rich.console import Console

    from toposched.compare import summary_table

    runs = [
        _doc_run("linear", "none", wait=64440.0, bsld=511.23, util=0.739, makespan=2808000, aph=1.334),
        _doc_run("capped", "none", wait=100440.0, bsld=1110.46, util=0.653, makespan=3179520, aph=1.195),
        _doc_run("jigsaw", "none", wait=93240.0, bsld=649.08, util=0.653, makespan=3179520, aph=1.203),
        _doc_run("least-interference", "none", wait=64440.0, bsld=511.23, util=0.739, makespan=2808000, aph=1.308),
        _doc_run("adaptive", "none", wait=58680.0, bsld=319.80, util=0.746, makespan=2782080, aph=1.236),
    ]
    doc = {"trace": "LLNL-Atlas-2006-2.1-cln.swf.gz", "queue": "easy", "system": "cab", "transforms": ["days:30", "scale:3"], "runs": runs}
    console = Console(width=80, record=True, color_system=None)
    console.print(summary_table(doc))
    text = console.export_text()
    assert "…" not in text, text
    for head in ("wait h", "util %", "makespan days", "sped up", "scenario"):
        assert re.search(r"\b" + re.escape(head) + r"(\s|$)", text), (head, text)
    for number in ("1,110.46", "511.23", "17.9", "27.9", "73.9", "36.8", "1.334", "1.308"):
        assert number in text, (number, text)
    assert all(len(line) <= 80 for line in text.splitlines()), text


def test_a_long_policy_name_wraps_after_its_hyphen_at_80_columns():
    """At 80 columns "least-interference" was cut anywhere ("least-interfere" over "nce");
    it breaks after its hyphen now, and stays whole where it fits."""
    from rich.console import Console

    from toposched.compare import summary_table

    runs = [
        _doc_run("linear", "none", wait=0.0, bsld=1.0, util=0.153, makespan=570240, aph=1.421),
        _doc_run("least-interference", "none", wait=0.0, bsld=1.0, util=0.153, makespan=570240, aph=1.362),
        _doc_run("least-interference", "ta10", wait=0.0, bsld=1.0, util=0.142, makespan=552960, aph=1.362),
    ]
    doc = {"trace": "LLNL-Atlas-2006-2.1-cln.swf.gz", "queue": "easy", "system": "cab", "transforms": ["days:5"], "runs": runs}
    for width, lines in ((80, ["least-", "interference"]), (120, ["least-interference"])):
        console = Console(width=width, record=True, color_system=None)
        console.print(summary_table(doc))
        cells = [line.split()[0] for line in console.export_text().splitlines() if line.strip().startswith(("least", "interf"))]
        assert cells == lines, console.export_text()


def test_the_sped_up_column_says_it_counts_jobs_that_never_ran(tmp_path):
    """ta10 shortens both jobs of the workload (over 4 nodes), but one never fits toy18:
    the column says 2 and must not read as 2 of the 1 replayed job."""
    from rich.console import Console

    from toposched.compare import run_compare, summary_table

    trace = _swf(tmp_path / "mix.swf", [(1, 0, 100, 6), (2, 10, 100, 40)])
    res = run_compare(trace, "toy18", tmp_path / "cmp", allocs=["linear", "isolated"], scenarios=["none", "ta10"], jobs=1)
    ta10 = next(r["summary"] for r in res.document["runs"] if r["scenario"] == "ta10")
    assert ta10["input"]["repairs"]["scenario_sped_up"] == 2 and ta10["jobs"]["replayed"] == 1
    console = Console(width=200, record=True, color_system=None)
    console.print(summary_table(res.document))
    text = " ".join(console.export_text().split())
    assert "sped up: jobs of the workload the scenario shortened, never-placed ones included" in text, text


def test_a_speedup_verdict_between_waits_that_print_alike_gives_the_difference():
    """14.90 h against 14.92 h both print '14.9 h': 'still above the baseline's 14.9 h'
    after 'is 14.9 h' reads as a contradiction unless the difference is given."""
    base, iso = _summary(wait=53640.0), _summary(wait=80000.0)
    for wait, word in ((53700.0, "still above"), (53580.0, "at or below")):
        st = compare_story(META, [("linear", "none", base), ("isolated", "none", iso), ("isolated", "ta10", _summary(wait=wait))], {})
        line = next(v for v in st.verdict if v.startswith("With ta10"))
        assert "14.9 h" in line and word in line and "by 60 s" in line, line
    # apart enough to read: no difference added
    st = compare_story(META, [("linear", "none", base), ("isolated", "none", iso), ("isolated", "ta10", _summary(wait=70000.0))], {})
    line = next(v for v in st.verdict if v.startswith("With ta10"))
    assert line.endswith("mean wait is 19.4 h: still above the baseline's 14.9 h: that speedup does not pay for it."), line


def test_no_payback_is_claimed_for_a_speedup_scenario_run():
    """Under ta10 the scenario shortens jobs: less busy time for the same work is its
    benefit (the story's own rule), and useful utilization counts the shortened work, so
    'N points of busy utilization given up ... useful utilization -3.1 points' against the
    unshortened baseline compares different work. Payback is a policy's, scenario none."""
    def net(busy: float, useful: float) -> dict[str, Any]:
        return dict(_summary(util=busy), network={"slowdown": {"mean": 1.0}, "busy_utilization": busy, "useful_utilization": useful})

    runs = [("linear", "none", net(0.623, 0.610)), ("isolated", "none", net(0.599, 0.599)), ("isolated", "ta10", net(0.579, 0.579))]
    lines = [v for v in compare_story(META, runs, {}).verdict if v.startswith("Payback")]
    assert [v.split(":")[0] for v in lines] == ["Payback, isolated"], lines


def test_the_sweep_page_gives_utilization_in_percent_and_says_so(tmp_path):
    """The sweep page showed utilization as a bare fraction ('0.749' under 'utilization',
    an axis of 0.2) where every other report gives percent: read as 0.749 %."""
    import re

    from toposched.compare import run_compare
    from toposched.reporting.sweep import write_report

    trace = _swf(tmp_path / "two.swf", [(1, 0, 100, 4), (2, 0, 100, 6)])
    res = run_compare(trace, "toy18", tmp_path / "cmp", allocs=["linear", "isolated"], scenarios=["none"], jobs=1)
    util = res.document["runs"][0]["summary"]["utilization"]["mean"]  # (4 + 6) / 18 busy for 100 s
    assert util == 10 / 18
    page = write_report(tmp_path / "cmp").read_text()
    assert "<th class=num>utilization (%)</th>" in page, re.findall(r"<th[^>]*>[^<]*util[^<]*</th>", page)
    assert "<td class=num>55.6</td>" in page
    traces, layout = _plotly(page, re.search(r'Plotly\.newPlot\(\s*"([^"]+)"', page).group(1))
    titles = [a["text"] for a in layout["annotations"]]
    assert "utilization (%)" in titles, titles
    util_bars = [t for t in traces if t.get("yaxis") == "y2"]
    assert util_bars and all(abs(t["y"][0] - 100 * util) < 1e-9 for t in util_bars), util_bars


def test_contention_prints_each_taper_as_a_ratio_and_the_json_numbers(tmp_path, capsys):
    """The uplink table printed a taper as '1.50:' (the ratio's ':1' cut off)."""
    import json
    import re
    from pathlib import Path

    from toposched.cli import main

    window = Path(__file__).parent / "data" / "atlas-window-120.swf"
    run_dir = tmp_path / "run"
    assert main(["simulate", "--trace", str(window), "--system", "fattree:K=6,S=8,P=4", "--out", str(run_dir), "--quiet"]) == 0
    capsys.readouterr()
    out = tmp_path / "c"
    assert main(["contention", "--run", str(run_dir), "--out", str(out), "--crossbar-sizes", "none", "--cores-sweep", "none",
                 "--comm-fractions", "none", "--no-figures", "--no-report"]) == 0
    text = capsys.readouterr().out
    doc = json.loads((out / "contention.json").read_text())
    rows = {int(m.group(1)): m.groups()[1:] for m in re.finditer(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+([\d,]+)", text, flags=re.M)}
    assert sorted(rows) == sorted(r["uplinks"] for r in doc["uplink_sweep"]), text
    for r in doc["uplink_sweep"]:
        taper, system, per_node, affected = rows[r["uplinks"]]
        assert taper == f"{r['taper']:.2f}:1", (taper, text)
        assert system == f"{100 * r['system_slowdown']:.2f}%" and per_node == f"{100 * r['added_wall_per_node_second']:.2f}%"
        assert int(affected.replace(",", "")) == r["affected_jobs"]


def test_an_interrupted_replay_says_so_first_and_does_not_overstate_its_speed():
    """Ctrl-C after 54,236 of 118,791 jobs: the table gave the metrics first, 'interrupted'
    last, and a rate of the whole workload over the partial replay time (2.2x too fast)."""
    import copy
    from types import SimpleNamespace

    from rich.console import Console

    from test_engine import make_workload
    from toposched.config import RunConfig
    from toposched.reporting.terminal import terminal_summary
    from toposched.simulate import simulate
    from toposched.topology import load_fabric

    r = simulate(make_workload([0] * 4, [2] * 4, [10] * 4, [10] * 4), load_fabric("toy18"), RunConfig())
    partial = copy.deepcopy(r.summary)
    partial["complete"] = False
    partial["jobs"].update(in_workload=100, replayed=40)
    console = Console(record=True, width=300, color_system=None)
    console.print(terminal_summary(SimpleNamespace(summary=partial), read_s=0.1, sim_s=2.0))
    lines = [line for line in console.export_text().splitlines() if line.strip("│ ─┌┐└┘┬┴├┤┼")]
    heads = [line.strip("│ ").split("│")[0].strip() for line in lines[1:]]
    assert heads[0] == "status" and "interrupted" in lines[1], lines
    timing = next(line for line in lines if "replay 2.00 s" in line)
    assert "(20 jobs finished/s" in timing and "50 jobs/s" not in timing, timing


def test_the_contention_family_table_names_the_row_it_shows_when_the_fraction_is_not_whole():
    """On cab's leaves of 18, '3/4 uplinks' is 13.5 and '1/4' is 4.5 uplinks: the table
    showed R = 14 (78 %) and R = 4 (22 %) under those headings without a word."""
    import re

    from toposched.reporting.contention import _family_table

    def entry(k: int) -> dict[str, Any]:
        sweep = [{"uplinks": r, "removed": k - r, "system_slowdown": (k / r - 1) / 2, "affected_job_slowdown": {"max": k / r - 1}} for r in range(k, 0, -1)]
        return {"cores_per_node": 8, "exposed_jobs": 5, "uplink_sweep": sweep}

    cells = re.findall(r"<td[^>]*>([^<]*)</td>", _family_table([entry(18)], "cores_per_node"))
    assert cells[2] == f"{100 * (18 / 14 - 1) / 2:.2f}% (R=14)", cells  # 3/4 of 18 = 13.5
    assert cells[3] == f"{100 * (18 / 9 - 1) / 2:.2f}%", cells  # 1/2 of 18 = 9 exactly
    assert cells[4] == f"{100 * (18 / 4 - 1) / 2:.2f}% (R=4)", cells  # 1/4 of 18 = 4.5
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", _family_table([entry(8)], "cores_per_node"))
    assert "(R=" not in "".join(cells), cells  # 6, 4, 2 of 8: whole


def test_table_one_never_writes_a_long_wait_in_scientific_notation():
    """Mean waits of 1,000 h and more (an overloaded log) printed as '1.05e+03' in Table I
    (HTML and figure), and 999.7 h as '1e+03'."""
    from toposched.reporting.figures import fmt_hours

    assert fmt_hours(1052.3) == "1,052"
    assert fmt_hours(999.7) == "1,000"
    assert fmt_hours(12345.6) == "12,346"
    assert fmt_hours(123.4) == "123" and fmt_hours(14.86) == "14.9" and fmt_hours(0.5) == "0.5"
    for h in (0.0004, 0.0123, 1.5, 99.96, 100.4, 999.4, 999.6, 5e4, 3.3e7):
        assert "e" not in fmt_hours(h), (h, fmt_hours(h))


def test_the_sweep_page_axes_and_hovers_use_no_scientific_notation(tmp_path):
    """Mean bounded slowdowns of 1,000 and more are common; the sweep page's axes were
    formatted ',.3~g' (d3), which writes 1,500 as '1.5e+3' (seen in Chromium), and the
    hover '.4g' writes 12,345 as '1.235e+4'. Decimal notation ('r': rounded to
    significant digits) never turns exponential."""
    import re

    from toposched.compare import run_compare
    from toposched.reporting.sweep import write_report

    trace = _swf(tmp_path / "two.swf", [(1, 0, 100, 4), (2, 0, 100, 6), (3, 0, 100, 18)])
    run_compare(trace, "toy18", tmp_path / "cmp", allocs=["linear", "isolated"], scenarios=["none"], jobs=1)
    page = write_report(tmp_path / "cmp").read_text()
    for div in re.findall(r'Plotly\.newPlot\(\s*"([^"]+)"', page):
        traces, layout = _plotly(page, div)
        formats = [v["tickformat"] for k, v in layout.items() if k.startswith("yaxis") and "tickformat" in v]
        assert formats and all(re.fullmatch(r",?\.\d~?r", f) for f in formats), formats
        for t in traces:
            for spec in re.findall(r"%\{y:([^}]*)\}", t.get("hovertemplate", "")):
                assert spec.endswith("r"), spec


def test_the_interactive_utilization_figure_names_the_runs_own_sampling_step(tmp_path):
    """run_compare(run_options={'utilization_step_s': 300}) samples every 5 minutes; the
    interactive figure's title said 'per minute' (the static one reads the step)."""
    from toposched.compare import build_report, run_compare

    trace = _swf(tmp_path / "one.swf", [(1, 0, 1000, 4)])
    run_compare(trace, "toy18", tmp_path / "cmp", allocs=["linear", "isolated"], scenarios=["none"], jobs=1,
                run_options={"utilization_step_s": 300})
    _, layout = _plotly(build_report(tmp_path / "cmp").read_text(), "plot-utilization")
    title = layout["title"]["text"]
    assert "per minute" not in title and "one sample every 300 s" in title, title


def test_the_lightly_loaded_caveat_does_not_advise_the_scale_already_applied():
    light = _summary(util=0.33, wait=4000.0)
    st = compare_story(dict(META, transforms=["days:10", "scale:2"]), [("linear", "none", light), ("isolated", "none", light)], {})
    caveat = next(c for c in st.caveats if "lightly loaded" in c)
    assert "(--transform scale:2)" not in caveat and "scale:2 is applied" in caveat, caveat
    st = compare_story(META, [("linear", "none", light), ("isolated", "none", light)], {})
    assert any("(--transform scale:2)" in c for c in st.caveats), st.caveats


def _frontier_doc() -> dict[str, Any]:
    def point(policy: str, lost: float, interference_h: float, wait_h: float, front: bool) -> dict[str, Any]:
        return {"policy": policy, "interference_node_s": interference_h * 3600, "wait_mean_s": wait_h * 3600, "on_front": front,
                "meets_target": False, "vs_baseline": {"utilization_lost_pts": lost}}

    return {"trace": "x.swf", "system": "cab", "baseline": "linear",
            "target": {"interference_removed_at_least": 0.9, "utilization_lost_pts_at_most": 1.0, "wait_ratio_at_most": 1.05},
            "points": [point("linear", 0.0, 105.0, 1.137, False), point("isolated", -0.0013, 0.0, 1.324, True),
                       point("slurm-tree", 0.0, 527.0, 1.174, False), point("capped", 0.0002, 0.6, 1.205, False)]}


def test_the_frontier_figure_starts_its_value_axes_at_zero_and_shades_only_the_target_box():
    """Atlas 10 days x2: the mean-wait panel ran from 1.15 h to 1.33 h (isolated's 16 %
    longer wait drawn as eight times linear's bar height), the interference axis went
    below zero, and the 'target box' was shaded over the whole height although the target
    also needs interference at most 10 % of the baseline's (the dashed line)."""
    from toposched.reporting.frontier import frontier_figure

    fig = frontier_figure(_frontier_doc())
    ax, bx = fig.axes[:2]
    assert ax.get_ylim()[0] == 0 and bx.get_ylim()[0] == 0, (ax.get_ylim(), bx.get_ylim())
    target_y = 105.0 * (1 - 0.9)
    shaded = [p for p in ax.patches if p.get_alpha() and p.get_alpha() < 0.2]
    assert len(shaded) == 1
    top = shaded[0].get_path().transformed(shaded[0].get_patch_transform()).get_extents().y1
    assert abs(top - target_y) < 1e-6, (top, target_y)


def test_the_network_row_of_simulates_summary_counts_jobs_not_links():
    """summary.json network.jobs_sharing_links is a number of jobs (737 of Atlas 20 days x2
    under 'heavy': the jobs with net_links_shared > 0); the row printed '737 shared links'."""
    import copy
    from types import SimpleNamespace

    from rich.console import Console

    from test_engine import make_workload
    from toposched.config import RunConfig
    from toposched.reporting.terminal import terminal_summary
    from toposched.simulate import simulate
    from toposched.topology import load_fabric

    r = simulate(make_workload([0] * 4, [2] * 4, [10] * 4, [10] * 4), load_fabric("toy18"), RunConfig())
    s = copy.deepcopy(r.summary)
    s["network"] = {"slowdown": {"mean": 1.019, "p95": 1.113, "max": 1.833, "jobs_slowed": 180}, "jobs_sharing_links": 737,
                    "useful_utilization": 0.61, "busy_utilization": 0.623, "spec": "heavy"}
    console = Console(record=True, width=300, color_system=None)
    console.print(terminal_summary(SimpleNamespace(summary=s)))
    text = console.export_text()
    assert "737 jobs shared links" in text and "737 shared links" not in text, text


def test_the_transform_sentences_say_what_the_transforms_did():
    """'multiplied by 0.5 (scale:0.5) to load the machine more' (it loads it less), the
    same for scale:1 (it changes nothing), and 'jobs larger than the machine nodes left
    out' for a bare drop."""
    from toposched.reporting.story import _transforms_text

    assert "to load the machine more" in _transforms_text(["scale:2"])
    half = _transforms_text(["scale:0.5"])
    assert "more" not in half and "to load the machine less" in half, half
    one = _transforms_text(["scale:1"])
    assert "load" not in one and "unchanged" in one, one
    assert _transforms_text(["drop"]) == "jobs larger than the machine left out"
    assert _transforms_text(["cap"]) == "jobs larger than the machine cut to its size"
    assert _transforms_text(["drop:500"]) == "jobs larger than 500 nodes left out"
    assert _transforms_text(["cap:500"]) == "jobs larger than 500 nodes cut to that size"


def test_the_network_table_compares_with_no_oblivious_run_when_there_is_none(tmp_path):
    """--allocs isolated,slurm-tree --network: no topology-oblivious run, yet the column
    'useful utilization vs oblivious (points)' was filled against the first run
    (isolated: 0, slurm-tree: its difference from isolated)."""
    from pathlib import Path

    from toposched.compare import run_compare
    from toposched.reporting.figures import CompareData
    from toposched.reporting.html import network_rows

    window = Path(__file__).parent / "data" / "atlas-window-120.swf"
    run_compare(str(window), "cab", tmp_path / "cmp", allocs=["isolated", "slurm-tree"], scenarios=["none"], jobs=1, network="bins")
    cols, rows = network_rows(CompareData.load(tmp_path / "cmp"))
    assert cols[-1] == "useful utilization vs oblivious (points)"
    assert [r[-1] for r in rows] == [None, None], rows


def test_the_runs_listing_writes_long_waits_in_plain_digits(tmp_path, capsys):
    """`toposched runs DIR` printed a mean wait of 107,739 s as '1.077e+05' (and the
    demo's linear run's 53,501 s as '5.35e+04'): the digits, not an exponent."""
    from toposched.cli import main
    from toposched.compare import run_compare

    # a whole-machine job for 100,000 s, then one that waits for it: mean wait 49,999.5 s
    trace = _swf(tmp_path / "long.swf", [(1, 0, 100000, 18), (2, 1, 100, 18)])
    run_compare(trace, "toy18", tmp_path / "cmp", allocs=["linear"], scenarios=["none"], jobs=1)
    capsys.readouterr()
    assert main(["runs", str(tmp_path / "cmp"), "--columns", "run_id,wait_mean_s,wait_p95_s,utilization"]) == 0
    text = capsys.readouterr().out
    assert "e+0" not in text and " 50000 " in text and " 94999 " in text, text


def test_a_speedup_is_not_said_to_pay_for_a_cost_the_policy_did_not_have():
    """KTH 30 days on hype, conservative: slurm-tree waits as long as linear (2.4 h, +0 s);
    its v1 run was said to 'pay for isolation's cost' (slurm-tree does not isolate, and
    had no wait to pay back)."""
    base = _summary(wait=8640.0)
    runs = [("linear", "none", base), ("slurm-tree", "none", _summary(wait=8640.0)), ("slurm-tree", "v1", _summary(wait=8280.0)),
            ("isolated", "none", _summary(wait=11000.0)), ("isolated", "v1", _summary(wait=8000.0))]
    verdict = compare_story(META, runs, {}).verdict
    tree = next(v for v in verdict if v.startswith("With v1") and "slurm-tree's" in v)
    assert "isolation" not in tree and "no wait to pay back" in tree, tree
    iso = next(v for v in verdict if v.startswith("With v1") and "isolated's" in v)
    assert iso.endswith("at or below the baseline's, so that speedup pays for isolation's cost."), iso


def test_the_never_placed_caveat_does_not_round_a_job_to_zero_percent():
    one = _summary(replayed=2362, never_fit=1)
    caveat = next(c for c in compare_story(META, [("linear", "none", one), ("isolated", "none", one)], {}).caveats if "never be placed" in c)
    assert "1 job (<1%)" in caveat and "(0%)" not in caveat, caveat


def test_a_one_job_workload_is_one_job():
    one = _summary(replayed=1)
    assert compare_story(META, [("linear", "none", one)], {}).compared[0] == "x.swf: 1 job."


def _reduction_range(scenario: str, lo: int, hi: int) -> tuple[float, float]:
    """Smallest and largest run-time reduction (%) the scenario gives jobs of lo..hi nodes
    (every size, each many times, so that every bin is drawn)."""
    import numpy as np

    from test_engine import make_workload
    from toposched.transforms import apply_scenario

    sizes = np.repeat(np.arange(lo, hi + 1), 40)
    r = 10**7
    w = apply_scenario(make_workload([0] * len(sizes), sizes, [2 * r] * len(sizes), [r] * len(sizes)), scenario, seed=1)
    cut = 100 * (1 - w.columns["runtime_s"] / r)
    return float(cut.min()), float(cut.max())


def test_the_scenario_lines_give_the_reductions_the_runs_got():
    """The demo's v2 run: jobs of 5-128 nodes ran 0-4.7 % shorter (median 0.8 %), larger
    ones 2.5-30 %; the report said '5-128 nodes 0-20% shorter, larger ones 10-30%' (the
    paper's bins, before the node-count scaling the run applies). v1 said 'each job 0-10%,
    0-20% or 0-30% shorter' where a 16-node job gets at most 0.9 %."""
    import re

    from toposched.reporting.story import SCENARIO_TEXT

    def claimed(text: str, what: str) -> tuple[float, float]:
        m = re.search(what + r" (\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)% shorter", text)
        assert m, (what, text)
        return float(m.group(1)), float(m.group(2))

    for scenario, what, lo, hi in (("v2", "jobs of 5-128 nodes", 5, 128), ("v2", "larger ones", 129, 2048), ("v1", "every job", 1, 2048)):
        got = _reduction_range(scenario, lo, hi)
        said = claimed(SCENARIO_TEXT[scenario], what)
        assert abs(said[0] - got[0]) <= 0.05 + 0.01 * got[0] and abs(said[1] - got[1]) <= 0.05 + 0.01 * got[1], (scenario, what, said, got)
    assert _reduction_range("v2", 1, 4) == (0.0, 0.0) and "1-4 nodes not at all" in SCENARIO_TEXT["v2"]
    v1_16 = _reduction_range("v1", 16, 16)[1]
    assert f"{v1_16:.1f}% at 16 nodes" in SCENARIO_TEXT["v1"], (v1_16, SCENARIO_TEXT["v1"])


def test_the_inputs_table_names_who_repaired_or_left_out_jobs_and_of_what():
    """The demo's Inputs table listed 'transform_outside_window: 31,428' under 'reader
    skips' and 'transform_scaled_nodes: 7,779' (the jobs kept) beside the reader's
    'walltime_from_runtime: 6,294' (counted over all 43,778 records) under 'reader
    repairs', as if 6,294 of the 7,779 jobs replayed had been repaired."""
    import re

    from toposched.reporting.figures import CompareData, RunData
    from toposched.reporting.html import _inputs_section

    summary = {"input": {"jobs": 7779, "records": 43778, "repairs": {"size_from_requested": 17, "transform_scaled_nodes": 7779, "walltime_from_runtime": 6294},
                         "skipped": {"transform_outside_window": 31428, "unknown_size": 4571}}, "jobs": {}}
    data = CompareData(root=Path("."), meta={"trace": "x.swf", "queue": "easy", "transforms": ["days:60", "scale:3"]},
                       runs=[RunData("linear", "none", Path("."), "runs/linear__none", summary, "#000")])
    data.__dict__["fabric"] = {}
    rows = dict(re.findall(r"<tr><th>([^<]*)</th><td>([^<]*)</td></tr>", _inputs_section(data)))
    reader_skips = next(v for k, v in rows.items() if k.startswith("reader skips"))
    reader_repairs = next(v for k, v in rows.items() if k.startswith("reader repairs"))
    assert "transform" not in reader_skips and "transform" not in reader_repairs, rows
    assert "43,778 records" in next(k for k in rows if k.startswith("reader repairs")), rows
    transforms = [v for k, v in rows.items() if k.startswith("transforms:")]
    assert any("outside_window: 31,428" in v for v in transforms) and any("scaled_nodes: 7,779" in v for v in transforms), rows


def test_the_contention_page_carries_the_schedules_notes():
    """A run replayed with --network: the terminal and contention.json say its run times
    already hold the model's slowdowns (the uplink ones come on top); report.html did not."""
    import html

    from toposched.reporting.contention import build_report

    note = "replayed with the network model (--network heavy): its run times already include that model's predicted slowdowns"
    doc = {"schedule": {"name": "x", "jobs": 3, "nodes": 18, "leaves": 6, "nodes_per_leaf": 3, "full_uplinks": 3, "uplinks_per_leaf_as_built": 3,
                        "cores_per_node": 1, "notes": [note]},
           "exposed_jobs": 1, "leaf_demand": {"peak_uplinks": 1, "stretches": 1}, "uplink_sweep": []}
    page = html.unescape(build_report(doc, {}))
    assert note in page


def test_the_contention_page_marks_the_row_of_the_fabric_as_built():
    """On a tapered fabric (W1 = 9 of 18) the terminal marks the row R = 9 '<- as built';
    the page's table did not say which row is the fabric that was replayed."""
    import re

    from toposched.reporting.contention import _sweep_table

    sweep = [{"uplinks": r, "removed": 18 - r, "taper": 18 / r, "system_slowdown": 0.1, "added_wall_per_node_second": 0.01, "affected_jobs": 1,
              "affected_job_slowdown": {"mean": 0.1, "median": 0.1, "p95": 0.1, "max": 0.1}, "probabilistic": []} for r in range(18, 0, -1)]
    doc = {"schedule": {"full_uplinks": 18, "uplinks_per_leaf_as_built": 9}, "uplink_sweep": sweep, "comm_fractions": []}
    first_cells = re.findall(r"<tr><td[^>]*>([^<]*)</td>", _sweep_table(doc))
    assert first_cells[9] == "9 (as built)" and sum("as built" in c for c in first_cells) == 1, first_cells
    doc["schedule"]["uplinks_per_leaf_as_built"] = 18  # not tapered: nothing to mark
    assert "as built" not in _sweep_table(doc)


def test_the_network_section_does_not_call_a_scenario_runs_difference_a_payback(tmp_path):
    """The network table's last column was introduced as 'each policy's net payback' for
    every row, the speedup scenarios' too (whose runs did shortened work)."""
    from pathlib import Path

    from toposched.compare import build_report, run_compare

    window = Path(__file__).parent / "data" / "atlas-window-120.swf"
    run_compare(str(window), "cab", tmp_path / "cmp", allocs=["linear", "isolated"], scenarios=["none", "ta10"], jobs=1, network="bins")
    page = build_report(tmp_path / "cmp").read_text()
    assert "The last column is each policy's net payback" not in page
    assert "a speedup scenario's run did shortened work: its difference is no payback" in page


def test_every_compared_policy_is_described():
    """'capped: capped.', 'jigsaw: jigsaw.': the registry's one-line summary now."""
    s = _summary()
    compared = compare_story(META, [("linear", "none", s), ("capped", "none", s), ("jigsaw", "none", s)], {}).compared
    capped = next(c for c in compared if c.startswith("capped:"))
    jigsaw = next(c for c in compared if c.startswith("jigsaw:"))
    assert capped != "capped: capped." and "leaf_cap" in capped, capped
    assert jigsaw != "jigsaw: jigsaw." and "uplink columns" in jigsaw, jigsaw


def test_a_snapshot_caption_gives_its_instant_as_its_figure_does(tmp_path):
    """The caption gave 't = 4127299 s' (the log's clock) and the figure 'day 9, 19:32
    after the first submit': two readings of one instant with nothing joining them."""
    import re

    from toposched.compare import build_report, run_compare

    trace = _swf(tmp_path / "late.swf", [(1, 90000, 7200, 4), (2, 93600, 7200, 6)])
    run_compare(trace, "toy18", tmp_path / "cmp", allocs=["linear"], scenarios=["none"], jobs=1)
    page = build_report(tmp_path / "cmp").read_text()
    caps = re.findall(r"<figcaption>(linear at peak busy nodes[^<]*)", page)
    # peak: both jobs run from 93,600 s (day 1, 02:00 of the log), 1 h after the first submit
    assert caps and "t = 93,600 s: day 0, 01:00 after the first submit" in caps[0], caps


def test_a_fabric_of_unequal_leaves_is_not_said_to_have_leaves_of_the_largest_size():
    """A Slurm topology.conf with leaves of 102, 100 and 32 nodes: 'Fabric ...: 234 nodes,
    3 leaf switches of 102 nodes, 1 pods' (the largest leaf's size given as every leaf's)."""
    import re
    from pathlib import Path

    from toposched.reporting.figures import CompareData, RunData
    from toposched.reporting.html import _inputs_section
    from toposched.topology import load_fabric

    conf = Path(__file__).parent / "data" / "slurm" / "ubccr_medium-cluster_topology.conf"
    fab = load_fabric(str(conf)).describe()
    fab = {k: v for k, v in fab.items() if k not in ("node_names",)}
    line = next(c for c in compare_story(META, [("linear", "none", _summary())], fab).compared if c.startswith("Fabric"))
    assert "3 leaf switches of 32-102 nodes, 1 pod;" in line, line
    data = CompareData(root=Path("."), meta={"trace": "x.swf", "system": str(conf)}, runs=[RunData("linear", "none", Path("."), "runs/l", {"input": {}}, "#000")])
    data.__dict__["fabric"] = fab
    row = dict(re.findall(r"<tr><th>([^<]*)</th><td>([^<]*)</td></tr>", _inputs_section(data)))["fabric"]
    assert "3 leaves of 32-102 nodes, 1 pod," in row, row


def test_the_contention_page_does_not_give_unequal_leaves_the_largest_size():
    """Leaves of 102, 100 and 32 nodes: the page said '234 nodes on 3 leaves of 102'."""
    import html

    from toposched.reporting.contention import build_report

    doc = {"schedule": {"name": "x", "jobs": 88, "nodes": 234, "leaves": 3, "nodes_per_leaf": 102, "full_uplinks": 102,
                        "uplinks_per_leaf_as_built": 102, "cores_per_node": 8, "notes": []},
           "exposed_jobs": 8, "leaf_demand": {"peak_uplinks": 26, "stretches": 16}, "uplink_sweep": []}
    page = html.unescape(build_report(doc, {}))
    assert "234 nodes on 3 leaves of up to 102" in page and "3 leaves of 102" not in page


def test_equal_waits_get_no_difference_and_one_running_job_is_one_job(tmp_path):
    """'at or below the baseline's (by 0 s)' for equal waits; '1 running jobs' in a
    snapshot caption."""
    import re

    from toposched.compare import build_report, run_compare

    same = _summary(wait=0.0)
    line = next(v for v in compare_story(META, [("linear", "none", same), ("isolated", "none", same), ("isolated", "ta10", same)], {}).verdict if v.startswith("With ta10"))
    assert "(by 0 s)" not in line, line
    trace = _swf(tmp_path / "one.swf", [(1, 0, 600, 6)])
    run_compare(trace, "toy18", tmp_path / "cmp", allocs=["linear"], scenarios=["none"], jobs=1)
    caps = re.findall(r"<figcaption>(linear at peak[^<]*)", build_report(tmp_path / "cmp").read_text())
    assert caps and ": 1 running job, 6 busy nodes" in caps[0], caps


def test_the_frontier_points_table_says_which_columns_ran_with_the_network_model():
    """Each point ran without the model (utilization lost, busy utilization) and with it
    (interference, useful utilization, mean wait): the page's table marked only one
    column 'open loop' and gave 'mean wait (h)' with no word of which run it is."""
    from toposched.reporting.frontier import frontier_rows

    doc = _frontier_doc()
    for p in doc["points"]:
        p.update(open_busy_utilization=0.33, useful_utilization=0.33)
        p["vs_baseline"].update(interference_removed=0.5, useful_gain_pts=0.0, wait_ratio=1.0)
    cols, _ = frontier_rows(doc)
    assert "mean wait, with the model (h)" in cols and "wait ratio, with the model" in cols, cols
    assert "interference, with the model (node-h)" in cols and "useful util., with the model (%)" in cols, cols
    assert "utilization lost, without the model (pts)" in cols and "busy util., without the model (%)" in cols, cols

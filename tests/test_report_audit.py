"""What the reports claim is true of the runs' own files: the verdict sentences, the
figures and the printed tables checked against numbers computed here from the summaries
and the runs' Parquet files, on the edge cases a site meets (no job replayed, equal
values, a wide comparison on an 80-column terminal)."""

from __future__ import annotations

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

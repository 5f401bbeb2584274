"""normalize(): each rule changes or leaves out exactly the jobs it names, and counts them."""

from __future__ import annotations

import numpy as np

from toposched.workload.normalize import NormalizeSettings, normalize


def raw(**cols):
    n = len(next(iter(cols.values())))
    base = {k: np.full(n, -1) for k in ("job_id", "submit_s", "runtime_s", "walltime_s", "procs_alloc", "procs_req", "nodes_alloc")}
    base["job_id"] = np.arange(n)
    base["line"] = np.arange(1, n + 1)
    base.update({k: np.asarray(v) for k, v in cols.items()})
    return base


def test_every_rule_counts_what_it_does():
    r = raw(
        submit_s=[5, 3, 4, -1, 6, 7, 8],
        runtime_s=[10, -1, 10, 10, 10, 30, 10],
        walltime_s=[20, 20, -1, 20, 0, 20, 20],
        procs_alloc=[8, 4, -1, 4, 4, 4, -1],
        procs_req=[8, 4, 6, 4, 4, 4, -1],
    )
    w = normalize(r, source="x", fmt="t", settings=NormalizeSettings(cores_per_node=4), records=7)
    assert w.skipped == {"unknown_runtime": 1, "unknown_submit": 1, "unknown_size": 1}
    assert w.repairs == {"size_from_requested": 1, "nodes_rounded_up": 1, "walltime_from_runtime": 2, "submit_unsorted": 1}
    assert len(w) + sum(w.skipped.values()) == w.records
    assert w["job_id"].tolist() == [2, 0, 4, 5]
    assert w["nodes"].tolist() == [2, 2, 1, 1]
    assert w["walltime_s"].tolist() == [10, 20, 10, 20]
    assert w["runtime_s"].tolist() == [10, 10, 10, 30]  # over the limit: left for the engine


def test_missing_walltime_default_and_runtime_zero():
    r = raw(submit_s=[0, 0], runtime_s=[-1, 5], walltime_s=[-1, -1], procs_alloc=[1, 1])
    s = NormalizeSettings(missing_walltime=3600, missing_runtime="zero")
    w = normalize(r, source="x", fmt="t", settings=s, records=2)
    assert w["walltime_s"].tolist() == [3600, 3600]
    assert w["runtime_s"].tolist() == [0, 5]
    assert w.repairs == {"runtime_set_zero": 1, "walltime_set_default": 2}


def test_sort_is_stable_and_counted():
    r = raw(submit_s=[3, 1, 1, 2], runtime_s=[1, 1, 1, 1], walltime_s=[1, 1, 1, 1], procs_alloc=[1, 1, 1, 1])
    w = normalize(r, source="x", fmt="t", settings=NormalizeSettings(), records=4)
    assert w["job_id"].tolist() == [1, 2, 3, 0]
    assert w.repairs == {"submit_unsorted": 1}

"""`capped` (docs/policies.md, docs/semantics.md): on the bundled Atlas log, caps of 1 give
isolated's schedule job by job under EASY and conservative, larger caps are kept at every
instant (checked from the output, not from the policy), and the CLI, compare and sweeps take
its options from the registry."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pyarrow as pa

from toposched.nodelists import node_lists
import pytest

from conftest import CTC, EXAMPLE_TRACE
from toposched.check import check_schedule
from toposched.cli import main
from toposched.compare import run_compare
from toposched.simulate import RunConfig, simulate
from toposched.topology import load_fabric
from toposched.workload import read_trace


@pytest.fixture(scope="module")
def atlas():
    return read_trace(EXAMPLE_TRACE), load_fabric("cab")


def schedule(jobs: pa.Table) -> list[tuple]:
    cols = [jobs.column(c).to_pylist() for c in ("job_id", "start_s", "end_s", "alloc_class", "node_ranges")]
    return list(zip(*cols))


def most_sharing(jobs: pa.Table, fabric) -> tuple[int, int]:
    """Most running leaf-spanning jobs on one leaf and pod-spanning jobs in one pod at any
    instant, from start/end times and node ids alone."""
    spec = fabric.describe()
    leaf_of, pod_of_leaf = np.asarray(spec["node_leaf"]), np.asarray(spec["leaf_pod"])
    held = []
    for start, end, nodes in zip(jobs.column("start_s").to_pylist(), jobs.column("end_s").to_pylist(), node_lists(jobs)):
        if start is None or nodes is None or end <= start:
            continue
        leaves = set(leaf_of[nodes].tolist())
        pods = set(pod_of_leaf[list(leaves)].tolist())
        held.append((start, end, leaves if len(leaves) > 1 else set(), pods if len(pods) > 1 else set()))
    # sweep over starts and ends (ends first at one instant: [start, end) intervals)
    events = sorted([(s, 1, i) for i, (s, _, _, _) in enumerate(held)] + [(e, 0, i) for i, (_, e, _, _) in enumerate(held)])
    leaf_n: Counter = Counter()
    pod_n: Counter = Counter()
    most = (0, 0)
    for _, kind, i in events:
        d = 1 if kind else -1
        for leaf in held[i][2]:
            leaf_n[leaf] += d
        for pod in held[i][3]:
            pod_n[pod] += d
        if kind:
            most = (max(most[0], max(leaf_n.values(), default=0)), max(most[1], max(pod_n.values(), default=0)))
    return most


@pytest.mark.parametrize("queue", ["easy", "conservative"])
def test_caps_of_one_schedule_the_atlas_log_as_isolated(atlas, queue):
    w, fabric = atlas
    iso = simulate(w, fabric, RunConfig(queue=queue, alloc="isolated"))
    one = simulate(w, fabric, RunConfig(queue=queue, alloc="capped", policy_options={"leaf_cap": 1, "pod_cap": 1}))
    assert schedule(one.jobs) == schedule(iso.jobs)
    assert check_schedule(one.jobs, fabric.describe(), interference_free=True) == []


@pytest.mark.parametrize("caps", [(2, 1), (3, 2)])
def test_caps_hold_at_every_instant_on_the_atlas_log(atlas, caps):
    w, fabric = atlas
    k, m = caps
    r = simulate(w.take(np.arange(6000)), fabric, RunConfig(queue="easy", alloc="capped", policy_options={"leaf_cap": k, "pod_cap": m}))
    assert check_schedule(r.jobs, fabric.describe()) == []
    leaf, pod = most_sharing(r.jobs, fabric)
    assert leaf <= k and pod <= m, (leaf, pod)
    assert leaf == k, "Atlas on Cab has enough leaf-spanning jobs to reach the leaf cap"
    iso = simulate(w.take(np.arange(6000)), fabric, RunConfig(queue="easy", alloc="isolated"))
    assert most_sharing(iso.jobs, fabric) == (1, 1)


def test_cli_flags_come_from_the_registry(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["simulate", "--trace", str(CTC), "--system", "fattree:K=20,S=5,P=4", "--alloc", "capped", "--leaf-cap", "2", "--pod-cap", "1", "--out", str(out), "--quiet"])
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"]["alloc"] == "capped"
    assert summary["policy"]["policy_options"] == {"leaf_cap": 2, "pod_cap": 1}
    with pytest.raises(SystemExit) as e:
        main(["simulate", "--trace", str(CTC), "--system", "fattree:K=20,S=5,P=4", "--alloc", "capped", "--leaf-cap", "0", "--out", str(out)])
    assert e.value.code == 2
    assert "--leaf-cap: must be at least 1" in capsys.readouterr().err
    # an option of capped with another policy is refused, naming capped
    assert main(["simulate", "--trace", str(CTC), "--system", "fattree:K=20,S=5,P=4", "--alloc", "isolated", "--pod-cap", "2", "--out", str(out)]) == 2
    assert "capped" in capsys.readouterr().err


def test_compare_gives_capped_options_to_capped_runs_only(tmp_path):
    r = run_compare(CTC, "fattree:K=20,S=5,P=4", tmp_path, allocs=["isolated", "capped"], scenarios=["none"], jobs=1, run_options={"policy_options": {"leaf_cap": 1, "pod_cap": 1}})
    runs = {x["alloc"]: x["summary"] for x in r.document["runs"]}
    assert runs["capped"]["policy"]["policy_options"] == {"leaf_cap": 1, "pod_cap": 1}
    assert not runs["isolated"]["policy"].get("policy_options")
    assert runs["capped"]["wait_s"] == runs["isolated"]["wait_s"], "caps of 1 are isolated"


def test_an_option_beyond_its_rust_type_is_refused_naming_its_flag(tmp_path, capsys):
    """leaf_cap is a u32 in the core: 99999999999 reached the engine, which refused it as
    "settings: capped: invalid value: integer `99999999999`, expected u32", naming no flag;
    frontier ran both runs of the point and failed them after the others. Now it is
    refused where it is read: by the flag, the --policies grid and RunConfig, naming them."""
    from toposched.config import RunConfig
    from toposched.errors import InputError
    from toposched.frontier import expand_grid
    from toposched.registry import option
    from toposched.simulate import simulate
    from toposched.topology import load_fabric
    from toposched.workload import read_trace

    u32_max = 4_294_967_295  # leaf_cap: u32 (crates/toposched-core, the capped policy's options)
    assert option("leaf_cap").maximum == u32_max and option("leaf_cap").minimum == 1
    base = ["--trace", str(EXAMPLE_TRACE), "--system", "cab", "--quiet"]
    with pytest.raises(SystemExit) as usage:
        main(["simulate", *base, "--out", str(tmp_path / "s"), "--alloc", "capped", "--leaf-cap", str(u32_max + 1)])
    err = capsys.readouterr().err
    assert usage.value.code == 2 and f"argument --leaf-cap: must be at most 2^32 - 1, got {u32_max + 1}" in err, err
    assert main(["frontier", *base, "--out", str(tmp_path / "f"), "--policies", "linear", f"capped:leaf_cap=2+{u32_max + 1}"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: --policies: 'capped:leaf_cap=2+{u32_max + 1}': option leaf_cap: must be at most 2^32 - 1, got {u32_max + 1}\n"
    assert not (tmp_path / "f").exists()  # before any run
    assert [p.label for p in expand_grid([f"capped:leaf_cap={u32_max}"])] == [f"capped(leaf_cap={u32_max})"]
    w = read_trace(EXAMPLE_TRACE).take(np.arange(50))
    with pytest.raises(InputError) as exc:
        simulate(w, load_fabric("cab"), RunConfig(alloc="capped", policy_options={"leaf_cap": u32_max + 1}))
    assert str(exc.value) == f"--leaf-cap: must be at most 2^32 - 1, got {u32_max + 1}"
    # the largest value is one: it runs
    assert simulate(w, load_fabric("cab"), RunConfig(alloc="capped", policy_options={"leaf_cap": u32_max})).jobs.num_rows == 50
    # and a sweep file's [run] value, before any run
    toml = tmp_path / "big.toml"
    toml.write_text(f'[[workloads]]\ntrace = "{EXAMPLE_TRACE}"\n[[fabrics]]\nsystem = "cab"\n[policies]\nalloc = "capped"\n[run]\nleaf_cap = {u32_max + 1}\n')
    capsys.readouterr()
    assert main(["sweep", str(toml), "--out", str(tmp_path / "o"), "--dry-run"]) == 2
    # (the line of the key in the file: leaf_cap is on line 8)
    assert capsys.readouterr().err == f"error: {toml}:8: run.leaf_cap: must be at most 2^32 - 1, got {u32_max + 1}\n"

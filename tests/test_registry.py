"""The policy registry (crates/toposched-core/src/registry.rs, toposched.registry): the CLI,
the sweep validation and docs/policies.md all come from it, and options reach only the
policy that declares them."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import EXAMPLE_TRACE
from toposched import _core, registry
from toposched.cli import main
from toposched.commands import simulate as simulate_cmd
from toposched.errors import InputError
from toposched.nodelists import node_lists
from toposched.simulate import RunConfig, policy_options, simulate
from toposched.topology import load_fabric
from toposched.workload.model import Workload

DOCS = Path(__file__).resolve().parent.parent / "docs" / "policies.md"


def test_docs_catalogue_is_the_registry():
    """docs/policies.md carries the generated catalogue, unchanged: regenerate it with
    `python -m toposched.registry docs/policies.md` after changing a policy."""
    text = DOCS.read_text()
    assert registry.DOCS_BEGIN in text
    assert registry.docs_with_catalogue(text) == text, "docs/policies.md drifted from _core.policies(): run python -m toposched.registry docs/policies.md"


def test_registry_lists_the_engine_names_and_option_names_are_unique():
    assert registry.queue_names() == tuple(_core.QUEUES)
    assert registry.alloc_names() == tuple(_core.ALLOCATORS)
    names = [o.name for o in registry.options()]
    assert len(names) == len(set(names))
    for p in registry.policies():
        assert p.summary and p.doc, p.name
        for o in p.options:
            assert o.description, (p.name, o.name)


def test_the_documented_flags_keep_their_spellings_and_values():
    """The flags users have scripts for, with the values they had before the registry."""
    want = {
        "--leaf-order": ("isolated", ("flux-topo", "paper")),
        "--tie-break": ("isolated", ("name", "index")),
        "--slurm-profile": ("slurm-tree", ("current", "classic", "select-linear", "cons-tres")),
        "--flux-window": ("easy", None),
        "--reserved-tiers-always": ("easy", None),
        "--seed": ("random", None),
    }
    got = {o.flag: (o.policy, o.choices) for o in registry.options()}
    for flag, expected in want.items():
        assert got[flag] == expected, flag


def test_every_option_is_a_cli_flag_of_simulate():
    parser = argparse.ArgumentParser()
    simulate_cmd.add_arguments(parser)
    flags = {s for a in parser._actions for s in a.option_strings}
    for o in registry.options():
        assert o.flag in flags, o.flag
    args = parser.parse_args(["--trace", "x", "--system", "cab", "--out", "o", "--alloc", "isolated", "--leaf-order", "paper", "--flux-window"])
    assert args.leaf_order == "paper" and args.flux_window is True
    with pytest.raises(SystemExit):
        parser.parse_args(["--trace", "x", "--system", "cab", "--out", "o", "--leaf-order", "sideways"])


def test_every_option_states_a_readable_default_in_the_help():
    """Options whose default is the empty string (--partitions, --priority-qos, ...) read
    "(default: )" in simulate --help."""
    parser = argparse.ArgumentParser()
    simulate_cmd.add_arguments(parser)
    text = parser.format_help()
    assert "(default: )" not in text and "--partitions VALUE" in text
    assert "(default: empty)" in " ".join(a.help for a in parser._actions if "--partitions" in a.option_strings)


def test_an_option_of_a_policy_not_in_use_is_one_clear_error(tmp_path, capsys):
    code = main(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--alloc", "linear", "--leaf-order", "paper", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code != 0
    assert "--leaf-order" in err and "isolated" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    code = main(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--queue", "fcfs", "--alloc", "isolated", "--flux-window", "--out", str(tmp_path / "p")])
    err = capsys.readouterr().err
    assert code != 0 and "--flux-window" in err and "easy" in err


def _jobs():
    return dict(
        job_id=np.array([1, 2, 3], dtype=np.int64),
        submit_s=np.array([0, 0, 5], dtype=np.int64),
        nodes=np.array([4, 12, 2], dtype=np.int64),
        walltime_s=np.array([100, 100, 50], dtype=np.int64),
        runtime_s=np.array([60, 80, 40], dtype=np.int64),
    )


def test_binding_routes_options_and_names_the_owner_of_a_misplaced_one():
    topo = _core.Topology.preset("toy18")
    j = _jobs()
    cols = (j["job_id"], j["submit_s"], j["nodes"], j["walltime_s"], j["runtime_s"])
    sim = _core.Simulation(topo, *cols, queue="easy", alloc="isolated", options={"leaf_order": "paper", "flux_window": True})
    assert sim.step()
    with pytest.raises(ValueError, match="leaf_order.*isolated"):
        _core.Simulation(topo, *cols, queue="easy", alloc="linear", options={"leaf_order": "paper"})
    with pytest.raises(ValueError, match="isolated: unknown variant `sideways`"):
        _core.Simulation(topo, *cols, queue="easy", alloc="isolated", options={"leaf_order": "sideways"})
    with pytest.raises(ValueError, match="unknown policy option"):
        _core.Simulation(topo, *cols, alloc="linear", options={"leaf_odrer": "paper"})
    with pytest.raises(ValueError, match="easy: invalid type"):
        _core.Simulation(topo, *cols, queue="easy", options={"flux_window": "yes"})


def test_runconfig_passes_only_the_options_of_the_runs_policies():
    assert policy_options(RunConfig(queue="easy", alloc="isolated", leaf_order="paper")) == {
        "flux_window": False,
        "reserved_tiers_always": False,
        "leaf_order": "paper",
        "tie_break": "name",
    }
    assert policy_options(RunConfig(queue="fcfs", alloc="random", seed=4, leaf_order="paper")) == {"seed": 4}
    with pytest.raises(InputError, match="--flux-window.*easy"):
        policy_options(RunConfig(queue="fcfs", alloc="linear", policy_options={"flux_window": True}))
    with pytest.raises(InputError, match="unknown policy option"):
        policy_options(RunConfig(policy_options={"nope": 1}))


def test_registry_options_change_schedules_as_the_old_keywords_did():
    """Same run through RunConfig fields and through policy_options: same schedule; and the
    option matters (paper vs flux-topo T3 leaf order differ on this workload)."""
    rng = np.random.default_rng(3)
    n = 60
    cols = {
        "job_id": np.arange(1, n + 1),
        "submit_s": np.sort(rng.integers(0, 2000, n)),
        "nodes": rng.integers(1, 700, n),
        "walltime_s": np.full(n, 3600),
        "runtime_s": rng.integers(100, 3600, n),
        "procs": rng.integers(1, 700, n),
        "line": np.arange(1, n + 1),
    }
    cols["procs"] = cols["nodes"]
    w = Workload(columns=cols, source="inline", format="test")
    fabric = load_fabric("cab")
    a = simulate(w, fabric, RunConfig(queue="easy", alloc="isolated", leaf_order="paper"))
    b = simulate(w, fabric, RunConfig(queue="easy", alloc="isolated", leaf_order="flux-topo", policy_options={"leaf_order": "paper"}))
    c = simulate(w, fabric, RunConfig(queue="easy", alloc="isolated"))
    assert node_lists(a.jobs) == node_lists(b.jobs)
    assert node_lists(a.jobs) != node_lists(c.jobs)


class Lowest:
    """Lowest free node ids, written in Python (a copy of linear)."""

    fungible = True

    def select(self, nodes, free):
        return free[:nodes].tolist() if len(free) >= nodes else None


def test_a_python_policy_registers_through_the_same_registry(monkeypatch):
    """Registered under a name, a policy written in Python is listed with the core's, is
    topology-aware for compare, and a run naming it is the run of its module:Class."""
    from toposched.workload import read_trace

    entry = registry.register("test_registry:Lowest", name="py-lowest")
    try:
        assert entry in registry.policies() and "py-lowest" in registry.alloc_names()
        assert entry.fungible is True and entry.summary == "Lowest free node ids, written in Python (a copy of linear)"
        assert registry.topology_aware("py-lowest")
        assert "py-lowest" not in registry.catalogue_markdown()  # the docs list the core's
        w = read_trace(EXAMPLE_TRACE).take(np.arange(400))
        fabric = load_fabric("cab")
        by_name = simulate(w, fabric, RunConfig(queue="easy", alloc="py-lowest"))
        by_path = simulate(w, fabric, RunConfig(queue="easy", alloc="test_registry:Lowest"))
        linear = simulate(w, fabric, RunConfig(queue="easy", alloc="linear"))
        assert by_name.summary["policy"]["alloc"] == "py-lowest"
        assert node_lists(by_name.jobs) == node_lists(by_path.jobs) == node_lists(linear.jobs)
        with pytest.raises(InputError, match="built-in"):
            registry.register("test_registry:Lowest", name="linear")
    finally:
        registry.unregister("py-lowest")
    assert "py-lowest" not in registry.alloc_names()
    # packages register theirs through the entry point group toposched.policies
    monkeypatch.setattr(registry, "_entry_point_policies", lambda: (("ep-lowest", "test_registry:Lowest"),))
    try:
        assert "ep-lowest" in registry.alloc_names()
    finally:
        registry.unregister("ep-lowest")


def test_a_registered_python_policy_runs_on_worker_processes(tmp_path):
    """registry.register(...) then run_compare(..., jobs=2) (or run_frontier): the runs of
    the registered name went to worker processes that had never heard of it, and failed
    with 'unknown allocation policy "py-lowest"'. Each run now carries the name's
    module:Class to its worker; the result is the one of the same policy run in-process."""
    from toposched.compare import run_compare

    registry.register("test_registry:Lowest", name="py-lowest")
    try:
        opts = dict(allocs=["linear", "py-lowest"], scenarios=["none"], transforms=["days:2"])
        pooled = run_compare(EXAMPLE_TRACE, "cab", tmp_path / "pool", jobs=2, **opts)
        here = run_compare(EXAMPLE_TRACE, "cab", tmp_path / "here", jobs=1, **opts)
    finally:
        registry.unregister("py-lowest")
    assert [r["summary"]["policy"]["alloc"] for r in pooled.document["runs"]] == ["linear", "py-lowest"]
    for name in ("linear__none", "py-lowest__none"):
        a = pq.read_table(tmp_path / "pool" / "runs" / name / "jobs.parquet")
        b = pq.read_table(tmp_path / "here" / "runs" / name / "jobs.parquet")
        assert node_lists(a) == node_lists(b) and a.column("start_s").to_pylist() == b.column("start_s").to_pylist()


def test_the_compare_docs_name_every_policy_compare_takes():
    """docs/compare.md's option table named linear, random, isolated, slurm-tree for
    --allocs and easy, fcfs, conservative for --queue: policies added since were missing."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "compare.md").read_text()
    allocs_row = next(line for line in text.splitlines() if line.startswith("| `--allocs A,B` |"))
    queue_row = next(line for line in text.splitlines() if line.startswith("| `--queue Q` |"))
    assert [a for a in registry.alloc_names() if f"`{a}`" not in allocs_row] == []
    assert [q for q in registry.queue_names() if f"`{q}`" not in queue_row] == []


class NotAnAllocator:
    """Orders the queue (a QueueOrder, not an allocation policy)."""

    def key(self, job_id, submit_s, nodes, walltime_s, now_s):
        return nodes


def test_register_refuses_what_no_run_could_use_by_that_name():
    """register(...) took 'as-logged' (the as-logged replay ran instead of the policy, which
    never ran), a name with a comma (compare --allocs splits it), a class without select
    (each run naming it then failed) and an instance (AttributeError: no 'partition')."""
    cases = [
        (("test_registry:Lowest",), {"name": "as-logged"}, "name of a built-in policy"),
        (("test_registry:Lowest",), {"name": "low,est"}, "needs a name of letters"),
        (("test_registry:Lowest",), {"name": "low est"}, "needs a name of letters"),
        (("test_registry:NotAnAllocator",), {"name": "order"}, "has no select"),
        ((Lowest(),), {"name": "low"}, "import path 'module:Class'"),
    ]
    for args, kwargs, words in cases:
        with pytest.raises(InputError, match=words):
            registry.register(*args, **kwargs)
        assert kwargs["name"] not in registry.alloc_names()


def test_a_broken_installed_entry_point_is_left_out_with_a_warning_not_an_error_everywhere(monkeypatch, capsys):
    """One installed package's entry point named 'linear' (or naming a module that fails to
    import) made every command listing the policies fail (simulate --help, compare, sweeps)
    with 'policy: mod:X: 'linear' is the name of a built-in policy', naming no package."""
    monkeypatch.setattr(registry, "_entry_point_policies", lambda: (("linear", "test_registry:Lowest"), ("gone", "nosuchmodule:X"), ("ep-ok", "test_registry:Lowest")))
    monkeypatch.setattr(registry, "_BROKEN_ENTRY_POINTS", set())
    try:
        with pytest.warns(UserWarning) as caught:
            names = registry.alloc_names()
        assert "ep-ok" in names and "gone" not in names and names.count("linear") == 1
        text = " | ".join(str(w.message) for w in caught)
        assert "entry point 'linear = test_registry:Lowest' (group toposched.policies) is left out" in text
        assert "entry point 'gone = nosuchmodule:X'" in text and "cannot import module 'nosuchmodule'" in text
        with pytest.raises(SystemExit) as done:
            main(["simulate", "--help"])
        assert done.value.code == 0 and "ep-ok" in capsys.readouterr().out
    finally:
        registry.unregister("ep-ok")


def test_a_name_taken_by_another_class_is_refused_not_replaced(monkeypatch):
    """register('a:X', name='low') then register('b:Y', name='low') replaced the first
    without a word: every run naming 'low' ran Y. Registering the same class again is
    fine, and a call of register may still take over the name of an installed entry point."""
    registry.register("test_registry:Lowest", name="low")
    try:
        assert registry.register("test_registry:Lowest", name="low").python == "test_registry:Lowest"
        with pytest.raises(InputError, match=r"'low' is already the name of test_registry:Lowest; unregister\('low'\) first"):
            registry.register("test_policies:Lowest", name="low")
        assert registry.python_target("low") == "test_registry:Lowest"
    finally:
        registry.unregister("low")
    monkeypatch.setattr(registry, "_entry_point_policies", lambda: (("ep-low", "test_registry:Lowest"),))
    try:
        assert registry.python_target("ep-low") == "test_registry:Lowest"
        registry.register("test_policies:Lowest", name="ep-low")
        assert registry.python_target("ep-low") == "test_policies:Lowest"
    finally:
        registry.unregister("ep-low")


def test_a_worker_runs_the_drivers_class_even_if_an_entry_point_has_the_name(monkeypatch):
    """A worker registered the driver's module:Class only when it did not know the name:
    an installed entry point of the same name (another class) ran there instead."""
    from toposched.sweep.runner import _register_python_policies

    monkeypatch.setattr(registry, "_entry_point_policies", lambda: (("shared", "test_policies:Lowest"),))
    try:
        assert registry.python_target("shared") == "test_policies:Lowest"
        _register_python_policies({"python_policies": {"shared": "test_registry:Lowest"}})
        assert registry.python_target("shared") == "test_registry:Lowest"
        _register_python_policies({"python_policies": {"shared": "test_registry:Lowest"}})  # again: nothing to do
    finally:
        registry.unregister("shared")


def test_a_number_option_out_of_its_range_is_refused_from_python_naming_its_flag():
    """The schema's range of number options (adaptive's slowdown_threshold >= 0) was checked
    for the flags and sweep files but not in RunConfig.policy_options, where -1 reached the
    engine."""
    with pytest.raises(InputError, match=r"--slowdown-threshold: must be at least 0, got -1"):
        policy_options(RunConfig(queue="easy", alloc="adaptive", policy_options={"slowdown_threshold": -1}))
    assert policy_options(RunConfig(queue="easy", alloc="adaptive", policy_options={"slowdown_threshold": 0.5}))["slowdown_threshold"] == 0.5

"""Policies written in Python, called by the Rust engine."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from conftest import EXAMPLE_TRACE
from toposched.check import check_schedule
from toposched.errors import SimulationError
from toposched.nodelists import node_lists
from toposched.policies import AllocationPolicy, QueueOrder
from toposched.simulate import RunConfig, simulate
from toposched.topology import load_fabric
from toposched.workload import read_trace


class Lowest(AllocationPolicy):
    fungible = True

    def select(self, nodes, free):
        return free[:nodes].tolist() if len(free) >= nodes else None


class SmallFirst(QueueOrder):
    def key(self, job_id, submit_s, nodes, walltime_s, now_s):
        return nodes


@pytest.fixture(scope="module")
def atlas():
    return read_trace(EXAMPLE_TRACE).take(np.arange(2500))


@pytest.mark.parametrize("queue", ["fcfs", "easy", "conservative"])
def test_a_python_copy_of_linear_gives_the_linear_schedule(atlas, queue):
    fabric = load_fabric("cab")
    mine = simulate(atlas, fabric, RunConfig(queue=queue, alloc=Lowest()))
    builtin = simulate(atlas, fabric, RunConfig(queue=queue, alloc="linear"))
    assert mine.jobs.column("start_s").to_pylist() == builtin.jobs.column("start_s").to_pylist()
    assert node_lists(mine.jobs) == node_lists(builtin.jobs)
    assert mine.summary["policy"]["alloc"] == "test_policies:Lowest"


def test_a_non_fungible_python_policy_gets_node_set_reservations(atlas):
    class NotFungible(Lowest):
        fungible = False

    fabric = load_fabric("cab")
    r = simulate(atlas, fabric, RunConfig(queue="easy", alloc=NotFungible()))
    assert check_schedule(r.jobs, fabric.describe()) == []


def test_queue_order_reorders(atlas):
    fabric = load_fabric("fattree:K=16,S=4,P=1")  # small: queues build up
    base = simulate(atlas, fabric, RunConfig(queue="fcfs"))
    small = simulate(atlas, fabric, RunConfig(queue="fcfs", queue_order=SmallFirst()))
    assert small.summary["policy"]["queue_order"].endswith("SmallFirst")
    assert small.summary["wait_s"]["mean"] < base.summary["wait_s"]["mean"]
    assert check_schedule(small.jobs, fabric.describe()) == []


class Busy(AllocationPolicy):
    def setup(self, fabric):
        self.n = fabric.n_nodes

    def select(self, nodes, free):
        return list(range(nodes))  # ignores `free`: soon returns busy nodes


class Short(AllocationPolicy):
    def select(self, nodes, free):
        return free[: max(nodes - 1, 0)].tolist() if nodes > 1 else free[:1].tolist()


class Raises(AllocationPolicy):
    def select(self, nodes, free):
        raise ZeroDivisionError("oops")


class Floats(AllocationPolicy):
    def select(self, nodes, free):
        return [float(n) for n in free[:nodes]]


class Bools(AllocationPolicy):
    def select(self, nodes, free):
        return [True] * nodes  # True was taken as node 1


class Text(AllocationPolicy):
    def select(self, nodes, free):
        return "0-3"


@pytest.mark.parametrize(
    "policy,words",
    [
        (Busy(), ["which is busy"]),
        (Short(), ["instead of"]),
        (Raises(), ["ZeroDivisionError", "oops"]),
        # "must return a list of node ids or None, not list" for a list of floats
        (Floats(), ["must return a list of int node ids or None, not a list holding float 0.0"]),
        (Bools(), ["not a list holding bool True"]),
        (Text(), ["not str '0-3'"]),
    ],
    ids=["busy-node", "wrong-count", "exception", "floats", "bools", "text"],
)
def test_invalid_answers_stop_the_run_with_a_clear_error(atlas, policy, words):
    with pytest.raises(SimulationError) as err:
        simulate(atlas, load_fabric("cab"), RunConfig(alloc=policy))
    msg = str(err.value)
    assert msg.startswith("allocation policy ")
    for w in words:
        assert w in msg, msg


def test_cli_loads_a_policy_by_import_path(tmp_path):
    (tmp_path / "mypol.py").write_text(
        "from toposched.policies import AllocationPolicy\n"
        "class Top(AllocationPolicy):\n"
        "    fungible = True\n"
        "    def select(self, nodes, free):\n"
        "        return free[-nodes:].tolist() if len(free) >= nodes else None\n"
        "class Bad(AllocationPolicy):\n"
        "    def select(self, nodes, free):\n"
        "        return [0] * nodes\n"
    )
    base = [sys.executable, "-m", "toposched.cli", "simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--out"]
    ok = subprocess.run(base + [str(tmp_path / "o"), "--alloc", "mypol:Top", "--quiet"], cwd=tmp_path, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(base + [str(tmp_path / "b"), "--alloc", "mypol:Bad"], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2
    assert "error: allocation policy Bad" in bad.stderr
    assert "Traceback" not in bad.stderr
    missing = subprocess.run(base + [str(tmp_path / "m"), "--alloc", "nosuch:X"], cwd=tmp_path, capture_output=True, text=True)
    assert missing.returncode == 2 and "cannot import module 'nosuch'" in missing.stderr


def test_a_policy_module_that_fails_lacks_its_method_or_fails_setup_is_the_users_error(tmp_path, capsys, monkeypatch):
    """These were "internal error: ... (a bug in toposched: ...)", status 1."""
    from toposched.cli import main

    (tmp_path / "polboom.py").write_text("raise RuntimeError('boom at import')\n")
    (tmp_path / "polshapes.py").write_text(
        "class NoSelect:\n    pass\n"
        "class SetupFails:\n    def setup(self, fabric):\n        raise KeyError('nope')\n    def select(self, nodes, free):\n        return None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    cases = [
        (["--alloc", "polboom:P"], "error: policy 'polboom:P': importing module 'polboom' failed: RuntimeError: boom at import"),
        (["--alloc", "polshapes:NoSelect"], "error: policy polshapes:NoSelect: has no select(nodes, free) method (docs/python-policies.md)"),
        (["--queue-order", "polshapes:NoSelect"], "error: policy polshapes:NoSelect: has no key(job_id, submit_s, nodes, walltime_s, now_s) method (docs/python-policies.md)"),
        (["--alloc", "polshapes:SetupFails"], "error: policy polshapes:SetupFails: setup(fabric) raised KeyError: 'nope'"),
    ]
    for flags, expect in cases:
        code = main(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", *flags, "--out", str(tmp_path / "o"), "--quiet"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and err == [expect], (flags, err)


def test_jobs_larger_than_the_machine_are_skipped_for_python_policies_too():
    w = read_trace(EXAMPLE_TRACE).take(np.arange(300))
    fabric = load_fabric("fattree:K=8,S=2,P=1")  # 16 nodes: many Atlas jobs are larger
    for queue in ("easy", "conservative"):
        r = simulate(w, fabric, RunConfig(queue=queue, alloc=Lowest()))
        assert len(r.skipped) > 0 and len(r.jobs) + len(r.skipped) == len(w)
        assert all("the machine has 16" in why for why in r.skipped.column("reason").to_pylist())


def test_a_policy_that_never_places_a_job_stops_conservative_cleanly():
    class Never(AllocationPolicy):
        fungible = False

        def select(self, nodes, free):
            return None if nodes > 4 else free[:nodes].tolist()

    w = read_trace(EXAMPLE_TRACE).take(np.arange(300))
    with pytest.raises(SimulationError, match="never places it"):
        simulate(w, load_fabric("cab"), RunConfig(queue="conservative", alloc=Never()))


def test_a_class_a_factory_giving_a_name_or_a_bare_queue_order_name_is_one_clear_error(tmp_path, capsys, monkeypatch):
    """RunConfig(alloc=Lowest) (the class) failed in setup() as "policy builtins:type:
    ... missing 1 required positional argument: 'fabric'"; "mod:function" returning a
    string was run as the built-in of that name ("unknown allocation policy '/work/...'");
    --queue-order sjf (no built-in queue orders exist) was "internal error: TypeError"."""
    from toposched.cli import main
    from toposched.errors import InputError, ToposchedError

    w = read_trace(EXAMPLE_TRACE).take(np.arange(50))
    fabric = load_fabric("cab")
    with pytest.raises(ToposchedError, match=r"pass an instance, Lowest\(\), not the class"):
        simulate(w, fabric, RunConfig(alloc=Lowest))
    with pytest.raises(ToposchedError, match=r"pass an instance, SmallFirst\(\), not the class"):
        simulate(w, fabric, RunConfig(queue_order=SmallFirst))
    with pytest.raises(ToposchedError, match=r"getcwd\(\) gave str .*not a policy object"):
        simulate(w, fabric, RunConfig(alloc="os:getcwd"))
    with pytest.raises(InputError, match="field 'queue_order': expected None, a 'module:Class' string"):
        RunConfig(queue_order="sjf")
    with pytest.raises(SystemExit) as done:  # a usage error, as argparse exits
        main(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--queue-order", "sjf", "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "argument --queue-order: expected MODULE:CLASS" in err and "internal error" not in err


def test_attributes_the_engine_reads_of_the_wrong_type_are_one_clear_error():
    """name = 5 or fungible = "yes" ended in a bare TypeError from the binding ("'int'
    object cannot be converted to 'PyString'": an internal error on the command line), and
    a fits_ever that is no method made every job a skipped "fits_ever raised TypeError"."""
    from toposched.errors import ToposchedError

    w = read_trace(EXAMPLE_TRACE).take(np.arange(50))
    fabric = load_fabric("cab")
    for attrs, words in [
        ({"name": 5}, "its name must be a non-empty string or None, got 5"),
        ({"name": ""}, "its name must be a non-empty string or None, got ''"),
        ({"fungible": "yes"}, "fungible must be True or False, got 'yes'"),
        ({"fungible": None}, "fungible must be True or False, got None"),
        ({"fits_ever": 16}, "fits_ever must be a method fits_ever(nodes), got 16"),
    ]:
        policy = type("Odd", (Lowest,), attrs)()
        with pytest.raises(ToposchedError) as err:
            simulate(w, fabric, RunConfig(alloc=policy))
        assert words in str(err.value), err.value
    ok = simulate(w, fabric, RunConfig(alloc=type("Named", (Lowest,), {"name": "lowest", "fungible": np.bool_(True)})()))
    assert ok.summary["policy"]["alloc"] == "lowest" and len(ok.jobs) == 50


def test_a_subclass_without_its_method_is_told_so_before_the_run():
    """A subclass of AllocationPolicy or QueueOrder that does not define select or key ran
    until the first call, which stopped it with 'raised NotImplementedError:' and a
    traceback into toposched/policies.py."""
    from toposched.errors import ToposchedError

    w = read_trace(EXAMPLE_TRACE).take(np.arange(50))
    fabric = load_fabric("cab")
    with pytest.raises(ToposchedError, match=r"does not define select\(nodes, free\), which AllocationPolicy leaves to subclasses"):
        simulate(w, fabric, RunConfig(alloc=type("NoSelect", (AllocationPolicy,), {"fungible": True})()))
    with pytest.raises(ToposchedError, match=r"does not define key\(job_id, submit_s, nodes, walltime_s, now_s\), which QueueOrder leaves"):
        simulate(w, fabric, RunConfig(queue_order=QueueOrder()))


class FitsRaises(Lowest):
    def fits_ever(self, nodes):
        raise ValueError("no table of sizes yet")


class FitsForgetsReturn(Lowest):
    def fits_ever(self, nodes):
        nodes <= 64  # noqa: B015 - the forgotten `return` of the test


@pytest.mark.parametrize("policy, words", [(FitsRaises, "fits_ever(1) raised ValueError: no table of sizes yet"), (FitsForgetsReturn, "fits_ever(1) must return True, False or a reason string, not None")])
def test_fits_ever_that_raises_or_answers_nothing_stops_the_run(atlas, policy, words):
    """fits_ever raising (or a forgotten `return`) skipped every job with that as the
    reason, and the run ended as a success with nothing replayed: it now stops the run,
    as a bad answer of select does (docs/python-policies.md)."""
    with pytest.raises(SimulationError) as exc:
        simulate(atlas, load_fabric("cab"), RunConfig(queue="easy", alloc=policy()))
    assert f"allocation policy {policy.__name__}: {words}" in str(exc.value)


class CtrlC(Lowest):
    """Ctrl-C on the 200th call of select (a person stopping a slow policy)."""

    calls = 0

    def select(self, nodes, free):
        CtrlC.calls += 1
        if CtrlC.calls == 200:
            raise KeyboardInterrupt
        return super().select(nodes, free)


class CtrlCKey(SmallFirst):
    calls = 0

    def key(self, job_id, submit_s, nodes, walltime_s, now_s):
        CtrlCKey.calls += 1
        if CtrlCKey.calls == 300:
            raise KeyboardInterrupt
        return nodes


@pytest.mark.parametrize("config", [RunConfig(queue="easy", alloc=CtrlC()), RunConfig(queue="easy", alloc="linear", queue_order=CtrlCKey())], ids=["select", "key"])
def test_ctrl_c_inside_a_python_policy_is_an_interruption(atlas, config):
    """A Ctrl-C while select or key ran became a SimulationError (exit 2, no results), where
    a Ctrl-C between steps gives the jobs finished so far with complete: false (exit 130):
    now the same."""
    CtrlC.calls = CtrlCKey.calls = 0
    r = simulate(atlas, load_fabric("cab"), config)
    assert r.summary["complete"] is False
    assert 0 < r.finished.n_rows < len(atlas)
    assert check_schedule(r, load_fabric("cab")) == []  # what ran before the Ctrl-C is a sound schedule


def test_ctrl_c_inside_a_python_policy_exits_130_with_the_results_so_far(tmp_path):
    """On the command line: exit 130 and the files of the jobs finished so far (complete:
    false), not "error: ... raised KeyboardInterrupt" and exit 2."""
    (tmp_path / "stopper.py").write_text(
        "from toposched.policies import AllocationPolicy\n"
        "class Stop(AllocationPolicy):\n"
        "    fungible = True\n"
        "    calls = 0\n"
        "    def select(self, nodes, free):\n"
        "        Stop.calls += 1\n"
        "        if Stop.calls == 500:\n"
        "            raise KeyboardInterrupt\n"
        "        return free[:nodes].tolist() if len(free) >= nodes else None\n"
    )
    out = tmp_path / "o"
    r = subprocess.run([sys.executable, "-m", "toposched.cli", "simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--alloc", "stopper:Stop", "--out", str(out), "--quiet"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 130, r.stderr
    assert "interrupted" in r.stderr and "Traceback" not in r.stderr
    import json

    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and 0 < summary["jobs"]["replayed"]
    # the progress line said "replaying: done in 0.7 s" for an interrupted replay
    r = subprocess.run([sys.executable, "-m", "toposched.cli", "simulate", "--trace", str(EXAMPLE_TRACE), "--system", "cab", "--alloc", "stopper:Stop", "--out", str(out)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 130 and "replaying: interrupted in" in r.stderr and "replaying: done" not in r.stderr, r.stderr


def test_down_nodes_are_checked_recorded_and_refused_with_as_logged(atlas, tmp_path):
    """simulate(down_nodes=...): -1 said "a policy option is too large", a node beyond the
    fabric likewise; as-logged ignored them silently; summary.json never said which nodes
    were out. Now: one clear error naming down_nodes, a refusal with as-logged, and
    summary["fabric"]["down_nodes"] (the streamed replay too)."""
    from toposched.errors import InputError
    from toposched.stream import simulate_stream

    cab = load_fabric("cab")
    small = atlas.take(np.arange(300))
    for bad in ([-1], [cab.n_nodes], ["cab1"], "0-3", [True]):
        with pytest.raises(InputError, match="down_nodes"):
            simulate(small, cab, RunConfig(queue="easy", alloc="linear"), down_nodes=bad)
    with pytest.raises(InputError, match="as-logged replays the log's own node lists"):
        simulate(small, cab, RunConfig(alloc="as-logged"), down_nodes=[3])
    r = simulate(small, cab, RunConfig(queue="easy", alloc="linear"), down_nodes=[5, 0, 5])
    assert r.summary["fabric"]["down_nodes"] == [0, 5]
    assert not any(0 in nodes or 5 in nodes for nodes in node_lists(r.jobs))
    assert "down_nodes" not in simulate(small, cab, RunConfig(queue="easy", alloc="linear")).summary["fabric"]
    # the streamed replay: the same summary
    log = tmp_path / "a.swf"
    log.write_text("; MaxNodes: 1152\n; MaxProcs: 9216\n" + "".join(f"{i} {10 * i} 0 50 8 -1 -1 8 100 -1 1 1 1 1 1 1 -1 -1\n" for i in range(1, 40)))
    run = simulate_stream(log, cab, RunConfig(queue="easy", alloc="linear"), tmp_path / "o", down_nodes=[0, 5])
    assert run.summary["fabric"]["down_nodes"] == [0, 5]


def test_a_fungible_policy_that_never_places_a_job_is_named():
    """'... this is a policy bug' named no policy (with a policy written in Python the bug
    is the user's): the message names the queue and allocation policies."""

    class Never(AllocationPolicy):
        fungible = True

        def select(self, nodes, free):
            return None if nodes > 4 else free[:nodes].tolist()

    w = read_trace(EXAMPLE_TRACE).take(np.arange(300))
    with pytest.raises(SimulationError, match=r"still queued when nothing was left running .*this is a bug of the policies easy \+ \S*Never:"):
        simulate(w, load_fabric("cab"), RunConfig(queue="easy", alloc=Never()))


def test_a_python_policy_that_does_not_load_stops_a_command_before_the_log_is_read(tmp_path, capsys, monkeypatch):
    """A typo in --alloc/--queue-order module:Class was met only once the whole log was read
    ('replaying: started', then the error); compare with a --queue-order typo started every
    run, each failed on its own, and the command ended with 'error: run linear__none:
    ToposchedError: ... (and 1 more failed runs); traceback in ...', a runs/ directory left
    behind. Each is now one line, before the log is read and before any run starts; a class
    given to the other flag says which flag takes it."""
    from conftest import policy_module
    from toposched.cli import main

    policy_module(tmp_path, monkeypatch, "typopol", "from toposched.policies import AllocationPolicy, QueueOrder\n"
                  "class Pack(AllocationPolicy):\n    fungible = True\n    def select(self, nodes, free):\n        return free[:nodes].tolist()\n"
                  "class Short(QueueOrder):\n    def key(self, job_id, submit_s, nodes, walltime_s, now_s):\n        return walltime_s\n")
    broken = tmp_path / "broken.swf"  # read first, this log would stop the command with its own error
    broken.write_text("; MaxNodes: 16\n; MaxProcs: 16\n1 0 -1 x 4 -1 -1 4 200 -1 1 1 1 -1 1 1 -1 -1\n")
    cases = [
        (["--alloc", "typopol:pack"], "error: policy 'typopol:pack': module 'typopol' has no 'pack'"),
        (["--alloc", "typopl:Pack"], "error: policy 'typopl:Pack': cannot import module 'typopl': No module named 'typopl'"),
        (["--queue-order", "typopol:Shrt"], "error: policy 'typopol:Shrt': module 'typopol' has no 'Shrt'"),
        (["--alloc", "typopol:Short"], "error: policy typopol:Short: has no select(nodes, free) method; it has key(): a queue order, which --queue-order takes (docs/python-policies.md)"),
        (["--queue-order", "typopol:Pack"], "error: policy typopol:Pack: has no key(job_id, submit_s, nodes, walltime_s, now_s) method; it has select(): an allocation policy, which --alloc takes (docs/python-policies.md)"),
    ]
    for flags, expect in cases:
        code = main(["simulate", "--trace", str(broken), "--system", "cab", *flags, "--out", str(tmp_path / "o"), "--quiet"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and err == [expect], (flags, err)
    for flags in (["--queue-order", "typopol:Shrt"], ["--allocs", "linear,typopol:pack"]):
        out = tmp_path / "cmp"
        code = main(["compare", "--trace", str(broken), "--system", "cab", *flags, "--scenarios", "none", "--jobs", "1", "--out", str(out), "--quiet", "--no-report"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and ("has no 'pack'" in err[0] or "has no 'Shrt'" in err[0]), (flags, err)
        assert not (out / "runs").exists()


def test_a_select_that_forgets_its_return_is_named_with_the_job_and_the_likely_cause():
    """A select without `return` (the commonest typo) stopped the run with "N jobs were
    still queued when nothing was left running (first: row 0); this is a bug of the
    policies easy + NoReturn: ...": no job a user can find, no word of select. The line
    now names the job (id, log line, size) and what select answered on the empty machine."""

    class NoReturn(AllocationPolicy):
        def select(self, nodes, free):
            free[:nodes]  # noqa: B018 - the forgotten `return` of the test

    w = read_trace(EXAMPLE_TRACE).take(np.arange(50))
    first = int(w["job_id"][0]), int(w["line"][0]), int(w["nodes"][0])
    with pytest.raises(SimulationError) as e:
        simulate(w, load_fabric("cab"), RunConfig(queue="easy", alloc=NoReturn()))
    msg = str(e.value)
    assert "this is a bug of the policies easy + " in msg and "\n" not in msg
    assert msg.endswith(f"(job {first[0]}, line {first[1]} of the log, {first[2]} node{'s' if first[2] != 1 else ''}: NoReturn.select({first[2]}, free) answered None "
                        "with every node free; a forgotten return? A size it can never place is for fits_ever(nodes) to refuse)"), msg

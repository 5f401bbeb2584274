"""The agent's bookkeeping (no HTTP, no cgroups): random allocate/release sequences, with
the agent re-opened from its SQLite state at random points as after kill -9."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from toposched.node.agent import NodeAgent
from toposched.node.cpulist import parse_cpulist
from toposched.node.hwloc import read_hwloc_xml
from toposched.node.store import AgentStore

from conftest import REPO

CAB = read_hwloc_xml(REPO / "tests" / "data" / "hwloc" / "llnl-cab1234_node_hwloc.xml")
REQS = ["CORES=1", "CORES=3", "CORES=8;WAIT", "PUS=2;SHARED", "CORES=2;MEM_PER_NUMA_MB=6000", "CPU_LIST=4-5", "CORES=20"]

ops = st.lists(st.one_of(
    st.tuples(st.just("alloc"), st.integers(0, 9), st.sampled_from(REQS)),
    st.tuples(st.just("release"), st.integers(0, 9), st.just("")),
    st.tuples(st.just("restart"), st.just(0), st.just("")),
), max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops)
def test_acknowledged_allocations_survive_restarts_and_never_collide(tmp_path_factory, seq):
    state_dir = tmp_path_factory.mktemp("agent")

    def open_agent():
        a = NodeAgent(CAB, AgentStore(state_dir), None, log=lambda m: None)
        a.start()
        return a

    agent = open_agent()
    acked: dict[str, str] = {}  # job -> cpus, as answered
    released: set[str] = set()  # jobs released since their last allocation
    for op, j, req in seq:
        job = f"j{j}"
        if op == "alloc":
            code, body = agent.allocate(job, req)
            if code == 200:
                assert acked.get(job, body["cpus"]) == body["cpus"]
                acked[job] = body["cpus"]
                released.discard(job)
            else:
                assert code in (409, 422)
        elif op == "release":
            code, body = agent.release(job)
            if job in acked:
                assert code == 200 and "already_released" not in body
                released.add(job)
            elif job in released:
                assert code == 200 and body["already_released"]
            else:
                assert code == 404
            acked.pop(job, None)
        else:
            agent.store.close()
            agent = open_agent()
        snap = agent.snapshot()["allocations"]
        assert {k: v["cpus"] for k, v in snap.items()} == acked
        # Exclusive holdings never overlap anything; memory promised never exceeds a domain.
        hs = list(agent.state.holdings.values())
        for a, b in itertools.combinations(hs, 2):
            if a.exclusive or b.exclusive:
                assert not (a.pus & b.pus)
        for n in CAB.numa:
            assert agent.state.numa_free_bytes(n) >= 0
        assert all(parse_cpulist(c) <= frozenset(CAB.pus) for c in acked.values())
    agent.store.close()


def test_a_failed_write_leaves_the_store_writable(tmp_path):
    """An allocation the store could not write (a uid SQLite cannot hold) left the
    connection inside its transaction: every later add and remove failed with "cannot
    start a transaction within a transaction" until the agent was restarted; and the
    failed allocation is not held."""
    import pytest

    agent = NodeAgent(CAB, AgentStore(tmp_path), None, log=lambda m: None)
    agent.start()
    with pytest.raises(OverflowError):
        agent.allocate("big", "CORES=1", uid=2**70)
    assert agent.snapshot()["allocations"] == {}
    assert agent.allocate("a", "CORES=2", uid=1000)[0] == 200
    assert agent.release("a")[0] == 200
    assert agent.allocate("b", "CORES=2")[0] == 200
    agent.store.close()
    again = NodeAgent(CAB, AgentStore(tmp_path), None, log=lambda m: None)
    again.start()
    assert list(again.snapshot()["allocations"]) == ["b"]


@pytest.mark.parametrize(
    "sql, says",
    [
        ("UPDATE allocations SET cpus='zz' WHERE job='a'", "job 'a': cpus 'zz' is not a CPU list"),
        ("UPDATE allocations SET requirement='{bad' WHERE job='a'", "job 'a': requirement or mem_bytes_per_numa is not JSON"),
        ("UPDATE allocations SET mem_bytes_per_numa='5' WHERE job='a'", "job 'a': mem_bytes_per_numa is not a list"),
        ("UPDATE allocations SET cpus='40' WHERE job='a'", "job 'a': cpus 40 or mems 0-1 are not all on this topology"),
        ("UPDATE allocations SET job='a/b' WHERE job='a'", "job 'a/b': job id"),
        # a copy of a's row under another job: both exclusive on the same CPUs
        ("INSERT INTO allocations SELECT 'c', cpus, mems, requirement, exclusive, mem_bytes_per_numa, uid, created_s + 1 FROM allocations WHERE job='a'",
         "job 'c': its CPUs 0-1 are held by job a too"),
    ],
)
def test_a_damaged_state_file_is_refused_in_one_line(tmp_path, sql, says):
    """A node-agent.sqlite edited by hand or damaged: the agent refuses to start naming
    the file, the job's row and the field. It was 'internal error: CpuListError /
    JSONDecodeError / TypeError ... a bug', or worse, loaded: CPUs the node does not have,
    two exclusive jobs on the same CPUs, a job id with a '/' (a cgroup path below another)."""
    import sqlite3

    from toposched.node.store import AgentStateError

    agent = NodeAgent(CAB, AgentStore(tmp_path), None, log=lambda m: None)
    agent.start()
    assert agent.allocate("a", "CORES=2")[0] == 200 and agent.allocate("b", "CORES=2")[0] == 200
    agent.store.close()
    db = sqlite3.connect(tmp_path / "node-agent.sqlite")
    db.execute(sql)
    db.commit()
    db.close()
    store = AgentStore(tmp_path)
    try:
        with pytest.raises(AgentStateError) as e:
            NodeAgent(CAB, store, None, log=lambda m: None).start()
        assert str(e.value).startswith(f"{tmp_path / 'node-agent.sqlite'}: allocations row of ") and says in str(e.value), str(e.value)
    finally:
        store.close()


def test_a_state_file_that_is_no_database_is_one_line(tmp_path):
    from toposched.node.store import AgentStateError

    (tmp_path / "node-agent.sqlite").write_bytes(b"\x00garbage" * 500)
    with pytest.raises(AgentStateError, match=r"--state .*: cannot open node-agent.sqlite: file is not a database"):
        AgentStore(tmp_path)

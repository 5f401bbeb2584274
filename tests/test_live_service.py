"""`toposched serve` (docs/live.md): the documented HTTP API driven against a real service
process; durability across kill -9; auth; malformed input; drained nodes; I1/I2 under
isolated; and the one-code-path claim (the service's table makes the replay's decisions)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE_TRACE
from live_util import ServiceProcess, write_token
from toposched import _core
from toposched.live.table import LiveTable
from toposched.nodelists import lists_from_ranges
from toposched.topology import load_fabric


def check_interference_free(state: dict) -> None:
    """I1/I2 from the allocation table alone, against the fabric's own leaf/pod map."""
    fabric = load_fabric(state["fabric"])
    names = fabric.spec.node_names
    leaf_of = dict(zip(names, (int(x) for x in fabric.core.leaf_of_nodes())))
    pod_of_leaf = [int(x) for x in fabric.core.pod_of_leaves()]
    leaf_owner: dict[int, str] = {}
    pod_owner: dict[int, str] = {}
    for job, nodes in state["allocations"].items():
        leaves = {leaf_of[n] for n in nodes}
        pods = {pod_of_leaf[lf] for lf in leaves}
        if len(leaves) > 1:
            for lf in leaves:
                assert leaf_owner.setdefault(lf, job) == job, f"I1: leaf {lf} hosts {leaf_owner[lf]} and {job}"
        if len(pods) > 1:
            for p in pods:
                assert pod_owner.setdefault(p, job) == job, f"I2: pod {p} hosts {pod_owner[p]} and {job}"


@pytest.fixture
def svc(tmp_path):
    with ServiceProcess(tmp_path / "svc") as s:
        yield s


def test_api_round_trip(svc):
    c = svc.client()
    assert c.request("GET", "/v1/health") == (200, {"status": "ok"})
    code, doc = c.request("GET", "/v1/openapi.json")
    assert code == 200 and doc["openapi"].startswith("3.") and "/v1/allocate" in doc["paths"]
    code, a = c.allocate("a", 40, 100)
    assert code == 200 and len(a["nodes"]) == 40 and len(set(a["nodes"])) == 40
    # retrying the same request gives the same nodes, nothing more is taken
    assert c.allocate("a", 40, 100) == (200, a)
    code, b = c.allocate("b", 70, 100)
    assert code == 409 and b["job"] == "b" and "56 free" in b["reason"] and b["never"] is False
    code, r = c.allocate("b", 70, 100, reserve=True)
    assert code == 202 and len(r["nodes"]) == 70 and 99 <= r["start_estimate_s"] <= 100
    code, n = c.allocate("huge", 97, 10)
    assert code == 409 and n["never"] is True
    code, s = c.call("POST", "/v1/satisfiable", {"nodes": 97})
    assert code == 200 and s["satisfiable"] is False and "96" in s["reason"]
    assert c.call("POST", "/v1/satisfiable", {"nodes": 33})[1]["satisfiable"] is True
    state = c.state()
    assert state["allocations"] == {"a": a["nodes"]} and state["free_nodes"] == 56
    assert state["reservation"]["job"] == "b"
    assert sum(lf["free"] for lf in state["leaves"]) == 56 and len(state["pods"]) == 3
    assert c.release("a") == (200, {"job": "a", "released": True, "nodes": a["nodes"]})
    assert c.release("a") == (200, {"job": "a", "released": False, "note": "already released"})
    assert c.release("nobody")[0] == 404
    assert c.state()["free_nodes"] == 96
    code, text = c.request("GET", "/metrics")
    assert code == 200
    assert 'toposched_decisions_total{outcome="placed"} 1' in text
    assert 'toposched_decisions_total{outcome="reserved"} 1' in text
    assert "toposched_free_nodes 96" in text
    assert 'toposched_request_duration_seconds_count{route="/v1/allocate"}' in text


def test_writes_need_the_token_and_change_nothing_without(svc):
    c = svc.client()
    for token, code in ((None, 401), ("wrong-token-0123456789", 403)):
        bad = svc.client(token)
        assert bad.request("POST", "/v1/allocate", {"job": "x", "nodes": 1, "walltime_s": 1})[0] == code
        assert bad.request("POST", "/v1/nodes/drain", {"nodes": ["hype1"]})[0] == code
        assert bad.request("PUT", "/v1/state", {"allocations": {"y": ["hype2"]}})[0] == code
    assert c.allocate("a", 3, 10)[0] == 200
    assert svc.client(None).request("POST", "/v1/release", {"job": "a"})[0] == 401
    s = c.state()
    assert list(s["allocations"]) == ["a"] and s["drained"] == [] and s["free_nodes"] == 93
    # reads are open, and so is the read-only satisfiable question
    assert svc.client(None).request("GET", "/v1/state")[0] == 200
    assert svc.client(None).request("POST", "/v1/satisfiable", {"nodes": 4})[0] == 200


@pytest.mark.parametrize(
    "body, field",
    [
        ({"nodes": 1, "walltime_s": 1}, "job"),
        ({"job": "a", "walltime_s": 1}, "nodes"),
        ({"job": "a", "nodes": "3", "walltime_s": 1}, "nodes"),
        ({"job": "a", "nodes": True, "walltime_s": 1}, "nodes"),
        ({"job": "a", "nodes": 0, "walltime_s": 1}, "nodes"),
        ({"job": "a", "nodes": 2}, "walltime_s"),
        ({"job": "a", "nodes": 2, "walltime_s": -1}, "walltime_s"),
        ({"job": "a", "nodes": 2, "walltime_s": 1, "reserve": "yes"}, "reserve"),
        ({"job": "a b", "nodes": 2, "walltime_s": 1}, "job"),
        ({"job": "a", "nodes": 2, "walltime_s": 1, "node": 3}, "node"),
        # JSON integers beyond what the core takes: were 500 "internal error: OverflowError"
        ({"job": "a", "nodes": 10**23, "walltime_s": 1}, "nodes"),
        ({"job": "a", "nodes": 2**32, "walltime_s": 1}, "nodes"),
        ({"job": "a", "nodes": 2, "walltime_s": 10**23}, "walltime_s"),
    ],
)
def test_malformed_allocations_name_the_field(svc, body, field):
    c = svc.client()
    code, answer = c.request("POST", "/v1/allocate", body)
    assert code == 400 and answer["field"] == field, answer
    assert c.state()["allocations"] == {}


def test_garbage_never_stops_the_service(svc):
    c = svc.client()
    for raw in (b"{", b"[1,2]", b"\xff\xfe", b"", b"null", b'{"job": "a", "nodes": 1e400, "walltime_s": 1}'):
        assert c.request("POST", "/v1/allocate", raw=raw)[0] == 400
    assert c.request("PUT", "/v1/state", {"allocations": {"a": ["nope1"]}})[0] == 400
    assert c.request("PUT", "/v1/state", {"allocations": {"a": ["hype1"], "b": "hype[1-2]"}})[0] == 400
    assert c.request("POST", "/v1/nodes/drain", {"nodes": "hype[1-"})[0] == 400
    assert c.request("GET", "/v1/nowhere")[0] == 404
    assert c.request("DELETE", "/v1/state")[0] in (404, 405)
    # raw socket junk, a lying Content-Length, a huge one
    host, port = svc.url.split("//")[1].split(":")
    for junk in (b"NOT HTTP\r\n\r\n", b"POST /v1/allocate HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", b"POST /v1/allocate HTTP/1.1\r\nContent-Length: 10\r\n\r\n{}"):
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(junk)
            s.shutdown(socket.SHUT_WR)
            s.recv(4096)
    assert c.request("GET", "/v1/health")[0] == 200
    assert svc.proc.poll() is None


def test_drained_nodes_are_avoided_and_survive_restart(tmp_path):
    s = ServiceProcess(tmp_path / "svc", system="toy18", alloc="linear").start()
    try:
        c = s.client()
        assert c.call("POST", "/v1/nodes/drain", {"nodes": "toy18n[00-02]", "reason": "test"}) == (200, {"changed": ["toy18n00", "toy18n01", "toy18n02"]})
        code, a = c.allocate("a", 4, 10)
        assert code == 200 and not {"toy18n00", "toy18n01", "toy18n02"} & set(a["nodes"])
        # draining a held node: it stays with its job, and is out of service once released
        assert c.call("POST", "/v1/nodes/drain", {"nodes": [a["nodes"][0]]})[0] == 200
        c.release("a")
        code, b = c.allocate("b", 14, 10)
        assert code == 200 and a["nodes"][0] not in b["nodes"] and "toy18n00" not in b["nodes"]
        assert c.allocate("c", 1, 10)[0] == 409
        st_ = c.call("POST", "/v1/satisfiable", {"nodes": 15})[1]
        assert st_["satisfiable"] is True and st_["satisfiable_with_drained_nodes_out"] is False
        s.kill9()
        s.start()
        c = s.client()
        state = c.state()
        assert state["drained"] == sorted(["toy18n00", "toy18n01", "toy18n02", a["nodes"][0]])
        assert state["allocations"] == {"b": b["nodes"]}
        assert c.call("POST", "/v1/nodes/resume", {"nodes": ["toy18n01"]})[1] == {"changed": ["toy18n01"]}
        assert c.allocate("c", 1, 10) == (200, {"job": "c", "nodes": ["toy18n01"]})
    finally:
        s.stop()


@pytest.mark.parametrize("clients", [1, 4])
def test_kill9_keeps_exactly_the_acknowledged_allocations(tmp_path, clients):
    """Clients allocate and release in loops (4 at once: their decisions share commits); the
    service is killed with SIGKILL mid-stream and restarted. Every acknowledged allocation is
    back with its nodes, no acknowledged release came back, and only requests in flight at
    the kill may differ."""
    import time

    s = ServiceProcess(tmp_path / "svc", system="hype", alloc="isolated").start()
    try:
        acked: list[dict[str, list[str]]] = [{} for _ in range(clients)]
        released: list[set[str]] = [set() for _ in range(clients)]
        in_flight: list[list[str]] = [[] for _ in range(clients)]
        stop = threading.Event()

        def work(w: int) -> None:
            c = s.client()
            rng = np.random.default_rng(w)
            i = 0
            while not stop.is_set():
                job = f"w{w}-j{i}"
                in_flight[w][:] = [job]
                try:
                    code, body = c.request("POST", "/v1/allocate", {"job": job, "nodes": int(rng.integers(1, 9)), "walltime_s": 100})
                except OSError:
                    return
                if code == 200:
                    acked[w][job] = body["nodes"]
                if len(acked[w]) > 3:
                    victim = sorted(acked[w])[0]
                    in_flight[w][:] = [job, victim]
                    try:
                        code, _ = c.request("POST", "/v1/release", {"job": victim})
                    except OSError:
                        return
                    if code == 200:
                        del acked[w][victim]
                        released[w].add(victim)
                in_flight[w][:] = []
                i += 1

        threads = [threading.Thread(target=work, args=(w,)) for w in range(clients)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        s.kill9()
        stop.set()
        for t in threads:
            t.join(timeout=10)
        s.start()
        held = s.client().state()["allocations"]
        flying = {j for f in in_flight for j in f}
        for w in range(clients):
            assert len(acked[w]) + len(released[w]) >= 5
            for job, nodes in acked[w].items():
                if job not in flying:
                    assert held.get(job) == nodes, job
            assert not (released[w] - flying) & set(held)
        assert set(held) - {j for a in acked for j in a} <= flying
        check_interference_free(s.client().state())
    finally:
        s.stop()


def test_put_state_replaces_the_table(svc):
    c = svc.client()
    c.allocate("old", 5, 10)
    code, _ = c.call("PUT", "/v1/state", {"allocations": {"s1": "hype[1-4]", "s2": {"nodes": ["hype9", "hype10"], "start_s": 5, "walltime_s": 60}}})
    assert code == 200
    st_ = c.state()
    assert st_["allocations"] == {"s1": ["hype1", "hype2", "hype3", "hype4"], "s2": ["hype9", "hype10"]}
    assert st_["jobs"]["s2"]["expected_end_s"] == 65
    # a node given twice is refused and nothing changes
    code, err = c.request("PUT", "/v1/state", {"allocations": {"x": ["hype1"], "y": ["hype1"]}})
    assert code == 400 and "hype1 is given to both job x and job y" in err["error"]
    assert set(c.state()["allocations"]) == {"s1", "s2"}
    assert c.allocate("n", 91, 10)[0] == 409 and c.allocate("n", 91, 10, reserve=True)[0] == 202
    # times beyond 64 bits (were a 500 OverflowError) or negative (were taken) are refused,
    # naming the field, and nothing changes
    for times, field, why in (
        ({"start_s": 10**23, "walltime_s": 5}, "start_s", "must be at most 2^53, got 100000000000000000000000"),
        ({"start_s": 5, "walltime_s": 10**23}, "walltime_s", "must be at most 2^53"),
        ({"start_s": -5, "walltime_s": 5}, "start_s", "must not be negative"),
        ({"start_s": 5, "walltime_s": -5}, "walltime_s", "must not be negative"),
    ):
        code, err = c.request("PUT", "/v1/state", {"allocations": {"x": {"nodes": ["hype20"], **times}}})
        assert code == 400 and err["field"] == field and why in err["error"], err
    assert c.request("POST", "/v1/satisfiable", {"nodes": 2**32})[0] == 400
    assert set(c.state()["allocations"]) == {"s1", "s2"}


def test_unix_socket(tmp_path):
    with ServiceProcess(tmp_path / "u", system="toy18", unix=True) as s:
        c = s.client()
        assert c.allocate("a", 2, 5)[0] == 200
        assert c.state()["free_nodes"] == 16
        assert (tmp_path / "u" / "serve.sock").stat().st_mode & 0o077 == 0


def _serve_cli(state, token_file, *extra, system="toy18"):
    return subprocess.run(
        [sys.executable, "-m", "toposched.cli", "serve", "--system", system, "--state", str(state), "--listen", "127.0.0.1:0", "--token-file", str(token_file), *extra],
        capture_output=True, text=True, timeout=60,
    )


def test_refuses_a_token_file_others_can_read(tmp_path):
    tok = tmp_path / "token"
    write_token(tok)
    tok.chmod(0o644)
    r = _serve_cli(tmp_path / "st", tok)
    assert r.returncode == 2 and "chmod 600" in r.stderr and "Traceback" not in r.stderr
    r = _serve_cli(tmp_path / "st", tmp_path / "missing")
    assert r.returncode == 2 and "missing" in r.stderr and "Traceback" not in r.stderr


def test_refuses_a_state_of_another_fabric_and_a_second_service(tmp_path):
    with ServiceProcess(tmp_path / "svc", system="toy18") as s:
        r = _serve_cli(s.state, s.token_file)
        assert r.returncode == 2 and "another toposched serve" in r.stderr
    r = _serve_cli(s.state, s.token_file, system="hype")
    assert r.returncode == 2 and "another fabric or policy" in r.stderr


# The table itself (no HTTP): properties ------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(1, 40), st.booleans(), st.integers(0, 3)), min_size=1, max_size=60))
def test_isolated_table_keeps_i1_i2_and_never_double_books(tmp_path_factory, ops):
    fabric = load_fabric("hype")
    table = LiveTable(fabric, "isolated", str(tmp_path_factory.mktemp("st")), clock=lambda: 1000)
    live: list[str] = []
    for i, (nodes, reserve, release_k) in enumerate(ops):
        a = table.allocate(f"j{i}", nodes, 50, reserve)
        if a.outcome == "placed":
            live.append(f"j{i}")
        for _ in range(release_k if live else 0):
            table.release(live.pop(0)) if live else None
        snap = table.snapshot()
        all_nodes = [n for ns in snap["allocations"].values() for n in ns]
        assert len(all_nodes) == len(set(all_nodes)) == 96 - snap["free_nodes"]
        check_interference_free(snap)
    # the durable copy agrees with memory
    again = LiveTable(fabric, "isolated", str(table.store.path.parent), clock=lambda: 1000)
    assert again.snapshot()["allocations"] == table.snapshot()["allocations"]
    again.store.close()
    table.store.close()


@pytest.mark.parametrize(
    "queue, alloc", [("fcfs", "linear"), ("fcfs", "isolated"), ("fcfs", "slurm-tree"), ("easy", "linear"), ("easy", "isolated"), ("easy", "slurm-tree")]
)
def test_table_makes_the_replays_decisions_on_a_real_trace(tmp_path, queue, alloc):
    """One code path: the bridge's pass (FCFS, or EASY with `reserve` until a job cannot
    start) written against the service's table on a virtual clock, on the bundled Atlas
    trace, gives the nodes and start times of the replay (toposched simulate --queue ...)."""
    from toposched.workload import read_trace

    w = read_trace(EXAMPLE_TRACE)
    n = 400
    cols = {k: np.ascontiguousarray(w[k][:n]) for k in ("job_id", "submit_s", "nodes", "walltime_s", "runtime_s")}
    # arrivals 20 times denser, so that jobs queue: EASY then reserves and backfills (500+ times)
    cols["submit_s"] = np.ascontiguousarray(cols["submit_s"] // 20)
    fabric = load_fabric("fattree:K=16,S=4,P=3")
    sim = _core.Simulation(fabric.core, cols["job_id"], cols["submit_s"], cols["nodes"], cols["walltime_s"], cols["runtime_s"], queue=queue, alloc=alloc)
    sim.step()
    res = sim.results()
    clock = {"t": 0}
    table = LiveTable(fabric, alloc, str(tmp_path / "st"), clock=lambda: clock["t"])
    name = lambda i: f"{i:06d}"  # noqa: E731  (name order = row order: the replay breaks ties by row)
    ends: dict[int, int] = {}
    queued: list[int] = []
    nxt = 0
    got: dict[int, tuple[int, list[int]]] = {}
    reservations = 0
    while True:
        cands = list(ends.values()) + ([int(cols["submit_s"][nxt])] if nxt < n else [])
        if not cands:
            break
        t = min(cands)
        clock["t"] = t
        for i in sorted(i for i, e in ends.items() if e == t):
            assert table.release(name(i))[0] == "released"
            del ends[i]
        while nxt < n and cols["submit_s"][nxt] == t:
            queued.append(nxt)
            nxt += 1
        reserved = False
        rest = []
        for k, i in enumerate(queued):
            a = table.allocate(name(i), int(cols["nodes"][i]), int(cols["walltime_s"][i]), reserve=queue == "easy" and not reserved)
            if a.outcome == "placed":
                got[i] = (t, table.node_ids(a.nodes))
                # zero-length jobs end at once, in a new round at the same instant, as in the replay
                ends[i] = t + min(int(cols["runtime_s"][i]), int(cols["walltime_s"][i]))
            elif a.outcome == "never":
                pass
            elif a.outcome == "reserved":
                reserved = True
                reservations += 1
                rest.append(i)
            else:
                rest.append(i)
                if queue == "fcfs" or not reserved:
                    rest += queued[k + 1 :]
                    break
        queued = rest
    off, node_ids = lists_from_ranges(res["range_offsets"], res["range_first"], res["range_count"])
    started = 0
    for i in range(n):
        if res["status"][i] == 3:
            assert i not in got
            continue
        started += 1
        assert got[i][0] == res["start_s"][i], i
        assert got[i][1] == node_ids[off[i] : off[i + 1]].tolist(), i
    assert started > 250
    assert (reservations > 300) if queue == "easy" else (reservations == 0)


def test_a_failed_commit_is_never_acknowledged(tmp_path):
    """If the disk fails a commit, that request gets 503, every later write too (memory must
    not run ahead of the disk), and a restart holds only what was committed."""
    import sqlite3

    from toposched.live.service import Service, route

    fabric = load_fabric("toy18")
    table = LiveTable(fabric, "linear", str(tmp_path / "st"), autocommit=False)
    svc = Service(table, "t" * 20, log=None)
    auth = {"authorization": "Bearer " + "t" * 20}

    def post(path, body):
        return route(svc, "POST", path, auth, json.dumps(body).encode())[:2]

    assert post("/v1/allocate", {"job": "ok", "nodes": 2, "walltime_s": 9})[0] == 200

    def broken_disk(*args):
        raise sqlite3.OperationalError("disk I/O error")

    table.store.put_allocation = broken_disk
    code, body = post("/v1/allocate", {"job": "lost", "nodes": 2, "walltime_s": 9})
    assert code == 503 and "disk I/O error" in body["error"]
    assert post("/v1/release", {"job": "ok"})[0] == 503
    assert post("/v1/nodes/drain", {"nodes": ["toy18n10"]})[0] == 503
    # the health check says so (a monitor, or a probe that restarts the service, sees it)
    code, body, _ = route(svc, "GET", "/v1/health", {}, b"")
    assert code == 503 and body["status"] == "broken" and "disk I/O error" in body["error"] and "restart" in body["error"]
    table.store.close()
    again = LiveTable(fabric, "linear", str(tmp_path / "st"))
    assert list(again.snapshot()["allocations"]) == ["ok"]
    again.store.close()


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_stopping_with_clients_connected_is_quiet_and_keeps_the_state(tmp_path, sig):
    """SIGTERM (systemd's stop) or Ctrl-C while clients hold kept-alive connections: exit 0
    without a traceback (Python 3.11's asyncio printed one per open connection: "Exception
    in callback ... CancelledError"), and a restart has every acknowledged decision."""
    import signal

    s = ServiceProcess(tmp_path / "svc", system="toy18").start()
    clients = [s.client() for _ in range(3)]
    for i, c in enumerate(clients):
        assert c.allocate(f"j{i}", 2, 60)[0] == 200  # each keeps its connection open
    s.proc.send_signal(getattr(signal, sig))
    assert s.proc.wait(timeout=20) == 0
    s.stop()
    err = (tmp_path / "svc" / "serve.stderr").read_text()
    assert "Traceback" not in err and "Exception" not in err, err
    with s:  # starts it again
        assert sorted(s.client().state()["allocations"]) == ["j0", "j1", "j2"]
    for c in clients:
        c.close()


@pytest.mark.parametrize(
    "sql, says",
    [
        ("UPDATE allocations SET nodes='[toy18n00' WHERE job='a'", "allocations row of job 'a': nodes"),
        ("UPDATE allocations SET nodes='5' WHERE job='a'", "allocations row of job 'a': nodes"),
        ("UPDATE allocations SET nodes='[\"zz9\"]' WHERE job='a'", "allocations row of job 'a': node 'zz9' is not on fabric toy18"),
        ("UPDATE allocations SET nodes=(SELECT nodes FROM allocations WHERE job='a') WHERE job='b'", "allocations row of job 'b': node toy18n00 is held by job a too"),
        ("UPDATE allocations SET start_s='abc' WHERE job='a'", "allocations row of job 'a': start_s"),
        ("UPDATE allocations SET walltime_s=-5 WHERE job='b'", "allocations row of job 'b': walltime_s"),
        ("INSERT INTO drained VALUES ('zz1')", "drained row: node 'zz1' is not on fabric toy18"),
    ],
)
def test_a_damaged_state_file_is_refused_in_one_line(tmp_path, sql, says):
    """A state file edited by hand or damaged: the service refuses to start with one line
    naming the file, the row and the field (exit 2), never 'internal error ... a bug'."""
    import sqlite3

    with ServiceProcess(tmp_path / "svc", system="toy18") as s:
        c = s.client()
        assert c.allocate("a", 2, 60)[0] == 200 and c.allocate("b", 2, 60)[0] == 200
        assert c.call("POST", "/v1/nodes/drain", {"nodes": ["toy18n17"]})[0] == 200
    db = sqlite3.connect(s.state / "toposched-live.sqlite")
    db.execute(sql)
    db.commit()
    db.close()
    r = _serve_cli(s.state, s.token_file)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "toposched-live.sqlite" in r.stderr and says in r.stderr, r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr


def test_listen_errors_name_the_flag_and_never_remove_a_file(tmp_path):
    """--listen unix:PATH on a regular file refuses to start and leaves the file alone (the
    service unlinked whatever it found there, taking it for a stale socket); a port beyond
    65535 and a socket in a missing directory are one line naming --listen, exit 2."""
    tok = tmp_path / "token"
    write_token(tok)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")

    def serve(listen):
        return subprocess.run(
            [sys.executable, "-m", "toposched.cli", "serve", "--system", "toy18", "--state", str(tmp_path / "st"), "--listen", listen, "--token-file", str(tok)],
            capture_output=True, text=True, timeout=60,
        )

    r = serve(f"unix:{precious}")
    assert r.returncode == 2 and f"--listen unix:{precious}" in r.stderr and "not a socket" in r.stderr, r.stderr
    assert precious.read_text() == "keep me\n"
    for listen in ("127.0.0.1:99999", f"unix:{tmp_path / 'no' / 'such' / 'dir.sock'}"):
        r = serve(listen)
        assert r.returncode == 2 and r.stderr.startswith(f"error: --listen {listen}: ") and r.stderr.count("\n") == 1, r.stderr


def test_lenient_topology_conf_as_the_error_advises(tmp_path):
    """A Slurm topology.conf listing a node under two leaf switches (Slurm only warns):
    serve's error advised '--lenient', which serve did not have. With it the service starts,
    each node on the first leaf that lists it."""
    conf = tmp_path / "topology.conf"
    conf.write_text("SwitchName=s1 Nodes=n[1-4]\nSwitchName=s2 Nodes=n[3-6]\nSwitchName=top Switches=s[1-2]\n")
    tok = tmp_path / "token"
    write_token(tok)
    r = _serve_cli(tmp_path / "st", tok, system=str(conf))
    assert r.returncode == 2 and "--lenient" in r.stderr, r.stderr
    with ServiceProcess(tmp_path / "svc", system=str(conf), extra=["--lenient"]) as s:
        state = s.client().state()
        assert state["nodes"] == 6 and [leaf["nodes"] for leaf in state["leaves"]] == [4, 2]


def test_a_stopped_service_removes_its_socket_and_only_its_own(tmp_path):
    """SIGTERM removes the service's unix socket file; a file another process has put at
    the path while it ran is left alone (the service unlinked whatever was there)."""
    s = ServiceProcess(tmp_path / "a", system="toy18", unix=True).start()
    sock = tmp_path / "a" / "serve.sock"
    assert sock.is_socket()
    s.stop()
    assert not sock.exists()
    s = ServiceProcess(tmp_path / "a", system="toy18", unix=True).start()
    sock.rename(tmp_path / "a" / "moved.sock")
    sock.write_text("someone else's\n")
    s.stop()
    assert sock.read_text() == "someone else's\n"


def test_history_is_kept_for_its_window_only(tmp_path):
    """The released and placements tables grew with every job for ever (a service running
    for years: gigabytes). Released jobs and past placements older than the history window
    are now pruned (a second release of such a job is unknown, not "already released"); a
    placement of a job still holding nodes is kept; None keeps everything."""
    import sqlite3

    from toposched.live.table import PRUNE_EVERY_S

    fabric = load_fabric("toy18")
    day = 86_400
    for keep in (2 * day, None):
        clock = {"t": 1_000_000}
        d = tmp_path / f"st{keep}"
        table = LiveTable(fabric, "linear", str(d), clock=lambda: clock["t"], keep_history_s=keep)
        assert table.allocate("old", 2, 600).outcome == "placed" and table.allocate("long", 2, 99 * day).outcome == "placed"
        assert table.release("old")[0] == "released" and table.release("old")[0] == "already"
        clock["t"] += 3 * day + PRUNE_EVERY_S
        assert table.allocate("new", 2, 600).outcome == "placed"  # a commit: the pruning rides on it
        assert table.release("new")[0] == "released"
        db = sqlite3.connect(d / "toposched-live.sqlite")
        released = sorted(r[0] for r in db.execute("SELECT job FROM released"))
        placed = sorted(r[0] for r in db.execute("SELECT job FROM placements"))
        db.close()
        if keep is None:
            assert released == ["new", "old"] and placed == ["long", "new", "old"]
            assert table.release("old")[0] == "already"
        else:
            assert released == ["new"] and placed == ["long", "new"]  # "long" still holds its nodes
            assert table.release("old")[0] == "unknown"
        table.store.close()
        again = LiveTable(fabric, "linear", str(d), clock=lambda: clock["t"], keep_history_s=keep)
        assert again.release("old")[0] == ("already" if keep is None else "unknown")
        assert again.release("new")[0] == "already"
        again.store.close()


def test_a_job_dropped_by_put_state_stays_released_after_a_restart(tmp_path):
    """PUT /v1/state (the bridge's Slurm view) releases the jobs it drops: a second release
    said "already released", but after a restart "unknown" (the store had no row)."""
    fabric = load_fabric("toy18")
    table = LiveTable(fabric, "linear", str(tmp_path / "st"), clock=lambda: 5000)
    assert table.allocate("gone", 2, 600).outcome == "placed" and table.allocate("kept", 2, 600).outcome == "placed"
    table.replace({"kept": (table._held["kept"], 5000, 600)})
    assert table.release("gone")[0] == "already"
    table.store.close()
    again = LiveTable(fabric, "linear", str(tmp_path / "st"), clock=lambda: 5000)
    assert again.release("gone")[0] == "already" and again.release("kept")[0] == "released"
    again.store.close()

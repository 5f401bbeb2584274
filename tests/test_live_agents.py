"""`toposched serve --node-agents`: seed 002's external scheduler. A job that states a
per-host requirement goes only to hosts whose node agents can meet it now, and the answer
gives each chosen host's CPUs; real `toposched node-agent` processes (placing without
binding, on the shipped Cab node topology) answer the service."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO
from live_util import ServiceProcess, write_token
from test_node_agent import Agent
from toposched.node.client import AgentClient
from toposched.node.cpulist import parse_cpulist

CAB = REPO / "tests" / "data" / "hwloc" / "llnl-cab1234_node_hwloc.xml"  # 2 sockets x 8 cores
NODES = ["n01", "n02", "n03", "n04"]


@pytest.fixture
def cluster(tmp_path):
    """Four hosts on two leaves, each with its agent, and a service that consults them."""
    conf = tmp_path / "topology.conf"
    conf.write_text("SwitchName=leaf1 Nodes=n[01-02]\nSwitchName=leaf2 Nodes=n[03-04]\nSwitchName=spine Switches=leaf[1-2]\n")
    token_file = tmp_path / "agent.token"
    agent_token = write_token(token_file)
    agents = []
    lines = [f'token_file = "{token_file}"', "timeout_s = 10", "[agents]"]
    try:
        for n in NODES:
            d = tmp_path / n
            d.mkdir()
            (d / "token").write_text(agent_token + "\n")
            (d / "token").chmod(0o600)
            a = Agent(d, str(CAB), "none", f"toposched_test_{n}", extra=["--host", n]).start()
            agents.append(a)
            lines.append(f'{n} = "unix:{a.sock}"')
        (tmp_path / "agents.toml").write_text("\n".join(lines) + "\n")
        with ServiceProcess(tmp_path / "svc", system=str(conf), alloc="linear", extra=["--node-agents", str(tmp_path / "agents.toml")]) as svc:
            yield svc, {n: AgentClient(f"unix:{a.sock}", agent_token) for n, a in zip(NODES, agents)}
    finally:
        for a in agents:
            a.stop()


def test_hosts_whose_agents_refuse_are_not_chosen_and_cpus_come_back(cluster):
    svc, agents = cluster
    c = svc.client()
    # n01 is full: another job holds its 16 cores
    code, body = agents["n01"].allocate("other", "CORES=16")
    assert code == 200, body
    # linear would take n01 and n02; n01's agent cannot give 8 cores now
    code, r = c.allocate("j1", 2, 60, requirement="CORES=8")
    assert code == 200, r
    assert r["nodes"] == ["n02", "n03"]
    hosts = {h["node"]: h for h in r["hosts"]}
    assert set(hosts) == {"n02", "n03"}
    for h in hosts.values():
        # the best radius for 8 cores on Cab's 2 x 8-core node: one socket's shared L3
        assert h["radius"] == "l3" and len(parse_cpulist(h["cpus"])) == 8, h
    # without a requirement the agents are not asked: n01 is free for the cluster placer
    code, r = c.allocate("j2", 1, 60)
    assert code == 200 and r["nodes"] == ["n01"] and "hosts" not in r


def test_no_host_can_meet_the_requirement(cluster):
    svc, _ = cluster
    code, r = svc.client().allocate("big", 1, 60, requirement="CORES=17")
    assert code == 409
    assert set(r["hosts_refused"]) == set(NODES)
    assert all(why.startswith("impossible") for why in r["hosts_refused"].values()), r


def test_bad_requirements_are_400_naming_the_field(cluster):
    svc, _ = cluster
    code, r = svc.client().allocate("x", 1, 60, requirement="CORES=banana")
    assert code == 400 and "requirement" in r["error"]


def test_a_service_without_agents_refuses_requirements(tmp_path):
    with ServiceProcess(tmp_path / "svc", system="toy18", alloc="linear") as svc:
        code, r = svc.client().allocate("x", 1, 60, requirement="CORES=1")
        assert code == 400 and "--node-agents" in r["error"]


def test_agents_file_errors_name_the_file_and_key(tmp_path):
    from toposched.errors import InputError
    from toposched.live.agents import AgentDirectory

    p = tmp_path / "a.toml"
    p.write_text("[agents]\nn01 = 42\n")
    with pytest.raises(InputError, match=r"agents\.n01"):
        AgentDirectory.load(p)
    p.write_text("agent = 1\n")
    with pytest.raises(InputError, match="unknown keys"):
        AgentDirectory.load(Path(p))


def test_agents_file_naming_a_node_not_on_the_fabric_is_refused_at_start(tmp_path):
    """A typo in [agents] (n1 for hype1) was taken silently: the real node then had no
    agent, and every job stating a requirement was refused there ('no node agent
    configured for this host'). serve now refuses to start, naming the file and the key."""
    import subprocess
    import sys

    from live_util import write_token

    tok = tmp_path / "token"
    write_token(tok)
    agents = tmp_path / "agents.toml"
    agents.write_text('[agents]\nhype96 = "unix:/nonexistent/a.sock"\nn2 = "unix:/nonexistent/b.sock"\n')
    r = subprocess.run(
        [sys.executable, "-m", "toposched.cli", "serve", "--system", "hype", "--state", str(tmp_path / "st"), "--listen", "127.0.0.1:0",
         "--token-file", str(tok), "--node-agents", str(agents)],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 2 and str(agents) in r.stderr and "agents.n2" in r.stderr and "not on fabric hype" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1


def test_a_silent_agent_does_not_stall_the_other_requests(tmp_path):
    """A node agent that accepts connections but never answers (a hung host) kept the
    service's only thread waiting for the whole agent timeout_s on every request stating a
    requirement: health, state, release of other clients all waited behind it. The agents
    are now asked off the event loop."""
    import socket
    import threading
    import time

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # connections queue in the kernel; nobody ever reads them
    try:
        (tmp_path / "agents.toml").write_text(f'timeout_s = 4\n[agents]\nhype96 = "127.0.0.1:{silent.getsockname()[1]}"\n')
        with ServiceProcess(tmp_path / "svc", extra=["--node-agents", str(tmp_path / "agents.toml")]) as svc:
            c = svc.client()
            assert c.allocate("other", 2, 60)[0] == 200
            answer: list = []
            asking = threading.Thread(target=lambda: answer.append(svc.client().allocate("j", 1, 60, requirement="CORES=1")))
            asking.start()
            time.sleep(0.5)  # the service is now waiting for hype96's agent
            t0 = time.monotonic()
            assert c.request("GET", "/v1/health")[0] == 200
            assert c.release("other")[0] == 200
            waited_s = time.monotonic() - t0
            asking.join(timeout=30)
            code, body = answer[0]
            assert code == 409 and body["hosts_refused"]["hype96"].startswith("unreachable"), body
            assert waited_s < 2.0, f"health and release waited {waited_s:.1f} s behind the silent agent"
    finally:
        silent.close()

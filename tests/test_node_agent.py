"""The node agent as a user runs it: a real `toposched node-agent` process, real cgroup
cpusets, `toposched run-in`, kill -9 and restart.

Tests that need cpusets skip only when the machine has none we may write (not root, or no
cpuset controller); CI runs as root. Every cgroup is created under a unique prefix and
removed at the end, even when a test fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from toposched.node.client import AgentClient, rank_hosts
from toposched.node.cpulist import parse_cpulist
from toposched.node.cpuset import CgroupUnavailable, detect

from conftest import REPO

HWLOC = REPO / "tests" / "data" / "hwloc"
CAB = HWLOC / "llnl-cab1234_node_hwloc.xml"
TOKEN = "test-token-" + uuid.uuid4().hex
CLI = [sys.executable, "-m", "toposched.cli"]


def _backend_or_skip(mode: str, prefix: str):
    if os.geteuid() != 0:
        pytest.skip("needs root for cgroup cpusets (CI runs as root)")
    try:
        return detect(mode, prefix)
    except CgroupUnavailable as exc:
        pytest.skip(f"no {mode} cpuset hierarchy here: {exc}")


def _cleanup_cgroups(parent: Path) -> None:
    """Kill whatever is left in every job cpuset under ``parent`` and remove them all."""
    if not parent.is_dir():
        return
    for d in sorted(parent.iterdir()):
        if d.is_dir():
            for _ in range(200):
                pids = (d / "cgroup.procs").read_text().split()
                if not pids:
                    break
                for p in pids:
                    try:
                        os.kill(int(p), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.01)
            d.rmdir()
    parent.rmdir()


class Agent:
    """A `toposched node-agent` subprocess on a unix socket in a scratch directory."""

    def __init__(self, tmp: Path, topology: str, cpusets: str, prefix: str, extra: list[str] | None = None,
                 sock: Path | None = None) -> None:
        self.tmp = tmp
        self.sock = sock or tmp / "agent.sock"
        self.token_file = tmp / "token"
        if not self.token_file.exists():
            self.token_file.write_text(TOKEN + "\n")
            self.token_file.chmod(0o600)
        self.args = [*CLI, "node-agent", "--topology", topology, "--state", str(tmp / "state"),
                     "--listen", f"unix:{self.sock}", "--token-file", str(self.token_file),
                     "--cpusets", cpusets, "--cgroup-prefix", prefix, *(extra or [])]
        self.proc: subprocess.Popen | None = None
        self.log: list[str] = []

    def start(self) -> "Agent":
        self.proc = subprocess.Popen(self.args, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise AssertionError(f"agent exited ({self.proc.wait()}): {''.join(self.log)}")
            self.log.append(line)
            if "listening on" in line:
                return self
        raise AssertionError("agent did not start in 30 s")

    @property
    def client(self) -> AgentClient:
        return AgentClient(f"unix:{self.sock}", TOKEN)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _cpuset_versions() -> list[str]:
    """The cgroup versions whose cpuset controller this machine mounts (read from
    /proc/self/mounts at collection): a kernel holds the cpuset controller in one hierarchy
    only, so a machine tests v1 or v2, and tests the other where it is the one mounted."""
    found = []
    try:
        mounts = [line.split() for line in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        return ["v1", "v2"]
    for m in mounts:
        if len(m) < 4:
            continue
        if m[2] == "cgroup" and "cpuset" in m[3].split(","):
            found.append("v1")
        elif m[2] == "cgroup2" and "cpuset" in Path(m[1], "cgroup.controllers").read_text().split() if Path(m[1], "cgroup.controllers").exists() else False:
            found.append("v2")
    return sorted(set(found)) or ["v1", "v2"]


@pytest.fixture(params=_cpuset_versions())
def live_agent(request, tmp_path):
    """An agent on the live topology with real cpusets of the given cgroup version."""
    prefix = f"toposched_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    backend = _backend_or_skip(request.param, prefix)
    if shutil.which("lstopo-no-graphics") is None and shutil.which("lstopo") is None:
        pytest.skip("hwloc's lstopo is not installed (scripts/test.sh installs it as root)")
    agent = Agent(tmp_path, "live", request.param, prefix)
    try:
        yield agent.start(), backend
    finally:
        agent.stop()
        _cleanup_cgroups(backend.parent)


def _status_field(text: str, name: str) -> str:
    return next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith(name + ":"))


def test_run_in_process_tree_sees_exactly_the_job_cpus(live_agent):
    agent, backend = live_agent
    code, alloc = agent.client.allocate("101", "CORES=1;MEMORY_MANDATORY")
    assert code == 200, alloc
    assert Path(alloc["cgroup"]) == backend.path("101")
    assert backend.cpus("101") == parse_cpulist(alloc["cpus"])
    # The command and a grandchild it starts both run inside the cpuset.
    script = "grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status; sh -c 'grep ^Cpus_allowed_list /proc/self/status'"
    out = subprocess.run([*CLI, "run-in", "--job", "101", "--agent", f"unix:{agent.sock}", "--", "sh", "-c", script],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    cpus = [line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Cpus_allowed_list")]
    mems = _status_field(out, "Mems_allowed_list")
    assert len(cpus) == 2 and all(parse_cpulist(c) == parse_cpulist(alloc["cpus"]) for c in cpus)
    assert parse_cpulist(mems) == parse_cpulist(alloc["mems"])
    # A second job gets the other CPUs; both are listed by the agent.
    state = agent.client.state()
    assert set(state["allocations"]) == {"101"}


def test_release_kills_leftovers_and_removes_the_cpuset(live_agent):
    agent, backend = live_agent
    assert agent.client.allocate("202", "PUS=1")[0] == 200
    sleeper = subprocess.Popen([*CLI, "run-in", "--job", "202", "--agent", f"unix:{agent.sock}", "--", "sleep", "300"])
    deadline = time.monotonic() + 30
    while sleeper.pid not in backend.procs("202") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleeper.pid in backend.procs("202")
    assert parse_cpulist(_status_field(Path(f"/proc/{sleeper.pid}/status").read_text(), "Cpus_allowed_list")) == backend.cpus("202")
    code, body = agent.client.release("202")
    assert code == 200 and body["killed_processes"] == 1
    assert sleeper.wait(timeout=10) == -signal.SIGKILL
    assert not backend.path("202").exists()
    # Released twice is harmless; the CPUs are free again.
    assert agent.client.release("202") == (200, {"already_released": True, "job": "202", "released": True})
    assert agent.client.allocate("203", "PUS=1")[0] == 200


def test_kill9_restart_keeps_live_cpusets_and_removes_orphans(live_agent, tmp_path):
    agent, backend = live_agent
    assert agent.client.allocate("301", "PUS=1")[0] == 200
    assert agent.client.allocate("302", "PUS=1;SHARED")[0] == 200
    worker = subprocess.Popen([*CLI, "run-in", "--job", "301", "--agent", f"unix:{agent.sock}", "--", "sleep", "300"])
    deadline = time.monotonic() + 30
    while worker.pid not in backend.procs("301") and time.monotonic() < deadline:
        time.sleep(0.05)
    before = agent.client.state()["allocations"]
    agent.kill9()
    # While the agent is down: a cpuset nobody acknowledged (a crash between creating and
    # recording), with a process in it, and one acknowledged cpuset removed by hand.
    orphan = backend.create("999", backend.cpus("301"), backend.machine_mems())
    stray = subprocess.Popen(["sleep", "300"])
    backend.attach("999", stray.pid)
    backend.remove("302")
    restarted = Agent(tmp_path, "live", backend.version, backend.prefix).start()
    agent.proc = restarted.proc
    try:
        log = "".join(restarted.log)
        assert "kept 2 allocations (1 cpusets re-created), removed 1 orphan cpusets (job_999)" in log
        assert stray.wait(timeout=10) == -signal.SIGKILL
        assert not orphan.exists()
        assert worker.poll() is None and worker.pid in backend.procs("301")  # the live job runs on
        assert backend.exists("302") and backend.cpus("302") == parse_cpulist(before["302"]["cpus"])
        after = restarted.client.state()["allocations"]
        assert {j: (a["cpus"], a["mems"]) for j, a in after.items()} == {j: (a["cpus"], a["mems"]) for j, a in before.items()}
    finally:
        worker.kill()
        worker.wait()


def test_no_cgroup_access_is_said_at_start(tmp_path):
    """In a mount namespace where every cgroup hierarchy is read-only (as in many
    containers), the agent refuses to start and says why, instead of pretending."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and util-linux unshare to make a private mount namespace")
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines() if line.split()[2] in ("cgroup", "cgroup2")]
    if not mounts:
        pytest.skip("no cgroup hierarchy mounted at all")
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    agent_cmd = " ".join([*CLI, "node-agent", "--topology", str(CAB), "--state", str(tmp_path / "s"),
                          "--listen", f"unix:{tmp_path / 'a.sock'}", "--token-file", str(token),
                          "--cgroup-prefix", f"toposched_test_ro_{uuid.uuid4().hex[:8]}"])
    remounts = " && ".join(f"mount -o remount,bind,ro {m}" for m in mounts)
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                        f"{remounts} && echo REMOUNTED && exec {agent_cmd}"],
                       capture_output=True, text=True, timeout=60)
    if "REMOUNTED" not in r.stdout:
        pytest.skip(f"cannot make a private read-only cgroup mount here (unprivileged container?): {r.stderr.strip()}")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no usable cgroup cpusets:"), r.stderr
    assert "Read-only file system" in lines[0] and "--cpusets none" in lines[0]


# --- the agent without cpusets: the Cab node's XML on any machine ----------------------

@pytest.fixture
def cab_agent(tmp_path):
    agent = Agent(tmp_path, str(CAB), "none", "unused")
    try:
        yield agent.start()
    finally:
        agent.stop()


def test_cab_topology_with_real_cpusets_is_refused_on_a_smaller_machine(tmp_path):
    prefix = f"toposched_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    backend = _backend_or_skip("auto", prefix)
    try:
        if frozenset(range(16)) <= backend.machine_cpus():
            pytest.skip("this machine has 16 CPUs: the Cab topology fits")
        agent = Agent(tmp_path, str(CAB), "auto", prefix)
        r = subprocess.run(agent.args, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2
        assert r.stderr.startswith("error: topology ") and "has PUs 0-15 but" in r.stderr and "--cpusets none" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert not backend.parent.exists()  # a refused start leaves no cgroup behind
    finally:
        _cleanup_cgroups(backend.parent)


def test_cab_wait_versus_best_over_http(cab_agent):
    c = cab_agent.client
    assert c.health() == {"cpusets": "none", "host": "cab1234", "ok": True}
    assert c.allocate("a", "CPU_LIST=0-5")[1]["cpus"] == "0-5"
    assert c.allocate("b", "CPU_LIST=8-13")[1]["cpus"] == "8-13"
    code, body = c.allocate("w", "CORES=4;WAIT")
    assert code == 409 and body["status"] == "wait" and body["good_radius"] == "l3"
    assert body["placement"]["radius"] == "machine"
    code, body = c.allocate("n", "CORES=4")
    assert (code, body["cpus"], body["radius"], body["numa_domains"]) == (200, "6-7,14-15", "machine", 2)
    assert c.release("n")[0] == 200 and c.release("b")[0] == 200
    code, body = c.allocate("w", "CORES=4;WAIT")
    assert (code, body["cpus"], body["radius"]) == (200, "8-11", "l3")
    # Same job, same requirement again: the same allocation (an epilog retrying is harmless).
    code, again = c.allocate("w", "CORES=4;WAIT")
    assert code == 200 and again["existing"] and again["cpus"] == "8-11"


def test_bad_and_impossible_requests(cab_agent):
    c = cab_agent.client
    code, body = c.allocate("x", "CORES=two")
    assert code == 400 and body["field"] == "CORES" and "whole number" in body["reason"]
    code, body = c.allocate("x", "CORES=4;COLOUR=red")
    assert code == 400 and body["field"] == "COLOUR"
    code, body = c.allocate("x", "CORES=17")
    assert code == 422 and body["status"] == "impossible" and "this node has 16" in body["reason"]
    code, body = c.allocate("x", "CPU_LIST=14-17")
    assert code == 422 and "16-17" in body["reason"]
    code, body = c.allocate("x", "CORES=1;MEM_PER_NUMA_MB=20000")
    assert code == 422 and "MEM_PER_NUMA_MB" in body["reason"]
    code, body = c.allocate("../etc", "CORES=1")
    assert code == 400 and body["field"] == "job"
    code, body = c.request("POST", "/v1/allocate", None)
    assert code == 400 and body["field"] == "job"
    # Unauthenticated writes change nothing.
    anon = AgentClient(c.address)
    assert anon.allocate("y", "CORES=1")[0] == 401
    assert AgentClient(c.address, "wrong").allocate("y", "CORES=1")[0] == 403
    assert c.state()["allocations"] == {}
    assert anon.query("CORES=2")["placement"]["radius"] == "l3"  # reads need no token
    assert c.release("never")[0] == 404
    # a uid beyond 32 bits was a 500 from the store, which was then left inside its
    # transaction: every later allocate and release failed until a restart
    for uid in (2**64, 2**32 - 1, -1):
        code, body = c.allocate("u", "CORES=1", uid=uid)
        assert code == 400 and body["field"] == "uid" and "from 0 to 4294967294" in body["reason"], body
    assert c.allocate("u", "CORES=1", uid=2**32 - 2)[0] == 200
    assert c.release("u")[0] == 200


def test_memory_per_numa_domain_is_promised(cab_agent):
    c = cab_agent.client
    # Each Cab NUMA domain has about 16 GiB.
    assert c.allocate("m1", "CORES=1;MEM_PER_NUMA_MB=12000;MEMORY_MANDATORY")[1]["mems"] == "0"
    code, body = c.allocate("m2", "CORES=1;MEM_PER_NUMA_MB=12000")
    assert code == 200 and body["cpus"] == "8" and body["mems"] == "0-1"
    assert c.allocate("m3", "CORES=1;MEM_PER_NUMA_MB=12000")[1]["status"] == "busy"


def test_token_file_readable_by_others_is_refused(tmp_path):
    agent = Agent(tmp_path, str(CAB), "none", "unused")
    agent.token_file.chmod(0o644)
    r = subprocess.run(agent.args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "chmod 600" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_rank_hosts_filters_and_ranks_by_best_radius(tmp_path):
    """Seed 002's external scheduler over three agents (Cab XML, no cpusets)."""
    agents = {}
    try:
        for name in ("cab1", "cab2", "cab3"):
            d = tmp_path / name
            d.mkdir()
            agents[name] = Agent(d, str(CAB), "none", "unused", ["--host", name]).start()
        c1, c2, c3 = (agents[n].client for n in ("cab1", "cab2", "cab3"))
        c1.allocate("a", "CPU_LIST=0-5")    # cab1: 2 + 8 free, socket 1 whole
        c2.allocate("a", "CPU_LIST=0-5,8-13")  # cab2: 2 + 2 free: 4 cores only across sockets
        c3.allocate("a", "CPU_LIST=0-3")    # cab3: 4 + 8 free
        ranking = rank_hosts("CORES=4", {n: a.client for n, a in agents.items()})
        # cab3 fills its broken socket (keeps socket 1 whole) like cab1 cannot (2 free there).
        assert ranking.hosts == ["cab3", "cab1", "cab2"]
        assert [a["placement"]["cpus"] for _, a in ranking.ranked] == ["4-7", "8-11", "6-7,14-15"]
        waiting = rank_hosts("CORES=4;WAIT", {n: a.client for n, a in agents.items()})
        assert waiting.hosts == ["cab3", "cab1"] and waiting.rejected["cab2"].startswith("wait:")
    finally:
        for a in agents.values():
            a.stop()


def test_slurm_prolog_and_epilog_scripts(live_agent):
    """examples/slurm: the prolog allocates and creates the cpuset, the job runs through
    run-in, the epilog kills what is left and removes it; a second epilog is harmless."""
    agent, backend = live_agent
    env = {**os.environ, "SLURM_JOB_ID": "555", "SLURM_JOB_UID": "0", "TOPOSCHED_AGENT": f"unix:{agent.sock}",
           "TOPOSCHED_TOKEN_FILE": str(agent.token_file), "TOPOSCHED": " ".join(CLI), "TOPOSCHED_REQUIREMENT": "PUS=1"}
    slurm = REPO / "examples" / "slurm"
    subprocess.run([str(slurm / "toposched-prolog.sh")], env=env, check=True, timeout=60)
    assert backend.exists("555")
    job = subprocess.Popen([*CLI, "run-in", "--job", "555", "--agent", f"unix:{agent.sock}", "--", "sleep", "300"], env=env)
    deadline = time.monotonic() + 30
    while job.pid not in backend.procs("555") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.pid in backend.procs("555")
    subprocess.run([str(slurm / "toposched-epilog.sh")], env=env, check=True, timeout=60)
    assert job.wait(timeout=10) == -signal.SIGKILL and not backend.exists("555")
    subprocess.run([str(slurm / "toposched-epilog.sh")], env=env, check=True, timeout=60)
    # A job without a requirement gets no cpuset and does not fail the prolog.
    env2 = {**env, "SLURM_JOB_ID": "556", "TOPOSCHED_REQUIREMENT": "", "PATH": "/usr/bin:/bin"}
    subprocess.run([str(slurm / "toposched-prolog.sh")], env=env2, check=True, timeout=60)
    assert not backend.exists("556")


def test_non_root_job_binds_itself_through_the_agent(tmp_path):
    """A job's user (not root) cannot write cgroup.procs; run-in asks the agent, which
    checks the caller's uid from the kernel and moves exactly the caller. Another user is
    refused."""
    prefix = f"toposched_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    backend = _backend_or_skip("auto", prefix)
    if shutil.which("lstopo-no-graphics") is None and shutil.which("lstopo") is None:
        pytest.skip("hwloc's lstopo is not installed")
    import tempfile
    from toposched import cli

    cli.build_parser()  # import every module now: the child below cannot read root's Python
    import toposched.commands.run_in  # noqa: F401
    import toposched.tokens  # noqa: F401
    public = Path(tempfile.mkdtemp(prefix="toposched-test-"))
    public.chmod(0o755)
    nobody = 65534
    agent = Agent(tmp_path, "live", backend.version, prefix, sock=public / "agent.sock")
    try:
        agent.start()
        assert agent.client.allocate("401", "PUS=1", uid=nobody)[0] == 200
        assert agent.client.allocate("402", "PUS=1;SHARED", uid=12345)[0] == 200

        def run_as_nobody(job: str) -> tuple[int, str]:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # child: become nobody, then run-in as a user's batch script would
                try:
                    os.close(r)
                    os.dup2(w, 1)
                    os.dup2(w, 2)
                    sys.stdout = os.fdopen(1, "w", closefd=False)  # not pytest's capture
                    sys.stderr = os.fdopen(2, "w", closefd=False)
                    os.setgroups([])
                    os.setgid(nobody)
                    os.setuid(nobody)
                    code = cli.main(["run-in", "--job", job, "--agent", f"unix:{agent.sock}", "--",
                                     "grep", "Cpus_allowed_list", "/proc/self/status"])
                except BaseException:
                    import traceback
                    traceback.print_exc()
                    code = 70
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(locals().get("code", 70))
            os.close(w)
            with os.fdopen(r) as f:
                out = f.read()
            return os.waitpid(pid, 0)[1], out

        status, out = run_as_nobody("401")
        assert os.waitstatus_to_exitcode(status) == 0, out
        assert parse_cpulist(_status_field(out, "Cpus_allowed_list")) == backend.cpus("401")
        status, out = run_as_nobody("402")
        assert os.waitstatus_to_exitcode(status) == 2
        assert "would not bind job 402: uid 65534 may not bind into job 402" in out
    finally:
        agent.stop()
        shutil.rmtree(public, ignore_errors=True)
        _cleanup_cgroups(backend.parent)


def test_reconcile_releases_jobs_that_no_longer_exist(live_agent):
    """The resource manager's list of live jobs is the truth after a missed release: every
    other allocation is released, its processes killed, its cpuset removed."""
    agent, backend = live_agent
    assert agent.client.allocate("601", "PUS=1")[0] == 200
    assert agent.client.allocate("602", "PUS=1;SHARED")[0] == 200
    left = subprocess.Popen(["sleep", "300"])
    backend.attach("602", left.pid)
    r = subprocess.run([*CLI, "node-ctl", "--agent", f"unix:{agent.sock}", "--token-file", str(agent.token_file),
                        "reconcile", "--jobs", "601"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"kept": ["601"], "killed_processes": 1, "released": ["602"]}
    assert left.wait(timeout=10) == -signal.SIGKILL
    assert backend.exists("601") and not backend.exists("602")
    assert AgentClient(f"unix:{agent.sock}").reconcile([])[0] == 401  # a write: token needed


def test_second_agent_on_the_same_socket_is_refused(cab_agent, tmp_path):
    (tmp_path / "other").mkdir()
    other = Agent(tmp_path / "other", str(CAB), "none", "unused", sock=cab_agent.sock)
    r = subprocess.run(other.args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "another process is serving on" in r.stderr
    assert cab_agent.client.health()["ok"]


def test_loopback_tcp_listen(tmp_path):
    """--listen HOST:0 takes a free port and says which; the same API over TCP, where bind
    needs the token (there is no kernel peer to check)."""
    agent = Agent(tmp_path, str(CAB), "none", "unused")
    agent.args[agent.args.index("--listen") + 1] = "127.0.0.1:0"
    try:
        agent.start()
        where = agent.log[-1].strip().rsplit(" ", 1)[1]
        assert where.startswith("127.0.0.1:") and int(where.rsplit(":", 1)[1]) > 0
        c = AgentClient(where, TOKEN)
        assert c.health()["ok"] and c.allocate("t1", "CORES=2")[1]["cpus"] == "0-1"
        assert AgentClient(where).bind("t1")[0] == 401
        assert AgentClient(where).release("t1")[0] == 401 and c.release("t1")[0] == 200
    finally:
        agent.stop()


def test_listen_port_out_of_range_is_one_line(tmp_path):
    """--listen HOST:99999 is one line naming --listen (exit 2), not 'internal error:
    OverflowError ... a bug'."""
    agent = Agent(tmp_path, str(CAB), "none", "unused")
    agent.args[agent.args.index("--listen") + 1] = "127.0.0.1:99999"
    r = subprocess.run(agent.args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "error: --listen 127.0.0.1:99999: " in r.stderr and "internal error" not in r.stderr, r.stderr


def _garbage_server():
    """A TCP listener on loopback answering every connection with a non-HTTP line (an SSH
    server, say, at the address given as the agent's)."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv, "127.0.0.1:%d" % srv.getsockname()[1]


def test_node_ctl_and_run_in_bad_agent_address_or_peer_is_one_line(tmp_path):
    """An --agent that is no address (no port, a port that is not a number) or a peer that
    does not speak HTTP: one line naming --agent, exit 2 (was 'internal error: ValueError'
    or 'BadStatusLine ... a bug')."""
    srv, garbage = _garbage_server()
    try:
        for agent, says in (("localhost", "--agent localhost: "), ("node1:abc", "--agent node1:abc: "), (garbage, f"node agent at {garbage}: ")):
            for cmd in (["node-ctl", "--agent", agent, "state"], ["run-in", "--agent", agent, "--job", "1", "--", "true"]):
                r = subprocess.run([*CLI, *cmd], capture_output=True, text=True, timeout=60)
                assert r.returncode == 2 and r.stderr.startswith("error: ") and says in r.stderr, (cmd, r.stderr)
                assert "internal error" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
        # the service's filter: such a host is rejected with the reason, the others still ranked
        ranking = rank_hosts("CORES=1", {"n1": AgentClient(garbage)})
        assert ranking.hosts == [] and ranking.rejected["n1"].startswith("unreachable: ")
    finally:
        srv.close()


def test_node_agents_file_refuses_an_address_without_a_port(tmp_path):
    from toposched.errors import InputError
    from toposched.live.agents import AgentDirectory

    f = tmp_path / "agents.toml"
    f.write_text('[agents]\nn01 = "10.0.0.2:abc"\n')
    with pytest.raises(InputError, match="agents.n01") as e:
        AgentDirectory.load(f)
    assert "HOST:PORT" in str(e.value)


def test_run_in_refuses_a_job_id_that_would_change_the_url(cab_agent, tmp_path):
    """run-in --job '7?x=1' looked up GET /v1/jobs/7?x=1, which the agent reads as job 7:
    the command ran in job 7's CPUs. A job id the agent could never hold is refused first,
    naming --job, and nothing runs."""
    assert cab_agent.client.allocate("7", "CORES=1")[0] == 200
    marker = tmp_path / "ran"
    for job in ("7?x=1", "7#frag", "../7"):
        r = subprocess.run([*CLI, "run-in", "--agent", f"unix:{cab_agent.sock}", "--job", job, "--", "touch", str(marker)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and r.stderr.startswith(f"error: --job {job}: ") and r.stderr.count("\n") == 1, r.stderr
        assert not marker.exists()
    with pytest.raises(ValueError, match="job id"):
        cab_agent.client.job("7?x=1")


def test_second_agent_on_the_same_state_is_refused(cab_agent, tmp_path):
    """Two agents on one --state (two sockets) each kept its own table in memory and gave
    the same CPUs to different jobs; the second now refuses to start, as serve does."""
    (tmp_path / "other").mkdir()
    other = Agent(tmp_path / "other", str(CAB), "none", "unused")
    other.args[other.args.index("--state") + 1] = str(tmp_path / "state")  # cab_agent's
    r = subprocess.run(other.args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "another toposched node-agent uses this --state directory" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1
    assert cab_agent.client.health()["ok"]


@pytest.mark.parametrize("prefix", ["../x", "a/b", ""])
def test_cgroup_prefix_that_is_no_directory_name_is_one_line(tmp_path, prefix):
    """--cgroup-prefix ../x was 'internal error: ValueError: job id '../x' must be ... a bug'
    (the check is right, a path out of the cgroup base; the message was not)."""
    agent = Agent(tmp_path, str(CAB), "auto", prefix)
    r = subprocess.run(agent.args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "argument --cgroup-prefix: " in r.stderr and "internal error" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1


def test_a_huge_cpu_list_is_refused_at_once(cab_agent):
    """POST /v1/query (no token needed) with CPU_LIST=0-99999999999 made the agent build a
    set of 10^11 numbers: 12 GB in 30 s, the client timed out, the machine headed for the
    OOM killer. CPU numbers are below 65536 (Linux's NR_CPUS is at most 8192), and a list
    names at most 65536 CPUs in all, however it is written."""
    import time as _time

    from toposched.node.cpulist import MAX_CPU, CpuListError

    assert parse_cpulist(f"0-{MAX_CPU}") == frozenset(range(MAX_CPU + 1))
    for text in ("0-99999999999", f"{MAX_CPU + 1}", ",".join(["0-65535"] * 3)):
        with pytest.raises(CpuListError):
            parse_cpulist(text)
    c = AgentClient(cab_agent.client.address, TOKEN, timeout_s=10)
    t0 = _time.monotonic()
    for path, body in (("/v1/query", {"requirement": "CPU_LIST=0-99999999999"}),
                       ("/v1/allocate", {"job": "big", "requirement": "CPU_LIST=" + ",".join(["0-65535"] * 1000)})):
        code, answer = c.request("POST", path, body)
        assert code == 400 and answer["field"] == "CPU_LIST", answer
    assert _time.monotonic() - t0 < 5
    assert c.health()["ok"]


def test_rank_hosts_asks_the_agents_at_once(tmp_path):
    """rank_hosts asked the hosts one after another: with k hung hosts (accepting, never
    answering) a requirement cost k times the agents' timeout (50 s for 10 hung hosts at
    the default 5 s, past the clients' own timeouts). The hosts are asked together: the
    slowest one bounds it. The answer is the same whatever order the agents answer in."""
    import socket
    import time as _time

    silent = []
    for _ in range(3):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        silent.append(s)
    try:
        agents = {f"h{i}": AgentClient("127.0.0.1:%d" % s.getsockname()[1], timeout_s=1.5) for i, s in enumerate(silent)}
        t0 = _time.monotonic()
        ranking = rank_hosts("CORES=1", agents)
        took_s = _time.monotonic() - t0
        assert ranking.hosts == [] and sorted(ranking.rejected) == ["h0", "h1", "h2"]
        assert all(r.startswith("unreachable: ") for r in ranking.rejected.values())
        assert took_s < 3.0, f"{took_s:.1f} s for 3 hung hosts at 1.5 s each"
    finally:
        for s in silent:
            s.close()


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
def test_a_stopped_agent_removes_its_socket_and_only_its_own(tmp_path, how):
    """A clean stop (SIGTERM from systemd, Ctrl-C) removes the agent's socket file; a file
    another process has put at the path since is left alone."""
    agent = Agent(tmp_path, str(CAB), "none", "unused").start()
    assert agent.sock.is_socket()
    agent.proc.send_signal(getattr(signal, how))
    assert agent.proc.wait(timeout=30) == 0
    assert not agent.sock.exists()
    # the path taken over while the agent runs: its stop leaves that file
    agent = Agent(tmp_path, str(CAB), "none", "unused").start()
    moved = tmp_path / "moved.sock"
    agent.sock.rename(moved)
    agent.sock.write_text("someone else's\n")
    agent.stop()
    assert agent.proc.returncode == 0
    assert agent.sock.read_text() == "someone else's\n"


def test_reserve_cpus_outside_the_topology_names_them(tmp_path):
    """'--reserve-cpus names PUs the topology does not have' said neither which nor what
    the node has."""
    agent = Agent(tmp_path, str(CAB), "none", "unused")
    agent.args += ["--reserve-cpus", "0,15-17"]
    r = subprocess.run(agent.args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"error: --reserve-cpus 0,15-17: PUs 16-17 are not in the topology {CAB} (PUs 0-15)" in r.stderr


def test_node_ctl_query_of_an_impossible_requirement_exits_2_as_allocate_does(cab_agent):
    """The help says 2 for an impossible request and 1 for wait/busy; query answered
    'impossible' (CORES=99 on a 16-core node) exited 1, as if it could fit later."""
    base = [*CLI, "node-ctl", "--agent", f"unix:{cab_agent.sock}", "--token-file", str(cab_agent.token_file)]
    q = subprocess.run([*base, "query", "--requirement", "CORES=99"], capture_output=True, text=True, timeout=60)
    a = subprocess.run([*base, "allocate", "--job", "7", "--requirement", "CORES=99"], capture_output=True, text=True, timeout=60)
    assert (q.returncode, a.returncode) == (2, 2), (q.stderr, a.stderr)
    assert json.loads(q.stdout)["status"] == "impossible" and q.stderr.count("\n") == 1 and "Traceback" not in q.stderr
    ok = subprocess.run([*base, "query", "--requirement", "CORES=4"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and json.loads(ok.stdout)["status"] == "ok"

"""slurm-bridge without a Slurm (runs everywhere; tests/test_live_slurm.py runs it against a
real one): squeue's time limits, sinfo's node states, failing commands (retried, logged, then
an error, never silently dropped), and whole passes against a real service and a scripted
Slurm: starts under EASY and FCFS, ends, drains, reconciliation, re-placing a job whose
nodes went down before it started."""

from __future__ import annotations

import pytest

from live_util import ServiceProcess
from toposched.live.bridge import Bridge, SlurmCommands, SlurmError, SlurmJob, node_is_good, parse_time_limit


@pytest.mark.parametrize(
    "text, seconds",
    [("1:00", 60), ("0:30", 30), ("10:00", 600), ("1:00:00", 3600), ("2-03:04:05", 2 * 86400 + 3 * 3600 + 4 * 60 + 5), ("UNLIMITED", 99), ("5", 300)],
)
def test_time_limits(text, seconds):
    assert parse_time_limit(text, 99) == seconds


@pytest.mark.parametrize(
    "state, good",
    [("idle", True), ("alloc", True), ("mix", True), ("comp", True), ("idle~", True), ("drain", False), ("drng", False),
     ("down", False), ("down*", False), ("idle*", False), ("fail", False), ("maint", False)],
)
def test_node_states(state, good):
    assert node_is_good(state) is good


def test_failing_commands_are_retried_and_logged(tmp_path):
    lines: list[str] = []
    s = SlurmCommands(timeout_s=5, retries=3, log=lines.append)
    with pytest.raises(SlurmError, match="failed 3 times"):
        s.run("sh", "-c", "echo boom >&2; exit 1")
    assert len(lines) == 3 and all("boom" in ln for ln in lines)
    # a timeout is a failure too
    s = SlurmCommands(timeout_s=0.2, retries=2, log=lines.append)
    with pytest.raises(SlurmError, match="timed out"):
        s.run("sleep", "5")
    # a command that works the second time
    flag = tmp_path / "flag"
    assert s.run("sh", "-c", f"if [ -e {flag} ]; then echo ok; else touch {flag}; exit 1; fi") == "ok\n"


# The bridge's pass against a real service and a scripted Slurm ---------------------------


class FakeSlurm:
    """squeue/sinfo/scontrol as data: what a pass reads, and the commands it issues."""

    def __init__(self, nodes: list[str]) -> None:
        self.table: dict[str, SlurmJob] = {}
        self.states = {n: "idle" for n in nodes}
        self.commands: list[tuple[str, ...]] = []

    def submit(self, job: str, nodes: int, walltime_s: int = 600, submit_s: int = 0) -> None:
        self.table[job] = SlurmJob(job, "PENDING", 0, nodes, walltime_s, [], [], submit_s, None)

    def jobs(self, partition, unlimited_s):
        return [SlurmJob(**vars(j)) for j in self.table.values()]

    def node_states(self, partition):
        return dict(self.states)

    def start(self, job, nodes):
        self.commands.append(("start", job, ",".join(nodes)))
        j = self.table[job]
        j.priority, j.req_nodes = 1, list(nodes)
        if not set(nodes) & {n for n, s in self.states.items() if s != "idle" and s != "alloc"}:
            j.state, j.node_list = "RUNNING", list(nodes)

    def run(self, *cmd, ok_errors=()):
        self.commands.append(cmd)
        if cmd[:2] == ("scontrol", "hold"):
            j = self.table[cmd[2]]
            j.priority, j.req_nodes = 0, []
        return ""


def _bridge(svc, slurm, queue="easy"):
    return Bridge(svc.client(), slurm, "topo", queue=queue, log=lambda s: None)


def test_bridge_pass_starts_ends_drains_and_reconciles(tmp_path):
    with ServiceProcess(tmp_path / "svc", system="toy18", alloc="isolated") as svc:
        names = [f"toy18n{i:02d}" for i in range(18)]
        slurm = FakeSlurm(names)
        c = svc.client()
        # Slurm already runs a job the service does not know: reconciled at the first pass
        slurm.table["1"] = SlurmJob("1", "RUNNING", 1, 3, 600, names[:3], [], 0, 0)
        for j, n in (("2", 9), ("3", 9), ("4", 3)):
            slurm.submit(j, n, submit_s=int(j))
        b = _bridge(svc, slurm)
        counts = b.one_pass(reconcile=True)
        assert c.state()["allocations"]["1"] == names[:3]
        # 15 free: job 2 (9 nodes, one pod) starts; job 3 cannot and is reserved; job 4 backfills
        started = [cmd[1] for cmd in slurm.commands if cmd[0] == "start"]
        assert started == ["2", "4"] and counts["started"] == 2
        held = c.state()["allocations"]
        assert set(held) == {"1", "2", "4"} and not set(held["2"]) & set(held["4"])
        assert c.state()["reservation"]["job"] == "3"
        # job 2 ends: its allocation is released, job 3 starts
        slurm.table["2"].state = "COMPLETED"
        b.one_pass()
        assert "2" not in c.state()["allocations"] and slurm.commands[-1][:2] == ("start", "3")
        # a node goes down in Slurm: drained in the service; back up: resumed
        slurm.states[names[17]] = "down*"
        b.one_pass()
        assert c.state()["drained"] == [names[17]]
        slurm.states[names[17]] = "idle"
        b.one_pass()
        assert c.state()["drained"] == []
        # Slurm runs job 4 elsewhere than the service thinks: reconciled to Slurm's view
        taken = {n for ns in c.state()["allocations"].values() for n in ns}
        elsewhere = [n for n in names if n not in taken][:3]
        slurm.table["4"].node_list = elsewhere
        b.one_pass()
        assert c.state()["allocations"]["4"] == elsewhere
        # a job released to a node that goes bad before it starts is held again and re-placed
        slurm.table["1"].state = "COMPLETED"
        slurm.submit("5", 3, submit_s=5)
        slurm.states[names[0]] = "drain"
        b.one_pass()
        j5 = slurm.table["5"]
        assert j5.state == "RUNNING" and names[0] not in j5.node_list
        slurm.table["3"].state = "COMPLETED"
        b.one_pass()
        slurm.table["6"] = SlurmJob("6", "PENDING", 1, 3, 600, [], [], 6, None)
        assert c.allocate("6", 3, 600)[0] == 200  # placed, released in Slurm, not started yet
        slurm.table["6"].req_nodes = c.state()["allocations"]["6"]
        gone = slurm.table["6"].req_nodes[0]
        slurm.states[gone] = "down"
        b.one_pass()
        assert ("scontrol", "hold", "6") in slurm.commands and "6" not in c.state()["allocations"]
        b.one_pass()  # placed anew, away from the node that went down
        assert slurm.table["6"].state == "RUNNING" and gone not in slurm.table["6"].node_list


def test_fcfs_bridge_stops_at_the_first_job_that_cannot_start(tmp_path):
    with ServiceProcess(tmp_path / "svc", system="toy18", alloc="linear") as svc:
        slurm = FakeSlurm([f"toy18n{i:02d}" for i in range(18)])
        for j, n in (("1", 10), ("2", 10), ("3", 2)):
            slurm.submit(j, n, submit_s=int(j))
        _bridge(svc, slurm, queue="fcfs").one_pass(reconcile=True)
        assert [cmd[1] for cmd in slurm.commands if cmd[0] == "start"] == ["1"]


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--poll-s", "0"),  # a pass after a pass without pause: squeue and sinfo hammered
        ("--poll-s", "-1"),
        ("--poll-s", "nan"),
        ("--slurm-timeout-s", "0"),  # every Slurm command timed out
        ("--slurm-timeout-s", "inf"),
        ("--partition", ""),
        ("--partition", 'topo"; os.execute("id") --'),  # Lua source, through --print-job-submit-lua
        ("--partition", "a,b"),
        ("--service", "ftp://host:21"),
        ("--service", "http://localhost"),
        ("--service", "localhost:abc"),
        ("--service", "unix:"),
    ],
)
def test_bad_arguments_are_refused_before_slurm_is_asked(tmp_path, flag, value):
    """Checked by the parser, one line naming the flag, exit 2, before any Slurm command or
    service request: they were taken as given (--poll-s 0 or nan, a partition name that
    breaks the Lua it is written into, a service URL that could never be reached)."""
    import os
    import subprocess
    import sys

    from live_util import write_token

    write_token(tmp_path / "token")
    for extra in (["--once"], ["--print-job-submit-lua"]):
        r = subprocess.run(
            [sys.executable, "-m", "toposched.cli", "slurm-bridge", "--token-file", str(tmp_path / "token"), flag, value, *extra],
            capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": "/nonexistent"},  # no squeue to reach
        )
        assert r.returncode == 2 and f"argument {flag}: " in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert "slurm command" not in r.stderr and not r.stdout


def test_good_arguments_pass_the_parser():
    from toposched.commands.slurm_bridge import partition_name, service_url

    assert partition_name("topo-1_a.b") == "topo-1_a.b"
    assert service_url("127.0.0.1:8700") == "http://127.0.0.1:8700"
    assert service_url("http://[::1]:8700") == "http://[::1]:8700"
    assert service_url("unix:/run/toposched.sock") == "unix:/run/toposched.sock"


def test_once_with_slurm_unreachable_is_one_line_not_a_bug(tmp_path):
    """slurm-bridge --once while slurmctld cannot be reached: after its retries the pass
    failed with 'internal error: SlurmError: ... (a bug in toposched: rerun with --debug
    and report the traceback)' over several lines (squeue's own). It is the site's Slurm,
    not a bug: one line, exit 1."""
    import os
    import subprocess
    import sys

    from live_util import write_token

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("squeue", "sinfo", "scontrol"):
        (bin_dir / tool).write_text("#!/bin/sh\necho 'error: Unable to contact slurm controller' >&2\necho 'fatal: giving up' >&2\nexit 1\n")
        (bin_dir / tool).chmod(0o755)
    write_token(tmp_path / "token")
    r = subprocess.run(
        [sys.executable, "-m", "toposched.cli", "slurm-bridge", "--token-file", str(tmp_path / "token"), "--once", "--slurm-timeout-s", "5"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 1 and last.startswith("error: slurm-bridge --once: ") and "Unable to contact slurm controller" in last, r.stderr
    assert "a bug" not in r.stderr and "internal error" not in r.stderr
    assert "fatal: giving up" in last  # squeue's lines joined into the one line

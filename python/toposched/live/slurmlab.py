"""A real Slurm cluster of many nodes on one machine, for tests and experiments.

``SlurmLab(workdir, fabric)`` writes ``slurm.conf`` and ``topology.conf`` for a fabric
(leaves and pods become ``SwitchName=`` lines), and ``start()`` runs, all under ``workdir``
with their own loopback ports: MariaDB (own datadir and socket), ``slurmdbd``,
``slurmctld`` and one ``slurmd -N NODE`` per node (Debian 12's Slurm 22.05, plain
``slurm-wlm``, ``auth/none``, no munge: see docs/live.md). ``stop()``
cancels the jobs and stops every process it started, by process id. Needs root (slurmd
runs jobs as their user) and the Debian packages ``slurm-wlm slurmdbd mariadb-server``.

Used by tests/test_live_slurm.py; meant to be reused to compare real Slurm with the
simulator job by job.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import hostlist

from ..fabric_spec import FabricSpec

PACKAGES = ("slurm-wlm", "slurmdbd", "mariadb-server")
BINARIES = ("slurmctld-wlm", "slurmd-wlm", "slurmdbd", "sbatch", "squeue", "scontrol", "sacct", "sacctmgr", "sinfo", "mariadbd", "mariadb-install-db")


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]


def _which(b: str) -> str:
    return shutil.which(b) or str(Path("/usr/sbin", b))


def free_ports(n: int) -> list[int]:
    """n distinct free TCP ports on loopback (bound and released at once)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def topology_conf_text(spec: FabricSpec) -> str:
    """Slurm topology.conf lines for a fabric: leaf switches, pod switches, one root."""
    lines = []
    for pod in spec.pods:
        for leaf in pod.leaves:
            lines.append(f"SwitchName={leaf.name} Nodes={hostlist.collect_hostlist(list(leaf.nodes))}")
    # The pod switches always: a 2-level fabric's one pod is its top switch, without which
    # Slurm lets no job span two leaves (the fabric does). A pod of one leaf named as its
    # leaf (a lone leaf of a 3-level topology.conf, a one-leaf file) is that leaf itself: a
    # second SwitchName line for it is a duplicate.
    for pod in spec.pods:
        if not (len(pod.leaves) == 1 and pod.leaves[0].name == pod.name):
            lines.append(f"SwitchName={pod.name} Switches={','.join(leaf.name for leaf in pod.leaves)}")
    if spec.levels >= 3 or len(spec.pods) > 1:
        taken = {p.name for p in spec.pods} | {leaf.name for p in spec.pods for leaf in p.leaves}
        root = next(n for n in ("root", *(f"root{i}" for i in range(1, len(taken) + 2))) if n not in taken)
        lines.append(f"SwitchName={root} Switches={','.join(p.name for p in spec.pods)}")
    return "\n".join(lines) + "\n"


@dataclass
class SlurmLab:
    workdir: Path
    fabric: FabricSpec
    cluster: str = "toposlab"
    partition: str = "topo"
    #: hold jobs of the partition with job_submit.lua (for toposched slurm-bridge)
    hold_with_lua: bool = True
    accounting: bool = True
    #: topology/tree (Slurm's own topology-aware placement) or topology/none
    topology_plugin: str = "topology/tree"
    #: more partitions over the same nodes, not held (e.g. to run a stream under Slurm's own placement)
    extra_partitions: tuple[str, ...] = ()
    #: whole PartitionName= lines instead of the default partition (the first one Default=YES;
    #: ``partition`` must name it)
    partition_lines: tuple[str, ...] = ()
    #: slurm.conf SelectType (select/linear or select/cons_tres)
    select_type: str = "select/linear"
    #: slurm.conf SchedulerType and SchedulerParameters
    scheduler_type: str = "sched/backfill"
    scheduler_parameters: str = "bf_interval=1,sched_min_interval=100000"
    #: slurm.conf SlurmctldDebug (debug2 logs each node's epilog completion, when it is free again)
    ctld_debug: str = "info"
    #: run an (empty) Epilog on every node: each node then reports MESSAGE_EPILOG_COMPLETE and
    #: stays COMPLETING until it does (without one, slurmd answers "already complete" at once)
    epilog: bool = False
    #: more slurm.conf lines (e.g. PriorityType=priority/multifactor and its weights)
    extra_conf: tuple[str, ...] = ()
    #: sacctmgr commands (accounts, QOS) run once slurmdbd is up, before the controller starts
    accounting_setup: tuple[tuple[str, ...], ...] = ()
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _restore_signals: Callable[[], None] = field(default=lambda: None, repr=False)

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir).resolve()
        self.nodes = list(self.fabric.node_names)
        for d in ("state", "spool", "log", "db", "jobs"):
            (self.workdir / d).mkdir(parents=True, exist_ok=True)
        ctld, dbd, mysql, *node_ports = free_ports(3 + 1 + len(self.nodes))
        self.ctld_port, self.dbd_port, self.mysql_port = ctld, dbd, mysql
        self.slurmd_port, self.node_ports = node_ports[0], node_ports[1:]
        self.conf = self.workdir / "slurm.conf"
        # slurmstepd makes unix sockets SPOOL/NODE/NODE_JOB.STEP, at most 108 bytes: a deep
        # scratch directory (pytest's) gets a short spool of its own under /tmp instead
        self.spool = self.workdir / "spool"
        if len(str(self.spool)) > 50:
            import tempfile

            self.spool = Path(tempfile.mkdtemp(prefix="toposched-spool-"))

    # configuration ---------------------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def write_config(self) -> None:
        d = self.workdir
        node_lines = [
            f"NodeName={n} NodeHostname=localhost Port={p} CPUs=1 State=UNKNOWN" for n, p in zip(self.nodes, self.node_ports)
        ]
        acct = (
            [
                "AccountingStorageType=accounting_storage/slurmdbd",
                "AccountingStorageHost=localhost",
                f"AccountingStoragePort={self.dbd_port}",
                "JobAcctGatherType=jobacct_gather/none",
            ]
            if self.accounting
            else []
        )
        conf = [
            f"ClusterName={self.cluster}",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}",
            "AuthType=auth/none",
            "CredType=cred/none",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={d}/state",
            f"SlurmdSpoolDir={self.spool}/%n",
            f"SlurmctldPidFile={d}/ctld.pid",
            f"SlurmdPidFile={d}/slurmd.%n.pid",
            f"SlurmctldLogFile={d}/log/ctld.log",
            f"SlurmctldDebug={self.ctld_debug}",
            *([f"Epilog={d}/epilog.sh"] if self.epilog else []),
            f"SlurmdLogFile={d}/log/slurmd.%n.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            f"SchedulerType={self.scheduler_type}",
            *([f"SchedulerParameters={self.scheduler_parameters}"] if self.scheduler_parameters else []),
            f"SelectType={self.select_type}",
            *(["SelectTypeParameters=CR_Core"] if self.select_type == "select/cons_tres" else []),
            f"TopologyPlugin={self.topology_plugin}",
            *self.extra_conf,
            "MpiDefault=none",
            "ReturnToService=2",
            "MinJobAge=3600",
            "KillWait=2",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={d}/log/jobcomp.txt",
            *(["JobSubmitPlugins=lua"] if self.hold_with_lua else []),
            *acct,
            *node_lines,
            *(self.partition_lines or (f"PartitionName={self.partition} Nodes={hostlist.collect_hostlist(self.nodes)} Default=YES MaxTime=INFINITE State=UP",)),
            *(f"PartitionName={p} Nodes={hostlist.collect_hostlist(self.nodes)} Default=NO MaxTime=INFINITE State=UP" for p in self.extra_partitions),
        ]
        self.conf.write_text("\n".join(conf) + "\n")
        if self.epilog:
            (d / "epilog.sh").write_text("#!/bin/sh\nexit 0\n")
            (d / "epilog.sh").chmod(0o755)
        (d / "topology.conf").write_text(topology_conf_text(self.fabric))
        if self.hold_with_lua:
            lua = (Path(__file__).parent / "job_submit.lua").read_text()
            lua = lua.replace('local TOPOSCHED_PARTITION = "topo"', f'local TOPOSCHED_PARTITION = "{self.partition}"')
            (d / "job_submit.lua").write_text(lua)
        if self.accounting:
            dbd = d / "slurmdbd.conf"
            dbd.write_text(
                "\n".join(
                    [
                        "AuthType=auth/none",
                        "DbdHost=localhost",
                        f"DbdPort={self.dbd_port}",
                        "SlurmUser=root",
                        f"PidFile={d}/slurmdbd.pid",
                        f"LogFile={d}/log/slurmdbd.log",
                        "StorageType=accounting_storage/mysql",
                        "StorageHost=127.0.0.1",
                        f"StoragePort={self.mysql_port}",
                        "StorageUser=root",
                        f"StorageLoc=slurm_acct_{self.cluster}",
                    ]
                )
                + "\n"
            )
            dbd.chmod(0o600)

    # processes -------------------------------------------------------------------------

    def _spawn(self, name: str, cmd: list[str], argv0: str | None = None) -> subprocess.Popen[bytes]:
        """Start a daemon. ``argv0``: the name it runs under. Slurm decides whether it runs
        inside slurmctld or slurmd by its program name, and Debian's binaries are called
        slurmctld-wlm / slurmd-wlm: under those names slurmctld's accounting agent is never
        set up and it crashes on its first message to slurmdbd."""
        log = open(self.workdir / "log" / f"{name}.out", "ab")
        args = [argv0, *cmd[1:]] if argv0 else cmd
        # cwd: the scratch directory, so that anything a daemon drops (a core file) lands there
        p = subprocess.Popen(args, executable=cmd[0], env=self.env, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.procs[name] = p
        return p

    def run(self, *cmd: str, timeout_s: float = 30, check: bool = True) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, timeout=timeout_s)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
        return r

    def _wait(self, what: str, ok: Callable[[], object], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ok():
                return
            time.sleep(0.3)
        raise RuntimeError(f"{what} not ready after {timeout_s:.0f} s; logs in {self.workdir / 'log'}")

    def _port_open(self, port: int) -> bool:
        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", port)) == 0

    def start_mariadb(self) -> None:
        db = self.workdir / "db"
        if not (db / "mysql").exists():
            r = subprocess.run(
                [_which("mariadb-install-db"), "--no-defaults", f"--datadir={db}", "--user=root", "--auth-root-authentication-method=normal", "--skip-test-db"],
                capture_output=True, text=True, timeout=180,
            )
            if r.returncode != 0:
                raise RuntimeError(f"mariadb-install-db failed: {r.stderr[-800:]}")
        self._spawn(
            "mariadb",
            [
                _which("mariadbd"), "--no-defaults", f"--datadir={db}", f"--socket={self.workdir}/mysql.sock", f"--port={self.mysql_port}",
                "--bind-address=127.0.0.1", "--user=root", f"--pid-file={self.workdir}/mysql.pid", "--skip-name-resolve",
                "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M", "--performance-schema=OFF",
            ],
        )
        self._wait("MariaDB", lambda: self._port_open(self.mysql_port), 60)

    def start(self, timeout_s: float = 90) -> "SlurmLab":
        self.write_config()
        if self.accounting:
            self.start_mariadb()
            self._spawn("slurmdbd", [_which("slurmdbd"), "-D"])
            self._wait("slurmdbd", lambda: self._port_open(self.dbd_port), 60)
            # register the cluster before the controller starts (22.05 would otherwise log and retry)
            self.run("sacctmgr", "-i", "add", "cluster", self.cluster, check=False)
            for cmd in self.accounting_setup:
                r = self.run(*cmd, check=False)
                # a lab directory used before keeps its database: what it added is there
                if r.returncode != 0 and not (cmd[2:3] == ("add",) and "Nothing new added" in r.stdout + r.stderr):
                    raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {(r.stdout + r.stderr).strip()[-500:]}")
        self._spawn("slurmctld", [_which("slurmctld-wlm"), "-D", "-i", "-f", str(self.conf)], argv0="slurmctld")
        self._wait("slurmctld", lambda: self._port_open(self.ctld_port), 60)
        for n in self.nodes:
            self._spawn(f"slurmd.{n}", [_which("slurmd-wlm"), "-D", "-f", str(self.conf), "-N", n], argv0="slurmd")

        def all_idle() -> bool:
            r = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
            states = dict(line.split() for line in r.stdout.splitlines() if line.strip())
            return len(states) == len(self.nodes) and all(s == "idle" for s in states.values())

        self._wait("all slurmd idle", all_idle, timeout_s)
        return self

    def stop(self) -> None:
        """Cancel jobs, let them end, stop every process started here (by pid)."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self.run("scancel", "--full", check=False)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                r = self.run("squeue", "-h", "-o", "%i", check=False)
                if r.returncode == 0 and not r.stdout.strip():
                    break
                time.sleep(0.5)
        order = [k for k in self.procs if k.startswith("slurmd.")] + ["slurmctld", "slurmdbd", "mariadb"]
        for name in order:
            p = self.procs.get(name)
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for name in order:
            p = self.procs.get(name)
            if p is None:
                continue
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        self.procs.clear()
        if self.spool.parent != self.workdir:
            shutil.rmtree(self.spool, ignore_errors=True)

    def __enter__(self) -> "SlurmLab":
        self._restore_signals = _stop_on_termination()
        try:
            return self.start()
        except BaseException:
            self.stop()
            self._restore_signals()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            self._restore_signals()

    # jobs ------------------------------------------------------------------------------

    def sbatch(self, nodes: int, time_limit_min: int, sleep_s: int, name: str, extra: list[str] | None = None, partition: str | None = None) -> str:
        script = self.workdir / "jobs" / f"{name}.sh"
        script.write_text(f"#!/bin/sh\nsleep {sleep_s}\n")
        r = self.run(
            "sbatch", "--parsable", "-N", str(nodes), f"--time={time_limit_min}", "-J", name, "-p", partition or self.partition,
            "-o", "/dev/null", "-e", "/dev/null", *(extra or []), str(script),
        )
        return r.stdout.strip().split(";")[0]

    def sacct_dump(self, path: Path, start: str = "2020-01-01") -> str:
        """``sacct -P`` of every job (allocations only, -X), as toposched's sacct reader reads it."""
        fmt = "JobIDRaw,JobID,JobName,Submit,Start,End,Elapsed,ElapsedRaw,Timelimit,NNodes,AllocCPUS,ReqCPUS,NodeList,State,Partition,User"
        r = self.run("sacct", "-P", "-X", "-a", "-S", start, "-E", "now", f"--format={fmt}")
        Path(path).write_text(r.stdout)
        return r.stdout


def _stop_on_termination() -> Callable[[], None]:
    """While a lab runs, SIGTERM and SIGHUP (``timeout``, a closed terminal, a CI runner
    ending the job) leave through the ``with`` block, so that the lab is stopped: killed by
    the signal's default action, the process left slurmctld, every slurmd, slurmdbd and
    MariaDB running, each in a session of its own. The exit status is the signal's
    (128 + n); a second signal while the lab stops is ignored. Returns what puts the
    previous handlers back. Signal handlers belong to the main thread: elsewhere, nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    signals = (signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.getsignal(s) for s in signals}

    def leave(signum: int, _frame: object) -> None:
        for s in signals:
            signal.signal(s, signal.SIG_IGN)  # stop() must finish
        raise SystemExit(128 + signum)

    for s in signals:
        signal.signal(s, leave)

    def restore() -> None:
        for s, handler in previous.items():
            signal.signal(s, handler)

    return restore

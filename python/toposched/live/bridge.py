"""``toposched slurm-bridge``: an external scheduler for one Slurm partition (seed 002's LSF
external scheduler, on Slurm), driving ``toposched serve``.

Jobs of the partition are held at submission by ``job_submit.lua`` (priority 0). Every
``--poll-s`` seconds the bridge makes one pass:

1. **Read Slurm**: ``squeue`` (jobs of the partition, every state) and ``sinfo`` (node states).
2. **Ends**: every allocation the service holds whose job Slurm reports finished (or no
   longer knows) is released.
3. **Reconcile**: if Slurm runs a job of the partition the service does not hold, or on
   other nodes, the service's table is replaced by Slurm's view (``PUT /v1/state``); the
   same at start-up (Slurm is the source of truth after a crash of either side).
4. **Drains**: nodes Slurm marks down, drained, failing or not responding are drained in the
   service; nodes back in service are resumed.
5. **Queue pass**: held jobs in submit order (ties by job id) under the queue policy. EASY:
   each job is asked for with ``reserve`` until one cannot start (it gets the reservation,
   computed by the service on the current state from the running jobs' time limits); later
   jobs are asked for without it, so the service holds them to EASY's backfill rule. FCFS:
   the pass stops at the first job that cannot start. A placed job is started with
   ``scontrol update jobid=J ReqNodeList=NODES`` and ``scontrol release J``.

Every Slurm command runs with a timeout and is retried with back-off, each failure logged;
a pass that still fails is logged and the next pass starts over from Slurm's state, so no
decision is silently dropped. Service requests are retried while the service restarts.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import hostlist

from ..unix_http import JsonObject
from .client import Client, ServiceUnavailable

TERMINAL = {
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT",
    "REVOKED", "SPECIAL_EXIT",
}
HOLDS_NODES = {"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "STAGE_OUT", "SIGNALING", "RESIZING", "STOPPED"}
GOOD_NODE_STATES = {"idle", "alloc", "mix", "comp", "resv", "plnd", "allocated", "mixed", "completing", "reserved", "planned"}
SQUEUE_FORMAT = "%i|%T|%Q|%D|%l|%N|%n|%V|%S|%P"


class SlurmError(Exception):
    """A Slurm command still failing after its retries."""


@dataclass
class SlurmJob:
    job: str
    state: str
    priority: int
    nodes: int
    walltime_s: int
    node_list: list[str]
    req_nodes: list[str]
    submit_s: int
    start_s: int | None

    @property
    def held(self) -> bool:
        return self.state == "PENDING" and self.priority == 0


def parse_time_limit(text: str, unlimited_s: int) -> int:
    """squeue's %l: ``M:SS``, ``H:MM:SS``, ``D-HH:MM:SS``, ``UNLIMITED``."""
    text = text.strip()
    if text in ("UNLIMITED", "INFINITE", "NOT_SET", "N/A", ""):
        return unlimited_s
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [int(p) for p in text.split(":")]
    if len(parts) == 1:
        secs = parts[0] * 60
    elif len(parts) == 2:
        secs = parts[0] * 60 + parts[1]
    else:
        secs = parts[0] * 3600 + parts[1] * 60 + parts[2]
    return days * 86400 + secs


def parse_slurm_time(text: str) -> int | None:
    text = text.strip()
    if not text or text in ("N/A", "Unknown", "None"):
        return None
    return int(time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))


def _hosts(text: str) -> list[str]:
    text = text.strip()
    if not text or text in ("(null)", "None assigned", "n/a"):
        return []
    return list(hostlist.expand_hostlist(text))


class SlurmCommands:
    """Slurm's stock commands, each with a timeout and retries."""

    def __init__(self, *, env: dict[str, str] | None = None, timeout_s: float = 15.0, retries: int = 3, log: Callable[[str], None]) -> None:
        self.env, self.timeout_s, self.retries, self.log = env, timeout_s, retries, log

    def run(self, *cmd: str, ok_errors: tuple[str, ...] = ()) -> str:
        delay = 0.2
        for attempt in range(1, self.retries + 1):
            try:
                r = subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                why = f"timed out after {self.timeout_s:.0f} s"
            except OSError as exc:
                why = str(exc)
            else:
                if r.returncode == 0:
                    return r.stdout
                why = f"exit {r.returncode}: {r.stderr.strip()[-300:]}"
                if any(e in r.stderr for e in ok_errors):
                    raise SlurmError(f"{' '.join(cmd)}: {why}")
            self.log(f"slurm command failed (attempt {attempt}/{self.retries}): {' '.join(cmd)}: {why}")
            if attempt < self.retries:
                time.sleep(delay)
                delay *= 3
        raise SlurmError(f"{' '.join(cmd)}: failed {self.retries} times: {why}")

    def jobs(self, partition: str, unlimited_s: int) -> list[SlurmJob]:
        out = self.run("squeue", "-h", "-p", partition, "-t", "all", "-o", SQUEUE_FORMAT)
        jobs = []
        for line in out.splitlines():
            if not line.strip():
                continue
            f = line.split("|")
            if len(f) < 10:
                raise SlurmError(f"squeue: unexpected line {line!r}")
            jobs.append(
                SlurmJob(
                    job=f[0], state=f[1], priority=int(f[2]), nodes=int(f[3]), walltime_s=parse_time_limit(f[4], unlimited_s),
                    node_list=_hosts(f[5]), req_nodes=_hosts(f[6]), submit_s=parse_slurm_time(f[7]) or 0, start_s=parse_slurm_time(f[8]),
                )
            )
        return jobs

    def node_states(self, partition: str) -> dict[str, str]:
        out = self.run("sinfo", "-h", "-N", "-p", partition, "-o", "%N|%t")
        states = {}
        for line in out.splitlines():
            if "|" in line:
                n, s = line.strip().split("|", 1)
                states[n] = s
        return states

    def start(self, job: str, nodes: list[str]) -> None:
        hl = hostlist.collect_hostlist(nodes)
        gone = ("Invalid job id", "already completed", "Job is no longer pending", "Requested operation is presently disabled")
        self.run("scontrol", "update", f"jobid={job}", f"ReqNodeList={hl}", ok_errors=gone)
        self.run("scontrol", "release", job, ok_errors=gone)


def node_is_good(state: str) -> bool:
    if state.endswith("*"):  # not responding
        return False
    return state.rstrip("~#!%$@^-+") in GOOD_NODE_STATES


class Bridge:
    def __init__(
        self,
        client: Client,
        slurm: SlurmCommands,
        partition: str,
        *,
        queue: str = "easy",
        unlimited_s: int = 365 * 86400,
        log: Callable[[str], None],
    ) -> None:
        if queue not in ("easy", "fcfs"):
            raise ValueError(f"queue policy {queue!r}: the bridge runs easy or fcfs")
        self.client, self.slurm, self.partition, self.queue = client, slurm, partition, queue
        self.unlimited_s = unlimited_s
        self.log = log
        self.never_logged: set[str] = set()
        self.passes = 0

    def _svc(self, method: str, path: str, body: JsonObject | None = None) -> tuple[int, Any]:
        """(status, decoded JSON answer): the service's wire format, checked by the callers."""
        return self.client.call(method, path, body, retry_for_s=60.0, log=self.log)

    def reconcile(self, jobs: list[SlurmJob]) -> None:
        """Replace the service's table by Slurm's view of the partition."""
        now = int(time.time())
        table = {}
        for j in jobs:
            if j.state in HOLDS_NODES and j.node_list:
                table[j.job] = {"nodes": j.node_list, "start_s": j.start_s or now, "walltime_s": j.walltime_s}
            elif j.state == "PENDING" and j.priority > 0 and j.req_nodes:
                # released by a bridge, about to start on the nodes it was given
                table[j.job] = {"nodes": j.req_nodes, "start_s": now, "walltime_s": j.walltime_s}
        code, body = self._svc("PUT", "/v1/state", {"allocations": table})
        if code != 200:
            raise RuntimeError(f"PUT /v1/state refused: {code} {body}")
        self.log(f"reconciled: the service now holds Slurm's {len(table)} running jobs")

    def _diverges(self, jobs: list[SlurmJob], held: dict[str, list[str]]) -> str | None:
        for j in jobs:
            if j.state in HOLDS_NODES and j.node_list:
                mine = held.get(j.job)
                if mine is None:
                    return f"job {j.job} runs on {hostlist.collect_hostlist(j.node_list)} unknown to the service"
                if sorted(mine) != sorted(j.node_list):
                    return f"job {j.job} runs on {hostlist.collect_hostlist(j.node_list)}, the service holds {hostlist.collect_hostlist(mine)}"
        return None

    def one_pass(self, *, reconcile: bool = False) -> dict[str, int]:
        counts = {"started": 0, "released": 0, "drained": 0, "resumed": 0}
        jobs = self.slurm.jobs(self.partition, self.unlimited_s)
        by_id = {j.job: j for j in jobs}
        if reconcile:
            self.reconcile(jobs)
        code, state = self._svc("GET", "/v1/state")
        if code != 200:
            raise RuntimeError(f"GET /v1/state: {code}")
        held: dict[str, list[str]] = state["allocations"]
        # ends
        for job in sorted(held):
            sj = by_id.get(job)
            if sj is None or sj.state in TERMINAL:
                code, _ = self._svc("POST", "/v1/release", {"job": job})
                if code == 200:
                    counts["released"] += 1
                    self.log(f"job {job} finished ({sj.state if sj else 'gone'}): released")
                del held[job]
        if (why := self._diverges(jobs, held)) is not None:
            self.log(f"service and Slurm disagree ({why}); reconciling")
            self.reconcile(jobs)
            held = self._svc("GET", "/v1/state")[1]["allocations"]
        # drains
        node_states = self.slurm.node_states(self.partition)
        drained = set(state["drained"])
        bad = {n for n, s in node_states.items() if not node_is_good(s)}
        to_drain, to_resume = sorted(bad - drained), sorted((drained - bad) & set(node_states))
        if to_drain:
            self._svc("POST", "/v1/nodes/drain", {"nodes": to_drain, "reason": "slurm"})
            counts["drained"] = len(to_drain)
            self.log(f"drained in the service: {hostlist.collect_hostlist(to_drain)} ({', '.join(sorted({node_states[n] for n in to_drain}))})")
        if to_resume:
            self._svc("POST", "/v1/nodes/resume", {"nodes": to_resume})
            counts["resumed"] = len(to_resume)
            self.log(f"resumed in the service: {hostlist.collect_hostlist(to_resume)}")
        # a job released to nodes that have gone bad since would wait forever: hold it again
        # and give its allocation back, so that the next pass places it elsewhere
        for j in jobs:
            if j.state == "PENDING" and j.priority > 0 and j.job in held and set(held[j.job]) & bad:
                try:
                    self.slurm.run("scontrol", "hold", j.job)
                except SlurmError as exc:
                    self.log(f"could not hold job {j.job} again: {exc}")
                    continue
                self._svc("POST", "/v1/release", {"job": j.job})
                del held[j.job]
                self.log(f"job {j.job} was waiting for nodes Slurm took out of service: held again, to be placed anew")
        # queue pass
        waiting = sorted((j for j in jobs if j.held), key=lambda j: (j.submit_s, int(j.job) if j.job.isdigit() else 0, j.job))
        reserved = False
        for j in waiting:
            reserve = self.queue == "easy" and not reserved
            code, body = self._svc("POST", "/v1/allocate", {"job": j.job, "nodes": j.nodes, "walltime_s": j.walltime_s, "reserve": reserve})
            if code == 200:
                nodes = body["nodes"]
                try:
                    self.slurm.start(j.job, nodes)
                except SlurmError as exc:
                    self.log(f"could not start job {j.job} on {hostlist.collect_hostlist(nodes)}: {exc}; releasing its allocation")
                    self._svc("POST", "/v1/release", {"job": j.job})
                    continue
                counts["started"] += 1
                self.log(f"started job {j.job} ({j.nodes} nodes, limit {j.walltime_s} s) on {hostlist.collect_hostlist(nodes)}")
            elif code == 202:
                reserved = True
            elif code == 409 and body.get("never"):
                if j.job not in self.never_logged:
                    self.never_logged.add(j.job)
                    self.log(f"job {j.job} can never run here: {body.get('reason')}; left held")
            elif code == 409:
                if self.queue == "fcfs" or not reserved:
                    break  # FCFS stops at the head; EASY with no possible reservation backfills nothing
            else:
                self.log(f"allocate {j.job}: unexpected answer {code} {body}")
                break
        self.passes += 1
        return counts

    def run_forever(self, poll_s: float, stop: Callable[[], bool] = lambda: False) -> None:
        first = True
        while not stop():
            t0 = time.monotonic()
            try:
                self.one_pass(reconcile=first)
                first = False
            except (SlurmError, ServiceUnavailable, RuntimeError) as exc:
                self.log(f"pass failed, retrying at the next poll: {exc}")
            time.sleep(max(0.0, poll_s - (time.monotonic() - t0)))


def stderr_log(text: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} slurm-bridge: {text}", file=sys.stderr, flush=True)

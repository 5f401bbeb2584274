"""The per-host topology agent (seed 002's topology daemon): the node's hardware graph, the
cpusets in use, and an HTTP + JSON API to query, allocate, bind and release.

API (docs/node-agent.md has examples; every body is JSON):

``GET  /v1/health``        -> 200 ``{"ok": true, "host", "cpusets"}``
``GET  /v1/topology``      -> the hardware graph's summary
``GET  /v1/state``         -> ``{"allocations": {job: {...}}, "free_cpus", "numa_free_bytes"}``
``GET  /v1/jobs/ID``       -> the job's allocation (``cpus``, ``mems``, ``cgroup``), or 404
``POST /v1/query``         ``{"requirement": R}`` -> the decision: ``status`` ok, wait, busy or
                           impossible, with the placement and the host's rank key
``POST /v1/allocate``      ``{"job": ID, "requirement": R, "uid": U?}`` -> 200 allocation;
                           409 ``wait``/``busy``; 422 ``impossible``. Same job and requirement
                           again: 200 with the existing allocation.
``POST /v1/release``       ``{"job": ID}`` -> 200 (processes left in the cpuset are killed,
                           then it is removed); again: 200 ``already_released``; unknown: 404
``POST /v1/reconcile``     ``{"jobs": [ID, ...]}``: the jobs still running here (from the
                           resource manager); every other allocation is released
``POST /v1/bind``          ``{"job": ID}`` over the unix socket: moves the *calling* process
                           (kernel-checked peer pid) into the job's cpuset; allowed to root,
                           to the job's ``uid``, or with the token (then ``"pid"`` may name
                           another process).

``allocate``, ``release`` and ``reconcile`` need ``Authorization: Bearer <token>`` (401 without, 403 wrong).
Malformed requests get 400 naming the field. Each allocation is written to SQLite (WAL,
synchronous=FULL) before it is answered, after its cpuset exists; a release removes the
cpuset first, then the row. At start the agent keeps every stored allocation (re-creating a
missing cpuset) and removes ``job_*`` cpusets it has no row for (orphans: a crash between
creating and recording), killing their processes.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

from ..tokens import token_matches
from ..unix_http import JsonObject, remove_socket_file, socket_file_stamp
from .cpulist import format_cpulist, parse_cpulist
from .cpuset import CgroupError, CgroupUnavailable, CpusetBackend, check_job_id
from .hwloc import NodeTopology
from .placement import Holding, NodeState, decide, holding_for
from .requirement import RequirementError, parse_requirement
from .store import AgentStore, StoredAllocation

MAX_BODY_BYTES = 1 << 20



#: Largest user id: Linux's uid_t is 32 bits, and (uid_t) -1 stands for no user.
UID_MAX = 2**32 - 2

class AgentStartError(CgroupUnavailable):
    """The agent cannot start as asked (topology and machine disagree, state mismatch)."""


class NodeAgent:
    """The agent's logic, without HTTP: one lock around every change."""

    def __init__(self, topology: NodeTopology, store: AgentStore, backend: CpusetBackend | None,
                 *, reserved_pus: frozenset[int] = frozenset(), host: str | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.topology = topology
        self.store = store
        self.backend = backend
        self.host = host or topology.host or socket.gethostname()
        self.state = NodeState(topology, reserved_pus)
        self.lock = threading.RLock()
        self.log = log or (lambda msg: print(f"node-agent: {msg}", file=sys.stderr, flush=True))
        self.uids: dict[str, int | None] = {}
        self.requirements: dict[str, JsonObject] = {}

    # -- start ------------------------------------------------------------------------
    def start(self) -> JsonObject:
        """Check the machine, load the durable state, reconcile cpusets. Returns a report."""
        topo = self.topology
        if self.backend is not None:
            have = self.backend.machine_cpus()
            missing = frozenset(topo.pus) - have
            if missing:
                self.backend.discard_if_empty()
                raise AgentStartError(
                    f"topology {topo.source} has PUs {format_cpulist(topo.pus)} but {self.backend.parent} may use only "
                    f"{format_cpulist(have)} (missing {format_cpulist(missing)}): use --topology live, or --cpusets none to place without binding")
            mems = self.backend.machine_mems()
            if not frozenset(topo.all_mems) <= mems:
                self.backend.discard_if_empty()
                raise AgentStartError(
                    f"topology {topo.source} has memory nodes {format_cpulist(topo.all_mems)} but the machine only "
                    f"{format_cpulist(mems)}: use --topology live, or --cpusets none")
        fingerprint = json.dumps({"pus": list(topo.pus), "cores": [sorted(c.pus) for c in topo.cores]})
        stored = self.store.all()
        old = self.store.get_meta("topology")
        if stored and old is not None and old != fingerprint:
            raise AgentStartError(f"--state {self.store.dir} holds {len(stored)} allocations made on another topology; "
                                  "start with the same --topology, or release them / use a fresh --state")
        self.store.set_meta("topology", fingerprint)
        kept, recreated, orphans = [], [], []
        for a in stored:
            pus = parse_cpulist(a.cpus)
            if not pus <= frozenset(topo.pus) or not parse_cpulist(a.mems) <= frozenset(topo.all_mems):
                raise self.store.damaged(a.job, f"cpus {a.cpus} or mems {a.mems} are not all on this topology")
            clash = next((h.job for h in self.state.holdings.values() if h.pus & pus and (h.exclusive or a.exclusive)), None)
            if clash is not None:
                raise self.store.damaged(a.job, f"its CPUs {a.cpus} are held by job {clash} too")
            self.state.add(Holding(a.job, pus, a.exclusive, a.mem_bytes_per_numa))
            self.uids[a.job] = a.uid
            self.requirements[a.job] = a.requirement
            if self.backend is not None:
                if not self.backend.exists(a.job) or self.backend.cpus(a.job) != pus:
                    recreated.append(a.job)
                self.backend.create(a.job, pus, parse_cpulist(a.mems))
            kept.append(a.job)
        killed = 0
        if self.backend is not None:
            known = {a.job for a in stored}
            for job in self.backend.jobs():
                if job not in known:
                    killed += self.backend.remove(job)
                    orphans.append(job)
        report = {"kept": kept, "recreated": recreated, "removed_orphans": orphans, "orphan_processes_killed": killed}
        self.log(f"host {self.host}: topology {topo.source} ({len(topo.pus)} PUs, {len(topo.cores)} cores, "
                 f"{len(topo.numa)} NUMA domains); "
                 + (self.backend.describe() if self.backend else "NO cpusets (--cpusets none): placements are not enforced")
                 + f"; kept {len(kept)} allocations ({len(recreated)} cpusets re-created), removed {len(orphans)} orphan cpusets"
                 + (f" ({', '.join('job_' + j for j in orphans)})" if orphans else ""))
        return report

    # -- requests ---------------------------------------------------------------------
    def query(self, requirement: str | JsonObject) -> JsonObject:
        req = parse_requirement(requirement)
        with self.lock:
            d = decide(self.topology, self.state, req)
        out = d.to_json()
        out["host"] = self.host
        out["requirement"] = req.to_text()
        return out

    def _allocation_json(self, job: str) -> JsonObject:
        h = self.state.holdings[job]
        req = parse_requirement(self.requirements[job])
        numa = self.topology.numa_domains_of(h.pus)
        mems = [m for n in numa for m in n.mems] if req.memory_mandatory else list(self.topology.all_mems)
        return {"job": job, "host": self.host, "cpus": format_cpulist(h.pus), "mems": format_cpulist(mems),
                "radius": self.topology.radius_of(h.pus), "numa_domains": len(numa), "exclusive": h.exclusive,
                "requirement": req.to_text(), "uid": self.uids.get(job),
                "cgroup": str(self.backend.path(job)) if self.backend else None}

    def allocate(self, job: str, requirement: str | JsonObject, uid: int | None = None) -> tuple[int, JsonObject]:
        check_job_id(job)
        req = parse_requirement(requirement)
        with self.lock:
            if job in self.state.holdings:
                if self.requirements[job] == req.to_json():
                    return 200, {**self._allocation_json(job), "existing": True}
                return 409, {"job": job, "status": "conflict",
                             "reason": f"job {job} already holds {format_cpulist(self.state.holdings[job].pus)} under another requirement"}
            d = decide(self.topology, self.state, req)
            if d.status != "ok":
                body = {"job": job, **d.to_json()}
                return (422 if d.status == "impossible" else 409), body
            p = d.placement
            assert p is not None
            holding = holding_for(job, req, p)
            if self.backend is not None:
                try:
                    self.backend.create(job, p.pus, p.mems)
                except CgroupError:
                    self._forget_cpuset(job)
                    raise
            try:
                self.store.add(StoredAllocation(job, p.cpus, format_cpulist(p.mems), req.to_json(), req.exclusive,
                                                holding.mem_bytes_per_numa, uid, time.time()))
            except BaseException:
                if self.backend is not None:
                    self._forget_cpuset(job)  # not on disk: no cpuset either
                raise
            self.state.add(holding)
            self.uids[job] = uid
            self.requirements[job] = req.to_json()
            self.log(f"allocated job {job}: cpus {p.cpus} mems {format_cpulist(p.mems)} radius {p.radius}")
            return 200, {**self._allocation_json(job), "placement": p.to_json()}

    def _forget_cpuset(self, job: str) -> None:
        try:
            assert self.backend is not None
            self.backend.remove(job)
        except CgroupError as exc:  # it will be an orphan, removed at the next start
            self.log(f"could not remove the half-made cpuset of job {job}: {exc}")

    def release(self, job: str) -> tuple[int, JsonObject]:
        check_job_id(job)
        with self.lock:
            if job not in self.state.holdings:
                if self.store.was_released(job):
                    return 200, {"job": job, "released": True, "already_released": True}
                return 404, {"job": job, "reason": f"job {job} holds nothing on this host"}
            killed = self.backend.remove(job) if self.backend is not None else 0
            self.store.remove(job)
            self.state.remove(job)
            self.uids.pop(job, None)
            self.requirements.pop(job, None)
            self.log(f"released job {job}" + (f", killed {killed} leftover processes" if killed else ""))
            return 200, {"job": job, "released": True, "killed_processes": killed}

    def reconcile(self, live_jobs: list[str]) -> tuple[int, JsonObject]:
        """Release every allocation whose job is not in ``live_jobs`` (the resource
        manager's list of jobs still running on this host: it is the source of truth after
        a missed release)."""
        for j in live_jobs:
            check_job_id(j)
        live = set(live_jobs)
        released, killed = [], 0
        with self.lock:
            for job in sorted(self.state.holdings):
                if job not in live:
                    code, body = self.release(job)
                    released.append(job)
                    killed += body.get("killed_processes", 0)
            kept = sorted(self.state.holdings)
        return 200, {"released": released, "kept": kept, "killed_processes": killed}

    def job(self, job: str) -> tuple[int, JsonObject]:
        with self.lock:
            if job not in self.state.holdings:
                return 404, {"job": job, "reason": f"job {job} holds nothing on this host"}
            out = self._allocation_json(job)
            if self.backend is not None:
                out["processes"] = self.backend.procs(job)
            return 200, out

    def bind(self, job: str, pid: int) -> tuple[int, JsonObject]:
        with self.lock:
            if job not in self.state.holdings:
                return 404, {"job": job, "reason": f"job {job} holds nothing on this host"}
            if self.backend is None:
                return 409, {"job": job, "reason": "this agent runs without cpusets (--cpusets none)"}
            self.backend.attach(job, pid)
            return 200, {"job": job, "pid": pid, "cgroup": str(self.backend.path(job))}

    def snapshot(self) -> JsonObject:
        with self.lock:
            return {
                "host": self.host,
                "cpusets": self.backend.version if self.backend else "none",
                "allocations": {j: self._allocation_json(j) for j in sorted(self.state.holdings)},
                "free_cpus": format_cpulist(self.state.free_pus()),
                "reserved_cpus": format_cpulist(self.state.reserved_pus),
                "numa_free_bytes": {format_cpulist(n.mems): self.state.numa_free_bytes(n) for n in self.topology.numa},
            }


# -- HTTP ---------------------------------------------------------------------------

class BadRequest(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"field '{field}': {message}")
        self.field = field


class _Handler(BaseHTTPRequestHandler):
    server_version = "toposched-node-agent/1"
    agent: NodeAgent
    token: str

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass  # decisions are logged by the agent; no per-request noise

    def address_string(self) -> str:
        return "unix" if not self.client_address else str(self.client_address[0])

    def _send(self, code: int, body: JsonObject) -> None:
        data = (json.dumps(body, sort_keys=True) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _raw_body(self) -> bytes:
        try:
            length = int(self.headers.get("Content-Length", "0") or 0)
        except ValueError:
            raise BadRequest("Content-Length", "not a number") from None
        if length > MAX_BODY_BYTES:
            raise BadRequest("body", f"larger than {MAX_BODY_BYTES} bytes")
        return self.rfile.read(length) if length else b""

    def _body(self, raw: bytes) -> JsonObject:
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            raise BadRequest("body", f"not JSON ({exc})") from None
        if not isinstance(body, dict):
            raise BadRequest("body", "must be a JSON object")
        return body

    def _job(self, body: JsonObject) -> str:
        job = body.get("job")
        if not isinstance(job, str):
            raise BadRequest("job", "missing, or not a string")
        try:
            return check_job_id(job)
        except ValueError as exc:
            raise BadRequest("job", str(exc)) from None

    def _peer(self) -> tuple[int, int] | None:
        """(pid, uid) of the process at the other end of a unix socket, from the kernel."""
        if self.request.family != socket.AF_UNIX:
            return None
        pid, uid, _gid = struct.unpack("3i", self.request.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        return pid, uid

    def _authorized(self) -> int | None:
        """None if the token is right, else the HTTP status to refuse with."""
        ok = token_matches(self.headers.get("Authorization"), self.token)
        if ok is None:
            return 401
        return None if ok else 403

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        try:
            path = self.path.split("?", 1)[0]
            a = self.agent
            if path == "/v1/health":
                self._send(200, {"ok": True, "host": a.host, "cpusets": a.backend.version if a.backend else "none"})
            elif path == "/v1/topology":
                self._send(200, a.topology.summary())
            elif path == "/v1/state":
                self._send(200, a.snapshot())
            elif path.startswith("/v1/jobs/"):
                self._send(*a.job(path[len("/v1/jobs/"):]))
            else:
                self._send(404, {"reason": f"no such resource {path}"})
        except Exception as exc:  # never let one request take the agent down
            self._send(500, {"reason": f"{type(exc).__name__}: {exc}"})

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        a = self.agent
        try:
            # read the whole request before any answer: a refusal sent while the client is
            # still writing its body would reach it as a broken pipe, not as the refusal
            raw = self._raw_body()
            if path in ("/v1/allocate", "/v1/release", "/v1/reconcile"):
                refused = self._authorized()
                if refused is not None:
                    self._send(refused, {"reason": "missing bearer token" if refused == 401 else "wrong bearer token"})
                    return
            body = self._body(raw)
            if path == "/v1/query":
                if "requirement" not in body:
                    raise BadRequest("requirement", "missing")
                self._send(200, a.query(body["requirement"]))
            elif path == "/v1/allocate":
                job = self._job(body)
                if "requirement" not in body:
                    raise BadRequest("requirement", "missing")
                uid = body.get("uid")
                # a Linux uid: 0 to 2^32 - 2 ((uid_t) -1 means none); a bigger one reached the
                # store, failed there (500) and left the agent unable to write
                if uid is not None and (not isinstance(uid, int) or isinstance(uid, bool) or not 0 <= uid <= UID_MAX):
                    raise BadRequest("uid", f"must be a user id, a whole number from 0 to {UID_MAX}")
                self._send(*a.allocate(job, body["requirement"], uid))
            elif path == "/v1/release":
                self._send(*a.release(self._job(body)))
            elif path == "/v1/reconcile":
                jobs = body.get("jobs")
                if not isinstance(jobs, list) or not all(isinstance(j, str) for j in jobs):
                    raise BadRequest("jobs", "must be a list of job id strings")
                self._send(*a.reconcile(jobs))
            elif path == "/v1/bind":
                job = self._job(body)
                peer = self._peer()
                with_token = token_matches(self.headers.get("Authorization"), self.token) is True
                if with_token and "pid" in body:
                    pid = body["pid"]
                    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
                        raise BadRequest("pid", "must be a positive integer")
                elif peer is not None:
                    pid, uid = peer
                    if not with_token and uid != 0 and uid != a.uids.get(job):
                        self._send(403, {"job": job, "reason": f"uid {uid} may not bind into job {job} (job uid {a.uids.get(job)})"})
                        return
                else:
                    self._send(401, {"job": job, "reason": "bind over TCP needs the bearer token and a pid"})
                    return
                self._send(*a.bind(job, pid))
            else:
                self._send(404, {"reason": f"no such resource {path}"})
        except BadRequest as exc:
            self._send(400, {"field": exc.field, "reason": str(exc)})
        except RequirementError as exc:
            self._send(400, {"field": exc.field, "reason": str(exc)})
        except ValueError as exc:
            self._send(400, {"reason": str(exc)})
        except CgroupError as exc:
            self._send(500, {"reason": str(exc)})
        except Exception as exc:  # never let one request take the agent down
            self._send(500, {"reason": f"{type(exc).__name__}: {exc}"})


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    #: (device, inode) of the socket file this server bound: closing removes that file
    #: only, never one another process put at the path since
    _bound: tuple[int, int] | None = None

    def server_bind(self) -> None:
        super().server_bind()
        self._bound = socket_file_stamp(str(self.server_address))

    def server_close(self) -> None:
        """Close the socket and remove its file (a clean stop leaves no socket behind: the
        next start would have to probe it as stale)."""
        super().server_close()
        remove_socket_file(str(self.server_address), self._bound)

    def get_request(self) -> tuple[socket.socket, tuple[str, int]]:
        conn, _ = self.socket.accept()
        return conn, ("", 0)


def make_server(agent: NodeAgent, listen: str, token: str) -> tuple[socketserver.BaseServer, str]:
    """An HTTP server for ``unix:PATH`` or ``HOST:PORT`` (port 0: any free port)."""
    handler = type("Handler", (_Handler,), {"agent": agent, "token": token})
    if listen.startswith("unix:"):
        path = Path(listen[5:])
        if path.exists() or path.is_symlink():
            if path.is_socket():
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    probe.connect(str(path))
                    raise AgentStartError(f"--listen {listen}: another process is serving on {path}")
                except (ConnectionRefusedError, FileNotFoundError):
                    path.unlink()  # a stale socket of a previous run (kill -9 leaves it)
                finally:
                    probe.close()
            else:
                raise AgentStartError(f"--listen {listen}: {path} exists and is not a socket")
        path.parent.mkdir(parents=True, exist_ok=True)
        server = _UnixHTTPServer(str(path), handler)
        # Anyone may connect: writes need the token, bind is checked by the kernel's peer uid.
        os.chmod(path, 0o666)
        return server, f"unix:{path}"
    host, sep, port = listen.rpartition(":")
    if not sep:
        raise AgentStartError(f"--listen {listen!r}: expected unix:PATH or HOST:PORT")
    try:
        tcp = ThreadingHTTPServer((host.strip("[]") or "127.0.0.1", int(port)), handler)
    except (OSError, ValueError, OverflowError) as exc:  # OverflowError: a port beyond 65535
        raise AgentStartError(f"--listen {listen}: {exc}") from None
    tcp.daemon_threads = True
    # The bound (host, port), as server_bind stored it in server_address (typed loosely).
    h, p = tcp.socket.getsockname()[:2]
    return tcp, f"{h}:{p}"

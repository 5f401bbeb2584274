"""``toposched serve``: the HTTP + JSON placement service (docs/live.md).

Standard library only: asyncio with a small HTTP/1.1 parser (keep-alive), decisions
serialized on the event loop, commits grouped in a worker thread (one fsync for all the
decisions made meanwhile); every answer waits for the commit of its decision.

Every write (POST and PUT, but the read-only ``/v1/satisfiable``) needs ``Authorization:
Bearer TOKEN`` (401 without, 403 with a wrong one); bad requests get 400 naming the field;
no request can stop the service.
"""

from __future__ import annotations

import asyncio
import fcntl
import hmac
import json
import os
import signal
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TextIO

import hostlist

from ..errors import ToposchedError
from ..limits import MAX_COUNT, MAX_INT64, MAX_TIME_S
from ..unix_http import JsonObject, remove_socket_file, socket_file_stamp
from .metrics import Metrics
from .openapi import openapi_document
from .table import DurabilityError, LiveTable, UnknownNode

MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_JOB_ID_CHARS = 256


class ServeError(ToposchedError):
    """The service cannot start (bad token file, state in use, address taken)."""


class BadRequest(Exception):
    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


# request validation -------------------------------------------------------------------


#: Largest value of an integer field: node counts below 2^31, times (walltime_s, start_s) at
#: most 2^53 s (limits.py): JSON reads integers of any size, and one beyond what the core
#: takes was a 500 "internal error: OverflowError".
_INT_MAX = {"nodes": (MAX_COUNT - 1, "2^31 - 1"), "walltime_s": (MAX_TIME_S, "2^53"), "start_s": (MAX_TIME_S, "2^53")}


def _field(body: JsonObject, name: str, kind: type, *, required: bool = True, default: Any = None) -> Any:
    if name not in body:
        if required:
            raise BadRequest(f"missing field '{name}'", name)
        return default
    v = body[name]
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise BadRequest(f"field '{name}' must be an integer, got {json.dumps(v)[:60]}", name)
        hi, shown = _INT_MAX.get(name, (MAX_INT64, "2^63 - 1"))
        if v > hi:
            raise BadRequest(f"field '{name}' must be at most {shown}, got {v}", name)
    elif kind is bool:
        if not isinstance(v, bool):
            raise BadRequest(f"field '{name}' must be true or false, got {json.dumps(v)[:60]}", name)
    elif not isinstance(v, kind):
        raise BadRequest(f"field '{name}' must be a {kind.__name__}, got {json.dumps(v)[:60]}", name)
    return v


def _only(body: JsonObject, allowed: set[str]) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise BadRequest(f"unknown field '{extra[0]}' (allowed: {', '.join(sorted(allowed))})", extra[0])


def _job_id(body: JsonObject) -> str:
    job: str = _field(body, "job", str)
    if not job or len(job) > MAX_JOB_ID_CHARS or any(c.isspace() or not c.isprintable() for c in job):
        raise BadRequest(f"field 'job' must be 1 to {MAX_JOB_ID_CHARS} printable characters without spaces", "job")
    return job


def _node_list(value: Any, field: str) -> list[str]:
    """A list of node names, or one Slurm host list string such as ``n[01-04],n07``."""
    if isinstance(value, str):
        try:
            return list(hostlist.expand_hostlist(value))
        except hostlist.BadHostlist as exc:
            raise BadRequest(f"field '{field}': bad host list {value!r}: {exc}", field) from None
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return list(value)
    raise BadRequest(f"field '{field}' must be a list of node names or a host list string", field)


def _host_advice(ranking: Ranking, nodes: list[str]) -> list[JsonObject]:
    """Per chosen host, best radius first: the CPUs its agent proposes and how good they are."""
    answers = dict(ranking.ranked)
    chosen = [h for h in ranking.hosts if h in set(nodes)]
    out = []
    for h in chosen:
        p = answers[h].get("placement") or {}
        out.append({"node": h, "cpus": p.get("cpus"), "mems": p.get("mems"), "radius": p.get("radius"), "numa_domains": p.get("numa_domains")})
    return out


if TYPE_CHECKING:
    from ..node.client import Ranking
    from .agents import AgentDirectory


# the service -----------------------------------------------------------------------------


class Service:
    """Routes requests to the table; owns the lock, the token and the metrics."""

    def __init__(self, table: LiveTable, token: str, *, log: TextIO | None = sys.stderr, agents: "AgentDirectory | None" = None) -> None:
        self.table = table
        #: node agents consulted for jobs that state a per-host requirement (live/agents.py)
        self.agents = agents
        self.token = token.encode()
        self.lock = table.lock
        #: handlers wait for their commit themselves (direct callers); the server turns it off
        self.sync_commit = True
        self.metrics = Metrics()
        self.log = log
        self.started_s = time.time()

    def _log(self, text: str) -> None:
        if self.log is not None:
            print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {text}", file=self.log, flush=True)

    def _durable(self, seq: int) -> None:
        """Wait for the decision's commit, unless the transport does (the asyncio server)."""
        if self.sync_commit:
            self.table.wait_durable(seq)

    def check_auth(self, header: str | None) -> tuple[int, str] | None:
        if not header:
            return 401, "missing Authorization: Bearer TOKEN header"
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return 401, "the Authorization header must be 'Bearer TOKEN'"
        if not hmac.compare_digest(given.strip().encode(), self.token):
            return 403, "wrong token"
        return None

    # handlers return (status, json-able body)
    def allocate(self, body: JsonObject) -> tuple[int, JsonObject]:
        _only(body, {"job", "nodes", "walltime_s", "reserve", "requirement"})
        job = _job_id(body)
        nodes = _field(body, "nodes", int)
        if nodes < 1:
            raise BadRequest("field 'nodes' must be at least 1", "nodes")
        walltime_s = _field(body, "walltime_s", int)
        if walltime_s < 0:
            raise BadRequest("field 'walltime_s' must not be negative", "walltime_s")
        reserve = _field(body, "reserve", bool, required=False, default=False)
        requirement = body.get("requirement")
        ranking: Ranking | None = None
        exclude: list[str] = []
        if requirement is not None:
            ranking, exclude = self._filter_hosts(requirement)
        with self.lock:
            if ranking is not None:
                # hosts freed since the agents were asked were not asked: not usable now
                asked = set(ranking.hosts) | set(ranking.rejected)
                exclude += [n for n in self.table.free_nodes() if n not in asked]
            a = self.table.allocate(job, nodes, walltime_s, reserve, exclude)
            now = self.table.now_s()
            seq = self.table.seq
        self._durable(seq)
        self.metrics.decision("repeated" if a.repeated else a.outcome)
        if a.outcome == "placed" and a.repeated:
            return 200, {"job": job, "nodes": a.nodes}
        if a.outcome == "placed":
            if self.log is not None:
                self._log(f"placed {job} ({nodes} nodes) on {hostlist.collect_hostlist(a.nodes)}")
            if ranking is not None:
                assert a.nodes is not None  # placed answers name their nodes
                return 200, {"job": job, "nodes": a.nodes, "hosts": _host_advice(ranking, a.nodes)}
            return 200, {"job": job, "nodes": a.nodes}
        if a.outcome == "reserved":
            assert a.start_at_s is not None
            return 202, {
                "job": job,
                "start_estimate_s": max(0, a.start_at_s - now),
                "start_at_s": a.start_at_s,
                "nodes": a.nodes,
            }
        refusal: JsonObject = {"job": job, "reason": a.reason, "never": a.outcome == "never"}
        if ranking is not None:
            refusal["hosts_refused"] = dict(sorted(ranking.rejected.items()))
        return 409, refusal

    def _filter_hosts(self, requirement: Any) -> tuple[Ranking, list[str]]:
        """Seed 002's filter: ask the agents of the free hosts; (ranking, hosts to exclude)."""
        from ..node.requirement import parse_requirement

        if self.agents is None:
            raise BadRequest("field 'requirement': this service consults no node agents (start it with --node-agents FILE)", "requirement")
        if not isinstance(requirement, (str, dict)):
            raise BadRequest("field 'requirement' must be a requirement string (e.g. \"CORES=8;WAIT\") or object", "requirement")
        try:
            parse_requirement(requirement)
        except Exception as exc:  # the requirement language's own error names the field
            raise BadRequest(f"field 'requirement': {exc}", "requirement") from None
        with self.lock:
            free = self.table.free_nodes()
        ranking = self.agents.rank(requirement, free)
        return ranking, sorted(ranking.rejected)

    def satisfiable(self, body: JsonObject) -> tuple[int, JsonObject]:
        _only(body, {"nodes", "job"})
        nodes = _field(body, "nodes", int)
        if nodes < 1:
            raise BadRequest("field 'nodes' must be at least 1", "nodes")
        with self.lock:
            return 200, self.table.satisfiable(nodes)

    def release(self, body: JsonObject) -> tuple[int, JsonObject]:
        _only(body, {"job"})
        job = _job_id(body)
        with self.lock:
            what, nodes = self.table.release(job)
            seq = self.table.seq
        self._durable(seq)
        if what == "released":
            self.metrics.decision("released")
            if self.log is not None:
                self._log(f"released {job} from {hostlist.collect_hostlist(nodes)}")
            return 200, {"job": job, "released": True, "nodes": nodes}
        if what == "already":
            return 200, {"job": job, "released": False, "note": "already released"}
        if what == "reservation-dropped":
            return 200, {"job": job, "released": False, "note": "held no nodes; its reservation was dropped"}
        return 404, {"job": job, "error": "no such job"}

    def put_state(self, body: JsonObject) -> tuple[int, JsonObject]:
        _only(body, {"allocations"})
        allocs = _field(body, "allocations", dict)
        table: dict[str, tuple[list[str], int | None, int | None]] = {}
        for job, v in allocs.items():
            field = f"allocations.{job}"
            _job_id({"job": job})
            if isinstance(v, dict):
                _only(v, {"nodes", "start_s", "walltime_s"})
                names = _node_list(v.get("nodes"), field + ".nodes")
                start_s = _field(v, "start_s", int, required=False)
                walltime_s = _field(v, "walltime_s", int, required=False)
                for name, t in (("start_s", start_s), ("walltime_s", walltime_s)):
                    if t is not None and t < 0:  # as allocate's walltime_s; a start before 1970 is no clock's
                        raise BadRequest(f"field '{name}' must not be negative", name)
            else:
                names, start_s, walltime_s = _node_list(v, field), None, None
            table[job] = (names, start_s, walltime_s)
        with self.lock:
            try:
                self.table.replace(table)
            except (UnknownNode, ValueError) as exc:
                raise BadRequest(str(exc), "allocations") from None
            seq = self.table.seq
        self._durable(seq)
        self._log(f"state replaced: {len(table)} allocations")
        return 200, {"allocations": len(table)}

    def drain(self, body: JsonObject, drained: bool) -> tuple[int, JsonObject]:
        _only(body, {"nodes", "reason"})
        names = _node_list(_field(body, "nodes", object), "nodes")
        with self.lock:
            try:
                changed = self.table.set_drained(names, drained)
            except UnknownNode as exc:
                raise BadRequest(str(exc), "nodes") from None
            seq = self.table.seq
        self._durable(seq)
        if changed:
            self._log(f"{'drained' if drained else 'resumed'} {hostlist.collect_hostlist(changed)} {body.get('reason', '')}")
        return 200, {"changed": changed}

    def state(self) -> JsonObject:
        with self.lock:
            snap = self.table.snapshot()
            seq = self.table.seq
        # show only what a restart would show
        self._durable(seq)
        return snap

    def metrics_text(self) -> str:
        with self.lock:
            p = self.table.placer
            gauges = {
                "toposched_free_nodes": ("Nodes free now.", p.n_free),
                "toposched_drained_nodes": ("Nodes drained.", len(p.drained())),
                "toposched_held_jobs": ("Jobs holding nodes.", len(p.jobs())),
                "toposched_nodes": ("Nodes of the fabric.", p.n_nodes),
                "toposched_uptime_seconds": ("Seconds since start.", time.time() - self.started_s),
            }
        return self.metrics.render(gauges)


ROUTES_POST = {"/v1/allocate", "/v1/satisfiable", "/v1/release", "/v1/nodes/drain", "/v1/nodes/resume"}
WRITE_ROUTES = ROUTES_POST | {"/v1/state"}
MAX_HEAD_BYTES = 64 * 1024
REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 409: "Conflict", 413: "Payload Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}


def _parse_json(raw: bytes) -> JsonObject:
    if not raw.strip():
        raise BadRequest("empty body: a JSON object is expected")
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise BadRequest(f"body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest("body must be a JSON object")
    return body


def route(svc: Service, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any, str | None]:
    """One request: (status, JSON-able body or text, content type for text). Never raises."""
    path = path.split("?", 1)[0].rstrip("/") or "/"
    try:
        if method == "GET":
            if path == "/v1/health":
                # after a failed commit the service answers but acknowledges nothing more:
                # a monitor (or a liveness probe that restarts it) must see that
                broken = svc.table.broken
                if broken is not None:
                    return 503, {"status": "broken", "error": f"{broken}; nothing more is acknowledged: restart the service"}, None
                return 200, {"status": "ok"}, None
            if path == "/v1/openapi.json":
                return 200, openapi_document(), None
            if path == "/v1/state":
                return 200, svc.state(), None
            if path == "/metrics":
                return 200, svc.metrics_text(), "text/plain; version=0.0.4; charset=utf-8"
            return 404, {"error": f"no route GET {path}"}, None
        known = (method == "POST" and path in ROUTES_POST) or (method == "PUT" and path == "/v1/state")
        if not known:
            return (405 if path in WRITE_ROUTES else 404), {"error": f"no route {method} {path}"}, None
        # every write needs the token; /v1/satisfiable is a POST but changes nothing
        denied = None if path == "/v1/satisfiable" else svc.check_auth(headers.get("authorization"))
        if denied is not None:
            return denied[0], {"error": denied[1]}, None
        body = _parse_json(raw)
        if path == "/v1/allocate":
            code, out = svc.allocate(body)
        elif path == "/v1/satisfiable":
            code, out = svc.satisfiable(body)
        elif path == "/v1/release":
            code, out = svc.release(body)
        elif path == "/v1/nodes/drain":
            code, out = svc.drain(body, True)
        elif path == "/v1/nodes/resume":
            code, out = svc.drain(body, False)
        else:
            code, out = svc.put_state(body)
        return code, out, None
    except BadRequest as exc:
        return 400, {"error": str(exc), "field": exc.field}, None
    except DurabilityError as exc:
        svc._log(str(exc))
        return 503, {"error": f"{exc}; nothing more is acknowledged: restart the service"}, None
    except Exception as exc:  # a bug: answer 500, keep serving
        svc._log(f"error on {method} {path}: {type(exc).__name__}: {exc}")
        return 500, {"error": f"internal error: {type(exc).__name__}: {exc}"}, None


def _response(code: int, body: Any, ctype: str | None, close: bool) -> bytes:
    data = body.encode() if isinstance(body, str) else (json.dumps(body, sort_keys=True) + "\n").encode()
    head = (
        f"HTTP/1.1 {code} {REASONS.get(code, 'Status')}\r\nServer: toposched\r\n"
        f"Content-Type: {ctype or 'application/json'}\r\nContent-Length: {len(data)}\r\n"
        + ("Connection: close\r\n" if close else "")
        + "\r\n"
    )
    return head.encode("latin-1") + data


class Committer:
    """Group commit for the asyncio server: decisions are made on the event loop; the commit
    (one transaction, one fsync for everything queued) runs in a worker thread while the loop
    keeps deciding; each answer waits for the commit that covers its decision."""

    def __init__(self, table: LiveTable) -> None:
        self.table = table
        self.inflight: asyncio.Future[None] | None = None

    async def durable(self, seq: int) -> None:
        loop = asyncio.get_running_loop()
        while self.table._durable < seq:
            if self.inflight is None or self.inflight.done():
                self.inflight = loop.run_in_executor(None, self.table.wait_durable, self.table.seq)
            await asyncio.shield(self.inflight)


class Server:
    """HTTP/1.1 with keep-alive over TCP or a unix socket, on asyncio (a small parser: the
    standard library's http.server costs several times more per request)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.committer = Committer(service.table)
        #: open connections and their handlers, closed and awaited at shutdown (close_all)
        self.connections: dict[asyncio.StreamWriter, asyncio.Task[Any]] = {}
        #: threads that ask the node agents (up to their timeout_s each): an allocation that
        #: states a requirement is decided there, so that a silent agent stalls only it, not
        #: the event loop (and not the default executor, where the commits run)
        self.agent_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="node-agents") if service.agents is not None else None

    async def close_all(self, timeout_s: float = 10.0) -> None:
        """End every open connection and wait for its handler: a request being decided
        finishes (its commit included; the answer may not reach the client, which retries).
        Left to asyncio.run, the handlers waiting for a next request were cancelled, and
        Python 3.11 printed a traceback for each ("Exception in callback ... CancelledError")."""
        for writer in list(self.connections):
            writer.close()  # the handler's read ends (EOF), and the handler returns
        tasks = list(self.connections.values())
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # asyncio runs each connection's handler as a task
        self.connections[writer] = task
        sock = writer.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        svc = self.service
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                except asyncio.LimitOverrunError:
                    writer.write(_response(400, {"error": "request head too large"}, None, True))
                    return
                t0 = time.perf_counter()
                lines = head.decode("latin-1").split("\r\n")
                parts = lines[0].split(" ")
                if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                    writer.write(_response(400, {"error": "malformed request line"}, None, True))
                    return
                method, target, version = parts
                headers = {}
                for line in lines[1:]:
                    if line:
                        k, sep, v = line.partition(":")
                        if not sep:
                            writer.write(_response(400, {"error": "malformed header line"}, None, True))
                            return
                        headers[k.strip().lower()] = v.strip()
                close = headers.get("connection", "").lower() == "close" or (version == "HTTP/1.0" and headers.get("connection", "").lower() != "keep-alive")
                raw = b""
                if "transfer-encoding" in headers:
                    writer.write(_response(400, {"error": "chunked bodies are not accepted; send Content-Length"}, None, True))
                    return
                if "content-length" in headers:
                    try:
                        n = int(headers["content-length"])
                        if n < 0:
                            raise ValueError
                    except ValueError:
                        writer.write(_response(400, {"error": "bad Content-Length"}, None, True))
                        return
                    if n > MAX_BODY_BYTES:
                        writer.write(_response(413, {"error": f"body larger than {MAX_BODY_BYTES} bytes"}, None, True))
                        return
                    try:
                        raw = await reader.readexactly(n)
                    except (asyncio.IncompleteReadError, ConnectionError):
                        return
                path = target.split("?", 1)[0].rstrip("/") or "/"
                if self.agent_pool is not None and method == "POST" and path == "/v1/allocate":
                    # (one that states a requirement asks the agents; decisions stay serialized:
                    # the table is changed only under svc.lock, wherever the handler runs)
                    code, body, ctype = await asyncio.get_running_loop().run_in_executor(self.agent_pool, route, svc, method, target, headers, raw)
                else:
                    code, body, ctype = route(svc, method, target, headers, raw)
                if code < 400 and (method != "GET" or path == "/v1/state"):
                    try:
                        await self.committer.durable(svc.table.seq)
                    except DurabilityError as exc:
                        code, body, ctype = 503, {"error": f"{exc}; nothing more is acknowledged: restart the service"}, None
                writer.write(_response(code, body, ctype, close))
                svc.metrics.observe(method, path if code != 404 else "other", code, time.perf_counter() - t0)
                if writer.transport.get_write_buffer_size() > 1 << 20:
                    await writer.drain()
                if close:
                    return
        finally:
            self.connections.pop(writer, None)
            try:
                writer.close()
            except Exception:
                pass


def parse_listen(text: str) -> tuple[str, Any]:
    """``HOST:PORT`` or ``unix:PATH`` -> ("tcp", (host, port)) or ("unix", path)."""
    if text.startswith("unix:"):
        path = text[5:]
        if not path:
            raise ServeError("--listen unix:PATH needs a path")
        return "unix", path
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ServeError(f"--listen {text}: expected HOST:PORT (e.g. 127.0.0.1:8700) or unix:PATH")
    if int(port) > 65535:
        raise ServeError(f"--listen {text}: the port must be 0 to 65535 (0: any free port)")
    return "tcp", (host.strip("[]"), int(port))


async def _serve(service: Service, listen: str, ready: "Callable[[str], None]") -> None:
    kind, addr = parse_listen(listen)
    server = Server(service)
    # durability is awaited per answer by the transport (group commit), not in the handlers
    service.sync_commit = False
    if kind == "unix":
        p = Path(addr)
        if (p.exists() or p.is_symlink()) and not p.is_socket():
            # only a stale socket is removed below; anything else there is someone's file
            raise ServeError(f"--listen {listen}: {p} exists and is not a socket; give another path")
        if p.exists():
            probe = socket.socket(socket.AF_UNIX)
            try:
                probe.connect(str(p))
                raise ServeError(f"--listen unix:{p}: another process serves on this socket")
            except OSError:
                p.unlink()  # stale socket of a killed service
            finally:
                probe.close()
        old = os.umask(0o077)  # the socket is the owner's only; the token still applies
        try:
            srv = await asyncio.start_unix_server(server.handle, path=str(p), limit=MAX_HEAD_BYTES)
        except OSError as exc:  # no such directory, not allowed there, path too long
            raise ServeError(f"--listen {listen}: {exc.strerror or exc}") from None
        finally:
            os.umask(old)
        bound = socket_file_stamp(str(p))
        where = listen
    else:
        try:
            srv = await asyncio.start_server(server.handle, addr[0], addr[1], limit=MAX_HEAD_BYTES, reuse_address=True, backlog=256)
        except OSError as exc:
            raise ServeError(f"--listen {listen}: {exc.strerror}") from None
        host, port = srv.sockets[0].getsockname()[:2]
        where = f"{host}:{port}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    ready(where)
    async with srv:
        await stop.wait()
        srv.close()  # no new connections; then end the open ones
        await server.close_all()
        if server.agent_pool is not None:
            server.agent_pool.shutdown(wait=False, cancel_futures=True)
    if kind == "unix":  # our socket file only: another process may have taken the path since
        remove_socket_file(str(addr), bound)


def lock_state_dir(state_dir: str) -> int:
    """Hold an exclusive lock on STATE/lock for the process's life: two services on one
    state would double-book. The kernel drops it when the process dies, even by kill -9."""
    Path(state_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(os.path.join(state_dir, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ServeError(f"--state {state_dir}: another toposched serve uses this state directory") from None
    return fd


def serve_forever(service: Service, listen: str) -> int:
    t = service.table

    def ready(where: str) -> None:
        print(
            f"toposched serve: listening on {where}; fabric {t.fabric.name} ({len(t.names)} nodes), --alloc {t.alloc}, "
            f"{len(t.placer.jobs())} allocations and {len(t.placer.drained())} drained nodes loaded",
            flush=True,
        )

    try:
        asyncio.run(_serve(service, listen, ready))
    finally:
        t.store.close()
    return 0

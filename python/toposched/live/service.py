"""``toposched serve``: the HTTP + JSON placement service (docs/live.md).

Standard library only (``http.server``), one thread per connection, one lock around the
allocation table: decisions are serialized, each one committed to SQLite before it is
answered. Every POST and PUT needs ``Authorization: Bearer TOKEN`` (401 without, 403 with a
wrong one); bad requests get 400 naming the field; no request can stop the service.
"""

from __future__ import annotations

import fcntl
import hmac
import json
import os
import signal
import socket
import socketserver
import stat
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import hostlist

from ..errors import ToposchedError
from .metrics import Metrics
from .openapi import openapi_document
from .table import LiveTable, UnknownNode

MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_JOB_ID_CHARS = 256


class ServeError(ToposchedError):
    """The service cannot start (bad token file, state in use, address taken)."""


class BadRequest(Exception):
    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def read_token(path: str) -> str:
    """The bearer token in ``path``, which must be a regular file of the service's user that
    nobody else can read or write (mode 0600 or stricter)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise ServeError(f"--token-file {path}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ServeError(f"--token-file {path}: not a regular file")
    if st.st_uid != os.geteuid():
        raise ServeError(f"--token-file {path}: owned by uid {st.st_uid}, not by the service's user (uid {os.geteuid()})")
    if st.st_mode & 0o077:
        raise ServeError(
            f"--token-file {path}: mode {stat.S_IMODE(st.st_mode):04o} lets others read or write it; run: chmod 600 {path}"
        )
    token = p.read_text().strip()
    if len(token) < 16:
        raise ServeError(f"--token-file {path}: the token must be at least 16 characters (e.g. openssl rand -hex 32)")
    return token


# request validation -------------------------------------------------------------------


def _field(body: dict, name: str, kind: type, *, required: bool = True, default: Any = None) -> Any:
    if name not in body:
        if required:
            raise BadRequest(f"missing field '{name}'", name)
        return default
    v = body[name]
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise BadRequest(f"field '{name}' must be an integer, got {json.dumps(v)[:60]}", name)
    elif kind is bool:
        if not isinstance(v, bool):
            raise BadRequest(f"field '{name}' must be true or false, got {json.dumps(v)[:60]}", name)
    elif not isinstance(v, kind):
        raise BadRequest(f"field '{name}' must be a {kind.__name__}, got {json.dumps(v)[:60]}", name)
    return v


def _only(body: dict, allowed: set[str]) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise BadRequest(f"unknown field '{extra[0]}' (allowed: {', '.join(sorted(allowed))})", extra[0])


def _job_id(body: dict) -> str:
    job = _field(body, "job", str)
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


# the service -----------------------------------------------------------------------------


class Service:
    """Routes requests to the table; owns the lock, the token and the metrics."""

    def __init__(self, table: LiveTable, token: str, *, log=sys.stderr) -> None:
        self.table = table
        self.token = token.encode()
        self.lock = threading.Lock()
        self.metrics = Metrics()
        self.log = log
        self.started_s = time.time()

    def _log(self, text: str) -> None:
        if self.log is not None:
            print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {text}", file=self.log, flush=True)

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
    def allocate(self, body: dict) -> tuple[int, dict]:
        _only(body, {"job", "nodes", "walltime_s", "reserve"})
        job = _job_id(body)
        nodes = _field(body, "nodes", int)
        if nodes < 1:
            raise BadRequest("field 'nodes' must be at least 1", "nodes")
        walltime_s = _field(body, "walltime_s", int)
        if walltime_s < 0:
            raise BadRequest("field 'walltime_s' must not be negative", "walltime_s")
        reserve = _field(body, "reserve", bool, required=False, default=False)
        with self.lock:
            a = self.table.allocate(job, nodes, walltime_s, reserve)
            now = self.table.now_s()
        self.metrics.decision("repeated" if a.repeated else a.outcome)
        if a.outcome == "placed" and a.repeated:
            return 200, {"job": job, "nodes": a.nodes}
        if a.outcome == "placed":
            self._log(f"placed {job} ({nodes} nodes) on {hostlist.collect_hostlist(a.nodes)}")
            return 200, {"job": job, "nodes": a.nodes}
        if a.outcome == "reserved":
            assert a.start_at_s is not None
            return 202, {
                "job": job,
                "start_estimate_s": max(0, a.start_at_s - now),
                "start_at_s": a.start_at_s,
                "nodes": a.nodes,
            }
        return 409, {"job": job, "reason": a.reason, "never": a.outcome == "never"}

    def satisfiable(self, body: dict) -> tuple[int, dict]:
        _only(body, {"nodes", "job"})
        nodes = _field(body, "nodes", int)
        if nodes < 1:
            raise BadRequest("field 'nodes' must be at least 1", "nodes")
        with self.lock:
            return 200, self.table.satisfiable(nodes)

    def release(self, body: dict) -> tuple[int, dict]:
        _only(body, {"job"})
        job = _job_id(body)
        with self.lock:
            what, nodes = self.table.release(job)
        if what == "released":
            self.metrics.decision("released")
            self._log(f"released {job} from {hostlist.collect_hostlist(nodes)}")
            return 200, {"job": job, "released": True, "nodes": nodes}
        if what == "already":
            return 200, {"job": job, "released": False, "note": "already released"}
        if what == "reservation-dropped":
            return 200, {"job": job, "released": False, "note": "held no nodes; its reservation was dropped"}
        return 404, {"job": job, "error": "no such job"}

    def put_state(self, body: dict) -> tuple[int, dict]:
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
            else:
                names, start_s, walltime_s = _node_list(v, field), None, None
            table[job] = (names, start_s, walltime_s)
        with self.lock:
            try:
                self.table.replace(table)
            except (UnknownNode, ValueError) as exc:
                raise BadRequest(str(exc), "allocations") from None
        self._log(f"state replaced: {len(table)} allocations")
        return 200, {"allocations": len(table)}

    def drain(self, body: dict, drained: bool) -> tuple[int, dict]:
        _only(body, {"nodes", "reason"})
        names = _node_list(_field(body, "nodes", object), "nodes")
        with self.lock:
            try:
                changed = self.table.set_drained(names, drained)
            except UnknownNode as exc:
                raise BadRequest(str(exc), "nodes") from None
        if changed:
            self._log(f"{'drained' if drained else 'resumed'} {hostlist.collect_hostlist(changed)} {body.get('reason', '')}")
        return 200, {"changed": changed}

    def state(self) -> dict:
        with self.lock:
            return self.table.snapshot()

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


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "toposched"
    service: Service  # set on the subclass made by make_server

    def address_string(self) -> str:  # unix sockets have no peer address
        return self.client_address[0] if isinstance(self.client_address, tuple) and self.client_address else "unix"

    def log_message(self, format: str, *args: Any) -> None:  # access log off: decisions are logged instead
        pass

    def _send(self, code: int, body: Any, content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else (json.dumps(body, sort_keys=True) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _route(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/") or "/"

    def _read_body(self) -> dict:
        length = self.headers.get("Content-Length")
        if length is None:
            if self.headers.get("Transfer-Encoding"):
                self.close_connection = True
                raise BadRequest("chunked bodies are not accepted; send Content-Length")
            return {}
        try:
            n = int(length)
        except ValueError:
            self.close_connection = True
            raise BadRequest("bad Content-Length") from None
        if n < 0 or n > MAX_BODY_BYTES:
            self.close_connection = True
            raise BadRequest(f"body larger than {MAX_BODY_BYTES} bytes")
        raw = self.rfile.read(n)
        if not raw.strip():
            raise BadRequest("empty body: a JSON object is expected")
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BadRequest(f"body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest("body must be a JSON object")
        return body

    def _handle(self, method: str) -> None:
        t0 = time.perf_counter()
        route = self._route()
        svc = self.service
        code = 500
        try:
            if method == "GET":
                if route == "/v1/health":
                    code, body = 200, {"status": "ok"}
                elif route == "/v1/openapi.json":
                    code, body = 200, openapi_document()
                elif route == "/v1/state":
                    code, body = 200, svc.state()
                elif route == "/metrics":
                    code = 200
                    self._send(200, svc.metrics_text(), "text/plain; version=0.0.4; charset=utf-8")
                    return
                else:
                    code, body = 404, {"error": f"no route GET {route}"}
            else:
                known = (method == "POST" and route in ROUTES_POST) or (method == "PUT" and route == "/v1/state")
                body_in = self._read_body() if known else None
                if not known:
                    self.close_connection = True
                    code, body = (405 if route in ROUTES_POST | {"/v1/state"} else 404), {"error": f"no route {method} {route}"}
                elif (denied := svc.check_auth(self.headers.get("Authorization"))) is not None:
                    code, body = denied[0], {"error": denied[1]}
                else:
                    assert body_in is not None
                    if route == "/v1/allocate":
                        code, body = svc.allocate(body_in)
                    elif route == "/v1/satisfiable":
                        code, body = svc.satisfiable(body_in)
                    elif route == "/v1/release":
                        code, body = svc.release(body_in)
                    elif route == "/v1/nodes/drain":
                        code, body = svc.drain(body_in, True)
                    elif route == "/v1/nodes/resume":
                        code, body = svc.drain(body_in, False)
                    else:
                        code, body = svc.put_state(body_in)
        except BadRequest as exc:
            code, body = 400, {"error": str(exc), "field": exc.field}
        except Exception as exc:  # a bug or a failing disk: answer 500, keep serving
            code, body = 500, {"error": f"internal error: {type(exc).__name__}: {exc}"}
            svc._log(f"error on {method} {route}: {type(exc).__name__}: {exc}")
        try:
            self._send(code, body)
        finally:
            svc.metrics.observe(method, route if code != 404 else "other", code, time.perf_counter() - t0)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False


class _TCPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128


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
    return "tcp", (host.strip("[]"), int(port))


def make_server(service: Service, listen: str):
    kind, addr = parse_listen(listen)
    handler = type("BoundHandler", (Handler,), {"service": service})
    if kind == "unix":
        p = Path(addr)
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
            return _UnixHTTPServer(str(p), handler)
        finally:
            os.umask(old)
    try:
        return _TCPServer(addr, handler)
    except OSError as exc:
        raise ServeError(f"--listen {listen}: {exc.strerror}") from None


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
    server = make_server(service, listen)
    stop = threading.Event()

    def on_signal(signum, frame):
        if not stop.is_set():
            stop.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    where = listen if listen.startswith("unix:") else "{}:{}".format(*server.server_address[:2])
    t = service.table
    print(
        f"toposched serve: listening on {where}; fabric {t.fabric.name} ({len(t.names)} nodes), --alloc {t.alloc}, "
        f"{len(t.placer.jobs())} allocations and {len(t.placer.drained())} drained nodes loaded",
        flush=True,
    )
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        if listen.startswith("unix:"):
            Path(listen[5:]).unlink(missing_ok=True)
        t.store.close()
    return 0

"""A small client of ``toposched serve`` (TCP or unix socket), used by the Slurm bridge, the
tests and the load benchmark. Standard library only; one kept-alive connection."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any, Callable, TypedDict, Unpack, cast

from ..unix_http import JsonObject, UnixHTTPConnection


class ServiceUnavailable(Exception):
    """The service could not be reached within the retry budget."""


class CallOptions(TypedDict, total=False):
    """The keywords of :meth:`Client.call` that the conveniences pass through."""

    retry_for_s: float
    log: Callable[[str], None] | None


class Client:
    """``Client("http://127.0.0.1:8700", token)`` or ``Client("unix:/run/toposched.sock", token)``."""

    def __init__(self, url: str, token: str | None = None, *, timeout_s: float = 10.0) -> None:
        self.url = url
        self.token = token
        self.timeout_s = timeout_s
        self._conn: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self.url.startswith("unix:"):
                self._conn = UnixHTTPConnection(self.url[5:], self.timeout_s)
            else:
                hostport = self.url.split("://", 1)[-1].rstrip("/")
                self._conn = http.client.HTTPConnection(hostport, timeout=self.timeout_s)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None, token: str | None = "default") -> tuple[int, Any]:
        """One request, no retry: (status, decoded JSON or text). Connection errors raise OSError."""
        headers: dict[str, str] = {}
        tok = self.token if token == "default" else token
        if tok is not None:
            headers["Authorization"] = f"Bearer {tok}"
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        if data is not None:
            headers["Content-Type"] = "application/json"
        conn = self._connect()
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        if resp.getheader("Connection", "").lower() == "close":
            self.close()
        ctype = resp.getheader("Content-Type", "")
        return resp.status, (json.loads(payload) if ctype.startswith("application/json") else payload.decode())

    def call(self, method: str, path: str, body: Any = None, *, retry_for_s: float = 30.0, log: Callable[[str], None] | None = None) -> tuple[int, Any]:
        """A request retried (with back-off) while the service cannot be reached, e.g. while it
        restarts. Safe for every route: allocate and release are idempotent."""
        deadline = time.monotonic() + retry_for_s
        delay = 0.05
        while True:
            try:
                return self.request(method, path, body)
            except (OSError, http.client.HTTPException) as exc:
                if time.monotonic() >= deadline:
                    raise ServiceUnavailable(f"{method} {path}: {self.url} unreachable: {exc}") from None
                if log:
                    log(f"service unreachable ({exc}); retrying {method} {path}")
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    # conveniences
    def allocate(self, job: str, nodes: int, walltime_s: int, reserve: bool = False, requirement: str | JsonObject | None = None, **kw: Unpack[CallOptions]) -> tuple[int, Any]:
        """``requirement``: a per-host requirement for the node agents (service started with
        --node-agents)."""
        body: dict[str, Any] = {"job": job, "nodes": nodes, "walltime_s": walltime_s, "reserve": reserve}
        if requirement is not None:
            body["requirement"] = requirement
        return self.call("POST", "/v1/allocate", body, **kw)

    def release(self, job: str, **kw: Unpack[CallOptions]) -> tuple[int, Any]:
        return self.call("POST", "/v1/release", {"job": job}, **kw)

    def state(self, **kw: Unpack[CallOptions]) -> JsonObject:
        code, body = self.call("GET", "/v1/state", **kw)
        if code != 200:
            raise RuntimeError(f"GET /v1/state: {code} {body}")
        return cast(JsonObject, body)  # the route answers a JSON object (live/openapi.py)

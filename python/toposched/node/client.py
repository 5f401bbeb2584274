"""Talking to node agents: one host (:class:`AgentClient`) or many (:func:`rank_hosts`, seed
002's external scheduler: filter the hosts that can satisfy a requirement now, rank them by
best radius).

>>> # rank_hosts("CORES=4;WAIT", {"n01": AgentClient("unix:/run/toposched/n01.sock"), ...})
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass, field
from typing import Mapping

from ..errors import ToposchedError
from ..unix_http import JsonObject, UnixHTTPConnection
from .cpuset import check_job_id

# A query answer's host score: (radius, NUMA domains, fragmentation vector).
RankKey = tuple[int, int, tuple[int, ...]]


class AgentUnreachable(ToposchedError):
    pass


class AgentAddressError(ToposchedError):
    """An agent address that is neither ``unix:PATH`` nor ``HOST:PORT``; ``why`` says what
    is wrong, for the caller to prefix with where the address came from (``--agent X``)."""

    def __init__(self, address: str, why: str) -> None:
        super().__init__(f"node agent address {address!r}: {why}")
        self.why = why


def parse_agent_address(address: str) -> tuple[str, int] | str:
    """``unix:PATH`` -> PATH; ``HOST:PORT`` -> (HOST, PORT). Raises AgentAddressError."""
    if address.startswith("unix:"):
        if not address[5:]:
            raise AgentAddressError(address, "unix:PATH needs a path")
        return address[5:]
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise AgentAddressError(address, "expected unix:PATH or HOST:PORT with a port from 1 to 65535 (e.g. unix:/run/toposched/node-agent.sock)")
    return host.strip("[]"), int(port)


class AgentClient:
    """A node agent at ``unix:PATH`` or ``HOST:PORT``; ``token`` for allocate and release.
    Raises :class:`AgentAddressError` for any other address."""

    def __init__(self, address: str, token: str | None = None, timeout_s: float = 30.0) -> None:
        self.address = address
        self._where = parse_agent_address(address)
        self.token = token
        self.timeout_s = timeout_s

    def _conn(self) -> http.client.HTTPConnection:
        if isinstance(self._where, str):
            return UnixHTTPConnection(self._where, self.timeout_s)
        host, port = self._where
        return http.client.HTTPConnection(host, port, timeout=self.timeout_s)

    def request(self, method: str, path: str, body: JsonObject | None = None, *, auth: bool = True) -> tuple[int, JsonObject]:
        """(HTTP status, JSON body). Raises :class:`AgentUnreachable` if no agent answers."""
        headers = {"Content-Type": "application/json"}
        if auth and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = json.dumps(body).encode() if body is not None else None
        conn = self._conn()
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except OSError as exc:
            raise AgentUnreachable(f"node agent at {self.address}: {exc}") from None
        except http.client.HTTPException as exc:  # something answered, but not in HTTP
            raise AgentUnreachable(f"node agent at {self.address}: not an HTTP answer ({type(exc).__name__}: {str(exc).strip()[:80]})") from None
        finally:
            conn.close()
        try:
            doc = json.loads(raw or b"{}")
        except ValueError:
            doc = None
        if not isinstance(doc, dict):  # callers read fields of a JSON object
            return resp.status, {"reason": raw.decode(errors="replace")[:200]}
        return resp.status, doc

    def health(self) -> JsonObject:
        return self.request("GET", "/v1/health")[1]

    def state(self) -> JsonObject:
        return self.request("GET", "/v1/state")[1]

    def topology(self) -> JsonObject:
        return self.request("GET", "/v1/topology")[1]

    def job(self, job: str) -> tuple[int, JsonObject]:
        """Raises ValueError for a job id no agent holds: the id is part of the URL, and
        '7?x=1' would have asked for job 7."""
        return self.request("GET", f"/v1/jobs/{check_job_id(job)}")

    def query(self, requirement: str | JsonObject) -> JsonObject:
        status, body = self.request("POST", "/v1/query", {"requirement": requirement})
        if status != 200:
            raise ToposchedError(f"node agent at {self.address}: query refused ({status}): {body.get('reason')}")
        return body

    def allocate(self, job: str, requirement: str | JsonObject, uid: int | None = None) -> tuple[int, JsonObject]:
        body: JsonObject = {"job": job, "requirement": requirement}
        if uid is not None:
            body["uid"] = uid
        return self.request("POST", "/v1/allocate", body)

    def release(self, job: str) -> tuple[int, JsonObject]:
        return self.request("POST", "/v1/release", {"job": job})

    def reconcile(self, live_jobs: list[str]) -> tuple[int, JsonObject]:
        return self.request("POST", "/v1/reconcile", {"jobs": list(live_jobs)})

    def bind(self, job: str, pid: int | None = None) -> tuple[int, JsonObject]:
        body: JsonObject = {"job": job}
        if pid is not None:
            body["pid"] = pid
        return self.request("POST", "/v1/bind", body)


@dataclass
class Ranking:
    """Hosts that can take the job now, best first (``ranked``: (host, answer)); the
    others with the reason (``rejected``: host -> status and reason)."""

    ranked: list[tuple[str, JsonObject]] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)

    @property
    def hosts(self) -> list[str]:
        return [h for h, _ in self.ranked]


def rank_key(answer: JsonObject) -> RankKey:
    """The host score of a query answer (smaller is better): radius, NUMA domains, then
    fragmentation (more fully free objects left is better)."""
    r = answer["placement"]["rank_key"]
    return (r[0], r[1], tuple(r[2]))


def rank_answers(answers: Mapping[str, JsonObject]) -> Ranking:
    """Filter + rank from query answers already gathered (host -> answer)."""
    out = Ranking()
    ok: list[tuple[RankKey, str, JsonObject]] = []
    for host, ans in answers.items():
        if ans.get("status") == "ok":
            ok.append((rank_key(ans), host, ans))
        else:
            out.rejected[host] = f"{ans.get('status')}: {ans.get('reason', '')}"
    ok.sort(key=lambda t: (t[0], t[1]))
    out.ranked = [(h, a) for _, h, a in ok]
    return out


def rank_hosts(requirement: str | JsonObject, agents: Mapping[str, AgentClient]) -> Ranking:
    """Ask every host's agent about ``requirement``; keep those that can place it now (and,
    for WAIT, well enough), best radius first; ties by host name."""
    from concurrent.futures import ThreadPoolExecutor

    def ask(host: str) -> JsonObject | str:
        try:
            return agents[host].query(requirement)
        except ToposchedError as exc:
            return f"unreachable: {exc}"

    # All at once: one after another, k hung hosts cost k times the timeout. Collected in
    # host order, so the answer does not depend on which agent answers first.
    hosts = sorted(agents)
    with ThreadPoolExecutor(max_workers=max(1, min(32, len(hosts)))) as pool:
        got = list(pool.map(ask, hosts))
    answers = {h: a for h, a in zip(hosts, got) if not isinstance(a, str)}
    rejected = {h: a for h, a in zip(hosts, got) if isinstance(a, str)}
    ranking = rank_answers(answers)
    ranking.rejected.update(rejected)
    return ranking

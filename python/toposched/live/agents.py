"""The placement service consulting node agents: seed 002's external scheduler. For a job
that states a per-host requirement (``"requirement": "CORES=8;WAIT"``, the node agent's
language, docs/node-agent.md), the service asks the agent of every free host whether it can
meet it now (*filter*) and how well (*rank*: best radius, fewest NUMA domains, least
fragmentation); the cluster allocation policy then chooses among the hosts that can, and
the answer gives, per chosen host, the CPUs its agent proposes. The job's cpusets are made
by the agents themselves when the job starts (the Slurm prolog or ``toposched run-in``).

``--node-agents FILE`` (TOML)::

    token_file = "/etc/toposched/agent.token"   # the agents' bearer token (0600)
    timeout_s = 5
    [agents]
    n01 = "unix:/run/toposched/n01.sock"
    n02 = "10.0.0.2:8710"

A host without an agent, or whose agent does not answer, cannot take a job that states a
requirement (it is listed with the reason in the refusal).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import InputError
from ..node.client import AgentAddressError, AgentClient, Ranking, rank_hosts
from ..unix_http import JsonObject


@dataclass
class AgentDirectory:
    """Node name -> its agent."""

    agents: dict[str, AgentClient]

    @classmethod
    def load(cls, path: str | Path) -> "AgentDirectory":
        from ..tokens import read_token_file

        p = Path(path)
        try:
            doc = tomllib.loads(p.read_text())
        except OSError as exc:
            raise InputError(str(p), f"cannot read: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise InputError(str(p), f"not valid TOML: {exc}") from None
        unknown = set(doc) - {"token_file", "timeout_s", "agents"}
        if unknown:
            raise InputError(str(p), f"unknown keys {sorted(unknown)}; expected token_file, timeout_s, [agents]", field=sorted(unknown)[0])
        agents = doc.get("agents")
        if not isinstance(agents, dict) or not agents:
            raise InputError(str(p), "needs an [agents] table: node name = \"unix:PATH\" or \"HOST:PORT\"", field="agents")
        token = read_token_file(str(doc["token_file"])) if "token_file" in doc else None
        timeout = doc.get("timeout_s", 5)
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise InputError(str(p), f"timeout_s must be a positive number, got {timeout!r}", field="timeout_s")
        out = {}
        for name, addr in agents.items():
            bad = InputError(str(p), f"agent of {name}: expected \"unix:PATH\" or \"HOST:PORT\", got {addr!r}", field=f"agents.{name}")
            if not isinstance(addr, str):
                raise bad
            try:
                out[name] = AgentClient(addr, token, timeout_s=float(timeout))
            except AgentAddressError:
                raise bad from None
        return cls(out)

    def rank(self, requirement: str | JsonObject, hosts: Iterable[str]) -> Ranking:
        """Filter and rank ``hosts`` for ``requirement``; hosts without an agent are rejected."""
        hosts = list(hosts)
        ranking = rank_hosts(requirement, {h: self.agents[h] for h in hosts if h in self.agents})
        for h in hosts:
            if h not in self.agents:
                ranking.rejected[h] = "no node agent configured for this host"
        return ranking

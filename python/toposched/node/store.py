"""The node agent's durable state: SQLite in WAL mode with ``synchronous=FULL`` under
``--state``, so an allocation the agent has acknowledged survives ``kill -9`` and a power
cut. One row per live allocation; released jobs are remembered so that a second release
is answered "already released" rather than "unknown job"."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ToposchedError


@dataclass(frozen=True)
class StoredAllocation:
    job: str
    cpus: str
    mems: str
    requirement: dict[str, Any]  # Requirement.to_json(), as stored
    exclusive: bool
    mem_bytes_per_numa: tuple[tuple[int, int], ...]
    uid: int | None
    created_s: float


class AgentStateError(ToposchedError):
    """A --state directory the agent cannot use (the message names it and the way out)."""


class AgentStore:
    """``DIR/node-agent.sqlite``, held by one agent at a time: an exclusive lock on
    ``DIR/lock`` for the store's life (the kernel drops it when the process dies, even by
    kill -9). Two agents on one state each kept their own table in memory and gave the same
    CPUs to different jobs."""

    def __init__(self, state_dir: str | Path) -> None:
        self.dir = Path(state_dir)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise AgentStateError(f"--state {self.dir}: cannot use the directory: {exc.strerror or exc}") from None
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise AgentStateError(f"--state {self.dir}: another toposched node-agent uses this --state directory") from None
        self.path = self.dir / "node-agent.sqlite"
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(
                """
                CREATE TABLE IF NOT EXISTS allocations (
                    job TEXT PRIMARY KEY, cpus TEXT NOT NULL, mems TEXT NOT NULL,
                    requirement TEXT NOT NULL, exclusive INTEGER NOT NULL,
                    mem_bytes_per_numa TEXT NOT NULL, uid INTEGER, created_s REAL NOT NULL);
                CREATE TABLE IF NOT EXISTS released (job TEXT PRIMARY KEY, released_s REAL NOT NULL);
                CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                """
            )
        except sqlite3.Error as exc:
            os.close(self._lock_fd)
            raise AgentStateError(f"--state {self.dir}: cannot open {self.path.name}: {exc}") from None

    def close(self) -> None:
        self._db.close()
        os.close(self._lock_fd)  # and with it the lock

    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def _transaction(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Run ``statements`` as one transaction; on any error roll it back, so that the
        connection is not left inside it (every later write then failed with "cannot start
        a transaction within a transaction" until the agent was restarted)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    self._db.execute(sql, params)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def add(self, a: StoredAllocation) -> None:
        self._transaction([
            ("INSERT INTO allocations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
             (a.job, a.cpus, a.mems, json.dumps(a.requirement, sort_keys=True), int(a.exclusive),
              json.dumps([list(x) for x in a.mem_bytes_per_numa]), a.uid, a.created_s)),
            ("DELETE FROM released WHERE job=?", (a.job,)),
        ])

    def remove(self, job: str) -> None:
        self._transaction([
            ("DELETE FROM allocations WHERE job=?", (job,)),
            ("INSERT OR REPLACE INTO released VALUES (?, ?)", (job, time.time())),
        ])

    def was_released(self, job: str) -> bool:
        return self._db.execute("SELECT 1 FROM released WHERE job=?", (job,)).fetchone() is not None

    def damaged(self, job: object, what: str) -> AgentStateError:
        """The error for a row the agent never writes (the file was edited or damaged): one
        line naming the file, the row and the field, not a Python error deep in the load."""
        return AgentStateError(f"{self.path}: allocations row of job {job!r}: {what}; the file was edited or is damaged: restore it from a backup")

    def all(self) -> list[StoredAllocation]:
        from .cpulist import CpuListError, parse_cpulist
        from .cpuset import check_job_id

        rows = self._db.execute("SELECT * FROM allocations ORDER BY created_s, job").fetchall()
        out = []
        for job, cpus, mems, requirement, exclusive, mem_json, uid, created_s in rows:
            try:
                check_job_id(job)
            except ValueError as exc:
                raise self.damaged(job, str(exc)) from None
            for field, text in (("cpus", cpus), ("mems", mems)):
                try:
                    parse_cpulist(text)
                except (CpuListError, TypeError, AttributeError):
                    raise self.damaged(job, f"{field} {text!r} is not a CPU list such as 0-3,8") from None
            try:
                req, per_numa = json.loads(requirement), json.loads(mem_json)
            except (TypeError, ValueError):
                raise self.damaged(job, "requirement or mem_bytes_per_numa is not JSON") from None
            if not isinstance(req, dict):
                raise self.damaged(job, "requirement is not a JSON object")
            if not isinstance(per_numa, list) or not all(
                isinstance(x, list) and len(x) == 2 and all(type(v) is int and v >= 0 for v in x) for x in per_numa
            ):
                raise self.damaged(job, "mem_bytes_per_numa is not a list of [NUMA domain, bytes] pairs")
            if exclusive not in (0, 1) or not (uid is None or type(uid) is int) or not isinstance(created_s, (int, float)):
                raise self.damaged(job, "exclusive, uid or created_s is not a value the agent writes")
            out.append(StoredAllocation(job, cpus, mems, req, bool(exclusive), tuple((x[0], x[1]) for x in per_numa), uid, created_s))
        return out

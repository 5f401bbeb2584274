"""Durable state of ``toposched serve``: one SQLite database in WAL mode under ``--state``.

Every decision is written and committed (``synchronous=FULL``: the WAL is fsynced at each
commit) before the service answers, so ``kill -9`` loses nothing that was acknowledged.
Tables:

* ``allocations(job, nodes, start_s, walltime_s)``: jobs holding nodes (node names, JSON);
* ``released(job, at_s)``: jobs released, so that releasing twice is harmless and not a 404;
* ``drained(node)``: nodes drained by ``/v1/nodes/drain``;
* ``placements(seq, job, nodes, at_s, source)``: the placements made, in order, for audit
  (``source`` is ``allocate`` or ``put-state``);
* ``meta(key, value)``: the fabric's node names and the policy the state was made under. A
  state directory is refused under another fabric or policy (its node names would mean
  other nodes).

Released jobs and placements are kept for the service's history window (``serve
--keep-history-days``, 30 days by default; :meth:`Store.prune`): a service that runs for
years keeps a bounded file. A placement of a job that still holds its nodes is kept.

Reservations are not stored: they are advice recomputed at every scheduling pass.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from types import TracebackType

from ..errors import ToposchedError

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS allocations (
    job TEXT PRIMARY KEY, nodes TEXT NOT NULL, start_s INTEGER NOT NULL, walltime_s INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS released (job TEXT PRIMARY KEY, at_s INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS drained (node TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS placements (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, job TEXT NOT NULL, nodes TEXT NOT NULL, at_s INTEGER NOT NULL, source TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS released_at ON released (at_s);
CREATE INDEX IF NOT EXISTS placements_at ON placements (at_s);
"""


class StateError(ToposchedError):
    """A state directory that cannot be used."""


def fabric_fingerprint(node_names: list[str], leaf_of_node: list[int], alloc: str) -> str:
    h = hashlib.sha256(json.dumps([node_names, leaf_of_node, alloc]).encode())
    return h.hexdigest()


class Store:
    """The SQLite file ``DIR/toposched-live.sqlite``. Not thread-safe: the service calls it
    under its one lock."""

    def __init__(self, directory: str | Path, fingerprint: str, description: str) -> None:
        d = Path(directory)
        try:
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise StateError(f"--state {d}: cannot create the directory: {exc.strerror}") from None
        self.path = d / "toposched-live.sqlite"
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            # Checkpoints run in a thread of their own (below), not inside a commit that an
            # answer waits for.
            self.db.execute("PRAGMA wal_autocheckpoint=0")
            self.db.executescript(SCHEMA)
        except sqlite3.Error as exc:
            raise StateError(f"--state {d}: cannot open {self.path.name}: {exc}") from None
        row = self.db.execute("SELECT value FROM meta WHERE key='fingerprint'").fetchone()
        if row is None:
            with self.tx():
                self.db.execute("INSERT INTO meta VALUES ('fingerprint', ?), ('description', ?)", (fingerprint, description))
        elif row[0] != fingerprint:
            was = self.db.execute("SELECT value FROM meta WHERE key='description'").fetchone()
            raise StateError(
                f"--state {d} holds the state of another fabric or policy ({was[0] if was else '?'}), not {description}; "
                "give another --state directory"
            )

        self._stop = threading.Event()
        self._checkpointer = threading.Thread(target=self._checkpoint_loop, name="wal-checkpoint", daemon=True)
        self._checkpointer.start()

    def _checkpoint_loop(self) -> None:
        """Copy the WAL into the database every second (PASSIVE: never blocks a commit)."""
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            while not self._stop.wait(1.0):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    pass  # busy or failing disk: the next try, or the commits, will say
        finally:
            db.close()

    def tx(self) -> "_Tx":
        return _Tx(self.db)

    # reads (at start)
    def damaged(self, row: str, what: str) -> StateError:
        """The error for a row this code never writes (the file was edited or damaged): one
        line naming the file, the row and the field, not a Python error deep in the load."""
        return StateError(
            f"{self.path}: {row}: {what}; the file was edited or is damaged: restore it from a backup, "
            "or start on an empty --state directory (the Slurm bridge puts Slurm's running jobs back)"
        )

    def allocations(self) -> list[tuple[str, list[str], int, int]]:
        rows = self.db.execute("SELECT job, nodes, start_s, walltime_s FROM allocations ORDER BY job").fetchall()
        out = []
        for j, n, s, w in rows:
            row = f"allocations row of job {j!r}"
            if not isinstance(j, str):
                raise self.damaged(row, "the job id is not text")
            try:
                nodes = json.loads(n)
            except (TypeError, ValueError):
                nodes = None
            if not isinstance(nodes, list) or not all(isinstance(x, str) for x in nodes):
                raise self.damaged(row, f"nodes is not a JSON list of node names ({str(n)[:60]!r})")
            for field, v in (("start_s", s), ("walltime_s", w)):
                if type(v) is not int or v < 0:  # what allocate and PUT /v1/state accept
                    raise self.damaged(row, f"{field} is not a whole number of seconds >= 0 ({str(v)[:60]!r})")
            out.append((j, nodes, s, w))
        return out

    def drained(self) -> list[str]:
        names = [r[0] for r in self.db.execute("SELECT node FROM drained ORDER BY node")]
        for n in names:
            if not isinstance(n, str):
                raise self.damaged("drained row", f"the node name {n!r} is not text")
        return names

    def was_released(self, job: str) -> bool:
        return self.db.execute("SELECT 1 FROM released WHERE job=?", (job,)).fetchone() is not None

    # writes: call inside `with store.tx():`
    def put_allocation(self, job: str, nodes: list[str], start_s: int, walltime_s: int) -> None:
        self.db.execute("INSERT INTO allocations VALUES (?, ?, ?, ?)", (job, json.dumps(nodes), start_s, walltime_s))
        self.db.execute("DELETE FROM released WHERE job=?", (job,))
        self.db.execute("INSERT INTO placements (job, nodes, at_s, source) VALUES (?, ?, ?, 'allocate')", (job, json.dumps(nodes), start_s))

    def delete_allocation(self, job: str, at_s: int) -> None:
        self.db.execute("DELETE FROM allocations WHERE job=?", (job,))
        self.db.execute("INSERT OR REPLACE INTO released VALUES (?, ?)", (job, at_s))

    def replace_allocations(self, rows: list[tuple[str, list[str], int, int]], released: list[str], at_s: int) -> None:
        """The allocation table replaced by ``rows``; ``released``: the jobs it drops."""
        self.db.execute("DELETE FROM allocations")
        self.db.executemany("INSERT OR REPLACE INTO released VALUES (?, ?)", [(j, at_s) for j in released])
        self.db.executemany(
            "INSERT INTO allocations VALUES (?, ?, ?, ?)", [(j, json.dumps(n), s, w) for j, n, s, w in rows]
        )
        self.db.executemany(
            "INSERT INTO placements (job, nodes, at_s, source) VALUES (?, ?, ?, 'put-state')", [(j, json.dumps(n), s) for j, n, s, _ in rows]
        )

    def prune(self, before_s: int) -> None:
        """Forget jobs released before ``before_s`` and placements made before it, except
        those of jobs that still hold nodes (the history window: the indexes on ``at_s``
        make it a walk over the rows removed only)."""
        self.db.execute("DELETE FROM released WHERE at_s < ?", (before_s,))
        self.db.execute("DELETE FROM placements WHERE at_s < ? AND job NOT IN (SELECT job FROM allocations)", (before_s,))

    def set_drained(self, node: str, drained: bool) -> None:
        if drained:
            self.db.execute("INSERT OR IGNORE INTO drained VALUES (?)", (node,))
        else:
            self.db.execute("DELETE FROM drained WHERE node=?", (node,))

    def close(self) -> None:
        self._stop.set()
        self._checkpointer.join(timeout=5)
        self.db.close()


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT (fsynced), or ROLLBACK on an exception."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")

"""The live allocation table: the core's :class:`toposched._core.Placer` (the replay's own
allocators), node names, and the durable :class:`~toposched.live.store.Store`.

Every write decides in the placer, queues its store writes and, before anything is
answered, waits until they are committed (group commit: concurrent requests share one
fsync). Decisions are serialized under ``LiveTable.lock``; with ``autocommit`` (the
default, for single-threaded use) each write commits before it returns.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from .. import _core
from ..topology import Fabric
from .store import Store, fabric_fingerprint


@dataclass
class Answer:
    """Outcome of an allocation request: ``placed``, ``reserved``, ``refused`` or ``never``."""

    outcome: str
    nodes: list[str] | None = None
    start_at_s: int | None = None
    reason: str | None = None
    #: the job already held these nodes (a retried request): nothing was decided
    repeated: bool = False


class UnknownNode(ValueError):
    pass


class DurabilityError(RuntimeError):
    """A commit failed: nothing more is acknowledged until the service restarts."""


#: How long released jobs and placements are kept by default (serve --keep-history-days).
DEFAULT_HISTORY_S = 30 * 86_400
#: At most one pruning of the history per this many seconds (it rides on a commit).
PRUNE_EVERY_S = 60


class LiveTable:
    def __init__(
        self,
        fabric: Fabric,
        alloc: str,
        state_dir: str,
        *,
        seed: int = 0,
        leaf_order: str = "flux-topo",
        tie_break: str = "name",
        slurm_profile: str = "current",
        clock: Callable[[], float] = time.time,
        autocommit: bool = True,
        keep_history_s: int | None = DEFAULT_HISTORY_S,
    ) -> None:
        """``keep_history_s``: how long released jobs (a second release of one is "already
        released", not unknown) and placements are kept (None: for ever)."""
        self.fabric = fabric
        self.names: list[str] = list(fabric.spec.node_names)
        self.ids = {n: i for i, n in enumerate(self.names)}
        self.leaf_of = [int(x) for x in fabric.core.leaf_of_nodes()]
        self.pod_of_leaf = [int(x) for x in fabric.core.pod_of_leaves()]
        self.leaf_names = [leaf.name for pod in fabric.spec.pods for leaf in pod.leaves]
        self.pod_names = [pod.name for pod in fabric.spec.pods]
        from ..registry import options_of

        given: dict[str, int | float | str] = {"seed": seed, "leaf_order": leaf_order, "tie_break": tie_break, "slurm_profile": slurm_profile}
        # the policy's own options, as a replay passes them (toposched.config.policy_options)
        self.placer = _core.Placer(fabric.core, alloc, options={o.name: given[o.name] for o in options_of([alloc]) if o.name in given})
        self.alloc = alloc
        self.clock = clock
        description = f"fabric {fabric.name} ({len(self.names)} nodes), --alloc {alloc}"
        self.store = Store(state_dir, fabric_fingerprint(self.names, self.leaf_of, alloc), description)
        #: decisions are serialized under this lock (the service holds it; see wait_durable)
        self.lock = threading.Lock()
        self.autocommit = autocommit
        self._commit_lock = threading.Lock()
        self._pending: list[Callable[[Store], None]] = []
        self._seq = 0
        self._durable = 0
        self.broken: str | None = None
        self._held: dict[str, list[str]] = {}
        #: jobs released while this table ran, with when (pruned as the store is)
        self._released: dict[str, int] = {}
        self.keep_history_s = keep_history_s
        self._pruned_s = self.now_s()
        self._load()

    def now_s(self) -> int:
        return int(self.clock())

    def _load(self) -> None:
        """Put back what the store holds: allocations first (a drained node may be held), then drains."""
        holder: dict[str, str] = {}
        for job, nodes, start_s, walltime_s in self.store.allocations():
            row = f"allocations row of job {job!r}"
            try:
                ids = self.node_ids(nodes)
            except UnknownNode as exc:
                raise self.store.damaged(row, str(exc)) from None
            if len(set(nodes)) != len(nodes):
                raise self.store.damaged(row, "a node is listed twice")
            for n in nodes:
                other = holder.setdefault(n, job)
                if other != job:
                    raise self.store.damaged(row, f"node {n} is held by job {other} too")
            self.placer.assign(job, ids, start_s, walltime_s)
            self._held[job] = nodes
        for node in self.store.drained():
            if node not in self.ids:
                raise self.store.damaged("drained row", f"node {node!r} is not on fabric {self.fabric.name}")
            self.placer.drain(self.ids[node])

    # names <-> ids
    def node_ids(self, names: list[str]) -> list[int]:
        out = []
        for n in names:
            i = self.ids.get(n)
            if i is None:
                raise UnknownNode(f"node {n!r} is not on fabric {self.fabric.name}")
            out.append(i)
        return out

    def node_names(self, ids: list[int]) -> list[str]:
        return [self.names[i] for i in ids]

    def free_nodes(self) -> list[str]:
        """Nodes neither held nor drained, in node order."""
        held = {n for names in self._held.values() for n in names}
        drained = set(self.placer.drained())
        return [name for i, name in enumerate(self.names) if name not in held and i not in drained]

    # durability: group commit -----------------------------------------------------------
    #
    # A decision changes the placer at once (under `lock`) and queues its store writes; the
    # caller then waits in `wait_durable(seq)` until a commit covering it is done. The first
    # waiter commits everything queued, in decision order, in one transaction (one fsync);
    # requests that arrive meanwhile share the next one. So concurrent clients share fsyncs,
    # and no answer leaves before its decision is on disk.

    def _queue(self, op: Callable[[Store], None]) -> int:
        self._pending.append(op)
        self._seq += 1
        return self._seq

    @property
    def seq(self) -> int:
        """Number of the last decision made (durable or not)."""
        return self._seq

    def wait_durable(self, seq: int) -> None:
        """Return once every decision up to `seq` is committed. Raises DurabilityError if a
        commit failed: the service then refuses writes until restarted (the restart loads
        what is on disk, which excludes everything never acknowledged)."""
        while self._durable < seq:
            if self.broken is not None:
                raise DurabilityError(self.broken)
            with self._commit_lock:
                if self._durable >= seq:
                    break
                if self.broken is not None:
                    raise DurabilityError(self.broken)
                with self.lock:
                    ops, self._pending = self._pending, []
                    upto = self._seq
                    if ops:
                        ops += self._prune_op()
                try:
                    if ops:
                        with self.store.tx():
                            for op in ops:
                                op(self.store)
                except Exception as exc:
                    self.broken = f"committing the state failed: {type(exc).__name__}: {exc}"
                    raise DurabilityError(self.broken) from exc
                self._durable = upto

    def _prune_op(self) -> list[Callable[[Store], None]]:
        """The history window's pruning, once a minute at most, in the next commit (the
        store's rows and this table's released jobs alike): nothing to do between writes,
        when nothing grows."""
        now = self.now_s()
        if self.keep_history_s is None or now - self._pruned_s < PRUNE_EVERY_S:
            return []
        self._pruned_s = now
        before = now - self.keep_history_s
        for job in [j for j, at in self._released.items() if at < before]:
            del self._released[job]
        return [lambda st: st.prune(before)]

    def _done(self, seq: int) -> None:
        if self.autocommit:
            self.wait_durable(seq)

    # decisions (callers hold `lock` unless autocommit) --------------------------------------

    def _check_writable(self) -> None:
        if self.broken is not None:
            raise DurabilityError(self.broken)

    def allocate(self, job: str, nodes: int, walltime_s: int, reserve: bool = False, exclude: list[str] | None = None) -> Answer:
        """``exclude``: hosts that may not be chosen now (their agents refuse the job)."""
        self._check_writable()
        now = self.now_s()
        repeated = job in self._held
        outcome, ids, start_s, reason = self.placer.allocate(job, nodes, walltime_s, now, reserve, self.node_ids(exclude) if exclude else None)
        if outcome == "placed":
            assert ids is not None
            names = self.node_names(ids)
            if repeated:
                return Answer("placed", names, repeated=True)
            self._held[job] = names
            self._released.pop(job, None)
            self._done(self._queue(lambda st: st.put_allocation(job, names, now, walltime_s)))
            return Answer("placed", names)
        if outcome == "reserved":
            assert ids is not None and start_s is not None
            return Answer("reserved", self.node_names(ids), start_at_s=start_s)
        return Answer(outcome, reason=reason)

    def release(self, job: str) -> tuple[str, list[str]]:
        """('released', nodes), ('already', []) for a job released before, ('unknown', [])."""
        self._check_writable()
        had_reservation = (r := self.placer.reservation()) is not None and r[0] == job
        ids = self.placer.release(job)
        if ids is None:
            if job in self._released or self.store.was_released(job):
                return "already", []
            return ("reservation-dropped" if had_reservation else "unknown"), []
        now = self.now_s()
        del self._held[job]
        self._released[job] = now
        self._done(self._queue(lambda st: st.delete_allocation(job, now)))
        return "released", self.node_names(ids)

    def replace(self, table: dict[str, tuple[list[str], int | None, int | None]]) -> None:
        """The resource manager's view replaces the allocation table. ValueError (naming the
        job and node) if it does not fit the fabric; nothing changes then."""
        self._check_writable()
        now = self.now_s()
        rows_ids = []
        rows_names = []
        owner: dict[str, str] = {}
        for job, (names, _, _) in sorted(table.items()):
            for n in names:
                if (other := owner.setdefault(n, job)) != job:
                    raise ValueError(f"node {n} is given to both job {other} and job {job}")
        for job, (names, start_s, walltime_s) in sorted(table.items()):
            ids = self.node_ids(names)
            s = now if start_s is None else start_s
            w = 0 if walltime_s is None else walltime_s
            rows_ids.append((job, ids, s, w))
            rows_names.append((job, self.node_names(sorted(ids)), s, w))
        self.placer.replace_all(rows_ids)
        # jobs the new table drops are released (in the store too: after a restart a second
        # release of one said unknown, where before it said already released)
        dropped = [j for j in self._held if j not in table]
        self._released.update((j, now) for j in dropped)
        self._held = {job: names for job, names, _, _ in rows_names}
        self._done(self._queue(lambda st: st.replace_allocations(rows_names, dropped, now)))

    def set_drained(self, names: list[str], drained: bool) -> list[str]:
        """Drain (or resume) nodes; returns those whose state changed."""
        self._check_writable()
        ids = self.node_ids(names)
        changed = []
        for name, i in zip(names, ids):
            if self.placer.drain(i) if drained else self.placer.resume(i):
                changed.append(name)
        if changed:

            def write(st: Store) -> None:
                for name in changed:
                    st.set_drained(name, drained)

            self._done(self._queue(write))
        return changed

    def satisfiable(self, nodes: int) -> dict[str, Any]:
        whole, with_drained = self.placer.satisfiable(nodes)
        return {
            "nodes": nodes,
            "satisfiable": whole is None,
            "reason": whole,
            "satisfiable_with_drained_nodes_out": with_drained is None,
            "reason_with_drained_nodes_out": with_drained,
        }

    def snapshot(self) -> dict[str, Any]:
        p = self.placer
        allocations = {job: self.node_names(ids) for job, ids, _, _ in p.jobs()}
        jobs = {
            job: {"nodes": self.node_names(ids), "start_s": s, "walltime_s": w, "expected_end_s": s + w}
            for job, ids, s, w in p.jobs()
        }
        drained = set(p.drained())
        leaf_free = p.leaf_free()
        # Which jobs span several leaves / pods, from their node lists (not the core's counters).
        multi_leaf: list[list[str]] = [[] for _ in self.leaf_names]
        multi_pod: list[list[str]] = [[] for _ in self.pod_names]
        for job, ids, _, _ in p.jobs():
            job_leaves = sorted({self.leaf_of[i] for i in ids})
            job_pods = sorted({self.pod_of_leaf[lf] for lf in job_leaves})
            if len(job_leaves) > 1:
                for lf in job_leaves:
                    multi_leaf[lf].append(job)
            if len(job_pods) > 1:
                for pd in job_pods:
                    multi_pod[pd].append(job)
        leaf_size = [0] * len(self.leaf_names)
        leaf_drained = [0] * len(self.leaf_names)
        for node, leaf in enumerate(self.leaf_of):
            leaf_size[leaf] += 1
            leaf_drained[leaf] += node in drained
        leaves = [
            {
                "name": name,
                "pod": self.pod_names[self.pod_of_leaf[lf]],
                "nodes": leaf_size[lf],
                "free": leaf_free[lf],
                "drained": leaf_drained[lf],
                "multi_leaf_jobs": multi_leaf[lf],
            }
            for lf, name in enumerate(self.leaf_names)
        ]
        pods = []
        for pod, name in enumerate(self.pod_names):
            mine = [lf for lf in range(len(self.leaf_names)) if self.pod_of_leaf[lf] == pod]
            pods.append(
                {
                    "name": name,
                    "nodes": sum(leaf_size[lf] for lf in mine),
                    "free": sum(leaf_free[lf] for lf in mine),
                    "multi_pod_jobs": multi_pod[pod],
                }
            )
        r = p.reservation()
        return {
            "fabric": self.fabric.name,
            "alloc": self.alloc,
            "now_s": self.now_s(),
            "nodes": len(self.names),
            "free_nodes": p.n_free,
            "allocations": allocations,
            "jobs": jobs,
            "drained": self.node_names(sorted(drained)),
            "leaves": leaves,
            "pods": pods,
            "reservation": None
            if r is None
            else {"job": r[0], "nodes_asked": r[1], "start_at_s": r[2], "nodes": self.node_names(r[3])},
        }

"""The live allocation table: the core's :class:`toposched._core.Placer` (the replay's own
allocators), node names, and the durable :class:`~toposched.live.store.Store`.

Every write decides in the placer, then commits to the store, then returns; if the commit
fails the placer is put back, so memory never runs ahead of what a restart would load.
Not thread-safe: the HTTP service calls it under one lock.
"""

from __future__ import annotations

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
    ) -> None:
        self.fabric = fabric
        self.names: list[str] = list(fabric.spec.node_names)
        self.ids = {n: i for i, n in enumerate(self.names)}
        self.leaf_of = [int(x) for x in fabric.core.leaf_of_nodes()]
        self.pod_of_leaf = [int(x) for x in fabric.core.pod_of_leaves()]
        self.leaf_names = [leaf.name for pod in fabric.spec.pods for leaf in pod.leaves]
        self.pod_names = [pod.name for pod in fabric.spec.pods]
        self.placer = _core.Placer(
            fabric.core, alloc, seed=seed, leaf_order=leaf_order, tie_break=tie_break, slurm_profile=slurm_profile
        )
        self.alloc = alloc
        self.clock = clock
        description = f"fabric {fabric.name} ({len(self.names)} nodes), --alloc {alloc}"
        self.store = Store(state_dir, fabric_fingerprint(self.names, self.leaf_of, alloc), description)
        self._load()

    def now_s(self) -> int:
        return int(self.clock())

    def _load(self) -> None:
        """Put back what the store holds: allocations first (a drained node may be held), then drains."""
        for job, nodes, start_s, walltime_s in self.store.allocations():
            self.placer.assign(job, self.node_ids(nodes), start_s, walltime_s)
        for node in self.store.drained():
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

    # decisions
    def allocate(self, job: str, nodes: int, walltime_s: int, reserve: bool = False) -> Answer:
        now = self.now_s()
        outcome, ids, start_s, reason = self.placer.allocate(job, nodes, walltime_s, now, reserve)
        if outcome == "placed":
            assert ids is not None
            names = self.node_names(ids)
            if self._is_persisted(job):
                return Answer("placed", names, repeated=True)
            else:
                try:
                    with self.store.tx():
                        self.store.put_allocation(job, names, now, walltime_s)
                except Exception:
                    self.placer.release(job)
                    raise
            return Answer("placed", names)
        if outcome == "reserved":
            assert ids is not None and start_s is not None
            return Answer("reserved", self.node_names(ids), start_at_s=start_s)
        return Answer(outcome, reason=reason)

    def _is_persisted(self, job: str) -> bool:
        return self.store.db.execute("SELECT 1 FROM allocations WHERE job=?", (job,)).fetchone() is not None

    def release(self, job: str) -> tuple[str, list[str]]:
        """('released', nodes), ('already', []) for a job released before, ('unknown', [])."""
        had_reservation = (r := self.placer.reservation()) is not None and r[0] == job
        ids = self.placer.release(job)
        if ids is None:
            if self.store.was_released(job):
                return "already", []
            return ("reservation-dropped" if had_reservation else "unknown"), []
        try:
            with self.store.tx():
                self.store.delete_allocation(job, self.now_s())
        except Exception:
            self.placer.assign(job, ids, self.now_s(), 0)
            raise
        return "released", self.node_names(ids)

    def replace(self, table: dict[str, tuple[list[str], int | None, int | None]]) -> None:
        """The resource manager's view replaces the allocation table. ValueError (naming the
        job and node) if it does not fit the fabric; nothing changes then."""
        now = self.now_s()
        before = self.placer.jobs()
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
        try:
            with self.store.tx():
                self.store.replace_allocations(rows_names)
        except Exception:
            self.placer.replace_all(before)
            raise

    def set_drained(self, names: list[str], drained: bool) -> list[str]:
        """Drain (or resume) nodes; returns those whose state changed."""
        ids = self.node_ids(names)
        changed = []
        for name, i in zip(names, ids):
            if (self.placer.drain(i) if drained else self.placer.resume(i)):
                changed.append(name)
        try:
            with self.store.tx():
                for name in changed:
                    self.store.set_drained(name, drained)
        except Exception:
            for i in self.node_ids(changed):
                self.placer.resume(i) if drained else self.placer.drain(i)
            raise
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

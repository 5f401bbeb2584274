"""Uplink contention of a schedule on a tapered fabric: seed 001's worst-case model.

A *schedule* is what ran where and when: per job ``start_s``, ``end_s`` and its node ids
(CSR: ``node_offsets``, ``node_ids``), plus the fabric as ``node_leaf`` (leaf of every
node id), ``nodes_per_leaf`` (K) and ``uplinks_per_leaf`` (W1). It can come from a
``toposched simulate`` output directory, a :class:`~toposched.simulate.SimResult` in
memory, or any placement log (build a :class:`Schedule` from its arrays).

The model (docs/contention.md gives every formula and how seed 001 was read):

* ``c(n, j)``: nodes of job j on leaf n; ``U(n, j) = min(c(n, j), nodes(j) - c(n, j))``,
  the most uplinks of leaf n job j can use (001 eq. 1);
* ``D(n, t) = sum of U(n, j)`` over the jobs running at t (``start_s <= t < end_s``);
* with R uplinks left per leaf, job j runs, during each stretch of its run, slowed by the
  factor ``max(1, max over its leaves n of D(n, t) / R)`` (001 eq. 2): its added wall time
  is ``integral over its run of max(0, Dmax_j(t) / R - 1) dt``;
* probabilistic variant: X ~ Binomial(D, J) of the D worst-case links talk at once;
  contention when X > R (001 eq. 4), expected added time ``E[max(0, X / R - 1)]``.

Everything is vectorised: per (job, leaf) demands once, a sorted event sweep per leaf for
D, then every job's most loaded leaf over time as one upper envelope of (job, leaf)
pieces, and all R and J from the seconds each job spends at each demand level. No loop
runs over jobs, leaves or intervals (see "How it is computed" in docs/contention.md).

>>> import numpy as np
>>> s = Schedule.from_arrays(start_s=[0, 0], end_s=[10, 5], node_offsets=[0, 4, 6],
...     node_ids=[0, 1, 2, 4, 3, 5], node_leaf=[0, 0, 0, 0, 1, 1], nodes_per_leaf=4)
>>> a = analyze(s, uplinks=[1], comm_fractions=[])
>>> a.leaf_demand_table().to_pydict()
{'leaf': [0, 0, 1, 1], 'start_s': [0, 5, 0, 5], 'end_s': [5, 10, 5, 10], 'demand': [2, 1, 2, 1]}
>>> a.sweep[0]["system_slowdown"]  # job 1 loses 5 s, job 2 loses 5 s, over 15 s of runs
0.6666666666666666
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np
import pyarrow as pa

from . import __version__

if TYPE_CHECKING:
    from .simulate import SimResult

#: Communication fractions J of the probabilistic variant when none are given.
DEFAULT_COMM_FRACTIONS: tuple[float, ...] = (0.1, 0.25, 0.5)
#: Nodes per leaf of the crossbar-size sweep (crossbars of 16 to 96 ports).
DEFAULT_CROSSBAR_SIZES: tuple[int, ...] = (8, 16, 24, 32, 40, 48)
#: Cores-per-node multipliers of the multicore sweep (x the schedule's own cores per node).
DEFAULT_CORE_FACTORS: tuple[int, ...] = (1, 2, 4, 8)
#: Upper bound on (job, leaf, segment) pieces handled at once (bounds peak memory).
PIECES_PER_CHUNK = 1_000_000


# --------------------------------------------------------------------------------------
# The schedule


def _network_notes(network: Any) -> tuple[str, ...]:
    """The note for a schedule replayed with the network model (a run's summary
    ``network`` block): its run times already include the predicted link sharing, so the
    uplink slowdowns computed here come on top of it."""
    if not isinstance(network, dict):
        return ()
    return (f"replayed with the network model (--network {network.get('spec', '?')}): its run times already include that model's predicted slowdowns, and the uplink slowdowns here come on top of them",)


@dataclass(frozen=True)
class Schedule:
    """Who ran where and when, on which leaves. Build it with :meth:`from_arrays`,
    :meth:`from_run_dir` or :meth:`from_result` (they check and normalise the arrays).

    Attributes:
        start_s, end_s: int64 per job; a job runs on ``[start_s, end_s)``.
        node_offsets: int64, length jobs + 1: job j holds ``node_ids[off[j]:off[j+1]]``.
        node_ids: int64 node ids, each in ``[0, len(node_leaf))``, no repeats within a job.
        node_leaf: int64 leaf index of every node id.
        nodes_per_leaf: K, the nodes of the largest leaf (half the crossbar's ports).
        uplinks_per_leaf: W1 of the fabric as built (None: nonblocking, W1 = K).
        job_id: the jobs' ids (defaults to 0..jobs-1).
        cores_per_node: cores of one node (for the multicore rescaling), if known.
        name: a label for reports.
        node_units: optional int64 per entry of ``node_ids``: how much of that node's link
            the job holds, in units of ``1 / units_per_link`` link (None: the whole link).
            Needed when jobs share nodes, e.g. after :meth:`with_cores_per_node`.
        units_per_link: units in one node link (1 unless ``node_units`` is given).
    """

    start_s: np.ndarray
    end_s: np.ndarray
    node_offsets: np.ndarray
    node_ids: np.ndarray
    node_leaf: np.ndarray
    nodes_per_leaf: int
    uplinks_per_leaf: int | None = None
    job_id: np.ndarray | None = None
    cores_per_node: int | None = None
    name: str = ""
    leaf_names: tuple[str, ...] | None = None
    notes: tuple[str, ...] = field(default=())
    node_units: np.ndarray | None = None
    units_per_link: int = 1

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_arrays(
        cls,
        *,
        start_s: Any,
        end_s: Any,
        node_offsets: Any,
        node_ids: Any,
        node_leaf: Any,
        nodes_per_leaf: int | None = None,
        uplinks_per_leaf: int | None = None,
        job_id: Any = None,
        cores_per_node: int | None = None,
        name: str = "",
        leaf_names: Sequence[str] | None = None,
        notes: Sequence[str] = (),
        node_units: Any = None,
        units_per_link: int = 1,
    ) -> "Schedule":
        """Check the arrays and build a schedule. ``nodes_per_leaf`` defaults to the size
        of the largest leaf in ``node_leaf``. Raises ValueError naming what is wrong."""
        start = np.ascontiguousarray(start_s, dtype=np.int64)
        end = np.ascontiguousarray(end_s, dtype=np.int64)
        off = np.ascontiguousarray(node_offsets, dtype=np.int64)
        ids = np.ascontiguousarray(node_ids, dtype=np.int64)
        leaf = np.ascontiguousarray(node_leaf, dtype=np.int64)
        n_jobs = len(start)
        if len(end) != n_jobs:
            raise ValueError(f"start_s has {n_jobs} jobs but end_s has {len(end)}")
        if len(off) != n_jobs + 1:
            raise ValueError(f"node_offsets must have jobs + 1 = {n_jobs + 1} entries, got {len(off)}")
        if off[0] != 0 or off[-1] != len(ids) or np.any(np.diff(off) < 0):
            raise ValueError("node_offsets must start at 0, never decrease and end at len(node_ids)")
        bad = np.flatnonzero(end < start)
        if len(bad):
            raise ValueError(f"job row {int(bad[0])} ends ({int(end[bad[0]])}) before it starts ({int(start[bad[0]])})")
        if len(leaf) == 0 and len(ids):
            raise ValueError("node_leaf is empty but jobs hold nodes")
        if len(ids) and (ids.min() < 0 or ids.max() >= len(leaf)):
            raise ValueError(f"node ids must lie in [0, {len(leaf)}) (node_leaf has one entry per node)")
        if len(leaf) and leaf.min() < 0:
            raise ValueError("node_leaf holds a negative leaf index")
        sizes = np.bincount(leaf) if len(leaf) else np.zeros(0, np.int64)
        k = int(nodes_per_leaf) if nodes_per_leaf is not None else int(sizes.max(initial=1))
        if k < 1:
            raise ValueError(f"nodes_per_leaf must be at least 1, got {k}")
        if uplinks_per_leaf is not None and int(uplinks_per_leaf) < 1:
            raise ValueError(f"uplinks_per_leaf must be at least 1, got {uplinks_per_leaf}")
        # No node twice in one job (it would count twice in c(n, j)).
        if len(ids) > 1:
            if _ascending_within_jobs(ids, off):  # the usual case: no (job, node) keys needed
                same = ids[1:] == ids[:-1]
                starts = off[1:-1]
                same[starts[(starts > 0) & (starts < len(ids))] - 1] = False
                dup = np.flatnonzero(same)
                bad_job = int(np.searchsorted(off, dup[0], side="right") - 1) if len(dup) else -1
                bad_node = int(ids[dup[0]]) if len(dup) else -1
            else:
                job_of = np.repeat(np.arange(n_jobs, dtype=np.int64), np.diff(off))
                key = np.sort(job_of * max(len(leaf), 1) + ids)
                dup = np.flatnonzero(key[1:] == key[:-1])
                bad_job = int(key[dup[0]] // max(len(leaf), 1)) if len(dup) else -1
                bad_node = int(key[dup[0]] % max(len(leaf), 1)) if len(dup) else -1
            if len(dup):
                raise ValueError(f"job row {bad_job} lists node {bad_node} twice")
        jid = np.arange(n_jobs, dtype=np.int64) if job_id is None else np.ascontiguousarray(job_id, dtype=np.int64)
        if len(jid) != n_jobs:
            raise ValueError(f"job_id has {len(jid)} entries for {n_jobs} jobs")
        units = None
        if node_units is not None:
            units = np.ascontiguousarray(node_units, dtype=np.int64)
            if len(units) != len(ids):
                raise ValueError(f"node_units has {len(units)} entries for {len(ids)} node ids")
            if len(units) and (units.min() < 1 or units.max() > units_per_link):
                raise ValueError(f"node_units must lie in [1, units_per_link = {units_per_link}]")
        if int(units_per_link) < 1:
            raise ValueError(f"units_per_link must be at least 1, got {units_per_link}")
        return cls(
            start_s=start,
            end_s=end,
            node_offsets=off,
            node_ids=ids,
            node_leaf=leaf,
            nodes_per_leaf=k,
            uplinks_per_leaf=None if uplinks_per_leaf is None else int(uplinks_per_leaf),
            job_id=jid,
            cores_per_node=None if cores_per_node is None else int(cores_per_node),
            name=name,
            leaf_names=None if leaf_names is None else tuple(leaf_names),
            notes=tuple(notes),
            node_units=units,
            units_per_link=int(units_per_link),
        )

    @classmethod
    def from_jobs_table(
        cls, jobs: pa.Table, fabric: dict[str, Any], *, cores_per_node: int | None = None, name: str = "", notes: Sequence[str] = ()
    ) -> "Schedule":
        """From a ``jobs.parquet`` table (``start_s``, ``end_s``, ``node_ranges`` or, in
        files of earlier versions, ``node_ids``, ``job_id``) and a ``fabric.json``
        dictionary (``node_leaf``, ``nodes_per_leaf``, ``uplinks_per_leaf``)."""
        from .nodelists import table_lists

        if len(jobs) == 0:
            off, vals = np.zeros(1, np.int64), np.zeros(0, np.int64)
        else:
            off, vals = table_lists(jobs)
        return cls.from_arrays(
            start_s=jobs.column("start_s").to_numpy(),
            end_s=jobs.column("end_s").to_numpy(),
            node_offsets=off,
            node_ids=vals,
            node_leaf=fabric["node_leaf"],
            nodes_per_leaf=fabric.get("nodes_per_leaf"),
            uplinks_per_leaf=fabric.get("uplinks_per_leaf"),
            job_id=jobs.column("job_id").to_numpy() if "job_id" in jobs.column_names else None,
            cores_per_node=cores_per_node,
            name=name or str(fabric.get("name", "")),
            leaf_names=fabric.get("leaf_names"),
            notes=notes,
        )

    @classmethod
    def from_run_dir(cls, run_dir: str | Path) -> "Schedule":
        """From a directory written by ``toposched simulate`` (jobs.parquet, fabric.json and,
        for the cores per node, summary.json)."""
        import pyarrow.parquet as pq

        d = Path(run_dir)
        if not (d / "jobs.parquet").is_file():
            from .check import runs_held
            from .errors import InputError

            runs = runs_held(d)
            if runs:  # compare --out DIR, then contention --run DIR
                raise InputError(str(d), f"holds runs, not one run's results: --run takes one of them, e.g. --run {d / 'runs' / runs[0]} ({len(runs)} runs in {d / 'runs'})")
        for f in ("jobs.parquet", "fabric.json"):
            if not (d / f).is_file():
                raise FileNotFoundError(f"{d / f} not found: --run wants a directory written by toposched simulate")
        from .nodelists import file_node_column

        jobs = pq.read_table(d / "jobs.parquet", columns=["job_id", "start_s", "end_s", file_node_column(d / "jobs.parquet")])
        fabric = json.loads((d / "fabric.json").read_text())
        cpn = None
        notes: tuple[str, ...] = ()
        if (d / "summary.json").is_file():
            summary = json.loads((d / "summary.json").read_text())
            cpn = summary.get("input", {}).get("settings", {}).get("cores_per_node")
            src = summary.get("input", {}).get("source")
            name = f"{Path(src).name if src else d.name} on {fabric.get('name', '?')}"
            notes = _network_notes(summary.get("network"))
        else:
            name = f"{d.name} on {fabric.get('name', '?')}"
        try:
            return cls.from_jobs_table(jobs, fabric, cores_per_node=cpn, name=name, notes=notes)
        except ValueError as exc:
            # a damaged or hand-edited result (a node past the fabric, an end before its
            # start): bad input, named, not an internal error
            from .errors import InputError

            raise InputError(str(d / "jobs.parquet"), f"is not a schedule on {d / 'fabric.json'}: {exc}") from None

    @classmethod
    def from_result(cls, result: "SimResult") -> "Schedule":
        """From a :class:`~toposched.simulate.SimResult` in memory."""
        fabric = result.fabric.describe()
        cpn = result.workload.settings.get("cores_per_node")
        name = f"{Path(result.workload.source).name} on {fabric['name']}"
        from .nodelists import node_column

        table = result.jobs.select(["job_id", "start_s", "end_s", node_column(result.jobs.column_names)])
        return cls.from_jobs_table(table, fabric, cores_per_node=cpn, name=name, notes=_network_notes(result.summary.get("network")))

    # -- shape --------------------------------------------------------------------------

    @property
    def n_jobs(self) -> int:
        return len(self.start_s)

    @property
    def job_ids(self) -> np.ndarray:
        """The jobs' ids (0..jobs-1 when the schedule was built without them)."""
        return self.job_id if self.job_id is not None else np.arange(self.n_jobs, dtype=np.int64)

    @property
    def n_nodes(self) -> int:
        return len(self.node_leaf)

    @property
    def n_leaves(self) -> int:
        return int(self.node_leaf.max()) + 1 if len(self.node_leaf) else 0

    @property
    def job_nodes(self) -> np.ndarray:
        return np.diff(self.node_offsets)

    @property
    def job_links(self) -> np.ndarray:
        """Per job, the node links it holds (its node count unless jobs share nodes)."""
        if self.node_units is None:
            return self.job_nodes.astype(float)
        job_of = np.repeat(np.arange(self.n_jobs), self.job_nodes)
        return np.bincount(job_of, weights=self.node_units, minlength=self.n_jobs) / self.units_per_link

    @property
    def full_uplinks(self) -> int:
        """R of the nonblocking fabric: K uplinks per leaf (or W1 if the fabric has more)."""
        return max(self.nodes_per_leaf, self.uplinks_per_leaf or 0)

    # -- transforms (001 §II, §II-C) -------------------------------------------------------

    def with_leaf_size(self, k: int) -> "Schedule":
        """The same jobs on the same node ids, wired linearly to leaves of ``k`` nodes
        (node i on leaf i // k, as 001 §II assumes), nonblocking (W1 = k)."""
        if k < 1:
            raise ValueError(f"nodes per leaf must be at least 1, got {k}")
        leaf = np.arange(self.n_nodes, dtype=np.int64) // k
        return replace(
            self, node_leaf=leaf, nodes_per_leaf=int(k), uplinks_per_leaf=None, leaf_names=None,
            notes=self.notes + (f"linear mapping onto leaves of {k} nodes",),
        )

    def with_cores_per_node(self, cores: int, base_cores: int | None = None) -> "Schedule":
        """The same jobs on nodes of ``cores`` cores, keeping the fragmentation of the
        original allocation (001 §II-C).

        Core c of old node i is global core ``i * base + c``; it lands on new node
        ``(i * base + c) // cores``. A job keeps exactly its cores: contiguous nodes
        compress onto ``base / cores`` as many nodes, nodes far apart stay on as many new
        nodes. New nodes are wired linearly to leaves of ``nodes_per_leaf`` (new node i on
        leaf i // K), nonblocking. Jobs that end up sharing a fat node share its link in
        proportion to their cores on it (001: "bandwidth ... is just split more ways"):
        ``node_units`` counts a job's cores on each node in units of ``gcd(base, cores)``
        cores, ``units_per_link = cores / gcd``."""
        base = base_cores or self.cores_per_node
        if base is None:
            raise ValueError("the schedule's cores per node is unknown: pass base_cores")
        if cores < 1 or base < 1:
            raise ValueError("cores per node must be at least 1")
        if self.node_units is not None and self.units_per_link != 1:
            raise ValueError("rescale a schedule whose jobs hold whole nodes (no node_units)")
        g = math.gcd(int(base), int(cores))
        n_new = -(-self.n_nodes * base // cores)
        upl = int(cores) // g
        if cores % base == 0 and _ascending_within_jobs(self.node_ids, self.node_offsets):
            # Whole old nodes land on one new node: node // f, merged within each job.
            f = cores // base
            mapped = self.node_ids // f
            first, _ = _runs_within_jobs(mapped, self.node_offsets)
            units = np.diff(np.append(first, len(mapped)))  # old nodes = units of base cores
            off = np.searchsorted(first, self.node_offsets, side="left")  # runs before each job's start
            return self._rescaled(off, mapped[first], units, n_new, base, cores, upl)
        lo_core = self.node_ids * base  # the old node's cores: [lo_core, lo_core + base)
        first = lo_core // cores
        last = (lo_core + base - 1) // cores
        span = last - first + 1
        job_of = np.repeat(np.arange(self.n_jobs, dtype=np.int64), self.job_nodes)
        rep = np.repeat(np.arange(len(first)), span)
        new_ids = first[rep] + (np.arange(len(rep)) - np.repeat(np.cumsum(span) - span, span))
        new_job = job_of[rep]
        lo = np.maximum(lo_core[rep], new_ids * cores)
        hi = np.minimum(lo_core[rep] + base, (new_ids + 1) * cores)
        units = (hi - lo) // g
        key = new_job * max(n_new, 1) + new_ids
        if len(key) > 1 and not np.all(key[1:] >= key[:-1]):
            order = np.argsort(key, kind="stable")
            key, units = key[order], units[order]
        if len(key):
            firsts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
            units = np.add.reduceat(units, firsts)
            key = key[firsts]
        new_job = key // max(n_new, 1)
        new_ids = key % max(n_new, 1)
        off = np.zeros(self.n_jobs + 1, dtype=np.int64)
        np.cumsum(np.bincount(new_job, minlength=self.n_jobs), out=off[1:])
        return self._rescaled(off, new_ids, units, n_new, base, cores, upl)

    def _rescaled(self, off: np.ndarray, node_ids: np.ndarray, units: np.ndarray, n_new: int, base: int, cores: int, upl: int) -> "Schedule":
        """The rescaled schedule: new node lists, linear wiring to leaves of the same size."""
        return replace(
            self,
            node_offsets=off,
            node_ids=node_ids,
            node_leaf=np.arange(n_new, dtype=np.int64) // self.nodes_per_leaf,
            uplinks_per_leaf=None,
            cores_per_node=int(cores),
            leaf_names=None,
            notes=self.notes + (f"rescaled from {base} to {cores} cores per node, fragmentation kept",),
            node_units=None if upl == 1 else units,
            units_per_link=upl,
        )

    def describe(self) -> dict[str, Any]:
        run = self.end_s - self.start_s
        nodes = self.job_nodes
        return {
            "name": self.name,
            "jobs": self.n_jobs,
            "jobs_with_runtime": int(np.sum(run > 0)),
            "nodes": self.n_nodes,
            "leaves": self.n_leaves,
            "nodes_per_leaf": self.nodes_per_leaf,
            "uplinks_per_leaf_as_built": self.uplinks_per_leaf,
            "full_uplinks": self.full_uplinks,
            "cores_per_node": self.cores_per_node,
            "mean_job_nodes": float(nodes.mean()) if self.n_jobs else None,
            "first_start_s": int(self.start_s.min()) if self.n_jobs else None,
            "last_end_s": int(self.end_s.max()) if self.n_jobs else None,
            "total_runtime_s": int(run.sum()),
            "total_node_seconds": int((run * nodes).sum()),
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------------------
# Demand


@dataclass(frozen=True)
class PairDemand:
    """Per (job, leaf) pair holding at least one node of the job, jobs ascending, then
    leaves ascending: ``c`` = c(n, j) and ``uplinks`` = U(n, j) (001 eq. 1)."""

    job: np.ndarray
    leaf: np.ndarray
    c: np.ndarray
    uplinks: np.ndarray


def _ascending_within_jobs(values: np.ndarray, offsets: np.ndarray) -> bool:
    """Whether ``values`` never decrease inside any job's slice."""
    if len(values) < 2:
        return True
    down = values[1:] < values[:-1]
    starts = offsets[1:-1]
    down[starts[(starts > 0) & (starts < len(values))] - 1] = False  # across a job boundary
    return not down.any()


def _runs_within_jobs(values: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For values ascending within each job: (first index, job) of each run of equal
    values inside a job."""
    change = np.ones(len(values), dtype=bool)
    change[1:] = values[1:] != values[:-1]
    starts = offsets[:-1][offsets[:-1] < len(values)]
    change[starts] = True
    first = np.flatnonzero(change)
    job = np.searchsorted(offsets, first, side="right") - 1
    return first, job


def pair_demand(s: Schedule) -> PairDemand:
    """c(n, j) and U(n, j) = min(c(n, j), size(j) - c(n, j)) for every (job, leaf) pair,
    in link units (nodes, unless the schedule has ``node_units``)."""
    if len(s.node_ids) == 0:
        z = np.zeros(0, np.int64)
        return PairDemand(z, z, z, z)
    small = s.n_leaves < 2**31 - 1
    leaf = (s.node_leaf.astype(np.int32) if small else s.node_leaf)[s.node_ids]  # half the memory
    w = s.node_units
    if _ascending_within_jobs(leaf, s.node_offsets):  # toposched's own schedules
        first, job = _runs_within_jobs(leaf, s.node_offsets)
        pleaf = leaf[first]
    else:  # e.g. logged placements: sort (job, leaf) keys
        n_leaves = max(s.n_leaves, 1)
        job_of = np.repeat(np.arange(s.n_jobs, dtype=np.int64), s.job_nodes)
        key = job_of * n_leaves + leaf
        order = np.argsort(key, kind="stable")
        key = key[order]
        w = None if w is None else w[order]
        first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        job = key[first] // n_leaves
        pleaf = key[first] % n_leaves
    pleaf = pleaf.astype(np.int64)
    if w is None:
        c = np.diff(np.append(first, len(leaf)))
        size = s.job_nodes
    else:
        c = np.add.reduceat(w, first)
        assert s.node_units is not None  # w is derived from it
        csum: np.ndarray = np.concatenate((np.zeros(1, np.int64), np.cumsum(s.node_units)))
        size = csum[s.node_offsets[1:]] - csum[s.node_offsets[:-1]]
    u = np.minimum(c, size[job] - c)
    return PairDemand(job, pleaf, c, u)


@dataclass(frozen=True)
class LeafDemand:
    """D(n, t) as maximal constant stretches where it is positive, sorted by leaf then
    time: on leaf ``leaf[i]``, ``D = demand[i]`` during ``[start_s[i], end_s[i])``.
    Consecutive stretches of one leaf always differ in demand (equal ones are merged);
    D = 0 wherever no stretch is listed."""

    leaf: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    demand: np.ndarray

    def __len__(self) -> int:
        return len(self.leaf)


def _leaf_stretches(leaf: np.ndarray, t0: np.ndarray, t1: np.ndarray, u: np.ndarray, horizon: int) -> tuple[np.ndarray, ...]:
    """Sweep (time, leaf, +/-U) events, leaf-major: one sort, per-key sums, one cumsum.
    Times are offsets in [0, horizon). Returns (leaf, t0, t1, D) of the positive stretches."""
    key = np.concatenate((leaf * horizon + t0, leaf * horizon + t1))
    delta = np.concatenate((u, -u))
    order = np.argsort(key, kind="stable")
    key = key[order]
    delta = delta[order]
    if len(key) == 0:
        z = np.zeros(0, np.int64)
        return z, z, z, z
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    ukey = key[first]
    udelta = np.add.reduceat(delta, first)
    nz = udelta != 0  # a job ending as another with the same U starts: no change
    ukey = ukey[nz]
    udelta = udelta[nz]
    # Each leaf's deltas sum to zero, so one global cumsum is every leaf's own.
    level = np.cumsum(udelta)
    kleaf = ukey // horizon
    kt = ukey % horizon
    ok = (kleaf[:-1] == kleaf[1:]) & (level[:-1] > 0)
    return kleaf[:-1][ok], kt[:-1][ok], kt[1:][ok], level[:-1][ok]


# --------------------------------------------------------------------------------------
# Binomial helpers (001 eq. 3 and 4)


def contention_probability(n: Any, m: Any, J: float) -> np.ndarray:
    """001 eq. 4: ``E(J) = sum_{k=m+1}^{n} C(n, k) J^k (1 - J)^(n - k)``, the chance that
    more than ``m`` of ``n`` links, each busy a fraction ``J`` of the time independently,
    transmit at once. Broadcasts over ``n`` and ``m`` (integers >= 0).

    >>> round(float(contention_probability(24, 8, 0.2)), 4)  # 001 §III: < 5% at J=0.2, 3:1
    0.0362
    """
    n_arr, m_arr = np.broadcast_arrays(np.asarray(n, dtype=np.int64), np.asarray(m, dtype=np.int64))
    out = np.zeros(n_arr.shape, dtype=float)
    top = int(n_arr.max(initial=0))
    pmf = _binomial_pmf_table(top, J)
    flat_n, flat_m = n_arr.ravel(), m_arr.ravel()
    tail = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1]  # tail[n, k] = P(X >= k)
    tail = np.concatenate((tail, np.zeros((top + 1, 1))), axis=1)
    k = np.clip(flat_m + 1, 0, top + 1)
    out.ravel()[:] = np.where(flat_m >= flat_n, 0.0, tail[flat_n, k])
    return out if out.ndim else out[()]


def _binomial_pmf_table(top: int, J: float) -> np.ndarray:
    """pmf[n, k] = C(n, k) J^k (1 - J)^(n - k) for 0 <= k <= n <= top (0 above n)."""
    if not 0.0 <= J <= 1.0:
        raise ValueError(f"a communication fraction must lie in [0, 1], got {J}")
    pmf = np.zeros((top + 1, top + 1))
    pmf[0, 0] = 1.0
    for n in range(1, top + 1):  # Pascal's rule on probabilities: no overflow for large n
        pmf[n, : n + 1] = pmf[n - 1, : n + 1] * (1.0 - J)
        pmf[n, 1 : n + 1] += pmf[n - 1, :n] * J
    return pmf


def expected_excess(top: int, uplinks: Sequence[int] | np.ndarray, J: float) -> tuple[np.ndarray, np.ndarray]:
    """For demand d in 0..top and each R in ``uplinks``: ``W[d, r] = E[max(0, X/R - 1)]``
    and ``P[d, r] = P(X > R)`` with X ~ Binomial(d, J). At J = 1, W = max(0, d/R - 1), the
    worst case."""
    pmf = _binomial_pmf_table(top, J)
    ks = np.arange(top + 1, dtype=float)
    r = np.asarray(uplinks, dtype=float)
    excess = np.maximum(0.0, ks[:, None] / r[None, :] - 1.0)  # [k, r]
    W = pmf @ excess
    P = pmf @ (ks[:, None] > r[None, :]).astype(float)
    return W, P


# --------------------------------------------------------------------------------------
# Per-job exposure: time spent with the most loaded leaf at each demand level


def _job_level_times(
    pairs: PairDemand, keep: np.ndarray, t0: np.ndarray, t1: np.ndarray, stretches: tuple[np.ndarray, ...], horizon: int, n_levels: int
) -> np.ndarray:
    """T[i, d] = seconds exposed job i (in the order of the kept pairs' jobs) spends with
    ``Dmax_i(t) = max over its leaves n of D(n, t) >= d``, for d in 0..n_levels-1.

    For each (job, leaf) pair, the leaf's stretches overlapping the job's run, cut to the
    run, are its *pieces*; a pair's pieces tile the run. A pair with one piece (D constant
    on that leaf for the whole run) sets a *floor*: ``Dmax >= floor`` all along, so
    ``T[i, d] = run`` for ``d <= floor``, and only pieces of varying pairs above the floor
    matter. Their upper envelope is computed for all jobs at once: the pieces' ends cut
    the time line into elementary intervals; each piece covers a contiguous range of them,
    written as two overlapping power-of-two blocks (as in a sparse table); block maxima are
    pushed down one power at a time, so the envelope costs O(E log E) for E elementary
    intervals whatever the number of demand levels. No loop runs over jobs, leaves or
    intervals; pairs are taken in chunks of whole jobs to bound memory."""
    sleaf, st0, st1, sD = stretches
    skey0 = sleaf * horizon + st0
    skey1 = sleaf * horizon + st1
    pj = pairs.job[keep]
    pl = pairs.leaf[keep]
    pt0 = t0[pj]
    pt1 = t1[pj]
    lo = np.searchsorted(skey1, pl * horizon + pt0, side="right")
    hi = np.searchsorted(skey0, pl * horizon + pt1, side="left")
    npieces = hi - lo
    new_job = np.concatenate(([True], pj[1:] != pj[:-1])) if len(pj) else np.zeros(0, bool)
    jidx = np.cumsum(new_job) - 1  # dense index of the pair's job among exposed jobs
    n_jobs = int(jidx[-1]) + 1 if len(jidx) else 0
    run = np.zeros(n_jobs, dtype=np.int64)
    run[jidx] = pt1 - pt0
    if n_jobs == 0:
        return np.zeros((0, n_levels), dtype=np.int64)
    # Floor: the largest D of a leaf that stays constant over the job's run (>= 1: the
    # job's own U on each of its leaves).
    floor = np.ones(n_jobs, dtype=np.int64)
    single = npieces == 1
    np.maximum.at(floor, jidx[single], sD[lo[single]])
    levels = np.arange(n_levels)
    T = run[:, None] * (levels[None, :] <= floor[:, None])
    vary = np.flatnonzero(~single)
    if len(vary) == 0:
        return T
    # Chunks of varying pairs, cut between jobs, of about PIECES_PER_CHUNK pieces.
    cum = np.cumsum(npieces[vary])
    vjob = jidx[vary]
    bounds = [0]
    while bounds[-1] < len(vary):
        base = cum[bounds[-1] - 1] if bounds[-1] else 0
        nxt = int(np.searchsorted(cum, base + PIECES_PER_CHUNK, side="right"))
        nxt = min(max(nxt, bounds[-1] + 1), len(vary))
        if nxt < len(vary):  # move to the next job boundary
            nxt = int(np.searchsorted(vjob, vjob[nxt - 1], side="right"))
        bounds.append(nxt)
    for a, b in zip(bounds[:-1], bounds[1:]):
        pv = vary[a:b]
        n = npieces[pv]
        total = int(n.sum())
        pair_of = np.repeat(pv, n)
        seg = lo[pair_of] + (np.arange(total) - np.repeat(np.cumsum(n) - n, n))
        D = sD[seg]
        ja = jidx[pair_of]
        hot = D > floor[ja]
        if not hot.any():
            continue
        seg, pair_of, D, ja = seg[hot], pair_of[hot], D[hot], ja[hot]
        j0 = int(ja.min())
        n_local = int(ja.max()) - j0 + 1
        off = (ja - j0) * horizon  # chunk-local job offset: jobs never share a time point
        ps = np.maximum(st0[seg], pt0[pair_of]) + off
        pe = np.minimum(st1[seg], pt1[pair_of]) + off
        env, cut = _upper_envelope(ps, pe, D)
        length = np.diff(cut)
        job_l = cut[:-1] // horizon
        ok = env > floor[j0 + job_l]
        at = np.bincount(job_l[ok] * n_levels + env[ok], weights=length[ok], minlength=n_local * n_levels).reshape(n_local, n_levels)
        ge = np.cumsum(at[:, ::-1], axis=1, out=at[:, ::-1])[:, ::-1]  # seconds at level >= d, in place
        ge[levels[None, :] <= floor[j0 : j0 + n_local, None]] = 0  # at or below the floor: already the whole run
        np.add(T[j0 : j0 + n_local], ge, out=T[j0 : j0 + n_local], casting="unsafe")  # whole seconds
    return T


def _upper_envelope(start: np.ndarray, end: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise maximum of positive constant pieces ``value`` on ``[start, end)``.
    Returns (env, cut): ``env[i]`` on ``[cut[i], cut[i+1])`` (0 where no piece lies)."""
    cut = np.sort(np.concatenate((start, end)))
    cut = cut[np.concatenate(([True], cut[1:] != cut[:-1]))]  # (np.unique hashes: slower here)
    a = np.searchsorted(cut, start)
    b = np.searchsorted(cut, end)
    span = b - a  # >= 1 elementary intervals
    p = np.frexp(span.astype(np.float64))[1] - 1  # floor(log2(span)), exact
    top = int(p.max())
    env = np.zeros(len(cut), dtype=value.dtype)
    order = np.argsort(p, kind="stable")
    first = np.searchsorted(p[order], np.arange(top + 2))
    for q in range(top, -1, -1):
        w = 1 << q
        if q < top:  # push the blocks of width 2w down: [i, i+2w) -> [i, i+w) and [i+w, i+2w)
            np.maximum(env[w:], env[:-w], out=env[w:])
        idx = order[first[q] : first[q + 1]]
        if len(idx):
            np.maximum.at(env, a[idx], value[idx])
            np.maximum.at(env, b[idx] - w, value[idx])
    return env[:-1], cut
# --------------------------------------------------------------------------------------
# The analysis


def _stats(x: np.ndarray) -> dict[str, float | None]:
    if len(x) == 0:
        return {"mean": None, "median": None, "p95": None, "max": None}
    med, p95 = np.percentile(x, [50, 95])
    return {"mean": float(np.mean(x)), "median": float(med), "p95": float(p95), "max": float(np.max(x))}


def _j_label(J: float) -> str:
    return f"{J:g}"


@dataclass
class ContentionAnalysis:
    """The model evaluated on one schedule. Fields are arrays over *exposed* jobs: jobs
    with a positive run time spread over two or more leaves (the only ones whose U > 0);
    ``rows`` are their rows in the schedule.

    ``levels[i, d]``: seconds job i spends with its most loaded leaf at demand >= d.
    ``added_s[i, r]``: worst-case added wall time with ``uplinks[r]`` uplinks left.
    ``expected_added_s[J][i, r]``: the same, expected, at communication fraction J.
    ``sweep``: one summary dict per R (see :meth:`summary`).
    """

    schedule: Schedule
    pairs: PairDemand
    leaf_demand: LeafDemand
    rows: np.ndarray
    runtime_s: np.ndarray
    leaves: np.ndarray
    levels: np.ndarray
    uplinks: np.ndarray
    comm_fractions: tuple[float, ...]
    added_s: np.ndarray
    expected_added_s: dict[float, np.ndarray]
    contended_time_s: dict[float, np.ndarray]
    sweep: list[dict[str, Any]]
    timings_s: dict[str, float]

    # -- tables -------------------------------------------------------------------------

    def leaf_demand_table(self) -> pa.Table:
        """One row per maximal stretch of constant positive demand on a leaf: ``demand``
        in uplinks (a float when jobs share nodes, see :attr:`Schedule.units_per_link`)."""
        ld = self.leaf_demand
        u = self.schedule.units_per_link
        demand = ld.demand if u == 1 else ld.demand / u
        return pa.table({"leaf": pa.array(ld.leaf), "start_s": pa.array(ld.start_s), "end_s": pa.array(ld.end_s), "demand": pa.array(demand)})

    def job_exposure_table(self) -> pa.Table:
        """One row per exposed job: its leaves, peak and time-averaged demand on its most
        loaded leaf, its own largest U."""
        s = self.schedule
        peak = np.zeros(len(self.rows), dtype=np.int64)
        if self.levels.shape[1]:
            pos = self.levels > 0
            peak = np.where(pos.any(axis=1), self.levels.shape[1] - 1 - np.argmax(pos[:, ::-1], axis=1), 0)
        u = s.units_per_link
        mean_d = self.levels[:, 1:].sum(axis=1) / np.maximum(self.runtime_s, 1) / u
        keep = self.pairs.uplinks > 0
        own = np.zeros(s.n_jobs, dtype=np.int64)
        np.maximum.at(own, self.pairs.job[keep], self.pairs.uplinks[keep])
        own_links = own if u == 1 else own / u
        peak_links = peak if u == 1 else peak / u
        return pa.table(
            {
                "job_id": pa.array(s.job_ids[self.rows]),
                "row": pa.array(self.rows),
                "start_s": pa.array(s.start_s[self.rows]),
                "runtime_s": pa.array(self.runtime_s),
                "nodes": pa.array(s.job_nodes[self.rows]),
                "leaves": pa.array(self.leaves),
                "own_max_uplinks": pa.array(own_links[self.rows]),
                "peak_demand": pa.array(peak_links),
                "mean_demand": pa.array(mean_d),
            }
        )

    def job_slowdowns_table(self) -> pa.Table:
        """Long table: one row per (affected job, R) with added seconds and slowdown
        (added / run time), worst case and expected for each J. A job absent for some R
        is unaffected there (its worst-case and expected added times are both 0)."""
        s = self.schedule
        i, r = np.nonzero(self.added_s > 0)
        cols: dict[str, pa.Array] = {
            "job_id": pa.array(s.job_ids[self.rows[i]]),
            "row": pa.array(self.rows[i]),
            "uplinks": pa.array(self.uplinks[r]),
            "runtime_s": pa.array(self.runtime_s[i]),
            "added_s": pa.array(self.added_s[i, r]),
            "slowdown": pa.array(self.added_s[i, r] / self.runtime_s[i]),
        }
        for J in self.comm_fractions:
            cols[f"expected_slowdown_J{_j_label(J)}"] = pa.array(self.expected_added_s[J][i, r] / self.runtime_s[i])
        return pa.table(cols)

    def summary(self) -> dict[str, Any]:
        """Everything as plain JSON-able numbers."""
        s = self.schedule
        ld = self.leaf_demand
        dur = ld.end_s - ld.start_s
        lvl = np.bincount(ld.demand, weights=dur).astype(np.int64) if len(ld) else np.zeros(0, np.int64)
        return {
            "schedule": s.describe(),
            "exposed_jobs": int(len(self.rows)),
            "exposed_runtime_s": int(self.runtime_s.sum()),
            "leaf_demand": {
                "units_per_link": s.units_per_link,
                "stretches": int(len(ld)),
                "peak_uplinks": (int(ld.demand.max()) if len(ld) else 0) / s.units_per_link,
                "leaf_seconds_by_demand": {f"{d / s.units_per_link:g}": int(v) for d, v in enumerate(lvl) if v},
            },
            "comm_fractions": list(self.comm_fractions),
            "uplink_sweep": self.sweep,
        }


def analyze(
    schedule: Schedule,
    *,
    uplinks: Iterable[int] | None = None,
    comm_fractions: Iterable[float] = DEFAULT_COMM_FRACTIONS,
) -> ContentionAnalysis:
    """Run seed 001's model on ``schedule``.

    Args:
        uplinks: the R values (uplinks left per leaf) to evaluate; default every R from
            the nonblocking count (:attr:`Schedule.full_uplinks`) down to 1.
        comm_fractions: the J values of the probabilistic variant.
    """
    import time

    tick = time.perf_counter()
    timings: dict[str, float] = {}
    s = schedule
    R_full = s.full_uplinks
    R = np.array(sorted({int(r) for r in (uplinks if uplinks is not None else range(R_full, 0, -1))}, reverse=True), dtype=np.int64)
    if len(R) and R.min() < 1:
        raise ValueError("uplinks left per leaf must be at least 1")
    if len(R) and R.max() > R_full:
        # beyond the nonblocking count nothing is removed: the rows would say "removed -2",
        # a taper below 1 (the command refuses it as --uplinks)
        raise ValueError(f"{int(R.max())} uplinks left per leaf is more than the {R_full} of this fabric's nonblocking leaf (R counts the uplinks left: at most K)")
    # a J given twice is evaluated once (as R is): its rows and its sweeps.parquet column
    # would otherwise be written twice; dict keeps the order given
    Js = tuple(dict.fromkeys(float(j) for j in comm_fractions))
    for J in Js:
        if not 0.0 <= J <= 1.0:
            raise ValueError(f"a communication fraction must lie in [0, 1], got {J}")

    pairs = pair_demand(s)
    run = s.end_s - s.start_s
    tmin = int(s.start_s.min()) if s.n_jobs else 0
    horizon = (int(s.end_s.max()) - tmin + 1) if s.n_jobs else 1
    t0 = s.start_s - tmin
    t1 = s.end_s - tmin
    keep = (pairs.uplinks > 0) & (run[pairs.job] > 0)
    timings["pairs"] = time.perf_counter() - tick

    tick = time.perf_counter()
    pj = pairs.job[keep]
    stretches = _leaf_stretches(pairs.leaf[keep], t0[pj], t1[pj], pairs.uplinks[keep], horizon)
    sleaf, st0, st1, sD = stretches
    leaf_demand = LeafDemand(sleaf, st0 + tmin, st1 + tmin, sD)
    timings["leaf_demand"] = time.perf_counter() - tick

    tick = time.perf_counter()
    peak = int(sD.max()) if len(sD) else 0
    n_levels = max(peak, 1) + 1
    levels = _job_level_times(pairs, keep, t0, t1, stretches, horizon, n_levels)
    rows = pj[np.concatenate(([True], pj[1:] != pj[:-1]))] if len(pj) else pj  # pairs are job-sorted
    leaves = np.bincount(pairs.job[keep], minlength=s.n_jobs)[rows] if len(rows) else np.zeros(0, np.int64)
    runtime = run[rows]
    timings["job_levels"] = time.perf_counter() - tick

    tick = time.perf_counter()
    # Demand is in units of 1/u link: R uplinks are Ru = u * R units.
    u = s.units_per_link
    Ru = R * u
    # Worst case: added(R) = sum_d time_at(d) * max(0, d/Ru - 1) = (1/Ru) * sum_{d > Ru} T[>= d].
    above = np.cumsum(levels[:, ::-1], axis=1)[:, ::-1]  # above[:, d] = sum_{e >= d} T[:, e]
    idx = Ru + 1
    inside = idx < n_levels  # no demand above the peak: nothing added
    added = np.zeros((len(rows), len(R)))
    if inside.any():
        added[:, inside] = above[:, idx[inside]] / Ru[inside][None, :]
    del above
    # Time at each exact level, for the probabilistic weights.
    time_at = levels.astype(float)
    time_at[:, :-1] -= levels[:, 1:]
    expected: dict[float, np.ndarray] = {}
    contended: dict[float, np.ndarray] = {}
    for J in Js:
        W, P = expected_excess(n_levels - 1, Ru, J)
        expected[J] = time_at @ W
        contended[J] = time_at @ P
    # Worst case (J = 1): contended while Dmax > Ru, i.e. T[>= Ru + 1].
    worst = np.zeros((len(rows), len(R)))
    if inside.any():
        worst[:, inside] = levels[:, idx[inside]]
    contended[1.0] = worst
    timings["sweep"] = time.perf_counter() - tick

    total_run = float(run.sum())
    links = s.job_links
    total_node_s = float((run * links).sum())
    nodes_x = links[rows]
    exposed_run = float(runtime.sum())
    leaf_time = float(max(s.n_leaves, 1)) * float(horizon - 1 if s.n_jobs else 0)
    # Leaf-seconds at each demand level, then at levels > d: the contended leaf time.
    leaf_s_above = np.cumsum(np.bincount(sD, weights=(st1 - st0), minlength=n_levels + 1)[::-1])[::-1]
    sweep = []
    for r_i, r in enumerate(R):
        a = added[:, r_i]
        hit = a > 0
        slow = a[hit] / runtime[hit]
        row: dict[str, Any] = {
            "uplinks": int(r),
            "removed": int(R_full - r),
            "taper": float(R_full / r),
            "system_slowdown": float(a.sum() / total_run) if total_run else 0.0,
            "system_slowdown_node_weighted": float((a * nodes_x).sum() / total_node_s) if total_node_s else 0.0,
            "added_wall_per_node_second": float(a.sum() / total_node_s) if total_node_s else 0.0,
            "added_s": float(a.sum()),
            "affected_jobs": int(hit.sum()),
            "affected_fraction_of_jobs": float(hit.sum() / s.n_jobs) if s.n_jobs else 0.0,
            "affected_fraction_of_exposed": float(hit.sum() / len(rows)) if len(rows) else 0.0,
            "affected_job_slowdown": _stats(slow),
            "contended_exposed_time_fraction": float(contended[1.0][:, r_i].sum() / exposed_run) if exposed_run else 0.0,
            "contended_leaf_time_fraction": float(leaf_s_above[min(r * u + 1, len(leaf_s_above) - 1)] / leaf_time) if leaf_time and r * u + 1 < len(leaf_s_above) else 0.0,
            "probabilistic": [],
        }
        for J in Js:
            e = expected[J][:, r_i]
            row["probabilistic"].append(
                {
                    "J": J,
                    "contention_probability": float(contended[J][:, r_i].sum() / exposed_run) if exposed_run else 0.0,
                    "system_slowdown": float(e.sum() / total_run) if total_run else 0.0,
                    "affected_job_slowdown": _stats(e[hit] / runtime[hit]),
                }
            )
        sweep.append(row)
    return ContentionAnalysis(
        schedule=s,
        pairs=pairs,
        leaf_demand=leaf_demand,
        rows=rows,
        runtime_s=runtime,
        leaves=leaves,
        levels=levels,
        uplinks=R,
        comm_fractions=Js,
        added_s=added,
        expected_added_s=expected,
        contended_time_s=contended,
        sweep=sweep,
        timings_s=timings,
    )


# --------------------------------------------------------------------------------------
# Sweeps over the hardware (001 §IV: crossbar size, cores per node)


def crossbar_sweep(
    schedule: Schedule, sizes: Iterable[int] = DEFAULT_CROSSBAR_SIZES, *, comm_fractions: Iterable[float] = DEFAULT_COMM_FRACTIONS
) -> list[dict[str, Any]]:
    """The same schedule wired linearly to leaves of each size k (node i on leaf i // k),
    every R from k down to 1. One entry per k: ``{"nodes_per_leaf", "crossbar_ports",
    "leaves", "exposed_jobs", "uplink_sweep"}``."""
    out = []
    Js = tuple(comm_fractions)
    for k in sizes:
        a = analyze(schedule.with_leaf_size(int(k)), comm_fractions=Js)
        out.append(
            {
                "nodes_per_leaf": int(k),
                "crossbar_ports": 2 * int(k),
                "leaves": a.schedule.n_leaves,
                "exposed_jobs": int(len(a.rows)),
                "uplink_sweep": a.sweep,
            }
        )
    return out


def cores_sweep(
    schedule: Schedule,
    cores: Iterable[int] | None = None,
    *,
    base_cores: int | None = None,
    comm_fractions: Iterable[float] = DEFAULT_COMM_FRACTIONS,
) -> list[dict[str, Any]]:
    """The schedule rescaled to each cores-per-node count (fragmentation kept, 001 §II-C),
    on leaves of the schedule's K, every R from K down to 1. Default counts: the
    schedule's own times 1, 2, 4, 8."""
    base = base_cores or schedule.cores_per_node or 1
    counts = list(cores) if cores is not None else [base * f for f in DEFAULT_CORE_FACTORS]
    out = []
    Js = tuple(comm_fractions)
    for c in counts:
        t = schedule.with_cores_per_node(int(c), base)
        a = analyze(t, uplinks=range(schedule.full_uplinks, 0, -1), comm_fractions=Js)
        out.append(
            {
                "cores_per_node": int(c),
                "base_cores_per_node": int(base),
                "nodes": t.n_nodes,
                "leaves": t.n_leaves,
                "mean_job_nodes": float(t.job_nodes.mean()) if t.n_jobs else None,
                "exposed_jobs": int(len(a.rows)),
                "uplink_sweep": a.sweep,
            }
        )
    return out


def sweep_rows(variant: str, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flatten sweep entries (``{"nodes_per_leaf"?, "cores_per_node"?, "uplink_sweep"}``)
    into table rows, one per entry and R (``sweeps.parquet``)."""
    rows = []
    for e in entries:
        for r in e["uplink_sweep"]:
            row = {
                "variant": variant,
                "nodes_per_leaf": e.get("nodes_per_leaf"),
                "cores_per_node": e.get("cores_per_node"),
                "uplinks": r["uplinks"],
                "removed": r["removed"],
                "taper": r["taper"],
                "system_slowdown": r["system_slowdown"],
                "added_wall_per_node_second": r["added_wall_per_node_second"],
                "affected_jobs": r["affected_jobs"],
                "affected_mean_slowdown": r["affected_job_slowdown"]["mean"],
                "affected_max_slowdown": r["affected_job_slowdown"]["max"],
            }
            for p in r["probabilistic"]:
                row[f"system_slowdown_J{_j_label(p['J'])}"] = p["system_slowdown"]
            rows.append(row)
    return rows


def run_contention(
    schedule: Schedule,
    *,
    uplinks: Iterable[int] | None = None,
    comm_fractions: Iterable[float] = DEFAULT_COMM_FRACTIONS,
    crossbar_sizes: Iterable[int] | None = DEFAULT_CROSSBAR_SIZES,
    cores: Iterable[int] | None = None,
    base_cores: int | None = None,
    do_cores: bool = True,
) -> tuple[ContentionAnalysis, dict[str, Any]]:
    """The base analysis plus both hardware sweeps; returns the analysis and the full
    ``contention.json`` dictionary."""
    import time

    Js = tuple(float(j) for j in comm_fractions)
    tick = time.perf_counter()
    a = analyze(schedule, uplinks=uplinks, comm_fractions=Js)
    t_base = time.perf_counter() - tick
    doc: dict[str, Any] = {"toposched_version": __version__, "model": "seed 001 (docs/contention.md)"}
    doc.update(a.summary())
    doc["probability_curves"] = probability_curves(schedule.nodes_per_leaf)
    tick = time.perf_counter()
    doc["crossbar_sweep"] = crossbar_sweep(schedule, crossbar_sizes, comm_fractions=Js) if crossbar_sizes else []
    t_cross = time.perf_counter() - tick
    tick = time.perf_counter()
    doc["cores_per_node_sweep"] = cores_sweep(schedule, cores, base_cores=base_cores, comm_fractions=Js) if do_cores else []
    t_cores = time.perf_counter() - tick
    # wall times stay out of contention.json (two analyses of one schedule give the same
    # bytes, as every result file does); they are the analysis's own
    a.timings_s.update(base_total=t_base, crossbar_sweep=t_cross, cores_per_node_sweep=t_cores)
    return a, doc


def probability_curves(nodes_per_leaf: int, factors: Sequence[float] = (1.5, 2, 3, 4), points: int = 51) -> dict[str, Any]:
    """001 Fig. 3: E(J) against J for a crossbar of n = 2K ports and m = n / f usable
    uplinks, for oversubscription factors f."""
    n = 2 * int(nodes_per_leaf)
    J = np.linspace(0.0, 1.0, points)
    curves = []
    for f in factors:
        m = int(n // f)
        curves.append({"factor": float(f), "m": m, "E": [float(contention_probability(n, m, float(j))) for j in J]})
    return {"n": n, "J": [float(j) for j in J], "curves": curves}

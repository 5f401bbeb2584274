"""The Python implementation of the finished jobs' columns and span counts before they
moved to Rust (crates/toposched-io/src/collect.rs): toposched.results.finished_jobs and
_span_counts, toposched.nodelists.span_counts, kept unchanged as the independent
reference of tests/test_native_collect.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from toposched.nodelists import NODE_RANGES, ranges_array
from toposched.topology import Fabric

#: Bounded-slowdown threshold (seconds), as in Feitelson's definition.
BSLD_TAU_S = 10


@dataclass
class FinishedJobs:
    """jobs.parquet's rows for the finished jobs among some rows of a replay, and the
    columns the utilization and the summary are made of."""

    table: pa.Table
    start: np.ndarray
    end: np.ndarray
    nodes: np.ndarray
    wait: np.ndarray
    bsld: np.ndarray
    aph: np.ndarray  # NaN: no APH (a null in the table)
    killed: int


def finished_jobs(r: dict[str, np.ndarray], cols: dict[str, np.ndarray], fabric: Fabric) -> FinishedJobs:
    """The rows of ``r`` (the engine's results arrays: ``results()`` of a whole replay, or
    one ``drain()`` of a streamed one) whose job is done, as jobs.parquet's rows, in row
    order; ``cols`` are the same rows' workload columns."""
    done = r["status"] == 2
    idx = np.flatnonzero(done)
    every = len(idx) == len(done)

    def pick(a: np.ndarray) -> np.ndarray:
        # every job finished (a complete run): the arrays as they are, no copy
        return a if every else a[idx]

    start = pick(r["start_s"])
    end = pick(r["end_s"])
    submit = pick(cols["submit_s"])
    nodes = pick(cols["nodes"])
    wait = start - submit
    run = end - start
    bsld = np.maximum((wait + run) / np.maximum(run, BSLD_TAU_S), 1.0)
    roff = r["range_offsets"]
    first = r["range_first"]
    count = r["range_count"]
    if not every:
        # node lists of the finished jobs only: gather their ranges
        all_lens = roff[1:] - roff[:-1]
        keep = np.repeat(done, all_lens)
        first, count = first[keep], count[keep]
        roff = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(all_lens[idx], out=roff[1:])
    leaf_of = fabric.core.leaf_of_nodes()
    pod_of_leaf = fabric.core.pod_of_leaves()
    leaves_used, pods_used = _span_counts(roff, first, count, leaf_of, pod_of_leaf)
    aph = pick(r["aph"])
    killed = pick(r["killed"])
    jobs = pa.table(
        {
            "job_id": pa.array(pick(cols["job_id"])),
            "submit_s": pa.array(submit),
            "start_s": pa.array(start),
            "end_s": pa.array(end),
            "wait_s": pa.array(wait),
            "nodes": pa.array(nodes),
            "walltime_s": pa.array(pick(cols["walltime_s"])),
            "runtime_s": pa.array(run),
            "log_runtime_s": pa.array(pick(cols["runtime_s"])),
            "killed": pa.array(killed),
            "bounded_slowdown": pa.array(bsld),
            "aph": pa.array(aph, mask=np.isnan(aph)),
            "alloc_class": pa.array(pick(r["alloc_class"])),
            "leaves": pa.array(leaves_used),
            "pods": pa.array(pods_used),
            NODE_RANGES: ranges_array(roff, first, count),
        }
    )
    return FinishedJobs(jobs, start, end, nodes, wait, bsld, np.asarray(aph, dtype=float), int(np.sum(killed)) if len(killed) else 0)


def _span_counts(roff: np.ndarray, first: np.ndarray, count: np.ndarray, leaf_of: np.ndarray, pod_of_leaf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct leaves and pods per job, from its ascending node ranges."""
    if len(pod_of_leaf) == 1 and (len(leaf_of) == 0 or int(leaf_of.max()) == 0):
        # one leaf in one pod (nodes = processors fabrics): every job with nodes spans one
        one = (np.diff(roff) > 0).astype(np.int32)
        return one, one.copy()
    return span_counts(roff, first, count, leaf_of, pod_of_leaf)


def span_counts(range_offsets: np.ndarray, first: np.ndarray, count: np.ndarray, leaf_of: np.ndarray, pod_of_leaf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct leaves and pods of every job (int32), from ascending ranges. Ids are
    leaf-major (a leaf's nodes are consecutive, pods hold consecutive leaves), so a range
    [a, b] touches the leaves numbered rank(a) .. rank(b), where rank counts the distinct
    leaves up to a node; a job's next range shares a leaf with the previous one only where
    one ends and the other starts. Work in proportion to the ranges, not the nodes."""
    n_jobs = len(range_offsets) - 1
    leaf_of = np.asarray(leaf_of)
    out = []
    for key in (leaf_of, np.asarray(pod_of_leaf)[leaf_of] if len(leaf_of) else leaf_of):
        rank = np.zeros(len(key), dtype=np.int64)
        if len(key) > 1:
            np.cumsum(key[1:] != key[:-1], out=rank[1:])
        if len(first) == 0:
            out.append(np.zeros(n_jobs, dtype=np.int32))
            continue
        f = np.asarray(first, dtype=np.int64)
        lo = rank[f]
        hi = rank[f + np.asarray(count, dtype=np.int64) - 1]
        touched = hi - lo + 1
        # a range starting in the leaf (pod) where the job's previous range ended
        shared = np.zeros(len(f), dtype=bool)
        shared[1:] = lo[1:] == hi[:-1]
        roff = np.asarray(range_offsets, dtype=np.int64)
        shared[roff[:-1][roff[:-1] < roff[1:]]] = False
        c = np.zeros(len(f) + 1, dtype=np.int64)
        np.cumsum(touched - shared, out=c[1:])
        out.append((c[roff[1:]] - c[roff[:-1]]).astype(np.int32))
    return out[0], out[1]

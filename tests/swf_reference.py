"""A deliberately plain SWF reader, written from the SWF field list and the normalization
rules of docs/workloads.md (default settings), not from toposched.workload: one record at
a time, no NumPy. The tests compare the real reader with it on real logs, job by job.

Rules (defaults), counted in this order: a record is a non-blank line that does not start
with ';'. Size: field 5 (allocated processors) when positive, else field 8 (requested,
counted as size_from_requested), else the record is left out as unknown_size; nodes =
ceil(processors / cores per node). Run time (field 4) negative: left out as
unknown_runtime. Requested time (field 9) zero or negative: set to
the run time, at least 1 s. Submit (field 2) negative: left out as unknown_submit. Jobs
are then ordered by submit time, ties in file order.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ReferenceLog:
    records: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    size_from_requested: int = 0
    walltime_from_runtime: int = 0
    nodes_rounded_up: int = 0
    # One tuple per job kept, in replay order:
    # (submit_s, line, job_id, nodes, walltime_s, runtime_s, procs)
    jobs: list[tuple[int, ...]] = field(default_factory=list)

    @property
    def overrun(self) -> int:
        """Jobs whose run time exceeds their requested time."""
        return sum(1 for j in self.jobs if j[5] > j[4])


def text_lines(path: Path) -> list[str]:
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8", "replace").splitlines()


def number(token: str) -> int:
    value = float(token)
    assert value == int(value), token
    return int(value)


def read_reference(path: Path, cores_per_node: int) -> ReferenceLog:
    log = ReferenceLog()

    def skip(why: str) -> None:
        log.skipped[why] = log.skipped.get(why, 0) + 1

    for line_no, line in enumerate(text_lines(path), start=1):
        s = line.strip()
        if not s or s.startswith(";"):
            continue
        log.records += 1
        f = s.split()
        # fields 1, 2, 4, 5, 8, 9 (1-based); the others may hold decimals and are not used
        job_id, submit, run, alloc, req_procs, req_time = (number(f[i]) for i in (0, 1, 3, 4, 7, 8))
        procs = alloc if alloc > 0 else req_procs
        if procs <= 0:
            skip("unknown_size")
            continue
        if alloc <= 0:
            log.size_from_requested += 1
        nodes = -(-procs // cores_per_node)
        if nodes * cores_per_node != procs:
            log.nodes_rounded_up += 1
        if run < 0:
            skip("unknown_runtime")
            continue
        if req_time <= 0:
            req_time = max(run, 1)
            log.walltime_from_runtime += 1
        if submit < 0:
            skip("unknown_submit")
            continue
        log.jobs.append((submit, line_no, job_id, nodes, req_time, run, procs))
    log.jobs.sort(key=lambda j: (j[0], j[1]))
    return log

"""How the SWF reader lays out and cuts a log: the fields, the ones kept, the chunk size
of its fast path. One definition for :mod:`toposched.workload.swf` and for the native
read-ahead (:mod:`toposched.readahead`), which parses the same chunks on a thread before
NumPy is imported: hence a module of its own, importing nothing."""

from __future__ import annotations

#: Names of the 18 SWF fields, in order, as used in error messages.
FIELD_NAMES: tuple[str, ...] = (
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_processors",
    "average_cpu_time",
    "used_memory",
    "requested_processors",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable_number",
    "queue_number",
    "partition_number",
    "preceding_job",
    "think_time",
)
N_FIELDS = len(FIELD_NAMES)

#: 0-based indices of the fields the reader keeps, all of which must hold integers. The
#: others (6 average CPU time, 7 used memory, 10 requested memory, 17, 18) are only
#: checked to be numbers; 6, 7 and 10 are often decimal.
USED = (0, 1, 2, 3, 4, 7, 8, 10, 11, 12, 13, 14, 15)

#: The fast path's chunk size: a chunk ends at the first newline at or after this many
#: bytes from its start. ~1 MiB keeps temporaries in cache.
CHUNK_BYTES = 1 << 20

#: 18 digits always fit in int64; longer numbers go to the slow path.
MAX_FAST_DIGITS = 18

"""Type stub of the native module ``toposched._core`` (crates/toposched-py/src/lib.rs).

tests/test_stub.py checks that this stub and the compiled module name the same things.
"""

from typing import Any, Final, final

import numpy as np
import numpy.typing as npt

PRESETS: Final[list[str]]
ALLOCATORS: Final[list[str]]
QUEUES: Final[list[str]]
__version__: Final[str]

@final
class Topology:
    """A 2- or 3-level fat-tree; node ids are dense and leaf-major."""

    @staticmethod
    def preset(name: str) -> Topology: ...
    @staticmethod
    def fat_tree(
        name: str,
        nodes_per_leaf: int,
        leaves_per_pod: int,
        pods: int,
        uplinks_per_leaf: int | None = None,
        uplinks_per_l2: int | None = None,
    ) -> Topology: ...
    @staticmethod
    def from_leaf_sizes(
        name: str,
        levels: int,
        pods: list[list[int]],
        uplinks_per_leaf: int | None = None,
        uplinks_per_l2: int | None = None,
        leaf_names: list[str] | None = None,
        pod_names: list[str] | None = None,
    ) -> Topology: ...
    @property
    def name(self) -> str: ...
    @property
    def levels(self) -> int: ...
    @property
    def n_nodes(self) -> int: ...
    @property
    def n_leaves(self) -> int: ...
    @property
    def n_pods(self) -> int: ...
    @property
    def nodes_per_leaf(self) -> int: ...
    @property
    def leaves_per_pod(self) -> int: ...
    @property
    def max_pod_nodes(self) -> int: ...
    @property
    def uplinks_per_leaf(self) -> int: ...
    @property
    def uplinks_per_l2(self) -> int: ...
    def leaf_of_nodes(self) -> npt.NDArray[np.int32]: ...
    def pod_of_leaves(self) -> npt.NDArray[np.int32]: ...
    def padded_ids(self) -> npt.NDArray[np.int64]: ...
    def hops(self, a: int, b: int) -> int: ...

@final
class Simulation:
    """One replay: construct, call ``step`` until it returns True, read ``results``."""

    def __init__(
        self,
        topology: Topology,
        job_id: npt.NDArray[np.int64],
        submit_s: npt.NDArray[np.int64],
        nodes: npt.NDArray[np.int64],
        walltime_s: npt.NDArray[np.int64],
        runtime_s: npt.NDArray[np.int64],
        *,
        queue: str = "easy",
        alloc: str | object | None = None,
        options: dict[str, bool | int | float | str] | None = None,
        kill_at_walltime: bool = True,
        queue_depth: int | None = None,
        record_reservations: bool = False,
        check_interference_free: bool = False,
        down: list[int] | None = None,
        max_leaves: npt.NDArray[np.int64] | None = None,
        switch_wait_s: npt.NDArray[np.int64] | None = None,
        queue_order: object | None = None,
        event_order: str = "per-instant",
        user_id: npt.NDArray[np.int64] | None = None,
        account_id: npt.NDArray[np.int64] | None = None,
        qos_id: npt.NDArray[np.int64] | None = None,
        partition_id: npt.NDArray[np.int64] | None = None,
    ) -> None: ...
    def step(self, max_instants: int | None = None) -> bool: ...
    def step_until(self, before_s: int | None, max_instants: int | None = None) -> bool:
        """Streamed replays: handle instants before ``before_s`` only (more rows will be
        appended, none submitted before it), or all of them when None (input complete).
        True when the replay went as far as its input allows."""
    def append(
        self,
        job_id: npt.NDArray[np.int64],
        submit_s: npt.NDArray[np.int64],
        nodes: npt.NDArray[np.int64],
        walltime_s: npt.NDArray[np.int64],
        runtime_s: npt.NDArray[np.int64],
        *,
        max_leaves: npt.NDArray[np.int64] | None = None,
        switch_wait_s: npt.NDArray[np.int64] | None = None,
        user_id: npt.NDArray[np.int64] | None = None,
        account_id: npt.NDArray[np.int64] | None = None,
        qos_id: npt.NDArray[np.int64] | None = None,
        partition_id: npt.NDArray[np.int64] | None = None,
    ) -> None:
        """Append rows after the last one (submit times not before the last row's nor
        the last ``before_s``)."""
    def drain(self) -> dict[str, Any]:
        """Hand over and forget the longest prefix of final rows: ``results()``'s arrays
        for them, ``first_row`` (int) and ``skipped`` (list of (row, reason))."""
    @property
    def first_row(self) -> int: ...
    @property
    def held_rows(self) -> int: ...
    @property
    def input_end(self) -> int | None: ...
    @property
    def n_jobs(self) -> int: ...
    @property
    def submitted(self) -> int: ...
    @property
    def now(self) -> int: ...
    @property
    def passes(self) -> int: ...
    @property
    def finished(self) -> bool: ...
    def results(self, release: bool = False) -> dict[str, npt.NDArray[np.generic]]: ...
    def skipped(self) -> list[tuple[int, str]]: ...
    def reservations(self) -> dict[str, npt.NDArray[np.int64]]: ...

def policies() -> list[dict[str, Any]]:
    """Every registered policy: name, kind ("queue"/"alloc"), summary, doc, fungible,
    topology_aware, options (JSON schema)."""

def aph(topology: Topology, nodes: list[int]) -> float | None: ...
def ideal_aph(topology: Topology, n: int) -> float | None: ...
def busy_nodes_sampled(
    start_s: npt.NDArray[np.int64],
    end_s: npt.NDArray[np.int64],
    nodes: npt.NDArray[np.int64],
    t0: int,
    t1: int,
    step_s: int,
) -> npt.NDArray[np.int64]: ...

# ---- log readers' fast paths (crates/toposched-py/src/readers.rs) ----

def swf_plain_chunk(
    chunk: bytes, used: list[int], n_fields: int, max_digits: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int] | None: ...

@final
class SwfReadAhead:
    """A log file read, decompressed and parsed ahead on a thread (crates/toposched-py/src/readahead.rs)."""

    def __init__(self, path: str, chunk_bytes: int, used: list[int], n_fields: int, max_digits: int, *, inflate_bytes: int = ...) -> None: ...
    def take(
        self, *, chunks: bool
    ) -> tuple[bytes, list[tuple[int, int, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int] | None]]] | None: ...
    def wait(self) -> None: ...
    def cancel(self) -> None: ...

# ---- normalize: a log's raw columns -> the job table (crates/toposched-py/src/normalize.rs) ----

NORMALIZE_LIMITS: dict[str, int]
NORMALIZE_MAX_EXAMPLES: int
NORMALIZE_MAX_ID: int

def normalize_columns(
    raw: list[npt.NDArray[np.int64]],
    ids: list[npt.NDArray[np.int64]],
    *,
    source: str,
    cores_per_node: int,
    size_field: str,
    missing_walltime: int | None,
    missing_runtime: str,
    time_origin_epoch_s: int | None = None,
    time_origin_text: str | None = None,
    lenient: bool = False,
    allow_long_span: bool = False,
    field_names: list[tuple[str, str]] | None = None,
    submit_span: list[int] | None = None,
) -> tuple[
    list[npt.NDArray[np.int64]],
    list[npt.NDArray[np.int64]],
    npt.NDArray[np.int64],
    list[tuple[str, int]],
    list[tuple[str, int]],
    list[str],
]: ...
def check_ranges_columns(
    raw: list[npt.NDArray[np.int64]],
    *,
    source: str,
    time_origin_epoch_s: int | None = None,
    time_origin_text: str | None = None,
    lenient: bool = False,
    allow_long_span: bool = False,
    field_names: list[tuple[str, str]] | None = None,
    examples: list[str] | None = None,
    submit_span: list[int] | None = None,
) -> tuple[npt.NDArray[np.bool_], list[str]]: ...

# ---- network model (crates/toposched-py/src/network.rs; docs/network.md) ----


PATTERNS: Final[list[str]]
CATALYST_SL_WEIGHTS: Final[list[float]]
#: The most bytes one flow may carry per iteration (larger demands are refused).
MAX_FLOW_BYTES: Final[float]

@final
class NetworkModel:
    """Links, static D-mod-k routes and the job-level fair-bottleneck sharing model of a fabric."""

    def __init__(
        self,
        topology: Topology,
        *,
        bandwidth: tuple[float, float, float] = ...,  # (1.0, 1.0, 1.0)
        fairness: str = "flows",
        sl_weights: list[float] | None = None,
        filling: str = "auto",
        packet_per_latency: float = 0.0,
    ) -> None: ...
    @property
    def n_links(self) -> int: ...
    @property
    def packet_per_latency(self) -> float: ...
    @property
    def fairness(self) -> str: ...
    @property
    def filling(self) -> str: ...
    @property
    def sl_weights(self) -> list[float]: ...
    @property
    def bandwidth(self) -> tuple[float, float, float]: ...
    def route(self, src: int, dst: int) -> list[int]: ...
    def link_name(self, link: int) -> str: ...
    def link_level(self, link: int) -> int: ...
    def link_capacity(self, link: int) -> float: ...
    def pattern_flows(
        self,
        nodes: list[int],
        pattern: str,
        *,
        bytes: float = 1.0,
        ranks_per_node: int = 1,
        seed: int = 0,
        flows: list[tuple[int, int, float]] | None = None,
    ) -> dict[str, npt.NDArray[np.generic]]: ...
    def demand(
        self,
        nodes: list[int],
        pattern: str,
        *,
        bytes: float = 1.0,
        ranks_per_node: int = 1,
        seed: int = 0,
        flows: list[tuple[int, int, float]] | None = None,
    ) -> dict[str, Any]: ...
    def evaluate(self, jobs: list[dict[str, Any]]) -> dict[str, Any]: ...

def pattern_name(text: str) -> str: ...
def network_attach(
    simulation: Simulation,
    patterns: list[str],
    pattern: npt.NDArray[np.int64],
    phi: npt.NDArray[np.float64],
    *,
    bytes: npt.NDArray[np.float64] | None = None,
    ranks_per_node: npt.NDArray[np.int64] | None = None,
    seed: npt.NDArray[np.int64] | None = None,
    service_level: npt.NDArray[np.int64] | None = None,
    reference: str = "alone",
    bandwidth: tuple[float, float, float] = ...,  # (1.0, 1.0, 1.0)
    fairness: str = "flows",
    sl_weights: list[float] | None = None,
    overrun: str = "run-on",
) -> None: ...
def network_results(simulation: Simulation) -> dict[str, Any] | None: ...

# ---- end of network model section ----

# live placement (crates/toposched-py/src/live.rs), used by `toposched serve`

@final
class Placer:
    """A live allocation table using a built-in allocation policy exactly as a replay does."""

    def __init__(
        self,
        topology: Topology,
        alloc: str,
        *,
        options: dict[str, bool | int | float | str] | None = None,
    ) -> None: ...
    def allocate(
        self, job: str, nodes: int, walltime_s: int, now_s: int, reserve: bool = False, exclude: list[int] | None = None
    ) -> tuple[str, list[int] | None, int | None, str | None]: ...
    def release(self, job: str) -> list[int] | None: ...
    def assign(self, job: str, nodes: list[int], start_s: int, walltime_s: int) -> list[int]: ...
    def replace_all(self, table: list[tuple[str, list[int], int, int]]) -> None: ...
    def drain(self, node: int) -> bool: ...
    def resume(self, node: int) -> bool: ...
    def drained(self) -> list[int]: ...
    def satisfiable(self, nodes: int) -> tuple[str | None, str | None]: ...
    def jobs(self) -> list[tuple[str, list[int], int, int]]: ...
    def reservation(self) -> tuple[str, int, int, list[int]] | None: ...
    def clear_reservation(self) -> None: ...
    def holder(self, node: int) -> str | None: ...
    def leaf_free(self) -> list[int]: ...
    def leaf_spanned(self) -> list[bool]: ...
    def pod_spanned(self) -> list[bool]: ...
    @property
    def n_free(self) -> int: ...
    @property
    def n_nodes(self) -> int: ...
    @property
    def alloc(self) -> str: ...
    @property
    def fungible(self) -> bool: ...

# ---- a replay's results collected (crates/toposched-py/src/collect.rs, toposched-io) ----

SUMMARY_SIZE_BINS: Final[list[tuple[str, int, int]]]
SUMMARY_KEEP_ROWS: Final[int]
SUMMARY_GATHER_KEYS: Final[int]

@final
class SummaryStats:
    """Accumulators of the summary's statistics (toposched.summary_stats wraps it)."""

    def __init__(self, keep_all: bool = False) -> None: ...
    @property
    def rows(self) -> int: ...
    def add(
        self,
        wait_s: npt.NDArray[np.int64],
        bounded_slowdown: npt.NDArray[np.float64],
        aph: npt.NDArray[np.float64],
        nodes: npt.NDArray[np.int64],
        keep_rows: int,
    ) -> None: ...
    def finish(self, source: Any, gather_keys: int) -> dict[str, Any]: ...

def exact_float_sum_bytes(x: npt.NDArray[np.float64]) -> bytes: ...
def finished_jobs(topology: Topology, outcomes: tuple[Any, Any, Any]) -> dict[str, Any]: ...
def collect_replay(topology: Topology, outcomes: tuple[Any, Any, Any], step_s: int, n_nodes: int) -> dict[str, Any]: ...
def span_counts(
    range_offsets: npt.NDArray[np.int64],
    first: npt.NDArray[np.uint32],
    count: npt.NDArray[np.uint32],
    leaf_of: npt.NDArray[np.uint32],
    pod_of_leaf: npt.NDArray[np.uint32],
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]: ...

UTILIZATION_CHUNK_SAMPLES: Final[int]
UTILIZATION_SPILL_SAMPLES: Final[int]

def utilization_changes(
    start_s: npt.NDArray[np.int64], end_s: npt.NDArray[np.int64], nodes: npt.NDArray[np.int64], step_s: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
def utilization_busy_at(
    change_s: npt.NDArray[np.int64], busy: npt.NDArray[np.int64], t0: int, step_s: int, k0: int, k1: int
) -> npt.NDArray[np.int64]: ...
def utilization_mean(
    change_s: npt.NDArray[np.int64], busy: npt.NDArray[np.int64], t0: int, t1: int, step_s: int, n_nodes: int
) -> float | None: ...
@final
class BusySamples:
    """The busy-node samples of a streamed replay (toposched.utilization.BusySamples wraps it)."""

    def __init__(self, t0: int, step_s: int, n_nodes: int, spill: str | None = None) -> None: ...
    @property
    def t0(self) -> int: ...
    @t0.setter
    def t0(self, value: int) -> None: ...
    @property
    def t1(self) -> int: ...
    @t1.setter
    def t1(self, value: int) -> None: ...
    @property
    def base(self) -> int: ...
    @property
    def n_samples(self) -> int: ...
    def add(self, start_s: npt.NDArray[np.int64], end_s: npt.NDArray[np.int64], nodes: npt.NDArray[np.int64]) -> None: ...
    def final_before(self, k: int, spill_samples: int) -> None: ...
    def busy_at(self, k0: int, k1: int) -> npt.NDArray[np.int64]: ...
    def mean(self) -> float | None: ...

@final
class ParquetFileWriter:
    """A result file (jobs.parquet, utilization.parquet, skipped.parquet) written by the
    native writer (crates/toposched-io/src/parquet.rs; python/toposched/parquet_out.py)."""

    def __init__(self, path: str, kind: str, metadata: list[tuple[str, str]], row_group_rows: int | None = None) -> None: ...
    def write(self, columns: list[tuple[str, Any, npt.NDArray[np.bool_] | None, bool]]) -> None: ...
    def close(self) -> int: ...

def write_utilization_series(
    path: str,
    metadata: list[tuple[str, str]],
    change_s: npt.NDArray[np.int64],
    busy: npt.NDArray[np.int64],
    t0: int,
    t1: int,
    step_s: int,
    n_nodes: int,
) -> int:
    """utilization.parquet of a busy-node step function's samples, made and written in Rust."""

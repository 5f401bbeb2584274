"""``as-logged``: replay what the real scheduler did, to measure it like a simulated run.

Nothing is scheduled. Each job starts when the log says it started (``logged_start_s``),
on the nodes the log names (``logged_hosts``: extended SWF node lists, sacct
``NodeList``, PBS ``exec_host``), and runs for its logged run time. The result has the
same tables and summary as :func:`toposched.simulate.simulate` (it goes through the same
``collect`` of toposched.results), so APH, span classes, waits and utilization of the real schedule can be
set beside those of any policy.

Host names are mapped onto the fabric's node names (``Fabric.spec.node_names``): an
exact match first, then the short name (``n1.cluster.org`` matches ``n1`` and the other
way round). A job whose hosts do not all map, or that the log gives no hosts or no start
for, is written to ``skipped.parquet`` with the reason (which hosts, and why they are not
on the fabric). ``fabric_from_hosts`` builds a fabric for a log whose machine is described
nowhere, under a stated assumption. See ``docs/as-logged.md``.

>>> from toposched.workload.model import Workload
>>> import numpy as np
>>> w = Workload(columns={"job_id": np.array([1, 2]), "submit_s": np.array([0, 5]),
...     "nodes": np.array([2, 1]), "walltime_s": np.array([100, 100]),
...     "runtime_s": np.array([50, 80]), "procs": np.array([2, 1]), "line": np.array([1, 2])},
...     source="inline", format="test",
...     extra={"logged_start_s": np.array([10, 20]), "logged_hosts": [["a2", "a10"], ["b1"]]})
>>> fab = fabric_from_hosts(["a2", "a10", "a3"], nodes_per_leaf=2)
>>> [leaf.nodes for leaf in fab.spec.pods[0].leaves]
[['a2', 'a3'], ['a10']]
>>> r = replay_as_logged(w, fab)
>>> r.jobs.column("start_s").to_pylist(), r.jobs.column("aph").to_pylist()
([10], [2.0])
>>> r.skipped.column("reason").to_pylist()
['host not on fabric; host b1 is not on fabric hosts-3 (not among the hosts the fabric was built from)']
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from .errors import InputError
from .fabric_spec import FabricSpec, LeafSpec, PodSpec
from .config import RunConfig
from .results import Outcome, SimResult, collect
from .nodelists import ranges_from_lists
from .topology import Fabric
from .workload.model import COLUMNS, Workload

__all__ = [
    "fabric_from_hosts",
    "hosts_of",
    "map_hosts",
    "natural_key",
    "rack_key",
    "replay_as_logged",
    "topology_conf_text",
]

#: First words of the note a fabric built by :func:`fabric_from_hosts` carries.
FROM_HOSTS_NOTE = "built from a log's hosts"
_MAX_LISTED = 5
_DIGITS = re.compile(r"(\d+)")
_TRAILING_NUMBER = re.compile(r"\d+\D*\Z")


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort key putting ``n2`` before ``n10`` (digit runs compare as numbers; the name
    itself breaks ties, so ``n01`` and ``n1`` keep a fixed order)."""
    parts = _DIGITS.split(name)
    return (tuple((int(p), "") if i % 2 else (-1, p) for i, p in enumerate(parts)), name)


def rack_key(host: str) -> str:
    """The host name without its last number: ``cpn-q06-04-01`` -> ``cpn-q06-04-``,
    ``cpn-u22-16`` -> ``cpn-u22-``. A ``leaf_key`` for :func:`fabric_from_hosts` that puts
    hosts whose names differ only in the last number on one leaf (one rack, one switch: an
    assumption)."""
    return _TRAILING_NUMBER.sub("", host)


def hosts_of(workload: Workload) -> list[str]:
    """Distinct hosts of ``workload.extra["logged_hosts"]``, in natural order."""
    seen = {h for hosts in workload.extra.get("logged_hosts", []) for h in hosts}
    return sorted(seen, key=natural_key)


def fabric_from_hosts(
    hosts: Iterable[str],
    nodes_per_leaf: int,
    *,
    name: str | None = None,
    leaf_key: Callable[[str], str] | None = None,
) -> Fabric:
    """A fabric whose node names are ``hosts``, for a log whose machine is described
    nowhere. **An assumption, not a measurement**: the hosts are sorted naturally
    (``n2`` before ``n10``) and packed into leaves of ``nodes_per_leaf`` in that order,
    all leaves in one pod (a 2-level tree: 0 hops within a leaf, 2 between leaves).

    With ``leaf_key`` (e.g. :func:`rack_key`) a new leaf also starts wherever the key
    changes along that order, so hosts with different keys never share a leaf.
    """
    if isinstance(nodes_per_leaf, bool) or int(nodes_per_leaf) != nodes_per_leaf or nodes_per_leaf < 1:
        raise ValueError(f"nodes_per_leaf must be a positive integer, got {nodes_per_leaf!r}")
    if isinstance(hosts, (str, bytes)):
        # fabric_from_hosts("n1,n2", 16) made a fabric of the hosts 'n', '1', ',' and '2'
        raise TypeError(f"hosts must be a list of host names (e.g. hosts_of(workload)), not one string: {hosts!r:.60}")
    distinct = list(dict.fromkeys(hosts))
    bad = next((h for h in distinct if not isinstance(h, str) or not h or any(c.isspace() for c in h)), None)
    if bad is not None:
        # an empty name or one with a space was dropped or split by topology_conf_text
        raise ValueError(f"host names must be non-empty strings without spaces, got {bad!r}")
    ordered = sorted(distinct, key=natural_key)
    if not ordered:
        raise ValueError("no hosts to build a fabric from")
    groups: list[list[str]] = []
    last_key: str | None = None
    for h in ordered:
        key = leaf_key(h) if leaf_key is not None else None
        if not groups or len(groups[-1]) >= nodes_per_leaf or key != last_key:
            groups.append([])
        groups[-1].append(h)
        last_key = key
    width = len(str(len(groups) - 1))
    leaves = [LeafSpec(f"leaf{i:0{width}d}", g) for i, g in enumerate(groups)]
    how = f"natural order, at most {nodes_per_leaf} per leaf" + (", a new leaf where the leaf key changes" if leaf_key else "")
    spec = FabricSpec(
        name=name or f"hosts-{len(ordered)}",
        pods=[PodSpec("pod0", leaves)],
        levels=2,
        notes=[f"{FROM_HOSTS_NOTE} ({len(ordered)} hosts, {how}, one pod): an assumption, not the real cabling"],
    )
    return Fabric.from_spec(spec)


def topology_conf_text(fabric: Fabric) -> str:
    """A Slurm ``topology.conf`` describing ``fabric`` (e.g. one made by
    :func:`fabric_from_hosts`), so that the command line can use it:
    ``toposched simulate --system hosts.conf --alloc as-logged ...``. One line per leaf,
    one per pod, and a root when there are several pods. Host names must be ones Slurm's
    host-list syntax can hold (no ``[``, ``]`` or ``,``)."""
    spec = fabric.spec
    lines = [f"# {spec.name}, written by toposched"] + [f"# {n}" for n in spec.notes]
    for pod in spec.pods:
        for leaf in pod.leaves:
            bad = next((h for h in leaf.nodes if not h or any(c in "[]," or c.isspace() for c in h)), None)
            if bad is not None:  # else hostlist's bare "BadHostlist: forbidden character"
                raise ValueError(f"node {bad!r} of leaf {leaf.name} cannot be written in a topology.conf: Slurm host lists take no '[', ']', ',' or spaces")
            lines.append(f"SwitchName={leaf.name} Nodes={_ordered_hostlist(leaf.nodes)}")
    # A pod of one leaf named as its leaf (a lone leaf of a 3-level topology.conf, a file of
    # one leaf) has no switch line of its own: a second 'SwitchName=lone' made the file
    # unreadable. Read back, a leaf under the root (or alone) is such a pod again.
    tops = []
    for pod in spec.pods:
        if len(pod.leaves) == 1 and pod.leaves[0].name == pod.name:
            tops.append(pod.name)
            continue
        lines.append(f"SwitchName={pod.name} Switches={','.join(leaf.name for leaf in pod.leaves)}")
        tops.append(pod.name)
    if len(spec.pods) > 1:
        taken = {pod.name for pod in spec.pods} | {leaf.name for pod in spec.pods for leaf in pod.leaves}
        root = next(n for n in ("root", *(f"root{i}" for i in range(1, len(taken) + 2))) if n not in taken)
        lines.append(f"SwitchName={root} Switches={','.join(tops)}")
    return "\n".join(lines) + "\n"


def _ordered_hostlist(nodes: list[str]) -> str:
    """The nodes as a Slurm host list that expands in their order (node ids follow it):
    python-hostlist's collect sorts ('hpc[001-019],gpu[001-013]' came back as
    'gpu[001-013],hpc[001-019]', renumbering the nodes), so runs are folded one by one."""
    import re

    import hostlist

    whole = str(hostlist.collect_hostlist(nodes))
    if hostlist.expand_hostlist(whole) == nodes:
        return whole
    pattern = re.compile(r"^(.*?)(\d+)(\D*)$")
    runs: list[list[str]] = []
    last: tuple[str, int, int, str] | None = None
    for n in nodes:
        m = pattern.match(n)
        key = (m.group(1), int(m.group(2)), len(m.group(2)), m.group(3)) if m else None
        follows = (key is not None and last is not None and key[0] == last[0] and key[3] == last[3]
                   and key[2] == last[2] and key[1] == last[1] + 1)
        if runs and follows:
            runs[-1].append(n)
        else:
            runs.append([n])
        last = key
    return ",".join(str(hostlist.collect_hostlist(r)) for r in runs)


@dataclasses.dataclass
class HostMapping:
    """Where each job of a workload lands on a fabric (see :func:`map_hosts`)."""

    node_ids: list[np.ndarray | None]  # per row: sorted dense node ids, None if not placed
    reasons: dict[int, str]  # row -> why it is not placed
    unmapped: dict[str, int]  # host -> jobs naming it
    by_short_name: int  # hosts matched only through their short name
    why_unmapped: str  # why hosts are not on the fabric


def _why_not_on(fabric: Fabric) -> str:
    spec = fabric.spec
    if any(n.startswith(FROM_HOSTS_NOTE) for n in spec.notes):
        return "not among the hosts the fabric was built from"
    if spec.source:
        return f"{Path(spec.source).name} has no leaf listing it; its nodes are {_collected(spec.node_names)}"
    names = spec.node_names
    span = f"{names[0]}..{names[-1]}" if names else "nothing"
    return (
        f"fabric {spec.name} is generated and names its nodes {span}; give a topology.conf naming "
        "the log's hosts, or build a fabric from them with fabric_from_hosts"
    )


def _collected(names: list[str], width: int = 100) -> str:
    """A host list in Slurm's compact form, cut to about ``width`` characters."""
    import hostlist

    try:
        text = str(hostlist.collect_hostlist(names))
    except Exception:  # names hostlist cannot fold
        text = ",".join(names)
    return text if len(text) <= width else text[: width - 3].rsplit(",", 1)[0] + ",..."


def _list(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_LISTED])
    return shown + (f" and {len(names) - _MAX_LISTED} more" if len(names) > _MAX_LISTED else "")


def map_hosts(workload: Workload, fabric: Fabric) -> HostMapping:
    """Map every job's logged hosts onto ``fabric``'s nodes (exact name, then short name)."""
    if "logged_hosts" not in workload.extra or "logged_start_s" not in workload.extra:
        raise InputError(
            workload.source,
            f"as-logged needs the hosts and start time of every job, and this {workload.format} log gives "
            "none; node lists come from extended SWF (a {n,n,...} 19th field), sacct (NodeList) and PBS (exec_host)",
            # the format is guessed from the first record: node lists from the second on
            # were dropped, and this error said the log had none
            hint="the format is guessed from the first record: if later records have {n,n,...} node lists, --format swf-nodes reads them"
            if workload.format == "swf"
            else None,
        )
    n_jobs = len(workload)
    for key in ("logged_hosts", "logged_start_s"):
        if len(workload.extra[key]) != n_jobs:  # else an IndexError in the replay
            raise InputError(workload.source, f"extra[{key!r}] has {len(workload.extra[key]):,} entries for {n_jobs:,} jobs: one per job")
    odd = next((i for i, h in enumerate(workload.extra["logged_hosts"]) if isinstance(h, (str, bytes)) or not isinstance(h, (list, tuple, np.ndarray))), None)
    if odd is not None:  # a string was read as its characters: 'n12' as hosts n, 1 and 2
        raise InputError(workload.source, f"extra['logged_hosts'][{odd}] is {workload.extra['logged_hosts'][odd]!r}: each job's hosts must be a list of host names")
    names = fabric.spec.node_names
    exact = {n: i for i, n in enumerate(names)}
    short: dict[str, int | None] = {}
    shared: dict[str, list[str]] = {}  # short name -> the fabric's nodes that have it
    for i, n in enumerate(names):
        s = n.split(".", 1)[0]
        short[s] = None if s in short and short[s] != i else i
        shared.setdefault(s, []).append(n)
    why = _why_not_on(fabric)
    node_ids: list[np.ndarray | None] = []
    reasons: dict[int, str] = {}
    unmapped: dict[str, int] = {}
    by_short: set[str] = set()
    starts = workload.extra["logged_start_s"]
    # sacct and PBS say which jobs have a start: theirs may be negative (before the
    # earliest submit, the origin); an SWF start (submit + wait) is -1 when unknown
    started = workload.extra.get("logged_started")
    for row, hosts in enumerate(workload.extra["logged_hosts"]):
        if not hosts:
            node_ids.append(None)
            reasons[row] = "no hosts in the log; the log names no node for this job"
            continue
        ids: list[int] = []
        missing: list[str] = []
        for h in hosts:
            node = exact.get(h)
            if node is None:
                node = short.get(h.split(".", 1)[0])
                if node is not None:
                    by_short.add(h)
            if node is None:
                missing.append(h)
            else:
                ids.append(node)
        if missing:
            for h in missing:
                unmapped[h] = unmapped.get(h, 0) + 1
            node_ids.append(None)
            # a short name that several nodes share matches none of them: not an absent host
            ambiguous = [(h, shared[h.split(".", 1)[0]]) for h in missing if len(shared.get(h.split(".", 1)[0], ())) > 1]
            absent = [h for h in missing if len(shared.get(h.split(".", 1)[0], ())) <= 1]
            parts = []
            if absent:
                what = f"host {absent[0]} is" if len(absent) == 1 else f"hosts {_list(absent)} are"
                parts.append(f"{what} not on fabric {fabric.name} ({why})")
            if ambiguous:
                h, those = ambiguous[0]
                more = f" (and {len(ambiguous) - 1} more such hosts)" if len(ambiguous) > 1 else ""
                parts.append(f"host {h} matches {len(those)} nodes of fabric {fabric.name} by its short name ({_list(those)}), none exactly{more}")
            reasons[row] = "host not on fabric; " + "; ".join(parts)
            continue
        if not bool(started[row]) if started is not None else int(starts[row]) < 0:
            node_ids.append(None)
            reasons[row] = "no start in the log; the log names hosts but no start time"
            continue
        node_ids.append(np.unique(np.asarray(ids, dtype=np.int64)))
    return HostMapping(node_ids, reasons, unmapped, len(by_short), why)


def _merged_busy(node_rows: list[tuple[np.ndarray, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, set[int]]:
    """Per node, the union of the [start, end) intervals of the jobs on it, and the rows
    of jobs that hold a node another job holds at the same time."""
    if not node_rows:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, set()
    node = np.concatenate([ids for ids, _, _ in node_rows])
    start = np.concatenate([np.full(len(ids), s, np.int64) for ids, s, _ in node_rows])
    end = np.concatenate([np.full(len(ids), e, np.int64) for ids, _, e in node_rows])
    row = np.concatenate([np.full(len(ids), r, np.int64) for r, (ids, _, _) in enumerate(node_rows)])
    keep = end > start
    node, start, end, row = node[keep], start[keep], end[keep], row[keep]
    order = np.lexsort((start, node))
    node, start, end, row = node[order], start[order], end[order], row[order]
    m_start: list[int] = []
    m_end: list[int] = []
    sharing: set[int] = set()
    cur_node, cur_s, cur_e, cur_row = -1, 0, 0, -1
    for n, s, e, r in zip(node.tolist(), start.tolist(), end.tolist(), row.tolist()):
        if n == cur_node and s < cur_e:
            sharing.add(r)
            sharing.add(cur_row)
            if e > cur_e:
                cur_e, cur_row = e, r
            continue
        if cur_node >= 0:
            m_start.append(cur_s)
            m_end.append(cur_e)
        cur_node, cur_s, cur_e, cur_row = n, s, e, r
    m_start.append(cur_s)
    m_end.append(cur_e)
    s_arr = np.asarray(m_start, np.int64)
    return s_arr, np.asarray(m_end, np.int64), np.ones(len(s_arr), np.int64), sharing


#: Transforms that change node counts: as-logged takes each job's nodes from its logged
#: hosts, so their effect would be undone without a word.
NODE_TRANSFORMS = ("scale", "cores", "cap")


def refuse_node_transforms(workload: Workload) -> None:
    """Refuse a workload whose node counts a transform changed (scale, cores, cap):
    ``--alloc as-logged --transform scale:2`` replayed the logged hosts, the very schedule
    of the log, while the summary listed scale:2 and counted every job as scaled."""
    done = [t for t in workload.settings.get("transforms", []) if str(t).partition(":")[0] in NODE_TRANSFORMS]
    if done:
        raise InputError(
            "--transform",
            f"{', '.join(done)} changes node counts, which --alloc as-logged takes from the log's hosts "
            "(the replay would be the log's own schedule); with as-logged use days:N, days:N@START or drop:N only",
        )


def replay_as_logged(workload: Workload, fabric: Fabric, config: RunConfig = RunConfig(alloc="as-logged")) -> SimResult:
    """Replay ``workload`` as its log records it (see the module docstring).

    * start = ``logged_start_s``; end = start + ``runtime_s`` (the logged run time, never
      clipped: what happened happened, so ``killed`` is False and ``--run-on`` changes
      nothing); nodes = the logged hosts mapped onto the fabric.
    * A placed job whose host count differs from its ``nodes`` gets the host count,
      counted in the input's ``repairs["nodes_from_logged_hosts"]``.
    * Jobs not placed (hosts not on the fabric, no hosts or no start in the log) are
      rows of ``skipped.parquet`` with the reason.
    * Utilization counts a node busy while at least one job holds it: logs of machines
      that share nodes between jobs (wagap runs several jobs per node) would otherwise
      count one node several times.
    * The summary is that of :func:`toposched.simulate.simulate`, with ``policy.queue``
      and ``policy.alloc`` both ``"as-logged"`` and ``policy.as_logged`` holding the
      mapping counts (jobs placed, unmapped hosts, jobs sharing a node at some instant).
      Queue and allocation settings (seed, leaf order, ...) are not used.
    """
    refuse_node_transforms(workload)
    mapping = map_hosts(workload, fabric)
    n = len(workload)
    cols = workload.columns
    runtime = cols["runtime_s"]
    starts = np.asarray(workload.extra["logged_start_s"], dtype=np.int64)
    leaf_of = np.asarray(fabric.core.leaf_of_nodes(), dtype=np.int64)
    pod_of_leaf = np.asarray(fabric.core.pod_of_leaves(), dtype=np.int64)
    from . import _core

    status = np.full(n, 3, dtype=np.int8)
    start_s = np.full(n, -1, dtype=np.int64)
    end_s = np.full(n, -1, dtype=np.int64)
    klass = np.zeros(n, dtype=np.int8)
    aph = np.full(n, np.nan)
    offsets = np.zeros(n + 1, dtype=np.int64)
    nodes = cols["nodes"].copy()
    resized = 0
    flat: list[np.ndarray] = []
    placed: list[tuple[np.ndarray, int, int]] = []
    placed_rows: list[int] = []
    before_submit = 0
    total = 0
    for row in range(n):
        ids = mapping.node_ids[row]
        if ids is not None:
            s = int(starts[row])
            e = s + int(runtime[row])
            status[row] = 2
            start_s[row], end_s[row] = s, e
            leaves = np.unique(leaf_of[ids])
            klass[row] = 1 if len(leaves) == 1 else (2 if len(np.unique(pod_of_leaf[leaves])) == 1 else 3)
            if len(ids) > 1:
                a = _core.aph(fabric.core, [int(x) for x in ids])
                aph[row] = np.nan if a is None else a
            if len(ids) != nodes[row]:
                resized += 1
                nodes[row] = len(ids)
            if s < int(cols["submit_s"][row]):
                before_submit += 1
            flat.append(ids)
            placed.append((ids, s, e))
            placed_rows.append(row)
            total += len(ids)
        offsets[row + 1] = total
    results: dict[str, np.ndarray] = {
        "status": status,
        "start_s": start_s,
        "end_s": end_s,
        "alloc_class": klass,
        "killed": np.zeros(n, dtype=bool),
        "aph": aph,
    }
    results["range_offsets"], results["range_first"], results["range_count"] = ranges_from_lists(offsets, np.concatenate(flat) if flat else np.zeros(0, np.int64))
    skipped = sorted(mapping.reasons.items())

    new_cols = {c: cols[c] for c in COLUMNS}
    new_cols["nodes"] = nodes
    repairs = dict(workload.repairs)
    if resized:
        repairs["nodes_from_logged_hosts"] = repairs.get("nodes_from_logged_hosts", 0) + resized
    w2 = dataclasses.replace(workload, columns=new_cols, repairs=repairs)

    cfg = dataclasses.replace(config, queue="as-logged", alloc="as-logged")
    no_reservations = {k: np.zeros(0, dtype=np.int64) for k in ("pass_s", "job_row", "start_s")}
    result = collect(Outcome(results=results, skipped=skipped, reservations=no_reservations), w2, fabric, cfg, True)

    # Utilization from the union of busy intervals per node (see the docstring).
    m_start, m_end, ones, sharing = _merged_busy(placed)
    sharing_rows = {placed_rows[i] for i in sharing}
    summary = result.summary
    if summary["first_submit_s"] is not None:
        from .utilization import UtilizationSeries

        t0, t1, step = int(summary["first_submit_s"]), int(summary["last_end_s"]), cfg.utilization_step_s
        # a logged start before the first submit: busy from t0, the series' first instant
        # (from_jobs leaves out an interval that begins before t0)
        m_start = np.maximum(m_start, t0)
        keep = m_end > m_start
        m_start, m_end, ones = m_start[keep], m_end[keep], ones[keep]
        # only zero-length jobs: no changes, nothing is ever busy
        series = UtilizationSeries.from_jobs(m_start, m_end, ones, t0, t1, step, fabric.n_nodes)
        result.utilization_series = series
        summary["utilization"]["mean"] = series.mean()
        summary["utilization"]["samples"] = series.n_samples

    reasons: dict[str, int] = {}
    for _, why in skipped:
        key = why.split(";")[0]
        reasons[key] = reasons.get(key, 0) + 1
    unmapped = sorted(mapping.unmapped, key=natural_key)
    # Same keys as a simulated run's summary (simulate() records its kill rule there).
    summary["policy"]["kill_at_walltime_rule"] = "as-logged: every job runs its logged run time, past its limit or not (what happened happened)"
    summary["policy"]["as_logged"] = {
        "jobs_placed": int(len(placed_rows)),
        "jobs_not_placed": dict(sorted(reasons.items())),
        "unmapped_hosts": len(unmapped),
        "unmapped_host_examples": unmapped[:20],
        "unmapped_because": mapping.why_unmapped if unmapped else None,
        "hosts_matched_by_short_name": mapping.by_short_name,
        "jobs_resized_to_logged_hosts": int(resized),
        "jobs_sharing_a_node": len(sharing_rows),
        "jobs_starting_before_submit": int(before_submit),
        "note": "start times and nodes from the log, end = start + logged run time; queue and allocation settings unused",
    }
    result.config = cfg
    return result

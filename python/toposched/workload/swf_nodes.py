"""Extended SWF with node lists (Alea's ``wagap-2013.swf``) and Alea ``.machines`` files.

Alea's extended SWF appends three fields to the 18 standard ones:

====  ===============  ===================================================================
 #    name (errors)    content
====  ===============  ===================================================================
 19   ``node_list``    ``{1241,1241,...}``: the node id of every allocated CPU
 20   ``pbs_queue``    the PBS queue (``q_2h``, ``q_1d``, ``backfill``, ...)
 21   ``pbs_request``  the PBS resource request (``1:ppn=64:x86_64:cl_zewura#excl``)
====  ===============  ===================================================================

:func:`read_swf_with_nodes` reads fields 1-18 with the SWF reader
(:func:`toposched.workload.swf.read_swf`, so every SWF rule, repair and error holds) and
adds the node lists. It is what ``read_trace`` uses for a ``.swf`` file whose first record
has a ``{...}`` 19th field (format ``"swf-nodes"``).

Node ids are whatever the log writes. wagap's (1129-1288, 44 distinct) are
MetaCentrum-wide ids: they are not the positions of nodes in the ``.machines`` clusters
(zewura 20 nodes, zegox 48), and no file says which id is which cluster's node or which
switch it hangs from. ``docs/as-logged.md`` says how we place them on a fabric.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..errors import TraceFormatError
from ._io import is_pipe, open_text, read_bytes, read_once
from .model import COLUMNS, Workload
from .swf import N_FIELDS, read_swf
from .tally import MAX_EXAMPLES, Tally

__all__ = ["AleaCluster", "has_node_lists", "parse_node_list", "read_alea_machines", "read_swf_with_nodes"]

_NODE_LIST_RE = re.compile(r"\{([^{}\s]*)\}\Z")
_NODE_ID_RE = re.compile(r"[A-Za-z0-9_.\-]+\Z")


@dataclass(frozen=True)
class AleaCluster:
    """One line of an Alea ``.machines`` file: ``id name nodes cpus_per_node speed ram``
    (later columns, which some files have, are kept in ``rest``)."""

    id: int
    name: str
    nodes: int
    cpus_per_node: int
    speed: float
    ram: int
    rest: tuple[str, ...] = ()


def read_alea_machines(path: str | Path) -> list[AleaCluster]:
    """The clusters of an Alea ``.machines`` file (blank and ``;``/``#`` lines skipped).

    Raises:
        TraceFormatError: naming the line and column of a malformed line.
    """
    names = ("id", "name", "nodes", "cpus_per_node", "speed", "ram")
    out: list[AleaCluster] = []
    with open_text(path) as fh:
        for line_no, line in enumerate(fh, start=1):
            s = line.strip()
            if not s or s[0] in ";#":
                continue
            t = s.split()
            if len(t) < len(names):
                raise TraceFormatError(str(path), f"expected {len(names)} columns ({' '.join(names)}), found {len(t)}", line=line_no, field=names[len(t)])
            for i, conv in ((0, int), (2, int), (3, int), (4, float), (5, int)):
                if not _convertible(conv, t[i]):
                    raise TraceFormatError(str(path), f"expected a number, got {t[i]!r}", line=line_no, field=names[i])
            out.append(AleaCluster(int(t[0]), t[1], int(t[2]), int(t[3]), float(t[4]), int(t[5]), tuple(t[6:])))
    if not out:
        raise TraceFormatError(str(path), "no clusters found")
    return out


def _convertible(conv: Any, text: str) -> bool:
    try:
        conv(text)
        return True
    except ValueError:
        return False


def parse_node_list(text: str) -> list[str]:
    """Distinct node ids of a ``{n,n,...}`` field, in order of first appearance. ``{}``
    and ``-1`` (unknown) give no nodes.

    Raises:
        ValueError: for anything else.
    """
    if text == "-1":
        return []
    m = _NODE_LIST_RE.match(text)
    if m is None:
        raise ValueError(f"expected a node list like {{12,12,13}}, got {text[:40]!r}")
    body = m.group(1)
    if not body:
        return []
    ids = body.split(",")
    for x in ids:
        if not _NODE_ID_RE.match(x):
            raise ValueError(f"bad node id {x!r} in {text[:40]!r}")
    return list(dict.fromkeys(ids))


def has_node_lists(path: str | Path) -> bool:
    """True when the first record of an SWF file has a ``{...}`` 19th field."""
    try:
        with open_text(path) as fh:
            for line in fh:
                s = line.strip()
                if not s or s.startswith(";"):
                    continue
                t = s.split()
                return len(t) > N_FIELDS and t[N_FIELDS].startswith("{")
    except (OSError, EOFError, zlib.error, TraceFormatError):
        # the reader then says what is wrong (zlib.error, from gzip data corrupt in the
        # first lines, escaped: --stream printed it without the file's name)
        return False
    return False


def _auto_machines(log_path: str) -> Path | None:
    """``<log>.machines`` beside the log; a gzipped log may keep the uncompressed name's."""
    candidates = [Path(log_path + ".machines")]
    if log_path.endswith(".gz"):
        candidates.append(Path(log_path[: -len(".gz")] + ".machines"))
    return next((c for c in candidates if c.exists()), None)


def read_swf_with_nodes(
    path: str | Path,
    *,
    lenient: bool = False,
    cores_per_node: int | None = None,
    size_field: Literal["auto", "allocated", "requested"] = "auto",
    missing_walltime: Literal["runtime"] | int = "runtime",
    missing_runtime: Literal["skip", "zero"] = "skip",
    allow_long_span: bool = False,
    size_from_node_list: bool = True,
    machines: str | Path | None = "auto",
) -> Workload:
    """Read an extended SWF log with per-CPU node lists.

    Fields 1-18 are read by :func:`~toposched.workload.swf.read_swf` with the same
    options. Then, per job:

    * ``extra["logged_hosts"]``: the distinct node ids of field 19, as strings, in order
      of first appearance (empty when the record has no node list, or ``{}``/``-1``);
    * ``extra["logged_nodelist"]``: field 19 as written; ``extra["pbs_queue"]``,
      ``extra["pbs_request"]``: fields 20 and 21 (``""`` when absent);
    * ``extra["logged_start_s"]`` (from the SWF reader): submit + wait.

    With ``size_from_node_list`` (the default) a job's ``nodes`` is its number of distinct
    nodes, which is what it held: wagap's clusters have 80 and 12 CPUs per node, so no
    single ``cores_per_node`` turns its processor counts into nodes. Every job whose size
    changes counts ``repairs["nodes_from_node_list"]``; jobs without a node list keep the
    size from processors. ``settings["node_list_length_differs_from_procs"]`` counts
    records whose list length is not their allocated processor count (field 5).

    ``machines``: an Alea ``.machines`` file; ``"auto"`` uses ``<path>.machines`` when it
    exists (for a gzipped log ``x.swf.gz``, ``x.swf.gz.machines`` or else ``x.swf.machines``,
    the name Alea gives it). Its clusters are recorded in ``settings["machines"]`` (nothing else uses them:
    see the module docstring).

    Raises:
        TraceFormatError: everything :func:`read_swf` raises, and (unless ``lenient``) a
            19th field that is not ``{id,id,...}`` (field ``node_list``).
    """
    spath = str(path)
    if is_pipe(path):
        # fields 1-18 are read by read_swf, the node lists by a second read below: a pipe
        # read twice gives the second read nothing (or waits forever to reopen a FIFO)
        raise TraceFormatError(spath, read_once(path, ", and swf-nodes reads the log twice: save it to a file (or give --format swf, without the node lists)"))
    w = read_swf(
        path,
        lenient=lenient,
        cores_per_node=cores_per_node,
        size_field=size_field,
        missing_walltime=missing_walltime,
        missing_runtime=missing_runtime,
        allow_long_span=allow_long_span,
    )
    data = read_bytes(path)
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.split(b"\n")

    n = len(w)
    line_of = w["line"]
    hosts: list[list[str]] = []
    printed: list[str] = []
    queues: list[str] = []
    requests: list[str] = []
    keep = np.ones(n, dtype=bool)
    tally = Tally(spath, lenient)
    length_differs = 0
    for i in range(n):
        toks = lines[int(line_of[i]) - 1].decode("utf-8", errors="replace").split()
        extra = toks[N_FIELDS:]
        field19 = extra[0] if extra else ""
        bad: str | None = None
        try:
            h = parse_node_list(field19) if field19 else []
        except ValueError as exc:
            bad, h = str(exc), []
        if bad is not None:  # out of the except block: the error is the whole story
            tally.fail(bad, line=int(line_of[i]), field="node_list")
            keep[i] = False
        if field19.startswith("{") and keep[i]:
            per_cpu = field19.count(",") + 1 if len(field19) > 2 else 0
            if per_cpu != int(w["procs"][i]):
                length_differs += 1
        hosts.append(h)
        printed.append(field19)
        queues.append(extra[1] if len(extra) > 1 else "")
        requests.append(" ".join(extra[2:]) if len(extra) > 2 else "")

    cols = {c: w.columns[c].copy() for c in COLUMNS}
    repairs = dict(w.repairs)
    if size_from_node_list:
        counts = np.array([len(h) for h in hosts], dtype=np.int64)
        change = keep & (counts > 0) & (counts != cols["nodes"])
        if change.any():
            repairs["nodes_from_node_list"] = repairs.get("nodes_from_node_list", 0) + int(change.sum())
            cols["nodes"][change] = counts[change]
    extra_cols = dict(w.extra)
    extra_cols.update(logged_hosts=hosts, logged_nodelist=printed, pbs_queue=queues, pbs_request=requests)
    settings = dict(w.settings)
    settings["size_from_node_list"] = bool(size_from_node_list)
    settings.pop("extended_fields_ignored", None)
    settings["node_list_length_differs_from_procs"] = length_differs
    distinct = sorted({x for h in hosts for x in h})
    settings["distinct_node_ids"] = len(distinct)
    mpath = _auto_machines(spath) if machines == "auto" else (Path(machines) if machines else None)
    if mpath is not None:
        clusters = read_alea_machines(mpath)
        settings["machines"] = {
            "source": str(mpath),
            "clusters": [{"id": c.id, "name": c.name, "nodes": c.nodes, "cpus_per_node": c.cpus_per_node} for c in clusters],
            "note": "node ids of the log are not positions in these clusters; see docs/as-logged.md",
        }
    skipped = dict(w.skipped)
    if lenient:
        settings["lenient_examples"] = (list(settings.get("lenient_examples", [])) + tally.examples)[:MAX_EXAMPLES]
    out = Workload(
        columns=cols,
        source=w.source,
        format="swf-nodes",
        time_origin_epoch_s=w.time_origin_epoch_s,
        header=dict(w.header),
        repairs=repairs,
        skipped=skipped,
        records=w.records,
        settings=settings,
        extra=extra_cols,
    )
    if not keep.all():
        out = out._subset(np.flatnonzero(keep))  # counted as malformed_line below
        out.skipped["malformed_line"] = out.skipped.get("malformed_line", 0) + tally.malformed
    return out

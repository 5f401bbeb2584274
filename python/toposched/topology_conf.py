"""Slurm ``topology.conf`` (topology/tree plugin) read into a :class:`FabricSpec`.

A ``topology.conf`` describes a *logical* tree of switches, one switch per line::

    SwitchName=IBN Nodes=n[001-100],gn[001-002]      # a leaf switch and its nodes
    SwitchName=TOP Switches=IBN,IBM,IBG              # an upper switch and its children

Keys are case-insensitive (as in Slurm) and may have blanks around ``=``; other keys
(``LinkSpeed=``) are ignored; ``#`` starts a comment; a line ending in ``\\`` continues on
the next, which follows right where the backslash was (Slurm's joining). Node and switch lists are
Slurm host lists (``circe-n[017-018,021-036]``, ``ibswitch[0-2]``).

How the tree maps onto our 2- and 3-level fat-trees (levels counted as Slurm does: a
leaf is level 0, a parent is one more than its highest child):

* only leaf switches, no upper switch: one pod of all leaves under a *virtual* root
  (levels=2). Slurm itself would not let a job span leaves with no common ancestor
  (unless ``TopologyParam=TopoOptional``); a note in the spec says so.
* leaves under one top switch: levels=2, one pod named after the top switch.
* leaves under pod switches under one root: levels=3, the pods are the middle switches.
  A leaf hanging directly off the root becomes a pod of one leaf (with a note).
* several top switches (no common root): joined under a virtual root, with a note; the
  top switches become pods (levels=3), or, when every root is itself a leaf, see above.
* deeper trees are refused: only 2- and 3-level fat-trees are modelled.

What Slurm refuses (or only warns about) is refused here, with the file, line and key:
a switch under two parents, a loop, a switch with both ``Nodes=`` and ``Switches=`` or
with neither, a ``Switches=`` entry naming no defined switch, a duplicate ``SwitchName``,
a node on two leaves (Slurm warns "Multiple leaf switches contain nodes"; ``lenient=True``
keeps such a node on the first leaf that lists it and records a note), a malformed line.

``topology.conf`` says nothing about links, so the spec's ``uplinks_*`` stay None (full
bisection).
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from pathlib import Path

import hostlist

from .limits import MAX_FABRIC_NODES
from .errors import TopologyError
from .fabric_spec import FabricSpec, LeafSpec, PodSpec

__all__ = ["read_topology_conf", "read_topology_conf_text"]

VIRTUAL_ROOT = "virtual-root"
_SPAN_NOTE = "Slurm itself would not let a job span them unless TopologyParam=TopoOptional"
_MAX_LISTED = 8  # switches named in a note before "..."


@dataclass
class _Switch:
    name: str
    line: int
    nodes: list[str] | None = None
    children: list[str] | None = None
    parent: str | None = None
    level: int = -1
    keys: dict[str, str] = field(default_factory=dict)  # lower-case key -> key as written


#: Keys of slurm.conf lines (lower case), to tell a slurm.conf given for a topology.conf.
_SLURM_CONF_KEYS = frozenset(
    {"clustername", "slurmctldhost", "controlmachine", "nodename", "partitionname", "schedulertype", "selecttype", "topologyplugin", "slurmuser", "authtype"}
)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line, text) per logical line: comments cut, continuations joined."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    # Split on '\n' only, so line numbers are the ones an editor shows.
    for no, raw in enumerate(text.split("\n"), start=1):
        raw = raw.rstrip("\r")
        # '#' starts a comment; Slurm's parser honours '\#' as a literal '#'.
        cut = []
        i = 0
        while i < len(raw):
            ch = raw[i]
            if ch == "\\" and i + 1 < len(raw) and raw[i + 1] == "#":
                cut.append("#")
                i += 2
                continue
            if ch == "#":
                break
            cut.append(ch)
            i += 1
        line = "".join(cut)
        if not pending:
            start = no
        # Slurm (parse_config.c, _strip_continuation): an odd number of backslashes at
        # the end (trailing blanks after them ignored) continues the line; the
        # backslash goes and the next line is appended as it is, with no blank put
        # between ('Nodes=n[1-4],\' then 'n[5-8]' is 'Nodes=n[1-4],n[5-8]').
        body = line.rstrip()
        stripped = body.rstrip("\\")
        if (len(body) - len(stripped)) % 2 == 1:
            pending.append(body[:-1])
            continue
        pending.append(line)
        out.append((start, "".join(pending)))
        pending = []
    if pending:
        out.append((start, "".join(pending)))
    return out


def _hostlist_size(value: str) -> int:
    """How many names a host list expands to, counted without expanding it (a typo such as
    ``n[1-99999999]`` would otherwise fill the memory). Malformed parts count as one: the
    expansion then reports them."""
    total, depth = 0, 0
    item: list[str] = []
    for ch in value + ",":
        if ch == "," and depth == 0:
            size = 1
            for group in re.findall(r"\[([^\]]*)\]", "".join(item)):
                count = 0
                for part in group.split(","):
                    lo, sep, hi = part.partition("-")
                    count += int(hi) - int(lo) + 1 if sep and lo.isdigit() and hi.isdigit() and int(hi) >= int(lo) else 1
                size *= max(count, 1)
            total += size
            item = []
            continue
        depth += ch == "["
        depth -= ch == "]"
        item.append(ch)
    return total


def _expand(path: str, value: str, line: int, key: str, what: str) -> list[str]:
    """Expand a Slurm host list (``what``: "node" or "switch") and refuse repeats."""
    size = _hostlist_size(value)
    if size > MAX_FABRIC_NODES:
        raise TopologyError(
            path, f"the host list names {size:,} {what}s, more than the {MAX_FABRIC_NODES:,} toposched supports (docs/reliability.md)", line=line, field=key
        )
    # python-hostlist refuses ranges of more than its MAX_SIZE (100,000) names ("range too
    # large"); the count above already bounds this list by the fabric limit
    limit = hostlist.MAX_SIZE
    hostlist.MAX_SIZE = max(limit, MAX_FABRIC_NODES)
    try:
        names: list[str] = hostlist.expand_hostlist(value, allow_duplicates=True)  # hostlist is untyped
    except hostlist.BadHostlist as exc:
        raise TopologyError(path, f"bad host list {value!r}: {exc}", line=line, field=key) from None
    finally:
        hostlist.MAX_SIZE = limit
    if not names:
        raise TopologyError(path, f"{key}= lists no {what}s" if what == "node" else f"{key}= lists no switches", line=line, field=key)
    seen: set[str] = set()
    for n in names:
        if "=" in n:
            # "Nodes=n[1-4],Switches=s2": a comma where a space belongs made a key part of
            # the list; no host or switch name holds '='
            raise TopologyError(
                path, f"{what} name {n!r} holds '=': separate keys with spaces, not commas", line=line, field=key
            )
        if n in seen:
            raise TopologyError(path, f"{what} {n!r} is listed twice", line=line, field=key)
        seen.add(n)
    return names


#: A token of a switch line: runs of non-blanks, with double-quoted parts kept whole.
_QUOTED_OR_BARE = re.compile(r'(?:[^\s"]+|"[^"]*")+')


def _parse(path: str, text: str, lenient: bool, notes: list[str]) -> dict[str, _Switch]:
    switches: dict[str, _Switch] = {}
    node_leaf: dict[str, str] = {}  # node -> leaf that holds it
    dropped: dict[tuple[str, str], list[str]] = {}  # (first leaf, later leaf) -> nodes
    for line, content in _logical_lines(text):
        # Slurm's key=value pattern allows blanks around '=' ('SwitchName = s0', as
        # slurm.conf files often write 'SlurmctldHost = master1'); an empty value before
        # the next key stays empty ('SwitchName= Nodes=n1': SwitchName= is empty)
        # A double-quoted value is one token, blanks and all (Nodes="n1, n2": Slurm's
        # hostlists take blanks, tabs and commas as separators); it was cut at its blank
        if content.count('"') % 2:
            raise TopologyError(path, f"a double quote is not closed: {content.strip()!r}", line=line)
        tokens = _QUOTED_OR_BARE.findall(re.sub(r"\s*=\s*(?![A-Za-z0-9_.]+\s*=)", "=", content))
        if not tokens:
            continue
        if tokens[0].lower() == "include":
            # Slurm reads the named file in its place; this reader does not (it was
            # "expected Key=value, got 'Include'")
            raise TopologyError(
                path, f"Include lines are not read here: copy the switch lines of {' '.join(tokens[1:]) or 'the included file'} into this file",
                line=line, field=tokens[0],
            )
        pairs: dict[str, tuple[str, str]] = {}  # lower key -> (key as written, value)
        for tok in tokens:
            bad = re.search("[\udc80-\udcff]", tok)
            if bad:
                # bytes that are not UTF-8 (a Latin-1 'ä'): replaced by U+FFFD, 'nä1' and
                # 'nö1' were one node 'n\ufffd1' ("listed twice"); comments may hold them
                raw = tok.encode("utf-8", "surrogateescape")
                raise TopologyError(
                    path, f"{raw!r} holds bytes that are not UTF-8: save the file as UTF-8",
                    line=line, field=tok.split("=", 1)[0] if "=" in tok else None,
                )
            if "=" not in tok:
                hint = " (this looks like a slurm.conf: --system takes the topology.conf beside it)" if tok.lower() in _SLURM_CONF_KEYS else ""
                raise TopologyError(path, f"expected Key=value, got {tok!r}{hint}", line=line)
            key, value = tok.split("=", 1)
            low = key.lower()
            if low in pairs:
                raise TopologyError(path, f"{key}= is given twice on this line", line=line, field=key)
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                # Slurm's parser (parse_config.c, keyvalue_pattern) takes a value in double
                # quotes without them, and any other value as written: single quotes are
                # part of a name ('s1' was read as s1 on its SwitchName= line, and as 's1
                # in a Switches= list, where Slurm has 's1' in both)
                value = value[1:-1]
                if low in ("nodes", "switches"):
                    # a list: Slurm's hostlist separators (hostlist.c, "\t, "), empty
                    # entries skipped, as commas for the hostlist reader
                    value = ",".join(re.split(r"[\t ,]+", value.strip(" \t,")))
            pairs[low] = (key, value)
        if "switchname" not in pairs:
            hint = ""
            if "blockname" in pairs:
                hint = " (BlockName= lines are for topology/block, which is not a tree)"
            elif pairs.keys() & _SLURM_CONF_KEYS:
                hint = " (this looks like a slurm.conf: --system takes the topology.conf beside it)"
            raise TopologyError(
                path, f"a line must start a switch with SwitchName=, got {content.strip()!r}{hint}", line=line
            )
        key, name = pairs["switchname"]
        if not name:
            raise TopologyError(path, "SwitchName= is empty", line=line, field=key)
        if name in switches:
            raise TopologyError(
                path, f"switch {name!r} is already defined on line {switches[name].line}", line=line, field=key
            )
        sw = _Switch(name=name, line=line, keys={k: v[0] for k, v in pairs.items()})
        has_nodes, has_switches = "nodes" in pairs, "switches" in pairs
        if has_nodes and has_switches:
            raise TopologyError(
                path,
                f"switch {name!r} has both Nodes= and Switches=; in Slurm's tree a switch holds "
                "either nodes (a leaf) or switches",
                line=line,
                field=pairs["switches"][0],
            )
        if not has_nodes and not has_switches:
            raise TopologyError(
                path, f"switch {name!r} has neither Nodes= nor Switches=", line=line, field=key
            )
        if has_nodes:
            nkey, value = pairs["nodes"]
            if len(node_leaf) + _hostlist_size(value) > MAX_FABRIC_NODES:
                raise TopologyError(
                    path, f"the file names more than the {MAX_FABRIC_NODES:,} nodes toposched supports (docs/reliability.md)", line=line, field=nkey
                )
            nodes = _expand(path, value, line, nkey, "node")
            kept = []
            for n in nodes:
                other = node_leaf.get(n)
                if other is None:
                    node_leaf[n] = name
                    kept.append(n)
                    continue
                if not lenient:
                    raise TopologyError(
                        path,
                        f"node {n!r} is already on leaf switch {other!r} (line {switches[other].line}); "
                        "a node hangs off one leaf (Slurm only warns: 'Multiple leaf switches contain "
                        "nodes'). Fix the file, or give --lenient (lenient=True from Python) to keep each "
                        "node on the first leaf that lists it",
                        line=line,
                        field=nkey,
                    )
                dropped.setdefault((other, name), []).append(n)
            if not kept:
                raise TopologyError(
                    path, f"leaf switch {name!r} has no nodes left: all are on earlier leaves", line=line, field=nkey
                )
            sw.nodes = kept
        else:
            skey, value = pairs["switches"]
            sw.children = _expand(path, value, line, skey, "switch")
        switches[name] = sw
    if not switches:
        raise TopologyError(path, "no switches found (expected lines like SwitchName=s0 Nodes=n[01-16])")
    for (first, later), nodes in dropped.items():
        notes.append(
            f"{hostlist.collect_hostlist(nodes)} listed on leaf {first} (line {switches[first].line}) and "
            f"again on leaf {later} (line {switches[later].line}): kept on {first} only (lenient)"
        )
    return switches


def _link(path: str, switches: dict[str, _Switch]) -> None:
    """Set parents; refuse undefined children, two parents and loops."""
    for sw in switches.values():
        if sw.children is None:
            continue
        key = sw.keys["switches"]
        for child in sw.children:
            c = switches.get(child)
            if c is None:
                raise TopologyError(
                    path, f"switch {child!r} is not defined (no SwitchName={child} line)", line=sw.line, field=key
                )
            if c.parent is not None:
                first = switches[c.parent]
                raise TopologyError(
                    path,
                    f"switch {child!r} is already under {first.name!r} (line {first.line}); a switch "
                    "has one parent in Slurm's tree",
                    line=sw.line,
                    field=key,
                )
            c.parent = sw.name
    order = {name: i for i, name in enumerate(switches)}
    done: set[str] = set()
    for sw in switches.values():
        path_: list[str] = []
        on_path: set[str] = set()
        cur: str | None = sw.name
        while cur is not None and cur not in done:
            if cur in on_path:
                cycle = path_[path_.index(cur):]  # child -> parent order
                cycle.reverse()  # parent -> child: "A -> B" means A lists B
                k = min(range(len(cycle)), key=lambda i: order[cycle[i]])
                cycle = cycle[k:] + cycle[:k]
                head = switches[cycle[0]]
                raise TopologyError(
                    path,
                    "loop: " + " -> ".join(cycle + [cycle[0]]) + " (a switch cannot be its own ancestor)",
                    line=head.line,
                    field=head.keys["switches"],
                )
            path_.append(cur)
            on_path.add(cur)
            cur = switches[cur].parent
        done.update(path_)


def _levels(switches: dict[str, _Switch]) -> None:
    """Slurm's levels: a leaf is 0, a parent one more than its highest child.

    Iterative (children before parents), so that a long chain of switches cannot exhaust
    Python's recursion limit before the depth check refuses it.
    """
    for root in (sw for sw in switches.values() if sw.parent is None):
        stack = [(root, False)]
        while stack:
            sw, expanded = stack.pop()
            if sw.children is None:
                sw.level = 0
            elif expanded:
                sw.level = 1 + max(switches[c].level for c in sw.children)
            else:
                stack.append((sw, True))
                stack.extend((switches[c], False) for c in sw.children)


def _deepest_path(switches: dict[str, _Switch], root: str) -> list[str]:
    out = [root]
    sw = switches[root]
    while sw.children:
        nxt = max(sw.children, key=lambda c: switches[c].level)  # first of the deepest
        out.append(nxt)
        sw = switches[nxt]
    return out


def _chain(names: list[str]) -> str:
    """'a -> b -> c', the middle of a long chain cut (a 500-level tree named every switch)."""
    if len(names) <= _MAX_LISTED:
        return " -> ".join(names)
    return " -> ".join(names[:4]) + f" -> ... ({len(names) - 6} more) -> " + " -> ".join(names[-2:])


def _leaf(sw: _Switch) -> LeafSpec:
    return LeafSpec(name=sw.name, nodes=list(sw.nodes or []))


def _listed(names: list[str]) -> str:
    if len(names) <= _MAX_LISTED:
        return ", ".join(names)
    return ", ".join(names[:_MAX_LISTED]) + f", ... ({len(names)} in all)"


def _build(path: str, switches: dict[str, _Switch], name: str, notes: list[str]) -> FabricSpec:
    roots = [sw for sw in switches.values() if sw.parent is None]
    top = max(r.level for r in roots)
    if top >= 3:
        deepest = max(roots, key=lambda r: r.level)
        raise TopologyError(
            path,
            f"only 2- and 3-level fat-trees are modelled (leaf, pod and top switches); this tree has "
            f"{top + 1} switch levels: " + _chain(_deepest_path(switches, deepest.name)),
            line=deepest.line,
            field=deepest.keys["switches"],
        )

    pods: list[PodSpec] = []
    if top == 0:
        # Only leaves: in file order, joined under a virtual root.
        leaves = [_leaf(sw) for sw in roots]
        if len(roots) == 1:
            pods = [PodSpec(name=roots[0].name, leaves=leaves)]
            notes.append(f"a single leaf switch ({roots[0].name}): every job fits under it")
        else:
            pods = [PodSpec(name=VIRTUAL_ROOT, leaves=leaves)]
            notes.append(f"no common top switch: {len(roots)} leaves joined under a virtual root; {_SPAN_NOTE}")
        levels = 2
    elif top == 1 and len(roots) == 1:
        root = roots[0]
        pods = [PodSpec(name=root.name, leaves=[_leaf(switches[c]) for c in root.children or []])]
        levels = 2
    else:
        levels = 3
        lone: list[str] = []
        for r in roots:
            if r.level == 2:
                for c in r.children or []:
                    child = switches[c]
                    if child.level == 1:
                        pods.append(PodSpec(name=child.name, leaves=[_leaf(switches[g]) for g in child.children or []]))
                    else:
                        pods.append(PodSpec(name=child.name, leaves=[_leaf(child)]))
                        lone.append(f"{child.name} (under {r.name})")
            elif r.level == 1:
                pods.append(PodSpec(name=r.name, leaves=[_leaf(switches[c]) for c in r.children or []]))
            else:
                pods.append(PodSpec(name=r.name, leaves=[_leaf(r)]))
                lone.append(f"{r.name} (no parent)")
        if len(roots) > 1:
            notes.append(
                f"no common top switch: {len(roots)} top switches ({_listed([r.name for r in roots])}) joined "
                f"under a virtual root; {_SPAN_NOTE}"
            )
        if lone:
            notes.append(
                "leaf switches with no pod switch above them, each modelled as a pod of one leaf: " + _listed(lone)
            )
        sizes = [len(p.leaves) for p in pods]
        if len(set(sizes)) > 1:
            notes.append(
                f"pods have unequal numbers of leaves: {min(sizes)} to {max(sizes)} "
                f"({_listed([f'{p.name}: {len(p.leaves)}' for p in pods])})"
            )

    leaves = [leaf for p in pods for leaf in p.leaves]
    sizes = [len(leaf.nodes) for leaf in leaves]
    if len(set(sizes)) > 1:
        notes.append(
            f"leaf switches have unequal numbers of nodes: {min(sizes)} to {max(sizes)} "
            f"({_listed([f'{leaf.name}: {len(leaf.nodes)}' for leaf in leaves])})"
        )
    return FabricSpec(name=name, pods=pods, levels=levels, source=path, notes=notes)


def read_topology_conf_text(
    text: str, path: str = "<string>", *, name: str | None = None, lenient: bool = False
) -> FabricSpec:
    """Build a :class:`FabricSpec` from the text of a ``topology.conf``.

    Args:
        text: the file's content.
        path: what to call the file in errors and in ``FabricSpec.source``.
        name: the fabric's name; defaults to the stem of ``path``.
        lenient: keep a node listed on several leaves on the first one (with a note)
            instead of refusing the file.

    Raises:
        TopologyError: naming the file, line and key at fault (see the module docstring).
    """
    # A leading byte-order mark (an editor's "UTF-8 with BOM") is not part of the first key;
    # the PBS reader drops it the same way.
    if text.startswith("\ufeff"):
        text = text[1:]
    notes: list[str] = []
    switches = _parse(path, text, lenient, notes)
    _link(path, switches)
    _levels(switches)
    return _build(path, switches, name or Path(path).stem, notes)


def read_topology_conf(path: str | Path, *, name: str | None = None, lenient: bool = False) -> FabricSpec:
    """Read a Slurm ``topology.conf`` file into a :class:`FabricSpec`.

    See :func:`read_topology_conf_text` and the module docstring for the rules.
    """
    p = Path(path)
    if not p.exists():
        raise TopologyError(str(p), "no such file")
    if p.is_dir():
        raise TopologyError(str(p), "is a directory, not a topology.conf file")
    # surrogateescape: bytes that are not UTF-8 stay distinct; _parse refuses them outside comments
    text = p.read_bytes().decode("utf-8", errors="surrogateescape")
    return read_topology_conf_text(text, str(p), name=name, lenient=lenient)

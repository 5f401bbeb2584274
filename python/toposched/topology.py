"""Fabrics: presets, fat-trees from parameters, Slurm ``topology.conf`` files.

``load_fabric(text)`` accepts what ``--system`` does:

* a preset name: ``toy18``, ``hype``, ``cab``, ``pinot``, ``sim10k``, ``quartz``
  (``toposched systems`` lists them with their shapes);
* parameters: ``fattree:K=18,S=18,P=4`` with optional ``W1=`` (uplinks per leaf, i.e. taper),
  ``W2=`` (uplinks per L2 switch) and ``nodes=`` (populate only the first N nodes, leaf by
  leaf: partly populated fabrics). Long names work too: ``nodes_per_leaf``,
  ``leaves_per_pod``, ``pods``, ``uplinks_per_leaf``, ``uplinks_per_l2``. One pod gives a
  2-level tree, e.g. ``fattree:K=20,S=5,P=1`` for KTH's 100-node SP2;
* a path to a Slurm ``topology.conf``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .limits import MAX_FABRIC_NODES
from .errors import TopologyError
from .fabric_spec import FabricSpec, LeafSpec, PodSpec

if TYPE_CHECKING:
    from . import _core

# Shapes of the presets, (K, S, P, W1, W2) or an explicit pod list; the Rust core holds
# the same table (crates/toposched-core/src/topology.rs) and a test checks they agree.
_PRESET_NOTES = {
    "toy18": "SC18 paper Fig. 2 tree: 2 pods x 3 leaves x 3 nodes (radix-6 switches)",
    "hype": "flux-sched plugin test machine: 3 pods x 4 leaves x 8 nodes, nodes hype1..hype96",
    "cab": "LLNL Cab as modelled in SC18: 4 pods x 18 leaves x 18 nodes = 1,296",
    "pinot": "SC18's hypothetical Pinot: 8 pods x 18 x 18 = 2,592",
    "sim10k": "CODES study fabric: 22 pods x 22 leaves x 22 nodes = 10,648",
    "quartz": "LLNL Quartz: 84 leaves x 32 nodes = 2,688, 2:1 taper (W1=16); pods: 4 x 9 leaves + 6 x 8 leaves (assumed)",
}
PRESETS = tuple(_PRESET_NOTES)

_PARAM_NAMES = {
    "k": "nodes_per_leaf",
    "nodes_per_leaf": "nodes_per_leaf",
    "s": "leaves_per_pod",
    "leaves_per_pod": "leaves_per_pod",
    "p": "pods",
    "pods": "pods",
    "w1": "uplinks_per_leaf",
    "uplinks_per_leaf": "uplinks_per_leaf",
    "w2": "uplinks_per_l2",
    "uplinks_per_l2": "uplinks_per_l2",
    "nodes": "nodes",
}


def _names(prefix: str, count: int) -> list[str]:
    """prefix0..prefix{count-1}, zero-padded so that name order is index order."""
    width = len(str(count - 1))
    return [f"{prefix}{i:0{width}d}" for i in range(count)]


def regular_spec(
    name: str,
    nodes_per_leaf: int,
    leaves_per_pod: int,
    pods: int,
    uplinks_per_leaf: int | None = None,
    uplinks_per_l2: int | None = None,
    nodes: int | None = None,
    node_prefix: str | None = None,
) -> FabricSpec:
    """A regular fat-tree, optionally populated only up to ``nodes`` nodes."""
    for label, v in (("nodes per leaf (K)", nodes_per_leaf), ("leaves per pod (S)", leaves_per_pod), ("pods (P)", pods)):
        if v < 1:
            raise TopologyError(name, f"{label} must be at least 1, got {v}")
    total = nodes_per_leaf * leaves_per_pod * pods
    if nodes is not None and not 1 <= nodes <= total:
        raise TopologyError(name, f"nodes={nodes} must be between 1 and K*S*P = {total}")
    want = total if nodes is None else nodes
    # A name ending in a digit gets a separator so that node numbers stay readable.
    prefix = node_prefix or (name + "n" if name[-1:].isdigit() else name)
    node_names = _names(prefix, want)
    pod_names = _names("pod", pods)
    leaf_names = _names("leaf", leaves_per_pod * pods)
    spec_pods: list[PodSpec] = []
    i = 0
    for p in range(pods):
        leaves = []
        for s in range(leaves_per_pod):
            take = min(nodes_per_leaf, want - i)
            if take <= 0:
                break
            leaves.append(LeafSpec(leaf_names[p * leaves_per_pod + s], node_names[i : i + take]))
            i += take
        if leaves:
            spec_pods.append(PodSpec(pod_names[p], leaves))
    notes = []
    if nodes is not None and nodes < total:
        notes.append(f"partly populated: {nodes} of {total} node ports used")
    return FabricSpec(
        name=name,
        pods=spec_pods,
        levels=2 if len(spec_pods) == 1 and pods == 1 else 3,
        uplinks_per_leaf=uplinks_per_leaf,
        uplinks_per_l2=uplinks_per_l2,
        notes=notes,
    )


def preset_spec(name: str) -> FabricSpec:
    """The :class:`FabricSpec` of a preset."""
    if name == "toy18":
        spec = regular_spec("toy18", 3, 3, 2)
    elif name == "hype":
        spec = regular_spec("hype", 8, 4, 3)
        # The plugin's node names, hype1..hype96, unpadded: node names never enter
        # tie-breaks (leaf and pod names do, and those stay padded).
        for k, leaf in enumerate(leaf for pod in spec.pods for leaf in pod.leaves):
            leaf.nodes = [f"hype{k * 8 + j + 1}" for j in range(8)]
    elif name == "cab":
        spec = regular_spec("cab", 18, 18, 4)
    elif name == "pinot":
        spec = regular_spec("pinot", 18, 18, 8)
    elif name == "sim10k":
        spec = regular_spec("sim10k", 22, 22, 22)
    elif name == "quartz":
        node_names = _names("quartz", 2688)
        leaf_names = _names("leaf", 84)
        pod_names = _names("pod", 10)
        pods = []
        first_leaf = 0
        for p, n_leaves in enumerate([9] * 4 + [8] * 6):
            leaves = [LeafSpec(leaf_names[i], node_names[i * 32 : (i + 1) * 32]) for i in range(first_leaf, first_leaf + n_leaves)]
            first_leaf += n_leaves
            pods.append(PodSpec(pod_names[p], leaves))
        spec = FabricSpec("quartz", pods, levels=3, uplinks_per_leaf=16, uplinks_per_l2=9)
    else:
        raise TopologyError(name, f"unknown system preset; presets are: {', '.join(PRESETS)}")
    spec.notes.insert(0, _PRESET_NOTES[name])
    return spec


def parse_fattree_params(text: str) -> FabricSpec:
    """``fattree:K=18,S=18,P=4[,W1=9][,W2=18][,nodes=1000]`` into a spec."""
    body = text.split(":", 1)[1] if ":" in text else ""
    params: dict[str, int] = {}
    for item in filter(None, (x.strip() for x in body.split(","))):
        key, sep, value = item.partition("=")
        canon = _PARAM_NAMES.get(key.strip().lower())
        if not sep or canon is None:
            raise TopologyError(
                text, f"cannot read {item!r}: expected KEY=VALUE with KEY one of K, S, P, W1, W2, nodes", field=key.strip() or None
            )
        if canon in params:
            raise TopologyError(text, f"{key.strip()} is given twice", field=key.strip())
        # ASCII digits only: int() would also read '1_000' and other scripts' digits
        if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", value):
            raise TopologyError(text, f"expected a whole number, got {value!r}", field=key.strip())
        params[canon] = int(value)
        if not 1 <= params[canon] <= MAX_FABRIC_NODES:
            raise TopologyError(text, f"must be between 1 and {MAX_FABRIC_NODES:,}, got {params[canon]}", field=key.strip())
    missing = [k for k in ("nodes_per_leaf", "leaves_per_pod", "pods") if k not in params]
    if missing:
        raise TopologyError(text, "missing " + ", ".join(missing) + " (write e.g. fattree:K=18,S=18,P=4)")
    total = params["nodes_per_leaf"] * params["leaves_per_pod"] * params["pods"]
    if total > MAX_FABRIC_NODES:
        raise TopologyError(text, f"K x S x P = {total:,} nodes, more than the {MAX_FABRIC_NODES:,} toposched supports (docs/reliability.md)")
    if params.get("nodes", 0) > total:
        raise TopologyError(text, f"{params['nodes']} nodes do not fit in K x S x P = {total:,} node ports", field="nodes")
    # More uplinks than the switch below has downlinks add nothing its nodes (leaves) can
    # use; such a spec is most likely K and W1 (S and W2) swapped. W1 = K, W2 = S (the
    # defaults) are full bisection, below that the tree is tapered (docs/fabrics.md).
    for up, down, what, below in (("uplinks_per_leaf", "nodes_per_leaf", "leaf", "nodes"), ("uplinks_per_l2", "leaves_per_pod", "L2 switch", "leaves")):
        if params.get(up, 0) > params[down]:
            short = {"uplinks_per_leaf": "W1", "uplinks_per_l2": "W2", "nodes_per_leaf": "K", "leaves_per_pod": "S"}
            raise TopologyError(
                text,
                f"{params[up]} uplinks per {what} is more than its {params[down]} {below} ({short[down]}): "
                f"{short[up]} = {short[down]} (the default) is full bisection, {short[up]} < {short[down]} a taper",
                field=short[up],
            )
    name = f"fattree-{params['nodes_per_leaf']}x{params['leaves_per_pod']}x{params['pods']}"
    return regular_spec(name, params["nodes_per_leaf"], params["leaves_per_pod"], params["pods"],
                        uplinks_per_leaf=params.get("uplinks_per_leaf"), uplinks_per_l2=params.get("uplinks_per_l2"),
                        nodes=params.get("nodes"))


def load_spec(system: str, *, lenient: bool = False) -> FabricSpec:
    """What ``--system`` names, as a :class:`FabricSpec`. ``lenient`` lets a topology.conf
    that lists a node on two leaves load (first leaf wins, noted in the spec)."""
    if system in _PRESET_NOTES:
        return preset_spec(system)
    if not system.strip():  # the message named an empty location (": not a preset, ...")
        raise TopologyError("--system", f"empty ({system!r}): give a preset ({', '.join(PRESETS)}), fattree:K=..,S=..,P=.. parameters, or a topology.conf file")
    if system.lower().startswith("fattree:"):
        return parse_fattree_params(system)
    path = Path(system)
    if path.is_file():
        # before the 'fattree' test below: a topology.conf may be called fattree-site.conf
        from .topology_conf import read_topology_conf

        return read_topology_conf(path, lenient=lenient)
    if system.lower().startswith("fattree"):
        return parse_fattree_params(system)  # 'fattree' alone, 'fattreeK=..': says what is missing
    near = system.strip().lower()
    raise TopologyError(
        system,
        "not a preset, fattree:K=..,S=..,P=.. parameters, or an existing topology.conf file; presets are: " + ", ".join(PRESETS)
        # "cab " or "Cab": the blank is invisible in the message, and nothing said case matters
        + (f"; did you mean {near!r}? (got {system!r}: preset names are lower case, without blanks)" if near in _PRESET_NOTES else ""),
    )


@dataclass
class Fabric:
    """A fabric: its spec (names) and the core's topology (numbers)."""

    spec: FabricSpec
    core: _core.Topology

    @classmethod
    def from_spec(cls, spec: FabricSpec) -> "Fabric":
        from . import _core

        sizes = [[len(leaf.nodes) for leaf in pod.leaves] for pod in spec.pods]
        leaf_names = [leaf.name for pod in spec.pods for leaf in pod.leaves]
        pod_names = [pod.name for pod in spec.pods]
        try:
            core = _core.Topology.from_leaf_sizes(
                spec.name, spec.levels, sizes, spec.uplinks_per_leaf, spec.uplinks_per_l2, leaf_names, pod_names
            )
        except ValueError as exc:
            raise TopologyError(spec.source or spec.name, str(exc)) from None
        return cls(spec, core)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def leaf_of_node(self) -> "np.ndarray":
        """Leaf index of every node id (int32 array)."""
        return self.core.leaf_of_nodes()

    @property
    def pod_of_leaf(self) -> "np.ndarray":
        """Pod index of every leaf (int32 array)."""
        return self.core.pod_of_leaves()

    @property
    def n_nodes(self) -> int:
        return int(self.core.n_nodes)

    def __repr__(self) -> str:
        c = self.core
        taper = f", {c.uplinks_per_leaf} uplinks per leaf" if c.uplinks_per_leaf is not None else ""
        return f"Fabric({self.spec.name}: {c.n_nodes:,} nodes, {c.n_leaves} leaves of {c.nodes_per_leaf}, {c.n_pods} pods, {c.levels} levels{taper})"

    def _repr_html_(self) -> str:
        import html

        c = self.core
        rows = [("nodes", f"{c.n_nodes:,}"), ("leaf switches", f"{c.n_leaves} of {c.nodes_per_leaf} nodes"), ("pods", f"{c.n_pods}"), ("levels", f"{c.levels}")]
        if c.uplinks_per_leaf is not None:
            rows.append(("uplinks per leaf", f"{c.uplinks_per_leaf}"))
        rows += [("source", self.spec.source or "built-in")] + [("note", n) for n in self.spec.notes]
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
        return f"<table><caption>Fabric {html.escape(self.spec.name)}</caption>{body}</table>"

    def describe(self) -> dict[str, Any]:
        """Everything needed to interpret node ids in the outputs (written as fabric.json)."""
        c = self.core
        return {
            "name": self.spec.name,
            "source": self.spec.source,
            "levels": c.levels,
            "nodes": c.n_nodes,
            "leaves": c.n_leaves,
            "pods": c.n_pods,
            "nodes_per_leaf": c.nodes_per_leaf,
            "leaves_per_pod": c.leaves_per_pod,
            "max_pod_nodes": c.max_pod_nodes,
            "uplinks_per_leaf": c.uplinks_per_leaf,
            "uplinks_per_l2": c.uplinks_per_l2,
            "notes": list(self.spec.notes),
            "pod_names": [p.name for p in self.spec.pods],
            "leaf_names": [leaf.name for p in self.spec.pods for leaf in p.leaves],
            "leaf_pod": [int(x) for x in c.pod_of_leaves()],
            "node_names": self.spec.node_names,
            "node_leaf": [int(x) for x in c.leaf_of_nodes()],
        }


def load_fabric(system: str | os.PathLike[str], *, lenient: bool = False) -> Fabric:
    """Build the fabric ``--system`` names (see the module docstring): a preset name,
    ``fattree:K=..,S=..,P=..`` parameters, or a topology.conf path (a ``str`` or a
    ``pathlib.Path``)."""
    if isinstance(system, os.PathLike):
        system = os.fspath(system)
    if not isinstance(system, str):
        # a Path, an int or None failed in load_spec with "... has no attribute 'lower'"
        raise TypeError(f"load_fabric(): system must be a preset name, fattree:K=..,S=..,P=.. parameters or a topology.conf path, got {type(system).__name__} {system!r:.60}")
    if not isinstance(lenient, bool):  # "no" is truthy: the file was read leniently
        raise ValueError(f"load_fabric(): lenient must be True or False, got {lenient!r}")
    return Fabric.from_spec(load_spec(system, lenient=lenient))

"""A fabric described as data: pods of leaf switches of named nodes.

Every way of naming a fabric (a preset, parameters on the command line, a Slurm
``topology.conf``) ends as a :class:`FabricSpec`, which :mod:`toposched.topology` turns
into the core's ``Topology``. Leaves and pods keep the order they are given in: node ids
are dense and leaf-major in that order (node 0 is the first node of the first leaf of the
first pod).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LeafSpec:
    """One leaf (L1) switch and the compute nodes cabled to it, in port order."""

    name: str
    nodes: list[str]


@dataclass
class PodSpec:
    """One pod: the leaves that share a set of L2 switches."""

    name: str
    leaves: list[LeafSpec]


@dataclass
class FabricSpec:
    """A 2- or 3-level fat-tree.

    Attributes:
        name: what to call the fabric in reports.
        pods: the pods in order. A 2-level tree (leaves under one spine) has one pod.
        levels: 2 or 3 switch levels.
        uplinks_per_leaf: W1, L2 switches each leaf connects to. None means full bisection
            (W1 = nodes per leaf, nominal).
        uplinks_per_l2: W2, core switches each L2 switch connects to. None means full
            bisection (W2 = leaves per pod, nominal).
        source: the file it was read from, if any.
        notes: how the input was interpreted (shown in the run summary), e.g. "no common
            top switch: leaves joined under a virtual root".
    """

    name: str
    pods: list[PodSpec]
    levels: int = 3
    uplinks_per_leaf: int | None = None
    uplinks_per_l2: int | None = None
    source: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def node_names(self) -> list[str]:
        return [n for pod in self.pods for leaf in pod.leaves for n in leaf.nodes]

    @property
    def n_nodes(self) -> int:
        return sum(len(leaf.nodes) for pod in self.pods for leaf in pod.leaves)

"""`toposched systems`: list the built-in fabrics."""

from __future__ import annotations

import argparse

NAME = "systems"
HELP = "list the built-in fabrics"
DESCRIPTION = "List the built-in fabrics (--system presets) with their shapes."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options."""


def run(args: argparse.Namespace) -> int:
    from ..topology import PRESETS, load_fabric, preset_spec

    for name in PRESETS:
        f = load_fabric(name)
        c = f.core
        print(f"{name:8s} {c.n_nodes:6d} nodes  {c.levels} levels  K={c.nodes_per_leaf} S={c.leaves_per_pod} P={c.n_pods} W1={c.uplinks_per_leaf} W2={c.uplinks_per_l2}  {preset_spec(name).notes[0]}")
    return 0

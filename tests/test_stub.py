"""The .pyi stub names exactly what the compiled module has; presets agree across the
Python and Rust tables."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import toposched
from toposched import _core
from toposched.topology import PRESETS, load_fabric

STUB = Path(toposched.__file__).parent / "_core.pyi"


def _stub_names():
    tree = ast.parse(STUB.read_text())
    top, classes = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            classes[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef) and n.name != "__init__"}
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
    return top, classes


def test_stub_matches_module():
    top, classes = _stub_names()
    public = {n for n in dir(_core) if not n.startswith("_")} | {"__version__"}
    assert top == public
    for cls, methods in classes.items():
        actual = {n for n in dir(getattr(_core, cls)) if not n.startswith("_")}
        assert methods == actual, cls


def test_stub_signatures_match_the_module():
    """mypy's stubtest: every function's and method's parameters, defaults and kinds in the
    stub are those of the compiled module (PyO3 text signatures), not only the names."""
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "toposched._core"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", PRESETS)
def test_python_and_rust_presets_agree(name):
    py = load_fabric(name).core
    rs = _core.Topology.preset(name)
    for attr in ("n_nodes", "n_leaves", "n_pods", "levels", "nodes_per_leaf", "leaves_per_pod", "max_pod_nodes", "uplinks_per_leaf", "uplinks_per_l2"):
        assert getattr(py, attr) == getattr(rs, attr), attr
    assert (py.leaf_of_nodes() == rs.leaf_of_nodes()).all()
    assert (py.pod_of_leaves() == rs.pod_of_leaves()).all()

"""No import cycles, in the Python package and between the Rust core's modules (issue 11):
a cycle means two modules that cannot be understood, tested or replaced one without the
other. Function-level (lazy) imports count too: they are cycles all the same. Imports
under ``if TYPE_CHECKING:`` (annotations only) do not."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "toposched"
CORE_SRC = ROOT / "crates" / "toposched-core" / "src"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def python_graph() -> dict[str, set[str]]:
    mods: dict[str, Path] = {}
    for p in PACKAGE.rglob("*.py"):
        parts = list(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        base = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        deps: set[str] = set()
        tree = ast.parse(path.read_text())
        # imports under `if TYPE_CHECKING:` serve annotations only: no run-time dependency
        typing_only = {id(n) for b in ast.walk(tree) if isinstance(b, ast.If) and "TYPE_CHECKING" in ast.unparse(b.test) for x in b.body for n in ast.walk(x)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                origin = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else [])) if node.level else (node.module or "")
                targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in mods else origin for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            # importing a parent package is not a dependency on its other modules
            deps |= {t for t in targets if t in mods and t != mod and not mod.startswith(t + ".")}
        graph[mod] = deps
    return graph


def rust_graph() -> dict[str, set[str]]:
    """Top-level modules of toposched-core (``alloc`` holds alloc/*.rs) and the modules
    their non-test code names through ``crate::``."""
    graph: dict[str, set[str]] = {}
    for path in CORE_SRC.rglob("*.rs"):
        rel = path.relative_to(CORE_SRC)
        if path.name == "tests.rs" or rel.parts[0] == "bin":
            continue
        module = rel.parts[0].removesuffix(".rs")
        text = path.read_text().split("#[cfg(test)]")[0]
        text = re.sub(r"//[^\n]*", "", text)
        deps = set(re.findall(r"\bcrate::([a-z_]+)", text))
        if len(rel.parts) > 1:
            deps |= {m for m in re.findall(r"\bsuper::super::([a-z_]+)", text)}
        graph.setdefault(module, set()).update(d for d in deps if (CORE_SRC / f"{d}.rs").exists() or (CORE_SRC / d).is_dir())
        graph[module].discard(module)
    return graph


def test_python_package_has_no_import_cycle():
    graph = python_graph()
    assert "toposched.simulate" in graph and "toposched.results" in graph["toposched.aslogged"]
    assert _cycles(graph) == []


def test_rust_core_modules_have_no_cycle():
    graph = rust_graph()
    assert {"engine", "queue", "alloc", "pass", "registry"} <= set(graph)
    assert "pass" in graph["queue"] and "queue" in graph["engine"]
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]

"""Documentation examples run as tests: Python blocks of README.md and docs/*.md, and the
doctests of the package's modules."""

from __future__ import annotations

import doctest
import importlib
import re

import pytest

from conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks():
    for doc in DOCS:
        for i, code in enumerate(BLOCK.findall(doc.read_text())):
            yield pytest.param(code, id=f"{doc.name}-{i}")


@pytest.mark.parametrize("code", list(_blocks()))
def test_markdown_python_blocks_run(code, monkeypatch):
    monkeypatch.chdir(REPO)
    exec(compile(code, "<doc>", "exec"), {})


def _modules() -> list[str]:
    import pkgutil

    import toposched

    return sorted(m.name for m in pkgutil.walk_packages(toposched.__path__, "toposched.") if not m.name.endswith("__main__"))


@pytest.mark.parametrize("module", _modules())
def test_module_doctests(module):
    # every module of the package, found by listing it: a new module's examples run too
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0

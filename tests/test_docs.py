"""Documentation examples run as tests: Python blocks of README.md and docs/*.md, and the
doctests of the package's modules."""

from __future__ import annotations

import doctest
import importlib
import os
import re
from pathlib import Path

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


def test_network_doc_scenario_runs_as_written(tmp_path):
    """docs/network.md's scenario example, as written, through `toposched interfere`."""
    import subprocess
    import sys

    text = (REPO / "docs" / "network.md").read_text()
    section = text[text.index("## Scenario format"):]
    start = section.index("```json\n") + len("```json\n")
    scenario = tmp_path / "scenario.json"
    scenario.write_text(section[start:section.index("```", start)])
    r = subprocess.run([sys.executable, "-m", "toposched.cli", "interfere", str(scenario)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "links: 7776 directed" in r.stdout

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


def test_network_doc_site_mix_is_the_shipped_example_and_runs(tmp_path):
    """docs/network.md's CSV and TOML site mixes are examples/site-mix.csv and .toml as
    shipped, and the two give the same jobs on the bundled Atlas log (the doc's Python
    block checks the CSV's per-rule counts)."""
    import pyarrow.parquet as pq

    from toposched.cli import main

    text = (REPO / "docs" / "network.md").read_text()
    section = text[text.index("**A site's own mix.**"):]
    for lang in ("csv", "toml"):
        start = section.index(f"```{lang}\n") + len(f"```{lang}\n")
        assert section[start:section.index("```", start)] == (REPO / "examples" / f"site-mix.{lang}").read_text()
    tables = []
    for lang in ("csv", "toml"):
        out = tmp_path / lang
        argv = ["simulate", "--trace", str(REPO / "examples" / "data" / "LLNL-Atlas-2006-2.1-cln.swf.gz"), "--system", "cab", "--transform", "days:10", "--out", str(out), "--network", str(REPO / "examples" / f"site-mix.{lang}"), "--quiet"]
        assert main(argv) == 0
        tables.append(pq.read_table(out / "jobs.parquet"))
    assert tables[0].num_rows == 735 and tables[0].equals(tables[1])


def _reconcile_recipe() -> str:
    text = (REPO / "docs" / "node-agent.md").read_text()
    block = next(b for b in re.findall(r"```bash\n(.*?)```", text, re.S) if "reconcile" in b and "squeue" in b)
    return block


@pytest.mark.parametrize("squeue_rc, squeue_out, expect", [(1, "", None), (0, "", ""), (0, "12\n13\n", "12,13")])
def test_reconcile_recipe_releases_nothing_when_squeue_fails(tmp_path, squeue_rc, squeue_out, expect):
    """docs/node-agent.md's cron recipe piped squeue into paste: with the controller down,
    squeue printed nothing and the agent was told 'no jobs run here', releasing (killing)
    every job on the node."""
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text(f"#!/bin/sh\nprintf '{squeue_out}'\nexit {squeue_rc}\n")
    (bin_dir / "toposched").write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {tmp_path / 'called'}\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    import os

    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", _reconcile_recipe()], env=env, timeout=30)
    called = tmp_path / "called"
    if expect is None:
        assert not called.exists()
    else:
        args = called.read_text().splitlines()
        assert args[args.index("--jobs") + 1] == expect

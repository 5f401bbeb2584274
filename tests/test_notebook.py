"""The notebook example runs top to bottom in a real Jupyter kernel, and the objects a
notebook shows print short."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient

from conftest import EXAMPLE_TRACE, REPO


def test_notebook_example_runs_and_shows_short_reprs():
    nb = nbformat.read(REPO / "examples" / "notebook.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    texts = [o["data"].get("text/plain", "") for o in outputs if o.get("output_type") == "execute_result"]
    assert texts[0].startswith("Workload(LLNL-Atlas-2006-2.1-cln.swf.gz, swf, ")
    assert texts[1].startswith("Fabric(cab: 1,296 nodes")
    assert texts[2].startswith("SimResult(LLNL-Atlas-2006-2.1-cln.swf.gz on cab, easy+isolated, ")
    assert all(len(t) < 2000 for t in texts), "a repr dumps too much"
    html = [o["data"].get("text/html", "") for o in outputs if o.get("output_type") == "execute_result"]
    assert "<table>" in html[1] and "toposched result" in html[2]


def test_reprs_are_one_short_line():
    from toposched.simulate import RunConfig, simulate
    from toposched.topology import load_fabric
    from toposched.workload import read_trace

    w = read_trace(EXAMPLE_TRACE)
    f = load_fabric("cab")
    r = simulate(w.take(range(500)), f, RunConfig(alloc="isolated"))
    for obj in (w, f, r):
        text = repr(obj)
        assert "\n" not in text and len(text) < 200, text
    assert "util " in repr(r) and "mean wait " in repr(r) and "500 jobs" in repr(r)
    assert list(r.to_pandas().columns)[:3] == r.jobs.column_names[:3]

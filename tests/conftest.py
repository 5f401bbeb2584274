"""Shared test fixtures: where the real data lives.

Every file a test reads ships with the repository (tests/data, see its README.md; the
bundled Atlas log in examples/data), so the suite runs the same on a fresh clone.
Checks that need whole logs live in validation/, run against the full data set.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
TRACES = DATA / "traces"
SLURM = DATA / "slurm"
PBS_DIR = DATA / "pbs"
# The bundled demo log, whole (byte-identical to the archive's file).
EXAMPLE_TRACE = REPO / "examples" / "data" / "LLNL-Atlas-2006-2.1-cln.swf.gz"

# Cuts of archive logs: header plus the first lines of the file (tests/data/make_data.py).
KTH = TRACES / "KTH-SP2-1996-2.1-cln.first6024lines.swf.gz"  # first 6,000 jobs
SDSC_SP2 = TRACES / "SDSC-SP2-1998-4.2-cln.first6564lines.swf.gz"  # first 6,000 jobs
THUNDER = TRACES / "LLNL-Thunder-2007-1.1-cln.first6124lines.swf.gz"  # first 6,000 jobs
CTC = TRACES / "CTC-SP2-1996-3.1-cln.first1029lines.swf.gz"  # first 1,000 jobs
CURIE = TRACES / "CEA-Curie-2011-2.1-cln.first1074lines.swf.gz"
RICC = TRACES / "RICC-2010-2.first1000lines.swf.gz"
LANL_CM5 = TRACES / "LANL-CM5-1994-4.1-cln.first1045lines.swf.gz"
HPC2N = TRACES / "HPC2N-2002-2.2-cln.first1031lines.swf.gz"
SDSC_BLUE = TRACES / "SDSC-BLUE-2000-4.2-cln.first1098lines.swf.gz"
NASA = TRACES / "NASA-iPSC-1993-3.1-cln.first1032lines.swf.gz"
# Whole files (gzipped).
HPC2N_SUBSET = TRACES / "alea_hpc2n-subset.swf.gz"
WAGAP = TRACES / "alea_wagap-2013.swf.gz"  # with alea_wagap-2013.swf.machines beside it
PBS_SAMPLE = PBS_DIR / "xdmod_pbs-torque_accounting-logs.log"


def first_jobs(path: Path, n: int):
    """The first `n` jobs (replay order) of a shipped trace. Fails, rather than testing
    fewer jobs, when the cut holds fewer: grow the cut in tests/data/make_data.py."""
    from toposched.workload import read_trace

    w = read_trace(path)
    assert len(w) >= n, f"{path.name} holds {len(w)} jobs, the test needs {n}: see tests/data/make_data.py"
    return w.take(np.arange(n))


#: A Python allocation policy that takes the first free nodes (as linear), class ``First``.
FIRST_FREE_POLICY = (
    "from toposched.policies import AllocationPolicy\n"
    "class First(AllocationPolicy):\n"
    "    fungible = True\n"
    "    def select(self, nodes, free):\n"
    "        return free[:nodes].tolist() if len(free) >= nodes else None\n"
)

#: A Python allocation policy whose ``select`` kills its process, class ``Kill``: a worker
#: that dies, as under the kernel's OOM killer.
KILLING_POLICY = (
    "import os\n"
    "from toposched.policies import AllocationPolicy\n"
    "class Kill(AllocationPolicy):\n"
    "    fungible = True\n"
    "    def select(self, nodes, free):\n"
    "        os._exit(9)\n"
)


def policy_module(tmp_path: Path, monkeypatch, name: str, source: str, *, subprocesses: bool = False) -> Path:
    """``tmp_path/NAME.py`` holding ``source``, importable as ``NAME`` from the working
    directory (``tmp_path``) in this process, and in the processes it starts when
    ``subprocesses`` (their PYTHONPATH)."""
    import os

    module = tmp_path / f"{name}.py"
    module.write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    if subprocesses:
        monkeypatch.setenv("PYTHONPATH", str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return module

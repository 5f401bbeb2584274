"""Sweeps: a matrix of runs described in one TOML file, run on Dask, kept in a catalog.

* :mod:`.spec` reads and checks a sweep file (``load_sweep``) and expands it into runs,
  each keyed by a hash of its full specification (``RunSpec.run_id``).
* :mod:`.runner` runs them, one Dask task per run (``run_sweep``); each run's directory
  appears whole (``execute_run`` writes under ``.tmp-*`` and renames it into place).
* :mod:`.catalog` builds ``catalog.duckdb`` from the run directories (``build_catalog``)
  and queries it (``query_runs``).
* :mod:`.report` writes ``report.html`` (``write_report``).

docs/sweeps.md describes the file format, the directory layout and the catalog.
"""

from __future__ import annotations

from .spec import RunSpec, Sweep, SweepSpecError, load_sweep, parse_sweep

__all__ = ["RunSpec", "Sweep", "SweepSpecError", "load_sweep", "parse_sweep"]

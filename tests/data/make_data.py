"""Rebuild tests/data from the team's full data set (../shared/data beside the repository).

    python tests/data/make_data.py [--shared DIR]

Small files (sacct, PBS, topology.conf, slurm.conf, Alea .machines) are copied byte for
byte. Traces are cut: the file's first lines up to the record of the last of the first N
jobs in replay order (header and comment lines included), so that the shipped cut gives
exactly the first N jobs a test takes from the whole log (validation/test_whole_logs.py
checks this against the whole logs). Cut or not, every trace is gzip-compressed without a
name or time stamp (like `gzip -n -9`), so the output is the same on every run.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

# log file in ../shared/data/traces -> jobs to keep (None: the whole file).
# The numbers are the most any test takes (tests/conftest.py names the cuts).
TRACES: dict[str, int | None] = {
    "KTH-SP2-1996-2.1-cln.swf.gz": 6000,  # test_engine: EASY/FCFS vs reference on 6000 jobs
    "SDSC-SP2-1998-4.2-cln.swf.gz": 6000,  # test_engine: same
    "LLNL-Thunder-2007-1.1-cln.swf.gz": 6000,  # test_engine: same
    "alea_hpc2n-subset.swf": None,  # golden schedule, CLI and compare tests use all of it
    "alea_wagap-2013.swf": None,  # as-logged tests count every job
    # Header and first records only: the header rules and the reader (test_swf.py).
    "CTC-SP2-1996-3.1-cln.swf.gz": 1000,
    "CEA-Curie-2011-2.1-cln.swf.gz": 1000,
    "RICC-2010-2.swf.gz": 1000,
    "LANL-CM5-1994-4.1-cln.swf.gz": 1000,
    "HPC2N-2002-2.2-cln.swf.gz": 1000,
    "SDSC-BLUE-2000-4.2-cln.swf.gz": 1000,
    "NASA-iPSC-1993-3.1-cln.swf": 1000,
}
COPIES = {
    "traces": ["alea_wagap-2013.swf.machines"],
    "pbs": ["xdmod_pbs-torque_accounting-logs.log"],
    "slurm": [
        "ubccr_ub-hpc_sacct-P-all_dump2101.log",
        "ubccr_ub-hpc_sacct-P-all_dump2110.log",
        "ubccr_ub-hpc_sacct-P-all_submitline_multiline.log",
        "xdmod_ub-hpc_sacct-parsable2_accounting-logs.log",
        "xdmod_ub-hpc_sacct-parsable2_job-arrays.log",
        "ubccr_medium-cluster_topology.conf",
        "ubccr_medium-cluster_slurm.conf",
        "ucr-hpcc_biocluster_topology.conf",
        "ucr-hpcc_biocluster_slurm.conf",
        "bnl-sdcc_nsls2_topology.conf",
        "bnl-sdcc_nsls2_slurm.conf",
        "nvidia-circe_ngc_topology.conf",
        "nvidia-circe_ngc_slurm.conf",
    ],
}


def stem(name: str) -> str:
    return name.removesuffix(".gz").removesuffix(".swf")


def cut_name(name: str, lines: int | None) -> str:
    """KTH-SP2-1996-2.1-cln.swf.gz cut after line 6024 -> KTH-SP2-1996-2.1-cln.first6024lines.swf.gz"""
    return f"{stem(name)}.swf.gz" if lines is None else f"{stem(name)}.first{lines}lines.swf.gz"


def cut_line(path: Path, jobs: int) -> int:
    """The line of the file holding the last of the first `jobs` jobs in replay order."""
    from toposched.workload.swf import read_swf

    w = read_swf(path)
    if len(w) < jobs:
        raise SystemExit(f"{path} has {len(w)} jobs, fewer than {jobs}")
    return int(w["line"][:jobs].max())


def text_of(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data", help="the full data set (default: ../shared/data)")
    args = ap.parse_args(argv)
    src = args.shared
    for sub, names in COPIES.items():
        (HERE / sub).mkdir(exist_ok=True)
        for name in names:
            shutil.copyfile(src / sub / name, HERE / sub / name)
    for name, jobs in TRACES.items():
        path = src / "traces" / name
        text = text_of(path)
        lines = None if jobs is None else cut_line(path, jobs)
        if lines is not None:
            text = b"".join(text.splitlines(keepends=True)[:lines])
        out = HERE / "traces" / cut_name(name, lines)
        out.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
        print(f"{out.relative_to(REPO)}: {len(text):,} bytes of text, {out.stat().st_size:,} compressed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

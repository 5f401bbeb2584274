"""Checks that need whole logs, run against the full data set (not shipped with the
repository): ``python -m pytest validation/``.

The data set is ``../shared/data`` beside the repository, or the folder named by
``TOPOSCHED_SHARED_DATA``. Without it this module stops with one line saying so: these
checks cannot pass without the logs, so they do not skip.

* The SWF reader on all 13 whole logs: the record and overrun counts SOURCES.md gives,
  cores per node from the header, job by job against the plain reference reader of
  tests/swf_reference.py, line numbers, the documented quirks, fast and slow paths.
* The files in tests/data are what tests/data/make_data.py says: copies byte for byte,
  and each cut trace is a prefix of its log that gives exactly the log's first N jobs.
* Seed 001's findings on LLNL Thunder's whole log (tests/test_contention.py checks them on
  the bundled Atlas log).
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOPOSCHED_SHARED_DATA", REPO.parent / "shared" / "data"))
TRACES = SHARED / "traces"
if not TRACES.is_dir():
    pytest.fail(
        f"validation/test_whole_logs.py needs the full data set: {TRACES} not found "
        "(put it at ../shared/data beside the repository or set TOPOSCHED_SHARED_DATA=DIR)",
        pytrace=False,
    )

sys.path.insert(0, str(REPO / "tests"))
from swf_reference import read_reference, text_lines  # noqa: E402
from test_contention import (  # noqa: E402
    _replay,
    assert_001_bigger_crossbars_and_fatter_nodes_contend_less,
    assert_001_small_system_wide_cost_and_large_worst_cases,
)

from toposched.contention import analyze  # noqa: E402
from toposched.workload import swf  # noqa: E402
from toposched.workload.swf import read_swf  # noqa: E402


def _load_make_data():
    spec = importlib.util.spec_from_file_location("make_data", REPO / "tests" / "data" / "make_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_data = _load_make_data()

# records: job records in the file (SOURCES.md, section 1).
# overrun: jobs with run time > requested time (SOURCES.md), checked on the output.
# cpn: cores per node derived from the header (1 when there is none).
TRACE_FACTS = {
    "KTH-SP2-1996-2.1-cln.swf.gz": dict(records=28_476, overrun=475, cpn=1),
    "LLNL-Atlas-2006-2.1-cln.swf.gz": dict(records=43_778, overrun=3_351, cpn=8),
    "LLNL-Thunder-2007-1.1-cln.swf.gz": dict(records=121_039, overrun=1_101, cpn=4),
    "CEA-Curie-2011-2.1-cln.swf.gz": dict(records=312_826, overrun=5_416, cpn=16),
    "alea_hpc2n-subset.swf": dict(records=3_170, overrun=320, cpn=1),
    "alea_wagap-2013.swf": dict(records=17_900, overrun=702, cpn=1),
    "NASA-iPSC-1993-3.1-cln.swf": dict(records=18_239, overrun=0, cpn=1),
    "SDSC-SP2-1998-4.2-cln.swf.gz": dict(records=59_715, overrun=4_134, cpn=1),
    "CTC-SP2-1996-3.1-cln.swf.gz": dict(records=77_222, overrun=7_174, cpn=1),
    "LANL-CM5-1994-4.1-cln.swf.gz": dict(records=122_060, overrun=40_180, cpn=1),
    "HPC2N-2002-2.2-cln.swf.gz": dict(records=202_871, overrun=14_817, cpn=1),
    "SDSC-BLUE-2000-4.2-cln.swf.gz": dict(records=243_306, overrun=23_434, cpn=8),
    "RICC-2010-2.swf.gz": dict(records=447_794, overrun=7_092, cpn=1),
}


@lru_cache(maxsize=2)
def load(name: str):
    return read_swf(TRACES / name)


# --------------------------------------------------------------------------- the SWF reader


@pytest.mark.parametrize("name", sorted(TRACE_FACTS))
def test_whole_log_loads_and_matches_the_reference_reader(name: str) -> None:
    facts = TRACE_FACTS[name]
    w = load(name)
    assert w.format == "swf"
    assert w.records == facts["records"]
    assert len(w) + sum(w.skipped.values()) == w.records
    assert "malformed_line" not in w.skipped
    assert w.settings["cores_per_node"] == facts["cpn"]
    assert int((w["runtime_s"] > w["walltime_s"]).sum()) == facts["overrun"]
    ref = read_reference(TRACES / name, facts["cpn"])
    assert (ref.records, ref.overrun, ref.skipped) == (w.records, facts["overrun"], w.skipped)
    expected = list(zip(*ref.jobs))
    for i, column in enumerate(["submit_s", "line", "job_id", "nodes", "walltime_s", "runtime_s", "procs"]):
        np.testing.assert_array_equal(w[column], np.array(expected[i]), err_msg=column)


@pytest.mark.parametrize("name", sorted(TRACE_FACTS))
def test_whole_log_line_numbers_point_at_the_record(name: str) -> None:
    w = load(name)
    lines = text_lines(TRACES / name)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(w), size=50, replace=False).tolist() + [0, len(w) - 1]:
        toks = lines[int(w["line"][i]) - 1].split()
        assert int(toks[0]) == w["job_id"][i]
        assert int(toks[1]) == w["submit_s"][i]
        assert int(toks[3]) == w["runtime_s"][i] or int(toks[3]) < 0


def test_documented_repairs_and_skips_on_whole_logs() -> None:
    atlas = load("LLNL-Atlas-2006-2.1-cln.swf.gz")
    assert atlas.repairs["walltime_from_runtime"] > 0  # 8,233 requested times are -1
    assert np.all(atlas.extra["logged_start_s"] == -1)  # wait is -1 for every job
    # Thunder's 808 submit inversions all involve its 1,190 all-unknown records (submit,
    # run time and size -1), which are skipped for their size before sorting.
    thunder = load("LLNL-Thunder-2007-1.1-cln.swf.gz")
    assert thunder.skipped["unknown_size"] >= 1_190
    assert thunder.repairs["walltime_from_runtime"] > 0
    assert load("SDSC-BLUE-2000-4.2-cln.swf.gz").skipped["unknown_runtime"] == 10_744
    assert load("SDSC-SP2-1998-4.2-cln.swf.gz").skipped["unknown_runtime"] == 5_671
    assert load("NASA-iPSC-1993-3.1-cln.swf").repairs["walltime_from_runtime"] == 18_239
    assert load("alea_hpc2n-subset.swf").skipped["unknown_runtime"] == 25
    # CTC: requested processors are -1 everywhere, allocated ones are always there.
    assert "size_from_requested" not in load("CTC-SP2-1996-3.1-cln.swf.gz").repairs


@pytest.mark.parametrize("name", ["KTH-SP2-1996-2.1-cln.swf.gz", "alea_hpc2n-subset.swf", "alea_wagap-2013.swf"])
def test_slow_path_agrees_with_fast_path_on_whole_logs(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = read_swf(TRACES / name)
    monkeypatch.setattr(swf, "_fast_chunk", lambda *a: None)
    slow = read_swf(TRACES / name)
    for c in fast.columns:
        np.testing.assert_array_equal(fast[c], slow[c], err_msg=c)
    for k, v in fast.extra.items():
        np.testing.assert_array_equal(v, slow.extra[k], err_msg=k)
    assert (fast.records, fast.repairs, fast.skipped, fast.header, fast.settings) == (
        slow.records, slow.repairs, slow.skipped, slow.header, slow.settings)


@pytest.mark.parametrize("name", sorted(TRACE_FACTS))
def test_the_read_ahead_reads_whole_logs_the_same(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the native read-ahead (what `simulate` starts), the same Workload, every
    body chunk taken from the read-ahead (these logs are plain SWF past their header)."""
    from toposched import readahead

    calls: list[int] = []
    real = swf._body_chunk
    monkeypatch.setattr(swf, "_body_chunk", lambda *a: calls.append(0) or real(*a))
    readahead.prefetch(TRACES / name)
    ahead = read_swf(TRACES / name)
    assert calls == [] or name.startswith("alea_")  # Alea's files: extended SWF, comments
    plain = load(name)
    for c in plain.columns:
        np.testing.assert_array_equal(ahead[c], plain[c], err_msg=c)
    for k, v in plain.extra.items():
        np.testing.assert_array_equal(ahead.extra[k], v, err_msg=k)
    assert (ahead.records, ahead.repairs, ahead.skipped, ahead.header, ahead.settings) == (
        plain.records, plain.repairs, plain.skipped, plain.header, plain.settings)


# --------------------------------------------------------------------------- tests/data


@pytest.mark.parametrize("sub,name", [(sub, name) for sub, names in make_data.COPIES.items() for name in names])
def test_shipped_copies_are_byte_identical(sub: str, name: str) -> None:
    assert (REPO / "tests" / "data" / sub / name).read_bytes() == (SHARED / sub / name).read_bytes()


@pytest.mark.parametrize("name", sorted(make_data.TRACES))
def test_shipped_trace_is_a_prefix_giving_the_logs_first_jobs(name: str) -> None:
    jobs = make_data.TRACES[name]
    whole_text = make_data.text_of(TRACES / name)
    shipped = sorted((REPO / "tests" / "data" / "traces").glob(make_data.stem(name) + ".*swf.gz"))
    assert len(shipped) == 1, shipped
    cut = shipped[0]
    cut_text = gzip.decompress(cut.read_bytes())
    if jobs is None:
        assert cut.name == make_data.cut_name(name, None) and cut_text == whole_text
        return
    lines = make_data.cut_line(TRACES / name, jobs)
    assert cut.name == make_data.cut_name(name, lines)
    assert cut_text == b"".join(whole_text.splitlines(keepends=True)[:lines])
    # The cut's first N jobs are the whole log's, every column and extra.
    a, b = read_swf(TRACES / name), read_swf(cut)
    assert (a.header, a.time_origin_epoch_s) == (b.header, b.time_origin_epoch_s)
    assert a.settings["cores_per_node"] == b.settings["cores_per_node"]
    first = np.arange(jobs)
    a, b = a.take(first), b.take(first)
    for c in a.columns:
        np.testing.assert_array_equal(a[c], b[c], err_msg=c)
    for k, v in a.extra.items():
        np.testing.assert_array_equal(v, b.extra[k], err_msg=k)


# --------------------------------------------------------------------------- seed 001 on Thunder


def test_001_findings_on_thunders_whole_log() -> None:
    # Thunder: 1,024 nodes on 16-port crossbars (001 §IV): 8 per leaf.
    s = _replay(TRACES / "LLNL-Thunder-2007-1.1-cln.swf.gz", "fattree:K=8,S=128,P=1")
    a = analyze(s)
    assert_001_small_system_wide_cost_and_large_worst_cases(s, 8, a)
    assert_001_bigger_crossbars_and_fatter_nodes_contend_less(s, 8, a)

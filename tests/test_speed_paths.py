"""The shortcuts of issue 17 (speed of the whole command) give what the long ways gave:
span counts, the encodings of jobs.parquet, the CLI importing only the command it runs,
and a quiet simulate leaving pandas unimported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import EXAMPLE_TRACE
from toposched.cli import main
from toposched.nodelists import NODE_RANGES, node_lists, ranges_from_lists
from toposched.results import _span_counts

DATA = Path(__file__).parent / "data"
SWF = DATA / "atlas-window-120.swf"


def _spans_by_sets(offsets, flat, leaf_of, pod_of_leaf):
    leaves, pods = [], []
    for j in range(len(offsets) - 1):
        ids = flat[offsets[j] : offsets[j + 1]]
        leaves.append(len(set(leaf_of[ids].tolist())))
        pods.append(len(set(pod_of_leaf[leaf_of[ids]].tolist())))
    return leaves, pods


def test_span_counts_match_distinct_sets_on_every_fabric_shape() -> None:
    rng = np.random.default_rng(3)
    shapes = 0
    for _ in range(300):
        k, s, p = (int(x) for x in rng.integers(1, [6, 4, 3]))
        n = k * s * p
        leaf_of = np.repeat(np.arange(s * p, dtype=np.int32), k)
        pod_of_leaf = np.repeat(np.arange(p, dtype=np.int32), s)
        lens = rng.integers(0, n + 1, 20)
        offsets = np.zeros(21, np.int32)
        offsets[1:] = np.cumsum(lens)
        flat = np.concatenate([np.sort(rng.choice(n, int(m), replace=False)) for m in lens]).astype(np.int32)
        leaves, pods = _span_counts(*ranges_from_lists(offsets, flat), leaf_of, pod_of_leaf)
        assert leaves.dtype == pods.dtype == np.int32
        assert (leaves.tolist(), pods.tolist()) == _spans_by_sets(offsets, flat, leaf_of, pod_of_leaf)
        shapes += (s * p == 1) + (p == 1)
    assert shapes > 50  # one-leaf and one-pod fabrics (the shortcuts) were among them


def test_jobs_parquet_is_compactly_encoded_and_reads_back(tmp_path: Path) -> None:
    from toposched.simulate import simulate
    from toposched.topology import load_fabric
    from toposched.workload import read_trace

    result = simulate(read_trace(str(SWF)), load_fabric("cab"))
    result.write(tmp_path / "o")
    meta = pq.ParquetFile(tmp_path / "o" / "jobs.parquet").metadata
    names = [meta.row_group(0).column(i).path_in_schema for i in range(meta.num_columns)]
    enc = meta.row_group(0).column(names.index(f"{NODE_RANGES}.list.element.first")).encodings
    assert "DELTA_BINARY_PACKED" in enc
    back = pq.read_table(tmp_path / "o" / "jobs.parquet")
    assert node_lists(back) == node_lists(result.jobs)
    assert sum(map(len, node_lists(back))) == sum(result.jobs.column("nodes").to_pylist())
    assert back.drop_columns([]).equals(result.jobs.replace_schema_metadata(back.schema.metadata))
    assert main(["check", str(tmp_path / "o")]) == 0


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout


def test_cli_imports_only_the_command_it_runs() -> None:
    out = _fresh(
        "import sys\nfrom toposched.cli import main\nmain(['systems'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('toposched.commands.')))"
    )
    loaded = set(eval(out.strip().splitlines()[-1]))  # noqa: S307 - our own printed list
    assert "toposched.commands.systems" in loaded
    assert loaded <= {"toposched.commands.systems", "toposched.commands._args"}


def test_help_still_lists_every_command(capsys) -> None:
    import pkgutil

    from toposched import commands

    try:
        main(["--help"])
    except SystemExit:
        pass
    text = capsys.readouterr().out
    for m in pkgutil.iter_modules(commands.__path__):
        if not m.name.startswith("_"):
            assert m.name.replace("_", "-") in text


def test_quiet_simulate_leaves_pandas_unimported_and_to_pandas_still_works(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    out = _fresh(
        "import sys\nfrom toposched.cli import main\n"
        f"assert main(['simulate', '--trace', {str(SWF)!r}, '--system', 'cab', '--out', {str(tmp_path / 'o')!r}, '--quiet']) == 0\n"
        "print('pandas' in sys.modules)\n"
        "import pyarrow.parquet as pq\n"
        f"df = pq.read_table({str(tmp_path / 'o' / 'jobs.parquet')!r}).to_pandas()\n"
        "print(type(df).__name__, len(df) > 0)"
    )
    assert out.split() == ["False", "DataFrame", "True"]


def test_simulate_writes_its_parquet_files_without_pyarrow(tmp_path: Path) -> None:
    """The result files are written by the native writer from the replay's arrays: the
    whole replay's command never imports PyArrow (nor does its import thread), printing
    its summary or not, and the files read back."""
    quiet = _fresh(
        "import sys\nfrom toposched.cli import main\n"
        f"assert main(['simulate', '--trace', {str(SWF)!r}, '--system', 'cab', '--out', {str(tmp_path / 'q')!r}, '--quiet']) == 0\n"
        "print('pyarrow' in sys.modules)\n"
    )
    assert quiet.split() == ["False"]
    out = _fresh(
        "import sys\nfrom toposched.cli import main\n"
        f"assert main(['simulate', '--trace', {str(SWF)!r}, '--system', 'cab', '--out', {str(tmp_path / 'o')!r}]) == 0\n"
        "print('pyarrow' in sys.modules)\n"
        "import pyarrow.parquet as pq\n"
        f"d = {str(tmp_path / 'o')!r}\n"
        "print(*(pq.ParquetFile(d + '/' + name + '.parquet').metadata.created_by.split()[0] for name in ('jobs', 'utilization', 'skipped')))"
    )
    assert out.split()[-4:] == ["False", "parquet-rs", "parquet-rs", "parquet-rs"]  # (after the printed summary)


def test_a_quiet_simulate_reads_no_entry_points_and_its_help_still_lists_python_policies(monkeypatch, capsys, tmp_path: Path) -> None:
    """The core's policies are looked up without importlib.metadata; --alloc's help, made
    when shown, still lists the policies packages register."""
    out = _fresh(
        "import sys\nfrom toposched.cli import main\n"
        f"assert main(['simulate', '--trace', {str(SWF)!r}, '--system', 'cab', '--out', {str(tmp_path / 'o')!r}, '--quiet']) == 0\n"
        "print('importlib.metadata' in sys.modules)"
    )
    assert out.split() == ["False"]
    from toposched import registry

    monkeypatch.setattr(registry, "_entry_point_policies", lambda: (("ep-lowest", "test_registry:Lowest"),))
    try:
        with pytest.raises(SystemExit):
            main(["simulate", "--help"])
        assert "ep-lowest:" in " ".join(capsys.readouterr().out.split())
    finally:
        registry.unregister("ep-lowest")


def test_prefetched_bytes_are_what_read_bytes_reads(tmp_path: Path) -> None:
    """prefetch(): the same bytes, or the same error at read time; a file changed in
    between is read again; a pipe is not prefetched."""
    import gzip

    from toposched.errors import TraceFormatError
    from toposched import readahead as _io

    log = tmp_path / "a.swf.gz"
    log.write_bytes(gzip.compress(SWF.read_bytes()))
    _io.prefetch(log)
    assert _io.read_bytes(log) == SWF.read_bytes()
    assert str(log) not in _io._PREFETCHED
    _io.prefetch(log)
    log.write_bytes(gzip.compress(b"1 2 3\n"))  # another size: read again
    assert _io.read_bytes(log) == b"1 2 3\n"
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(gzip.compress(SWF.read_bytes())[:-40])
    with pytest.raises(TraceFormatError) as direct:
        _io.read_bytes(cut)
    _io.prefetch(cut)
    with pytest.raises(TraceFormatError) as prefetched:
        _io.read_bytes(cut)
    assert str(prefetched.value) == str(direct.value)
    _io.prefetch(tmp_path / "missing.swf")  # read_bytes says "no such file" itself
    _io.prefetch(tmp_path)  # not a regular file
    assert not _io._PREFETCHED
    _io.prefetch(log)
    _io.discard_prefetched(log)
    assert not _io._PREFETCHED


def test_simulate_leaves_no_import_thread_and_the_switch_interval_as_it_was(tmp_path: Path) -> None:
    import threading

    before = sys.getswitchinterval()
    assert main(["simulate", "--trace", str(SWF), "--system", "nosuch", "--out", str(tmp_path / "a"), "--quiet"]) == 2
    assert main(["simulate", "--trace", str(SWF), "--system", "cab", "--out", str(tmp_path / "b"), "--quiet"]) == 0
    assert sys.getswitchinterval() == before
    assert not [t for t in threading.enumerate() if t.name.startswith("toposched-")]


def test_an_error_writing_jobs_parquet_on_its_thread_is_the_commands_error(tmp_path: Path, monkeypatch, capsys) -> None:
    """jobs.parquet is written on a second thread: its failure still ends the command with
    its message, and leaves neither the result directory nor a staging directory."""
    import toposched.parquet_out as parquet_out

    real = parquet_out.TableWriter.__init__

    def failing(self, path, kind, *a, **kw):
        if kind == "jobs":
            raise OSError(28, "No space left on device")
        real(self, path, kind, *a, **kw)

    monkeypatch.setattr(parquet_out.TableWriter, "__init__", failing)
    out = tmp_path / "o"
    code = main(["simulate", "--trace", str(SWF), "--system", "cab", "--out", str(out), "--quiet"])
    assert code == 1
    assert "No space left on device" in capsys.readouterr().err
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == []


def test_files_written_from_the_columns_are_those_of_the_tables(tmp_path: Path) -> None:
    """SimResult.write writes jobs.parquet and skipped.parquet from the replay's arrays;
    the tables API users get (``jobs``, ``skipped``, made at their first use) written by
    the table path (parquet_out.write_table) give the same bytes, with skipped jobs and
    jobs without APH (nulls) among them."""
    from toposched import parquet_out
    from toposched.simulate import RunConfig, simulate
    from toposched.topology import load_fabric
    from toposched.workload import read_trace

    w = read_trace(SWF)
    r = simulate(w, load_fabric("fattree:K=4,S=2,P=1"), RunConfig(queue="easy", alloc="isolated"))
    assert r.finished.n_rows > 0 and len(r.never_ran.reasons) > 0 and r.jobs.column("aph").null_count > 0
    r.finished.write(str(tmp_path / "a.parquet"), b"id")
    parquet_out.write_table(tmp_path / "b.parquet", "jobs", r.jobs, b"id", 1 << 17)
    r.never_ran.write(str(tmp_path / "c.parquet"), b"id")
    parquet_out.write_table(tmp_path / "d.parquet", "skipped", r.skipped, b"id")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert (tmp_path / "c.parquet").read_bytes() == (tmp_path / "d.parquet").read_bytes()
    assert r.skipped.column("reason").to_pylist() == r.never_ran.reasons
    assert r.jobs.num_rows == r.finished.n_rows


def test_the_native_utilization_file_is_the_one_of_the_sample_arrays(tmp_path: Path) -> None:
    """utilization.parquet of a whole replay's series is made and written in Rust; the
    NumPy sample arrays (SampledUtilization.arrays: times by arange, the fraction by
    NumPy's division) written by the Python writer give the same bytes: a span of more
    than one chunk of samples, negative times, an idle fabric and an empty series."""
    from toposched import results
    from toposched.utilization import CHUNK_SAMPLES, UtilizationSeries

    rng = np.random.default_rng(5)
    start = rng.integers(-50, 10_000_000, 300)
    end = start + rng.integers(0, 100_000, 300)
    cases = [
        UtilizationSeries.from_jobs(start, end, rng.integers(1, 9, 300), -7_000, int(end.max()), 7, 37),
        UtilizationSeries.from_jobs(start, end, rng.integers(1, 9, 300), -30, 200, 60, 0),
        UtilizationSeries.from_jobs(start[:0], end[:0], start[:0], 0, -1, 60, 10),
    ]
    assert cases[0].n_samples > CHUNK_SAMPLES and cases[2].n_samples == 0
    for i, series in enumerate(cases):
        native, arrays = tmp_path / f"n{i}.parquet", tmp_path / f"a{i}.parquet"
        results._write_utilization(series, str(native), b"id")
        results._write_sample_arrays(series, str(arrays), b"id")
        assert native.read_bytes() == arrays.read_bytes(), i


def test_the_program_keeps_openblas_to_one_thread_unless_told(tmp_path: Path) -> None:
    """`toposched` (console_main) sets OPENBLAS_NUM_THREADS=1 before NumPy is imported,
    unless the environment gives a value, which is kept; NumPy imported as a library
    (``main``, notebooks) is left alone."""
    import os

    code = (
        "import os, sys\nfrom toposched import cli\n"
        "sys.argv = ['toposched', 'systems']\n"
        "try:\n    cli.console_main()\nexcept SystemExit:\n    pass\n"
        "sys.stdout.write('\\nBLAS=' + os.environ.get('OPENBLAS_NUM_THREADS', 'unset'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}

    def blas(extra: dict[str, str]) -> str:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**env, **extra}).stdout
        return out.rsplit("BLAS=", 1)[-1]

    assert blas({}) == "1"
    assert blas({"OPENBLAS_NUM_THREADS": "4"}) == "4"
    lib = subprocess.run([sys.executable, "-c", "import os\nfrom toposched.cli import main\nmain(['systems'])\nprint(os.environ.get('OPENBLAS_NUM_THREADS', 'unset'))"], capture_output=True, text=True, timeout=120, env=env).stdout
    assert lib.split()[-1] == "unset"


def test_simulate_lets_malloc_keep_freed_blocks_of_up_to_32_mib() -> None:
    """`simulate` raises glibc's mmap threshold (startup.keep_freed_memory): an 8 MB block
    then comes from the heap, not from a mapping of its own, which mallinfo2 counts
    apart (`hblkhd`). Without the call the same block is mapped: the test sees both."""
    import platform

    libc, version = platform.libc_ver()
    if libc != "glibc" or tuple(int(x) for x in version.split(".")[:2]) < (2, 33):
        pytest.skip(f"glibc's mallopt and mallinfo2 (2.33 or later); this is {libc or 'another libc'} {version}")
    script = (
        "import ctypes, sys\n"
        "from toposched.startup import keep_freed_memory\n"
        "class M(ctypes.Structure):\n"
        "    _fields_ = [(n, ctypes.c_size_t) for n in ('arena','ordblks','smblks','hblks','hblkhd','usmblks','fsmblks','uordblks','fordblks','keepcost')]\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.mallinfo2.restype = M\n"
        "libc.malloc.restype = ctypes.c_void_p\n"
        "libc.free.argtypes = [ctypes.c_void_p]\n"
        "if sys.argv[1] == 'keep':\n"
        "    assert keep_freed_memory()\n"
        "before = libc.mallinfo2().hblkhd\n"
        "p = libc.malloc(8 << 20)\n"
        "print(libc.mallinfo2().hblkhd - before)\n"
        "libc.free(p)\n"
    )

    def mapped_bytes(how: str) -> int:
        out = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return int(out.stdout)

    assert mapped_bytes("default") >= 8 << 20
    assert mapped_bytes("keep") == 0


def test_simulate_keeps_freed_memory_before_it_reads_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toposched import readahead, startup

    calls: list[str] = []
    monkeypatch.setattr(startup, "keep_freed_memory", lambda: calls.append("keep") or True)
    real = readahead.prefetch
    monkeypatch.setattr(readahead, "prefetch", lambda *a, **k: calls.append("prefetch") or real(*a, **k))
    assert main(["simulate", "--trace", str(EXAMPLE_TRACE), "--system", "toy18", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert calls == ["keep", "prefetch"]
    calls.clear()  # a streamed replay keeps glibc's defaults (its point is its peak)
    assert main(["simulate", "--stream", "--trace", str(EXAMPLE_TRACE), "--system", "toy18", "--out", str(tmp_path / "s"), "--quiet"]) == 0
    assert calls == []

"""`toposched simulate --stream` (toposched.stream) against the whole replay: on every
bundled SWF trace and the example, under the queue and allocation policies and options
that stream, with chunks of 1, 7 and 1000 records, the five output files are the same
bytes (`cmp`); also with row groups of 1,000 jobs and statistics selected by passes over
the written jobs (the paths of a 10-million-job log, made small); and on random small
logs (Hypothesis) at random chunk sizes. Refusals name --stream; an interrupted
streamed replay keeps the jobs finished so far."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE_TRACE, TRACES
from toposched import results, summary_stats
from toposched.check import check_schedule
from toposched.cli import main
from toposched.errors import InputError, TraceFormatError
from toposched.simulate import RunConfig, simulate
from toposched.stream import simulate_stream
from toposched.topology import load_fabric
from toposched.workload import read_trace

FILES = ("jobs.parquet", "utilization.parquet", "skipped.parquet", "summary.json", "fabric.json")
SWF_TRACES = sorted(p for p in TRACES.glob("*.swf.gz") if "wagap" not in p.name)
HPC2N = TRACES / "HPC2N-2002-2.2-cln.first1031lines.swf.gz"
KTH = TRACES / "KTH-SP2-1996-2.1-cln.first6024lines.swf.gz"


def _fabric_for(path: Path) -> str:
    """A fabric every job of the trace fits (a few never do on the smaller ones: skipped)."""
    return "cab" if "LLNL" in path.name or "Curie" in path.name else "fattree:K=16,S=8,P=2"


def _same_files(a: Path, b: Path) -> None:
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def _both(tmp_path: Path, trace: Path, system: str, config: RunConfig, chunk: int, **read) -> tuple[Path, Path]:
    fabric = load_fabric(system)
    whole, streamed = tmp_path / "whole", tmp_path / f"stream-{chunk}"
    simulate(read_trace(trace, **read), fabric, config).write(whole)
    simulate_stream(trace, fabric, config, streamed, chunk_jobs=chunk, read_options=read)
    return whole, streamed


@pytest.mark.parametrize("trace", [*SWF_TRACES, EXAMPLE_TRACE], ids=lambda p: p.name.split(".")[0][:24])
def test_every_trace_streams_to_the_same_files(trace: Path, tmp_path: Path) -> None:
    chunks = (1, 7, 1000) if trace.stat().st_size < 30_000 else (7, 1000)  # chunks of 1 on the small ones (time)
    for chunk in chunks:
        whole, streamed = _both(tmp_path, trace, _fabric_for(trace), RunConfig(), chunk)
        _same_files(whole, streamed)


CONFIGS = [
    pytest.param(RunConfig(queue="easy", alloc="isolated"), {}, id="easy-isolated"),
    pytest.param(RunConfig(queue="fcfs", alloc="linear"), {}, id="fcfs-linear"),
    pytest.param(RunConfig(queue="conservative", alloc="isolated"), {}, id="conservative-isolated"),
    pytest.param(RunConfig(queue="conservative", alloc="linear", kill_at_walltime=False), {}, id="conservative-linear-runon"),
    pytest.param(RunConfig(queue="easy", alloc="slurm-tree"), {}, id="easy-slurm-tree"),
    pytest.param(RunConfig(queue="easy", alloc="random", seed=5), {}, id="easy-random-seed"),
    pytest.param(RunConfig(queue="easy", alloc="linear", kill_at_walltime=True), {"lenient": True, "cores_per_node": 2}, id="kill-lenient-cores"),
    pytest.param(RunConfig(queue="easy", alloc="linear", switches="1@3600"), {}, id="switches"),
    pytest.param(RunConfig(queue="easy", alloc="isolated", flux_window=True, reserved_tiers_always=True, queue_depth=16), {}, id="flux-window-depth"),
    pytest.param(RunConfig(queue="easy", alloc="linear", event_order="per-event", utilization_step_s=7), {}, id="per-event-step7"),
]


@pytest.mark.parametrize("config,read", CONFIGS)
@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_policies_and_options_stream_to_the_same_files(config: RunConfig, read: dict, chunk: int, tmp_path: Path) -> None:
    whole, streamed = _both(tmp_path, HPC2N, "fattree:K=8,S=4,P=4", config, chunk, **read)
    _same_files(whole, streamed)


OTHER_TRACES = [
    pytest.param(TRACES / "SDSC-BLUE-2000-4.2-cln.first1098lines.swf.gz", "fattree:K=16,S=8,P=2", id="SDSC-BLUE"),
    pytest.param(TRACES / "CEA-Curie-2011-2.1-cln.first1074lines.swf.gz", "cab", id="Curie"),
    pytest.param(TRACES / "LLNL-Thunder-2007-1.1-cln.first6124lines.swf.gz", "cab", id="Thunder"),
]


@pytest.mark.parametrize("trace,system", OTHER_TRACES)
@pytest.mark.parametrize("config,read", CONFIGS)
def test_policies_and_options_on_other_traces(trace: Path, system: str, config: RunConfig, read: dict, tmp_path: Path) -> None:
    """The same settings on logs with other sizes, repairs and left-out jobs (chunks of 7)."""
    whole, streamed = _both(tmp_path, trace, system, config, 7, **read)
    _same_files(whole, streamed)


def test_many_row_groups_and_selection_passes(tmp_path: Path, monkeypatch) -> None:
    """Row groups of 1,000 jobs (as 2^17 on a large log: the temporary file, the copy and
    the run id over several groups) and no keys kept (the medians and p95s by passes
    over the written groups): still the same bytes as the whole replay's."""
    monkeypatch.setattr(results, "JOBS_ROW_GROUP", 1000)
    monkeypatch.setattr(summary_stats, "KEEP_ROWS", 100)
    monkeypatch.setattr(summary_stats, "GATHER_KEYS", 50)
    whole, streamed = _both(tmp_path, KTH, "fattree:K=20,S=5,P=1", RunConfig(queue="easy", alloc="isolated"), 333)
    assert pq.ParquetFile(whole / "jobs.parquet").num_row_groups == 6
    _same_files(whole, streamed)


def test_jobs_that_never_fit(tmp_path: Path) -> None:
    """Jobs too large for the fabric are skipped (skipped.parquet, reasons), same files;
    and when no job fits at all, the empty tables are the whole replay's too."""
    whole, streamed = _both(tmp_path, HPC2N, "toy18", RunConfig(), 10, cores_per_node=1)
    summary = json.loads((streamed / "summary.json").read_text())
    assert 0 < summary["jobs"]["skipped_never_fit"] and 0 < summary["jobs"]["replayed"] < 1000
    _same_files(whole, streamed)
    big = tmp_path / "big.swf"
    big.write_text("".join(f"{j} {10 * j} 0 50 64 -1 -1 64 100 -1 1 1 1 1 1 1 -1 -1\n" for j in range(1, 5)))
    whole, streamed = _both(tmp_path / "big", big, "toy18", RunConfig(), 2)
    assert json.loads((streamed / "summary.json").read_text())["jobs"]["replayed"] == 0
    _same_files(whole, streamed)


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_cli_stream_matches_and_refusals(tmp_path: Path, capsys) -> None:
    base = ["simulate", "--trace", str(HPC2N), "--system", "fattree:K=8,S=4,P=4", "--quiet"]
    assert _cli([*base, "--out", str(tmp_path / "w")], capsys)[0] == 0
    assert _cli([*base, "--out", str(tmp_path / "s"), "--stream", "--stream-chunk-jobs", "3"], capsys)[0] == 0
    _same_files(tmp_path / "w", tmp_path / "s")
    for extra, words in (
        (["--network", "bins"], "--network"),
        (["--queue", "slurm"], "--queue slurm"),
        (["--alloc", "as-logged"], "as-logged"),
        (["--transform", "scale:2"], "--transform"),
        (["--format", "sacct"], "--format sacct"),
        (["--alloc", "tests_policy_module:Whatever"], "written in Python"),
    ):
        code, text = _cli([*base, "--out", str(tmp_path / "x"), "--stream", *extra], capsys)
        assert code != 0 and "--stream" in text and words in text and "Traceback" not in text, (extra, text)
        assert len(text.strip().splitlines()) == 1, text
    code, text = _cli([*base, "--out", str(tmp_path / "x"), "--stream-chunk-jobs", "5"], capsys)
    assert code != 0 and "applies to --stream only" in text


def test_out_of_order_log_is_refused_with_its_line(tmp_path: Path, capsys) -> None:
    p = tmp_path / "unsorted.swf"
    p.write_text("".join(f"{j} {t} 0 50 2 -1 -1 2 100 -1 1 1 1 1 1 1 -1 -1\n" for j, t in ((1, 10), (2, 30), (3, 20))))
    code, text = _cli(["simulate", "--trace", str(p), "--system", "toy18", "--out", str(tmp_path / "o"), "--quiet", "--stream"], capsys)
    assert code != 0 and f"{p}:3:" in text and "without --stream" in text and len(text.strip().splitlines()) == 1
    with pytest.raises(TraceFormatError):
        simulate_stream(p, load_fabric("toy18"), RunConfig(), tmp_path / "o2")


def test_refusals_through_the_api(tmp_path: Path) -> None:
    fabric = load_fabric("toy18")
    for config in (RunConfig(network="bins"), RunConfig(queue="slurm-bf"), RunConfig(record_reservations=True)):
        with pytest.raises(InputError, match="--stream"):
            simulate_stream(HPC2N, fabric, config, tmp_path / "o")


def test_interrupt_keeps_the_jobs_finished_so_far(tmp_path: Path) -> None:
    """^C in the middle (raised from the progress callback): complete false, and the jobs
    written are finished jobs of the whole replay, row for row the same."""
    fabric = load_fabric("fattree:K=20,S=5,P=1")
    calls = 0

    def progress(submitted: int, total: int | None) -> None:
        nonlocal calls
        calls += 1
        if calls == 40:
            raise KeyboardInterrupt

    run = simulate_stream(KTH, fabric, RunConfig(), tmp_path / "s", chunk_jobs=50, progress=progress)
    assert run.summary["complete"] is False
    part = pq.read_table(tmp_path / "s" / "jobs.parquet")
    whole = simulate(read_trace(KTH), fabric, RunConfig()).jobs
    assert 0 < len(part) < len(whole)
    by_id = {j: i for i, j in enumerate(whole.column("job_id").to_pylist())}
    rows = [by_id[j] for j in part.column("job_id").to_pylist()]
    assert rows == sorted(rows)
    for c in ("start_s", "end_s", "nodes", "wait_s"):
        assert part.column(c).to_pylist() == [whole.column(c)[i].as_py() for i in rows], c
    assert check_schedule(part, fabric.describe()) == []


@pytest.mark.parametrize("spill_samples", [None, 1, 37])
def test_busy_samples_are_the_series_samples(spill_samples: int | None, tmp_path: Path, monkeypatch) -> None:
    """BusySamples (jobs added in batches of rising start, the samples before the next
    batch's first start declared final and, past ``spill_samples`` of them, written to
    the file) against UtilizationSeries of the same jobs: every sample, the mean, bit
    for bit; zero-length and negative-start jobs ignored, samples before t0 from 0."""
    import numpy as np

    from toposched.utilization import BusySamples, UtilizationSeries

    rng = np.random.default_rng(4)
    for step in (1, 7, 60):
        n = 2000
        start = np.sort(rng.integers(-50, 100_000, n))
        end = start + rng.integers(0, 20_000, n)
        nodes = rng.integers(1, 2**16, n)
        t0, t1 = 10, int(end.max())
        want = UtilizationSeries.from_jobs(start, end, nodes, t0, t1, step, 2**31 - 1)
        spill = None
        if spill_samples is not None:
            monkeypatch.setattr(BusySamples, "SPILL_SAMPLES", spill_samples)
            spill = tmp_path / f"changes-{step}"
        got = BusySamples(t0, step, 2**31 - 1, spill)
        cuts = [0, 1, 500, 501, 1999, n]
        for a, b in zip(cuts, cuts[1:]):
            got.add(start[a:b], end[a:b], nodes[a:b])
            if b < n:
                got.final_before(-((t0 - int(start[b])) // step))
        if spill_samples is not None:
            assert spill.stat().st_size > 0  # some samples were written out
        assert got.t1 == t1 and got.n_samples == want.n_samples
        m = want.n_samples
        np.testing.assert_array_equal(got.busy_at(0, m), want.busy_at(0, m))
        for k0, k1 in ((m // 2, m), (3, 9), (0, 5), (m - 1, m)):
            np.testing.assert_array_equal(got.busy_at(k0, k1), want.busy_at(k0, k1))
        assert got.mean() == want.mean()


def test_final_samples_written_out_during_a_replay(tmp_path: Path, monkeypatch) -> None:
    """A streamed replay with utilization samples written out as they become final (1 s
    samples, written 50 at a time): the whole replay's files."""
    from toposched.utilization import BusySamples

    monkeypatch.setattr(BusySamples, "SPILL_SAMPLES", 50)
    spilled = []
    real = BusySamples.final_before
    monkeypatch.setattr(BusySamples, "final_before", lambda self, k: (real(self, k), spilled.append(self._base)))
    whole, streamed = _both(tmp_path, KTH, "fattree:K=20,S=5,P=1", RunConfig(utilization_step_s=1), 200)
    assert max(spilled) > 1_000_000  # most of the 80 days were written out before the end
    _same_files(whole, streamed)


def test_run_id_patched_into_the_footer_or_encoded_again(tmp_path: Path, monkeypatch) -> None:
    """jobs.parquet is the temporary file with the run id patched into its footer (one
    encoding); when the footer is not as expected, the row groups are encoded again.
    Either way the whole replay's bytes."""
    from toposched import stream

    patched = []
    real = stream._patch_run_id
    monkeypatch.setattr(stream, "_patch_run_id", lambda p, r: patched.append(real(p, r)) or patched[-1])
    whole, streamed = _both(tmp_path, KTH, "fattree:K=20,S=5,P=1", RunConfig(), 1000)
    assert patched == [True]
    _same_files(whole, streamed)
    monkeypatch.setattr(stream, "_patch_run_id", lambda p, r: False)
    again = tmp_path / "again"
    simulate_stream(KTH, load_fabric("fattree:K=20,S=5,P=1"), RunConfig(), again, chunk_jobs=1000)
    _same_files(whole, again)


def test_extended_log_streams_as_plain_swf_only(tmp_path: Path) -> None:
    """wagap's node lists make it `swf-nodes`, which does not stream (refused, naming the
    format); read as plain SWF (`--format swf`), it streams to the whole replay's files."""
    wagap = TRACES / "alea_wagap-2013.swf.gz"
    fabric = load_fabric("fattree:K=16,S=8,P=2")
    with pytest.raises(InputError, match=r"swf-nodes.*without --stream"):
        simulate_stream(wagap, fabric, RunConfig(), tmp_path / "x")
    simulate(read_trace(wagap, format="swf"), fabric, RunConfig()).write(tmp_path / "whole")
    simulate_stream(wagap, fabric, RunConfig(), tmp_path / "stream", chunk_jobs=777, format="swf")
    _same_files(tmp_path / "whole", tmp_path / "stream")


@st.composite
def _logs(draw) -> str:
    """Small SWF logs in submit order: ties, zero and over-limit run times, jobs too large
    to ever fit, unknown fields (-1), a comment between records."""
    n = draw(st.integers(1, 40))
    t = draw(st.integers(0, 10**6))
    lines = ["; MaxNodes: 32", "; MaxProcs: 32"]
    for j in range(1, n + 1):
        t += draw(st.sampled_from([0, 0, 1, 7, 60, 3600, 10**5]))
        procs = draw(st.sampled_from([1, 2, 3, 8, 16, 32, 40, -1]))
        run = draw(st.sampled_from([0, 1, 59, 600, 7200, -1]))
        req = draw(st.sampled_from([-1, 1, 60, 600, 3600, 86400]))
        lines.append(f"{j} {t} -1 {run} {procs} -1 -1 {procs} {req} -1 1 {j % 5} 1 -1 1 1 -1 -1")
        if draw(st.integers(0, 30)) == 0:
            lines.append("; a comment between records")
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    log=_logs(),
    chunk=st.integers(1, 12),
    policy=st.sampled_from([("easy", "linear"), ("easy", "isolated"), ("conservative", "linear"), ("fcfs", "slurm-tree")]),
    kill=st.booleans(),
    step=st.sampled_from([1, 60]),
    spill=st.sampled_from([1, 1 << 20]),
)
def test_random_logs_stream_to_the_same_files(log: str, chunk: int, policy: tuple[str, str], kill: bool, step: int, spill: int, tmp_path_factory, monkeypatch) -> None:
    from toposched.utilization import BusySamples

    monkeypatch.setattr(BusySamples, "SPILL_SAMPLES", spill)  # 1: final samples written out at every drain
    d = tmp_path_factory.mktemp("rand")
    p = d / "log.swf"
    p.write_text(log)
    config = RunConfig(queue=policy[0], alloc=policy[1], kill_at_walltime=kill, utilization_step_s=step)
    fabric = load_fabric("fattree:K=4,S=4,P=2")  # 32 nodes: jobs of 40 never fit
    simulate(read_trace(p), fabric, config).write(d / "whole")
    simulate_stream(p, fabric, config, d / "stream", chunk_jobs=chunk)
    _same_files(d / "whole", d / "stream")


def test_cli_interrupt_exits_130_with_partial_results(tmp_path: Path, capsys, monkeypatch) -> None:
    """^C during a streamed `simulate`: exit status 130, the message, complete: false."""
    from toposched import stream

    real = stream._Run._drain
    count = 0

    def drain(self) -> None:
        nonlocal count
        count += 1
        if count == 5:
            raise KeyboardInterrupt
        real(self)

    monkeypatch.setattr(stream._Run, "_drain", drain)
    out = tmp_path / "o"
    code, text = _cli(["simulate", "--trace", str(KTH), "--system", "fattree:K=20,S=5,P=1", "--out", str(out), "--quiet", "--stream", "--stream-chunk-jobs", "500"], capsys)
    assert code == 130 and "interrupted" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and 0 < summary["jobs"]["replayed"] < summary["jobs"]["in_workload"] <= 6000


def test_leftovers_of_a_killed_streamed_run_are_removed(tmp_path: Path) -> None:
    """The temporary directory is named like a staging directory: one left by a run that
    is gone (pid 2^22 + 1 is above Linux's pid_max default) is removed by the next run,
    and a run leaves none of its own."""
    stale = tmp_path / f".o.toposched-staging-{2**22 + 1}-stream-abc"
    stale.mkdir()
    (stale / "jobs.parquet").write_bytes(b"x")
    simulate_stream(HPC2N, load_fabric("fattree:K=8,S=4,P=4"), RunConfig(), tmp_path / "o", chunk_jobs=300)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


def test_sigint_is_taken_between_steps(tmp_path: Path) -> None:
    """A real SIGINT (as from ^C) in the middle of a streamed replay: taken at the next
    point between steps, every finished job written once (the same rows as the whole
    replay's), complete false; the previous SIGINT handler is back afterwards."""
    import os
    import signal

    fabric = load_fabric("fattree:K=20,S=5,P=1")
    calls = 0

    def progress(submitted: int, total: int | None) -> None:
        nonlocal calls
        calls += 1
        if calls == 30:
            os.kill(os.getpid(), signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)
    run = simulate_stream(KTH, fabric, RunConfig(), tmp_path / "s", chunk_jobs=50, progress=progress)
    assert signal.getsignal(signal.SIGINT) is before
    assert run.summary["complete"] is False
    part = pq.read_table(tmp_path / "s" / "jobs.parquet")
    whole = simulate(read_trace(KTH), fabric, RunConfig()).jobs
    ids = part.column("job_id").to_pylist()
    assert 0 < len(ids) == len(set(ids)) < len(whole)
    by_id = {j: i for i, j in enumerate(whole.column("job_id").to_pylist())}
    assert part.column("start_s").to_pylist() == [whole.column("start_s")[by_id[j]].as_py() for j in ids]
    assert run.summary["jobs"]["replayed"] == len(ids)

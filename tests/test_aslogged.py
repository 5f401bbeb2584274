"""Tests of the extended-SWF reader with node lists (toposched.workload.swf_nodes) and of
the as-logged replay (toposched.aslogged): APH of the real placements in the wagap trace
and the sacct data, host mapping and its reports, same outputs as simulate(), the CLI."""

from __future__ import annotations

import doctest
import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from toposched import aslogged
from toposched.aslogged import fabric_from_hosts, hosts_of, natural_key, rack_key, replay_as_logged, topology_conf_text
from toposched.check import check_run_dir
from toposched.cli import main
from toposched.errors import InputError, TraceFormatError
from toposched.nodelists import node_lists
from toposched.simulate import RunConfig, simulate
from toposched.topology import load_fabric
from toposched.workload import detect_format, read_trace
from toposched.workload.model import Workload
from toposched.workload.swf import read_swf
from toposched.workload.swf_nodes import parse_node_list, read_alea_machines, read_swf_with_nodes

from conftest import PBS_SAMPLE as PBS
from conftest import SLURM, TRACES, WAGAP

SACCT = SLURM / "ubccr_ub-hpc_sacct-P-all_submitline_multiline.log"
MEDIUM = SLURM / "ubccr_medium-cluster_topology.conf"


@lru_cache(maxsize=None)
def wagap() -> Workload:
    return read_trace(WAGAP)


def independent_aph(hosts: list[str], leaf_of: dict[str, int]) -> float:
    """APH on a one-pod tree: 2 hops between nodes of different leaves, 0 within one."""
    leaves = np.array([leaf_of[h] for h in hosts])
    n = len(leaves)
    same = sum(int(c) * (int(c) - 1) for c in np.unique(leaves, return_counts=True)[1])
    return 2.0 * (n * (n - 1) - same) / (n * (n - 1))


def test_module_doctest() -> None:
    assert doctest.testmod(aslogged).failed == 0


# --------------------------------------------------------------------------- wagap reader


def test_wagap_node_lists() -> None:
    w = wagap()
    assert detect_format(WAGAP) == "swf-nodes" and w.format == "swf-nodes"
    assert (len(w), w.records, w.skipped) == (17_898, 17_900, {"unknown_runtime": 2})
    hosts = w.extra["logged_hosts"]
    assert hosts[0] == ["1241"] and w.extra["pbs_queue"][0] == "q_1d"
    assert w.extra["pbs_request"][0] == "1:ppn=64:x86_64:cl_zewura#excl"
    distinct = hosts_of(w)
    assert len(distinct) == 44 == w.settings["distinct_node_ids"]
    assert (distinct[0], distinct[-1]) == ("1129", "1288")
    # size = distinct nodes; 8,580 multi-CPU jobs changed from "procs / 1"
    assert w["nodes"].tolist() == [len(h) for h in hosts]
    assert w.repairs == {"nodes_from_node_list": 8_580}
    assert np.bincount(w["nodes"]).tolist()[1:] == [17_564, 95, 18, 92, 0, 9, 0, 118, 0, 2]
    # one node id per CPU: the list is as long as the allocated processors
    assert w.settings["node_list_length_differs_from_procs"] == 0
    # logged start = submit + wait (SWF field 3), from the SWF reader
    plain = read_swf(WAGAP)
    np.testing.assert_array_equal(w.extra["logged_start_s"], plain.extra["logged_start_s"])
    np.testing.assert_array_equal(w["submit_s"], plain["submit_s"])


def test_wagap_machines_do_not_name_the_nodes() -> None:
    clusters = read_alea_machines(TRACES / "alea_wagap-2013.swf.machines")
    assert [(c.name, c.nodes, c.cpus_per_node) for c in clusters] == [("zewura", 20, 80), ("zegox", 48, 12)]
    w = wagap()
    assert w.settings["machines"]["clusters"][0]["name"] == "zewura"
    # 68 nodes in the clusters, 44 distinct ids in the log, none of them 0..67
    assert sum(c.nodes for c in clusters) == 68
    assert min(int(h) for h in hosts_of(w)) > 68


def test_machines_file_beside_a_gzipped_log(tmp_path: Path) -> None:
    """`<log>.machines` first; for `x.swf.gz` also Alea's own name, `x.swf.machines`."""
    import gzip

    log = tmp_path / "x.swf.gz"
    log.write_bytes(gzip.compress(b"1 0 5 10 2 -1 -1 2 100 -1 1 1 1 1 1 1 -1 -1 {7,8} q r\n", mtime=0))
    assert "machines" not in read_swf_with_nodes(log).settings
    (tmp_path / "x.swf.machines").write_text("0 alea 4 2 1 1000\n")
    assert read_swf_with_nodes(log).settings["machines"]["clusters"][0]["name"] == "alea"
    (tmp_path / "x.swf.gz.machines").write_text("0 first 4 2 1 1000\n")
    assert read_swf_with_nodes(log).settings["machines"]["clusters"][0]["name"] == "first"
    assert "machines" not in read_swf_with_nodes(log, machines=None).settings


def test_plain_read_ignores_node_lists() -> None:
    w = read_trace(WAGAP, format="swf")
    assert "logged_hosts" not in w.extra
    with pytest.raises(InputError, match="as-logged needs the hosts"):
        replay_as_logged(w, fabric_from_hosts(["1"], 1))


def test_swf_node_list_errors(tmp_path: Path) -> None:
    base = "1 0 5 10 2 -1 -1 2 100 -1 1 1 1 1 1 1 -1 -1"
    p = tmp_path / "x.swf"
    p.write_text(f"{base} {{7,7,8}} q r\n{base.replace('1 0', '2 1', 1)} {{7,x y}} q r\n")
    assert detect_format(p) == "swf-nodes"
    with pytest.raises(TraceFormatError) as ei:
        read_swf_with_nodes(p)
    assert (ei.value.line, ei.value.field) == (2, "node_list")
    w = read_swf_with_nodes(p, lenient=True)
    # "{7,x" is the 19th field; the record is skipped and counted
    assert (len(w), w.records, w.skipped) == (1, 2, {"malformed_line": 1})
    assert w.extra["logged_hosts"] == [["7", "8"]] and w["nodes"].tolist() == [2]
    assert w.settings["lenient_examples"][0].startswith("line 2: field node_list: ")
    w = read_swf_with_nodes(p, lenient=True, size_from_node_list=False)
    assert w["nodes"].tolist() == [2] and "nodes_from_node_list" not in w.repairs


def test_parse_node_list() -> None:
    assert parse_node_list("{3,3,1,3}") == ["3", "1"]
    assert parse_node_list("{}") == [] == parse_node_list("-1")
    for bad in ("3,1", "{3,,1}", "{3 1}", "{"):
        with pytest.raises(ValueError):
            parse_node_list(bad)


# --------------------------------------------------------------------------- wagap replay


def test_wagap_as_logged_aph() -> None:
    """APH of the real wagap placements, on the assumed fabric: the 44 node ids in
    natural order, 16 per leaf, one pod (docs/as-logged.md)."""
    w = wagap()
    fab = fabric_from_hosts(hosts_of(w), nodes_per_leaf=16, name="wagap-44")
    assert [len(leaf.nodes) for leaf in fab.spec.pods[0].leaves] == [16, 16, 12]
    r = simulate(w, fab, RunConfig(alloc="as-logged"))
    s = r.summary
    assert s["jobs"]["replayed"] == 17_898 and s["skipped_reasons"] == {}
    assert s["policy"]["queue"] == "as-logged" and s["policy"]["alloc"] == "as-logged"
    # the measured numbers quoted in docs/as-logged.md
    assert s["aph"]["mean"] == pytest.approx(0.9540, abs=1e-4)
    assert s["aph"]["median"] == pytest.approx(1.0714, abs=1e-4)
    assert s["aph"]["max"] == 2.0
    # independent recomputation from the log's host lists
    leaf_of = {h: k for k, leaf in enumerate(fab.spec.pods[0].leaves) for h in leaf.nodes}
    multi = [h for h in w.extra["logged_hosts"] if len(h) > 1]
    assert len(multi) == 334
    assert s["aph"]["mean"] == pytest.approx(np.mean([independent_aph(h, leaf_of) for h in multi]), rel=1e-12)
    classes = r.jobs.column("alloc_class").to_numpy()
    nodes = r.jobs.column("nodes").to_numpy()
    assert int(((classes == 2) & (nodes > 1)).sum()) == 255  # multi-node jobs spanning leaves
    # start = submit + wait, end = start + run time (never clipped)
    start = r.jobs.column("start_s").to_numpy()
    np.testing.assert_array_equal(start, w.extra["logged_start_s"])
    np.testing.assert_array_equal(r.jobs.column("end_s").to_numpy() - start, w["runtime_s"])
    assert not r.jobs.column("killed").to_numpy().any()
    # wagap ran several jobs per node: reported, and utilization counts a node once
    al = s["policy"]["as_logged"]
    assert al["jobs_sharing_a_node"] > 10_000 and al["unmapped_hosts"] == 0
    assert 0 < s["utilization"]["mean"] <= 1 and r.utilization.column("utilization").to_numpy().max() <= 1


def test_wagap_aph_depends_on_the_assumed_leaf_size() -> None:
    w = wagap()
    means = {k: replay_as_logged(w, fabric_from_hosts(hosts_of(w), k)).summary["aph"]["mean"] for k in (8, 44)}
    assert means[8] == pytest.approx(1.4621, abs=1e-4)
    assert means[44] == 0.0  # one leaf: every job is local


# --------------------------------------------------------------------------- sacct


def test_sacct_hosts_are_not_on_the_medium_cluster_fabric() -> None:
    w = read_trace(SACCT)
    fab = load_fabric(str(MEDIUM))
    r = simulate(w, fab, RunConfig(alloc="as-logged"))
    assert len(r.jobs) == 0 and len(r.skipped) == len(w) == 2
    reasons = r.skipped.column("reason").to_pylist()
    assert reasons[0] == (
        "host not on fabric; host cpn-v09-10 is not on fabric ubccr_medium-cluster_topology "
        "(ubccr_medium-cluster_topology.conf has no leaf listing it; its nodes are "
        "b[001-024],g[001-008],gn[001-002],m[001-100],n[001-100])"
    )
    assert reasons[1].startswith(
        "host not on fabric; hosts cpn-q06-04-01, cpn-q06-04-02, cpn-q07-04-01, cpn-q07-04-02, cpn-q08-04-01 and 11 more are not"
    )
    assert r.summary["skipped_reasons"] == {"host not on fabric": 2}
    al = r.summary["policy"]["as_logged"]
    assert al["unmapped_hosts"] == 17 and al["jobs_placed"] == 0
    assert "has no leaf listing it" in al["unmapped_because"]
    # a generated fabric says so
    reason = replay_as_logged(w, load_fabric("cab")).skipped.column("reason").to_pylist()[0]
    assert "fabric cab is generated and names its nodes cab0000..cab1295" in reason


def test_sacct_as_logged_aph_on_a_fabric_from_its_hosts() -> None:
    w = read_trace(SACCT)
    hosts = hosts_of(w)
    assert len(hosts) == 17
    # rack_key: one leaf per rack (cpn-q06-04-*, ..., cpn-u25-*): the 16-node job spans 8 leaves of 2
    fab = fabric_from_hosts(hosts, 16, leaf_key=rack_key)
    r = replay_as_logged(w, fab)
    assert len(r.jobs) == 2
    aph = dict(zip(r.jobs.column("job_id").to_pylist(), r.jobs.column("aph").to_pylist()))
    assert aph[7957382] is None  # one node
    assert aph[9067954] == pytest.approx(2 * (1 - 16 / 240)) == pytest.approx(1.8667, abs=1e-4)
    # natural order, 8 per leaf: the q-racks on one leaf, the u-racks on another
    r8 = replay_as_logged(w, fabric_from_hosts(hosts, 8))
    assert r8.summary["aph"]["mean"] == pytest.approx(2 * 128 / 240)
    # the 5 printings of job 7957382 are one job (4 duplicate records): nobody shares a node
    assert r.summary["policy"]["as_logged"]["jobs_sharing_a_node"] == 0


def test_pbs_as_logged() -> None:
    w = read_trace(PBS)
    r = replay_as_logged(w, fabric_from_hosts(hosts_of(w), 4))
    assert len(r.jobs) == 7
    assert r.skipped.to_pylist() == [
        {"job_id": 7904, "submit_s": 224026499, "nodes": 1, "reason": "no hosts in the log; the log names no node for this job"}
    ]
    nodes = dict(zip(r.jobs.column("job_id").to_pylist(), r.jobs.column("nodes").to_pylist()))
    assert nodes[6] == 4 and nodes[2994] == 5


def test_a_logged_start_before_the_earliest_submit_is_a_start(tmp_path: Path) -> None:
    """sacct and PBS times are relative to the earliest submit, and "no start" was -1: a
    job whose Start (or start) came before that submit got a negative start and was
    skipped as "no start in the log". It is placed, counted as starting before its submit,
    and its nodes are busy from the series' first instant."""
    head = "JobIDRaw|JobID|Submit|Start|End|Elapsed|ElapsedRaw|Timelimit|NNodes|AllocCPUS|ReqCPUS|NodeList|State|Partition|User|Account|QOS|JobName\n"
    (tmp_path / "jobs.log").write_text(
        head
        + "1|1|2024-01-01T00:10:00|2024-01-01T00:00:00|2024-01-01T00:20:00|00:20:00|1200|01:00:00|2|2|2|n[1-2]|COMPLETED|p|u|a|q|j\n"
        + "2|2|2024-01-01T00:20:00|2024-01-01T00:20:00|2024-01-01T00:30:00|00:10:00|600|01:00:00|1|1|1|n3|COMPLETED|p|u|a|q|j\n"
        + "3|3|2024-01-01T00:20:00|Unknown|Unknown|00:00:00|0|01:00:00|1|1|1|n4|CANCELLED|p|u|a|q|j\n"
    )
    pbs = "01/01/2024 00:30:00;E;7.srv;qtime={q} start={s} end={e} exec_host=n4/0 Resource_List.nodes=1 resources_used.walltime=00:10:00\n"
    (tmp_path / "pbs.log").write_text(pbs.format(q=1704067800, s=1704067200, e=1704067800) + pbs.format(q=1704068400, s=0, e=1704068400).replace("7.srv", "8.srv"))
    fab = fabric_from_hosts(["n1", "n2", "n3", "n4"], 2)
    w = read_trace(tmp_path / "jobs.log", lenient=True, missing_runtime="zero")
    r = replay_as_logged(w, fab, RunConfig(alloc="as-logged", utilization_step_s=300))
    assert r.jobs.column("job_id").to_pylist() == [1, 2] and r.jobs.column("start_s").to_pylist() == [-600, 600]
    assert w.extra["logged_start_s"].tolist() == [-600, 600, -1] and w.extra["logged_started"].tolist() == [True, True, False]
    assert r.skipped.column("job_id").to_pylist() == [3]
    assert r.summary["policy"]["as_logged"]["jobs_starting_before_submit"] == 1
    # samples at 0, 300, 600, 900, 1200: job 1 holds 2 nodes until 600, job 2 one from 600
    assert r.utilization.column("busy_nodes").to_pylist() == [2, 2, 1, 1, 0]
    p = read_trace(tmp_path / "pbs.log", format="pbs", missing_runtime="zero")
    rp = replay_as_logged(p, fab)
    assert rp.jobs.column("job_id").to_pylist() == [7] and rp.jobs.column("start_s").to_pylist() == [-600]
    assert rp.skipped.column("job_id").to_pylist() == [8]  # start=0: never ran
    assert p.extra["logged_start_s"].tolist() == [-600, -1] and p.extra["logged_started"].tolist() == [True, False]


# --------------------------------------------------------------------------- mapping rules


def small(hosts: list[list[str]], starts: list[int], nodes: list[int] | None = None) -> Workload:
    n = len(hosts)
    return Workload(
        columns={
            "job_id": np.arange(1, n + 1),
            "submit_s": np.zeros(n, np.int64),
            "nodes": np.array(nodes or [max(len(h), 1) for h in hosts]),
            "walltime_s": np.full(n, 100),
            "runtime_s": np.full(n, 50),
            "procs": np.ones(n, np.int64),
            "line": np.arange(1, n + 1),
        },
        source="inline",
        format="test",
        extra={"logged_hosts": hosts, "logged_start_s": np.array(starts, np.int64)},
    )


def test_mapping_rules() -> None:
    fab = fabric_from_hosts(["n1", "n2", "n3.cluster.org", "m1"], 2)
    w = small(
        [["n1.cluster.org", "n3"], ["n2"], [], ["n9", "n1"], ["n1"], ["n2", "n1"]],
        [10, 10, 10, 10, -1, 60],
        nodes=[2, 3, 1, 2, 1, 2],
    )
    r = replay_as_logged(w, fab)
    assert r.jobs.column("job_id").to_pylist() == [1, 2, 6]
    assert r.jobs.column("nodes").to_pylist() == [2, 1, 2]
    assert r.summary["input"]["repairs"] == {"nodes_from_logged_hosts": 1}  # job 2: 3 -> 1
    reasons = dict(zip(r.skipped.column("job_id").to_pylist(), r.skipped.column("reason").to_pylist()))
    assert reasons == {
        3: "no hosts in the log; the log names no node for this job",
        4: "host not on fabric; host n9 is not on fabric hosts-4 (not among the hosts the fabric was built from)",
        5: "no start in the log; the log names hosts but no start time",
    }
    al = r.summary["policy"]["as_logged"]
    assert al["hosts_matched_by_short_name"] == 2 and al["unmapped_host_examples"] == ["n9"]
    # jobs 1 and 2 share no node; job 6 starts when they end
    assert al["jobs_sharing_a_node"] == 0
    # natural order m1, n1, n2, n3: leaves [m1, n1], [n2, n3]
    ids = node_lists(r.jobs)
    assert ids == [[1, 3], [2], [1, 2]]
    assert r.jobs.column("alloc_class").to_pylist() == [2, 1, 2]


def test_utilization_counts_a_shared_node_once() -> None:
    fab = fabric_from_hosts(["a", "b"], 2)
    w = small([["a"], ["a"], ["b"]], [0, 0, 120])
    r = replay_as_logged(w, fab, RunConfig(alloc="as-logged", utilization_step_s=10))
    busy = r.utilization.column("busy_nodes").to_pylist()
    assert busy[:5] == [1, 1, 1, 1, 1] and busy[12] == 1  # a (twice), then b
    assert r.summary["policy"]["as_logged"]["jobs_sharing_a_node"] == 2


def test_same_outputs_as_simulate(tmp_path: Path) -> None:
    fab = fabric_from_hosts([f"n{i}" for i in range(6)], 3)
    w = small([["n0", "n4"], ["n1"], ["n2", "n3", "n5"]], [0, 5, 60])
    ref = simulate(w, fab, RunConfig())
    got = simulate(w, fab, RunConfig(alloc="as-logged"))
    assert got.jobs.schema == ref.jobs.schema
    assert got.skipped.schema == ref.skipped.schema
    assert got.utilization.schema == ref.utilization.schema
    assert set(got.summary) == set(ref.summary)
    assert set(got.summary["policy"]) == set(ref.summary["policy"]) | {"as_logged"}
    paths = got.write(tmp_path / "out")
    assert pq.read_table(paths["jobs"]).num_rows == 3
    assert check_run_dir(tmp_path / "out") == []


def test_natural_order_and_fabric_from_hosts() -> None:
    assert sorted(["n10", "n2", "n1", "m3"], key=natural_key) == ["m3", "n1", "n2", "n10"]
    assert rack_key("cpn-q06-04-01") == "cpn-q06-04-" and rack_key("cpn-u22-16") == "cpn-u22-"
    fab = fabric_from_hosts(["r1-3", "r1-1", "r2-1", "r1-2"], 2, leaf_key=rack_key, name="x")
    assert [leaf.nodes for leaf in fab.spec.pods[0].leaves] == [["r1-1", "r1-2"], ["r1-3"], ["r2-1"]]
    assert fab.spec.levels == 2 and "an assumption" in fab.spec.notes[0]
    with pytest.raises(ValueError):
        fabric_from_hosts([], 4)
    with pytest.raises(ValueError):
        fabric_from_hosts(["a"], 0)


# --------------------------------------------------------------------------- command line


def test_cli_as_logged_wagap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Write the assumed fabric as a topology.conf and replay wagap from the command line."""
    conf = tmp_path / "wagap-44.conf"
    conf.write_text(topology_conf_text(fabric_from_hosts(hosts_of(wagap()), 16, name="wagap-44")))
    out = tmp_path / "out"
    rc = main(["simulate", "--trace", str(WAGAP), "--system", str(conf), "--alloc", "as-logged", "--out", str(out), "--quiet"])
    assert rc == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["policy"]["queue"] == "as-logged" and s["jobs"]["replayed"] == 17_898
    assert s["aph"]["mean"] == pytest.approx(0.9540, abs=1e-4)
    # the real schedule shared nodes; `toposched check` says so
    assert any(p.startswith("node ") for p in check_run_dir(out))


@pytest.mark.parametrize("command", ["simulate", "compare", "contention"])
@pytest.mark.parametrize("transform", ["scale:2", "cores:4", "cap:3"])
def test_a_transform_of_node_counts_is_refused_with_as_logged(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, transform: str) -> None:
    """as-logged takes each job's nodes from its logged hosts: --transform scale:2 replayed
    the log's own schedule (the same APH as without it) while the summary listed scale:2
    and counted every job as scaled. A window or drop:N still applies."""
    conf = tmp_path / "wagap-44.conf"
    conf.write_text(topology_conf_text(fabric_from_hosts(hosts_of(wagap()), 16, name="wagap-44")))
    out = tmp_path / "out"
    allocs = ["--allocs", "linear,as-logged", "--scenarios", "none", "--jobs", "1", "--no-report"] if command == "compare" else ["--alloc", "as-logged"]
    argv = [command, "--trace", str(WAGAP), "--system", str(conf), *allocs, "--out", str(out), "--quiet", "--transform", "days:2"]
    capsys.readouterr()
    assert main([*argv, transform]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip() and not line.startswith("toposched: ")]
    assert err == [f"error: --transform: {transform} changes node counts, which --alloc as-logged takes from the log's hosts "
                   "(the replay would be the log's own schedule); with as-logged use days:N, days:N@START or drop:N only"]
    assert not out.exists()
    if command == "simulate":
        assert main([*argv, "drop:2"]) == 0


def test_cli_as_logged_unmapped(tmp_path: Path) -> None:
    out = tmp_path / "out"
    rc = main(["simulate", "--trace", str(PBS), "--system", "cab", "--alloc", "as-logged", "--out", str(out), "--quiet"])
    assert rc == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["skipped_reasons"] == {"host not on fabric": 7, "no hosts in the log": 1}
    skipped = pq.read_table(out / "skipped.parquet")
    assert "host i02n33, i02n32" not in skipped.column("reason").to_pylist()[0]
    assert "hosts i02n33, i02n32, i02n31, i02n30 are not on fabric cab" in skipped.column("reason").to_pylist()[0]


def test_a_short_name_several_fabric_nodes_share_is_reported_as_such() -> None:
    """A log host n1 on a fabric of n1.a.org and n1.b.org matched neither (rightly), but
    was reported as "not on fabric ... (not among the hosts the fabric was built from)",
    which it is, twice."""
    fab = fabric_from_hosts(["n1.a.org", "n1.b.org", "n2.a.org"], 2)
    r = replay_as_logged(small([["n1"], ["n2"], ["n1", "x9"]], [0, 0, 0]), fab)
    assert r.jobs.column("job_id").to_pylist() == [2]
    assert r.skipped.column("reason").to_pylist() == [
        "host not on fabric; host n1 matches 2 nodes of fabric hosts-3 by its short name (n1.a.org, n1.b.org), none exactly",
        "host not on fabric; host x9 is not on fabric hosts-3 (not among the hosts the fabric was built from); "
        "host n1 matches 2 nodes of fabric hosts-3 by its short name (n1.a.org, n1.b.org), none exactly",
    ]


def test_fabric_from_hosts_and_its_topology_conf_refuse_names_they_would_mangle() -> None:
    """fabric_from_hosts("n1,n2", 2) built a fabric of the hosts 'n', '1', ',' and '2'; an
    empty host name was silently lost by topology_conf_text, one with a space split the
    line; a name with '[' or ',' ended in hostlist's bare 'BadHostlist: forbidden character'."""
    with pytest.raises(TypeError, match="not one string"):
        fabric_from_hosts("n1,n2", 2)
    for hosts in (["n1", ""], ["x y", "z"], ["n1", 5]):
        with pytest.raises(ValueError, match="host names must be non-empty strings without spaces"):
            fabric_from_hosts(hosts, 2)
    with pytest.raises(ValueError, match=r"node 'a\[1\]' of leaf leaf0 cannot be written in a topology.conf"):
        topology_conf_text(fabric_from_hosts(["a[1]", "b"], 2))


def test_node_lists_after_a_first_record_without_one_are_pointed_at(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The format is guessed from the first record: a log whose first record has no node
    list is read as plain SWF, and as-logged said the log gives no hosts, with no word of
    --format swf-nodes, which reads them."""
    log = tmp_path / "jobs.swf"
    log.write_text("1 0 10 100 2 -1 -1 2 200 -1 1 1 1 1 -1 1 1 1\n2 5 5 50 1 -1 -1 1 200 -1 1 1 1 1 -1 1 1 1 {1}\n")
    conf = tmp_path / "hosts.conf"
    conf.write_text(topology_conf_text(fabric_from_hosts(["1", "2"], 2)))
    argv = ["simulate", "--trace", str(log), "--system", str(conf), "--alloc", "as-logged", "--out", str(tmp_path / "o"), "--quiet"]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().endswith("(the format is guessed from the first record: if later records have {n,n,...} node lists, --format swf-nodes reads them)")
    assert main(argv + ["--format", "swf-nodes"]) == 0
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["policy"]["as_logged"]["jobs_placed"] == 1


def test_logged_columns_of_a_workload_built_by_hand_are_checked() -> None:
    """A Workload built from arrays with one host list too few ended in IndexError, and a
    job's hosts given as one string were read as its characters ('ab': hosts a and b)."""
    fab = fabric_from_hosts(["a", "b"], 2)
    w = small([["a"], ["b"]], [0, 0])
    w.extra["logged_hosts"] = [["a"]]
    with pytest.raises(InputError, match=r"extra\['logged_hosts'\] has 1 entries for 2 jobs"):
        replay_as_logged(w, fab)
    w.extra["logged_hosts"] = ["a", "ab"]
    with pytest.raises(InputError, match=r"extra\['logged_hosts'\]\[0\] is 'a': each job's hosts must be a list of host names"):
        replay_as_logged(w, fab)
    w.extra["logged_hosts"] = [["a"], ["b"]]
    w.extra["logged_start_s"] = np.array([0])
    with pytest.raises(InputError, match=r"extra\['logged_start_s'\] has 1 entries for 2 jobs"):
        replay_as_logged(w, fab)


@pytest.mark.parametrize("flags", [["--queue", "conservative"], ["--queue-depth", "8"], ["--switches", "2"], ["--run-on"], ["--kill-at-limit"], ["--event-order", "per-event"], ["--queue-order", "x:Y"], ["--profile", "flux-sc18"]])
def test_cli_as_logged_refuses_queue_and_engine_settings(tmp_path: Path, flags: list[str], capsys) -> None:
    """as-logged runs no queue and kills nothing: these flags were accepted, did nothing,
    and were recorded in summary.json as if they had been used."""
    rc = main(["simulate", "--trace", str(PBS), "--system", "cab", "--alloc", "as-logged", *flags, "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(f"error: {flags[0]}: has no effect with --alloc as-logged"), err
    assert not (tmp_path / "o" / "summary.json").exists()


def test_topology_conf_text_reads_back_as_the_same_fabric(tmp_path):
    """A pod of one leaf named as its leaf (a lone leaf of a 3-level file, a file of one
    leaf) was written twice ('SwitchName=lone Nodes=..' and 'SwitchName=lone Switches=lone':
    'already defined'), and nodes came back sorted by python-hostlist (BNL's
    'hpc[001-019],gpu[001-013]' as 'gpu[001-013],hpc[001-019]': other node ids)."""
    from toposched.topology import load_fabric
    from toposched.topology_conf import read_topology_conf_text

    from conftest import SLURM

    odd = tmp_path / "odd.conf"
    odd.write_text(
        "SwitchName=core Switches=podA,lone\nSwitchName=podA Switches=la[1-2]\nSwitchName=la1 Nodes=a[01-03]\n"
        "SwitchName=la2 Nodes=a[04-10]\nSwitchName=lone Nodes=z1\n"
    )
    one = tmp_path / "one.conf"
    one.write_text("SwitchName=s0 Nodes=n[1-4]\n")
    for system in (odd, one, SLURM / "bnl-sdcc_nsls2_topology.conf", "hype"):
        fabric = load_fabric(str(system))
        back = read_topology_conf_text(topology_conf_text(fabric), "back.conf")
        shape = lambda spec: [(p.name, [(leaf.name, leaf.nodes) for leaf in p.leaves]) for p in spec.pods]
        assert (back.levels, shape(back)) == (fabric.spec.levels, shape(fabric.spec)), system

"""A site's own application mix for the replay's network model (docs/network.md, "A site's
own mix"): `--network` as a JSON, TOML or CSV table of rules on job features; its parsing,
its errors (one line each, naming file, line, field and flag), which rule takes each job
against a hand reading of the log, per-rule counts, and determinism."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from conftest import DATA, PBS_SAMPLE, REPO, SLURM, THUNDER
from toposched.cli import main
from toposched.errors import InputError
from toposched.network_spec import UNBOUNDED, Rule, match_rules, parse_network_spec
from toposched.workload import read_trace

WINDOW = DATA / "atlas-window-120.swf"  # 120 jobs of Atlas: partition 1, users, app numbers

# One table, three spellings. Rule order matters: partition 2 before the size bins, the
# application before the short-job rule.
RULES = [
    {"max_nodes": 1, "pattern": "none", "comm_fraction": 0.0},
    {"partition": 2, "pattern": "pairs", "comm_fraction": 0.1},
    {"app": 6, "min_nodes": 8, "pattern": "subcom-a2a", "phi": 0.4},
    {"max_walltime_s": 3600, "pattern": "stencil3d", "comm_fraction": 0.1},
    {"max_nodes": 16, "pattern": "stencil3d", "comm_fraction": 0.3},
    {"pattern": "stencil4d", "comm_fraction": 0.3},
]
CSV = """\
# Thunder's mix (a comment line)
max_nodes,min_nodes,partition,app,max_walltime_s,pattern,comm_fraction,phi
1,,,,,none,0,

,,2,,,pairs,0.1,
,8,,6,,subcom-a2a,,0.4
,,,,3600,stencil3d,0.1,
16,,,,,stencil3d,0.3,
,,,,,stencil4d,0.3,
"""
TOML = """\
seed = 0  # the defaults, as the CSV form has them

[[bins]]
max_nodes = 1
pattern = "none"
comm_fraction = 0

[[bins]]
partition = 2
pattern = "pairs"
comm_fraction = 0.1

[[bins]]
app = 6
min_nodes = 8
pattern = "subcom-a2a"
phi = 0.4

[[bins]]
max_walltime_s = 3600
pattern = "stencil3d"
comm_fraction = 0.1

[[bins]]
max_nodes = 16
pattern = "stencil3d"
comm_fraction = 0.3

[[bins]]
pattern = "stencil4d"
comm_fraction = 0.3
"""


def _spellings(tmp_path: Path) -> dict[str, Path]:
    files = {"csv": tmp_path / "mix.csv", "toml": tmp_path / "mix.toml", "json": tmp_path / "mix.json"}
    files["csv"].write_text(CSV)
    files["toml"].write_text(TOML)
    files["json"].write_text(json.dumps({"bins": RULES}))
    return files


# ----------------------------------------------------------------------------- parsing


def test_the_three_spellings_give_one_table(tmp_path):
    files = _spellings(tmp_path)
    specs = {k: parse_network_spec(str(p)) for k, p in files.items()}
    want = (
        Rule(1, "none", 0.0, None),
        Rule(UNBOUNDED, "pairs", 0.1, None, where=(("partition", "2"),)),
        Rule(UNBOUNDED, "subcom-a2a", None, 0.4, min_nodes=8, where=(("app", "6"),)),
        Rule(UNBOUNDED, "stencil3d", 0.1, None, max_walltime_s=3600),
        Rule(16, "stencil3d", 0.3, None),
        Rule(UNBOUNDED, "stencil4d", 0.3, None),
    )
    for kind, spec in specs.items():
        assert spec.mapping == "bins" and spec.bins == want, kind
    # each rule's line in its file, for errors (the blank CSV line is skipped, counted)
    assert specs["csv"].bin_lines == (3, 5, 6, 7, 8, 9)
    assert specs["toml"].bin_lines == (3, 8, 13, 19, 24, 29)
    assert specs["json"].bin_lines == (None,) * 6
    assert specs["csv"].file_sha256 == hashlib.sha256(CSV.encode()).hexdigest()
    # a spreadsheet's byte-order mark is no part of the first column's name
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + CSV.encode())
    assert parse_network_spec(str(bom)).bins == want
    # the CSV table beside other settings on the command line
    s = parse_network_spec(f"bins={files['csv']},reference=alone,seed=3")
    assert (s.bins, s.reference, s.seed, s.bins_source) == (want, "alone", 3, str(files["csv"]))


def test_the_shipped_examples_are_one_table():
    csv_spec = parse_network_spec(str(REPO / "examples" / "site-mix.csv"))
    toml_spec = parse_network_spec(str(REPO / "examples" / "site-mix.toml"))
    assert csv_spec.bins == toml_spec.bins and len(csv_spec.bins) == 7
    assert (toml_spec.seed, toml_spec.reference, toml_spec.settings) == (csv_spec.seed, csv_spec.reference, csv_spec.settings)


# ----------------------------------------------------------------------------- errors

# (file name, contents, what the one line must hold: "file:line", field)
BAD = [
    ("a.csv", "max_nodes,pattern,colour\n1,none,red\n", ("a.csv:1", "field 'colour'", "unknown column")),
    ("b.csv", "max_nodes,pattern,comm_fraction\n1,none,0\n16,warp,0.3\n", ("b.csv:3", "field 'pattern'", "unknown pattern 'warp'")),
    ("c.csv", "max_nodes,pattern,comm_fraction\n1,none,1.5\n", ("c.csv:2", "field 'comm_fraction'", "[0, 1]")),
    ("d.csv", "max_nodes,pattern,comm_fraction\nten,none,0\n", ("d.csv:2", "field 'max_nodes'", "whole number")),
    ("e.csv", "max_nodes,pattern,comm_fraction\n1,none\n", ("e.csv:2", "expected 3 cells")),
    ("f.csv", "max_nodes,pattern,comm_fraction\n128,stencil4d,0.3\n16,stencil3d,0.3\n", ("f.csv:3", "can never take a job", "line 2")),
    ("g.csv", "min_nodes,max_nodes,pattern\n9,8,pairs\n", ("g.csv:2", "field 'min_nodes'", "above max_nodes")),
    ("h.csv", "pattern,comm_fraction,phi\npairs,0.3,0.2\n", ("h.csv:2", "field 'phi'", "not both")),
    ("i.csv", "max_nodes,comm_fraction\n1,0\n", ("i.csv:1", "field 'pattern'", "no pattern column")),
    ("j.csv", "# nothing\n", ("j.csv", "empty table")),
    ("k.csv", "max_nodes,pattern,comm_fraction\n1,,0\n", ("k.csv:2", "field 'pattern'", "needs a pattern")),
    # the core refuses these though their names before the bracket or colon are
    # patterns: they were internal errors
    ("q.csv", "max_nodes,pattern\n1,none\n,sub-a2a(0)\n", ("q.csv:3", "field 'pattern'", "at least 2")),
    ("r.csv", "max_nodes,pattern\n1,none\n,stencil3d(x)\n", ("r.csv:3", "field 'pattern'", "unknown pattern 'stencil3d(x)'")),
    # int() and float() read digit separators: 0_1 was a fraction of 1, 1_0 ten nodes
    ("s.csv", "max_nodes,pattern,comm_fraction\n1,none,0\n,a2a,0_1\n", ("s.csv:3", "field 'comm_fraction'", "got '0_1'")),
    ("t.csv", "max_nodes,pattern\n1_0,none\n,a2a\n", ("t.csv:2", "field 'max_nodes'", "got '1_0'")),
    ("l.csv", "max_nodes;pattern;comm_fraction\n1;none;0\n", ("l.csv:1", "field 'max_nodes;pattern;comm_fraction'", "separated by commas")),
    ("a.toml", "seed = 1\n[[bins]]\npattern = \"pairs\"\ncolour = 3\n", ("a.toml:2", "field 'bins[0].colour'", "unknown key")),
    ("b.toml", "[[bins]]\npattern = \"pairs\"\n[[bins]\n", ("b.toml:3", "not valid TOML")),
    ("c.toml", "seed = \"x\"\n[[bins]]\npattern = \"pairs\"\n", ("c.toml", "field 'seed'", "whole number")),
    ("d.toml", "[[bins]]\nmax_nodes = 4\npattern = \"none\"\n[[bins]]\npattern = \"a2a\"\n[[bins]]\nmax_nodes = 2\npattern = \"pairs\"\n", ("d.toml:6", "field 'bins[2]'", "can never take a job: bins[0]")),
    ("e.toml", "colour = 1\n", ("e.toml", "field 'colour'", "unknown key")),
    ("f.toml", "[[bins]]\npattern = \"pairs\"\npartition = 1.5\n", ("f.toml:1", "field 'bins[0].partition'", "a name or a number")),
    ("g.toml", "[[bins]]\npattern = \"pairs\"\nmax_nodes = true\n", ("g.toml:1", "field 'bins[0].max_nodes'", "whole number")),
    ("a.json", json.dumps({"bins": [{"pattern": "pairs", "user": [1, 2]}]}), ("a.json", "field 'bins[0].user'", "a name or a number")),
    ("b.json", "{\"bins\": [\n{\"pattern\": }]}", ("b.json:2", "not valid JSON")),
    # rules the workload cannot answer: no catch-all, a feature the log does not have,
    # a name where the log has numbers
    ("m.csv", "max_nodes,pattern,comm_fraction\n1,none,0\n16,pairs,0.3\n", ("m.csv", "field 'bins'", "jobs match no rule (the first: job ", "a rule without conditions")),
    ("n.csv", "account,pattern\n7,pairs\n,none\n", ("n.csv:2", "field 'account'", "has no account")),
    ("o.csv", "partition,pattern\ngpu,pairs\n,none\n", ("o.csv:2", "field 'partition'", "numbers, not names; got 'gpu'")),
    ("p.csv", "app,pattern\nlammps,pairs\n,none\n", ("p.csv:2", "field 'app'", "gives app as numbers (the SWF executable number, field 14), not names; got 'lammps'")),
    ("c.json", json.dumps({"bins": [{"partition": "gpu", "pattern": "pairs"}, {"pattern": "none"}]}), ("c.json", "field 'bins[0].partition'", "numbers, not names")),
]


@pytest.mark.parametrize("name,text,expect", BAD, ids=[b[0] for b in BAD])
def test_a_bad_mix_is_one_line_naming_file_line_field_and_flag(tmp_path, capsys, name, text, expect):
    f = tmp_path / name
    f.write_text(text)
    status = main(["simulate", "--trace", str(WINDOW), "--system", "cab", "--out", str(tmp_path / "out"), "--network", str(f), "--quiet"])
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    line = lines[0]
    assert line.startswith(f"error: {f.parent}/{expect[0]}"), line
    for part in expect[1:]:
        assert part in line, line
    assert line.endswith("(given with --network)"), line
    assert not (tmp_path / "out").exists()


def test_missing_files_and_bins_tables_are_one_line(tmp_path, capsys):
    for spec, expect in [(str(tmp_path / "nope.csv"), "nope.csv: network spec file not found"), (f"bins={tmp_path / 'nope.csv'},seed=1", "nope.csv: bins table file not found"), ("bins=mix.toml", "bins=PATH takes a CSV table")]:
        status = main(["simulate", "--trace", str(WINDOW), "--system", "cab", "--out", str(tmp_path / "out"), "--network", spec, "--quiet"])
        err = capsys.readouterr().err.strip().splitlines()
        assert status == 2 and len(err) == 1 and expect in err[0], err


def test_a_key_the_mapping_would_ignore_is_refused_not_dropped(tmp_path, capsys):
    mix = REPO / "examples" / "site-mix.csv"
    toml = tmp_path / "random-with-bins.toml"
    toml.write_text('mapping = "random"\n\n[[bins]]\npattern = "pairs"\ncomm_fraction = 0.1\n')
    for spec, field in [
        (f"mapping=random,bins={mix}", "bins"),  # a bins table the random mapping would not read
        (str(toml), "bins"),
        ("bins,comm=0.5", "comm_fraction"),  # every rule has its own fraction
        ("bins,patterns=a2a", "patterns"),
        ("random,column=app", "column"),
    ]:
        status = main(["simulate", "--trace", str(WINDOW), "--system", "cab", "--out", str(tmp_path / "out"), "--network", spec, "--quiet"])
        err = capsys.readouterr().err.strip().splitlines()
        assert status == 2 and len(err) == 1 and f"field '{field}'" in err[0] and "is not read with mapping=" in err[0], (spec, err)
    # what each mapping does read is still accepted
    for spec in ("heavy", "random,seed=1,comm=0.2-0.5,patterns=a2a+pairs", "bins,reference=alone", f"bins={mix}"):
        assert parse_network_spec(spec) is not None


@pytest.mark.parametrize(
    "spec, field, expect",
    [
        # were internal errors (ValueError from float())
        ("bins,service_levels=zz", "model.service_levels", "unknown table 'zz'"),
        ("bins,bytes=abc", "bytes", "expected a positive number, got 'abc'"),
        # were taken silently, the later one winning
        ("bins,reference=alone,reference=ideal", "reference", "given twice ('reference=alone' and 'reference=ideal')"),
        ("random,comm=0.2,comm_fraction=0.3", "comm_fraction", "given twice ('comm=0.2' and 'comm_fraction=0.3')"),
        ("heavy,comm=0.5", "comm", "given twice ('heavy' and 'comm=0.5')"),
        ("bins,random", "mapping", "given twice ('bins' and 'random')"),
        # phi won and comm_fraction was dropped without a word
        ("random,phi=0.5,comm=0.2", "phi", "phi is given, and comm_fraction"),
        ("column:app,comm_fraction=0.1-0.4,phi=0.2", "phi", "phi is given, and comm_fraction"),
        ("heavy,phi=0.5", "phi", "phi is given, and comm_fraction"),
        # the link sums overflowed: no job slowed and busy utilization 0.0013 instead of 0.24
        ("random,bytes=1e308", "bytes", "expected a positive number up to 1e+200"),
        # digit separators, which int() and float() read: comm=0_1 was a fraction of 1
        ("random,comm=0_1", "comm_fraction", "expected a number or a range like 0.1-0.6, got '0_1'"),
        ("random,seed=1_0", "seed", "expected a whole number, got '1_0'"),
        ("random,service_levels=9+1_0", "model.service_levels", "unknown table '9+1_0'"),
    ],
)
def test_a_spec_with_a_bad_or_repeated_key_is_one_line(tmp_path, capsys, spec, field, expect):
    status = main(["simulate", "--trace", str(WINDOW), "--system", "cab", "--out", str(tmp_path / "out"), "--network", spec, "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and err[0].startswith(f"error: --network: field '{field}': {expect}"), err


@pytest.mark.parametrize(
    "name, text, expect",
    [
        # JSON kept the last of two equal keys, silently (TOML refuses them itself)
        ("dup.json", '{"mapping": "random", "seed": 1, "seed": 2}', "field 'seed': given twice"),
        # true / false read as 1 / 0
        ("bool.toml", 'mapping = "random"\nphi = true\n', "field 'phi': expected a number in [0, 1] or [low, high], got true"),
        ("bool.json", '{"mapping": "random", "comm_fraction": false}', "field 'comm_fraction': expected a number in [0, 1] or [low, high], got false"),
    ],
)
def test_a_spec_file_with_a_repeated_key_or_a_boolean_fraction_is_refused(tmp_path, capsys, name, text, expect):
    spec = tmp_path / name
    spec.write_text(text)
    status = main(["simulate", "--trace", str(WINDOW), "--system", "cab", "--out", str(tmp_path / "out"), "--network", str(spec), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err == [f"error: {spec}: {expect} (given with --network)"], err


# ----------------------------------------------------------------------------- matching


def _by_hand(path: Path) -> dict[int, tuple[int, int]]:
    """(partition, executable number) of every job record of an SWF log, by its line,
    read here with split() (fields 16 and 14)."""
    out = {}
    with gzip.open(path, "rt") as fh:
        for n, text in enumerate(fh, 1):
            f = text.split()
            if f and not text.startswith(";"):
                out[n] = (int(f[15]), int(f[13]))
    return out


def _rule_by_hand(nodes: int, walltime_s: int, partition: int, app: int) -> int:
    """RULES, written out: the first that holds."""
    if nodes <= 1:
        return 0
    if partition == 2:
        return 1
    if app == 6 and nodes >= 8:
        return 2
    if walltime_s <= 3600:
        return 3
    if nodes <= 16:
        return 4
    return 5


def test_rules_take_jobs_as_a_hand_reading_of_the_log_does(tmp_path):
    """Thunder's first 6,000 jobs (partitions 1 and 2, executable numbers): the rule of
    every job against the rules written out on fields read with split(); every rule takes
    some jobs."""
    w = read_trace(THUNDER)
    raw = _by_hand(THUNDER)
    cols = w.columns
    want = np.array([
        _rule_by_hand(int(cols["nodes"][i]), int(cols["walltime_s"][i]), *raw[int(cols["line"][i])]) for i in range(len(w))
    ])
    for f in _spellings(tmp_path).values():
        got = match_rules(w, parse_network_spec(str(f)))
        assert (got == want).all()
    counts = np.bincount(want, minlength=len(RULES))
    assert (counts > 20).all(), counts


def test_per_rule_counts_and_columns_of_a_replay(tmp_path):
    """summary.json's network.bins[k].jobs counts the replayed jobs rule k took; jobs.parquet's
    net_rule / net_pattern / net_phi say which, as the hand reading does."""
    f = _spellings(tmp_path)["csv"]
    out = tmp_path / "run"
    assert main(["simulate", "--trace", str(THUNDER), "--system", "cab", "--transform", "days:4", "--out", str(out), "--network", str(f), "--quiet"]) == 0
    jobs = pq.read_table(out / "jobs.parquet").to_pydict()
    net = json.loads((out / "summary.json").read_text())["network"]
    raw = _by_hand(THUNDER)
    w = read_trace(THUNDER)
    row_of = {int(j): i for i, j in enumerate(w.columns["job_id"])}
    want = [
        _rule_by_hand(int(w.columns["nodes"][i]), int(w.columns["walltime_s"][i]), *raw[int(w.columns["line"][i])])
        for i in (row_of[j] for j in jobs["job_id"])
    ]
    assert jobs["net_rule"] == want
    assert [b["jobs"] for b in net["bins"]] == np.bincount(want, minlength=len(RULES)).tolist()
    assert sum(b["jobs"] for b in net["bins"]) == len(jobs["job_id"]) > 500
    assert [RULES[k]["pattern"] for k in want] == jobs["net_pattern"]
    # an explicit phi is the job's phi; rule 0's jobs do not communicate
    assert all(p == 0.4 for p, k in zip(jobs["net_phi"], want) if k == 2)
    assert all(p == 0.0 for p, k in zip(jobs["net_phi"], want) if k == 0)
    assert net["bins"][1] == {"max_nodes": None, "partition": "2", "pattern": "pairs", "comm_fraction": 0.1, "jobs": want.count(1)}
    assert net["file_sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()


def test_sacct_rules_match_names():
    """A sacct log names its accounts: a rule matches by name; a name the log does not hold
    (or holds only for a skipped record) takes no job and is no error. The three jobs'
    accounts are anon, dspumpkins, anonacct (tests/test_sacct.py reads them)."""
    w = read_trace(SLURM / "xdmod_ub-hpc_sacct-parsable2_accounting-logs.log")
    spec = parse_network_spec("random")
    spec.mapping = "bins"
    spec.bins = (
        Rule(UNBOUNDED, "pairs", 0.3, None, where=(("account", "dspumpkins"),)),
        Rule(UNBOUNDED, "a2a", 0.3, None, where=(("account", "ccr"),)),
        Rule(UNBOUNDED, "ring", 0.3, None, where=(("account", "nosuch"),)),
        Rule(UNBOUNDED, "flood", 0.3, None, where=(("partition", "general-compute"), ("user", "anonuser"))),
        Rule(UNBOUNDED, "stencil3d", 0.3, None),
    )
    assert match_rules(w, spec).tolist() == [4, 0, 3]


def test_pbs_rules_match_user_queue_and_account_names():
    """A PBS log names its users, queues (partitions) and accounts: rules match them by
    name, as sacct's. The sample's users by job, in the order read: jonesm, anonuser x3,
    ybsbu x3, [user_1]; queues ccr, default, workq, anonq, gpu, black, black, gpu."""
    w = read_trace(PBS_SAMPLE)
    spec = parse_network_spec("random")
    spec.mapping = "bins"
    spec.bins = (
        Rule(UNBOUNDED, "pairs", 0.3, None, where=(("user", "ybsbu"), ("partition", "black"))),
        Rule(UNBOUNDED, "a2a", 0.3, None, where=(("account", "caste"),)),
        Rule(UNBOUNDED, "ring", 0.3, None, where=(("user", "jonesm"),)),
        Rule(UNBOUNDED, "stencil3d", 0.3, None),
    )
    rule = match_rules(w, spec)
    users = [w.names["user_id"][k] for k in w.columns["user_id"]]
    queues = [w.names["partition_id"][k] for k in w.columns["partition_id"]]
    accounts = [w.names["account_id"][k] if k >= 0 else "" for k in w.columns["account_id"]]
    for k, u, q, a in zip(rule.tolist(), users, queues, accounts):
        want = 0 if (u, q) == ("ybsbu", "black") else 1 if a == "caste" else 2 if u == "jonesm" else 3
        assert k == want, (u, q, a)
    assert set(rule.tolist()) == {0, 1, 2, 3}
    spec.bins = (Rule(UNBOUNDED, "pairs", 0.3, None, where=(("qos", "normal"),)), Rule(UNBOUNDED, "ring", 0.3, None))
    with pytest.raises(InputError, match="has no qos"):
        match_rules(w, spec)


# ----------------------------------------------------------------------------- determinism


def test_same_file_same_bytes_and_spellings_same_jobs(tmp_path):
    files = _spellings(tmp_path)
    outs = {}
    for kind, f in [*files.items(), ("csv-again", files["csv"])]:
        out = tmp_path / f"out-{kind}"
        assert main(["simulate", "--trace", str(THUNDER), "--system", "cab", "--transform", "days:4", "--alloc", "random", "--out", str(out), "--network", str(f), "--quiet"]) == 0
        outs[kind] = out
    for name in ("jobs.parquet", "summary.json", "utilization.parquet"):
        assert (outs["csv"] / name).read_bytes() == (outs["csv-again"] / name).read_bytes(), name
    tables = {k: pq.read_table(o / "jobs.parquet") for k, o in outs.items()}
    assert tables["csv"].num_rows > 300
    assert tables["csv"].equals(tables["toml"]) and tables["csv"].equals(tables["json"])
    # the summaries differ only in naming the file (and its hash), so the run ids do too
    nets = {}
    for k, o in outs.items():
        s = json.loads((o / "summary.json").read_text())
        nets[k] = {key: v for key, v in s["network"].items() if key not in ("spec", "file_sha256")}
    assert nets["csv"] == nets["toml"] == nets["json"]


def test_a_compare_run_id_follows_the_spec_files_contents(tmp_path):
    """compare (and frontier) resume a run whose id is unchanged: an edit of the spec file
    must change it, not only a new file name."""
    from toposched.compare import RunSpec, _sweep_runs
    from toposched.config import RunConfig

    f = _spellings(tmp_path)["csv"]
    ids = []
    for text in (CSV, CSV.replace("stencil4d,0.3", "stencil4d,0.4"), CSV):
        f.write_text(text)
        runs = _sweep_runs(WINDOW, "cab", [RunSpec("linear__none", "none", RunConfig(network=str(f)))], transforms=[], format=None, lenient=False)
        assert runs[0].spec["scenario"]["network_sha256"] == hashlib.sha256(text.encode()).hexdigest()
        ids.append(runs[0].run_id)
    assert ids[0] != ids[1] and ids[0] == ids[2]


# ----------------------------------------------------------------------------- property

_PARTITIONS, _USERS, _APPS = (1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3, 4, 5)


@st.composite
def _tables(draw):
    """A few rules with random conditions over small domains (some values no job has),
    sometimes ending with a catch-all."""
    rules = []
    for _ in range(draw(st.integers(1, 5))):
        r = {}
        if draw(st.booleans()):
            r["min_nodes"] = draw(st.integers(1, 30))
        if draw(st.booleans()):
            r["max_nodes"] = draw(st.integers(r.get("min_nodes", 1), 40))
        if draw(st.booleans()):
            r["max_walltime_s"] = draw(st.integers(0, 5000))
        if draw(st.booleans()):
            r["min_walltime_s"] = draw(st.integers(0, r.get("max_walltime_s", 5000)))
        for key, values in (("partition", (*_PARTITIONS, 9)), ("user", _USERS), ("app", (*_APPS, 7))):
            if draw(st.integers(0, 3)) == 0:
                r[key] = draw(st.sampled_from(values))
        r["pattern"] = draw(st.sampled_from(["none", "pairs", "stencil3d", "a2a"]))
        value = draw(st.sampled_from([0.0, 0.25, 1.0]))
        # a rule of pattern none with traffic is refused (test_a_rule_that_sends_nothing_...)
        r["phi" if draw(st.booleans()) else "comm_fraction"] = 0.0 if r["pattern"] == "none" else value
        rules.append(r)
    if draw(st.booleans()):
        rules.append({"pattern": "ring", "phi": 0.5})
    return rules


def _as_csv(rules):
    keys = ["min_nodes", "max_nodes", "min_walltime_s", "max_walltime_s", "partition", "account", "user", "qos", "app", "pattern", "comm_fraction", "phi"]
    return ",".join(keys) + "\n" + "".join(",".join(str(r.get(k, "")) for k in keys) + "\n" for r in rules)


def _as_toml(rules):
    return "".join("[[bins]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in r.items()) for r in rules)


def _holds(r, nodes, wall, part, user, app):
    """A rule's conditions, written out for one job (or a grid of them)."""
    ok = (nodes >= r.get("min_nodes", 1)) & (nodes <= r.get("max_nodes", 2**62))
    ok = ok & (wall >= r.get("min_walltime_s", 0)) & (wall <= r.get("max_walltime_s", 2**62))
    for key, v in (("partition", part), ("user", user), ("app", app)):
        if key in r:
            ok = ok & (v == r[key])
    return ok


@settings(max_examples=150, deadline=None)
@given(rules=_tables(), seed=st.integers(0, 2**16))
def test_first_matching_rule_in_every_spelling_property(tmp_path_factory, rules, seed):
    """Any table, spelled as CSV, TOML and JSON: the same rules; each job goes to the first
    rule whose conditions (written out here) hold, or the run is refused when one has none;
    a table is refused as having a rule that can never take a job only when, over every
    combination of feature values, an earlier rule holds wherever it does."""
    from toposched.workload.model import Workload

    d = tmp_path_factory.mktemp("mix")
    texts = {"csv": _as_csv(rules), "toml": _as_toml(rules), "json": json.dumps({"bins": rules})}
    specs, refusals = {}, set()
    for kind, text in texts.items():
        (d / f"m.{kind}").write_text(text)
        try:
            specs[kind] = parse_network_spec(str(d / f"m.{kind}"))
        except InputError as exc:
            assert "can never take a job" in exc.message, exc
            refusals.add(kind)
    assert refusals in (set(), set(texts))  # the three spellings agree
    if refusals:
        event("refused")
        # some rule j lies wholly inside an earlier rule i, on a grid of every boundary
        bounds = sorted({0, 1, 2**61} | {v + e for r in rules for k in ("min_walltime_s", "max_walltime_s") if k in r for v in [r[k]] for e in (-1, 0, 1) if v + e >= 0})
        g = np.meshgrid(np.arange(1, 42), np.array(bounds), np.array([*_PARTITIONS, 9]), np.array([*_USERS]), np.array([*_APPS, 7]), indexing="ij")
        inside = [_holds(r, *g) for r in rules]
        assert any(not (inside[j] & ~inside[i]).any() for j in range(len(rules)) for i in range(j))
        return
    assert specs["csv"].bins == specs["toml"].bins == specs["json"].bins
    rng = np.random.default_rng(seed)
    n = 60
    nodes, wall = rng.integers(1, 41, n), rng.integers(1, 5001, n)
    part, user, app = rng.choice(_PARTITIONS, n), rng.choice(_USERS, n), rng.choice(_APPS, n)
    cols = {"job_id": np.arange(n), "submit_s": np.zeros(n, np.int64), "nodes": nodes, "walltime_s": wall, "runtime_s": wall, "procs": nodes, "line": np.arange(1, n + 1), "partition_id": part, "user_id": user}
    w = Workload(columns=cols, source="synthetic", format="swf", extra={"app": app})
    want = [next((k for k, r in enumerate(rules) if _holds(r, nodes[i], wall[i], part[i], user[i], app[i])), -1) for i in range(n)]
    event("unmatched jobs" if -1 in want else "every job matched")
    if -1 in want:
        with pytest.raises(InputError, match=f"{want.count(-1)} of {n} jobs match no rule"):
            match_rules(w, specs["csv"])
    else:
        assert match_rules(w, specs["csv"]).tolist() == want


def test_a_sweep_run_id_follows_the_spec_files_contents(tmp_path):
    from toposched.sweep import parse_sweep

    f = _spellings(tmp_path)["toml"]
    text = f'[[workloads]]\ntrace = "{WINDOW}"\n[[fabrics]]\nsystem = "cab"\n[scenarios]\nnetwork = ["{f}", "bins"]\n'
    first = parse_sweep(text, "s.toml").runs
    assert [r.spec["scenario"].get("network_sha256") for r in first] == [hashlib.sha256(TOML.encode()).hexdigest(), None]
    f.write_text(TOML.replace("phi = 0.4", "phi = 0.5"))
    second = parse_sweep(text, "s.toml").runs
    assert first[0].run_id != second[0].run_id and first[1].run_id == second[1].run_id


def test_the_command_line_exits_2_with_one_line(tmp_path):
    """The installed command, as a process: status 2, one line, no traceback."""
    import subprocess
    import sys

    f = tmp_path / "bad.csv"
    f.write_text("max_nodes,pattern\n1,none\n2,warp\n")
    r = subprocess.run([sys.executable, "-m", "toposched.cli", "simulate", "--trace", str(WINDOW), "--system", "cab", "--out", str(tmp_path / "o"), "--network", str(f)], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [f"error: {f}:3: field 'pattern': unknown pattern 'warp'; patterns are: " + r.stderr.split("patterns are: ")[1].strip()]
    assert r.stderr.strip().endswith("(given with --network)")


def test_a_spec_that_does_not_fit_the_log_names_the_spec_as_its_other_errors(tmp_path, capsys):
    """A column the log lacks, or a service level out of the table: a spec on the command
    line was named by its text ("error: column:nosuch: field 'column'") where its other
    errors say --network, and a spec file's error did not name the flag; a job without a
    value (-1) read "service level -1 is not defined"."""
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"mapping": "random", "model": {"service_levels": [9, 1]}, "sl_column": "queue"}))
    cases = [
        (str(spec), f"error: {spec}: field 'sl_column': the service level of job ", "(queue) has no value (-1: not logged): levels are 0 to 1 (service_levels) (given with --network)"),
        ("column:nosuch", "error: --network: field 'column': the workload has no column 'nosuch'; it has ", "walltime_s"),
        ("random,service_levels=9+1,sl_column=app", "error: --network: field 'sl_column': the service level of job ", ": levels are 0 to 1 (service_levels)"),
        # a column the log leaves unlogged (-1) for every job: one pattern for all, silently
        ("column:qos_id", "error: --network: field 'column': this workload (swf) gives no qos_id for any job", "every job would get one pattern"),
    ]
    for text, start, end in cases:
        status = main(["simulate", "--trace", str(WINDOW), "--system", "cab", "--out", str(tmp_path / "out"), "--network", text, "--quiet"])
        err = capsys.readouterr().err
        assert status == 2 and err.count("\n") == 1, err
        assert err.startswith(start) and err.strip().endswith(end), err


def test_mtu_bytes_is_refused_by_the_replay(tmp_path, capsys):
    """The replay's closed loop has no queueing delay (docs/network.md, "Queueing delay"):
    its packet size is an interfere setting, refused in a --network spec, not ignored."""
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"mapping": "bins", "model": {"mtu_bytes": 4096}}))
    status = main(["simulate", "--trace", str(WINDOW), "--system", "cab", "--out", str(tmp_path / "out"), "--network", str(spec), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "model.mtu_bytes" in err[0] and "no queueing delay" in err[0], err


def test_a_sweeps_network_files_are_relative_to_the_sweep_file(tmp_path, monkeypatch):
    """scenarios.network = ["mix.csv"] beside the sweep file was read relative to the
    directory the sweep was started in: "mix.csv: network spec file not found", though the
    file's trace and topology.conf paths are relative to the file itself."""
    from toposched.sweep import parse_sweep

    study = tmp_path / "study"
    study.mkdir()
    (study / "mix.csv").write_text("max_nodes,pattern,comm_fraction\n1,none,0\n,stencil3d,0.3\n")
    (study / "s.toml").write_text(
        f'[[workloads]]\ntrace = "{WINDOW}"\n[[fabrics]]\nsystem = "cab"\n[scenarios]\nnetwork = ["mix.csv", "bins=mix.csv,reference=alone", "bins"]\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    runs = parse_sweep((study / "s.toml").read_text(), study / "s.toml").runs
    mix = str((study / "mix.csv").resolve())
    assert [r.spec["config"]["network"] for r in runs] == [mix, f"bins={mix},reference=alone", "bins"]
    sha = hashlib.sha256((study / "mix.csv").read_bytes()).hexdigest()
    assert [r.spec["scenario"].get("network_sha256") for r in runs] == [sha, sha, None]


@pytest.mark.parametrize("spec", ["", " ", ",", " , "])
def test_an_empty_spec_is_refused_by_the_api_as_by_the_cli(tmp_path: Path, spec: str) -> None:
    """``--network ""`` is refused by the command line; RunConfig, run_compare and
    run_frontier took an empty spec for "no model" (compare) or ran without a word:
    each refuses it now, naming the field (None is the way to run without the model)."""
    from toposched.compare import run_compare
    from toposched.config import RunConfig
    from toposched.frontier import run_frontier

    with pytest.raises(InputError, match="network"):
        RunConfig(network=spec)
    with pytest.raises(InputError, match="network"):
        run_compare(THUNDER, "cab", tmp_path / "c", network=spec)
    with pytest.raises(InputError, match="network"):
        run_frontier(THUNDER, "cab", tmp_path / "f", network=spec)
    assert not (tmp_path / "c").exists() and not (tmp_path / "f").exists()
    assert RunConfig(network=None).network is None


@pytest.mark.parametrize("spelling", ["csv", "toml"])
@pytest.mark.parametrize("key, value", [("phi", 0.5), ("comm_fraction", 0.3)])
def test_a_rule_that_sends_nothing_with_traffic_is_refused_naming_it(tmp_path, spelling, key, value):
    """A rule of pattern none with a phi gave its jobs that phi (jobs.parquet's net_phi),
    though they send nothing: the rule contradicts itself and is refused, naming it, as a
    scenario's job is. (none with 0, or with no fraction at all, stays allowed.)"""
    if spelling == "csv":
        f = tmp_path / "rules.csv"
        f.write_text(f"max_nodes,pattern,{key}\n1,none,{value}\n,unstructured,0.3\n")
        where, line = key, 2
    else:
        f = tmp_path / "rules.toml"
        f.write_text(f'[[bins]]\nmax_nodes = 1\npattern = "none"\n{key} = {value}\n[[bins]]\npattern = "unstructured"\n')
        where, line = f"bins[0].{key}", 1
    with pytest.raises(InputError) as exc:
        parse_network_spec(str(f))
    assert (exc.value.line, exc.value.field) == (line, where)
    assert exc.value.message == f"the rule's pattern 'none' sends nothing (compute only), yet it gives {key} {value:g}: give the jobs' pattern, or {key} 0"
    f.write_text(f.read_text().replace(str(value), "0"))
    assert parse_network_spec(str(f)).bins[0].pattern == "none"

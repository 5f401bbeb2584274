"""Slurm topology.conf reader: the real files in tests/data/slurm, the mapping onto 2- and
3-level fat-trees, and every refusal with its file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SLURM

from toposched.errors import TopologyError
from toposched.topology_conf import VIRTUAL_ROOT, read_topology_conf, read_topology_conf_text



def data(name: str) -> Path:
    """A file of tests/data/slurm."""
    return SLURM / name


def leaf_sizes(spec):
    return [(leaf.name, len(leaf.nodes)) for pod in spec.pods for leaf in pod.leaves]


def refuse(text: str, *, lenient: bool = False) -> TopologyError:
    with pytest.raises(TopologyError) as info:
        read_topology_conf_text(text, "t.conf", lenient=lenient)
    return info.value


# ----------------------------------------------------------------------------- real files


def test_ubccr_medium_cluster():
    spec = read_topology_conf(data("ubccr_medium-cluster_topology.conf"))
    assert spec.levels == 2
    assert spec.name == "ubccr_medium-cluster_topology"
    assert spec.source == str(data("ubccr_medium-cluster_topology.conf"))
    assert [p.name for p in spec.pods] == ["TOP"]
    assert leaf_sizes(spec) == [("IBN", 102), ("IBM", 100), ("IBG", 32)]
    ibn = spec.pods[0].leaves[0]
    assert ibn.nodes[:2] == ["n001", "n002"] and ibn.nodes[99] == "n100"
    assert ibn.nodes[-2:] == ["gn001", "gn002"]
    assert spec.pods[0].leaves[2].nodes[:9] == ["g001", "g002", "g003", "g004", "g005", "g006", "g007", "g008", "b001"]
    assert spec.n_nodes == 234
    assert spec.uplinks_per_leaf is None and spec.uplinks_per_l2 is None
    assert spec.notes == ["leaf switches have unequal numbers of nodes: 32 to 102 (IBN: 102, IBM: 100, IBG: 32)"]


def test_ucr_biocluster():
    spec = read_topology_conf(data("ucr-hpcc_biocluster_topology.conf"), name="biocluster")
    assert spec.name == "biocluster"
    assert spec.levels == 2
    assert [p.name for p in spec.pods] == ["ibswitch"]
    assert leaf_sizes(spec) == [("ibswitch0", 66), ("ibswitch1", 32), ("ibswitch2", 20)]
    sw0, sw1, _ = spec.pods[0].leaves
    assert sw0.nodes[:4] == ["m02", "m04", "m05", "c01"]
    assert sw0.nodes[-6:] == ["globus", "owl", "pelican", "penguin", "pigeon", "charmander"]
    assert sw1.nodes[-2:] == ["gpu03", "gpu04"]
    assert spec.n_nodes == 118
    assert len(spec.notes) == 1 and "unequal" in spec.notes[0]


def test_bnl_flat_leaves_joined_under_virtual_root():
    spec = read_topology_conf(data("bnl-sdcc_nsls2_topology.conf"))
    assert spec.levels == 2
    assert [p.name for p in spec.pods] == [VIRTUAL_ROOT]
    assert leaf_sizes(spec) == [("s0", 36), ("s1", 1), ("s2", 1), ("s3", 1)]
    assert spec.pods[0].leaves[1].nodes == ["xf11id-srv2"]
    assert spec.notes[0] == (
        "no common top switch: 4 leaves joined under a virtual root; Slurm itself would not let a "
        "job span them unless TopologyParam=TopoOptional"
    )
    assert spec.notes[1] == "leaf switches have unequal numbers of nodes: 1 to 36 (s0: 36, s1: 1, s2: 1, s3: 1)"


def test_circe_node_on_two_leaves_is_refused():
    with pytest.raises(TopologyError) as info:
        read_topology_conf(data("nvidia-circe_ngc_topology.conf"))
    err = info.value
    assert err.path == str(data("nvidia-circe_ngc_topology.conf"))
    assert err.line == 5 and err.field == "Nodes"
    assert "node 'circe-n051' is already on leaf switch 's2' (line 3)" in err.message


def test_circe_lenient_keeps_first_leaf_and_odd_names():
    spec = read_topology_conf(data("nvidia-circe_ngc_topology.conf"), lenient=True)
    assert spec.levels == 2
    assert [p.name for p in spec.pods] == [VIRTUAL_ROOT]
    assert leaf_sizes(spec) == [("s0", 18), ("s1", 18), ("s2", 18), ("s3", 18), ("s4", 7)]
    s0 = spec.pods[0].leaves[0]
    # the odd names (probably a typo in the site's file) are kept as written
    assert s0.nodes[-3:] == ["circe-n016", "n019", "n020"]
    assert "circe-n051" in spec.pods[0].leaves[2].nodes
    assert "circe-n051" not in spec.pods[0].leaves[4].nodes
    assert spec.n_nodes == 79 == len(set(spec.node_names))
    assert spec.notes[0] == (
        "circe-n051 listed on leaf s2 (line 3) and again on leaf s4 (line 5): kept on s2 only (lenient)"
    )
    assert spec.notes[1].startswith("no common top switch: 5 leaves joined under a virtual root")


# ----------------------------------------------------------------------------- mapping


def test_two_level_leaf_order_follows_parent_list():
    text = """
    # leaves defined in another order than the top switch lists them
    SwitchName=s0 Nodes=a[1-2]
    SwitchName=s1 Nodes=b[1-2]
    SwitchName=s2 Nodes=c[1-2]
    SwitchName=top Switches=s[2,0-1]
    """
    spec = read_topology_conf_text(text, "x/my.conf")
    assert spec.name == "my" and spec.source == "x/my.conf"
    assert spec.levels == 2
    assert [p.name for p in spec.pods] == ["top"]
    assert [leaf.name for leaf in spec.pods[0].leaves] == ["s2", "s0", "s1"]
    assert spec.node_names == ["c1", "c2", "a1", "a2", "b1", "b2"]
    assert spec.notes == []


def test_three_level_tree():
    text = """
    SwitchName=root Switches=pod1,pod0
    SwitchName=pod0 Switches=l[0-1]
    SwitchName=pod1 Switches=l[2-3]
    SwitchName=l0 Nodes=n[00-03]
    SwitchName=l1 Nodes=n[04-07]
    SwitchName=l2 Nodes=n[08-11]
    SwitchName=l3 Nodes=n[12-15]
    """
    spec = read_topology_conf_text(text)
    assert spec.levels == 3
    assert [p.name for p in spec.pods] == ["pod1", "pod0"]
    assert [[leaf.name for leaf in p.leaves] for p in spec.pods] == [["l2", "l3"], ["l0", "l1"]]
    assert spec.node_names[0] == "n08"
    assert spec.notes == []


def test_three_level_leaf_directly_under_root_becomes_one_leaf_pod():
    text = """
    SwitchName=root Switches=p0,lx
    SwitchName=p0 Switches=l0,l1
    SwitchName=l0 Nodes=a[1-2]
    SwitchName=l1 Nodes=b[1-2]
    SwitchName=lx Nodes=x[1-2]
    """
    spec = read_topology_conf_text(text)
    assert spec.levels == 3
    assert [(p.name, [leaf.name for leaf in p.leaves]) for p in spec.pods] == [("p0", ["l0", "l1"]), ("lx", ["lx"])]
    assert spec.notes == [
        "leaf switches with no pod switch above them, each modelled as a pod of one leaf: lx (under root)",
        "pods have unequal numbers of leaves: 1 to 2 (p0: 2, lx: 1)",
    ]


def test_several_three_level_roots_joined_under_virtual_root():
    text = """
    SwitchName=r1 Switches=p1
    SwitchName=r2 Switches=p2
    SwitchName=p1 Switches=l1
    SwitchName=p2 Switches=l2
    SwitchName=l1 Nodes=a[1-2]
    SwitchName=l2 Nodes=b[1-2]
    """
    spec = read_topology_conf_text(text)
    assert spec.levels == 3
    assert [p.name for p in spec.pods] == ["p1", "p2"]
    assert spec.notes == [
        "no common top switch: 2 top switches (r1, r2) joined under a virtual root; Slurm itself would "
        "not let a job span them unless TopologyParam=TopoOptional"
    ]


def test_several_two_level_roots_become_pods():
    text = """
    SwitchName=t1 Switches=l1,l2
    SwitchName=t2 Switches=l3,l4
    SwitchName=l1 Nodes=a[1-2]
    SwitchName=l2 Nodes=b[1-2]
    SwitchName=l3 Nodes=c[1-2]
    SwitchName=l4 Nodes=d[1-2]
    """
    spec = read_topology_conf_text(text)
    assert spec.levels == 3
    assert [(p.name, [leaf.name for leaf in p.leaves]) for p in spec.pods] == [("t1", ["l1", "l2"]), ("t2", ["l3", "l4"])]
    assert spec.notes[0].startswith("no common top switch: 2 top switches (t1, t2) joined under a virtual root")


def test_single_leaf_switch():
    spec = read_topology_conf_text("SwitchName=only Nodes=n[1-4]\n")
    assert spec.levels == 2
    assert [(p.name, [leaf.name for leaf in p.leaves]) for p in spec.pods] == [("only", ["only"])]
    assert spec.n_nodes == 4


def test_keys_case_insensitive_comments_continuations_and_other_keys():
    text = (
        "switchname=s0 NODES=n[1-2] LinkSpeed=100  # trailing comment\n"
        "SWITCHNAME=s1 nodes=n[3-4]\n"
        "SwitchName=top \\\n"
        "   switches=s[0-1] linkspeed=200\n"
    )
    spec = read_topology_conf_text(text)
    assert spec.levels == 2 and spec.pods[0].name == "top"
    assert spec.node_names == ["n1", "n2", "n3", "n4"]


def test_a_continuation_inside_a_host_list_joins_as_slurm_does():
    """Slurm appends the next line right after the backslash (no blank put between): a
    long list cut after a comma was refused ("expected Key=value, got 'n[5-8]'")."""
    text = "SwitchName=s0 Nodes=n[1-4],\\\nn[5-8]\nSwitchName=s1 Nodes=m[1-2]\\   \r\n,m3\nSwitchName=top Switches=s0,\\\ns1\n"
    spec = read_topology_conf_text(text)
    assert leaf_sizes(spec) == [("s0", 8), ("s1", 3)] and spec.pods[0].name == "top"
    # an even number of backslashes is no continuation (Slurm reads one literal '\\')
    err = refuse("SwitchName=s0 Nodes=n1 \\\\\nSwitchName=s1 Nodes=n2\n")
    assert err.line == 1 and err.message.startswith("expected Key=value")


def test_blanks_around_the_equals_sign_are_read_as_slurm_reads_them():
    """Slurm's key=value pattern allows 'SwitchName = s0'; it was refused ("expected
    Key=value, got 'SwitchName'")."""
    spec = read_topology_conf_text("SwitchName = s0 Nodes= n[1-2]\nSwitchName =s1 Nodes =n[3-4] LinkSpeed= \nSwitchName\t=\ttop Switches = s[0-1]\n")
    assert leaf_sizes(spec) == [("s0", 2), ("s1", 2)] and spec.pods[0].name == "top"
    # an empty value before the next key stays empty, not the next key's text
    err = refuse("SwitchName= Nodes=n1\n")
    assert (err.field, err.message) == ("SwitchName", "SwitchName= is empty")
    assert read_topology_conf_text("SwitchName=s0 LinkSpeed= Nodes=n1\n").node_names == ["n1"]


def test_leading_byte_order_mark_is_ignored(tmp_path):
    # An editor on Windows saves "UTF-8 with BOM"; the mark is not part of the first key.
    body = "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\nSwitchName=top Switches=s[0-1]\n"
    path = tmp_path / "topology.conf"
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    spec = read_topology_conf(path)
    assert spec.node_names == ["n1", "n2", "n3", "n4"]
    assert [leaf.name for leaf in spec.pods[0].leaves] == ["s0", "s1"]
    assert read_topology_conf_text("\ufeff" + body).node_names == ["n1", "n2", "n3", "n4"]


# ----------------------------------------------------------------------------- refusals


def test_refuse_two_parents():
    err = refuse("SwitchName=l Nodes=n1\nSwitchName=a Switches=l\nSwitchName=b Switches=l\n")
    assert (err.path, err.line, err.field) == ("t.conf", 3, "Switches")
    assert err.message == "switch 'l' is already under 'a' (line 2); a switch has one parent in Slurm's tree"
    assert str(err).startswith("t.conf:3: field 'Switches': switch 'l'")


def test_refuse_loop():
    err = refuse("SwitchName=A Switches=B\nSwitchName=B Switches=A\n")
    assert (err.line, err.field) == (1, "Switches")
    assert err.message.startswith("loop: A -> B -> A")


def test_refuse_longer_loop_names_it_from_first_switch_in_file():
    err = refuse("SwitchName=l Nodes=n1\nSwitchName=C Switches=A\nSwitchName=A Switches=B\nSwitchName=B Switches=C\n")
    assert err.line == 2
    assert err.message.startswith("loop: C -> A -> B -> C")


def test_refuse_self_reference():
    err = refuse("SwitchName=A Switches=A\n")
    assert (err.line, err.field) == (1, "Switches")
    assert err.message.startswith("loop: A -> A")


def test_refuse_nodes_and_switches():
    err = refuse("SwitchName=l Nodes=n1\nSwitchName=top Nodes=n2 Switches=l\n")
    assert (err.line, err.field) == (2, "Switches")
    assert "both Nodes= and Switches=" in err.message


def test_refuse_undefined_child():
    err = refuse("SwitchName=l0 Nodes=n1\nSwitchName=top switches=l[0-1]\n")
    assert (err.line, err.field) == (2, "switches")
    assert err.message == "switch 'l1' is not defined (no SwitchName=l1 line)"


def test_refuse_node_on_two_leaves():
    err = refuse("SwitchName=l0 Nodes=n[1-3]\n\nSwitchName=l1 Nodes=n[3-4]\n")
    assert (err.line, err.field) == (3, "Nodes")
    assert err.message.startswith("node 'n3' is already on leaf switch 'l0' (line 1)")


def test_lenient_node_on_two_leaves():
    spec = read_topology_conf_text("SwitchName=l0 Nodes=n[1-3]\nSwitchName=l1 Nodes=n[2-5]\n", lenient=True)
    assert leaf_sizes(spec) == [("l0", 3), ("l1", 2)]
    assert spec.notes[0] == "n[2-3] listed on leaf l0 (line 1) and again on leaf l1 (line 2): kept on l0 only (lenient)"


def test_refuse_switch_twice_in_one_list():
    err = refuse("SwitchName=l0 Nodes=n1\nSwitchName=t Switches=l0,l0\n")
    assert (err.line, err.field) == (2, "Switches")
    assert err.message == "switch 'l0' is listed twice"


def test_refuse_node_twice_on_one_leaf():
    err = refuse("SwitchName=l0 Nodes=n[1-3],n2\n")
    assert (err.line, err.field) == (1, "Nodes")
    assert err.message == "node 'n2' is listed twice"


def test_refuse_duplicate_switch_name():
    err = refuse("SwitchName=l0 Nodes=n1\nSwitchName=l0 Nodes=n2\n")
    assert (err.line, err.field) == (2, "SwitchName")
    assert err.message == "switch 'l0' is already defined on line 1"


def test_refuse_switch_without_children():
    err = refuse("SwitchName=l0 Nodes=n1\nSwitchName=lonely LinkSpeed=10\n")
    assert (err.line, err.field) == (2, "SwitchName")
    assert err.message == "switch 'lonely' has neither Nodes= nor Switches="


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n   # and another\n"])
def test_refuse_empty(text):
    err = refuse(text)
    assert err.line is None and err.field is None
    assert err.message.startswith("no switches found")


def test_refuse_line_without_switchname():
    err = refuse("SwitchName=l0 Nodes=n1\nNodes=n2\n")
    assert (err.line, err.field) == (2, None)
    assert err.message == "a line must start a switch with SwitchName=, got 'Nodes=n2'"


def test_refuse_block_topology_with_hint():
    err = refuse("BlockName=b1 Nodes=n[1-4]\n")
    assert err.line == 1 and "topology/block" in err.message


def test_refuse_token_without_equals():
    err = refuse("SwitchName=l0 Nodes=n1 oops\n")
    assert (err.line, err.field) == (1, None)
    assert err.message == "expected Key=value, got 'oops'"


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("SwitchName=l0 Nodes=n[1-\n", "Nodes", "bad host list 'n[1-': unbalanced brackets"),
        ("SwitchName=l0 Nodes=n[3-1]\n", "Nodes", "bad host list 'n[3-1]': start > stop"),
        ("SwitchName=l0 Nodes=\n", "Nodes", "Nodes= lists no nodes"),
        ("SwitchName=l0 Nodes=n1\nSwitchName=t Switches=l[0-\n", "Switches", "bad host list 'l[0-': unbalanced brackets"),
        # a comma for a space: was a node named 'Switches=s1', silently (and a switch
        # 'LinkSpeed=10' said to be undefined)
        ("SwitchName=l0 Nodes=n[1-4],Switches=s1\n", "Nodes", "node name 'Switches=s1' holds '=': separate keys with spaces, not commas"),
        ("SwitchName=l0 Nodes=n1\nSwitchName=t Switches=l0,LinkSpeed=10\n", "Switches", "switch name 'LinkSpeed=10' holds '=': separate keys with spaces, not commas"),
    ],
)
def test_refuse_bad_hostlist(text, field, message):
    err = refuse(text)
    assert err.field == field
    assert err.line == text.count("\n")
    assert err.message == message


def test_refuse_deeper_than_three_levels():
    text = """
    SwitchName=core Switches=agg
    SwitchName=agg Switches=pod,leafx
    SwitchName=pod Switches=leaf
    SwitchName=leaf Nodes=n[1-2]
    SwitchName=leafx Nodes=m[1-2]
    """
    err = refuse(text)
    assert (err.line, err.field) == (2, "Switches")
    assert err.message == (
        "only 2- and 3-level fat-trees are modelled (leaf, pod and top switches); this tree has 4 switch "
        "levels: core -> agg -> pod -> leaf"
    )


def test_missing_file():
    with pytest.raises(TopologyError) as info:
        read_topology_conf("/nonexistent/topology.conf")
    assert info.value.message == "no such file"


def test_a_range_past_python_hostlists_100000_names_loads_up_to_the_fabric_limit():
    """'n[1-150000]' was refused ("bad host list ...: results too large": python-hostlist's
    own cap of 100,000) although the documented limit is 1,000,000 nodes."""
    import hostlist

    spec = read_topology_conf_text("SwitchName=s0 Nodes=n[1-150000]\nSwitchName=s1 Nodes=m[1-3]\nSwitchName=t Switches=s[0-1]\n", "big.conf")
    assert spec.n_nodes == 150_003
    assert hostlist.MAX_SIZE == 100_000  # the library's own limit is left as it was


@pytest.mark.parametrize("name", ["bnl-sdcc_nsls2_slurm.conf", "ucr-hpcc_biocluster_slurm.conf"])
def test_a_slurm_conf_given_for_a_topology_conf_says_so(name):
    """The real slurm.conf files of the data set (one writes 'SlurmctldHost = master1',
    with spaces), given where a topology.conf belongs."""
    from conftest import SLURM

    with pytest.raises(TopologyError) as err:
        read_topology_conf(SLURM / name)
    assert err.value.message.endswith("(this looks like a slurm.conf: --system takes the topology.conf beside it)")


def test_a_topology_conf_whose_name_starts_with_fattree_is_read_as_a_file(tmp_path, monkeypatch):
    """--system fattree-site.conf was taken for fattree:K=..,S=..,P=.. parameters ("missing
    nodes_per_leaf, ...") although the file exists."""
    from toposched.topology import load_spec

    monkeypatch.chdir(tmp_path)
    for name in ("fattree-site.conf", "FatTree_topology.conf"):
        (tmp_path / name).write_text("SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\nSwitchName=top Switches=s[0-1]\n")
        assert load_spec(name).node_names == ["n1", "n2", "n3", "n4"]
    assert load_spec("fattree:K=2,S=2,P=1").n_nodes == 4
    with pytest.raises(TopologyError, match="missing nodes_per_leaf"):
        load_spec("fattree")


def test_names_that_are_not_utf8_are_refused_on_their_line_comments_may_hold_them(tmp_path):
    """Latin-1 bytes were replaced by U+FFFD: 'nä1' and 'nö1' became one node 'n\ufffd1'
    ("node 'n\ufffd1' is listed twice"), and lone ones were renamed silently."""
    path = tmp_path / "topology.conf"
    path.write_bytes(b"# Gr\xfc\xdfe vom Admin\nSwitchName=s0 Nodes=n\xe41,n\xf61\nSwitchName=s1 Nodes=m1\nSwitchName=top Switches=s[0-1]\n")
    with pytest.raises(TopologyError) as info:
        read_topology_conf(path)
    assert (info.value.line, info.value.field) == (2, "Nodes")
    assert info.value.message == "b'Nodes=n\\xe41,n\\xf61' holds bytes that are not UTF-8: save the file as UTF-8"
    path.write_bytes(b"# Gr\xfc\xdfe vom Admin\nSwitchName=s0 Nodes=n1 # \xe9\nSwitchName=s1 Nodes=m1\nSwitchName=top Switches=s[0-1]\n")
    assert read_topology_conf(path).node_names == ["n1", "m1"]


def test_a_very_deep_tree_is_refused_in_a_short_line():
    """A 501-level chain named all 501 switches in its one-line error (5 kB)."""
    text = "".join(f"SwitchName=s{i} Switches=s{i + 1}\n" for i in range(500)) + "SwitchName=s500 Nodes=n1\n"
    err = refuse(text)
    assert (err.line, err.field) == (1, "Switches")
    assert err.message.endswith("this tree has 501 switch levels: s0 -> s1 -> s2 -> s3 -> ... (495 more) -> s499 -> s500")


def test_an_include_line_is_named_as_such():
    """Slurm's 'Include FILE' (its config parser reads the file in place) was refused as
    "expected Key=value, got 'Include'"."""
    err = refuse("SwitchName=s0 Nodes=n1\ninclude /etc/slurm/topology.d/rack1.conf\n")
    assert (err.line, err.field) == (2, "include")
    assert err.message == "Include lines are not read here: copy the switch lines of /etc/slurm/topology.d/rack1.conf into this file"


def test_the_slurm_lab_topology_conf_of_a_read_file_reads_back():
    """validate-slurm --system FILE wrote a lone leaf of a 3-level file twice ('SwitchName=
    lone Nodes=..' and 'SwitchName=lone Switches=lone'), and a root named 'root' beside a
    switch of that name: a topology.conf Slurm (and this reader) refuse."""
    from toposched.live.slurmlab import topology_conf_text

    text = (
        "SwitchName=top Switches=podA,lone,root\nSwitchName=podA Switches=la[1-2]\nSwitchName=la1 Nodes=a[1-3]\n"
        "SwitchName=la2 Nodes=a[4-6]\nSwitchName=lone Nodes=z1\nSwitchName=root Switches=r1\nSwitchName=r1 Nodes=r[1-2]\n"
    )
    spec = read_topology_conf_text(text, "odd.conf")
    back = read_topology_conf_text(topology_conf_text(spec), "lab.conf")
    assert [(p.name, leaf_sizes(PodOnly(p))) for p in back.pods] == [(p.name, leaf_sizes(PodOnly(p))) for p in spec.pods]
    assert back.node_names == spec.node_names and back.levels == 3


class PodOnly:
    def __init__(self, pod):
        self.pods = [pod]


def test_the_slurm_lab_topology_conf_of_a_two_level_fabric_keeps_its_top_switch():
    """A 2-level fabric (one pod: fattree:..,P=1, UBCCR's leaves under TOP) was written as
    leaf lines only: a real Slurm then has no switch above two leaves and runs no job that
    spans them, while the fabric (and the replay compared with it) does."""
    from toposched.live.slurmlab import topology_conf_text
    from toposched.topology import load_spec

    for system in ("fattree:K=4,S=3,P=1", str(data("ubccr_medium-cluster_topology.conf"))):
        spec = load_spec(system)
        back = read_topology_conf_text(topology_conf_text(spec), "lab.conf")
        assert back.levels == 2 and [p.name for p in back.pods] == [p.name for p in spec.pods] != [VIRTUAL_ROOT]
        assert leaf_sizes(back) == leaf_sizes(spec) and not back.notes[:1] == ["no common top switch"]
    one = read_topology_conf_text("SwitchName=s0 Nodes=n[1-4]\n")
    assert topology_conf_text(one) == "SwitchName=s0 Nodes=n[1-4]\n"


def test_load_fabric_takes_a_path_and_refuses_what_names_no_fabric():
    """load_fabric(Path("topology.conf")) (read_trace takes a Path) failed with
    AttributeError: 'PosixPath' object has no attribute 'lower'; an int or None likewise,
    and lenient="no" read the file leniently."""
    from pathlib import Path

    from toposched.topology import load_fabric

    conf = SLURM / "ubccr_medium-cluster_topology.conf"
    assert load_fabric(Path(conf)).n_nodes == load_fabric(str(conf)).n_nodes == 234
    for bad in (1296, None):
        with pytest.raises(TypeError, match=r"^load_fabric\(\): system must be a preset name, fattree:K=..,S=..,P=.. parameters or a topology.conf path, got "):
            load_fabric(bad)
    with pytest.raises(ValueError, match=r"^load_fabric\(\): lenient must be True or False, got 'no'$"):
        load_fabric(conf, lenient="no")


def test_quotes_are_read_as_slurm_reads_them():
    """Values had single and double quotes stripped from their ends: `SwitchName='s1'` named
    s1, while `Switches=s0,'s1'` named "'s1" (only the list's ends were stripped), so the
    file was refused. Slurm's parser (parse_config.c) takes a double-quoted value without its
    quotes and any other value as written: a single quote is part of the name."""
    spec = read_topology_conf_text("SwitchName=s0 Nodes=\"n[1-4]\"\nSwitchName='s1' Nodes='n[5-6]'\nSwitchName=top Switches=s0,'s1'\n", "t.conf")
    assert [(leaf.name, leaf.nodes) for pod in spec.pods for leaf in pod.leaves] == [("s0", ["n1", "n2", "n3", "n4"]), ("'s1'", ["'n5'", "'n6'"])]
    err = refuse("SwitchName='s0' Nodes=n[1-4]\nSwitchName=top Switches=s0\n")
    assert (err.line, err.field) == (2, "Switches") and "switch 's0' is not defined" in str(err), err


def test_a_double_quoted_list_may_hold_blanks_as_slurm_reads_it():
    """`Nodes="n1, n2"` was cut at its blank ("expected Key=value, got 'n2\"'"); Slurm takes
    the quoted value whole and its hostlists take blanks, tabs and commas as separators
    (hostlist.c: "\t, "). An unclosed quote is named."""
    spec = read_topology_conf_text('SwitchName=s0 Nodes="n1, n2"\nSwitchName=s1 Nodes=" n[3-4] ,\tn5 "\nSwitchName=top Switches="s0, s1"\n', "t.conf")
    assert [(leaf.name, leaf.nodes) for pod in spec.pods for leaf in pod.leaves] == [("s0", ["n1", "n2"]), ("s1", ["n3", "n4", "n5"])]
    err = refuse('SwitchName=s0 Nodes="n1, n2\n')
    assert err.line == 1 and "a double quote is not closed" in str(err), err

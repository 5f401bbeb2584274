"""Reading node topologies (toposched.node.hwloc), requirements and CPU lists."""

from __future__ import annotations

import doctest
import importlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from toposched.node.cpulist import format_cpulist, parse_cpulist
from toposched.node.hwloc import HwlocError, load_topology, parse_hwloc_xml, read_hwloc_xml
from toposched.node.requirement import Requirement, RequirementError, parse_requirement

from conftest import REPO

HWLOC = REPO / "tests" / "data" / "hwloc"


@pytest.mark.parametrize("module", ["toposched.node.hwloc", "toposched.node.requirement", "toposched.node.cpulist"])
def test_module_doctests(module, monkeypatch):
    monkeypatch.chdir(REPO)
    assert doctest.testmod(importlib.import_module(module)).failed == 0


def test_cab_node_structure():
    t = read_hwloc_xml(HWLOC / "llnl-cab1234_node_hwloc.xml")
    # hwloc 1.x nests each Socket inside its NUMANode; the tree puts the package above.
    kinds = [t.objects[i].kind for i in t.root.children]
    assert kinds == ["package", "package"]
    pkg = t.objects[t.root.children[0]]
    numa = t.objects[pkg.children[0]]
    assert (numa.kind, sorted(numa.pus), numa.memory_bytes) == ("numa", list(range(8)), 17097461760)
    assert [sorted(c.pus) for c in t.cores] == [[i] for i in range(16)]


def _xml(body: str) -> str:
    return f'<?xml version="1.0"?><topology version="2.0">{body}</topology>'


def test_hwloc2_distances_and_smt():
    text = _xml(
        '<object type="Machine" os_index="0" cpuset="0x0000000f">'
        '<object type="Package" os_index="0" cpuset="0x0000000f">'
        '<object type="NUMANode" os_index="0" cpuset="0x00000003" local_memory="1024"/>'
        '<object type="NUMANode" os_index="1" cpuset="0x0000000c" local_memory="2048"/>'
        '<object type="Core" os_index="0" cpuset="0x00000003"><object type="PU" os_index="0" cpuset="0x1"/><object type="PU" os_index="1" cpuset="0x2"/></object>'
        '<object type="Core" os_index="1" cpuset="0x0000000c"><object type="PU" os_index="2" cpuset="0x4"/><object type="PU" os_index="3" cpuset="0x8"/></object>'
        '</object></object>'
        '<distances2 type="NUMANode" nbobjs="2" kind="5" indexing="os"><indexes length="4">0 1</indexes><u64values length="6">10 21 21 10</u64values></distances2>'
    )
    t = parse_hwloc_xml(text)
    assert t.numa_distances == {(0, 0): 10, (0, 1): 21, (1, 0): 21, (1, 1): 10}
    assert [sorted(n.pus) for n in t.numa] == [[0, 1], [2, 3]]
    assert t.radius_of({0, 1}) == "core" and t.radius_of({1, 2}) == "package"


def test_wide_bitmaps():
    # hwloc writes masks wider than 32 bits as comma-separated words, most significant first.
    t = parse_hwloc_xml(_xml('<object type="Machine" cpuset="0x00000002,0x00000001">'
                             '<object type="Core" os_index="0" cpuset="0x00000001"><object type="PU" os_index="0"/></object>'
                             '<object type="Core" os_index="1" cpuset="0x00000002,0x0"><object type="PU" os_index="33"/></object></object>'))
    assert t.pus == (0, 33) and [sorted(c.pus) for c in t.cores] == [[0], [33]]


def test_bad_topologies_are_refused_with_the_file_named(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<topology><object")
    with pytest.raises(HwlocError, match=r"bad.xml: not valid XML"):
        read_hwloc_xml(bad)
    with pytest.raises(HwlocError, match=r"missing.xml: cannot read"):
        read_hwloc_xml(tmp_path / "missing.xml")
    with pytest.raises(HwlocError, match="no PU"):
        parse_hwloc_xml(_xml('<object type="Machine" cpuset="0x1"/>'))
    overlap = _xml('<object type="Machine" cpuset="0x7">'
                   '<object type="L3Cache" cpuset="0x3" depth="3"/><object type="NUMANode" os_index="0" cpuset="0x6"/>'
                   + "".join(f'<object type="PU" os_index="{i}"/>' for i in range(3)) + "</object>")
    with pytest.raises(HwlocError, match="overlap .* without nesting"):
        parse_hwloc_xml(overlap, "x.xml")


def test_live_topology_has_this_machines_cpus():
    if shutil.which("lstopo-no-graphics") is None and shutil.which("lstopo") is None:
        pytest.skip("hwloc's lstopo is not installed (scripts/test.sh installs it as root)")
    t = load_topology("live")
    online = parse_cpulist(Path("/sys/devices/system/cpu/online").read_text())
    assert frozenset(t.pus) == online
    assert len(t.numa) >= 1 and sum(len(c.pus) for c in t.cores) == len(online)


@given(st.frozensets(st.integers(0, 300), max_size=60))
def test_cpulist_round_trip(cpus):
    text = format_cpulist(cpus)
    assert parse_cpulist(text) == cpus
    assert " " not in text


@pytest.mark.parametrize("text,field", [
    ("CORES=4;PUS=2", "PUS"), ("", "CORES"), ("CORES=-1", "CORES"), ("CPU_LIST=3-1", "CPU_LIST"),
    ("PUS=2;CPU_LIST=0-3", "CPU_LIST"), ("CORES=1;WAIT=maybe", "WAIT"), ("CORES=1;MAX_RADIUS=rack", "MAX_RADIUS"),
    ("CORES=1;CPUSET_OPTIONS=CPUSET_FAST", "CPUSET_OPTIONS"), ("CORES=1;CORES=2", "CORES"), ("CORES=1;WAIT;BEST", "BEST"),
    # int() read these as 10 cores and 3 PUs
    ("CORES=1_0", "CORES"), ("PUS=\u0663", "PUS"), ("CORES=2;MEM_PER_NUMA_MB=1_024", "MEM_PER_NUMA_MB"),
])
def test_bad_requirements_name_the_field(text, field):
    with pytest.raises(RequirementError) as exc:
        parse_requirement(text)
    assert exc.value.field == field and f"requirement field '{field}'" in str(exc.value)


@given(st.builds(Requirement, cores=st.one_of(st.none(), st.integers(1, 64)), pus=st.none(),
                 cpu_list=st.one_of(st.none(), st.frozensets(st.integers(0, 63), min_size=1, max_size=8)),
                 mem_per_numa_mb=st.integers(0, 5000), exclusive=st.booleans(), memory_mandatory=st.booleans(),
                 wait=st.booleans(), max_radius=st.none()).filter(lambda r: r.cores or r.cpu_list))
def test_requirement_text_and_json_round_trip(req):
    assert parse_requirement(req.to_text()) == req
    assert parse_requirement(req.to_json()) == req
    # the JSON object given as text, as `node-ctl --requirement '{"cores": 4}'` sends it
    # (was read as KEY=VALUE: "requirement field '{"CORES": 4}': unknown key")
    assert parse_requirement(json.dumps(req.to_json())) == req


@pytest.mark.parametrize("text, why", [
    ('{"cores": 4', "starts like a JSON object but does not read as one"),
    ('{"colour": 1}', "requirement field 'COLOUR': unknown key"),
])
def test_a_requirement_given_as_json_text_is_read_as_json(text, why):
    with pytest.raises(RequirementError) as exc:
        parse_requirement(text)
    assert why in str(exc.value)


def test_hwloc1_machine_without_numa_nodes_keeps_its_memory():
    """hwloc 1.x writes no NUMANode on a machine with one memory node and puts the memory
    on the Machine; the one domain made for it had 0 MiB, so MEM_PER_NUMA_MB=1024 was
    'impossible: ... (largest 0 MiB)'."""
    from toposched.node.placement import NodeState, decide

    text = (
        '<?xml version="1.0"?><topology>'
        '<object type="Machine" os_index="0" cpuset="0x0000000f" local_memory="8589934592">'
        '<object type="Socket" os_index="0" cpuset="0x00000003">'
        '<object type="Core" os_index="0" cpuset="0x00000001"><object type="PU" os_index="0" cpuset="0x00000001"/></object>'
        '<object type="Core" os_index="1" cpuset="0x00000002"><object type="PU" os_index="1" cpuset="0x00000002"/></object>'
        '</object></object></topology>'
    )
    t = parse_hwloc_xml(text)
    assert [(n.mems, n.memory_bytes) for n in t.numa] == [((0,), 8589934592)]
    d = decide(t, NodeState(t), parse_requirement("CORES=2;MEM_PER_NUMA_MB=1024"))
    assert (d.status, d.placement.cpus) == ("ok", "0-1")


@pytest.mark.parametrize("text", ["1_0", "0-1_5", "\u0663", "+3", "0x3"])
def test_cpu_lists_take_ascii_digits_only(text):
    """int() read 'CPU_LIST=1_0' as CPU 10 and '\u0663' as CPU 3."""
    from toposched.node.cpulist import CpuListError

    with pytest.raises(CpuListError, match="is not a CPU number or a range A-B"):
        parse_cpulist(text)
    assert parse_cpulist(" 0 - 3 , 8") == frozenset({0, 1, 2, 3, 8})

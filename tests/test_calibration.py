"""The network model against the seeds' published measurements (docs/validation-network.md,
validation/calibrate.py): every held row within its tolerance, the seeds' findings under
the default settings, and the committed table equal to a fresh run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def calibrate():
    spec = importlib.util.spec_from_file_location("calibrate", ROOT / "validation" / "calibrate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["calibrate"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rows(calibrate):
    return calibrate.all_rows()


@pytest.fixture(scope="module")
def found(calibrate):
    return calibrate.findings()


def test_every_held_row_is_within_its_tolerance(rows):
    bad = [(r.seed, r.quantity, r.published, round(r.predicted, 4), r.tolerance_text()) for r in rows if r.held and not r.ok]
    assert not bad, bad


def test_the_rows_cover_every_seed_and_misses_say_why(rows):
    assert {r.seed for r in rows} == {"000", "003", "004"}
    assert len([r for r in rows if r.seed == "004" and "change" in r.quantity]) == 15  # each cell of the bully table
    assert all(r.why for r in rows if not r.held)
    assert sum(r.held for r in rows) >= 30


def test_seed000_isolation_helps_stencil_and_unstructured_more_than_pairs(found):
    assert found["000: isolation helps Stencil and Unstr-mesh more than Pairs"]


def test_seed003_service_levels_reorder_but_do_not_raise_throughput(found, rows):
    assert found["003: coarse service levels reorder jobs but do not raise throughput"]
    # the 37 s -> 31 s of Flood-Pairs at the top level comes out of the model, unfitted
    flood = next(r for r in rows if r.quantity.startswith("Flood-Pairs"))
    assert flood.ok


def test_seed004_bullies_barely_touch_umt_and_pf3d(rows):
    cells = [r for r in rows if r.seed == "004" and ("UMT" in r.quantity or "pF3D" in r.quantity) and "interleaved" not in r.quantity]
    assert len(cells) == 8 and all(r.predicted >= -3.0 for r in cells)


def test_the_committed_table_is_current(calibrate, rows, found):
    doc = (ROOT / "docs" / "validation-network.md").read_text()
    a, b = doc.index(calibrate.START), doc.index(calibrate.END) + len(calibrate.END)
    assert doc[a:b] == calibrate.markdown(rows, found, None), "run: python validation/calibrate.py --write"


@pytest.fixture(scope="module")
def mechanisms(calibrate):
    return calibrate.mechanisms_004()


def test_bisection_mechanisms_measured_as_documented(calibrate, mechanisms):
    """The claims docs/validation-network.md makes about the mechanisms tried for 004's
    bisection finding, on the measurements themselves."""
    v = {(m["mechanism"], m["load"], m["mtu"]): m for m in calibrate.mechanism_verdicts_004(mechanisms)}
    # a link-level term cannot touch the light and adjacent-leaf bullies: they share no link with AMG
    assert all(m["amg"]["light"] == 0 and m["amg"]["adjacent-leaf"] == 0 for (mech, _, _), m in v.items() if mech != "c")
    # the slowest message pacing the iteration makes incast, not bisection, the worst
    assert all(not m["finding_holds"] and m["amg"]["incast"] < m["amg"]["bisection"] for (mech, _, _), m in v.items() if mech == "b")
    # queueing at the model's own loads stays a fraction of a point
    assert all(-1.0 < m["amg"]["bisection"] <= 0 for (mech, load, _), m in v.items() if mech == "a" and load == "model")
    # switch-level delays put the light bully (measured -0.70 %) beyond 3 points
    assert all(m["amg"]["light"] < -0.70 - 3.0 for (mech, _, mtu), m in v.items() if mech == "c" and mtu == 10240)
    doc = (ROOT / "docs" / "validation-network.md").read_text()
    a, b = doc.index(calibrate.MECH_START), doc.index(calibrate.MECH_END) + len(calibrate.MECH_END)
    assert doc[a:b] == calibrate.mechanisms_markdown(mechanisms), "run: python validation/calibrate.py --write"


def test_seed004_bisection_bully_is_the_worst_and_every_degradation_within_7_percent(found, rows):
    """Under the default model (with the queueing delay of docs/network.md), strictly worse
    than every other bully by 0.1 point, and nothing past the poster's 7 %."""
    assert found["004: the bisection bully is the worst bully"]
    assert found["004: every degradation <= 7 %"]
    amg = {r.quantity.split(",")[1].split(":")[0].strip(): r.predicted for r in rows if r.seed == "004" and "AMG" in r.quantity}
    assert amg["bisection bully"] < min(amg["light bully"], amg["adjacent-leaf bully"], amg["incast bully"]) - 0.1

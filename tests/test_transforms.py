"""Workload transforms and speedup scenarios (docs/compare.md): counts, rounding, errors,
seeded determinism, and the SC18 paper's V1/V2 bins as docs/compare.md reads them."""

from __future__ import annotations

import numpy as np
import pytest

from toposched.errors import InputError
from toposched.transforms import (
    V_FULL_NODES,
    apply_scenario,
    apply_transforms,
    fit_to_fabric,
    rescale_cores,
    scale_nodes,
    speedup_fraction,
    time_window,
)
from toposched.workload.model import Workload

DAY = 86_400


def make(nodes, *, submit=None, runtime=None, walltime=None, procs=None) -> Workload:
    nodes = np.asarray(nodes)
    n = len(nodes)
    w = Workload(
        columns={
            "job_id": np.arange(1, n + 1),
            "submit_s": np.asarray(submit if submit is not None else np.arange(n) * 10),
            "nodes": nodes,
            "walltime_s": np.asarray(walltime if walltime is not None else np.full(n, 10_000)),
            "runtime_s": np.asarray(runtime if runtime is not None else np.full(n, 1000)),
            "procs": np.asarray(procs if procs is not None else nodes * 8),
            "line": np.arange(1, n + 1),
        },
        source="inline",
        format="test",
        records=n + 2,
        repairs={"walltime_from_runtime": 1},
        skipped={"unknown_size": 2},
        settings={"cores_per_node": 8},
    )
    return w


def snapshot(w: Workload) -> dict:
    return {c: w[c].copy() for c in w.columns}


def assert_unchanged(w: Workload, before: dict) -> None:
    for c, v in before.items():
        assert np.array_equal(w[c], v), c
    assert "transforms" not in w.settings and "scenario" not in w.settings


# ----------------------------------------------------------------------- scale


def test_scale_by_two_doubles_nodes_and_procs_and_counts():
    w = make([1, 2, 18, 256])
    before = snapshot(w)
    t = scale_nodes(w, 2)
    assert t["nodes"].tolist() == [2, 4, 36, 512]
    assert t["procs"].tolist() == [16, 32, 288, 4096]
    assert t.repairs == {"walltime_from_runtime": 1, "transform_scaled_nodes": 4}
    assert t.skipped == {"unknown_size": 2} and t.records == w.records
    assert t.settings["transforms"] == ["scale:2"]
    assert t["runtime_s"].tolist() == w["runtime_s"].tolist()
    assert_unchanged(w, before)  # the input is not modified


def test_scale_fractional_rounds_up_exactly_and_keeps_at_least_one():
    w = make([1, 2, 3, 10, 7])
    t = scale_nodes(w, 1.5)
    assert t["nodes"].tolist() == [2, 3, 5, 15, 11]  # ceil(1.5), 3, ceil(4.5), 15, ceil(10.5)
    # 1.1 is read as 11/10: 10 nodes give exactly 11, not 12 (binary 1.1 is above 1.1)
    assert scale_nodes(make([10, 20]), 1.1)["nodes"].tolist() == [11, 22]
    t = scale_nodes(make([1, 2, 3, 5]), 0.5)
    assert t["nodes"].tolist() == [1, 1, 2, 3]
    assert t.repairs["transform_scaled_nodes"] == 3  # the 1-node job did not change
    assert t.settings["transforms"] == ["scale:0.5"]
    with pytest.raises(ValueError):
        scale_nodes(w, 0)


def test_scale_by_one_changes_nothing_and_counts_nothing():
    t = scale_nodes(make([1, 4]), 1)
    assert t["nodes"].tolist() == [1, 4] and "transform_scaled_nodes" not in t.repairs


# ----------------------------------------------------------------------- window


def test_time_window_keeps_half_open_interval_from_first_submit():
    t0 = 5000
    submit = t0 + np.array([0, DAY - 1, DAY, 2 * DAY, 3 * DAY - 1, 3 * DAY, 10 * DAY])
    w = make(np.ones(len(submit), dtype=int), submit=submit)
    t = time_window(w, 1)
    assert t["submit_s"].tolist() == submit[:2].tolist()  # [t0, t0 + 1 day)
    assert t.skipped == {"unknown_size": 2, "transform_outside_window": 5}
    assert t.settings["transforms"] == ["days:1"]
    t = time_window(w, 2, start_days=1)
    assert t["submit_s"].tolist() == submit[2:5].tolist()  # [t0 + 1 day, t0 + 3 days)
    assert t.settings["transforms"] == ["days:2@1"]
    # submit times are not shifted; every job is still accounted for
    assert len(t) + t.skipped["transform_outside_window"] == len(w)
    assert time_window(w, 0.5)["submit_s"].tolist() == [t0]
    with pytest.raises(ValueError):
        time_window(w, 0)


def test_time_window_chained_is_relative_to_the_window_given():
    submit = np.arange(0, 10 * DAY, DAY // 2)
    w = make(np.ones(len(submit), dtype=int), submit=submit)
    t = apply_transforms(w, ["days:6@2", "days:1@1"])  # days 2-8, then its day 1: days 3-4
    assert t["submit_s"].tolist() == [3 * DAY, 3 * DAY + DAY // 2]
    assert t.skipped["transform_outside_window"] == len(w) - 2
    assert t.settings["transforms"] == ["days:6@2", "days:1@1"]


# ----------------------------------------------------------------------- cores


def test_rescale_cores_ceil_and_jobs_without_procs():
    w = make([1, 1, 2, 4, 3], procs=[1, 16, 17, 64, 0])
    t = rescale_cores(w, 16)
    assert t["nodes"].tolist() == [1, 1, 2, 4, 3]  # ceil(1/16)=1, 1, ceil(17/16)=2, 4, kept
    assert "transform_rescaled_nodes" not in t.repairs
    assert t.repairs["transform_cores_no_procs"] == 1
    t = rescale_cores(w, 4)
    assert t["nodes"].tolist() == [1, 4, 5, 16, 3]
    assert t.repairs["transform_rescaled_nodes"] == 3
    assert t.settings["transforms"] == ["cores:4"]
    with pytest.raises(ValueError):
        rescale_cores(w, 0)


def test_scale_then_cores_keeps_the_scaling():
    w = make([2, 3], procs=[16, 24])
    t = apply_transforms(w, ["scale:2", "cores:16"])
    assert t["nodes"].tolist() == [2, 3]  # procs 32, 48 over 16 cores per node
    assert t.settings["transforms"] == ["scale:2", "cores:16"]


# ----------------------------------------------------------------------- fit


def test_fit_to_fabric_cap_and_drop_are_counted():
    w = make([1, 1296, 1297, 5000])
    t = fit_to_fabric(w, 1296, "cap")
    assert t["nodes"].tolist() == [1, 1296, 1296, 1296]
    assert t.repairs["transform_capped_nodes"] == 2 and len(t) == 4
    t = fit_to_fabric(w, 1296, "drop")
    assert t["nodes"].tolist() == [1, 1296]
    assert t.skipped["transform_larger_than_fabric"] == 2
    assert t.settings["transforms"] == ["drop:1296"]
    with pytest.raises(ValueError):
        fit_to_fabric(w, 10, "shrink")


# ----------------------------------------------------------------------- parsing


def test_apply_transforms_parses_every_form_in_order():
    submit = np.arange(0, 100 * DAY, DAY)
    w = make(np.full(len(submit), 700), submit=submit, procs=np.full(len(submit), 700 * 8))
    t = apply_transforms(w, [" scale:2 ", "days:30", "days:10@5", "cores:16", "cap:1296"])
    assert len(t) == 10 and t["submit_s"][0] == 5 * DAY
    assert t["nodes"].tolist() == [700] * 10  # 1400 nodes x 8 cores / 16 = 700
    assert t.settings["transforms"] == ["scale:2", "days:30", "days:10@5", "cores:16", "cap:1296"]
    t = apply_transforms(make([10, 2000]), ["drop"], fabric_nodes=1296)
    assert t["nodes"].tolist() == [10] and t.settings["transforms"] == ["drop:1296"]
    t = apply_transforms(make([10, 2000]), ["cap"], fabric_nodes=1296)
    assert t["nodes"].tolist() == [10, 1296]
    t = apply_transforms(make([3]), [])
    assert t.settings["transforms"] == [] and t["nodes"].tolist() == [3]


@pytest.mark.parametrize(
    "spec",
    ["scale", "scale:", "scale:0", "scale:-2", "scale:x", "days:0", "days:", "days:abc", "days:30@-1", "days:30@x",
     "cores:1.5", "cores:0", "cap:abc", "drop:0", "drop:12.5", "cap", "nodes:2", "", "2x",
     # not decimals: Fraction() took them, and scale:1/3 was recorded as a string the
     # command refuses (scale:0.3333333333333333, over 9 decimals)
     "scale:1/3", "days:1/3", "days:1@1/2", "scale:1_0", "cores:1_6", "scale:\u0663", "cap:2/1"],
)
def test_bad_transform_strings_name_the_string_and_what_is_expected(spec):
    with pytest.raises(InputError) as err:
        apply_transforms(make([1, 2]), [spec])
    msg = str(err.value)
    assert repr(spec.strip()) in msg
    assert "expected one of scale:K, days:N, days:N@START, cores:C, cap[:N], drop[:N]" in msg


@pytest.mark.parametrize(
    "spec",
    ["scale:1e300", "scale:2147483648", "scale:0.1234567890123", "cores:1e20", "cap:1e20", "drop:2147483648"],
)
def test_absurd_transform_numbers_are_input_errors_not_overflows(spec):
    """These raised OverflowError (an internal error) from int64 arithmetic, or, for
    drop, were taken as is."""
    with pytest.raises(InputError) as err:
        apply_transforms(make([1, 2]), [spec])
    assert repr(spec) in str(err.value)


@pytest.mark.parametrize("spec", ["days:1e400", "days:1@1e400", "days:1e14@1e14"])
def test_a_window_beyond_2_63_seconds_is_an_input_error_not_an_overflow(spec):
    """days:1e400 failed as an internal error: OverflowError 'integer division result too
    large for a float' (the window's bounds are int64 seconds)."""
    with pytest.raises(InputError, match=r"must be below 106,751,991,167,300 \(2\^63 seconds\)") as err:
        apply_transforms(make([1, 2]), [spec])
    assert repr(spec) in str(err.value)
    assert len(apply_transforms(make([1, 2]), ["days:1e14"])) == 2  # far, but in range: everything is kept


def test_scale_past_2_31_nodes_names_the_job_and_never_wraps():
    """1,140 x 10^16 wraps in int64 (to a negative product, then "at least 1" node): the
    job must not silently become a 1-node job. Expected values by hand."""
    w = make([1, 1140, 3])
    with pytest.raises(InputError) as err:
        apply_transforms(w, ["scale:2000000"])
    msg = str(err.value)
    assert msg.startswith("inline:2: field 'nodes': ") and "2,280,000,000" in msg
    # Below the limit: exact, not wrapped (procs 8 per node may pass 2^31; they fit int64).
    t = apply_transforms(w, ["scale:1000000"])
    assert t["nodes"].tolist() == [1_000_000, 1_140_000_000, 3_000_000]
    assert t["procs"].tolist() == [8_000_000, 9_120_000_000, 24_000_000]
    with pytest.raises(InputError):
        apply_transforms(w, ["scale:50000", "scale:50000"])


def test_scale_with_a_nine_decimal_factor_never_wraps_processor_counts():
    """Processor counts are held below 2^63 once scaled, not below 2^31: 10^9 processors
    times the numerator of 10000.000000001 (10^13 + 1) is past 2^63, and wrapped to
    1,864,712,051 processors (a later cores:C then made 1,865 nodes instead of
    10,000,001). Expected values by hand: ceil(10^9 x 10000.000000001) = 10^13 + 1."""
    w = make([1000, 1], procs=[10**9, 2])
    t = apply_transforms(w, ["scale:10000.000000001"])
    assert t["procs"].tolist() == [10**13 + 1, 20001]
    assert t["nodes"].tolist() == [10_000_001, 10001]
    assert apply_transforms(w, ["scale:10000.000000001", "cores:1000000"])["nodes"].tolist() == [10_000_001, 1]


def test_cores_past_2_31_nodes_names_the_job_and_the_transform():
    """cores:1 on 10^11 processors made a 10^11-node job, which the engine refused as
    the log's own "field 'nodes' out of range", naming neither the transform nor its flag."""
    w = make([1000, 1], procs=[10**9, 2])
    with pytest.raises(InputError) as err:
        apply_transforms(w, ["scale:100", "cores:1"])
    msg = str(err.value)
    assert msg.startswith("inline:1: field 'procs': cores:1 makes job 1's 100,000,000,000 procs 100,000,000,000 nodes, not below 2^31") and "--transform" in msg, msg
    assert apply_transforms(w, ["scale:100", "cores:100"])["nodes"].tolist() == [10**9, 2]


# ----------------------------------------------------------------------- scenarios


def test_none_scenario_changes_nothing():
    w = make([1, 8, 512])
    t = apply_scenario(w, "none", seed=3)
    assert t["runtime_s"].tolist() == w["runtime_s"].tolist()
    assert "scenario_sped_up" not in t.repairs
    assert t.settings["scenario"] == {"name": "none"}


@pytest.mark.parametrize("name,x", [("ta5", 5), ("ta10", 10), ("ta20", 20)])
def test_ta_shortens_exactly_the_jobs_over_four_nodes(name, x):
    nodes = np.array([1, 4, 5, 5, 5, 5, 64, 2048])
    runtime = np.array([1000, 1000, 1000, 15, 5, 1, 0, 86_399])
    w = make(nodes, runtime=runtime)
    before = snapshot(w)
    t = apply_scenario(w, name)
    expect = [r if n <= 4 else (r * (100 - x) + 50) // 100 for n, r in zip(nodes, runtime)]
    assert t["runtime_s"].tolist() == expect
    assert t["walltime_s"].tolist() == w["walltime_s"].tolist()  # requested times unchanged
    assert t["nodes"].tolist() == w["nodes"].tolist()
    assert t.repairs["scenario_sped_up"] == int(np.sum(np.array(expect) < runtime))
    assert t.settings["scenario"] == {"name": name, "percent": x}
    assert_unchanged(w, before)


def test_ta10_rounding_is_nearest_second_halves_up():
    w = make([8, 8, 8, 8, 8], runtime=[15, 5, 1, 0, 1234])
    # 13.5 -> 14, 4.5 -> 5 (unchanged), 0.9 -> 1, 0, 1110.6 -> 1111
    assert apply_scenario(w, "ta10")["runtime_s"].tolist() == [14, 5, 1, 0, 1111]
    assert apply_scenario(w, "ta10").repairs["scenario_sped_up"] == 2


def _big_workload(n=6000, seed=7):
    rng = np.random.default_rng(seed)
    nodes = rng.integers(1, 1100, size=n)
    nodes[:50] = 1
    nodes[50:100] = 4
    nodes[100:200] = 5
    nodes[200:300] = 128
    nodes[300:400] = 129
    nodes[400:500] = 512
    nodes[500:600] = 1000
    return make(nodes, runtime=rng.integers(0, 86_400, size=n))


@pytest.mark.parametrize("name", ["v1", "v2"])
def test_v_scenarios_are_seeded_and_deterministic(name):
    w = _big_workload()
    a = apply_scenario(w, name, seed=11)
    b = apply_scenario(w, name, seed=11)
    c = apply_scenario(w, name, seed=12)
    assert np.array_equal(a["runtime_s"], b["runtime_s"])
    assert np.array_equal(a.extra["speedup_bin"], b.extra["speedup_bin"])
    assert not np.array_equal(a.extra["speedup_bin"], c.extra["speedup_bin"])
    assert a.settings["scenario"] == {"name": name, "seed": 11}
    # exactly PCG64's draws: one uniform number per job, in row order
    u = np.random.default_rng(11).random(len(w))
    sel = a.extra["speedup_bin"] >= 0
    nb = 3 if name == "v1" else np.where(w["nodes"][sel] > 128, 3, 2)
    assert np.array_equal(a.extra["speedup_bin"][sel], np.floor(u[sel] * nb).astype(int))


def _check_bins(t: Workload, w: Workload, mask: np.ndarray, bins: list[tuple[float, float]]) -> None:
    nodes = w["nodes"][mask]
    b = t.extra["speedup_bin"][mask]
    frac = t.extra["speedup_fraction"][mask]
    assert set(np.unique(b).tolist()) == set(range(len(bins)))  # every bin used
    counts = np.bincount(b, minlength=len(bins)) / len(b)
    assert np.all(np.abs(counts - 1 / len(bins)) < 0.06)  # equal odds
    lo = np.array([x[0] for x in bins])[b]
    hi = np.array([x[1] for x in bins])[b]
    assert np.allclose(frac, lo + (hi - lo) * np.minimum(nodes, 512) / 512)
    assert np.all((frac >= lo) & (frac <= hi))
    top = nodes >= V_FULL_NODES
    assert np.allclose(frac[top], hi[top])  # > 512 nodes: the top of the bin
    rt = w["runtime_s"][mask]
    expect = np.maximum(np.floor(rt * (1 - frac) + 0.5), np.minimum(rt, 1))
    assert np.array_equal(t["runtime_s"][mask], expect.astype(np.int64))


def test_v1_every_job_in_one_of_three_bins_linear_in_nodes():
    w = _big_workload()
    t = apply_scenario(w, "v1", seed=0)
    _check_bins(t, w, np.ones(len(w), dtype=bool), [(0, 0.1), (0, 0.2), (0, 0.3)])
    assert t.repairs["scenario_sped_up"] == int(np.sum(t["runtime_s"] < w["runtime_s"]))
    assert t["walltime_s"].tolist() == w["walltime_s"].tolist()


def test_v2_bins_by_size_and_small_jobs_untouched():
    w = _big_workload()
    t = apply_scenario(w, "v2", seed=0)
    small = w["nodes"] <= 4
    assert np.all(t.extra["speedup_bin"][small] == -1)
    assert np.array_equal(t["runtime_s"][small], w["runtime_s"][small])
    mid = (w["nodes"] >= 5) & (w["nodes"] <= 128)
    _check_bins(t, w, mid, [(0, 0.1), (0, 0.2)])
    large = w["nodes"] > 128
    _check_bins(t, w, large, [(0, 0.1), (0.1, 0.2), (0.1, 0.3)])


def test_v_fraction_examples():
    # 256 nodes in bin 10-30%: 10% + 20% * 256/512 = 20%; 1024 nodes: 30%; 5 nodes in 0-20%
    f = speedup_fraction(np.array([256, 1024, 5]), np.array([0.1, 0.1, 0.0]), np.array([0.3, 0.3, 0.2]))
    assert np.allclose(f, [0.2, 0.3, 0.2 * 5 / 512])
    w = make([1024], runtime=[1000])
    t = apply_scenario(w, "v2", seed=0)
    lo, hi = [(0, 0.1), (0.1, 0.2), (0.1, 0.3)][t.extra["speedup_bin"][0]]
    assert t["runtime_s"][0] == round(1000 * (1 - hi))


def test_unknown_scenario_is_an_input_error():
    with pytest.raises(InputError, match="unknown scenario 'ta15'"):
        apply_scenario(make([8]), "ta15")


@pytest.mark.parametrize(
    "column, values, error, message",
    [
        ("walltime_s", np.array([100.0, 100.5, 100.0]), ValueError, "workload column 'walltime_s' row 1: 100.5 is not a whole number"),
        ("nodes", np.array([1.5, 2.0, 3.0]), ValueError, "workload column 'nodes' row 0: 1.5 is not a whole number"),
        ("submit_s", np.array([0.0, np.nan, 20.0]), ValueError, "workload column 'submit_s' row 1: nan is not a whole number"),
        ("walltime_s", np.array([1.0, 1.0, 1e30]), ValueError, "row 2: 1e+30 is not a whole number within 64 bits"),
        ("nodes", np.array([2**64 - 1, 1, 1], dtype=np.uint64), ValueError, "row 0: 18446744073709551615 does not fit a signed 64-bit integer"),
        ("nodes", np.array(["1", "2", "3"]), TypeError, "workload column 'nodes' must hold whole numbers (an integer array), got dtype <U1"),
        ("nodes", [1, 2**70, 3], TypeError, "got dtype object"),
        ("nodes", np.array([True, False, True]), TypeError, "got dtype bool"),
        # a DataFrame's df[["nodes"]] or a list of lists: accepted, then refused by the engine
        # as "argument 'nodes': 'ndarray' object cannot be converted to 'PyArray<T, D>'"
        ("nodes", np.array([[1], [2], [3]]), ValueError, "workload column 'nodes' must be one-dimensional, one value per job; got an array of shape (3, 1)"),
        ("job_id", 7, ValueError, "workload column 'job_id' must be one-dimensional, one value per job; got an array of shape ()"),  # was "object of type 'int' has no len()"
    ],
)
def test_a_workload_built_from_arrays_keeps_its_values_or_says_why_not(column, values, error, message):
    """Workload() cast every column to int64: a walltime of 100.5 became 100 and a node
    count of 1.5 became 1 without a word, NaN became -2^63 (reported later as that number)
    and an unsigned 2^64 - 1 became -1."""
    cols = {"job_id": np.arange(3), "submit_s": np.array([0, 10, 20]), "nodes": np.array([1, 2, 3]), "walltime_s": np.array([100, 100, 100]), "runtime_s": np.array([50, 50, 50]), "procs": np.array([1, 2, 3]), "line": np.arange(3)}
    cols[column] = values
    with pytest.raises(error) as e:
        Workload(columns=cols, source="mem", format="swf")
    assert message in str(e.value)
    # whole numbers of any numeric dtype, and lists, are taken as they are
    for ok in (np.array([1.0, 2.0, 3.0]), np.array([1, 2, 3], dtype=np.int32), np.array([1, 2, 3], dtype=np.uint64), [1, 2, 3]):
        cols[column] = ok
        w = Workload(columns=cols, source="mem", format="swf")
        assert w.columns[column].dtype == np.int64 and w.columns[column].tolist() == [1, 2, 3]


def test_apply_transforms_refuses_a_bare_string():
    """apply_transforms(w, "scale:2") read the string one letter at a time and stopped
    with "cannot read 's': unknown transform 's'"."""
    w = make([1, 2, 3])
    with pytest.raises(TypeError) as exc:
        apply_transforms(w, "scale:2")
    assert str(exc.value) == "apply_transforms(): specs must be a list of strings, e.g. specs=['scale:2'], got the string 'scale:2'"
    assert apply_transforms(w, ["scale:2"])["nodes"].tolist() == [2, 4, 6]


def test_a_workload_leaves_the_callers_columns_as_they_were():
    """Workload() wrote its int64 arrays back into the dict it was given (a notebook's
    lists became arrays under its feet)."""
    cols = {"job_id": [1, 2], "submit_s": [0, 10], "nodes": [1, 2], "walltime_s": [100, 100], "runtime_s": [50, 50], "procs": [1, 2], "line": [1, 2]}
    ids = {"user_id": [3, 4], "account_id": [-1, -1], "qos_id": [0, 0], "partition_id": [1, 1]}
    for given in (cols, {**cols, **ids}):  # without the id columns, and with them
        before = {k: list(v) for k, v in given.items()}
        w = Workload(columns=given, source="mem", format="swf")
        assert given == before and all(type(v) is list for v in given.values())
        assert w["nodes"].dtype == np.int64 and w["user_id"].tolist() == before.get("user_id", [-1, -1])


@pytest.mark.parametrize(
    "call, message",
    [
        # were OverflowError "cannot convert float infinity to integer" and ValueError
        # "cannot convert float NaN to integer"
        (lambda w: time_window(w, float("inf")), "window length must be a finite number of days above 0, got inf"),
        (lambda w: time_window(w, 1, float("nan")), "window start must be a finite number of days, 0 or more, got nan"),
        (lambda w: time_window(w, 1, float("inf")), "window start must be a finite number of days, 0 or more, got inf"),
        # were NumPy's "expected non-negative integer" and "SeedSequence expects int ..."
        (lambda w: apply_scenario(w, "v1", -1), "apply_scenario(): seed must be a whole number from 0 to 2^64 - 1 (as --seed), got -1"),
        (lambda w: apply_scenario(w, "v1", 1.5), "apply_scenario(): seed must be a whole number from 0 to 2^64 - 1 (as --seed), got 1.5"),
        (lambda w: apply_scenario(w, "v2", "3"), "apply_scenario(): seed must be a whole number from 0 to 2^64 - 1 (as --seed), got '3'"),
        (lambda w: apply_scenario(w, "v2", 2**64), f"apply_scenario(): seed must be a whole number from 0 to 2^64 - 1 (as --seed), got {2**64}"),
    ],
)
def test_python_callers_get_a_sentence_for_a_bad_window_or_seed(call, message):
    with pytest.raises(ValueError) as e:
        call(make([1, 2, 8]))
    assert str(e.value) == message


def test_the_largest_seed_and_a_numpy_seed_are_taken():
    w = make(list(range(1, 40)))
    top = apply_scenario(w, "v1", 2**64 - 1)["runtime_s"]
    assert (apply_scenario(w, "v1", np.uint64(2**64 - 1))["runtime_s"] == top).all()


# ----------------------------------------------------------------------- take


def _accounted(w: Workload) -> bool:
    return len(w) + sum(w.skipped.values()) == w.records


def test_take_counts_the_rows_it_leaves_out():
    """read_trace(...).take(np.arange(50)) kept records and skipped as they were: a run of
    it said records=120, in_workload=50, skipped={}, 70 records unaccounted for. The rows
    a take leaves out are counted as skipped "taken_out"."""
    w = make(np.arange(1, 11))  # 10 jobs, 12 records, 2 skipped
    t = w.take(np.arange(3))
    assert len(t) == 3 and t.records == 12 and t.skipped == {"unknown_size": 2, "taken_out": 7} and _accounted(t)
    m = w.take(w["nodes"] % 2 == 0)  # a boolean mask: 5 of 10
    assert list(m["nodes"]) == [2, 4, 6, 8, 10] and m.skipped == {"unknown_size": 2, "taken_out": 5}
    assert w.take(range(4)).skipped["taken_out"] == 6
    # taking again adds to the count; every row (in any order) leaves none out, and no key
    assert t.take(np.array([2, 0])).skipped == {"unknown_size": 2, "taken_out": 8}
    assert w.take(np.arange(10)[::-1]).skipped == {"unknown_size": 2}
    assert w.skipped == {"unknown_size": 2} and w.records == 12  # the original is untouched


def test_take_then_transforms_count_each_record_once():
    w = make(np.arange(1, 11), submit=np.arange(10) * DAY)
    t = time_window(w.take(np.arange(6)), 2)
    assert t.skipped == {"unknown_size": 2, "taken_out": 4, "transform_outside_window": 4} and _accounted(t)
    # the transforms' own copies are not takes: nothing is counted twice
    s = fit_to_fabric(scale_nodes(w, 2), 8, mode="drop")
    assert "taken_out" not in s.skipped and _accounted(s)


def test_take_refuses_a_row_twice():
    """A repeated row would be a job the log does not have: jobs beyond the records."""
    w = make(np.arange(1, 5))
    with pytest.raises(ValueError, match=r"take: row 1 is given twice"):
        w.take(np.array([0, 1, 1]))


def test_take_keeps_the_logs_order_whatever_the_order_of_its_index():
    """take(np.array([500, 0])) kept the index's order: a workload out of submit order,
    which a replay refused as the log's fault ("LOG:38: ... rows must be sorted by submit
    time"), a line of a log that is sorted."""
    from conftest import EXAMPLE_TRACE
    from toposched.simulate import simulate
    from toposched.topology import load_fabric
    from toposched.workload import read_trace

    w = make(np.arange(1, 11), submit=np.arange(10) * DAY)
    t = w.take(np.array([7, 2, 5]))
    assert t["job_id"].tolist() == sorted(t["job_id"].tolist()) and t["submit_s"].tolist() == [2 * DAY, 5 * DAY, 7 * DAY]
    atlas = read_trace(EXAMPLE_TRACE)
    r = simulate(atlas.take(np.array([500, 0, 1000])), load_fabric("cab"))
    assert r.jobs.column("job_id").to_pylist() == atlas["job_id"][[0, 500, 1000]].tolist()


def test_a_taken_workloads_run_accounts_for_every_record():
    from conftest import EXAMPLE_TRACE
    from toposched.simulate import RunConfig, simulate
    from toposched.topology import load_fabric
    from toposched.workload import read_trace

    w = read_trace(EXAMPLE_TRACE)
    s = simulate(w.take(np.arange(50)), load_fabric("cab"), RunConfig()).summary
    inp = s["input"]
    assert inp["records"] == w.records and s["jobs"]["in_workload"] == 50
    assert inp["skipped"] == dict(sorted({**w.skipped, "taken_out": len(w) - 50}.items()))
    assert s["jobs"]["in_workload"] + sum(inp["skipped"].values()) == inp["records"]

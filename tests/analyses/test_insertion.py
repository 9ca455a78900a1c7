"""Insertion: fixed-reference displacement is exactly 0 (computed), cohort displacement is not,
and the cohort numbers match an independent recomputation."""

from __future__ import annotations

import numpy as np
import pytest
from support.criterion_support import build, encoder_axes, reference_scores, scenario_runs
from support.runs_factory import encoder_runs, frame

from crsbench.analyses import run_analysis
from crsbench.analyses.validity.stability import insertion_plan
from crsbench.warehouse.connection import Warehouse

MEMBERS = ["e1", "e2", "e3", "e4", "e5", "e6", "e7", "x_hi"]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    # x_hi sits above everyone, so inserting it moves the cohort anchors
    runs = frame(scenario_runs().to_dict("records") + encoder_runs("x_hi", quality=0.97))
    db = build(tmp_path_factory.mktemp("ins") / "w.duckdb", runs, MEMBERS)
    with Warehouse.open(db) as wh:
        out = run_analysis(wh, "insertion", {"trials": 6, "seed": 4})
    return out, runs


def test_plan_is_a_random_base_of_n_minus_3_then_the_other_3():
    plans = insertion_plan(MEMBERS, 5, np.random.default_rng(0))
    for base, added in plans:
        assert len(base) == 5 and len(added) == 3
        assert sorted(base + added) == sorted(MEMBERS)
    assert len({p[0] for p in plans}) > 1
    assert [len(b) for b, _ in insertion_plan(MEMBERS[:4], 2, np.random.default_rng(0))] == [2, 2]


def test_fixed_reference_displacement_is_exactly_zero_and_cohort_is_not(result):
    out, _ = result
    table = out.tables["insertions"]
    fixed, cohort = table[table["mode"] == "fixed"], table[table["mode"] == "cohort"]
    assert len(fixed) == len(cohort) == 6 * 3
    assert (fixed["max_displacement"] == 0.0).all()  # exact, not approximately
    assert (cohort["max_displacement"] > 0).any()
    summary = out.summary.set_index("mode")
    assert summary.loc["fixed", "max"] == 0.0 and summary.loc["cohort", "max"] > 1e-3
    assert summary.loc["fixed", "n_insertions"] == 18 and summary.loc["fixed", "n_scores"] == 18 * 5
    assert any("exactly 0" in n for n in out.notes)


def test_cohort_displacement_matches_an_independent_recomputation(result):
    out, runs = result
    axes = encoder_axes(runs)
    table = out.tables["insertions"]
    plans = insertion_plan(MEMBERS, 6, np.random.default_rng(4))
    for t, (base, added) in enumerate(plans):
        for step in range(1, 4):
            before = reference_scores(axes, [*base, *added[: step - 1]])["crs"].loc[list(base)]
            after = reference_scores(axes, [*base, *added[:step]])["crs"].loc[list(base)]
            moved = np.abs(after.to_numpy() - before.to_numpy())
            row = table[(table["mode"] == "cohort") & (table["trial"] == t) & (table["step"] == step)].iloc[0]
            assert row["inserted"] == added[step - 1]
            assert row["mean_displacement"] == pytest.approx(moved.mean(), abs=1e-12)
            assert row["median_displacement"] == pytest.approx(np.median(moved), abs=1e-12)
            assert row["max_displacement"] == pytest.approx(moved.max(), abs=1e-12)

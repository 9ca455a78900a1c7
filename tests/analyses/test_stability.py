"""Reference stability: sub-panel rankings against an independent recomputation (runs_factory's
pandas METHODS.md §8 with the sub-panel's anchors and Pareto reference) and scipy's Kendall tau."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from support.criterion_support import build, encoder_axes, reference_scores, scenario_runs

from crsbench.analyses import run_analysis
from crsbench.analyses.validity.stability import random_panel_sizes
from crsbench.warehouse.connection import Warehouse

MEMBERS = ["e1", "e2", "e3", "e4", "e5", "e6", "e7"]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    runs = scenario_runs()
    db = build(tmp_path_factory.mktemp("stab") / "w.duckdb", runs, MEMBERS)
    with Warehouse.open(db) as wh:
        out = run_analysis(wh, "stability", {"random_panels": 20, "seed": 3})
    return out, runs


@pytest.mark.parametrize("n, sizes", [(15, (12, 10)), (10, (8, 7)), (7, (6, 5)), (5, (4, 3)), (4, (3, 3)), (3, (2, 2))])
def test_random_panel_sizes_scale_with_the_panel(n, sizes):
    assert random_panel_sizes(n) == sizes


def test_panels_are_loo_and_random_of_the_documented_sizes(result):
    out, _ = result
    table = out.tables["panels"]
    loo = table[table["kind"] == "leave_one_out"]
    assert sorted(loo["left_out"]) == MEMBERS and set(loo["size"]) == {6}
    assert table[table["kind"] == "random_6"].shape[0] == 20
    assert table[table["kind"] == "random_5"].shape[0] == 20
    assert (table["n"] == 7).all()  # every member is ranked under every sub-panel
    summary = out.summary.set_index("kind")
    assert summary.loc["leave_one_out", "n_panels"] == 7
    assert summary.loc["random_5", "min_tau"] == pytest.approx(
        table.loc[table["kind"] == "random_5", "kendall_tau"].min()
    )


def test_loo_rankings_match_an_independent_recomputation(result):
    out, runs = result
    axes = encoder_axes(runs)
    table = out.tables["panels"].set_index("grp")
    full = reference_scores(axes, MEMBERS)["crs"]
    for left_out in MEMBERS:
        sub = [m for m in MEMBERS if m != left_out]
        crs = reference_scores(axes, MEMBERS, anchors_from=sub)["crs"].loc[full.index]
        tau = stats.kendalltau(crs, full).statistic
        row = table.loc[f"loo:{left_out}"]
        assert row["kendall_tau"] == pytest.approx(tau, abs=1e-12)
        top_sub = set(crs.sort_values(ascending=False).index[:3])
        top_full = set(full.sort_values(ascending=False).index[:3])
        assert row["top3_overlap"] == pytest.approx(len(top_sub & top_full) / 3)
    # leaving out a member that sets an anchor moves the ranking somewhere
    assert (table["kendall_tau"] < 1).any()
    assert np.isfinite(table["kendall_tau"]).all()

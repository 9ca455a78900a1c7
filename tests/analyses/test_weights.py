"""Scalarisation sensitivity: default weights reproduce tau = 1; other weightings against the
runs_factory reference CRS with the same weights and the panel's frozen anchors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from support.criterion_support import build, encoder_axes, scenario_runs
from support.runs_factory import reference_anchors, reference_crs

from crsbench.analyses import run_analysis
from crsbench.analyses.validity.criterion import DEFAULT_WEIGHTS, member_axes, panel_anchors, score_groups
from crsbench.analyses.validity.weights import weight_draws, weight_sensitivity
from crsbench.core import AXIS_WEIGHTS, TERM_WEIGHTS
from crsbench.warehouse.connection import Warehouse

MEMBERS = ["e1", "e2", "e3", "e4", "e5", "e6", "e7"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    runs = scenario_runs()
    db = build(tmp_path_factory.mktemp("w") / "w.duckdb", runs, MEMBERS)
    return db, encoder_axes(runs)


def _reference(axes: pd.DataFrame, row) -> pd.Series:
    enc = axes[axes["encoder_id"].isin(MEMBERS)]
    w_axes = [row[k] for k in AXIS_WEIGHTS]
    w_terms = [row[k] for k in TERM_WEIGHTS]
    out = reference_crs(enc, MEMBERS, reference_anchors(enc, MEMBERS), w_axes, w_terms)
    return out.set_index("encoder_id")["crs"]


def test_weightings_equal_to_the_default_reproduce_tau_one(world):
    db, _ = world
    same = pd.DataFrame([{"grp": f"copy:{i}", "family": "axis", **DEFAULT_WEIGHTS} for i in range(3)])
    with Warehouse.open(db) as wh:
        got = weight_sensitivity(wh, MEMBERS, panel_anchors(wh, "p", MEMBERS), same)
    assert (got["kendall_tau"] == 1.0).all() and got["top3_unchanged"].all()
    assert (got["n"] == len(MEMBERS)).all()


def test_draws_match_the_reference_crs_under_the_same_weights(world):
    db, axes = world
    with Warehouse.open(db) as wh:
        out = run_analysis(wh, "weights", {"draws": 15, "seed": 2})
    table = out.tables["draws"]
    assert table["family"].value_counts().to_dict() == {"axis": 15, "component": 15, "alternative": 1}
    np.testing.assert_allclose(table[list(AXIS_WEIGHTS)].sum(axis=1), 1.0)
    np.testing.assert_allclose(table[list(TERM_WEIGHTS)].sum(axis=1), 1.0)
    axis_rows = table[table["family"] == "axis"]
    assert (axis_rows[list(TERM_WEIGHTS)].to_numpy() == [0.60, 0.25, 0.15]).all()
    alt = table[table["family"] == "alternative"].iloc[0]
    assert [alt[k] for k in AXIS_WEIGHTS] == [0.30, 0.30, 0.15, 0.25]
    default = _reference(axes, DEFAULT_WEIGHTS)
    for _, row in table.iloc[[0, 1, 2, 16, 17]].iterrows():
        crs = _reference(axes, row).loc[default.index]
        assert row["kendall_tau"] == pytest.approx(stats.kendalltau(crs, default).statistic, abs=1e-12)
        top = set(crs.sort_values(ascending=False).index[:3])
        assert row["top3_unchanged"] == (top == set(default.sort_values(ascending=False).index[:3]))
    summary = out.summary.set_index("family")
    comp = table[table["family"] == "component"]
    assert summary.loc["component", "mean_tau"] == pytest.approx(comp["kendall_tau"].mean())
    assert summary.loc["component", "share_top3_unchanged"] == pytest.approx(comp["top3_unchanged"].mean())


def test_all_weight_on_discrimination_gives_the_auroc_ranking(world):
    # w_d = 1 and w_ideal = 1: CRS = x~_d, so the ranking is the AUROC ranking, and its tau
    # against the default CRS is the rank_agreement view's (AUROC vs CRS over the panel).
    db, axes = world
    auroc_only = pd.DataFrame(
        [
            {
                "grp": "auroc",
                "family": "axis",
                "w_d": 1.0,
                "w_c": 0.0,
                "w_le": 0.0,
                "w_r": 0.0,
                "w_dom": 0.0,
                "w_ideal": 1.0,
                "w_worst": 0.0,
            }
        ]
    )
    with Warehouse.open(db) as wh:
        got = weight_sensitivity(wh, MEMBERS, panel_anchors(wh, "p", MEMBERS), auroc_only).iloc[0]
        view = wh.sql("select kendall_tau from rank_agreement where panel = 'p' and population = 'panel'")
    default = _reference(axes, DEFAULT_WEIGHTS)
    auroc = axes.set_index("encoder_id")["discrimination"].loc[default.index]
    assert got["kendall_tau"] == pytest.approx(stats.kendalltau(auroc, default).statistic, abs=1e-12)
    assert got["kendall_tau"] == pytest.approx(view["kendall_tau"].iloc[0], abs=1e-12)


def test_weighted_macro_with_default_weights_is_crs_encoder_bit_for_bit(world):
    db, _ = world
    with Warehouse.open(db) as wh:
        axes = member_axes(wh, MEMBERS).assign(grp="g", scope="global", in_panel=True)
        anchors = panel_anchors(wh, "p", MEMBERS).assign(grp="g", scope="global")
        weights = pd.DataFrame([{"grp": "g", **DEFAULT_WEIGHTS}])
        got = score_groups(wh, axes, anchors, weights).set_index("encoder_id")
        view = wh.sql("select encoder_id, crs from crs_encoder where panel = 'p'").set_index("encoder_id")
    assert got["crs"].tolist() == view["crs"].loc[got.index].tolist()


def test_dirichlet_draws_are_reproducible():
    one = weight_draws(4, 1.0, np.random.default_rng(0))
    two = weight_draws(4, 1.0, np.random.default_rng(0))
    pd.testing.assert_frame_equal(one, two)
    assert len(one) == 1 + 2 * 4

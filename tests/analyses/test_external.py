"""External validity: leave-one-dataset-out CRS and the shift comparison against the runs_factory
reference and scipy's Spearman / Kendall."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from support.criterion_support import build, reference_scores, scenario_runs
from support.runs_factory import reference_anchors, reference_axes_cell, reference_axes_encoder, reference_crs

from crsbench.analyses import run_analysis
from crsbench.warehouse.connection import Warehouse

MEMBERS = ["e1", "e2", "e3", "e4", "e5", "e6", "e7"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    runs = scenario_runs()
    db = build(tmp_path_factory.mktemp("ext") / "w.duckdb", runs, MEMBERS)
    with Warehouse.open(db) as wh:
        out = run_analysis(wh, "external")
    return out, runs, reference_axes_cell(runs)


def _crs(table: pd.DataFrame, members: list[str]) -> pd.Series:
    table = table[table["encoder_id"].isin(members)]
    present = list(table["encoder_id"])
    return reference_crs(table, present, reference_anchors(table, present)).set_index("encoder_id")["crs"]


def _check(row: pd.Series, predictor: pd.Series, outcome: pd.Series) -> None:
    both = pd.concat([predictor.rename("p"), outcome.rename("o")], axis=1).dropna()
    assert row["n"] == len(both)
    assert row["spearman_rho"] == pytest.approx(stats.spearmanr(both.p, both.o).statistic, abs=1e-12)
    assert row["kendall_tau"] == pytest.approx(stats.kendalltau(both.p, both.o).statistic, abs=1e-12)
    top = lambda s: set(s.sort_values(ascending=False).index[:3])  # noqa: E731
    assert row["top3_overlap"] == pytest.approx(len(top(both.p) & top(both.o)) / 3)
    assert row["predicted_winner"] == both.p.idxmax() and row["actual_winner"] == both.o.idxmax()
    assert row["winner_recovered"] == (both.p.idxmax() == both.o.idxmax())


def test_leave_one_dataset_out_matches_the_reference(world):
    out, _, cells = world
    lodo = out.tables["lodo"].set_index(["held_out", "predictor", "outcome"])
    assert sorted(lodo.index.get_level_values(0).unique()) == ["cxr", "derm", "fundus"]
    for held_out in ("cxr", "derm", "fundus"):
        rest = reference_axes_encoder(cells[cells["dataset_id"] != held_out])
        rest = rest[rest["encoder_id"].isin(MEMBERS)]
        predictors = {"crs": _crs(rest, MEMBERS), "auroc": rest.set_index("encoder_id")["discrimination"]}
        here = cells[cells["dataset_id"] == held_out]
        outcomes = {
            "auroc": here[here.encoder_id.isin(MEMBERS)].set_index("encoder_id")["discrimination"],
            "crs": _crs(here, MEMBERS),
        }
        for p, pred in predictors.items():
            for o, outcome in outcomes.items():
                _check(lodo.loc[(held_out, p, o)], pred, outcome)
    # e5 has no fundus cell: six encoders are ranked there
    assert (lodo.loc["fundus"]["n"] == 6).all()


def test_shift_target_against_crs_without_the_shift_term(world):
    out, runs, _ = world
    shift = out.tables["shift"].set_index("predictor")
    assert set(shift["source"]) == {"cxr"} and set(shift["target"]) == {"mimic"}
    target = runs[(runs.condition == "shift") & (runs.probe == "logreg") & (runs.depth == 1.0)]
    target = target[target.encoder_id.isin(MEMBERS)].groupby("encoder_id")["auroc"].mean()
    no_shift = runs[runs["condition"] != "shift"]
    _check(shift.loc["crs_no_shift"], reference_scores(no_shift, MEMBERS)["crs"], target)
    cxr = reference_axes_cell(no_shift)
    cxr = cxr[cxr["dataset_id"] == "cxr"]
    _check(shift.loc["crs_no_shift_source"], _crs(cxr, MEMBERS), target)
    _check(shift.loc["auroc_source"], cxr.set_index("encoder_id")["discrimination"].loc[MEMBERS], target)
    assert np.isfinite(out.summary["spearman_rho"]).all()

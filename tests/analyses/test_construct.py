"""Construct validity: AULC vs relative-retention LE against AUROC and the largest axis
correlation, against scipy's Spearman on the runs_factory reference axes."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from scipy import stats
from support.criterion_support import build, scenario_runs
from support.runs_factory import AXES, reference_axes_cell, reference_axes_encoder

from crsbench.analyses import run_analysis
from crsbench.analyses.validity.construct import construct_summary
from crsbench.warehouse.connection import Warehouse


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    runs = scenario_runs()
    db = build(tmp_path_factory.mktemp("con") / "w.duckdb", runs)  # no panel needed
    with Warehouse.open(db) as wh:
        out = run_analysis(wh, "construct")
    cells = reference_axes_cell(runs)
    return out, {"cell": cells, "encoder": reference_axes_encoder(cells)}


@pytest.mark.parametrize("level", ["cell", "encoder"])
def test_summary_matches_scipy_spearman(world, level):
    out, tables = world
    table = tables[level]
    row = out.summary.set_index("level").loc[level]
    rho = lambda a, b: stats.spearmanr(table[a], table[b]).statistic  # noqa: E731
    assert row["n"] == len(table)
    assert row["rho_aulc_auroc"] == pytest.approx(rho("aulc", "discrimination"), abs=1e-12)
    assert row["rho_le_auroc"] == pytest.approx(rho("label_efficiency", "discrimination"), abs=1e-12)
    assert row["rho_aulc_le"] == pytest.approx(rho("aulc", "label_efficiency"), abs=1e-12)
    best = max(itertools.combinations(AXES, 2), key=lambda p: abs(rho(*p)))
    assert row["max_abs_axis_rho"] == pytest.approx(abs(rho(*best)), abs=1e-12)
    assert set(row["max_axis_pair"].split(" / ")) == set(best)


def test_summary_picks_the_largest_off_diagonal_axis_pair_only():
    # aulc correlates perfectly with discrimination but is not a CRS axis
    rows = pd.DataFrame(
        [
            ("cell", "discrimination", "aulc", 1.0, 9),
            ("cell", "discrimination", "calibration", -0.7, 9),
            ("cell", "calibration", "robustness", 0.2, 9),
            ("cell", "label_efficiency", "discrimination", 0.5, 9),
            ("cell", "aulc", "label_efficiency", 0.1, 9),
        ],
        columns=["level", "axis_a", "axis_b", "spearman_rho", "n"],
    )
    got = construct_summary(rows).iloc[0]
    assert got["max_abs_axis_rho"] == 0.7 and got["max_axis_pair"] == "discrimination / calibration"
    assert got["rho_aulc_auroc"] == 1.0 and got["rho_le_auroc"] == 0.5 and got["rho_aulc_le"] == 0.1

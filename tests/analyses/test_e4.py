"""E4 corruption vs confidence on a hand-built warehouse; Pearson r checked against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from support.analyses_support import append, run_row

from crsbench.analyses import run_analysis
from crsbench.warehouse.connection import Warehouse

CELLS = [("a", "d1"), ("a", "d2"), ("b", "d1"), ("b", "d2")]
CONDITIONS = ["jpeg-s1", "jpeg-s3", "rician-s2"]
# Per cell: clean (auroc, ece, confidence, accuracy) and per-condition (auroc, ece, confidence, accuracy)
CLEAN = {
    ("a", "d1"): (0.90, 0.05, 0.80, 0.78),
    ("a", "d2"): (0.85, 0.10, 0.70, 0.65),
    ("b", "d1"): (0.80, 0.02, 0.75, 0.74),
    ("b", "d2"): (0.95, 0.04, 0.90, 0.88),
}
PERTURBED = {
    ("a", "d1"): [(0.88, 0.07, 0.82, 0.75), (0.80, 0.15, 0.85, 0.60), (0.89, 0.06, 0.81, 0.77)],
    ("a", "d2"): [(0.85, 0.10, 0.70, 0.65), (0.70, 0.30, 0.80, 0.50), (0.84, 0.11, 0.71, 0.64)],
    ("b", "d1"): [(0.79, 0.03, 0.74, 0.73), (0.78, 0.02, 0.70, 0.70), (0.80, 0.05, 0.77, 0.72)],
    ("b", "d2"): [(0.90, 0.09, 0.92, 0.82), (0.85, 0.12, 0.93, 0.80), (0.93, 0.05, 0.91, 0.86)],
}


def _row(enc, ds, condition, values, seed, jitter):
    auroc, ece, conf, acc = values
    return run_row(
        enc,
        ds,
        condition=condition,
        seed=seed,
        auroc=auroc + jitter,
        ece=ece - jitter,
        mean_confidence=conf,
        accuracy=acc,
    )


def _warehouse(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    rows = []
    for cell in CELLS:
        for seed, jitter in ((0, 0.01), (1, -0.01)):  # seed means equal the table values
            rows.append(_row(*cell, "clean", CLEAN[cell], seed, jitter))
            rows += [_row(*cell, c, v, seed, jitter) for c, v in zip(CONDITIONS, PERTURBED[cell], strict=True)]
    rows.append(
        run_row(
            "a", "d1", condition="shift", eval_dataset_id="d9", auroc=0.6, ece=0.3, mean_confidence=0.9, accuracy=0.5
        )
    )
    append(wh, rows)
    return wh


def test_effects_and_correlations_match_hand_computation(tmp_path):
    wh = _warehouse(tmp_path)
    result = run_analysis(wh, "e4")
    effects = result.tables["conditions"].set_index(["encoder_id", "dataset_id", "condition"])
    row = effects.loc[("a", "d1", "jpeg-s3")]
    assert row["auroc_drop"] == pytest.approx(0.90 - 0.80)
    assert row["ece_rise"] == pytest.approx(0.15 - 0.05)
    assert row["confidence_shift"] == pytest.approx(0.85 - 0.80)
    assert row["overconfidence"] == pytest.approx(0.85 - 0.60)
    shift = effects.loc[("a", "d1", "shift")]
    assert shift["kind"] == "shift" and shift["auroc_drop"] == pytest.approx(0.30)

    drops = {c: [CLEAN[c][0] - v[0] for v in PERTURBED[c]] for c in CELLS}
    rises = {c: [v[1] - CLEAN[c][1] for v in PERTURBED[c]] for c in CELLS}
    corr = result.tables["correlation"].set_index("level")
    flat = stats.pearsonr([d for v in drops.values() for d in v], [r for v in rises.values() for r in v])
    assert corr.loc["cell_conditions", "n"] == 12  # the shift row is not a corruption
    assert corr.loc["cell_conditions", "pearson_r"] == pytest.approx(flat.statistic)
    assert corr.loc["cell_conditions", "p_value"] == pytest.approx(flat.pvalue)
    cell_r = stats.pearsonr([np.mean(drops[c]) for c in CELLS], [np.mean(rises[c]) for c in CELLS])
    assert corr.loc["cells", "n"] == 4
    assert corr.loc["cells", "pearson_r"] == pytest.approx(cell_r.statistic)

    by_condition = result.summary.set_index("condition")
    assert by_condition.loc["jpeg-s3", "ece_rise"] == pytest.approx(np.mean([rises[c][1] for c in CELLS]))
    assert by_condition.loc["jpeg-s3", "n_cells"] == 4
    assert wh.sql("select count(*) as n from analysis_e4_conditions")["n"][0] == 13
    wh.close()

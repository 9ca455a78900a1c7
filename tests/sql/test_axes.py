"""metrics_seed, axes_cell and axes_encoder against an independent pandas computation (METHODS.md §6)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from support.runs_factory import (
    AXES,
    DATASETS,
    PROFILES,
    encoder_runs,
    frame,
    reference_axes_cell,
    reference_axes_encoder,
    run_row,
)

from crsbench.warehouse.connection import Warehouse


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    rows = [r for e in PROFILES for r in encoder_runs(e)]
    runs = frame(rows)
    db = tmp_path_factory.mktemp("axes") / "w.duckdb"
    with Warehouse.open(db) as wh:
        # one part per seed, so seed means combine rows from several Parquet files
        for seed in range(5):
            wh.append_runs(runs[runs.seed == seed])
    return db, runs


def _view(db, sql, params=None):
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql(sql, params)


def test_metrics_seed_matches_pandas_groupby(scenario):
    db, runs = scenario
    got = _view(db, "select * from metrics_seed")
    keys = ["encoder_id", "dataset_id", "eval_dataset_id", "regime", "probe", "depth", "label_fraction", "condition"]
    want = (
        runs.groupby(keys)
        .agg(
            auroc_mean=("auroc", "mean"),
            auroc_sd=("auroc", "std"),
            auroc_n=("auroc", "count"),
            ece_mean=("ece", "mean"),
            n_seeds=("seed", "nunique"),
        )
        .reset_index()
    )
    merged = want.merge(got, on=keys, suffixes=("", "_sql"), validate="one_to_one")
    assert len(merged) == len(want) == len(got)
    for col in ("auroc_mean", "auroc_sd", "ece_mean"):
        np.testing.assert_allclose(merged[col + "_sql"], merged[col], rtol=0, atol=1e-12)
    assert (merged.auroc_n_sql == merged.auroc_n).all() and (merged.n_seeds_sql == 5).all()
    assert got.qwk_mean.isna().all() and (got.qwk_n == 0).all()


def test_axes_cell_matches_spec(scenario):
    db, runs = scenario
    got = _view(db, "select * from axes_cell where regime = 'frozen'")
    want = reference_axes_cell(runs)
    merged = want.merge(got, on=["encoder_id", "dataset_id"], suffixes=("", "_sql"), validate="one_to_one")
    assert len(merged) == len(want) == len(got) == 14  # 5 encoders x 3 datasets, e5 has no fundus
    for col in (*AXES, "aulc"):
        np.testing.assert_allclose(merged[col + "_sql"], merged[col], rtol=0, atol=1e-12)
    assert merged.complete.all()
    # the multilabel cxr cell carries the mimic shift term; the others only the 15 perturbations
    assert set(got.loc[got.dataset_id == "cxr", "n_shift"]) == {1}
    assert set(got.loc[got.dataset_id != "cxr", "n_shift"]) == {0}
    assert set(got.n_perturbed) == {15}


def test_robustness_uses_seed_means_and_the_shift_term(tmp_path):
    # Hand-worked cell: clean AUROC 0.80/0.90 over two seeds (mean 0.85); jpeg-s1 at 0.70/0.90
    # (mean 0.80, delta 0.05); the shift target at 0.60/1.00 (mean 0.80, delta 0.05); contrast-s3
    # beats clean (delta clipped to 0). Drops between seed means give R = 1 - (0.5 * 0.0333 +
    # 0.5 * 0.05) = 0.958; per-seed drops averaged afterwards would give 0.925 instead.
    rows = []
    for seed, clean, pert, better, shift in ((0, 0.80, 0.70, 0.95, 0.60), (1, 0.90, 0.90, 0.95, 1.00)):
        for fraction, auroc in ((0.1, clean - 0.1), (1.0, clean)):
            rows.append(_run("h", "cxr", "cxr", "clean", fraction, seed, auroc, 0.1 + 0.1 * seed))
        rows.append(_run("h", "cxr", "cxr", "jpeg-s1", 1.0, seed, pert, 0.2))
        rows.append(_run("h", "cxr", "cxr", "contrast-s3", 1.0, seed, better, 0.2))
        rows.append(_run("h", "cxr", "mimic", "shift", 1.0, seed, shift, 0.2))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.append_runs(frame(rows))
        cell = wh.sql("select * from axes_cell").iloc[0]
    deltas = [0.05, 0.0, 0.05]
    assert cell.discrimination == pytest.approx(0.85)
    assert cell.calibration == pytest.approx(1 - 0.15)
    assert cell.label_efficiency == pytest.approx(0.75 / 0.85)
    assert cell.robustness == pytest.approx(1 - (0.5 * np.mean(deltas) + 0.5 * max(deltas)))
    assert cell.robustness != pytest.approx(0.925)
    # AULC over the two fractions 0.1 and 1.0: trapezoid / span = mean of the two seed means
    assert cell.aulc == pytest.approx((0.75 + 0.85) / 2)
    assert cell.n_perturbed == 2 and cell.n_shift == 1


def _run(encoder, dataset, eval_dataset, condition, fraction, seed, auroc, ece):
    return run_row(encoder, dataset, eval_dataset, condition, fraction, seed, auroc, ece)


def test_axes_encoder_is_mean_of_observed_cells_never_imputed(scenario):
    db, runs = scenario
    got = _view(db, "select * from axes_encoder where regime = 'frozen'").set_index("encoder_id")
    want = reference_axes_encoder(reference_axes_cell(runs)).set_index("encoder_id")
    assert sorted(got.index) == sorted(want.index)
    for col in (*AXES, "aulc"):
        np.testing.assert_allclose(got.loc[want.index, col], want[col], rtol=0, atol=1e-12)
    assert got.loc["e5", "n_datasets"] == 2 and list(got.loc["e5", "datasets"]) == ["cxr", "derm"]
    assert (got.drop(index="e5").n_datasets == len(DATASETS)).all()


def test_incomplete_cell_is_shown_but_not_aggregated(tmp_path):
    rows = encoder_runs("e1") + [
        r for r in encoder_runs("e2") if r["condition"] in ("clean", "calib") or r["dataset_id"] != "derm"
    ]
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.append_runs(frame(rows))
        cell = wh.sql("select * from axes_cell where encoder_id = 'e2' and dataset_id = 'derm'").iloc[0]
        agg = wh.sql("select * from axes_encoder where encoder_id = 'e2'").iloc[0]
    assert pd.isna(cell.robustness) and not cell.complete
    assert agg.n_datasets == 2 and "derm" not in list(agg.datasets)

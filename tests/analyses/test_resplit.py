"""Analysis `resplit`: re-drawn train/calib partitions with the test split fixed, the primary probe
refitted, and locked selection on calib AUROC and calib CRS (METHODS.md §18.2); checked against
scikit-learn refits, the reference CRS of runs_factory and the repeat rows themselves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import zarr
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from support.partition_support import synthetic_warehouse
from support.runs_factory import cell_runs, frame, reference_anchors, reference_axes_cell, reference_crs
from support.synthetic import make_dataset

from crsbench.analyses import run_analysis
from crsbench.analyses.splits.resplit import draws, read_pool
from crsbench.cli import main
from crsbench.warehouse.connection import Warehouse

torch.set_num_threads(1)
ENCODERS = {"enc-a": (10, 2.0), "enc-b": (10, 0.6), "enc-c": (8, 0.3)}  # id -> (dim, class signal)
REPEATS = 5


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """`derm` (multiclass, with stored grid runs, so its axes exist) and `cxr` (multilabel, no runs)."""
    db = tmp_path_factory.mktemp("resplit") / "w.duckdb"
    derm = make_dataset("derm", "multiclass", 150, 3, seed=1)
    derm.images["group_id"] = [f"p{i // 2}" for i in range(150)]  # two images per patient
    derm.images["split"] = derm.images.groupby("group_id")["split"].transform("first")
    cxr = make_dataset("cxr", "multilabel", 120, 3, seed=2)
    synthetic_warehouse(db, [derm, cxr], ENCODERS)
    rng = np.random.default_rng(0)
    runs = frame([r for i, e in enumerate(ENCODERS) for r in cell_runs(e, "derm", rng, quality=0.7 + 0.1 * i)])
    with Warehouse.open(db) as wh:
        wh.append_runs(runs)
        run_analysis(wh, "resplit", {"repeats": REPEATS})
    return db, runs


def _read(db: Path, query: str) -> pd.DataFrame:
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql(query)


def test_frequencies_sum_to_one_per_dataset_and_criterion(world):
    db, _ = world
    chosen = _read(db, "select * from resplit_selection")
    sums = chosen.groupby(["dataset", "criterion"])["frequency"].sum()
    assert sums.to_dict() == pytest.approx(
        {("cxr", "calib_auroc"): 1.0, ("derm", "calib_auroc"): 1.0, ("derm", "calib_crs"): 1.0}
    )
    assert (chosen["repeats"] == REPEATS).all() and len(chosen) == 3 * 3
    # the strong-signal encoder wins on calib AUROC in most draws
    top = chosen[chosen["criterion"] == "calib_auroc"].sort_values("frequency").groupby("dataset").tail(1)
    assert set(top["encoder_id"]) == {"enc-a"}


def test_selection_and_spread_are_those_of_the_repeat_rows(world):
    db, _ = world
    repeats = _read(db, "select * from analysis_resplit_repeats")
    chosen = _read(db, "select * from resplit_selection").set_index(["dataset", "criterion", "encoder_id"])
    for _key, draw in repeats.groupby(["dataset", "repeat"]):
        best = draw.sort_values(["calib_auroc", "encoder_id"], ascending=[False, True]).iloc[0]
        assert draw.loc[draw["selected_calib_auroc"], "encoder_id"].tolist() == [best["encoder_id"]]
    for (dataset, encoder), rows in repeats.groupby(["dataset", "encoder_id"]):
        row = chosen.loc[(dataset, "calib_auroc", encoder)]
        assert row["frequency"] == pytest.approx(rows["selected_calib_auroc"].mean())
        assert row["test_auroc_sd"] == pytest.approx(np.std(rows["test_auroc"], ddof=1))
        assert (row["test_auroc_min"], row["test_auroc_max"]) == (rows["test_auroc"].min(), rows["test_auroc"].max())
    # the test split never moves, train + calib is the whole pool and no patient crosses them
    assert (repeats["n_train"] + repeats["n_calib"]).groupby(repeats["dataset"]).nunique().eq(1).all()


def test_draws_are_group_safe_and_keep_the_official_ratio(world):
    db, _ = world
    with Warehouse.open(db, read_only=True) as wh:
        pool = read_pool(wh, "derm")
    partitions = draws(pool, REPEATS, 0)
    for train, calib in partitions:
        assert not set(pool.groups[train]) & set(pool.groups[calib])
        assert sorted(np.concatenate([train, calib])) == sorted(pool.pool)
        assert not set(train) & set(pool.test)
        assert abs(len(train) / len(pool.pool) - pool.ratios[0] / sum(pool.ratios)) < 0.05
    assert len({tuple(t) for t, _ in partitions}) == REPEATS  # every draw differs


def test_a_refit_is_sklearns_multinomial_logreg_at_c_1(world):
    db, _ = world
    with Warehouse.open(db, read_only=True) as wh:
        pool = read_pool(wh, "derm")
    train, calib = draws(pool, REPEATS, 0)[2]
    x = np.asarray(zarr.open_group(f"{db}.features.zarr", mode="r")["derm/enc-b/d100/clean"][:], dtype=np.float64)
    mean, std = x[train].mean(axis=0), x[train].std(axis=0)
    model = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit((x[train] - mean) / std, pool.labels[train])
    repeats = _read(db, "select * from analysis_resplit_repeats where dataset = 'derm' and encoder_id = 'enc-b'")
    for rows, column in ((pool.test, "test_auroc"), (calib, "calib_auroc")):
        probs = model.predict_proba((x[rows] - mean) / std)
        expected = roc_auc_score(pool.labels[rows], probs, multi_class="ovr", average="macro")
        assert repeats.set_index("repeat").loc[2, column] == pytest.approx(expected, abs=1e-6)


def test_calib_crs_is_the_cohort_crs_of_calib_discrimination_and_calibration(world):
    db, runs = world
    repeats = _read(db, "select * from analysis_resplit_repeats where dataset = 'derm' and repeat = 1")
    stored = reference_axes_cell(runs).set_index("encoder_id")
    table = pd.DataFrame(
        {
            "encoder_id": repeats["encoder_id"],
            "discrimination": repeats["calib_auroc"],
            "calibration": 1 - repeats["calib_ece"],
            "label_efficiency": repeats["encoder_id"].map(stored["label_efficiency"]),
            "robustness": repeats["encoder_id"].map(stored["robustness"]),
        }
    )
    members = list(ENCODERS)
    expected = reference_crs(table, members, reference_anchors(table, members)).set_index("encoder_id")["crs"]
    assert repeats.set_index("encoder_id")["calib_crs"].to_dict() == pytest.approx(expected.to_dict())
    # the multilabel dataset has no stored axes: no CRS, so no calib_crs selection rows for it
    cxr = _read(db, "select * from analysis_resplit_repeats where dataset = 'cxr'")
    assert cxr["calib_crs"].isna().all() and not cxr["selected_calib_crs"].any()


def test_the_summary_marks_a_refit_and_its_regret(world):
    db, _ = world
    summary = _read(db, "select * from analysis_resplit_summary")
    assert summary["refit"].all() and (summary["regret"] >= -1e-12).all()
    comment = _read(db, "select comment from duckdb_tables() where table_name = 'resplit_selection'")["comment"].item()
    assert comment.startswith("REFIT analysis")


def test_repeats_below_two_is_one_line_and_writes_nothing(world, capsys):
    db, _ = world
    before = _read(db, "select * from resplit_selection")
    digest = _read(db, "select table_name, created_at from analyses where analysis = 'resplit' order by 1")
    assert main(["analyze", "resplit", "--repeats", "1", "--db", str(db)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--repeats must be at least 2" in err
    pd.testing.assert_frame_equal(_read(db, "select * from resplit_selection"), before)
    pd.testing.assert_frame_equal(
        _read(db, "select table_name, created_at from analyses where analysis = 'resplit' order by 1"), digest
    )

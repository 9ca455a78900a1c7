"""Analysis `partition`: the partition classifier telling the training pool from the test split
(METHODS.md §18.1), against scikit-learn, a DeLong variance written from its definition, and a
generated suite whose test images are brightened."""

from __future__ import annotations

import dataclasses
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from support.partition_support import synthetic_warehouse
from support.synthetic import make_dataset

from crsbench.analyses import run_analysis
from crsbench.analyses.splits.partition_cv import clustered_delong, group_folds, logreg_scores, standardise
from crsbench.cli import main
from crsbench.core import CrsbenchError
from crsbench.features import extract, get_encoder
from crsbench.features.store import FeatureStore
from crsbench.ingest import ingest
from crsbench.warehouse.catalog import sync_catalog
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset

torch.set_num_threads(1)
ENTRY = dataclasses.replace(get_encoder("tiny-resnet18"), input_size=32)
BRIGHTER = 40  # grey levels added to every test image of the brightened copy


def test_the_probe_logreg_is_sklearns_at_c_1():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(120, 8)) + np.r_[np.zeros(90), np.ones(30)][:, None] * 0.4
    y = np.r_[np.zeros(90), np.ones(30)].astype(int)
    xs, _ = standardise(x, x)
    ours = logreg_scores(xs, y, xs)
    theirs = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000).fit(xs, y).predict_proba(xs)[:, 1]
    np.testing.assert_allclose(ours, theirs, atol=1e-6)


def delong_by_definition(pos: np.ndarray, neg: np.ndarray) -> float:
    """DeLong et al. (1988): var = S10 / m + S01 / n from the pairwise kernel psi."""
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    return float(np.var(v10, ddof=1) / len(pos) + np.var(v01, ddof=1) / len(neg))


def test_clustered_delong_with_one_image_per_group_is_delong():
    rng = np.random.default_rng(0)
    score = np.round(rng.normal(size=60), 1)  # ties on purpose
    positive = np.arange(60) < 25
    auc, lo, hi = clustered_delong(positive, score, np.arange(60).astype(str))
    assert auc == pytest.approx(roc_auc_score(positive, score))
    half = 1.959963984540054 * np.sqrt(delong_by_definition(score[positive], score[~positive]))
    assert (lo, hi) == pytest.approx((auc - half, auc + half))


def test_clustered_delong_by_hand():
    # positives 0.9, 0.8 (one patient) and 0.4; negatives 0.5 and 0.1 (one patient each)
    positive = np.array([True, True, True, False, False])
    score = np.array([0.9, 0.8, 0.4, 0.5, 0.1])
    groups = np.array(["a", "a", "b", "c", "d"])
    # psi rows (positives) x columns (negatives): [1, 1], [1, 1], [0, 1] -> A = 5/6
    # V10 by group: a = (1 + 1), b = 0.5 with m = (2, 1); V01 by negative: c = 2/3, d = 1
    a = 5 / 6
    s10 = 2 / (1 * 3) * ((2 - 2 * a) ** 2 + (0.5 - a) ** 2)
    s01 = 2 / (1 * 2) * ((2 / 3 - a) ** 2 + (1 - a) ** 2)
    auc, lo, hi = clustered_delong(positive, score, groups)
    half = 1.959963984540054 * np.sqrt(s10 / 3 + s01 / 2)
    assert auc == pytest.approx(a)
    assert (lo, hi) == pytest.approx((a - half, min(1.0, a + half)))


def test_folds_keep_groups_whole_and_stratify_side_and_label():
    rng = np.random.default_rng(1)
    side = (np.arange(300) >= 240).astype(int)
    groups = (np.arange(300) // 2).astype(str)  # two images per group, never across sides
    labels = np.eye(3, dtype=int)[rng.integers(0, 3, 150).repeat(2)]
    folds = group_folds(side, groups, 5, 0, labels)
    for g in np.unique(groups):
        assert len(set(folds[groups == g])) == 1
    for f in range(5):
        # each fold holds about a fifth of every (side, class) cell
        for s in (0, 1):
            for j in range(3):
                cell = (side == s) & (labels[:, j] == 1)
                assert abs((folds[cell] == f).sum() - cell.sum() / 5) <= 2


@pytest.fixture(scope="module")
def suite_db(suite_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """aptos2019 twice: `aptos` as generated and `bright` with every test image brightened."""
    root = tmp_path_factory.mktemp("partition")
    datasets = {}
    for name, shift in (("aptos", 0), ("bright", BRIGHTER)):
        folder = root / name
        shutil.copytree(suite_dir / "aptos2019", folder)
        first = ingest("aptos2019", folder, name)
        for rel in first.images.loc[first.images["split"] == "test", "rel_path"]:
            pixels = np.asarray(Image.open(folder / rel).convert("RGB")).astype(np.int16)
            Image.fromarray(np.clip(pixels + shift, 0, 255).astype(np.uint8)).save(folder / rel, format="PNG")
        datasets[name] = ingest("aptos2019", folder, name)
        # splits depend on labels and groups only, so brightening moves no image
        assert (datasets[name].images["split"] == first.images["split"]).all()
    db = root / "crsbench.duckdb"
    url = str(root / "crsbench.duckdb.features.zarr")
    with Warehouse.open(db) as wh:
        for ds in datasets.values():
            load_dataset(wh, ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a random-init encoder on 99 images is flagged degenerate
        for ds in datasets.values():
            extract(ds, ENTRY, url, conditions=("clean",), threads=1, pixel_processes=False, workers=1)
    with Warehouse.open(db) as wh:
        sync_catalog(wh, FeatureStore(url))
    return db


def test_brightened_test_images_are_told_apart_and_unchanged_ones_are_not(suite_db):
    with Warehouse.open(suite_db) as wh:
        run_analysis(wh, "partition")
        rows = wh.sql("select * from partition_shift order by dataset").set_index("dataset")
    assert rows.loc["bright", "auroc"] >= 0.9
    assert rows.loc["aptos", "auroc_lo"] <= 0.5 <= rows.loc["aptos", "auroc_hi"]
    assert (rows["pair"] == "pool_vs_test").all() and (rows.index == rows["other_dataset"]).all()
    n_test = (
        int((ingest_split(suite_db, "aptos") == "test").sum()),
        int((ingest_split(suite_db, "aptos") != "test").sum()),
    )
    assert (rows.loc["aptos", "n_other"], rows.loc["aptos", "n_pool"]) == n_test
    assert rows.loc["aptos", "folds"] == 5


def ingest_split(db: Path, dataset: str) -> np.ndarray:
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql("select split from images where dataset_id = ?", [dataset])["split"].to_numpy()


def test_the_table_exists_empty_before_the_analysis_runs(tmp_path):
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        columns = wh.sql("describe partition_shift")
        assert wh.sql("select count(*) as n from partition_shift")["n"].item() == 0
    assert dict(zip(columns["column_name"], columns["column_type"], strict=True)) == {
        "dataset": "VARCHAR",
        "encoder_id": "VARCHAR",
        "pair": "VARCHAR",
        "other_dataset": "VARCHAR",
        "auroc": "DOUBLE",
        "auroc_lo": "DOUBLE",
        "auroc_hi": "DOUBLE",
        "n_pool": "BIGINT",
        "n_other": "BIGINT",
        "folds": "INTEGER",
    }


@pytest.fixture(scope="module")
def synthetic_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`derm` with every split, `cxr` shift target of it, `pool` with no test split; features of two encoders."""
    derm = make_dataset("derm", "multilabel", 120, 3, seed=1)
    cxr = make_dataset("cxr", "multilabel", 90, 3, seed=2)
    pool = make_dataset("pool", "multiclass", 80, 3, seed=3)
    pool.images["split"] = np.where(pool.images["split"] == "test", "calib", pool.images["split"])
    db = tmp_path_factory.mktemp("synthetic") / "w.duckdb"
    synthetic_warehouse(db, [derm, cxr, pool], {"enc-a": (12, 1.0), "enc-b": (6, 1.0)}, [("derm", "cxr")])
    return db


def test_shift_pairs_filters_and_a_dataset_without_a_test_split(synthetic_db, capsys):
    code = main(["analyze", "partition", "-d", "derm", "-e", "enc-b", "--db", str(synthetic_db)])
    assert code == 0, capsys.readouterr()
    with Warehouse.open(synthetic_db, read_only=True) as wh:
        rows = wh.sql("select * from partition_shift order by pair")
    assert rows[["dataset", "encoder_id", "pair", "other_dataset"]].values.tolist() == [
        ["derm", "enc-b", "pool_vs_test", "derm"],
        ["derm", "enc-b", "shift", "cxr"],
    ]
    assert rows["n_other"].tolist() == [
        int((ingest_split(synthetic_db, "derm") == "test").sum()),
        int((ingest_split(synthetic_db, "cxr") == "test").sum()),
    ]
    capsys.readouterr()
    assert main(["analyze", "partition", "-d", "pool", "--db", str(synthetic_db)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'pool' has no test split" in err
    with Warehouse.open(synthetic_db, read_only=True) as wh:
        assert len(wh.sql("select * from partition_shift")) == 2  # nothing written
    # over every dataset the one without a test split is skipped, with a note
    with Warehouse.open(synthetic_db) as wh:
        result = run_analysis(wh, "partition")
    assert sorted(set(result.summary["dataset"])) == ["cxr", "derm"]
    assert any(n.startswith("pool: no test split") for n in result.notes)
    # -d adds or replaces that dataset's rows only: cxr's stay as they were (issue 42)
    query = "select * from partition_shift where dataset = ? order by all"
    with Warehouse.open(synthetic_db, read_only=True) as wh:
        cxr = wh.sql(query, ["cxr"])
    assert main(["analyze", "partition", "-d", "derm", "-e", "enc-b", "--db", str(synthetic_db)]) == 0
    with Warehouse.open(synthetic_db, read_only=True) as wh:
        assert wh.sql(query, ["cxr"]).equals(cxr)
        assert set(wh.sql(query, ["derm"])["encoder_id"]) == {"enc-b"}


def test_too_few_groups_for_the_folds_is_one_line(synthetic_db):
    with Warehouse.open(synthetic_db) as wh, pytest.raises(CrsbenchError, match="fewer than the 50 folds"):
        run_analysis(wh, "partition", {"dataset": "cxr", "folds": 50})

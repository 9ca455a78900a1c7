"""The probe grid on synthetic feature stores: row counts, idempotence, resume, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import zarr
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from support.synthetic import make_dataset, write_features

from crsbench.core import CONDITIONS, CrsbenchError
from crsbench.features.store import FeatureStore
from crsbench.probes.grid import GridContext, plan_fits, run_grid
from crsbench.probes.records import FitKey
from crsbench.warehouse.connection import Warehouse

torch.set_num_threads(1)
SMALL = dict(probes=("logreg", "knn"), fractions=(0.1, 1.0), seeds=(0, 1), depths=(1.0,))
VOLATILE = ["fit_seconds", "created_at"]


def make_setup(root, dim=12):
    datasets = {
        "derm": make_dataset("derm", "multiclass", 160, 3, seed=1),
        "cxr": make_dataset("cxr", "multilabel", 160, 3, seed=2),
        "cxr2": make_dataset("cxr2", "multilabel", 100, 3, seed=3),
    }
    url = str(root / "features.zarr")
    for ds in datasets.values():
        write_features(url, ds, "enc", dim, depths=(1.0,), chunk_rows=64)
    return datasets, FeatureStore(url), {"cxr": ["cxr2"]}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return make_setup(tmp_path_factory.mktemp("grid"))


def collect():
    batches: list[tuple[pd.DataFrame, pd.DataFrame]] = []
    return batches, lambda runs, preds: batches.append((runs, preds))


def sweep(setup, sink, done=frozenset(), **kwargs):
    datasets, store, shifts = setup
    fits = plan_fits(["derm", "cxr"], ["enc"], store, **SMALL)
    return run_grid(fits, GridContext(datasets, store, sink, shift_targets=shifts, **kwargs), set(done))


def comparable(runs: pd.DataFrame) -> pd.DataFrame:
    return runs.drop(columns=VOLATILE).sort_values("run_id").reset_index(drop=True)


def test_default_plan_is_the_paper_grid(setup):
    _, store, _ = setup
    fits = plan_fits(["derm"], None, store)
    # logreg at 4 depths + mlp and knn at full depth, x 5 fractions x 5 seeds
    assert len(fits) == (4 + 1 + 1) * 5 * 5
    assert len({f.fit_id for f in fits}) == len(fits)
    assert {f.depth for f in fits if f.probe == "mlp"} == {1.0}
    assert plan_fits(["derm"], None, store) == fits
    key = FitKey("enc", "derm", 1.0, "logreg", 0.1, 0)
    assert key.fit_id == FitKey("enc", "derm", 1.0, "logreg", 0.10000000001, 0).fit_id
    assert key.fit_id != FitKey("enc", "derm", 1.0, "logreg", 0.1, 1).fit_id
    with pytest.raises(CrsbenchError, match="unknown probe"):
        plan_fits(["derm"], None, store, probes=["svm"])


def test_grid_writes_expected_rows_and_rerun_writes_nothing(setup, tmp_path):
    datasets, store, _ = setup
    db = tmp_path / "w.duckdb"
    with Warehouse.open(db) as wh:
        summary = sweep(setup, wh.append_runs)
        n_fits = 2 * 2 * 2  # probes x fractions x seeds per cell
        # derm: 16 test conditions + calib; cxr: + its shift target
        assert summary.fitted == 2 * n_fits
        runs = wh.sql("select * from runs")
        assert len(runs) == n_fits * 17 + n_fits * 18 == summary.runs
        assert runs["run_id"].is_unique
        assert set(runs.loc[runs.dataset_id == "cxr", "condition"]) == {*CONDITIONS, "calib", "shift"}
        assert set(runs.loc[runs.condition == "shift", "eval_dataset_id"]) == {"cxr2"}
        preds = wh.sql("select run_id, count(*) n from predictions group by run_id")
        assert (
            preds.set_index("run_id")["n"].sort_index().tolist()
            == runs.set_index("run_id")["n_test"].sort_index().tolist()
        )
        done = wh.done_fit_ids()
    calls, sink = collect()
    again = sweep(setup, sink, done=done)
    assert calls == [] and again.skipped == again.planned == 2 * n_fits

    # an independent check of one row: scikit-learn on train-standardised clean features
    ds = datasets["derm"]
    x = np.asarray(
        store.array(ds_ref := FitKey("enc", "derm", 1.0, "logreg", 1.0, 0).feature_set, 1.0, "clean")[:],
        dtype=np.float64,
    )
    train, test = ds.split_rows("train"), ds.split_rows("test")
    mean, std = x[train].mean(0), x[train].std(0)
    z = (x - mean) / std
    ref = LogisticRegression(C=1.0, max_iter=5000, tol=1e-8).fit(z[train], ds.labels[train])
    p = ref.predict_proba(z[test])
    expected = np.mean([roc_auc_score(ds.labels[test] == k, p[:, k]) for k in range(3)])
    row = runs[
        (runs.dataset_id == ds_ref.dataset)
        & (runs.probe == "logreg")
        & (runs.label_fraction == 1.0)
        & (runs.seed == 0)
        & (runs.condition == "clean")
    ]
    assert row["auroc"].item() == pytest.approx(expected, abs=1e-4)
    assert row["n_train"].item() == len(train) and row["n_test"].item() == len(test)


def test_killed_sweep_resumes_to_the_same_runs(setup):
    full, sink = collect()
    sweep(setup, sink, batch_size=2)
    reference = comparable(pd.concat([r for r, _ in full]))

    written: list[pd.DataFrame] = []

    def dying_sink(runs, preds):
        if len(written) == 3:
            raise KeyboardInterrupt("killed")
        written.append(runs)

    with pytest.raises(KeyboardInterrupt):
        sweep(setup, dying_sink, batch_size=2)
    done = set(pd.concat(written)["fit_id"])
    rest, sink = collect()
    summary = sweep(setup, sink, done=done, batch_size=2)
    assert summary.skipped == len(done) > 0
    resumed = comparable(pd.concat(written + [r for r, _ in rest]))
    pd.testing.assert_frame_equal(resumed, reference, check_exact=False, rtol=1e-9, atol=1e-12)


def _bad(tmp_path, mutate):
    datasets, store, shifts = make_setup(tmp_path, dim=6)
    mutate(datasets, store)
    calls, sink = collect()
    fits = plan_fits(["derm", "cxr"], ["enc"], store, **SMALL)
    with pytest.raises(CrsbenchError) as err:
        run_grid(fits, GridContext(datasets, store, sink, shift_targets=shifts))
    assert calls == []
    return str(err.value)


def test_incomplete_or_missing_feature_set_is_an_error(tmp_path):
    def incomplete(datasets, store):
        zarr.open_group(store.url, mode="a")["cxr2/enc"].attrs["complete"] = False

    msg = _bad(tmp_path / "a", incomplete)
    assert "cxr2/enc" in msg and "incomplete" in msg

    def missing(datasets, store):
        del zarr.open_group(store.url, mode="a")["derm/enc"]

    assert "derm/enc is missing" in _bad(tmp_path / "b", missing)


def test_rows_disagreeing_with_the_dataset_are_an_error(tmp_path):
    def renamed(datasets, store):
        datasets["derm"].images.loc[5, "image_id"] = "other"

    assert "row 5" in _bad(tmp_path / "a", renamed)

    def fewer(datasets, store):
        ds = datasets["cxr"]
        ds.images, ds.labels = ds.images.iloc[:-1], ds.labels[:-1]

    assert "160 rows" in _bad(tmp_path / "b", fewer)


def test_nan_features_are_an_error(tmp_path):
    def nan(datasets, store):
        test_row = int(datasets["cxr"].split_rows("test")[3])
        arr = zarr.open_group(store.url, mode="a")["cxr/enc/d100/jpeg-s2"]
        arr[test_row, 0] = np.nan

    assert "NaN" in (msg := _bad(tmp_path, nan)) and "jpeg-s2" in msg


def test_fraction_without_a_class_is_an_error(tmp_path):
    def drop_class(datasets, store):
        ds = datasets["derm"]
        label_of = dict(zip(ds.images["image_id"], ds.labels, strict=True))
        subset = (ds.fractions["fraction"] == 0.1) & (ds.fractions["seed"] == 1)
        ds.fractions = ds.fractions[~subset | (ds.fractions["image_id"].map(label_of) != 2)]

    msg = _bad(tmp_path, drop_class)
    assert "fraction 0.1 (seed 1)" in msg and "'class2'" in msg


def test_unknown_probe_in_fits_is_an_error(setup):
    datasets, store, shifts = setup
    calls, sink = collect()
    with pytest.raises(CrsbenchError, match="unknown probe"):
        run_grid(
            [FitKey("enc", "derm", 1.0, "forest", 1.0, 0)], GridContext(datasets, store, sink, shift_targets=shifts)
        )
    assert calls == []

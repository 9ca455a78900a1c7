"""E2 recalibration end to end: stored calib/test predictions of an over-confident probe."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import expit, softmax
from support.analyses_support import add_dataset, add_labels, append, prediction_rows, run_row

from crsbench.analyses import run_analysis
from crsbench.core import CrsbenchError
from crsbench.ingest.types import Task
from crsbench.probes import metrics

N = 600  # images per split


def _multiclass(rng, n, k=3, sharpen=3.0):
    z = rng.normal(scale=1.5, size=(n, k))
    y = (softmax(z, axis=1).cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return y, softmax(sharpen * z, axis=1)


def _multilabel(rng, n, labels=3, sharpen=3.0):
    z = rng.normal(scale=1.5, size=(n, labels))
    return (rng.random((n, labels)) < expit(z)).astype(int), expit(sharpen * z)


def _fit(encoder, dataset, seed, evaluations, probe="logreg", fraction=1.0):
    """Runs + predictions of one fit: evaluations = [(condition, eval_dataset, ids, p)]."""
    runs, preds = [], []
    for condition, eval_id, ids, p in evaluations:
        run = run_row(
            encoder, dataset, condition=condition, eval_dataset_id=eval_id, seed=seed, probe=probe, fraction=fraction
        )
        runs.append(run)
        preds.append(prediction_rows(run, ids, p))
    return runs, preds


@pytest.fixture
def warehouse(tmp_path):
    import pandas as pd

    from crsbench.warehouse.connection import Warehouse

    rng = np.random.default_rng(0)
    wh = Warehouse(tmp_path / "w.duckdb")
    add_dataset(wh, "mc", "multiclass", 3)
    add_dataset(wh, "ml", "multilabel", 3)
    add_dataset(wh, "ml2", "multilabel", 3)
    truth, runs, preds = {}, [], []
    for seed in (0, 1):
        ids = {split: [f"mc-{seed}-{split}-{i}" for i in range(N)] for split in ("calib", "test", "jpeg")}
        data = {split: _multiclass(rng, N) for split in ids}
        for split in ids:
            order = rng.permutation(N)  # labels stored in another order than the predictions
            add_labels(wh, "mc", [ids[split][i] for i in order], data[split][0][order], 3)
        truth[("mc", seed)] = data
        r, p = _fit(
            "enc",
            "mc",
            seed,
            [
                ("calib", "mc", ids["calib"], data["calib"][1]),
                ("clean", "mc", ids["test"], data["test"][1]),
                ("jpeg-s2", "mc", ids["jpeg"], data["jpeg"][1]),
            ],
        )
        runs += r
        preds += p
        ml_ids = {split: [f"ml-{seed}-{split}-{i}" for i in range(N)] for split in ("calib", "test", "shift")}
        ml = {split: _multilabel(rng, N) for split in ml_ids}
        for split in ml_ids:
            add_labels(wh, "ml2" if split == "shift" else "ml", ml_ids[split], ml[split][0], 3)
        truth[("ml", seed)] = ml
        r, p = _fit(
            "enc",
            "ml",
            seed,
            [
                ("calib", "ml", ml_ids["calib"], ml["calib"][1]),
                ("clean", "ml", ml_ids["test"], ml["test"][1]),
                ("shift", "ml2", ml_ids["shift"], ml["shift"][1]),
            ],
        )
        runs += r
        preds += p
    # Ignored: another probe; and a primary fit without calib predictions (reported as skipped).
    r, p = _fit("enc", "mc", 0, [("calib", "mc", ids["calib"], data["calib"][1])], probe="mlp")
    runs += [*r, run_row("other", "mc", seed=0)]
    preds += p
    append(wh, runs, pd.concat(preds, ignore_index=True))
    yield wh, truth
    wh.close()


def test_temperature_repairs_the_overconfident_probe(warehouse):
    wh, truth = warehouse
    result = run_analysis(wh, "e2")
    fits = result.tables["fits"]
    temp = fits[(fits["method"] == "temperature") & (fits["dataset_id"] == "mc")].set_index(["seed", "condition"])
    y, p = truth[("mc", 0)]["test"]
    # "before" is the ECE of the stored predictions against the true labels, computed here directly
    assert temp.loc[(0, "clean"), "ece_before"] == pytest.approx(metrics.ece(y, p, Task.MULTICLASS), abs=1e-6)
    assert (temp["ece_after"] < temp["ece_before"] / 2).all()
    assert (temp["top_label_changed"] == 0).all()
    assert (temp["auroc_after"] - temp["auroc_before"]).abs().max() < 0.01
    assert set(fits["method"]) == {"temperature", "vector", "isotonic", "dirichlet"}
    assert set(fits["condition"]) == {"clean", "jpeg-s2", "shift"}
    assert any("1 primary fit(s) have no calib predictions" in n for n in result.notes)

    cells = result.tables["cells"].set_index(["dataset_id", "condition", "method"])
    cell = cells.loc[("mc", "clean", "temperature")]
    before, after = temp.xs("clean", level="condition")[["ece_before", "ece_after"]].mean()
    assert cell["n_seeds"] == 2
    assert cell["relative_ece_reduction"] == pytest.approx((before - after) / before)
    assert cells.loc[("mc", "jpeg-s2", "temperature"), "kind"] == "corruption"


def test_multilabel_scaling_keeps_auroc_exactly_and_scores_shift_on_target_labels(warehouse):
    wh, truth = warehouse
    fits = run_analysis(wh, "e2").tables["fits"]
    ml = fits[fits["dataset_id"] == "ml"]
    scaling = ml[ml["method"].isin(["temperature", "vector"])]
    assert (scaling["auroc_after"] - scaling["auroc_before"]).abs().max() < 1e-12
    assert scaling["top_label_changed"].isna().all()
    shift = ml[(ml["condition"] == "shift") & (ml["seed"] == 1)].iloc[0]
    y, p = truth[("ml", 1)]["shift"]
    assert shift["eval_dataset_id"] == "ml2"
    assert shift["ece_before"] == pytest.approx(metrics.ece(y, p, Task.MULTILABEL), abs=1e-6)
    assert (ml["ece_after"] < ml["ece_before"]).all()


def test_methods_param_and_stored_tables(warehouse):
    wh, _ = warehouse
    result = run_analysis(wh, "e2", {"methods": "temperature,isotonic"})
    assert set(result.tables["fits"]["method"]) == {"temperature", "isotonic"}
    stored = wh.sql("select table_name, params from analyses where analysis = 'e2' order by 1")
    assert stored["table_name"].tolist() == [
        "analysis_e2_cells",
        "analysis_e2_fits",
        "analysis_e2_reliability",
        "analysis_e2_summary",
    ]
    assert json.loads(stored["params"][0]) == {"methods": "temperature,isotonic"}
    summary = wh.sql("select * from analysis_e2_summary")
    assert set(summary["method"]) == {"temperature", "isotonic"}
    with pytest.raises(CrsbenchError, match="unknown recalibration method"):
        run_analysis(wh, "e2", {"methods": "platt"})


def test_e2_reads_what_the_probe_grid_writes(tmp_path):
    """Contract check: one real primary fit (synthetic features) through run_grid, then E2."""
    from support.synthetic import make_dataset, write_features

    from crsbench.features.store import FeatureStore
    from crsbench.probes.grid import GridContext, plan_fits, run_grid
    from crsbench.warehouse.connection import Warehouse

    ds = make_dataset("toy", "multiclass", 240, 3, seed=1)
    write_features(str(tmp_path / "f.zarr"), ds, "enc", 8, depths=(1.0,))
    store = FeatureStore(str(tmp_path / "f.zarr"))
    fits = plan_fits(["toy"], ["enc"], store, probes=["logreg"], fractions=[1.0], seeds=[0], depths=[1.0])
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        add_dataset(wh, "toy", "multiclass", 3)
        add_labels(wh, "toy", list(ds.images["image_id"]), np.asarray(ds.labels), 3)
        run_grid(fits, GridContext({"toy": ds}, store, wh.append_runs))
        fits_table = run_analysis(wh, "e2", {"methods": "temperature"}).tables["fits"]
        stored = wh.sql("select condition, ece from runs where condition <> 'calib'").set_index("condition")
    assert len(fits_table) == 16  # clean + 15 corruptions
    # The recomputed "before" ECE equals the ECE the probe stage stored for the same predictions.
    before = fits_table.set_index("condition")["ece_before"]
    np.testing.assert_allclose(before.sort_index(), stored["ece"].sort_index(), atol=1e-6)
    assert (fits_table["top_label_changed"] == 0).all()


def test_reliability_bins_reproduce_the_ece_of_each_diagram(warehouse):
    """The stored diagrams: per (cell, condition, method) the count-weighted |confidence - accuracy|
    over bins must equal the seed-pooled ECE recomputed here by hand from the bin counts."""
    wh, _ = warehouse
    result = run_analysis(wh, "e2", {"methods": "temperature"})
    rel = result.tables["reliability"]
    assert set(rel["method"]) == {"uncalibrated", "temperature"}
    assert set(rel["condition"]) <= {"clean", "shift"} and "clean" in set(rel["condition"])
    assert ((rel["confidence"] >= 0) & (rel["confidence"] <= 1) & (rel["accuracy"] >= 0) & (rel["accuracy"] <= 1)).all()
    # Each bin's confidence lies inside its own equal-width bin [b/15, (b+1)/15].
    assert (rel["confidence"] >= rel["bin"] / 15 - 1e-12).all()
    assert (rel["confidence"] <= (rel["bin"] + 1) / 15 + 1e-12).all()
    # Uncalibrated multiclass diagram, pooled over seeds 0 and 1, binned here by hand.
    _, truth = warehouse
    y = np.concatenate([truth[("mc", seed)]["test"][0] for seed in (0, 1)])
    p = np.concatenate([truth[("mc", seed)]["test"][1] for seed in (0, 1)])
    conf, hit = p.max(axis=1), (p.argmax(axis=1) == y).astype(float)
    index = np.minimum((conf * 15).astype(int), 14)
    d = rel[(rel.dataset_id == "mc") & (rel.condition == "clean") & (rel.method == "uncalibrated")]
    assert d["count"].sum() == len(y)
    for b, row in d.set_index("bin").iterrows():
        mask = index == b
        assert row["count"] == mask.sum()
        assert row["confidence"] == pytest.approx(conf[mask].mean())
        assert row["accuracy"] == pytest.approx(hit[mask].mean())

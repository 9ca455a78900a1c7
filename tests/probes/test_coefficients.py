"""Stored logreg coefficients (table coefficients, METHODS.md §17): kept for every seed and depth at
full labels, they reproduce the probe's predictions, and keeping them changes no run record."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from support.synthetic import make_dataset, write_features

from crsbench.bench import Bench, ProbeConfig
from crsbench.features.store import FeatureStore
from crsbench.probes.grid import GridContext, plan_fits, run_grid
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset, read_dataset

torch.set_num_threads(1)

VOLATILE = ["fit_seconds", "created_at"]
SMALL = {"probes": ("logreg",), "fractions": (0.25, 1.0), "seeds": (0, 1), "depths": (0.5, 1.0)}


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_coefficients_reproduce_the_probe_and_change_no_run_record(tmp_path):
    derm = make_dataset("derm", "multiclass", 120, 3, seed=1)
    cxr = make_dataset("cxr", "multilabel", 90, 3, seed=2)
    url = str(tmp_path / "f.zarr")
    for ds in (derm, cxr):
        write_features(url, ds, "enc", 8, depths=(0.5, 1.0), chunk_rows=64)
    store = FeatureStore(url)
    fits = plan_fits(["derm", "cxr"], ["enc"], store, **SMALL)
    kept: list[tuple[pd.DataFrame, ...]] = []
    plain: list[tuple[pd.DataFrame, ...]] = []
    datasets = {"derm": derm, "cxr": cxr}
    run_grid(fits, GridContext(datasets, store, lambda *f: kept.append(f), keep_coefficients=True))
    run_grid(fits, GridContext(datasets, store, lambda *f: plain.append(f)))
    assert {len(f) for f in kept} == {3} and {len(f) for f in plain} == {2}

    def runs(batches):
        return pd.concat([b[0] for b in batches]).drop(columns=VOLATILE).sort_values("run_id").reset_index(drop=True)

    assert runs(kept).equals(runs(plain))  # the same run records, bit for bit
    preds_kept = pd.concat([b[1] for b in kept]).sort_values(["run_id", "row_index"]).reset_index(drop=True)
    preds_plain = pd.concat([b[1] for b in plain]).sort_values(["run_id", "row_index"]).reset_index(drop=True)
    assert preds_kept.equals(preds_plain)

    coefs = pd.concat([b[2] for b in kept], ignore_index=True)
    # full labels only, every seed and depth of both datasets
    assert len(coefs) == 2 * 2 * 2 and set(coefs["label_fraction"]) == {1.0}
    assert set(coefs["seed"]) == {0, 1} and set(coefs["depth"]) == {0.5, 1.0}
    row = coefs[(coefs["dataset_id"] == "derm") & (coefs["depth"] == 1.0) & (coefs["seed"] == 1)].iloc[0]
    assert (row["dim"], row["n_outputs"]) == (8, 3)
    # the stored probe, applied by hand to the raw clean test features, gives the predictions
    all_runs = pd.concat([b[0] for b in kept])
    run = all_runs[(all_runs["fit_id"] == row["fit_id"]) & (all_runs["condition"] == "clean")].iloc[0]
    preds = preds_kept[preds_kept["run_id"] == run["run_id"]]
    import zarr

    x = np.asarray(zarr.open_group(url, mode="r")["derm/enc/d100/clean"][:], dtype=np.float64)
    z = (x[preds["row_index"].to_numpy()] - np.asarray(row["mean"])) / np.asarray(row["std"])
    probs = _softmax(z @ np.asarray(row["weights"]).reshape(8, 3) + np.asarray(row["bias"]))
    np.testing.assert_allclose(np.stack(preds["probs"].to_list()), probs, rtol=0, atol=1e-6)


def test_a_sweep_stores_them_with_its_runs_and_compaction_folds_them(tmp_path):
    db = tmp_path / "bench.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, make_dataset("derm", "multiclass", 90, 3, seed=1))
        ds = read_dataset(wh, "derm")
    write_features(str(tmp_path / "bench.duckdb.features.zarr"), ds, "enc", 8, depths=(0.5, 1.0), chunk_rows=64)
    Bench(db).probe(["enc"], config=ProbeConfig(**SMALL))
    with Warehouse.open(db, read_only=True) as wh:
        coefs = wh.sql(
            "select c.*, r.n_train from coefficients c join (select distinct fit_id, n_train from runs) r using (fit_id)"
        )
        pending = wh.con.execute("select count(*) from coefficients_pending").fetchone()[0]
        compacted = wh.con.execute("select count(*) from coefficients_compacted").fetchone()[0]
    assert (pending, compacted, len(coefs)) == (0, 4, 4)  # folded into the file with their runs
    assert set(zip(coefs["depth"], coefs["seed"], strict=True)) == {(0.5, 0), (0.5, 1), (1.0, 0), (1.0, 1)}
    assert (coefs["n_train"] == len(ds.split_rows("train"))).all()

"""One chunk's evaluation: stacked conditions and row blocks give each set's own predictions."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from support.synthetic import make_dataset, write_features

from crsbench.core import CLEAN
from crsbench.features.store import FeatureStore
from crsbench.probes import tasks
from crsbench.probes.reader import TrainStats, read_rows
from crsbench.probes.records import FitKey, run_frame, run_id, runs_schema

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    url = str(tmp_path_factory.mktemp("tasks") / "f.zarr")
    source = make_dataset("cxr", "multilabel", 240, 3, seed=1)
    target = make_dataset("cxr2", "multilabel", 150, 3, seed=2)
    ref = write_features(url, source, "enc", 10, depths=(1.0,), chunk_rows=64)
    write_features(url, target, "enc", 10, depths=(1.0,), chunk_rows=64)
    store = FeatureStore(url)
    x = read_rows(store, ref, 1.0, CLEAN, source.split_rows("train"))
    stats = TrainStats(x.mean(0), x.std(0))
    keys = tuple(
        FitKey("enc", "cxr", 1.0, probe, f, s, "frozen")
        for probe in ("logreg", "mlp", "knn")
        for f, s in ((1.0, 0), (0.25, 1))
    )
    chunk = tasks.Chunk(ref, 1.0, keys, False, "test")
    return chunk, store, source, [target], stats


def test_stacked_and_blocked_evaluation_equals_each_set_on_its_own(cell, monkeypatch):
    chunk, store, source, targets, stats = cell
    fitted = tasks.fit_chunk(chunk, store, source, stats)
    monkeypatch.setattr(tasks, "EVAL_BLOCK_ROWS", 37)  # many blocks, uneven last block
    runs, preds = tasks.evaluate_chunk(chunk, fitted, store, source, targets, stats)
    sets = tasks.eval_sets(source, chunk.ref, targets)
    assert len(runs) == len(fitted) * len(sets) == len(set(runs["run_id"]))
    by_run = {rid: np.stack(group["probs"].to_list()) for rid, group in preds.groupby("run_id", sort=False)}
    for fit in fitted:
        for ev in sets:
            # the independent path: this set alone, read and standardised by itself
            x = stats.apply(read_rows(store, ev.ref, 1.0, ev.store_condition, ev.rows))
            expected = fit.predictor(x).astype(np.float32)
            got = by_run[run_id(fit.key.fit_id, ev.eval_dataset_id, ev.condition)]
            assert got.shape == (len(ev.rows), 3)
            if fit.key.probe == "knn":
                np.testing.assert_array_equal(got, expected)  # exact neighbours, vote fractions
            else:
                np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    assert set(runs["eval_dataset_id"]) == {"cxr", "cxr2"}


def test_run_frame_keeps_the_schema_order_and_refuses_other_keys():
    names = runs_schema().names
    row = {name: i for i, name in enumerate(reversed(names))}
    frame = run_frame([row, row])
    assert frame.columns.tolist() == names and frame.iloc[0].tolist() == [row[n] for n in names]
    assert run_frame([]).columns.tolist() == names
    short = {k: v for k, v in row.items() if k not in ("ece", "n_test")}
    with pytest.raises(ValueError, match="missing ece, n_test; extra none"):
        run_frame([row, short])
    with pytest.raises(ValueError, match="missing none; extra bogus"):
        run_frame([{**row, "bogus": 1.0}])


def test_a_chunk_whose_rows_differ_from_the_run_schema_raises(cell, monkeypatch):
    chunk, store, source, targets, stats = cell
    chunk = dataclasses.replace(chunk, fits=chunk.fits[:1])  # one logreg fit
    fitted = tasks.fit_chunk(chunk, store, source, stats)
    real = tasks.all_metrics

    def renamed(y, p, task):  # a metric under a name the run schema does not know
        values = real(y, p, task)
        return {("bogus" if k == "ece" else k): v for k, v in values.items()}

    monkeypatch.setattr(tasks, "all_metrics", renamed)
    with pytest.raises(ValueError, match="missing ece; extra bogus"):
        tasks.evaluate_chunk(chunk, fitted, store, source, targets, stats)
    monkeypatch.setattr(tasks, "all_metrics", real)
    runs, _ = tasks.evaluate_chunk(chunk, fitted, store, source, targets, stats)
    assert runs.columns.tolist() == runs_schema().names and runs["ece"].notna().all()

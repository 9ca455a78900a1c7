"""One unit of sweep work: fit a chunk of probes on one feature set and depth, evaluate them.

`run_chunk` is a pure function of its arguments (it runs in-process or on a
`dask.distributed` worker) and returns the run-record and prediction frames of every
fit in the chunk; the client alone writes them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time

import numpy as np
import pandas as pd

from crsbench.core.schema import PREDICTIONS
from crsbench.features.store import CLEAN, CONDITIONS, FeatureSetRef, FeatureStore
from crsbench.ingest.types import Dataset, Task
from crsbench.probes.metrics import all_metrics
from crsbench.probes.reader import TrainStats, read_rows
from crsbench.probes.records import CALIB, SHIFT, FitKey, run_id, runs_schema
from crsbench.probes.registry import Predictor, get_probe


@dataclasses.dataclass(frozen=True)
class Chunk:
    """Fits sharing one feature set and depth (so one read of each array serves all)."""

    ref: FeatureSetRef
    depth: float
    fits: tuple[FitKey, ...]
    pretrained: bool
    code_version: str


@dataclasses.dataclass(frozen=True)
class EvalSet:
    eval_dataset_id: str
    condition: str        # the run-record condition
    ref: FeatureSetRef    # where its features live
    store_condition: str  # the store array it reads
    rows: np.ndarray      # rows of the eval dataset, store order


def eval_sets(source: Dataset, ref: FeatureSetRef, targets: list[Dataset]) -> list[EvalSet]:
    """Clean + 15 perturbed test conditions, the clean calib split, each shift target."""
    test = source.split_rows("test")
    sets = [EvalSet(source.name, c, ref, c, test) for c in CONDITIONS]
    calib = source.split_rows("calib")
    if len(calib):
        sets.append(EvalSet(source.name, CALIB, ref, CLEAN, calib))
    for target in targets:
        target_ref = FeatureSetRef(target.name, ref.encoder_id, ref.regime)
        sets.append(EvalSet(target.name, SHIFT, target_ref, CLEAN, target.split_rows("test")))
    return sets


def n_outputs(dataset: Dataset) -> int:
    return len(dataset.label_names)


def run_chunk(chunk: Chunk, store: FeatureStore, source: Dataset, targets: list[Dataset],
              stats: TrainStats) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fit every probe of `chunk`, evaluate each on every eval set; return (runs, predictions)."""
    train_rows = source.split_rows("train")
    x_train = stats.apply_inplace(read_rows(store, chunk.ref, chunk.depth, CLEAN, train_rows))
    k = n_outputs(source)
    fitted: list[tuple[FitKey, Predictor, int, float]] = []
    shared: dict[tuple[str, bytes], tuple[Predictor, float]] = {}
    for key in chunk.fits:
        entry = get_probe(key.probe)
        rows = source.fraction_rows(key.label_fraction, key.seed)
        # An unseeded probe's fit depends only on its training rows: fraction 1.0 is the
        # same training set for every seed, so it is fitted once and shared.
        cache_key = (key.probe, rows.tobytes()) if not entry.seeded else None
        if cache_key is not None and cache_key in shared:
            predictor, seconds = shared[cache_key]
        else:
            positions = np.searchsorted(train_rows, rows)
            start = time.perf_counter()
            # All of train needs no fancy-index copy (the largest array of a cell at scale).
            x_fit = x_train if len(positions) == len(train_rows) else x_train[positions]
            predictor = entry.fit(x_fit, source.labels[rows], source.task, k, key.seed)
            seconds = time.perf_counter() - start
            if cache_key is not None:
                shared[cache_key] = (predictor, seconds)
        fitted.append((key, predictor, len(rows), seconds))
    del x_train

    created = dt.datetime.now(dt.UTC)
    run_rows: list[dict] = []
    pred_parts: list[pd.DataFrame] = []
    datasets = {source.name: source, **{t.name: t for t in targets}}
    for ev in eval_sets(source, chunk.ref, targets):
        data = datasets[ev.eval_dataset_id]
        x_eval = stats.apply_inplace(read_rows(store, ev.ref, chunk.depth, ev.store_condition, ev.rows))
        y_eval = data.labels[ev.rows]
        image_ids = data.images["image_id"].to_numpy()[ev.rows]
        for key, predictor, n_train, seconds in fitted:
            probs = predictor(x_eval)
            rid = run_id(key.fit_id, ev.eval_dataset_id, ev.condition)
            run_rows.append({
                "run_id": rid, "fit_id": key.fit_id, "encoder_id": key.encoder_id,
                "dataset_id": key.dataset_id, "eval_dataset_id": ev.eval_dataset_id,
                "regime": key.regime, "probe": key.probe, "depth": float(key.depth),
                "label_fraction": float(key.label_fraction), "seed": int(key.seed),
                "condition": ev.condition, **all_metrics(y_eval, probs, Task(data.task)),
                "n_train": n_train, "n_test": len(ev.rows), "fit_seconds": seconds,
                "pretrained": chunk.pretrained, "code_version": chunk.code_version,
                "created_at": created,
            })
            pred_parts.append(pd.DataFrame({
                "run_id": rid, "fit_id": key.fit_id, "eval_dataset_id": ev.eval_dataset_id,
                "condition": ev.condition, "row_index": ev.rows.astype(np.int32),
                "image_id": image_ids, "probs": list(probs.astype(np.float32)),
            }))
    runs = pd.DataFrame(run_rows, columns=runs_schema().names)
    predictions = pd.concat(pred_parts, ignore_index=True)[PREDICTIONS.names]
    return runs, predictions

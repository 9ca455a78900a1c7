"""One unit of sweep work: fit a chunk of probes on one feature set and depth, evaluate them.

`run_chunk` is a pure function of its arguments (it runs in-process or on a
`dask.distributed` worker) and returns the run-record and prediction frames of every
fit in the chunk; the client alone writes them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core import CALIB, CLEAN, CONDITIONS, PRIMARY_PROBE, SHIFT
from crsbench.core.schema import COEFFICIENTS, PREDICTIONS
from crsbench.features.store import Depth, FeatureSetRef, FeatureStore
from crsbench.ingest.types import Dataset, Task
from crsbench.probes.metrics import all_metrics
from crsbench.probes.reader import TrainStats, read_rows
from crsbench.probes.records import FitKey, run_frame, run_id
from crsbench.probes.registry import Predictor, ProbeEntry, get_probe
from crsbench.probes.zeroshot import prompt_digest, zeroshot_predictor


@dataclasses.dataclass(frozen=True)
class Chunk:
    """Fits sharing one feature set and depth (so one read of each array serves all)."""

    ref: FeatureSetRef
    depth: Depth  # the stored depth read: the fits' own, or `proj` (zero-shot, `probes.identity.read_depth`)
    fits: tuple[FitKey, ...]
    pretrained: bool
    code_version: str
    conditions: tuple[str, ...] = (
        CONDITIONS  # the test conditions its fits evaluate (features.conditions.conditions_of)
    )
    suite: str = ""  # a corruption suite's fits: its conditions alone, no calib split, no shift target


@dataclasses.dataclass(frozen=True)
class EvalSet:
    eval_dataset_id: str
    condition: str  # the run-record condition
    ref: FeatureSetRef  # where its features live
    store_condition: str  # the store array it reads
    rows: np.ndarray  # rows of the eval dataset, store order


def eval_sets(
    source: Dataset,
    ref: FeatureSetRef,
    targets: list[Dataset],
    conditions: Sequence[str] = CONDITIONS,
    suite: bool = False,
) -> list[EvalSet]:
    """The test split under each condition of the feature set (clean + the 15 perturbed ones of the
    protocol, or those `features.conditions.stored_conditions` reads), the clean calib split, each
    shift target; for a corruption suite's fits (`suite`) the conditions alone."""
    test = source.split_rows("test")
    sets = [EvalSet(source.name, c, ref, c, test) for c in conditions]
    if suite:
        return sets
    calib = source.split_rows("calib")
    if len(calib):
        sets.append(EvalSet(source.name, CALIB, ref, CLEAN, calib))
    for target in targets:
        target_ref = FeatureSetRef(target.name, ref.encoder_id, ref.regime)
        sets.append(EvalSet(target.name, SHIFT, target_ref, CLEAN, target.split_rows("test")))
    return sets


def n_outputs(dataset: Dataset) -> int:
    return len(dataset.label_names)


# Stacked eval rows read at once (x D x 8 bytes: 0.3 GB at D = 1152): bounds a worker's
# memory whatever the size of the test split or shift target.
EVAL_BLOCK_ROWS = 32_768


@dataclasses.dataclass(frozen=True)
class Fitted:
    key: FitKey
    predictor: Predictor
    n_train: int
    seconds: float


def fit_chunk(chunk: Chunk, store: FeatureStore, source: Dataset, stats: TrainStats) -> list[Fitted]:
    """Fit every probe of `chunk` on its training rows (read and standardised once); a
    zero-shot probe reads no rows (`probes.zeroshot`)."""
    if all(get_probe(key.probe).zero_shot for key in chunk.fits):
        return [
            Fitted(
                key,
                zeroshot_predictor(store, chunk.ref, stats, Task(source.task), prompt_digest(key.weights_hash)),
                0,
                0.0,
            )
            for key in chunk.fits
        ]
    train_rows = source.split_rows("train")
    x_train = stats.apply_inplace(read_rows(store, chunk.ref, chunk.depth, CLEAN, train_rows))
    k = n_outputs(source)
    fitted: list[Fitted] = []
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
            if entry.deferred:
                del predictor, x_fit
                predictor = _refitting(entry, x_train, positions, source.labels[rows], source.task, k, key.seed)
            if cache_key is not None:
                shared[cache_key] = (predictor, seconds)
        fitted.append(Fitted(key, predictor, len(rows), seconds))
    return fitted


def _refitting(
    entry: ProbeEntry, x_train: np.ndarray, positions: np.ndarray, y: np.ndarray, task: Task, k: int, seed: int
) -> Predictor:
    """A predictor that fits at each call and lets the fit go (a deferred probe's memory)."""

    def predict(x_eval: np.ndarray) -> np.ndarray:
        x_fit = x_train if len(positions) == len(x_train) else x_train[positions]
        return entry.fit(x_fit, y, task, k, seed)(x_eval)

    return predict


def _batches(sets: list[EvalSet]) -> list[list[EvalSet]]:
    """Eval sets of one dataset and the same rows (the test conditions) go together."""
    groups: dict[tuple[str, bytes], list[EvalSet]] = {}
    for ev in sets:
        groups.setdefault((ev.eval_dataset_id, ev.rows.tobytes()), []).append(ev)
    return list(groups.values())


def _read_batch(
    store: FeatureStore, depth: Depth, batch: list[EvalSet], stats: TrainStats, rows: np.ndarray
) -> np.ndarray:
    """`rows` of every set of the batch, stacked condition-major and standardised in place."""
    n = len(rows)
    first = stats.apply_inplace(read_rows(store, batch[0].ref, depth, batch[0].store_condition, rows))
    if len(batch) == 1:
        return first
    out = np.empty((len(batch) * n, first.shape[1]))
    out[:n] = first
    del first
    for b, ev in enumerate(batch[1:], start=1):
        out[b * n : (b + 1) * n] = stats.apply_inplace(read_rows(store, ev.ref, depth, ev.store_condition, rows))
    return out


def _predict_batch(
    store: FeatureStore, depth: Depth, batch: list[EvalSet], stats: TrainStats, fitted: list[Fitted]
) -> list[list[np.ndarray]]:
    """probs[fit][set] over the batch's rows: one predictor call per fit and block of rows."""
    rows = batch[0].rows
    step = max(1, EVAL_BLOCK_ROWS // len(batch))
    pieces: list[list[list[np.ndarray]]] = [[[] for _ in batch] for _ in fitted]
    for start in range(0, len(rows), step):
        block = rows[start : start + step]
        x = _read_batch(store, depth, batch, stats, block)
        for f, fit in enumerate(fitted):
            probs = fit.predictor(x)
            for b in range(len(batch)):
                pieces[f][b].append(probs[b * len(block) : (b + 1) * len(block)])
        del x
    return [[np.concatenate(p) for p in per_fit] for per_fit in pieces]


def evaluate_chunk(
    chunk: Chunk, fitted: list[Fitted], store: FeatureStore, source: Dataset, targets: list[Dataset], stats: TrainStats
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Evaluate every fit on every eval set; returns (runs, predictions).

    The conditions of the test split (16 in the protocol) are stacked and each predictor is called
    once on the stack (one matrix product per fit instead of one per condition); calib and each shift target are
    their own batches. Batches are read in blocks of EVAL_BLOCK_ROWS stacked rows, so a
    shift target of 243k rows never sits in memory as one float64 matrix.
    """
    created = dt.datetime.now(dt.UTC)
    run_rows: list[dict[str, Any]] = []
    pred_parts: list[tuple[str, str, str, str, np.ndarray, np.ndarray, np.ndarray]] = []
    datasets = {source.name: source, **{t.name: t for t in targets}}
    for batch in _batches(eval_sets(source, chunk.ref, targets, chunk.conditions, bool(chunk.suite))):
        data = datasets[batch[0].eval_dataset_id]
        rows = batch[0].rows
        probs_by_fit = _predict_batch(store, chunk.depth, batch, stats, fitted)
        y_eval = data.labels[rows]
        image_ids = data.images["image_id"].to_numpy()[rows]
        row_index = rows.astype(np.int32)
        for fit, per_set in zip(fitted, probs_by_fit, strict=True):
            key = fit.key
            for ev, probs in zip(batch, per_set, strict=True):
                rid = run_id(key.fit_id, ev.eval_dataset_id, ev.condition)
                run_rows.append(
                    {
                        "run_id": rid,
                        "fit_id": key.fit_id,
                        "encoder_id": key.encoder_id,
                        "dataset_id": key.dataset_id,
                        "eval_dataset_id": ev.eval_dataset_id,
                        "regime": key.regime,
                        "probe": key.probe,
                        "depth": float(key.depth),
                        "label_fraction": float(key.label_fraction),
                        "seed": int(key.seed),
                        "condition": ev.condition,
                        **all_metrics(y_eval, probs, Task(data.task)),
                        "n_train": fit.n_train,
                        "n_test": len(rows),
                        "fit_seconds": fit.seconds,
                        "pretrained": chunk.pretrained,
                        "code_version": chunk.code_version,
                        "created_at": created,
                    }
                )
                pred_parts.append((rid, key.fit_id, ev.eval_dataset_id, ev.condition, row_index, image_ids, probs))
    runs = run_frame(run_rows)  # exactly the run schema's columns, else ValueError
    return runs, _prediction_frame(pred_parts)


def _prediction_frame(parts: list[tuple[str, str, str, str, np.ndarray, np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """One frame for every evaluation of the chunk (one row per image), built at once: a
    frame per evaluation and a concat cost more than the metrics at the demo's sizes."""
    sizes = np.array([len(part[4]) for part in parts])

    def repeated(i: int) -> np.ndarray:
        return np.repeat(np.array([part[i] for part in parts], dtype=object), sizes)

    probs = np.concatenate([part[6] for part in parts]).astype(np.float32)
    frame = pd.DataFrame(
        {
            "run_id": repeated(0),
            "fit_id": repeated(1),
            "eval_dataset_id": repeated(2),
            "condition": repeated(3),
            "row_index": np.concatenate([part[4] for part in parts]),
            "image_id": np.concatenate([part[5] for part in parts]),
            "probs": list(probs),
        }
    )
    return frame[PREDICTIONS.names]


KEPT_FRACTION = 1.0  # the logreg fits whose coefficients are kept (every seed and depth)


def coefficient_frame(fitted: list[Fitted], stats: TrainStats) -> pd.DataFrame:
    """One row per full-label logreg fit of the chunk: its weights, bias and standardisation."""
    rows = []
    for fit in fitted:
        key, predictor = fit.key, fit.predictor
        weights = getattr(predictor, "weights", None)
        bias = getattr(predictor, "bias", None)
        if key.probe != PRIMARY_PROBE or abs(key.label_fraction - KEPT_FRACTION) > 1e-9 or weights is None:
            continue
        w = np.asarray(weights, dtype=np.float64)
        rows.append(
            {
                "fit_id": key.fit_id,
                "encoder_id": key.encoder_id,
                "dataset_id": key.dataset_id,
                "regime": key.regime,
                "depth": float(key.depth),
                "seed": int(key.seed),
                "label_fraction": float(key.label_fraction),
                "dim": int(w.shape[0]),
                "n_outputs": int(w.shape[1]),
                "weights": w.ravel().tolist(),
                "bias": np.asarray(bias, dtype=np.float64).tolist(),
                "mean": np.asarray(stats.mean, dtype=np.float64).tolist(),
                "std": np.asarray(stats.std, dtype=np.float64).tolist(),
            }
        )
    return pd.DataFrame(rows, columns=COEFFICIENTS.names)


ChunkResult = tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]  # runs, predictions, coefficients


def run_chunk(
    chunk: Chunk, store: FeatureStore, source: Dataset, targets: list[Dataset], stats: TrainStats
) -> ChunkResult:
    """Fit every probe of `chunk`, evaluate each on every eval set; return (runs, predictions,
    coefficients of its full-label logreg fits)."""
    fitted = fit_chunk(chunk, store, source, stats)
    runs, predictions = evaluate_chunk(chunk, fitted, store, source, targets, stats)
    return runs, predictions, coefficient_frame(fitted, stats)

"""A small warehouse with run records AND stored predictions, for the image-level bootstrap,
intervals, ties and completeness tests. Predictions are generated (no probe is fitted, so the
fixture takes seconds): per encoder a quality that scales how far the true class's logit stands
out, per fraction/seed/condition fresh noise; at fraction 1.0 every seed gets the same
predictions (as a deterministic probe on all labels does). Run metrics are computed from the
stored float32 predictions with `probes.metrics`, as the grid does."""

from __future__ import annotations

import dataclasses
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from support.synthetic import make_dataset

from crsbench.core import FRACTION_SEEDS, LABEL_FRACTIONS, PERTURBED_CONDITIONS
from crsbench.core.schema import PREDICTIONS
from crsbench.ingest.types import Dataset, Task
from crsbench.probes.metrics import all_metrics
from crsbench.probes.records import FitKey, run_id, runs_schema
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset
from crsbench.warehouse.panels import freeze_panel
from crsbench.warehouse.parts import parts_dir_for

# encoder -> quality: enc_a and enc_b close (tied on the test set), enc_d clearly worse
ENCODERS = {"enc_a": 1.30, "enc_b": 1.27, "enc_c": 1.0, "enc_d": 0.6}
PANEL = "bp"
CONDITIONS = PERTURBED_CONDITIONS[:6]
# The grid these worlds declare at ingest: exactly the keys `cell_batches` writes for every cell.
GRID = [
    ("logreg", 1.0, fraction, seed, condition)
    for fraction in LABEL_FRACTIONS
    for seed in FRACTION_SEEDS
    for condition in (["clean", *CONDITIONS] if fraction == 1.0 else ["clean"])
]


def _datasets() -> dict[str, Dataset]:
    return {
        "derm": make_dataset("derm", "multiclass", 400, 4, seed=11, split_share=(0.4, 0.1)),
        "cxr": make_dataset("cxr", "multilabel", 400, 3, seed=12, split_share=(0.4, 0.1)),
    }


def mixed_patients(name: str = "derm", seed: int = 11) -> Dataset:
    """`derm` (multiclass, 4 classes) whose test patients hold images of different classes, as a
    user's grouped data does: class3 has 6 test images in 5 patients and is the most frequent
    class of only one of them (patient p0: 3 3 0; p1-p4: 3 x x with x in 0-2); every other test
    image is in a two-image patient of classes 0-2, mixed as they come."""
    ds = make_dataset(name, "multiclass", 400, 4, seed=seed, split_share=(0.4, 0.1))
    test = ds.split_rows("test")
    labels, groups = ds.labels.copy(), ds.images["group_id"].to_numpy(object).copy()
    rest = labels[test[15:]]
    labels[test[15:]] = np.where(rest == 3, np.arange(len(rest)) % 3, rest)
    labels[test[:15]] = [3, 3, 0, *(v for k in range(1, 5) for v in (3, k % 3, k % 3))]
    groups[test[:15]] = [f"p{i // 3}" for i in range(15)]
    groups[test[15:]] = [f"q{i // 2}" for i in range(len(test) - 15)]
    return dataclasses.replace(ds, labels=labels, images=ds.images.assign(group_id=groups))


def probs(ds: Dataset, rows: np.ndarray, quality: float, rng: np.random.Generator) -> np.ndarray:
    y = ds.labels[rows]
    target = y.astype(float) if ds.task is Task.MULTILABEL else np.eye(len(ds.label_names))[y]
    logits = 2.0 * quality * target + rng.normal(size=target.shape) * 1.2
    if ds.task is Task.MULTILABEL:
        return (1 / (1 + np.exp(-(logits - 1.0)))).astype(np.float32)
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (z / z.sum(axis=1, keepdims=True)).astype(np.float32)


def run_records(
    ds: Dataset, key: FitKey, rows: np.ndarray, condition: str, p: np.ndarray, created: datetime
) -> tuple[dict[str, Any], pd.DataFrame]:
    """One run record of fit `key` evaluated on `rows` of `ds` under `condition`, and its predictions `p`."""
    rid = run_id(key.fit_id, ds.name, condition)
    run = {
        "run_id": rid,
        "fit_id": key.fit_id,
        "encoder_id": key.encoder_id,
        "dataset_id": ds.name,
        "eval_dataset_id": ds.name,
        "regime": "frozen",
        "probe": key.probe,
        "depth": key.depth,
        "label_fraction": key.label_fraction,
        "seed": key.seed,
        "condition": condition,
        **all_metrics(ds.labels[rows], p.astype(np.float64), ds.task),
        "n_train": 10,
        "n_test": len(rows),
        "fit_seconds": 0.0,
        "pretrained": False,
        "code_version": "test",
        "created_at": created,
    }
    pred = pd.DataFrame(
        {
            "run_id": rid,
            "fit_id": key.fit_id,
            "eval_dataset_id": ds.name,
            "condition": condition,
            "row_index": rows.astype(np.int32),
            "image_id": ds.images["image_id"].to_numpy()[rows],
            "probs": list(p),
        }
    )
    return run, pred


def cell_batches(
    ds: Dataset,
    encoder: str,
    quality: float,
    k: int,
    perturbed: tuple[str, ...] = CONDITIONS,
    seeded: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Runs and predictions of one (encoder, dataset) cell: clean at every fraction x seed,
    the perturbed conditions at fraction 1.0. Not `seeded`: every seed of a fraction gets the
    same predictions, so nothing a seed bootstrap draws moves any score."""
    rows = ds.split_rows("test")
    runs, preds = [], []
    created = datetime(2026, 1, 1, tzinfo=UTC)
    for fraction in LABEL_FRACTIONS:
        for seed in FRACTION_SEEDS:
            key = FitKey(encoder, ds.name, 1.0, "logreg", fraction, seed)
            strength = quality * (0.8 + 0.2 * fraction**0.3)
            conditions = ["clean", *perturbed] if fraction == 1.0 else ["clean"]
            for c, condition in enumerate(conditions):
                noise_seed = seed if fraction < 1.0 and seeded else 0
                rng = np.random.default_rng([k, len(ds.name), int(fraction * 100), noise_seed, c])
                p = probs(ds, rows, strength * (1 - 0.04 * c), rng)
                run, pred = run_records(ds, key, rows, condition, p, created)
                runs.append(run)
                preds.append(pred)
    return (pd.DataFrame(runs, columns=runs_schema().names), pd.concat(preds, ignore_index=True)[PREDICTIONS.names])


def build_world(
    folder: Path,
    encoders: dict[str, float] | None = None,
    datasets: dict[str, Dataset] | None = None,
    seeded: bool = True,
) -> Path:
    """Datasets `derm` (multiclass, 4 classes) and `cxr` (multilabel, 3 labels), or `datasets`,
    and a frozen panel (`seeded`: see cell_batches)."""
    encoders = encoders or ENCODERS
    db = folder / "w.duckdb"
    with Warehouse.open(db) as wh:
        for ds in (datasets or _datasets()).values():
            load_dataset(wh, ds, grid=GRID)
            for k, (name, quality) in enumerate(encoders.items()):
                wh.append_runs(*cell_batches(ds, name, quality, k, seeded=seeded))
        freeze_panel(wh, PANEL, list(encoders), allow_small=True)  # some worlds have 2 or 3
    return db


def copy_world(db: Path, folder: Path) -> Path:
    """A private copy of a built warehouse (file and parts) for a test that changes it."""
    target = folder / db.name
    shutil.copy(db, target)
    shutil.copytree(parts_dir_for(db), parts_dir_for(target))
    return target

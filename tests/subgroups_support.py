"""A tiny warehouse with runs, stored predictions (calib and test) and image metadata, for the
subgroup and operating-point tests (builds in about a second).

Datasets `derm` (multiclass, 3 classes), `cxr` (multilabel, 3 labels) and `bin` (multiclass, 2
classes: the binary rules); two encoders, seeds 0 and 1; fraction 0.1 clean, fraction 1.0 clean,
one perturbed condition and calib. Metadata: `sex` (alternating), `age` (binned), `site` on derm only.
Predictions are generated as in bootstrap_support (no probe is fitted).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
from support.synthetic import make_dataset

from crsbench.core.schema import PREDICTIONS
from crsbench.features.store import PERTURBED_CONDITIONS
from crsbench.ingest.metadata import DEFAULT_BINS, metadata_frame
from crsbench.ingest.source import Record
from crsbench.ingest.types import Dataset, Task
from crsbench.probes.metrics import all_metrics
from crsbench.probes.records import FitKey, run_id, runs_schema
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset

ENCODERS = {"enc_a": 1.2, "enc_b": 0.7}
SEEDS = (0, 1)
PERTURBED = PERTURBED_CONDITIONS[0]
FRACTIONS = (0.1, 1.0)
GRID = [
    ("logreg", 1.0, f, seed, c)
    for f in FRACTIONS
    for seed in SEEDS
    for c in (("clean", PERTURBED, "calib") if f == 1.0 else ("clean",))
]


def datasets() -> dict[str, Dataset]:
    out = {
        "derm": make_dataset("derm", "multiclass", 240, 3, seed=21, split_share=(0.4, 0.25)),
        "cxr": make_dataset("cxr", "multilabel", 240, 3, seed=22, split_share=(0.4, 0.25)),
        "bin": make_dataset("bin", "multiclass", 200, 2, seed=23, split_share=(0.4, 0.25)),
    }
    for ds in out.values():
        records = []
        for i, image in enumerate(ds.images["image_id"]):
            meta = {"sex": "MF"[i % 2], "age": str(20 + (i * 7) % 70)}
            if ds.name == "derm":
                meta["site"] = ("head", "trunk", "leg")[i % 3]
            records.append(Record(image, "", 0, "", meta=meta))
        ds.metadata = metadata_frame(records, DEFAULT_BINS)
    return out


def probs(ds: Dataset, rows: np.ndarray, quality: float, rng: np.random.Generator) -> np.ndarray:
    y = ds.labels[rows]
    target = y.astype(float) if ds.task is Task.MULTILABEL else np.eye(len(ds.label_names))[y]
    logits = 2.0 * quality * target + rng.normal(size=target.shape) * 1.2
    if ds.task is Task.MULTILABEL:
        return (1 / (1 + np.exp(-(logits - 1.0)))).astype(np.float32)
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (z / z.sum(axis=1, keepdims=True)).astype(np.float32)


def cell(ds: Dataset, encoder: str, quality: float, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    runs, preds = [], []
    created = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for fraction, seed in ((f, s) for f in FRACTIONS for s in SEEDS):
        key = FitKey(encoder, ds.name, 1.0, "logreg", fraction, seed)
        conditions = ("clean", PERTURBED, "calib") if fraction == 1.0 else ("clean",)
        for c, condition in enumerate(conditions):
            rows = ds.split_rows("calib" if condition == "calib" else "test")
            rng = np.random.default_rng([k, len(ds.name), seed, c, int(fraction * 10)])
            p = probs(ds, rows, quality * (1 - 0.1 * c) * (0.8 + 0.2 * fraction), rng)
            rid = run_id(key.fit_id, ds.name, condition)
            runs.append(
                {
                    "run_id": rid,
                    "fit_id": key.fit_id,
                    "encoder_id": encoder,
                    "dataset_id": ds.name,
                    "eval_dataset_id": ds.name,
                    "regime": "frozen",
                    "probe": "logreg",
                    "depth": 1.0,
                    "label_fraction": fraction,
                    "seed": seed,
                    "condition": condition,
                    **all_metrics(ds.labels[rows], p.astype(np.float64), ds.task),
                    "n_train": 10,
                    "n_test": len(rows),
                    "fit_seconds": 0.0,
                    "pretrained": False,
                    "code_version": "test",
                    "created_at": created,
                }
            )
            preds.append(
                pd.DataFrame(
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
            )
    return pd.DataFrame(runs, columns=runs_schema().names), pd.concat(preds, ignore_index=True)[PREDICTIONS.names]


def build(folder: Path) -> Path:
    db = folder / "w.duckdb"
    with Warehouse.open(db) as wh:
        for ds in datasets().values():
            load_dataset(wh, ds, grid=GRID)
            for k, (name, quality) in enumerate(ENCODERS.items()):
                wh.append_runs(*cell(ds, name, quality, k))
    return db

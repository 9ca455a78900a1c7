"""A tiny warehouse with runs, stored predictions (calib and test) and image metadata, for the
subgroup and operating-point tests (builds in about a second).

Datasets `derm` (multiclass, 3 classes), `cxr` (multilabel, 3 labels) and `bin` (multiclass, 2
classes: the binary rules); two encoders, seeds 0 and 1; fraction 0.1 clean, fraction 1.0 clean,
one perturbed condition and calib. Metadata: `sex` (alternating), `age` (binned), `site` on derm only.
Predictions are generated as in bootstrap_support (no probe is fitted).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from support.bootstrap_support import probs, run_records
from support.synthetic import make_dataset

from crsbench.core import PERTURBED_CONDITIONS
from crsbench.core.schema import PREDICTIONS
from crsbench.ingest.metadata import DEFAULT_BINS, metadata_frame
from crsbench.ingest.source import Record
from crsbench.ingest.types import Dataset
from crsbench.probes.records import FitKey, runs_schema
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


def cell(ds: Dataset, encoder: str, quality: float, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    runs, preds = [], []
    created = datetime(2026, 1, 1, tzinfo=UTC)
    for fraction, seed in ((f, s) for f in FRACTIONS for s in SEEDS):
        key = FitKey(encoder, ds.name, 1.0, "logreg", fraction, seed)
        conditions = ("clean", PERTURBED, "calib") if fraction == 1.0 else ("clean",)
        for c, condition in enumerate(conditions):
            rows = ds.split_rows("calib" if condition == "calib" else "test")
            rng = np.random.default_rng([k, len(ds.name), seed, c, int(fraction * 10)])
            p = probs(ds, rows, quality * (1 - 0.1 * c) * (0.8 + 0.2 * fraction), rng)
            run, pred = run_records(ds, key, rows, condition, p, created)
            runs.append(run)
            preds.append(pred)
    return pd.DataFrame(runs, columns=runs_schema().names), pd.concat(preds, ignore_index=True)[PREDICTIONS.names]


def build(folder: Path) -> Path:
    db = folder / "w.duckdb"
    with Warehouse.open(db) as wh:
        for ds in datasets().values():
            load_dataset(wh, ds, grid=GRID)
            for k, (name, quality) in enumerate(ENCODERS.items()):
                wh.append_runs(*cell(ds, name, quality, k))
    return db

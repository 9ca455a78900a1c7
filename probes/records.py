"""Fit keys, their ids and the run-record frames the probes hand to the warehouse.

The column lists mirror `crsbench.warehouse.schema.RUNS_SCHEMA` / `PREDICTIONS_SCHEMA`
(probes may not import the warehouse; `tests/test_probes_grid.py` checks they agree).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pandas as pd

from crsbench.core import FROZEN, SHIFT
from crsbench.features.store import FeatureSetRef

RUN_COLUMNS: tuple[str, ...] = (
    "run_id", "fit_id", "encoder_id", "dataset_id", "eval_dataset_id", "regime", "probe",
    "depth", "label_fraction", "seed", "condition", "auroc", "ece", "ece_adaptive", "brier",
    "nll", "accuracy", "mean_confidence", "qwk", "ordinal_mae", "n_train", "n_test",
    "fit_seconds", "pretrained", "code_version", "created_at",
)
PREDICTION_COLUMNS: tuple[str, ...] = (
    "run_id", "fit_id", "eval_dataset_id", "condition", "row_index", "image_id", "probs",
)
# Conditions beyond the store's 16: the source's clean calib split (for recalibration
# analyses) and the clean test split of a shift target (no retraining).
CALIB = "calib"
__all__ = ["CALIB", "SHIFT", "FitKey", "PREDICTION_COLUMNS", "RUN_COLUMNS"]


def _digest(*parts: object) -> str:
    text = json.dumps([str(p) if isinstance(p, str) else p for p in parts], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclasses.dataclass(frozen=True, order=True)
class FitKey:
    """One probe fit: what it is trained on and how. Its id is a hash of exactly this.

    `data_digest` identifies the data (the dataset's `data_digest`, with those of its shift
    targets) and `weights_hash` the encoder weights its features came from; `run_grid`
    fills both in, so replacing a dataset or re-extracting other weights changes every fit id.
    """

    encoder_id: str
    dataset_id: str
    depth: float
    probe: str
    label_fraction: float
    seed: int
    regime: str = FROZEN
    data_digest: str = ""
    weights_hash: str = ""

    @property
    def fit_id(self) -> str:
        return _digest("fit", self.encoder_id, self.dataset_id, round(float(self.depth), 6),
                       self.probe, round(float(self.label_fraction), 6), int(self.seed), self.regime,
                       self.data_digest, self.weights_hash)

    @property
    def feature_set(self) -> FeatureSetRef:
        return FeatureSetRef(self.dataset_id, self.encoder_id, self.regime)


def fit_data_digest(source_digest: str, targets: dict[str, str]) -> str:
    """The data identity of a fit: its dataset's digest and each shift target's (by name)."""
    return _digest("data", source_digest, sorted(targets.items()))


def run_id(fit_id: str, eval_dataset_id: str, condition: str) -> str:
    """The id of one evaluation of a fit: deterministic, so reruns produce the same ids."""
    return _digest("run", fit_id, eval_dataset_id, condition)


def empty_runs() -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in RUN_COLUMNS})


def empty_predictions() -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in PREDICTION_COLUMNS})

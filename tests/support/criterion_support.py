"""A hand-built warehouse for the criterion-validation analysis tests (bootstrap, stability,
insertion, weights, estimators, external, construct), and small independent helpers.

Seven encoders on three datasets (derm multiclass, fundus ordinal, cxr multilabel with a
mimic shift target), five seeds each, from runs_factory; e5 has no fundus cell. Every run also
carries a Brier score, and the ordinal fundus runs a QWK and an ordinal MAE, each moving with the
run's AUROC plus an encoder-specific offset, so the substituted estimators rank differently.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from support.analyses_support import add_dataset
from support.runs_factory import (
    AXES,
    PROFILES,
    encoder_runs,
    frame,
    reference_anchors,
    reference_axes_cell,
    reference_axes_encoder,
    reference_crs,
)

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

EXTRA = {"e6": 0.77, "e7": 0.83}
ENCODERS = [*PROFILES, *EXTRA]
DATASETS = {"derm": ("multiclass", 8), "fundus": ("ordinal", 5), "cxr": ("multilabel", 14), "mimic": ("multilabel", 14)}
GRADES = 5


def scenario_runs() -> pd.DataFrame:
    rows = [r for e in PROFILES for r in encoder_runs(e)]
    rows += [r for e, q in EXTRA.items() for r in encoder_runs(e, quality=q)]
    runs = frame(rows)
    offset = runs["encoder_id"].map({e: 0.013 * ((7 * i) % 5) for i, e in enumerate(ENCODERS)})
    runs["brier"] = 0.05 + 0.6 * (1 - runs["auroc"]) + offset
    fundus = runs["dataset_id"] == "fundus"
    runs["qwk"] = np.where(fundus, 2 * runs["auroc"] - 1 - 2 * offset, np.nan)
    runs["ordinal_mae"] = np.where(fundus, 2.5 * (1 - runs["auroc"]) + offset**0.5, np.nan)
    return runs


def build(db: Path, runs: pd.DataFrame, members: list[str] | None = None, panel: str = "p") -> Path:
    with Warehouse.open(db) as wh:
        for dataset_id, (task, n) in DATASETS.items():
            add_dataset(wh, dataset_id, task, n)
        for seed in sorted(runs["seed"].unique()):  # one part per seed, like a sweep
            wh.append_runs(runs[runs["seed"] == seed])
        if members is not None:
            freeze_panel(wh, panel, members, allow_small=True)  # fixtures freeze small panels too
    return db


def reference_scores(
    runs_or_axes: pd.DataFrame, members: list[str], anchors_from: list[str] | None = None, **weights
) -> pd.DataFrame:
    """Aggregate axes and CRS of the members, independently of the SQL (runs_factory's pandas
    METHODS.md §6-§8): anchors and Pareto reference = `anchors_from` (default: the members).
    Takes run records, or the encoder axes `encoder_axes` already computed from them."""
    enc = runs_or_axes if "robustness" in runs_or_axes.columns else encoder_axes(runs_or_axes)
    enc = enc[enc["encoder_id"].isin(members)].reset_index(drop=True)
    ref = anchors_from if anchors_from is not None else members
    scores = reference_crs(enc, ref, reference_anchors(enc, ref), **weights)
    return enc.merge(scores, on="encoder_id").set_index("encoder_id")


def encoder_axes(runs: pd.DataFrame) -> pd.DataFrame:
    return reference_axes_encoder(reference_axes_cell(runs))


__all__ = ["AXES", "DATASETS", "ENCODERS", "GRADES", "build", "encoder_axes", "reference_scores", "scenario_runs"]

"""E6: label scarcity and the crossover fraction (METHODS.md §12).

Seed-mean clean AUROC of the primary probe (full depth, frozen) per encoder x dataset x
label fraction. Reported: AUROC at 1 % and 10 % of labels, and the crossover fraction:
the smallest label fraction at which the encoder's AUROC reaches (>=) the reference
encoder's full-label AUROC on the same dataset; NULL if it never does.

The reference is a parameter; by default the ViT-B/16 entry (family "ViT-B/16" or an
id naming vit-base/vit-b16), else the first encoder (by id) whose id contains "vit"
(the demo's tiny ViT stands in for ViT-B/16).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.common import encoders_frame, seed_metrics
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis
from crsbench.core import CLEAN, CrsbenchError
from crsbench.warehouse.connection import Warehouse

SCARCE = {"auroc_1pct": 0.01, "auroc_10pct": 0.10}
COLUMNS = [
    "encoder_id",
    "dataset_id",
    "auroc_1pct",
    "auroc_10pct",
    "auroc_full",
    "reference_id",
    "reference_auroc_full",
    "crossover_fraction",
]


def _norm(text: str | None) -> str:
    return re.sub(r"[^a-z0-9]", "", (text or "").lower())


def default_reference(encoders: pd.DataFrame, probed: set[str]) -> str | None:
    """The ViT-B/16 entry if probed, else the first probed encoder whose id contains 'vit'."""
    candidates = encoders[encoders["encoder_id"].isin(probed)].sort_values("encoder_id")
    for _, row in candidates.iterrows():
        if _norm(row["family"]) == "vitb16" or any(key in _norm(row["encoder_id"]) for key in ("vitb16", "vitbase")):
            return str(row["encoder_id"])
    for encoder_id in sorted(probed):
        if "vit" in encoder_id.lower():
            return encoder_id
    return None


def fraction_curve(wh: Warehouse) -> pd.DataFrame:
    means = seed_metrics(wh, ("auroc",), depth=1.0, conditions=[CLEAN])
    means = means[means["eval_dataset_id"] == means["dataset_id"]]
    return means[["encoder_id", "dataset_id", "label_fraction", "auroc", "n_seeds"]].reset_index(drop=True)


def crossover(curve: pd.DataFrame, target: float) -> float | None:
    """Smallest fraction whose AUROC >= target; None if none (or no target)."""
    if target is None or np.isnan(target):
        return None
    reached = curve[curve["auroc"] >= target]
    return float(reached["label_fraction"].min()) if len(reached) else None


def _at(curve: pd.DataFrame, fraction: float) -> float:
    hit = curve[np.isclose(curve["label_fraction"], fraction)]
    return float(hit["auroc"].iloc[0]) if len(hit) else np.nan


def scarcity(curve: pd.DataFrame, reference: str) -> pd.DataFrame:
    rows = []
    for (encoder_id, dataset_id), group in curve.groupby(["encoder_id", "dataset_id"], sort=True):
        ref = curve[(curve["encoder_id"] == reference) & (curve["dataset_id"] == dataset_id)]
        ref_full = _at(ref, 1.0)
        rows.append(
            {
                "encoder_id": encoder_id,
                "dataset_id": dataset_id,
                **{name: _at(group, f) for name, f in SCARCE.items()},
                "auroc_full": _at(group, 1.0),
                "reference_id": reference,
                "reference_auroc_full": ref_full,
                "crossover_fraction": crossover(group.dropna(subset=["auroc"]), ref_full),
            }
        )
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["crossover_fraction"] = out["crossover_fraction"].astype("Float64")
    return out


_FRACTION = "Seed-mean clean AUROC (logreg, depth 1.0) at {} of the labels; [0, 1]; NULL when not run."


DOCS = {
    "label_fraction": "Fraction of the training split the probe was fitted on: 0.01, 0.05, 0.10, 0.25 or 1.0.",
    "auroc": "Seed-mean clean AUROC at this label fraction (logreg, depth 1.0); [0, 1], higher is better.",
    "n_seeds": "Seeds averaged; count.",
    "auroc_1pct": _FRACTION.format("1 %"),
    "auroc_10pct": _FRACTION.format("10 %"),
    "auroc_full": _FRACTION.format("100 %"),
    "reference_id": "Reference encoder: the reference param, by default ViT-B/16 (else the first probed id "
    "containing 'vit').",
    "reference_auroc_full": "The reference encoder's full-label AUROC on this dataset; [0, 1].",
    "crossover_fraction": "Smallest label fraction at which the encoder's AUROC reaches (>=) reference_auroc_full; "
    "NULL if it never does.",
}


@register_analysis(
    "e6",
    columns=DOCS,
    section="§12",
    params={
        "reference": Param(
            None, "Reference encoder id (default ViT-B/16, else the first probed id containing 'vit').", str
        )
    },
    outputs={
        "curve": ("encoder_id", "dataset_id", "label_fraction", "auroc", "n_seeds"),
        "scarcity": COLUMNS,
        "summary": COLUMNS,
    },
)
def run_e6(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Label scarcity: AUROC at 1 %/10 % labels and the crossover fraction vs a reference."""
    curve = fraction_curve(wh)
    probed = set(curve["encoder_id"])
    reference = params["reference"] or default_reference(encoders_frame(wh), probed)
    notes: list[str] = []
    if reference is None:
        raise CrsbenchError("no ViT-B/16-like reference encoder among the probed encoders; pass --reference ENCODER")
    if reference not in probed:
        raise CrsbenchError(
            f"reference encoder {reference!r} has no primary-probe runs; probed: {', '.join(sorted(probed)) or 'none'}"
        )
    table = scarcity(curve, reference)
    never = table["crossover_fraction"].isna() & table["reference_auroc_full"].notna()
    notes.append(
        f"reference {reference}: {int(never.sum())}/{int(table['reference_auroc_full'].notna().sum())} "
        "cells never reach its full-label AUROC"
    )
    return AnalysisResult(tables={"curve": curve, "scarcity": table}, summary=table, notes=notes)

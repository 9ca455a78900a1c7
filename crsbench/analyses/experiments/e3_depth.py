"""E3: representation depth (METHODS.md §12).

Seed-mean clean AUROC and ECE of the primary probe (full labels, frozen) at 25/50/75/100 %
depth per encoder x dataset. A sweep's best depth is the one with the highest AUROC;
ties go to the deeper layer, so an intermediate depth "wins" only when it is strictly
better than the final block. Also reported: the depth with the lowest ECE.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from crsbench.analyses.common import seed_metrics
from crsbench.analyses.registry import AnalysisResult, register_analysis
from crsbench.core import CLEAN
from crsbench.warehouse.connection import Warehouse

FINAL = 1.0
SWEEP_COLUMNS = [
    "encoder_id",
    "dataset_id",
    "n_depths",
    "best_depth",
    "best_auroc",
    "final_auroc",
    "auroc_gain",
    "intermediate_wins",
    "best_ece_depth",
    "best_ece",
    "final_ece",
]


def depth_means(wh: Warehouse) -> pd.DataFrame:
    means = seed_metrics(wh, ("auroc", "ece"), fraction=1.0, conditions=[CLEAN])
    means = means[means["eval_dataset_id"] == means["dataset_id"]]
    return means[["encoder_id", "dataset_id", "depth", "auroc", "ece", "n_seeds"]].reset_index(drop=True)


def _pick(group: pd.DataFrame, column: str, highest: bool) -> pd.Series:
    # Sort deepest first so that, among equal values, the deeper layer is chosen.
    ordered = group.sort_values("depth", ascending=False)
    index = ordered[column].idxmax() if highest else ordered[column].idxmin()
    return ordered.loc[index]


def sweeps(means: pd.DataFrame) -> pd.DataFrame:
    """One row per (encoder, dataset) sweep that has the final block and another depth."""
    rows = []
    for (encoder_id, dataset_id), group in means.groupby(["encoder_id", "dataset_id"], sort=True):
        group = group.dropna(subset=["auroc"])
        final = group[(group["depth"] - FINAL).abs() < 1e-9]
        if final.empty or len(group) < 2:
            continue
        best, best_ece = _pick(group, "auroc", True), _pick(group.dropna(subset=["ece"]), "ece", False)
        final_auroc = float(final["auroc"].iloc[0])
        rows.append(
            {
                "encoder_id": encoder_id,
                "dataset_id": dataset_id,
                "n_depths": len(group),
                "best_depth": float(best["depth"]),
                "best_auroc": float(best["auroc"]),
                "final_auroc": final_auroc,
                "auroc_gain": float(best["auroc"]) - final_auroc,
                "intermediate_wins": bool(best["depth"] < FINAL),
                "best_ece_depth": float(best_ece["depth"]),
                "best_ece": float(best_ece["ece"]),
                "final_ece": float(final["ece"].iloc[0]),
            }
        )
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)


_DEPTH = "ties go to the deeper layer"


DOCS = {
    "depth": "Relative encoder depth of the features: 0.25, 0.5, 0.75 or 1.0 (the last block).",
    "auroc": "Seed-mean clean full-label AUROC at this depth (logreg, frozen); [0, 1], higher is better.",
    "ece": "Seed-mean clean full-label ECE at this depth (logreg, frozen); [0, 1], lower is better.",
    "n_seeds": "Seeds averaged; count.",
    "n_depths": "Depths with an AUROC in the sweep; count (4 with the full grid).",
    "best_depth": f"Depth with the highest seed-mean AUROC; {_DEPTH}.",
    "best_auroc": "Seed-mean AUROC at best_depth; [0, 1].",
    "final_auroc": "Seed-mean AUROC at depth 1.0 (the final block); [0, 1].",
    "auroc_gain": "best_auroc - final_auroc; AUROC points, > 0 only when an intermediate depth wins.",
    "intermediate_wins": "True when an intermediate depth is strictly better than the final block (best_depth < 1).",
    "best_ece_depth": f"Depth with the lowest seed-mean ECE; {_DEPTH}.",
    "best_ece": "Seed-mean ECE at best_ece_depth; [0, 1], lower is better.",
    "final_ece": "Seed-mean ECE at depth 1.0 (the final block); [0, 1], lower is better.",
}


@register_analysis(
    "e3",
    columns=DOCS,
    section="§12",
    params={},
    outputs={
        "depths": ("encoder_id", "dataset_id", "depth", "auroc", "ece", "n_seeds"),
        "sweeps": SWEEP_COLUMNS,
        "summary": (
            "encoder_id",
            "dataset_id",
            "best_depth",
            "best_auroc",
            "final_auroc",
            "auroc_gain",
            "best_ece_depth",
        ),
    },
)
def run_e3(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Depth sweep: AUROC and ECE at 25/50/75/100 % depth; which depth wins."""
    means = depth_means(wh)
    table = sweeps(means)
    notes = [
        f"an intermediate depth beats the final block in {int(table['intermediate_wins'].sum())}/{len(table)} sweeps"
    ]
    summary = table[
        ["encoder_id", "dataset_id", "best_depth", "best_auroc", "final_auroc", "auroc_gain", "best_ece_depth"]
    ]
    return AnalysisResult(tables={"depths": means, "sweeps": table}, summary=summary, notes=notes)

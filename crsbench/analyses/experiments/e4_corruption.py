"""E4: corruption vs confidence (METHODS.md §12).

Per cell (encoder x dataset; primary probe, full depth, full labels, frozen, seed means)
and condition (every perturbed condition of the dataset's grid: the protocol's 15 corruptions
and any a registered plugin perturbation adds; plus the shift target where one exists):

* AUROC drop = AUROC_clean - AUROC_condition,
* ECE rise = ECE_condition - ECE_clean,
* confidence shift = mean confidence_condition - mean confidence_clean,
* overconfidence = mean confidence_condition - accuracy_condition.

Pearson r between AUROC drop and ECE rise is reported at two levels: across cells
(each cell's mean drop and mean rise over the corruptions) and across all
cell x corruption rows. The shift rows are listed but left out of both correlations,
which are about acquisition corruptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from crsbench.analyses.columns import in_parts
from crsbench.analyses.common import seed_metrics
from crsbench.analyses.registry import AnalysisResult, register_analysis
from crsbench.core import CALIB, CLEAN, SHIFT
from crsbench.warehouse.connection import Warehouse

MEASURES = ("auroc", "ece", "mean_confidence", "accuracy")
EFFECTS = ("auroc_drop", "ece_rise", "confidence_shift", "overconfidence")

# The columns of each output part, in the order written (the declaration of `e4` below).
CONDITION_COLUMNS = (
    "encoder_id",
    "dataset_id",
    "eval_dataset_id",
    "condition",
    "kind",
    "n_seeds",
    "auroc_clean",
    "auroc",
    "ece_clean",
    "ece",
    *EFFECTS,
    "overconfidence_clean",
)
CELL_COLUMNS = ("encoder_id", "dataset_id", *(f"mean_{e}" for e in EFFECTS), "max_ece_rise")
BY_CONDITION_COLUMNS = ("condition", "kind", "n_cells", *EFFECTS)
CORRELATION_COLUMNS = ("level", "x", "y", "n", "pearson_r", "p_value")


def condition_effects(wh: Warehouse) -> pd.DataFrame:
    """One row per cell x non-clean condition with the four effects."""
    means = seed_metrics(wh, MEASURES, depth=1.0, fraction=1.0)
    # Clean, shift and every perturbed condition of the grid (not only the protocol's 15).
    means = means[means["condition"] != CALIB]
    clean = means[(means["condition"] == CLEAN) & (means["eval_dataset_id"] == means["dataset_id"])]
    clean = (
        clean[["encoder_id", "dataset_id", *MEASURES]]
        .add_suffix("_clean")
        .rename(columns={"encoder_id_clean": "encoder_id", "dataset_id_clean": "dataset_id"})
    )
    rows = means[means["condition"] != CLEAN].merge(clean, on=["encoder_id", "dataset_id"])
    rows["kind"] = np.where(rows["condition"] == SHIFT, "shift", "corruption")
    rows["auroc_drop"] = rows["auroc_clean"] - rows["auroc"]
    rows["ece_rise"] = rows["ece"] - rows["ece_clean"]
    rows["confidence_shift"] = rows["mean_confidence"] - rows["mean_confidence_clean"]
    rows["overconfidence"] = rows["mean_confidence"] - rows["accuracy"]
    rows["overconfidence_clean"] = rows["mean_confidence_clean"] - rows["accuracy_clean"]
    return rows[list(CONDITION_COLUMNS)].sort_values(["encoder_id", "dataset_id", "condition"]).reset_index(drop=True)


def pearson(x: pd.Series, y: pd.Series, level: str) -> dict[str, Any]:
    ok = x.notna() & y.notna()
    n = int(ok.sum())
    if n < 3 or x[ok].nunique() < 2 or y[ok].nunique() < 2:
        r, p = np.nan, np.nan
    else:
        result = stats.pearsonr(x[ok], y[ok])
        r, p = float(result.statistic), float(result.pvalue)
    return {"level": level, "x": "auroc_drop", "y": "ece_rise", "n": n, "pearson_r": r, "p_value": p}


def correlations(effects: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    corr = effects[effects["kind"] == "corruption"]
    cells = (
        corr.groupby(["encoder_id", "dataset_id"], sort=True)[list(EFFECTS)].mean().add_prefix("mean_").reset_index()
    )
    cells = cells.merge(
        corr.groupby(["encoder_id", "dataset_id"])["ece_rise"].max().rename("max_ece_rise").reset_index(),
        on=["encoder_id", "dataset_id"],
    )
    table = pd.DataFrame(
        [
            pearson(cells["mean_auroc_drop"], cells["mean_ece_rise"], "cells"),
            pearson(corr["auroc_drop"], corr["ece_rise"], "cell_conditions"),
        ],
        columns=list(CORRELATION_COLUMNS),
    )
    return cells[list(CELL_COLUMNS)], table


_E4_EFFECTS = {
    "auroc_drop": "AUROC drop auroc_clean - auroc; AUROC points, positive = lost under the condition",
    "ece_rise": "ECE rise ece - ece_clean; ECE points, positive = worse calibrated",
    "confidence_shift": "confidence shift: mean confidence under the condition minus clean; positive = more confident",
    "overconfidence": "overconfidence: mean confidence minus accuracy under the condition; positive = overconfident",
}


_E4_BY_CONDITION = {e: f"Mean over the cells of the {text}." for e, text in _E4_EFFECTS.items()}


DOCS = {
    "condition": "Non-clean condition: <perturbation>-s<severity 1..3>, or shift (the shift target).",
    "kind": "corruption (a perturbation), or shift (listed, left out of the correlations).",
    "n_seeds": "Seeds averaged under this condition; count.",
    "auroc_clean": "Seed-mean clean AUROC of the cell; [0, 1].",
    "auroc": "Seed-mean AUROC under the condition; [0, 1].",
    "ece_clean": "Seed-mean clean ECE of the cell; [0, 1], lower is better.",
    "ece": "Seed-mean ECE under the condition; [0, 1], lower is better.",
    **{e: text[0].upper() + text[1:] + " (seed means)." for e, text in _E4_EFFECTS.items()},
    "overconfidence_clean": "Mean confidence minus accuracy on the clean test split (seed means); positive = "
    "overconfident.",
    **{
        f"mean_{e}": f"Mean over the cell's corruption conditions (shift excluded) of the {t}."
        for e, t in _E4_EFFECTS.items()
    },
    "max_ece_rise": "Largest ECE rise over the cell's corruption conditions; ECE points.",
    **in_parts(["by_condition", "summary"], _E4_BY_CONDITION),
    "n_cells": "Cells (encoder x dataset) with this condition; count.",
    "level": "'cells' (each cell's mean drop and rise over its corruptions) or 'cell_conditions' (every cell x "
    "corruption row).",
    "x": "First variable correlated: auroc_drop.",
    "y": "Second variable correlated: ece_rise.",
    "n": "Pairs with both values; count.",
    "pearson_r": "Pearson r between AUROC drop and ECE rise; [-1, 1]; NaN with fewer than 3 pairs or a constant "
    "variable.",
    "p_value": "Two-sided p-value of pearson_r (scipy.stats.pearsonr); [0, 1].",
}


@register_analysis(
    "e4",
    columns=DOCS,
    section="§12",
    params={},
    outputs={
        "conditions": CONDITION_COLUMNS,
        "cells": CELL_COLUMNS,
        "by_condition": BY_CONDITION_COLUMNS,
        "correlation": CORRELATION_COLUMNS,
        "summary": BY_CONDITION_COLUMNS,
    },
)
def run_e4(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Corruption vs confidence: AUROC drop, ECE rise, confidence shift, overconfidence."""
    effects = condition_effects(wh)
    cells, corr = correlations(effects)
    by_condition = (
        effects.groupby(["condition", "kind"], sort=True)
        .agg(n_cells=("encoder_id", "size"), **{e: (e, "mean") for e in EFFECTS})
        .reset_index()
    )
    notes = [
        f"Pearson r(AUROC drop, ECE rise) across {row.level} (n={row.n}): {row.pearson_r:.3f} (p = {row.p_value:.3g})"
        for row in corr.itertuples()
    ]
    return AnalysisResult(
        tables={"conditions": effects, "cells": cells, "by_condition": by_condition, "correlation": corr},
        summary=by_condition,
        notes=notes,
    )

"""Construct validity of the axes (METHODS.md §9, §11): do the four axes measure different things, and
which label-efficiency estimator is less of a second AUROC?

Read from the `axis_correlations` view (Spearman rho over the frozen-regime encoders' aggregate
axes, level 'encoder', and over their complete cells, level 'cell'):
* AULC (area under the label-efficiency curve) vs relative-retention LE, each against
  full-label AUROC (the discrimination axis): a label-efficiency axis that tracks AUROC closely
  adds little that discrimination does not already carry;
* the largest absolute off-diagonal correlation among the four CRS axes (AULC is not an axis).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from crsbench.analyses.registry import AnalysisResult, register_analysis
from crsbench.core import AXES, FROZEN
from crsbench.warehouse.connection import Warehouse

CORRELATION_COLUMNS = ("level", "axis_a", "axis_b", "spearman_rho", "n")
SUMMARY_COLUMNS = ["level", "n", "rho_aulc_auroc", "rho_le_auroc", "rho_aulc_le", "max_abs_axis_rho", "max_axis_pair"]


def _rho(group: pd.DataFrame, a: str, b: str) -> float:
    hit = group[((group["axis_a"] == a) & (group["axis_b"] == b)) | ((group["axis_a"] == b) & (group["axis_b"] == a))]
    return float(hit["spearman_rho"].iloc[0]) if len(hit) else float("nan")


def construct_summary(correlations: pd.DataFrame) -> pd.DataFrame:
    """One row per level from axis_correlations rows (level, axis_a, axis_b, spearman_rho, n)."""
    rows = []
    for level, group in correlations.groupby("level", sort=True):
        axes = group[group["axis_a"].isin(AXES) & group["axis_b"].isin(AXES)]
        axes = axes.assign(abs_rho=axes["spearman_rho"].abs()).dropna(subset=["abs_rho"])
        top = axes.sort_values("abs_rho", ascending=False).head(1)
        rows.append(
            {
                "level": level,
                "n": int(group["n"].max()),
                "rho_aulc_auroc": _rho(group, "aulc", "discrimination"),
                "rho_le_auroc": _rho(group, "label_efficiency", "discrimination"),
                "rho_aulc_le": _rho(group, "aulc", "label_efficiency"),
                "max_abs_axis_rho": float(top["abs_rho"].iloc[0]) if len(top) else float("nan"),
                "max_axis_pair": f"{top['axis_a'].iloc[0]} / {top['axis_b'].iloc[0]}" if len(top) else "",
            }
        )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


DOCS = {
    "level": "Unit correlated: 'encoder' (aggregate axes of the frozen-regime encoders) or 'cell' (their complete "
    "cells).",
    "axis_a": "First axis of the pair: discrimination, calibration, label_efficiency, robustness or aulc (earlier "
    "in that order).",
    "axis_b": "Second axis of the pair (later in the same order).",
    "spearman_rho": "Spearman rank correlation between axis_a and axis_b over the units (view axis_correlations, "
    "frozen regime); [-1, 1], sign = direction of association.",
    "correlations.n": "Number of units with both axes present; count.",
    "summary.n": "Largest number of units behind any axis pair at this level; count.",
    "rho_aulc_auroc": "Spearman rho between AULC and discrimination (full-label AUROC); [-1, 1], near 1 = AULC "
    "adds little beyond AUROC.",
    "rho_le_auroc": "Spearman rho between label efficiency (relative retention) and discrimination (full-label "
    "AUROC); [-1, 1], near 1 = LE adds little beyond AUROC.",
    "rho_aulc_le": "Spearman rho between AULC and label efficiency (relative retention); [-1, 1].",
    "max_abs_axis_rho": "Largest |Spearman rho| between two of the four CRS axes (AULC is not an axis); [0, 1], "
    "lower = more distinct axes.",
    "max_axis_pair": "The axis pair with that largest |rho|, as 'axis_a / axis_b'; empty when no pair has a value.",
}


@register_analysis(
    "construct",
    columns=DOCS,
    section="§9.3, §11",
    params={},
    outputs={"correlations": CORRELATION_COLUMNS, "summary": SUMMARY_COLUMNS},
)
def run_construct(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Construct validity: AULC vs relative-retention LE against AUROC; largest axis correlation."""
    correlations = wh.sql(
        "select level, axis_a, axis_b, spearman_rho, n from axis_correlations "
        "where regime = ? order by level, axis_a, axis_b",
        [FROZEN],
    )
    summary = construct_summary(correlations)
    notes = []
    for row in summary.itertuples():
        closer = "AULC" if abs(row.rho_aulc_auroc) > abs(row.rho_le_auroc) else "relative retention"
        notes.append(
            f"{row.level} level (n = {row.n}): {closer} tracks full-label AUROC more closely; "
            f"largest |rho| between axes {row.max_abs_axis_rho:.3f} ({row.max_axis_pair})"
        )
    return AnalysisResult(tables={"correlations": correlations}, summary=summary, notes=notes)

"""E1: domain specialisation and shift retention (METHODS.md §12).

Per encoder with a matched domain (encoders.domain in derm/eye/rad): `in` = the
datasets whose domain equals the encoder's, `out` = every other dataset it was probed
on; AUROC_in / AUROC_out (and CRS_in / CRS_out) are the means over those cells, and
Dspec = AUROC_in - AUROC_out, Dood = CRS_in - CRS_out. Cell AUROC is the seed-mean
clean AUROC of the primary probe at full depth and full labels (the discrimination
axis); cell CRS comes from the `crs_cell` view of one reference panel (the given one, else the
latest frozen one, else cohort mode's `crs_cohort_cell`), frozen regime.

Shift retention, per encoder and shift pair: source AUROC (clean) vs target AUROC
(condition `shift`, same fits), the gap and the relative gap (source - target) /
source; grouped by pretraining scope, with Welch t-tests (scipy) between scopes and
between medical (broad_medical + specialty) and general encoders.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from crsbench.analyses.common import datasets_frame, encoders_frame, seed_metrics
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis
from crsbench.core import CLEAN, FROZEN, SHIFT
from crsbench.warehouse import panels
from crsbench.warehouse.connection import Warehouse

SCOPES: tuple[str, ...] = ("general", "broad_medical", "specialty")
MEDICAL = "medical"  # broad_medical and specialty together
NO_DOMAIN = {"none", "", None}

# The columns of each output part, in the order written (the declaration of `e1` below).
CELL_COLUMNS = ("encoder_id", "dataset_id", "auroc", "crs", "scope", "domain", "dataset_domain", "in_domain")
PER_ENCODER_COLUMNS = (
    "encoder_id",
    "scope",
    "domain",
    "in_datasets",
    "n_out",
    "auroc_in",
    "auroc_out",
    "crs_in",
    "crs_out",
)
SPECIALISATION_COLUMNS = ("panel", *PER_ENCODER_COLUMNS, "dspec", "dood")
SHIFT_COLUMNS = (
    "source_id",
    "target_id",
    "encoder_id",
    "scope",
    "source_auroc",
    "target_auroc",
    "gap",
    "relative_gap",
    "retention",
)
SCOPE_COLUMNS = ("source_id", "target_id", "scope", "n_encoders", "source_auroc", "target_auroc", "relative_gap")
WELCH_COLUMNS = (
    "source_id",
    "target_id",
    "metric",
    "group_a",
    "group_b",
    "n_a",
    "n_b",
    "mean_a",
    "mean_b",
    "t",
    "p_value",
)
SUMMARY_COLUMNS = ("encoder_id", "scope", "domain", "auroc_in", "auroc_out", "dspec", "crs_in", "crs_out", "dood")


def clean_cells(wh: Warehouse) -> pd.DataFrame:
    """Cell AUROC = the discrimination axis (seed-mean clean AUROC, logreg, full depth and labels)."""
    return wh.sql(
        "select encoder_id, dataset_id, discrimination as auroc from axes_cell "
        "where regime = ? order by encoder_id, dataset_id",
        [FROZEN],
    )


def cell_crs(wh: Warehouse, panel: str | None) -> tuple[str, pd.DataFrame]:
    """(panel used, per-cell CRS): the given panel, else the latest frozen one, else cohort mode."""
    panel = panel if panel is not None else panels.default_panel(wh)
    if panel is None:
        return panels.COHORT, wh.sql(
            "select encoder_id, dataset_id, crs from crs_cohort_cell where regime = ?", [FROZEN]
        )
    panels.get_panel(wh, panel)  # a clear error for an unknown name
    return panel, wh.sql(
        "select encoder_id, dataset_id, crs from crs_cell where panel = ? and regime = ?", [panel, FROZEN]
    )


def specialisation(
    cells: pd.DataFrame, encoders: pd.DataFrame, datasets: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-cell in/out flags and per-encoder Dspec / Dood from cells (auroc, crs columns)."""
    cells = cells.merge(encoders[["encoder_id", "scope", "domain"]], on="encoder_id", how="left").merge(
        datasets[["dataset_id", "domain"]].rename(columns={"domain": "dataset_domain"}), on="dataset_id", how="left"
    )
    cells = cells[~cells["domain"].isin(NO_DOMAIN) & cells["domain"].notna()].copy()
    cells["in_domain"] = cells["domain"] == cells["dataset_domain"]
    rows = []
    for (encoder_id, scope, domain), group in cells.groupby(["encoder_id", "scope", "domain"], sort=True):
        inside, outside = group[group["in_domain"]], group[~group["in_domain"]]
        row = {
            "encoder_id": encoder_id,
            "scope": scope,
            "domain": domain,
            "in_datasets": ",".join(sorted(inside["dataset_id"])),
            "n_out": len(outside),
            "auroc_in": inside["auroc"].mean(),
            "auroc_out": outside["auroc"].mean(),
            "crs_in": inside["crs"].mean(),
            "crs_out": outside["crs"].mean(),
        }
        rows.append(row)
    per_encoder = pd.DataFrame(rows, columns=list(PER_ENCODER_COLUMNS))
    per_encoder["dspec"] = per_encoder["auroc_in"] - per_encoder["auroc_out"]
    per_encoder["dood"] = per_encoder["crs_in"] - per_encoder["crs_out"]
    return cells[list(CELL_COLUMNS)].reset_index(drop=True), per_encoder


def shift_retention(wh: Warehouse, encoders: pd.DataFrame) -> pd.DataFrame:
    """Source (clean) vs target (shift) seed-mean AUROC per encoder and shift pair."""
    pairs = wh.sql("select distinct source_id, target_id from shift_pairs order by 1, 2")
    means = seed_metrics(wh, ("auroc",), depth=1.0, fraction=1.0, conditions=[CLEAN, SHIFT])
    source = means[(means["condition"] == CLEAN) & (means["eval_dataset_id"] == means["dataset_id"])]
    target = means[means["condition"] == SHIFT]
    merged = pairs.merge(
        source.rename(columns={"dataset_id": "source_id", "auroc": "source_auroc"})[
            ["encoder_id", "source_id", "source_auroc"]
        ],
        on="source_id",
    ).merge(
        target.rename(columns={"dataset_id": "source_id", "eval_dataset_id": "target_id", "auroc": "target_auroc"})[
            ["encoder_id", "source_id", "target_id", "target_auroc"]
        ],
        on=["encoder_id", "source_id", "target_id"],
    )
    merged = merged.merge(encoders[["encoder_id", "scope"]], on="encoder_id", how="left")
    merged["gap"] = merged["source_auroc"] - merged["target_auroc"]
    merged["relative_gap"] = merged["gap"] / merged["source_auroc"]
    merged["retention"] = merged["target_auroc"] / merged["source_auroc"]
    return merged[list(SHIFT_COLUMNS)].sort_values(["source_id", "target_id", "encoder_id"]).reset_index(drop=True)


def _groups(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    groups = {scope: frame[frame["scope"] == scope] for scope in SCOPES}
    groups[MEDICAL] = frame[frame["scope"].isin(["broad_medical", "specialty"])]
    return groups


def by_scope(shift: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean retention per scope group, and Welch t-tests between groups, per shift pair."""
    summary, tests = [], []
    comparisons = [*itertools.combinations(SCOPES, 2), ("general", MEDICAL)]
    for (source_id, target_id), pair in shift.groupby(["source_id", "target_id"], sort=True):
        groups = _groups(pair)
        for name, group in groups.items():
            summary.append(
                {
                    "source_id": source_id,
                    "target_id": target_id,
                    "scope": name,
                    "n_encoders": len(group),
                    "source_auroc": group["source_auroc"].mean(),
                    "target_auroc": group["target_auroc"].mean(),
                    "relative_gap": group["relative_gap"].mean(),
                }
            )
        for metric in ("target_auroc", "relative_gap"):
            for a, b in comparisons:
                x, y = groups[a][metric].dropna(), groups[b][metric].dropna()
                t, p = stats.ttest_ind(x, y, equal_var=False) if len(x) >= 2 and len(y) >= 2 else (np.nan, np.nan)
                tests.append(
                    {
                        "source_id": source_id,
                        "target_id": target_id,
                        "metric": metric,
                        "group_a": a,
                        "group_b": b,
                        "n_a": len(x),
                        "n_b": len(y),
                        "mean_a": x.mean(),
                        "mean_b": y.mean(),
                        "t": float(t),
                        "p_value": float(p),
                    }
                )
    return pd.DataFrame(summary, columns=list(SCOPE_COLUMNS)), pd.DataFrame(tests, columns=list(WELCH_COLUMNS))


_SCOPE = "Encoder's pretraining scope: general, broad_medical or specialty."


_CELL_AUROC = "seed-mean clean full-label AUROC of the logreg probe at depth 1.0 on the dataset's own test split"


DOCS = {
    "scope": _SCOPE,
    "domain": "Encoder's matched clinical domain: derm, eye or rad (encoders without one are left out).",
    "auroc": f"Cell AUROC = the discrimination axis: {_CELL_AUROC}; [0, 1], higher is better.",
    "crs": "Per-dataset CRS of the cell from crs_cell of the panel (crs_cohort_cell in cohort mode), frozen regime; "
    "[0, 1], higher is better.",
    "dataset_domain": "Clinical domain of the dataset: derm, eye, rad or none.",
    "in_domain": "True when the dataset's domain is the encoder's (an in-domain cell).",
    "panel": "Reference panel whose crs_cell gives the cell CRS ('cohort' = cohort mode, crs_cohort_cell, when no "
    "panel is frozen).",
    "in_datasets": "In-domain datasets (domain equal to the encoder's), comma-separated and sorted.",
    "n_out": "Number of the encoder's out-of-domain cells; count.",
    "auroc_in": "AUROC_in: mean cell AUROC over the in-domain datasets; [0, 1]; NULL without one.",
    "auroc_out": "AUROC_out: mean cell AUROC over the out-of-domain datasets; [0, 1]; NULL without one.",
    "crs_in": "CRS_in: mean per-dataset CRS over the in-domain cells; [0, 1].",
    "crs_out": "CRS_out: mean per-dataset CRS over the out-of-domain cells; [0, 1].",
    "dspec": "Specialisation Dspec = auroc_in - auroc_out; AUROC points, positive = better in its own domain.",
    "dood": "Dood = crs_in - crs_out; CRS points, positive = more reliable in its own domain.",
    "source_id": "Shift pair source: the dataset the probe was trained on.",
    "target_id": "Shift pair target: evaluated with condition shift by the source-trained probe (same fits).",
    "source_auroc": "Seed-mean clean AUROC on the source's own test split (logreg, depth 1.0, full labels); [0, 1].",
    "target_auroc": "Seed-mean AUROC on the target (condition shift, the same fits); [0, 1].",
    "gap": "source_auroc - target_auroc; AUROC points, positive = lost under shift.",
    "relative_gap": "(source_auroc - target_auroc) / source_auroc; fraction of the source AUROC lost, lower is better.",
    "retention": "target_auroc / source_auroc; ratio, 1 = nothing lost, higher is better.",
    "shift_scope.scope": "Scope group: general, broad_medical, specialty, or medical (broad_medical and specialty "
    "together).",
    "n_encoders": "Encoders of the group with this shift pair; count.",
    "shift_scope.source_auroc": "Mean source_auroc over the group's encoders; [0, 1].",
    "shift_scope.target_auroc": "Mean target_auroc over the group's encoders; [0, 1].",
    "shift_scope.relative_gap": "Mean relative_gap over the group's encoders; fraction, lower is better.",
    "metric": "Per-encoder quantity compared (a column of analysis_e1_shift): target_auroc or relative_gap.",
    "group_a": "First group of the comparison: general or broad_medical.",
    "group_b": "Second group: broad_medical, specialty, or medical (broad_medical and specialty together).",
    "n_a": "Encoders of group_a with a value; count.",
    "n_b": "Encoders of group_b with a value; count.",
    "mean_a": "Mean of metric over group_a's encoders.",
    "mean_b": "Mean of metric over group_b's encoders.",
    "t": "Welch t statistic of group_a against group_b (scipy.stats.ttest_ind, unequal variances); NaN when a group "
    "has fewer than 2 encoders.",
    "p_value": "Two-sided Welch t-test p-value; [0, 1]; NaN when a group has fewer than 2 encoders.",
}


@register_analysis(
    "e1",
    columns=DOCS,
    section="§12",
    params={
        "panel": Param(
            None,
            "Reference panel whose per-dataset CRS to use (default: the latest frozen panel, else cohort mode).",
            str,
        )
    },
    outputs={
        "cells": CELL_COLUMNS,
        "specialisation": SPECIALISATION_COLUMNS,
        "shift": SHIFT_COLUMNS,
        "shift_scope": SCOPE_COLUMNS,
        "welch": WELCH_COLUMNS,
        "summary": SUMMARY_COLUMNS,
    },
)
def run_e1(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Specialisation (Dspec, Dood) and shift retention by pretraining scope."""
    notes: list[str] = []
    encoders, datasets = encoders_frame(wh), datasets_frame(wh)
    panel, crs = cell_crs(wh, params["panel"])
    if panel == panels.COHORT:
        notes.append("no frozen reference panel: Dood uses cohort-mode CRS (crs_cohort_cell)")
    cells = clean_cells(wh).merge(crs, on=["encoder_id", "dataset_id"], how="left")
    cells, per_encoder = specialisation(cells, encoders, datasets)
    per_encoder.insert(0, "panel", panel)
    if per_encoder.empty:
        notes.append("no encoder with a matched domain (derm/eye/rad) has probe runs")
    shift = shift_retention(wh, encoders)
    scope_summary, welch = by_scope(shift)
    if shift.empty:
        notes.append("no shift pair with clean and shift runs: shift retention is empty")
    main = welch[(welch["metric"] == "target_auroc") & (welch["group_b"] == MEDICAL)]
    for row in main.itertuples():
        test = (
            "not testable (needs >= 2 encoders per group)" if np.isnan(row.p_value) else f"Welch p = {row.p_value:.4g}"
        )
        notes.append(
            f"{row.source_id}->{row.target_id} target AUROC, medical {row.mean_b:.3f} "
            f"(n={row.n_b}) vs general {row.mean_a:.3f} (n={row.n_a}): {test}"
        )
    summary = per_encoder[list(SUMMARY_COLUMNS)]
    return AnalysisResult(
        tables={
            "cells": cells,
            "specialisation": per_encoder,
            "shift": shift,
            "shift_scope": scope_summary,
            "welch": welch,
        },
        summary=summary,
        notes=notes,
    )

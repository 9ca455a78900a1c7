"""Estimator substitution (METHODS.md §11): is the CRS ranking an artefact of the chosen estimators?

Each variant swaps one estimator, recomputes the axes with the one definition
(`fn_axes_cell` over the seed means of metrics_seed, `fn_axes_aggregate`), recomputes the
anchors over the panel members (`fn_anchors`; the frozen anchors belong to the default axes)
and scores with `fn_crs_scores`, all variants in one query with grp = variant:
* calibration_adaptive_ece: calibration = 1 - adaptive ECE (15 equal-mass bins);
* calibration_brier:        calibration = 1 - Brier score;
* discrimination_qwk:       on ordinal datasets (datasets.task = 'ordinal'), discrimination =
                            the seed-mean quadratic weighted kappa (clean, full labels);
* discrimination_ordinal_mae: there, discrimination = 1 - MAE / (K - 1), K = the number of grades,
                            so lower MAE is higher and a perfect grader scores 1 (the min-max
                            normalisation makes only the direction matter within a dataset);
                            label efficiency and robustness stay AUROC-based in both;
* robustness_corruption_only: robustness over the perturbed conditions only (the protocol's 15; no shift term).
`default` is the same pipeline with nothing swapped (equal to crs_encoder while the panel's runs
are those it was frozen on). Each variant's ranking of the members is compared with the
default's: Kendall tau-b, Top-3 (fn_rank_agreement), mean and max |CRS change|.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from crsbench.analyses.columns import rank_agreement_docs
from crsbench.analyses.registry import AnalysisResult, panel_param, register_analysis
from crsbench.analyses.validity.criterion import GLOBAL, agreement, registered, resolve_population, score_groups
from crsbench.core import AXES, FROZEN, PRIMARY_PROBE
from crsbench.warehouse.connection import Warehouse

# metric whose seed mean stands in for ECE in the calibration axis -> its metrics_seed column
CALIBRATION_COLUMNS = {"ece": "ece_mean", "ece_adaptive": "ece_adaptive_mean", "brier": "brier_mean"}
ORDINAL_METRICS = ("qwk", "ordinal_mae")
DEFAULT = "default"


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    calibration: str = "ece"  # a key of CALIBRATION_COLUMNS
    shift: bool = True  # the shift term in robustness
    ordinal: str | None = None  # discrimination on ordinal datasets: None (AUROC) or ORDINAL_METRICS


VARIANTS: tuple[Variant, ...] = (
    Variant(DEFAULT, "AUROC, 1 - ECE, relative retention, corruption + shift robustness"),
    Variant("calibration_adaptive_ece", "calibration = 1 - adaptive ECE", calibration="ece_adaptive"),
    Variant("calibration_brier", "calibration = 1 - Brier", calibration="brier"),
    Variant("discrimination_qwk", "ordinal discrimination = QWK", ordinal="qwk"),
    Variant("discrimination_ordinal_mae", "ordinal discrimination = 1 - MAE/(K-1)", ordinal="ordinal_mae"),
    Variant("robustness_corruption_only", "robustness without the shift term", shift=False),
)

_SEED_MEANS_SQL = """
    select encoder_id, dataset_id, eval_dataset_id, regime, probe, depth, label_fraction, condition,
           auroc_mean, ece_mean, ece_adaptive_mean, brier_mean, qwk_mean, ordinal_mae_mean, pretrained
    from metrics_seed
    where probe = ? and depth = 1.0 and regime = ? and list_contains(?, encoder_id)
"""
_ORDINAL_SQL = """
    select m.encoder_id, m.dataset_id, m.qwk_mean as qwk,
           1 - m.ordinal_mae_mean / nullif(len(d.label_names) - 1, 0) as ordinal_mae
    from metrics_seed m
    join datasets d using (dataset_id)
    where d.task = 'ordinal' and m.probe = ? and m.depth = 1.0 and m.regime = ?
      and m.condition = 'clean' and m.eval_dataset_id = m.dataset_id and m.label_fraction = 1.0
      and list_contains(?, m.encoder_id)
"""
# Part `variants`, in the order written; the summary is the same less the description.
VARIANT_COLUMNS = (
    "variant",
    "description",
    "n",
    "kendall_tau",
    "spearman_rho",
    "top3_overlap",
    "top3_unchanged",
    "mean_abs_crs_change",
    "max_abs_crs_change",
)
CELL_COLUMNS = ["grp", "encoder_id", "dataset_id", "regime", *AXES, "aulc", "complete", "pretrained"]


def variant_cells(wh: Warehouse, members: Sequence[str], variants: Sequence[Variant]) -> pd.DataFrame:
    """Cell axes of the members under each variant (grp = variant name), via fn_axes_cell."""
    seed = wh.sql(_SEED_MEANS_SQL, [PRIMARY_PROBE, FROZEN, list(members)])
    frames = []
    for v in variants:
        frame = seed.assign(grp=v.name, ece_mean=seed[CALIBRATION_COLUMNS[v.calibration]])
        frames.append(frame if v.shift else frame[frame["condition"] != "shift"])
    stacked = pd.concat(frames, ignore_index=True).drop(
        columns=["ece_adaptive_mean", "brier_mean", "qwk_mean", "ordinal_mae_mean"]
    )
    with registered(wh, {"seed_means": stacked}) as n:
        cells = wh.sql(f"select * from fn_axes_cell('{n['seed_means']}')")
    ordinal = wh.sql(_ORDINAL_SQL, [PRIMARY_PROBE, FROZEN, list(members)])
    for v in variants:
        if v.ordinal is None:
            continue
        values = ordinal.set_index(["encoder_id", "dataset_id"])[v.ordinal]
        keyed = pd.MultiIndex.from_frame(cells[["encoder_id", "dataset_id"]])
        rows = (cells["grp"] == v.name) & keyed.isin(values.index)
        keys = pd.MultiIndex.from_frame(cells.loc[rows, ["encoder_id", "dataset_id"]])
        cells.loc[rows, "discrimination"] = values.reindex(keys).to_numpy(float)
        # A cell whose ordinal metric is missing loses its discrimination: incomplete, not imputed.
        cells.loc[rows, "complete"] = cells.loc[rows, "complete"] & cells.loc[rows, "discrimination"].notna()
    return cells[CELL_COLUMNS]


def score_cells(wh: Warehouse, cells: pd.DataFrame, per_dataset: bool = True) -> pd.DataFrame:
    """CRS per (grp, scope, encoder) for scope = 'global' (fn_axes_aggregate) and, if
    per_dataset, each dataset; every row a member, anchors over the members per (grp, scope).
    Adds the raw discrimination (the scope's AUROC unless an ordinal variant swapped it)."""
    with registered(wh, {"cells": cells}) as n:
        aggregate = wh.sql(f"select * from fn_axes_aggregate('{n['cells']}')")
    parts = [aggregate.assign(scope=GLOBAL)]
    if per_dataset:
        parts.append(cells[cells["complete"]].rename(columns={"dataset_id": "scope"}))
    axes = pd.concat(parts, ignore_index=True)
    axes = axes.assign(in_panel=True)
    scores = score_groups(wh, axes)
    return scores.merge(
        axes[["grp", "scope", "encoder_id", "discrimination"]], on=["grp", "scope", "encoder_id"], how="left"
    )


def compare_variants(wh: Warehouse, scores: pd.DataFrame, variants: Sequence[Variant]) -> pd.DataFrame:
    """Each variant's global ranking vs the default's: tau, Top-3, |CRS change|."""
    glob = scores[scores["scope"] == GLOBAL]
    reference = glob[glob["grp"] == DEFAULT].set_index("encoder_id")["crs"]
    others = glob[glob["grp"] != DEFAULT].assign(auroc=lambda f: f["encoder_id"].map(reference))
    ranks = agreement(wh, others)
    change = (
        others.assign(d=(others["crs"] - others["auroc"]).abs())
        .groupby("grp")["d"]
        .agg(mean_abs_crs_change="mean", max_abs_crs_change="max")
    )
    table = pd.DataFrame([{"variant": v.name, "description": v.description} for v in variants if v.name != DEFAULT])
    table = table.merge(ranks.rename(columns={"grp": "variant"}), on="variant", how="left").merge(
        change.rename_axis("variant").reset_index(), on="variant", how="left"
    )
    table["top3_unchanged"] = table["top3_overlap"] == 1.0
    return table[list(VARIANT_COLUMNS)]


DOCS = {
    "variant": "Estimator variant: calibration_adaptive_ece, calibration_brier, discrimination_qwk, "
    "discrimination_ordinal_mae or robustness_corruption_only.",
    "scores.variant": "Estimator variant: default (nothing swapped), calibration_adaptive_ece, calibration_brier, "
    "discrimination_qwk, discrimination_ordinal_mae or robustness_corruption_only.",
    "description": "What the variant swaps in the axes.",
    "n": "Members ranked both under the variant and under the default estimators; count.",
    **rank_agreement_docs("the members' CRS ranking under the variant", "the ranking under the default estimators"),
    "top3_unchanged": "True when the variant's top 3 is the default's (top3_overlap = 1), in any order.",
    "mean_abs_crs_change": "Mean over the members of |CRS under the variant - CRS under the default|; CRS points.",
    "max_abs_crs_change": "Largest |CRS under the variant - CRS under the default| over the members; CRS points.",
    "crs": "Aggregate CRS under the variant, anchors recomputed over the members; [0, 1], higher is better.",
    "rank": "CRS rank under the variant: 1 + the number of members with a strictly higher CRS (ties share a rank).",
    "crs_default": "Aggregate CRS under the default estimators (nothing swapped); [0, 1], higher is better.",
    "crs_change": "crs - crs_default; CRS points, positive = the variant scores the encoder higher.",
    "discrimination": "Raw aggregate discrimination under the variant: mean over complete cells of the clean "
    "full-label AUROC, or on ordinal datasets QWK / 1 - MAE/(K-1) in those variants; higher is better.",
}


@register_analysis(
    "estimators",
    columns=DOCS,
    section="§11",
    params={"panel": panel_param("members are compared")},
    outputs={
        "variants": VARIANT_COLUMNS,
        "scores": ("variant", "encoder_id", "crs", "rank", "crs_default", "crs_change", "discrimination"),
        "summary": tuple(c for c in VARIANT_COLUMNS if c != "description"),
    },
)
def run_estimators(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Estimator substitution: adaptive ECE, Brier, QWK, ordinal MAE, corruption-only robustness."""
    panel, members = resolve_population(wh, params["panel"])
    cells = variant_cells(wh, members, VARIANTS)
    scores = score_cells(wh, cells)
    table = compare_variants(wh, scores, VARIANTS)
    glob = scores[scores["scope"] == GLOBAL].rename(columns={"grp": "variant"})
    glob = glob.merge(
        glob.loc[glob["variant"] == DEFAULT, ["encoder_id", "crs"]], on="encoder_id", suffixes=("", "_default")
    )
    glob["crs_change"] = glob["crs"] - glob["crs_default"]
    glob["rank"] = glob.groupby("variant")["crs"].rank(method="min", ascending=False)
    glob = glob[["variant", "encoder_id", "crs", "rank", "crs_default", "crs_change", "discrimination"]]
    notes = [f"panel {panel}: {len(members)} members; anchors recomputed over them per variant"]
    ordinal = wh.sql(_ORDINAL_SQL, [PRIMARY_PROBE, FROZEN, list(members)])
    if ordinal.empty:
        notes.append("no ordinal dataset (datasets.task = 'ordinal'): the QWK and MAE variants equal the default")
    for metric in ORDINAL_METRICS:
        missing = int(ordinal[metric].isna().sum()) if not ordinal.empty else 0
        if missing:
            notes.append(f"{missing} ordinal cell(s) without {metric}: incomplete in that variant")
    return AnalysisResult(
        tables={"variants": table, "scores": glob.reset_index(drop=True)},
        summary=table.drop(columns="description"),
        notes=notes,
    )

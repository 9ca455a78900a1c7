"""Column descriptions of the bootstrap (METHODS.md §10) and validation analyses (§11) tables;
see `columns.py`. Keys are a column name, or 'part.column' where one part differs."""

from __future__ import annotations

_POINT = "replicate 0: every seed and test image once"
_AUROC = "aggregate AUROC (the discrimination axis: mean over complete cells of the seed-mean clean full-label AUROC)"


def _percentile(which: str, of: str) -> str:
    return f"{which} of {of} over replicates 1..R (numpy linear percentile)"


BOOTSTRAP = {
    "panel": "Reference panel whose members were bootstrapped ('cohort' = every frozen-regime encoder with "
    "aggregate axes, when no panel is frozen); anchors and Pareto reference are recomputed over its members "
    "in every replicate.",
    "crs": f"Point estimate of the aggregate CRS ({_POINT}; equals crs_encoder while the panel's runs are those it "
    "was frozen on); [0, 1], higher is better.",
    "crs_median": _percentile("Median (50th percentile)", "the aggregate CRS") + "; [0, 1].",
    "crs_lo": "Lower end of the 95 % percentile bootstrap interval of the encoder's CRS: "
    + _percentile("the 2.5th percentile", "its CRS")
    + "; [0, 1].",
    "crs_hi": "Upper end of the 95 % percentile bootstrap interval of the encoder's CRS: "
    + _percentile("the 97.5th percentile", "its CRS")
    + "; [0, 1].",
    "auroc": f"Point estimate ({_POINT}) of the {_AUROC}; [0, 1], higher is better.",
    "auroc_lo": "Lower end of the 95 % percentile bootstrap interval of the aggregate AUROC: "
    + _percentile("the 2.5th percentile", "it")
    + "; [0, 1].",
    "auroc_hi": "Upper end of the 95 % percentile bootstrap interval of the aggregate AUROC: "
    + _percentile("the 97.5th percentile", "it")
    + "; [0, 1].",
    "rank": "CRS rank at the point estimate: 1 + the number of members with a strictly higher CRS "
    "(tied encoders share a rank; 1 = best).",
    "mean_rank": "Mean CRS rank over the replicates 1..R in which the encoder has a CRS; ranks, 1 = best.",
    "p_rank1": "P(rank 1): share of replicates 1..R in which the encoder ranks first (ties included); [0, 1].",
    "p_top3": "P(top 3): share of replicates 1..R in which the encoder's CRS rank is 3 or better; [0, 1].",
    "n_replicates": "Number of replicates 1..R in which the encoder has a CRS; count.",
    "leading_tier": "True for the leading tier: P(top 3) >= tier_threshold (default 0.5), or the highest P(rank 1) "
    "of the panel (so the tier is never empty).",
    "encoder_a": "Encoder of the pair with the higher point CRS (ties broken by encoder_id).",
    "encoder_b": "Encoder of the pair with the lower or equal point CRS.",
    "diff": "Point CRS difference crs(encoder_a) - crs(encoder_b) at replicate 0; CRS points, >= 0 by the pair's order.",
    "diff_median": _percentile("Median", "the paired difference crs(encoder_a) - crs(encoder_b)") + "; CRS points.",
    "diff_lo": "Lower end of the 95 % interval of the paired difference crs(encoder_a) - crs(encoder_b): "
    + _percentile("the 2.5th percentile", "it")
    + "; above 0 = the pair is separated.",
    "diff_hi": "Upper end of the 95 % interval of the paired difference crs(encoder_a) - crs(encoder_b): "
    + _percentile("the 97.5th percentile", "it")
    + ".",
    "p_a_better": "Share of replicates 1..R in which encoder_a's CRS is strictly higher than encoder_b's; [0, 1].",
    "replicate": "Bootstrap replicate: 0 = the point estimate (every seed and test image once), 1..R = resampled.",
    "replicates.crs": "Aggregate CRS of the encoder in this replicate, anchors and Pareto reference recomputed over "
    "the members; [0, 1], higher is better.",
    "replicates.auroc": f"The encoder's {_AUROC} in this replicate; [0, 1], higher is better.",
    "replicates.rank": "CRS rank within the replicate: 1 + the number of members with a strictly higher CRS "
    "(ties share the better rank); NULL when the encoder has no CRS.",
}

CONSTRUCT = {
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


def _agreement(ranking: str, reference: str) -> dict[str, str]:
    """kendall_tau / spearman_rho / top3_overlap of `ranking` against `reference` (fn_rank_agreement)."""
    return {
        "kendall_tau": f"Kendall tau-b between {ranking} and {reference}, ties corrected; [-1, 1], 1 = same order.",
        "spearman_rho": f"Spearman rho between {ranking} and {reference}; [-1, 1], 1 = same order.",
        "top3_overlap": f"|top 3 of {ranking} and top 3 of {reference}| / min(3, n), ties at the cut broken by "
        "encoder_id; [0, 1], 1 = same top 3.",
    }


ESTIMATORS = {
    "variant": "Estimator variant: calibration_adaptive_ece, calibration_brier, discrimination_qwk, "
    "discrimination_ordinal_mae or robustness_corruption_only.",
    "scores.variant": "Estimator variant: default (nothing swapped), calibration_adaptive_ece, calibration_brier, "
    "discrimination_qwk, discrimination_ordinal_mae or robustness_corruption_only.",
    "description": "What the variant swaps in the axes.",
    "n": "Members ranked both under the variant and under the default estimators; count.",
    **_agreement("the members' CRS ranking under the variant", "the ranking under the default estimators"),
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

_EXTERNAL_RESULT = {
    "n": "Members with both a predictor and an outcome value; count.",
    **_agreement("the predictor ranking", "the outcome ranking"),
    "winner_recovered": "True when the predictor's top encoder (ties broken by encoder_id) is among the best by the "
    "outcome (ties count as recovered).",
    "predicted_winner": "Encoder ranked first by the predictor (ties broken by encoder_id).",
    "actual_winner": "Encoder(s) with the best outcome value, comma-separated when tied.",
}
EXTERNAL = {
    **_EXTERNAL_RESULT,
    "held_out": "Dataset left out: predictors use the members' other datasets, the outcome is this dataset's ranking.",
    "lodo.predictor": "Predictor ranking: crs (the members' CRS over their other datasets, anchors over the members) "
    "or auroc (their aggregate AUROC over those datasets).",
    "lodo.outcome": "Ranking predicted: auroc (the held-out dataset's AUROC) or crs (its per-dataset CRS, anchors "
    "over the members observed on it).",
    "source": "Shift pair source: the dataset the probe was trained on.",
    "target": "Shift pair target: the dataset evaluated with condition shift (source-trained probe, no retraining); "
    "its AUROC is the outcome ranking.",
    "shift.predictor": "Predictor ranking: crs_no_shift (aggregate CRS with corruption-only robustness), "
    "crs_no_shift_source (that CRS on the source dataset alone) or auroc_source (the source AUROC).",
    "part": "Where the row comes from: 'lodo (mean over held-out datasets)', or a shift pair as 'source -> target'.",
    "summary.predictor": "Predictor ranking, as in analysis_external_lodo or analysis_external_shift.",
    "summary.outcome": "Outcome ranking: auroc or crs of the held-out dataset (lodo), target_auroc (shift).",
    "summary.spearman_rho": "Spearman rho between predictor and outcome rankings: mean over the held-out datasets "
    "(lodo) or the pair's own (shift); [-1, 1].",
    "summary.top3_overlap": "Top-3 overlap of predictor and outcome rankings: mean over the held-out datasets (lodo) "
    "or the pair's own (shift); [0, 1].",
    "summary.winner_recovered": "Share of held-out datasets whose winner the predictor recovered (lodo), or 1 / 0 "
    "for a shift pair; [0, 1].",
}

_DISPLACEMENT = "|CRS after - CRS before| of the base encoders"
INSERTION = {
    "mode": "cohort (anchors and Pareto reference recomputed over everyone scored so far) or fixed (the base's "
    "anchors and the base as Pareto reference, where the displacement is promised to be 0).",
    "trial": "Trial number, 0..trials - 1: one random base and insertion order.",
    "step": "Insertion step within the trial, 1..k (k = min(3, n - 2) encoders inserted one at a time).",
    "inserted": "Encoder inserted at this step.",
    "n_base": "Base members whose displacement is measured; count (n - k).",
    "mean_displacement": f"Mean over the base of {_DISPLACEMENT} at this insertion; CRS points, 0 = unmoved.",
    "median_displacement": f"Median over the base of {_DISPLACEMENT} at this insertion; CRS points.",
    "max_displacement": f"Largest {_DISPLACEMENT} at this insertion; CRS points.",
    "n_insertions": "Insertions (trials x steps) in this mode; count.",
    "n_scores": "Displacements measured in this mode (insertions x base encoders); count.",
    "mean": f"Mean of {_DISPLACEMENT} over every insertion of this mode; CRS points.",
    "median": f"Median of {_DISPLACEMENT} over every insertion of this mode; CRS points.",
    "max": f"Largest {_DISPLACEMENT} over every insertion of this mode; CRS points, exactly 0 in fixed mode.",
}

STABILITY = {
    "grp": "Sub-panel key: 'loo:<member>' or 'random<size>:<i>'.",
    "kind": "Sub-panel kind: leave_one_out, or random_<size> (random sub-panels of that many members).",
    "size": "Members in the sub-panel(s); count.",
    "left_out": "The member left out (leave_one_out rows); NULL for random sub-panels.",
    "n": "Members ranked both against this sub-panel and against the full panel; count.",
    **_agreement(
        "the members' CRS ranking against this sub-panel (anchors and Pareto reference over it)",
        "their ranking against the full panel",
    ),
    "n_panels": "Sub-panels of this kind; count.",
    "mean_tau": "Mean kendall_tau over the sub-panels of this kind; [-1, 1].",
    "min_tau": "Smallest kendall_tau over the sub-panels of this kind; [-1, 1].",
    "mean_top3": "Mean top3_overlap over the sub-panels of this kind; [0, 1].",
    "share_top3_unchanged": "Share of the sub-panels whose top 3 is the full panel's (top3_overlap = 1); [0, 1].",
}

_AXIS = "Weight of the {} axis in the ideal-point term; [0, 1], the four sum to 1 (default 0.25)."
_TERM = "Weight of the {} term of the CRS; [0, 1], the three sum to 1 (default {})."
WEIGHTS = {
    "grp": "Weighting key: 'alternative', 'axis:<i>' or 'component:<i>'.",
    "family": "alternative (axis weights 0.30, 0.30, 0.15, 0.25), axis (Dirichlet axis weights, default terms) or "
    "component (Dirichlet term weights, equal axes).",
    "w_d": _AXIS.format("discrimination"),
    "w_c": _AXIS.format("calibration"),
    "w_le": _AXIS.format("label-efficiency"),
    "w_r": _AXIS.format("robustness"),
    "w_dom": _TERM.format("Pareto dominance", "0.60"),
    "w_ideal": _TERM.format("ideal-point", "0.25"),
    "w_worst": _TERM.format("worst-axis", "0.15"),
    "n": "Members ranked under both this weighting and the default weights; count.",
    **_agreement(
        "the members' CRS ranking under this weighting (the panel's global anchors)",
        "their ranking under the default weights",
    ),
    "top3_unchanged": "True when this weighting's top 3 is the default's (top3_overlap = 1), in any order.",
    "n_weightings": "Weightings of this family; count.",
    "mean_tau": "Mean kendall_tau over the weightings of this family; [-1, 1].",
    "min_tau": "Smallest kendall_tau over the weightings of this family; [-1, 1].",
    "share_top3_unchanged": "Share of the weightings of this family that keep the default's top 3; [0, 1].",
}

VALIDATION_COLUMNS: dict[str, dict[str, str]] = {
    "bootstrap": BOOTSTRAP,
    "construct": CONSTRUCT,
    "estimators": ESTIMATORS,
    "external": EXTERNAL,
    "insertion": INSERTION,
    "stability": STABILITY,
    "weights": WEIGHTS,
}

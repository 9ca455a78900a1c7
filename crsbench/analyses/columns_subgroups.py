"""Column descriptions of the tables of the analyses beyond the paper's protocol: subgroups and
operating points (METHODS.md §16); see `columns.py`. Their per-run rows live in the SQL tables
subgroup_metrics, subgroup_gaps and operating_points, described by their own COMMENTs."""

from __future__ import annotations

SUBGROUPS = {
    "key": "Metadata key the groups come from (image_metadata.key).",
    "metric": "auroc, ece, brier or accuracy.",
    "n_runs": "Runs (seeds) averaged; count.",
    "worst": "Seed mean of the worst subgroup's metric (lowest AUROC or accuracy, highest ECE or Brier).",
    "gap": "Seed mean of the best - worst gap over the scored subgroups; >= 0, lower is fairer.",
    "gap_lo": "Seed mean of the gap's 2.5th bootstrap percentile (image-level replicates).",
    "gap_hi": "Seed mean of the gap's 97.5th bootstrap percentile (image-level replicates).",
}

OPERATING_POINTS = {
    "rule": "Threshold rule: youden or sens90 (binary, multilabel), argmax or youden_ovr (multiclass, ordinal).",
    "condition_kind": "clean (own test split), perturbed (the perturbed conditions together) or shift.",
    "n_runs": "Runs averaged (their classes or labels averaged too); count.",
    "balanced_accuracy": "Mean balanced accuracy (sensitivity + specificity) / 2 at the calibration-chosen threshold.",
    "sensitivity": "Mean sensitivity at the calibration-chosen threshold.",
    "specificity": "Mean specificity at the calibration-chosen threshold.",
    "transfer_gap": "Mean threshold transfer gap: balanced accuracy at the test-optimal threshold minus at the "
    "calibration-chosen one; lower is better (>= 0 except for argmax, whose calls are no threshold).",
}

SUBGROUP_COLUMNS = {"subgroups": SUBGROUPS, "operating_points": OPERATING_POINTS}

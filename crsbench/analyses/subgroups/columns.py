"""Column descriptions of the tables of the analyses beyond the paper's protocol: subgroups and
operating points (METHODS.md §16); see `columns.py`. Their per-run rows live in the SQL tables
subgroup_metrics, subgroup_gaps and operating_points, described by their own COMMENTs."""

from __future__ import annotations

SUBGROUPS = {
    "key": "Metadata key the groups come from (image_metadata.key).",
    "metric": "auroc, ece, brier or accuracy.",
    "n_runs": "Runs (seeds) averaged; count.",
    "worst_group": "The subgroup (metadata value) worst in most of the runs (ties: the first in sorted order).",
    "worst": "Seed mean of the worst subgroup's metric (lowest AUROC or accuracy, highest ECE or Brier).",
    "gap": "Seed mean of the best - worst gap over the scored subgroups; >= 0, lower is fairer.",
    "gap_lo": "Seed mean of the gap's 2.5th bootstrap percentile (image-level replicates).",
    "gap_hi": "Seed mean of the gap's 97.5th bootstrap percentile (image-level replicates).",
}

OPERATING_POINTS = {
    "rule": "Threshold rule: youden or sens90 (binary, multilabel), argmax or youden_ovr (multiclass, ordinal), "
    "or fixed (the user's threshold, any task).",
    "condition_kind": "clean (own test split), perturbed (the perturbed conditions together) or shift.",
    "n_runs": "Runs averaged (their classes or labels averaged too); count.",
    "balanced_accuracy": "Mean balanced accuracy (sensitivity + specificity) / 2 at the calibration-chosen threshold.",
    "sensitivity": "Mean sensitivity at the calibration-chosen threshold.",
    "specificity": "Mean specificity at the calibration-chosen threshold.",
    "transfer_gap": "Mean threshold transfer gap: balanced accuracy at the test-optimal threshold minus at the "
    "calibration-chosen one; lower is better (>= 0 except for argmax, whose calls are no threshold).",
    "subgroups.run_id": "The run whose stored predictions were thresholded (runs.run_id).",
    "subgroups.probe": "Probe of the run (logreg by default).",
    "subgroups.label_idx": "Class or label index the calls are for (one-vs-rest above 2 classes).",
    "subgroups.label": "Class or label name the calls are for.",
    "subgroups.threshold": "Threshold applied (p >= threshold called positive); NULL for argmax.",
    "subgroups.key": "Metadata key the groups come from (image_metadata.key).",
    "subgroups.value": "The group: the key's value; images without a value are in no group of that key.",
    "subgroups.n_images": "Evaluated images of the group; count.",
    "subgroups.n_positive": "Positive images (of this class or label) in the group; count.",
    "subgroups.sensitivity": "TP / (TP + FN) within the group at the threshold; NULL without positives.",
    "subgroups.specificity": "TN / (TN + FP) within the group at the threshold; NULL without negatives.",
}

SUBGROUP_COLUMNS = {"subgroups": SUBGROUPS, "operating_points": OPERATING_POINTS}

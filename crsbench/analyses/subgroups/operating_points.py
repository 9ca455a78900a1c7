"""`crsbench analyze operating_points`: thresholds chosen on the calibration split, applied to the
test split, the perturbed conditions and the shift targets (METHODS.md §16.3). No refit: each fit's
stored calib predictions choose the thresholds, its other runs' stored predictions are scored.

Rules (`rules`, default all that apply to the task; `threshold=T` adds `fixed`):
* binary (2-class multiclass, class 1 is positive) and multilabel (each label): `youden` (Youden's
  J) and `sens90` (the most specific threshold reaching `sensitivity` on calib, default 0.90);
* multiclass and ordinal (> 2 classes), per class one-vs-rest: `argmax` (the class is called when
  it is the top class; no threshold) and `youden_ovr` (Youden's J on that class's probability);
* any task: `fixed` (p >= the user's `threshold`, per class one-vs-rest above 2 classes).

Per (run, rule, class/label): sensitivity, specificity, balanced accuracy, PPV, NPV at the chosen
threshold, and the threshold transfer gap = the balanced accuracy at the test-optimal threshold
(Youden on the evaluated images themselves) minus the one reached. Rows go to the table
operating_points (sql/views/282; a rerun replaces them); the summary averages them per encoder,
eval dataset, kind of condition and rule. Part `subgroups` holds sensitivity and specificity per
metadata group (`keys`, default all) of the clean and shift runs (`operating_subgroups.py`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.common import label_targets, load_predictions
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis
from crsbench.analyses.side_tables import replace_rows
from crsbench.analyses.subgroups import operating_subgroups as og
from crsbench.analyses.subgroups.subgroups import RUN_COLUMNS, check_keys, listed
from crsbench.analyses.subgroups.thresholds import (
    RATES,
    best_balanced_accuracy,
    rates,
    sensitivity_threshold,
    youden_threshold,
)
from crsbench.core import FROZEN, PRIMARY_PROBE, CrsbenchError
from crsbench.ingest.types import Task
from crsbench.warehouse.connection import Warehouse

BINARY_RULES = ("youden", "sens90")
MULTICLASS_RULES = ("argmax", "youden_ovr")
FIXED = "fixed"
RULES = (*BINARY_RULES, *MULTICLASS_RULES, FIXED)
POINT_COLUMNS = [
    *RUN_COLUMNS,
    "fit_id",
    "rule",
    "label_idx",
    "label",
    "threshold",
    *RATES,
    "optimal_threshold",
    "optimal_balanced_accuracy",
    "transfer_gap",
]
SUMMARY_COLUMNS = [
    "encoder_id",
    "eval_dataset_id",
    "condition_kind",
    "rule",
    "n_runs",
    "balanced_accuracy",
    "sensitivity",
    "specificity",
    "transfer_gap",
]
SUBGROUP_COLUMNS = [*RUN_COLUMNS, "rule", "label_idx", "label", "threshold", *og.GROUP_COLUMNS]


def rules_for(task: Task, n_labels: int) -> tuple[str, ...]:
    return BINARY_RULES if task is Task.MULTILABEL or n_labels == 2 else MULTICLASS_RULES


def _select(wh: Warehouse, params: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs to score: in the grid, not calib; the calib runs of their fits)."""
    runs = wh.sql(
        f"select {', '.join(RUN_COLUMNS)}, fit_id from runs_grid where in_grid and probe = ? and regime = ? "
        "and condition <> 'calib' order by encoder_id, dataset_id, depth, label_fraction, seed, condition, "
        "eval_dataset_id",
        [str(params["probe"]), FROZEN],
    )
    for column, value in (("depth", params["depth"]), ("label_fraction", params["fraction"])):
        if str(value) != "all":
            runs = runs[np.isclose(runs[column].to_numpy(float), float(value))]
    if runs.empty:
        raise CrsbenchError(
            f"no {params['probe']} runs at depth {params['depth']}, fraction {params['fraction']}: "
            "run 'crsbench probe' first"
        )
    calib = wh.sql(
        "select run_id, fit_id from runs where condition = 'calib' and probe = ? and regime = ?",
        [str(params["probe"]), FROZEN],
    ).drop_duplicates("fit_id")
    calib = calib[calib["fit_id"].isin(set(runs["fit_id"]))]
    return runs.reset_index(drop=True), calib.reset_index(drop=True)


def _check_calib_splits(wh: Warehouse, datasets: list[str]) -> None:
    counts = wh.sql(
        "select d.dataset_id, count(i.image_id) filter (where i.split = 'calib') as n from datasets d "
        "left join images i on i.dataset_id = d.dataset_id where list_contains(?, d.dataset_id) group by all order by 1",
        [datasets],
    )
    for row in counts.itertuples():
        if row.n == 0:
            raise CrsbenchError(
                f"dataset {row.dataset_id} has no 'calib' split: operating points are chosen on the "
                "calibration split (re-ingest it with calib images, e.g. a split column)"
            )


def _rules(params: Mapping[str, Any]) -> list[str]:
    rules = listed(params["rules"])
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise CrsbenchError(f"unknown threshold rule {unknown[0]!r} (rules: {', '.join(RULES)})")
    target = float(params["sensitivity"])
    if not 0.0 < target <= 1.0:
        raise CrsbenchError(f"sensitivity must be in (0, 1], got {target}")
    if params["threshold"] is None:
        if FIXED in rules:
            raise CrsbenchError("rule fixed needs a threshold: add --threshold 0.3 (calls p >= 0.3 positive)")
        return rules or [r for r in RULES if r != FIXED]
    threshold = float(params["threshold"])
    if not 0.0 <= threshold <= 1.0:
        raise CrsbenchError(f"threshold must be a probability in [0, 1], got {params['threshold']}")
    return [*(rules or [r for r in RULES if r != FIXED]), *([] if FIXED in rules else [FIXED])]


def choose(rule: str, positive: np.ndarray, score: np.ndarray, sensitivity: float, fixed: float = math.nan) -> float:
    if rule in ("youden", "youden_ovr"):
        return youden_threshold(positive, score)
    if rule == "sens90":
        return sensitivity_threshold(positive, score, sensitivity)
    if rule == FIXED:
        return fixed
    return math.nan  # argmax: no threshold


DOCS = {
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


@register_analysis(
    "operating_points",
    columns=DOCS,
    section="§16",
    params={
        "probe": Param(PRIMARY_PROBE, "Probe whose runs are thresholded."),
        "depth": Param(1.0, "Relative depth of the runs: 0.25, 0.5, 0.75 or 1.0 (--set depth=all for every one)."),
        "fraction": Param(1.0, "Label fraction of the runs (--set fraction=all for every one)."),
        "rules": Param(
            None,
            "Threshold rule (repeatable): youden, sens90, argmax, youden_ovr, fixed (default all but fixed).",
            list[str],
            "--rule",
        ),
        "sensitivity": Param(0.90, "Target sensitivity of rule sens90; (0, 1]."),
        "threshold": Param(None, "Fixed probability threshold, p >= T called positive (adds rule fixed).", float),
        "keys": Param(None, "Metadata key to form subgroups by (repeatable; default none).", list[str], "--key"),
    },
    outputs={"subgroups": SUBGROUP_COLUMNS, "summary": SUMMARY_COLUMNS},
)
def operating_points(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Thresholds chosen on calib (Youden, sensitivity >= 0.90, argmax), applied to test, perturbed and shift."""
    wanted = _rules(params)
    runs, calib = _select(wh, params)
    _check_calib_splits(wh, sorted(runs["dataset_id"].unique()))
    notes: list[str] = []
    lacking = sorted(set(runs["fit_id"]) - set(calib["fit_id"]))
    if lacking:
        notes.append(f"{len(lacking)} fits have no stored calib predictions; their runs are skipped")
    scoring = _scoring(wh, params, runs, calib, wanted)
    calib_of = dict(zip(calib["fit_id"], calib["run_id"], strict=True))
    rows: list[dict[str, Any]] = []
    group_rows: list[dict[str, Any]] = []
    for fit_id, fit_runs in runs[runs["fit_id"].isin(set(calib_of))].groupby("fit_id", sort=False):
        fit_points, fit_groups = _fit_points(scoring, fit_runs, calib_of[fit_id])
        rows += fit_points
        group_rows += fit_groups
    points = pd.DataFrame(rows, columns=POINT_COLUMNS)
    if points.empty:
        raise CrsbenchError(f"no operating points: rules {', '.join(wanted)} apply to none of the evaluated tasks")
    replace_rows(wh, {"operating_points": points})
    notes.append(f"stored: operating_points ({len(points)} rows, {points['run_id'].nunique()} runs)")
    by_group = pd.DataFrame(group_rows, columns=SUBGROUP_COLUMNS)
    notes += og.fixed_lines(by_group)
    if by_group.empty:
        notes.append("no image metadata on the evaluated datasets: no per-subgroup rates")
    return AnalysisResult({"subgroups": by_group}, _summary(points), notes)


@dataclasses.dataclass(frozen=True)
class _Scoring:
    """What scoring reads: stored predictions, labels, subgroup metadata and the rules' settings."""

    predictions: dict[int, tuple[np.ndarray, np.ndarray]]  # key -> (row_index, probs)
    key_of: dict[str, int]  # run_id -> its key in `predictions`
    targets: dict[str, tuple[Task, list[str], np.ndarray, np.ndarray]]  # dataset -> label_targets
    groups: dict[str, dict[str, np.ndarray]]  # eval dataset -> metadata key -> value per row_index
    wanted: list[str]  # rules asked for
    sensitivity: float  # target of rule sens90
    fixed: float  # threshold of rule fixed (NaN without one)


def _scoring(
    wh: Warehouse, params: Mapping[str, Any], runs: pd.DataFrame, calib: pd.DataFrame, wanted: list[str]
) -> _Scoring:
    """Load the calib runs' and the scored runs' predictions (only of fits with a calib run) and their labels."""
    keyed = pd.concat(
        [calib[["run_id"]].assign(kind="calib"), runs[runs["fit_id"].isin(set(calib["fit_id"]))][["run_id"]]],
        ignore_index=True,
    ).drop_duplicates("run_id")
    keyed.insert(0, "key", np.arange(len(keyed), dtype=np.int64))
    predictions = load_predictions(wh, keyed)
    key_of = dict(zip(keyed["run_id"], keyed["key"], strict=True))
    targets = {d: label_targets(wh, d) for d in sorted(set(runs["dataset_id"]) | set(runs["eval_dataset_id"]))}
    keys = listed(params["keys"])
    if keys:
        check_keys(wh, keys, sorted(set(runs["eval_dataset_id"])))
    groups = {d: og.metadata_by_row(wh, d, keys) for d in sorted(set(runs["eval_dataset_id"]))}
    fixed = math.nan if params["threshold"] is None else float(params["threshold"])
    return _Scoring(predictions, key_of, targets, groups, wanted, float(params["sensitivity"]), fixed)


def _fit_points(
    s: _Scoring, fit_runs: pd.DataFrame, calib_run: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(operating points, subgroup rates) of one fit's runs, at thresholds its calib run chose."""
    task, names, truth, _ = s.targets[str(fit_runs["dataset_id"].iloc[0])]
    rules = [r for r in [*rules_for(task, len(names)), FIXED] if r in s.wanted]
    # Two classes: class 1 is the positive one; otherwise every class or label, one-vs-rest.
    columns = [1] if task is not Task.MULTILABEL and len(names) == 2 else list(range(len(names)))
    calib_rows, calib_probs = s.predictions[s.key_of[calib_run]]
    chosen = {
        (rule, j): choose(rule, truth[calib_rows, j], calib_probs[:, j], s.sensitivity, s.fixed)
        for rule in rules
        for j in columns
    }
    rows: list[dict[str, Any]] = []
    group_rows: list[dict[str, Any]] = []
    for run in fit_runs.itertuples(index=False):
        if s.key_of.get(run.run_id) not in s.predictions:
            continue
        eval_rows, probs = s.predictions[s.key_of[run.run_id]]
        eval_truth = s.targets[run.eval_dataset_id][2][eval_rows]
        top = probs.argmax(axis=1)
        base = {c: getattr(run, c) for c in [*RUN_COLUMNS, "fit_id"]}
        for j in columns:
            positive, score = eval_truth[:, j], probs[:, j]
            opt_t, opt_ba = best_balanced_accuracy(positive, score)
            for rule in rules:
                t = chosen[(rule, j)]
                called = top == j if rule == "argmax" else score >= t
                r = rates(positive, called) if rule == "argmax" or not math.isnan(t) else dict.fromkeys(RATES, math.nan)
                point = {**base, "rule": rule, "label_idx": j, "label": names[j], "threshold": t}
                if run.condition in og.SUBGROUP_CONDITIONS and (rule == "argmax" or not math.isnan(t)):
                    group_rows += og.group_rows(point, s.groups[run.eval_dataset_id], eval_rows, positive, called)
                rows.append(
                    {
                        **point,
                        **r,
                        "optimal_threshold": opt_t,
                        "optimal_balanced_accuracy": opt_ba,
                        "transfer_gap": opt_ba - r["balanced_accuracy"],
                    }
                )
    return rows, group_rows


def condition_kind(condition: pd.Series) -> pd.Series:
    return condition.where(condition.isin(["clean", "shift"]), "perturbed")


def _summary(points: pd.DataFrame) -> pd.DataFrame:
    frame = points.assign(condition_kind=condition_kind(points["condition"]))
    grouped = frame.groupby(["encoder_id", "eval_dataset_id", "condition_kind", "rule"], sort=True)
    out = grouped.agg(
        n_runs=("run_id", "nunique"),
        balanced_accuracy=("balanced_accuracy", "mean"),
        sensitivity=("sensitivity", "mean"),
        specificity=("specificity", "mean"),
        transfer_gap=("transfer_gap", "mean"),
    ).reset_index()
    return out[SUMMARY_COLUMNS]

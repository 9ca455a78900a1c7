"""E2: post-hoc recalibration fitted on the calib split, applied to test (METHODS.md §12).

For each primary fit (logreg, frozen, full depth, full labels, one seed) every method in
`crsbench.probes.calibration` is fitted on that fit's stored `calib` predictions and
applied to the same fit's test predictions under every stored condition: clean, the 15
corruptions and, where present, the shift target. ECE, Brier and AUROC are recomputed
before and after with `crsbench.probes.metrics`. Cell results average each metric over
seeds first; the AUROC change and the (relative) ECE reduction are taken between those
seed means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from crsbench.analyses.columns import in_parts
from crsbench.analyses.common import dataset_task, fit_predictions, label_matrix, labels_of, load_runs
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis
from crsbench.core import CALIB, CLEAN, SHIFT, CrsbenchError
from crsbench.ingest.types import Task
from crsbench.probes import metrics
from crsbench.probes.calibration import CALIBRATORS, make_calibrator
from crsbench.warehouse.connection import Warehouse

SCORES = {"ece": metrics.ece, "brier": metrics.brier, "auroc": metrics.macro_auroc}
DEFAULT_METHODS = ",".join(CALIBRATORS)


def condition_kind(condition: str) -> str:
    if condition == CLEAN:
        return "clean"
    return "shift" if condition == SHIFT else "corruption"


def parse_methods(value: str | list[str]) -> list[str]:
    methods = [m.strip() for m in value.split(",")] if isinstance(value, str) else list(value)
    unknown = [m for m in methods if m not in CALIBRATORS]
    if unknown or not methods:
        raise CrsbenchError(
            f"unknown recalibration method(s) {', '.join(unknown) or '(none)'}; "
            f"expected some of: {', '.join(CALIBRATORS)}"
        )
    return methods


Evaluation = tuple[np.ndarray, np.ndarray]  # (y, p)
FIT_COLUMNS = [
    "fit_id",
    "encoder_id",
    "dataset_id",
    "seed",
    "eval_dataset_id",
    "condition",
    "method",
    *(f"{s}_{w}" for s in SCORES for w in ("before", "after")),
    "top_label_changed",
]


def recalibrate_fit(
    calib: Evaluation,
    evaluations: Mapping[tuple[str, str], Evaluation],
    task: Task,
    methods: list[str],
    reliability: list[pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Fit each method on calib (y, p); score each (condition, eval_dataset_id) before and after.

    With `reliability`, also append the reliability-diagram bins (clean and shift conditions,
    method `uncalibrated` for before) so the report can draw diagrams without refitting.
    """
    rows = []
    before = {cond: {name: fn(y, p, task) for name, fn in SCORES.items()} for cond, (y, p) in evaluations.items()}
    diagrammed = [cond for cond in evaluations if cond[0] in RELIABILITY_CONDITIONS]
    if reliability is not None:
        for cond in diagrammed:
            reliability.append(_bins(cond, UNCALIBRATED, *evaluations[cond], task))
    for method in methods:
        calibrator = make_calibrator(method, task).fit(calib[1], calib[0])
        for cond, (y, p) in evaluations.items():
            q = np.clip(calibrator.transform(p), 0.0, 1.0)
            if reliability is not None and cond in diagrammed:
                reliability.append(_bins(cond, method, y, q, task))
            row: dict[str, Any] = {"eval_dataset_id": cond[1], "condition": cond[0], "method": method}
            for name, fn in SCORES.items():
                row[f"{name}_before"] = before[cond][name]
                row[f"{name}_after"] = fn(y, q, task)
            row["top_label_changed"] = (
                float(np.mean(p.argmax(axis=1) != q.argmax(axis=1))) if task is not Task.MULTILABEL else np.nan
            )
            rows.append(row)
    return pd.DataFrame(rows)


UNCALIBRATED = "uncalibrated"
RELIABILITY_CONDITIONS = (CLEAN, SHIFT)
RELIABILITY_COLUMNS = [
    "encoder_id",
    "dataset_id",
    "eval_dataset_id",
    "condition",
    "method",
    "bin",
    "confidence",
    "accuracy",
    "count",
]


def _bins(cond: tuple[str, str], method: str, y: np.ndarray, p: np.ndarray, task: Task) -> pd.DataFrame:
    frame = metrics.reliability_bins(y, p, task)
    frame.insert(0, "method", method)
    frame.insert(0, "condition", cond[0])
    frame.insert(0, "eval_dataset_id", cond[1])
    return frame


def reliability_cells(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Reliability diagrams per (encoder, dataset, condition, method), bins summed over seeds."""
    if not parts:
        return pd.DataFrame(columns=RELIABILITY_COLUMNS)
    keys = ["encoder_id", "dataset_id", "eval_dataset_id", "condition", "method", "bin"]
    sums = (
        pd.concat(parts, ignore_index=True)
        .groupby(keys, sort=True)[["confidence_sum", "outcome_sum", "count"]]
        .sum()
        .reset_index()
    )
    sums = sums[sums["count"] > 0]
    sums["confidence"] = sums["confidence_sum"] / sums["count"]
    sums["accuracy"] = sums["outcome_sum"] / sums["count"]
    return sums[RELIABILITY_COLUMNS].reset_index(drop=True)


class _Labels:
    """Label lookups per dataset, loaded once."""

    def __init__(self, wh: Warehouse) -> None:
        self.wh = wh
        self.tasks: dict[str, tuple[Task, int]] = {}
        self.matrices: dict[str, pd.DataFrame] = {}

    def task(self, dataset_id: str) -> tuple[Task, int]:
        if dataset_id not in self.tasks:
            self.tasks[dataset_id] = dataset_task(self.wh, dataset_id)
        return self.tasks[dataset_id]

    def of(self, dataset_id: str, image_ids: list[str]) -> np.ndarray:
        task, n_labels = self.task(dataset_id)
        if dataset_id not in self.matrices:
            self.matrices[dataset_id] = label_matrix(self.wh, dataset_id, n_labels)
        return labels_of(self.matrices[dataset_id], image_ids, task, dataset_id)


def fit_rows(
    wh: Warehouse, methods: list[str], reliability: list[pd.DataFrame] | None = None
) -> tuple[pd.DataFrame, list[str]]:
    """Per (fit, condition, method) before/after scores for every primary fit with calib predictions."""
    runs = load_runs(wh, depth=1.0, fraction=1.0)
    fits = (
        runs[runs["condition"] == CALIB][["fit_id", "encoder_id", "dataset_id", "seed"]]
        .drop_duplicates("fit_id")
        .sort_values(["encoder_id", "dataset_id", "seed"])
    )
    missing = runs.loc[~runs["fit_id"].isin(fits["fit_id"]), "fit_id"].nunique()
    notes = [f"{missing} primary fit(s) have no calib predictions and were skipped"] if missing else []
    labels, frames = _Labels(wh), []
    for fit in fits.itertuples(index=False):
        preds = fit_predictions(wh, fit.fit_id)
        if (CALIB, fit.dataset_id) not in preds:
            notes.append(f"fit {fit.fit_id}: calib run without stored predictions, skipped")
            continue
        task, _ = labels.task(fit.dataset_id)
        ids, p = preds.pop((CALIB, fit.dataset_id))
        calib = (labels.of(fit.dataset_id, ids), np.clip(p, 0.0, 1.0))
        evaluations = {key: (labels.of(key[1], ids), np.clip(p, 0.0, 1.0)) for key, (ids, p) in preds.items()}
        if not evaluations:
            continue
        bins: list[pd.DataFrame] | None = [] if reliability is not None else None
        frame = recalibrate_fit(calib, evaluations, task, methods, bins)
        if reliability is not None and bins:
            tagged = pd.concat(bins, ignore_index=True)
            tagged.insert(0, "dataset_id", fit.dataset_id)
            tagged.insert(0, "encoder_id", fit.encoder_id)
            reliability.append(tagged)
        frame.insert(0, "seed", fit.seed)
        frame.insert(0, "dataset_id", fit.dataset_id)
        frame.insert(0, "encoder_id", fit.encoder_id)
        frame.insert(0, "fit_id", fit.fit_id)
        frames.append(frame)
    per_fit = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=FIT_COLUMNS)
    return per_fit[FIT_COLUMNS], notes


def cell_means(per_fit: pd.DataFrame) -> pd.DataFrame:
    """Seed means per (encoder, dataset, condition, method), then the before/after contrasts."""
    keys = ["encoder_id", "dataset_id", "eval_dataset_id", "condition", "method"]
    values = [f"{s}_{w}" for s in SCORES for w in ("before", "after")] + ["top_label_changed"]
    grouped = per_fit.groupby(keys, sort=True)
    cells = grouped[values].mean()
    cells["n_seeds"] = grouped["seed"].nunique()
    cells = cells.reset_index()
    cells.insert(3, "kind", cells["condition"].map(condition_kind))
    cells["ece_reduction"] = cells["ece_before"] - cells["ece_after"]
    cells["relative_ece_reduction"] = cells["ece_reduction"] / cells["ece_before"]
    cells["brier_change"] = cells["brier_after"] - cells["brier_before"]
    cells["auroc_change"] = cells["auroc_after"] - cells["auroc_before"]
    return cells


def method_summary(cells: pd.DataFrame) -> pd.DataFrame:
    grouped = cells.groupby(["method", "kind"], sort=True)
    out = grouped.agg(
        n_cells=("encoder_id", "size"),
        ece_before=("ece_before", "mean"),
        ece_after=("ece_after", "mean"),
        relative_ece_reduction=("relative_ece_reduction", "mean"),
        brier_change=("brier_change", "mean"),
        auroc_change=("auroc_change", "mean"),
        max_abs_auroc_change=("auroc_change", lambda s: s.abs().max()),
    )
    return out.reset_index()


CELL_COLUMNS = (
    "encoder_id",
    "dataset_id",
    "eval_dataset_id",
    "kind",
    "condition",
    "method",
    "ece_before",
    "ece_after",
    "brier_before",
    "brier_after",
    "auroc_before",
    "auroc_after",
    "top_label_changed",
    "n_seeds",
    "ece_reduction",
    "relative_ece_reduction",
    "brier_change",
    "auroc_change",
)
SUMMARY_COLUMNS = (
    "method",
    "kind",
    "n_cells",
    "ece_before",
    "ece_after",
    "relative_ece_reduction",
    "brier_change",
    "auroc_change",
    "max_abs_auroc_change",
)


_E2_SCORES = {
    "ece": (
        "ECE",
        "15 equal-width bins, top-label (mean per-label binary ECE for multilabel); [0, 1], lower is better",
    ),
    "brier": ("Brier score", "[0, 2] multiclass, [0, 1] multilabel; lower is better"),
    "auroc": ("macro AUROC", "[0, 1], higher is better"),
}


_E2_WHEN = {"before": "before recalibration", "after": "after recalibration"}


_E2_FITS = {
    f"{s}_{w}": f"{name} of the fit's test predictions {when}; {unit}."
    for s, (name, unit) in _E2_SCORES.items()
    for w, when in _E2_WHEN.items()
}


_E2_SEED_MEANS = {
    f"{s}_{w}": f"Seed mean of the {name} of the test predictions {when}; {unit}."
    for s, (name, unit) in _E2_SCORES.items()
    for w, when in _E2_WHEN.items()
}


_E2_CELL_MEANS = {  # the summary averages ECE only; Brier and AUROC appear as changes
    f"ece_{w}": f"Mean over the cells of the seed-mean {_E2_SCORES['ece'][0]} {when}; {_E2_SCORES['ece'][1]}."
    for w, when in _E2_WHEN.items()
}


DOCS = {
    "fit_id": "The recalibrated probe fit (runs.fit_id): logreg, frozen, depth 1.0, full labels, one seed.",
    "condition": "Condition of the test predictions: clean, <perturbation>-s<severity 1..3> or shift.",
    "method": "Recalibration map fitted on the fit's calib predictions: temperature, vector, isotonic or dirichlet.",
    "reliability.method": "Recalibration map (temperature, vector, isotonic, dirichlet), or uncalibrated for the "
    "predictions before recalibration.",
    "kind": "Condition kind: clean, corruption (one of the perturbations) or shift.",
    **_E2_SEED_MEANS,
    **in_parts(["fits"], _E2_FITS),
    **in_parts(["summary"], _E2_CELL_MEANS),
    "fits.top_label_changed": "Share of test images whose argmax class the map changes; [0, 1]; NaN for multilabel.",
    "top_label_changed": "Seed mean of the share of test images whose argmax class the map changes; [0, 1]; NaN for "
    "multilabel.",
    "n_seeds": "Seeds (fits) averaged in the cell; count.",
    "ece_reduction": "ece_before - ece_after (seed means); ECE points, positive = recalibration helped.",
    "relative_ece_reduction": "ece_reduction / ece_before; fraction of the ECE removed, negative = worse.",
    "brier_change": "Change of the Brier score (mean squared error of the predicted probabilities) that "
    "recalibration brings: brier_after - brier_before, seed means; negative = recalibration helped.",
    "auroc_change": "auroc_after - auroc_before (seed means); AUROC points, 0 = ranking of the images unchanged.",
    "summary.relative_ece_reduction": "Mean relative_ece_reduction over the cells; fraction of the ECE removed.",
    "summary.brier_change": "Mean over the cells of the Brier-score change brier_after - brier_before (mean "
    "squared error of the probabilities); negative = recalibration helped.",
    "summary.auroc_change": "Mean auroc_change over the cells; AUROC points.",
    "n_cells": "Cells (encoder, dataset, eval dataset, condition) of this method and kind; count.",
    "max_abs_auroc_change": "Largest |auroc_change| over the cells; AUROC points.",
    "reliability.condition": "Condition diagrammed: clean or shift.",
    "bin": "Confidence bin 0..14: bin i holds confidences in [i/15, (i+1)/15), the last also 1.0.",
    "confidence": "Mean confidence in the bin (max p; p(label = 1) pooled over labels for multilabel), sums over "
    "seeds divided by count; [0, 1].",
    "accuracy": "Observed frequency in the bin: share correct (argmax = label), or share positive for multilabel; "
    "[0, 1], equal to confidence when calibrated.",
    "count": "Predictions in the bin summed over seeds (image x label pairs for multilabel); count; empty bins are "
    "left out.",
}


@register_analysis(
    "e2",
    columns=DOCS,
    section="§12",
    params={
        "methods": Param(
            DEFAULT_METHODS, "Recalibration maps, comma-separated: temperature, vector, isotonic, dirichlet."
        )
    },
    outputs={
        "fits": FIT_COLUMNS,
        "cells": CELL_COLUMNS,
        "reliability": RELIABILITY_COLUMNS,
        "summary": SUMMARY_COLUMNS,
    },
)
def run_e2(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Recalibration (temperature, vector, isotonic, Dirichlet) fitted on calib, scored on test."""
    methods = parse_methods(params["methods"])
    # Many tiny L-BFGS problems: BLAS threads only contend with each other here.
    bins: list[pd.DataFrame] = []
    with threadpool_limits(limits=1, user_api="blas"):
        per_fit, notes = fit_rows(wh, methods, bins)
    if per_fit.empty:
        notes.append("no primary fit with calib predictions: nothing to recalibrate")
        return AnalysisResult(
            tables={
                "fits": per_fit,
                "cells": pd.DataFrame(columns=list(CELL_COLUMNS)),
                "reliability": reliability_cells([]),
            },
            summary=pd.DataFrame(columns=list(SUMMARY_COLUMNS)),
            notes=notes,
        )
    cells = cell_means(per_fit)
    return AnalysisResult(
        tables={"fits": per_fit, "cells": cells, "reliability": reliability_cells(bins)},
        summary=method_summary(cells),
        notes=notes,
    )

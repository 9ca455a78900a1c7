"""Metrics of one run's stored predictions on the subgroups of one metadata key (METHODS.md §16.2).

Every metric is scored under the image-level bootstrap's integer weights (`resample.draw_images`,
column 0 = every image once), so the gaps get intervals from the very draws `bootstrap_intervals`
uses, and nothing is refitted:

* AUROC: macro one-vs-rest over the classes (labels) that have at least `min_positives`
  positives and `min_negatives` negatives inside the group (the other columns are too small
  there to score); a group with no such column is *insufficient*: reported, never scored.
* ECE (15 equal-width bins), Brier and accuracy: as the run metrics (`probes.metrics`), on the
  group's images.
* Gap per metric: best group minus worst group, as a non-negative spread (AUROC and accuracy:
  max - min; ECE and Brier, lower better: max - min too), over the sufficient groups; the worst
  group is the lowest AUROC/accuracy or the highest ECE/Brier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crsbench.ingest.types import Task
from crsbench.probes.metrics import onehot
from crsbench.probes.weighted_metrics import RunScorer, weighted_accuracy, weighted_brier

METRICS: tuple[str, ...] = ("auroc", "ece", "brier", "accuracy")
HIGHER_IS_BETTER = {"auroc": True, "ece": False, "brier": False, "accuracy": True}


@dataclass(frozen=True)
class GroupScore:
    value: str  # the subgroup (metadata value)
    n_images: int
    n_columns: int  # classes/labels scored by AUROC in this group
    sufficient: bool
    scores: dict[str, np.ndarray]  # metric -> (R + 1,) replicate values (column 0: point estimate)


def scored_columns(target: np.ndarray, min_positives: int, min_negatives: int) -> np.ndarray:
    """Columns of a 0/1 target matrix with enough positives and negatives."""
    pos = target.sum(axis=0)
    neg = target.shape[0] - pos
    return np.flatnonzero((pos >= min_positives) & (neg >= min_negatives))


def score_group(
    value: str,
    y: np.ndarray,
    p: np.ndarray,
    task: Task,
    weights: np.ndarray,
    min_positives: int,
    min_negatives: int,
) -> GroupScore:
    """One group's metrics under weights (n_group, R + 1)."""
    target = y if task is Task.MULTILABEL else onehot(y, p.shape[1])
    cols = scored_columns(target, min_positives, min_negatives)
    width = weights.shape[1]
    if len(cols) == 0:
        nan = np.full(width, np.nan)
        return GroupScore(value, len(p), 0, False, {m: nan for m in METRICS})
    auroc = RunScorer(target[:, cols].astype(np.int64), p[:, cols], Task.MULTILABEL).auroc(weights)
    with np.errstate(invalid="ignore", divide="ignore"):  # a replicate may draw no image of the group: NaN
        ece = RunScorer(y, p, task, auroc=False, ece=True).ece(weights)
    scores = {
        "auroc": auroc,
        "ece": ece,
        "brier": weighted_brier(y, p, task, weights),
        "accuracy": weighted_accuracy(y, p, task, weights),
    }
    return GroupScore(value, len(p), len(cols), True, scores)


def score_groups(
    groups: np.ndarray,
    y: np.ndarray,
    p: np.ndarray,
    task: Task,
    weights: np.ndarray,
    min_positives: int,
    min_negatives: int,
) -> list[GroupScore]:
    """Every group of one key (images without a value for the key, None, belong to none)."""
    present = np.array([g is not None for g in groups], dtype=bool)
    out = []
    for value in sorted({str(g) for g in groups[present]}):
        rows = np.flatnonzero(present & (groups == value))
        out.append(score_group(value, y[rows], p[rows], task, weights[rows], min_positives, min_negatives))
    return out


@dataclass(frozen=True)
class Gap:
    metric: str
    n_groups: int
    worst_group: str | None
    worst: float
    best: float
    gap: float
    lo: float
    hi: float
    replicates: int


def gaps(scores: Sequence[GroupScore]) -> list[Gap]:
    """Per metric: worst group, best - worst spread and its 95 % percentile interval over the
    replicates 1..R (a replicate counts when at least two groups have a value in it)."""
    scored = [s for s in scores if s.sufficient]
    out = []
    for metric in METRICS:
        if len(scored) < 2:
            out.append(Gap(metric, len(scored), None, np.nan, np.nan, np.nan, np.nan, np.nan, 0))
            continue
        table = np.vstack([s.scores[metric] for s in scored])  # (groups, R + 1)
        point = table[:, 0]
        order = np.argsort(point if HIGHER_IS_BETTER[metric] else -point, kind="stable")
        worst_i, best_i = int(order[0]), int(order[-1])
        rep = table[:, 1:]
        counted = np.sum(~np.isnan(rep), axis=0) >= 2
        kept = rep[:, counted]  # every kept column has >= 2 values: nanmax/nanmin do not warn
        spread = np.nanmax(kept, axis=0) - np.nanmin(kept, axis=0) if counted.any() else np.empty(0)
        lo, hi = np.percentile(spread, [2.5, 97.5]) if len(spread) else (np.nan, np.nan)
        out.append(
            Gap(
                metric,
                len(scored),
                scored[worst_i].value,
                float(point[worst_i]),
                float(point[best_i]),
                float(abs(point[best_i] - point[worst_i])),
                float(lo),
                float(hi),
                len(spread),
            )
        )
    return out

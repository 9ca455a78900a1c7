"""Decision thresholds on one score column and the binary rates at them (METHODS.md §16.3).

A threshold t calls an image positive when its score is >= t. Candidates are the observed
scores, so every distinct operating point of the sample is reachable.

* Youden: the t maximising J = sensitivity + specificity - 1; ties go to the highest t.
* Sensitivity target (default 0.90): the highest t whose sensitivity reaches the target, i.e.
  the ceil(target * n_pos)-th largest positive score (the most specific such threshold).
* Best balanced accuracy of a sample: (1 + max J) / 2 over every threshold, the benchmark the
  threshold transfer gap is measured against.
"""

from __future__ import annotations

import math

import numpy as np

RATES: tuple[str, ...] = ("sensitivity", "specificity", "balanced_accuracy", "ppv", "npv")


def _youden_curve(positive: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(candidate thresholds descending, J at each as an exact integer numerator).

    J = tp/P - fp/N = (tp*N - fp*P) / (P*N): the numerator is compared in integers, because
    tpr - fpr in floating point breaks exact ties (10/33 at two thresholds) by rounding, which
    would pick the lower threshold against the documented rule (ties go to the highest).
    """
    pos = np.sort(score[positive])
    neg = np.sort(score[~positive])
    candidates = np.unique(score)[::-1]
    tp = (len(pos) - np.searchsorted(pos, candidates, side="left")).astype(np.int64)
    fp = (len(neg) - np.searchsorted(neg, candidates, side="left")).astype(np.int64)
    return candidates, tp * len(neg) - fp * len(pos)


def defined(positive: np.ndarray) -> bool:
    """A column with both outcomes: thresholds and rates are defined."""
    n_pos = int(positive.sum())
    return 0 < n_pos < len(positive)


def youden_threshold(positive: np.ndarray, score: np.ndarray) -> float:
    if not defined(positive):
        return math.nan
    candidates, j = _youden_curve(positive, score)
    return float(candidates[int(np.argmax(j))])  # first maximum = highest threshold


def sensitivity_threshold(positive: np.ndarray, score: np.ndarray, target: float = 0.90) -> float:
    if not defined(positive):
        return math.nan
    pos = np.sort(score[positive])[::-1]
    k = max(1, math.ceil(target * len(pos) - 1e-9))
    return float(pos[k - 1])


def best_balanced_accuracy(positive: np.ndarray, score: np.ndarray) -> tuple[float, float]:
    """(test-optimal threshold by Youden, balanced accuracy there)."""
    if not defined(positive):
        return math.nan, math.nan
    candidates, j = _youden_curve(positive, score)
    best = int(np.argmax(j))
    n_pos = int(positive.sum())
    youden_j = max(int(j[best]), 0) / (n_pos * (len(positive) - n_pos))
    return float(candidates[best]), float((1.0 + youden_j) / 2.0)


def rates(positive: np.ndarray, called: np.ndarray) -> dict[str, float]:
    """Sensitivity, specificity, balanced accuracy, PPV and NPV of calls against the truth (NaN where undefined)."""
    tp = float(np.sum(called & positive))
    fp = float(np.sum(called & ~positive))
    fn = float(np.sum(~called & positive))
    tn = float(np.sum(~called & ~positive))

    def ratio(a: float, b: float) -> float:
        return a / b if b > 0 else math.nan

    sens, spec = ratio(tp, tp + fn), ratio(tn, tn + fp)
    return {
        "sensitivity": sens,
        "specificity": spec,
        "balanced_accuracy": (sens + spec) / 2.0,
        "ppv": ratio(tp, tp + fp),
        "npv": ratio(tn, tn + fn),
    }

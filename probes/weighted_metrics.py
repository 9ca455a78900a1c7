"""The run metrics under many integer case weights at once, for the image-level bootstrap.

A bootstrap replicate that draws test image i w_i times scores a run exactly as the metric of
`crsbench.probes.metrics` would on the drawn multiset, so each replicate is a weighting of the
stored predictions, never a refit. `RunScorer` prepares one run once (one sort per
class/label column) and then scores R weight vectors together:

* macro AUROC: per column, the negatives are sorted once; a positive i with a_i negatives
  scored strictly below it and b_i at or below it contributes w_i (C[a_i] + C[b_i]) / 2, where
  C is the running sum of the sorted negatives' weights, so a weighted Mann-Whitney statistic
  with ties counting half (as `macro_auroc`) costs one cumulative sum per replicate, not a sort.
  Integer weights keep every sum exact (int64), so replicates do not depend on summation order.
  Columns with one outcome only in a replicate are skipped from that replicate's mean.
* ECE: the 15 equal-width bins of `ece`; per bin |sum w (outcome - confidence)| / sum w.
* Brier and accuracy (`weighted_brier`, `weighted_accuracy`): the weighted mean of each image's
  term (`per_image_brier`, `per_image_accuracy`).

With every weight 1 they equal `macro_auroc`, `ece`, `brier` and `accuracy` (tests check it; Brier
and accuracy up to float summation order on multilabel tasks), and with weights w they equal
those metrics on the sample that repeats image i w_i times.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crsbench.ingest.types import Task
from crsbench.probes.metrics import N_BINS, calibration_pairs, check_predictions, onehot, width_bins


@dataclass(frozen=True)
class _Column:
    pos: np.ndarray  # rows of the positives
    neg_sorted: np.ndarray  # rows of the negatives, by ascending score
    cuts: np.ndarray  # segment starts in neg_sorted (0 first) for np.add.reduceat
    below: np.ndarray  # per positive: index into the prefix sums [0, cut_1, ..., n_neg]
    at_or_below: np.ndarray  # of the negatives scored strictly lower / lower or equal


class RunScorer:
    """One run's predictions, prepared for scoring under weight matrices of shape (n, R)."""

    def __init__(
        self,
        y: np.ndarray,
        p: np.ndarray,
        task: Task | str,
        *,
        auroc: bool = True,
        ece: bool = False,
        n_bins: int = N_BINS,
    ) -> None:
        y, p, task = check_predictions(y, p, task)
        self.n = p.shape[0]
        self._columns: list[_Column] = []
        if auroc:
            target = y if task is Task.MULTILABEL else onehot(y, p.shape[1])
            for j in range(p.shape[1]):
                self._columns.append(_prepare_column(target[:, j] == 1, p[:, j]))
        self._bins: list[np.ndarray] = []
        if ece:
            for conf, hit in calibration_pairs(y, p, task):
                gap = np.zeros((self.n, n_bins))
                gap[np.arange(self.n), width_bins(conf, n_bins)] = hit - conf
                self._bins.append(gap)

    def auroc(self, weights: np.ndarray) -> np.ndarray:
        """Macro AUROC per replicate: weights (n, R) non-negative integers -> (R,)."""
        w = _as_weights(weights, self.n)
        total = np.zeros(w.shape[1])
        defined = np.zeros(w.shape[1])
        for col in self._columns:
            if len(col.pos) == 0 or len(col.neg_sorted) == 0:
                continue
            # Prefix sums of the sorted negatives' weights, only where a positive needs one:
            # segment sums (one pass over the negatives) and a cumulative sum over segments.
            segments = np.add.reduceat(w[col.neg_sorted], col.cuts, axis=0, dtype=np.int32)
            running = np.zeros((len(col.cuts) + 1, w.shape[1]), dtype=np.int32)
            np.cumsum(segments, axis=0, out=running[1:])
            w_pos = w[col.pos]
            numerator = (w_pos * (running[col.below] + running[col.at_or_below])).sum(axis=0, dtype=np.int64)
            pairs = 2 * w_pos.sum(axis=0, dtype=np.int64) * running[-1].astype(np.int64)
            ok = pairs > 0
            total[ok] += numerator[ok] / pairs[ok]
            defined += ok
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(defined > 0, total / defined, np.nan)

    def ece(self, weights: np.ndarray) -> np.ndarray:
        """ECE per replicate (mean over labels for multilabel): weights (n, R) -> (R,)."""
        w = _as_weights(weights, self.n).astype(np.float64)
        mass = w.sum(axis=0)
        gaps = [np.abs(w.T @ gap).sum(axis=1) / mass for gap in self._bins]
        out: np.ndarray = np.mean(gaps, axis=0)
        return out


def per_image_brier(y: np.ndarray, p: np.ndarray, task: Task) -> np.ndarray:
    """Each image's Brier term: squared error summed over the classes, or its mean over the labels
    (multilabel); `probes.metrics.brier` is their mean."""
    if task is Task.MULTILABEL:
        multilabel: np.ndarray = np.mean((p - y) ** 2, axis=1)
        return multilabel
    result: np.ndarray = np.sum((p - onehot(y, p.shape[1])) ** 2, axis=1)
    return result


def per_image_accuracy(y: np.ndarray, p: np.ndarray, task: Task) -> np.ndarray:
    """Each image's accuracy: 1 if its argmax is right, or the share of labels right at p >= 0.5
    (multilabel); `probes.metrics.accuracy` is their mean."""
    if task is Task.MULTILABEL:
        multilabel: np.ndarray = np.mean((p >= 0.5).astype(np.int64) == y, axis=1)
        return multilabel
    result: np.ndarray = (p.argmax(axis=1) == y).astype(np.float64)
    return result


def weighted_mean(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per weight column: sum w v / sum w, (n,) values and (n, R) weights -> (R,); NaN where the
    weights are all zero (a replicate that drew none of the images)."""
    total = weights.sum(axis=0).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (weights.T.astype(np.float64) @ values) / total, np.nan)


def weighted_brier(y: np.ndarray, p: np.ndarray, task: Task, weights: np.ndarray) -> np.ndarray:
    """Brier under each weight column (n, R) -> (R,)."""
    return weighted_mean(per_image_brier(y, p, task), weights)


def weighted_accuracy(y: np.ndarray, p: np.ndarray, task: Task, weights: np.ndarray) -> np.ndarray:
    """Accuracy under each weight column (n, R) -> (R,)."""
    return weighted_mean(per_image_accuracy(y, p, task), weights)


def _prepare_column(positive: np.ndarray, score: np.ndarray) -> _Column:
    pos = np.flatnonzero(positive)
    neg = np.flatnonzero(~positive)
    neg_sorted = neg[np.argsort(score[neg], kind="stable")]
    ordered = score[neg_sorted]
    below = np.searchsorted(ordered, score[pos], side="left")
    at_or_below = np.searchsorted(ordered, score[pos], side="right")
    inner = np.unique(np.concatenate([below, at_or_below]))
    cuts = np.concatenate([[0], inner[(inner > 0) & (inner < len(neg))]]).astype(np.intp)
    ends = np.concatenate([cuts, [len(neg)]])  # prefix sum k covers neg_sorted[:ends[k]]
    return _Column(pos, neg_sorted, cuts, np.searchsorted(ends, below), np.searchsorted(ends, at_or_below))


def _as_weights(weights: np.ndarray, n: int) -> np.ndarray:
    w = np.asarray(weights)
    if w.ndim == 1:
        w = w[:, None]
    if w.shape[0] != n or not np.issubdtype(w.dtype, np.integer):
        raise ValueError(f"weights must be integers of shape ({n}, R), got {w.dtype} {w.shape}")
    if w.size and (w.min() < 0 or w.max() > np.iinfo(np.int16).max):
        raise ValueError("weights must lie in [0, 32767]")
    # int16 halves the memory traffic of the gathers that dominate the cost; every sum is
    # taken in int32/int64, so nothing overflows or rounds.
    return w.astype(np.int16, copy=False)

"""Per-query retrieval metrics from the gains of the ranked gallery (METHODS.md §24.2).

`gains[i, j]` is the relevance of query i's j-th nearest gallery case (`ranking.ranked_gains`),
`totals[i]` the number of gallery cases with a positive gain (R). For a binary relevance:
* precision@k = (1/k) sum_{j<=k} gain_j;
* recall@k = 1 when some case among the first k is relevant, else 0 (recall as deep metric learning
  reports it: Musgrave et al., "A metric learning reality check", 2020);
* mAP@R = (1/R) sum_{j<=R} gain_j * precision@j (the same paper's mAP@R).
For a graded relevance (Jaccard), precision@k is the mean gain of the first k, and mAP@R the same sum
with graded gains divided by its value for the ideal order (the gains sorted descending), so 1 is the
best order; recall@k is not defined for it.
A query with R = 0 has no relevant case in the gallery: every metric is NaN for it.
"""

from __future__ import annotations

import numpy as np


def precision_at(gains: np.ndarray, totals: np.ndarray, k: int) -> np.ndarray:
    out = gains[:, :k].sum(axis=1) / k
    return np.where(totals > 0, out, np.nan)


def recall_at(gains: np.ndarray, totals: np.ndarray, k: int) -> np.ndarray:
    out = (gains[:, :k] > 0).any(axis=1).astype(np.float64)
    return np.where(totals > 0, out, np.nan)


def _ap_at_r(gains: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """(1/R) sum_{j<=R} gain_j * (sum_{i<=j} gain_i) / j, per query, R = totals."""
    width = gains.shape[1]
    positions = np.arange(1, width + 1, dtype=np.float64)
    within = positions[None, :] <= totals[:, None]
    precision = np.cumsum(gains, axis=1) / positions[None, :]
    summed = (gains * precision * within).sum(axis=1)
    out: np.ndarray = np.divide(summed, totals, out=np.full(len(totals), np.nan), where=totals > 0)
    return out


def map_at_r(gains: np.ndarray, totals: np.ndarray, ideal: np.ndarray | None = None) -> np.ndarray:
    """mAP@R per query; `ideal` (graded relevance only): each query's R largest gains, descending,
    in the same layout as `gains`, whose AP@R normalises the query's."""
    ap = _ap_at_r(gains, totals)
    if ideal is None:
        return ap
    best = _ap_at_r(ideal, totals)
    out: np.ndarray = np.divide(ap, best, out=np.full(len(ap), np.nan), where=best > 0)
    return out

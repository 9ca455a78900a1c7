"""Leave-one-out k-NN accuracy: each train row is classified by the majority vote of its k nearest
other train rows, k = the k-NN probe's KNN_K (fewer when n - 1 is smaller), and the score is the
fraction classified correctly. The neighbours are the k-NN probe's (`probes.knn`: exact float64
squared Euclidean distances, ties to the lower row index); a row's own index is dropped from its
k + 1 nearest (by index, not by distance: a duplicate row at distance 0 remains a neighbour), and
the vote breaks ties to the lowest class index, as the probe's argmax does. The neighbour lists do
not depend on the labels, so the labels of a multilabel task share one search (`shared.memo`).

Cost: an exact search of every row against every row is O(n^2 D) (~35 s at n = 25,000, D = 1,024 on
2 cores, more than the rest of the pre-screen). Above MAX_QUERIES rows the accuracy is therefore
measured on MAX_QUERIES query rows drawn without replacement by position (numpy default_rng(0)),
each still voted on by its nearest among all n - 1 other rows: an unbiased estimate of the full
leave-one-out accuracy with standard error at most 0.5 / sqrt(1,024) = 0.016. The draw depends on n
alone and a dataset's feature sets share their row order, so every encoder is scored on the same
queries: encoders are compared paired, with a much smaller error than each score's. (The subset is
by position, so above MAX_QUERIES rows reordering them draws other queries: the registry's
`row_order_invariant` holds for the full leave-one-out only.)
"""

from __future__ import annotations

import numpy as np
import torch

from crsbench.probes import knn as knn_search
from crsbench.probes.kinds.estimators import KNN_K
from crsbench.probes.screening.registry import register_estimator
from crsbench.probes.screening.shared import memo

MAX_QUERIES = 1024  # the search is O(queries n D) and dominates the pre-screen's cost
QUERY_SEED = 0


def query_rows(n: int) -> np.ndarray:
    """The rows whose leave-one-out vote is counted: all n, or MAX_QUERIES of them in row order."""
    if n <= MAX_QUERIES:
        return np.arange(n)
    return np.sort(np.random.default_rng(QUERY_SEED).choice(n, MAX_QUERIES, replace=False))


def loo_neighbours(x: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """(len(queries), k) the k nearest other rows of each query row, nearest first."""
    rows = torch.as_tensor(x, dtype=torch.float64)
    found = knn_search.neighbours(knn_search.prepare(rows), rows[queries], k + 1).numpy()
    own = found == queries[:, None]
    keep = np.argsort(own, axis=1, kind="stable")[:, :k]  # the others first, in distance order
    return np.take_along_axis(found, keep, axis=1)


@register_estimator(
    "knn_loo",
    description=f"leave-one-out k-NN accuracy, k = {KNN_K}: majority vote of the k nearest other train rows "
    f"(exact float64 Euclidean, ties to the lower row; vote ties to the lowest class), over at most "
    f"{MAX_QUERIES} query rows",
)
def knn_loo(x: np.ndarray, y: np.ndarray, n_classes: int) -> float:
    k = min(KNN_K, x.shape[0] - 1)
    queries = query_rows(x.shape[0])
    neighbours = memo(x, f"loo_neighbours_{k}", lambda: loo_neighbours(x, queries, k))
    votes = (y[neighbours][:, :, None] == np.arange(n_classes)).sum(axis=1)
    return float(np.mean(votes.argmax(axis=1) == y[queries]))

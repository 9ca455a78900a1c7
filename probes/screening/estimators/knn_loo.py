"""Leave-one-out k-NN accuracy: each train row is classified by the majority vote of its k nearest
other train rows, k = the k-NN probe's KNN_K (fewer when n - 1 is smaller), and the score is the
fraction classified correctly. The neighbours are the k-NN probe's (`probes.knn`: exact float64
squared Euclidean distances, ties to the lower row index); a row's own index is dropped from its
k + 1 nearest (by index, not by distance: a duplicate row at distance 0 remains a neighbour), and
the vote breaks ties to the lowest class index, as the probe's argmax does. The neighbour lists do
not depend on the labels, so the labels of a multilabel task share one search (`shared.memo`).
"""

from __future__ import annotations

import numpy as np
import torch

from crsbench.probes import knn as knn_search
from crsbench.probes.kinds.estimators import KNN_K
from crsbench.probes.screening.registry import register_estimator
from crsbench.probes.screening.shared import memo


def loo_neighbours(x: np.ndarray, k: int) -> np.ndarray:
    """(n, k) the k nearest other rows of every row, nearest first."""
    n = x.shape[0]
    rows = torch.as_tensor(x, dtype=torch.float64)
    found = knn_search.neighbours(knn_search.prepare(rows), rows, k + 1).numpy()
    own = found == np.arange(n)[:, None]
    keep = np.argsort(own, axis=1, kind="stable")[:, :k]  # the others first, in distance order
    return np.take_along_axis(found, keep, axis=1)


@register_estimator(
    "knn_loo",
    description=f"leave-one-out k-NN accuracy, k = {KNN_K}: majority vote of the k nearest other train rows "
    "(exact float64 Euclidean, ties to the lower row; vote ties to the lowest class)",
)
def knn_loo(x: np.ndarray, y: np.ndarray, n_classes: int) -> float:
    k = min(KNN_K, x.shape[0] - 1)
    neighbours = memo(x, f"loo_neighbours_{k}", lambda: loo_neighbours(x, k))
    votes = (y[neighbours][:, :, None] == np.arange(n_classes)).sum(axis=1)
    return float(np.mean(votes.argmax(axis=1) == y))

"""Leave-one-out k-NN accuracy against a numpy brute force: the full float64 distance matrix, the row
itself excluded by index, distance ties to the lower row, vote ties to the lowest class."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.probes.kinds.estimators import KNN_K
from crsbench.probes.screening.estimators import knn_loo as module
from crsbench.probes.screening.estimators.knn_loo import knn_loo, query_rows
from tests.probes.screening.support import labelled


def brute_force(x: np.ndarray, y: np.ndarray, k_classes: int, queries: np.ndarray) -> float:
    dist = ((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2)
    k = min(KNN_K, len(x) - 1)
    hits = []
    for i in queries:
        d = dist[i].copy()
        d[i] = np.inf  # the row itself, by index
        nearest = np.argsort(d, kind="stable")[:k]
        hits.append(np.bincount(y[nearest], minlength=k_classes).argmax() == y[i])
    return float(np.mean(hits))


def test_knn_loo_equals_the_brute_force():
    x, y = labelled(250, 16, 4, signal=0.6, seed=0)
    assert knn_loo(x, y, 4) == brute_force(x, y, 4, np.arange(250))


def test_duplicate_rows_and_ties_follow_the_probe_rules():
    rng = np.random.default_rng(1)
    base = rng.integers(0, 3, size=(12, 3)).astype(np.float64)  # few distinct values: many equal distances
    x = np.vstack([base, base, base[:6], base[:6]])  # every row duplicated, some four times
    y = rng.integers(0, 3, size=len(x))
    expected = brute_force(x, y, 3, np.arange(len(x)))
    assert knn_loo(x, y, 3) == expected


def test_above_the_query_limit_a_fixed_subset_is_scored(monkeypatch):
    monkeypatch.setattr(module, "MAX_QUERIES", 40)
    x, y = labelled(150, 8, 3, signal=0.5, seed=2)
    rows = query_rows(150)
    assert len(rows) == 40 and np.array_equal(rows, query_rows(150))
    assert knn_loo(x, y, 3) == brute_force(x, y, 3, rows)


def test_fewer_rows_than_k_plus_one_use_every_other_row():
    x = np.array([[0.0], [0.1], [5.0], [5.2]])
    y = np.array([0, 0, 1, 1])  # k = 3: each row's vote has both others of the other class and one of its own
    assert knn_loo(x, y, 2) == pytest.approx(brute_force(x, y, 2, np.arange(4)))

"""GBC against the paper's per-class formula (Pándy et al. 2022), written as a literal double loop
over class pairs after scikit-learn's PCA to 64 dimensions."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA

from crsbench.probes.screening.estimators.gbc import gbc
from tests.probes.screening.support import labelled


def literal_gbc(x: np.ndarray, y: np.ndarray, k: int) -> float:
    z = PCA(n_components=min(64, x.shape[1], x.shape[0]), svd_solver="full").fit_transform(x)
    stats = []
    for c in range(k):
        rows = z[y == c]
        stats.append((rows.mean(axis=0), np.maximum(rows.var(axis=0), 1e-4)))
    total = 0.0
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            (mu_i, v_i), (mu_j, v_j) = stats[i], stats[j]
            v = (v_i + v_j) / 2
            distance = np.sum((mu_i - mu_j) ** 2 / v) / 8 + 0.5 * np.log(
                np.prod(v) / np.sqrt(np.prod(v_i) * np.prod(v_j))
            )
            total += np.exp(-distance)
    return -total


@pytest.mark.parametrize("n, d, k", [(300, 100, 4), (200, 10, 3)])  # reduced to 64 dims, and kept at 10
def test_gbc_equals_the_literal_pairwise_sum(n, d, k):
    x, y = labelled(n, d, k, signal=0.3, seed=d)
    expected = literal_gbc(x, y, k)
    assert -k * (k - 1) < expected < 0
    assert gbc(x, y, k) == pytest.approx(expected, rel=1e-8)


def test_identical_classes_score_minus_the_number_of_ordered_pairs():
    rng = np.random.default_rng(0)
    half = rng.normal(size=(50, 5))
    x, y = np.vstack([half, half, half]), np.repeat([0, 1, 2], 50)  # every class the same Gaussian: BC = 1
    assert gbc(x, y, 3) == pytest.approx(-6.0, abs=1e-12)

"""TransRate against its literal per-class formula (Huang et al. 2022) with D x D matrices throughout."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.probes.screening.estimators.transrate import EPS_SQ_PER_DIM, log_det_spd, transrate
from tests.probes.screening.support import labelled


def rate(z: np.ndarray, eps_sq: float) -> float:
    n, d = z.shape
    return 0.5 * np.linalg.slogdet(np.eye(d) + d / (n * eps_sq) * z.T @ z)[1]


def literal_transrate(x: np.ndarray, y: np.ndarray, k: int) -> float:
    z = x - x.mean(axis=0)
    eps_sq = EPS_SQ_PER_DIM * x.shape[1]
    return rate(z, eps_sq) - sum(np.mean(y == c) * rate(z[y == c], eps_sq) for c in range(k))


@pytest.mark.parametrize("n, d, k", [(400, 12, 3), (60, 50, 3), (20, 90, 2)])  # classes smaller than D; D > N
def test_transrate_equals_the_literal_formula(n, d, k):
    x, y = labelled(n, d, k, seed=d)
    assert transrate(x, y, k) == pytest.approx(literal_transrate(x, y, k), rel=1e-9)


def test_the_constant_is_the_published_coefficient():
    # D / (n eps^2) = 1 / (1e-4 n): the coding rate of the published implementations
    x, _ = labelled(100, 7, 2, seed=1)
    z = x - x.mean(axis=0)
    published = 0.5 * np.linalg.slogdet(np.eye(7) + z.T @ z / (100 * 1e-4))[1]
    assert rate(z, EPS_SQ_PER_DIM * 7) == pytest.approx(published, rel=1e-12)


def test_the_cholesky_log_determinant_equals_the_lu_one_and_a_hand_case():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(40, 12))
    a = np.eye(12) + 0.7 * z.T @ z
    assert log_det_spd(a.copy()) == pytest.approx(np.linalg.slogdet(a)[1], rel=1e-12)
    assert log_det_spd(np.diag([2.0, 3.0, 5.0])) == pytest.approx(np.log(30.0), rel=1e-15)


def test_a_matrix_that_is_not_positive_definite_is_refused():
    with pytest.raises(np.linalg.LinAlgError, match="dpotrf info 2"):
        log_det_spd(np.array([[1.0, 2.0], [2.0, 1.0]]))

"""N-LEEP against a literal LEEP (Nguyen et al. 2020) of scikit-learn's Gaussian-mixture posteriors on
scikit-learn's PCA (Li et al. 2021)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.mixture import GaussianMixture

from crsbench.probes.screening.estimators.nleep import leep, nleep
from tests.probes.screening.support import labelled


def literal_leep(theta: np.ndarray, y: np.ndarray, k: int) -> float:
    n, m = theta.shape
    joint = np.zeros((k, m))
    for i in range(n):
        joint[y[i]] += theta[i] / n
    conditional = joint / joint.sum(axis=0)
    return float(np.mean([np.log(sum(theta[i, z] * conditional[y[i], z] for z in range(m))) for i in range(n)]))


def test_nleep_equals_leep_of_the_mixture_posteriors():
    x, y = labelled(300, 20, 3, signal=1.0, seed=2)
    z = PCA(n_components=0.8, svd_solver="full").fit_transform(x)
    gmm = GaussianMixture(n_components=15, covariance_type="diag", random_state=0, init_params="k-means++")
    theta = gmm.fit(z).predict_proba(z)
    assert nleep(x, y, 3) == pytest.approx(literal_leep(theta, y, 3), rel=1e-6)


def test_leep_of_hard_assignments_that_are_the_labels_is_zero():
    y = np.array([0, 1, 2, 1, 0, 2])
    assert leep(np.eye(3)[y], y, 3) == pytest.approx(0.0, abs=1e-15)
    theta = np.random.default_rng(0).dirichlet(np.ones(4), size=6)
    assert leep(theta, y, 3) == pytest.approx(literal_leep(theta, y, 3), rel=1e-12)

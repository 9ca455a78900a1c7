"""H-score against its closed form tr(pinv(cov(f)) cov(E[f|y])) (Bao et al. 2019)."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.probes.screening.estimators.hscore import hscore
from tests.probes.screening.support import labelled


def closed_form(x: np.ndarray, y: np.ndarray) -> float:
    cov_f = np.cov(x, rowvar=False)
    g = np.empty_like(x)
    for c in np.unique(y):
        g[y == c] = x[y == c].mean(axis=0)
    return float(np.trace(np.linalg.pinv(cov_f) @ np.cov(g, rowvar=False)))


@pytest.mark.parametrize("n, d, k", [(200, 8, 3), (500, 30, 5)])
def test_hscore_equals_its_closed_form(n, d, k):
    x, y = labelled(n, d, k, seed=n)
    assert hscore(x, y, k) == pytest.approx(closed_form(x, y), rel=1e-9)
    raw = x * 3.0 + 2.0  # not standardised: the covariances centre it themselves
    assert hscore(raw, y, k) == pytest.approx(closed_form(raw, y), rel=1e-9)


def test_a_rank_deficient_covariance_takes_the_pseudo_inverse():
    x, y = labelled(150, 6, 3, seed=4)
    x = np.hstack([x, x[:, :2] + x[:, 2:4], np.zeros((150, 1))])  # collinear and constant columns
    assert hscore(x, y, 3) == pytest.approx(closed_form(x, y), rel=1e-8)


def test_more_dimensions_than_rows_saturate_at_k_minus_one():
    x, y = labelled(20, 50, 4, seed=5)  # centred rows of rank n - 1: the pseudo-inverse fits any class means
    assert hscore(x, y, 4) == pytest.approx(3.0, abs=1e-9)
    assert hscore(x, y, 4) == pytest.approx(closed_form(x, y), abs=1e-8)

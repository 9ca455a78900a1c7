"""LogME against a direct float64 implementation of the paper's evidence maximisation (You et al. 2021,
eqs. for A, m, gamma and the evidence), written here with D x D matrices and no eigen trick."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from crsbench.probes.screening.estimators.logme import logme
from crsbench.probes.screening.score import score_cell
from tests.probes.screening.support import labelled


def naive_evidence(f: np.ndarray, y: np.ndarray, alpha: float, beta: float) -> float:
    n, d = f.shape
    a = alpha * np.eye(d) + beta * f.T @ f
    m = beta * np.linalg.solve(a, f.T @ y)
    _, log_det = np.linalg.slogdet(a)
    return float(
        d / 2 * np.log(alpha)
        + n / 2 * np.log(beta)
        - n / 2 * np.log(2 * np.pi)
        - beta / 2 * np.sum((f @ m - y) ** 2)
        - alpha / 2 * m @ m
        - log_det / 2
    )


def naive_fixed_point(f: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """MacKay's updates with A^-1 itself: gamma = D - alpha tr(A^-1)."""
    n, d = f.shape
    alpha, beta = 1.0, 1.0
    for _ in range(5000):
        a_inv = np.linalg.inv(alpha * np.eye(d) + beta * f.T @ f)
        m = beta * a_inv @ f.T @ y
        gamma = d - alpha * np.trace(a_inv)
        new_alpha, new_beta = gamma / (m @ m), (n - gamma) / np.sum((f @ m - y) ** 2)
        done = abs(new_alpha / new_beta - alpha / beta) <= 1e-14 * alpha / beta
        alpha, beta = new_alpha, new_beta
        if done:
            break
    return alpha, beta


def naive_logme(f: np.ndarray, labels: np.ndarray, k: int) -> float:
    out = []
    for c in range(k):
        y = (labels == c).astype(np.float64)
        alpha, beta = naive_fixed_point(f, y)
        out.append(naive_evidence(f, y, alpha, beta) / len(y))
    return float(np.mean(out))


@pytest.mark.parametrize("n, d, k, seed", [(120, 10, 3, 0), (300, 25, 4, 1), (15, 40, 3, 2)])  # the last: D > N
def test_logme_equals_the_direct_evidence_maximisation(n, d, k, seed):
    x, y = labelled(n, d, k, signal=1.5, seed=seed)
    assert logme(x, y, k) == pytest.approx(naive_logme(x, y, k), abs=1e-8)


def test_logme_on_a_hand_sized_case_is_the_maximum_evidence():
    x = np.array([[1.0, 0.2], [0.8, -0.1], [-1.1, 0.3], [-0.9, -0.4], [1.2, 0.1], [-1.0, 0.0]])
    y = np.array([0, 0, 1, 1, 0, 1])
    expected = naive_logme(x, y, 2)
    assert logme(x, y, 2) == pytest.approx(expected, abs=1e-8)
    # independent of the fixed point: no (alpha, beta) gives a larger evidence for either column
    for c in range(2):
        t = (y == c).astype(np.float64)
        best = minimize(
            lambda p, t=t: -naive_evidence(x, t, *np.exp(p)),
            np.zeros(2),
            method="Nelder-Mead",
            options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 10_000},
        )
        alpha, beta = naive_fixed_point(x, t)
        assert naive_evidence(x, t, alpha, beta) >= -best.fun - 1e-9


def test_a_column_without_linear_signal_scores_the_zero_weight_limit():
    # class 1 is the middle of a line: no linear function of x predicts it, the evidence rises as alpha grows
    x = np.linspace(-1, 1, 90)[:, None]
    y = np.repeat([0, 1, 2], 30)
    col = (y == 1).astype(np.float64)
    limit = 90 / 2 * np.log(90 / col.sum()) - 90 / 2 * (1 + np.log(2 * np.pi))
    assert naive_evidence(x, col, 1e9, 90 / col.sum()) == pytest.approx(limit, abs=1e-6)
    others = [naive_evidence(x, (y == c).astype(float), *naive_fixed_point(x, (y == c).astype(float))) for c in (0, 2)]
    assert logme(x, y, 3) == pytest.approx((sum(others) + limit) / 3 / 90, abs=1e-8)


def test_uncentred_features_use_their_own_gram():
    x, y = labelled(200, 12, 3, seed=3)
    shifted = x + 5.0  # LogME does not centre: the shift changes the score, and the direct form agrees
    assert logme(shifted, y, 3) == pytest.approx(naive_logme(shifted, y, 3), abs=1e-8)
    assert score_cell(shifted, y, "multiclass", 3, ["logme"])["logme"] == pytest.approx(logme(shifted, y, 3), abs=1e-12)

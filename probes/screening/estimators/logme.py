"""LogME: the maximum log marginal evidence of Bayesian linear regression (You et al., ICML 2021).

You, Liu, Wang, Long, "LogME: Practical Assessment of Pre-trained Models for Transfer Learning",
ICML 2021 (reference implementation: github.com/thuml/LogME, LogME.py). For each one-hot target
column y (n,) of the K classes, with features F (n, D), prior w ~ N(0, alpha^-1 I) and noise
y | F w ~ N(F w, beta^-1 I):

    L(alpha, beta) = D/2 log alpha + n/2 log beta - n/2 log 2 pi - beta/2 |F m - y|^2
                     - alpha/2 |m|^2 - 1/2 log det A,
    A = alpha I + beta F^T F,  m = beta A^-1 F^T y,

maximised by MacKay's fixed point gamma = sum_i beta s_i / (alpha + beta s_i),
alpha = gamma / |m|^2, beta = (n - gamma) / |F m - y|^2 over the eigenvalues s_i of F^T F.
The score is the mean over the K columns of max L / n, as the reference computes it.

Differences from the reference, all deliberate: the iteration runs to convergence (relative change
of alpha / beta below 1e-10, at most 1,000 steps) instead of stopping after 11 steps or at 1e-3, so
the score is the maximum itself; no 1e-5 is added to |m|^2 and the residual (a zero denominator is
floored at the smallest positive float instead); and where alpha / beta grows without bound (a
column with no linear signal: the evidence keeps rising as the weights shrink to 0) the iteration
stops once alpha / beta passes 1e10 x the largest eigenvalue and the score is the limit, the
evidence of the w = 0 model, n/2 log(n / |y|^2) - n/2 (1 + log 2 pi). The spectrum comes from the
eigen-decomposition of F^T F (D x D) when D < n, of F F^T (n x n) otherwise, in float64; the
D - rank zero eigenvalues of A contribute log alpha each, so D > n needs no special case.
Features are not centred (as in the reference).
"""

from __future__ import annotations

import numpy as np

from crsbench.probes.screening.registry import register_estimator
from crsbench.probes.screening.shared import (
    centred_gram,
    centred_spectrum,
    class_sums,
    one_hot,
    symmetric_eigen,
    target_coordinates,
)

MAX_STEPS = 1000
TOLERANCE = 1e-10
DIVERGED = 1e10  # alpha / beta beyond this many times the largest eigenvalue: taken as its limit
_TINY = float(np.finfo(np.float64).tiny)
_EPS = float(np.finfo(np.float64).eps)


def spectrum_and_coordinates(x: np.ndarray, targets: np.ndarray, cross: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues of the uncentred Gram on the smaller side and the targets' coordinates U^T T;
    cross = x^T targets."""
    n, d = x.shape
    if d < n:
        spec = centred_spectrum(x)
        if n * float(spec.mean @ spec.mean) <= spec.values[0] * max(n, d) * _EPS:
            # standardised features: n mu mu^T is below the Gram's rounding, the spectra are one
            values, vectors = spec.values, spec.vectors
        else:  # F^T F = Z^T Z + n mu mu^T: the shared centred Gram, no second pass over the rows
            mean, centred = centred_gram(x)
            values, vectors = symmetric_eigen(centred + n * np.outer(mean, mean), n, d)
        return values, target_coordinates(values, vectors, True, targets, cross)
    values, vectors = symmetric_eigen(x @ x.T, n, d)
    return values, target_coordinates(values, vectors, False, targets, None)


def _moments(
    s: np.ndarray, p2: np.ndarray, outside: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """gamma, |m|^2 and |F m - y|^2 per target column at t = alpha / beta."""
    shrink = t[None, :] / (s[:, None] + t[None, :])
    gamma = (1.0 - shrink).sum(axis=0)
    m2 = (s[:, None] * p2 / (s[:, None] + t[None, :]) ** 2).sum(axis=0)
    residual = (p2 * shrink**2).sum(axis=0) + outside
    return gamma, m2, residual


def max_evidence(s: np.ndarray, coords: np.ndarray, sq_norms: np.ndarray, n: int, d: int) -> np.ndarray:
    """(K,) the maximum of L(alpha, beta) per target column, from the spectrum s and coordinates U^T y."""
    p2 = coords**2
    outside = np.maximum(sq_norms - p2.sum(axis=0), 0.0)  # |y|^2 outside the span of F
    alpha, beta = np.ones(coords.shape[1]), np.ones(coords.shape[1])
    active = np.ones(coords.shape[1], dtype=bool)
    ceiling = DIVERGED * max(float(s.max(initial=0.0)), 1.0)
    for _ in range(MAX_STEPS):
        t = alpha / beta
        gamma, m2, residual = _moments(s, p2, outside, t)
        new_alpha = gamma / np.maximum(m2, _TINY)
        new_beta = (n - gamma) / np.maximum(residual, _TINY)
        alpha, beta = np.where(active, new_alpha, alpha), np.where(active, new_beta, beta)
        active &= (np.abs(alpha / beta - t) > TOLERANCE * t) & (alpha / beta < ceiling)
        if not active.any():
            break
    _, m2, residual = _moments(s, p2, outside, alpha / beta)
    log_det = np.log(alpha[None, :] + beta[None, :] * s[:, None]).sum(axis=0) + (d - len(s)) * np.log(alpha)
    evidence = (
        d / 2 * np.log(alpha)
        + n / 2 * np.log(beta)
        - n / 2 * np.log(2 * np.pi)
        - beta / 2 * residual
        - alpha / 2 * m2
        - log_det / 2
    )
    # alpha / beta growing without bound: the supremum is the w = 0 model's evidence, beta = n / |y|^2
    limit = n / 2 * np.log(n / sq_norms) - n / 2 * (1.0 + np.log(2 * np.pi))
    best: np.ndarray = np.where(alpha / beta >= ceiling, limit, evidence)
    return best


@register_estimator(
    "logme",
    description="LogME (You et al. 2021): mean over the one-hot class columns of the maximum log marginal "
    "evidence of Bayesian linear regression, divided by n; fixed-point iteration to convergence",
)
def logme(x: np.ndarray, y: np.ndarray, n_classes: int) -> float:
    n, d = x.shape
    targets = one_hot(y, n_classes)
    s, coords = spectrum_and_coordinates(x, targets, class_sums(x, y, n_classes))
    return float(np.mean(max_evidence(s, coords, targets.sum(axis=0), n, d)) / n)

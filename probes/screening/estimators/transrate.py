"""TransRate (Huang, Huang, Xiao, Liu, Fang, Li, "Frustratingly Easy Transferability Estimation",
ICML 2022; reference: github.com/Long-Kai/TransRate).

With Z the features centred once on all n rows and Z_c its rows of class c (not re-centred):

    R(Z, eps) = 1/2 log det(I + D / (n eps^2) Z^T Z),
    TransRate = R(Z, eps) - sum_c (n_c / n) R(Z_c, eps)   (R(Z_c, eps) with n_c in place of n).

eps^2 = 1e-4 D, so D / (n eps^2) = 1 / (1e-4 n): the coefficient of the published implementations'
coding rate (1 / (n * 1e-4)); on standardised features it ignores directions with less than ~1e-4 of
a feature's variance. Each log-determinant uses the smaller of Z^T Z (D x D) and Z Z^T (n x n), which
have the same nonzero spectrum (Sylvester), so D > n needs no special case.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from crsbench.probes.screening.registry import register_estimator
from crsbench.probes.screening.shared import centred_spectrum, class_grams, gram

EPS_SQ_PER_DIM = 1e-4  # eps^2 / D


def class_rate(x: np.ndarray, rows: np.ndarray, mean: np.ndarray, eps_sq: float, gram_c: np.ndarray | None) -> float:
    """R(Z_c, eps) of the chosen rows, centred on the global mean; `gram_c` is their (D, D) Gram
    when D < n (used when D < n_c: otherwise the n_c x n_c side is smaller)."""
    n_c, d = len(rows), x.shape[1]
    if d < n_c:
        small = gram(x, mean, rows) if gram_c is None else gram_c
    else:
        z = x[rows] - mean
        small = z @ z.T
    return 0.5 * log_det_spd(np.eye(len(small)) + d / (n_c * eps_sq) * small)


def log_det_spd(a: np.ndarray) -> float:
    """log det of a symmetric positive definite matrix (here I + c G, G a Gram: eigenvalues >= 1),
    from its Cholesky factor: 2 sum log L_ii, half the work of an LU's slogdet."""
    factor, info = lapack.dpotrf(a, lower=1, clean=0, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky factorisation failed (LAPACK dpotrf info {info})")
    return float(2.0 * np.log(np.diagonal(factor)).sum())


@register_estimator(
    "transrate",
    description="TransRate (Huang et al. 2022): R(Z, eps) - sum_c n_c/n R(Z_c, eps), "
    "R = 1/2 logdet(I + D/(n eps^2) Z^T Z) on centred features, eps^2 = 1e-4 D",
)
def transrate(x: np.ndarray, y: np.ndarray, n_classes: int) -> float:
    n, d = x.shape
    spec = centred_spectrum(x)
    eps_sq = EPS_SQ_PER_DIM * d
    total = 0.5 * float(np.log1p(d / (n * eps_sq) * spec.values).sum())
    grams: list[np.ndarray | None] = list(class_grams(x, y, n_classes)) if d < n else [None] * n_classes
    within = sum(
        np.count_nonzero(y == c) / n * class_rate(x, np.flatnonzero(y == c), spec.mean, eps_sq, grams[c])
        for c in range(n_classes)
    )
    return total - float(within)

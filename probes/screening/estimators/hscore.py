"""H-score (Bao, Li, Huang, Zhang, Zhang, Zheng, "An Information-Theoretic Approach to Transferability
in Task Transfer Learning", ICIP 2019; reference: github.com/YaojieBao/An-Information-theoretic-Metric-of-Transferability):

    H(f) = tr( cov(f)^+ cov(E[f | y]) ),

with cov(f) the covariance of the features, E[f | y] each row replaced by its class mean, and ^+ the
Moore-Penrose pseudo-inverse. Both covariances share their normaliser, so with Z the centred rows,
G = Z^T Z and d_c = mean_c - mean: H = sum_c n_c d_c^T G^+ d_c = sum_c |U_+^T e_c|^2 / n_c, where
Z = U S V^T and e_c is class c's indicator column. That is computed from the eigen-decomposition of
the smaller Gram (D x D when D < n, n x n otherwise); eigenvalues at or below
max eigenvalue * max(n, D) * eps64 count as zero (the pseudo-inverse's cutoff).

H lies in [0, K - 1]. When D >= n - 1 and the centred rows have full rank n - 1, U_+ spans every
vector orthogonal to the constant one and H = K - 1 whatever the features: H-score carries no
information there (METHODS.md §21.3).
"""

from __future__ import annotations

import numpy as np

from crsbench.probes.screening.registry import register_estimator
from crsbench.probes.screening.shared import centred_spectrum, class_sums, one_hot, target_coordinates


@register_estimator(
    "hscore",
    description="H-score (Bao et al. 2019): tr(pinv(cov(f)) cov(E[f|y])), pseudo-inverse cutoff "
    "max eigenvalue * max(n, D) * eps64",
)
def hscore(x: np.ndarray, y: np.ndarray, n_classes: int) -> float:
    spec = centred_spectrum(x)
    targets = one_hot(y, n_classes)
    counts = targets.sum(axis=0)
    cross = class_sums(x, y, n_classes) - np.outer(spec.mean, counts) if spec.by_features else None  # Z^T T
    coords = target_coordinates(spec.values, spec.vectors, spec.by_features, targets, cross)
    return float(np.sum((coords**2).sum(axis=0) / counts))

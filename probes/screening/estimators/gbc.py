"""GBC, the Gaussian Bhattacharyya coefficient (Pándy, Agostinelli, Uijlings, Ferrari, Mensink,
"Transferability Estimation using Bhattacharyya Class Separability", CVPR 2022; reference:
github.com/google-research/google-research, stable_transfer/transferability/gbc.py).

As the paper does, the features are first reduced by PCA to 64 dimensions (fewer when their rank is
lower). Each class c is then a diagonal Gaussian with mean mu_c and per-dimension variance v_c (the
population variance, ddof = 0, floored at 1e-4 as the reference does for constant dimensions). With
v = (v_i + v_j) / 2, the Bhattacharyya distance of two classes is

    D_B(i, j) = 1/8 sum_d (mu_i - mu_j)^2 / v + 1/2 sum_d [log v - (log v_i + log v_j) / 2],

and GBC = - sum over ordered pairs i != j of exp(-D_B(i, j)) (each unordered pair counted twice, as
the paper's double sum and the reference do). GBC <= 0; closer to 0 means better separated classes.
"""

from __future__ import annotations

import numpy as np

from crsbench.probes.screening.registry import register_estimator
from crsbench.probes.screening.shared import principal_scores

PCA_COMPONENTS = 64
VARIANCE_FLOOR = 1e-4


def class_gaussians(z: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(K, k) class means and floored population variances of the reduced features."""
    means = np.stack([z[y == c].mean(axis=0) for c in range(n_classes)])
    variances = np.stack([z[y == c].var(axis=0) for c in range(n_classes)])
    return means, np.maximum(variances, VARIANCE_FLOOR)


@register_estimator(
    "gbc",
    description=f"GBC (Pándy et al. 2022): PCA to {PCA_COMPONENTS} dims, per-class diagonal Gaussians "
    f"(variance floor {VARIANCE_FLOOR}), minus the sum over ordered class pairs of the Bhattacharyya coefficient",
)
def gbc(x: np.ndarray, y: np.ndarray, n_classes: int) -> float:
    means, variances = class_gaussians(principal_scores(x, PCA_COMPONENTS), y, n_classes)
    pooled = (variances[:, None, :] + variances[None, :, :]) / 2
    log_v = np.log(variances)
    distance = ((means[:, None, :] - means[None, :, :]) ** 2 / pooled).sum(axis=2) / 8 + 0.5 * (
        np.log(pooled).sum(axis=2) - (log_v.sum(axis=1)[:, None] + log_v.sum(axis=1)[None, :]) / 2
    )
    coefficient = np.exp(-distance)
    return float(-(coefficient.sum() - np.trace(coefficient)))

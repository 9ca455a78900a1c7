"""N-LEEP (Li, Jia, Sze, Zhang, Zhou, Huang, "Ranking Neural Checkpoints", CVPR 2021; reference:
github.com/google-research/google-research, stable_transfer/transferability/nleep.py).

The features are reduced by PCA to the fewest components holding 80 % of the variance, as the paper
does. A Gaussian mixture of 5 K components (the paper's choice; at most n) is fitted to them with
scikit-learn's `GaussianMixture` (k-means++ seeds as the start, random_state 0, its default 100 EM
steps and 1e-3 tolerance; the reference's default start also runs Lloyd's k-means, two-thirds of the
fit's cost), and its posteriors theta (n, M) stand in for a source classifier's outputs in LEEP
(Nguyen et al., ICML 2020):

    P(y, z) = 1/n sum_{i: y_i = y} theta_iz,  P(y | z) = P(y, z) / sum_y' P(y', z),
    N-LEEP = 1/n sum_i log sum_z theta_iz P(y_i | z).

Diagonal covariances, not the reference's full ones: a full covariance costs O(n M k^2) per EM step
and k (k + 1) / 2 parameters per component, with k in the hundreds for 80 % of a real encoder's
variance; the diagonal model is linear in k and the PCA has already decorrelated the features.
"""

from __future__ import annotations

import numpy as np

from crsbench.probes.screening.registry import register_estimator
from crsbench.probes.screening.shared import components_for_variance, principal_scores

VARIANCE_KEPT = 0.8
COMPONENTS_PER_CLASS = 5
RANDOM_STATE = 0
INIT = "k-means++"


def leep(theta: np.ndarray, y: np.ndarray, n_classes: int) -> float:
    """LEEP of soft assignments theta (n, M) against class indices y."""
    joint = np.stack([theta[y == c].sum(axis=0) for c in range(n_classes)]) / len(y)  # (K, M)
    conditional = joint / np.maximum(joint.sum(axis=0, keepdims=True), np.finfo(np.float64).tiny)
    expected = np.einsum("im,im->i", theta, conditional[y])
    return float(np.mean(np.log(expected)))


def mixture_posteriors(z: np.ndarray, n_components: int) -> np.ndarray:
    from sklearn.mixture import GaussianMixture  # scikit-learn only when N-LEEP runs

    gmm = GaussianMixture(
        n_components=n_components, covariance_type="diag", random_state=RANDOM_STATE, init_params=INIT
    )
    return np.asarray(gmm.fit(z).predict_proba(z))


@register_estimator(
    "nleep",
    description=f"N-LEEP (Li et al. 2021): PCA to {VARIANCE_KEPT:.0%} of the variance, a diagonal Gaussian "
    f"mixture of {COMPONENTS_PER_CLASS} K components ({INIT} start, random_state {RANDOM_STATE}), LEEP of its posteriors",
    row_order_invariant=False,
)
def nleep(x: np.ndarray, y: np.ndarray, n_classes: int) -> float:
    z = principal_scores(x, components_for_variance(x, VARIANCE_KEPT))
    theta = mixture_posteriors(z, min(COMPONENTS_PER_CLASS * n_classes, x.shape[0]))
    return leep(theta, y, n_classes)

"""The probes: logreg reaches scikit-learn's C=1 optimum; k-NN and MLP behave as documented."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import KNeighborsClassifier

from crsbench.core import CrsbenchError
from crsbench.ingest.types import Task
from crsbench.probes.lbfgs import _Preconditioner, fit_logreg
from crsbench.probes.registry import get_probe, probe_names

torch.set_num_threads(1)


def _features(rng, n=600, d=40):
    z = rng.normal(size=(n, 6))
    x = z @ rng.normal(size=(6, d)) + 0.5 * rng.normal(size=(n, d))  # correlated dims
    return (x - x.mean(0)) / x.std(0), z


def _reference(x, y):
    return LogisticRegression(C=1.0, tol=1e-10, max_iter=20000).fit(x, y)


def test_multinomial_logreg_reaches_sklearn_optimum():
    rng = np.random.default_rng(0)
    x, z = _features(rng)
    y = (z[:, :3] @ rng.normal(size=(3, 5)) + rng.normal(size=(600, 5))).argmax(1)
    sol = fit_logreg(torch.tensor(x), torch.nn.functional.one_hot(torch.tensor(y), 5), True, tol=1e-8)
    ref = _reference(x, y)
    assert sol.converged
    np.testing.assert_allclose(sol.coef[0].numpy().T, ref.coef_, atol=1e-5)
    # the probe's default tolerance (relative max |grad| <= 1e-9; sklearn here: tol 1e-10)
    p = get_probe("logreg").fit(x, y, Task.MULTICLASS, 5, 0)(x)
    np.testing.assert_allclose(p, ref.predict_proba(x), atol=1e-6)


def test_one_vs_rest_logreg_reaches_sklearn_optimum_per_label():
    rng = np.random.default_rng(1)
    x, z = _features(rng)
    y = (z[:, :3] @ rng.normal(size=(3, 4)) + rng.normal(size=(600, 4)) > 0.3).astype(int)
    sol = fit_logreg(torch.tensor(x), torch.tensor(y), False, tol=1e-8)
    p = get_probe("logreg").fit(x, y, Task.MULTILABEL, 4, 0)(x)
    for j in range(4):
        ref = _reference(x, y[:, j])
        np.testing.assert_allclose(sol.coef[j, :, 0].numpy(), ref.coef_[0], atol=1e-5)
        assert sol.intercept[j, 0].item() == pytest.approx(ref.intercept_[0], abs=1e-5)
        assert roc_auc_score(y[:, j], p[:, j]) == pytest.approx(
            roc_auc_score(y[:, j], ref.predict_proba(x)[:, 1]), abs=1e-6
        )


def test_warm_started_logreg_reaches_the_same_sklearn_optimum_and_checks_its_shape():
    rng = np.random.default_rng(3)
    x, z = _features(rng)
    y = (z[:, :3] @ rng.normal(size=(3, 4)) + rng.normal(size=(600, 4))).argmax(1)
    target = torch.nn.functional.one_hot(torch.tensor(y), 4)
    half = fit_logreg(torch.tensor(x[:300]), target[:300], True)  # the next-larger fraction's role
    warm = fit_logreg(torch.tensor(x), target, True, tol=1e-8, init=half)
    assert warm.converged
    np.testing.assert_allclose(warm.coef[0].numpy().T, _reference(x, y).coef_, atol=1e-5)
    # started at its own optimum, the fit stops at once: the threshold stays relative to w = 0
    again = fit_logreg(torch.tensor(x), target, True, tol=1e-8, init=warm)
    assert again.n_iter <= 1
    with pytest.raises(ValueError, match="init has shape"):
        fit_logreg(torch.tensor(x[:, :10]), target, True, init=half)


def test_wide_preconditioner_is_the_inverse_bound_by_woodbury():
    rng = np.random.default_rng(4)
    x = torch.tensor(rng.normal(size=(12, 50)))
    lam = 1.0 / 12
    pre = _Preconditioner(x, lam)
    assert pre.low_rank
    x1 = torch.cat([x, torch.ones(12, 1, dtype=x.dtype)], dim=1)
    bound = x1.T @ x1 / (4 * 12) + lam * torch.eye(51, dtype=x.dtype)
    np.testing.assert_allclose(pre.matrix().numpy(), torch.linalg.inv(bound).numpy(), atol=1e-9)
    v = torch.tensor(rng.normal(size=(3, 51, 2)))  # 3 problems, 2 outputs each
    np.testing.assert_allclose(pre(v).numpy(), (torch.linalg.inv(bound) @ v).numpy(), atol=1e-9)


def test_a_tiny_wide_multilabel_fit_converges_at_the_rounding_floor():
    """8 images x 1280 features x 14 labels, standardised by a larger train split (as a 1 %
    fraction of the demo's CheXpert is): near the optimum the Armijo decrease is below
    float64's resolution of the loss; the approximate condition lets it converge."""
    rng = np.random.default_rng(1)
    z = rng.normal(size=(106, 10)) @ rng.normal(size=(10, 1280)) + 0.5 * rng.normal(size=(106, 1280))
    z = (((z + rng.normal(size=1280)) - z.mean(0)) / z.std(0))[:8]
    y = np.zeros((8, 14))
    for j in range(14):
        y[rng.choice(8, size=rng.integers(1, 4), replace=False), j] = 1
    sol = fit_logreg(torch.tensor(z), torch.tensor(y), False, max_iter=400)
    assert sol.converged and sol.n_iter < 400
    for j in (0, 5, 13):
        ref = _reference(z, y[:, j])
        np.testing.assert_allclose(sol.coef[j, :, 0].numpy(), ref.coef_[0], atol=1e-6)


def test_logreg_with_fewer_samples_than_dims_matches_sklearn():
    rng = np.random.default_rng(2)
    x, _ = _features(rng, n=30, d=80)
    y = np.arange(30) % 3
    p = get_probe("logreg").fit(x, y, Task.ORDINAL, 3, 0)(x)
    np.testing.assert_allclose(p, _reference(x, y).predict_proba(x), atol=1e-4)


def test_knn_is_the_vote_fraction_of_five_neighbours():
    rng = np.random.default_rng(3)
    x, _ = _features(rng, n=200, d=10)
    y = rng.integers(0, 3, 200)
    q = rng.normal(size=(50, 10))
    ours = get_probe("knn").fit(x, y, Task.MULTICLASS, 3, 0)(q)
    ref = KNeighborsClassifier(n_neighbors=5).fit(x, y).predict_proba(q)
    np.testing.assert_allclose(ours, ref)
    yl = rng.integers(0, 2, (200, 2))
    ours_l = get_probe("knn").fit(x, yl, Task.MULTILABEL, 2, 0)(q)
    for j in range(2):
        ref_j = KNeighborsClassifier(n_neighbors=5).fit(x, yl[:, j]).predict_proba(q)[:, 1]
        np.testing.assert_allclose(ours_l[:, j], ref_j)


def test_mlp_is_seeded_and_deterministic():
    rng = np.random.default_rng(4)
    x, z = _features(rng, n=300, d=20)
    y = (z[:, 0] > 0).astype(int) + (z[:, 1] > 0).astype(int)
    fit = get_probe("mlp").fit
    a = fit(x, y, Task.MULTICLASS, 3, 0)(x)
    b = fit(x, y, Task.MULTICLASS, 3, 0)(x)
    c = fit(x, y, Task.MULTICLASS, 3, 1)(x)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    np.testing.assert_allclose(a.sum(1), 1.0, atol=1e-6)
    assert roc_auc_score(y == 2, a[:, 2]) > 0.8  # it learned something
    yl = np.stack([z[:, 0] > 0, z[:, 1] > 0], axis=1).astype(int)
    pl = fit(x, yl, Task.MULTILABEL, 2, 0)(x)
    assert pl.shape == (300, 2) and roc_auc_score(yl[:, 0], pl[:, 0]) > 0.8


def test_registry_names_and_unknown_probe():
    assert {"logreg", "mlp", "knn"} <= set(probe_names())  # the built-ins are included
    assert "zeroshot" not in probe_names()  # run on its own, never a default
    assert get_probe("mlp").seeded and not get_probe("logreg").seeded
    with pytest.raises(CrsbenchError, match="unknown probe 'svm'"):
        get_probe("svm")

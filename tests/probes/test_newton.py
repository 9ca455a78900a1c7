"""Exact Newton in the design's row space reaches the optimum L-BFGS reaches (same objective)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from crsbench.probes.lbfgs import fit_logreg, logreg_objective
from crsbench.probes.newton import fit_newton, newton_pays, solve_logreg


def _problem(n: int, d: int, k: int, softmax: bool, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, 6))
    x = latent @ rng.normal(size=(6, d)) + 0.3 * rng.normal(size=(n, d))  # correlated, as embeddings
    x = (x - x.mean(0)) / x.std(0)
    logits = x[:, :6] @ rng.normal(size=(6, k))
    if softmax:
        y = torch.nn.functional.one_hot(torch.as_tensor(logits.argmax(1)), k)
    else:
        y = torch.as_tensor((logits + rng.normal(size=logits.shape) > 0).astype(np.float64))
    return torch.as_tensor(x), y


@pytest.mark.parametrize(("n", "d", "k", "softmax"), [(12, 40, 3, True), (60, 20, 4, True), (15, 30, 5, False)])
def test_newton_reaches_the_lbfgs_optimum(n, d, k, softmax):
    x, y = _problem(n, d, k, softmax)
    newton = fit_newton(x, y, softmax)
    lbfgs = fit_logreg(x, y, softmax, tol=1e-11, max_iter=5000)
    assert newton.converged and newton.n_iter < 30
    np.testing.assert_allclose(newton.coef, lbfgs.coef, atol=1e-7)
    np.testing.assert_allclose(
        newton.intercept - newton.intercept.mean(), lbfgs.intercept - lbfgs.intercept.mean(), atol=1e-7
    )
    # the full problem's gradient at Newton's answer: far below fit_logreg's 1e-9 bar
    w = torch.cat([newton.coef, newton.intercept[:, None, :]], dim=1)
    y3 = y.double().reshape(n, 1, -1) if softmax else y.double().reshape(n, -1, 1)
    _, g = logreg_objective(x, w, y3, softmax, 1.0 / n)
    assert float(g.abs().max()) < 1e-11
    if softmax:  # equal-intercept null direction untouched: intercepts still sum to 0
        assert abs(float(newton.intercept.sum())) < 1e-10


def test_solver_choice_by_estimated_work():
    assert newton_pays(n=114, d=1280, k=5, problems=1)  # the demo's cells
    assert newton_pays(n=121, d=512, k=8, problems=1)
    assert not newton_pays(n=2400, d=768, k=8, problems=1)  # paper scale: L-BFGS
    assert not newton_pays(n=20_000, d=768, k=1, problems=14)
    x, y = _problem(30, 50, 3, True)
    assert solve_logreg(x, y, True).n_iter < fit_logreg(x, y, True).n_iter  # it took Newton

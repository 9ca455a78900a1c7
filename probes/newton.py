"""Exact Newton for the logistic-regression probe when the training set is small.

Same objective and stopping bar as `lbfgs.fit_logreg` (mean loss + lambda/2 ||W_features||^2,
lambda = 1/n, unpenalised intercept; stop at max |gradient| <= tol x max(1, max |gradient at
0|)), solved in the row space of the design:

* X = U S Vᵀ (thin SVD, rank r <= min(n, D)). The optimum's feature weights lie in the span of
  V (the loss gradient Xᵀ R is there, and stationarity sets lambda W = -Xᵀ R / n), so
  W = V C and the problem becomes the same logistic regression on Z = U S (n x r) with
  lambda/2 ||C||^2: an identical objective in (r+1) K unknowns instead of (D+1) K.
* Newton steps with the exact Hessian of that reduced problem (one (r+1)K square matrix per
  problem, Cholesky), and the line search of `fit_logreg`. Quadratic convergence: 7-12
  iterations from w = 0 instead of L-BFGS's 100-650 on the demo's cells, each a few small
  dense products, so Python overhead per iteration stops mattering.
* It iterates to NEWTON_TOL (1e-12 relative), far past `tol`: a stricter bar costs about one
  iteration and leaves the solution even less dependent on the CPU's instruction set. The
  returned `converged` is judged on the gradient of the original problem at W = V C.

The softmax objective is invariant to adding a constant to all K intercepts; that null
direction of the Hessian is closed by adding u uᵀ (u: the unit vector of equal intercepts),
which changes no step since the gradient is orthogonal to u.

`newton_pays` picks this solver when its estimated work is below L-BFGS's (the demo's
cells: n ~ 100, D up to 1280); large training sets (n and D in the thousands) keep L-BFGS,
whose per-iteration cost does not grow with the square of the unknowns.
"""

from __future__ import annotations

import functools

import torch

from crsbench.core.products import cholesky, cholesky_solve, matmul, svd
from crsbench.probes.lbfgs import TOL, LogRegSolution, fit_logreg, line_search, logreg_objective, torch_dtype

NEWTON_TOL = 1e-12
NEWTON_MAX_ITER = 100
# Work model of `newton_pays`, in floating-point operations (measured on the demo's cells:
# L-BFGS needs 100-650 iterations of ~3 objective evaluations; a small-problem L-BFGS
# iteration costs about as much Python and dispatch time as 2e7 operations on one core).
NEWTON_ITERS = 12
LBFGS_ITERS = 300
LBFGS_ITER_OVERHEAD = 2e7


def newton_pays(n: int, d: int, k: int, problems: int) -> bool:
    """Whether Newton on the reduced problem is estimated cheaper than L-BFGS."""
    m = (min(n, d) + 1) * k
    newton = NEWTON_ITERS * problems * (n * m * m + m**3 / 3) + 4.0 * n * d * min(n, d)
    lbfgs = LBFGS_ITERS * (12.0 * n * (d + 1) * k * problems + LBFGS_ITER_OVERHEAD)
    return newton <= lbfgs


def solve_logreg(x: torch.Tensor, y: torch.Tensor, softmax: bool, *, tol: float = TOL) -> LogRegSolution:
    """The probe's solver: exact Newton where it pays, else batched L-BFGS (same optimum)."""
    n, d = x.shape
    k = y.shape[1] if softmax else 1
    problems = 1 if softmax else y.shape[1]
    if newton_pays(n, d, k, problems):
        return fit_newton(x, y, softmax, tol=tol)
    return fit_logreg(x, y, softmax, tol=tol)


def _row_space(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Z = U S (n, r) and V (D, r) with X = Z Vᵀ; directions below 1e-13 of the largest dropped."""
    u, s, vh = svd(x)
    keep = s > s[0] * 1e-13 if len(s) else s > 0
    return u[:, keep] * s[keep], vh[keep].T


def _hessian(z1: torch.Tensor, p: torch.Tensor, softmax: bool, lam: float) -> torch.Tensor:
    """(B, m, m) Hessians over the flattened (r+1, K) unknowns; z1 = [Z, 1], p (n, B, K)."""
    n, r1 = z1.shape
    if softmax:
        probs = p[:, 0, :]
        k = probs.shape[1]
        mixed = (z1[:, :, None] * probs[:, None, :]).reshape(n, r1 * k)
        h = -matmul(mixed.T, mixed)  # sum_i (z_i z_iᵀ) ⊗ (p_i p_iᵀ)
        h4 = h.view(r1, k, r1, k)
        for c in range(k):  # + sum_i (z_i z_iᵀ) ⊗ diag(p_i)
            h4[:, c, :, c] += matmul(z1.T * probs[:, c], z1)
        h = h[None]
    else:
        k = 1
        weights = (p * (1.0 - p))[:, :, 0]  # (n, B)
        h = matmul(z1.T[None] * weights.T[:, None, :], z1)
    h = h / n
    m = r1 * k
    features = torch.arange(m - k)
    h[:, features, features] += lam
    if softmax:
        u = torch.zeros(m, dtype=h.dtype)
        u[-k:] = 1.0 / k**0.5
        h += torch.outer(u, u)
    return h


def fit_newton(
    x: torch.Tensor, y: torch.Tensor, softmax: bool, *, tol: float = TOL, max_iter: int = NEWTON_MAX_ITER
) -> LogRegSolution:
    """Solve the problems of `lbfgs.fit_logreg(x, y, softmax)` (same arguments) by Newton."""
    n, d = x.shape
    x1 = x.to(torch_dtype)
    y3 = y.to(torch_dtype).reshape(n, 1, -1) if softmax else y.to(torch_dtype).reshape(n, -1, 1)
    b, k = y3.shape[1], y3.shape[2]
    lam = 1.0 / n
    _, g0 = logreg_objective(x1, torch.zeros(b, d + 1, k, dtype=torch_dtype), y3, softmax, lam)
    scale = g0.abs().amax(dim=(1, 2)).clamp_min(1.0)
    z, v = _row_space(x1)
    r = z.shape[1]
    z1 = torch.cat([z, torch.ones(n, 1, dtype=torch_dtype)], dim=1)
    theta = torch.zeros(b, r + 1, k, dtype=torch_dtype)
    f, g = logreg_objective(z, theta, y3, softmax, lam)
    # ||g||_2 in the reduced problem equals the 2-norm of the original gradient (V is
    # orthonormal), which bounds its max |entry|.
    done = g.flatten(1).norm(dim=1) <= NEWTON_TOL * scale
    it = 0
    for it in range(1, max_iter + 1):
        if bool(done.all()):
            it -= 1
            break
        logits = matmul(z, theta[:, :-1, :].permute(1, 0, 2).reshape(r, b * k)).reshape(n, b, k) + theta[:, -1, :][None]
        p = torch.softmax(logits, dim=2) if softmax else torch.sigmoid(logits)
        factor = cholesky(_hessian(z1, p, softmax, lam))
        direction = -cholesky_solve(g.reshape(b, -1, 1).contiguous(), factor).reshape(b, r + 1, k)
        direction[done] = 0.0
        theta, f, g, accepted = _line_search(z, y3, softmax, lam, theta, f, g, direction, done)
        done = done | ~accepted | (g.flatten(1).norm(dim=1) <= NEWTON_TOL * scale)
    coef = matmul(v, theta[:, :-1, :])  # (D, r) @ (B, r, K): (B, D, K)
    intercept = theta[:, -1, :]
    w = torch.cat([coef, intercept[:, None, :]], dim=1)
    _, g_full = logreg_objective(x1, w, y3, softmax, lam)
    converged = bool((g_full.abs().amax(dim=(1, 2)) <= tol * scale).all())
    return LogRegSolution(coef=coef, intercept=intercept, n_iter=it, converged=converged)


def _line_search(
    z: torch.Tensor,
    y3: torch.Tensor,
    softmax: bool,
    lam: float,
    theta: torch.Tensor,
    f: torch.Tensor,
    g: torch.Tensor,
    direction: torch.Tensor,
    done: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """`fit_logreg`'s line search on the reduced problem (design `z`)."""
    slope = (g * direction).sum(dim=(1, 2))
    objective = functools.partial(logreg_objective, z, y=y3, softmax=softmax, lam=lam)
    return line_search(objective, theta, f, g, direction, slope, done)

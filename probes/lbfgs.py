"""L2-regularised logistic regression solved by a batched, preconditioned L-BFGS (float64).

The objective per problem is scikit-learn's `LogisticRegression(C=1.0)` divided by n:

    mean_i loss_i(W) + (lambda / 2) * ||W_features||^2,   lambda = 1 / n,

with an unpenalised intercept; `loss` is the softmax cross-entropy over K full weight
vectors (multinomial, as scikit-learn) or the sigmoid log-loss (one problem per label).
The optimum is unique, so this solver and scikit-learn's agree up to their tolerances.

Why it is fast: the L labels of a multilabel fit are solved together, each with its own
curvature pairs and step size, so every iteration is one matrix product instead of L
matrix-vector products; and the initial inverse Hessian of the two-loop recursion is
(XᵀX / (4 n) + Lambda)^-1, an upper bound of the true Hessian computed once per training
set (Böhning's bound), which cuts the iteration count several-fold on correlated features.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import torch

from crsbench.core.products import addmm, cholesky, cholesky_inverse, matmul

torch_dtype = torch.float64
# Relative gradient tolerance. Why so tight: the solution moves by about tol / (smallest
# curvature), and at 1e-6 that was enough for a probability to cross an ECE bin edge or an
# AUROC tie depending on which instruction set torch dispatched to (CRS 0.6512 vs 0.6500 on
# two x86-64 machines). At 1e-9 the printed figures no longer depend on it; measured cost:
# about twice the iterations of 1e-6 on correlated 384-512-dimensional features.
TOL = 1e-9
# Relative change of the objective treated as rounding (f sums n x K float64 terms).
F_NOISE = 1e-12
# w -> (loss per problem, gradient), the objective of one fit.
Objective = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


@dataclasses.dataclass
class LogRegSolution:
    coef: torch.Tensor  # (B, D, K): B independent problems, K outputs each
    intercept: torch.Tensor  # (B, K)
    n_iter: int
    converged: bool


def logreg_objective(
    x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, softmax: bool, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Loss per problem (B,) and gradient (B, D+1, K); the intercept is w's last row.

    `x` is the (n, D) design itself: no copy with a column of ones, which at scale would
    double the largest array a probe holds.
    """
    n, d = x.shape
    b, _, k = w.shape
    feat = w[:, :-1, :]
    logits = matmul(x, feat.permute(1, 0, 2).reshape(d, b * k)).reshape(n, b, k) + w[:, -1, :][None]
    if softmax:
        logp = torch.log_softmax(logits, dim=2)
        loss = -(y * logp).sum(dim=(0, 2)) / n
        resid = logp.exp() - y
    else:
        # log(1 + e^z) - y z, stable for both signs of z
        loss = (torch.nn.functional.softplus(logits) - y * logits).sum(dim=(0, 2)) / n
        resid = torch.sigmoid(logits) - y
    grad = torch.empty_like(w)
    grad[:, :-1, :] = matmul(x.T, resid.reshape(n, b * k)).reshape(d, b, k).permute(1, 0, 2) / n
    grad[:, -1, :] = resid.sum(dim=0) / n
    loss = loss + 0.5 * lam * (feat * feat).sum(dim=(1, 2))
    grad[:, :-1, :] += lam * feat
    return loss, grad


def _hessian_bound_gram(x: torch.Tensor, block_rows: int = 2048) -> torch.Tensor:
    """[x, 1]^T [x, 1] accumulated over row blocks in float32 (only the preconditioner uses it)."""
    n, d = x.shape
    gram = torch.zeros(d + 1, d + 1, dtype=torch_dtype)
    for start in range(0, n, block_rows):
        xb = x[start : start + block_rows].to(torch.float32)
        xb1 = torch.cat([xb, torch.ones(xb.shape[0], 1, dtype=torch.float32)], dim=1)
        gram += matmul(xb1.T, xb1).to(torch_dtype)
    return gram


def fit_logreg(
    x: torch.Tensor,
    y: torch.Tensor,
    softmax: bool,
    *,
    tol: float = TOL,
    max_iter: int = 2000,
    history: int = 10,
    init: LogRegSolution | None = None,
) -> LogRegSolution:
    """Solve B problems sharing the design `x` (n, D).

    softmax=True: `y` is one-hot (n, K) and B = 1 (multinomial). softmax=False: `y` is
    0/1 (n, L) and each label is its own binary problem (B = L, K = 1). Stops when every
    problem's max |gradient| <= tol * max(1, max |gradient at w = 0|) (scikit-learn's
    criterion made relative; its default tol is 1e-4, absolute).

    `init` starts from another solution of the same shape (a warm start); the stopping
    threshold is still relative to the gradient at w = 0, so cold and warm fits stop by the
    same criterion. The grid does not warm-start (benchmarks/paper_scale.py measures why).
    """
    n, d = x.shape
    x1 = x.to(torch_dtype)  # no copy when the caller already holds float64
    y3 = y.to(torch_dtype).reshape(n, 1, -1) if softmax else y.to(torch_dtype).reshape(n, -1, 1)
    b, k = y3.shape[1], y3.shape[2]
    lam = 1.0 / n
    precond = _Preconditioner(x1, lam)
    objective = functools.partial(logreg_objective, x1, y=y3, softmax=softmax, lam=lam)
    w, f, g, threshold = _starting_point(objective, (b, d + 1, k), tol, init)
    pairs = _CurvaturePairs(history)
    done = _max_abs_gradient(g) <= threshold
    it = 0
    for it in range(1, max_iter + 1):
        if bool(done.all()):
            it -= 1
            break
        direction, slope = _descent_direction(g, pairs, precond, done)
        w_new, f_new, g_new, accepted = line_search(objective, w, f, g, direction, slope, done)
        stalled = ~accepted  # no decrease even at tiny steps: at the optimum to precision
        pairs.add(w_new - w, g_new - g)
        w, f, g = w_new, f_new, g_new
        done = done | stalled | (_max_abs_gradient(g) <= threshold)
    converged = bool((_max_abs_gradient(g) <= threshold).all())
    return LogRegSolution(coef=w[:, :-1, :], intercept=w[:, -1, :], n_iter=it, converged=converged)


def _max_abs_gradient(g: torch.Tensor) -> torch.Tensor:
    """max |gradient| per problem (B,)."""
    return g.abs().amax(dim=(1, 2))


def _starting_point(
    objective: Objective, shape: tuple[int, int, int], tol: float, init: LogRegSolution | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(w, f, g) to start from (zero, or `init`) and the stopping threshold per problem,
    relative to the gradient at w = 0 even for a warm start."""
    w = torch.zeros(shape, dtype=torch_dtype)
    f, g = objective(w)
    threshold = tol * _max_abs_gradient(g).clamp_min(1.0)
    if init is not None:
        w = torch.cat([init.coef, init.intercept[:, None, :]], dim=1).to(torch_dtype)
        if w.shape != shape:
            raise ValueError(f"init has shape {tuple(w.shape)}, the problem needs {shape}")
        f, g = objective(w)
    return w, f, g, threshold


@dataclasses.dataclass
class _CurvaturePairs:
    """The last `size` L-BFGS pairs s = Δw, y = Δg, with rho = 1 / sᵀy per problem (0 where sᵀy
    is not positive, which drops the pair from the recursion)."""

    size: int
    s: list[torch.Tensor] = dataclasses.field(default_factory=list)
    y: list[torch.Tensor] = dataclasses.field(default_factory=list)
    rho: list[torch.Tensor] = dataclasses.field(default_factory=list)

    def add(self, s: torch.Tensor, yy: torch.Tensor) -> None:
        sy = (s * yy).sum(dim=(1, 2))
        self.s.append(s)
        self.y.append(yy)
        self.rho.append(torch.where(sy > 1e-20, 1.0 / sy.clamp_min(1e-20), torch.zeros_like(sy)))
        if len(self.s) > self.size:
            self.s.pop(0), self.y.pop(0), self.rho.pop(0)


def _descent_direction(
    g: torch.Tensor, pairs: _CurvaturePairs, precond: _Preconditioner, done: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The L-BFGS direction per problem (zero for problems already done) and its slope gᵀd."""
    direction = -_two_loop(g, pairs.s, pairs.y, pairs.rho, precond)
    direction[done] = 0.0
    slope = (g * direction).sum(dim=(1, 2))
    bad = slope >= 0  # not a descent direction: restart from the preconditioned gradient
    if bool(bad.any()):
        direction[bad] = -precond(g[bad])
        slope = (g * direction).sum(dim=(1, 2))
    return direction, slope


class _Preconditioner:
    """v -> B^-1 v per problem, B = [x, 1]ᵀ[x, 1] / (4 n) + Lambda: Böhning's upper bound of
    the Hessian, shared by every problem. Only convergence speed depends on it, not the
    optimum, which allows two economies:

    * n >= D: B is formed from a float32 Gram and inverted once (dense, (D+1)^2 per product);
    * n < D (few labelled images, wide features): the bound gets lambda on the intercept too
      and is applied by the Woodbury identity,
      B^-1 = (I - X1ᵀ (4 n lambda I + X1 X1ᵀ)^-1 X1) / lambda, about 2 n (D+1) per product
      instead of (D+1)^2 and no (D+1)^3 factorisation (12x fewer operations at n = 106,
      D = 1280, the demo's CheXpert cells).

    Products are taken as one 2-D matrix product over all problems: a batched matmul would
    broadcast the (D+1)^2 matrix to every label problem.
    """

    def __init__(self, x: torch.Tensor, lam: float) -> None:
        n, d = x.shape
        self.low_rank = 2 * n < d + 1
        if self.low_rank:
            self.x1 = torch.cat([x, torch.ones(n, 1, dtype=torch_dtype)], dim=1)
            inner = matmul(self.x1, self.x1.T) + torch.eye(n, dtype=torch_dtype) * (4.0 * n * lam)
            self.inner_inv = cholesky_inverse(cholesky(inner))
            self.lam = lam
        else:
            penalty = torch.full((d + 1,), lam, dtype=torch_dtype)
            penalty[-1] = 1e-12  # the intercept is unpenalised; keep the bound positive definite
            bound = _hessian_bound_gram(x) * (0.25 / n) + torch.diag(penalty)
            self.dense = cholesky_inverse(cholesky(bound))

    def matrix(self) -> torch.Tensor:
        """B^-1 as a (D+1, D+1) matrix (tests compare the two forms)."""
        if not self.low_rank:
            return self.dense
        return self(torch.eye(self.x1.shape[1], dtype=torch_dtype)[None])[0]

    def __call__(self, v: torch.Tensor) -> torch.Tensor:
        b, d1, k = v.shape
        flat = v.permute(1, 0, 2).reshape(d1, b * k)
        if self.low_rank:
            out = (flat - matmul(self.x1.T, matmul(self.inner_inv, matmul(self.x1, flat)))) / self.lam
        else:
            out = matmul(self.dense, flat)
        return out.reshape(d1, b, k).permute(1, 0, 2)


def line_search(
    objective: Objective,
    w: torch.Tensor,
    f: torch.Tensor,
    g: torch.Tensor,
    direction: torch.Tensor,
    slope: torch.Tensor,
    done: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Backtracking Armijo line search, one step size per problem: (w, f, g, accepted) after it.

    Problems already `done` keep their point. Near the optimum the decrease Armijo asks for
    (~|g|^2 / curvature, 1e-17 at |g| = 1e-9) is below float64's resolution of f, and the test
    passes or fails on rounding: fits then wandered for the full 2000 iterations. Where f has not
    changed beyond its rounding, Hager and Zhang's approximate Armijo condition decides from the
    gradient instead: slope at the trial point <= (2 delta - 1) x slope at 0, delta = 0.1
    (reached the minimum along the line or not far past it).
    """
    b = w.shape[0]
    step = torch.ones(b, dtype=torch_dtype)
    accepted = done.clone()
    w_new, f_new, g_new = w, f, g
    for _ in range(40):
        trial = w + step[:, None, None] * direction
        f_try, g_try = objective(trial)
        armijo = f_try <= f + 1e-4 * step * slope
        flat = (f_try - f).abs() <= F_NOISE * f.abs()
        approximate = flat & ((g_try * direction).sum(dim=(1, 2)) <= -0.8 * slope)
        ok = (armijo | approximate) & ~accepted
        sel = ok[:, None, None]
        w_new = torch.where(sel, trial, w_new)
        f_new = torch.where(ok, f_try, f_new)
        g_new = torch.where(sel, g_try, g_new)
        accepted |= ok
        if bool(accepted.all()):
            break
        step = torch.where(accepted, step, step * 0.5)
    return w_new, f_new, g_new, accepted


def _two_loop(
    g: torch.Tensor,
    s_hist: list[torch.Tensor],
    y_hist: list[torch.Tensor],
    rho_hist: list[torch.Tensor],
    precond: _Preconditioner,
) -> torch.Tensor:
    """The L-BFGS inverse-Hessian product H g per problem, H0 = gamma * precond."""
    q = g.clone()
    alphas = []
    for s, yy, rho in zip(reversed(s_hist), reversed(y_hist), reversed(rho_hist), strict=True):
        a = rho * (s * q).sum(dim=(1, 2))
        q -= a[:, None, None] * yy
        alphas.append(a)
    r = precond(q)
    if s_hist:
        s, yy = s_hist[-1], y_hist[-1]
        hy = precond(yy)
        yhy = (yy * hy).sum(dim=(1, 2))
        sy = (s * yy).sum(dim=(1, 2))
        gamma = torch.where((yhy > 0) & (sy > 0), sy / yhy.clamp_min(1e-300), torch.ones_like(sy))
        r = gamma[:, None, None] * r
    for (s, yy, rho), a in zip(zip(s_hist, y_hist, rho_hist, strict=True), reversed(alphas), strict=True):
        beta = rho * (yy * r).sum(dim=(1, 2))
        r += s * (a - beta)[:, None, None]
    return r


def predict_proba(coef: torch.Tensor, intercept: torch.Tensor, x: torch.Tensor, softmax: bool) -> torch.Tensor:
    """Probabilities (n, K) for softmax problems, (n, L) for the per-label problems."""
    weights, bias = output_weights(coef, intercept, softmax)
    logits = addmm(bias, x.to(torch_dtype), weights)
    return torch.softmax(logits, dim=1) if softmax else torch.sigmoid(logits)


def output_weights(coef: torch.Tensor, intercept: torch.Tensor, softmax: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(D, outputs) weights and (outputs,) biases of a solution, contiguous for fast products."""
    if softmax:
        return coef[0].contiguous(), intercept[0].contiguous()
    return coef[:, :, 0].T.contiguous(), intercept[:, 0].contiguous()

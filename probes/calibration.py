"""Post-hoc recalibration maps fitted on a calib split (METHODS.md §12, E2).

Only stored probabilities exist (no logits), so the maps act on log-probabilities,
which for a softmax probe equal its logits up to a per-row constant that softmax
ignores. For multiclass and ordinal tasks (K classes):

* temperature: softmax(log p / T), one T > 0 (Guo et al. 2017); keeps each row's
  class order, hence the top label;
* vector: softmax(w * log p + b), w >= 0 and b per class (Guo et al. 2017's diagonal
  variant); it can reorder classes within a row, so the top label may change;
* isotonic: one-vs-rest scikit-learn `IsotonicRegression` per class, rows renormalised
  (Zadrozny & Elkan 2002);
* dirichlet: multinomial logistic regression on log p (Kull et al. 2019, Dirichlet
  calibration with L2 penalty, scikit-learn `LogisticRegression`, lbfgs).

For multilabel tasks every map is its per-label binary version on p_j: temperature
sigmoid(logit p_j / T_j); vector sigmoid(w_j logit p_j + b_j), w_j >= 0 (Platt
scaling); isotonic per label; dirichlet = the two-class Dirichlet map, logistic
regression on (log p_j, log(1 - p_j)) (beta calibration). The binary temperature and
vector maps are increasing in p_j, so each label's ranking, and its AUROC, is unchanged.
NLL minimisation uses scipy L-BFGS-B with analytic gradients (both problems are convex).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, overload

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_softmax, softmax

from crsbench.core import InputError, Registry
from crsbench.ingest.types import Task
from crsbench.probes.checks import check_targets, first_offender

if TYPE_CHECKING:
    from sklearn.linear_model import LogisticRegression

# Scaling maps act on log p, so the floor only guards log(0): it must not merge small but
# distinct probabilities (that would break the order temperature scaling keeps).
TINY = float(np.finfo(np.float64).tiny)
ONE_BELOW = 1.0 - float(np.finfo(np.float64).epsneg)
# Dirichlet's log-features are clipped harder so the regression stays well conditioned.
DIRICHLET_EPS = 1e-7


class Calibrator(Protocol):
    def fit(self, p: np.ndarray, y: np.ndarray) -> Calibrator: ...

    def transform(self, p: np.ndarray) -> np.ndarray: ...


# Recalibration methods by name: a factory `task -> Calibrator` each (the classes below).
CALIBRATORS: Registry[Callable[[Task], Calibrator]] = Registry(
    "recalibration method", entry_point_group="crsbench.calibrators"
)


@overload
def _check(p: np.ndarray, y: np.ndarray, task: Task) -> tuple[np.ndarray, np.ndarray]: ...


@overload
def _check(p: np.ndarray, y: None, task: Task) -> tuple[np.ndarray, None]: ...


def _check(p: np.ndarray, y: np.ndarray | None, task: Task) -> tuple[np.ndarray, np.ndarray | None]:
    p = np.asarray(p)
    if p.ndim != 2 or p.shape[0] == 0:
        raise InputError(f"probabilities must be a non-empty (n, K) array, got shape {p.shape}")
    if p.dtype.kind not in "fiu":
        raise InputError(f"probabilities must be numeric, got dtype {p.dtype}")
    p = p.astype(np.float64, copy=False)
    finite = np.isfinite(p)
    if not finite.all():
        raise InputError(f"probabilities must be finite, got {first_offender(p, ~finite)}")
    if y is not None:
        y = np.asarray(y)
        expected = p.shape if task is Task.MULTILABEL else (p.shape[0],)
        if y.shape != expected:
            raise InputError(f"labels have shape {y.shape}, expected {expected} for {task}")
        check_targets(y, task, p.shape[1], p.shape[0])
    return np.clip(p, 0.0, 1.0), y


def _log(p: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.log(np.maximum(p, TINY))
    return out


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, TINY, ONE_BELOW)
    out: np.ndarray = np.log(p) - np.log1p(-p)
    return out


# -- scaling maps (temperature, vector) ---------------------------------------------------


def _fit_softmax_scaling(z: np.ndarray, y: np.ndarray, per_class: bool) -> tuple[np.ndarray, np.ndarray]:
    """Minimise the NLL of softmax(w * z + b); temperature = one w and no b."""
    n, k = z.shape
    onehot = np.eye(k)[y]
    n_w = k if per_class else 1

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w = theta[:n_w]
        b = theta[n_w:] if per_class else np.zeros(k)
        u = w * z + b
        logq = log_softmax(u, axis=1)
        resid = (np.exp(logq) - onehot) / n
        grad_w = (resid * z).sum(axis=0) if per_class else np.array([(resid * z).sum()])
        grad = np.concatenate([grad_w, resid.sum(axis=0)]) if per_class else grad_w
        return float(-(onehot * logq).sum() / n), grad

    theta0 = np.concatenate([np.ones(n_w), np.zeros(k if per_class else 0)])
    bounds = [(1e-6, None)] * n_w + [(None, None)] * (k if per_class else 0)
    res = minimize(loss, theta0, jac=True, method="L-BFGS-B", bounds=bounds)
    w = res.x[:n_w]
    b = res.x[n_w:] if per_class else np.zeros(k)
    return w, b


def _fit_sigmoid_scaling(z: np.ndarray, y: np.ndarray, with_bias: bool) -> tuple[float, float]:
    """Minimise the binary NLL of sigmoid(w * z + b), w >= 0 (b = 0 for temperature)."""
    n = len(z)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[0], (theta[1] if with_bias else 0.0)
        u = w * z + b
        # log(1 + e^u) - y u, computed stably
        nll = float(np.mean(np.logaddexp(0.0, u) - y * u))
        resid = (expit(u) - y) / n
        grad = [float((resid * z).sum())] + ([float(resid.sum())] if with_bias else [])
        return nll, np.array(grad)

    theta0 = np.array([1.0, 0.0] if with_bias else [1.0])
    bounds = [(1e-6, None)] + ([(None, None)] if with_bias else [])
    res = minimize(loss, theta0, jac=True, method="L-BFGS-B", bounds=bounds)
    return float(res.x[0]), float(res.x[1]) if with_bias else 0.0


class _Scaling:
    per_class = False

    def __init__(self, task: Task) -> None:
        self.task = task

    def fit(self, p: np.ndarray, y: np.ndarray) -> _Scaling:
        p, y = _check(p, y, self.task)
        if self.task is Task.MULTILABEL:
            z = _logit(p)
            params = [_fit_sigmoid_scaling(z[:, j], y[:, j].astype(float), self.per_class) for j in range(p.shape[1])]
            self.w = np.array([w for w, _ in params])
            self.b = np.array([b for _, b in params])
        else:
            self.w, self.b = _fit_softmax_scaling(_log(p), y.astype(int), self.per_class)
        return self

    def transform(self, p: np.ndarray) -> np.ndarray:
        p, _ = _check(p, None, self.task)
        out: np.ndarray
        out = (
            expit(self.w * _logit(p) + self.b)
            if self.task is Task.MULTILABEL
            else softmax(self.w * _log(p) + self.b, axis=1)
        )
        return out

    @property
    def temperature(self) -> np.ndarray:
        return 1.0 / self.w


@CALIBRATORS.register("temperature")
class TemperatureScaling(_Scaling):
    """softmax(log p / T) (multilabel: sigmoid(logit p_j / T_j))."""

    per_class = False


@CALIBRATORS.register("vector")
class VectorScaling(_Scaling):
    """softmax(w * log p + b), per-class w >= 0 and b (multilabel: Platt scaling per label)."""

    per_class = True


# -- isotonic ---------------------------------------------------------------------------------


@CALIBRATORS.register("isotonic")
class IsotonicCalibration:
    """One-vs-rest isotonic regression per class (rows renormalised) or per label."""

    def __init__(self, task: Task) -> None:
        self.task = task

    def fit(self, p: np.ndarray, y: np.ndarray) -> IsotonicCalibration:
        p, y = _check(p, y, self.task)
        targets = y if self.task is Task.MULTILABEL else np.eye(p.shape[1])[y.astype(int)]
        from sklearn.isotonic import IsotonicRegression  # scikit-learn loads when a calibrator fits

        self.maps = [
            IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(p[:, j], targets[:, j])
            for j in range(p.shape[1])
        ]
        return self

    def transform(self, p: np.ndarray) -> np.ndarray:
        p, _ = _check(p, None, self.task)
        q = np.column_stack([m.predict(p[:, j]) for j, m in enumerate(self.maps)])
        if self.task is Task.MULTILABEL:
            return q
        total = q.sum(axis=1, keepdims=True)
        # A row every class map sends to 0 carries no information left: make it uniform.
        return np.where(total > 0, q / np.where(total > 0, total, 1.0), 1.0 / q.shape[1])


# -- Dirichlet ---------------------------------------------------------------------------------


@CALIBRATORS.register("dirichlet")
class DirichletCalibration:
    """Multinomial logistic regression on log p (Kull et al. 2019); beta calibration per label."""

    def __init__(self, task: Task, c: float = 1.0) -> None:
        self.task, self.c = task, c

    def _features(self, p: np.ndarray, j: int | None = None) -> np.ndarray:
        p = np.clip(p, DIRICHLET_EPS, 1.0 - DIRICHLET_EPS)
        if j is None:
            logp: np.ndarray = np.log(p)
            return logp
        return np.column_stack([np.log(p[:, j]), np.log1p(-p[:, j])])

    def _fit_one(self, x: np.ndarray, y: np.ndarray) -> LogisticRegression | None:
        from sklearn.linear_model import LogisticRegression  # scikit-learn loads when a calibrator fits

        if len(np.unique(y)) < 2:
            return None  # one class only in calib: nothing to learn, keep p unchanged
        return LogisticRegression(C=self.c, max_iter=2000).fit(x, y)

    def fit(self, p: np.ndarray, y: np.ndarray) -> DirichletCalibration:
        p, y = _check(p, y, self.task)
        if self.task is Task.MULTILABEL:
            self.models = [self._fit_one(self._features(p, j), y[:, j]) for j in range(p.shape[1])]
        else:
            self.models = [self._fit_one(self._features(p), y.astype(int))]
        return self

    def transform(self, p: np.ndarray) -> np.ndarray:
        p, _ = _check(p, None, self.task)
        if self.task is Task.MULTILABEL:
            cols = [
                p[:, j] if m is None else m.predict_proba(self._features(p, j))[:, 1] for j, m in enumerate(self.models)
            ]
            return np.column_stack(cols)
        model = self.models[0]
        if model is None:
            renormed: np.ndarray = p / np.maximum(p.sum(axis=1, keepdims=True), TINY)
            return renormed
        q = np.zeros_like(p)
        # Classes absent from the calib split get probability 0.
        q[:, model.classes_] = model.predict_proba(self._features(p))
        return q


def make_calibrator(method: str, task: Task) -> Calibrator:
    return CALIBRATORS.get(method)(task)

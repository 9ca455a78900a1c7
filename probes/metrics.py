"""The run-record metrics (METHODS.md §4), defined once for the whole project.

Every metric takes `(y, p, task)`:

* multiclass / ordinal: `y` int class indices, shape (n,); `p` probabilities, shape (n, K);
* multilabel: `y` 0/1, shape (n, L); `p` probability of label = 1, shape (n, L).

Definitions (where conventions differ, this is the one crsbench uses):

* `macro_auroc`: one-vs-rest AUROC of each class (multiclass/ordinal) or of each label
  (multilabel), averaged. A class/label whose `y` holds only one of the two outcomes has
  no AUROC and is skipped from the mean; NaN if no class/label has one. Tied scores count
  half (the Mann-Whitney statistic, equal to `sklearn.metrics.roc_auc_score`).
* `ece`: 15 equal-width bins on [0, 1]; bin i holds confidences in [i/15, (i+1)/15), the
  last bin also holds 1.0. ECE = sum over bins of (bin size / n) * |accuracy - mean
  confidence|. Multiclass/ordinal: top-label (confidence = max p, correct = argmax == y,
  argmax ties go to the lowest class index). Multilabel: mean over labels of the binary
  ECE, i.e. the reliability of p(label = 1): bins of p(label = 1), comparing the mean p
  with the fraction of positives in each bin.
* `adaptive_ece`: the same with 15 equal-mass bins: the stably sorted confidences are cut
  into 15 consecutive groups whose sizes differ by at most one (`numpy.array_split`).
* `brier`: multiclass/ordinal: mean over samples of sum over classes of (p_k - onehot_k)^2;
  multilabel: mean over labels of the binary Brier score mean((p - y)^2).
* `nll`: mean negative log-likelihood of the true class (multiclass/ordinal); mean over
  labels of the binary log-loss (multilabel). Probabilities are clipped to [eps, 1 - eps]
  with eps = float64 machine epsilon (as scikit-learn's `log_loss`), so p = 0 or 1 gives a
  finite value (-log eps = 36.04 per sample) rather than infinity.
* `accuracy`: argmax == y; multilabel: mean over labels of (p >= 0.5) == y.
* `mean_confidence`: mean of max p; multilabel: mean over labels and samples of
  max(p, 1 - p), the confidence of the thresholded prediction that `accuracy` scores.
* `qwk` (ordinal only): Cohen's kappa with quadratic weights between argmax p and y over
  the K grades; `ordinal_mae` (ordinal only): mean |argmax p - y| in grades.
  Both are NaN for other tasks.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import numpy as np
import pandas as pd

from crsbench.core import CrsbenchError, Registry
from crsbench.core.schema import Column
from crsbench.ingest.types import Task
from crsbench.probes.checks import first_offender, numeric

N_BINS = 15
_EPS = float(np.finfo(np.float64).eps)

# The (y, p) pair all_metrics has validated, so each metric does not check it again.
_checked = threading.local()

MetricFn = Callable[[np.ndarray, np.ndarray, Task], float]


@dataclasses.dataclass(frozen=True)
class Metric:
    """A run-record metric: the function and the `runs` column it fills (DOUBLE, documented)."""

    fn: MetricFn
    column: Column
    # The closed range every finite value lies in (its doc says it in words); (-inf, inf) if unbounded.
    bounds: tuple[float, float] = (-np.inf, np.inf)

    @property
    def name(self) -> str:
        return self.column.name


def _make_metric(name: str, fn: MetricFn, *, doc: str, bounds: tuple[float, float] = (-np.inf, np.inf)) -> Metric:
    return Metric(fn, Column(name, "DOUBLE", doc), (float(bounds[0]), float(bounds[1])))


# Registration order is the column order of the run record (after its identity columns).
# Plugins: modules named in the `crsbench.metrics` entry-point group register theirs on first use.
METRICS: Registry[Metric] = Registry("metric", make=_make_metric, entry_point_group="crsbench.metrics")


def register_metric(
    name: str, doc: str, bounds: tuple[float, float] = (-np.inf, np.inf)
) -> Callable[[MetricFn], MetricFn]:
    """Decorator: `fn(y, p, task) -> float` fills run-record column `name`, documented by `doc`
    (what it is, range, which way is better, METHODS section); `bounds` is that range as numbers
    (every finite value lies in it). The column reaches the run record, the Parquet parts and the
    warehouse's `runs` view with no other change."""
    return METRICS.register(name, doc=doc, bounds=bounds)


def metric_columns() -> list[Column]:
    """The run-record columns of the registered metrics, in registration order."""
    return [m.column for m in METRICS.values()]


def check_predictions(y: np.ndarray, p: np.ndarray, task: Task | str) -> tuple[np.ndarray, np.ndarray, Task]:
    """Validate and normalise one (labels, probabilities) pair; raises CrsbenchError."""
    task = Task(task)
    trusted = getattr(_checked, "pair", None)
    if trusted is not None and trusted[0] is y and trusted[1] is p:
        return y, p, task  # all_metrics checked this very pair already
    y, p = np.asarray(y), np.asarray(p, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] == 0:
        raise CrsbenchError(f"probabilities must have shape (n, K) with n > 0, got {p.shape}")
    if not np.all(np.isfinite(p)) or p.min() < 0 or p.max() > 1:
        bad = ~((p >= 0) & (p <= 1))  # NaN compares false: flagged with the out-of-range values
        raise CrsbenchError(f"probabilities must be finite and within [0, 1], got {first_offender(p, bad)}")
    if task is Task.MULTILABEL:
        if y.shape != p.shape:
            raise CrsbenchError(f"multilabel y shape {y.shape} differs from p shape {p.shape}")
        bad = ~np.isin(y, (0, 1))
        if bad.any():
            raise CrsbenchError(f"multilabel y must hold only 0 and 1, got {first_offender(y, bad)}")
        return y.astype(np.int64), p, task
    if y.ndim != 1 or y.shape[0] != p.shape[0]:
        raise CrsbenchError(f"{task} y must have shape ({p.shape[0]},), got {y.shape}")
    y = numeric(y, f"{task} y (integer class indices)")
    with np.errstate(invalid="ignore"):
        fractional = ~np.isfinite(y) | (np.mod(y, 1) != 0)
    if fractional.any():
        raise CrsbenchError(f"{task} y must hold integer class indices, got {first_offender(y, fractional)}")
    y = y.astype(np.int64)
    if y.min() < 0 or y.max() >= p.shape[1]:
        bad = (y < 0) | (y >= p.shape[1])
        raise CrsbenchError(f"class index out of range [0, {p.shape[1]}) in y: {first_offender(y, bad)}")
    return y, p, task


# -- building blocks -----------------------------------------------------------------------


def _auroc_columns(target: np.ndarray, score: np.ndarray) -> list[float]:
    """Binary AUROC of each column (NaN where a column holds one outcome only)."""
    from scipy.stats import rankdata  # here: the run schema reads this module's registry, not scipy

    ranks = rankdata(score, axis=0)  # average ranks: ties count half
    pos = target == 1
    n_pos = pos.sum(axis=0)
    n_neg = target.shape[0] - n_pos
    rank_sum = np.where(pos, ranks, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return [float(a) if n_pos[j] and n_neg[j] else float("nan") for j, a in enumerate(auc)]


def _bin_gap(conf: np.ndarray, hit: np.ndarray, index: np.ndarray, n_bins: int) -> float:
    # sum over bins of (n_b / n) |acc_b - conf_b| = sum over bins of |sum hit - sum conf| / n
    hits = np.bincount(index, weights=hit, minlength=n_bins)
    confs = np.bincount(index, weights=conf, minlength=n_bins)
    return float(np.abs(hits - confs).sum() / conf.shape[0])


def width_bins(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """The equal-width bin (0 .. n_bins - 1) of each confidence; 1.0 falls in the last."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.minimum(np.searchsorted(edges[1:-1], conf, side="right"), n_bins - 1)


def _mass_bins(conf: np.ndarray, n_bins: int) -> np.ndarray:
    order = np.argsort(conf, kind="stable")
    sizes = [len(part) for part in np.array_split(order, min(n_bins, len(order)))]
    index = np.empty(len(conf), dtype=np.int64)
    index[order] = np.repeat(np.arange(len(sizes)), sizes)
    return index


def calibration_pairs(y: np.ndarray, p: np.ndarray, task: Task) -> list[tuple[np.ndarray, np.ndarray]]:
    """(confidence, outcome) pairs whose binned gap is averaged: one, or one per label."""
    if task is Task.MULTILABEL:
        return [(p[:, j], y[:, j].astype(np.float64)) for j in range(p.shape[1])]
    return [(p.max(axis=1), (p.argmax(axis=1) == y).astype(np.float64))]


def onehot(y: np.ndarray, k: int) -> np.ndarray:
    """Class indices (n,) -> one-hot float64 rows (n, k)."""
    out = np.zeros((y.shape[0], k))
    out[np.arange(y.shape[0]), y] = 1.0
    return out


# -- the metrics ---------------------------------------------------------------------------


@register_metric(
    "auroc",
    "Macro one-vs-rest AUROC over the classes (or labels) whose test labels hold both "
    "outcomes; ties count half. [0, 1], 0.5 = chance, higher is better. docs/METHODS.md §4.",
    bounds=(0.0, 1.0),
)
def macro_auroc(y: np.ndarray, p: np.ndarray, task: Task | str) -> float:
    y, p, task = check_predictions(y, p, task)
    target = y if task is Task.MULTILABEL else onehot(y, p.shape[1])
    scores = _auroc_columns(target, p)
    defined = [s for s in scores if not np.isnan(s)]
    return float(np.mean(defined)) if defined else float("nan")


@register_metric(
    "ece",
    "Expected calibration error, 15 equal-width confidence bins (top-label for "
    "multiclass/ordinal, mean of per-label binary ECE for multilabel). [0, 1], lower is "
    "better. docs/METHODS.md §4.",
    bounds=(0.0, 1.0),
)
def ece(y: np.ndarray, p: np.ndarray, task: Task | str, n_bins: int = N_BINS) -> float:
    y, p, task = check_predictions(y, p, task)
    gaps = [_bin_gap(c, h, width_bins(c, n_bins), n_bins) for c, h in calibration_pairs(y, p, task)]
    return float(np.mean(gaps))


@register_metric(
    "ece_adaptive",
    "Adaptive ECE: as ece with 15 equal-mass bins. [0, 1], lower is better. docs/METHODS.md §4.",
    bounds=(0.0, 1.0),
)
def adaptive_ece(y: np.ndarray, p: np.ndarray, task: Task | str, n_bins: int = N_BINS) -> float:
    y, p, task = check_predictions(y, p, task)
    gaps = [_bin_gap(c, h, _mass_bins(c, n_bins), n_bins) for c, h in calibration_pairs(y, p, task)]
    return float(np.mean(gaps))


@register_metric(
    "brier",
    "Brier score: mean squared error of the probabilities against the one-hot truth (summed "
    "over classes; mean over labels for multilabel). [0, 2] multiclass, [0, 1] multilabel; "
    "lower is better. docs/METHODS.md §4.",
    bounds=(0.0, 2.0),
)
def brier(y: np.ndarray, p: np.ndarray, task: Task | str) -> float:
    y, p, task = check_predictions(y, p, task)
    if task is Task.MULTILABEL:
        return float(np.mean((p - y) ** 2))
    return float(np.mean(np.sum((p - onehot(y, p.shape[1])) ** 2, axis=1)))


@register_metric(
    "nll",
    "Negative log-likelihood in nats (mean binary log-loss over labels for multilabel); "
    "probabilities clipped to float64 eps. >= 0, lower is better. docs/METHODS.md §4.",
    bounds=(0.0, np.inf),
)
def nll(y: np.ndarray, p: np.ndarray, task: Task | str) -> float:
    y, p, task = check_predictions(y, p, task)
    q = np.clip(p, _EPS, 1.0 - _EPS)
    if task is Task.MULTILABEL:
        return float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q)))
    return float(-np.mean(np.log(q[np.arange(len(y)), y])))


@register_metric(
    "accuracy",
    "Accuracy of the argmax (multilabel: mean over labels of (p >= 0.5) == y). [0, 1], higher"
    " is better. docs/METHODS.md §4.",
    bounds=(0.0, 1.0),
)
def accuracy(y: np.ndarray, p: np.ndarray, task: Task | str) -> float:
    y, p, task = check_predictions(y, p, task)
    if task is Task.MULTILABEL:
        return float(np.mean((p >= 0.5).astype(np.int64) == y))
    return float(np.mean(p.argmax(axis=1) == y))


@register_metric(
    "mean_confidence",
    "Mean over test images of the probability the probe gives its predicted class (max_k p_k; "
    "multilabel: mean over labels of max(p, 1 - p)). [0, 1]; neither direction is better: compare "
    "with accuracy (confidence above accuracy = overconfident). docs/METHODS.md §4.",
    bounds=(0.0, 1.0),
)
def mean_confidence(y: np.ndarray, p: np.ndarray, task: Task | str) -> float:
    y, p, task = check_predictions(y, p, task)
    if task is Task.MULTILABEL:
        return float(np.mean(np.maximum(p, 1.0 - p)))
    return float(np.mean(p.max(axis=1)))


@register_metric(
    "qwk",
    "Quadratic weighted kappa between argmax grade and true grade, ordinal tasks only (NaN "
    "otherwise). [-1, 1], 1 = perfect agreement, higher is better. docs/METHODS.md §4.",
    bounds=(-1.0, 1.0),
)
def qwk(y: np.ndarray, p: np.ndarray, task: Task | str) -> float:
    y, p, task = check_predictions(y, p, task)
    if task is not Task.ORDINAL:
        return float("nan")
    k = p.shape[1]
    pred = p.argmax(axis=1)
    observed = np.zeros((k, k))
    np.add.at(observed, (y, pred), 1.0)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / len(y)
    grades = np.arange(k)
    weights = (grades[:, None] - grades[None, :]) ** 2 / max((k - 1) ** 2, 1)
    denominator = float((weights * expected).sum())
    if denominator == 0.0:
        return float("nan")  # one grade only in both y and predictions: kappa undefined
    return float(1.0 - (weights * observed).sum() / denominator)


@register_metric(
    "ordinal_mae",
    "Mean absolute error in grades of the argmax grade, ordinal tasks only (NaN otherwise). "
    "[0, K - 1] grades, lower is better. docs/METHODS.md §4.",
    bounds=(0.0, np.inf),
)
def ordinal_mae(y: np.ndarray, p: np.ndarray, task: Task | str) -> float:
    y, p, task = check_predictions(y, p, task)
    if task is not Task.ORDINAL:
        return float("nan")
    return float(np.mean(np.abs(p.argmax(axis=1) - y)))


def reliability_bins(y: np.ndarray, p: np.ndarray, task: Task | str, n_bins: int = N_BINS) -> pd.DataFrame:
    """The reliability diagram behind `ece`: per equal-width bin, the summed confidence and
    outcomes and the count (pooled over labels for multilabel), so diagrams can be summed
    over seeds before dividing. Columns: bin, confidence_sum, outcome_sum, count."""
    y, p, task = check_predictions(y, p, task)
    conf = np.concatenate([c for c, _ in calibration_pairs(y, p, task)])
    hit = np.concatenate([h for _, h in calibration_pairs(y, p, task)])
    index = width_bins(conf, n_bins)
    return pd.DataFrame(
        {
            "bin": np.arange(n_bins),
            "confidence_sum": np.bincount(index, weights=conf, minlength=n_bins),
            "outcome_sum": np.bincount(index, weights=hit, minlength=n_bins),
            "count": np.bincount(index, minlength=n_bins),
        }
    )


def all_metrics(y: np.ndarray, p: np.ndarray, task: Task | str) -> dict[str, float]:
    """Every run-record metric of one evaluation, keyed by its `runs` column name."""
    y, p, task = check_predictions(y, p, task)
    _checked.pair = (y, p)  # per thread: the grid evaluates on a thread pool
    try:
        return {name: metric.fn(y, p, task) for name, metric in METRICS.items()}
    finally:
        _checked.pair = None

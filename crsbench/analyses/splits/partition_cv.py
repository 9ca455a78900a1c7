"""The partition classifier's pieces (METHODS.md §18.1): group-safe stratified folds, out-of-fold
scores of the primary logreg probe, and the AUROC with its clustered DeLong interval. Pure functions.

* Folds: `ingest.splits.stratified_group_split` with K equal ratios, stratified by side (pool or
  other) and over groups, so no patient or lesion is in two folds: an image's own group never
  trains the classifier that scores it (else identity would pass for shift).
* Scores: per fold, the features are standardised with the training folds' mean and standard
  deviation (std 0 -> 1, as the probes do) and the primary probe (`logreg`, lambda = 1/N_train on
  the mean loss, i.e. scikit-learn C = 1) is fitted as one binary label (sigmoid).
* Interval: DeLong et al. (1988) with the clustered variance of Obuchowski (1997): the structural
  components of the images of one group are summed before their variance is taken, so images
  of one patient count as one unit. With one image per group it is exactly DeLong's.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

import numpy as np
from scipy.stats import norm, rankdata

from crsbench.core import PRIMARY_PROBE, CrsbenchError
from crsbench.ingest.splits import stratified_group_split
from crsbench.ingest.types import Task
from crsbench.probes.registry import get_probe

# (x_train standardised, y_train 0/1 (n,)) -> scores of x_eval standardised (m,)
Fitter = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def group_folds(
    side: np.ndarray, groups: np.ndarray, k: int, seed: int | str, labels: np.ndarray | None = None
) -> np.ndarray:
    """Fold index 0..k-1 per image: whole groups (group-safe), stratified by `side` (0/1) and by
    side x label (`labels`: 0/1 matrix (n, L), one-hot for a multiclass task).

    Stratifying by label within each side matters: the official split is stratified by label, so
    a fold holding more of one class's test images leaves fewer of them in its training folds, and
    the classifier would learn "that class -> pool" and score the held-out ones below chance.
    """
    side = np.asarray(side, dtype=np.int64)
    columns = [side == 0, side == 1]
    if labels is not None and labels.size:
        positive = np.asarray(labels) > 0
        columns += [positive[:, j] & (side == s) for s in (0, 1) for j in range(positive.shape[1])]
    y = np.stack(columns, axis=1).astype(np.int64)
    folds: np.ndarray = stratified_group_split(y, np.asarray(groups, dtype=str), [1.0] * k, seed=f"partition|{seed}")
    return folds


def check_folds(side: np.ndarray, groups: np.ndarray, k: int, what: str) -> None:
    """One line naming the pair when either side has fewer groups than folds."""
    if k < 2:
        raise CrsbenchError(f"folds must be >= 2, got {k}")
    for value, name in ((0, "pool"), (1, "other side")):
        n = len(np.unique(np.asarray(groups)[np.asarray(side) == value]))
        if n < k:
            raise CrsbenchError(
                f"{what}: the {name} has {n} patient/lesion groups, fewer than the {k} folds "
                f"(lower --set folds=... to at most {n})"
            )


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one thread meanwhile: these fits are small (n ~ 10^2-10^4), where more threads only
    add synchronisation (measured 10-60x slower on a loaded 2-core machine); the probe sweep's
    workers do the same (`probes.executors`)."""
    import torch  # loaded when folds are fitted, not with the analysis registry

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def logreg_scores(x_train: np.ndarray, y_train: np.ndarray, x_eval: np.ndarray) -> np.ndarray:
    """p(other) of `x_eval` from the primary probe fitted as one binary label."""
    fit = get_probe(PRIMARY_PROBE).fit
    predictor = fit(x_train, y_train.astype(np.float64)[:, None], Task.MULTILABEL, 1, 0)
    return np.asarray(predictor(x_eval), dtype=np.float64)[:, 0]


def standardise(x_train: np.ndarray, x_eval: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both arrays scaled by the training rows' mean and std (std 0 -> 1), float64."""
    mean = x_train.mean(axis=0)
    std = x_train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (x_train - mean) / std, (x_eval - mean) / std


def out_of_fold_scores(
    x: np.ndarray, side: np.ndarray, folds: np.ndarray, fitter: Fitter = logreg_scores
) -> np.ndarray:
    """Each image's score from the classifier fitted on the other folds."""
    x = np.asarray(x, dtype=np.float64)
    scores = np.full(len(x), np.nan)
    for fold in np.unique(folds):
        held = folds == fold
        x_train, x_eval = standardise(x[~held], x[held])
        scores[held] = fitter(x_train, np.asarray(side)[~held], x_eval)
    return scores


def clustered_delong(
    positive: np.ndarray, score: np.ndarray, groups: np.ndarray, level: float = 0.95
) -> tuple[float, float, float]:
    """(AUROC, lo, hi): Mann-Whitney AUROC (ties count half) and its normal interval at `level` with
    the clustered DeLong variance. Every group must hold one side only (group-safe pairs do).

    V10_i = share of negatives scored below positive i (ties half), V01_j = share of positives
    scored above negative j; per group g the sums V_g and image counts m_g; with I positive
    groups of M images and J negative groups of N images:
    S10 = I / ((I - 1) M) sum_g (V10_g - m_g A)^2, S01 likewise, var(A) = S10 / M + S01 / N.
    """
    positive = np.asarray(positive, dtype=bool)
    score = np.asarray(score, dtype=np.float64)
    groups = np.asarray(groups, dtype=str)
    m, n = int(positive.sum()), int((~positive).sum())
    if m == 0 or n == 0:
        raise CrsbenchError("AUROC needs images on both sides")
    ranks_all = rankdata(score)
    v10 = (ranks_all[positive] - rankdata(score[positive])) / n
    v01 = 1.0 - (ranks_all[~positive] - rankdata(score[~positive])) / m
    auc = float(v10.mean())
    s10 = _clustered_s(v10, groups[positive], auc)
    s01 = _clustered_s(v01, groups[~positive], auc)
    if not (math.isfinite(s10) and math.isfinite(s01)):
        return auc, math.nan, math.nan
    half = float(norm.ppf(0.5 + level / 2)) * math.sqrt(s10 / m + s01 / n)
    return auc, max(0.0, auc - half), min(1.0, auc + half)


def _clustered_s(v: np.ndarray, groups: np.ndarray, mean: float) -> float:
    """I / ((I - 1) M) sum over the I groups of (sum of v in g - m_g mean)^2 (M = len(v), `mean`
    = A, the mean of V10 and of V01 alike); NaN for a single group."""
    codes, index = np.unique(groups, return_inverse=True)
    count = len(codes)
    if count < 2:
        return math.nan
    sums = np.bincount(index, weights=v, minlength=count)
    sizes = np.bincount(index, minlength=count).astype(np.float64)
    return float(count / ((count - 1) * len(v)) * np.sum((sums - sizes * mean) ** 2))

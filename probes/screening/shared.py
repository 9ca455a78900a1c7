"""Label-free work the estimators share: the centred Gram matrix of the smaller side, its spectrum,
and principal-component scores, computed once per feature matrix inside `shared_work()`.

`score.score_cell` opens `shared_work()` around one cell, so H-score, GBC, TransRate, N-LEEP and the
k-NN neighbour lists of a multilabel task's labels all reuse one Gram matrix and one neighbour
search. Outside it every call computes afresh (an estimator called on its own is still correct).

Memory stays O(K D^2 + N D) for N > D (K classes): Grams are accumulated over row blocks, so no
centred copy of the N x D features and no N x N matrix is formed. With a single-label cell's labels
the centred Gram is summed from the per-class Grams, which TransRate then takes over (one pass over
the rows for both). When D >= N the N x N Gram of the rows is the
smaller side and is used instead (the nonzero spectra of Z^T Z and Z Z^T coincide).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
BLOCK_ROWS = 8192  # rows per step of a blocked Gram: a (8192, D) float64 block, 64 MiB at D = 1024
_EPS = float(np.finfo(np.float64).eps)

_WORK: ContextVar[dict[tuple[str, int], tuple[Any, Any]] | None] = ContextVar("screen_shared_work", default=None)
_LABELS: ContextVar[tuple[np.ndarray, int] | None] = ContextVar("screen_cell_labels", default=None)


@contextmanager
def shared_work(labels: tuple[np.ndarray, int] | None = None) -> Iterator[None]:
    """Within the block, `memo` keeps each label-free result per feature matrix (by identity).

    `labels`, the (class indices, number of classes) of a single-label cell, let the centred Gram be
    summed from the per-class Grams that TransRate needs: one pass over the rows instead of two."""
    token, labels_token = _WORK.set({}), _LABELS.set(labels)
    try:
        yield
    finally:
        _WORK.reset(token)
        _LABELS.reset(labels_token)


def memo(x: np.ndarray, what: str, compute: Callable[[], T]) -> T:
    """`compute()`, once per (`what`, x) inside `shared_work()`; x is held so its id is not reused."""
    store = _WORK.get()
    if store is None:
        return compute()
    key = (what, id(x))
    if key not in store:
        store[key] = (x, compute())
    result: T = store[key][1]
    return result


def memoised(x: np.ndarray, what: str) -> Any:
    """What `memo` keeps for (`what`, x), or None."""
    store = _WORK.get()
    kept = None if store is None else store.get((what, id(x)))
    return None if kept is None else kept[1]


def forget(x: np.ndarray, what: str) -> Any:
    """Drop and return what `memo` keeps for (`what`, x), or None (large results used once)."""
    store = _WORK.get()
    kept = None if store is None else store.pop((what, id(x)), None)
    return None if kept is None else kept[1]


def row_blocks(n: int) -> Iterator[slice]:
    for start in range(0, n, BLOCK_ROWS):
        yield slice(start, min(n, start + BLOCK_ROWS))


def gram(x: np.ndarray, centre: np.ndarray | None = None, rows: np.ndarray | None = None) -> np.ndarray:
    """(D, D) sum over the chosen rows of (x_i - centre)(x_i - centre)^T, accumulated in row blocks."""
    picked = np.arange(x.shape[0]) if rows is None else rows
    out = np.zeros((x.shape[1], x.shape[1]))
    for part in row_blocks(len(picked)):
        block = x[picked[part]] if rows is not None else x[part]
        if centre is not None:
            block = block - centre
        out += block.T @ block
    return out


@dataclasses.dataclass(frozen=True)
class Spectrum:
    """Eigen-decomposition of the centred features' Gram matrix on the smaller side.

    by_features: Z^T Z (D x D, when D < N) = V diag(values) V^T, `vectors` = V (D, D);
    otherwise Z Z^T (N x N) = U diag(values) U^T, `vectors` = U (N, N). `values` descend and are
    clamped to 0 below the numerical-rank cutoff max(values) * max(N, D) * eps64.
    """

    mean: np.ndarray  # (D,) column means
    values: np.ndarray
    vectors: np.ndarray
    by_features: bool


def symmetric_eigen(g: np.ndarray, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending, clamped at the rank cutoff) and eigenvectors of a PSD Gram."""
    values, vectors = np.linalg.eigh(g)
    values, vectors = values[::-1], vectors[:, ::-1]
    cutoff = max(float(values[0]), 0.0) * max(n, d) * _EPS
    return np.where(values > cutoff, values, 0.0), vectors


def centred_gram(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(column means, Gram of the centred rows on the smaller side), shared within `shared_work()`:
    Z^T Z (D x D) when D < N, else Z Z^T (N x N)."""

    def compute() -> tuple[np.ndarray, np.ndarray]:
        mean = x.mean(axis=0)
        if x.shape[1] < x.shape[0]:
            labels = _LABELS.get()
            if labels is not None and len(labels[0]) == x.shape[0]:
                per_class = memo(x, CLASS_GRAMS, lambda: _all_class_grams(x, mean, *labels))
                return mean, np.sum(per_class, axis=0)
            return mean, gram(x, mean)
        z = x - mean
        return mean, z @ z.T

    return memo(x, "centred_gram", compute)


CLASS_GRAMS = "class_grams"


def _all_class_grams(x: np.ndarray, mean: np.ndarray, y: np.ndarray, n_classes: int) -> list[np.ndarray]:
    return [gram(x, mean, np.flatnonzero(y == c)) for c in range(n_classes)]


def class_grams(x: np.ndarray, y: np.ndarray, n_classes: int) -> list[np.ndarray]:
    """(D, D) Grams of each class's rows centred on the mean of all rows (D < N). They sum to the
    centred Gram: with that Gram known, the largest class's is the remainder (one pass fewer over
    its rows). Those kept for the cell's labels (`shared_work(labels=...)`) are handed over once."""
    labels = _LABELS.get()
    if labels is not None and labels[0] is y and labels[1] == n_classes:
        kept = forget(x, CLASS_GRAMS)
        if kept is not None:
            return list(kept)
    mean, total = centred_gram(x)
    largest = int(np.argmax(np.bincount(y, minlength=n_classes)))
    grams = [np.zeros_like(total) if c == largest else gram(x, mean, np.flatnonzero(y == c)) for c in range(n_classes)]
    grams[largest] = total - np.sum(grams, axis=0)
    return grams


def centred_spectrum(x: np.ndarray) -> Spectrum:
    """The `Spectrum` of x - mean(x), shared within `shared_work()`."""

    def compute() -> Spectrum:
        mean, g = centred_gram(x)
        values, vectors = symmetric_eigen(g, *x.shape)
        return Spectrum(mean, values, vectors, by_features=x.shape[1] < x.shape[0])

    return memo(x, "centred_spectrum", compute)


def target_coordinates(
    values: np.ndarray, vectors: np.ndarray, by_features: bool, targets: np.ndarray, cross: np.ndarray | None
) -> np.ndarray:
    """(r, K) coordinates U_+^T T of the targets on the left singular vectors of the features Z = U S V^T,
    zero where the singular value is zero. By features (`vectors` = V of Z^T Z) they come from
    cross = Z^T T as S^-1 V^T cross; by rows (`vectors` = U of Z Z^T) directly as U^T T."""
    coords: np.ndarray = vectors.T @ (cross if by_features else targets)
    positive = values > 0
    if by_features:
        coords[positive] /= np.sqrt(values[positive])[:, None]
    coords[~positive] = 0.0
    return coords


def one_hot(y: np.ndarray, n_classes: int) -> np.ndarray:
    """(n, K) float64 indicator columns of the class indices."""
    out = np.zeros((len(y), n_classes))
    out[np.arange(len(y)), y] = 1.0
    return out


def cross_products(x: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """(D, K) x^T targets, accumulated in row blocks."""
    out = np.zeros((x.shape[1], targets.shape[1]))
    for part in row_blocks(x.shape[0]):
        out += x[part].T @ targets[part]
    return out


def class_sums(x: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    """(D, K) x^T one_hot(y), each class's sum of rows; within `shared_work()` once per (x, y), for
    LogME and H-score (the centred version is this minus mean n_c^T, no second pass over the rows)."""
    what = f"class_sums:{id(y)}:{n_classes}"
    kept = memoised(x, what)
    if kept is not None and kept[0] is y:  # y held with the sums: its id cannot have been reused
        return np.asarray(kept[1])
    forget(x, what)
    labelled: tuple[np.ndarray, np.ndarray] = memo(x, what, lambda: (y, cross_products(x, one_hot(y, n_classes))))
    return labelled[1]


def principal_scores(x: np.ndarray, n_components: int) -> np.ndarray:
    """(n, k) scores of the centred rows on the top k = min(n_components, rank) principal axes;
    within `shared_work()` the widest projection made so far serves narrower requests."""
    spec = centred_spectrum(x)
    k = max(1, min(n_components, int(np.count_nonzero(spec.values))))
    if spec.by_features:
        widest = memoised(x, "principal_scores")
        if widest is None or widest.shape[1] < k:
            forget(x, "principal_scores")
            widest = memo(x, "principal_scores", lambda: _project(x, spec, k))
        return np.ascontiguousarray(widest[:, :k])
    scores: np.ndarray = spec.vectors[:, :k] * np.sqrt(spec.values[:k])  # Z = U S V^T: the scores Z V = U S
    return scores


def _project(x: np.ndarray, spec: Spectrum, k: int) -> np.ndarray:
    axes = np.ascontiguousarray(spec.vectors[:, :k])
    shift = spec.mean @ axes  # (x - mean) A = x A - mean A: no centred copy of the rows
    out = np.empty((x.shape[0], k))
    for part in row_blocks(x.shape[0]):
        np.matmul(x[part], axes, out=out[part])
        out[part] -= shift
    return out


def components_for_variance(x: np.ndarray, fraction: float) -> int:
    """The fewest principal components whose eigenvalues hold at least `fraction` of the total variance."""
    values = centred_spectrum(x).values
    cumulative = np.cumsum(values) / max(float(values.sum()), np.finfo(np.float64).tiny)
    return int(np.searchsorted(cumulative, fraction - 1e-12) + 1)

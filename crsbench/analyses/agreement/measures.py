"""Representation agreement between two encoders' features of the same images (METHODS.md §17).

Pure functions on in-memory arrays (rows = the same images in the same order for every encoder):

* `neighbour_lists`: each image's k nearest other images by cosine similarity of the
  L2-normalised features. The answer is defined in float64: the k rows j != i with the smallest
  squared distance |u_i - u_j|^2 of the normalised rows u (= 2 - 2 cos), ties to the lower row
  index. It is computed by the k-NN probe's exact search (`probes.knn`: float32 candidates, float64
  re-rank, proof bound, brute-force fallback), so the lists are the same on every CPU.
* `mutual_knn_scores`: |N_A(i) & N_B(i)| / k per image; the pair's score is their mean.
* `resampled_means` / `interval`: a percentile bootstrap over images whose resamples depend only on
  (n, replicates, seed), so every pair of a dataset is resampled on the same images.
* `linear_cka`: linear CKA (Kornblith et al. 2019) of the centred features.
* `composition_scores`: the share of an image's neighbours sharing its value of a field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from crsbench.core import CrsbenchError

if TYPE_CHECKING:
    from crsbench.probes.knn import SearchStats

BOOT_BLOCK = 100  # replicates drawn (and multiplied) together
# float32 candidates beyond k + 1 that are re-ranked in float64. The answer does not depend on it
# (the proof bound sends any query it does not cover to the exact brute force); the probe's 27
# re-ranks 3.5x more per query than k + 1 + 5, which dominates the search at D = 1024.
SEARCH_MARGIN = 5


def normalise(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm in float64 (an all-zero row stays zero)."""
    x64 = np.asarray(x, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", x64, x64))
    out: np.ndarray = x64 / np.where(norms > 0, norms, 1.0)[:, None]
    return out


def check_k(k: int, n: int, what: str = "the dataset") -> None:
    """k must be >= 1 and below n, with at least 2k images (one clear line otherwise)."""
    if k < 1:
        raise CrsbenchError(f"k = {k}: k must be at least 1")
    if k >= n:
        raise CrsbenchError(f"k = {k} is not below the {n} images of {what}; pass a smaller --k")
    if n < 2 * k:
        raise CrsbenchError(f"{what} has {n} images, fewer than 2k = {2 * k}; pass a smaller --k")


def neighbour_lists(x: np.ndarray, k: int, stats: SearchStats | None = None) -> np.ndarray:
    """(n, k) row indices of each row's k nearest other rows (cosine, exact, ties to the lower index)."""
    # Loaded here, not with the module: the analysis registry (read by `analyze --help` and every
    # `analyze`) imports every analysis, and torch costs seconds where this one does not run.
    import torch

    from crsbench.probes import knn as knn_search

    n = x.shape[0]
    check_k(k, n)
    u = torch.as_tensor(normalise(x))
    index = knn_search.prepare(u)
    # k + 1 including the row itself: dropping it leaves the k nearest others (when the row is
    # not among them, k + 1 earlier zero-distance duplicates were, and the first k are the answer).
    found = knn_search.neighbours(index, u, k + 1, stats=stats, margin=SEARCH_MARGIN).numpy()
    own = found == np.arange(n)[:, None]
    has_own = own.any(axis=1)
    keep = ~own
    keep[~has_own, k] = False
    out: np.ndarray = found[keep].reshape(n, k)
    return out


def mutual_knn_hits(na: np.ndarray, nb: np.ndarray, block: int = 8192) -> np.ndarray:
    """Per image |N_A(i) & N_B(i)| (an integer; the image's score is that / k) for two (n, k) lists."""
    if na.shape != nb.shape:
        raise ValueError(f"neighbour lists differ in shape: {na.shape} vs {nb.shape}")
    out = np.empty(na.shape[0], dtype=np.int64)
    for s in range(0, na.shape[0], block):
        a, b = na[s : s + block], nb[s : s + block]
        out[s : s + block] = (a[:, :, None] == b[:, None, :]).any(axis=2).sum(axis=1)
    return out


def mean_share(hits: np.ndarray, k: int) -> float:
    """sum(hits) / (n k), rounded once: the mean over images of hits / k, the same on every CPU."""
    return float(int(np.asarray(hits, dtype=np.int64).sum()) / (hits.shape[-1] * k))


def chance_overlap(k: int, n: int) -> float:
    """Expected mutual k-NN overlap of two unrelated neighbour lists: k / (n - 1)."""
    return k / (n - 1)


def resample_counts(n: int, replicates: int, seed: int) -> Iterator[np.ndarray]:
    """Blocks of (replicates, n) resample counts: how often each image is drawn in each replicate."""
    rng = np.random.default_rng([seed, n])
    for start in range(0, replicates, BOOT_BLOCK):
        size = min(BOOT_BLOCK, replicates - start)
        draws = rng.integers(0, n, size=(size, n))
        flat = (draws + (np.arange(size) * n)[:, None]).ravel()
        yield np.bincount(flat, minlength=size * n).reshape(size, n).astype(np.float64)


def resampled_means(hits: np.ndarray, k: int, replicates: int, seed: int) -> np.ndarray:
    """(P, replicates) mean shares (hits / k) of each row of integer `hits` (P, n) over the same
    image resamples. Products and sums of these integers are exact in float64 (far below 2^53),
    so a pair's replicates do not depend on which other pairs are computed with it."""
    hits = np.atleast_2d(np.asarray(hits, dtype=np.float64))
    n = hits.shape[1]
    blocks = [(hits @ counts.T) / (n * k) for counts in resample_counts(n, replicates, seed)]
    return np.concatenate(blocks, axis=1) if blocks else np.empty((hits.shape[0], 0))


def interval(means: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of each row of replicate means."""
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail], axis=1)
    return lo, hi


@dataclasses.dataclass(frozen=True)
class Centred:
    """One encoder's centred float64 features and |X^T X|_F (or |X X^T|_F), for CKA against many."""

    x: np.ndarray
    self_norm: float


def centre(x: np.ndarray, self_norm: float | None = None) -> Centred:
    """Centred float64 features; `self_norm` (as an earlier `centre` of the same x computed it)
    saves the D x D product when the same encoder is centred again."""
    xc = np.asarray(x, dtype=np.float64)
    xc = xc - xc.mean(axis=0)
    return Centred(xc, float(np.linalg.norm(_cross(xc, xc))) if self_norm is None else self_norm)


def _cross(xc: np.ndarray, yc: np.ndarray) -> np.ndarray:
    """X^T Y, or X Y^T when there are fewer images than features (same Frobenius norm on the diagonal)."""
    if xc.shape[0] < min(xc.shape[1], yc.shape[1]):
        return np.asarray(xc @ xc.T) if xc is yc else np.asarray(xc @ yc.T)
    return np.asarray(xc.T @ yc)


def linear_cka(a: Centred | np.ndarray, b: Centred | np.ndarray) -> float:
    """|X^T Y|_F^2 / (|X^T X|_F |Y^T Y|_F) of the centred features; 0 when either is constant."""
    ca = a if isinstance(a, Centred) else centre(a)
    cb = b if isinstance(b, Centred) else centre(b)
    if ca.self_norm == 0.0 or cb.self_norm == 0.0:
        return 0.0
    n = ca.x.shape[0]
    if n < min(ca.x.shape[1], cb.x.shape[1]):
        # trace(Kx Ky) with K = X X^T: the same number as |X^T Y|_F^2, cheaper when n < D
        hsic = float(np.einsum("ij,ij->", ca.x @ ca.x.T, cb.x @ cb.x.T))
    else:
        hsic = float(np.sum((ca.x.T @ cb.x) ** 2))
    return hsic / (ca.self_norm * cb.self_norm)


def composition_hits(neighbours: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per image: how many of its k neighbours have its code (label, group, field value); codes
    below 0 mean no value, which no neighbour shares."""
    codes = np.asarray(codes)
    same: np.ndarray = ((codes[neighbours] == codes[:, None]) & (codes[:, None] >= 0)).sum(axis=1)
    return same


def composition_chance(codes: np.ndarray) -> float:
    """The share expected of random neighbours among the n - 1 other images, over the n_v images
    with a value (codes >= 0): sum_v c_v (c_v - 1) / (n_v (n - 1))."""
    codes = np.asarray(codes)
    n = len(codes)
    _, counts = np.unique(codes[codes >= 0], return_counts=True)
    valued = int(counts.sum())
    return float((counts * (counts - 1)).sum() / (valued * (n - 1))) if valued and n > 1 else float("nan")

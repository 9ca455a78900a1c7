"""k-NN search: the float32 search + float64 re-rank returns the float64 brute force's neighbours."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.neighbors import NearestNeighbors
from support.synthetic import make_dataset, write_features

from crsbench.core import CLEAN
from crsbench.features.store import FeatureStore
from crsbench.ingest.types import Task
from crsbench.probes import knn
from crsbench.probes.registry import get_probe


def _numpy_brute_force(train: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Independent reference: float64 distances, lexicographic (distance, index) order."""
    out = []
    for q in queries:
        dist = ((train - q) ** 2).sum(axis=1)
        out.append(np.lexsort((np.arange(len(train)), dist))[:k])
    return np.array(out)


def _spectrum_features(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """Power-law spectrum like real embeddings, standardised."""
    z = rng.normal(size=(n, d)) * (np.arange(d) + 1.0) ** -0.5
    x = z @ np.linalg.qr(rng.normal(size=(d, d)))[0]
    return (x - x.mean(0)) / x.std(0)


def test_matches_sklearn_brute_force_on_spectrum_features():
    rng = np.random.default_rng(0)
    x = _spectrum_features(rng, 3000, 96)
    q = _spectrum_features(rng, 400, 96)
    stats = knn.SearchStats()
    ours = knn.neighbours(knn.prepare(torch.tensor(x)), torch.tensor(q), 5, stats=stats)
    ref = NearestNeighbors(n_neighbors=5, algorithm="brute").fit(x).kneighbors(q)[1]
    np.testing.assert_array_equal(np.sort(ours.numpy(), 1), np.sort(ref, 1))
    assert stats.queries == 400 and stats.fallbacks < 40  # the proof covers almost every query


def test_near_ties_and_exact_ties_follow_the_float64_order():
    rng = np.random.default_rng(1)
    base = _spectrum_features(rng, 500, 64)
    # Near-ties far below float32 resolution (1e-9 relative) and exact duplicate rows: the
    # float32 keys cannot order them, only the float64 re-rank (and the index rule) can.
    near = base[:200] + 1e-9 * rng.normal(size=(200, 64))
    dup = base[200:300].copy()
    x = np.concatenate([base, near, dup])
    perm = rng.permutation(len(x))
    x = x[perm]
    q = np.concatenate([base[:150] + 1e-3 * rng.normal(size=(150, 64)), base[200:260]])
    index = knn.prepare(torch.tensor(x))
    stats = knn.SearchStats()
    ours = knn.neighbours(index, torch.tensor(q), 5, stats=stats).numpy()
    np.testing.assert_array_equal(ours, knn.neighbours_exact(index, torch.tensor(q), 5).numpy())
    np.testing.assert_array_equal(ours, _numpy_brute_force(x, q, 5))
    # a tiny block size exercises the block loop
    small = knn.neighbours(index, torch.tensor(q), 5, block_bytes=4 * len(x) * 7).numpy()
    np.testing.assert_array_equal(small, ours)


def test_fallback_path_is_exact_when_candidates_cannot_be_proven(monkeypatch: pytest.MonkeyPatch):
    rng = np.random.default_rng(2)
    # 40 identical rows around each query: no margin can separate them in float32
    centres = rng.normal(size=(5, 16))
    x = np.repeat(centres, 40, axis=0) + 1e-12 * rng.normal(size=(200, 16))
    q = centres + 1e-6
    monkeypatch.setattr(knn, "MARGIN", 3)
    stats = knn.SearchStats()
    ours = knn.neighbours(knn.prepare(torch.tensor(x)), torch.tensor(q), 5, stats=stats).numpy()
    assert stats.fallbacks == 5
    np.testing.assert_array_equal(ours, _numpy_brute_force(x, q, 5))


def test_probe_votes_equal_the_previous_float64_implementation_on_suite_features(tmp_path):
    """The knn probe on generated-suite-shaped features: the same probabilities as the
    float64 brute force it replaced (topk over |t|^2 - 2 q.t; no ties in these data)."""
    ds = make_dataset("derm", Task.MULTICLASS, 1500, 7, seed=3)
    url = str(tmp_path / "f.zarr")
    ref = write_features(url, ds, "enc", 192, depths=(1.0,), latent=192, decay=1.0, signal=0.4)
    arr = FeatureStore(url).array(ref, 1.0, CLEAN)[:].astype(np.float64)
    train, test = ds.split_rows("train"), ds.split_rows("test")
    mean, std = arr[train].mean(0), arr[train].std(0)
    x, q = (arr[train] - mean) / std, (arr[test] - mean) / std
    y = ds.labels[train]
    ours = get_probe("knn").fit(x, y, Task.MULTICLASS, 7, 0)(q)
    t = torch.tensor(x)
    dist = (t * t).sum(1)[None, :] - 2.0 * torch.tensor(q) @ t.T
    order = torch.topk(dist, 5, dim=1, largest=False).indices.numpy()
    expected = np.eye(7)[y][order].mean(axis=1)
    np.testing.assert_array_equal(ours, expected)

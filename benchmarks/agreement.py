"""Benchmark: the agreement matrix (mutual k-NN at k = 10 plus linear CKA for every pair) against a
straightforward brute force, in the same run.

    .venv/bin/python benchmarks/agreement.py [--encoders 15] [--images 25000] [--dim 1024]
        [--threads 2] [--baseline-pairs 3]

Features: E synthetic encoders of the same N images, D dims, stored as float16 (read back as
float32, as `crsbench analyze agreement` reads a float16 store). Each encoder mixes 32 shared
latent factors (so neighbours overlap across encoders) with its own factors and noise, with
(j+1)^-1 scales like real embeddings.

* crsbench: `agreement_matrix` as the analysis runs it: each encoder's neighbour lists once
  (exact: float32 search, float64 re-rank, proof bound), then every pair's overlap, its
  1,000-replicate image bootstrap on shared resamples, and CKA in float64.
* baseline: what a research script does per pair (as platonic-rep's metrics): L2-normalise both
  encoders, cosine similarity matrices by torch float32 matmul in row blocks, top-k (self
  excluded) for both, intersect; CKA as |X^T Y|_F^2 / (|X^T X|_F |Y^T Y|_F) in float64 numpy.
  No bootstrap. It is timed on `--baseline-pairs` pairs and scaled to all E (E - 1) / 2 pairs.

Prints both times, the ratio, and the largest difference between the two sides' overlaps and
CKAs on the pairs both computed (the float32 baseline may break near-ties differently).
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
import torch

from crsbench.analyses.agreement import matrix as am
from crsbench.probes.knn import SearchStats

K = 10


def make_features(n_encoders: int, n: int, dim: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=(n, 32)).astype(np.float32)
    out = {}
    for e in range(n_encoders):
        own = rng.normal(size=(n, 32)).astype(np.float32)
        factors = np.concatenate([shared * (1.0 + 0.1 * e), own], axis=1) / (np.arange(64) + 1.0) ** 0.5
        mix = rng.normal(size=(64, dim)).astype(np.float32) / 8.0
        x = factors @ mix + 0.05 * rng.normal(size=(n, dim)).astype(np.float32)
        out[f"enc{e:02d}"] = x.astype(np.float16).astype(np.float32)
    return out


def brute_neighbours(x: np.ndarray, k: int, block: int = 4096) -> np.ndarray:
    u = torch.nn.functional.normalize(torch.as_tensor(x, dtype=torch.float32), dim=1)
    out = torch.empty(u.shape[0], k, dtype=torch.int64)
    for s in range(0, u.shape[0], block):
        sim = u[s : s + block] @ u.T
        sim[torch.arange(sim.shape[0]), torch.arange(s, s + sim.shape[0])] = -float("inf")
        out[s : s + block] = torch.topk(sim, k, dim=1).indices
    return out.numpy()


def brute_pair(x: np.ndarray, y: np.ndarray, k: int) -> tuple[float, float]:
    na, nb = brute_neighbours(x, k), brute_neighbours(y, k)
    overlap = float(np.mean([len(np.intersect1d(na[i], nb[i])) / k for i in range(len(na))]))
    xc, yc = x.astype(np.float64), y.astype(np.float64)
    xc, yc = xc - xc.mean(0), yc - yc.mean(0)
    cka = float(np.linalg.norm(xc.T @ yc) ** 2 / (np.linalg.norm(xc.T @ xc) * np.linalg.norm(yc.T @ yc)))
    return overlap, cka


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoders", type=int, default=15)
    ap.add_argument("--images", type=int, default=25_000)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--baseline-pairs", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    feats = make_features(args.encoders, args.images, args.dim)
    print(f"features: {args.encoders} x {args.images} x {args.dim} float16, made in {time.perf_counter() - t0:.0f} s")
    pairs = list(itertools.combinations(feats, 2))

    stats = SearchStats()
    t0 = time.perf_counter()
    lists = am.all_neighbours(feats, K, stats)
    t_lists = time.perf_counter() - t0
    t1 = time.perf_counter()
    frame = am.agreement_matrix(feats, K, replicates=1000, seed=0, neighbours=lists)
    t_pairs = time.perf_counter() - t1
    ours = t_lists + t_pairs
    print(
        f"crsbench: {ours:.0f} s for {len(pairs)} pairs (neighbour lists {t_lists:.0f} s, "
        f"{stats.fallbacks}/{stats.queries} queries by the float64 fallback; overlaps + bootstrap + CKA "
        f"{t_pairs:.0f} s)"
    )

    measured = pairs[: args.baseline_pairs]
    t0 = time.perf_counter()
    brute = {pair: brute_pair(feats[pair[0]], feats[pair[1]], K) for pair in measured}
    t_brute = time.perf_counter() - t0
    scaled = t_brute / len(measured) * len(pairs)
    by_pair = frame.set_index(["encoder_a", "encoder_b", "measure"])["estimate"]
    d_knn = max(abs(by_pair[(a, b, am.MUTUAL_KNN)] - v[0]) for (a, b), v in brute.items())
    d_cka = max(abs(by_pair[(a, b, am.CKA)] - v[1]) for (a, b), v in brute.items())
    print(
        f"brute force: {t_brute:.0f} s for {len(measured)} pairs -> {scaled:.0f} s scaled to {len(pairs)} pairs "
        f"(no bootstrap)"
    )
    print(
        f"ratio brute/crsbench: {scaled / ours:.1f}x; max |diff| on shared pairs: overlap {d_knn:.2e}, CKA {d_cka:.2e}"
    )
    knn = frame[frame["measure"] == am.MUTUAL_KNN]["estimate"]
    chance = K / (args.images - 1)
    print(f"mutual k-NN over pairs: mean {knn.mean():.3f} ({knn.min():.3f}-{knn.max():.3f}); chance {chance:.5f}")


if __name__ == "__main__":
    main()

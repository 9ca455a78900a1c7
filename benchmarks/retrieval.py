"""Benchmark: similar-case retrieval (`probes.retrieval.score.query_metrics`: precision@k, recall@k and
mAP@R under the task's relevances) of Q queries against a gallery of N cases in D dims, against a
numpy brute force of the same definitions on a slice of the queries, in one run.

    .venv/bin/python benchmarks/retrieval.py [--queries 25000] [--gallery 100000] [--dim 1024]
        [--classes 10] [--slice 200] [--threads 2]

Features: 64 latent factors with (j+1)^-1/2 scales mixed into D dims plus noise, a class signal
added, standardised with the gallery's mean and standard deviation; multiclass labels (relevance
same_label), k = 1, 5, 10. crsbench's side runs on `--threads` torch threads (its gemm and its
top-R selection); the brute force (direct float64 distances, a stable argsort of every distance,
the metrics by their definitions over the ranked list, numpy) runs on `--slice` queries and is scaled
linearly to all Q. The two sides' per-query values are compared (max absolute difference printed).
Target (issue 48): Q = 25,000, N = 100,000, D = 1,024 in <= 2 min on 2 cores.
"""

from __future__ import annotations

import argparse
import time

import _canonical  # noqa: F401  (canonical numerics before numpy and torch load)
import numpy as np
import torch

from crsbench.core.backends import backends_line, cpu_model
from crsbench.probes.retrieval.relevance import RELEVANCE
from crsbench.probes.retrieval.score import query_metrics

LATENT = 64
KS = (1, 5, 10)


def features(n: int, dim: int, labels: np.ndarray, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mix = np.random.default_rng(98).normal(size=(LATENT, dim)) / np.sqrt(LATENT)  # one embedding space
    centres = np.random.default_rng(99).normal(size=(k, LATENT))
    out = np.empty((n, dim))
    for start in range(0, n, 10_000):  # in blocks: no (n, LATENT) and (n, dim) temporaries beside the result
        y = labels[start : start + 10_000]
        factors = rng.normal(size=(len(y), LATENT)) / np.sqrt(np.arange(LATENT) + 1.0) + 0.3 * centres[y]
        out[start : start + len(y)] = factors @ mix + 0.5 * rng.normal(size=(len(y), dim))
    return out


def brute(queries: np.ndarray, gallery: np.ndarray, q_labels: np.ndarray, g_labels: np.ndarray) -> np.ndarray:
    """(q, 7) precision@1,5,10, recall@1,5,10, mAP@R by the definitions, one query at a time."""
    out = np.empty((len(queries), 7))
    for i, q in enumerate(queries):
        diff = gallery - q
        dist = np.einsum("ij,ij->i", diff, diff)
        del diff
        gains = (g_labels[np.argsort(dist, kind="stable")] == q_labels[i]).astype(np.float64)
        big_r = int(gains.sum())
        precision = np.cumsum(gains) / np.arange(1, len(gains) + 1)
        out[i] = [*(gains[:k].mean() for k in KS), *(float(gains[:k].any()) for k in KS),
                  float((gains[:big_r] * precision[:big_r]).sum() / big_r)]  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=25_000)
    parser.add_argument("--gallery", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--slice", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"cpu: {cpu_model()}; {backends_line()}")
    rng = np.random.default_rng(0)
    g_labels, q_labels = rng.integers(0, args.classes, args.gallery), rng.integers(0, args.classes, args.queries)
    gallery = features(args.gallery, args.dim, g_labels, args.classes, 1)
    mean, std = gallery.mean(axis=0), gallery.std(axis=0)
    gallery = (gallery - mean) / std
    queries = (features(args.queries, args.dim, q_labels, args.classes, 2) - mean) / std
    print(f"retrieval: {args.queries:,} queries x {args.gallery:,} gallery x D = {args.dim:,}, {args.classes} classes")

    start = time.perf_counter()
    ours = query_metrics(queries, gallery, q_labels, g_labels, [RELEVANCE.get("same_label")], KS)["same_label"]
    wall = time.perf_counter() - start
    print(f"crsbench query_metrics: {wall:.1f} s wall on {args.threads} threads (target <= 120 s)")

    picked = np.linspace(0, args.queries - 1, args.slice).astype(int)
    start = time.perf_counter()
    want = brute(queries[picked], gallery, q_labels[picked], g_labels)
    brute_s = time.perf_counter() - start
    scaled = brute_s * args.queries / args.slice
    names = [*(f"precision@{k}" for k in KS), *(f"recall@{k}" for k in KS), "map@r"]
    got = np.stack([ours[n][picked] for n in names], axis=1)
    print(
        f"numpy brute force: {brute_s:.1f} s for {args.slice} queries, {scaled:.0f} s scaled to {args.queries:,}: "
        f"{scaled / wall:.1f}x; max |difference| over the slice {np.abs(got - want).max():.2e}"
    )
    print("means: " + ", ".join(f"{n} {float(np.mean(ours[n])):.4f}" for n in names))


if __name__ == "__main__":
    main()

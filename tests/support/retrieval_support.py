"""Retrieval by its definitions alone (METHODS.md §24), for the tests of probes/retrieval and analysis
`retrieval`: direct float64 distances, a stable argsort, relevance by set arithmetic on each pair of
cases, and each metric as a loop over the ranked list."""

from __future__ import annotations

import numpy as np


def pair_gain(name: str, q, g) -> float:
    if name == "same_label":
        return float(q == g)
    if name == "within_one":
        return float(abs(int(q) - int(g)) <= 1)
    qs = {i for i, v in enumerate(q) if v} or {"none"}
    gs = {i for i, v in enumerate(g) if v} or {"none"}
    if name == "any_shared":
        return float(bool(qs & gs))
    return len(qs & gs) / len(qs | gs)  # jaccard


def _ap(seq: list[float], big_r: int) -> float:
    return sum(seq[j] * sum(seq[: j + 1]) / (j + 1) for j in range(big_r)) / big_r


def brute_metrics(
    queries, gallery, q_labels, g_labels, name: str, graded: bool, ks=(1, 5, 10)
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for q, ql in zip(queries, q_labels, strict=True):
        order = np.argsort(((gallery - q) ** 2).sum(axis=1), kind="stable")
        gains = [pair_gain(name, ql, g_labels[j]) for j in order]
        big_r = sum(1 for x in gains if x > 0)
        row = {}
        for k in ks:
            row[f"precision@{k}"] = sum(gains[:k]) / k if big_r else np.nan
            if not graded:
                row[f"recall@{k}"] = float(any(x > 0 for x in gains[:k])) if big_r else np.nan

        if big_r:
            ap, best = _ap(gains, big_r), _ap(sorted(gains, reverse=True), big_r)
            row["map@r"] = ap / best if graded else ap
        else:
            row["map@r"] = np.nan
        for key, value in row.items():
            out.setdefault(key, []).append(value)
    return out

"""The exact ranking of a gallery for each query (METHODS.md §24.2): squared Euclidean distance in
float64, ties to the lower gallery index, as `probes.knn` defines its neighbours.

Only the first `depth` places of each query are ordered: a float64 top-`depth` selection
(`torch.topk`), whose places are then sorted by (distance, gallery index). With exact distance ties
straddling place `depth`, the selection may keep the higher index; exact ties only arise from
identical feature vectors.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from crsbench.core.products import addmm

QUERY_BLOCK_BYTES = 1 << 27  # float64 distances (and as many gains) per block of queries: 128 MiB


def squared_distances(queries: torch.Tensor, gallery: torch.Tensor, gallery_sq: torch.Tensor) -> torch.Tensor:
    """(q, n) |q|^2 + |g|^2 - 2 q.g in float64."""
    q_sq = (queries * queries).sum(dim=1, keepdim=True)
    return addmm(gallery_sq[None, :] + q_sq, queries, gallery.T, alpha=-2.0)  # on OpenBLAS: the same bits on every CPU


def ordered_places(distances: torch.Tensor, depth: int) -> torch.Tensor:
    """(q, depth) gallery indices of the `depth` nearest, ordered by (distance, index)."""
    n = distances.shape[1]
    depth = min(depth, n)
    if depth >= n // 2:
        return torch.sort(distances, dim=1, stable=True).indices[:, :depth]
    values, picked = torch.topk(distances, depth, dim=1, largest=False, sorted=True)
    tied = (values[:, 1:] == values[:, :-1]).any(dim=1)  # topk orders equal distances arbitrarily
    if bool(tied.any()):
        rows = torch.nonzero(tied).flatten()
        chosen = torch.sort(picked[rows], dim=1).values  # index order, kept for ties by the stable sort
        order = torch.sort(torch.gather(distances[rows], 1, chosen), dim=1, stable=True).indices
        picked[rows] = torch.gather(chosen, 1, order)
    return picked


def query_blocks(
    queries: np.ndarray, gallery: np.ndarray, *, block_bytes: int | None = None
) -> Iterator[tuple[slice, torch.Tensor]]:
    """Per block of queries: (its rows, (b, n) float64 squared distances to every gallery case).
    `queries` (q, D) and `gallery` (n, D), both float64."""
    g = torch.from_numpy(np.ascontiguousarray(gallery, dtype=np.float64))
    g_sq = (g * g).sum(dim=1)
    q_all = torch.from_numpy(np.ascontiguousarray(queries, dtype=np.float64))
    rows = max(1, (block_bytes or QUERY_BLOCK_BYTES) // max(1, 8 * len(gallery)))
    for start in range(0, len(queries), rows):
        block = slice(start, min(start + rows, len(queries)))
        yield block, squared_distances(q_all[block], g, g_sq)

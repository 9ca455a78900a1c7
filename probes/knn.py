"""Exact k-nearest-neighbour search: a float32 blocked matmul, re-ranked in float64.

The answer is defined by float64 arithmetic: the k training rows with the smallest squared
Euclidean distance sum_j (q_j - t_j)^2 computed in float64, ties going to the lower
training row index. `neighbours_exact` computes exactly that by brute force; `neighbours`
returns the same indices at a fraction of the cost:

1. For a block of queries, float32 keys s(t) = |t|^2 - 2 q.t against every training row
   come from one sgemm (all torch threads), and the top k + MARGIN rows by key become
   candidates. The block height keeps the key matrix under `block_bytes`.
2. The candidates' float64 distances are recomputed and sorted by (distance, index).
3. Proof that nothing outside the candidates belongs in the top k: rounding makes the
   float32 key differ from the exact one by at most E(q), a worst-case bound (Higham's
   gamma_n for a length-D dot product plus the conversions, doubled for safety). Every
   non-candidate has a float32 key >= the largest candidate key S, so its exact key is
   >= S - E(q). When the k-th exact candidate key is strictly below that, the candidates
   hold the exact answer. Otherwise (a near-tie straddling the candidate boundary: rare
   on real features) that query is redone by the float64 brute force.

The bound holds for any summation order of the float32 product, but not for reduced
precision matmuls (`torch.set_float32_matmul_precision` other than "highest" may use
bfloat16 on some CPUs); then every query takes the float64 path.
"""

from __future__ import annotations

import dataclasses

import torch

from crsbench.core.products import addmm

MARGIN = 27  # extra float32 candidates per query (k + MARGIN in all)
BLOCK_BYTES = 1 << 28  # float32 key matrix per query block: 256 MiB
RERANK_BLOCK = 64  # queries re-ranked together: (64, k + MARGIN, D) float64
EXACT_BLOCK = 4096  # training rows per step of the brute force
EXACT_ELEMENTS = 1 << 22  # float64 differences per step of the brute force (32 MiB)
_U32 = 2.0**-24  # float32 unit roundoff
_U64 = 2.0**-53


@dataclasses.dataclass(frozen=True)
class TrainIndex:
    """A training set prepared once for many searches."""

    x64: torch.Tensor  # (N, D) float64, the rows themselves (shared, not copied)
    x32: torch.Tensor  # (N, D) float32 copy for the candidate search
    sq32: torch.Tensor  # (N,) float32 |t|^2
    max_norm: float  # max_t |t|, for the rounding bound


def prepare(train: torch.Tensor) -> TrainIndex:
    x64 = train.to(torch.float64)
    norms = torch.linalg.vector_norm(x64, dim=1)  # no (N, D) temporary; keys only need float32 |t|^2
    max_norm = float(norms.max()) if norms.numel() else 0.0
    return TrainIndex(x64, x64.to(torch.float32), norms.square().to(torch.float32), max_norm)


def _gamma(n: int, u: float) -> float:
    return n * u / (1.0 - n * u)


def _sqdist64(q: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """float64 sum_j (q_j - t_j)^2 along the last axis, broadcasting q over t's rows."""
    diff = t - q
    return (diff * diff).sum(dim=-1)


def neighbours_exact(index: TrainIndex, queries: torch.Tensor, k: int) -> torch.Tensor:
    """(n_queries, k) training row indices by float64 brute force, ties to the lower index."""
    q64 = queries.to(torch.float64)
    n, d = index.x64.shape
    out = torch.empty(q64.shape[0], k, dtype=torch.int64)
    t_step = max(1, min(n, EXACT_BLOCK))
    q_step = max(1, EXACT_ELEMENTS // (t_step * max(d, 1)))
    for qs in range(0, q64.shape[0], q_step):
        qb = q64[qs : qs + q_step, None, :]
        dist = torch.empty(qb.shape[0], n, dtype=torch.float64)
        for ts in range(0, n, t_step):
            dist[:, ts : ts + t_step] = _sqdist64(qb, index.x64[None, ts : ts + t_step])
        # a stable sort of rows already in index order breaks distance ties by index
        out[qs : qs + q_step] = torch.sort(dist, dim=1, stable=True).indices[:, :k]
    return out


@dataclasses.dataclass
class SearchStats:
    queries: int = 0
    fallbacks: int = 0  # queries the candidate proof did not cover, redone exactly


def neighbours(
    index: TrainIndex,
    queries: torch.Tensor,
    k: int,
    *,
    block_bytes: int = BLOCK_BYTES,
    stats: SearchStats | None = None,
    margin: int = MARGIN,
) -> torch.Tensor:
    """The same indices as `neighbours_exact`, by float32 search + float64 re-rank of the top
    k + `margin` float32 candidates (any margin gives the same answer; a small one re-ranks less
    and leaves more near-ties to the brute-force fallback)."""
    n, d = index.x64.shape
    q64 = queries.to(torch.float64)
    n_cand = min(n, k + max(0, margin))
    exact_only = n_cand == n or torch.get_float32_matmul_precision() != "highest"
    out = torch.empty(q64.shape[0], k, dtype=torch.int64)
    redo: list[int] = []
    # Worst-case float32 key error per unit of (2|q| max|t| + max|t|^2), doubled for safety,
    # plus float64 rounding of the re-ranked distances.
    g32 = 2.0 * _gamma(d + 8, _U32)
    g64 = 4.0 * _gamma(d + 8, _U64)
    rows = max(1, block_bytes // max(1, 4 * n))
    for start in range(0, q64.shape[0], rows):
        qb = q64[start : start + rows]
        if exact_only:
            redo.extend(range(start, start + qb.shape[0]))
            continue
        keys = addmm(index.sq32, qb.to(torch.float32), index.x32.T, alpha=-2.0)
        cand_keys, cand = torch.topk(keys, n_cand, dim=1, largest=False, sorted=False)
        del keys
        bound_key = cand_keys.max(dim=1).values.to(torch.float64)
        q_norm = qb.norm(dim=1)
        q_sq = (qb * qb).sum(dim=1)
        err = g32 * (2.0 * q_norm * index.max_norm + index.max_norm**2) + g64 * (q_norm + index.max_norm) ** 2
        for r0 in range(0, qb.shape[0], RERANK_BLOCK):
            c = torch.sort(cand[r0 : r0 + RERANK_BLOCK], dim=1).values  # index order for the tie rule
            dist = _sqdist64(qb[r0 : r0 + RERANK_BLOCK, None, :], index.x64[c])
            order = torch.sort(dist, dim=1, stable=True).indices[:, :k]
            out[start + r0 : start + r0 + c.shape[0]] = torch.gather(c, 1, order)
            kth = torch.gather(dist, 1, order[:, -1:])[:, 0] - q_sq[r0 : r0 + RERANK_BLOCK]
            proven = kth < bound_key[r0 : r0 + RERANK_BLOCK] - err[r0 : r0 + RERANK_BLOCK]
            redo.extend((start + r0 + torch.nonzero(~proven).flatten()).tolist())
    if redo:
        picked = torch.tensor(redo, dtype=torch.int64)
        out[picked] = neighbours_exact(index, q64[picked], k)
    if stats is not None:
        stats.queries += q64.shape[0]
        stats.fallbacks += len(redo)
    return out

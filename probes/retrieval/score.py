"""Every retrieval metric of every query, for each meaning of relevance of the task
(METHODS.md §24.2): the one entry point the analysis calls."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from crsbench.core import CrsbenchError
from crsbench.probes.retrieval.metrics import map_at_r, precision_at, recall_at
from crsbench.probes.retrieval.ranking import ordered_places, query_blocks
from crsbench.probes.retrieval.relevance import Relevance


def check_ks(ks: Sequence[int], n_gallery: int) -> tuple[int, ...]:
    """The cut-offs, each checked against the gallery's size, with a line naming the bad one."""
    out = tuple(sorted({int(k) for k in ks}))
    if not out or out[0] < 1:
        raise CrsbenchError(f"retrieval cut-offs {list(ks)}: give k >= 1")
    if out[-1] > n_gallery:
        raise CrsbenchError(
            f"retrieval cut-off k = {out[-1]} is larger than the gallery ({n_gallery} train images); "
            f"give k <= {n_gallery}"
        )
    return out


def metric_names(relevance: Relevance, ks: Sequence[int]) -> list[str]:
    """The metrics a relevance gets: precision@k, recall@k (binary relevance only), map@r."""
    recall = [] if relevance.graded else [f"recall@{k}" for k in ks]
    return [*(f"precision@{k}" for k in ks), *recall, "map@r"]


def query_metrics(
    queries: np.ndarray,
    gallery: np.ndarray,
    query_labels: np.ndarray,
    gallery_labels: np.ndarray,
    relevances: Sequence[Relevance],
    ks: Sequence[int],
) -> dict[str, dict[str, np.ndarray]]:
    """relevance -> metric -> (n_queries,) values (NaN for a query with no relevant gallery case);
    plus metric "relevant": R, the gallery cases relevant to each query."""
    ks = check_ks(ks, len(gallery))
    out = {r.name: {m: np.full(len(queries), np.nan) for m in [*metric_names(r, ks), "relevant"]} for r in relevances}
    for block, distances in query_blocks(queries, gallery):
        gains = {r.name: r.fn(query_labels[block], gallery_labels) for r in relevances}
        totals = {name: (g > 0).sum(axis=1) for name, g in gains.items()}
        depth = max(ks[-1], *(int(t.max()) for t in totals.values()))
        places = ordered_places(distances, depth).numpy()
        for r in relevances:
            ranked = np.take_along_axis(gains[r.name], places, axis=1)
            ideal = None
            if r.graded:
                ideal = torch.topk(torch.from_numpy(gains[r.name]), places.shape[1], dim=1).values.numpy()
            _fill(out[r.name], block, ranked, totals[r.name], ideal, ks, r.graded)
    return out


def _fill(
    into: dict[str, np.ndarray],
    block: slice,
    ranked: np.ndarray,
    totals: np.ndarray,
    ideal: np.ndarray | None,
    ks: Sequence[int],
    graded: bool,
) -> None:
    for k in ks:
        into[f"precision@{k}"][block] = precision_at(ranked, totals, k)
        if not graded:
            into[f"recall@{k}"][block] = recall_at(ranked, totals, k)
    into["map@r"][block] = map_at_r(ranked, totals, ideal)
    into["relevant"][block] = totals

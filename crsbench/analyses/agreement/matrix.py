"""Agreement of every pair of encoders on one set of images (METHODS.md §17).

`agreement_matrix` takes each encoder's feature matrix of the same images (same rows, same order),
computes each encoder's neighbour lists once and reuses them for every pair, and returns one row
per (pair, measure): mutual k-NN overlap with its bootstrap interval and chance level, and linear
CKA. `composition` gives, per encoder, the share of neighbours sharing a field's value.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crsbench.analyses.agreement import measures as m

if TYPE_CHECKING:
    from crsbench.probes.knn import SearchStats

MUTUAL_KNN = "mutual_knn"
CKA = "cka"
PAIR_COLUMNS = ["encoder_a", "encoder_b", "k", "measure", "estimate", "lo", "hi", "chance", "n_images"]
COMPOSITION_COLUMNS = ["encoder_id", "k", "field", "estimate", "lo", "hi", "chance", "n_images"]

Progress = Callable[[str, int, int], None]


def _quiet(what: str, done: int, total: int) -> None:
    return None


def all_neighbours(
    features: Mapping[str, np.ndarray], k: int, stats: SearchStats | None = None, progress: Progress = _quiet
) -> dict[str, np.ndarray]:
    """Each encoder's (n, k) neighbour lists, computed once."""
    out: dict[str, np.ndarray] = {}
    for i, (name, x) in enumerate(features.items()):
        out[name] = m.neighbour_lists(x, k, stats)
        progress("neighbour lists", i + 1, len(features))
    return out


def agreement_matrix(
    features: Mapping[str, np.ndarray],
    k: int,
    *,
    replicates: int,
    seed: int,
    neighbours: Mapping[str, np.ndarray] | None = None,
    pairs: list[tuple[str, str]] | None = None,
    cka: bool = True,
    progress: Progress = _quiet,
) -> pd.DataFrame:
    """One row per (encoder_a < encoder_b, measure); `pairs` restricts which (default all)."""
    names = list(features)
    if not names:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    n = next(iter(features.values())).shape[0]
    lists = dict(neighbours) if neighbours is not None else all_neighbours(features, k, progress=progress)
    chosen = pairs if pairs is not None else list(itertools.combinations(names, 2))
    hits = np.stack([m.mutual_knn_hits(lists[a], lists[b]) for a, b in chosen]) if chosen else np.empty((0, n))
    lo, hi = m.interval(m.resampled_means(hits, k, replicates, seed)) if chosen else (np.empty(0), np.empty(0))
    chance = m.chance_overlap(k, n)
    rows = [
        {
            "encoder_a": a,
            "encoder_b": b,
            "k": k,
            "measure": MUTUAL_KNN,
            "estimate": m.mean_share(hits[p], k),
            "lo": float(lo[p]),
            "hi": float(hi[p]),
            "chance": chance,
            "n_images": n,
        }
        for p, (a, b) in enumerate(chosen)
    ]
    if cka:
        rows.extend(_cka_rows(features, chosen, k, n, progress))
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def _cka_rows(
    features: Mapping[str, np.ndarray], chosen: list[tuple[str, str]], k: int, n: int, progress: Progress
) -> list[dict[str, object]]:
    """CKA per pair: each encoder's |X^T X|_F once; encoder_a stays centred while its pairs run."""
    rows: list[dict[str, object]] = []
    held: tuple[str, m.Centred] | None = None
    norms: dict[str, float] = {}

    def centred(name: str) -> m.Centred:
        c = m.centre(features[name], norms.get(name))
        norms[name] = c.self_norm
        return c

    for p, (a, b) in enumerate(chosen):
        if held is None or held[0] != a:
            held = (a, centred(a))
        cb = centred(b)
        value = m.linear_cka(held[1], cb)
        rows.append(
            {
                "encoder_a": a,
                "encoder_b": b,
                "k": None,
                "measure": CKA,
                "estimate": value,
                "lo": None,
                "hi": None,
                "chance": None,
                "n_images": n,
            }
        )
        progress("CKA", p + 1, len(chosen))
    return rows


def composition(
    neighbours: Mapping[str, np.ndarray], fields: Mapping[str, np.ndarray], *, replicates: int, seed: int
) -> pd.DataFrame:
    """Per (encoder, field): mean share of neighbours sharing the image's value, interval and chance.

    A field's codes are integers, -1 where an image has no value (a metadata key it lacks): such an
    image is left out of the field's mean (n_images counts the others), and as a neighbour it never
    shares a value. Fields with the same images valued share one resampling of those images."""
    rows: list[dict[str, object]] = []
    masks = {name: np.asarray(codes) >= 0 for name, codes in fields.items()}
    for name, lists in neighbours.items():
        k = lists.shape[1]
        by_mask: dict[bytes, list[str]] = {}
        for field, mask in masks.items():
            if mask.any():
                by_mask.setdefault(mask.tobytes(), []).append(field)
        found: dict[str, dict[str, object]] = {}
        for names in by_mask.values():
            mask = masks[names[0]]
            hits = np.stack([m.composition_hits(lists, fields[f])[mask] for f in names])
            lo, hi = m.interval(m.resampled_means(hits, k, replicates, seed))
            for f, field in enumerate(names):
                found[field] = {
                    "encoder_id": name,
                    "k": k,
                    "field": field,
                    "estimate": m.mean_share(hits[f], k),
                    "lo": float(lo[f]),
                    "hi": float(hi[f]),
                    "chance": m.composition_chance(fields[field]),
                    "n_images": int(mask.sum()),
                }
        rows.extend(found[f] for f in fields if f in found)
    return pd.DataFrame(rows, columns=COMPOSITION_COLUMNS)

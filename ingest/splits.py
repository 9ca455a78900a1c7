"""Train / calib / test splits and nested label-fraction subsets (METHODS.md §1). Pure functions.

Both take a binary stratification matrix `Y` (n rows x K classes or labels; one-hot
for multiclass/ordinal tasks) so one algorithm serves every task type.

Splits use iterative stratification (Sechidis et al., 2011) over *groups*: the rarest
remaining label is placed first, each of its groups going to the split that still
needs that label most, so rare classes are spread by the target ratios and no group
(patient, lesion) is ever cut. Official splits are kept: rows with a fixed split pin
their whole group, and only the remaining rows are distributed, over the splits that
have no fixed rows, with the default ratios renormalised (e.g. CheXpert: valid.csv is
the test split, train.csv is carved 75 / 25 into train / calib).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from crsbench.core import FRACTION_SEEDS, LABEL_FRACTIONS, SPLITS, InputError

DEFAULT_RATIOS: tuple[float, float, float] = (0.6, 0.2, 0.2)
SPLIT_SEED = 20190101


def _rng(*parts: object) -> np.random.Generator:
    # A seed derived from text, so it is identical across processes and platforms.
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def one_hot(labels: np.ndarray, n_classes: int) -> np.ndarray:
    """Class indices (n,) -> 0/1 matrix (n, n_classes); a multilabel matrix passes through."""
    labels = np.asarray(labels)
    if labels.ndim == 2:
        return (labels > 0).astype(np.int64)
    out = np.zeros((len(labels), n_classes), dtype=np.int64)
    out[np.arange(len(labels)), labels.astype(np.int64)] = 1
    return out


def stratified_group_split(
    Y: np.ndarray, groups: Sequence[str] | np.ndarray, ratios: Sequence[float], seed: int | str = SPLIT_SEED
) -> np.ndarray:
    """Assign each row to one of len(ratios) parts: stratified by Y's columns, whole groups.

    Returns the part index per row. Deterministic for the same inputs and seed
    (group order is fixed by sorting the group ids, then shuffled by the seed).
    """
    Y = np.asarray(Y, dtype=np.int64)
    n = len(Y)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    ratios_arr = np.asarray(ratios, dtype=float)
    ratios_arr = ratios_arr / ratios_arr.sum()
    uniq, inv = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
    g_y = np.zeros((len(uniq), Y.shape[1]), dtype=np.int64)
    np.add.at(g_y, inv, Y)
    g_size = np.bincount(inv, minlength=len(uniq)).astype(float)
    rng = _rng("split", seed)
    order = rng.permutation(len(uniq))
    need_label = ratios_arr[:, None] * g_y.sum(axis=0)[None, :].astype(float)
    need_size = ratios_arr * n
    left = g_y.sum(axis=0).astype(float)
    remaining = np.ones(len(uniq), dtype=bool)
    part = np.full(len(uniq), -1, dtype=np.int64)

    def place(g: int, k: int | None) -> None:
        key_label = need_label[:, k] if k is not None else np.zeros(len(ratios_arr))
        # Most-needed label first, then most-needed size; the last key breaks exact ties
        # at random so no split is systematically favoured.
        tie = rng.random(len(ratios_arr))
        s = int(np.lexsort((tie, need_size, key_label))[-1])
        part[g] = s
        need_label[s] -= g_y[g]
        need_size[s] -= g_size[g]
        left[:] -= g_y[g]
        remaining[g] = False

    while remaining.any():
        active = np.flatnonzero(left > 0)
        if active.size == 0:
            for g in order[remaining[order]]:
                place(int(g), None)
            break
        k = int(active[np.argmin(left[active])])
        for g in order:
            if remaining[g] and g_y[g, k] > 0:
                place(int(g), k)
    return part[inv]


def assign_splits(
    Y: np.ndarray,
    groups: Sequence[str],
    fixed: Sequence[str | None],
    ratios: Sequence[float] = DEFAULT_RATIOS,
    seed: int | str = SPLIT_SEED,
) -> np.ndarray:
    """Split name per row: official splits kept, the rest stratified and group-safe.

    `fixed` holds a split name ('train' | 'calib' | 'test') for rows whose source
    defines one, None otherwise. A group with a fixed row follows that split; a group
    fixed to two different splits is an InputError naming it.
    """
    groups_arr = np.asarray(groups, dtype=str)
    fixed_arr = np.array([f if f is not None else "" for f in fixed], dtype=object)
    out = fixed_arr.copy()
    group_split: dict[str, str] = {}
    for g, f in zip(groups_arr.tolist(), fixed_arr.tolist(), strict=True):
        if not f:
            continue
        if f not in SPLITS:
            raise InputError(f"unknown split {f!r} for group {g!r}; expected one of {SPLITS}")
        prev = group_split.setdefault(g, f)
        if prev != f:
            raise InputError(f"group {g!r} appears in both the {prev} and the {f} split of the source")
    for i, (g, f) in enumerate(zip(groups_arr.tolist(), fixed_arr.tolist(), strict=True)):
        if not f and g in group_split:
            out[i] = group_split[g]
    free = np.flatnonzero(out == "")
    if free.size:
        open_splits = [s for s in SPLITS if s not in set(group_split.values())]
        if not open_splits:
            raise InputError("some rows have no split although the source defines all three splits")
        sub_ratios = [ratios[SPLITS.index(s)] for s in open_splits]
        parts = stratified_group_split(np.asarray(Y)[free], groups_arr[free], sub_ratios, seed)
        out[free] = np.asarray(open_splits, dtype=object)[parts]
    return out.astype(str)


def check_group_safe(groups: Sequence[str], splits: Sequence[str] | np.ndarray) -> None:
    """InputError naming the first group found in more than one split."""
    seen: dict[str, str] = {}
    for g, s in zip(map(str, groups), map(str, splits), strict=True):
        if seen.setdefault(g, s) != s:
            raise InputError(f"group {g!r} appears in both the {seen[g]} and the {s} split")


def fraction_sizes(n: int, n_cover: int, fractions: Sequence[float] = LABEL_FRACTIONS) -> dict[float, int]:
    """Rows in each subset: ceil(f * n), at least the rows needed for one positive per label."""
    return {f: n if f >= 1.0 else min(n, max(n_cover, math.ceil(f * n - 1e-9))) for f in fractions}


def fraction_order(Y: np.ndarray, seed: int) -> tuple[np.ndarray, int]:
    """An ordering of the train rows whose every prefix is a stratified subset.

    The first rows ("cover") hold at least one positive of every label, rarest label
    first; the rest are interleaved by stratum (each row's rarest positive label, or
    'none') at evenly spaced jittered positions, so a prefix of length m holds about
    m * n_k / n rows of stratum k. Returns (order, n_cover).
    """
    Y = np.asarray(Y, dtype=np.int64)
    n, k = Y.shape
    rng = _rng("fractions", seed)
    counts = Y.sum(axis=0)
    rarest_first = np.argsort(counts, kind="stable")
    cover: list[int] = []
    covered = np.zeros(k, dtype=bool)
    for label in rarest_first:
        if covered[label] or counts[label] == 0:
            continue
        candidates = np.flatnonzero(Y[:, label] > 0)
        pick = int(rng.choice(candidates))
        cover.append(pick)
        covered |= Y[pick] > 0
    rank = np.empty(k, dtype=np.int64)
    rank[rarest_first] = np.arange(k)
    stratum = np.where(Y.any(axis=1), np.argmin(np.where(Y > 0, rank[None, :], k), axis=1), k)
    key = np.full(n, np.inf)
    in_cover = np.zeros(n, dtype=bool)
    in_cover[cover] = True
    for s in np.unique(stratum):
        members = np.flatnonzero((stratum == s) & ~in_cover)
        members = members[rng.permutation(len(members))]
        key[members] = (np.arange(len(members)) + rng.random(len(members))) / max(len(members), 1)
    rest = np.flatnonzero(~in_cover)
    rest = rest[np.argsort(key[rest], kind="stable")]
    return np.concatenate([np.asarray(cover, dtype=np.int64), rest]), len(cover)


def label_fraction_subsets(
    Y: np.ndarray,
    image_ids: Sequence[str],
    fractions: Sequence[float] = LABEL_FRACTIONS,
    seeds: Sequence[int] = FRACTION_SEEDS,
) -> pd.DataFrame:
    """Nested stratified subsets of the train rows: frame (seed, fraction, image_id).

    For each seed, subset(f) is a prefix of one stratified ordering, so the subsets
    nest (1 % c 5 % c ... c 100 %) and each keeps >= 1 positive per label present in Y.
    Rows are sorted by seed, fraction, image_id.
    """
    ids = np.asarray(image_ids, dtype=object)
    Y = np.asarray(Y)
    if len(ids) != len(Y):
        raise ValueError("image_ids and Y have different lengths")
    frames = []
    for seed in seeds:
        order, n_cover = fraction_order(Y, seed)
        for f, m in fraction_sizes(len(ids), n_cover, fractions).items():
            chosen = np.sort(ids[order[:m]].astype(str))
            frames.append(pd.DataFrame({"seed": np.int64(seed), "fraction": float(f), "image_id": chosen}))
    if not frames:
        return pd.DataFrame(
            {
                "seed": pd.Series(dtype="int64"),
                "fraction": pd.Series(dtype="float64"),
                "image_id": pd.Series(dtype="str"),
            }
        )
    return pd.concat(frames, ignore_index=True)

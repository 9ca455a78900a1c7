"""What a bootstrap replicate draws: seed multisets per dataset and test images per eval dataset.

Seeds: per dataset, one multiset of that dataset's seeds with replacement (as many draws as
seeds), applied to every encoder (paired). Images: per eval dataset, the test set resampled
stratified by class and grouped by patient: the resampling unit is a group (`images.group_id`,
the image itself where a dataset has no groups), in the stratum `crsbench.ingest.strata` gives it
(the rarest class it holds, multiclass/ordinal; its lowest-index positive label, multilabel;
strata of fewer than 2 units pooled), and each stratum draws as many units as it holds. The same
draw weights every encoder, condition, fraction and seed of that eval dataset, which is what
pairs the comparison. A draw is stored as integer weights: image i drawn w_i times
(`probes.weighted_metrics` scores the stored predictions with them).

Replicate 0 is the identity everywhere (every seed once, every image once): the point estimate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crsbench.core import CrsbenchError
from crsbench.ingest.strata import resample_strata, units_by_label, unsupported
from crsbench.ingest.types import Task
from crsbench.warehouse.connection import Warehouse


@dataclass(frozen=True)
class EvalImages:
    """An eval dataset's test images in store row order, with labels and resampling units."""

    dataset_id: str
    task: Task
    row_index: np.ndarray  # (n,) store rows of the test images, ascending
    labels: np.ndarray  # (n,) class index, or (n, L) 0/1 for multilabel
    unit: np.ndarray  # (n,) resampling unit (group) code per image
    stratum: np.ndarray  # (n_units,) stratum code per unit
    stratum_names: list[str]
    notes: tuple[str, ...] = ()  # how small strata were pooled
    unsupported: str | None = None  # why the split cannot support the image bootstrap (ingest.strata)


@dataclass(frozen=True)
class SeedDraws:
    """`draws` (combo, seed): one row per seed drawn; `combos` (replicate, dataset_id, combo,
    version) for replicates 0..R. A combo is what one replicate's cells of one dataset are
    computed from: a seed multiset and a version of the run metrics (0 = the stored ones,
    r = replicate r's image draw). Replicates that share both share the combo."""

    draws: pd.DataFrame
    combos: pd.DataFrame


def eval_images(wh: Warehouse, dataset_id: str) -> EvalImages:
    """The test split of a dataset with labels, groups and the strata described above."""
    meta = wh.con.execute("select task, label_names from datasets where dataset_id = ?", [dataset_id]).fetchone()
    if meta is None:
        raise CrsbenchError(f"dataset {dataset_id!r} is not in the warehouse")
    task, names = Task(meta[0]), list(meta[1])
    images = wh.sql(
        "select row_index, image_id, coalesce(group_id, image_id) as grp from images "
        "where dataset_id = ? and split = 'test' order by row_index",
        [dataset_id],
    )
    long = wh.sql(
        "select l.image_id, l.label_idx from labels l join images i "
        "on i.dataset_id = l.dataset_id and i.image_id = l.image_id "
        "where l.dataset_id = ? and i.split = 'test' and l.value = 1",
        [dataset_id],
    )
    position = pd.Series(np.arange(len(images)), index=images["image_id"])
    onehot = np.zeros((len(images), len(names)), dtype=np.int64)
    onehot[position.loc[long["image_id"]].to_numpy(), long["label_idx"].to_numpy()] = 1
    unit, _ = pd.factorize(images["grp"])
    per_unit = units_by_label(unit, onehot)
    multilabel = task is Task.MULTILABEL
    strata = resample_strata(per_unit, names, multilabel)
    notes = []
    if strata.pooled:
        into = f"joined stratum {strata.joined!r}" if strata.joined else "were pooled into one stratum"
        notes.append(
            f"{dataset_id}: test strata of fewer than 2 groups ({', '.join(strata.pooled)}) {into} (METHODS.md §10.2)"
        )
    return EvalImages(
        dataset_id,
        task,
        images["row_index"].to_numpy(np.int64),
        onehot if multilabel else onehot.argmax(axis=1),
        unit,
        strata.stratum,
        strata.names,
        tuple(notes),
        unsupported(per_unit, names, multilabel),
    )


def check_strata(test: EvalImages) -> None:
    """Refuse a test split that cannot support the image bootstrap (`ingest.strata.unsupported`),
    and any stratum of fewer than 2 units, which a replicate could not vary."""
    counts = np.bincount(test.stratum, minlength=len(test.stratum_names))
    small = [test.stratum_names[c] for c, n in enumerate(counts) if 0 < n < 2]
    why = test.unsupported or (f"stratum {small[0]!r} has 1 test image (group)" if small else None)
    if why is not None:
        raise CrsbenchError(
            f"dataset {test.dataset_id}: {why}; the image-level bootstrap needs every class in at least "
            "2 test groups (use --resample seeds)"
        )


def draw_images(test: EvalImages, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """Weights (n_test, replicates + 1) int16: column 0 all ones, then one stratified group draw
    per replicate (each stratum draws as many units as it holds, with replacement)."""
    check_strata(test)
    n_units = len(test.stratum)
    unit_counts = np.zeros((replicates + 1, n_units), dtype=np.int32)
    unit_counts[0] = 1
    for code in np.unique(test.stratum):
        members = np.flatnonzero(test.stratum == code)
        picks = rng.integers(0, len(members), size=(replicates, len(members)))
        flat = picks + (np.arange(replicates) * len(members))[:, None]
        counts = np.bincount(flat.ravel(), minlength=replicates * len(members))
        unit_counts[1:, members] = counts.reshape(replicates, len(members))
    return np.ascontiguousarray(unit_counts[:, test.unit].T).astype(np.int16)


def draw_seeds(
    seeds: Mapping[str, Sequence[int]],
    replicates: int,
    rng: np.random.Generator,
    *,
    resample_seeds: bool = True,
    resample_images: bool = False,
) -> SeedDraws:
    """Replicate 0 = every seed once with the stored metrics. Replicates 1..R: per dataset one
    seed multiset drawn with replacement (every seed once when not resample_seeds), with the
    stored metrics (version 0) or, when resample_images, replicate r's rescored ones.

    Without image resampling a dataset with 5 seeds has only C(9, 5) = 126 distinct
    multisets, so the cells are computed once per distinct multiset and replicates reuse them:
    exact, and what keeps 10,000 seed-only replicates to about a second.
    """
    draws, maps, next_id = [], [], 0
    version = np.arange(replicates + 1) if resample_images else np.zeros(replicates + 1, np.int64)
    for dataset_id in sorted(seeds):
        values = np.asarray(sorted(seeds[dataset_id]))
        k = len(values)
        picks = (
            np.sort(rng.integers(0, k, size=(replicates, k)), axis=1)
            if resample_seeds
            else np.tile(np.arange(k), (replicates, 1))
        )
        picks = np.vstack([np.arange(k)[None, :], picks])
        keyed = np.column_stack([version, picks])
        distinct, which = np.unique(keyed, axis=0, return_inverse=True)
        ids = next_id + np.arange(len(distinct))
        draws.append(pd.DataFrame({"combo": np.repeat(ids, k), "seed": values[distinct[:, 1:].ravel()]}))
        maps.append(
            pd.DataFrame(
                {
                    "replicate": np.arange(replicates + 1),
                    "dataset_id": dataset_id,
                    "combo": ids[np.asarray(which).ravel()],
                    "version": version,
                }
            )
        )
        next_id += len(distinct)
    return SeedDraws(pd.concat(draws, ignore_index=True), pd.concat(maps, ignore_index=True))

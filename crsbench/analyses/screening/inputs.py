"""What the pre-screen reads: each encoder's clean train-split features at every extracted depth,
standardised as the probes standardise them, and the train labels (METHODS.md §21.1).

A feature set qualifies when its clean condition exists for every row: a complete set, or a set
made by `crsbench extract --screen`. An encoder named without one gets the command that makes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from crsbench.analyses.agreement.inputs import FeatureSource, feature_sources
from crsbench.analyses.common import label_targets
from crsbench.core import CrsbenchError, EncoderKey
from crsbench.features.store import key_depth
from crsbench.ingest.types import Task
from crsbench.warehouse.catalog import screen_hint
from crsbench.warehouse.connection import Warehouse


@dataclasses.dataclass(frozen=True)
class TrainLabels:
    """A dataset's train split: store rows, labels ((n,) class index, or (n, L) 0/1) and task."""

    dataset_id: str
    task: Task
    rows: np.ndarray
    labels: np.ndarray
    n_outputs: int


def screen_sources(wh: Warehouse, dataset_id: str, encoders: Sequence[str] | None) -> list[FeatureSource]:
    """The named encoders' feature sets on the dataset whose clean features are whole (default every
    one); an encoder named without them is an error naming the command that makes them."""
    sources = feature_sources(wh, dataset_id, screened=True)
    if not encoders:
        return [sources[k] for k in sorted(sources)]
    names = list(dict.fromkeys(str(EncoderKey.parse(e)) for e in encoders))
    missing = [e for e in names if e not in sources]
    if missing:
        have = ", ".join(sorted(sources)) or "none"
        hint = screen_hint(EncoderKey.parse(missing[0]).encoder_id, dataset_id)
        raise CrsbenchError(f"{hint} (encoders with screening features there: {have})")
    return [sources[n] for n in names]


def train_labels(wh: Warehouse, dataset_id: str) -> TrainLabels:
    """The train split's rows and labels, in store row order."""
    task, names, matrix, split = label_targets(wh, dataset_id)
    rows = np.flatnonzero(split == "train")
    onehot = matrix[rows]
    labels = onehot.astype(np.int64) if task is Task.MULTILABEL else onehot.argmax(axis=1)
    return TrainLabels(dataset_id, task, rows, labels, len(names))


READ_ROWS = 16_384  # rows read and decoded per step: the float16 store's bytes never sit beside a whole copy


def standardised_train(source: FeatureSource, depth_key: str, rows: np.ndarray) -> np.ndarray:
    """The train rows' clean features at one depth, float64, standardised with their own mean and
    (population) standard deviation (a constant column keeps scale 1), as the probes standardise them.

    Memory: the (n, D) float64 result and one block of READ_ROWS rows; the rows are read lazily a
    block at a time and standardised in place, so no second (n, D) array is formed (at n = 250,000,
    D = 1,024 the result alone is 2 GB)."""
    from crsbench.probes.reader import read_rows  # dask, zarr: loaded on a read, not with the registry

    depth = key_depth(depth_key)
    first = read_rows(source.store, source.ref, depth, "clean", rows[:READ_ROWS])
    x = np.empty((len(rows), first.shape[1]))
    x[: len(first)] = first
    for start in range(READ_ROWS, len(rows), READ_ROWS):
        x[start : start + READ_ROWS] = read_rows(
            source.store, source.ref, depth, "clean", rows[start : start + READ_ROWS]
        )
    x -= x.mean(axis=0)
    squares = np.zeros(x.shape[1])
    for start in range(0, len(x), READ_ROWS):
        block = x[start : start + READ_ROWS]
        squares += np.einsum("ij,ij->j", block, block)
    std = np.sqrt(squares / max(len(x), 1))
    x /= np.where(std > 0, std, 1.0)
    return x

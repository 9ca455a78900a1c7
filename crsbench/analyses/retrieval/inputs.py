"""What retrieval reads (METHODS.md §24.1): the gallery (the train split's clean features) and the
queries (the test split's features in one condition) of one encoder at one depth, both standardised
with the gallery's mean and (population) standard deviation, as the probes standardise; and the
labels of both splits. The splits are group-safe, so no query's patient is in the gallery."""

from __future__ import annotations

import dataclasses

import numpy as np

from crsbench.analyses.agreement.inputs import FeatureSource
from crsbench.analyses.common import label_targets
from crsbench.core import CLEAN
from crsbench.features.conditions import registered_conditions
from crsbench.features.store import key_depth
from crsbench.ingest.types import Task
from crsbench.warehouse.connection import Warehouse


@dataclasses.dataclass(frozen=True)
class RetrievalSplits:
    """A dataset's gallery (train) and query (test) store rows with their labels ((n,) class index,
    or (n, L) 0/1 for multilabel)."""

    dataset_id: str
    task: Task
    gallery_rows: np.ndarray
    query_rows: np.ndarray
    gallery_labels: np.ndarray
    query_labels: np.ndarray


def retrieval_splits(wh: Warehouse, dataset_id: str) -> RetrievalSplits:
    task, _, matrix, split = label_targets(wh, dataset_id)
    labels = matrix.astype(np.int64) if task is Task.MULTILABEL else matrix.argmax(axis=1)
    train, test = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    return RetrievalSplits(dataset_id, task, train, test, labels[train], labels[test])


@dataclasses.dataclass(frozen=True)
class Gallery:
    features: np.ndarray  # (n, D) float64, standardised
    mean: np.ndarray
    scale: np.ndarray


def gallery(source: FeatureSource, depth_key: str, rows: np.ndarray) -> Gallery:
    """The clean train features at one depth, standardised with their own mean and standard deviation
    (a constant column keeps scale 1)."""
    from crsbench.probes.reader import read_rows  # dask, zarr: loaded on a read, not with the registry

    x = read_rows(source.store, source.ref, key_depth(depth_key), CLEAN, rows)
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    scale = np.where(std > 0, std, 1.0)
    return Gallery((x - mean) / scale, mean, scale)


def queries(source: FeatureSource, depth_key: str, condition: str, rows: np.ndarray, by: Gallery) -> np.ndarray:
    """The test features in `condition`, standardised as the gallery was."""
    from crsbench.probes.reader import read_rows  # dask, zarr: loaded on a read, not with the registry

    x = read_rows(source.store, source.ref, key_depth(depth_key), condition, rows)
    out: np.ndarray = (x - by.mean) / by.scale
    return out


def stored_conditions(source: FeatureSource, depth_key: str) -> tuple[str, ...]:
    """The conditions whose arrays the feature set holds at this depth: clean first, then the
    registered perturbed ones in registry order."""
    import zarr

    node = source.store.group(source.ref)[depth_key]
    held = set(node.array_keys()) if isinstance(node, zarr.Group) else set()
    return tuple(c for c in registered_conditions() if c in held)

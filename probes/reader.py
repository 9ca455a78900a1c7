"""Lazy feature reads for the probes (METHODS.md §3).

Every array is a Dask graph over its row chunks (`probes.checked`), so a task only
materialises the chunks holding the rows it asks for, each checked against its codec
checksum and the set's content manifest, and the graph carries a URL rather than an open
array (it ships to `dask.distributed` workers as is). Features are
standardised with the statistics of the dataset's whole train split (label-free, so
every label fraction and seed of a feature set and depth shares them); they are
computed once per (feature set, depth) by `check_and_standardise` and then reused by
every fraction, seed and probe.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable
from typing import Any

import dask.array as da
import dask.base
import numpy as np

from crsbench.core import CrsbenchError
from crsbench.features.conditions import is_condition
from crsbench.features.integrity import read_expectations
from crsbench.features.store import Depth, FeatureSetRef, FeatureStore, depth_key
from crsbench.ingest.types import Dataset
from crsbench.probes.checked import CheckedArray, checked_getitem


@dataclasses.dataclass(frozen=True)
class TrainStats:
    """Per-dimension mean and standard deviation of the train split (std 0 -> 1)."""

    mean: np.ndarray
    std: np.ndarray

    def apply(self, x: np.ndarray) -> np.ndarray:
        out: np.ndarray = (x - self.mean) / self.std
        return out

    def apply_inplace(self, x: np.ndarray) -> np.ndarray:
        """Standardise a float64 array the caller owns, without temporaries (memory at scale)."""
        x -= self.mean
        x /= self.std
        return x


def lazy_features(
    store: FeatureStore, ref: FeatureSetRef, depth: Depth, condition: str, checked: bool = True
) -> da.Array:
    """One (depth, condition) array of a feature set as a lazy Dask array.

    `checked` (the default): each row chunk is decoded whole and checked against the set's
    content manifest (`probes.checked`); `False` reads through `dask.array.from_zarr` unchecked
    (for measuring the check's cost).
    """
    if not is_condition(condition):
        raise CrsbenchError(f"unknown condition {condition!r}")
    name_in_set = f"{depth_key(depth)}/{condition}"
    component = f"{ref.path}/{name_in_set}"
    zarr_array = store.array(ref, depth, condition)  # raises a clear error when the array is missing
    # An explicit graph name skips Dask's tokenisation of the zarr array, which pickles it
    # and dominated small sweeps; the name is unique per store URL and array path.
    name = "zarr-" + hashlib.sha1(f"{store.url}\0{component}".encode()).hexdigest()
    if checked:
        source = CheckedArray(
            store.url,
            store.storage_options,
            ref,
            name_in_set,
            zarr_array,
            read_expectations(store, ref, name_in_set, zarr_array),
        )
        checked_arr: da.Array = da.from_array(
            source,
            chunks=source.chunks,
            name="checked-" + name,
            getitem=checked_getitem,
            asarray=False,
            meta=np.empty((0,) * source.ndim, dtype=source.dtype),
        )
        return checked_arr
    kwargs = {"storage_options": store.storage_options} if store.storage_options else {}
    arr: da.Array = da.from_zarr(store.url, component=component, name=name, **kwargs)
    return arr


def read_rows(store: FeatureStore, ref: FeatureSetRef, depth: Depth, condition: str, rows: np.ndarray) -> np.ndarray:
    """Materialise only `rows` (store order) of one array, as float64; NaN or +-inf is an error."""
    x = lazy_features(store, ref, depth, condition)[np.asarray(rows)]
    out = np.asarray(x.compute(scheduler="synchronous"), dtype=np.float64)
    if not np.isfinite(out).all():
        raise CrsbenchError(_nan_message(ref, depth, condition))
    return out


def _nan_message(ref: FeatureSetRef, depth: Depth, condition: str) -> str:
    return (
        f"feature set {ref.path} has NaN or infinite features at {depth_key(depth)}/{condition}; "
        f"re-run 'crsbench extract --encoder {ref.encoder_id} --dataset {ref.dataset}'"
    )


def check_feature_set(
    store: FeatureStore, ref: FeatureSetRef, dataset: Dataset, depths: Iterable[Depth], conditions: Iterable[str]
) -> None:
    """Completeness, row order and shapes of one feature set against its dataset."""
    if not store.is_complete(ref):
        try:
            store.attrs(ref)
        except CrsbenchError:
            raise CrsbenchError(
                f"feature set {ref.path} is missing from {store.url}; run 'crsbench extract "
                f"--encoder {ref.encoder_id} --dataset {ref.dataset}'"
            ) from None
        raise CrsbenchError(
            f"feature set {ref.path} in {store.url} is incomplete; finish it with 'crsbench "
            f"extract --encoder {ref.encoder_id} --dataset {ref.dataset}'"
        )
    ids = store.image_ids(ref.dataset)
    expected = dataset.images["image_id"].astype(str).to_numpy()
    if ids.shape != expected.shape:
        raise CrsbenchError(
            f"feature store {store.url} has {len(ids)} rows for dataset {ref.dataset!r}, "
            f"the dataset has {len(expected)} images; re-extract it"
        )
    if not np.array_equal(ids, expected):
        first = int(np.flatnonzero(ids != expected)[0])
        raise CrsbenchError(
            f"feature store {store.url} row {first} of dataset {ref.dataset!r} is image "
            f"{ids[first]!r}, the dataset has {expected[first]!r} there; re-extract it"
        )
    # Same ids in the same order, but other image content (a replaced dataset):
    stored_digest = store.attrs(ref).get("image_digest")
    if stored_digest is not None and stored_digest != dataset.image_digest():
        raise CrsbenchError(
            f"feature set {ref.path} in {store.url} was extracted from other images than dataset "
            f"{ref.dataset!r} now holds (image digest {stored_digest[:12]} there, "
            f"{dataset.image_digest()[:12]} now); re-extract it with 'crsbench extract --encoder "
            f"{ref.encoder_id} --dataset {ref.dataset}'"
        )
    for depth in depths:
        # Each depth has its own width (CNN stages differ); conditions of a depth must agree.
        dims: set[int] = set()
        for condition in conditions:
            arr = store.array(ref, depth, condition)
            if arr.ndim != 2 or arr.shape[0] != len(expected):
                raise CrsbenchError(
                    f"feature array {ref.path}/{depth_key(depth)}/{condition} has shape "
                    f"{arr.shape}, expected ({len(expected)}, dim)"
                )
            dims.add(int(arr.shape[1]))
        if len(dims) > 1:
            raise CrsbenchError(f"feature set {ref.path} at depth {depth_key(depth)} mixes feature dims {sorted(dims)}")


@dataclasses.dataclass(frozen=True)
class ReadCheck:
    """Rows of one array that a sweep will read; `stats` asks for train statistics too."""

    ref: FeatureSetRef
    depth: Depth  # one of DEPTHS, or `proj` (a zero-shot fit's projected embedding)
    condition: str
    rows: np.ndarray
    stats: bool = False


def _threads(graphs: list[da.Array]) -> list[Any]:
    return list(dask.base.compute(graphs, scheduler="threads")[0])


def check_and_standardise(
    store: FeatureStore,
    checks: list[ReadCheck],
    compute: Callable[[list[da.Array]], list[Any]] = _threads,
) -> dict[tuple[FeatureSetRef, Depth], TrainStats]:
    """One lazy pass over every array a sweep needs: NaN/inf check plus train statistics.

    Runs before anything is fitted, so NaN or infinite features fail the sweep before a row is written.
    `compute` evaluates a list of Dask graphs (local threads, or a distributed client).
    Returns the train statistics keyed by (feature set, depth).
    """
    graphs: list[da.Array] = []
    for check in checks:
        x = lazy_features(store, check.ref, check.depth, check.condition)[check.rows].astype(np.float64)
        graphs.append(~da.isfinite(x).all())
        if check.stats:
            graphs.extend([x.mean(axis=0), x.std(axis=0)])
    computed = iter(compute(graphs))
    stats: dict[tuple[FeatureSetRef, Depth], TrainStats] = {}
    for check in checks:
        if bool(next(computed)):
            raise CrsbenchError(_nan_message(check.ref, check.depth, check.condition))
        if check.stats:
            mean, std = next(computed), next(computed)
            if not (np.isfinite(mean).all() and np.isfinite(std).all()):
                # Finite values too large to square (|x| > ~1e154) overflow the statistics.
                raise CrsbenchError(
                    f"feature set {check.ref.path} at {depth_key(check.depth)} has "
                    f"features too large to standardise; re-extract it"
                )
            std = np.where(std > 0, std, 1.0)
            stats[(check.ref, check.depth)] = TrainStats(np.asarray(mean), np.asarray(std))
    return stats

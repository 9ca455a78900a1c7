"""Warehouses of synthetic datasets with stored synthetic features, for the partition and resplit tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import zarr
from support.synthetic import write_features

from crsbench.features.store import FeatureStore
from crsbench.ingest.types import Dataset
from crsbench.warehouse.catalog import sync_catalog
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import declare_shift, load_dataset, read_dataset


def synthetic_warehouse(
    db: Path,
    datasets: Sequence[Dataset],
    encoders: dict[str, tuple[int, float]],
    shifts: Sequence[tuple[str, str]] = (),
) -> Path:
    """Load `datasets`, declare `shifts`, and write each encoder's (dim, signal) features at depth 1.0
    for every dataset, catalogued as extraction would; returns the feature store's URL as a path."""
    url = Path(f"{db}.features.zarr")
    with Warehouse.open(db) as wh:
        for ds in datasets:
            load_dataset(wh, ds)
        for source, target in shifts:
            declare_shift(wh, source, target)
        stored = [read_dataset(wh, ds.name) for ds in datasets]
    for i, ds in enumerate(stored):
        for j, (encoder, (dim, signal)) in enumerate(encoders.items()):
            write_features(str(url), ds, encoder, dim, seed=10 * i + j, signal=signal, depths=(1.0,))
            group = zarr.open_group(str(url), mode="a")[f"{ds.name}/{encoder}"]
            group.attrs.update({"n_images": ds.n_images, "depths": ["d100"]})
    with Warehouse.open(db) as wh:
        sync_catalog(wh, FeatureStore(str(url)))
    return url

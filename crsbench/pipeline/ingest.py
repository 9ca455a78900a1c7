"""Ingesting a dataset into a warehouse, and the demo suite's four datasets and shift pair."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd

from crsbench.core import CrsbenchError, ProgressFn
from crsbench.ingest.types import Dataset
from crsbench.pipeline.stores import default_store
from crsbench.warehouse.connection import Warehouse

# (adapter, dataset name) of the embedded suite; the last two form its shift pair.
SUITE_DATASETS: tuple[tuple[str, str], ...] = (
    ("isic2019", "isic2019"),
    ("aptos2019", "aptos2019"),
    ("mimic-cxr", "mimic-cxr"),
    ("chexpert", "chexpert"),
)
SUITE_SHIFT = ("chexpert", "mimic-cxr")


@dataclasses.dataclass(frozen=True)
class IngestConfig:
    """How to ingest: overwrite a same-named dataset, skip bad rows (recorded in ingest_errors),
    shift pairs to declare (this dataset -> target, source -> this dataset), adapter options."""

    replace: bool = False
    skip_bad: bool = False
    shift_targets: tuple[str, ...] = ()
    shift_sources: tuple[str, ...] = ()
    options: Mapping[str, str] = dataclasses.field(default_factory=dict)
    yes: bool = False  # replacing with other data: retire stale runs and feature sets without asking
    unlabeled: bool = False  # no labels (folder, or a manifest of paths): extraction and agreement only
    source: str | None = None  # what the data is (ingest.known_datasets name); None: the adapter's
    suites: tuple[str, ...] = ()  # corruption suites declared on the new grid's full-label fits (features.suites)


def ingest_dataset(
    db: Path,
    adapter: str,
    path: Path,
    name: str,
    config: IngestConfig,
    progress: ProgressFn | None = None,
    *,
    confirm: Callable[[str], bool] | None = None,
    store: str | None = None,
) -> Dataset:
    """Validate everything, then write the dataset in one transaction (a bad input changes nothing).

    Replacing a dataset with other data retires the runs and feature sets it makes stale
    (`crsbench.warehouse.retire`): only with `config.yes` or when `confirm(description)` says
    yes; otherwise a CrsbenchError describes what would be retired. Features of other images
    in `store` (default: the one beside `db`) are moved to `<store>.retired/`.
    """
    from crsbench.features.store import FeatureStore, retire_dataset_features
    from crsbench.ingest import ingest
    from crsbench.warehouse.datasets import list_datasets, load_dataset, replacement_impact

    if not config.replace and db.exists():  # fail before the slow image checks; load_dataset checks again
        with Warehouse.open(db, read_only=True) as wh:
            if name in list_datasets(wh):
                raise CrsbenchError(f"dataset {name!r} already exists in {db}; use --replace to overwrite it")
    extra: dict[str, object] = {"unlabeled": True} if config.unlabeled else {}
    if config.source is not None:
        extra["source"] = config.source
    ds = ingest(adapter, path, name, skip_bad=config.skip_bad, progress=progress, **config.options, **extra)
    check_suites(ds, config)
    if config.replace and db.exists():
        with Warehouse.open(db, read_only=True) as wh:
            impact = replacement_impact(wh, ds)
        if impact.anything and not config.yes and not (confirm and confirm(impact.describe())):
            raise CrsbenchError(f"{impact.describe()}; pass --yes to confirm")
    with Warehouse.open(db) as wh:
        load_dataset(
            wh,
            ds,
            replace=config.replace,
            shift_targets=list(config.shift_targets),
            shift_sources=list(config.shift_sources),
            suites=config.suites,
        )
    if config.replace:
        retire_dataset_features(FeatureStore(store or default_store(db)), ds.name, ds.image_digest())
    return ds


def check_suites(ds: Dataset, config: IngestConfig) -> None:
    """Refuse, before anything is written, a suite the dataset cannot take: no labels (so no grid), a
    suite of another domain (listing the suites), or one whose corruptions fail on its test images."""
    if not config.suites:
        return
    from crsbench.features.suites import check_on_images, check_suite_for

    if config.unlabeled:
        raise CrsbenchError(f"--suite needs labels: {ds.name!r} is ingested --unlabeled, so it has no grid")
    for suite in config.suites:
        check_suite_for(suite, ds.name, ds.domain)
        check_on_images(ds, suite)


def ingest_suite(
    db: Path, suite: Path, scale: float, image_size: int, progress: ProgressFn | None = None
) -> pd.DataFrame:
    """Generate and ingest whichever suite datasets the warehouse lacks, declare the shift pair;
    returns the datasets table (dataset_id, task, n_images)."""
    from crsbench.ingest import ingest, make_suite
    from crsbench.warehouse.datasets import declare_shift, list_datasets, load_dataset, shift_targets

    with Warehouse.open(db) as wh:
        present = set(list_datasets(wh))
    missing = [(adapter, name) for adapter, name in SUITE_DATASETS if name not in present]
    if missing:
        paths = make_suite(suite, scale=scale, image_size=image_size, progress=progress)
        datasets = [ingest(adapter, paths[adapter], name, progress=progress) for adapter, name in missing]
        with Warehouse.open(db) as wh:
            for ds in datasets:
                load_dataset(wh, ds)
    with Warehouse.open(db) as wh:
        source, target = SUITE_SHIFT
        if target not in shift_targets(wh, source):
            declare_shift(wh, source, target)
        return wh.sql("select dataset_id, task, n_images from datasets order by dataset_id")

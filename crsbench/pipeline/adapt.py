"""LoRA variants of one encoder, one per seed, extracted beside its frozen features (METHODS.md §13).

Each seed: train (or reuse) the adapter, save it, reload it onto a fresh base and extract the
variant `encoder@lora-s<seed>` into the same feature store, on the dataset and on its shift
targets, through the same one-pass `extract`; the catalog then lists it beside the frozen set,
and probing `ENC@lora-s0` gives it the same probe grid and views.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from crsbench.core import CrsbenchError, EncoderKey, ProgressFn, lora_regime
from crsbench.pipeline.stores import default_adapter_root
from crsbench.warehouse.connection import Warehouse

if TYPE_CHECKING:
    from torch import nn

    from crsbench.features.adapt import LoraSettings
    from crsbench.features.registry import EncoderEntry
    from crsbench.ingest.types import Dataset


@dataclasses.dataclass(frozen=True)
class AdaptConfig:
    """Seeds and training settings (METHODS.md §13: 8 epochs), where adapters go, base weights."""

    seeds: tuple[int, ...] = (0, 1, 2)
    epochs: int = 8
    batch_size: int = 32
    max_steps: int | None = None  # stop training after this many steps (smoke runs)
    device: str = "cpu"
    out: Path | None = None  # adapter folder root; default <store>.adapters beside the store
    weights: Path | None = None  # local base weights (file or model folder)
    force: bool = False  # retrain adapters and re-extract their features


@dataclasses.dataclass(frozen=True)
class AdaptResult:
    root: Path  # the adapter folder root
    variants: pd.DataFrame  # encoder (key), dataset, adapter, trained, features
    notes: list[str]
    first_key: EncoderKey  # the variant of the first seed, to probe next


def adapt_encoder(
    db: Path, store_url: str, encoder: str, dataset: str, config: AdaptConfig, progress: ProgressFn | None = None
) -> AdaptResult:
    """Train (or reuse) one adapter per seed and extract each variant on the dataset and its shift targets."""
    from crsbench.features.adapt import ADAPTER_FILE, LoraSettings, adapter_dir, load_adapted
    from crsbench.features.lookup import get_encoder

    if not config.seeds or min(config.seeds) < 0:
        raise CrsbenchError(f"adaptation seeds must be non-negative integers, got {config.seeds!r}")
    settings = LoraSettings(epochs=config.epochs, batch_size=config.batch_size, max_steps=config.max_steps)
    from crsbench.pipeline.extract import use_encoder_files

    use_encoder_files((), db)  # crsbench.toml beside the warehouse (data only) and $CRSBENCH_ENCODERS
    entry = get_encoder(encoder)
    root = config.out or default_adapter_root(store_url)
    source, targets = _source_and_targets(db, dataset)
    rows, notes = [], []
    for seed in config.seeds:
        folder = adapter_dir(root, entry.id, dataset, seed)
        trained = config.force or not (folder / ADAPTER_FILE).exists()
        if trained:
            notes += _train_adapter(source, entry, dataset, seed, settings, folder, config, progress)
        # What is extracted is what was saved: always reload from the adapter folder.
        variant = _Variant(entry, load_adapted(entry, folder, weights=_base_weights(config)), seed, folder, trained)
        for ds in [source, *targets]:
            rows.append(_extract_variant(db, store_url, ds, variant, config, progress))
    return AdaptResult(root, pd.DataFrame(rows), notes, EncoderKey(entry.id, lora_regime(config.seeds[0])))


def _base_weights(config: AdaptConfig) -> str | None:
    return str(config.weights) if config.weights else None


def _source_and_targets(db: Path, dataset: str) -> tuple[Dataset, list[Dataset]]:
    """The dataset the adapters train on, and its shift targets (each variant is extracted on all)."""
    from crsbench.warehouse.datasets import list_datasets, read_dataset, shift_targets

    with Warehouse.open(db, read_only=True) as wh:  # no write lock held while training
        if dataset not in list_datasets(wh):
            raise CrsbenchError(f"no dataset {dataset!r} in the warehouse {db}")
        source = read_dataset(wh, dataset)
        targets = [read_dataset(wh, t) for t in shift_targets(wh, dataset)]
    return source, targets


def _train_adapter(
    source: Dataset,
    entry: EncoderEntry,
    dataset: str,
    seed: int,
    settings: LoraSettings,
    folder: Path,
    config: AdaptConfig,
    progress: ProgressFn | None,
) -> list[str]:
    """Train one seed's adapter and save it with how it was made; a note when it learned nothing."""
    from crsbench.features.adapt import adapt, save_adapter

    result = adapt(
        source,
        entry,
        seed=seed,
        settings=settings,
        device=config.device,
        weights=_base_weights(config),
        progress=progress,
    )
    save_adapter(
        result,
        folder,
        {
            "encoder_id": entry.id,
            "dataset": dataset,
            "seed": seed,
            "regime": lora_regime(seed),
            **{
                k: getattr(settings, k) for k in ("rank", "alpha", "dropout", "lr", "epochs", "batch_size", "max_steps")
            },
        },
    )
    if result.adapter_norm == 0.0:
        return [
            f"seed {seed}: the adapters received no gradient (still at their "
            f"zero init); the variant equals the frozen encoder"
        ]
    return []


@dataclasses.dataclass(frozen=True)
class _Variant:
    """One seed's adapted encoder, as reloaded from its adapter folder."""

    entry: EncoderEntry
    model: nn.Module
    seed: int
    folder: Path
    trained: bool  # trained now: its features are re-extracted even where complete


def _extract_variant(
    db: Path, store_url: str, ds: Dataset, variant: _Variant, config: AdaptConfig, progress: ProgressFn | None
) -> dict[str, object]:
    """Extract one variant on one dataset, catalog the feature set, and return its row of the result."""
    from crsbench.features.extraction import extract
    from crsbench.features.store import FeatureSetRef
    from crsbench.warehouse import catalog

    entry = variant.entry
    ref = FeatureSetRef(ds.name, entry.id, lora_regime(variant.seed))
    extracted = extract(
        ds,
        entry,
        store_url,
        regime=ref.regime,
        model=variant.model,
        device=config.device,
        force=variant.trained,
        progress=progress,
    )
    with Warehouse.open(db) as wh:
        catalog.upsert_encoder(wh, entry)
        catalog.record_feature_set(wh, store_url, ref, extracted.stored)
    return {
        "encoder": ref.key,
        "dataset": ds.name,
        "adapter": str(variant.folder),
        "trained": variant.trained,
        "features": "skipped (complete)" if extracted.skipped else "extracted",
    }

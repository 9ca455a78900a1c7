"""Extraction over many encoders and datasets, each feature set recorded in the catalog."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from crsbench.core import CrsbenchError, ProgressFn
from crsbench.features.extract_options import ExtractOptions, with_environment
from crsbench.warehouse.connection import Warehouse

if TYPE_CHECKING:
    from crsbench.features.extraction_cluster import ClusterExtraction
    from crsbench.features.extraction_result import ExtractionResult
    from crsbench.features.registry import EncoderEntry
    from crsbench.features.store import FeatureSetRef
    from crsbench.ingest.types import Dataset

ALL_DATASETS = "all"
ALL_TINY = "all-tiny"


@dataclasses.dataclass(frozen=True)
class ExtractConfig:
    """How to extract: the `options` of every feature set (features.extract_options: device,
    batch, dtypes, chunk rows, weights, force, repair, downloads, pickles, threads), and where.

    `options.weights` applies to exactly one encoder; an encoder id means one model, so weights
    other than those its sets hold (on any dataset) are refused (`check_one_model`), and `force`
    redoes complete sets (one replaced by other weights retires the probe fits trained on it;
    new weights need every dataset of the id in the run); `repair` re-extracts only the damaged or missing chunks of
    complete sets and retires the fits that read them; `allow_download` (or
    CRSBENCH_ALLOW_DOWNLOAD=1) lets hub ids fetch missing weights. `encoder_files` are TOML
    files of user encoders (besides $CRSBENCH_ENCODERS and crsbench.toml beside the warehouse);
    `allow_code` lets entries of `encoder_files` and $CRSBENCH_ENCODERS name Python code (also
    CRSBENCH_ALLOW_CODE=1; never crsbench.toml's). `scheduler` (a dask.distributed address)
    spreads each set's row chunks over the cluster's workers (features.extraction_cluster);
    `options.screen` (the clean condition alone, METHODS.md §2.9) runs on this machine only.
    """

    options: ExtractOptions = dataclasses.field(default_factory=ExtractOptions)
    encoder_files: tuple[Path, ...] = ()
    allow_code: bool = False
    scheduler: str | None = None


def code_allowed(flag: bool = False) -> bool:
    """--allow-code, else $CRSBENCH_ALLOW_CODE=1: read here at the edge and passed down."""
    from crsbench.features.user import ALLOW_CODE_ENV

    return flag or os.environ.get(ALLOW_CODE_ENV, "").strip().lower() in ("1", "true", "yes")


def use_encoder_files(files: Sequence[Path], db: Path, allow_code: bool = False) -> None:
    """Register user encoders from TOML files and the warehouse's crsbench.toml (data only).

    Entries that name Python code load only from `files` or $CRSBENCH_ENCODERS, and only with
    `allow_code` or CRSBENCH_ALLOW_CODE=1.
    """
    from crsbench.features.user import use_encoder_files as use

    use(files, db, allow_code=code_allowed(allow_code))


def expand(values: Sequence[str], every: Sequence[str], keyword: str) -> list[str]:
    """`values` with `keyword` replaced by `every`, duplicates dropped, order kept."""
    out: list[str] = []
    for value in values:
        for item in every if value == keyword else [value]:
            if item not in out:
                out.append(item)
    return out


COLUMNS = ["encoder", "dataset", "status", "seconds", "weights", "retired_fits"]


def _row(
    entry_id: str, dataset: str, status: str, seconds: float = 0.0, weights: str = "", retired: int = 0
) -> dict[str, object]:
    return dict(zip(COLUMNS, [entry_id, dataset, status, seconds, weights, retired], strict=True))


def extract_all(
    db: Path,
    store_url: str,
    encoders: Sequence[str],
    datasets: Sequence[str],
    config: ExtractConfig,
    progress: ProgressFn | None = None,
) -> pd.DataFrame:
    """Extract every (encoder, dataset) pair once (complete sets are skipped unless forced).

    `encoders` may name 'all-tiny' and `datasets` 'all'. With 'all', chest-only encoders skip
    non-chest datasets (a cell that does not exist, never imputed); named explicitly, such a
    pair is an error. Returns one row per pair: encoder, dataset, status, seconds, weights
    (which file, and which part of it, the weights came from) and retired_fits.
    """
    from crsbench.features.extraction_cluster import ClusterExtraction

    if config.scheduler and config.options.screen:
        raise CrsbenchError("--screen runs on this machine only: drop --scheduler (a later plain extract may use it)")
    use_encoder_files(config.encoder_files, db, config.allow_code)
    options = with_environment(config.options)
    entries, loaded, suites = _entries_and_datasets(db, encoders, datasets, options)
    if cluster_suites := [name for name, conditions in suites.items() if conditions] if config.scheduler else []:
        raise CrsbenchError(
            f"the corruption suite conditions declared on {', '.join(cluster_suites)} extract on this machine only: "
            "drop --scheduler for them"
        )
    rows = []
    cluster = ClusterExtraction(config.scheduler, options) if config.scheduler else None
    try:
        for entry in entries:  # before any extraction work: an encoder id names one model
            check_one_model(db, store_url, entry, [ds.name for ds in loaded], options, cluster)
        for entry in entries:
            for ds in loaded:
                if entry.chest_only and ds.domain != "rad" and ALL_DATASETS in datasets:
                    rows.append(_row(entry.id, ds.name, "not applicable"))
                else:
                    conditions = grid_conditions(suites[ds.name])
                    rows.append(_extract_pair(db, store_url, entry, ds, options, cluster, progress, conditions))
    finally:
        if cluster is not None:
            cluster.close()
    return pd.DataFrame(rows, columns=COLUMNS)


def _entries_and_datasets(
    db: Path, encoders: Sequence[str], datasets: Sequence[str], options: ExtractOptions
) -> tuple[list[EncoderEntry], list[Dataset], dict[str, list[str]]]:
    """The encoder entries and the loaded datasets named ('all-tiny' and 'all' expanded), and the
    corruption suite conditions each dataset's grid declares."""
    from crsbench.features.lookup import get_encoder, tiny_encoder_ids
    from crsbench.features.weights import download_policy
    from crsbench.warehouse.datasets import list_datasets, read_dataset
    from crsbench.warehouse.grid_suites import declared_suite_conditions

    with Warehouse.open(db, read_only=True) as wh:  # no write lock held during the long part
        names = expand(datasets, list_datasets(wh), ALL_DATASETS)
        loaded = [read_dataset(wh, name) for name in names]
        suites = {name: declared_suite_conditions(wh.con, name) for name in names}
    with download_policy(options.allow_download):  # `open_clip:hf-hub:` ids read the hub cache
        entries = [get_encoder(e) for e in expand(encoders, tiny_encoder_ids(), ALL_TINY)]
    if options.weights is not None and len(entries) != 1:
        raise CrsbenchError("--weights applies to exactly one --encoder")
    return entries, loaded, suites


def grid_conditions(suite_conditions: Sequence[str]) -> list[str] | None:
    """What a set of the dataset is extracted under: the registered conditions (None: the default),
    and the corruption suite conditions its grid declares. A complete set lacking some of them is
    extracted again, the same bytes for what it held (features.extraction)."""
    if not suite_conditions:
        return None
    from crsbench.features.conditions import registered_conditions

    return [*registered_conditions(), *suite_conditions]


def _extract_pair(
    db: Path,
    store_url: str,
    entry: EncoderEntry,
    ds: Dataset,
    options: ExtractOptions,
    cluster: ClusterExtraction | None,
    progress: ProgressFn | None,
    conditions: list[str] | None = None,
) -> dict[str, object]:
    """Extract one (encoder, dataset) set, here or over the cluster, and catalogue it: its row."""
    from crsbench.features.extraction import extract
    from crsbench.features.integrity import chunk_manifest
    from crsbench.features.store import FeatureSetRef, FeatureStore
    from crsbench.warehouse import catalog
    from crsbench.warehouse.integrity import record_chunk_manifest

    if cluster is not None:
        result = cluster.extract(ds, entry, store_url, progress)
    else:
        result = extract(ds, entry, store_url, options, progress=progress, conditions=conditions)
    ref = FeatureSetRef(ds.name, entry.id)
    status = extract_status(result)
    if result.chunks_here is not None:  # over a cluster: how many chunks this command computed
        status += f" ({result.chunks_here} of {result.n_chunks} chunks here)"
    if options.repair and not result.repaired:
        return _row(entry.id, ds.name, "nothing to repair")  # nothing written, in the store or the warehouse
    with Warehouse.open(db) as wh:
        catalog.upsert_encoder(wh, entry, result.stored.weights_hash)
        retired = catalog.record_feature_set(wh, store_url, ref, result.stored)
        record_chunk_manifest(wh, store_url, ref, chunk_manifest(FeatureStore(store_url).group(ref)))
        if options.repair:
            status = _retire_repaired(wh, ref, result)
    return _row(
        entry.id, ds.name, status, round(result.seconds, 2), describe_loads(result.stored.weights_loaded), retired
    )


def extract_status(result: ExtractionResult) -> str:
    """The row's status: extracted, screened (the clean condition alone), or skipped and why."""
    if result.skipped:
        return "skipped (complete)" if result.stored.complete else "skipped (screened)"
    return "extracted" if result.stored.complete else "screened"


def check_one_model(
    db: Path,
    store_url: str,
    entry: EncoderEntry,
    datasets: Sequence[str],
    options: ExtractOptions,
    cluster: ClusterExtraction | None = None,
) -> None:
    """Refuse (one line) to extract `entry` on `datasets` with weights other than those every set
    of its id holds, in the store or in the warehouse's catalog (features.one_model); over a
    cluster, a worker hashes the weights it would extract with."""
    from crsbench.features import one_model
    from crsbench.features.store import FeatureStore
    from crsbench.warehouse import catalog

    held = one_model.held_in_store(FeatureStore(store_url), entry.id)
    with Warehouse.open(db, read_only=True) as wh:
        here = catalog.portable_url(wh, store_url)
        held += [
            one_model.HeldSet(dataset, weights_hash, url)
            for dataset, url, weights_hash in catalog.encoder_weights(wh, entry.id)
            if url != here
        ]

    def weights_hash() -> str | None:
        if cluster is not None:
            return cluster.weights_hash(entry, store_url)
        return one_model.local_weights_hash(entry, options)

    one_model.check_one_model(entry, held, options, datasets, store_url, weights_hash)


def describe_loads(loads: Sequence[Mapping[str, str]]) -> str:
    """Which part of which file the weights came from, e.g. "'model' of RETFound_mae.pth"."""
    return "; ".join(
        (Path(x["file"]).name if x["state"] == "top-level" else f"{x['state']} of {Path(x['file']).name}")
        for x in loads
    )


def _retire_repaired(wh: Warehouse, ref: FeatureSetRef, result: ExtractionResult) -> str:
    """Retire the fits that read the repaired depths of `ref`; the row's status line."""
    from crsbench.features.store import key_depth
    from crsbench.warehouse.integrity import fits_reading, retire_fits

    chunks = list(result.repaired or ())
    depths = [key_depth(d) for d in result.repaired_depths or ()]
    with wh.transaction() as con:
        fits = fits_reading(con, ref, depths)
        retired = retire_fits(con, ref, fits, max(list(result.stored.repairs.values()) or [1]))
    return f"repaired {len(chunks)} chunks ({', '.join(map(str, chunks))}); retired {retired} fits that read them"

"""CLI: `crsbench extract`, `crsbench encoders`, `crsbench feature-sets` (owned by the features stage)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import pandas as pd
import typer

from crsbench.cli import DbOption, app
from crsbench.features.registry import get_encoder, list_encoders, tiny_encoder_ids
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.ingest.types import CrsbenchError
from crsbench.output import emit, print_frame, progress
from crsbench.warehouse.connection import Warehouse, default_db_path

STORE_ENV = "CRSBENCH_STORE"


def check_store_url(url: str | None) -> str | None:
    """Refuse a store URL carrying a password: it would be recorded in the catalog and printed.

    Object-store credentials come only from the standard environment/config that fsspec
    backends already read (AWS_* variables or ~/.aws for s3://, see docs/SCALING.md).
    """
    if url and "://" in url:
        netloc = urlsplit(url).netloc
        if "@" in netloc and ":" in netloc.rpartition("@")[0]:
            raise CrsbenchError(f"store URL {url.split('://', 1)[0]}://...@{netloc.rpartition('@')[2]} "
                                "embeds credentials; put them in the environment or the backend's "
                                "config instead (see docs/SCALING.md)")
    return url


def default_store(db: Path) -> str:
    """`$CRSBENCH_STORE`, else `<db>.features.zarr` beside the warehouse file."""
    return check_store_url(os.environ.get(STORE_ENV)) or str(db.with_name(db.name + ".features.zarr"))


EncodersFileOption = Annotated[list[Path] | None, typer.Option(
    "--encoders", help="TOML file of [encoder.<id>] tables (repeatable); also $CRSBENCH_ENCODERS "
                       "and crsbench.toml beside the warehouse.")]


def use_encoder_files(files: list[Path] | None, db: Path) -> None:
    """Register user encoders from --encoders files and the warehouse's crsbench.toml."""
    from crsbench.features.user import add_encoder_file, project_file

    project_file(db)
    for file in files or []:
        add_encoder_file(file)


StoreOption = Annotated[str | None, typer.Option(
    "--store", callback=check_store_url,
    help="Feature store URL, any fsspec URL (default $CRSBENCH_STORE or <db>.features.zarr); "
         "s3:// credentials and endpoint come from the standard AWS environment/config.")]


def _expand(values: list[str], every: list[str], keyword: str) -> list[str]:
    out: list[str] = []
    for value in values:
        for item in (every if value == keyword else [value]):
            if item not in out:
                out.append(item)
    return out


@app.command("extract")
def extract_command(
    encoder: Annotated[list[str], typer.Option("--encoder", "-e", help="Encoder id (see 'crsbench encoders'), "
                                                "or timm:<name>, hf:<repo or folder>, open_clip:<arch>; "
                                                "repeatable; 'all-tiny' for every random-init entry.")],
    dataset: Annotated[list[str], typer.Option("--dataset", "-d", help="Dataset name; repeatable; 'all'.")],
    store: StoreOption = None,
    db: DbOption = default_db_path(),
    device: Annotated[str, typer.Option(help="cpu or cuda (cuda:N).")] = "cpu",
    batch_size: Annotated[int, typer.Option("--batch-size", help="Images per forward pass.")] = 64,
    force: Annotated[bool, typer.Option("--force", help="Redo feature sets that are already complete.")] = False,
    weights: Annotated[Path | None, typer.Option(help="Local weights (file or model folder) for a single "
                                                 "pretrained encoder.")] = None,
    dtype: Annotated[str, typer.Option(help="Stored dtype: float16 or float32.")] = "float16",
    compute_dtype: Annotated[str, typer.Option("--compute-dtype",
                                               help="Model dtype: float32, bfloat16 or float16.")] = "float32",
    chunk_rows: Annotated[int, typer.Option("--chunk-rows", help="Rows per Zarr chunk (the resume unit).")] = 256,
    encoders_file: EncodersFileOption = None,
    allow_download: Annotated[bool, typer.Option(
        "--allow-download", help="Let hub ids fetch missing weights into the Hugging Face cache "
                                 "(default: offline; also CRSBENCH_ALLOW_DOWNLOAD=1).")] = False,
) -> None:
    """Extract features for every depth and condition, once per encoder and dataset (resumable)."""
    from crsbench.features.extraction import extract
    from crsbench.warehouse import catalog
    from crsbench.warehouse.datasets import list_datasets, read_dataset

    url = store or default_store(db)
    use_encoder_files(encoders_file, db)
    with Warehouse.open(db, read_only=True) as wh:  # no write lock held during the long part
        names = _expand(dataset, list_datasets(wh), "all")
        datasets = [read_dataset(wh, name) for name in names]
    encoders = [get_encoder(e) for e in _expand(encoder, tiny_encoder_ids(), "all-tiny")]
    if weights is not None and len(encoders) != 1:
        raise CrsbenchError("--weights applies to exactly one --encoder")
    results = []
    with progress() as bar:
        for entry in encoders:
            for ds in datasets:
                if entry.chest_only and ds.domain != "rad" and "all" in dataset:
                    results.append({"encoder": entry.id, "dataset": ds.name, "status": "not applicable",
                                    "seconds": 0.0})
                    continue  # chest-only encoders have no cell outside chest X-rays (never imputed)
                attrs = extract(ds, entry, url, device=device, batch_size=batch_size, force=force,
                                weights=str(weights) if weights else None, progress=bar, dtype=dtype,
                                compute_dtype=compute_dtype, chunk_rows=chunk_rows,
                                allow_download=allow_download or None)
                with Warehouse.open(db) as wh:
                    catalog.register_encoder(wh, entry, attrs.get("weights_hash"))
                    catalog.record_feature_set(wh, url, FeatureSetRef(ds.name, entry.id), attrs)
                results.append({"encoder": entry.id, "dataset": ds.name,
                                "status": "skipped (complete)" if attrs.get("skipped") else "extracted",
                                "seconds": round(float(attrs.get("seconds", 0.0)), 2)})
    frame = pd.DataFrame(results)
    emit({"store": url, "feature_sets": frame},
         f"feature store {url}:\n" + "\n".join(
             f"  {r['encoder']} x {r['dataset']}: {r['status']}"
             + (f" in {r['seconds']:.1f} s" if r["status"] == "extracted" else "") for r in results))


@app.command("encoders")
def encoders_command(
    check_weights: Annotated[bool, typer.Option("--check-weights", help="Also say whether each pretrained "
                                                "encoder's weights are available locally.")] = False,
    encoders_file: EncodersFileOption = None,
    db: DbOption = default_db_path(),
) -> None:
    """List every encoder (built-in, TOML, plugin) with its origin, family, scope, loader, input size."""
    use_encoder_files(encoders_file, db)
    rows = []
    for e in list_encoders():
        row = {"id": e.id, "origin": e.origin, "family": e.family, "scope": e.scope, "domain": e.domain,
               "loader": e.loader, "checkpoint": e.checkpoint, "input_size": e.input_size,
               "pooling": e.pooling, "pretrained": e.pretrained, "chest_only": e.chest_only}
        if check_weights:
            from crsbench.features.weights import weights_status

            row["weights"] = weights_status(e)
        rows.append(row)
    print_frame(pd.DataFrame(rows), title="encoders (also: timm:<name>, hf:<repo or folder>, "
                                          "open_clip:<arch>)", key="encoders")


@app.command("feature-sets")
def feature_sets_command(
    store: StoreOption = None,
    db: DbOption = default_db_path(),
    sync: Annotated[bool, typer.Option("--sync", help="Rescan the store and update the catalog first.")] = False,
) -> None:
    """List the feature-set catalog (dataset, encoder, regime, dims, complete)."""
    from crsbench.warehouse import catalog

    if sync:
        url = store or default_store(db)
        with Warehouse.open(db) as wh:
            catalog.sync_catalog(wh, FeatureStore(url))
    with Warehouse.open(db, read_only=True) as wh:
        frame = catalog.feature_sets(wh)
    cols = ["dataset_id", "encoder_id", "regime", "dim", "dtype", "n_images", "complete", "pretrained",
            "store_url"]
    print_frame(frame[cols] if not frame.empty else frame, title="feature sets", key="feature_sets")

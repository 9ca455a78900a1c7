"""Where the feature store of a warehouse lives, and the check that keeps secrets out of its URL."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from crsbench.core import CrsbenchError, Protected

STORE_ENV = "CRSBENCH_STORE"


def check_store_url(url: str | None) -> str | None:
    """Refuse a store URL carrying a password: it would be recorded in the catalog and printed.

    Object-store credentials come only from the standard environment/config that fsspec
    backends already read (AWS_* variables or ~/.aws for s3://, see docs/SCALING.md).
    """
    if url and "://" in url:
        netloc = urlsplit(url).netloc
        if "@" in netloc and ":" in netloc.rpartition("@")[0]:
            raise CrsbenchError(
                f"store URL {url.split('://', 1)[0]}://...@{netloc.rpartition('@')[2]} "
                "embeds credentials; put them in the environment or the backend's "
                "config instead (see docs/SCALING.md)"
            )
    return url


def default_store(db: Path) -> str:
    """`$CRSBENCH_STORE`, else `<db>.features.zarr` beside the warehouse file (a team warehouse's:
    `features.zarr` under its data path)."""
    chosen = check_store_url(os.environ.get(STORE_ENV))
    if chosen:
        return chosen
    from crsbench.warehouse import lake

    if lake.is_lake(db):
        return lake.default_store(lake.LakeLocator.parse(str(db)))
    return str(db.with_name(db.name + ".features.zarr"))


def default_adapter_root(store_url: str) -> Path:
    """`<store>.adapters` beside a local feature store."""
    if "://" in store_url and not store_url.startswith("file://"):
        raise CrsbenchError(f"feature store {store_url} is not local; give --out for the adapters")
    path = Path(store_url.removeprefix("file://"))
    return path.with_name(path.name + ".adapters")


def local_store_path(store_url: str) -> Path | None:
    """The folder of a local feature store; None for an object store (s3://, gs://, ...)."""
    if "://" in store_url and not store_url.startswith("file://"):
        return None
    return Path(store_url.removeprefix("file://"))


def warehouse_paths(db: Path, store_url: str) -> Protected:
    """What no command may write over or into: the warehouse file, its WAL, its parts folder,
    and its local feature store with the adapters beside it (see `core.check_write_target`)."""
    # Here, not at the top: every command imports this module for `check_store_url`, and the parts
    # module loads pyarrow (and numpy), which `--help` and the commands that write nothing never need.
    from crsbench.warehouse.parts import parts_dir_for

    paths = [
        (db, "the warehouse file"),
        (db.with_name(db.name + ".wal"), "the warehouse's write-ahead log"),
        (parts_dir_for(db), "the warehouse's parts folder"),
    ]
    store = local_store_path(store_url)
    if store is not None:
        paths += [(store, "the feature store"), (store.with_name(store.name + ".adapters"), "the adapters folder")]
    return paths

"""The image_properties cache: each image file's header properties, read once (METHODS.md §19).

`dataset_properties(wh, dataset)` returns one row per image of the dataset. A row is reused
while the image keeps the SHA-256 recorded at ingest and its file keeps the size the row was
read at (a stat, no hashing), so a rerun reads no header again; every file is looked for
before anything is read or written, and the first one missing is a one-line error.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from crsbench.core import CrsbenchError, InputError, ProgressFn, no_progress
from crsbench.ingest.file_properties import FileProperties, file_properties
from crsbench.ingest.images import npz_member

if TYPE_CHECKING:  # only the type: the connection imports the schema declarations this module reads
    from crsbench.warehouse.connection import Warehouse

PROPERTY_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(FileProperties))


def _images(wh: Warehouse, dataset: str) -> tuple[Path, pd.DataFrame]:
    row = wh.con.execute("select root from datasets where dataset_id = ?", [dataset]).fetchone()
    if row is None:
        raise CrsbenchError(f"dataset {dataset!r} is not in the warehouse")
    images = wh.sql(
        "select image_id, rel_path, sha256, split from images where dataset_id = ? order by row_index", [dataset]
    )
    if images.empty:
        raise CrsbenchError(f"dataset {dataset!r} has no images")
    if any(npz_member(str(p)) is not None for p in images["rel_path"].head(1)):
        raise CrsbenchError(
            f"dataset {dataset!r} stores its images as arrays in an .npz archive: they have no file properties to audit"
        )
    return Path(wh.resolve_path(row[0])), images


def _sizes(root: Path, rel_paths: pd.Series) -> list[int]:
    """Every file's size; the first missing one is the error (nothing has been read yet)."""
    sizes = []
    for rel in rel_paths:
        try:
            sizes.append(os.stat(root / str(rel)).st_size)
        except FileNotFoundError:
            raise CrsbenchError(
                f"image file not found: {root / str(rel)} (the dataset's files moved: point it at their new "
                "folder with 'crsbench dataset relocate NAME PATH')"
            ) from None
    return sizes


def check_files(wh: Warehouse, datasets: list[str]) -> None:
    """Every image file of every dataset is where it was recorded (the first missing one is the error)."""
    for dataset in datasets:
        root, images = _images(wh, dataset)
        _sizes(root, images["rel_path"])


def dataset_properties(wh: Warehouse, dataset: str, progress: ProgressFn = no_progress) -> pd.DataFrame:
    """row_index, image_id, group_id, split and every property of each image of `dataset`, in row order (cached)."""
    root, images = _images(wh, dataset)
    images["size"] = _sizes(root, images["rel_path"])
    cached = wh.sql("select * from image_properties where dataset_id = ?", [dataset])
    merged = images.merge(cached.drop(columns=["dataset_id"]), on="image_id", how="left", suffixes=("", "_cached"))
    fresh = (merged["sha256_cached"] == merged["sha256"]) & (merged["bytes"] == merged["size"])
    stale = merged.index[~fresh.fillna(False).astype(bool)]
    read = []
    for done, i in enumerate(stale, start=1):
        try:
            props = file_properties(root, str(merged.at[i, "rel_path"]))
        except InputError as exc:
            raise CrsbenchError(str(exc)) from None
        read.append({"dataset_id": dataset, "image_id": merged.at[i, "image_id"], "sha256": merged.at[i, "sha256"]})
        read[-1].update(dataclasses.asdict(props))
        progress(f"read {dataset} file headers", done, len(stale))
    if read:
        _store(wh, pd.DataFrame(read))
    out = wh.sql(
        f"select i.row_index, i.image_id, i.group_id, i.split, {', '.join('p.' + c for c in PROPERTY_COLUMNS)} from images i "
        "join image_properties p on p.dataset_id = i.dataset_id and p.image_id = i.image_id "
        "where i.dataset_id = ? order by i.row_index",
        [dataset],
    )
    return out


def _store(wh: Warehouse, rows: pd.DataFrame) -> None:
    """Replace the cached rows of these images in one transaction."""
    columns = ["dataset_id", "image_id", "sha256", *PROPERTY_COLUMNS]
    rows = rows[columns]
    names = ", ".join(f'"{c}"' for c in columns)
    with wh.transaction() as con:
        con.register("_new_image_properties", rows)
        try:
            con.execute(
                "delete from image_properties p using _new_image_properties n "
                "where p.dataset_id = n.dataset_id and p.image_id = n.image_id"
            )
            con.execute(
                f"insert into image_properties ({names}, read_at) "
                f"select {names}, current_timestamp from _new_image_properties"
            )
        finally:
            con.unregister("_new_image_properties")

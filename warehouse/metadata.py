"""Attach per-image metadata to a dataset already in the warehouse (table image_metadata).

For datasets ingested before metadata was kept (or whose source publishes none, as APTOS): the
metadata is re-read from the dataset's own source by its adapter (no image is decoded), or
taken from a CSV (image_id + one column per key). The rows of the keys given replace that
dataset's rows of the same keys in one transaction; a row for an image not in the dataset is
refused and nothing is written (METHODS.md §16.1).
"""

from __future__ import annotations

import json
from pathlib import Path

from crsbench.core import CrsbenchError
from crsbench.ingest.metadata import check_known_images, parse_bins, read_metadata_csv, read_source_metadata
from crsbench.warehouse.connection import Warehouse


def attach_metadata(wh: Warehouse, name: str, csv: Path | None = None, bins: str = "") -> dict[str, int]:
    """Store the metadata of dataset `name` (from `csv`, else its source); returns rows per key."""
    row = wh.con.execute("select adapter, root, options from datasets where dataset_id = ?", [name]).fetchone()
    if row is None:
        raise CrsbenchError(f"no dataset {name!r} in {wh.path}")
    edges = parse_bins(bins)
    known = {r[0] for r in wh.con.execute("select image_id from images where dataset_id = ?", [name]).fetchall()}
    if csv is not None:
        frame = read_metadata_csv(Path(csv), edges, known)
        where = Path(csv).name
    else:
        adapter, root, options = row
        frame = read_source_metadata(adapter, Path(wh.resolve_path(root)), json.loads(options or "{}"), edges)
        where = f"the {adapter} source of {name}"
    if csv is None:
        frame = frame[frame["image_id"].isin(known)]  # the source may list images skipped at ingest
    check_known_images(list(frame["image_id"]), known, where)
    keys = sorted(set(frame["key"]))
    if not keys:
        raise CrsbenchError(f"{where}: no metadata to attach to {name!r}")
    with wh.transaction() as con:
        con.execute("delete from image_metadata where dataset_id = ? and list_contains(?, key)", [name, keys])
        con.register("_crs_attach", frame.astype(object))
        try:
            con.execute(
                "insert into image_metadata (dataset_id, image_id, key, value) "
                "select ?, image_id, key, value from _crs_attach",
                [name],
            )
        finally:
            con.unregister("_crs_attach")
    return {k: int(n) for k, n in frame.groupby("key").size().items()}

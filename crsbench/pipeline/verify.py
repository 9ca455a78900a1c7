"""`crsbench verify`: every chunk of every feature set, and every Parquet part, against its checksums.

A feature chunk is checked by its `crc32c` codec and against every record of the content manifest:
the Zarr attrs, the set's `_chunk_digests` array and the warehouse's mirror `feature_chunks`. A
record removed, or differing from another, is damage too. A pending Parquet part is checked against
the SHA-256 `parts_ledger` recorded when it was written; a part crsbench did not write is foreign
(damage: no view reads it). Sets and parts with no record at all, written before checksums, are
"unverifiable (no checksums)", never damaged. Each damaged chunk lists the fits that read it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse

if TYPE_CHECKING:
    from crsbench.features.store import FeatureSetRef, FeatureStore
    from crsbench.warehouse.integrity import PartCheck

COLUMNS = ["object", "kind", "damage", "repair", "fits"]


@dataclasses.dataclass(frozen=True)
class VerifyReport:
    damaged: pd.DataFrame  # one row per damaged object: COLUMNS
    sets: pd.DataFrame  # one row per feature set: dataset, encoder, regime, chunks, status
    parts_checked: int
    parts_unverifiable: int

    @property
    def ok(self) -> bool:
        result: bool = self.damaged.empty
        return result


Row = dict[str, object]


def verify_all(db: Path, store_url: str, encoders: Sequence[str] = (), datasets: Sequence[str] = ()) -> VerifyReport:
    """Check the store's feature sets (optionally only these encoders / datasets) and the parts."""
    from crsbench.warehouse.integrity import verify_parts

    store = _open_store(store_url)
    refs = [
        r
        for r in store.feature_sets()
        if (not encoders or r.encoder_id in encoders) and (not datasets or r.dataset in datasets)
    ]
    damaged: list[Row] = []
    sets: list[Row] = []
    with Warehouse.open(db, read_only=True) as wh:
        for ref in refs:
            set_damage, set_row = _scan_feature_set(wh, store, store_url, ref)
            damaged += set_damage
            sets.append(set_row)
        damaged += _row_order_damage(store, sorted({r.dataset for r in refs}))
        check = verify_parts(wh)
    damaged += _part_damage(db, check)
    return VerifyReport(
        pd.DataFrame([{"fit_ids": [], **d} for d in damaged], columns=[*COLUMNS, "fit_ids"]),
        pd.DataFrame(sets, columns=["dataset", "encoder", "chunks", "status", "depths_damaged"]),
        check.checked,
        check.unverifiable,
    )


def _open_store(store_url: str) -> FeatureStore:
    from crsbench.features.store import FeatureStore

    store = FeatureStore(store_url)
    try:
        store.root()
    except CrsbenchError:
        raise CrsbenchError(f"feature store {store_url} does not exist; pass the store with --store") from None
    return store


def _scan_feature_set(wh: Warehouse, store: FeatureStore, store_url: str, ref: FeatureSetRef) -> tuple[list[Row], Row]:
    """(one damage row per damaged object of the set, with the fits that read it; the set's status row)."""
    from crsbench.features.integrity import repair_command, scan_set
    from crsbench.features.store import key_depth
    from crsbench.warehouse.integrity import fits_reading, recorded_manifest

    scan = scan_set(store.group(ref), ref, recorded_manifest(wh, store_url, ref))
    found = scan.damage
    damaged: list[Row] = []
    for d in found:
        # a damaged `_chunk_digests` array records every depth
        fits = fits_reading(wh.con, ref, [key_depth(d.name.split("/")[0])] if "/" in d.name else [])
        damaged.append(
            {
                "object": d.object,
                "kind": "feature chunk" if d.chunk >= 0 else "feature array",
                "damage": d.what,
                "repair": repair_command(ref),
                "fits": len(fits),
                "fit_ids": fits,
            }
        )
    status = "damaged" if found else ("ok" if scan.verifiable else "unverifiable (no checksums)")
    row: Row = {
        "dataset": ref.dataset,
        "encoder": ref.key,
        "chunks": scan.chunks,
        "status": status,
        "depths_damaged": sorted({d.name.split("/")[0] for d in found}),
    }
    return damaged, row


def _row_order_damage(store: FeatureStore, datasets: Sequence[str]) -> list[Row]:
    """A dataset's stored row order (its image ids) that cannot be read back is damage too."""
    damaged: list[Row] = []
    for name in datasets:
        try:
            store.image_ids(name)
        except CrsbenchError as exc:
            damaged.append(
                {"object": f"{name}/image_ids", "kind": "row order", "damage": str(exc), "repair": "", "fits": 0}
            )
    return damaged


def _part_damage(db: Path, check: PartCheck) -> list[Row]:
    """Pending Parquet parts whose digest differs from the ledger's, then parts crsbench did not write."""
    damaged: list[Row] = [
        {"object": name, "kind": "parquet part", "damage": what, "repair": "", "fits": 0}
        for name, what in check.damaged
    ]
    for name in check.foreign:
        damaged.append(
            {
                "object": name,
                "kind": "foreign parquet part",
                "damage": "not written by crsbench (absent from parts_ledger, no digest sidecar); no view reads it",
                "repair": f"move {db.name}.parts/{name} out of the parts folder",
                "fits": 0,
            }
        )
    return damaged

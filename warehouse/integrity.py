"""The warehouse side of data at rest you can trust (METHODS.md §2.6).

* `feature_chunks` mirrors each feature set's content manifest (CRC-32C of every decoded row
  chunk, from the Zarr attrs), so a manifest rewritten in the store is caught by comparison;
* `parts_ledger.digest` holds the SHA-256 each Parquet part had when it was written; a part
  neither in the ledger nor carrying its writer's digest sidecar is foreign (`parts.foreign_parts`);
* the fits that read a damaged chunk are found from `runs`, and retired on repair as
  `ingest --replace` retires them (`retired_fits`; nothing is deleted).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import duckdb
import pandas as pd

from crsbench.features.store import PROJ, Depth, FeatureSetRef
from crsbench.warehouse import parts
from crsbench.warehouse.connection import Warehouse

REPAIRED = "features repaired"


def record_chunk_manifest(wh: Warehouse, store_url: str, ref: FeatureSetRef, manifest: dict[str, list[int]]) -> int:
    """Replace the set's `feature_chunks` rows with `manifest` ({array: digest per chunk}); returns rows."""
    url = wh.portable_path(store_url)
    rows = pd.DataFrame(
        [
            (ref.dataset, ref.encoder_id, ref.regime, url, name, k, int(d))
            for name, digests in sorted(manifest.items())
            for k, d in enumerate(digests)
        ],
        columns=["dataset_id", "encoder_id", "regime", "store_url", "array_name", "chunk", "crc32c"],
    )
    with wh.transaction() as con:
        con.execute(
            "delete from feature_chunks where dataset_id = ? and encoder_id = ? and regime = ? and store_url = ?",
            [ref.dataset, ref.encoder_id, ref.regime, url],
        )
        if len(rows):
            con.register("_crs_chunks", rows)
            try:
                con.execute("insert into feature_chunks by name select * from _crs_chunks")
            finally:
                con.unregister("_crs_chunks")
    return len(rows)


def recorded_manifest(wh: Warehouse, store_url: str, ref: FeatureSetRef) -> dict[str, list[int]]:
    """The set's manifest as the warehouse recorded it ({} when none was)."""
    frame = wh.con.execute(
        "select array_name, chunk, crc32c from feature_chunks where dataset_id = ? and encoder_id = ? "
        "and regime = ? and store_url = ? order by array_name, chunk",
        [ref.dataset, ref.encoder_id, ref.regime, wh.portable_path(store_url)],
    ).fetchall()
    out: dict[str, list[int]] = {}
    for name, _, digest in frame:
        out.setdefault(name, []).append(int(digest))
    return out


def recorded_manifests(wh: Warehouse, store_url: str) -> dict[str, dict[str, list[int]]]:
    """Every manifest the warehouse recorded for the store at `store_url`, by set path
    (`FeatureStore.recorded`: probe reads check each chunk against it too)."""
    rows = wh.con.execute(
        "select dataset_id, encoder_id, regime, array_name, chunk, crc32c from feature_chunks "
        "where store_url = ? order by dataset_id, encoder_id, regime, array_name, chunk",
        [wh.portable_path(store_url)],
    ).fetchall()
    out: dict[str, dict[str, list[int]]] = {}
    for dataset, encoder, regime, name, _, digest in rows:
        path = FeatureSetRef(dataset, encoder, regime).path
        out.setdefault(path, {}).setdefault(name, []).append(int(digest))
    return out


@dataclasses.dataclass(frozen=True)
class PartCheck:
    checked: int
    unverifiable: int
    damaged: list[tuple[str, str]]  # (kind/part, what)
    foreign: list[str] = dataclasses.field(default_factory=list)  # kind/part of parts crsbench did not write


def parts_kinds() -> list[str]:
    from crsbench.warehouse.schema import PARTS

    return list(PARTS)


def verify_parts(wh: Warehouse) -> PartCheck:
    """Every pending Parquet part against the digest the ledger recorded when it was written, and
    the parts crsbench did not write (foreign: no view reads them)."""
    rows = wh.con.execute(
        "select kind, part, digest from parts_ledger where state = 'pending' order by kind, part"
    ).fetchall()
    ledgered = wh.ledgered()
    foreign = parts.foreign_parts(wh.parts_dir, ledgered, parts_kinds())
    rows += [  # parts written since the last read-write open: checked against their sidecar
        (kind, p.name, parts.recorded_digest(p))
        for kind in parts_kinds()
        for p in parts.data_parts(wh.parts_dir / kind)
        if (kind, p.name) not in ledgered and p not in foreign
    ]
    damaged: list[tuple[str, str]] = []
    unverifiable = 0
    for kind, name, digest in rows:
        path = wh.parts_dir / kind / name
        if not path.exists():
            damaged.append((f"{kind}/{name}", "the part file is missing"))
        elif digest is None:
            unverifiable += 1
        elif parts.file_digest(path) != digest:
            damaged.append((f"{kind}/{name}", "its bytes differ from the SHA-256 recorded when it was written"))
    return PartCheck(len(rows), unverifiable, damaged, [str(p.relative_to(wh.parts_dir)) for p in foreign])


def fits_reading(con: duckdb.DuckDBPyConnection, ref: FeatureSetRef, depths: Sequence[Depth]) -> list[str]:
    """Fits that read the set at one of `depths`: trained on its dataset or evaluated on it.

    Every fit at a depth reads every train row of its source (the standardisation statistics),
    so a damaged chunk of a (set, depth) is read by all of them. Depth `proj` is read by the
    set's zero-shot fits (METHODS.md §3.5)."""
    numeric = [round(float(d), 6) for d in depths if d != PROJ]
    if not depths:
        return []
    marks = ", ".join("?" * len(numeric)) or "null"
    zero_shot = "or probe = 'zeroshot'" if PROJ in depths else ""
    rows = con.execute(
        f"select distinct fit_id from runs where encoder_id = ? and regime = ? "
        f"and (dataset_id = ? or eval_dataset_id = ?) and (round(depth, 6) in ({marks}) {zero_shot}) order by fit_id",
        [ref.encoder_id, ref.regime, ref.dataset, ref.dataset, *numeric],
    ).fetchall()
    return [r[0] for r in rows]


def retire_fits(con: duckdb.DuckDBPyConnection, ref: FeatureSetRef, fit_ids: list[str], generation: int) -> int:
    """Retire `fit_ids` for a repair of `ref` (its `generation`-th); returns how many were retired."""
    if not fit_ids:
        return 0
    con.executemany(
        "insert into retired_fits values (?, ?, ?, ?, current_timestamp)",
        [[fit, ref.dataset, f"repair:{ref.path}#{generation}", REPAIRED] for fit in fit_ids],
    )
    return len(fit_ids)

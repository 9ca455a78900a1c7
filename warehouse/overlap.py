"""Pretraining overlap (METHODS.md §20): what each encoder declares it was pretrained on, and
what share of each dataset a user-supplied list of pretraining image hashes covers.

Declarations come from the registry entry when its encoder is upserted (`record_pretraining`,
called by `catalog.upsert_encoder`): one row per declared dataset name, or one row without a
name saying "declared nothing" or "unknown". A measured overlap (`measure_overlap`, `crsbench
overlap --manifest FILE`) matches the SHA-256 of every ingested image against the list and
stores, per split, how many were found. View `encoder_dataset_overlap` joins both with the
datasets' own names (datasets.source).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pandas as pd

from crsbench.core import CrsbenchError, InputError
from crsbench.features.registry import EncoderEntry
from crsbench.ingest.known_datasets import KNOWN_DATASETS
from crsbench.warehouse.connection import Warehouse

_SHA256 = re.compile(r"[0-9a-f]{64}")


def record_pretraining(con: duckdb.DuckDBPyConnection, entry: EncoderEntry) -> None:
    """Replace the encoder's encoder_pretraining rows by what its registry entry declares."""
    declared = entry.pretraining
    con.execute("delete from encoder_pretraining where encoder_id = ?", [entry.id])
    names: Sequence[str | None] = declared.datasets or [None]
    for name in names:
        con.execute(
            "insert into encoder_pretraining (encoder_id, dataset, source, known, declared) values (?, ?, ?, ?, ?)",
            [entry.id, name, declared.source, None if name is None else name in KNOWN_DATASETS, declared.known],
        )


def read_hash_manifest(path: Path) -> frozenset[str]:
    """The SHA-256 hashes listed in `path`: one per line (64 hex digits, any case), blank lines and
    '#' comments (whole-line or trailing) ignored. A malformed line is an InputError naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read hash manifest {path}: {exc}") from None
    hashes = set()
    for number, line in enumerate(text.splitlines(), start=1):
        value = line.split("#", 1)[0].strip().lower()
        if not value:
            continue
        if not _SHA256.fullmatch(value):
            shown = value if len(value) <= 80 else value[:77] + "..."
            raise InputError(
                f"{path}, line {number}: {shown!r} is not a SHA-256 hash (64 hex digits; perceptual "
                "hashes are not supported: ingest stores only each image's SHA-256)"
            )
        hashes.add(value)
    return frozenset(hashes)


def overlap_shares(wh: Warehouse, hashes: frozenset[str], datasets: Sequence[str]) -> pd.DataFrame:
    """Per (dataset, split) of `datasets` (all when empty): images, images found in `hashes`, share."""
    known = [r[0] for r in wh.con.execute("select dataset_id from datasets order by 1").fetchall()]
    missing = [d for d in datasets if d not in known]
    if missing:
        raise CrsbenchError(f"no dataset {missing[0]!r} in {wh.path} (datasets: {', '.join(known) or 'none'})")
    chosen = list(datasets) or known
    wh.con.register("_crs_hashes", pd.DataFrame({"sha256": sorted(hashes)}, dtype=object))
    try:
        return wh.sql(
            "select i.dataset_id, i.split, count(*)::integer as n_images, "
            "count(h.sha256)::integer as n_found, count(h.sha256) / count(*) as share "
            "from images i left join (select distinct sha256 from _crs_hashes) h on lower(i.sha256) = h.sha256 "
            "where list_contains(?, i.dataset_id) group by all order by i.dataset_id, i.split",
            [chosen],
        )
    finally:
        wh.con.unregister("_crs_hashes")


def store_overlap(wh: Warehouse, encoder: str, shares: pd.DataFrame, manifest: str, n_hashes: int) -> None:
    """Store `shares` (overlap_shares' rows) as the measured overlap of `encoder` with each dataset
    in it, replacing what was measured for that (encoder, dataset) before."""
    with wh.transaction() as con:
        for dataset in shares["dataset_id"].unique():
            con.execute("delete from dataset_overlap where encoder_id = ? and dataset_id = ?", [encoder, dataset])
        for r in shares.itertuples():
            con.execute(
                "insert into dataset_overlap values (?, ?, ?, ?, ?, ?, ?, ?, current_timestamp)",
                [encoder, r.dataset_id, r.split, int(r.n_images), int(r.n_found), float(r.share), manifest, n_hashes],
            )


def overlap_rows(wh: Warehouse) -> pd.DataFrame:
    """View encoder_dataset_overlap, one row per (encoder, dataset)."""
    return wh.sql("select * from encoder_dataset_overlap order by encoder_id, dataset_id")


@dataclasses.dataclass(frozen=True)
class OverlapReport:
    """What `Bench.overlap` returns: the measured shares per (dataset, split) when a hash list was
    given (None otherwise), and the rows of view encoder_dataset_overlap after storing them."""

    shares: pd.DataFrame | None
    rows: pd.DataFrame
    n_hashes: int = 0
    encoder: str | None = None  # the encoder the shares were stored for; None: reported only


def measure_overlap(
    wh: Warehouse, manifest: Path | None, encoder: str | None, datasets: Sequence[str] = ()
) -> OverlapReport:
    """Match the hash list `manifest` (if any) against `datasets` (default all), store the shares
    for `encoder` when one is named, and return them with the view's rows."""
    if manifest is None:
        if encoder is not None:
            raise CrsbenchError("--encoder names whose pretraining set --manifest lists; give --manifest FILE too")
        return OverlapReport(None, overlap_rows(wh))
    hashes = read_hash_manifest(manifest)
    shares = overlap_shares(wh, hashes, datasets)
    if encoder is not None:
        store_overlap(wh, encoder, shares, Path(manifest).name, len(hashes))
    return OverlapReport(shares, overlap_rows(wh), len(hashes), encoder)

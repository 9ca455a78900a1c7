"""Pretraining overlap (METHODS.md §20): what each encoder declares it was pretrained on, and
what share of each dataset a user-supplied list of pretraining image hashes covers.

Declarations come from the registry entry when its encoder is upserted (`record_pretraining`,
called by `catalog.upsert_encoder`): one row per declared dataset name, or one row without a
name saying "declared nothing" or "unknown". A measured overlap (`measure_overlap`, `crsbench
overlap --manifest FILE`) matches every ingested image against the list, by SHA-256 (64 hex
digits: the same bytes) or by perceptual hash (16 hex digits: `ingest.perceptual.dhash`, the same
picture re-encoded or resized), and stores, per split, how many were found. View `encoder_dataset_overlap` joins both with the
datasets' own names (datasets.source).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from crsbench.core import CrsbenchError, InputError, ProgressFn, no_progress
from crsbench.features.registry import EncoderEntry
from crsbench.ingest.known_datasets import KNOWN_DATASETS
from crsbench.ingest.perceptual import as_int, dhash, nearest_distances
from crsbench.warehouse.connection import Warehouse

_SHA256 = re.compile(r"[0-9a-f]{64}")
_DHASH = re.compile(r"[0-9a-f]{16}")


@dataclasses.dataclass(frozen=True)
class ListedHashes:
    """A pretraining set's hash list: SHA-256 hashes and perceptual (dHash) hashes, hex lower-case."""

    sha256: frozenset[str]
    dhash: frozenset[str] = frozenset()

    def __len__(self) -> int:
        return len(self.sha256) + len(self.dhash)


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


def read_hash_manifest(path: Path) -> ListedHashes:
    """The hashes listed in `path`, one per line, any case: SHA-256 (64 hex digits) or a perceptual
    dHash (16 hex digits); blank lines and '#' comments (whole-line or trailing) ignored. A
    malformed line is an InputError naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read hash manifest {path}: {exc}") from None
    sha256, perceptual = set(), set()
    for number, line in enumerate(text.splitlines(), start=1):
        value = line.split("#", 1)[0].strip().lower()
        if not value:
            continue
        if _SHA256.fullmatch(value):
            sha256.add(value)
        elif _DHASH.fullmatch(value):
            perceptual.add(value)
        else:
            shown = value if len(value) <= 80 else value[:77] + "..."
            raise InputError(
                f"{path}, line {number}: {shown!r} is neither a SHA-256 hash (64 hex digits) nor a "
                "perceptual dHash (16 hex digits, as imagehash.dhash writes it)"
            )
    return ListedHashes(frozenset(sha256), frozenset(perceptual))


def overlap_shares(
    wh: Warehouse,
    hashes: ListedHashes,
    datasets: Sequence[str],
    max_distance: int = 0,
    progress: ProgressFn | None = None,
) -> pd.DataFrame:
    """Per (dataset, split) of `datasets` (all when empty): images, images found in `hashes`, share.
    An image is found when its SHA-256 is listed, or its dHash is within `max_distance` bits of a
    listed dHash (images are decoded only when dHashes are listed)."""
    known = [r[0] for r in wh.con.execute("select dataset_id from datasets order by 1").fetchall()]
    missing = [d for d in datasets if d not in known]
    if missing:
        raise CrsbenchError(f"no dataset {missing[0]!r} in {wh.path} (datasets: {', '.join(known) or 'none'})")
    if not 0 <= max_distance <= 64:
        raise InputError(f"--max-distance {max_distance}: a Hamming distance between 64-bit hashes is 0 to 64")
    images = wh.sql(
        "select i.dataset_id, i.split, i.rel_path, lower(i.sha256) as sha256, d.root "
        "from images i join datasets d using (dataset_id) "
        "where list_contains(?, i.dataset_id) order by i.dataset_id, i.row_index",
        [list(datasets) or known],
    )
    found = images["sha256"].isin(hashes.sha256).to_numpy(copy=True)
    if hashes.dhash:
        found |= _perceptual_found(images, hashes.dhash, max_distance, progress or no_progress)
    counted = (
        images.assign(found=found)
        .groupby(["dataset_id", "split"], sort=True)["found"]
        .agg(n_images="size", n_found="sum")
        .reset_index()
        .astype({"n_images": "int32", "n_found": "int32"})
    )
    return counted.assign(share=counted["n_found"] / counted["n_images"])


def _perceptual_found(
    images: pd.DataFrame, listed: frozenset[str], max_distance: int, progress: ProgressFn
) -> np.ndarray:
    """Whether each image's dHash is within `max_distance` bits of a listed one (each image decoded once)."""
    from crsbench.features.transforms import decode_image

    wanted = np.array([as_int(h) for h in sorted(listed)], dtype=np.uint64)
    own = np.empty(len(images), dtype=np.uint64)
    label = "perceptual hashes of the ingested images"
    for i, (root, rel, sha) in enumerate(zip(images["root"], images["rel_path"], images["sha256"], strict=True)):
        own[i] = as_int(dhash(decode_image(root, rel, sha)))
        progress(label, i + 1, len(images))
    return nearest_distances(own, wanted) <= max_distance


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
    wh: Warehouse,
    manifest: Path | None,
    encoder: str | None,
    datasets: Sequence[str] = (),
    max_distance: int = 0,
    progress: ProgressFn | None = None,
) -> OverlapReport:
    """Match the hash list `manifest` (if any) against `datasets` (default all), store the shares
    for `encoder` when one is named, and return them with the view's rows."""
    if manifest is None:
        if encoder is not None:
            raise CrsbenchError("--encoder names whose pretraining set --manifest lists; give --manifest FILE too")
        return OverlapReport(None, overlap_rows(wh))
    hashes = read_hash_manifest(manifest)
    shares = overlap_shares(wh, hashes, datasets, max_distance, progress)
    if encoder is not None:
        store_overlap(wh, encoder, shares, Path(manifest).name, len(hashes))
    return OverlapReport(shares, overlap_rows(wh), len(hashes), encoder)

"""Sites for the results-exchange tests (tests/exchange/): small warehouses with runs, stored
predictions and a frozen panel (support.bootstrap_support worlds), built in separate processes as
two hospitals would, and helpers to read a bundle and the site tables."""

from __future__ import annotations

import io
import json
import zipfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
from support.bootstrap_support import build_world
from support.synthetic import make_dataset

from crsbench.exchange.bundle import encode, write_bundle
from crsbench.warehouse.connection import Warehouse

SITE_TABLES = ("site_bundles", "site_runs", "site_cells", "site_replicates", "site_datasets")


def shift_datasets(name: str) -> dict:
    """One multilabel chest X-ray dataset per site: CheXpert at one, the MIMIC-CXR stand-in at the other."""
    seed = {"chexpert": 21, "mimic-cxr": 22}[name]
    return {name: make_dataset(name, "multilabel", 400, 3, seed=seed, split_share=(0.4, 0.1))}


def _build(folder: str, datasets: str | None) -> str:
    names = datasets.split(",") if datasets else None
    chosen = {k: v for n in names for k, v in shift_datasets(n).items()} if names else None
    return str(build_world(Path(folder), datasets=chosen))


def build_sites(root: Path, sites: dict[str, str | None]) -> dict[str, Path]:
    """site -> warehouse, each built in its own process (`sites`: site -> comma-separated shift
    datasets, or None for the default derm + cxr world)."""
    for site in sites:
        (root / site).mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=2) as pool:
        futures = {site: pool.submit(_build, str(root / site), spec) for site, spec in sites.items()}
        return {site: Path(f.result()) for site, f in futures.items()}


def entries(bundle: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(bundle) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def part(bundle: Path, name: str) -> pd.DataFrame:
    return pq.read_table(io.BytesIO(entries(bundle)[f"{name}.parquet"])).to_pandas()


def repack(bundle: Path, out: Path, manifest_edit=None, part_edit=None) -> Path:
    """A bundle re-written unsigned after `manifest_edit(manifest)` / `part_edit(parts)` (in place)."""
    files = entries(bundle)
    manifest = json.loads(files["manifest.json"])
    manifest.pop("parts")
    parts = {
        n.removesuffix(".parquet"): pq.read_table(io.BytesIO(d)).to_pandas()
        for n, d in files.items()
        if n.endswith(".parquet")
    }
    if manifest_edit:
        manifest_edit(manifest)
    if part_edit:
        part_edit(parts)
    manifest_bytes, encoded = encode(manifest, parts)
    write_bundle(out, manifest_bytes, encoded, None)
    return out


def site_tables(db: Path) -> dict[str, pd.DataFrame]:
    """Every site table's rows, sorted: what 'the warehouse is unchanged' compares."""
    with Warehouse.open(db, read_only=True) as wh:
        return {t: wh.sql(f"select * from {t} order by all") for t in SITE_TABLES}


def rezip(files: dict[str, bytes], out: Path) -> Path:
    """The archive `files` as a bundle file, as written, nothing re-digested or re-signed."""
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    import pyarrow as pa

    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), sink, compression="zstd")
    return sink.getvalue()

"""The results bundle as a file (docs/METHODS.md §22.1): one zip archive holding `manifest.json`,
the parts as Parquet files and, when signed, `signature.json`.

The manifest records every part's SHA-256, row count and columns, so one digest, that of the
manifest's bytes, names the whole bundle (its id in the receiving warehouse), and one Ed25519
signature over those bytes covers every number in it. A bundle is written to a temporary file
beside its target and renamed into place, so a reader never sees half of one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from crsbench.core import CrsbenchError

BUNDLE_FORMAT = "crsbench-results"
BUNDLE_SCHEMA = 1  # the layout this crsbench writes and the newest it reads
MANIFEST = "manifest.json"
SIGNATURE = "signature.json"
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # zip entry times: the same results give the same bytes


@dataclass(frozen=True)
class Bundle:
    path: Path
    manifest: dict[str, Any]
    manifest_bytes: bytes
    parts: dict[str, pd.DataFrame]  # part name (file name without .parquet) -> rows
    signature: dict[str, str] | None

    @property
    def digest(self) -> str:
        return manifest_digest(self.manifest_bytes)


def manifest_digest(manifest_bytes: bytes) -> str:
    return hashlib.sha256(manifest_bytes).hexdigest()


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), sink, compression="zstd")
    return sink.getvalue()


def encode(manifest: dict[str, Any], parts: dict[str, pd.DataFrame]) -> tuple[bytes, dict[str, bytes]]:
    """(manifest bytes with the parts' digests filled in, part file name -> bytes)."""
    files = {f"{name}.parquet": _parquet_bytes(frame) for name, frame in sorted(parts.items())}
    manifest = {
        **manifest,
        "parts": {
            name: {
                "sha256": hashlib.sha256(data).hexdigest(),
                "rows": len(parts[name.removesuffix(".parquet")]),
                "columns": list(parts[name.removesuffix(".parquet")].columns),
            }
            for name, data in files.items()
        },
    }
    return json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8") + b"\n", files


def write_bundle(out: Path, manifest_bytes: bytes, files: dict[str, bytes], signature: dict[str, str] | None) -> None:
    """Write the archive atomically (a temporary file in the target's folder, then a rename)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_STORED) as archive:
            entries = {MANIFEST: manifest_bytes, **files}
            if signature is not None:
                entries[SIGNATURE] = json.dumps(signature, indent=1, sort_keys=True).encode("utf-8") + b"\n"
            for name, data in entries.items():
                archive.writestr(zipfile.ZipInfo(name, _FIXED_TIME), data)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _entries(path: Path) -> dict[str, bytes]:
    try:
        with zipfile.ZipFile(path) as archive:
            return {info.filename: archive.read(info) for info in archive.infolist()}
    except FileNotFoundError as exc:
        raise CrsbenchError(f"{path}: no such file") from exc
    except (zipfile.BadZipFile, EOFError, OSError, zipfile.LargeZipFile) as exc:
        raise CrsbenchError(f"{path}: not a complete results bundle (truncated or not a zip archive: {exc})") from exc


def _manifest(path: Path, entries: dict[str, bytes]) -> dict[str, Any]:
    if MANIFEST not in entries:
        raise CrsbenchError(f"{path}: not a results bundle (no {MANIFEST})")
    try:
        manifest = json.loads(entries[MANIFEST])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CrsbenchError(f"{path}: {MANIFEST} is not valid JSON ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise CrsbenchError(f"{path}: not a crsbench results bundle (format {manifest.get('format')!r})")
    schema = manifest.get("bundle_schema")
    if not isinstance(schema, int) or schema > BUNDLE_SCHEMA:
        raise CrsbenchError(
            f"{path}: bundle schema {schema!r} is newer than this crsbench reads ({BUNDLE_SCHEMA}); "
            f"it was exported by crsbench {manifest.get('crsbench_version', '?')}: upgrade crsbench to import it"
        )
    return manifest


def read_bundle(path: Path) -> Bundle:
    """Open and check a bundle: its layout, schema version and every part's digest."""
    entries = _entries(path)
    manifest = _manifest(path, entries)
    listed = manifest.get("parts", {})
    extra = sorted(set(entries) - set(listed) - {MANIFEST, SIGNATURE})
    if extra:
        raise CrsbenchError(f"{path}: file {extra[0]!r} is not listed in the manifest; refusing the bundle")
    parts = {}
    for name, meta in sorted(listed.items()):
        if name not in entries:
            raise CrsbenchError(f"{path}: part {name} is listed in the manifest but missing (truncated bundle?)")
        if hashlib.sha256(entries[name]).hexdigest() != meta.get("sha256"):
            raise CrsbenchError(
                f"{path}: part {name} does not match the digest its manifest records: it was changed after export"
            )
        parts[name.removesuffix(".parquet")] = pq.read_table(io.BytesIO(entries[name])).to_pandas()
    signature = None
    if SIGNATURE in entries:
        try:
            signature = json.loads(entries[SIGNATURE])
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CrsbenchError(f"{path}: {SIGNATURE} is not valid JSON ({exc})") from exc
    return Bundle(path, manifest, entries[MANIFEST], parts, signature)

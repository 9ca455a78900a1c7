"""Feature data you can trust: chunk checksums, the content manifest, damage scans (METHODS.md §2).

Two independent checks guard every stored chunk of a feature array:

* the `crc32c` codec after compression (Zarr v3's core checksum codec): a flipped bit or a
  truncated chunk fails to decode;
* the content manifest: CRC-32C of every chunk's *decoded* bytes (the rows as stored, NaN
  fill included), computed from the block at extraction, written per row chunk to the
  set's `_chunk_digests` array before the chunk's progress marker, and published at
  completion into each array's `chunk_crc32c` attribute (one int per row chunk). It catches
  valid writes that changed the values (swapped rows, rescaled features) and deleted chunks.

Stores written before checksums have neither; they read as before and scan as "unverifiable".
This module only reads and describes; the pipeline mirrors the manifest to the warehouse.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import google_crc32c
import numpy as np
import zarr
from zarr.codecs import BloscCodec, Crc32cCodec
from zarr.core.sync import sync

from crsbench.core import FROZEN, CrsbenchError
from crsbench.features.store import FeatureSetRef

DIGEST_ARRAY = "_chunk_digests"  # uint32 [n_chunks, n_arrays], one row per row chunk
DIGEST_NAMES = "digest_arrays"  # group attr: the arrays, in the digest array's column order
MANIFEST_ATTR = "chunk_crc32c"  # array attr: CRC-32C of each decoded row chunk, published at completion


def checksummed_compressors() -> list[Any]:
    """Blosc zstd, then the `crc32c` codec: the stored chunk carries its own checksum."""
    return [BloscCodec(cname="zstd", clevel=3, shuffle="shuffle"), Crc32cCodec()]


def has_codec_checksum(arr: zarr.Array[Any]) -> bool:
    return any(isinstance(c, Crc32cCodec) for c in arr.metadata.codecs)  # type: ignore[union-attr]


def block_digest(block: np.ndarray) -> int:
    """CRC-32C of a block's decoded bytes (C order, stored dtype)."""
    return int(google_crc32c.value(np.ascontiguousarray(block).tobytes()))


def array_label(ref: FeatureSetRef, name: str) -> str:
    depth, _, condition = name.partition("/")
    return f"dataset {ref.dataset}, encoder {ref.key}, depth {depth}, condition {condition}"


def repair_command(ref: FeatureSetRef) -> str:
    if ref.regime != FROZEN:  # adapted features are re-made with their adapter
        return f"crsbench adapt -e {ref.encoder_id} -d {ref.dataset} --force"
    return f"crsbench extract --repair -e {ref.encoder_id} -d {ref.dataset}"


class ChunkDamage(CrsbenchError):
    """A stored chunk that failed its codec checksum or the manifest: one line naming it and the fix."""

    def __init__(self, ref: FeatureSetRef, name: str, chunk: int, what: str) -> None:
        self.ref, self.name, self.chunk, self.what = ref, name, chunk, what
        super().__init__(
            f"damaged feature chunk {ref.path}/{name}/c/{chunk}/0 ({array_label(ref, name)}, chunk {chunk}): "
            f"{what}; repair it with '{repair_command(ref)}'"
        )

    def __reduce__(self):  # type: ignore[no-untyped-def]  # crosses dask.distributed workers intact
        return (ChunkDamage, (self.ref, self.name, self.chunk, self.what))


def chunk_key(arr: zarr.Array[Any], chunk: int) -> str:
    return f"{arr.path}/{arr.metadata.encode_chunk_key((chunk, 0))}"


def chunk_present(arr: zarr.Array[Any], chunk: int) -> bool:
    return bool(sync(arr.store.exists(chunk_key(arr, chunk))))


def delete_chunk(arr: zarr.Array[Any], chunk: int) -> None:
    sync(arr.store.delete(chunk_key(arr, chunk)))


def read_chunk(arr: zarr.Array[Any], ref: FeatureSetRef, name: str, chunk: int, expected: int | None) -> np.ndarray:
    """Decode one row chunk and check it against its manifest digest (`None`: no manifest)."""
    rows = int(arr.chunks[0])
    try:
        block: np.ndarray = np.asarray(arr[chunk * rows : (chunk + 1) * rows])
    except Exception as exc:  # blosc, crc32c and IO errors alike: the chunk cannot be decoded
        raise ChunkDamage(ref, name, chunk, f"it fails to decode ({type(exc).__name__}: {exc})") from None
    if expected is not None and block_digest(block) != expected:
        missing = not chunk_present(arr, chunk)
        what = "its stored chunk is missing" if missing else "its values differ from the manifest written at extraction"
        raise ChunkDamage(ref, name, chunk, what)
    return block


def manifest(arr: zarr.Array[Any]) -> list[int] | None:
    values = arr.attrs.get(MANIFEST_ATTR)
    return [int(v) for v in values] if isinstance(values, list) else None


def publish_manifest(group: zarr.Group) -> None:
    """Copy each array's column of `_chunk_digests` into its `chunk_crc32c` attr (at completion)."""
    if DIGEST_ARRAY not in group:
        return  # a set started before checksums: it stays unverifiable
    names = [str(n) for n in cast("list[object]", group.attrs.get(DIGEST_NAMES, []))]
    node = group[DIGEST_ARRAY]
    assert isinstance(node, zarr.Array)
    digests = np.asarray(node[:])
    for j, name in enumerate(names):
        arr = group[name]
        assert isinstance(arr, zarr.Array)
        arr.attrs[MANIFEST_ATTR] = [int(v) for v in digests[:, j]]


@dataclasses.dataclass(frozen=True)
class Damage:
    """One damaged object of a feature set (`chunk` is the row chunk, -1 for the whole array)."""

    ref: FeatureSetRef
    name: str
    chunk: int
    what: str

    @property
    def object(self) -> str:
        return f"{self.ref.path}/{self.name}" + (f"/c/{self.chunk}/0" if self.chunk >= 0 else "")


@dataclasses.dataclass
class SetScan:
    ref: FeatureSetRef
    verifiable: bool
    damage: list[Damage]
    chunks: int  # chunks checked

    @property
    def damaged_chunks(self) -> list[int]:
        return sorted({d.chunk for d in self.damage if d.chunk >= 0})


def feature_arrays(group: zarr.Group) -> list[str]:
    """`{depth}/{condition}` of every feature array in the set's group."""
    out: list[str] = []
    for depth, sub in group.groups():
        out.extend(f"{depth}/{cond}" for cond, _ in sub.arrays())
    return sorted(out)


def scan_set(group: zarr.Group, ref: FeatureSetRef) -> SetScan:
    """Decode every chunk of every array of one set and check it against the manifest."""
    damage: list[Damage] = []
    verifiable, checked = True, 0
    for name in feature_arrays(group):
        arr = group[name]
        assert isinstance(arr, zarr.Array)
        expected = manifest(arr)
        if expected is None or not has_codec_checksum(arr):
            verifiable = False
        n_chunks = int(arr.cdata_shape[0])
        if expected is not None and len(expected) != n_chunks:
            damage.append(Damage(ref, name, -1, f"the manifest lists {len(expected)} chunks, the array has {n_chunks}"))
            expected = None
        for k in range(n_chunks):
            checked += 1
            try:
                read_chunk(arr, ref, name, k, expected[k] if expected is not None else None)
            except ChunkDamage as exc:
                damage.append(Damage(ref, name, k, exc.what))
    return SetScan(ref, verifiable, damage, checked)


def chunk_manifest(group: zarr.Group) -> dict[str, list[int]]:
    """{array: digests per row chunk} of a complete set (empty for sets written before checksums)."""
    out: dict[str, list[int]] = {}
    for name in feature_arrays(group):
        arr = group[name]
        assert isinstance(arr, zarr.Array)
        if (values := manifest(arr)) is not None:
            out[name] = values
    return out

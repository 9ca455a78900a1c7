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
The digests live in up to three records: the attrs, the set's `_chunk_digests` array and the
warehouse's mirror `feature_chunks` (which the pipeline hands down as `FeatureStore.recorded`).
A chunk is checked against every record there is, and a complete set with a record missing or
disagreeing is damaged: "unverifiable" is reserved for sets with no record at all (the codec came
with the manifest, so a set whose arrays carry it once had one). This module only reads and
describes; the pipeline mirrors the manifest to the warehouse.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any, cast

import google_crc32c
import numpy as np
import zarr
from zarr.codecs import BloscCodec, Crc32cCodec
from zarr.core.sync import sync

from crsbench.core import FROZEN, CrsbenchError
from crsbench.features.store import FeatureSetRef, FeatureStore

DIGEST_ARRAY = "_chunk_digests"  # uint32 [n_chunks, n_arrays], one row per row chunk
DIGEST_NAMES = "digest_arrays"  # group attr: the arrays, in the digest array's column order
MANIFEST_ATTR = "chunk_crc32c"  # array attr: CRC-32C of each decoded row chunk, published at completion
# Where a set's digests may be recorded, as the damage lines name them.
IN_ATTRS = f"its {MANIFEST_ATTR} attribute"
IN_STORE = f"the store's {DIGEST_ARRAY} array"
IN_WAREHOUSE = "the warehouse's feature_chunks table"


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
        where = (
            f"chunk {ref.path}/{name}/c/{chunk}/0 ({array_label(ref, name)}, chunk {chunk})"
            if chunk >= 0
            else f"array {ref.path}/{name} ({array_label(ref, name)})"
        )
        super().__init__(f"damaged feature {where}: {what}; repair it with '{repair_command(ref)}'")

    def __reduce__(self):  # type: ignore[no-untyped-def]  # crosses dask.distributed workers intact
        return (ChunkDamage, (self.ref, self.name, self.chunk, self.what))


def chunk_key(arr: zarr.Array[Any], chunk: int) -> str:
    return f"{arr.path}/{arr.metadata.encode_chunk_key((chunk, 0))}"


def chunk_present(arr: zarr.Array[Any], chunk: int) -> bool:
    return bool(sync(arr.store.exists(chunk_key(arr, chunk))))


def delete_chunk(arr: zarr.Array[Any], chunk: int) -> None:
    sync(arr.store.delete(chunk_key(arr, chunk)))


def read_chunk(
    arr: zarr.Array[Any], ref: FeatureSetRef, name: str, chunk: int, expected: int | Collection[int] | None
) -> np.ndarray:
    """Decode one row chunk and check it against every digest recorded for it (`None`: none is)."""
    rows = int(arr.chunks[0])
    try:
        block: np.ndarray = np.asarray(arr[chunk * rows : (chunk + 1) * rows])
    except Exception as exc:  # blosc, crc32c and IO errors alike: the chunk cannot be decoded
        raise ChunkDamage(ref, name, chunk, f"it fails to decode ({type(exc).__name__}: {exc})") from None
    wanted = (expected,) if isinstance(expected, int) else tuple(expected or ())
    if wanted and any(d != digest for digest in [block_digest(block)] for d in wanted):
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


def stored_digests(group: zarr.Group) -> tuple[dict[str, list[int]], list[str]]:
    """{array: digest per row chunk} from the set's `_chunk_digests` array, and what is wrong with it."""
    if DIGEST_ARRAY not in group:
        return {}, []
    names = [str(n) for n in cast("list[object]", group.attrs.get(DIGEST_NAMES, []))]
    node = group[DIGEST_ARRAY]
    assert isinstance(node, zarr.Array)
    try:
        digests = np.asarray(node[:])
    except Exception as exc:  # its own crc32c codec, or a missing chunk file
        return {}, [f"{IN_STORE} fails to decode ({type(exc).__name__}: {exc})"]
    if digests.ndim != 2 or digests.shape[1] != len(names):
        return {}, [f"{IN_STORE} has shape {digests.shape} for the {len(names)} arrays its group lists"]
    return {name: [int(v) for v in digests[:, j]] for j, name in enumerate(names)}, []


@dataclasses.dataclass(frozen=True)
class ArrayRecords:
    """Every record of one array's digests that fits it, and what is wrong with its records."""

    digests: dict[str, list[int]]  # record (IN_ATTRS, IN_STORE, IN_WAREHOUSE) -> digest per row chunk
    problems: list[str]

    @property
    def verifiable(self) -> bool:
        return bool(self.digests)

    def expected(self, chunk: int) -> tuple[int, ...]:
        """What row chunk `chunk` must hash to: one value per record (equal when none is damaged)."""
        return tuple(sorted({values[chunk] for values in self.digests.values()}))


def disagreement(first: str, other: str) -> str:
    if (first, other) == (IN_ATTRS, IN_WAREHOUSE):
        return "its manifest differs from the one the warehouse recorded at extraction"
    return f"{first} differs from {other}"


def array_records(
    arr: zarr.Array[Any], stored: list[int] | None, recorded: list[int] | None, complete: bool
) -> ArrayRecords:
    """The records of `arr`'s digests: its attr, then (for a complete set) `stored` from `_chunk_digests`
    and `recorded` from the warehouse. A set being written publishes its attr only at completion."""
    attr = manifest(arr)
    found = {IN_ATTRS: attr, IN_STORE: stored if complete else None, IN_WAREHOUSE: recorded if complete else None}
    n_chunks = int(arr.cdata_shape[0])
    problems = [
        f"{where} lists {len(values)} chunks, the array has {n_chunks}"
        for where, values in found.items()
        if values is not None and len(values) != n_chunks
    ]
    fitting = {where: values for where, values in found.items() if values is not None and len(values) == n_chunks}
    if complete and attr is None and (fitting or has_codec_checksum(arr)):
        elsewhere = " and ".join(w for w in (IN_STORE, IN_WAREHOUSE) if w in fitting)
        problems.append(
            f"its manifest attribute {MANIFEST_ATTR} was removed"
            + (
                f" ({elsewhere} still records its digests)"
                if elsewhere
                else " and no other record of its digests is left (its chunks carry the crc32c codec, "
                "which sets are written with together with the manifest)"
            )
        )
    first = next(iter(fitting), None)
    problems += [
        disagreement(first, where)
        for where, values in fitting.items()
        if first is not None and where != first and values != fitting[first]
    ]
    return ArrayRecords(fitting, problems)


def scan_set(group: zarr.Group, ref: FeatureSetRef, recorded: Mapping[str, list[int]] | None = None) -> SetScan:
    """Decode every chunk of every array of one set and check it against every record of its digests
    (`recorded`: the warehouse's mirror, {array: digests}, when the caller has one)."""
    complete = bool(group.attrs.get("complete", False))
    stored, problems = stored_digests(group) if complete else ({}, [])
    mirror = dict(recorded or {}) if complete else {}
    names = feature_arrays(group)
    damage = [Damage(ref, DIGEST_ARRAY, -1, p) for p in problems]
    damage += [
        Damage(ref, name, -1, f"the array is missing ({IN_STORE if name in stored else IN_WAREHOUSE} records it)")
        for name in sorted((set(stored) | set(mirror)) - set(names))
    ]
    verifiable, checked = True, 0
    for name in names:
        arr = group[name]
        assert isinstance(arr, zarr.Array)
        records = array_records(arr, stored.get(name), mirror.get(name), complete)
        verifiable = verifiable and records.verifiable and has_codec_checksum(arr)
        damage += [Damage(ref, name, -1, p) for p in records.problems]
        for k in range(int(arr.cdata_shape[0])):
            checked += 1
            try:
                read_chunk(arr, ref, name, k, records.expected(k))
            except ChunkDamage as exc:
                damage.append(Damage(ref, name, k, exc.what))
    return SetScan(ref, verifiable, damage, checked)


def read_expectations(
    store: FeatureStore, ref: FeatureSetRef, name: str, arr: zarr.Array[Any]
) -> list[tuple[int, ...]]:
    """What each row chunk of `name` must hash to when a probe reads it ([] for a set written before
    checksums): its attr and the warehouse's mirror (`store.recorded`). A damaged record raises
    `ChunkDamage` now, naming the first chunk that fails the digests still recorded, else the array."""
    recorded = store.recorded.get(ref.path, {}).get(name)
    attr = manifest(arr)
    n_chunks = int(arr.cdata_shape[0])
    if recorded is None and attr is not None and len(attr) == n_chunks:
        return [(d,) for d in attr]  # the attr is the only record at hand, and it fits
    if attr is None and recorded is None and not has_codec_checksum(arr):
        return []  # stored before checksums, and recorded nowhere
    stored: list[int] | None = None
    complete = bool(store.attrs(ref).get("complete", False))
    if attr is None and complete:  # only then is `_chunk_digests` read: it costs a file per chunk
        stored = stored_digests(store.group(ref))[0].get(name)
    records = array_records(arr, stored, recorded, complete)
    expected = [records.expected(k) for k in range(n_chunks)]
    if records.problems:
        for k, digests in enumerate(expected):
            read_chunk(arr, ref, name, k, digests)  # raises for the first chunk the records catch
        raise ChunkDamage(ref, name, -1, records.problems[0])
    return expected


def chunk_manifest(group: zarr.Group) -> dict[str, list[int]]:
    """{array: digests per row chunk} of a complete set (empty for sets written before checksums)."""
    out: dict[str, list[int]] = {}
    for name in feature_arrays(group):
        arr = group[name]
        assert isinstance(arr, zarr.Array)
        if (values := manifest(arr)) is not None:
            out[name] = values
    return out

"""The Zarr v3 feature store layout (METHODS.md §2).

    {root}/{dataset}/image_ids                               order of rows
    {root}/{dataset}/{encoder_key}/d{025|050|075|100}/{condition}   [n_images, dim]
    {root}/{dataset}/{encoder_key}/proj/{condition}                  [n_images, joint dim]

`proj` is stored only for image-text encoders whose joint-space image embedding cannot be
recomputed from the pooled 100 % feature (BioViL: a projector on every patch, then the mean);
zero-shot reads it (METHODS.md §3.5). Projection-pooled entries store that embedding at d100.

`encoder_key` is the encoder id for the frozen regime and `{encoder_id}@{regime}` for
adapted variants (e.g. `vit_tiny@lora-s0`). Every array has one row per image of the
dataset, in the dataset's store order; perturbed conditions are written for test rows
only (other rows keep the NaN fill value and are never read). The root may be any
fsspec URL (a local path, `memory://...`, `s3://...`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from crsbench.core import DEPTHS, FROZEN, CrsbenchError, EncoderKey
from crsbench.ingest.types import Dataset

if TYPE_CHECKING:
    import zarr  # imported where a store is opened, so the names and refs here stay light

__all__ = [
    "PROJ",
    "Depth",
    "FeatureSetRef",
    "FeatureStore",
    "claim_dataset",
    "depth_key",
    "encoder_key",
    "key_depth",
]


# The extra "depth" of the projected image embedding (see the module notes).
PROJ = "proj"
# A set whose clean condition is written for every row at every depth, its perturbed conditions
# not yet (`extract --screen`, METHODS.md §2.9): never `complete`, so no probe reads it.
SCREENED_ATTR = "screened"
Depth = float | str  # one of DEPTHS, or PROJ


def depth_key(depth: Depth) -> str:
    """0.25 -> 'd025', 1.0 -> 'd100', 'proj' -> 'proj'."""
    if depth == PROJ:
        return PROJ
    if isinstance(depth, str) or not any(np.isclose(depth, d) for d in DEPTHS):
        raise CrsbenchError(f"unknown depth {depth!r}; expected one of {DEPTHS}")
    return f"d{round(depth * 100):03d}"


def key_depth(key: str) -> Depth:
    """The inverse of `depth_key`: 'd025' -> 0.25, 'proj' -> 'proj'."""
    return PROJ if key == PROJ else int(key[1:]) / 100


def encoder_key(encoder_id: str, regime: str = FROZEN) -> str:
    return str(EncoderKey(encoder_id, regime))


@dataclasses.dataclass(frozen=True)
class FeatureSetRef:
    dataset: str
    encoder_id: str
    regime: str = FROZEN

    @property
    def key(self) -> str:
        return encoder_key(self.encoder_id, self.regime)

    @property
    def path(self) -> str:
        return f"{self.dataset}/{self.key}"


# s3fs reads a whole object by first asking its size (a HEAD), so that it could split a large one
# into concurrent ranged GETs. A feature store's objects (metadata, row chunks of a few MB) are far
# below its 50 MB block, so that HEAD only doubled every read's requests (and turned a missing key
# into a HEAD and a LIST): one GET per read instead. The caller's own options win.
S3_STORE_DEFAULTS: dict[str, Any] = {"max_concurrency": 1}


def store_options(url: str, given: dict[str, Any] | None) -> dict[str, Any] | None:
    """The fsspec storage options a store at `url` opens with: `given` over the defaults for its scheme."""
    if url.split("://", 1)[0] in ("s3", "s3a"):
        return {**S3_STORE_DEFAULTS, **(given or {})}
    return given


class FeatureStore:
    """Access to one feature store root (any fsspec URL)."""

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = str(url)
        self.storage_options = store_options(self.url, storage_options)
        # {set path: {array: CRC-32C per row chunk}}: the digests the warehouse recorded for this
        # store (`feature_chunks`), set by the pipeline; reads check chunks against them too.
        self.recorded: dict[str, dict[str, list[int]]] = {}

    def _open_root(self, mode: Literal["r", "a"]) -> zarr.Group:
        import zarr

        kwargs: dict[str, Any] = {}
        if self.storage_options and "://" in self.url:
            kwargs["storage_options"] = self.storage_options
        try:
            return zarr.open_group(self.url, mode=mode, zarr_format=3, **kwargs)
        except FileNotFoundError as exc:
            raise CrsbenchError(f"feature store {self.url} does not exist") from exc

    def root(self, writable: bool = False) -> zarr.Group:
        return self._open_root("a" if writable else "r")

    # -- reading ------------------------------------------------------------------

    def image_ids(self, dataset: str) -> np.ndarray:
        import zarr

        try:
            node = self.root()[f"{dataset}/image_ids"]
            assert isinstance(node, zarr.Array)
            try:
                values = node[:]
            except (ValueError, RuntimeError, OSError) as exc:  # its crc32c codec, or a broken chunk
                raise CrsbenchError(
                    f"feature store {self.url}: {dataset}/image_ids is damaged ({type(exc).__name__}: {exc}); "
                    f"delete that array and run 'crsbench extract' for any encoder on {dataset!r} to rewrite it"
                ) from None
            # zarr returns variable-length strings as numpy StringDType; go via object.
            return np.asarray(values, dtype=object).astype(str)
        except KeyError:
            raise CrsbenchError(f"feature store {self.url} has no dataset {dataset!r}") from None

    def attrs(self, ref: FeatureSetRef) -> dict[str, Any]:
        try:
            return dict(self.root()[ref.path].attrs)
        except KeyError:
            raise CrsbenchError(
                f"feature set {ref.path} is missing from {self.url}; run "
                f"'crsbench extract --encoder {ref.encoder_id} --dataset {ref.dataset}'"
            ) from None

    def group(self, ref: FeatureSetRef) -> zarr.Group:
        """The set's Zarr group (for scans of its arrays and manifest)."""
        import zarr

        self.attrs(ref)  # raises, naming the extract command, when the set is missing
        node = self.root()[ref.path]
        assert isinstance(node, zarr.Group)
        return node

    def set_bytes(self, ref: FeatureSetRef) -> dict[str, bytes]:
        """Every array of the set (features, progress markers, digests) as raw bytes, by path:
        what "byte-identical to another run" compares."""
        import zarr

        out: dict[str, bytes] = {}

        def visit(node: zarr.Group, prefix: str) -> None:
            for name, child in node.members():
                if isinstance(child, zarr.Group):
                    visit(child, f"{prefix}{name}/")
                else:
                    out[prefix + name] = np.ascontiguousarray(child[:]).tobytes()

        visit(self.group(ref), "")
        return out

    def has_proj(self, ref: FeatureSetRef) -> bool:
        """Whether the set stores the projected image embedding as depth `proj`."""
        return PROJ in (self.attrs(ref).get("depths") or ())

    def is_complete(self, ref: FeatureSetRef) -> bool:
        try:
            return bool(self.attrs(ref).get("complete", False))
        except CrsbenchError:
            return False

    def is_screened(self, ref: FeatureSetRef) -> bool:
        """Whether the clean condition of every row is written at every depth (screened or complete)."""
        try:
            attrs = self.attrs(ref)
        except CrsbenchError:
            return False
        return bool(attrs.get("complete", False) or attrs.get(SCREENED_ATTR, False))

    def array(self, ref: FeatureSetRef, depth: Depth, condition: str) -> zarr.Array[Any]:
        """The zarr array of one depth and condition (for `dask.array.from_zarr`)."""
        import zarr

        from crsbench.features.conditions import is_condition, registered_conditions

        if not is_condition(condition):
            raise CrsbenchError(f"unknown condition {condition!r}; expected one of {registered_conditions()}")
        path = f"{ref.path}/{depth_key(depth)}/{condition}"
        try:
            node = self.root()[path]
        except KeyError:
            raise CrsbenchError(f"feature array {path} is missing from {self.url}") from None
        assert isinstance(node, zarr.Array)
        return node

    def feature_sets(self) -> list[FeatureSetRef]:
        """Every (dataset, encoder key) group present in the store."""
        refs: list[FeatureSetRef] = []
        try:
            root = self.root()
        except CrsbenchError:
            return refs
        for dataset, group in root.groups():
            for key, _ in group.groups():
                parsed = EncoderKey.parse(key)
                refs.append(FeatureSetRef(dataset, parsed.encoder_id, parsed.regime))
        return sorted(refs, key=lambda r: (r.dataset, r.key))

    def probe_sets(self) -> list[FeatureSetRef]:
        """The sets a probe grid may plan on: every set but screened-only ones (those hold the clean
        condition alone; a partial set stays listed, so probing it says to finish it)."""
        return [r for r in self.feature_sets() if not self._screened_only(r)]

    def _screened_only(self, ref: FeatureSetRef) -> bool:
        try:
            attrs = self.attrs(ref)
        except CrsbenchError:
            return False
        return bool(attrs.get(SCREENED_ATTR, False)) and not attrs.get("complete", False)


def retire_dataset_features(store: FeatureStore, name: str, image_digest: str) -> str | None:
    """Move `{store}/{name}` aside if it holds features of other images; returns where to.

    The group goes to `{store}.retired/{name}@{old digest[:12]}` (nothing is deleted), so the
    dataset can be extracted afresh. Features of the same images are left in place.
    """
    import os

    import fsspec
    import zarr
    from fsspec.implementations.local import LocalFileSystem

    try:
        group = store.root()[name]
    except (KeyError, CrsbenchError):
        return None
    known = cast("str | None", group.attrs.get("image_digest"))
    if known is None:  # stores written without the dataset-level attribute: ask the feature sets
        assert isinstance(group, zarr.Group)
        known = cast(
            "str | None",
            next(
                (child.attrs.get("image_digest") for _, child in group.groups() if child.attrs.get("image_digest")),
                None,
            ),
        )
    if known is None or known == image_digest:
        return None
    fs, root = fsspec.core.url_to_fs(store.url, **(store.storage_options or {}))
    source = f"{root.rstrip('/')}/{name}"
    target = f"{root.rstrip('/')}.retired/{name}@{known[:12]}"
    fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
    if isinstance(fs, LocalFileSystem):
        os.rename(source, target)  # fs.mv would expand '*' or '[' in a hostile folder name
    else:
        fs.mv(source, target, recursive=True)
    return target


def claim_dataset(root: zarr.Group, ds: Dataset, store_url: str) -> None:
    """Write `{dataset}/image_ids` once; refuse a store made from different images."""
    digest = ds.image_digest()
    group = root.require_group(ds.name)
    known = cast("str | None", group.attrs.get("image_digest"))
    if known is not None and known != digest:
        raise CrsbenchError(
            f"dataset {ds.name!r} has changed since its features in {store_url} were extracted "
            f"(image digest {known[:12]} there, {digest[:12]} now); 'crsbench ingest --replace' "
            f"retires the old features, or use another --store"
        )
    if "image_ids" not in group:
        ids = np.asarray(ds.images["image_id"].astype(str).tolist(), dtype=str)
        from zarr.codecs import Crc32cCodec, ZstdCodec

        arr = group.create_array(
            "image_ids",
            shape=ids.shape,
            dtype=str,
            chunks=(max(1, ids.size),),
            compressors=[ZstdCodec(level=0), Crc32cCodec()],  # zarr's default, then a checksum
        )
        arr[:] = ids
        group.attrs.update({"image_digest": digest, "n_images": ds.n_images})
    elif known is None:
        group.attrs.update({"image_digest": digest, "n_images": ds.n_images})

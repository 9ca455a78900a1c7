"""Feature-set bookkeeping for extraction: the group's arrays and attrs, resume checks, completion.

A set's group is created once with every attr but `complete`; its progress array holds one
marker per row chunk, written after that chunk's arrays. A partial set resumes only under the
settings it was started with (`RESUME_KEYS`), and `complete` flips to true only after every
expected chunk is checked present in every array.

A screening run (`extract --screen`, METHODS.md §2.9) writes only the clean condition: its own
marker array records each chunk's clean part, and the `screened` attr flips to true once every
chunk's clean part is checked present. Completing such a set later drops both, so a complete set
holds the same files whether or not it was screened first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch
import zarr

from crsbench.core import CLEAN, CrsbenchError
from crsbench.features.cost import COST_ATTR, measure_compute, with_stored_bytes
from crsbench.features.hooks import DepthTap
from crsbench.features.integrity import DIGEST_ARRAY, DIGEST_NAMES, checksummed_compressors, publish_manifest
from crsbench.features.registry import EncoderEntry
from crsbench.features.store import SCREENED_ATTR, FeatureSetRef, depth_key
from crsbench.ingest.types import Dataset

PROGRESS_ARRAY = "_chunks_done"  # one uint8 per row chunk, written after the chunk's arrays
# Of a screened (or being screened) set only: one uint8 per row chunk, written after its clean arrays.
CLEAN_PROGRESS_ARRAY = "_clean_done"
DTYPES = {"float16": np.float16, "float32": np.float32}
COMPUTE_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# Settings that change the stored bytes: a partial set made with others cannot be resumed.
RESUME_KEYS = (
    "weights_hash",
    "image_digest",
    "dtype",
    "compute_dtype",
    "chunk_rows",
    "batch_size",
    "device_type",
    "perturb_backend",
    "conditions",
    "code_version",
)


# Checksummed chunks and the content manifest (features.integrity); only the extraction
# benchmark turns this off, to measure their cost against extraction without them.
CHECKSUMS = True


def compressor() -> list[Any]:
    """Blosc zstd then the crc32c codec (features.integrity)."""
    codecs = checksummed_compressors()
    return codecs if CHECKSUMS else codecs[:1]


def group_array(group: zarr.Group, name: str) -> zarr.Array[Any]:
    node = group[name]
    assert isinstance(node, zarr.Array)
    return node


def present_arrays(group: zarr.Group, names: Iterable[str]) -> dict[str, zarr.Array[Any]]:
    """The arrays among `names` that the group holds, each opened with one metadata read (a
    membership test then an open would read it twice: two requests per array on an object store)."""
    arrays: dict[str, zarr.Array[Any]] = {}
    for name in names:
        try:
            node = group[name]
        except KeyError:
            continue
        assert isinstance(node, zarr.Array)
        arrays[name] = node
    return arrays


def stale_settings(group: zarr.Group, settings: dict[str, Any]) -> list[str]:
    """The RESUME_KEYS on which the group's attrs differ from `settings`."""
    return [k for k in RESUME_KEYS if group.attrs.get(k) != settings[k]]


def open_feature_group(
    root: zarr.Group,
    ref: FeatureSetRef,
    entry: EncoderEntry,
    tap: DepthTap,
    ds: Dataset,
    settings: dict[str, Any],
    dev: torch.device,
) -> zarr.Group:
    """The set's group: reopened to resume under the settings it was started with, else created
    with every attr but `complete` and every (empty, NaN-filled) array."""
    if ref.path in root:
        group = root[ref.path]
        assert isinstance(group, zarr.Group)
        stale = stale_settings(group, settings)
        if stale:
            raise CrsbenchError(
                f"partial feature set {ref.path} was started with different settings "
                f"({', '.join(stale)}); rerun with --force to start it over"
            )
        return group
    probe = torch.zeros(
        (1, 3, entry.input_size, entry.input_size), dtype=COMPUTE_DTYPES[settings["compute_dtype"]], device=dev
    )
    dims = {depth_key(d): int(v.shape[1]) for d, v in tap(probe).items()}
    # Measured once, when the set is created, on separate zero inputs (features.cost).
    cost = measure_compute(tap, tap.model, entry.input_size, probe.dtype, dev, int(settings["batch_size"]), dims)
    group = root.require_group(ref.path)
    # Everything but `complete` is fixed here; `complete` flips to true last.
    group.attrs.update({**_set_attrs(ref, entry, tap, ds, dims, settings), COST_ATTR: cost})
    _create_arrays(group, tap, ds.n_images, dims, settings)
    return group


def _set_attrs(
    ref: FeatureSetRef, entry: EncoderEntry, tap: DepthTap, ds: Dataset, dims: dict[str, int], settings: dict[str, Any]
) -> dict[str, Any]:
    """A new set's attributes: what it is of, its widths, and the settings it is made under."""
    return {
        "complete": False,
        "dataset": ds.name,
        "encoder_id": entry.id,
        "regime": ref.regime,
        "encoder": entry.to_dict(),
        "checkpoint": entry.checkpoint,
        "pretrained": entry.pretrained,
        "layers": tap.layers,
        "pooling": entry.pooling,
        "dim": dims[depth_key(1.0)],
        "dims": dims,
        "depths": [depth_key(d) for d in tap.depths],
        "n_images": ds.n_images,
        **settings,
    }


def _create_arrays(
    group: zarr.Group, tap: DepthTap, n_images: int, dims: dict[str, int], settings: dict[str, Any]
) -> None:
    """Every (depth, condition) array NaN-filled, the chunk digests (when kept) and the progress marks."""
    rows = settings["chunk_rows"]
    for d in tap.depths:
        for cond in settings["conditions"]:
            group.create_array(
                f"{depth_key(d)}/{cond}",
                shape=(n_images, dims[depth_key(d)]),
                chunks=(rows, dims[depth_key(d)]),
                dtype=settings["dtype"],
                fill_value=np.nan,
                compressors=compressor(),
            )
    n_chunks = -(-n_images // rows)
    names = [f"{depth_key(d)}/{cond}" for d in tap.depths for cond in settings["conditions"]]
    if CHECKSUMS:
        group.attrs[DIGEST_NAMES] = names  # the content manifest's columns (features.integrity)
        group.create_array(
            DIGEST_ARRAY, shape=(n_chunks, len(names)), chunks=(1, len(names)), dtype="uint32", compressors=compressor()
        )
    group.create_array(
        PROGRESS_ARRAY, shape=(n_chunks,), chunks=(1,), dtype="uint8", fill_value=0, compressors=compressor()
    )


def finish_feature_set(
    group: zarr.Group,
    arrays: dict[str, zarr.Array[Any]],
    ref: FeatureSetRef,
    test_mask: np.ndarray,
    settings: dict[str, Any],
    url: str,
) -> None:
    """Mark the set complete, but only if every expected chunk of every array is present."""
    marks = np.asarray(arrays[PROGRESS_ARRAY][:])
    if not marks.all():
        raise CrsbenchError(
            f"feature set {ref.path} in {url} is missing row chunks {np.flatnonzero(marks == 0).tolist()[:10]}"
        )
    rows = settings["chunk_rows"]
    n_chunks = marks.shape[0]
    with_test = sum(bool(test_mask[k * rows : (k + 1) * rows].any()) for k in range(n_chunks))
    for name, arr in arrays.items():
        if name in (PROGRESS_ARRAY, DIGEST_ARRAY, CLEAN_PROGRESS_ARRAY):
            continue
        expected = n_chunks if name.endswith("/" + CLEAN) else with_test
        if arr.nchunks_initialized != expected:
            raise CrsbenchError(
                f"feature array {ref.path}/{name} in {url} has {arr.nchunks_initialized} of {expected} chunks written"
            )
    drop_screening(group)  # before the stored bytes are counted: a set screened first ends as any other
    publish_manifest(group)
    with_stored_bytes(group, int(group.attrs["n_images"]))  # type: ignore[arg-type]
    group.attrs["complete"] = True


def set_done(attrs: Mapping[str, Any], screen: bool) -> bool:
    """Whether a set with `attrs` needs nothing more: complete, or for a screening run screened."""
    return bool(attrs.get("complete", False) or (screen and attrs.get(SCREENED_ATTR, False)))


def clean_marks(group: zarr.Group) -> np.ndarray:
    """Per row chunk, whether its clean part is written: by a screening run (CLEAN_PROGRESS_ARRAY)
    or as part of the whole chunk (PROGRESS_ARRAY)."""
    done = np.asarray(group_array(group, PROGRESS_ARRAY)[:]).astype(bool)
    if CLEAN_PROGRESS_ARRAY in group:
        done |= np.asarray(group_array(group, CLEAN_PROGRESS_ARRAY)[:]).astype(bool)
    return done


def clean_progress(group: zarr.Group) -> zarr.Array[Any]:
    """The set's CLEAN_PROGRESS_ARRAY, created (all chunks pending) by the first screening run."""
    if CLEAN_PROGRESS_ARRAY not in group:
        n_chunks = int(group_array(group, PROGRESS_ARRAY).shape[0])
        group.create_array(
            CLEAN_PROGRESS_ARRAY, shape=(n_chunks,), chunks=(1,), dtype="uint8", fill_value=0, compressors=compressor()
        )
    return group_array(group, CLEAN_PROGRESS_ARRAY)


def finish_screened_set(group: zarr.Group, arrays: dict[str, zarr.Array[Any]], ref: FeatureSetRef, url: str) -> None:
    """Mark the set screened, but only if every chunk of every clean array is present."""
    n_chunks = int(arrays[PROGRESS_ARRAY].shape[0])
    marks = clean_marks(group)
    if not marks.all():
        missing = np.flatnonzero(~marks).tolist()[:10]
        raise CrsbenchError(f"feature set {ref.path} in {url} is missing the clean part of row chunks {missing}")
    for name, arr in arrays.items():
        if name.endswith("/" + CLEAN) and arr.nchunks_initialized != n_chunks:
            raise CrsbenchError(
                f"feature array {ref.path}/{name} in {url} has {arr.nchunks_initialized} of {n_chunks} chunks written"
            )
    group.attrs[SCREENED_ATTR] = True


def drop_screening(group: zarr.Group) -> None:
    """Remove what only a screening run writes (its marker array, the `screened` attr)."""
    if CLEAN_PROGRESS_ARRAY in group:
        del group[CLEAN_PROGRESS_ARRAY]
    if SCREENED_ATTR in group.attrs:
        del group.attrs[SCREENED_ATTR]

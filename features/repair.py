"""`extract --repair`: re-extract only the damaged or missing row chunks of a complete feature set.

A chunk's bytes depend only on the chunk (features.extraction), so re-extracting it under the
settings the set was made with restores the bytes of an undamaged store. The plan is made
read-only (nothing is written when there is nothing to repair or the request is refused);
`reset_chunks` then marks the chunks pending and the ordinary resume path rewrites them. When a
record of the digests itself is damaged (an attr removed, a record that differs from another), no
chunk can be singled out: every chunk is re-extracted, and the records are written anew.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import numpy as np
import zarr

from crsbench.core import CrsbenchError
from crsbench.features.extract_options import ExtractOptions
from crsbench.features.extraction_sets import PROGRESS_ARRAY, stale_settings
from crsbench.features.integrity import (
    DIGEST_ARRAY,
    DIGEST_NAMES,
    Damage,
    checksummed_compressors,
    delete_chunk,
    feature_arrays,
    has_codec_checksum,
    scan_set,
)
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.ingest.types import Dataset


@dataclasses.dataclass(frozen=True)
class RepairPlan:
    chunks: list[int]  # row chunks to re-extract
    damage: list[Damage]  # what the scan found (missing progress markers excluded)
    depths: list[str]  # depth keys whose data changed (every depth when a whole chunk is unmarked)


def plan_repair(store: FeatureStore, ref: FeatureSetRef, dataset: Dataset) -> RepairPlan:
    """The row chunks of `ref` to re-extract: damaged (codec, manifest) or never written."""
    attrs = store.attrs(ref)  # raises, naming the extract command, when the set is missing
    digest = attrs.get("image_digest")
    if digest is not None and digest != dataset.image_digest():
        raise CrsbenchError(
            f"dataset {ref.dataset!r} has other images than feature set {ref.path} in {store.url} was "
            f"extracted from (image digest {str(digest)[:12]} there, {dataset.image_digest()[:12]} now); "
            f"a repair cannot restore it: 'crsbench ingest --replace' retires the old features, then extract"
        )
    group = store.group(ref)
    scan = scan_set(group, ref)
    marks = np.asarray(group[PROGRESS_ARRAY][:]) if PROGRESS_ARRAY in group else np.ones(0)  # type: ignore[index]
    unmarked = np.flatnonzero(marks == 0).tolist()
    if any(d.chunk < 0 for d in scan.damage):  # a damaged record of the digests: the whole set
        return RepairPlan(list(range(len(marks))), scan.damage, sorted(set(attrs.get("depths", []))))
    depths = sorted({d.name.split("/")[0] for d in scan.damage} | (set(attrs.get("depths", [])) if unmarked else set()))
    return RepairPlan(sorted(set(scan.damaged_chunks) | set(unmarked)), scan.damage, depths)


def count_repair(group: zarr.Group, plan: RepairPlan) -> dict[str, int]:
    """Bump the set's `repairs` per repaired depth (probes fold it into the fit ids); returns it."""
    known = group.attrs.get("repairs")
    repairs = {str(k): int(cast(int, v)) for k, v in (known.items() if isinstance(known, dict) else [])}
    for depth in plan.depths:
        repairs[depth] = repairs.get(depth, 0) + 1
    group.attrs["repairs"] = repairs
    return repairs


def check_settings(group: zarr.Group, ref: FeatureSetRef, settings: dict[str, Any]) -> None:
    stale = stale_settings(group, settings)
    if stale:
        raise CrsbenchError(
            f"feature set {ref.path} was extracted with other settings ({', '.join(stale)}) than a repair "
            f"would use, so repaired chunks would not match the rest; rerun with --force to re-extract it all"
        )


def reset_chunks(group: zarr.Group, chunks: list[int]) -> None:
    """Mark `chunks` pending: `complete` off first, their stored chunks deleted, markers cleared."""
    group.attrs["complete"] = False
    progress = group[PROGRESS_ARRAY]
    assert isinstance(progress, zarr.Array)
    restore_digest_array(group, int(progress.shape[0]))
    for name in [*feature_arrays(group), DIGEST_ARRAY]:
        if name not in group:
            continue
        arr = group[name]
        assert isinstance(arr, zarr.Array)
        for k in chunks:
            delete_chunk(arr, k)
    for k in chunks:
        progress[k] = 0


def restore_digest_array(group: zarr.Group, n_chunks: int) -> None:
    """Re-create a removed `_chunk_digests` of a checksummed set (its columns in the extractor's
    order: depths, then conditions), so the repair records every chunk's digest again."""
    names = feature_arrays(group)
    if DIGEST_ARRAY in group or not any(has_codec_checksum(cast("zarr.Array[Any]", group[n])) for n in names):
        return
    depths, conditions = group.attrs.get("depths"), group.attrs.get("conditions")
    listed = group.attrs.get(DIGEST_NAMES)
    if isinstance(listed, list):
        columns = [str(n) for n in listed]
    elif isinstance(depths, list) and isinstance(conditions, list):
        columns = [f"{d}/{c}" for d in depths for c in conditions]
    else:
        columns = names
    group.attrs[DIGEST_NAMES] = columns
    group.create_array(
        DIGEST_ARRAY,
        shape=(n_chunks, len(columns)),
        chunks=(1, len(columns)),
        dtype="uint32",
        compressors=checksummed_compressors(),
    )


def as_made(options: ExtractOptions, made: dict[str, Any]) -> tuple[ExtractOptions, list[str] | None]:
    """`options` with the settings a set was made with (`made`: its attrs; a repair re-extracts
    under them), and its conditions (None when it does not record them)."""
    replaced = dataclasses.replace(
        options,
        batch_size=int(made.get("batch_size", options.batch_size)),
        chunk_rows=int(made.get("chunk_rows", options.chunk_rows)),
        dtype=str(made.get("dtype", options.dtype)),
        compute_dtype=str(made.get("compute_dtype", options.compute_dtype)),
        perturb_backend=str(made.get("perturb_backend", options.perturb_backend)),
    )
    conditions = made.get("conditions")
    return replaced, [str(c) for c in conditions] if isinstance(conditions, list) else None

"""One-pass extraction into the Zarr feature store (METHODS.md §2).

Work is done row-chunk by row-chunk. For a chunk, every image is decoded once (on CPU
threads, one chunk ahead of the model); train/calib rows give the `clean` condition,
test rows every condition (clean and the registered perturbations: 16 in the protocol); one
forward per batch yields all four depths through the depth hooks. Batches never span chunks,
so a chunk's bytes depend only on the chunk itself: a killed run resumes at the first chunk without its progress marker and ends
byte-identical to an uninterrupted run. The feature-set group's `complete` attribute is
written last, after checking that every expected chunk exists in every array.

This module validates the request and drives the run; the per-chunk work (decode, perturb,
forward, check, write) is `extraction_chunks`, the group's arrays, attrs, resume checks and
completion are `extraction_sets`.
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import zarr

from crsbench.core import FROZEN, CrsbenchError, ProgressFn, __version__, no_progress
from crsbench.core.provenance import collect, to_json
from crsbench.features.conditions import check_conditions, registered_conditions
from crsbench.features.degenerate import assess
from crsbench.features.extract_options import ExtractOptions
from crsbench.features.extraction_chunks import ChunkExtractor
from crsbench.features.extraction_sets import (
    COMPUTE_DTYPES,
    DTYPES,
    PROGRESS_ARRAY,
    finish_feature_set,
    group_array,
    open_feature_group,
)
from crsbench.features.hooks import DepthTap
from crsbench.features.integrity import DIGEST_ARRAY
from crsbench.features.loaders import build_model, state_dict_hash
from crsbench.features.registry import EncoderEntry
from crsbench.features.repair import check_settings, count_repair, plan_repair, reset_chunks
from crsbench.features.store import FeatureSetRef, FeatureStore, claim_dataset, depth_key
from crsbench.features.weights import download_policy, fingerprint, planned_weights, recording_loads
from crsbench.ingest.types import Dataset


def _resolve_device(device: str) -> torch.device:
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise CrsbenchError("--device cuda requested but no CUDA device is available")
    return dev


def _source(entry: EncoderEntry, weights: str | None) -> list[list[Any]] | None:
    """The fingerprint of the files building `entry` reads (None when there are none)."""
    try:
        with download_policy(False):
            return fingerprint(planned_weights(entry, Path(weights) if weights else None))
    except CrsbenchError:
        return None


def check_same_weights(
    store: FeatureStore, ref: FeatureSetRef, entry: EncoderEntry, weights: str | None, weights_hash: Callable[[], str]
) -> None:
    """Return if the complete set `ref` was made with the weights `entry` resolves to now; else a
    CrsbenchError naming both hashes and the two ways out.

    The same files as recorded (path, size, mtime) are the same weights; otherwise
    `weights_hash()` (the built model's `state_dict_hash`, before any dtype cast) decides.
    Explicit `weights` that cannot be used are an error; weights that are not local at all leave the set as it stands."""
    attrs = store.attrs(ref)
    try:
        with download_policy(False):
            source = planned_weights(entry, Path(weights) if weights else None)
    except CrsbenchError:
        if weights is not None:
            raise
        return
    if fingerprint(source) == attrs.get("weights_source"):
        return
    new = weights_hash()
    old = str(attrs.get("weights_hash") or "")
    if new == old:  # the same weights in other files: remember these, so the next check is cheap
        store.root(writable=True)[ref.path].attrs["weights_source"] = fingerprint(source)
        return
    where = f" ({source})" if source is not None else " (random-init)"
    raise CrsbenchError(
        f"feature set {ref.path} in {store.url} was extracted with weights {old[:16]}, but the weights "
        f"given now{where} hash {new[:16]}; rerun with --force to replace the set (the probe fits "
        f"trained on it are retired, as 'ingest --replace' does), or register the new weights under a "
        f"new encoder id (an [encoder.<id>] table with weights = ...) so both stay comparable"
    )


def extract(
    dataset: Dataset,
    entry: EncoderEntry,
    store: FeatureStore | str,
    options: ExtractOptions | None = None,
    *,
    regime: str = FROZEN,
    model: torch.nn.Module | None = None,
    progress: ProgressFn | None = None,
    conditions: Sequence[str] | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """Extract every depth and condition of one encoder on one dataset; returns the set's attrs.

    `options` (features.extract_options; its defaults when None, with `overrides` replacing
    fields of it) say how. `model` overrides building the entry (e.g. a LoRA-adapted encoder
    with its `regime`; it is moved to the device and compute dtype in place). A complete feature
    set is skipped (attrs returned with `skipped=True`) unless `force`. On the CPU, `threads`
    one-thread forwards run at once (default: half the cores, so decoding and perturbing never
    oversubscribe them); with more than one, images are decoded and perturbed in worker
    processes (`pixel_processes=False`: in threads of this process). Stored bytes depend on
    neither. The model is built (weights resolved offline unless `allow_download`) before the
    store is touched, so a bad checkpoint writes nothing. `repair` re-extracts only the damaged
    or missing row chunks of the set (features.repair): attrs come back with `repaired` (the
    chunks) and `damage`.
    """
    opts = dataclasses.replace(options or ExtractOptions(), **overrides)
    device, batch_size, force, chunk_rows = opts.device, opts.batch_size, opts.force, opts.chunk_rows
    dtype, compute_dtype, threads, repair = opts.dtype, opts.compute_dtype, opts.threads, opts.repair
    weights = str(opts.weights) if opts.weights is not None else None
    allow_download, trust_pickle, workers = opts.allow_download, opts.trust_pickle, opts.workers
    perturb_backend, pixel_processes = opts.perturb_backend, opts.pixel_processes
    store = store if isinstance(store, FeatureStore) else FeatureStore(str(store))
    progress = progress or no_progress
    if dtype not in DTYPES or compute_dtype not in COMPUTE_DTYPES:
        raise CrsbenchError(f"dtype must be one of {list(DTYPES)}, compute dtype one of {list(COMPUTE_DTYPES)}")
    if batch_size < 1 or chunk_rows < 1:
        raise CrsbenchError("--batch-size and chunk rows must be positive")
    # Default: clean and every registered perturbation x severity (the protocol's 16 without plugins).
    conditions = registered_conditions() if conditions is None else check_conditions(conditions)
    if entry.chest_only and dataset.domain != "rad":
        raise CrsbenchError(
            f"encoder {entry.id!r} is chest-only; dataset {dataset.name!r} has "
            f"domain {dataset.domain!r}, not chest radiographs ('rad')"
        )
    if dataset.n_images == 0:
        raise CrsbenchError(f"dataset {dataset.name!r} has no images")
    dev = _resolve_device(device)
    backend = perturb_backend if perturb_backend != "auto" else ("numpy" if dev.type == "cpu" else "torch")
    ref = FeatureSetRef(dataset.name, entry.id, regime)
    loads: list[dict[str, str]] = []
    given = model is not None

    def build() -> torch.nn.Module:
        with recording_loads() as record:
            built = build_model(entry, weights, allow_download=allow_download, trust_pickle=trust_pickle)
        loads[:] = record
        return built

    plan = plan_repair(store, ref, dataset) if repair else None
    if plan is not None:
        if not plan.chunks:
            return {**store.attrs(ref), "skipped": True, "repaired": [], "damage": []}
        # A repair re-extracts under the settings the set was made with, whatever the defaults.
        made = store.attrs(ref)
        batch_size, chunk_rows = int(made.get("batch_size", batch_size)), int(made.get("chunk_rows", chunk_rows))
        dtype, compute_dtype = str(made.get("dtype", dtype)), str(made.get("compute_dtype", compute_dtype))
        conditions = list(made.get("conditions", conditions))
        backend = str(made.get("perturb_backend", backend))
    # Built before the store is touched (a bad checkpoint or absent weights writes nothing),
    # unless the set is complete (with these weights) and will be skipped.
    complete = store.is_complete(ref)
    if model is None and complete and not force:
        check_same_weights(store, ref, entry, weights, lambda: state_dict_hash(build()))
    if model is None and (force or not complete):
        model = build()
    root = store.root(writable=True)
    claim_dataset(root, dataset, store.url)

    if ref.path in root and force:
        del root[ref.path]
    if ref.path in root and root[ref.path].attrs.get("complete") and plan is None:
        return {**dict(root[ref.path].attrs), "skipped": True}
    if model is None:  # the set looked complete a moment ago but is not (replaced meanwhile)
        model = build()

    weights_hash = state_dict_hash(model)
    model = model.to(dev).to(COMPUTE_DTYPES[compute_dtype]).eval()
    tap = DepthTap(model, entry)
    settings: dict[str, Any] = {
        "weights_hash": weights_hash,
        "image_digest": dataset.image_digest(),
        "dtype": dtype,
        "compute_dtype": compute_dtype,
        "chunk_rows": int(chunk_rows),
        "batch_size": int(batch_size),
        "device_type": dev.type,
        "perturb_backend": backend,
        "conditions": list(conditions),
        "code_version": __version__,
        # Not resume keys: which files the weights came from, and which part of each was taken.
        "weights_source": None if given else _source(entry, weights),
        "weights_loaded": loads,
    }
    if plan is not None:
        node = root[ref.path]
        assert isinstance(node, zarr.Group)
        check_settings(node, ref, settings)  # before anything is written
        reset_chunks(node, plan.chunks)
    group = open_feature_group(root, ref, entry, tap, dataset, settings, dev)

    ex = ChunkExtractor(
        dataset,
        entry,
        ref,
        tap,
        dev,
        {**settings, "np_dtype": DTYPES[dtype], "store_url": store.url},
        max(1, min(workers, os.cpu_count() or 1)),
        progress,
    )
    arrays = {
        name: group_array(group, name)
        for name in [f"{depth_key(d)}/{c}" for d in tap.depths for c in conditions] + [PROGRESS_ARRAY, DIGEST_ARRAY]
        if name in group  # no DIGEST_ARRAY in a set started before checksums
    }
    marks = np.asarray(arrays[PROGRESS_ARRAY][:])
    pending = [k for k in range(marks.shape[0]) if not marks[k]]
    total = sum(ex.n_items(k) for k in range(marks.shape[0]))
    done = total - sum(ex.n_items(k) for k in pending)
    progress(ex.label, done, total)
    started = time.perf_counter()
    previous_threads = torch.get_num_threads()
    if dev.type == "cpu":
        ex.use_streams(threads or min(previous_threads, max(1, (os.cpu_count() or 2) // 2)), pixel_processes)
        torch.set_num_threads(1)  # each stream's forward on one thread (see ChunkExtractor.run_chunk)
    extraction_threads = ex.n_streams
    try:
        ex.run(arrays, pending, done, total)
    finally:
        torch.set_num_threads(previous_threads)
        ex.close()
        tap.close()
    if plan is not None:
        count_repair(group, plan)  # before `complete` flips back on
    verdict = assess(group)  # before `complete` flips: a complete set always carries its verdict
    finish_feature_set(group, arrays, ref, ex.test_mask, settings, store.url)
    if verdict.reason:
        warnings.warn(
            f"feature set {ref.path} is degenerate: {verdict.reason}; its cells are flagged and {entry.id} gets no "
            f"rank until you confirm the set: crsbench feature-sets --confirm {ref.key} {dataset.name}",
            stacklevel=2,
        )
    elif verdict.other_depths:  # a flagged set needs no second warning
        warnings.warn(verdict.other_depths_warning(ref.path), stacklevel=2)
    group.attrs["provenance"] = to_json(collect(device=str(dev), threads=extraction_threads))
    attrs: dict[str, Any] = dict(group.attrs)
    attrs["seconds"] = time.perf_counter() - started
    attrs["skipped"] = False
    if plan is not None:
        attrs["repaired"], attrs["damage"], attrs["repaired_depths"] = plan.chunks, plan.damage, plan.depths
    return attrs

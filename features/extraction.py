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

A screening run (`screen`) computes only the batches holding a clean row and writes only the
clean arrays, then marks the set `screened` (never `complete`); a later plain run computes only
the batches holding a perturbed row and keeps the clean arrays as stored, ending byte-identical to
a one-go run (features.extraction_chunks, METHODS.md §2.9).

The set's cost (features.cost: parameters, FLOPs, images/s, peak memory, widths, stored bytes) is
measured once, on separate zero inputs, when the group is created; its two timed fields are the
only bytes of a set that differ between otherwise identical runs.
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
from crsbench.features.conditions import check_conditions, registered_conditions, stored_conditions
from crsbench.features.degenerate import assess
from crsbench.features.extract_options import ExtractOptions
from crsbench.features.extraction_chunks import ALL, CLEAN_PART, PERTURBED_PART, ChunkExtractor
from crsbench.features.extraction_result import ExtractionResult, StoredAttrs
from crsbench.features.extraction_sets import (
    CLEAN_PROGRESS_ARRAY,
    COMPUTE_DTYPES,
    DTYPES,
    PROGRESS_ARRAY,
    clean_marks,
    clean_progress,
    finish_feature_set,
    finish_screened_set,
    group_array,
    open_feature_group,
    present_arrays,
    set_done,
)
from crsbench.features.hooks import DepthTap
from crsbench.features.integrity import DIGEST_ARRAY
from crsbench.features.loaders import build_model, state_dict_hash
from crsbench.features.registry import EncoderEntry
from crsbench.features.repair import RepairPlan, as_made, check_settings, count_repair, plan_repair, reset_chunks
from crsbench.features.store import FeatureSetRef, FeatureStore, claim_dataset, depth_key
from crsbench.features.weights import download_policy, fingerprint, planned_weights, recording_loads
from crsbench.ingest.types import Dataset


def resolve_device(device: str) -> torch.device:
    """`device` as torch names it, or a one-line error when it is CUDA and none is available."""
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise CrsbenchError("--device cuda requested but no CUDA device is available")
    return dev


def weights_source(entry: EncoderEntry, weights: str | None) -> list[list[Any]] | None:
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
) -> ExtractionResult:
    """Extract every depth and condition of one encoder on one dataset; returns the set's attrs
    and what was done (features.extraction_result).

    `options` (features.extract_options; its defaults when None, with `overrides` replacing
    fields of it) say how. `model` overrides building the entry (e.g. a LoRA-adapted encoder
    with its `regime`; it is moved to the device and compute dtype in place). A complete feature
    set is skipped (`skipped=True`) unless `force`. On the CPU, `threads`
    one-thread forwards run at once (default: torch's thread count, one per core: the forward is
    most of the work, and the demo's extraction on 2 cores takes 52 s this way against 71 s with
    one stream beside the pixel workers, docs/BENCHMARKS.md); with more than one, images are decoded and perturbed in worker
    processes (`pixel_processes=False`: in threads of this process). Stored bytes depend on
    neither. The model is built (weights resolved offline unless `allow_download`) before the
    store is touched, so a bad checkpoint writes nothing. `repair` re-extracts only the damaged
    or missing row chunks of the set (features.repair): the result carries `repaired` (the
    chunks) and `damage`. `screen` writes the clean condition alone and leaves the set screened
    (a screened or complete set is skipped); a later plain run reuses its clean arrays.
    """
    opts = dataclasses.replace(options or ExtractOptions(), **overrides)
    store = store if isinstance(store, FeatureStore) else FeatureStore(str(store))
    check_request(dataset, entry, opts)
    # Default: clean and every registered perturbation x severity (the protocol's 16 without plugins).
    conditions = registered_conditions() if conditions is None else check_conditions(conditions)
    dev = resolve_device(opts.device)
    ref = FeatureSetRef(dataset.name, entry.id, regime)
    if not opts.force and not opts.repair and lacks_conditions(store, ref, conditions):
        opts = dataclasses.replace(opts, force=True)  # e.g. a suite the grid gained: the whole set again
    plan = plan_repair(store, ref, dataset) if opts.repair else None
    if plan is not None:
        if not plan.chunks:
            return skipped_result(store.attrs(ref), store, ref, plan)
        # A repair re-extracts under the settings the set was made with, whatever the defaults.
        opts, made = as_made(opts, store.attrs(ref))
        conditions = made if made is not None else list(conditions)
    build = _Builder(entry, opts)
    given = model is not None
    if model is None:
        model = _model_unless_skipped(store, ref, entry, opts, build)
    root = store.root(writable=True)
    claim_dataset(root, dataset, store.url)
    if ref.path in root and opts.force:
        del root[ref.path]
    if ref.path in root and set_done(root[ref.path].attrs, opts.screen) and plan is None:
        return skipped_result(dict(root[ref.path].attrs), store, ref)
    if model is None:  # the set looked complete a moment ago but is not (replaced meanwhile)
        model = build()
    weights_hash = state_dict_hash(model)
    model = model.to(dev).to(COMPUTE_DTYPES[opts.compute_dtype]).eval()
    tap = DepthTap(model, entry)
    source = None if given else weights_source(entry, str(opts.weights) if opts.weights is not None else None)
    settings = settings_attrs(dataset, opts, dev, list(conditions), weights_hash, source, build.loads)
    group = _open_set(root, ref, entry, tap, dataset, settings, dev, plan)
    started = time.perf_counter()
    test_mask, arrays, threads = _run_chunks(dataset, entry, ref, tap, dev, settings, store.url, opts, group, progress)
    if opts.screen:
        finish_screened_set(group, arrays, ref, store.url)
    else:
        if plan is not None:
            count_repair(group, plan)  # before `complete` flips back on
        _finish(group, arrays, ref, entry, dataset, test_mask, settings, store.url)
        group.attrs["provenance"] = to_json(collect(device=str(dev), threads=threads))
    stored = StoredAttrs.from_attrs(dict(group.attrs), f"feature set {ref.path} in {store.url}")
    return done_result(stored, time.perf_counter() - started, plan)


def lacks_conditions(store: FeatureStore, ref: FeatureSetRef, conditions: Sequence[str]) -> bool:
    """Whether the set is complete but without some of `conditions` (extracted before its dataset's
    grid declared them): it is extracted again whole, the same bytes for what it held."""
    if not store.is_complete(ref):
        return False
    return not set(conditions) <= set(stored_conditions(store.attrs(ref)))


def check_request(dataset: Dataset, entry: EncoderEntry, opts: ExtractOptions) -> None:
    """A one-line error for a request no extraction can serve (before anything is built or written)."""
    if opts.dtype not in DTYPES or opts.compute_dtype not in COMPUTE_DTYPES:
        raise CrsbenchError(f"dtype must be one of {list(DTYPES)}, compute dtype one of {list(COMPUTE_DTYPES)}")
    if opts.batch_size < 1 or opts.chunk_rows < 1:
        raise CrsbenchError("--batch-size and chunk rows must be positive")
    if entry.chest_only and dataset.domain != "rad":
        raise CrsbenchError(
            f"encoder {entry.id!r} is chest-only; dataset {dataset.name!r} has "
            f"domain {dataset.domain!r}, not chest radiographs ('rad')"
        )
    if dataset.n_images == 0:
        raise CrsbenchError(f"dataset {dataset.name!r} has no images")
    if opts.screen and opts.repair:
        raise CrsbenchError("--screen and --repair do not combine: a repair restores a complete set")


def skipped_result(
    attrs: dict[str, Any], store: FeatureStore, ref: FeatureSetRef, plan: RepairPlan | None = None
) -> ExtractionResult:
    """The result for a set left as it stands (complete; or, with `plan`, nothing to repair)."""
    stored = StoredAttrs.from_attrs(attrs, f"feature set {ref.path} in {store.url}")
    if plan is None:
        return ExtractionResult(stored, skipped=True)
    return ExtractionResult(stored, skipped=True, repaired=(), damage=())


def done_result(
    stored: StoredAttrs,
    seconds: float,
    plan: RepairPlan | None,
    chunks_here: int | None = None,
    n_chunks: int | None = None,
) -> ExtractionResult:
    """The result for a set just extracted (or repaired, under `plan`); over a cluster, with the
    chunks this client computed of the set's."""
    return ExtractionResult(
        stored,
        skipped=False,
        seconds=seconds,
        repaired=None if plan is None else tuple(plan.chunks),
        damage=None if plan is None else tuple(plan.damage),
        repaired_depths=None if plan is None else tuple(plan.depths),
        chunks_here=chunks_here,
        n_chunks=n_chunks,
    )


@dataclasses.dataclass
class _Builder:
    """Builds `entry`'s model under `opts`, remembering which files (and parts of them) it loaded."""

    entry: EncoderEntry
    opts: ExtractOptions
    loads: list[dict[str, str]] = dataclasses.field(default_factory=list)

    def __call__(self) -> torch.nn.Module:
        weights = str(self.opts.weights) if self.opts.weights is not None else None
        with recording_loads() as record:
            built = build_model(
                self.entry, weights, allow_download=self.opts.allow_download, trust_pickle=self.opts.trust_pickle
            )
        self.loads[:] = record
        return built


def _model_unless_skipped(
    store: FeatureStore, ref: FeatureSetRef, entry: EncoderEntry, opts: ExtractOptions, build: _Builder
) -> torch.nn.Module | None:
    """The model, built before the store is touched (a bad checkpoint or absent weights writes
    nothing); None when the set is complete, or screened for a screening run (with these
    weights), and will be skipped."""
    weights = str(opts.weights) if opts.weights is not None else None
    done = store.is_complete(ref) or (opts.screen and store.is_screened(ref))
    if done and not opts.force:
        check_same_weights(store, ref, entry, weights, lambda: state_dict_hash(build()))
        return None
    return build()


def settings_attrs(
    dataset: Dataset,
    opts: ExtractOptions,
    dev: torch.device,
    conditions: list[str],
    weights_hash: str,
    source: list[list[Any]] | None,
    loads: list[dict[str, str]],
) -> dict[str, Any]:
    """The attrs that fix a set's bytes (features.extraction_sets.RESUME_KEYS), and where its weights
    came from (`source`: `weights_source`; `loads`: which part of each file was taken)."""
    return {
        "weights_hash": weights_hash,
        "image_digest": dataset.image_digest(),
        "dtype": opts.dtype,
        "compute_dtype": opts.compute_dtype,
        "chunk_rows": int(opts.chunk_rows),
        "batch_size": int(opts.batch_size),
        "device_type": dev.type,
        "perturb_backend": perturb_backend(opts, dev),
        "conditions": list(conditions),
        "code_version": __version__,
        # Not resume keys: which files the weights came from, and which part of each was taken.
        "weights_source": source,
        "weights_loaded": loads,
    }


def perturb_backend(opts: ExtractOptions, dev: torch.device) -> str:
    """The perturbation backend: as asked, or with 'auto' numpy on the CPU and torch elsewhere."""
    return opts.perturb_backend if opts.perturb_backend != "auto" else ("numpy" if dev.type == "cpu" else "torch")


def _open_set(
    root: zarr.Group,
    ref: FeatureSetRef,
    entry: EncoderEntry,
    tap: DepthTap,
    dataset: Dataset,
    settings: dict[str, Any],
    dev: torch.device,
    plan: RepairPlan | None,
) -> zarr.Group:
    """The set's group, created or reopened; for a repair, its damaged chunks reset first."""
    if plan is not None:
        node = root[ref.path]
        assert isinstance(node, zarr.Group)  # plan_repair found it
        check_settings(node, ref, settings)  # before anything is written
        reset_chunks(node, plan.chunks)
    return open_feature_group(root, ref, entry, tap, dataset, settings, dev)


def _run_chunks(
    dataset: Dataset,
    entry: EncoderEntry,
    ref: FeatureSetRef,
    tap: DepthTap,
    dev: torch.device,
    settings: dict[str, Any],
    store_url: str,
    opts: ExtractOptions,
    group: zarr.Group,
    progress: ProgressFn | None,
) -> tuple[np.ndarray, dict[str, Any], int]:
    """Extract every row chunk without its progress marker; returns the test-row mask, the
    set's arrays and how many forward streams ran. The tap is closed however it ends."""
    progress = progress or no_progress
    ex = ChunkExtractor(
        dataset,
        entry,
        ref,
        tap,
        dev,
        {**settings, "np_dtype": DTYPES[opts.dtype], "store_url": store_url},
        max(1, min(opts.workers, os.cpu_count() or 1)),
        progress,
    )
    if opts.screen:
        clean_progress(group)  # created by the first screening run
    names = [f"{depth_key(d)}/{c}" for d in tap.depths for c in settings["conditions"]]
    # No DIGEST_ARRAY in a set started before checksums.
    extra = [PROGRESS_ARRAY, DIGEST_ARRAY, CLEAN_PROGRESS_ARRAY]
    arrays = present_arrays(group, [*names, *extra])
    pending = pending_parts(group, opts.screen)
    target = CLEAN_PART if opts.screen else ALL
    n_chunks = int(arrays[PROGRESS_ARRAY].shape[0])
    left = {k: ex.n_items(k, part) for k, part in pending}
    done = sum(ex.n_items(k, target) for k in range(n_chunks) if k not in left)
    total = done + sum(left.values())
    progress(ex.label, done, total)
    previous_threads = torch.get_num_threads()
    if dev.type == "cpu":
        ex.use_streams(opts.threads or previous_threads, opts.pixel_processes)
        torch.set_num_threads(1)  # each stream's forward on one thread (see ChunkExtractor.run_chunk)
    try:
        ex.run(arrays, pending, done, total)
    finally:
        torch.set_num_threads(previous_threads)
        ex.close()
        tap.close()
    return ex.test_mask, arrays, ex.n_streams


def pending_parts(group: zarr.Group, screen: bool) -> list[tuple[int, str]]:
    """The (row chunk, part) a run computes: for a screening run the clean part of each chunk
    without it; otherwise each unfinished chunk, whole or, when its clean part is written, its
    perturbed part (features.extraction_chunks)."""
    marks = np.asarray(group_array(group, PROGRESS_ARRAY)[:]).astype(bool)
    clean = clean_marks(group)
    if screen:
        return [(k, CLEAN_PART) for k in range(marks.shape[0]) if not clean[k]]
    return [(k, PERTURBED_PART if clean[k] else ALL) for k in range(marks.shape[0]) if not marks[k]]


def _finish(
    group: zarr.Group,
    arrays: dict[str, Any],
    ref: FeatureSetRef,
    entry: EncoderEntry,
    dataset: Dataset,
    test_mask: np.ndarray,
    settings: dict[str, Any],
    store_url: str,
) -> None:
    """Assess the set, then mark it complete (features.extraction_sets); warn when it is degenerate."""
    verdict = assess(group)  # before `complete` flips: a complete set always carries its verdict
    finish_feature_set(group, arrays, ref, test_mask, settings, store_url)
    # stacklevel 3: the warning names extract's caller, as it did when extract warned itself.
    if verdict.reason:
        warnings.warn(
            f"feature set {ref.path} is degenerate: {verdict.reason}; its cells are flagged and {entry.id} gets no "
            f"rank until you confirm the set: crsbench feature-sets --confirm {ref.key} {dataset.name}",
            stacklevel=3,
        )
    elif verdict.other_depths:  # a flagged set needs no second warning
        warnings.warn(verdict.other_depths_warning(ref.path), stacklevel=3)

"""The worker side of distributed extraction: what runs inside a dask.distributed worker.

The client (crsbench.features.extraction_cluster) claims, submits and completes; the functions here
run on workers and touch only the shared feature store:

* `check_worker`: before any chunk, on every worker -- the weights resolve, the device exists,
  and the store is shared and writable (a probe file the client wrote is read back, and one is
  written for the client to read);
* `weights_hash`: before any set of a run -- the hash of the weights this worker extracts with,
  so the client can hold an encoder id to one model (features.one_model);
* `same_weights`: before a complete set is skipped -- this worker's weights are the set's
  (features.extraction.check_same_weights, as a local run checks);
* `open_set`: once per feature set (under the client's claim) -- the group and its arrays, and
  for a repair the damaged chunks marked pending (features.repair);
* `compute_chunk`: one row chunk of one feature set, every depth and condition, written to the
  store with its digests and progress marker exactly as a local run writes it.

Each worker keeps a log of the chunk tasks it ran and how they ended (`chunk_runs`): the
exactly-once tests count it across workers, independently of the clients' own accounting.

Each worker process builds a model once per (encoder, weights, device, compute dtype) and keeps
it (`_MODELS`), so a task never pays the build; chunk tasks on one worker run one at a time per
model, each forward on one torch thread as a local CPU run does, so the bytes match a local run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import torch
import zarr

from crsbench.core import CrsbenchError, no_progress
from crsbench.features.conditions import registered_conditions
from crsbench.features.extract_options import ExtractOptions
from crsbench.features.extraction import check_same_weights, resolve_device, settings_attrs, weights_source
from crsbench.features.extraction_chunks import ChunkExtractor
from crsbench.features.extraction_sets import (
    COMPUTE_DTYPES,
    DTYPES,
    PROGRESS_ARRAY,
    group_array,
    open_feature_group,
    present_arrays,
)
from crsbench.features.hooks import DepthTap
from crsbench.features.integrity import DIGEST_ARRAY
from crsbench.features.loaders import build_model, state_dict_hash
from crsbench.features.registry import EncoderEntry
from crsbench.features.repair import check_settings, reset_chunks
from crsbench.features.store import FeatureSetRef, FeatureStore, claim_dataset, depth_key
from crsbench.features.weights import download_policy, planned_weights, recording_loads
from crsbench.ingest.types import Dataset

PROBE_PREFIX = ".crsbench-probe-"


@dataclasses.dataclass
class _Built:
    model: torch.nn.Module
    tap: DepthTap
    weights_hash: str
    loads: list[dict[str, str]]
    lock: threading.Lock


_MODELS: dict[tuple[str, str, str, str], _Built] = {}
_MODELS_LOCK = threading.Lock()
_RUNS: list[tuple[str, str, int, str]] = []  # (store url, set path, chunk, "written" | "failed: <error>")


def _key(entry: EncoderEntry, options: ExtractOptions) -> tuple[str, str, str, str]:
    return entry.id, str(options.weights or ""), options.device, options.compute_dtype


def built_model(entry: EncoderEntry, options: ExtractOptions) -> _Built:
    """This worker's model for `entry` under `options`, built on first use and kept."""
    key = _key(entry, options)
    with _MODELS_LOCK:
        if key not in _MODELS:
            with recording_loads() as loads:
                model = build_model(
                    entry, options.weights, allow_download=options.allow_download, trust_pickle=options.trust_pickle
                )
            weights_hash = state_dict_hash(model)
            dev = resolve_device(options.device)
            model = model.to(dev).to(COMPUTE_DTYPES[options.compute_dtype]).eval()
            _MODELS[key] = _Built(model, DepthTap(model, entry), weights_hash, list(loads), threading.Lock())
        return _MODELS[key]


def models_built() -> int:
    """How many models this worker process has built (a test checks one per worker)."""
    return len(_MODELS)


def chunk_runs() -> list[tuple[str, str, int, str]]:
    """Every chunk task this worker process ran: (store url, set path, chunk, outcome)."""
    return list(_RUNS)


def probe_path(store_url: str, token: str) -> str:
    """The probe file the client writes beside the store for workers to read back."""
    return f"{store_url.rstrip('/')}{PROBE_PREFIX}{token}"


def check_worker(entry: EncoderEntry, options: ExtractOptions, store_url: str, token: str, name: str) -> str:
    """'' when this worker can run chunks of `entry` into `store_url`, else why not (one line)."""
    try:
        with download_policy(options.allow_download):
            planned_weights(entry, Path(options.weights) if options.weights else None)
    except CrsbenchError as exc:
        return f"weights: {exc}"
    try:
        resolve_device(options.device)
    except CrsbenchError as exc:
        return str(exc)
    path = probe_path(store_url, token)
    try:
        with fsspec.open(path, "rb") as fh:
            seen = fh.read().decode()
    except (FileNotFoundError, OSError):
        seen = ""
    if seen != token:
        return (
            f"the store {store_url} is not shared with this worker (a probe file written there by the "
            f"client cannot be read here); use a store every worker reaches (s3://, gs://, or an NFS path)"
        )
    try:
        with fsspec.open(f"{path}-{name}", "wb") as fh:
            fh.write(token.encode())
    except Exception as exc:  # any filesystem's refusal (read-only mounts, http, denied buckets)
        return f"cannot write the store {store_url} from this worker: {type(exc).__name__}: {exc}"
    return ""


def check_named_worker(
    entry: EncoderEntry, options: ExtractOptions, store_url: str, token: str, names: dict[str, str], dask_worker: Any
) -> str:
    """`check_worker` under this worker's name in `names` (by address); `Client.run` passes `dask_worker`."""
    return check_worker(entry, options, store_url, token, names[dask_worker.address])


def set_settings(
    ds: Dataset, entry: EncoderEntry, options: ExtractOptions, built: _Built, conditions: list[str] | None = None
) -> dict[str, Any]:
    """The attrs that fix a set's bytes (features.extraction.settings_attrs), as a local run writes
    them; `conditions` default to the registered ones, as a local run's do."""
    return settings_attrs(
        ds,
        options,
        resolve_device(options.device),
        list(registered_conditions() if conditions is None else conditions),
        built.weights_hash,
        weights_source(entry, str(options.weights) if options.weights else None),
        built.loads,
    )


def weights_hash(entry: EncoderEntry, options: ExtractOptions) -> str:
    """The hash of the weights this worker extracts `entry` with (features.one_model checks it)."""
    return built_model(entry, options).weights_hash


def same_weights(entry: EncoderEntry, store_url: str, ref: FeatureSetRef, options: ExtractOptions) -> None:
    """Return if complete set `ref` was made with the weights this worker resolves for `entry`;
    else the local path's CrsbenchError naming both hashes and the two ways out."""
    check_same_weights(
        FeatureStore(store_url),
        ref,
        entry,
        str(options.weights) if options.weights else None,
        lambda: built_model(entry, options).weights_hash,
    )


def open_set(
    ds: Dataset,
    entry: EncoderEntry,
    store_url: str,
    options: ExtractOptions,
    regime: str,
    conditions: list[str] | None = None,
    repair: list[int] | None = None,
) -> dict[str, Any]:
    """Create (or reopen, checking its settings) the set's group and arrays; returns its settings.

    With `repair` (row chunks of a complete set), the set's settings are checked against this
    worker's first, then those chunks are deleted and marked pending (features.repair)."""
    built = built_model(entry, options)
    settings = set_settings(ds, entry, options, built, conditions)
    store = FeatureStore(store_url)
    root = store.root(writable=True)
    claim_dataset(root, ds, store.url)
    ref = FeatureSetRef(ds.name, entry.id, regime)
    if repair:
        node = root[ref.path]
        assert isinstance(node, zarr.Group)  # plan_repair found it
        check_settings(node, ref, settings)  # before anything is written
        reset_chunks(node, repair)
    with built.lock:
        open_feature_group(root, ref, entry, built.tap, ds, settings, resolve_device(options.device))
    return settings


def compute_chunk(
    ds: Dataset,
    entry: EncoderEntry,
    store_url: str,
    options: ExtractOptions,
    settings: dict[str, Any],
    regime: str,
    k: int,
) -> int:
    """Extract row chunk `k` of the set into the store (arrays, digests, then its progress
    marker, as a local run writes them); returns the chunk's index."""
    with _logged(store_url, FeatureSetRef(ds.name, entry.id, regime), k):
        built = built_model(entry, options)
        if built.weights_hash != settings["weights_hash"]:
            raise CrsbenchError(
                f"this worker's {entry.id} weights hash {built.weights_hash[:16]}, not the set's "
                f"{str(settings['weights_hash'])[:16]}: every worker must hold the same weights file"
            )
        ref = FeatureSetRef(ds.name, entry.id, regime)
        store = FeatureStore(store_url)
        node = store.root(writable=True)[ref.path]
        assert isinstance(node, zarr.Group)  # open_set made it
        dev = resolve_device(options.device)
        conditions = list(settings["conditions"])
        names = [f"{depth_key(d)}/{c}" for d in built.tap.depths for c in conditions] + [PROGRESS_ARRAY, DIGEST_ARRAY]
        arrays = present_arrays(node, names)
        extra = {"np_dtype": DTYPES[settings["dtype"]], "store_url": store.url}
        with built.lock:
            ex = ChunkExtractor(ds, entry, ref, built.tap, dev, {**settings, **extra}, options.workers, no_progress)
            previous = torch.get_num_threads()
            if dev.type == "cpu":
                torch.set_num_threads(1)  # as a local CPU run's forwards (extraction.extract)
            try:
                chunk = ex.prefetch(k)
                items, feats, _ = ex.run_chunk(chunk, 0, ex.n_items(k))
                ex.store_chunk(arrays, chunk, items, feats)
            finally:
                torch.set_num_threads(previous)
                ex.close()
    return k


@contextlib.contextmanager
def _logged(store_url: str, ref: FeatureSetRef, k: int) -> Iterator[None]:
    """Log the chunk task in `_RUNS`, however it ends."""
    try:
        yield
    except BaseException as exc:
        _RUNS.append((store_url, ref.path, k, f"failed: {type(exc).__name__}"))
        raise
    _RUNS.append((store_url, ref.path, k, "written"))


def progress_marks(store_url: str, ref: FeatureSetRef) -> Callable[[], np.ndarray]:
    """A reader of the set's progress markers (one per row chunk; 1 = written): the array is
    opened once, each call reads its current values (over S3 a few small GETs, not a group open)."""
    node = FeatureStore(store_url).root()[ref.path]
    assert isinstance(node, zarr.Group)
    marks = group_array(node, PROGRESS_ARRAY)
    return lambda: np.asarray(marks[:])

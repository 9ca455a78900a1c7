"""One-pass extraction into the Zarr feature store (METHODS.md §2).

Work is done row-chunk by row-chunk. For a chunk, every image is decoded once (on CPU
threads, one chunk ahead of the model); train/calib rows give the `clean` condition,
test rows all 16 conditions; one forward per batch yields all four depths through the
depth hooks. Batches never span chunks, so a chunk's bytes depend only on the chunk
itself: a killed run resumes at the first chunk without its progress marker and ends
byte-identical to an uninterrupted run. The feature-set group's `complete` attribute is
written last, after checking that every expected chunk exists in every array.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import torch
import zarr
from zarr.codecs import BloscCodec

from crsbench.core import __version__
from crsbench.core.provenance import collect, to_json
from crsbench.features.hooks import DepthTap
from crsbench.features.loaders import state_dict_hash
from crsbench.features.perturbations import REGISTRY as PERTURBATION_REGISTRY
from crsbench.features.perturbations import parse_condition, perturb_batch, seed_key
from crsbench.features.registry import EncoderEntry
from crsbench.features.store import (
    CLEAN,
    CONDITIONS,
    DEPTHS,
    FROZEN,
    FeatureSetRef,
    FeatureStore,
    claim_dataset,
    depth_key,
)
from crsbench.features.transforms import decode_image, model_input
from crsbench.ingest.types import CrsbenchError, Dataset, ProgressFn, no_progress

PROGRESS_ARRAY = "_chunks_done"  # one uint8 per row chunk, written after the chunk's arrays
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


def _compressor() -> BloscCodec:
    return BloscCodec(cname="zstd", clevel=3, shuffle="shuffle")


@dataclasses.dataclass
class _Chunk:
    index: int
    start: int
    stop: int
    test: np.ndarray  # local row indices of test rows
    images: list[Future]  # decoded uint8 HxWxC per local row
    host: dict[str, list[Future]]  # condition -> per test row, perturbed on CPU threads


class _Extractor:
    def __init__(
        self,
        dataset: Dataset,
        entry: EncoderEntry,
        ref: FeatureSetRef,
        tap: DepthTap,
        device: torch.device,
        settings: dict[str, Any],
        workers: int,
        progress: ProgressFn,
    ) -> None:
        self.ds, self.entry, self.ref, self.tap = dataset, entry, ref, tap
        self.device, self.s = device, settings
        self.progress = progress
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="crsbench-decode")
        self.ids = dataset.images["image_id"].astype(str).tolist()
        self.paths = dataset.images["rel_path"].astype(str).tolist()
        self.test_mask = dataset.images["split"].to_numpy() == "test"
        self.conditions: list[str] = list(settings["conditions"])
        self.compute_dtype = COMPUTE_DTYPES[settings["compute_dtype"]]
        self.host_conditions = [c for c in self.conditions if c != CLEAN and self._on_host(c)]

    def _on_host(self, condition: str) -> bool:
        name, _ = parse_condition(condition)  # type: ignore[misc]
        return self.s["perturb_backend"] == "numpy" or PERTURBATION_REGISTRY.get(name).on_cpu

    # -- planning ---------------------------------------------------------------------------
    def chunk_bounds(self, k: int) -> tuple[int, int]:
        rows = self.s["chunk_rows"]
        return k * rows, min((k + 1) * rows, self.ds.n_images)

    def prefetch(self, k: int) -> _Chunk:
        start, stop = self.chunk_bounds(k)
        images = [self.pool.submit(decode_image, self.ds.root, self.paths[r]) for r in range(start, stop)]
        test = np.flatnonzero(self.test_mask[start:stop])
        host: dict[str, list[Future]] = {}
        for cond in self.host_conditions:
            name, sev = parse_condition(cond)  # type: ignore[misc]
            ref = PERTURBATION_REGISTRY.get(name)
            host[cond] = [
                self.pool.submit(
                    _host_perturb, ref.reference, images[i], ref.levels[sev], seed_key(self.ids[start + i], name, sev)
                )
                for i in test
            ]
        return _Chunk(k, start, stop, test, images, host)

    def n_items(self, k: int) -> int:
        start, stop = self.chunk_bounds(k)
        return (stop - start) + (len(self.conditions) - 1) * int(self.test_mask[start:stop].sum())

    def items(self, chunk: _Chunk) -> list[tuple[str, int, int]]:
        """(condition, local row, position in the host list) in a fixed order."""
        n = chunk.stop - chunk.start
        out = [(CLEAN, i, i) for i in range(n)]
        for cond in self.conditions:
            if cond != CLEAN:
                out.extend((cond, int(i), j) for j, i in enumerate(chunk.test))
        return out

    # -- compute ------------------------------------------------------------------------------
    def run_chunk(self, chunk: _Chunk, done: int, total: int):
        """Forward every item of the chunk; returns (items, {depth: [n_items, dim]}, done)."""
        pixels = _Pixels(
            [f.result() for f in chunk.images],
            {c: [f.result() for f in fs] for c, fs in chunk.host.items()},
            self.device,
        )
        items = self.items(chunk)
        bs = self.s["batch_size"]
        outputs: list[dict[float, torch.Tensor]] = []
        for b in range(0, len(items), bs):
            batch = items[b : b + bs]
            x = torch.cat([self._inputs(group, pixels, chunk) for group in _groups(batch, pixels.images)])
            outputs.append(self.tap(x))  # stays on the device: one synchronisation per chunk
            done += len(batch)
            self.progress(self.label, done, total)
        feats = {d: torch.cat([o[d] for o in outputs]).cpu().numpy() for d in DEPTHS}
        return items, feats, done

    def _inputs(self, group: list[tuple[str, int, int]], pixels: "_Pixels", chunk: _Chunk) -> torch.Tensor:
        cond = group[0][0]
        t = pixels.take(cond, group)
        if cond != CLEAN and cond not in pixels.host:
            name, sev = parse_condition(cond)  # type: ignore[misc]
            ids = [self.ids[chunk.start + i] for _, i, _ in group]
            t = perturb_batch(t, ids, name, sev, backend="torch")
        return model_input(t, self.entry, self.compute_dtype)

    def store_chunk(
        self,
        arrays: dict[str, zarr.Array],
        chunk: _Chunk,
        items: list[tuple[str, int, int]],
        feats: dict[float, np.ndarray],
    ) -> None:
        """Check, convert and write one chunk (runs on the writer thread, one chunk at a time)."""
        self.write_chunk(arrays, chunk, self._arrange(chunk, items, feats))

    def _arrange(
        self, chunk: _Chunk, items: list[tuple[str, int, int]], feats: dict[float, np.ndarray]
    ) -> dict[tuple[float, str], np.ndarray]:
        """Per (depth, condition): the chunk's rows in the stored dtype (NaN where not computed)."""
        n = chunk.stop - chunk.start
        conds = np.array([c for c, _, _ in items])
        rows = np.array([i for _, i, _ in items])
        out: dict[tuple[float, str], np.ndarray] = {}
        for depth in DEPTHS:
            f = feats[depth]
            bad = np.flatnonzero(~np.isfinite(f).all(axis=1))
            if bad.size:
                self._fail(chunk, items[int(bad[0])], depth, "non-finite features")
            for cond in dict.fromkeys(conds.tolist()):
                sel = conds == cond
                block = np.full((n, f.shape[1]), np.nan, dtype=np.float32)
                block[rows[sel]] = f[sel]
                stored = block.astype(self.s["np_dtype"])
                overflow = np.flatnonzero(np.isinf(stored[rows[sel]]).any(axis=1))
                if overflow.size:
                    item = (cond, int(rows[sel][overflow[0]]), 0)
                    self._fail(chunk, item, depth, f"features overflow {self.s['dtype']} (use --dtype float32)")
                out[(depth, cond)] = stored
        return out

    def _fail(self, chunk: _Chunk, item: tuple[str, int, int], depth: float, what: str) -> None:
        cond, i, _ = item
        raise CrsbenchError(
            f"{what} for image {self.ids[chunk.start + i]!r} (row {chunk.start + i}, "
            f"condition {cond}, depth {depth_key(depth)}) from encoder {self.entry.id!r}; "
            f"the feature set {self.ref.path} stays incomplete"
        )

    def run(self, arrays: dict[str, zarr.Array], pending: list[int], done: int, total: int) -> None:
        """Three stages overlap: decoding (and CPU perturbations) of chunk k+1 on the thread pool,
        the forwards of chunk k on this thread, checking + writing chunk k-1 on the writer thread."""
        writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="crsbench-write")
        in_flight: Future | None = None
        try:
            ahead = self.prefetch(pending[0]) if pending else None
            for pos in range(len(pending)):
                chunk = ahead
                assert chunk is not None  # prefetched for every pending position
                ahead = self.prefetch(pending[pos + 1]) if pos + 1 < len(pending) else None
                items, feats, done = self.run_chunk(chunk, done, total)
                if in_flight is not None:
                    in_flight.result()  # a failed write stops everything before the next one starts
                in_flight = writer.submit(self.store_chunk, arrays, chunk, items, feats)
            if in_flight is not None:
                in_flight.result()
        finally:
            writer.shutdown(wait=True)

    # -- writing ------------------------------------------------------------------------------
    def write_chunk(
        self, arrays: dict[str, zarr.Array], chunk: _Chunk, blocks: dict[tuple[float, str], np.ndarray]
    ) -> None:
        for (depth, cond), block in blocks.items():
            if cond != CLEAN and chunk.test.size == 0:
                continue  # a chunk without test rows leaves perturbed arrays unwritten (NaN)
            arrays[f"{depth_key(depth)}/{cond}"][chunk.start : chunk.stop] = block
        arrays[PROGRESS_ARRAY][chunk.index] = 1

    @property
    def label(self) -> str:
        return f"extract {self.ref.key} on {self.ds.name}"

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class _Pixels:
    """A chunk's decoded images (and CPU-perturbed variants), uploaded to the device once per chunk
    when they share one shape; otherwise stacked per group."""

    def __init__(self, images: list[np.ndarray], host: dict[str, list[np.ndarray]], device: torch.device) -> None:
        self.images, self.host, self.device = images, host, device
        self.uniform = len({im.shape for im in images}) == 1
        if self.uniform:
            self.clean = torch.from_numpy(np.stack(images)).to(device)
            self.host_dev = {c: torch.from_numpy(np.stack(v)).to(device) for c, v in host.items() if v}

    def take(self, cond: str, group: list[tuple[str, int, int]]) -> torch.Tensor:
        on_host = cond in self.host
        if self.uniform:
            index = torch.tensor([j if on_host else i for _, i, j in group], device=self.device)
            return (self.host_dev[cond] if on_host else self.clean).index_select(0, index)
        arrays = [self.host[cond][j] if on_host else self.images[i] for _, i, j in group]
        return torch.from_numpy(np.stack(arrays)).to(self.device)


def _host_perturb(fn, image_future: Future, level: float, key: bytes) -> np.ndarray:
    return fn(image_future.result(), level, key)


def _groups(batch: list[tuple[str, int, int]], images: list[np.ndarray]):
    """Consecutive items with the same condition and image shape (stackable together)."""
    group: list[tuple[str, int, int]] = []
    for item in batch:
        if group and (item[0] != group[0][0] or images[item[1]].shape != images[group[0][1]].shape):
            yield group
            group = []
        group.append(item)
    if group:
        yield group


def _resolve_device(device: str) -> torch.device:
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise CrsbenchError("--device cuda requested but no CUDA device is available")
    return dev


def extract(
    dataset: Dataset,
    entry: EncoderEntry,
    store: FeatureStore | str,
    *,
    device: str = "cpu",
    batch_size: int = 64,
    regime: str = FROZEN,
    model: torch.nn.Module | None = None,
    weights: str | None = None,
    force: bool = False,
    progress: ProgressFn | None = None,
    chunk_rows: int = 256,
    dtype: str = "float16",
    compute_dtype: str = "float32",
    conditions: Sequence[str] = CONDITIONS,
    workers: int = 4,
    perturb_backend: str = "auto",
    threads: int | None = None,
    allow_download: bool | None = None,
) -> dict[str, Any]:
    """Extract every depth and condition of one encoder on one dataset; returns the set's attrs.

    `model` overrides building the entry (e.g. a LoRA-adapted encoder with its `regime`; it is
    moved to `device` and `compute_dtype` in place). A complete feature set is skipped (attrs
    returned with `skipped=True`) unless `force`. On the CPU the model gets `threads` torch
    threads (default: half the cores, so decoding and perturbing threads never oversubscribe
    them, which slows small models tenfold) for the duration of the call. The model is built
    (weights resolved offline unless `allow_download`) before the store is touched, so a bad
    checkpoint writes nothing.
    """
    store = store if isinstance(store, FeatureStore) else FeatureStore(str(store))
    progress = progress or no_progress
    if dtype not in DTYPES or compute_dtype not in COMPUTE_DTYPES:
        raise CrsbenchError(f"dtype must be one of {list(DTYPES)}, compute dtype one of {list(COMPUTE_DTYPES)}")
    if batch_size < 1 or chunk_rows < 1:
        raise CrsbenchError("--batch-size and chunk rows must be positive")
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown or CLEAN not in conditions:
        raise CrsbenchError(f"conditions must include 'clean' and come from {CONDITIONS}")
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
    # Built before the store is touched (a bad checkpoint or absent weights writes nothing),
    # unless the set is complete and will be skipped.
    if model is None and (force or not store.is_complete(ref)):
        model = entry.build(weights, allow_download=allow_download)
    root = store.root(writable=True)
    claim_dataset(root, dataset, store.url)

    if ref.path in root and force:
        del root[ref.path]
    if ref.path in root and root[ref.path].attrs.get("complete"):
        return {**dict(root[ref.path].attrs), "skipped": True}
    if model is None:  # the set looked complete a moment ago but is not (replaced meanwhile)
        model = entry.build(weights, allow_download=allow_download)

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
    }
    group = _open_feature_group(root, ref, entry, tap, dataset, settings, dev)

    ex = _Extractor(
        dataset,
        entry,
        ref,
        tap,
        dev,
        {**settings, "np_dtype": DTYPES[dtype]},
        max(1, min(workers, os.cpu_count() or 1)),
        progress,
    )
    arrays = {
        name: _array(group, name)
        for name in [f"{depth_key(d)}/{c}" for d in DEPTHS for c in conditions] + [PROGRESS_ARRAY]
    }
    marks = np.asarray(arrays[PROGRESS_ARRAY][:])
    pending = [k for k in range(marks.shape[0]) if not marks[k]]
    total = sum(ex.n_items(k) for k in range(marks.shape[0]))
    done = total - sum(ex.n_items(k) for k in pending)
    progress(ex.label, done, total)
    started = time.perf_counter()
    previous_threads = torch.get_num_threads()
    if dev.type == "cpu":
        torch.set_num_threads(threads or min(previous_threads, max(1, (os.cpu_count() or 2) // 2)))
    extraction_threads = torch.get_num_threads()
    try:
        ex.run(arrays, pending, done, total)
    finally:
        torch.set_num_threads(previous_threads)
        ex.close()
        tap.close()
    _finish(group, arrays, ref, ex.test_mask, settings, store.url)
    group.attrs["provenance"] = to_json(collect(device=str(dev), threads=extraction_threads))
    attrs = dict(group.attrs)
    attrs["seconds"] = time.perf_counter() - started
    attrs["skipped"] = False
    return attrs


def _array(group: zarr.Group, name: str) -> zarr.Array:
    node = group[name]
    assert isinstance(node, zarr.Array)
    return node


def _open_feature_group(
    root: zarr.Group,
    ref: FeatureSetRef,
    entry: EncoderEntry,
    tap: DepthTap,
    ds: Dataset,
    settings: dict[str, Any],
    dev: torch.device,
) -> zarr.Group:
    if ref.path in root:
        group = root[ref.path]
        assert isinstance(group, zarr.Group)
        stale = [k for k in RESUME_KEYS if group.attrs.get(k) != settings[k]]
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
    group = root.require_group(ref.path)
    # Everything but `complete` is fixed here; `complete` flips to true last.
    group.attrs.update(
        {
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
            "depths": [depth_key(d) for d in DEPTHS],
            "n_images": ds.n_images,
            **settings,
        }
    )
    rows = settings["chunk_rows"]
    for d in DEPTHS:
        for cond in settings["conditions"]:
            group.create_array(
                f"{depth_key(d)}/{cond}",
                shape=(ds.n_images, dims[depth_key(d)]),
                chunks=(rows, dims[depth_key(d)]),
                dtype=settings["dtype"],
                fill_value=np.nan,
                compressors=_compressor(),
            )
    n_chunks = -(-ds.n_images // rows)
    group.create_array(PROGRESS_ARRAY, shape=(n_chunks,), chunks=(1,), dtype="uint8", fill_value=0)
    return group


def _finish(
    group: zarr.Group,
    arrays: dict[str, zarr.Array],
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
        if name == PROGRESS_ARRAY:
            continue
        expected = n_chunks if name.endswith("/" + CLEAN) else with_test
        if arr.nchunks_initialized != expected:
            raise CrsbenchError(
                f"feature array {ref.path}/{name} in {url} has {arr.nchunks_initialized} of {expected} chunks written"
            )
    group.attrs["complete"] = True

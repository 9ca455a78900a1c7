"""The per-chunk work of extraction: decode, perturb, forward, check and write one row chunk.

For a chunk, every image is decoded once (on CPU threads, one chunk ahead of the model);
train/calib rows give the `clean` condition, test rows every condition (16 in the protocol); one forward per
batch yields all four depths through the depth hooks. Batches never span chunks, so a chunk's
bytes depend only on the chunk itself.

A chunk's item list (all clean rows, then each perturbed condition's test rows) is cut into
batches the same way whatever part of it a run computes (`Chunk.part`): a screening run forwards
only the batches holding a clean item, the run completing a screened chunk only those holding a
perturbed item. The one batch that mixes both is forwarded whole by each, so every stored row
comes from the very forward a one-go run does (METHODS.md §2.9).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import torch
import zarr

from crsbench.core import CLEAN, CrsbenchError, ProgressFn
from crsbench.features import transforms
from crsbench.features.extraction_procs import Part, decode_and_perturb, pixel_pool
from crsbench.features.extraction_sets import CLEAN_PROGRESS_ARRAY, COMPUTE_DTYPES, PROGRESS_ARRAY
from crsbench.features.hooks import DepthTap
from crsbench.features.integrity import DIGEST_ARRAY, block_digest
from crsbench.features.perturbations import REGISTRY as PERTURBATION_REGISTRY
from crsbench.features.perturbations import parse_condition, perturb, perturb_batch
from crsbench.features.registry import EncoderEntry
from crsbench.features.store import Depth, FeatureSetRef, depth_key
from crsbench.features.transforms import decode_image, model_input
from crsbench.ingest.types import Dataset

# Which batches of a chunk a run forwards and which arrays it writes: every one (a plain run), the
# clean part (a screening run), or the perturbed part of a chunk whose clean part is written.
ALL, CLEAN_PART, PERTURBED_PART = "all", "clean", "perturbed"
Item = tuple[str, int, int]  # (condition, local row, position in the host list)


@dataclasses.dataclass
class Chunk:
    index: int
    start: int
    stop: int
    test: np.ndarray  # local row indices of test rows
    images: list[Any]  # futures (or extraction_procs.Part) of the decoded uint8 HxWxC per local row
    host: dict[str, list[Any]]  # condition -> per test row, perturbed on CPU threads or processes
    part: str = ALL  # ALL, CLEAN_PART or PERTURBED_PART


class ChunkExtractor:
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
        self.streams: ThreadPoolExecutor | None = None
        self.n_streams = 1
        self.workers, self.pixel_workers = workers, 0
        self.ids = dataset.images["image_id"].astype(str).tolist()
        self.paths = dataset.images["rel_path"].astype(str).tolist()
        # Each decoded image is re-hashed against its ingest SHA-256 (a changed file is refused).
        self.hashes = (
            dataset.images["sha256"].fillna("").astype(str).tolist()
            if "sha256" in dataset.images and transforms.REHASH
            else [""] * len(self.paths)
        )
        self.test_mask = dataset.images["split"].to_numpy() == "test"
        self.conditions: list[str] = list(settings["conditions"])
        self.compute_dtype = COMPUTE_DTYPES[settings["compute_dtype"]]
        self.host_conditions = [c for c in self.conditions if c != CLEAN and self._on_host(c)]
        self.digest_names: list[str] = [f"{depth_key(d)}/{c}" for d in tap.depths for c in self.conditions]

    def use_streams(self, n: int, pixel_processes: bool = True) -> None:
        """Run `n` forwards at once, each on one torch thread (CPU): a small model's forward
        scales poorly across intra-op threads, and a one-thread team never spin-waits against
        the decode and perturbation threads."""
        self.n_streams = max(1, int(n))
        if self.n_streams > 1:
            self.streams = ThreadPoolExecutor(max_workers=self.n_streams, thread_name_prefix="crsbench-forward")
            if pixel_processes and all(self._on_host(c) for c in self.conditions if c != CLEAN):
                self.pixel_workers = self.workers  # see extraction_procs

    def _on_host(self, condition: str) -> bool:
        name, _ = parse_condition(condition)  # type: ignore[misc]
        return self.s["perturb_backend"] == "numpy" or PERTURBATION_REGISTRY.get(name).on_cpu

    # -- planning ---------------------------------------------------------------------------
    def chunk_bounds(self, k: int) -> tuple[int, int]:
        rows = self.s["chunk_rows"]
        return k * rows, min((k + 1) * rows, self.ds.n_images)

    def prefetch(self, k: int, part: str = ALL) -> Chunk:
        if self.pixel_workers:
            return self._prefetch_in_processes(k, part)
        start, stop = self.chunk_bounds(k)
        images = [
            self.pool.submit(decode_image, self.ds.root, self.paths[r], self.hashes[r]) for r in range(start, stop)
        ]
        test = np.flatnonzero(self.test_mask[start:stop])
        needed = self._conditions_of(stop - start, test, part)
        host: dict[str, list[Future[np.ndarray]]] = {}
        for cond in [c for c in self.host_conditions if c in needed]:
            name, sev = parse_condition(cond)  # type: ignore[misc]
            host[cond] = [self.pool.submit(host_perturb, images[i], self.ids[start + i], name, sev) for i in test]
        return Chunk(k, start, stop, test, images, host, part)

    def _prefetch_in_processes(self, k: int, part: str) -> Chunk:
        """One worker task per row: decode, then every host condition of a test row the part needs."""
        start, stop = self.chunk_bounds(k)
        pool = pixel_pool(self.pixel_workers)
        test = np.flatnonzero(self.test_mask[start:stop])
        needed = self._conditions_of(stop - start, test, part)
        host_conds = [c for c in self.conditions if c != CLEAN and c in needed]
        parsed = [p for c in host_conds if (p := parse_condition(c)) is not None]
        is_test = set(test.tolist())
        futures = [
            pool.submit(
                decode_and_perturb,
                self.ds.root,
                self.paths[start + i],
                self.ids[start + i],
                parsed if i in is_test else [],
                self.hashes[start + i],
            )
            for i in range(stop - start)
        ]
        images: list[Any] = [Part(f, None) for f in futures]
        host: dict[str, list[Any]] = {c: [Part(futures[i], n) for i in test] for n, c in enumerate(host_conds)}
        return Chunk(k, start, stop, test, images, host, part)

    def n_items(self, k: int, part: str = ALL) -> int:
        """How many items of chunk `k` a run of `part` forwards."""
        start, stop = self.chunk_bounds(k)
        n = stop - start
        span = self._span(n, n + (len(self.conditions) - 1) * int(self.test_mask[start:stop].sum()), part)
        return int(span.stop) - int(span.start)

    def _span(self, n_clean: int, n_items: int, part: str) -> slice:
        """The items of `part` in a chunk's full item list: whole batches of it, cut as a plain run cuts them."""
        bs = self.s["batch_size"]
        if part == CLEAN_PART:  # every batch holding a clean item, the one mixing both included
            return slice(0, min(n_items, -(-n_clean // bs) * bs))
        if part == PERTURBED_PART:  # every batch holding a perturbed item, the mixed one included
            return slice((n_clean // bs) * bs if n_items > n_clean else n_items, n_items)
        return slice(0, n_items)

    def _item_list(self, n: int, test: np.ndarray, part: str) -> list[Item]:
        out = [(CLEAN, i, i) for i in range(n)]
        for cond in self.conditions:
            if cond != CLEAN:
                out.extend((cond, int(i), j) for j, i in enumerate(test))
        return out[self._span(n, len(out), part)]

    def _conditions_of(self, n: int, test: np.ndarray, part: str) -> set[str]:
        return {c for c, _, _ in self._item_list(n, test, part)}

    def items(self, chunk: Chunk) -> list[Item]:
        """(condition, local row, position in the host list) in a fixed order: the chunk's part of them."""
        return self._item_list(chunk.stop - chunk.start, chunk.test, chunk.part)

    # -- compute ------------------------------------------------------------------------------
    def run_chunk(self, chunk: Chunk, done: int, total: int) -> tuple[list[Item], dict[Depth, np.ndarray], int]:
        """Forward every item of the chunk; returns (items, {depth: [n_items, dim]}, done).

        A batch waits only for the pixels it needs, so the forwards of the clean rows start
        while the pool is still perturbing the chunk's later conditions. On a CPU with several
        streams, consecutive batches run on parallel one-thread forwards (each batch's bytes
        do not depend on which stream ran it)."""
        pixels = Pixels(chunk.images, chunk.host, self.device)
        items = self.items(chunk)
        bs = self.s["batch_size"]
        batches = [items[b : b + bs] for b in range(0, len(items), bs)]

        def forward(batch: list[Item]) -> dict[Depth, torch.Tensor]:
            return self.tap(torch.cat([self._inputs(group, pixels, chunk) for group in groups(batch, pixels.images)]))

        outputs: list[dict[Depth, torch.Tensor]] = []
        for batch, out in zip(
            batches, self.streams.map(forward, batches) if self.streams else map(forward, batches), strict=True
        ):
            outputs.append(out)  # stays on the device: one synchronisation per chunk
            done += len(batch)
            self.progress(self.label, done, total)
        if not outputs:  # the perturbed part of a chunk without test rows: nothing to forward
            return items, {d: np.zeros((0, 0), np.float32) for d in self.tap.depths}, done
        feats = {d: torch.cat([o[d] for o in outputs]).cpu().numpy() for d in self.tap.depths}
        return items, feats, done

    def _inputs(self, group: list[Item], pixels: Pixels, chunk: Chunk) -> torch.Tensor:
        cond = group[0][0]
        t = pixels.take(cond, group)
        if cond != CLEAN and not pixels.on_host(cond):
            name, sev = parse_condition(cond)  # type: ignore[misc]
            ids = [self.ids[chunk.start + i] for _, i, _ in group]
            t = perturb_batch(t, ids, name, sev, backend="torch")
        return model_input(t, self.entry, self.compute_dtype)

    def store_chunk(
        self,
        arrays: dict[str, zarr.Array[Any]],
        chunk: Chunk,
        items: list[Item],
        feats: dict[Depth, np.ndarray],
    ) -> None:
        """Check, convert and write one chunk (runs on the writer thread, one chunk at a time)."""
        self.write_chunk(arrays, chunk, self._arrange(chunk, items, feats))

    def _arrange(
        self, chunk: Chunk, items: list[Item], feats: dict[Depth, np.ndarray]
    ) -> dict[tuple[Depth, str], np.ndarray]:
        """Per (depth, condition) the chunk's part writes: its rows in the stored dtype (NaN where not
        computed). A part's batch that mixes both kinds leaves out the other part's rows."""
        n = chunk.stop - chunk.start
        conds = np.array([c for c, _, _ in items])
        kept = [c for c in dict.fromkeys(conds.tolist()) if _writes(chunk.part, c)]
        rows = np.array([i for _, i, _ in items])
        out: dict[tuple[Depth, str], np.ndarray] = {}
        for depth in self.tap.depths:
            f = feats[depth]
            bad = np.flatnonzero(~np.isfinite(f).all(axis=1))
            if bad.size:
                self._fail(chunk, items[int(bad[0])], depth, "non-finite features")
            for cond in kept:
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

    def _fail(self, chunk: Chunk, item: tuple[str, int, int], depth: Depth, what: str) -> None:
        cond, i, _ = item
        raise CrsbenchError(
            f"{what} for image {self.ids[chunk.start + i]!r} (row {chunk.start + i}, "
            f"condition {cond}, depth {depth_key(depth)}) from encoder {self.entry.id!r}; "
            f"the feature set {self.ref.path} stays incomplete"
        )

    def run(self, arrays: dict[str, zarr.Array[Any]], pending: list[tuple[int, str]], done: int, total: int) -> None:
        """Compute each pending (chunk, part). Three stages overlap: decoding (and CPU perturbations)
        of chunk k+1 on the thread pool, the forwards of chunk k on this thread, checking + writing
        chunk k-1 on the writer thread."""
        writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="crsbench-write")
        in_flight: Future[None] | None = None
        try:
            ahead = self.prefetch(*pending[0]) if pending else None
            for pos in range(len(pending)):
                chunk = ahead
                assert chunk is not None  # prefetched for every pending position
                ahead = self.prefetch(*pending[pos + 1]) if pos + 1 < len(pending) else None
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
        self, arrays: dict[str, zarr.Array[Any]], chunk: Chunk, blocks: dict[tuple[Depth, str], np.ndarray]
    ) -> None:
        name = ""
        try:
            for (depth, cond), block in blocks.items():
                if cond != CLEAN and chunk.test.size == 0:
                    continue  # a chunk without test rows leaves perturbed arrays unwritten (NaN)
                name = f"{depth_key(depth)}/{cond}"
                arrays[name][chunk.start : chunk.stop] = block
            if chunk.part == CLEAN_PART:  # a screening run: its own marker; digests come with the rest
                name = CLEAN_PROGRESS_ARRAY
                arrays[CLEAN_PROGRESS_ARRAY][chunk.index] = 1
                return
            name = DIGEST_ARRAY
            if DIGEST_ARRAY in arrays:  # the content manifest, before the progress marker
                arrays[DIGEST_ARRAY][chunk.index] = self._digests(
                    arrays, chunk, self._with_stored(arrays, chunk, blocks)
                )
            name = PROGRESS_ARRAY
            arrays[PROGRESS_ARRAY][chunk.index] = 1
        except OSError as exc:  # a full disk or a file-size limit: zarr's error names no file
            if exc.errno is None or exc.filename is not None:
                raise
            where = f"{self.s['store_url']}/{self.ref.path}/{name} (row chunk {chunk.index})"
            raise OSError(exc.errno, os.strerror(exc.errno), where) from exc

    def _with_stored(
        self, arrays: dict[str, zarr.Array[Any]], chunk: Chunk, blocks: dict[tuple[Depth, str], np.ndarray]
    ) -> dict[tuple[Depth, str], np.ndarray]:
        """`blocks`, and for the perturbed part the chunk's clean blocks as stored (read back)."""
        if chunk.part != PERTURBED_PART:
            return blocks
        stored = {
            (d, CLEAN): np.asarray(arrays[f"{depth_key(d)}/{CLEAN}"][chunk.start : chunk.stop]) for d in self.tap.depths
        }
        return {**stored, **blocks}

    def _digests(
        self, arrays: dict[str, zarr.Array[Any]], chunk: Chunk, blocks: dict[tuple[Depth, str], np.ndarray]
    ) -> np.ndarray:
        """CRC-32C of each array's decoded chunk as a reader will see it (unwritten: the NaN fill)."""
        by_name = {f"{depth_key(d)}/{c}": b for (d, c), b in blocks.items() if c == CLEAN or chunk.test.size}
        out = []
        for name in self.digest_names:
            block = by_name.get(name)
            if block is None:
                block = np.full((chunk.stop - chunk.start, arrays[name].shape[1]), np.nan, dtype=arrays[name].dtype)
            out.append(block_digest(block))
        return np.asarray(out, dtype=np.uint32)

    @property
    def label(self) -> str:
        return f"extract {self.ref.key} on {self.ds.name}"

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        if self.streams:
            self.streams.shutdown(wait=True, cancel_futures=True)


class Pixels:
    """A chunk's decoded images and CPU-perturbed variants, awaited as the batches need them;
    when the images share one shape each condition is uploaded to the device once per chunk,
    otherwise stacked per group."""

    def __init__(self, images: list[Any], host: dict[str, list[Any]], device: torch.device) -> None:
        self._images, self._host, self.device = images, host, device
        self._uploaded: dict[str, torch.Tensor] = {}
        self._lock = threading.Lock()  # forward streams share one chunk: one upload per key is kept

    @functools.cached_property
    def images(self) -> list[np.ndarray]:
        return [f.result() for f in self._images]

    @functools.cached_property
    def uniform(self) -> bool:
        return len({im.shape for im in self.images}) == 1

    def on_host(self, cond: str) -> bool:
        return cond in self._host

    def _arrays(self, cond: str) -> list[np.ndarray]:
        return [f.result() for f in self._host[cond]] if self.on_host(cond) else self.images

    def take(self, cond: str, group: list[Item]) -> torch.Tensor:
        on_host = self.on_host(cond)
        if self.uniform:
            key = cond if on_host else CLEAN
            if key not in self._uploaded:  # awaited outside the lock: another stream may need another key
                uploaded = torch.from_numpy(np.stack(self._arrays(key))).to(self.device)
                with self._lock:
                    self._uploaded.setdefault(key, uploaded)
            index = torch.tensor([j if on_host else i for _, i, j in group], device=self.device)
            return self._uploaded[key].index_select(0, index)
        arrays = self._arrays(cond)
        return torch.from_numpy(np.stack([arrays[j if on_host else i] for _, i, j in group])).to(self.device)


def host_perturb(image_future: Future[np.ndarray], image_id: str, perturbation: str, severity: int) -> np.ndarray:
    return perturb(image_future.result(), image_id, perturbation, severity)


def groups(batch: list[Item], images: list[np.ndarray]) -> Iterator[list[Item]]:
    """Consecutive items with the same condition and image shape (stackable together)."""
    group: list[Item] = []
    for item in batch:
        if group and (item[0] != group[0][0] or images[item[1]].shape != images[group[0][1]].shape):
            yield group
            group = []
        group.append(item)
    if group:
        yield group


def _writes(part: str, condition: str) -> bool:
    """Whether a run of `part` writes `condition`'s array."""
    return part == ALL or (part == CLEAN_PART) == (condition == CLEAN)

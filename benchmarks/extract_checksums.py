"""The checksum part of benchmarks/extract.py: what the crc32c codec and the per-chunk content
digest cost on one stored chunk, against blosc encoding alone."""

from __future__ import annotations

import time

import numpy as np


def checksum_costs(rows: int, dim: int, repeats: int = 30) -> dict[str, float]:
    """Per stored chunk (`rows` x `dim` float16, ViT-B width at least): blosc encode alone, the
    crc32c codec on top, the manifest's digest (ms; best of `repeats`, the two encodes interleaved)."""
    import zarr

    from crsbench.features.integrity import block_digest, checksummed_compressors

    dim = max(dim, 768)
    block = np.random.default_rng(0).normal(size=(rows, dim)).astype(np.float16)

    def array(codecs):
        store = zarr.storage.MemoryStore()
        return zarr.create_array(store, shape=block.shape, chunks=block.shape, dtype="float16", compressors=codecs)

    plain, checked = array(checksummed_compressors()[:1]), array(checksummed_compressors())
    best = {"plain": float("inf"), "checked": float("inf")}
    for _ in range(repeats):
        for key, arr in (("plain", plain), ("checked", checked)):
            t0 = time.perf_counter()
            arr[:] = block
            best[key] = min(best[key], time.perf_counter() - t0)
    blosc, both = 1e3 * best["plain"], 1e3 * best["checked"]
    t0 = time.perf_counter()
    for _ in range(repeats):
        block_digest(block)
    digest = 1e3 * (time.perf_counter() - t0) / repeats
    return {"mb": block.nbytes / 1e6, "blosc_ms": blosc, "crc_codec_ms": both - blosc, "digest_ms": digest}

"""A perceptual hash of an image, for matching a pretraining set's list against ingested images
when the bytes differ (re-encoded, resized copies), where SHA-256 cannot match.

The hash is the difference hash (dHash) as the `imagehash` package computes it, so a list a
publisher or user made with `imagehash.dhash(image)` can be matched as is: the image in 8-bit
greyscale (PIL mode "L"), resized to 9 x 8 with Lanczos, one bit per pixel pair "brighter than
its left neighbour", row by row, written as 16 hex digits (64 bits, most significant first).
"""

from __future__ import annotations

import numpy as np
from PIL import Image

HASH_SIZE = 8  # bits per row and rows: a 64-bit hash
HEX_DIGITS = HASH_SIZE * HASH_SIZE // 4


def dhash(pixels: np.ndarray) -> str:
    """The 64-bit dHash of a uint8 H x W (x C) image, as 16 lower-case hex digits."""
    image = Image.fromarray(np.squeeze(pixels))
    grey = np.asarray(image.convert("L").resize((HASH_SIZE + 1, HASH_SIZE), Image.Resampling.LANCZOS))
    bits = (grey[:, 1:] > grey[:, :-1]).flatten()
    return f"{int(''.join('1' if b else '0' for b in bits), 2):0{HEX_DIGITS}x}"


def as_int(hex_hash: str) -> int:
    return int(hex_hash, 16)


def nearest_distances(hashes: np.ndarray, listed: np.ndarray) -> np.ndarray:
    """For each hash in `hashes` (uint64), the Hamming distance to the nearest in `listed` (uint64);
    64 where `listed` is empty."""
    if listed.size == 0:
        return np.full(hashes.shape, 64, dtype=np.int64)
    out = np.empty(hashes.shape, dtype=np.int64)
    for i, h in enumerate(hashes):
        out[i] = int(np.bitwise_count(np.bitwise_xor(listed, h)).min())
    return out

"""ingest.perceptual: the dHash against a hand-worked example, and nearest Hamming distances by brute force."""

from __future__ import annotations

import numpy as np

from crsbench.ingest.perceptual import dhash, nearest_distances


def test_dhash_of_a_9x8_image_is_its_left_right_gradient_bits():
    # A 9 x 8 greyscale image is not resized; row r's pixels rise except where noted.
    pixels = np.tile(np.arange(0, 90, 10, dtype=np.uint8), (8, 1))  # every pixel brighter than its left
    pixels[0] = pixels[0][::-1]  # row 0 falls: 8 zero bits
    pixels[7, 5] = 0  # row 7: pixel 5 darker than its left (bit 4 = 0), pixel 6 brighter than it (bit 5 = 1)
    rows = ["00000000"] + ["11111111"] * 6 + ["11110111"]
    assert dhash(pixels) == f"{int(''.join(rows), 2):016x}"
    assert dhash(np.stack([pixels] * 3, axis=-1)) == dhash(pixels)  # grey RGB hashes as its grey


def test_nearest_distances_equal_brute_force():
    rng = np.random.default_rng(0)
    own = rng.integers(0, 2**63, size=20, dtype=np.uint64)
    listed = rng.integers(0, 2**63, size=7, dtype=np.uint64)
    brute = [min(bin(int(a) ^ int(b)).count("1") for b in listed) for a in own]
    assert nearest_distances(own, listed).tolist() == brute
    assert nearest_distances(own, listed[:0]).tolist() == [64] * 20

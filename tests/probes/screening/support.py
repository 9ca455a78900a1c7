"""Data the screening tests share: labelled features with a known amount of class signal."""

from __future__ import annotations

import numpy as np


def standardise(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(axis=0)) / x.std(axis=0)


def labelled(n: int, d: int, k: int, signal: float = 1.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Standardised (n, d) features whose class means differ by `signal` in random directions, and
    balanced class indices (every class has n // k or more rows)."""
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % k)
    centres = rng.normal(size=(k, d))
    return standardise(signal * centres[y] + rng.normal(size=(n, d))), y

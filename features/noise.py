"""Counter-based noise for the Rician perturbation (features/perturbations.py): uniforms and
Gaussian pairs from an image's seed key, computed the same way in numpy and torch, so the CPU and
GPU backends store the same bytes."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any, TypeAlias

import numpy as np
import torch

# One code path serves numpy arrays and torch tensors (the backends), hence Any.
_Array: TypeAlias = Any

_M32 = 0xFFFFFFFF
RICIAN_PIECE = 32768  # elements: torch's intra-op grain size


def _mul32(x: _Array, c: int) -> _Array:
    """(x * c) mod 2**32: numpy uint32 wraps natively; torch int64 splits c to avoid overflow."""
    if isinstance(x, np.ndarray):
        return x * np.uint32(c)
    return ((x * (c & 0xFFFF)) + (((x * (c >> 16)) & 0xFFFF) << 16)) & _M32


def _mix32(x: _Array) -> _Array:
    """A 32-bit integer hash (lowbias32): a bijection with full avalanche."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def uniforms(counter: _Array, k0: Any, k1: Any) -> _Array:
    """Uniform (0, 1) float64 from a counter and a 64-bit key: the same in numpy and torch."""
    h = _mix32(_mix32(counter ^ k0) ^ k1)
    h = h.astype(np.float64) if isinstance(h, np.ndarray) else h.to(torch.float64)
    return (h + 0.5) / 4294967296.0  # exact in float64


def key_words(key: bytes) -> tuple[int, int]:
    """The two 32-bit little-endian words of a seed key that key the noise streams."""
    return int.from_bytes(key[:4], "little"), int.from_bytes(key[4:8], "little")


def gaussian_pair(counter: _Array, k0: Any, k1: Any, xp: ModuleType) -> tuple[_Array, _Array]:
    """Box-Muller on two hashed uniform streams: (z0, z1) ~ N(0, 1), float64."""
    if xp is np:
        k0, k1 = np.uint32(k0), np.uint32(k1)
    u1 = uniforms(counter * 2, k0, k1)
    u2 = uniforms(counter * 2 + 1, k0, k1)
    if xp is np:  # torch's float64 kernels in both paths (module docstring)
        z0, z1 = _box_muller(torch.from_numpy(u1), torch.from_numpy(u2))
        return z0.numpy(), z1.numpy()
    return _box_muller(u1, u2)


def _box_muller(u1: torch.Tensor, u2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r = torch.sqrt(-2.0 * torch.log(u1))
    theta = 2.0 * math.pi * u2
    return r * torch.cos(theta), r * torch.sin(theta)


def float32_scalar(value: float, like: _Array, xp: ModuleType) -> Any:
    """A float32 scalar of the backend (so every product is a float32 product)."""
    if xp is np:
        return np.float32(value)
    return torch.tensor(value, dtype=torch.float32, device=like.device)


def sqrt32(v: _Array, xp: ModuleType) -> _Array:
    """Correctly rounded float32 sqrt. torch's CPU float32 sqrt is not always (off by one ulp
    where numpy's is exact); its float64 sqrt rounded to float32 is, since 53 >= 2 * 24 + 2."""
    if xp is np:
        return np.sqrt(v)
    return torch.sqrt(v.to(torch.float64)).to(torch.float32)

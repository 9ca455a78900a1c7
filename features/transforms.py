"""Decoding images once and turning uint8 batches into each encoder's input.

Images keep their native channel count after decoding (1 for greyscale, 3 otherwise), so
perturbations act on what was stored (Rician noise on a greyscale X-ray stays greyscale);
the encoder transform repeats a single channel to three afterwards.

Encoder transform (the same for every entry, with the entry's released numbers): scale to
[0, 1], resize the whole image to input_size x input_size (bilinear, antialiased when
shrinking; no crop, so a perturbation such as fov_crop is never undone), then normalise
with the entry's mean and std.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, UnidentifiedImageError

from crsbench.features.registry import EncoderEntry
from crsbench.ingest.images import npz_image, npz_member
from crsbench.ingest.types import InputError

_GREY_MODES = {"1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "I;16N", "F"}


def _hwc(pixels: np.ndarray, where: str) -> np.ndarray:
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.ndim != 3 or pixels.shape[2] not in (1, 3, 4):
        raise InputError(f"image {where} has unsupported shape {pixels.shape}")
    if pixels.shape[2] == 4:
        pixels = pixels[:, :, :3]
    return np.ascontiguousarray(pixels)


def _to_uint8(pixels: np.ndarray) -> np.ndarray:
    if pixels.dtype == np.uint8:
        return pixels
    if pixels.dtype in (np.uint16, np.int32, np.int64, np.uint32):
        top = 65535 if pixels.max(initial=0) > 255 else 255
        return np.round(pixels.astype(np.float64) * (255 / top)).clip(0, 255).astype(np.uint8)
    return np.round(np.clip(pixels.astype(np.float64), 0, 1) * 255).astype(np.uint8)


def decode_image(root: Path | str, rel_path: str) -> np.ndarray:
    """uint8 H x W x C (C = 1 or 3) of one dataset image."""
    if npz_member(rel_path) is not None:
        return _hwc(_to_uint8(np.asarray(npz_image(Path(root), rel_path))), rel_path)
    path = Path(root) / rel_path
    try:
        with Image.open(path) as img:
            if img.mode in _GREY_MODES:
                pixels = _to_uint8(np.asarray(img.convert("L") if img.mode in ("1", "LA")
                                              else img))
            else:
                pixels = np.asarray(img.convert("RGB"))
    except FileNotFoundError:
        raise InputError(f"image file not found: {path}") from None
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise InputError(f"cannot decode image {path}: {str(exc).splitlines()[0]}") from None
    return _hwc(pixels, rel_path)


def model_input(images: torch.Tensor, entry: EncoderEntry, dtype: torch.dtype) -> torch.Tensor:
    """uint8 [B, H, W, C] -> normalised [B, 3, S, S] in `dtype`, on the images' device."""
    x = images.permute(0, 3, 1, 2).to(torch.float32) / 255.0
    if x.shape[1] == 1:
        x = x.expand(-1, 3, -1, -1)
    size = entry.input_size
    if x.shape[2] != size or x.shape[3] != size:
        shrink = x.shape[2] > size or x.shape[3] > size
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False,
                          antialias=shrink)
    mean = torch.tensor(entry.mean, dtype=torch.float32, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(entry.std, dtype=torch.float32, device=x.device).view(1, 3, 1, 1)
    return ((x - mean) / std).to(dtype).contiguous()

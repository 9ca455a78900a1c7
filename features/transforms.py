"""Decoding images once and turning uint8 batches into each encoder's input.

Decoding is `crsbench.ingest.images.decode_pixels` (bit-depth scaling, EXIF rotation,
palettes: see there), the same decoder ingest validates with. Images keep their native
channel count after decoding (1 for greyscale, 3 otherwise), so perturbations act on what was stored
(Rician noise on a greyscale X-ray stays greyscale);
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

from crsbench.features.registry import EncoderEntry
from crsbench.ingest.images import decode_checked

# Extraction re-hashes each image it decodes against its ingest SHA-256 (features.extraction_chunks);
# only the extraction benchmark turns this off, to measure its cost against extraction without it.
REHASH = True


def decode_image(root: Path | str, rel_path: str, sha256: str = "") -> np.ndarray:
    """uint8 H x W x C (C = 1 or 3) of one dataset image, by the ingest stage's one decoder; with
    `sha256` (the one ingest recorded) a file whose bytes changed since is an InputError naming it."""
    return decode_checked(root, rel_path, sha256)


def model_input(images: torch.Tensor, entry: EncoderEntry, dtype: torch.dtype) -> torch.Tensor:
    """uint8 [B, H, W, C] -> normalised [B, 3, S, S] in `dtype`, on the images' device."""
    # One converting copy straight into NCHW, scaled in place: same values as `x / 255`, and a
    # contiguous input interpolates faster than the channels-last view of the uint8 batch.
    x = images.permute(0, 3, 1, 2).to(torch.float32, memory_format=torch.contiguous_format).div_(255.0)
    size = entry.input_size
    if x.shape[2] != size or x.shape[3] != size:
        shrink = x.shape[2] > size or x.shape[3] > size
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=shrink)
    if x.shape[1] == 1:  # after resizing: channels resize independently, so one is a third of the work
        x = x.expand(-1, 3, -1, -1)
    mean = torch.tensor(entry.mean, dtype=torch.float32, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(entry.std, dtype=torch.float32, device=x.device).view(1, 3, 1, 1)
    return ((x - mean) / std).to(dtype).contiguous()

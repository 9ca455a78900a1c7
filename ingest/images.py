"""Reading image bytes: files under the dataset root, or members of a MedMNIST .npz.

A relative path `name.npz#train_images/17` names image 17 of array `train_images` in
`name.npz`; anything else is a file path. Every stage opens images through
`open_image`, so the feature store never needs to know the source layout.
"""

from __future__ import annotations

import functools
import hashlib
import io
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from crsbench.ingest.types import InputError

NPZ_SEPARATOR = "#"


def npz_member(rel_path: str) -> tuple[str, str, int] | None:
    """('file.npz', 'train_images', 17) for an npz member path, else None."""
    if NPZ_SEPARATOR not in rel_path:
        return None
    file, member = rel_path.split(NPZ_SEPARATOR, 1)
    key, _, index = member.rpartition("/")
    return file, key, int(index)


@functools.lru_cache(maxsize=8)
def _npz_array(path: str, key: str) -> np.ndarray:
    with np.load(path, allow_pickle=False) as archive:
        return np.asarray(archive[key])


def npz_image(root: Path, rel_path: str) -> np.ndarray:
    member = npz_member(rel_path)
    assert member is not None
    file, key, index = member
    return _npz_array(str(Path(root) / file), key)[index]


def check_image(root: Path, rel_path: str) -> str:
    """Decode the image once to validate it; returns the SHA-256 of its bytes.

    For npz members the bytes are the image's uint8 array in C order.
    """
    if npz_member(rel_path) is not None:
        pixels = np.ascontiguousarray(npz_image(root, rel_path))
        return hashlib.sha256(pixels.tobytes()).hexdigest()
    path = Path(root) / rel_path
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"image file not found: {rel_path}") from None
    except OSError as exc:
        raise InputError(f"cannot read image {rel_path}: {exc.strerror or exc}") from None
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            if img.width < 1 or img.height < 1:
                raise InputError(f"image {rel_path} is empty")
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise InputError(f"corrupt or unreadable image {rel_path}: {str(exc).splitlines()[0]}") from None
    return hashlib.sha256(data).hexdigest()


def open_image(root: Path | str, rel_path: str, mode: str = "RGB") -> Image.Image:
    """The decoded image (converted to `mode`, RGB by default)."""
    if npz_member(rel_path) is not None:
        return Image.fromarray(npz_image(Path(root), rel_path)).convert(mode)
    with Image.open(Path(root) / rel_path) as img:
        return img.convert(mode)

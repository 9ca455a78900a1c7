"""Reading image bytes: files under the dataset root, or members of a MedMNIST .npz.

A relative path `name.npz#train_images/17` names image 17 of array `train_images` in
`name.npz`; anything else is a file path. Every stage opens images through
`decode_pixels` (or `open_image`), so the feature store never needs to know the source
layout and every stage sees the same pixels.
"""

from __future__ import annotations

import functools
import hashlib
import io
import zipfile
import zlib
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from crsbench.core import InputError
from crsbench.ingest.source import require_regular_file

NPZ_SEPARATOR = "#"


def npz_member(rel_path: str) -> tuple[str, str, int] | None:
    """('file.npz', 'train_images', 17) for an npz member path, else None."""
    if NPZ_SEPARATOR not in rel_path:
        return None
    file, member = rel_path.split(NPZ_SEPARATOR, 1)
    key, _, index = member.rpartition("/")
    if not file.lower().endswith(".npz") or not key or not index.isdigit():
        return None  # e.g. a manifest image named 'scan#2.png'
    return file, key, int(index)


def read_npz(path: Path, keys: list[str]) -> dict[str, np.ndarray]:
    """The named arrays of an .npz; an empty, truncated, pickled or non-npz file is an InputError."""
    name = Path(path).name
    require_regular_file(Path(path), name)
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not hasattr(archive, "files"):
                raise InputError(f"{name}: a single .npy array, not an .npz archive")
            missing = [k for k in keys if k not in archive.files]
            if missing:
                raise InputError(
                    f"{name}: missing required array {missing[0]!r} (found: {', '.join(archive.files) or 'none'})"
                )
            return {k: np.asarray(archive[k]) for k in keys}
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError(f"{name}: file not found") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, KeyError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{name}: cannot read as .npz (empty, truncated or not numeric): {detail}") from None


@functools.lru_cache(maxsize=8)
def _npz_array(path: str, key: str) -> np.ndarray:
    return read_npz(Path(path), [key])[key]


def npz_image(root: Path, rel_path: str) -> np.ndarray:
    member = npz_member(rel_path)
    assert member is not None
    file, key, index = member
    array = _npz_array(str(Path(root) / file), key)
    if not 0 <= index < len(array):
        raise InputError(f"{rel_path}: no image {index} in {key} ({len(array)} images)")
    result: np.ndarray = array[index]
    return result


# -- the one decoder ---------------------------------------------------------------------------
#
# Every stage sees an image as uint8 H x W x C with C = 1 (greyscale) or 3 (colour):
# ingest validation, extraction (`crsbench.features.transforms.decode_image`), the
# prompting analysis and `open_image` all call `decode_pixels`, so the pixels an analyst
# reads are the pixels the encoders saw.
#
# Scaling is by the container's bit depth, never by the image's own range, so a dark
# image stays dark: 16-bit greyscale (PNG/TIFF `I;16`) is x * 255 / 65535, which is
# within one grey level of x >> 8; 32-bit integer images (`I`) holding values up to 65535
# are taken as 16-bit (the usual way 16-bit data reaches that mode), larger as 32-bit;
# 32-bit float images (`F`) must hold intensities in [0, 1] (anything else, or NaN, is
# refused rather than clipped). 12-bit data stored in a 16-bit container therefore looks
# 16 times darker than its 12-bit rendering; rescale such files before ingesting.
# EXIF orientation is applied; palette images (with or without transparency) become RGB;
# alpha channels are dropped; two-channel and other channel counts are refused.

_GREY_16 = {"I;16", "I;16B", "I;16L", "I;16N"}


def _scaled(pixels: np.ndarray, where: str) -> np.ndarray:
    """Any supported dtype -> uint8, by bit depth (see the notes above)."""
    kind = pixels.dtype.kind
    if pixels.dtype == np.uint8:
        return pixels
    if pixels.dtype == np.bool_:
        return pixels.astype(np.uint8) * 255
    if kind in "ui":
        if kind == "i" and pixels.size and int(pixels.min()) < 0:
            raise InputError(f"image {where} has negative pixel values ({pixels.dtype})")
        bits = pixels.dtype.itemsize * 8
        if bits > 16 and (not pixels.size or int(pixels.max()) <= 65535):
            bits = 16
        top = float(2**bits - 1)
        return np.round(pixels.astype(np.float64) * (255.0 / top)).astype(np.uint8)
    if kind == "f":
        values = pixels.astype(np.float64)
        if not np.isfinite(values).all() or (values.size and (values.min() < 0 or values.max() > 1)):
            raise InputError(
                f"image {where} is floating point with values outside [0, 1] "
                f"(or NaN); rescale it to [0, 1] or save it as 8/16-bit"
            )
        return np.round(values * 255.0).astype(np.uint8)
    raise InputError(f"image {where} has unsupported pixel type {pixels.dtype}")


def _hwc(pixels: np.ndarray, where: str) -> np.ndarray:
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.ndim != 3 or pixels.shape[2] not in (1, 3, 4):
        raise InputError(f"image {where} has unsupported shape {pixels.shape} (expected H x W with 1, 3 or 4 channels)")
    if pixels.shape[0] < 1 or pixels.shape[1] < 1:
        raise InputError(f"image {where} is empty ({pixels.shape[0]} x {pixels.shape[1]} pixels)")
    if pixels.shape[2] == 4:
        pixels = pixels[:, :, :3]
    return np.ascontiguousarray(pixels)


def _from_pil(img: Image.Image, where: str) -> np.ndarray:
    img = ImageOps.exif_transpose(img) or img
    mode = img.mode
    if mode in _GREY_16:
        pixels = np.asarray(img).astype(np.uint16)
    elif mode in ("I", "F", "L"):
        pixels = np.asarray(img)
    elif mode in ("1", "LA", "La"):
        pixels = np.asarray(img.convert("L"))
    elif mode in ("P", "PA"):
        pixels = np.asarray(img.convert("RGBA"))[:, :, :3]
    else:
        pixels = np.asarray(img.convert("RGB"))
    return _hwc(_scaled(pixels, where), where)


def decode_pixels(root: Path | str, rel_path: str) -> np.ndarray:
    """uint8 H x W x C (C = 1 or 3) of one dataset image: the one decoder every stage uses."""
    if npz_member(rel_path) is not None:
        return _hwc(_scaled(np.asarray(npz_image(Path(root), rel_path)), rel_path), rel_path)
    return _decode_bytes(_read(Path(root), rel_path), rel_path)


def decode_checked(root: Path | str, rel_path: str, sha256: str) -> np.ndarray:
    """`decode_pixels`, from bytes whose SHA-256 must still be `sha256` (the one ingest recorded;
    the same digest as `check_image`); a changed image is an InputError naming it."""
    if not sha256:
        return decode_pixels(root, rel_path)
    if npz_member(rel_path) is not None:
        array = np.ascontiguousarray(npz_image(Path(root), rel_path))
        _same_hash(hashlib.sha256(array.tobytes()).hexdigest(), sha256, rel_path)
        return _hwc(_scaled(array, rel_path), rel_path)
    data = _read(Path(root), rel_path)
    _same_hash(hashlib.sha256(data).hexdigest(), sha256, rel_path)
    return _decode_bytes(data, rel_path)


def _same_hash(actual: str, expected: str, rel_path: str) -> None:
    if actual != expected:
        raise InputError(
            f"image {rel_path} changed since ingest (SHA-256 {actual[:12]}, ingested as {expected[:12]}); "
            f"restore the file, or re-ingest the dataset with --replace"
        )


def _read(root: Path, rel_path: str) -> bytes:
    require_regular_file(root / rel_path, f"image {rel_path}")
    try:
        return (root / rel_path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"image file not found: {rel_path}") from None
    except OSError as exc:
        raise InputError(f"cannot read image {rel_path}: {exc.strerror or exc}") from None


def _decode_bytes(data: bytes, rel_path: str) -> np.ndarray:
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            return _from_pil(img, rel_path)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise InputError(f"corrupt or unreadable image {rel_path}: {str(exc).splitlines()[0]}") from None


def check_image(root: Path, rel_path: str) -> str:
    """Decode the image once, as extraction will, to validate it; returns the SHA-256 of its bytes.

    For npz members the bytes are the image's array in C order.
    """
    return check_image_size(root, rel_path)[0]


def check_image_size(root: Path, rel_path: str) -> tuple[str, tuple[int, int]]:
    """`check_image`'s SHA-256, and the decoded image's (width, height) as the encoders see it."""
    if npz_member(rel_path) is not None:
        raw = np.ascontiguousarray(npz_image(root, rel_path))
        pixels = decode_pixels(root, rel_path)
        digest = hashlib.sha256(raw.tobytes()).hexdigest()
    else:
        data = _read(Path(root), rel_path)
        pixels = _decode_bytes(data, rel_path)
        digest = hashlib.sha256(data).hexdigest()
    return digest, (int(pixels.shape[1]), int(pixels.shape[0]))


def open_image(root: Path | str, rel_path: str, mode: str = "RGB") -> Image.Image:
    """The decoded image as the encoders see it (see `decode_pixels`), converted to `mode`."""
    pixels = decode_pixels(root, rel_path)
    img = Image.fromarray(pixels[:, :, 0] if pixels.shape[2] == 1 else pixels)
    return img if img.mode == mode else img.convert(mode)

"""Properties of an image file read from its header alone, never its pixels (METHODS.md §19).

`file_properties(root, rel_path)` opens the file with Pillow, which parses the header (size,
mode, format, JPEG quantisation tables and sampling factors, EXIF and ICC chunks) without
decoding the image data, and returns what a shortcut could hide in: bytes on disk, width,
height, aspect ratio, mode, bit depth, format, a JPEG quality estimate from the luminance
quantisation table, chroma subsampling, and whether EXIF or an ICC profile is present.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from PIL import Image, JpegImagePlugin, UnidentifiedImageError

from crsbench.core import InputError
from crsbench.ingest.images import npz_member

# Bits per sample of each Pillow mode (the sample depth the file stores).
_BITS = {"1": 1, "L": 8, "P": 8, "LA": 8, "PA": 8, "RGB": 8, "RGBA": 8, "CMYK": 8, "YCbCr": 8, "LAB": 8}
_BITS |= {"I;16": 16, "I;16B": 16, "I;16L": 16, "I;16N": 16, "I": 32, "F": 32}
# The IJG (libjpeg) standard luminance quantisation table at quality 50 (only its sum is used,
# so the order of the entries does not matter); libjpeg encoders scale it by the quality.
_IJG_LUMA = (
    16, 11, 12, 14, 12, 10, 16, 14, 13, 14, 18, 17, 16, 19, 24, 40,
    26, 24, 22, 22, 24, 49, 35, 37, 29, 40, 58, 51, 61, 60, 57, 51,
    56, 55, 64, 72, 92, 78, 64, 68, 87, 69, 55, 56, 80, 109, 81, 87,
    95, 98, 103, 104, 103, 62, 77, 113, 121, 112, 100, 120, 92, 101, 103, 99,
)  # fmt: skip
_SAMPLING = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}


@dataclasses.dataclass(frozen=True)
class FileProperties:
    bytes: int
    width: int
    height: int
    aspect: float  # width / height
    mode: str
    bit_depth: int
    format: str
    jpeg_quality: float  # NaN unless JPEG
    chroma_subsampling: str  # 4:4:4, 4:2:2, 4:2:0, other or none (not JPEG / greyscale)
    exif: bool
    icc: bool


def jpeg_quality(tables: dict[int, list[int]] | None) -> float:
    """The IJG quality (1-100) whose scaled standard luminance table is closest to table 0.

    libjpeg scales the standard table by s = 5000 / q (q < 50) or 200 - 2 q (q >= 50) percent;
    inverting the mean scale of the stored table gives q. NaN without a luminance table.
    """
    if not tables or 0 not in tables:
        return math.nan
    table = list(tables[0])[: len(_IJG_LUMA)]
    scale = 100.0 * sum(table) / sum(_IJG_LUMA[: len(table)])
    quality = (200.0 - scale) / 2.0 if scale <= 100.0 else 5000.0 / scale
    return float(min(100.0, max(1.0, round(quality, 1))))


def _subsampling(img: Image.Image) -> str:
    if img.format != "JPEG" or img.mode in ("L", "1"):
        return "none"
    code = JpegImagePlugin.get_sampling(img)
    return _SAMPLING.get(code, "other")


def file_properties(root: Path | str, rel_path: str) -> FileProperties:
    """The header properties of one image file; a missing or unreadable file is an InputError."""
    if npz_member(rel_path) is not None:
        raise InputError(f"{rel_path} is an array in an .npz archive, not an image file: it has no file properties")
    path = Path(root) / rel_path
    try:
        size = path.stat().st_size
        with Image.open(path) as img:  # parses the header only: no pixel is decoded
            width, height = img.size
            return FileProperties(
                bytes=size,
                width=width,
                height=height,
                aspect=width / height if height else math.nan,
                mode=img.mode,
                bit_depth=_BITS.get(img.mode, 8),
                format=str(img.format or "unknown"),
                jpeg_quality=jpeg_quality(getattr(img, "quantization", None)) if img.format == "JPEG" else math.nan,
                chroma_subsampling=_subsampling(img),
                exif=bool(img.info.get("exif")),
                icc=bool(img.info.get("icc_profile")),
            )
    except FileNotFoundError:
        raise InputError(f"image file not found: {path}") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise InputError(f"cannot read the header of image {path}: {str(exc).splitlines()[0]}") from None

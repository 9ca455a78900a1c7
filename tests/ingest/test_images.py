"""The one image decoder, on real files written by Pillow: every path sees the same pixels."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from PIL import Image

from crsbench.analyses.experiments.e5_prompting import _image as prompting_image
from crsbench.core import InputError
from crsbench.features import get_encoder
from crsbench.features.loaders import build_model
from crsbench.features.transforms import decode_image, model_input
from crsbench.ingest import open_image
from crsbench.ingest.images import check_image, decode_pixels
from crsbench.ingest.types import Dataset, Task


def _full_range_16bit(h: int = 48, w: int = 40) -> np.ndarray:
    # Every 16-bit level class and strong structure: a ramp plus a disc, full range 0..65535.
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:h, 0:w]
    ramp = (xx + yy) / (h + w - 2)
    disc = ((yy - h / 2) ** 2 + (xx - w / 2) ** 2 < (h / 4) ** 2) * 0.3
    noise = rng.uniform(0, 0.05, (h, w))
    img = np.clip(ramp * 0.7 + disc + noise, 0, 1)
    img[0, 0], img[-1, -1] = 0.0, 1.0
    return np.round(img * 65535).astype(np.uint16)


def _all_paths(root, name: str) -> list[np.ndarray]:
    """The pixels of one file through every reader a user or stage has."""
    ds = Dataset(
        name="d",
        adapter="manifest",
        root=root,
        task=Task.MULTICLASS,
        label_names=["a"],
        images=__import__("pandas").DataFrame({"rel_path": [name]}),
        labels=np.zeros(1, dtype=np.int64),
        fractions=None,
    )
    check_image(root, name)  # ingest validation decodes with the same decoder
    return [
        decode_pixels(root, name)[:, :, 0].astype(int),
        decode_image(root, name)[:, :, 0].astype(int),
        np.asarray(open_image(root, name, mode="L")).astype(int),
        np.asarray(open_image(root, name))[:, :, 0].astype(int),
        prompting_image(ds, 0)[:, :, 0].astype(int),
    ]


def test_16bit_png_and_its_8bit_twin_agree_through_every_path(tmp_path):
    x16 = _full_range_16bit()
    Image.fromarray(x16).save(tmp_path / "a16.png")
    Image.fromarray((x16 >> 8).astype(np.uint8)).save(tmp_path / "a8.png")
    assert Image.open(tmp_path / "a16.png").mode == "I;16"
    eight = _all_paths(tmp_path, "a8.png")
    for sixteen, twin in zip(_all_paths(tmp_path, "a16.png"), eight, strict=True):
        assert np.abs(sixteen - twin).max() <= 1
    assert np.array_equal(eight[0], (x16 >> 8).astype(int))
    # Bit depth, not the image's range: 16-bit pixels all below 256 decode near black.
    Image.fromarray(np.full((8, 8), 200, dtype=np.uint16)).save(tmp_path / "dark.png")
    assert decode_pixels(tmp_path, "dark.png").max() <= 1


def test_16bit_png_and_8bit_twin_give_the_same_features(tmp_path):
    x16 = _full_range_16bit(64, 64)
    Image.fromarray(x16).save(tmp_path / "a16.png")
    Image.fromarray((x16 >> 8).astype(np.uint8)).save(tmp_path / "a8.png")
    entry = dataclasses.replace(get_encoder("tiny-convnext"), input_size=32)
    torch.manual_seed(0)
    model = build_model(entry).eval()
    feats = []
    with torch.no_grad():
        for name in ("a16.png", "a8.png"):
            pixels = torch.from_numpy(decode_image(tmp_path, name).copy())[None]
            out = model(model_input(pixels, entry, torch.float32))
            feats.append(out.reshape(-1).double())
    cosine = torch.nn.functional.cosine_similarity(feats[0], feats[1], dim=0).item()
    assert cosine >= 0.999


def test_float_and_npz_16bit_images_are_scaled_by_bit_depth(tmp_path):
    x16 = _full_range_16bit()
    Image.fromarray((x16 / 65535.0).astype(np.float32)).save(tmp_path / "f.tif")
    assert Image.open(tmp_path / "f.tif").mode == "F"
    expected = (x16 >> 8).astype(int)
    assert np.abs(decode_pixels(tmp_path, "f.tif")[:, :, 0].astype(int) - expected).max() <= 1
    np.savez(tmp_path / "m.npz", imgs=x16[None])
    assert np.abs(decode_pixels(tmp_path, "m.npz#imgs/0")[:, :, 0].astype(int) - expected).max() <= 1
    Image.fromarray((x16 / 65535.0 * 4).astype(np.float32)).save(tmp_path / "hu.tif")
    with pytest.raises(InputError, match=r"hu\.tif is floating point with values outside \[0, 1\]"):
        check_image(tmp_path, "hu.tif")


def test_palette_with_transparency_and_exif_rotation(tmp_path):
    pal = Image.new("P", (6, 4))
    pal.putpalette([255, 0, 0, 0, 0, 255] + [0] * 762)
    pal.putdata([0, 1] * 12)
    pal.info["transparency"] = 1
    pal.save(tmp_path / "p.png", transparency=1)
    rgb = decode_pixels(tmp_path, "p.png")
    assert rgb.shape == (4, 6, 3)
    assert rgb[0, 0].tolist() == [255, 0, 0] and rgb[0, 1].tolist() == [0, 0, 255]

    # A 30 x 20 landscape, top-left quarter white, stored with EXIF orientation 6 (rotate 90 CW).
    base = np.zeros((20, 30), dtype=np.uint8)
    base[:10, :15] = 255
    img = Image.fromarray(base)
    exif = img.getexif()
    exif[0x0112] = 6
    img.save(tmp_path / "r.jpg", exif=exif, quality=95)
    seen = decode_pixels(tmp_path, "r.jpg")[:, :, 0]
    upright = np.rot90(base, k=-1)  # what a viewer shows
    assert seen.shape == upright.shape == (30, 20)
    assert np.abs(seen.astype(int) - upright.astype(int)).mean() < 8
    assert np.array_equal(np.asarray(open_image(tmp_path, "r.jpg", mode="L")), seen)


@pytest.mark.parametrize(
    "shape,match", [((4, 0, 5), "is empty"), ((2, 5, 5, 5), "unsupported shape"), ((2, 5, 5, 2), "unsupported shape")]
)
def test_bad_npz_shapes_are_refused_by_the_decoder(tmp_path, shape, match):
    np.savez(tmp_path / "m.npz", imgs=np.zeros(shape, dtype=np.uint8))
    with pytest.raises(InputError, match=match):
        check_image(tmp_path, "m.npz#imgs/0")

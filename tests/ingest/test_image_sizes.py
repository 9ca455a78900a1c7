"""Mixed image sizes and aspect ratios are accepted, and said once at ingest: the counts per
size, the number of aspect ratios and one example file."""

from __future__ import annotations

import warnings

import numpy as np
from PIL import Image

from crsbench.cli import main
from crsbench.ingest import ingest
from crsbench.ingest.sizes import mixed_sizes_note


def _folder(root, sizes):
    rng = np.random.default_rng(0)
    for i, (w, h) in enumerate(sizes):
        folder = root / "ab"[i % 2]
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (h, w), dtype=np.uint8)).save(folder / f"{i:03d}.png")
    return root


def test_mixed_sizes_warn_once_with_counts_and_an_example(tmp_path, capsys):
    sizes = [(32, 32)] * 40 + [(48, 32)] * 6 + [(16, 16)] * 4  # 3 sizes, 2 aspect ratios
    root = _folder(tmp_path / "mixed", sizes)
    assert main(["ingest", "folder", str(root), "--name", "mixed", "--db", str(tmp_path / "w.duckdb")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1, lines
    assert "3 sizes among 50 images (width x height px: 32x32: 40, 48x32: 6, 16x16: 4)" in lines[0]
    assert "2 aspect ratios" in lines[0]
    assert "e.g. a/040.png is 48x32, most are 32x32" in lines[0]  # the first file of another size

    same = _folder(tmp_path / "same", [(32, 32)] * 20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ingest("folder", same, "same")  # one size: no warning


def test_one_aspect_ratio_is_said_and_long_lists_are_cut():
    assert mixed_sizes_note({"a.png": (8, 8), "b.png": (8, 8)}) is None
    note = mixed_sizes_note({"a.png": (8, 8), "b.png": (16, 16)})
    assert note is not None and "2 sizes among 2 images" in note and "one aspect ratio" in note
    many = {f"{i}.png": (10 + i, 10) for i in range(5)}
    note = mixed_sizes_note(many)
    assert note is not None and "2 more sizes" in note and "5 aspect ratios" in note

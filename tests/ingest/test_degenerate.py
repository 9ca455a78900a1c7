"""Degenerate datasets at ingest (issue 34 point 4): one class is refused, byte-identical images
in two splits are refused naming the files, or grouped into one split with -o duplicates=group."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from PIL import Image

from crsbench.cli import main
from crsbench.core import InputError
from crsbench.ingest import ingest
from crsbench.ingest.duplicates import split_groups

RNG = np.random.default_rng(3)


def _manifest(folder: Path, labels: list[str], copies: int = 0) -> Path:
    """Distinct random images, then `copies` byte-identical copies of img/0.png (label of row 0)."""
    (folder / "img").mkdir()
    paths = []
    for i in range(len(labels)):
        Image.fromarray(RNG.integers(0, 255, (8, 8), dtype=np.uint8)).save(folder / "img" / f"{i}.png")
        paths.append(f"img/{i}.png")
    for j in range(copies):
        shutil.copyfile(folder / "img" / "0.png", folder / "img" / f"copy{j}.png")
        paths.append(f"img/copy{j}.png")
    frame = pd.DataFrame({"path": paths, "label": labels + [labels[0]] * copies})
    frame.to_csv(folder / "manifest.csv", index=False)
    return folder / "manifest.csv"


def _cli(args: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(args)
    return rc, capsys.readouterr().err


def test_a_dataset_of_one_class_is_refused_naming_dataset_and_class(tmp_path, capsys):
    path = _manifest(tmp_path, ["nevus"] * 30)
    db = tmp_path / "w.duckdb"
    rc, err = _cli(
        ["ingest", "manifest", str(path), "--name", "mono", "-o", "task=multiclass", "--db", str(db)], capsys
    )
    assert rc == 1
    assert err.strip() == (
        "error: dataset 'mono' has one class ('nevus' on all 30 images); a probe needs at least two classes to discriminate"
    )
    assert not db.exists() or "mono" not in duckdb.connect(str(db), read_only=True).sql("from datasets").df().values


def test_a_multilabel_label_positive_everywhere_is_refused(tmp_path):
    (tmp_path / "img").mkdir()
    for i in range(30):
        Image.fromarray(RNG.integers(0, 255, (8, 8), dtype=np.uint8)).save(tmp_path / "img" / f"{i}.png")
    pd.DataFrame(
        {"path": [f"img/{i}.png" for i in range(30)], "edema": 1, "effusion": [i % 2 for i in range(30)]}
    ).to_csv(tmp_path / "manifest.csv", index=False)
    with pytest.raises(InputError, match=r"dataset 'ml': label 'edema' is positive on all 30 images"):
        ingest("manifest", tmp_path, "ml", task="multilabel")


def test_identical_images_across_splits_are_refused_or_grouped(tmp_path, capsys):
    path = _manifest(tmp_path, [["a", "b"][i % 2] for i in range(60)], copies=20)
    db = tmp_path / "w.duckdb"
    args = ["ingest", "manifest", str(path), "--name", "dup", "-o", "task=multiclass", "--db", str(db)]
    rc, err = _cli(args, capsys)
    assert rc == 1 and err.count("\n") == 1
    assert "error: dataset 'dup': byte-identical images (SHA-256 " in err
    assert "img/0.png (" in err and "-o duplicates=group" in err
    assert not db.exists() or duckdb.connect(str(db), read_only=True).sql(
        "select count(*) from datasets"
    ).fetchone() == (0,)

    rc, err = _cli([*args, "-o", "duplicates=group"], capsys)
    assert rc == 0, err
    con = duckdb.connect(str(db), read_only=True)
    images = con.sql("select rel_path, sha256, group_id, split from images where dataset_id = 'dup'").df()
    copies = images[images["sha256"] == images.loc[images["rel_path"] == "img/0.png", "sha256"].item()]
    assert len(copies) == 21 and copies["split"].nunique() == 1  # one content, one split
    assert set(copies["group_id"]) == {"img/0.png", *(f"img/copy{j}.png" for j in range(20))}  # ids kept
    assert images.groupby("sha256")["split"].nunique().max() == 1
    assert json.loads(con.sql("select options from datasets").fetchone()[0])["duplicates"] == "group"


def test_split_groups_joins_groups_through_shared_content():
    # g1 and g2 share content x, g2 and g3 share y: one joined group named by its smallest member
    assert split_groups(["g3", "g1", "g2", "g2", "g4"], ["y", "x", "x", "y", "z"]) == ["g1", "g1", "g1", "g1", "g4"]
    assert split_groups(["a", "b"], ["", ""]) == ["a", "b"]  # no hash, no join

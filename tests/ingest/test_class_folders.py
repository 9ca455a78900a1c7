"""Labelled class folders (`crsbench ingest folder DIR`), as torchvision's ImageFolder reads them:
scikit-learn's digits written as PNGs into root/<class>/ and root/<split>/<class>/.

Expectations come from the digits' own targets and the folders the test wrote, not from the
adapter's code."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from sklearn.datasets import load_digits

from crsbench.cli import main
from crsbench.cli.output import console
from crsbench.core import CrsbenchError
from crsbench.ingest import Task, ingest

N = 400  # the first 400 digits: about 40 per class, ingested in well under a second


@pytest.fixture(scope="module")
def digits():
    data = load_digits()
    return (data.images[:N] * 255 / 16).astype(np.uint8), data.target[:N]


def _write(root: Path, images: np.ndarray, targets: np.ndarray, split_of=None) -> Path:
    for i, (pixels, target) in enumerate(zip(images, targets, strict=True)):
        folder = root / (split_of(i) if split_of else "") / str(target)
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(folder / f"{i:04d}.png")
    return root


def _index(rel_path: str) -> int:
    return int(Path(rel_path).stem)


def test_class_folders_ingest_with_the_folder_names_as_labels(digits, tmp_path):
    images, targets = digits
    root = _write(tmp_path / "digits", images, targets)
    (root / "README.txt").write_text("not an image\n")
    (root / ".ipynb_checkpoints").mkdir()  # a hidden folder is no class
    Image.fromarray(images[0]).save(root / ".ipynb_checkpoints" / "x.png")
    ds = ingest("folder", root, "digits")
    assert ds.task is Task.MULTICLASS
    assert ds.label_names == [str(k) for k in range(10)]  # sorted folder names
    assert len(ds.images) == N
    for row, rel in enumerate(ds.images["rel_path"]):
        folder = rel.split("/")[0]
        assert ds.label_names[ds.labels[row]] == folder == str(targets[_index(rel)])
    split_sets = {s: set(ds.images.loc[ds.images["split"] == s, "image_id"]) for s in ("train", "calib", "test")}
    assert all(split_sets.values())
    assert not (split_sets["train"] & split_sets["calib"] or split_sets["train"] & split_sets["test"])
    assert not split_sets["calib"] & split_sets["test"]
    assert sum(map(len, split_sets.values())) == N
    for s, ids in split_sets.items():  # every class reaches every split (stratified)
        assert {ds.labels[ds.images.index[ds.images["image_id"] == i][0]] for i in ids} == set(range(10)), s
    # Seeded: the same folder gives the same splits.
    assert ingest("folder", root, "again").images["split"].tolist() == ds.images["split"].tolist()


def test_split_folders_are_the_splits_and_a_missing_one_is_carved_from_train(digits, tmp_path):
    images, targets = digits
    three = _write(tmp_path / "three", images, targets, lambda i: ("train", "val", "test")[i % 3])
    ds = ingest("folder", three, "three")
    want = {"train": "train", "val": "calib", "test": "test"}
    for rel, split, image_id in ds.images[["rel_path", "split", "image_id"]].itertuples(index=False):
        assert split == want[rel.split("/")[0]] and image_id == rel
    for row, rel in enumerate(ds.images["rel_path"]):
        assert ds.label_names[ds.labels[row]] == rel.split("/")[1] == str(targets[_index(rel)])

    two = _write(tmp_path / "two", images, targets, lambda i: "test" if i % 4 == 0 else "train")
    ds = ingest("folder", two, "two")
    by_split = ds.images.groupby("split")["rel_path"].apply(lambda s: {p.split("/")[0] for p in s}).to_dict()
    assert by_split == {"train": {"train"}, "calib": {"train"}, "test": {"test"}}
    assert (ds.images["split"] == "test").sum() == sum(1 for i in range(N) if i % 4 == 0)
    assert 0.2 < (ds.images["split"] == "calib").sum() / (ds.images["split"] != "test").sum() < 0.3  # 75 / 25


def test_class_folder_cli_and_mistakes(digits, tmp_path, capsys):
    images, targets = digits
    root = _write(tmp_path / "digits", images[:200], targets[:200])
    db = tmp_path / "w.duckdb"
    assert main(["ingest", "folder", str(root), "--name", "digits", "--db", str(db)]) == 0
    assert "ingested digits (folder, multiclass, 10 labels): 200 images" in capsys.readouterr().out
    console.configure(json_mode=True)
    try:
        assert main(["--json", "adapters"]) == 0
    finally:
        console.configure()
    folder = next(a for a in json.loads(capsys.readouterr().out)["adapters"] if a["adapter"] == "folder")
    assert folder["options"] == "labels=folders" and "ImageFolder" in folder["layout"]

    Image.fromarray(images[0]).save(root / "stray.png")
    with pytest.raises(CrsbenchError, match=r"stray\.png: an image directly under .*--unlabeled") as info:
        ingest("folder", root, "x")
    assert "\n" not in str(info.value)
    (root / "stray.png").unlink()
    (root / "train").mkdir()
    Image.fromarray(images[0]).save(root / "train" / "x.png")
    with pytest.raises(CrsbenchError, match=r"split folders \(train\) beside other folders \(0, 1, 2\)"):
        ingest("folder", root, "x")

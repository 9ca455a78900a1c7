"""Labels validated at the edge, and every hostile input a one-line exit 1 (issue 17 items 5-7)."""

from __future__ import annotations

import time
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from crsbench.cli import main
from crsbench.core import InputError
from crsbench.ingest import ingest

RNG = np.random.default_rng(0)


def _images(folder: Path, n: int) -> list[str]:
    (folder / "img").mkdir(exist_ok=True)
    paths = []
    for i in range(n):
        Image.fromarray(RNG.integers(0, 255, (8, 8), dtype=np.uint8)).save(folder / "img" / f"{i}.png")
        paths.append(f"img/{i}.png")
    return paths


def _manifest(folder: Path, labels: list[str], **extra: list[str]) -> Path:
    frame = pd.DataFrame({"path": _images(folder, len(labels)), "label": labels, **extra})
    frame.to_csv(folder / "manifest.csv", index=False)
    return folder / "manifest.csv"


def _cli(args: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(args)
    err = capsys.readouterr().err
    return rc, " ".join(err.split())


def test_spellings_of_one_label_are_one_class(tmp_path):
    nfc = unicodedata.normalize("NFC", "névus")
    nfd = unicodedata.normalize("NFD", "névus")
    assert nfc != nfd
    spellings = [nfc, nfd, f" {nfc}", f"{nfc}\u200b", "mole", " mole "]
    path = _manifest(tmp_path, [spellings[i % 6] for i in range(60)])
    ds = ingest("manifest", path, "m", task="multiclass")
    assert ds.label_names == ["mole", nfc]
    assert np.bincount(ds.labels).tolist() == [20, 40]


@pytest.mark.parametrize("missing", ["nan", "NaN", "", "NA", "null"])
def test_a_missing_label_is_refused_not_a_class(tmp_path, missing):
    labels = [["a", "b"][i % 2] for i in range(30)]
    labels[7] = missing
    path = _manifest(tmp_path, labels)
    with pytest.raises(InputError, match=r"manifest\.csv: line 9: missing label"):
        ingest("manifest", path, "m", task="multiclass")
    ds = ingest("manifest", path, "m", task="multiclass", skip_bad=True)
    assert ds.label_names == ["a", "b"] and ds.n_images == 29


def test_missing_multilabel_cells_refused_or_zeros_when_asked(tmp_path):
    paths = _images(tmp_path, 40)
    a = [str(i % 2) for i in range(40)]
    b = [str(int(i % 3 == 0)) for i in range(40)]
    a[5] = "nan"
    pd.DataFrame({"path": paths, "a": a, "b": b}).to_csv(tmp_path / "m.csv", index=False)
    with pytest.raises(InputError, match=r"line 7: malformed label value 'nan' in column 'a'"):
        ingest("manifest", tmp_path / "m.csv", "m", task="multilabel")
    ds = ingest("manifest", tmp_path / "m.csv", "m", task="multilabel", missing="zeros")
    row = ds.images.index[ds.images["rel_path"] == "img/5.png"][0]
    assert ds.labels[row].tolist() == [0, 0]


def test_a_class_that_cannot_reach_every_split_is_refused_or_merged(tmp_path):
    labels = [["a", "b"][i % 2] for i in range(40)] + ["r1", "r2", "r3", "r3", "r4"]
    path = _manifest(tmp_path, labels)
    with pytest.raises(InputError, match=r"class 'r1' has no example in .*3 more like it.*rare_classes=merge"):
        ingest("manifest", path, "m", task="multiclass")
    ds = ingest("manifest", path, "m", task="multiclass", rare_classes="merge")
    assert ds.label_names == ["a", "b", "other"]
    assert ds.options["rare_classes"] == "merge"
    assert np.bincount(ds.labels).tolist() == [20, 20, 5]
    for split in ("train", "calib", "test"):
        assert set(np.unique(ds.labels[ds.split_rows(split)])) == {0, 1, 2}
    # One rare image cannot reach three splits even merged: refused, with no merge hint.
    path = _manifest(tmp_path, [["a", "b"][i % 2] for i in range(40)] + ["r1"])
    with pytest.raises(InputError, match=r"class 'other' has no example in \w+(, \w+)?; add images$"):
        ingest("manifest", path, "m", task="multiclass", rare_classes="merge")


def test_a_split_layout_leaving_calib_or_test_empty_fails_at_ingest(tmp_path):
    labels = [["a", "b"][i % 2] for i in range(20)]
    path = _manifest(tmp_path, labels, split=["train"] * 20)
    with pytest.raises(InputError, match=r"leaves calib and test empty"):
        ingest("manifest", path, "m", task="multiclass")


def test_missing_label_column_is_named(tmp_path):
    paths = _images(tmp_path, 12)
    pd.DataFrame({"path": paths, "Label": ["a", "b"] * 6}).to_csv(tmp_path / "m.csv", index=False)
    with pytest.raises(
        InputError, match=r"missing required column 'label'; did you mean 'Label'\? \(-o label_column=Label\)"
    ):
        ingest("manifest", tmp_path / "m.csv", "m", task="multiclass")
    pd.DataFrame({"path": paths, "finding": ["a", "b"] * 6}).to_csv(tmp_path / "m.csv", index=False)
    with pytest.raises(
        InputError, match=r"missing required column 'label'; name the column with -o label_column=NAME, or give one 0/1"
    ):
        ingest("manifest", tmp_path / "m.csv", "m", task="multiclass")


def _medmnist(
    folder: Path, labels: dict[str, np.ndarray] | None = None, images: dict[str, np.ndarray] | None = None
) -> Path:
    arrays = {}
    for split, n in (("train", 30), ("val", 10), ("test", 10)):
        arrays[f"{split}_images"] = RNG.integers(0, 255, (n, 8, 8), dtype=np.uint8)
        arrays[f"{split}_labels"] = (np.arange(n) % 3).reshape(-1, 1)
    arrays.update(labels or {})
    arrays.update(images or {})
    np.savez(folder / "x.npz", **arrays)
    return folder / "x.npz"


def _big_label(folder: Path) -> Path:
    labels = (np.arange(30) % 3).reshape(-1, 1).astype(np.int64)
    labels[4, 0] = 1_000_000_000
    return _medmnist(folder, {"train_labels": labels})


def _written(folder: Path, data: bytes) -> Path:
    (folder / "x.npz").write_bytes(data)
    return folder / "x.npz"


NPZ_CASES = {
    "label 1e9": (_big_label, r"x\.npz \(largest label value 1000000000\): 1,000,000,001 classes"),
    "NaN label": (
        lambda f: _medmnist(
            f, {"train_labels": np.where(np.arange(30) == 3, np.nan, np.arange(30) % 3).reshape(-1, 1)}
        ),
        r"x\.npz:train_labels: line 3: malformed label value nan",
    ),
    "string labels": (
        lambda f: _medmnist(f, {"train_labels": np.array([["a"]] * 30)}),
        r"x\.npz: train_labels must be numeric",
    ),
    "5 channels": (
        lambda f: _medmnist(f, images={"train_images": np.zeros((30, 8, 8, 5), np.uint8)}),
        r"train_images has 5 channels",
    ),
    "zero height": (
        lambda f: _medmnist(f, images={"train_images": np.zeros((30, 0, 8), np.uint8)}),
        r"train_images has empty images",
    ),
    "empty file": (lambda f: _written(f, b""), r"x\.npz: cannot read as \.npz"),
    "truncated": (lambda f: _written(f, _medmnist(f).read_bytes()[:900]), r"x\.npz: cannot read as \.npz"),
}


@pytest.mark.parametrize("case", list(NPZ_CASES))
def test_hostile_npz_is_exit_1_with_one_line(case, tmp_path, capsys):
    make, pattern = NPZ_CASES[case]
    path = make(tmp_path)
    started = time.monotonic()
    rc, err = _cli(["ingest", "medmnist", str(path), "--name", "x", "--db", str(tmp_path / "w.duckdb")], capsys)
    assert rc == 1, err
    assert time.monotonic() - started < 20
    assert err.startswith("error: ") and __import__("re").search(pattern, err), err


def test_dataset_name_with_trailing_newline_is_refused(tmp_path, capsys):
    path = _manifest(tmp_path, [["a", "b"][i % 2] for i in range(30)])
    rc, err = _cli(
        [
            "ingest",
            "manifest",
            str(path),
            "--name",
            "ok\n",
            "--option",
            "task=multiclass",
            "--db",
            str(tmp_path / "w.duckdb"),
        ],
        capsys,
    )
    assert rc == 1 and "invalid dataset name 'ok\\n'" in err, err


def test_infinite_features_fail_before_fitting(tmp_path, capsys):
    import zarr
    from support.fault_support import synthetic_warehouse

    from crsbench.warehouse.connection import Warehouse

    db = synthetic_warehouse(tmp_path)
    arr = zarr.open_array(str(db) + ".features.zarr/derm/enc/d100/clean", mode="r+")
    block = arr[:]
    block[3, 2] = np.inf
    arr[:] = block
    rc, err = _cli(
        [
            "probe",
            "--db",
            str(db),
            "--dataset",
            "derm",
            "--probe",
            "logreg",
            "--depth",
            "1.0",
            "--fraction",
            "1.0",
            "--seed",
            "0",
        ],
        capsys,
    )
    assert rc == 1 and "derm/enc has NaN or infinite features at d100/clean" in err, err
    with Warehouse.open(db, read_only=True) as wh:
        assert wh.sql("select count(*) n from runs")["n"].item() == 0

"""Each adapter round-trips the generated suite (counts, labels, task type, splits).

Expectations are recomputed from the raw CSVs with the csv module, not with the
adapters' code.
"""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crsbench.ingest import ADAPTERS, Task, ingest, open_image

CXR = [
    "No Finding",
    "Enlarged Cardiomediastinum",
    "Cardiomegaly",
    "Lung Opacity",
    "Lung Lesion",
    "Edema",
    "Consolidation",
    "Pneumonia",
    "Atelectasis",
    "Pneumothorax",
    "Pleural Effusion",
    "Pleural Other",
    "Fracture",
    "Support Devices",
]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _labels_by_id(ds) -> dict[str, object]:
    return {
        i: (tuple(ds.labels[r]) if ds.labels.ndim == 2 else int(ds.labels[r]))
        for r, i in enumerate(ds.images["image_id"])
    }


def _check_common(ds) -> None:
    images = ds.images
    assert list(images.columns) == ["image_id", "rel_path", "sha256", "group_id", "split"]
    assert images["image_id"].is_unique
    order = images["split"].map({"train": 0, "calib": 1, "test": 2})
    assert list(zip(order, images["image_id"], strict=True)) == sorted(zip(order, images["image_id"], strict=True))
    for g, splits in images.groupby("group_id")["split"]:
        assert splits.nunique() == 1, g
    # the stored hash is the SHA-256 of the file bytes
    first = images.iloc[0]
    assert hashlib.sha256((ds.root / first["rel_path"]).read_bytes()).hexdigest() == first["sha256"]
    y = ds.labels if ds.labels.ndim == 2 else np.eye(len(ds.label_names), dtype=int)[ds.labels]
    test = ds.split_rows("test")
    assert (y[test].sum(axis=0) >= 2).all() and ((1 - y[test]).sum(axis=0) >= 2).all()
    assert (y[ds.fraction_rows(0.01, 0)].sum(axis=0) >= 1).all()


def test_registry_includes_the_seven_builtin_adapters():
    assert {"isic2019", "aptos2019", "chexpert", "mimic-cxr", "medmnist", "manifest", "folder"} <= set(ADAPTERS)


def test_isic2019_round_trip(suite_dir, suite_datasets):
    ds = suite_datasets["isic2019"]
    truth = _rows(suite_dir / "isic2019" / "ISIC_2019_Training_GroundTruth.csv")
    classes = ["MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC"]
    assert ds.task is Task.MULTICLASS and ds.label_names == classes and ds.domain == "derm"
    expected = {r["image"]: [float(r[c]) for c in classes].index(1.0) for r in truth}
    assert _labels_by_id(ds) == expected
    lesions = {r["image"]: r["lesion_id"] for r in _rows(suite_dir / "isic2019" / "ISIC_2019_Training_Metadata.csv")}
    groups = dict(zip(ds.images["image_id"], ds.images["group_id"], strict=True))
    assert all(groups[i] == (lesions[i] or i) for i in expected)
    assert len(set(lesions.values()) - {""}) < len(expected)  # some lesions really have 2 images
    _check_common(ds)


def test_aptos2019_round_trip(suite_dir, suite_datasets):
    ds = suite_datasets["aptos2019"]
    rows = _rows(suite_dir / "aptos2019" / "train.csv")
    assert ds.task is Task.ORDINAL and len(ds.label_names) == 5 and ds.domain == "eye"
    assert _labels_by_id(ds) == {r["id_code"]: int(r["diagnosis"]) for r in rows}
    assert (ds.images["group_id"] == ds.images["image_id"]).all()
    _check_common(ds)
    img = open_image(ds.root, ds.images["rel_path"][0])
    assert img.mode == "RGB" and img.size == (64, 64)


def _cxr_expected(rows, policy):
    def value(cell):
        return {"1.0": 1, "0.0": 0, "-1.0": policy, "": 0}[cell]

    return {r["Path"].split("/", 1)[1].rsplit(".", 1)[0]: tuple(value(r[c]) for c in CXR) for r in rows}


@pytest.mark.parametrize("policy", ["zeros", "ones"])
def test_chexpert_round_trip(suite_dir, suite_datasets, policy):
    base = suite_dir / "chexpert" / "CheXpert-v1.0-small"
    train, valid = _rows(base / "train.csv"), _rows(base / "valid.csv")
    ds = (
        suite_datasets["chexpert"]
        if policy == "zeros"
        else ingest("chexpert", suite_dir / "chexpert", "cx", uncertainty=policy)
    )
    assert ds.task is Task.MULTILABEL and ds.label_names == CXR
    expected = _cxr_expected(train + valid, 1 if policy == "ones" else 0)
    assert _labels_by_id(ds) == expected
    test_ids = set(ds.images.loc[ds.images["split"] == "test", "image_id"])
    assert test_ids == {r["Path"].split("/", 1)[1].rsplit(".", 1)[0] for r in valid}  # valid.csv is the test split
    assert all(
        g.startswith("patient") and g in i for g, i in zip(ds.images["group_id"], ds.images["image_id"], strict=True)
    )
    _check_common(ds)


def test_chexpert_u_ones_differs_from_u_zeros_only_on_uncertain_cells(suite_dir, suite_datasets):
    zeros = suite_datasets["chexpert"]
    ones = ingest("chexpert", suite_dir / "chexpert", "cx1", uncertainty="ones")
    n_uncertain = sum(
        v == "-1.0"
        for r in _rows(suite_dir / "chexpert/CheXpert-v1.0-small/train.csv")
        for c, v in r.items()
        if c in CXR
    )
    assert n_uncertain > 0
    assert int(ones.labels.sum()) - int(zeros.labels.sum()) == n_uncertain


def test_chexpert_frontal_only(suite_dir):
    ds = ingest("chexpert", suite_dir / "chexpert", "cxf", views="frontal")
    rows = _rows(suite_dir / "chexpert/CheXpert-v1.0-small/train.csv") + _rows(
        suite_dir / "chexpert/CheXpert-v1.0-small/valid.csv"
    )
    assert ds.n_images == sum(r["Frontal/Lateral"] == "Frontal" for r in rows)
    assert ds.images["rel_path"].str.endswith("_frontal.jpg").all()


def test_mimic_round_trip(suite_dir, suite_datasets):
    root = suite_dir / "mimic-cxr"
    ds = suite_datasets["mimic-cxr"]
    meta = _rows(root / "mimic-cxr-2.0.0-metadata.csv")
    labels = {r["study_id"]: r for r in _rows(root / "mimic-cxr-2.0.0-chexpert.csv")}
    frontal = [m for m in meta if m["ViewPosition"] in ("PA", "AP")]
    assert len(frontal) < len(meta)  # the suite has lateral views that are left out by default
    assert ds.task is Task.MULTILABEL and ds.label_names == CXR  # CheXpert order, not the CSV's
    expected = {m["dicom_id"]: tuple({"1.0": 1}.get(labels[m["study_id"]][c], 0) for c in CXR) for m in frontal}
    assert _labels_by_id(ds) == expected
    official = {
        r["dicom_id"]: {"validate": "calib"}.get(r["split"], r["split"])
        for r in _rows(root / "mimic-cxr-2.0.0-split.csv")
    }
    assert all(official[i] == s for i, s in zip(ds.images["image_id"], ds.images["split"], strict=True))
    subject = {m["dicom_id"]: "p" + m["subject_id"] for m in meta}
    assert all(subject[i] == g for i, g in zip(ds.images["image_id"], ds.images["group_id"], strict=True))
    _check_common(ds)


def test_mimic_without_official_split_is_split_by_subject(suite_dir, tmp_path):
    root = tmp_path / "mimic"
    shutil.copytree(suite_dir / "mimic-cxr", root)
    (root / "mimic-cxr-2.0.0-split.csv").unlink()
    ds = ingest("mimic-cxr", root, "m2", views="all")
    assert ds.n_images == len(_rows(root / "mimic-cxr-2.0.0-metadata.csv"))
    _check_common(ds)


def test_chexpert_and_mimic_acquisitions_differ(suite_datasets):
    # The MIMIC stand-in has a black collimation border; CheXpert images do not.
    def border_mean(name):
        ds = suite_datasets[name]
        arrs = [np.asarray(open_image(ds.root, p, "L"), dtype=float) for p in ds.images["rel_path"][:20]]
        return float(np.mean([a[:, :2].mean() for a in arrs]))

    assert border_mean("mimic-cxr") < 2 < border_mean("chexpert")


def test_medmnist_npz(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {}
    for split, n in (("train", 40), ("val", 12), ("test", 12)):
        arrays[f"{split}_images"] = rng.integers(0, 255, size=(n, 28, 28), dtype=np.uint8)
        arrays[f"{split}_labels"] = (np.arange(n) % 3).reshape(-1, 1)
    np.savez(tmp_path / "toymnist.npz", **arrays)
    ds = ingest("medmnist", tmp_path / "toymnist.npz", "toy", labels="a,b,c")
    assert ds.task is Task.MULTICLASS and ds.label_names == ["a", "b", "c"]
    assert ds.images["split"].value_counts().to_dict() == {"train": 40, "calib": 12, "test": 12}
    row = int(np.flatnonzero(ds.images["image_id"] == "val-000005")[0])
    assert ds.labels[row] == 5 % 3
    assert ds.images["sha256"][row] == hashlib.sha256(arrays["val_images"][5].tobytes()).hexdigest()
    assert np.array_equal(np.asarray(open_image(ds.root, ds.images["rel_path"][row], "L")), arrays["val_images"][5])
    multi = {
        k: (np.stack([v[:, 0] == 0, v[:, 0] > 0], 1).astype(np.uint8) if k.endswith("labels") else v)
        for k, v in arrays.items()
    }
    np.savez(tmp_path / "multi.npz", **multi)
    ds2 = ingest("medmnist", tmp_path / "multi.npz", "toy2")
    assert ds2.task is Task.MULTILABEL and ds2.labels.shape == (64, 2)


def _manifest_images(folder: Path, n: int) -> list[str]:
    from PIL import Image

    paths = []
    for i in range(n):
        rel = f"img/{i:03d}.png"
        (folder / "img").mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((16, 16), i * 7 % 255, dtype=np.uint8)).save(folder / rel)
        paths.append(rel)
    return paths


def test_manifest_single_label_and_one_column_per_label(tmp_path):
    paths = _manifest_images(tmp_path, 60)
    names = ["cat", "dog", "eel"]
    pd.DataFrame(
        {"path": paths, "label": [names[i % 3] for i in range(60)], "group": [f"s{i // 2}" for i in range(60)]}
    ).to_csv(tmp_path / "manifest.csv", index=False)
    ds = ingest("manifest", tmp_path / "manifest.csv", "m", task="multiclass", classes="eel,dog,cat")
    assert ds.label_names == ["eel", "dog", "cat"]
    by_id = _labels_by_id(ds)
    assert all(by_id[p] == ["eel", "dog", "cat"].index(names[i % 3]) for i, p in enumerate(paths))
    assert set(ds.images["group_id"]) == {f"s{i}" for i in range(30)}
    wide = pd.DataFrame({"path": paths, "a": [i % 2 for i in range(60)], "b": [int(i % 3 == 0) for i in range(60)]})
    wide.to_csv(tmp_path / "wide.csv", index=False)
    ds2 = ingest("manifest", tmp_path / "wide.csv", "w", task="multilabel")
    assert ds2.task is Task.MULTILABEL and ds2.label_names == ["a", "b"]
    assert _labels_by_id(ds2) == {p: (i % 2, int(i % 3 == 0)) for i, p in enumerate(paths)}


def test_ingest_is_deterministic(suite_dir, suite_datasets):
    again = ingest("isic2019", suite_dir / "isic2019", "isic2019")
    pd.testing.assert_frame_equal(again.images, suite_datasets["isic2019"].images)
    pd.testing.assert_frame_equal(again.fractions, suite_datasets["isic2019"].fractions)
    assert np.array_equal(again.labels, suite_datasets["isic2019"].labels)

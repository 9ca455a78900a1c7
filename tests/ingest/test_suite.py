"""The embedded demo suite: deterministic bytes, real layouts, and a learnable class signal."""

from __future__ import annotations

import csv
import hashlib
import re
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageFilter
from scipy import ndimage
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import StandardScaler

from crsbench.core import CrsbenchError
from crsbench.ingest import make_suite, open_image


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _header(path: Path) -> list[str]:
    with open(path, newline="") as fh:
        return next(csv.reader(fh))


def test_same_arguments_give_byte_identical_files(tmp_path):
    a = make_suite(tmp_path / "a", scale=0.2, image_size=40, seed=3)
    b = make_suite(tmp_path / "b", scale=0.2, image_size=40, seed=3)
    assert a.keys() == b.keys() == {"isic2019", "aptos2019", "chexpert", "mimic-cxr"}
    da, db = _digests(tmp_path / "a"), _digests(tmp_path / "b")
    assert len(da) > 300 and da == db
    make_suite(tmp_path / "c", scale=0.2, image_size=40, seed=4)
    dc = _digests(tmp_path / "c")
    assert dc.keys() != da.keys() or dc != da
    make_suite(tmp_path / "a", scale=0.2, image_size=40, seed=3)  # rerun over an existing suite
    assert _digests(tmp_path / "a") == da


def test_bad_arguments_are_user_errors(tmp_path):
    with pytest.raises(CrsbenchError, match="scale"):
        make_suite(tmp_path, scale=0)
    with pytest.raises(CrsbenchError, match="image-size"):
        make_suite(tmp_path, image_size=8)


def test_real_published_layouts(suite_dir):
    isic = suite_dir / "isic2019"
    assert _header(isic / "ISIC_2019_Training_GroundTruth.csv") == [
        "image",
        "MEL",
        "NV",
        "BCC",
        "AK",
        "BKL",
        "DF",
        "VASC",
        "SCC",
        "UNK",
    ]
    assert _header(isic / "ISIC_2019_Training_Metadata.csv") == [
        "image",
        "age_approx",
        "anatom_site_general",
        "lesion_id",
        "sex",
    ]
    assert all(re.fullmatch(r"ISIC_\d{7}\.jpg", p.name) for p in (isic / "ISIC_2019_Training_Input").iterdir())
    assert _header(suite_dir / "aptos2019" / "train.csv") == ["id_code", "diagnosis"]
    assert all(re.fullmatch(r"[0-9a-f]{12}\.png", p.name) for p in (suite_dir / "aptos2019/train_images").iterdir())
    cx = suite_dir / "chexpert" / "CheXpert-v1.0-small"
    header = _header(cx / "train.csv")
    assert header[:5] == ["Path", "Sex", "Age", "Frontal/Lateral", "AP/PA"] and len(header) == 19
    with open(cx / "train.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert all(
        re.fullmatch(r"CheXpert-v1\.0-small/train/patient\d{5}/study\d+/view\d_(frontal|lateral)\.jpg", r["Path"])
        for r in rows
    )
    cells = {r[c] for r in rows for c in header[5:]}
    assert cells == {"1.0", "0.0", "-1.0", ""}
    assert {r["Frontal/Lateral"] for r in rows} == {"Frontal", "Lateral"}
    mimic = suite_dir / "mimic-cxr"
    assert _header(mimic / "mimic-cxr-2.0.0-metadata.csv")[:5] == [
        "dicom_id",
        "subject_id",
        "study_id",
        "PerformedProcedureStepDescription",
        "ViewPosition",
    ]
    assert _header(mimic / "mimic-cxr-2.0.0-chexpert.csv")[:2] == ["subject_id", "study_id"]
    files = list((mimic / "files").rglob("*.jpg"))
    assert files and all(
        re.fullmatch(
            r"files/p(\d\d)/p\1\d{6}/s\d{8}/[0-9a-f]{8}(-[0-9a-f]{8}){4}\.jpg", f.relative_to(mimic).as_posix()
        )
        for f in files
    )


def test_lesion_load_grows_with_the_aptos_grade(suite_datasets):
    ds = suite_datasets["aptos2019"]
    load = np.zeros(len(ds.images))
    for i, rel in enumerate(ds.images["rel_path"]):
        img = np.asarray(open_image(ds.root, rel), dtype=float)
        # lesions are small spots: pixels far from their 7x7 median neighbourhood
        local = np.abs(img - ndimage.median_filter(img, size=(7, 7, 1))).sum(axis=2)
        load[i] = (local > 60).mean()
    means = [load[ds.labels == g].mean() for g in range(5)]
    assert all(a < b for a, b in pairwise(means)), means


def _random_features(images: list[Image.Image]) -> np.ndarray:
    # A fixed random-init conv net (no training): pooled responses of 48 random filters.
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 24, 5, stride=2), torch.nn.ReLU(), torch.nn.Conv2d(24, 48, 3, stride=2), torch.nn.ReLU()
    )
    x = torch.stack([torch.from_numpy(np.asarray(im, dtype=np.float32) / 255).permute(2, 0, 1) for im in images])
    with torch.no_grad():
        h = net((x - 0.5) / 0.25)
    return torch.cat([h.mean(dim=(2, 3)), h.amax(dim=(2, 3))], dim=1).numpy()


def _probe_auroc(ds, perturb=lambda im: im) -> float:
    fit = np.concatenate([ds.split_rows("train"), ds.split_rows("calib")])
    test = ds.split_rows("test")
    imgs = [open_image(ds.root, p) for p in ds.images["rel_path"]]
    scaler = StandardScaler().fit(_random_features([imgs[i] for i in fit]))
    x_fit = scaler.transform(_random_features([imgs[i] for i in fit]))
    x_test = scaler.transform(_random_features([perturb(imgs[i]) for i in test]))
    clf = LogisticRegression(C=1.0, max_iter=3000).fit(x_fit, ds.labels[fit])
    return roc_auc_score(ds.labels[test], clf.predict_proba(x_test), multi_class="ovr")


@pytest.mark.parametrize("name", ["isic2019", "aptos2019"])
def test_random_features_beat_chance_and_blur_hurts(name, suite_datasets):
    torch.set_num_threads(1)
    ds = suite_datasets[name]
    clean = _probe_auroc(ds)
    blurred = _probe_auroc(ds, lambda im: im.filter(ImageFilter.GaussianBlur(2)))
    assert clean > 0.7, clean  # chance is 0.5; measured 0.99 (ISIC) and 0.78 (APTOS) at 64 px
    assert blurred < clean - 0.02, (clean, blurred)

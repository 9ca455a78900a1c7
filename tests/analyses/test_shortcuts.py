"""The shortcut audit (METHODS.md §19): labels predicted from image file properties alone.

A generated suite whose MEL images are written as PNG (the rest JPEG) must be flagged; the
unchanged suite must not (its files differ only in size, which the rule leaves out). Missing files
are one-line errors that write nothing; the header cache is reused while images are unchanged.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import SUITE_IMAGE_SIZE, SUITE_SCALE
from PIL import Image

from crsbench.analyses import run_analysis
from crsbench.analyses.splits.shortcuts import class_aurocs, logistic, warn_rule
from crsbench.core import CrsbenchError
from crsbench.ingest import ingest, make_suite
from crsbench.ingest.file_properties import file_properties, jpeg_quality
from crsbench.warehouse import file_properties as cache
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset


def _audit(wh: Warehouse, dataset: str) -> dict[tuple[str, str, str], tuple[float, float, bool]]:
    rows = wh.sql("select * from shortcut_audit where dataset = ?", [dataset])
    return {(r.properties, r.split, r.metric): (r.estimate, r.chance, r.warn) for r in rows.itertuples()}


@pytest.fixture(scope="module")
def png_class_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("png_suite")
    make_suite(root / "suite", scale=SUITE_SCALE, image_size=SUITE_IMAGE_SIZE, png_class="MEL")
    db = root / "wh.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, ingest("isic2019", root / "suite" / "isic2019", "isic2019"))
    return db


def test_one_class_saved_as_png_is_flagged(png_class_db: Path) -> None:
    with Warehouse.open(png_class_db) as wh:
        result = run_analysis(wh, "shortcuts", {"dataset": "isic2019"})
        audit = _audit(wh, "isic2019")
        # Independently: the PNG files are exactly the MEL images (label index 0).
        crossed = wh.sql(
            "select p.format, l.value from image_properties p join labels l using (dataset_id, image_id) "
            "where l.label_idx = 0 group by all"
        )
    assert sorted(map(tuple, crossed.to_numpy())) == [("JPEG", 0), ("PNG", 1)]
    for split in ("pool_cv", "test"):
        best, chance, warn = audit[("header", split, "max_class_auroc")]
        assert best >= 0.95 and chance == 0.5 and warn
    assert result.summary["warn"].all()
    assert any("WARNING" in note and "isic2019" in note for note in result.notes)


def test_unchanged_suite_does_not_warn_and_header_scores_are_chance(ingested_db: Path) -> None:
    with Warehouse.open(ingested_db) as wh:
        run_analysis(wh, "shortcuts")
        audit = wh.sql("select * from shortcut_audit")
        n_images = wh.sql("select count(*) as n from images")["n"][0]
        cached = wh.sql("select count(*) as n from image_properties")["n"][0]
    assert set(audit["dataset"]) == {"isic2019", "aptos2019", "chexpert", "mimic-cxr"}
    assert not audit["warn"].any()
    # Within a dataset every header is the same (one format, size, quality), so the header
    # classifier can only guess the prior: exactly chance on every metric.
    header = audit[audit["properties"] == "header"]
    assert np.allclose(header["estimate"], header["chance"])
    assert cached == n_images


def test_missing_image_file_names_it_and_writes_nothing(ingested_db: Path, suite_dir: Path, tmp_path: Path) -> None:
    moved = tmp_path / "isic2019"
    shutil.copytree(suite_dir / "isic2019", moved)
    with Warehouse.open(ingested_db) as wh:
        wh.con.execute("update datasets set root = ? where dataset_id = 'isic2019'", [str(moved)])
        first = wh.sql("select rel_path from images where dataset_id = 'isic2019' order by row_index limit 1")
        (moved / first["rel_path"][0]).unlink()
        with pytest.raises(CrsbenchError) as err:
            run_analysis(wh, "shortcuts")
        assert len(wh.sql("select * from shortcut_audit")) == 0
        assert len(wh.sql("select * from image_properties")) == 0
    message = str(err.value)
    assert "\n" not in message and first["rel_path"][0] in message and "image file not found" in message


def test_headers_are_read_once_and_again_when_a_file_changes(
    ingested_db: Path, suite_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = tmp_path / "aptos2019"
    shutil.copytree(suite_dir / "aptos2019", moved)
    reads: list[str] = []

    def counting(root: Path, rel_path: str) -> object:
        reads.append(rel_path)
        return file_properties(root, rel_path)

    monkeypatch.setattr(cache, "file_properties", counting)
    with Warehouse.open(ingested_db) as wh:
        wh.con.execute("update datasets set root = ? where dataset_id = 'aptos2019'", [str(moved)])
        n = wh.sql("select count(*) as n from images where dataset_id = 'aptos2019'")["n"][0]
        run_analysis(wh, "shortcuts", {"dataset": "aptos2019"})
        assert len(reads) == n
        run_analysis(wh, "shortcuts", {"dataset": "aptos2019"})
        assert len(reads) == n  # all cached
        rel = wh.sql("select rel_path from images where dataset_id = 'aptos2019' limit 1")["rel_path"][0]
        buf = io.BytesIO()
        Image.new("RGB", (SUITE_IMAGE_SIZE, 40)).save(buf, format="PNG")
        (moved / rel).write_bytes(buf.getvalue())  # another size on disk
        run_analysis(wh, "shortcuts", {"dataset": "aptos2019"})
        assert reads[n:] == [rel]
        height = wh.sql(
            "select p.height from image_properties p join images i using (dataset_id, image_id) where i.rel_path = ?",
            [rel],
        )["height"][0]
    assert height == 40


def test_unknown_dataset_and_too_few_folds_are_user_errors(ingested_db: Path) -> None:
    with Warehouse.open(ingested_db) as wh:
        with pytest.raises(CrsbenchError, match="'nope' is not in the warehouse"):
            run_analysis(wh, "shortcuts", {"dataset": "nope"})
        with pytest.raises(CrsbenchError, match="folds must be at least 2"):
            run_analysis(wh, "shortcuts", {"folds": 1})


def test_jpeg_quality_inverts_the_ijg_scaling(tmp_path: Path) -> None:
    pixels = (np.random.default_rng(0).random((32, 48, 3)) * 255).astype(np.uint8)
    for quality in (30, 50, 75, 92):
        Image.fromarray(pixels).save(tmp_path / f"q{quality}.jpg", quality=quality)
        props = file_properties(tmp_path, f"q{quality}.jpg")
        assert props.jpeg_quality == pytest.approx(quality, abs=1.0)
        assert (props.format, props.width, props.height, props.chroma_subsampling) == ("JPEG", 48, 32, "4:2:0")
    # Hand-worked: the IJG luminance table sums to 3688 (rows 229 + 256 + 289 + 362 + 490 + 568 +
    # 723 + 771); a table of ones is scaled 100 * 64 / 3688 = 1.735 %, so q = (200 - 1.735) / 2.
    assert np.isnan(jpeg_quality(None))
    assert jpeg_quality({0: [1] * 64}) == pytest.approx((200 - 100 * 64 / 3688) / 2, abs=0.05)


def test_logistic_matches_scikit_learn_and_aurocs_count_ties_half() -> None:
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    x = rng.normal(size=(80, 3))
    t = (x[:, 0] + 0.5 * rng.normal(size=80) > 0).astype(float)
    w = logistic(x, t)
    reference = LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000).fit(x, t)
    assert w[0] == pytest.approx(reference.intercept_[0], abs=1e-4)
    assert w[1:] == pytest.approx(reference.coef_[0], abs=1e-4)
    y = np.array([[1], [0], [1], [0]])
    p = np.array([[0.9], [0.9], [0.2], [0.1]])  # pairs (pos, neg): 0.9>0.1, 0.9=0.9 (half), 0.2>0.1, 0.2<0.9
    assert class_aurocs(y, p)[0] == pytest.approx((1 + 0.5 + 1 + 0) / 4)


def test_warn_rule_thresholds() -> None:
    at = {"balanced_accuracy": (0.40, 0.125), "auroc": (0.81, 0.5), "max_class_auroc": (0.9, 0.5)}
    assert warn_rule(at)
    assert not warn_rule({**at, "auroc": (0.79, 0.5)})
    assert not warn_rule({**at, "balanced_accuracy": (0.37, 0.125)})
    assert warn_rule({"balanced_accuracy": (0.2, 0.125), "auroc": (0.6, 0.5), "max_class_auroc": (0.95, 0.5)})

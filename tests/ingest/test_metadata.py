"""Per-image metadata at ingest: the suite's published columns land in image_metadata (ISIC,
CheXpert, MIMIC-CXR), a manifest's meta:<key> columns, binning, bad input, and the migration of
a warehouse written before the table existed (METHODS.md §16)."""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from PIL import Image
from support.synthetic import make_dataset

from crsbench.cli import main
from crsbench.core import InputError
from crsbench.ingest import ingest
from crsbench.ingest.metadata import bin_label, parse_bins, read_metadata_csv
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset, read_dataset
from crsbench.warehouse.schema import SCHEMA_VERSION

TABLES = ("datasets", "images", "labels", "image_metadata")


def _snapshot(db: Path) -> dict[str, str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            t: hashlib.sha256(con.execute(f"select * from {t} order by all").df().to_csv().encode()).hexdigest()
            for t in TABLES
        }
    finally:
        con.close()


def _stored(db: Path, dataset: str) -> pd.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "select image_id, key, value from image_metadata where dataset_id = ? order by image_id, key", [dataset]
        ).df()
    finally:
        con.close()


def _hand_age(text: str) -> str:
    age = float(text)
    return "0-40" if age < 40 else "40-60" if age < 60 else "60-80" if age < 80 else "80+"


def test_isic_metadata_lands_binned(suite_dir, ingested_db):
    stored = _stored(ingested_db, "isic2019").set_index(["image_id", "key"])["value"]
    source = pd.read_csv(suite_dir / "isic2019" / "ISIC_2019_Training_Metadata.csv", dtype=str)
    assert set(stored.index.get_level_values("key")) == {"age", "sex", "site"}
    assert len(stored) == 3 * len(source)
    for row in source.itertuples():
        assert stored[(row.image, "age")] == _hand_age(row.age_approx)
        assert stored[(row.image, "sex")] == row.sex  # as published: values keep their case
        assert stored[(row.image, "site")] == row.anatom_site_general


def test_chexpert_and_mimic_metadata_land(suite_dir, ingested_db):
    chex = _stored(ingested_db, "chexpert").set_index(["image_id", "key"])["value"]
    base = suite_dir / "chexpert" / "CheXpert-v1.0-small"
    source = pd.concat([pd.read_csv(base / f, dtype=str, keep_default_na=False) for f in ("train.csv", "valid.csv")])
    assert set(chex.index.get_level_values("key")) == {"age", "sex", "view", "projection"}
    for row in source.itertuples():
        image = row.Path.removeprefix("CheXpert-v1.0-small/").removesuffix(".jpg")
        assert chex[(image, "sex")] == row.Sex and chex[(image, "age")] == _hand_age(row.Age)
        assert chex[(image, "view")] == row._4  # Frontal/Lateral
        appa = row._5  # AP/PA: blank for lateral views, so no row
        assert chex.get((image, "projection")) == (appa or None)
    mimic = _stored(ingested_db, "mimic-cxr")
    meta = pd.read_csv(suite_dir / "mimic-cxr" / "mimic-cxr-2.0.0-metadata.csv", dtype=str)
    frontal = meta[meta["ViewPosition"].isin(["PA", "AP"])]
    expected = sorted(zip(frontal["dicom_id"], frontal["ViewPosition"], strict=True))
    assert set(mimic["key"]) == {"projection"}
    assert sorted(zip(mimic["image_id"], mimic["value"], strict=True)) == expected


def test_metadata_round_trips_and_aptos_has_none(ingested_db, suite_datasets):
    with Warehouse.open(ingested_db, read_only=True) as wh:
        back = read_dataset(wh, "chexpert")
        assert read_dataset(wh, "aptos2019").metadata.empty
    original = suite_datasets["chexpert"].metadata
    assert back.metadata.reset_index(drop=True).equals(original.astype(object).reset_index(drop=True))


def test_bins_and_labels():
    assert [bin_label(a, (0, 40, 60, 80)) for a in (0, 39.9, 40, 79, 80, 104)] == [
        "0-40",
        "0-40",
        "40-60",
        "60-80",
        "80+",
        "80+",
    ]
    assert bin_label(-1, (0, 40)) is None
    assert parse_bins("bmi=0,25,30.5") == {"age": (0, 40, 60, 80), "bmi": (0, 25, 30.5)}
    with pytest.raises(InputError, match="increasing numbers"):
        parse_bins("age=40,20")


def _manifest(folder: Path, n: int, extra: dict[str, list[str]]) -> Path:
    (folder / "img").mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.fromarray(np.full((8, 8), i % 250, dtype=np.uint8)).save(folder / "img" / f"{i}.png")
    with open(folder / "manifest.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["path", "label", *extra])
        for i in range(n):
            writer.writerow([f"img/{i}.png", "ab"[i % 2], *(v[i] for v in extra.values())])
    return folder / "manifest.csv"


def test_manifest_meta_columns_with_declared_bins(tmp_path):
    n = 60
    path = _manifest(
        tmp_path,
        n,
        {
            "meta:scanner": [f"S{i % 3}" for i in range(n)],
            "meta:bmi": [str(15 + i % 20) if i % 7 else "" for i in range(n)],
        },
    )
    ds = ingest("manifest", path, "m", task="multiclass", bins="bmi=0,18.5,25")
    meta = ds.metadata.set_index(["image_id", "key"])["value"]
    assert meta[("img/1.png", "scanner")] == "S1"
    assert meta[("img/1.png", "bmi")] == "0-18.5" and meta[("img/5.png", "bmi")] == "18.5-25"
    assert ("img/7.png", "bmi") not in meta.index  # blank cell: no row
    assert set(ds.label_names) == {"a", "b"}  # meta: columns are not labels


def test_values_keep_their_case_and_case_variants_are_one_group_with_a_warning(tmp_path):
    n = 60
    sex = ["Male" if i % 3 == 0 else "male" if i % 3 == 1 else "Female" for i in range(n)]  # 20 each
    sex[2] = "female"  # one stray spelling: the group keeps the most frequent one, 'Female'
    site = ["Anterior Torso" if i % 2 else "head/neck" for i in range(n)]
    path = _manifest(tmp_path, n, {"meta:sex": sex, "meta:site": site})
    with pytest.warns(UserWarning) as caught:
        ds = ingest("manifest", path, "m", task="multiclass")
    meta = ds.metadata[ds.metadata["key"] == "sex"]["value"]
    # 'Male' and 'male' tie at 20: the first in sorting order ('M' < 'm') names the group.
    assert meta.value_counts().to_dict() == {"Male": 40, "Female": 20}
    assert set(ds.metadata[ds.metadata["key"] == "site"]["value"]) == {"Anterior Torso", "head/neck"}
    text = [str(w.message) for w in caught if "metadata key" in str(w.message)]
    assert len(text) == 1 and "'sex'" in text[0]
    assert "'Female' + 'female' -> 'Female'" in text[0] and "'Male' + 'male' -> 'Male'" in text[0]


def _run(args: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(args)
    return rc, " ".join(capsys.readouterr().err.split())


def test_bad_metadata_is_one_line_and_writes_nothing(tmp_path, suite_dir, ingested_db, capsys):
    n = 60
    wide = _manifest(tmp_path / "wide", n, {"meta:patient_weight": [f"{50 + i}.5x" for i in range(n)]})
    words = _manifest(tmp_path / "words", n, {"meta:age": ["old" if i == 3 else "33" for i in range(n)]})
    isic = Path(shutil.copytree(suite_dir / "isic2019", tmp_path / "isic2019"))
    meta = isic / "ISIC_2019_Training_Metadata.csv"
    lines = meta.read_text().splitlines()
    cells = lines[1].split(",")
    lines[1] = ",".join([cells[0], "forty-five", *cells[2:]])  # age_approx of the first image
    meta.write_text("\n".join(lines) + "\n")
    cases = [
        (["manifest", str(wide), "-o", "task=multiclass"], "metadata key 'patient_weight' has 60 distinct values"),
        (["manifest", str(words), "-o", "task=multiclass"], "manifest.csv: line 5: metadata age='old'"),
        (["isic2019", str(isic)], "metadata age='forty-five' of image 'ISIC_"),
    ]
    before = _snapshot(ingested_db)
    for args, message in cases:
        rc, err = _run(["ingest", *args, "--name", "bad", "--db", str(ingested_db)], capsys)
        assert rc == 1 and err.startswith("error: ") and message in err, err
        assert _snapshot(ingested_db) == before


def test_orphan_metadata_refused_by_the_loader(tmp_path):
    ds = make_dataset("derm", "multiclass", 60, 2, seed=1)
    ds.metadata = pd.DataFrame({"image_id": ["nope"], "key": ["sex"], "value": ["male"]})
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        with pytest.raises(InputError, match="metadata row for image 'nope', which is not in the dataset"):
            load_dataset(wh, ds)
        assert wh.sql("select count(*) as n from datasets")["n"][0] == 0


def test_a_schema_v6_warehouse_migrates_without_metadata(tmp_path):
    db = tmp_path / "old.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, make_dataset("derm", "multiclass", 60, 2, seed=1))
        wh.con.execute("drop table image_metadata")
        wh.con.execute("delete from schema_info where version >= 7")
    with Warehouse.open(db) as wh:
        assert wh.sql("select max(version) as v from schema_info")["v"][0] == SCHEMA_VERSION
        assert read_dataset(wh, "derm").metadata.empty
        comment = wh.sql("select comment from duckdb_tables() where table_name = 'image_metadata'")["comment"][0]
        assert "metadata" in comment


def test_dataset_metadata_attaches_from_the_source_or_a_csv(ingested_db, tmp_path, capsys):
    with Warehouse.open(ingested_db) as wh:
        expected = wh.sql("select * from image_metadata where dataset_id = 'isic2019' order by all")
        wh.con.execute("delete from image_metadata where dataset_id = 'isic2019'")  # as an older warehouse
        ids = wh.sql("select image_id from images where dataset_id = 'aptos2019' order by row_index")["image_id"]
    rc, _ = _run(["dataset", "metadata", "isic2019", "--db", str(ingested_db)], capsys)
    assert rc == 0
    assert _stored(ingested_db, "isic2019").equals(expected[["image_id", "key", "value"]].reset_index(drop=True))
    csv_path = tmp_path / "meta.csv"
    pd.DataFrame({"image_id": ids, "camera": ["A", "B"] * (len(ids) // 2) + ["A"] * (len(ids) % 2)}).to_csv(
        csv_path, index=False
    )
    assert _run(["dataset", "metadata", "aptos2019", str(csv_path), "--db", str(ingested_db)], capsys)[0] == 0
    assert set(_stored(ingested_db, "aptos2019")["value"]) == {"A", "B"}
    before = _snapshot(ingested_db)
    pd.DataFrame({"image_id": ["not-an-image"], "camera": ["A"]}).to_csv(csv_path, index=False)
    rc, err = _run(["dataset", "metadata", "aptos2019", str(csv_path), "--db", str(ingested_db)], capsys)
    assert rc == 1 and "meta.csv: line 2: metadata row for image 'not-an-image', which is not in the dataset" in err
    assert _snapshot(ingested_db) == before


def test_metadata_csv_errors_count_rows_and_name_the_first(tmp_path):
    known = {f"img{i}" for i in range(5)}
    bins = parse_bins("")
    orphans = tmp_path / "orphans.csv"  # two unknown images, three keys each: 2 rows, 6 cells
    pd.DataFrame(
        {"image_id": ["img0", "x1", "img1", "x2"], "sex": ["m"] * 4, "site": ["a"] * 4, "age": ["50"] * 4}
    ).to_csv(orphans, index=False)
    with pytest.raises(InputError) as info:
        read_metadata_csv(orphans, bins, known)
    assert str(info.value) == (
        "orphans.csv: line 3: metadata row for image 'x1' (and 1 more image), which is not in the dataset; "
        "remove the row or add the image"
    )
    twice = tmp_path / "twice.csv"  # one image with two values of a key would be in two groups
    pd.DataFrame({"image_id": ["img0", "img1", "img0"], "sex": ["m", "f", "f"]}).to_csv(twice, index=False)
    with pytest.raises(InputError, match=r"^twice\.csv: line 4: a second row for image 'img0' \(first at line 2\)"):
        read_metadata_csv(twice, bins, known)
    wide = tmp_path / "wide.csv"
    ids = [f"img{i}" for i in range(60)]
    pd.DataFrame({"image_id": ids, "code": [f"c{i}" for i in range(60)]}).to_csv(wide, index=False)
    with pytest.raises(InputError, match=r"'code' has 60 distinct values \(over 50; e\.g\. image 'img0': 'c0'\)"):
        read_metadata_csv(wide, bins, set(ids))

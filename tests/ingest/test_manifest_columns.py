"""A manifest whose columns are named otherwise (`-o path_column=file -o label_column=diagnosis
-o group_column=patient -o split_column=fold`), the hints that name those options, and a
manifest's `meta:` columns re-read by `crsbench dataset metadata NAME` from the file it was
ingested from. Real images: scikit-learn's digits as PNGs."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from PIL import Image
from sklearn.datasets import load_digits

from crsbench.cli import main

N = 240
FOLDS = ("train", "val", "test", "train", "train")  # by patient: about 60 / 20 / 20


@pytest.fixture(scope="module")
def digits_dir(tmp_path_factory):
    """240 digit PNGs and a manifest frame: file, diagnosis, patient (3 images each), fold, sex."""
    data = load_digits()
    root = tmp_path_factory.mktemp("digits")
    (root / "img").mkdir()
    for i in range(N):
        Image.fromarray((data.images[i] * 255 / 16).astype(np.uint8)).save(root / "img" / f"{i:04d}.png")
    patient = [f"p{i // 3:03d}" for i in range(N)]
    frame = pd.DataFrame(
        {
            "file": [f"img/{i:04d}.png" for i in range(N)],
            "diagnosis": [f"digit{t}" for t in data.target[:N]],
            "patient": patient,
            "fold": [FOLDS[int(p[1:]) % len(FOLDS)] for p in patient],
            "meta:sex": ["f" if i % 2 else "m" for i in range(N)],
        }
    )
    return root, frame


def _run(args: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(args)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err.strip()


def _table(db: Path, query: str) -> pd.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(query).df()
    finally:
        con.close()


def test_manifest_columns_named_by_options(digits_dir, tmp_path, capsys):
    root, frame = digits_dir
    manifest = root / "clinic.csv"
    frame.drop(columns=["meta:sex"]).to_csv(manifest, index=False)
    db = tmp_path / "w.duckdb"
    base = ["ingest", "manifest", str(manifest), "--name", "clinic", "--db", str(db), "-o", "task=multiclass"]

    rc, _, err = _run(base, capsys)  # no options: the hint names the column and the option
    assert rc == 1 and len(err.splitlines()) == 1
    assert "missing required column 'path'; did you mean 'file'? (-o path_column=file)" in err
    rc, _, err = _run([*base, "-o", "path_column=file"], capsys)
    assert rc == 1 and len(err.splitlines()) == 1
    assert "missing required column 'label'; did you mean 'diagnosis'? (-o label_column=diagnosis)" in err
    assert not db.exists()

    rc, _, err = _run([*base, "-o", "path_column=file", "-o", "label_column=diagnosis"], capsys)
    assert rc == 0  # ingests, but says which columns it did not read
    assert "column 'patient' is not read (no 'group' column)" in err and "-o group_column=patient" in err
    assert "-o split_column=fold" in err

    named = ["-o", "path_column=file", "-o", "label_column=diagnosis", "-o", "group_column=patient"]
    rc, out, err = _run([*base, "--replace", "--yes", *named, "-o", "split_column=fold"], capsys)
    assert rc == 0 and "warning" not in err, err
    assert "ingested clinic (manifest, multiclass, 10 labels): 240 images" in out
    images = _table(db, "select i.image_id, i.group_id, i.split, i.row_index from images i order by row_index")
    labels = _table(
        db,
        "select l.image_id, d.label_names[l.label_idx + 1] as name from labels l join datasets d using (dataset_id) "
        "where d.dataset_id = 'clinic' and l.value = 1",
    )
    want = frame.set_index("file")
    got = images.merge(labels, on="image_id").set_index("image_id")
    assert sorted(got.index) == sorted(want.index)
    assert (got["group_id"] == want.loc[got.index, "patient"]).all()
    assert (got["split"] == want.loc[got.index, "fold"].replace({"val": "calib"})).all()
    assert (got["name"] == want.loc[got.index, "diagnosis"]).all()


def test_option_naming_a_missing_column_or_clashing_is_one_line(digits_dir, tmp_path, capsys):
    root, frame = digits_dir
    manifest = root / "clash.csv"
    frame.assign(label="x").to_csv(manifest, index=False)
    base = ["ingest", "manifest", str(manifest), "--name", "c", "--db", str(tmp_path / "w.duckdb")]
    rc, _, err = _run([*base, "-o", "task=multiclass", "-o", "path_column=filename"], capsys)
    assert rc == 1 and "clash.csv: no column 'filename' (option path_column); found: file, diagnosis" in err
    rc, _, err = _run(
        [*base, "-o", "task=multiclass", "-o", "path_column=file", "-o", "label_column=diagnosis"], capsys
    )
    assert rc == 1 and "option label_column='diagnosis', but the manifest also has a column 'label'" in err


def test_metadata_reread_from_the_manifest_it_was_ingested_from(digits_dir, tmp_path, capsys):
    root, frame = digits_dir
    frame.drop(columns=["meta:sex"]).to_csv(root / "manifest.csv", index=False)  # a second manifest, no meta
    frame.to_csv(root / "with_meta.csv", index=False)
    db = tmp_path / "w.duckdb"
    named = ["-o", "path_column=file", "-o", "label_column=diagnosis", "-o", "group_column=patient"]
    args = ["ingest", "manifest", str(root / "with_meta.csv"), "--name", "m", "--db", str(db), "-o", "task=multiclass"]
    assert _run([*args, *named, "-o", "split_column=fold"], capsys)[0] == 0
    query = "select image_id, value from image_metadata where key = 'sex' order by image_id"
    stored = _table(db, query)
    assert len(stored) == N
    con = duckdb.connect(str(db))
    con.execute("delete from image_metadata")
    con.close()
    rc, out, err = _run(["dataset", "metadata", "m", "--db", str(db)], capsys)
    assert rc == 0, err
    assert "sex: 240 images" in out
    assert _table(db, query).equals(stored)
    # An unlabelled manifest keeps its meta: columns too.
    frame[["file", "patient", "meta:sex"]].to_csv(root / "paths.csv", index=False)
    args = ["ingest", "manifest", str(root / "paths.csv"), "--name", "u", "--db", str(db), "--unlabeled"]
    assert _run([*args, "-o", "path_column=file", "-o", "group_column=patient"], capsys)[0] == 0
    kept = _table(db, "select count(*) as n from image_metadata where dataset_id = 'u' and key = 'sex'")
    assert kept["n"][0] == N

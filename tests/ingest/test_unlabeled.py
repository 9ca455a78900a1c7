"""Unlabelled datasets: `crsbench ingest folder DIR --unlabeled` and a manifest of paths only;
stored with no labels, enough for extraction and agreement; probing them is refused."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from crsbench.cli import main
from crsbench.core import CrsbenchError
from crsbench.ingest import ingest
from crsbench.warehouse.connection import Warehouse


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("unlabelled")
    rng = np.random.default_rng(0)
    (root / "sub").mkdir()
    for i in range(30):
        where = root / "sub" if i % 3 == 0 else root
        Image.fromarray((rng.random((16, 16, 3)) * 255).astype("uint8")).save(where / f"img{i:02d}.png")
    (root / "notes.txt").write_text("not an image\n")
    return root


def test_a_folder_ingests_without_labels_and_cannot_be_probed(folder, tmp_path, capsys):
    db = tmp_path / "w.duckdb"
    assert main(["ingest", "folder", str(folder), "--name", "unl", "--unlabeled", "--db", str(db)]) == 0
    assert "30 images" in capsys.readouterr().out
    with Warehouse.open(db, read_only=True) as wh:
        row = wh.con.execute(
            "select task, len(label_names), n_images from datasets where dataset_id = 'unl'"
        ).fetchone()
        ids = [r[0] for r in wh.con.execute("select image_id from images order by image_id").fetchall()]
        n_labels = wh.con.execute("select count(*) from labels").fetchone()[0]
        n_fractions = wh.con.execute("select count(*) from label_fractions").fetchone()[0]
        splits = dict(wh.con.execute("select split, count(*) from images group by split").fetchall())
    assert row == ("multilabel", 0, 30) and (n_labels, n_fractions) == (0, 0)
    assert "sub/img00.png" in ids and len(ids) == 30  # subfolders read, the text file left out
    assert sum(splits.values()) == 30 and min(splits.values()) > 0
    assert main(["probe", "-d", "unl", "--db", str(db)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "ingested without labels (--unlabeled)" in err and "crsbench successor" in err


def test_a_manifest_of_paths_ingests_without_labels(folder):
    manifest = folder / "manifest.csv"
    rows = ["path,group,split"] + [f"img{i:02d}.png,p{i // 2},{'test' if i < 6 else ''}" for i in range(1, 30) if i % 3]
    manifest.write_text("\n".join(rows) + "\n")
    try:
        ds = ingest("manifest", manifest, "man", unlabeled=True)
    finally:
        manifest.unlink()
    assert ds.label_names == [] and ds.labels.shape == (len(rows) - 1, 0)
    test = ds.images[ds.images["split"] == "test"]["image_id"].tolist()
    assert set(test) >= {"img01.png", "img02.png", "img04.png", "img05.png"}
    assert ds.images.groupby("group_id")["split"].nunique().max() == 1  # groups stay whole


def test_unlabelled_input_mistakes_are_one_clear_line(folder, tmp_path):
    cases = [
        (lambda: ingest("folder", folder, "x"), "not in a class folder.*pass --unlabeled to ingest without labels"),
        (
            lambda: ingest("aptos2019", folder, "x", unlabeled=True),
            "reads labelled layouts only; --unlabeled works with: ",
        ),
    ]
    labelled = tmp_path / "m.csv"
    labelled.write_text("path,label\nimg01.png,a\n")
    cases.append((lambda: ingest("manifest", labelled, "x", unlabeled=True), r"has label column\(s\) label"))
    for call, message in cases:
        with pytest.raises(CrsbenchError, match=message) as info:
            call()
        assert "\n" not in str(info.value)


def test_a_corruption_suite_at_ingest_needs_labels(folder, tmp_path, capsys):
    db = tmp_path / "w.duckdb"
    args = ["ingest", "folder", str(folder), "--name", "unl", "--unlabeled", "--suite", "medmnistc-derm"]
    assert main([*args, "--db", str(db)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--suite needs labels: 'unl' is ingested --unlabeled" in err
    assert not db.exists()  # refused before anything was written

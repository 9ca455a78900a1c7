"""Bad input: a one-line error naming the file/row, and the warehouse left unchanged (METHODS.md §1).

Each case corrupts a private copy of one generated dataset, runs `crsbench ingest`
against a warehouse that already holds the suite, and checks the exit status, the
message and a full snapshot of every dataset table before and after.
"""

from __future__ import annotations

import csv
import hashlib
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import pytest
from PIL import Image

from crsbench.cli import main
from crsbench.core import InputError
from crsbench.ingest import ingest

TABLES = ("datasets", "images", "labels", "label_fractions", "shift_pairs", "ingest_errors")


def snapshot(db: Path) -> dict[str, str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            t: hashlib.sha256(con.execute(f"select * from {t} order by all").df().to_csv().encode()).hexdigest()
            for t in TABLES
        }
    finally:
        con.close()


def _edit_csv(path: Path, edit: Callable[[list[list[str]]], None]) -> None:
    rows: list[list[str]] = []
    if path.exists():
        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
    edit(rows)
    with open(path, "w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)


def _copy(suite_dir: Path, tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(suite_dir / name, tmp_path / name))


# Each case: (adapter, corrupt(copy) -> path to ingest, extra CLI args, expected message regex)


def missing_image(root):
    first = sorted((root / "train_images").glob("*.png"))[3]
    first.unlink()
    return root, [], rf"train\.csv: line \d+: image file not found: train_images/{first.stem}\.png"


def corrupt_image(root):
    victim = sorted((root / "ISIC_2019_Training_Input").glob("*.jpg"))[5]
    victim.write_bytes(victim.read_bytes()[:200])  # truncated JPEG
    return root, [], rf"ISIC_2019_Training_GroundTruth\.csv: line \d+: corrupt or unreadable image .*{victim.name}"


def unknown_class_isic(root):
    def edit(rows):
        rows[4][1:] = ["0.0"] * 8 + ["1.0"]  # labelled UNK

    _edit_csv(root / "ISIC_2019_Training_GroundTruth.csv", edit)
    return root, [], r"GroundTruth\.csv: line 5: image 'ISIC_\d+' is labelled UNK, which is not one of"


def unknown_grade_aptos(root):
    _edit_csv(root / "train.csv", lambda rows: rows[3].__setitem__(1, "7"))
    return root, [], r"train\.csv: line 4: unknown class: grade 7 \(expected 0-4\)"


def malformed_label(root):
    base = root / "CheXpert-v1.0-small"

    def edit(rows):
        rows[2][rows[0].index("Edema")] = "2.0"

    _edit_csv(base / "train.csv", edit)
    return root, [], r"train\.csv: line 3: malformed label value '2\.0' in column 'Edema'"


def duplicate_id(root):
    _edit_csv(root / "train.csv", lambda rows: rows.insert(6, list(rows[2])))
    return root, [], r"train\.csv: line 7: duplicate image id '[0-9a-f]{12}' \(first at train\.csv line 3\)"


def escaping_path(root):
    base = root / "CheXpert-v1.0-small"
    _edit_csv(base / "train.csv", lambda rows: rows[3].__setitem__(0, "CheXpert-v1.0-small/../../secret.jpg"))
    return root, [], r"train\.csv: line 4: path '\.\./\.\./secret\.jpg' escapes the dataset root"


def empty_class(root):
    dropped: set[str] = set()

    def drop_df(rows: list[list[str]]) -> None:
        dropped.update(r[0] for r in rows if r[6] == "1.0")
        rows[:] = [r for r in rows if r[6] != "1.0"]

    _edit_csv(root / "ISIC_2019_Training_GroundTruth.csv", drop_df)  # drop all DF rows
    _edit_csv(  # and their metadata, as a trimmed ground truth needs
        root / "ISIC_2019_Training_Metadata.csv",
        lambda rows: rows.__setitem__(slice(None), [r for r in rows if r[0] not in dropped]),
    )
    return root, [], r"class 'DF' has no examples in the dataset"


def orphan_metadata(root):
    kept: list[str] = []

    def drop_last(rows: list[list[str]]) -> None:
        kept.append(rows.pop()[0])

    _edit_csv(root / "ISIC_2019_Training_GroundTruth.csv", drop_last)
    return (
        root,
        [],
        rf"ISIC_2019_Training_Metadata\.csv: line \d+: metadata row for image '{kept[0]}', which is not in the dataset",
    )


def missing_column(root):
    _edit_csv(root / "train.csv", lambda rows: [r.pop(1) for r in rows])
    return root, [], r"train\.csv: missing required column 'diagnosis' \(found: id_code\)"


CASES = {
    "missing image": ("aptos2019", missing_image),
    "corrupt image": ("isic2019", corrupt_image),
    "unknown class (ISIC UNK)": ("isic2019", unknown_class_isic),
    "unknown class (APTOS grade)": ("aptos2019", unknown_grade_aptos),
    "malformed label": ("chexpert", malformed_label),
    "duplicate image id": ("aptos2019", duplicate_id),
    "path escaping the root": ("chexpert", escaping_path),
    "class with no examples": ("isic2019", empty_class),
    "metadata row of an image not in the dataset": ("isic2019", orphan_metadata),
    "csv missing a column": ("aptos2019", missing_column),
}


def _run(args: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(args)
    err = capsys.readouterr().err
    return rc, " ".join(err.split())  # the console wraps long lines; compare the words


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_names_the_row_and_leaves_the_warehouse_unchanged(case, suite_dir, tmp_path, ingested_db, capsys):
    adapter, corrupt = CASES[case]
    path, extra, pattern = corrupt(_copy(suite_dir, tmp_path, adapter))
    before = snapshot(ingested_db)
    rc, err = _run(["ingest", adapter, str(path), "--name", f"bad-{adapter}", "--db", str(ingested_db), *extra], capsys)
    assert rc == 1
    assert re.search(pattern, err), err
    assert err.startswith("error: ")
    assert snapshot(ingested_db) == before
    with pytest.raises(InputError) as info:  # the library raises the same one-line message
        ingest(adapter, path, "x")
    assert "\n" not in str(info.value) and re.search(pattern, str(info.value))


def test_manifest_unknown_class_and_escaping_path(tmp_path):
    (tmp_path / "img").mkdir()
    for i in range(6):
        Image.fromarray(np.zeros((8, 8), dtype=np.uint8)).save(tmp_path / "img" / f"{i}.png")
    rows = [["path", "label"]] + [[f"img/{i}.png", "ab"[i % 2]] for i in range(6)]
    rows[4][1] = "zebra"
    _edit_csv(tmp_path / "manifest.csv", lambda r: r.extend(rows))
    with pytest.raises(InputError, match=r"manifest\.csv: line 5: unknown class 'zebra' \(expected one of: a, b\)"):
        ingest("manifest", tmp_path, "m", task="multiclass", classes="a,b")
    rows[4] = ["/etc/passwd", "a"]
    (tmp_path / "manifest.csv").unlink()
    _edit_csv(tmp_path / "manifest.csv", lambda r: r.extend(rows))
    with pytest.raises(InputError, match=r"line 5: path '/etc/passwd' escapes the dataset root"):
        ingest("manifest", tmp_path, "m", task="multiclass")


def test_existing_name_needs_replace(suite_dir, ingested_db, capsys):
    before = snapshot(ingested_db)
    rc, err = _run(
        ["ingest", "aptos2019", str(suite_dir / "aptos2019"), "--name", "isic2019", "--db", str(ingested_db)], capsys
    )
    assert rc == 1 and "dataset 'isic2019' already exists" in err and "--replace" in err
    assert snapshot(ingested_db) == before
    rc, _ = _run(
        [
            "ingest",
            "aptos2019",
            str(suite_dir / "aptos2019"),
            "--name",
            "isic2019",
            "--replace",
            "--db",
            str(ingested_db),
        ],
        capsys,
    )
    assert rc == 0
    con = duckdb.connect(str(ingested_db), read_only=True)
    assert con.execute("select adapter, n_images from datasets where dataset_id = 'isic2019'").fetchone() == (
        "aptos2019",
        len(list((suite_dir / "aptos2019" / "train_images").glob("*.png"))),
    )
    con.close()


def test_skip_bad_records_bad_rows_and_ingests_the_rest(suite_dir, tmp_path, ingested_db, capsys):
    root = _copy(suite_dir, tmp_path, "aptos2019")
    with open(root / "train.csv", newline="") as fh:
        n_rows = len(list(csv.reader(fh))) - 1
    missing_image(root)
    _edit_csv(root / "train.csv", lambda rows: rows[8].__setitem__(1, "x"))  # malformed grade
    _edit_csv(root / "train.csv", lambda rows: rows.append(list(rows[2])))  # duplicate id
    rc, _ = _run(
        ["ingest", "aptos2019", str(root), "--name", "partial", "--skip-bad", "--db", str(ingested_db)], capsys
    )
    assert rc == 0
    con = duckdb.connect(str(ingested_db), read_only=True)
    errors = con.execute(
        "select row_number, file, message from ingest_errors where dataset_id = 'partial' order by row_number"
    ).fetchall()
    n_images = con.execute("select n_images from datasets where dataset_id = 'partial'").fetchone()[0]
    con.close()
    assert len(errors) == 3 and all(f == "train.csv" for _, f, _ in errors)
    by_line = {line: message for line, _, message in errors}
    assert "malformed label value 'x'" in by_line[9]
    assert "image file not found" in by_line[5]  # the 4th image in id order is the one deleted
    assert errors[-1][0] == n_rows + 2 and "duplicate image id" in errors[-1][2]
    assert n_images == n_rows - 2  # the appended duplicate row adds none; two rows are dropped

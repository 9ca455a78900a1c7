"""Ingest warns, in one line naming the dataset, split, class and counts, when the test split
cannot support the image-level bootstrap (ingest.strata); it still ingests, and is silent otherwise."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from PIL import Image

from crsbench.cli import main


def _manifest(folder, test_groups_of_c):
    """12 train, 6 calib, 8 test images of classes a, b, c; the test split's two c images are in
    the patients `test_groups_of_c`, the other test images in patients of their own."""
    rows = []
    plan = [("train", i % 3) for i in range(12)] + [("calib", i % 3) for i in range(6)]
    plan += [("test", c) for c in (0, 0, 0, 1, 1, 1, 2, 2)]
    (folder / "img").mkdir()
    for i, (split, c) in enumerate(plan):
        rel = f"img/{i:02d}.png"
        Image.fromarray(np.full((8, 8), i * 9, dtype=np.uint8)).save(folder / rel)
        group = f"g{i}"
        if split == "test" and c == 2:
            group = test_groups_of_c[i - 24]
        rows.append({"path": rel, "label": "abc"[c], "group": group, "split": split})
    pd.DataFrame(rows).to_csv(folder / "manifest.csv", index=False)
    return folder / "manifest.csv"


def _ingest(capsys, csv, db, *extra):
    code = main([*extra, "ingest", "manifest", str(csv), "--name", "m", "--db", str(db), "-o", "task=multiclass"])
    return code, capsys.readouterr().out


def test_a_class_in_one_test_patient_is_warned_in_one_line(tmp_path, capsys):
    csv = _manifest(tmp_path, ["pc", "pc"])  # both test images of c from one patient
    code, out = _ingest(capsys, csv, tmp_path / "w.duckdb")
    assert code == 0 and "ingested m (manifest, multiclass, 3 labels)" in out
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: dataset 'm': the test split cannot support the image-level bootstrap: class 'c' is held "
        "by 1 test group(s) (2 image(s)), fewer than 2; 'crsbench analyze bootstrap' and 'analyze subgroups' "
        "will refuse it (add test images of that class from other patients)"
    ]
    code, out = _ingest(capsys, csv, tmp_path / "j.duckdb", "--json")
    assert code == 0 and len(json.loads(out)["warnings"]) == 1


def test_a_supported_split_gives_no_warning(tmp_path, capsys):
    csv = _manifest(tmp_path, ["pc", "pd"])
    code, out = _ingest(capsys, csv, tmp_path / "w.duckdb")
    assert code == 0 and "warning" not in out

"""`crsbench make-suite / ingest / shift / datasets / adapters` through `crsbench.cli.main`."""

from __future__ import annotations

import json

import duckdb

from crsbench.cli import main


def _json(args, capsys):
    capsys.readouterr()
    rc = main(["--json", *args])
    return rc, capsys.readouterr()


def test_make_suite_then_ingest_and_shift(tmp_path, capsys):
    rc, out = _json(["make-suite", str(tmp_path / "s"), "--scale", "0.3", "--image-size", "48"], capsys)
    assert rc == 0
    paths = json.loads(out.out)["datasets"]
    assert set(paths) == {"isic2019", "aptos2019", "chexpert", "mimic-cxr"}
    db = str(tmp_path / "w.duckdb")
    assert main(["ingest", "chexpert", paths["chexpert"], "--name", "cx", "--db", db, "-o", "uncertainty=ones"]) == 0
    rc, out = _json(
        ["ingest", "mimic-cxr", paths["mimic-cxr"], "--name", "mimic", "--db", db, "--shift-source", "cx"], capsys
    )
    assert rc == 0 and json.loads(out.out)["task"] == "multilabel"
    rc, out = _json(["datasets", "--db", db], capsys)
    rows = {r["dataset"]: r for r in json.loads(out.out)["datasets"]}
    assert rows["cx"]["shift_to"] == "mimic" and rows["cx"]["domain"] == "rad"
    assert rows["cx"]["train"] + rows["cx"]["calib"] + rows["cx"]["test"] == rows["cx"]["images"]
    con = duckdb.connect(db, read_only=True)
    assert (
        json.loads(con.execute("select options from datasets where dataset_id = 'cx'").fetchone()[0])["uncertainty"]
        == "ones"
    )
    con.close()
    assert main(["ingest", "aptos2019", paths["aptos2019"], "--name", "eyes", "--db", db]) == 0
    assert main(["shift", "cx", "eyes", "--db", db]) == 1  # different labels
    assert main(["shift", "mimic", "cx", "--db", db]) == 0


def test_user_errors_exit_1(tmp_path, suite_dir, capsys):
    db = str(tmp_path / "w.duckdb")
    assert main(["ingest", "nosuch", str(suite_dir), "--name", "x", "--db", db]) == 1
    assert "unknown adapter 'nosuch'" in capsys.readouterr().err
    assert main(["ingest", "chexpert", str(suite_dir / "chexpert"), "--name", "x", "--db", db, "-o", "oops"]) == 1
    assert "KEY=VALUE" in capsys.readouterr().err
    assert (
        main(["ingest", "chexpert", str(suite_dir / "chexpert"), "--name", "x", "--db", db, "-o", "uncertainty=maybe"])
        == 1
    )
    assert "expected one of zeros, ones" in capsys.readouterr().err
    assert main(["ingest", "manifest", str(suite_dir), "--name", "x", "--db", db]) == 1
    assert "needs --option task=" in capsys.readouterr().err
    assert main(["ingest", "isic2019", str(suite_dir / "isic2019"), "--name", "bad/name", "--db", db]) == 1
    assert main(["ingest", "isic2019", str(tmp_path / "absent"), "--name", "x", "--db", db]) == 1
    assert main(["datasets", "--db", str(tmp_path / "none.duckdb")]) == 1
    assert main(["make-suite", str(tmp_path / "s"), "--scale", "0"]) == 1


def test_help_texts(capsys):
    for args in (
        ["--help"],
        ["ingest", "--help"],
        ["make-suite", "--help"],
        ["shift", "--help"],
        ["datasets", "--help"],
        ["adapters", "--help"],
    ):
        assert main(args) == 0
    text = " ".join(capsys.readouterr().out.split())
    for adapter in ("isic2019", "aptos2019", "chexpert", "mimic-cxr", "medmnist", "manifest"):
        assert adapter in text
    assert "uncertainty=zeros" in text and "--skip-bad" in text and "--shift-target" in text


def test_datasets_lists_the_ingested_suite(ingested_db, capsys):
    rc, out = _json(["datasets", "--db", str(ingested_db)], capsys)
    assert rc == 0
    assert [r["dataset"] for r in json.loads(out.out)["datasets"]] == ["aptos2019", "chexpert", "isic2019", "mimic-cxr"]

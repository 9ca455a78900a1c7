"""`crsbench dataset relocate`: a dataset root re-pointed after its images move, only if every image
still hashes as ingested; dataset roots inside the warehouse's directory are stored relative to it."""

from __future__ import annotations

import shutil

import duckdb

from crsbench.cli import main
from crsbench.ingest import ingest
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset, read_dataset


def _root(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("select root from datasets where dataset_id = 'aptos2019'").fetchone()[0]
    finally:
        con.close()


def test_relocate_checks_every_image_then_repoints(ingested_db, suite_dir, tmp_path, capsys):
    moved = tmp_path / "moved" / "aptos"
    shutil.copytree(suite_dir / "aptos2019", moved)
    before = _root(ingested_db)
    victim = sorted(p for p in moved.rglob("*.png"))[0]
    original = victim.read_bytes()
    victim.write_bytes(sorted(p for p in moved.rglob("*.png"))[1].read_bytes())
    assert main(["dataset", "relocate", "aptos2019", str(moved), "--db", str(ingested_db)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and victim.name in err and _root(ingested_db) == before
    victim.write_bytes(original)
    assert main(["dataset", "relocate", "aptos2019", str(moved), "--db", str(ingested_db)]) == 0
    # inside the warehouse's directory: stored relative, so the directory can move as a whole
    assert _root(ingested_db) == "moved/aptos"
    with Warehouse.open(ingested_db, read_only=True) as wh:
        assert read_dataset(wh, "aptos2019").root == moved.absolute()
    assert main(["dataset", "relocate", "nope", str(moved), "--db", str(ingested_db)]) == 1
    assert main(["dataset", "relocate", "aptos2019", str(tmp_path / "absent"), "--db", str(ingested_db)]) == 1


def test_a_root_inside_the_directory_travels_with_it(suite_dir, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(suite_dir / "isic2019", home / "images")
    ds = ingest("isic2019", home / "images", "isic")
    with Warehouse.open(home / "w.duckdb") as wh:
        load_dataset(wh, ds)
    shutil.move(str(home), str(tmp_path / "elsewhere"))
    with Warehouse.open(tmp_path / "elsewhere" / "w.duckdb", read_only=True) as wh:
        again = read_dataset(wh, "isic")
    assert again.root == (tmp_path / "elsewhere" / "images").absolute()
    assert (again.root / again.images.rel_path.iloc[0]).exists()

"""A warehouse directory travels: copied, moved or unpacked anywhere, under hostile folder names, it
reads its own parts from any working directory, read-only or not, and stores no path to itself."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from support.runs_factory import encoder_runs, frame

from crsbench.cli import main
from crsbench.core import CrsbenchError
from crsbench.warehouse import catalog
from crsbench.warehouse.connection import MissingPartsWarning, Warehouse
from crsbench.warehouse.parts import parts_dir_for


def _make(db: Path, encoders: tuple[str, ...]) -> None:
    with Warehouse.open(db) as wh:
        for e in encoders:
            wh.append_runs(frame(encoder_runs(e)))


def _count(db: Path, read_only: bool = True) -> tuple[int, list[str]]:
    with Warehouse.open(db, read_only=read_only) as wh:
        n = int(wh.sql("select count(*) n from runs").n[0])
        encoders = sorted(wh.sql("select distinct encoder_id from runs").encoder_id)
    return n, encoders


def _copy_dir(src: Path, dst: Path) -> Path:
    shutil.copytree(src.parent, dst)
    return dst / src.name


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("template") / "w.duckdb"
    _make(db, ("e1",))
    return db


N_E1 = len(encoder_runs("e1"))


@pytest.mark.parametrize("names", [("st*r", "stXr"), ("br[1]", "br1"), ("sp ace ü", "sp_ace ü")])
def test_hostile_folder_names_count_their_own_runs(template, tmp_path, names, monkeypatch):
    glob_like, plain = (_copy_dir(template, tmp_path / n) for n in names)
    _make(plain, ("e2",))  # the neighbour a glob would also match gets more runs
    monkeypatch.chdir(tmp_path)
    assert _count(glob_like) == (N_E1, ["e1"])
    assert _count(plain) == (N_E1 + len(encoder_runs("e2")), ["e1", "e2"])
    assert _count(glob_like, read_only=False) == (N_E1, ["e1"])


def test_a_question_mark_in_the_path_is_refused_in_one_line(template, tmp_path):
    # DuckDB itself misplaces the write-ahead log of such a file; say so instead of failing half-way.
    db = _copy_dir(template, tmp_path / "what?")
    with pytest.raises(CrsbenchError, match=r"contains '\?'"):
        Warehouse(db)


def test_a_copy_opened_read_only_counts_its_own_runs(template, tmp_path):
    original = _copy_dir(template, tmp_path / "A")
    copy = _copy_dir(original, tmp_path / "B")
    _make(original, ("e2",))  # probe into A after the copy
    assert _count(copy) == (N_E1, ["e1"])
    assert _count(original)[1] == ["e1", "e2"]


def test_a_moved_directory_opens_from_any_working_directory(template, tmp_path, monkeypatch):
    db = _copy_dir(template, tmp_path / "before")
    moved = tmp_path / "after" / "deeper"
    moved.parent.mkdir()
    shutil.move(str(db.parent), str(moved))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    relative = Path("..") / "after" / "deeper" / db.name
    assert _count(relative) == (N_E1, ["e1"])
    assert _count(relative, read_only=False) == (N_E1, ["e1"])
    assert main(["--json", "status", "--db", str(relative)]) == 0


def test_the_file_stores_no_path_to_its_own_directory(template, tmp_path):
    db = _copy_dir(template, tmp_path / "dir")
    store = db.with_name(db.name + ".features.zarr")
    with Warehouse.open(db) as wh:
        from crsbench.features.store import FeatureSetRef

        catalog.record_attrs(wh, str(store), FeatureSetRef("d", "e1"), {"image_digest": "x", "dim": 4, "n_images": 2})
        url = wh.sql("select store_url from feature_sets").store_url[0]
        assert url == store.name
        assert catalog.resolve_url(wh, url) == str(store.absolute())
    con = duckdb.connect(str(db), read_only=True)
    texts = [r[0] or "" for r in con.execute("select sql from duckdb_views() where not internal").fetchall()]
    texts += [
        r[0] or ""
        for r in con.execute(
            "select macro_definition from duckdb_functions() where not internal and macro_definition is not null"
        ).fetchall()
    ]
    con.close()
    assert texts and not [t for t in texts if str(tmp_path) in t]


PLAIN = """
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
if len(sys.argv) > 2:
    con.execute("set file_search_path = ?" .replace("?", "'" + sys.argv[2].replace("'", "''") + "'"))
print(con.execute("select count(*) from runs").fetchone()[0])
"""


def test_plain_duckdb_reads_pending_parts_relative_to_the_warehouse(template, tmp_path):
    db = _copy_dir(template, tmp_path / "it's here")
    run = [sys.executable, "-I", "-c", PLAIN]
    here = subprocess.run([*run, db.name], cwd=db.parent, capture_output=True, text=True, timeout=120)
    assert here.returncode == 0 and int(here.stdout) == N_E1, here.stderr
    away = subprocess.run([*run, str(db), str(db.parent)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert away.returncode == 0 and int(away.stdout) == N_E1, away.stderr


def test_missing_parts_are_named_and_the_rest_still_served(template, tmp_path, capsys):
    db = _copy_dir(template, tmp_path / "dir")
    _make(db, ("e2",))
    with Warehouse.open(db) as wh:
        wh.compact_parts()
    _make(db, ("e3",))
    with Warehouse.open(db):  # a read-write open records the pending part
        pass
    part = next(p for p in (parts_dir_for(db) / "runs").glob("part-*.parquet") if "empty" not in p.name)
    part.unlink()
    with pytest.warns(MissingPartsWarning, match=part.name):
        assert _count(db) == (N_E1 + len(encoder_runs("e2")), ["e1", "e2"])
    shutil.rmtree(parts_dir_for(db))
    with pytest.warns(MissingPartsWarning, match=str(parts_dir_for(db).name)):
        assert _count(db)[1] == ["e1", "e2"]
    assert main(["sql", "--db", str(db), "select count(*) as n from runs"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and part.name in err and "missing" in err


def test_a_newer_schema_names_the_version_needed(template, tmp_path, capsys):
    db = _copy_dir(template, tmp_path / "dir")
    con = duckdb.connect(str(db))
    con.execute(
        "insert into schema_info (version, applied_at, crsbench_version) values (99, current_timestamp, '9.9.0')"
    )
    con.close()
    before = db.read_bytes()
    for read_only in (True, False):
        with pytest.raises(CrsbenchError, match=r"schema v99.*crsbench 9\.9\.0 or later"):
            Warehouse(db, read_only=read_only)
    assert main(["sql", "--db", str(db), "select 1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "9.9.0" in err and str(db) in err
    assert db.read_bytes() == before


@pytest.mark.parametrize(
    "ddl,named",
    [
        ("create table orders (id integer); create view open_orders as select * from orders", "table main.orders"),
        ("create macro tax(x) as x * 1.2", "macro main.tax"),
        ("create schema billing", "schema billing"),
    ],
)
def test_another_applications_duckdb_file_is_refused_never_migrated(tmp_path, capsys, ddl, named):
    db = tmp_path / "their.duckdb"
    con = duckdb.connect(str(db))
    con.execute(ddl)
    con.close()
    before = db.read_bytes()
    for argv in (["warehouse", "init", "--db", str(db)], ["status", "--db", str(db)]):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith(f"error: {db} is not a crsbench warehouse")
        assert named in err and "never migrates" in err and "warehouse init" not in err
    for read_only in (True, False):
        with pytest.raises(CrsbenchError, match="is not a crsbench warehouse"):
            Warehouse(db, read_only=read_only)
    assert db.read_bytes() == before  # not one object added
    assert sorted(p.name for p in tmp_path.iterdir()) == ["their.duckdb"]  # no parts folder either
    con = duckdb.connect(str(db), read_only=True)
    tables = con.execute("select table_name from duckdb_tables()").fetchall()
    con.close()
    assert "schema_info" not in {t for (t,) in tables}


def test_an_empty_duckdb_file_still_becomes_a_warehouse(tmp_path, capsys):
    db = tmp_path / "new.duckdb"
    duckdb.connect(str(db)).close()
    assert main(["warehouse", "init", "--db", str(db)]) == 0
    assert "warehouse ready" in capsys.readouterr().out
    with Warehouse.open(db, read_only=True) as wh:
        assert wh.schema_version() >= 1


def test_the_file_is_in_duckdb_1_4_storage(template):
    con = duckdb.connect(str(template), read_only=True)
    tag = con.execute(
        "select tags['storage_version'] from duckdb_databases() where database_name = current_database()"
    ).fetchone()[0]
    con.close()
    assert tag.startswith("v1.4.0")


def test_provenance_of_every_batch(template):
    with Warehouse.open(template, read_only=True) as wh:
        rows = wh.sql("select * from provenance where kind = 'probe batch'")
    import numpy
    import sklearn
    import torch

    assert len(rows) == 1
    row = rows.iloc[0]
    assert row.numpy == numpy.__version__ and row.scikit_learn == sklearn.__version__
    assert row.torch == torch.__version__.split("+")[0] or row.torch == torch.__version__
    assert row.duckdb == duckdb.__version__ and row.device == "cpu" and row.threads >= 1
    assert row.cpu_capability == torch.backends.cpu.get_cpu_capability()
    assert json.loads(json.dumps(row.crsbench_version)) == __import__("crsbench").__version__


def test_compaction_rewrites_a_file_made_in_duckdb_2_format(tmp_path):
    db = tmp_path / "old.duckdb"
    duckdb.connect(str(db)).close()  # what crsbench before the 1.4 storage setting created
    _make(db, ("e1",))
    with Warehouse.open(db) as wh:
        wh.compact_parts()
        assert int(wh.sql("select count(*) n from runs").n[0]) == N_E1
    con = duckdb.connect(str(db), read_only=True)
    tag = con.execute(
        "select tags['storage_version'] from duckdb_databases() where database_name = current_database()"
    ).fetchone()[0]
    n = con.execute("select count(*) from runs").fetchone()[0]
    con.close()
    assert tag.startswith("v1.4.0") and n == N_E1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.duckdb", "old.duckdb.parts"]

"""`crsbench sql` / `Bench.sql`: read-only for real. Queries only; DuckDB opens no file (not even in
the parts folder, which the sandbox reads through Arrow); the configuration is locked; each refusal
is one line with exit 1. The sandbox works under any folder name and beside the process's other
connections to the file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from support.runs_factory import encoder_runs, frame

from crsbench.bench import Bench
from crsbench.cli import main
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import data_parts

N_RUNS = len(encoder_runs("e1"))


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("sql") / "w.duckdb"
    with Warehouse.open(path) as wh:
        wh.append_runs(frame(encoder_runs("e1")))  # pending parts: the views read Parquet files
    return path


def test_views_over_parts_answer_with_external_access_off(db, capsys):
    assert main(["--json", "sql", "--db", str(db), "select count(*) as n from runs"]) == 0
    assert f'"n": {N_RUNS}' in capsys.readouterr().out


PARTS = "{db}.parts"
REFUSED = [
    "copy (select 1) to '{out}'",
    "copy (select * from runs) to '{parts}/runs/part-99999999999999999999-forged00.parquet' (format parquet)",
    "copy runs to '{parts}/runs/forged.csv'",
    "copy (select 1) to '{parts}/x.csv'",
    "select 1; copy (select 1) to '{out}'",
    "explain analyze copy (select 1) to '{out}'",
    "export database '{tmp}/exported'",
    "select * from read_csv('/etc/passwd')",
    "select * from '/etc/passwd'",
    "select * from read_text('/etc/hostname')",
    "select * from read_blob('{out}.parquet')",
    "select * from read_blob('{db}')",
    "select * from sniff_csv('/etc/passwd')",
    "select * from read_json('/etc/hostname')",
    "copy (select 1) to '{db}.wal'",
    "select * from glob('/etc/*')",
    "select * from glob('{parts}/runs/*')",
    "select * from read_parquet('{parts}/runs/part-*.parquet')",
    "select * from read_parquet('{tmp}/elsewhere/*.parquet')",
    "install httpfs",
    "load httpfs",
    "attach '{out}' as other",
    "attach '{db}' as again",
    "detach memory",
    "use memory",
    "set enable_external_access = true",
    "set allowed_directories = ['/']",
    "set lock_configuration = false",
    "reset enable_external_access",
    "pragma enable_profiling",
    "create temp table t as select 1 as a",
    "create table t (a int)",
    "create or replace view runs as select 1 as a",
    "create macro m(a) as a",
    "create secret s (type s3, key_id 'k', secret 'v')",
    "insert into schema_info select * from schema_info",
    "update schema_info set version = 99",
    "delete from parts_ledger",
    "drop view runs",
    "alter table schema_info add column x int",
    "import database '{tmp}'",
    "checkpoint",
    "vacuum",
    "begin transaction",
]


@pytest.mark.parametrize("query", REFUSED)
def test_writes_reads_elsewhere_and_installs_are_refused(db, tmp_path, capsys, query):
    out = tmp_path / "x.csv"
    (tmp_path / "elsewhere").mkdir()
    duckdb.connect().execute(f"copy (select 1 as a) to '{out}.parquet'")
    duckdb.connect().execute(f"copy (select 1 as a) to '{tmp_path}/elsewhere/a.parquet'")
    before = sorted(p.name for p in Path(PARTS.format(db=db)).rglob("*"))
    text = query.format(out=out, db=db, parts=PARTS.format(db=db), tmp=tmp_path)
    assert main(["sql", "--db", str(db), text]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: query failed")
    assert not out.exists() and not (tmp_path / "exported").exists()
    assert sorted(p.name for p in Path(PARTS.format(db=db)).rglob("*")) == before
    assert Bench(db).sql("select count(*) as n from runs")["n"].item() == N_RUNS


def test_forged_copy_into_the_parts_folder_writes_nothing(db, tmp_path):
    """Issue 34: a COPY into the parts folder once forged run records that compaction then kept."""
    parts = Path(PARTS.format(db=db))
    forged = parts / "runs" / "part-99999999999999999999-forged00.parquet"
    source = str(parts / "runs" / "part-0*.parquet")
    query = f"copy (select * replace (0.999 as auroc) from read_parquet('{source}')) to '{forged}' (format parquet)"
    done = subprocess.run(
        [sys.executable, "-m", "crsbench.cli", "sql", "--db", str(db), query],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error: query failed") and done.stderr.count("\n") == 1
    assert not forged.exists()
    assert not any(p.name.startswith(".tmp-") for p in (parts / "runs").iterdir())
    assert Bench(db).sql("select max(auroc) as a from runs")["a"].item() < 0.999


# `st*r`, `br[1]`, spaces and unicode: each once failed or read another folder's parts (one warehouse each is slow).
@pytest.mark.parametrize("folder", ["st*r", "br[1] with space \u00fcn\u00efc\u00f8d\u00e9 \u96c6"])
def test_sql_works_under_every_folder_name_before_and_after_compaction(tmp_path, folder):
    db = tmp_path / folder / "w.duckdb"
    decoy = tmp_path / folder.replace("*", "X").replace("[1]", "1") / "w.duckdb"  # what the name matches as a glob
    if decoy != db:
        with Warehouse.open(decoy) as wh:
            wh.append_runs(frame(encoder_runs("e2") + encoder_runs("e3")))
    with Warehouse.open(db) as wh:
        wh.append_runs(frame(encoder_runs("e1")))
    bench = Bench(db)
    query = "select count(*) as n, count(distinct encoder_id) as e from runs"
    before = bench.sql(query)
    assert (before["n"].item(), before["e"].item()) == (N_RUNS, 1)
    pending = bench.sql("select distinct part from runs_pending")["part"].tolist()
    assert pending == [data_parts(db.with_name("w.duckdb.parts") / "runs")[0].name]
    assert bench.sql("select count(*) as n from metrics_seed where encoder_id = ?", ["e1"])["n"].item() > 0
    assert bench.compact() == 1
    after = bench.sql(query)
    assert (after["n"].item(), after["e"].item()) == (N_RUNS, 1)
    assert bench.sql("select count(*) as n from runs_pending")["n"].item() == 0


def test_sql_works_beside_the_process_s_own_connections_and_leaks_no_setting(db, tmp_path):
    elsewhere = tmp_path / "mine.csv"
    elsewhere.write_text("a\n7\n")
    plain = duckdb.connect(str(db), read_only=True)  # an analyst's own connection, held open
    try:
        bench = Bench(db)
        for _ in range(3):  # once failed the second time: the shared instance's configuration was locked
            assert bench.sql("select count(*) as n from runs")["n"].item() == N_RUNS
        # the sandbox's settings stayed in the sandbox: the plain connection still reads files and sets options
        assert plain.execute(f"select a from read_csv('{elsewhere}')").fetchall() == [(7,)]
        plain.execute("set threads = 2")
        assert plain.execute("select current_setting('enable_external_access')").fetchall() == [(True,)]
    finally:
        plain.close()


def test_sql_beside_a_read_write_connection_is_one_clear_line(tmp_path):
    db = tmp_path / "w.duckdb"
    with Warehouse.open(db):
        pass
    writer = duckdb.connect(str(db))
    try:
        with pytest.raises(CrsbenchError, match="holds a read-write connection to it; close it or connect with"):
            Bench(db).sql("select 1")
    finally:
        writer.close()


def test_queries_of_every_kind_still_run(db):
    bench = Bench(db)
    for query in ("describe runs", "show tables", "summarize runs", "from runs limit 1", "explain select 1"):
        assert len(bench.sql(query)) > 0, query
    assert bench.sql("with x as (select 41 as a) select a + 1 as a from x")["a"].item() == 42
    assert os.path.isdir(PARTS.format(db=db))

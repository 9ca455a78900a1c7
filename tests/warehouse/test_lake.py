"""The team warehouse (warehouse/lake.py) on a real PostgreSQL server: created once, reopened without
new snapshots, read by the sandbox and by an analyst's own DuckDB, and every bad input refused in one
line with nothing written."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import duckdb
import pytest
from support.fault_support import one_line_user_error
from support.one_model_support import cli
from support.postgres_support import lake_db

from crsbench.core import CrsbenchError
from crsbench.warehouse import lake
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.schema import SCHEMA_VERSION


def _snapshots(db: str) -> int:
    with Warehouse.open(db, read_only=True) as wh:
        return int(wh.sql("select count(*) n from ducklake_snapshots('lake')")["n"].item())


def _pg_tables(conninfo: str) -> list[str]:
    con = duckdb.connect()
    con.execute(f"load '{lake.extension_path('postgres_scanner')}'")
    con.execute(f"attach '{conninfo}' as pg (type postgres, read_only)")
    rows = con.execute(
        "select table_name from duckdb_tables() where database_name = 'pg' "
        "and schema_name not in ('pg_catalog', 'information_schema') order by 1"
    ).fetchall()
    con.close()
    return [r[0] for r in rows]


def test_init_creates_the_schema_and_reopening_adds_no_snapshot(postgres, tmp_path):
    db = lake_db(postgres, "created")
    code, out, err = cli("warehouse", "init", "--db", db, "--data-path", str(tmp_path / "data"))
    assert code == 0, err
    assert f"schema v{SCHEMA_VERSION}" in out
    before = _snapshots(db)
    for _ in range(2):  # read-write opens of an up-to-date warehouse change nothing
        with Warehouse.open(db) as wh:
            assert wh.schema_version() == SCHEMA_VERSION
    assert _snapshots(db) == before
    with Warehouse.open(db, read_only=True) as wh:  # every shipped view binds and reads
        assert wh.sql("select count(*) n from crs_encoder")["n"].item() == 0
        assert "ducklake" in wh.sql("select type from duckdb_databases() where database_name = 'lake'")["type"].item()
        # the data dictionary travels with it: every table, view and table column carries its comment
        bare = wh.sql(
            "select table_name as name from duckdb_tables() where database_name = 'lake' and comment is null "
            "union all select view_name from duckdb_views() where database_name = 'lake' and comment is null "
            "union all select c.table_name || '.' || c.column_name from duckdb_columns() c join duckdb_tables() t "
            "using (database_name, schema_name, table_name) where c.database_name = 'lake' and c.comment is null"
        )
        assert bare.empty, bare


def test_the_sandbox_reads_the_lake_and_nothing_else(postgres, tmp_path):
    db = lake_db(postgres, "sandboxed")
    assert cli("warehouse", "init", "--db", db, "--data-path", str(tmp_path / "d"))[0] == 0
    code, out, err = cli("sql", "select count(*) as n from schema_info", "--db", db)
    assert code == 0 and str(SCHEMA_VERSION) in out, err
    code, _, err = cli("sql", "select * from read_csv('/etc/passwd')", "--db", db)
    one_line_user_error(code, err, "disabled")
    code, _, err = cli("sql", "select * from postgres_query('__ducklake_metadata_lake', 'select 1')", "--db", db)
    one_line_user_error(code, err, "postgres_query")


def test_attach_sql_lines_attach_it_in_a_plain_duckdb(postgres, tmp_path):
    db = lake_db(postgres, "attached")
    assert cli("warehouse", "init", "--db", db, "--data-path", str(tmp_path / "d"))[0] == 0
    code, out, err = cli("warehouse", "attach-sql", "--db", db)
    assert code == 0, err
    con = duckdb.connect()  # an analyst's own client: no crsbench code runs in it
    for statement in con.extract_statements(out):
        con.execute(statement.query)
    assert con.execute("select max(version) from schema_info").fetchone() == (SCHEMA_VERSION,)
    with pytest.raises(duckdb.Error):  # attached read-only
        con.execute("insert into schema_info (version) values (99)")


def test_an_unreachable_catalog_is_one_line(tmp_path):
    db = f"ducklake:postgres:dbname=none host={tmp_path} user=crs"
    code, _, err = cli("status", "--db", db)
    one_line_user_error(code, err, "cannot reach", "PostgreSQL")


def test_another_applications_database_is_refused_and_left_as_it_was(postgres, tmp_path):
    conninfo = postgres.createdb("orders_app")
    con = duckdb.connect()
    con.execute(f"load '{lake.extension_path('postgres_scanner')}'")
    con.execute(f"attach '{conninfo}' as pg (type postgres)")
    con.execute("create table pg.public.orders (id integer)")
    con.close()
    code, _, err = cli("warehouse", "init", "--db", "ducklake:postgres:" + conninfo, "--data-path", str(tmp_path))
    one_line_user_error(code, err, "not a crsbench team warehouse", "orders")
    assert _pg_tables(conninfo) == ["orders"]


def test_a_new_team_warehouse_without_a_data_path_is_refused(postgres):
    db = lake_db(postgres, "no_data_path")
    code, _, err = cli("warehouse", "init", "--db", db)
    one_line_user_error(code, err, "--data-path")
    assert _pg_tables(db.removeprefix("ducklake:postgres:")) == []


def _as_unprivileged_user(cli_args: list[str]) -> list[str]:
    """The CLI as an ordinary user: root writes anywhere, and the refusal is what everyone else gets.
    As root, `nobody` runs the system's Python of this minor version over this environment's packages
    (the interpreter itself may live under /root, which nobody can enter)."""
    code = "import sys; from crsbench.cli import main; sys.exit(main())"
    if os.geteuid() != 0:
        return [sys.executable, "-c", code, *cli_args]
    python = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}", path="/usr/bin:/usr/local/bin")
    if python is None:
        pytest.skip("running as root without a system Python to run the CLI as an ordinary user")
    packages = sysconfig.get_paths()["purelib"]
    boot = f"import site; site.addsitedir({packages!r}); {code}"
    return ["runuser", "-u", "nobody", "--", python, "-c", boot, *cli_args]


def test_a_data_path_without_write_permission_is_refused_and_nothing_written(postgres, tmp_path):
    db = lake_db(postgres, "no_write")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    for folder in (tmp_path, *tmp_path.parents):  # the user must reach it to be refused by it
        if folder.stat().st_uid == os.geteuid() and folder != Path("/"):
            folder.chmod(folder.stat().st_mode | 0o005)
    cli_args = ["warehouse", "init", "--db", db, "--data-path", str(locked)]
    proc = subprocess.run(
        _as_unprivileged_user(cli_args), capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(tmp_path)},
    )  # fmt: skip
    one_line_user_error(proc.returncode, proc.stderr, "not writable", str(locked))
    assert _pg_tables(db.removeprefix("ducklake:postgres:")) == []
    assert list(locked.iterdir()) == []


def test_a_duckdb_the_extensions_were_not_built_for_is_one_line(postgres, tmp_path):
    db = lake_db(postgres, "mismatch")
    code = (
        "import sys, duckdb; duckdb.__version__ = '1.5.6'\n"
        "from crsbench.cli import main; sys.exit(main())\n"
    )  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", code, "warehouse", "init", "--db", db, "--data-path", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    one_line_user_error(proc.returncode, proc.stderr, "duckdb==1.5.5", "1.5.6")
    assert _pg_tables(db.removeprefix("ducklake:postgres:")) == []
    with pytest.raises(CrsbenchError, match=r"duckdb==1\.5\.5"):
        lake.extension_path("ducklake", installed="1.6.0")


def test_a_stopped_server_is_one_line_and_a_restart_resumes(postgres, tmp_path):
    db = lake_db(postgres, "stopped")
    assert cli("warehouse", "init", "--db", db, "--data-path", str(tmp_path / "d"))[0] == 0
    postgres.stop()
    try:
        code, _, err = cli("status", "--db", db)
        one_line_user_error(code, err, "cannot reach", "start the PostgreSQL server")
    finally:
        postgres.start()
    code, _, err = cli("status", "--db", db)
    assert code == 0, err


@pytest.mark.parametrize(
    "args",
    [
        ["leaderboard", "--as-published"],
        ["warehouse", "history"],
        ["warehouse", "attach-sql"],
    ],
)
def test_team_only_options_on_a_lone_file_say_so(tmp_path, args):
    db = tmp_path / "lone.duckdb"
    with Warehouse.open(db):
        pass
    code, _, err = cli(*args, "--db", str(db))
    one_line_user_error(code, err, "team warehouse")


def test_snapshot_of_a_lone_file_says_it_needs_the_team_warehouse(tmp_path):
    db = tmp_path / "lone.duckdb"
    with Warehouse.open(db):
        pass
    code, _, err = cli("warehouse", "snapshot", "--out", str(tmp_path / "copy.duckdb"), "--db", str(db))
    one_line_user_error(code, err, "team warehouse")
    assert not (tmp_path / "copy.duckdb").exists()


def test_locator_parsing_and_passwords_never_shown():
    locator = lake.LakeLocator.parse("ducklake:postgres:dbname=w host=h password=hunter2")
    assert locator.postgres == "dbname=w host=h password=hunter2"
    assert "hunter2" not in locator.shown() and "password=***" in locator.shown()
    assert not lake.is_lake("crsbench.duckdb") and lake.is_lake("ducklake:x.ducklake")
    with pytest.raises(CrsbenchError, match="ducklake:postgres:dbname="):
        lake.LakeLocator.parse("ducklake:")

"""No connection crsbench opens prints DuckDB's own progress bar: DuckDB writes it to stdout once a query
runs past 2 s, which broke a command's --json output on a loaded machine. In a process of its own (as a
CLI command runs; under pytest's capture DuckDB prints no bar at all), each kind of connection (the lone
file read-write and lean, the SQL sandbox, the team warehouse) runs a query that waits 2.3 s, and stdout
stays empty; a plain DuckDB connection shows the same query does print the bar."""

from __future__ import annotations

import subprocess
import sys

from support.postgres_support import lake_db

from crsbench.warehouse.connection import Warehouse

SCRIPT = """
import contextlib, sys, time, duckdb
from crsbench.warehouse.connection import Warehouse
kind, db, data = sys.argv[1], sys.argv[2], (sys.argv[3:] or [None])[0]
options = {"rw": {}, "lean": {"read_only": True, "lean": True}, "sandbox": {"read_only": True, "sandbox": True},
           "lake": {"data_path": data}}
with Warehouse.open(db, **options[kind]) if kind in options else contextlib.nullcontext() as wh:
    con = duckdb.connect() if wh is None else wh.con
    con.create_function("nap", lambda x: (time.sleep(2.3), x)[1], [int], int)
    con.execute("select nap(i::int) from range(1) t(i)").fetchall()  # a scan past 2 s: its progress is measured
"""


def _stdout(kind: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, kind, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_no_connection_crsbench_opens_prints_the_bar(tmp_path):
    db = tmp_path / "wh.duckdb"
    Warehouse.open(db).__enter__().close()
    assert "100%" in _stdout("plain", str(db))
    for kind in ("rw", "lean", "sandbox"):
        assert _stdout(kind, str(db)) == "", kind


def test_no_team_warehouse_connection_prints_it(postgres, tmp_path):
    assert _stdout("lake", lake_db(postgres, "quiet"), str(tmp_path / "data")) == ""

"""Access paths to the views: plain `duckdb` with no crsbench import, crsbench.Warehouse
(pandas), ibis tables, and read-only opens."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from support.runs_factory import PROFILES, encoder_runs, frame

import crsbench
from crsbench.warehouse.panels import freeze_panel

VIEWS = [
    "metrics_seed",
    "axes_cell",
    "axes_encoder",
    "axes_normalised",
    "crs_cell",
    "crs_encoder",
    "pareto_pairs",
    "rank_agreement",
    "axis_correlations",
    "crs_cohort_encoder",
    "crs_cohort_cell",
    "rank_agreement_cohort",
]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("access") / "w.duckdb"
    with crsbench.Warehouse.open(path) as wh:
        wh.append_runs(frame([r for e in PROFILES for r in encoder_runs(e)]))
        freeze_panel(wh, "p", ["e1", "e2", "e3", "e4"])
        wh.compact_parts()  # the rows now live in the file: any client, any working directory
    return path


PLAIN = """
import json, sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
out = {"views": sorted(r[0] for r in con.execute(
           "select view_name from duckdb_views() where not internal").fetchall()),
       "macros": sorted({r[0] for r in con.execute(
           "select function_name from duckdb_functions() where function_type = 'table_macro'"
           " and not internal").fetchall()}),
       "crs": con.execute("select encoder_id, crs, auroc, coalesce(crs_rank, crs_rank_partial) as crs_rank from crs_encoder"
                          " order by encoder_id").fetchall(),
       "tau": con.execute("select kendall_tau from rank_agreement where population = 'panel'").fetchall(),
       "crsbench_imported": any(m == "crsbench" or m.startswith("crsbench.") for m in sys.modules)}
print(json.dumps(out))
"""


def test_plain_duckdb_in_a_fresh_process_sees_the_views(db, tmp_path):
    # -I: isolated mode, no PYTHONPATH / cwd on sys.path; the script imports only duckdb.
    proc = subprocess.run(
        [sys.executable, "-I", "-c", PLAIN, str(db)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert not out["crsbench_imported"]
    assert set(VIEWS) <= set(out["views"])
    assert {"fn_crs_scores", "fn_normalise", "fn_dominance", "fn_rank_agreement"} <= set(out["macros"])
    with crsbench.Warehouse.open(db, read_only=True) as wh:
        mine = wh.sql(
            "select encoder_id, crs, auroc, coalesce(crs_rank, crs_rank_partial) as crs_rank from crs_encoder "
            "order by encoder_id"
        )
        tau = wh.sql("select kendall_tau from rank_agreement where population = 'panel'").kendall_tau[0]
    assert [tuple(r) for r in out["crs"]] == list(mine.itertuples(index=False, name=None))
    assert out["tau"][0][0] == tau


def test_every_view_answers_read_only_as_pandas_and_ibis(db):
    wh = crsbench.Warehouse(db, read_only=True)
    try:
        for view in VIEWS:
            frame_pd = wh.sql(f"select * from {view}")
            table = wh.table(view)
            via_ibis = table.to_pandas()
            assert list(via_ibis.columns) == list(frame_pd.columns), view
            assert len(via_ibis) == len(frame_pd), view
            assert view == "pareto_pairs" or len(frame_pd) > 0, view
        crs = wh.table("crs_encoder")
        top = crs.filter(crs.panel == "p").order_by(crs.crs.desc()).limit(1).to_pandas()
        want = wh.sql("select encoder_id from crs_encoder where panel = ? order by crs desc limit 1", ["p"])
        assert top.encoder_id[0] == want.encoder_id[0]
    finally:
        wh.close()


def test_read_only_open_refuses_writes(db):
    import duckdb

    with crsbench.Warehouse.open(db, read_only=True) as wh, pytest.raises(duckdb.Error):
        wh.sql("insert into panels values ('x', 'fixed', now(), 'v')")


def test_sql_cli_prints_a_view(db, capsys):
    from crsbench.cli import main

    assert main(["--json", "sql", "select encoder_id, crs from crs_encoder order by crs desc", "--db", str(db)]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert len(rows) == 5 and rows[0]["crs"] >= rows[-1]["crs"]
    assert isinstance(pd.DataFrame(rows), pd.DataFrame)


def test_the_ibis_backend_api_works(db):
    with crsbench.Warehouse.open(db, read_only=True) as wh:
        backend = wh.ibis()
        tables = backend.list_tables()
        assert set(VIEWS) <= set(tables) and "runs" in tables
        runs = backend.table("runs")
        n = wh.sql("select count(*) n from runs").n[0]
        assert runs.count().execute() == n
        assert sum(len(b) for b in runs.to_pyarrow_batches(chunk_size=50)) == n
        assert backend.sql("select count(*) as n from crs_encoder").execute().n[0] == len(
            wh.sql("select * from crs_encoder")
        )
        assert backend.get_schema("crs_encoder").names == tuple(wh.sql("select * from crs_encoder").columns)


PLAIN_IBIS = """
import json, sys
import ibis
con = ibis.duckdb.connect(sys.argv[1], read_only=True)
tables = con.list_tables()
runs = con.table("runs").execute()
board = con.table("crs_encoder").execute().sort_values("encoder_id")
counted = con.sql("select count(*) as n from runs").execute()
print(json.dumps({
    "tables": tables,
    "runs": len(runs),
    "run_columns": list(runs.columns),
    "crs": [[e, c] for e, c in zip(board.encoder_id, board.crs)],
    "sql_count": int(counted.n[0]),
    "crsbench_imported": any(m == "crsbench" or m.startswith("crsbench.") for m in sys.modules),
}))
"""


def test_plain_ibis_in_a_fresh_process_reads_tables_views_and_sql(db, tmp_path):
    """The ecosystem's own client, as an analyst calls it: `ibis.duckdb.connect(FILE, read_only=True)`
    (constraints.txt pins a duckdb that the pinned ibis can drive)."""
    proc = subprocess.run(
        [sys.executable, "-I", "-c", PLAIN_IBIS, str(db)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert not out["crsbench_imported"]
    assert set(VIEWS) <= set(out["tables"]) and "runs" in out["tables"]
    with crsbench.Warehouse.open(db, read_only=True) as wh:
        runs = wh.sql("select * from runs")
        board = wh.sql("select encoder_id, crs from crs_encoder order by encoder_id")
    assert out["runs"] == out["sql_count"] == len(runs) == sum(len(encoder_runs(e)) for e in PROFILES)
    assert out["run_columns"] == list(runs.columns)
    assert [tuple(r) for r in out["crs"]] == list(board.itertuples(index=False, name=None))

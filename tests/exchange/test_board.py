"""`crsbench results board DIR`: a folder of bundles as one warehouse any DuckDB client reads; a
rerun adds only new bundles; a bundle of another panel is refused (docs/METHODS.md §22.5)."""

from __future__ import annotations

import duckdb
import pytest
from support.exchange_support import build_sites

from crsbench.analyses.registry import run_analysis
from crsbench.bench import Bench
from crsbench.core import CrsbenchError
from crsbench.reads.report_data import gather
from crsbench.report import render_html
from crsbench.report.html import FigureSink
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel


def test_a_folder_of_bundles_becomes_one_readable_warehouse(tmp_path):
    dbs = build_sites(tmp_path, {"site-a": None, "site-b": None})
    folder = tmp_path / "bundles"
    for site, db in dbs.items():
        Bench(db).results_export("bp", site, folder / f"{site}.zip", replicates=10)
    board = tmp_path / "board.duckdb"
    summary = Bench(board).results_board(folder, allow_unsigned=True)
    assert summary.added == ["site-a.zip", "site-b.zip"] and summary.panel == "bp"
    with Warehouse.open(dbs["site-a"], read_only=True) as own:
        mine = own.sql("select encoder_id, crs from crs_encoder where panel = 'bp' order by encoder_id")
    with duckdb.connect(str(board), read_only=True) as con:  # a plain DuckDB client
        rows = con.execute("select encoder_id, crs from site_scores where site = 'site-a' order by encoder_id").df()
    assert rows.equals(mine)  # anchors adopted from the bundles equal site-a's own
    with Warehouse.open(board) as wh:
        run_analysis(wh, "sites", {"panel": "bp"})
    with Warehouse.open(board, read_only=True) as wh:  # the report renders the board
        html, _ = render_html(gather(wh, None), FigureSink(110))
    section = html[html.index('data-section="sites"') :]
    assert "site-a" in section and "site-b" in section and "consistently across these sites" in section
    again = Bench(board).results_board(folder, allow_unsigned=True)
    assert again.added == [] and again.already == ["site-a.zip", "site-b.zip"]
    with Warehouse.open(dbs["site-a"]) as wh:
        freeze_panel(wh, "other", ["enc_a", "enc_b", "enc_c"], allow_small=True)
    Bench(dbs["site-a"]).results_export("other", "site-a", folder / "zz.zip", replicates=5)
    with pytest.raises(CrsbenchError, match="a board holds one panel"):
        Bench(board).results_board(folder, allow_unsigned=True)

"""Two sites built independently (two processes) export signed bundles; a third warehouse imports
them: the rankings agree (tau = 1, no reversal), the imported aggregates equal each exporter's own
to the bit, and importing again adds nothing (docs/METHODS.md §22)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from support.exchange_support import build_sites, site_tables

from crsbench.analyses.registry import run_analysis
from crsbench.bench import Bench
from crsbench.exchange.export import CELL_COLUMNS
from crsbench.warehouse.connection import Warehouse

PANEL = "bp"


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sites")
    dbs = build_sites(root, {"site-a": None, "site-b": None, "hub": None})
    keys = root / "keys"
    trusted = root / "trusted.pub"
    lines = []
    for site in ("site-a", "site-b"):
        private, public = Bench(dbs[site]).results_keygen(keys, site)
        lines.append(public.read_text())
        Bench(dbs[site]).results_export(PANEL, site, root / f"{site}.zip", key=private, replicates=30)
    trusted.write_text("# the two sites' keys\n" + "".join(lines))
    for site in ("site-a", "site-b"):
        Bench(dbs["hub"]).results_import(root / f"{site}.zip", trusted_keys=trusted)
    return {**dbs, "root": root, "trusted": trusted}


def test_imported_cells_and_scores_equal_each_exporters_own_to_the_bit(sites):
    with Warehouse.open(sites["hub"], read_only=True) as hub:
        for site in ("site-a", "site-b"):
            with Warehouse.open(sites[site], read_only=True) as own:
                mine = own.sql(f"select {', '.join(CELL_COLUMNS)} from axes_cell where regime = 'frozen' order by all")
                ours = own.sql("select encoder_id, crs, auroc from crs_encoder where panel = ? order by all", [PANEL])
            got = hub.sql(f"select {', '.join(CELL_COLUMNS)} from site_cells where site = ? order by all", [site])
            pd.testing.assert_frame_equal(got, mine, check_exact=True, check_dtype=False)
            scored = hub.sql("select encoder_id, crs, auroc from site_scores where site = ? order by all", [site])
            # the hub's anchors are the sites' (same suite), so the site's CRS comes out identical
            pd.testing.assert_frame_equal(scored, ours, check_exact=True)


def test_rankings_agree_across_the_two_sites(sites):
    with Warehouse.open(sites["hub"], read_only=True) as hub:
        result = run_analysis(hub, "sites", {"panel": PANEL}, store=False)
    pairs = result.tables["pairs"]
    assert set(pairs["measure"]) == {"crs", "auroc"} and len(pairs) == 2
    assert (pairs["tau"] == 1.0).all() and (pairs["n_reversals"] == 0).all()
    assert (pairs["n_encoders"] == 4).all() and (pairs["n_replicates"] == 30).all()


def test_importing_the_same_bundle_again_adds_nothing(sites):
    before = site_tables(sites["hub"])
    again = Bench(sites["hub"]).results_import(sites["root"] / "site-a.zip", trusted_keys=sites["trusted"])
    assert again.plan.already and again.added == {}
    after = site_tables(sites["hub"])
    for table, frame in before.items():
        pd.testing.assert_frame_equal(after[table], frame)
    counts = after["site_bundles"]
    assert sorted(counts["site"]) == ["site-a", "site-b"] and counts["trusted"].all()


def test_imported_rows_leave_the_hubs_own_scores_and_panel_alone(sites, tmp_path):
    with Warehouse.open(sites["hub"], read_only=True) as hub:
        crs = hub.sql("select * from crs_encoder order by all")
        anchors = hub.sql("select * from reference_anchors order by all")
    fresh = build_sites(tmp_path, {"hub": None})["hub"]
    with Warehouse.open(fresh, read_only=True) as clean:
        pd.testing.assert_frame_equal(crs, clean.sql("select * from crs_encoder order by all"))
        pd.testing.assert_frame_equal(
            anchors.drop(columns="frozen_at"),
            clean.sql("select * from reference_anchors order by all").drop(columns="frozen_at"),
        )

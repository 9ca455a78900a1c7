"""The round trip on the real demo (`make demo-check`, CRSBENCH_DEMO_OUT): site A is the fresh demo
`make demo-check` built; site B is a second demo built here, independently, in its own process
(without its report). Each exports a signed bundle; a copy of site A imports both through the CLI,
and `analyze sites` gives tau = 1 and no reversal for CRS and AUROC; the imported cells and CRS
equal each exporter's own to the bit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from support.one_model_support import RUN_CLI, cli, env

from crsbench.exchange.export import CELL_COLUMNS
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for

pytestmark = pytest.mark.demo


def test_two_demo_sites_round_trip_through_the_cli(tmp_path):
    demo = Path(os.environ["CRSBENCH_DEMO_OUT"]) / "crsbench.duckdb"
    second = subprocess.run(  # a demo takes ~4 minutes: longer than the cli helper waits
        [sys.executable, "-c", RUN_CLI, "demo", "--out", str(tmp_path / "site-b"), "--no-report", "--replicates", "100"],
        env=env(), capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr[-3000:]
    dbs = {"site-a": demo, "site-b": tmp_path / "site-b" / "crsbench.duckdb"}
    hub = tmp_path / "hub.duckdb"
    shutil.copy(demo, hub)
    shutil.copytree(parts_dir_for(demo), parts_dir_for(hub))
    code, _, err = cli("results", "keygen", "--name", "demo-site", "--dir", str(tmp_path))
    assert code == 0, err
    for site in ("site-a", "site-b"):
        code, _, err = cli("results", "export", "--panel", "demo", "--site", site, "--out", str(tmp_path / f"{site}.zip"),
                           "--key", str(tmp_path / "demo-site.key"), "--replicates", "50", "--db", str(dbs[site]))  # fmt: skip
        assert code == 0, err
        code, _, err = cli("results", "import", str(tmp_path / f"{site}.zip"), "--trusted-keys",
                           str(tmp_path / "demo-site.pub"), "--yes", "--db", str(hub))  # fmt: skip
        assert code == 0, err
    code, out, err = cli("--json", "analyze", "sites", "--db", str(hub))
    assert code == 0, err
    assert "analysis_sites_pairs" in json.loads(out)["tables"]
    with Warehouse.open(hub, read_only=True) as wh:
        pairs = wh.sql("select * from analysis_sites_pairs")
    assert len(pairs) == 2 and (pairs["tau"] == 1.0).all() and (pairs["n_reversals"] == 0).all(), pairs
    for site, db in dbs.items():
        with Warehouse.open(db, read_only=True) as wh:
            own = wh.sql(f"select {', '.join(CELL_COLUMNS)} from axes_cell a where regime = 'frozen' and "
                         "encoder_id in (select encoder_id from reference_panels where panel = 'demo') order by all")  # fmt: skip
            mine = wh.sql(
                "select encoder_id, crs, auroc from crs_encoder where panel = 'demo' and in_panel order by all"
            )
        with Warehouse.open(hub, read_only=True) as wh:
            cells = wh.sql(f"select {', '.join(CELL_COLUMNS)} from site_cells where site = ? order by all", [site])
            scored = wh.sql("select encoder_id, crs, auroc from site_scores where site = ? order by all", [site])
        pd.testing.assert_frame_equal(cells, own, check_exact=True, check_dtype=False)
        pd.testing.assert_frame_equal(scored, mine, check_exact=True)

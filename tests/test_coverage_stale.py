"""Coverage-aware ranks (a one-dataset encoder is partial and unranked by default) and intervals
that know their inputs (a changed run set marks a stored bootstrap stale everywhere it shows)."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.bootstrap_support import ENCODERS, PANEL, _datasets, build_world, cell_batches, copy_world

from crsbench.analyses import run_analysis
from crsbench.bench import Bench
from crsbench.cli import main
from crsbench.cli.output import console
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for

NEW = "enc_new"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """build_world (derm, cxr; panel bp of four encoders), a seeds bootstrap of bp stored, and a
    newcomer probed on derm only, better than every member there."""
    db = build_world(tmp_path_factory.mktemp("coverage"))
    with Warehouse.open(db) as wh:
        run_analysis(wh, "bootstrap", {"panel": PANEL, "replicates": 100, "resample": "seeds", "seed": 1})
        wh.append_runs(*cell_batches(_datasets()["derm"], NEW, 1.6, len(ENCODERS)))
    return db


def run_cli(capsys, db, *args, code=0):
    console.configure(json_mode=True)
    try:
        got = main(["--json", *args, "--db", str(db)])
    finally:
        console.configure()
    out = capsys.readouterr()
    assert got == code, out.err
    return json.loads(out.out) if code == 0 else out.err


def test_a_one_dataset_encoder_is_partial_and_unranked_by_default(world, capsys):
    with Warehouse.open(world, read_only=True) as wh:
        row = wh.sql("select * from crs_encoder where panel = ? and encoder_id = ?", [PANEL, NEW]).iloc[0]
        members = wh.sql("select * from crs_encoder where panel = ? and in_panel", [PANEL])
        derm = wh.sql("select encoder_id, crs from crs_cell where panel = ? and dataset_id = 'derm'", [PANEL])
    assert row["coverage"] == "partial" and list(row["missing_datasets"]) == ["cxr"]
    assert (row["n_datasets"], row["n_panel_datasets"]) == (1, 2)
    assert pd.notna(row["crs"]) and pd.isna(row["crs_rank"])  # scored, not ranked (NULL)
    # the place it would take on its derm-only mean is kept apart; on derm itself it is scored as usual
    assert row["crs_rank_partial"] == 1 + (members["crs"] > row["crs"]).sum()
    derm = derm.set_index("encoder_id")["crs"]
    assert pd.notna(derm[NEW]) and (derm.drop(NEW) <= derm[NEW]).all()
    assert (members["coverage"] == "full").all() and members["crs_rank"].notna().all()

    board = run_cli(capsys, world, "leaderboard", "--panel", PANEL)
    new = next(r for r in board["leaderboard"] if r["encoder_id"] == NEW)
    assert new["crs_rank"] is None and new["coverage"] == "partial" and new["missing_datasets"] == ["cxr"]
    (why,) = board["partial"]
    assert f"{NEW} has complete cells on 1 of the panel's 2 datasets (missing cxr)" in why
    assert "no aggregate rank" in why and "--allow-partial" in why

    marked = run_cli(capsys, world, "leaderboard", "--panel", PANEL, "--allow-partial")
    new = next(r for r in marked["leaderboard"] if r["encoder_id"] == NEW)
    assert new["crs_rank"] == row["crs_rank_partial"] and new["rank_marker"] == "*"
    assert all(r["rank_marker"] == "" for r in marked["leaderboard"] if r["encoder_id"] != NEW)


def test_allow_partial_without_a_panel_is_a_one_line_error(world, capsys):
    err = run_cli(capsys, world, "leaderboard", "--allow-partial", code=1)
    assert "--allow-partial needs --panel P" in err and len(err.strip().splitlines()) == 1


def test_partial_encoders_leave_the_all_population_rank_agreement(world):
    with Warehouse.open(world, read_only=True) as wh:
        n = wh.sql("select population, n from rank_agreement where panel = ?", [PANEL]).set_index("population")["n"]
    assert n["all"] == n["panel"] == len(ENCODERS)


def test_a_changed_run_set_marks_the_stored_intervals_stale(world, tmp_path, capsys):
    with Warehouse.open(world, read_only=True) as wh:
        fresh = wh.sql("select * from crs_encoder_ci where panel = ? and in_panel", [PANEL])
        assert not wh.sql("select stale from bootstrap_freshness where panel = ?", [PANEL])["stale"].any()
    # every member has an interval, or (pinned at one CRS under seeds) a note saying why not
    assert not fresh["stale"].any() and (fresh["crs_lo"].notna() | fresh["crs_note"].notna()).all()
    assert fresh["crs_lo"].notna().any()
    board = run_cli(capsys, world, "leaderboard", "--panel", PANEL)
    assert board["stale"] == [] and board["resample"] == "seeds"
    # the newcomer's runs are not the members': the panel's intervals stay fresh
    assert run_cli(capsys, world, "status")["stale"] == []

    db = copy_world(world, tmp_path)
    # one member run recomputed with another AUROC: the run set the intervals came from is gone
    for part in sorted((parts_dir_for(db) / "runs").glob("*.parquet")):
        table = pq.read_table(part)
        hit = pc.and_(pc.equal(table["encoder_id"], "enc_c"), pc.equal(table["condition"], "clean"))
        if pc.any(hit).as_py():
            auroc = pc.if_else(hit, pc.multiply(table["auroc"], 0.99), table["auroc"])
            pq.write_table(table.set_column(table.schema.get_field_index("auroc"), "auroc", auroc), part)
            break
    with Warehouse.open(db, read_only=True) as wh:
        stale = wh.sql("select * from crs_encoder_ci where panel = ? and in_panel", [PANEL])
    assert stale["stale"].all()
    assert stale[["crs_lo", "crs_hi", "auroc_lo", "auroc_hi", "gap_lo"]].isna().all().all()
    assert (stale["tier"] == stale["crs_rank"].astype(int).astype(str)).all()  # no '=1' from old ties
    board = run_cli(capsys, db, "leaderboard", "--panel", PANEL)
    assert all(r["crs_lo"] is None for r in board["leaderboard"])
    (line,) = board["stale"]
    assert "seeds bootstrap intervals of panel bp are stale" in line
    status = run_cli(capsys, db, "status")
    assert any(f"panel {PANEL}" in s and "stale" in s for s in status["stale"])
    assert any(s.startswith("analysis bootstrap: stale") for s in status["stale"])


def test_a_bootstrap_over_incomplete_member_cells_is_refused(world, tmp_path):
    db = copy_world(world, tmp_path)
    for part in sorted((parts_dir_for(db) / "runs").glob("*.parquet")):
        table = pq.read_table(part)
        hit = pc.and_(pc.equal(table["encoder_id"], "enc_b"), pc.equal(table["seed"], 3))
        hit = pc.and_(hit, pc.and_(pc.equal(table["dataset_id"], "derm"), pc.equal(table["label_fraction"], 0.05)))
        if pc.any(hit).as_py():
            pq.write_table(table.filter(pc.invert(hit)), part)
    with pytest.raises(CrsbenchError) as caught:
        Bench(db).analyze("bootstrap", panel=PANEL, replicates=100, resample="seeds")
    message = str(caught.value)
    assert "member cells are incomplete: derm x enc_b: 1 run(s) missing" in message
    assert "fraction 0.05 seed 3 clean" in message and "\n" not in message

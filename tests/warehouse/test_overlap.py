"""Pretraining overlap (warehouse/overlap.py, view encoder_dataset_overlap, leaderboard
--exclude-overlap): declarations reach the view, overlapping cells are marked, and excluding them
re-ranks at read time against an independent computation, the frozen panel's scores unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from support.runs_factory import (
    encoder_runs,
    frame,
    reference_anchors,
    reference_axes_cell,
    reference_axes_encoder,
    reference_crs,
)

import crsbench
from crsbench.cli import main
from crsbench.core import CrsbenchError
from crsbench.features import get_encoder
from crsbench.features.registry import EncoderEntry, Pretraining
from crsbench.reads.card import card_for
from crsbench.warehouse import catalog
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

MEMBERS = ["e1", "e2", "e3", "e4"]
TOY = "toy-cxr"  # a demo-like encoder declared pretrained on the toy "chexpert"
DATASETS = ("isic2019", "aptos2019", "chexpert")
BASE = get_encoder("tiny-vit")


def _entry(encoder_id: str, pretraining: Pretraining) -> EncoderEntry:
    return dataclasses.replace(BASE, id=encoder_id, pretraining=pretraining)


def _crs_encoder(db) -> pd.DataFrame:
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql("select * from crs_encoder order by panel, encoder_id, regime")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    rows = [r for e in MEMBERS for r in encoder_runs(e, datasets=DATASETS)]
    rows += encoder_runs(TOY, quality=0.86, datasets=DATASETS)
    runs = frame(rows)
    db = tmp_path_factory.mktemp("overlap") / "w.duckdb"
    with Warehouse.open(db) as wh:
        wh.append_runs(runs)
        # what each dataset is (as ingest records it), and one whose source nobody gave
        for name in (*DATASETS, "mystery"):
            wh.con.execute(
                "insert into datasets (dataset_id, adapter, source) values (?, ?, ?)",
                [name, name if name != "mystery" else "folder", name if name != "mystery" else None],
            )
        freeze_panel(wh, "p", MEMBERS)
    before = _crs_encoder(db)
    with Warehouse.open(db) as wh:
        for e in MEMBERS[:3]:
            catalog.upsert_encoder(wh, _entry(e, Pretraining(("imagenet-1k",), "https://example.org/card")))
        catalog.upsert_encoder(wh, _entry("e4", Pretraining()))  # unknown
        catalog.upsert_encoder(wh, _entry(TOY, Pretraining(("chexpert", "mimic-cxr"), "test declaration")))
    return db, runs, before


def test_the_view_says_declared_none_and_unknown(scenario):
    db, _, _ = scenario
    with Warehouse.open(db, read_only=True) as wh:
        view = wh.sql("select * from encoder_dataset_overlap").set_index(["encoder_id", "dataset_id"])
    assert len(view) == 5 * 4  # every (encoder, dataset)
    assert view.loc[(TOY, "chexpert"), "status"] == "declared" and bool(view.loc[(TOY, "chexpert"), "declared"])
    assert view.loc[(TOY, "chexpert"), "pretraining_source"] == "test declaration"
    assert view.loc[(TOY, "isic2019"), "status"] == "none" and not bool(view.loc[(TOY, "isic2019"), "declared"])
    assert view.loc[("e1", "chexpert"), "status"] == "none"
    # unknown pretraining, or a dataset nobody named, is unknown, never none
    assert (view.xs("e4", level="encoder_id")["status"] == "unknown").all()
    assert view.xs("e4", level="encoder_id")["declared"].isna().all()
    assert (view.xs("mystery", level="dataset_id")["status"] == "unknown").all()
    assert view["measured_share"].isna().all()
    assert set(view.index[view["overlap"].astype(bool)]) == {(TOY, "chexpert")}


def test_leaderboard_marks_the_overlapping_encoder(scenario, capsys):
    db, _, _ = scenario
    board = crsbench.Bench(db).leaderboard("p")
    marks = dict(zip(board.board["encoder_id"], board.board["overlap"], strict=True))
    assert marks[TOY] == ["chexpert"] and all(marks[e] == [] for e in MEMBERS)
    assert len(board.overlap) == 1 and f"{TOY} (chexpert)" in board.overlap[0]
    assert main(["leaderboard", "--panel", "p", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"{TOY}†" in out and "† pretrained on the evaluation data" in out
    assert "e1†" not in out


def test_exclude_overlap_leaves_the_cell_out_of_the_rank(scenario):
    db, runs, _ = scenario
    cells = reference_axes_cell(runs)
    anchors = reference_anchors(reference_axes_encoder(cells), MEMBERS)  # frozen with the panel
    full = reference_crs(reference_axes_encoder(cells), MEMBERS, anchors).set_index("encoder_id")
    kept = cells[~((cells.encoder_id == TOY) & (cells.dataset_id == "chexpert"))]
    want = reference_crs(reference_axes_encoder(kept), MEMBERS, anchors).set_index("encoder_id")
    assert abs(want.loc[TOY, "crs"] - full.loc[TOY, "crs"]) > 1e-6  # leaving the cell out matters
    want_rank = 1 + int((full.loc[MEMBERS, "crs"] > want.loc[TOY, "crs"]).sum())

    bench = crsbench.Bench(db)
    board = bench.leaderboard("p", exclude_overlap=True).board.set_index("encoder_id")
    assert board.loc[TOY, "coverage"] == "partial" and list(board.loc[TOY, "missing_datasets"]) == ["chexpert"]
    assert pd.isna(board.loc[TOY, "crs_rank"])  # partial-coverage rules: no aggregate rank
    np.testing.assert_allclose(board.loc[TOY, "crs"], want.loc[TOY, "crs"], atol=1e-12)
    ranked = bench.leaderboard("p", allow_partial=True, exclude_overlap=True).board.set_index("encoder_id")
    assert int(ranked.loc[TOY, "crs_rank"]) == want_rank and ranked.loc[TOY, "rank_marker"] == "*"
    # the members had no overlapping cell: their scores and ranks are the full ones
    plain = bench.leaderboard("p").board.set_index("encoder_id")
    pd.testing.assert_series_equal(board.loc[MEMBERS, "crs"], plain.loc[MEMBERS, "crs"])
    assert plain.loc[TOY, "coverage"] == "full" and not pd.isna(plain.loc[TOY, "crs_rank"])


def test_frozen_panel_scores_are_unchanged(scenario):
    db, _, before = scenario
    crsbench.Bench(db).leaderboard("p", exclude_overlap=True)
    assert _crs_encoder(db).equals(before)


def test_exclude_overlap_needs_a_panel(tmp_path):
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.append_runs(frame(encoder_runs("e1", datasets=DATASETS)))
    with pytest.raises(CrsbenchError, match="needs a frozen panel"):
        crsbench.Bench(tmp_path / "w.duckdb").leaderboard(exclude_overlap=True)


def test_the_card_s_provenance_item_reads_the_view(scenario):
    db, _, _ = scenario
    with Warehouse.open(db, read_only=True) as wh:
        item = card_for(wh, "p").item("provenance")
    # chexpert: the toy declared, e1-e3 declare ImageNet only, e4 unknown; mystery: nobody knows what it is
    assert {k: v for k, v in item.values.items() if k.startswith("chexpert.")} == {
        "chexpert.declared": 1,
        "chexpert.measured": 0,
        "chexpert.none": 3,
        "chexpert.unknown": 1,
    }
    assert item.values["mystery.unknown"] == 5
    text = dict(s.split(": ", 1) for s in item.statements)
    assert text["chexpert"].startswith(f"is chexpert; pretrained on it: {TOY} (declared)")
    assert text["mystery"].startswith("source unknown")
    assert item.warn is not None and "chexpert" in item.warn and item.status == "measured"


def test_the_report_marks_the_encoder_and_explains_the_mark(scenario, tmp_path):
    db, _, _ = scenario
    crsbench.Bench(db).report(tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.count('class="overlap-mark"') == 1 and 'title="pretrained on chexpert"' in html
    assert (
        f"† pretrained on the evaluation data (declared or measured; view encoder_dataset_overlap): {TOY} (chexpert)"
        in html
    )


def test_the_cli_ranks_without_the_overlapping_cells(scenario, capsys):
    db, _, _ = scenario
    assert main(["leaderboard", "--panel", "p", "--exclude-overlap", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if f"{TOY}†" in line)
    assert "partial" in row and "2/3" in row  # chexpert left out: 2 of the panel's 3 datasets
    assert "those cells are left out of its rank (--exclude-overlap)" in out
    assert "no intervals with --exclude-overlap" in out

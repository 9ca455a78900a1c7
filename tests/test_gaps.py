"""What incomplete cells lack (`crsbench/reads/gaps.py`): a panel member's cells in detail, an encoder
outside every panel in one line counting the declared probe settings it has runs of."""

from __future__ import annotations

import pytest
from support.bootstrap_support import build_world, cell_batches, copy_world
from support.synthetic import make_dataset

from crsbench.core import LABEL_FRACTIONS
from crsbench.reads import gaps
from crsbench.reads.gaps import missing_lines, outside_lines
from crsbench.warehouse.connection import Warehouse

KEPT = (0.01, 1.0)  # the label fractions the newcomer is probed at (seed 0 only)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("gaps"))


def newcomer(db, name="enc_new"):
    """`name`, outside the panel, probed on derm at KEPT fractions with seed 0 only."""
    derm = make_dataset("derm", "multiclass", 400, 4, seed=11, split_share=(0.4, 0.1))  # build_world's derm
    runs, preds = cell_batches(derm, name, 1.1, 9)
    keep = runs["label_fraction"].isin(KEPT) & (runs["seed"] == 0)
    with Warehouse.open(db) as wh:
        wh.append_runs(runs[keep], preds[preds["run_id"].isin(runs.loc[keep, "run_id"])])


def test_an_encoder_outside_every_panel_gets_one_line_counting_its_settings(world, tmp_path):
    db = copy_world(world, tmp_path)
    newcomer(db)
    with Warehouse.open(db, read_only=True) as wh:
        declared = wh.sql(
            "select count(distinct (probe, depth, label_fraction)) as n from grid_declared where dataset_id = 'derm'"
        )["n"][0]
        lines, detail = outside_lines(wh), missing_lines(wh)
    assert declared == len(LABEL_FRACTIONS)  # the world's grid: logreg at full depth, every fraction
    assert lines == [f"enc_new: {len(KEPT)} of {declared} probe settings; outside every panel"]
    assert detail == [] and "incomplete" not in lines[0]


def test_without_a_panel_every_cell_is_listed_in_detail_capped(world, tmp_path, monkeypatch):
    db = copy_world(world, tmp_path)
    newcomer(db)
    with Warehouse.open(db, read_only=True) as wh:
        wh.con.execute("create temp table reference_panels as select * from main.reference_panels where false")
        assert outside_lines(wh) == []  # no panel frozen: nothing is outside one
        full = missing_lines(wh)
        monkeypatch.setattr(gaps, "PARTS_SHOWN", 2)
        capped = missing_lines(wh)
    assert full == [
        "derm x enc_new: fraction 0.01 seeds 1-4 missing; fraction 0.05 seeds 0-4 missing; fraction 0.1 seeds 0-4 "
        "missing; fraction 0.25 seeds 0-4 missing; fraction 1 seeds 1-4 missing"
    ]
    assert capped == [
        "derm x enc_new: fraction 0.01 seeds 1-4 missing; fraction 0.05 seeds 0-4 missing; ... and 3 more"
    ]

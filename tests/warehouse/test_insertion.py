"""Fixed-reference invariance (METHODS.md §8, issue 5 item 4): adding an encoder after a panel is
frozen changes no existing row of crs_encoder / crs_cell for that panel, bit for bit."""

from __future__ import annotations

import pandas as pd
import pytest
from support.runs_factory import encoder_runs, frame

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

BASE = ["e1", "e2", "e3", "e4"]


def _snapshot(wh: Warehouse) -> dict[str, pd.DataFrame]:
    return {
        "crs_encoder": wh.sql("select * from crs_encoder where panel = 'p' order by encoder_id, regime"),
        "crs_cell": wh.sql("select * from crs_cell where panel = 'p' order by encoder_id, regime, dataset_id"),
        "cohort": wh.sql("select * from crs_cohort_encoder order by encoder_id, regime"),
    }


@pytest.fixture(scope="module")
def before_after(tmp_path_factory):
    db = tmp_path_factory.mktemp("insert") / "w.duckdb"
    with Warehouse.open(db) as wh:
        # one batch per (encoder, seed): seed means span many Parquet parts, as in a real sweep
        for e in BASE:
            runs = frame(encoder_runs(e))
            for seed in range(5):
                wh.append_runs(runs[runs.seed == seed])
        freeze_panel(wh, "p", BASE)
    with Warehouse.open(db, read_only=True) as wh:
        before = _snapshot(wh)
    # a new encoder that beats the panel everywhere, plus an adapted variant, then more noise
    with Warehouse.open(db) as wh:
        wh.append_runs(frame(encoder_runs("new", quality=0.99)))
        wh.append_runs(frame(encoder_runs("e1", regime="lora-s0", quality=0.95)))
    with Warehouse.open(db, read_only=True) as wh:
        after = _snapshot(wh)
    return before, after


@pytest.mark.parametrize("view", ["crs_encoder", "crs_cell"])
def test_existing_rows_are_bit_for_bit_unchanged(before_after, view):
    before, after = before_after
    old = before[view]
    kept = after[view][after[view].encoder_id.isin(BASE) & (after[view].regime == "frozen")]
    pd.testing.assert_frame_equal(kept.reset_index(drop=True), old.reset_index(drop=True), check_exact=True)
    assert len(after[view]) > len(old)  # the new encoder and the variant were scored


def test_new_encoder_and_variant_are_scored_against_the_panel(before_after):
    _, after = before_after
    enc = after["crs_encoder"].set_index(["encoder_id", "regime"])
    new = enc.loc[("new", "frozen")]
    assert not new.in_panel and new.crs_rank == 1 and new.auroc_rank == 1
    # ranks are against the panel, so the old leader keeps rank 1 as well
    assert (enc.loc[[(e, "frozen") for e in BASE], "crs_rank"] == 1).sum() == 1
    variant = enc.loc[("e1", "lora-s0")]
    assert not variant.in_panel and variant.crs == variant.crs  # scored, not NULL


def test_cohort_mode_does_move_when_an_encoder_is_added(before_after):
    # The contrast METHODS.md §8.6 draws: cohort renormalisation displaces existing scores.
    before, after = before_after
    old = before["cohort"].set_index("encoder_id")
    new = after["cohort"]
    new = new[new.regime == "frozen"].set_index("encoder_id").loc[old.index]
    assert (new.crs - old.crs).abs().max() > 1e-3

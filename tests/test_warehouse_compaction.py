"""Warehouse.compact_parts(): many sweep parts merged into one, nothing lost or duplicated."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from crsbench.cli import main
from crsbench.ingest.types import CrsbenchError
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel
from runs_factory import encoder_runs, frame


def _predictions(runs: pd.DataFrame) -> pd.DataFrame:
    first = runs.head(3)
    return pd.DataFrame({
        "run_id": np.repeat(first.run_id.to_numpy(), 2), "fit_id": np.repeat(first.fit_id.to_numpy(), 2),
        "eval_dataset_id": np.repeat(first.eval_dataset_id.to_numpy(), 2),
        "condition": np.repeat(first.condition.to_numpy(), 2), "row_index": [0, 1] * 3,
        "image_id": [f"img{i}" for i in range(6)], "probs": [[0.25, 0.75]] * 6,
    })


def _parts(db, kind):
    return sorted(p.name for p in (db.parent / (db.name + ".parts") / kind).glob("part-*.parquet")
                  if "empty" not in p.name)


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "w.duckdb"
    with Warehouse.open(path) as wh:
        for e in ("e1", "e2", "e3"):
            runs = frame(encoder_runs(e))
            for seed in range(5):
                batch = runs[runs.seed == seed]
                wh.append_runs(batch, _predictions(batch))
        freeze_panel(wh, "p", ["e1", "e2", "e3"])
    return path


def _state(db):
    with Warehouse.open(db, read_only=True) as wh:
        return (wh.sql("select * from runs order by run_id"),
                wh.sql("select run_id, image_id, probs from predictions order by run_id, image_id"),
                wh.sql("select * from crs_encoder order by encoder_id"))


def test_compaction_keeps_every_row_and_every_score(db):
    runs, preds, crs = _state(db)
    assert len(_parts(db, "runs")) == 15 and len(_parts(db, "predictions")) == 15
    with Warehouse.open(db) as wh:
        assert wh.compact_parts() == 15
    assert len(_parts(db, "runs")) == 1 and _parts(db, "runs") == _parts(db, "predictions")
    runs2, preds2, crs2 = _state(db)
    pd.testing.assert_frame_equal(runs2, runs)
    pd.testing.assert_frame_equal(preds2, preds)
    pd.testing.assert_frame_equal(crs2, crs, check_exact=True)
    with Warehouse.open(db) as wh:  # a later open keeps the merged predictions (no orphan)
        assert wh.compact_parts() == 1
    assert len(_state(db)[1]) == len(preds)


def test_an_interrupted_compaction_is_finished_or_rolled_back(db):
    runs, _, _ = _state(db)
    parts = db.parent / (db.name + ".parts")
    sources = _parts(db, "runs")
    # crashed after the merged runs part landed: the next open deletes the sources
    merged = "part-99999999999999999999-compact-deadbeef.parquet"
    (parts / "runs" / merged).write_bytes((parts / "runs" / sources[0]).read_bytes())
    (parts / f"compact-{merged}.json").write_text(json.dumps(sources[:1]))
    # crashed before: only a merged predictions part exists, and it is removed
    lost = "part-99999999999999999998-compact-feedface.parquet"
    (parts / "predictions" / lost).write_bytes((parts / "predictions" / sources[1]).read_bytes())
    (parts / f"compact-{lost}.json").write_text(json.dumps(sources[1:2]))
    with Warehouse.open(db):
        pass
    assert not list(parts.glob("compact-*.json"))
    assert sources[0] not in _parts(db, "runs") and merged in _parts(db, "runs")
    assert lost not in _parts(db, "predictions") and sources[1] in _parts(db, "runs")
    runs2, _, _ = _state(db)
    pd.testing.assert_frame_equal(runs2, runs)


def test_compaction_needs_a_read_write_open(db):
    with Warehouse.open(db, read_only=True) as wh, pytest.raises(CrsbenchError, match="read-write"):
        wh.compact_parts()


def test_compact_cli(db, capsys):
    assert main(["--json", "warehouse", "compact", "--db", str(db)]) == 0
    assert json.loads(capsys.readouterr().out)["parts_merged"] == 15

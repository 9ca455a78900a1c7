"""Warehouse.compact_parts(): the sweep's parts folded into the file, nothing lost or duplicated."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from support.runs_factory import encoder_runs, frame

from crsbench.cli import main
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel


def _predictions(runs: pd.DataFrame) -> pd.DataFrame:
    first = runs.head(3)
    return pd.DataFrame(
        {
            "run_id": np.repeat(first.run_id.to_numpy(), 2),
            "fit_id": np.repeat(first.fit_id.to_numpy(), 2),
            "eval_dataset_id": np.repeat(first.eval_dataset_id.to_numpy(), 2),
            "condition": np.repeat(first.condition.to_numpy(), 2),
            "row_index": [0, 1] * 3,
            "image_id": [f"img{i}" for i in range(6)],
            "probs": [[0.25, 0.75]] * 6,
        }
    )


def _parts(db, kind):
    return sorted(
        p.name for p in (db.parent / (db.name + ".parts") / kind).glob("part-*.parquet") if "empty" not in p.name
    )


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "w.duckdb"
    with Warehouse.open(path) as wh:
        for e in ("e1", "e2", "e3"):
            runs = frame(encoder_runs(e))
            for seed in range(5):
                batch = runs[runs.seed == seed]
                wh.append_runs(batch, _predictions(batch))
        freeze_panel(wh, "p", ["e1", "e2", "e3"], allow_small=True)
    return path


def _state(db):
    with Warehouse.open(db, read_only=True) as wh:
        return (
            wh.sql("select * from runs order by run_id"),
            wh.sql("select run_id, image_id, probs from predictions order by run_id, image_id"),
            wh.sql("select * from crs_encoder order by encoder_id"),
        )


def test_compaction_folds_every_part_into_the_file_and_keeps_every_score(db, tmp_path):
    runs, preds, crs = _state(db)
    assert len(_parts(db, "runs")) == 15 and len(_parts(db, "predictions")) == 15
    with Warehouse.open(db) as wh:
        assert wh.compact_parts() == 15
        assert wh.sql("select count(*) n from batches").n[0] == 15  # each batch's provenance kept
    assert _parts(db, "runs") == [] and _parts(db, "predictions") == [] and _parts(db, "batches") == []
    runs2, preds2, crs2 = _state(db)
    pd.testing.assert_frame_equal(runs2, runs)
    pd.testing.assert_frame_equal(preds2, preds)
    pd.testing.assert_frame_equal(crs2, crs, check_exact=True)
    # the file alone, without its parts folder, elsewhere, answers the same
    alone = tmp_path / "alone" / "copy.duckdb"
    alone.parent.mkdir()
    shutil.copyfile(db, alone)
    for frame_a, frame_b in zip(_state(alone), (runs, preds, crs), strict=True):
        pd.testing.assert_frame_equal(frame_a, frame_b, check_exact=True)
    with Warehouse.open(db) as wh:
        assert wh.compact_parts() == 0


def test_appending_after_compaction_adds_parts_folded_in_at_the_next(db):
    with Warehouse.open(db) as wh:
        wh.compact_parts()
        extra = frame(encoder_runs("e4"))
        wh.append_runs(extra, _predictions(extra))
    runs, preds, _ = _state(db)
    assert len(_parts(db, "runs")) == 1 and len(runs) == 4 * len(extra)
    assert set(extra.run_id) <= set(runs.run_id)
    with Warehouse.open(db) as wh:
        assert wh.compact_parts() == 1
    runs2, preds2, _ = _state(db)
    pd.testing.assert_frame_equal(runs2, runs)
    pd.testing.assert_frame_equal(preds2, preds)


def test_a_compaction_that_died_after_its_commit_counts_nothing_twice(db):
    runs, preds, crs = _state(db)
    saved = {
        p: p.read_bytes() for p in (db.parent / (db.name + ".parts")).rglob("part-*.parquet") if "empty" not in p.name
    }
    with Warehouse.open(db) as wh:
        wh.compact_parts()
    for path, payload in saved.items():  # as if the process died before deleting its sources
        path.write_bytes(payload)
    state = _state(db)
    pd.testing.assert_frame_equal(state[0], runs)
    pd.testing.assert_frame_equal(state[1], preds)
    with Warehouse.open(db):  # the next read-write open deletes the folded parts
        pass
    assert _parts(db, "runs") == []
    pd.testing.assert_frame_equal(_state(db)[2], crs, check_exact=True)


def test_a_compaction_that_fails_before_its_commit_changes_nothing(db, monkeypatch):
    runs, preds, _ = _state(db)
    before = _parts(db, "runs")
    with Warehouse.open(db) as wh:
        real = wh.con

        class Failing:
            def __getattr__(self, name):
                return getattr(real, name)

            def executemany(self, *args, **kwargs):
                raise OSError("disk full")

        wh.con = Failing()
        with pytest.raises(OSError, match="disk full"):
            wh.compact_parts()
        wh.con = real
        assert wh.sql("select count(*) n from runs_compacted").n[0] == 0
    assert _parts(db, "runs") == before
    pd.testing.assert_frame_equal(_state(db)[0], runs)
    pd.testing.assert_frame_equal(_state(db)[1], preds)


def test_duplicate_run_records_reach_no_view_twice(tmp_path):
    # Two batches hold the same run ids with different numbers: the earliest part wins, with its
    # own predictions, before and after compaction (chosen independently here with pandas).
    db = tmp_path / "dup.duckdb"
    runs = frame(encoder_runs("e1"))
    again = runs.head(20).copy()
    again["auroc"] = 0.123
    with Warehouse.open(db) as wh:
        first = wh.append_runs(runs, _predictions(runs))
        second = wh.append_runs(again, _predictions(again).assign(probs=[[0.9, 0.1]] * 6))
        wh.append_runs(again, None)
    assert first < second
    for compact in (False, True):
        if compact:
            with Warehouse.open(db) as wh:
                wh.compact_parts()
        got, preds, _ = _state(db)
        assert len(got) == got.run_id.nunique() == len(runs)
        want = runs.set_index("run_id").auroc
        assert np.allclose(got.set_index("run_id").auroc.loc[want.index], want)
        assert len(preds) == 6 and all(list(p) == [0.25, 0.75] for p in preds.probs)


def test_compaction_needs_a_read_write_open(db):
    with Warehouse.open(db, read_only=True) as wh, pytest.raises(CrsbenchError, match="read-write"):
        wh.compact_parts()


def test_compact_cli(db, capsys):
    assert main(["--json", "warehouse", "compact", "--db", str(db)]) == 0
    assert json.loads(capsys.readouterr().out)["parts_merged"] == 15

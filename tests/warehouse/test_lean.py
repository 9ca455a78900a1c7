"""Lean opens and the sandbox's score snapshot: one DuckDB thread, and a query over the score views
reads them evaluated first, with the same rows as a plain connection."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from support.runs_factory import PROFILES, encoder_runs, frame

from crsbench.bench import Bench
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel
from crsbench.warehouse.snapshot import LEAN_CONFIG, inputs_read_by


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lean") / "w.duckdb"
    with Warehouse.open(path) as wh:
        wh.append_runs(frame([r for e in PROFILES for r in encoder_runs(e)]))
        freeze_panel(wh, "p", ["e1", "e2", "e3", "e4"])
    return path


KEY = ("panel", "resample", "encoder_id", "regime", "dataset_id", "probe", "depth", "label_fraction", "seed")
KEY += ("condition", "eval_dataset_id")


def nulls_as_none(table: pd.DataFrame) -> pd.DataFrame:
    return table.astype(object).where(table.notna(), None)


def setting(wh: Warehouse, name: str) -> str:
    row = wh.con.execute(f"select current_setting('{name}')").fetchone()
    assert row is not None
    return str(row[0])


@pytest.mark.parametrize("mode", [{"read_only": True}, {"sandbox": True}, {}])
def test_lean_open_runs_one_thread_and_a_plain_open_keeps_the_default(db: Path, mode: dict[str, bool]) -> None:
    with Warehouse.open(db, lean=True, **mode) as wh:
        assert setting(wh, "threads") == "1" == str(LEAN_CONFIG["threads"])
        assert setting(wh, "allocator_flush_threshold") != "128.0 MiB"
    with Warehouse.open(db, read_only=True) as wh:
        assert setting(wh, "allocator_flush_threshold") == "128.0 MiB"  # DuckDB's default, untouched


def test_inputs_read_by_follows_the_views_a_query_names(db: Path) -> None:
    with Warehouse.open(db, read_only=True) as wh:
        # crs_encoder_ci reads the intervals' freshness (run digests) and the scores (cells, gaps)
        assert inputs_read_by(wh.con, "select * from CRS_ENCODER_CI") == [
            "grid_missing",
            "axes_cell",
            "encoder_run_digest",
        ]
        assert inputs_read_by(wh.con, "select * from grid_declared") == []  # upstream of every input
        assert inputs_read_by(wh.con, "select count(*) from runs") == []
        assert inputs_read_by(wh.con, "select 1 as grid_missing_x") == []  # a word, not the view's name
        assert inputs_read_by(wh.con, "select * from grid_missing") == ["grid_missing"]


@pytest.mark.parametrize(
    "query",
    [
        "select * from crs_encoder_ci",
        "select * from crs_encoder",
        "select encoder_id, n_missing, digest from encoder_run_digest",
        "select * from axes_cell",
    ],
)
def test_sandbox_queries_read_the_snapshot_with_the_same_rows(db: Path, query: str, tmp_path: Path) -> None:
    with Warehouse.open(db, read_only=True) as wh:  # a plain connection, no snapshot, default threads
        want = wh.sql(query)
    got = Bench(db).sql(query)
    rows, _ = Bench(db).export(query, "parquet", tmp_path / "out.parquet")
    exported = pd.read_parquet(tmp_path / "out.parquet")
    assert len(want) > 0 and rows == len(want)
    key = [c for c in KEY if c in want.columns]  # each row's identity (list columns do not sort)
    want = want.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True), want)
    # Parquet read back types an all-NULL text column as pandas' string dtype (NaN for None): values compared
    exported = exported.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(nulls_as_none(exported), nulls_as_none(want), check_dtype=False)

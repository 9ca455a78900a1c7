"""The score views evaluate their inputs once: the same answers, fewer evaluations.

`crs_encoder`, `crs_encoder_ci`, `rank_agreement` and `axes_scoped` read each nested view once per
query (not once per use), `axes_cell` asks `grid_missing` for a cell's gaps, `Warehouse.snapshot`
evaluates the score inputs once per command, and a read-write open re-creates the shipped SQL only
when it changed. On a world with a partial newcomer, an incomplete cell, an off-grid extra run and
one fresh and one stale bootstrap: the scores recorded with the views as they were before this
restructuring (tests/data/score_views_before.json), identical answers with and without a snapshot,
and a bounded number of reads of the runs in the plans.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.bootstrap_support import ENCODERS, PANEL, _datasets, build_world, cell_batches

import crsbench.warehouse.connection as connection
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.shipped_sql import DIGEST_VIEW
from crsbench.warehouse.snapshot import SCORE_INPUTS

BEFORE = Path(__file__).parents[1] / "data" / "score_views_before.json"
# Every view whose text or inputs changed, and what reads them; ordered so each frame is one order.
VIEWS = (
    "grid_missing",
    "cell_completeness",
    "axes_cell",
    "axes_scoped",
    "crs_cell",
    "crs_encoder",
    "rank_agreement",
    "crs_encoder_ci",
    "bootstrap_freshness",
)
# Not bit-for-bit reproducible across thread schedules (documented in their views): compared to 1e-12.
LOOSE = {"spearman_rho"}
# The digests depend on the random run ids: compared only within one world.
RANDOM = {"input_digest", "current_digest"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """build_world (derm, cxr; panel bp), a newcomer on derm only (partial), a second one whose cxr
    cell lacks a seed (incomplete), an extra knn run, and bootstraps: seeds fresh, images stale."""
    db = build_world(tmp_path_factory.mktemp("once"))
    datasets = _datasets()
    with Warehouse.open(db) as wh:
        wh.append_runs(*cell_batches(datasets["derm"], "enc_new", 1.6, len(ENCODERS)))
        for name, ds in datasets.items():
            runs, preds = cell_batches(ds, "enc_gap", 1.1, len(ENCODERS) + 1)
            if name == "cxr":
                runs = runs[~((runs["label_fraction"] == 0.05) & (runs["seed"] == 1))]
                preds = preds[preds["run_id"].isin(runs["run_id"])]
            wh.append_runs(runs, preds)
        runs, preds = cell_batches(datasets["derm"], "enc_a", 1.3, 0)
        extra = runs.head(1).assign(probe="knn", run_id="extra-knn-run", fit_id="extra-knn-fit")
        wh.append_runs(extra, preds.head(0))
        _store_bootstraps(wh)
    return db


def _store_bootstraps(wh: Warehouse) -> None:
    """Interval rows of panel bp for two resamplings: 'seeds' with the members' current digest
    (fresh), 'images' with another one (stale)."""
    members = sorted(ENCODERS)
    digest = wh.con.execute(
        "select md5(string_agg(encoder_id || '=' || digest, ',' order by encoder_id)) "
        "from encoder_run_digest where list_contains(?, encoder_id)",
        [members],
    ).fetchone()
    assert digest is not None
    rows = []
    for resample, recorded in (("seeds", digest[0]), ("images", "not-the-current-digest")):
        for i, encoder in enumerate(members):
            for metric, lo, hi in (
                ("crs", 0.5 - 0.1 * i, 0.7 - 0.1 * i),
                ("discrimination", 0.8 - 0.05 * i, 0.9 - 0.05 * i),
                ("crs_gap", -0.02 if i < 2 else 0.05 * i, 0.1 + 0.05 * i),
                ("auroc_rank", 1.0 + i, 2.0 + i),
            ):
                rows.append([PANEL, resample, encoder, None, metric, (lo + hi) / 2, lo, hi, 200, recorded])
        rows.append([PANEL, resample, None, None, "kendall_tau", 0.6, 0.2, 1.0, 200, recorded])
    wh.con.executemany(
        "insert into bootstrap_intervals (panel, resample, encoder_id, dataset_id, metric, estimate, lo, hi, "
        "replicates, input_digest) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def _frame(wh: Warehouse, view: str) -> pd.DataFrame:
    return wh.sql(f"select * from {view} order by all")


def _plain(value: object) -> object:
    """A cell as JSON holds it: NaN/NULL as None, arrays as lists."""
    if isinstance(value, np.ndarray | list | tuple):
        return [_plain(v) for v in value]
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    return value.item() if isinstance(value, np.generic) else value


def _records(frame: pd.DataFrame) -> list[dict[str, object]]:
    columns = [c for c in frame.columns if c not in RANDOM]
    return [{c: _plain(row[c]) for c in columns} for row in frame.to_dict("records")]


def _same(got: list[dict[str, object]], want: list[dict[str, object]]) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        for column, value in w.items():
            if column in LOOSE and value is not None and g[column] is not None:
                if abs(float(g[column]) - float(value)) > 1e-12:  # type: ignore[arg-type]
                    return False
            elif g[column] != value:
                return False
    return True


def test_the_views_give_the_scores_recorded_before_the_restructuring(world: Path) -> None:
    before = json.loads(BEFORE.read_text(encoding="utf-8"))
    with Warehouse.open(world, read_only=True) as wh:
        board = wh.sql("select coverage, stale, tier from crs_encoder_ci where panel = ? order by all", [PANEL])
        for view in VIEWS:
            assert _same(_records(_frame(wh, view)), before[view]), view
    # The world holds what the recorded frames are meant to cover.
    assert {"full", "partial"} <= set(board["coverage"]) and set(board["stale"]) == {True, False}
    assert "=1" in set(board["tier"])
    assert any(r["n_missing"] > 0 for r in before["cell_completeness"])
    assert any(r["n_extra"] > 0 for r in before["cell_completeness"])


def test_a_snapshot_answers_every_score_question_as_the_views_do(world: Path) -> None:
    with Warehouse.open(world, read_only=True) as wh:
        plain = {view: _frame(wh, view) for view in VIEWS}
        with wh.snapshot():
            temporary = {
                r[0] for r in wh.con.execute("select table_name from duckdb_tables() where temporary").fetchall()
            }
            snapped = {view: _frame(wh, view) for view in VIEWS}
        left = wh.con.execute("select count(*) from duckdb_tables() where temporary").fetchone()
    assert temporary == set(SCORE_INPUTS) and left == (0,)
    for view in VIEWS:
        a, b = plain[view], snapped[view]
        loose = [c for c in a.columns if c in LOOSE]
        assert a.drop(columns=loose).equals(b.drop(columns=loose)), view
        for column in loose:
            assert np.allclose(a[column].astype(float), b[column].astype(float), rtol=0, atol=1e-12, equal_nan=True)


def _runs_reads(wh: Warehouse, view: str) -> int:
    """How many times the plan of `view` reads the `runs` view: each read scans retired_fits once."""
    (row,) = wh.con.execute(f"explain (format json) select * from {view}").fetchall()

    def scans(node: dict) -> int:
        own = node.get("name") == "SEQ_SCAN" and str(node.get("extra_info", {}).get("Table", "")).endswith(
            ".retired_fits"
        )
        return int(own) + sum(scans(child) for child in node.get("children", []))

    return sum(scans(node) for node in json.loads(row[-1]))


def test_the_score_views_read_the_runs_a_bounded_number_of_times(world: Path) -> None:
    # Before: axes_cell 10, crs_encoder 20, rank_agreement 40, crs_encoder_ci 34 reads of `runs`
    # (measured on the demo warehouse: each nesting level joined the declared grid again).
    with Warehouse.open(world, read_only=True) as wh:
        reads = {v: _runs_reads(wh, v) for v in ("axes_cell", "crs_encoder", "rank_agreement", "crs_encoder_ci")}
        with wh.snapshot():
            snapped = _runs_reads(wh, "crs_encoder_ci")
    assert reads == {"axes_cell": 4, "crs_encoder": 4, "rank_agreement": 4, "crs_encoder_ci": 8}, reads
    assert snapped == 0


def test_a_read_write_open_recreates_the_sql_only_when_it_changed(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.bootstrap_support import copy_world

    db = copy_world(world, tmp_path)
    applied: list[int] = []
    real = connection.apply_sql_files
    monkeypatch.setattr(connection, "apply_sql_files", lambda con: (applied.append(1), real(con)))

    with Warehouse.open(db) as wh:  # nothing changed since the world was built
        digest = wh.con.execute(f"select digest from {DIGEST_VIEW}").fetchone()
        wh.con.execute("drop view crs_encoder_ci")
    assert applied == [] and digest is not None
    with Warehouse.open(db) as wh:  # a dropped view: re-created, with its comment
        comment = wh.con.execute("select comment from duckdb_views() where view_name = 'crs_encoder_ci'").fetchone()
    assert applied == [1] and comment is not None and "bootstrap" in str(comment[0])
    with Warehouse.open(db):
        pass
    assert applied == [1]

    shipped = connection.shipped_digest
    monkeypatch.setattr(connection, "shipped_digest", lambda con, s: shipped(con, [*s, "-- a newer crsbench"]))
    with Warehouse.open(db):  # other shipped SQL (a new crsbench): re-created
        pass
    assert applied == [1, 1]

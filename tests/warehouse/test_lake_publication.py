"""Publications are snapshots (warehouse/lake_snapshots.py): on a team warehouse a frozen panel records
the snapshot its freeze committed; `leaderboard --as-published` reproduces the leaderboard printed at
freeze time byte for byte after more encoders arrive; `warehouse snapshot` gives a lone file that a
plain DuckDB client reads with the same `crs_encoder`; `warehouse history` names every commit."""

from __future__ import annotations

import json

import duckdb
import pandas as pd
import pytest
from support.fault_support import one_line_user_error
from support.one_model_support import cli
from support.postgres_support import lake_data_path, lake_db
from support.runs_factory import encoder_runs, frame

from crsbench.warehouse.connection import Warehouse

BOARD = "select * from crs_encoder order by panel, encoder_id, regime"


@pytest.fixture(scope="module", params=["local", "s3"])
def published(request, postgres, tmp_path_factory):
    """A team warehouse with e1-e4 probed and panel p frozen, the leaderboard printed then, and e5
    added afterwards; its data path on a local folder, then on the moto S3 server."""
    folder = tmp_path_factory.mktemp("published")
    with lake_data_path(request.param, folder) as where:
        yield build_published(lake_db(postgres, f"published_{request.param}"), folder, where)


def build_published(db: str, folder, data_path: str):
    with Warehouse.open(db, data_path=data_path) as wh:
        wh.append_runs(frame([r for e in ("e1", "e2", "e3", "e4") for r in encoder_runs(e)]))
    code, _, err = cli("panel", "freeze", "p", "--encoders", "e1,e2,e3,e4", "--db", db)
    assert code == 0, err
    code, at_freeze, err = cli("leaderboard", "--db", db)
    assert code == 0, err
    with Warehouse.open(db, read_only=True) as wh:
        board_at_freeze = wh.sql(BOARD)
    with Warehouse.open(db) as wh:  # a later team member adds an encoder
        wh.append_runs(frame(encoder_runs("e5")))
    return db, folder, at_freeze, board_at_freeze


def test_as_published_prints_the_freeze_time_leaderboard_byte_for_byte(published):
    db, _, at_freeze, _ = published
    code, now, err = cli("leaderboard", "--db", db)
    assert code == 0, err
    assert "e5" in now and now != at_freeze  # the live leaderboard has moved on
    code, out, err = cli("warehouse", "compact", "--db", db)  # inlined rows flushed, batch files merged
    assert code == 0 and "merged" in out, err
    code, as_published, err = cli("leaderboard", "--as-published", "--db", db)
    assert code == 0, err
    assert as_published == at_freeze  # time travel reads the snapshot's own files and rows
    code, as_published_p, err = cli("leaderboard", "--as-published", "--panel", "p", "--db", db)
    assert code == 0 and as_published_p == at_freeze, err


def test_the_publication_names_the_freeze_commit(published):
    db, *_ = published
    with Warehouse.open(db, read_only=True) as wh:
        snapshot = wh.sql("select snapshot_id from panel_publications where panel = 'p'")["snapshot_id"].item()
        commit = wh.sql("select commit_message from ducklake_snapshots('lake') where snapshot_id = ?", [int(snapshot)])[
            "commit_message"
        ].item()
        frozen_then = wh.sql(f"select count(*) n from panels at (version => {int(snapshot)}) where panel = 'p'")
        before = wh.sql(f"select count(*) n from panels at (version => {int(snapshot) - 1}) where panel = 'p'")
    assert commit.startswith("panel freeze p at ")
    assert frozen_then["n"].item() == 1 and before["n"].item() == 0  # exactly the freeze's commit


def test_history_lists_every_commit_with_what_it_changed(published):
    db, *_ = published
    code, out, err = cli("--json", "warehouse", "history", "--db", db)
    assert code == 0, err
    rows = pd.DataFrame(json.loads(out)["snapshots"])
    assert rows["snapshot_id"].is_monotonic_decreasing
    freeze = rows[rows["message"].fillna("").str.startswith("panel freeze p")]
    assert len(freeze) == 1 and "panels" in freeze["changed"].item()
    batches = rows[rows["message"].fillna("").str.startswith("probe batch")]
    assert len(batches) == 2 and batches["changed"].str.contains("runs_compacted").all()
    code, out, err = cli("warehouse", "history", "--limit", "1", "--db", db)
    assert code == 0 and "warehouse compact" in out and "probe batch" not in out, err  # the newest only


def test_snapshot_copies_a_lone_file_a_plain_duckdb_reads_the_same(published, tmp_path):
    db, _, _, board_at_freeze = published
    with Warehouse.open(db, read_only=True) as wh:
        snapshot = int(wh.sql("select snapshot_id from panel_publications")["snapshot_id"].item())
        live = wh.sql(BOARD)
    out = tmp_path / "published.duckdb"
    code, _, err = cli("warehouse", "snapshot", "--out", str(out), "--at", str(snapshot), "--db", db)
    assert code == 0, err
    with duckdb.connect(str(out), read_only=True) as con:  # no crsbench code: a plain client
        copied = con.execute(BOARD).df()
    assert copied.equals(board_at_freeze)
    latest = tmp_path / "latest.duckdb"
    assert cli("warehouse", "snapshot", "--out", str(latest), "--db", db)[0] == 0
    with duckdb.connect(str(latest), read_only=True) as con:
        assert con.execute(BOARD).df().equals(live)
    code, _, err = cli("warehouse", "snapshot", "--out", str(latest), "--db", db)
    assert code == 1 and "exists" in err


def test_a_panel_name_being_frozen_elsewhere_is_refused_then_frozen_once(published):
    """Two freezes of one name cannot both commit: the name is claimed in the catalog (DuckLake itself
    has no unique constraint). Last in this module: it freezes a second panel."""
    from crsbench.warehouse.lake import LakeLocator
    from crsbench.warehouse.lake_claims import LakeClaims, name_claim

    db, *_ = published
    freeze = ("panel", "freeze", "q", "--encoders", "e1,e2,e3,e4", "--db", db)
    elsewhere = LakeClaims(LakeLocator.parse(db))  # another command, mid-freeze
    try:
        assert elsewhere.acquire([name_claim("q")]) == {name_claim("q")}
        code, _, err = cli(*freeze)
        one_line_user_error(code, err, "'q' is being frozen by another command")
    finally:
        elsewhere.close()
    code, _, err = cli(*freeze)
    assert code == 0, err
    code, _, err = cli(*freeze)
    one_line_user_error(code, err, "'q' was frozen at", "immutable")
    with Warehouse.open(db, read_only=True) as wh:
        assert wh.sql("select count(*) n from panels where panel = 'q'")["n"].item() == 1

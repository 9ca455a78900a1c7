"""Every command works against the team warehouse unchanged: the same session (init, ingest, grid
restrict, extract, probe, panel freeze, leaderboard, analyze, report, export, status) on a lone
DuckDB file and on a DuckLake with a PostgreSQL catalog gives the same scores and the same files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.one_model_support import cli
from support.postgres_support import lake_data_path, lake_db

from crsbench.ingest import make_suite
from crsbench.warehouse.connection import Warehouse

ENCODERS = ("tiny-resnet18", "tiny-convnext")
BOARD = "select * from crs_encoder order by all"


def session(db: str, store: str, suite: Path, out: Path, init: list[str]) -> dict[str, str]:
    """Run the session on `db`; returns what the commands printed (by step)."""
    out.mkdir()
    steps = {
        "init": ["warehouse", "init", *init],
        "ingest": ["ingest", "aptos2019", str(suite / "aptos2019"), "--name", "aptos"],
        "restrict": [
            "grid",
            "restrict",
            "-p",
            "logreg",
            "-p",
            "knn",
            "--depth",
            "1.0",
            "--fraction",
            "1.0",
            "--fraction",
            "0.25",
            "--seed",
            "0",
        ],
        "extract": [
            "extract",
            "-d",
            "aptos",
            *[a for e in ENCODERS for a in ("-e", e)],
            "--batch-size",
            "16",
            "--threads",
            "1",
        ],
        "probe": ["probe"],
        "freeze": ["panel", "freeze", "p", "--encoders", ",".join(ENCODERS), "--allow-small"],
        "leaderboard": ["leaderboard"],
        "analyze": ["--json", "analyze", "e3"],
        "report": ["report", "--out", str(out / "report.html")],
        "export": ["export", "crs_encoder", "--out", str(out / "board.csv")],
        "status": ["--json", "status"],
    }
    printed = {}
    for step, args in steps.items():
        code, stdout, err = (
            cli(*args, "--db", db, "--store", store) if step in ("extract", "probe") else cli(*args, "--db", db)
        )
        assert code == 0, f"{step} on {db}: {err[-3000:]}"
        printed[step] = stdout
    return printed


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    make_suite(root, scale=0.05, image_size=32)
    return root


@pytest.fixture(scope="module")
def lone(suite, tmp_path_factory) -> tuple[Path, str, Path, dict[str, str]]:
    """The session on a lone DuckDB file: its file, the feature store it filled, its outputs and printouts."""
    folder = tmp_path_factory.mktemp("lone")
    # One feature store: the team warehouse's extract finds the lone session's features and catalogs
    # them (the extraction itself is the lone file's; what differs is the catalog it writes to).
    store = str(folder / "features.zarr")
    printed = session(str(folder / "bench.duckdb"), store, suite, folder / "out", [])
    return folder / "bench.duckdb", store, folder / "out", printed


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["local", "s3"])
def test_the_same_session_on_a_lone_file_and_on_the_team_warehouse(postgres, suite, lone, tmp_path, kind):
    lone_db, store, lone_out, on_lone = lone
    team = lake_db(postgres, f"session_{kind}")
    with lake_data_path(kind, tmp_path) as where:
        on_team = session(team, store, suite, tmp_path / "team-out", ["--data-path", where])
        with Warehouse.open(lone_db, read_only=True) as a, Warehouse.open(team, read_only=True) as b:
            lone_board, team_board = a.sql(BOARD), b.sql(BOARD)
            depths = "select * from analysis_e3_depths order by all"
            assert a.sql(depths).equals(b.sql(depths))
    assert len(lone_board) == len(ENCODERS) and lone_board.equals(team_board)
    assert on_lone["leaderboard"] == on_team["leaderboard"]
    assert (lone_out / "board.csv").read_bytes() == (tmp_path / "team-out" / "board.csv").read_bytes()
    assert (tmp_path / "team-out" / "report.html").stat().st_size > 10_000
    assert json.loads(on_team["status"])["runs"] == json.loads(on_lone["status"])["runs"]

"""A warehouse at rest answers any DuckDB client from any directory: `crsbench probe` folds its parts
into the file as it ends, unless `--no-compact`, another sweep still writes, or another process
holds the file; then the parts stay pending and both probe and `crsbench status` say so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.synthetic import write_features

from crsbench.cli import main
from crsbench.cli.output import console
from crsbench.warehouse import connection
from crsbench.warehouse.at_rest import fold_at_rest
from crsbench.warehouse.claims import FitClaims
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import read_dataset
from crsbench.warehouse.parts import data_parts, parts_dir_for

GRID = ["--probe", "logreg", "--depth", "1.0", "--fraction", "1.0", "--seed", "0", "--batch-size", "1"]


@pytest.fixture
def db(ingested_db: Path) -> Path:
    """The session's suite warehouse with synthetic features of one encoder on one dataset."""
    with Warehouse.open(ingested_db, read_only=True) as wh:
        isic = read_dataset(wh, "isic2019")
    write_features(str(ingested_db) + ".features.zarr", isic, "enc", 8, depths=(1.0,), chunk_rows=64)
    return ingested_db


def _json(argv: list[str], capsys: pytest.CaptureFixture) -> dict:
    console.configure(json_mode=True)
    try:
        assert main(["--json", *argv]) == 0
    finally:
        console.configure()
    return json.loads(capsys.readouterr().out)


def _probe(db: Path, capsys: pytest.CaptureFixture, *extra: str) -> dict:
    return _json(["probe", "-e", "enc", "-d", "isic2019", *GRID, *extra, "--db", str(db)], capsys)


def _pending(db: Path) -> int:
    return len(data_parts(parts_dir_for(db) / "runs"))


PLAIN = """
import json, sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
print(json.dumps({
    "runs": con.execute("select count(*) from runs").fetchone()[0],
    "metrics_seed": con.execute("select count(*) from metrics_seed").fetchone()[0],
    "crs_encoder": con.execute("select count(*) from crs_encoder").fetchone()[0],
    "crsbench_imported": any(m.split(".")[0] == "crsbench" for m in sys.modules),
}))
"""


def test_plain_duckdb_from_another_directory_reads_runs_right_after_probe(db, capsys):
    report = _probe(db, capsys)
    assert report["fitted"] == 1 and report["runs"] > 0
    assert report["compacted"] == report["batches"] == 1 and report["pending_parts"] == 0
    assert _pending(db) == 0
    done = subprocess.run(
        [sys.executable, "-c", PLAIN, str(db)], cwd="/", capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    plain = json.loads(done.stdout)
    assert plain["runs"] == report["runs"] and not plain["crsbench_imported"]
    assert plain["metrics_seed"] > 0 and plain["crs_encoder"] >= 0
    status = _json(["status", "--db", str(db)], capsys)
    assert status["pending_parts"] == 0 and status["sweeps_running"] == 0


def test_no_compact_keeps_the_parts_and_status_says_so(db, capsys):
    report = _probe(db, capsys, "--no-compact")
    assert report["compacted"] == 0 and report["pending_parts"] == report["batches"] == _pending(db) == 1
    assert "--no-compact" in report["pending_reason"]
    status = _json(["status", "--db", str(db)], capsys)
    assert status["pending_parts"] == 1 and status["counts"]["runs"] == report["runs"]
    assert main(["status", "--db", str(db)]) == 0
    assert "1 run parts pending" in capsys.readouterr().out.replace("\n", " ")
    assert main(["status", "--db", str(db)]) == 0
    assert f"'crsbench warehouse compact --db {db}'" in capsys.readouterr().out.replace("\n", "")
    assert _json(["warehouse", "compact", "--db", str(db)], capsys)["parts_merged"] == 1
    assert _json(["status", "--db", str(db)], capsys)["pending_parts"] == 0


def test_a_sweep_still_running_keeps_the_parts_and_the_part_views(db, capsys):
    with FitClaims(parts_dir_for(db)):  # another sweep, alive and writing
        report = _probe(db, capsys)
        assert report["compacted"] == 0 and report["pending_parts"] == _pending(db) == 1
        assert "1 other sweep(s) still write parts" in report["pending_reason"]
        status = _json(["status", "--db", str(db)], capsys)
        assert (status["pending_parts"], status["sweeps_running"]) == (1, 1)
        # An explicit compaction folds what is there, and the views keep reading the folder the sweep writes to.
        assert _json(["warehouse", "compact", "--db", str(db)], capsys)["parts_merged"] == 1
        with Warehouse.open(db, read_only=True) as wh:
            sql = wh.sql("select sql from duckdb_views() where view_name = 'runs_parts' and not temporary")
        assert "read_parquet" in sql["sql"].item()
    assert _json(["status", "--db", str(db)], capsys)["sweeps_running"] == 0


def test_a_file_another_process_holds_is_left_pending_with_the_reason(db, capsys):
    _probe(db, capsys, "--no-compact")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1], read_only=True); "
         "print('open', flush=True); sys.stdin.read()", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        folded = fold_at_rest(db, lock_timeout_s=0.2)
        assert (folded.parts, folded.pending) == (0, 1) and "another process has the file open" in folded.reason
    finally:
        holder.communicate("")
    assert fold_at_rest(db).parts == 1 and _pending(db) == 0


@pytest.mark.parametrize("extra", [[], ["--no-compact"]])
def test_a_read_only_warehouse_is_one_clear_line_before_any_fit(db, capsys, monkeypatch, extra):
    real = connection.os.access
    # As if the file sat on a read-only mount (root ignores permission bits, so they cannot show it here).
    monkeypatch.setattr(
        connection.os, "access", lambda p, mode: not (Path(p) == db and mode & os.W_OK) and real(p, mode)
    )
    assert main(["probe", "-e", "enc", "-d", "isic2019", *GRID, *extra, "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"warehouse {db} is read-only (no write permission on {db})" in err
    assert ("still writes its run parts" in err) == bool(extra)
    assert _pending(db) == 0

"""Many writers on one team warehouse (a real PostgreSQL catalog, warehouse/lake_claims.py): three
`crsbench probe` processes with overlapping encoder subsets compute every fit once and score exactly
as the lone file does; kill -9 of a writer leaves no partial batch and a rerun completes the grid; a
stopped server is one line and a restart resumes. Each runs with the data path on a local folder and on
the moto S3 server the store tests use."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from support.fault_support import CLI, PROBE_ARGS, env, load_synthetic_datasets, one_line_user_error
from support.one_model_support import cli
from support.postgres_support import lake_data_path, lake_db
from support.synthetic import write_features

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import read_dataset
from crsbench.warehouse.grid import restrict_grid

pytestmark = pytest.mark.slow

ENCODERS = ("enc1", "enc2")
PLANNED_FITS = 16 * len(ENCODERS)  # PROBE_ARGS's grid per encoder: 2 sources x 2 probes x 2 fractions x 2 seeds
COMPARED = "run_id, fit_id, condition, auroc, ece, brier, nll, accuracy, n_train, n_test"
BOARD = "select * from crs_encoder order by all"


def build(db: str | Path, data_path: str | None = None) -> None:
    """The fault suite's three datasets (one shift pair) with PROBE_ARGS's grid, so the cells complete."""
    with Warehouse.open(db, data_path=data_path) as wh:
        load_synthetic_datasets(wh)
        restrict_grid(wh.con, ["derm", "cxr", "cxr2"], probes=["logreg", "knn"], depths=[1.0],
                      fractions=[1.0, 0.25], seeds=[0, 1])  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """The features of the encoders, shared by every warehouse of this module (read only)."""
    folder = tmp_path_factory.mktemp("lake-store")
    db = folder / "layout.duckdb"
    build(db)
    with Warehouse.open(db, read_only=True) as wh:
        stored = [read_dataset(wh, n) for n in ("derm", "cxr", "cxr2")]
    url = str(folder / "features.zarr")
    for encoder in ENCODERS:
        for ds in stored:
            write_features(url, ds, encoder, 8, depths=(1.0,), chunk_rows=64, seed=ENCODERS.index(encoder))
    return url


@pytest.fixture(scope="module")
def lone(store, tmp_path_factory) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The same grid on a lone DuckDB file: its runs and, after freezing panel p, its crs_encoder."""
    db = tmp_path_factory.mktemp("lone") / "lone.duckdb"
    build(db)
    _probe(str(db), store)
    code, _, err = cli("panel", "freeze", "p", "--encoders", ",".join(ENCODERS), "--allow-small", "--db", str(db))
    assert code == 0, err
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql(f"select {COMPARED} from runs order by run_id"), wh.sql(BOARD)


def _start(db: str, store: str, encoders: tuple[str, ...] = ENCODERS, batch: int = 1) -> subprocess.Popen:
    chosen = [a for e in encoders for a in ("--encoder", e)]
    args = [*CLI, "--json", *PROBE_ARGS, "--batch-size", str(batch), *chosen, "--db", db, "--store", store]
    return subprocess.Popen(args, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _probe(db: str, store: str) -> dict:
    proc = _start(db, store)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out)


def _raw(db: str) -> pd.DataFrame:
    """Every committed run row, duplicates included (the views would hide none: there are no parts)."""
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql("select * from runs_compacted")


def _committed_parts(db: str) -> dict[str, set[str]]:
    with Warehouse.open(db, read_only=True) as wh:
        return {
            kind: set(wh.sql(f"select distinct part from {kind}_compacted")["part"])
            for kind in ("runs", "predictions", "batches")
        }


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_three_writers_with_overlapping_encoders_compute_each_fit_once(postgres, store, lone, tmp_path, kind):
    with lake_data_path(kind, tmp_path) as where:
        three_writers(lake_db(postgres, f"three_writers_{kind}"), where, store, lone)
        if kind == "s3":
            import s3fs

            files = s3fs.S3FileSystem().find(where.removeprefix("s3://"))
            assert any(f.endswith(".parquet") for f in files), files


def three_writers(db: str, where: str, store: str, lone: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    build(db, where)
    subsets = [("enc1",), ("enc2",), ("enc1", "enc2")]  # the third overlaps both others
    procs = [_start(db, store, s) for s in subsets]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        reports.append(json.loads(out))
    raw = _raw(db)
    assert len(raw) == raw["run_id"].nunique(), "a run was committed twice"
    assert raw["fit_id"].nunique() == PLANNED_FITS
    assert sum(r["fitted"] for r in reports) == PLANNED_FITS, reports
    with Warehouse.open(db, read_only=True) as wh:
        counted = wh.sql("select count(*) n, count(distinct run_id) d from runs")
        claims = wh.sql(
            "select * from postgres_query('__ducklake_metadata_lake', 'select count(*) from crsbench_fit_claims')"
        )
        assert counted["n"].item() == counted["d"].item() == len(raw)
        assert wh.sql(f"select {COMPARED} from runs order by run_id").equals(lone[0])
    assert claims.iloc[0, 0] == 0, "claims left behind"
    code, _, err = cli("panel", "freeze", "p", "--encoders", ",".join(ENCODERS), "--allow-small", "--db", db)
    assert code == 0, err
    with Warehouse.open(db, read_only=True) as wh:
        board = wh.sql(BOARD)
    assert len(board) and board.equals(lone[1])


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_a_writer_killed_mid_sweep_leaves_no_partial_batch_and_a_rerun_completes(postgres, store, lone, tmp_path, kind):
    with lake_data_path(kind, tmp_path) as where:
        killed(lake_db(postgres, f"killed_{kind}"), where, store, lone)


def killed(db: str, where: str, store: str, lone: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    build(db, where)
    proc = _start(db, store)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if len(_committed_parts(db)["runs"]) >= 3:  # a few batches in: kill it in the middle of the sweep
            break
    time.sleep(0.15)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    parts = _committed_parts(db)
    assert len(parts["runs"]) > 0, "the kill came before any batch"
    assert parts["runs"] == parts["batches"] == parts["predictions"], "a partial batch is visible"
    raw = _raw(db)
    assert raw["fit_id"].nunique() < PLANNED_FITS, "the kill came after the last batch"
    report = _probe(db, store)  # the rerun takes the dead writer's claims over at once (same host)
    assert report["skipped"] + report["fitted"] == PLANNED_FITS, report
    raw = _raw(db)
    assert len(raw) == raw["run_id"].nunique() and raw["fit_id"].nunique() == PLANNED_FITS
    with Warehouse.open(db, read_only=True) as wh:
        assert wh.sql(f"select {COMPARED} from runs order by run_id").equals(lone[0])


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_a_server_stopped_mid_sweep_is_one_line_and_a_restart_resumes(postgres, store, lone, tmp_path, kind):
    with lake_data_path(kind, tmp_path) as where:
        stopped(postgres, lake_db(postgres, f"stopped_{kind}"), where, store, lone)


def stopped(postgres, db: str, where: str, store: str, lone: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    build(db, where)
    proc = _start(db, store)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and len(_committed_parts(db)["runs"]) < 2:
        time.sleep(0.2)
    postgres.stop()
    try:
        _, err = proc.communicate(timeout=300)
        one_line_user_error(proc.returncode, err, "PostgreSQL")
        code, _, err = cli("probe", *PROBE_ARGS[1:], "--db", db, "--store", store)
        one_line_user_error(code, err, "cannot reach", "start the PostgreSQL server")
    finally:
        postgres.start()
    report = _probe(db, store)
    assert report["skipped"] + report["fitted"] == PLANNED_FITS, report
    with Warehouse.open(db, read_only=True) as wh:
        assert wh.sql(f"select {COMPARED} from runs order by run_id").equals(lone[0])


STRESS_ROUNDS = 12


def test_a_server_stopped_under_a_writer_again_and_again_is_always_one_line(postgres, tmp_path):
    """The server stopped at a random point of a writer's claim, read and commit traffic, round after round,
    with the data path on S3. Each time: one line and exit 1. (Before the lake's in-memory instance kept
    itself valid, about one round in ten aborted the process in DuckDB's close instead.)"""
    import random
    import sys

    loop = Path(__file__).parents[1] / "support" / "lake_writer_loop.py"
    with lake_data_path("s3", tmp_path) as where:
        db = lake_db(postgres, "stopped_again")
        with Warehouse.open(db, data_path=where) as wh:
            wh.con.execute("create table stress_compacted (x double, part varchar)")
        for _ in range(STRESS_ROUNDS):
            proc = subprocess.Popen([sys.executable, str(loop), db], env=env(), stderr=subprocess.PIPE, text=True)
            time.sleep(1.5 + 1.5 * random.random())
            postgres.stop()
            try:
                _, err = proc.communicate(timeout=120)
            finally:
                postgres.start()
            # libpq may first print the server's own notice of its shutdown ("WARNING:  terminating connection
            # due to immediate shutdown command"): PostgreSQL's line, not crsbench's; ours must be the only other.
            ours = "".join(line for line in err.splitlines(keepends=True) if not line.startswith("WARNING:  "))
            one_line_user_error(proc.returncode, ours, "PostgreSQL catalog went away")

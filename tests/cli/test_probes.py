"""`crsbench probe` end to end on a warehouse with synthetic datasets and feature sets."""

from __future__ import annotations

import json

import pytest
import torch
from support.fault_support import load_synthetic_datasets
from support.synthetic import write_features

from crsbench.cli import main
from crsbench.cli.output import console
from crsbench.warehouse.connection import Warehouse

torch.set_num_threads(1)


@pytest.fixture()
def warehouse(tmp_path):
    db = tmp_path / "bench.duckdb"
    with Warehouse.open(db) as wh:
        stored = load_synthetic_datasets(wh)
    store = str(tmp_path / "bench.duckdb.features.zarr")  # the default store beside the DB
    for ds in stored.values():
        write_features(store, ds, "enc", 8, depths=(1.0,), chunk_rows=64)
    return db


def _probe(db, *extra):
    console.configure(json_mode=True)
    try:
        return main(
            [
                "--json",
                "probe",
                "--db",
                str(db),
                "--probe",
                "logreg",
                "--depth",
                "1.0",
                "--fraction",
                "1.0",
                "--seed",
                "0",
                "--seed",
                "1",
                *extra,
            ]
        )
    finally:
        console.configure()


def test_probe_command_fits_sources_only_and_is_idempotent(warehouse, capsys):
    assert _probe(warehouse) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["fitted"] == 4 and first["runs"] == 2 * 17 + 2 * 18  # cxr2 is evaluation-only
    with Warehouse.open(warehouse, read_only=True) as wh:
        runs = wh.sql("select dataset_id, eval_dataset_id, condition, count(*) n from runs group by all")
    assert set(runs["dataset_id"]) == {"derm", "cxr"}
    assert runs.loc[runs.condition == "shift", "eval_dataset_id"].tolist() == ["cxr2"]
    assert (runs["n"] == 2).all()
    assert _probe(warehouse) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["fitted"] == 0 and again["skipped"] == 4


def test_probe_command_errors(warehouse, capsys):
    assert _probe(warehouse, "--probe", "svm") == 1
    assert "unknown probe 'svm'" in capsys.readouterr().err
    assert _probe(warehouse, "--encoder", "nope") == 1
    assert "encoder 'nope' has no feature set" in capsys.readouterr().err
    assert _probe(warehouse, "--dataset", "cxr", "--encoder", "nope") == 1
    assert "cxr/nope is missing" in capsys.readouterr().err
    with Warehouse.open(warehouse, read_only=True) as wh:
        assert wh.sql("select count(*) n from runs")["n"].item() == 0


_COMPARED = ["run_id", "fit_id", "condition", "auroc", "ece", "brier", "nll", "accuracy"]


def _runs_of(db):
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql(f"select {', '.join(_COMPARED)} from runs order by run_id")


@pytest.mark.soak  # tests/fault/test_kill.py kills the same sweep at random batches in the default suite
def test_sweep_sigkilled_mid_way_resumes_to_the_same_runs(warehouse, tmp_path):
    """A real SIGKILL between batches: the rerun completes the grid with no duplicate."""
    import shutil
    import signal
    import subprocess
    import sys
    import time

    reference = tmp_path / "reference"
    reference.mkdir()
    ref_db = reference / warehouse.name
    shutil.copy(warehouse, ref_db)
    shutil.copytree(str(warehouse) + ".features.zarr", str(ref_db) + ".features.zarr")
    args = ["probe", "--probe", "logreg", "--probe", "knn", "--depth", "1.0", "--batch-size", "1"]
    assert main(["--quiet", *args, "--db", str(ref_db)]) == 0
    expected = _runs_of(ref_db)

    cmd = [
        sys.executable,
        "-c",
        "from crsbench.cli import main; import sys; sys.exit(main())",
        "--quiet",
        *args,
        "--db",
        str(warehouse),
    ]
    proc = subprocess.Popen(cmd, env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    parts = warehouse.with_name(warehouse.name + ".parts") / "runs"
    deadline = time.monotonic() + 120
    while len([p for p in parts.glob("part-*.parquet") if "empty" not in p.name]) < 3 and proc.poll() is None:
        assert time.monotonic() < deadline, "the sweep wrote no batch in time"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = _runs_of(warehouse)
    assert 0 < len(partial) < len(expected), "the kill must land mid-sweep"
    assert not partial["run_id"].duplicated().any()

    assert main(["--quiet", *args, "--db", str(warehouse)]) == 0
    resumed = _runs_of(warehouse)
    assert not resumed["run_id"].duplicated().any()
    pd_testing = __import__("pandas").testing
    pd_testing.assert_frame_equal(resumed.reset_index(drop=True), expected.reset_index(drop=True))

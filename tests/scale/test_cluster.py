"""The probe grid on a separately started dask.distributed cluster (`dask scheduler` + two
`dask worker` processes on 127.0.0.1) reading a shared `s3://` store: the same run records
as in-process, and a worker SIGKILLed mid-sweep loses no result and duplicates none."""

from __future__ import annotations

import os
import signal

import pandas as pd
import pytest
import torch
from support.scale_support import BUCKET, SECRET, SECRET_KEY_ID, DaskCluster, moto_server, s3_env, s3_environment

from crsbench.features import FeatureStore, extract, get_encoder
from crsbench.probes.grid import GridContext, plan_fits, run_grid
from crsbench.warehouse.connection import Warehouse

torch.set_num_threads(1)
ENCODER = "tiny-convnext"
DATASETS = ("aptos2019", "chexpert", "mimic-cxr")
SHIFTS = {"chexpert": ["mimic-cxr"]}
GRID = dict(probes=("logreg", "knn"), fractions=(0.25, 1.0), seeds=(0, 1), depths=(1.0,))
VOLATILE = ["fit_seconds", "created_at"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory, suite_datasets):
    """(local store, the same store uploaded to a moto S3 bucket), with the S3 env set."""
    root = tmp_path_factory.mktemp("cluster-store")
    local = str(root / "features.zarr")
    for name in DATASETS:
        extract(suite_datasets[name], get_encoder(ENCODER), local, chunk_rows=128, threads=1)
    with moto_server(root / "moto.log") as endpoint, s3_environment(endpoint):
        import s3fs

        s3fs.S3FileSystem().put(local, f"{BUCKET}/shared/features.zarr", recursive=True)
        yield FeatureStore(local), FeatureStore(f"s3://{BUCKET}/shared/features.zarr"), endpoint


def _fits(store: FeatureStore):
    return plan_fits(["aptos2019", "chexpert"], [ENCODER], store, **GRID)


def _in_process(store: FeatureStore, datasets) -> pd.DataFrame:
    batches: list[pd.DataFrame] = []
    run_grid(_fits(store), GridContext(datasets, store, lambda runs, preds: batches.append(runs), shift_targets=SHIFTS))
    return pd.concat(batches)


def _comparable(runs: pd.DataFrame) -> pd.DataFrame:
    return runs.drop(columns=VOLATILE).sort_values("run_id").reset_index(drop=True)


@pytest.mark.soak  # the default suite kills a LocalCluster worker: tests/probes/test_execution.py
@pytest.mark.slow
def test_cluster_sweep_with_a_killed_worker_matches_in_process(stores, suite_datasets, tmp_path):
    local, shared, endpoint = stores
    datasets = {n: suite_datasets[n] for n in DATASETS}
    expected = _comparable(_in_process(local, datasets))
    n_fits = len(_fits(local))
    assert n_fits == 16 and len(expected) == 8 * 17 + 8 * 18  # 16 conditions + calib (+ shift)

    db = tmp_path / "w.duckdb"
    writer = Warehouse(db)
    writer.close()  # as the CLI: the sweep adds Parquet parts without a DuckDB connection
    # workers get the credentials the standard way, from their environment
    with DaskCluster(tmp_path / "cluster", n_workers=2, env=s3_env(endpoint)) as cluster:
        with cluster.client() as client:
            killed: dict[str, object] = {}

            def kill_a_busy_worker(what: str, done: int, total: int) -> None:
                if what != "probe fits" or killed or done == 0 or done >= total:
                    return
                busy = {w: keys for w, keys in client.processing().items() if keys}
                if not busy:
                    return
                worker = sorted(busy)[0]
                pid = client.run(os.getpid, workers=[worker])[worker]
                os.kill(pid, signal.SIGKILL)  # a worker process this test's cluster started
                killed.update(worker=worker, pid=pid, tasks=list(busy[worker]), at=done)

            summary = run_grid(
                _fits(shared),
                GridContext(
                    datasets,
                    shared,
                    writer.append_runs,
                    shift_targets=SHIFTS,
                    scheduler=cluster.address,
                    batch_size=4,
                    progress=kill_a_busy_worker,
                ),
            )
            assert killed, "no worker was busy after the first result; nothing was killed"
            assert killed["tasks"]  # it died holding work, which the scheduler reassigned
        logs = cluster.log_text()

    assert summary.fitted == n_fits and summary.batches == 4
    with Warehouse.open(db, read_only=True) as wh:
        got = wh.sql("select * from runs")
        n_pred = wh.sql("select count(*) n, count(distinct (run_id, row_index)) d from predictions")
    assert got["run_id"].is_unique and len(got) == len(expected)
    assert n_pred["n"][0] == n_pred["d"][0]  # no duplicated prediction row either
    pd.testing.assert_frame_equal(_comparable(got), expected, check_dtype=False)

    # a rerun against the warehouse plans nothing and writes nothing (idempotent)
    with Warehouse.open(db) as wh:
        done = wh.done_fit_ids()
    rerun = run_grid(_fits(shared), GridContext(datasets, shared, writer.append_runs, shift_targets=SHIFTS), done)
    assert rerun.fitted == 0 and rerun.skipped == n_fits
    assert "worker" in logs.lower()  # the logs are real, and carry no credential
    assert SECRET not in logs and SECRET_KEY_ID not in logs

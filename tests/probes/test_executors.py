"""probes.executors: the local pool runs every chunk on one torch and one BLAS thread (METHODS §4.3, §4.4)."""

from __future__ import annotations

import threading

import pandas as pd
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from crsbench.probes import executors


def _blas_threads() -> list[int]:
    return [int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]


def test_chunks_see_one_blas_and_one_torch_thread_and_the_limits_come_back(monkeypatch):
    seen: list[tuple[str, list[int], int]] = []
    lock = threading.Lock()

    def fake_chunk(name: str) -> str:
        with lock:
            seen.append((name, _blas_threads(), torch.get_num_threads()))
        return name

    monkeypatch.setattr(executors, "run_chunk", fake_chunk)
    torch_before = torch.get_num_threads()
    with threadpool_limits(limits=2, user_api="blas"):
        assert set(_blas_threads()) == {2}  # what a native-numerics process may run with
        for workers in (1, 2):
            results = dict(executors.InProcessExecutor(workers).run([("a",), ("b",), ("c",)]))  # type: ignore[list-item]
            assert sorted(results.values()) == ["a", "b", "c"]
            assert set(_blas_threads()) == {2}
    assert torch.get_num_threads() == torch_before
    assert {name for name, _, _ in seen} == {"a", "b", "c"} and len(seen) == 6
    assert all(blas and set(blas) == {1} for _, blas, _ in seen)
    assert all(threads == 1 for _, _, threads in seen)


def _grid(tmp_path, processes, batch_size=4):
    from support.synthetic import make_dataset, write_features

    from crsbench.features.store import FeatureStore
    from crsbench.probes.grid import GridContext, plan_fits, run_grid

    datasets = {"derm": make_dataset("derm", "multiclass", 120, 3, seed=1)}
    url = str(tmp_path / "features.zarr")
    write_features(url, datasets["derm"], "enc", 10, depths=(1.0,), chunk_rows=64)
    store = FeatureStore(url)
    batches: list = []
    fits = plan_fits(
        ["derm"], ["enc"], store, probes=("logreg", "knn", "mlp"), fractions=(0.1, 1.0), seeds=(0, 1), depths=(1.0,)
    )
    run_grid(
        fits,
        GridContext(datasets, store, lambda r, p: batches.append((r, p)), batch_size=batch_size, processes=processes),
    )
    runs = pd.concat([r for r, _ in batches]).drop(columns=["fit_seconds", "created_at"])
    preds = pd.concat([p for _, p in batches])
    keys = [c for c in preds.columns if preds[c].dtype != object]  # arrays of probabilities do not sort
    return runs.sort_values("run_id").reset_index(drop=True), preds.sort_values(keys).reset_index(drop=True)


def test_child_processes_store_the_bits_threads_store(tmp_path):
    threads = _grid(tmp_path / "t", processes=False)
    children = _grid(tmp_path / "c", processes=True)
    assert len(threads[0]) > 0 and len(threads[1]) > 0
    pd.testing.assert_frame_equal(children[0], threads[0], check_exact=True)
    pd.testing.assert_frame_equal(children[1], threads[1], check_exact=True)


def test_the_local_executor_uses_children_from_a_few_chunks_and_image_fits_per_core(monkeypatch):
    monkeypatch.setattr(executors.os, "cpu_count", lambda: 2)
    per_two = executors.MIN_CHUNKS_PER_CHILD * 2 * 25
    work = executors.MIN_IMAGE_FITS_PER_CHILD * 2
    assert type(executors.local_executor(per_two - 1, 25, work)) is executors.InProcessExecutor
    assert type(executors.local_executor(per_two, 25, work)) is executors.ProcessExecutor
    # As many chunks on small datasets: children would cost more than they save (benchmarks/small_grid.py).
    assert type(executors.local_executor(per_two, 25, work - 1)) is executors.InProcessExecutor
    assert type(executors.local_executor(per_two, 25, work, processes=False)) is executors.InProcessExecutor
    assert type(executors.local_executor(1, 25, 1, processes=True)) is executors.ProcessExecutor
    monkeypatch.setattr(executors.os, "cpu_count", lambda: 1)
    assert type(executors.local_executor(10 * per_two, 25, 10 * work)) is executors.InProcessExecutor


def test_the_grid_weighs_its_work_as_each_fits_dataset_size_summed(tmp_path, monkeypatch):
    from crsbench.probes import grid

    seen = []
    real = grid.local_executor

    def spy(n_fits, batch_size, image_fits, processes=None):
        seen.append((n_fits, image_fits))
        return real(n_fits, batch_size, image_fits, processes)

    monkeypatch.setattr(grid, "local_executor", spy)
    _grid(tmp_path, processes=None)
    # By hand: one 120-image dataset, 3 probes x 2 fractions x 2 seeds at one depth = 12 fits.
    assert seen == [(12, 12 * 120)]


def test_a_metric_registered_here_alone_runs_the_sweep_here(tmp_path):
    from crsbench.probes.metrics import METRICS, register_metric

    @register_metric("n_scored_here", "Images scored; a metric only this process registered.")
    def n_scored_here(y, p, task):
        return float(len(y))

    try:
        runs, _ = _grid(tmp_path, processes=True)  # a fresh interpreter lacks the metric: threads
    finally:
        METRICS.remove("n_scored_here")
    assert runs["n_scored_here"].tolist() == runs["n_test"].astype(float).tolist()


def test_a_child_that_stops_is_one_clear_error(monkeypatch):
    import os

    from crsbench.core import CrsbenchError

    monkeypatch.setattr(executors, "run_chunk", os._exit)  # the chunk's child exits at once
    with pytest.raises(CrsbenchError, match="probe worker process stopped"):
        list(executors.ProcessExecutor(2).run([(3,), (4,)]))  # type: ignore[list-item]

"""probes.executors: the local pool runs every chunk on one torch and one BLAS thread (METHODS §4.3, §4.4)."""

from __future__ import annotations

import threading

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

"""Where the grid's chunks run: a local thread pool, or a dask.distributed cluster.

Both draw jobs lazily from an iterator and keep at most a few in flight, so a concurrent
sweep's claims see the fits not yet started; both yield (job, result) as chunks finish.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

import dask.base
import torch
from threadpoolctl import threadpool_limits

from crsbench.core import CrsbenchError
from crsbench.features.store import FeatureStore
from crsbench.ingest.types import Dataset
from crsbench.probes.reader import TrainStats
from crsbench.probes.tasks import Chunk, ChunkResult, run_chunk

if TYPE_CHECKING:
    import dask.array as da
    from distributed import Future as DaskFuture

Job = tuple[Chunk, FeatureStore, Dataset, list[Dataset], TrainStats]  # run_chunk's arguments


class InProcessExecutor:
    """Chunks on a local thread pool, one torch thread each.

    Probe fits on demo-sized data are many small torch ops; one intra-op thread per
    chunk and one chunk per core beats one chunk using every core (measured ~1.5x on
    2 cores). Each fit seeds its own generator, so results do not depend on the pool.
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or (os.cpu_count() or 1))

    def compute(self, graphs: list[da.Array]) -> list[Any]:
        return list(dask.base.compute(graphs, scheduler="threads")[0])

    def run(self, jobs: Iterable[Job]) -> Iterator[tuple[Job, ChunkResult]]:
        """Run jobs as they are drawn from `jobs`, at most one per worker in flight."""
        previous = torch.get_num_threads()
        # One intra-op thread per fit whatever the worker count: a fit's reductions then run in
        # one order on every machine, so its bits do not depend on the cores (METHODS §4.3).
        # The same for numpy's BLAS, which the solvers' skinny products run on (probes.blas):
        # canonical numerics already pin it to one thread; native numerics would not.
        torch.set_num_threads(1)
        blas = threadpool_limits(limits=1, user_api="blas")
        if self.workers == 1:
            try:
                for job in jobs:
                    yield job, run_chunk(*job)
            finally:
                torch.set_num_threads(previous)
                blas.restore_original_limits()
            return
        pool = ThreadPoolExecutor(max_workers=self.workers)
        source = iter(jobs)
        pending: dict[Future[ChunkResult], Job] = {}

        def top_up() -> None:
            while len(pending) < self.workers and (job := next(source, None)) is not None:
                pending[pool.submit(run_chunk, *job)] = job

        try:
            top_up()
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    job = pending.pop(future)
                    top_up()  # before the result is written, so no thread waits on the sink
                    yield job, future.result()
        finally:
            # A failed sink (or any error) stops the sweep: drop the chunks not yet started.
            pool.shutdown(wait=True, cancel_futures=True)
            torch.set_num_threads(previous)
            blas.restore_original_limits()


def _identity(value: object) -> object:
    return value


class DistributedExecutor:
    def __init__(self, address: str) -> None:
        from distributed import Client

        try:
            self.client = Client(address, set_as_default=False, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise CrsbenchError(f"cannot reach the dask scheduler at {address}: {exc}") from exc

    def compute(self, graphs: list[da.Array]) -> list[Any]:
        computed: list[Any] = self.client.compute(graphs, sync=True)
        return computed

    def run(self, jobs: Iterable[Job]) -> Iterator[tuple[Job, ChunkResult]]:
        from distributed import as_completed

        scattered: dict[str, object] = {}

        def remote(ds: Dataset) -> object:
            if ds.name not in scattered:
                # A task, not `client.scatter`: scattered data lives only on workers, so a
                # killed worker would take the dataset with it and fail every later fit;
                # a task's result is recomputed from its spec when its worker dies.
                scattered[ds.name] = self.client.submit(_identity, ds, pure=False)
            return scattered[ds.name]

        # One chunk per worker thread in flight (plus one queued each), so fits are
        # claimed only shortly before they run and a concurrent sweep can take the rest.
        slots = max(1, 2 * sum(self.client.nthreads().values()))
        source = iter(jobs)
        pending: dict[DaskFuture[ChunkResult], Job] = {}
        running = as_completed(loop=self.client.loop)

        def submit_next() -> None:
            job = next(source, None)
            if job is not None:
                chunk, store, ds, targets, stats = job
                future = self.client.submit(
                    run_chunk, chunk, store, remote(ds), [remote(t) for t in targets], stats, pure=False
                )
                pending[future] = job
                running.add(future)

        for _ in range(slots):
            submit_next()
        for future in running:
            job = pending.pop(future)
            submit_next()  # before the result is written, so workers never wait on the sink
            yield job, future.result()

    def close(self) -> None:
        self.client.close()

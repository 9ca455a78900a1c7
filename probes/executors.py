"""Where the grid's chunks run: local threads or child processes, or a dask.distributed cluster.

Both draw jobs lazily from an iterator and keep at most a few in flight, so a concurrent
sweep's claims see the fits not yet started; both yield (job, result) as chunks finish.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

import dask.base
import torch
from threadpoolctl import threadpool_limits

from crsbench.core import ChildPool, ChildStopped, CrsbenchError
from crsbench.features.store import FeatureStore
from crsbench.ingest.types import Dataset
from crsbench.probes.reader import TrainStats
from crsbench.probes.tasks import Chunk, ChunkResult, run_chunk

if TYPE_CHECKING:
    import dask.array as da
    from distributed import Future as DaskFuture

Job = tuple[Chunk, FeatureStore, Dataset, list[Dataset], TrainStats]  # run_chunk's arguments


def in_flight(
    submit: Callable[..., Future[ChunkResult]], workers: int, source: Iterator[Job]
) -> Iterator[tuple[Job, Future[ChunkResult]]]:
    """Each job of `source` submitted (`submit(run_chunk, *job)`) as a slot frees, at most `workers`
    in flight; yields each with its finished future, in the order they finish."""
    pending: dict[Future[ChunkResult], Job] = {}

    def top_up() -> None:
        while len(pending) < workers and (job := next(source, None)) is not None:
            pending[submit(run_chunk, *job)] = job

    top_up()
    while pending:
        finished, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in finished:
            job = pending.pop(future)
            top_up()  # before the result is written, so no worker waits on the sink
            yield job, future


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
        # The same for numpy's BLAS, which the solvers' skinny products run on (crsbench.core.products):
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
        try:
            for job, future in in_flight(pool.submit, self.workers, iter(jobs)):
                yield job, future.result()
        finally:
            # A failed sink (or any error) stops the sweep: drop the chunks not yet started.
            pool.shutdown(wait=True, cancel_futures=True)
            torch.set_num_threads(previous)
            blas.restore_original_limits()


# A child interpreter costs a few seconds of CPU to import torch and the probes: worth it from a few
# chunks per core on (the demo's grid runs ~90 chunks on 2 cores), and only when the chunks hold
# enough work. The work is counted in image-fits (each fit's dataset size, summed): 32 fits on
# datasets of 80-120 images (3,500 image-fits, the fault tests' grid at one fit per chunk) took
# 17.0 s of machine CPU in children against 10.1 s on threads (`benchmarks/small_grid.py`); the
# demo's grid is ~440,000 image-fits.
MIN_CHUNKS_PER_CHILD = 4
MIN_IMAGE_FITS_PER_CHILD = 10_000


def local_executor(n_fits: int, batch_size: int, image_fits: int, processes: bool | None = None) -> InProcessExecutor:
    """The executor of an in-process grid of `n_fits` fits over `image_fits` image-fits (the fits'
    dataset sizes, summed): chunks in child processes (`processes`, by default when there are 2+
    cores, at least MIN_CHUNKS_PER_CHILD chunks and MIN_IMAGE_FITS_PER_CHILD image-fits each), else threads."""
    workers = os.cpu_count() or 1
    if processes is None:
        processes = (
            workers >= 2
            and n_fits >= MIN_CHUNKS_PER_CHILD * workers * max(1, batch_size)
            and image_fits >= MIN_IMAGE_FITS_PER_CHILD * workers
        )
    return ProcessExecutor(workers) if processes else InProcessExecutor(workers)


def one_thread() -> None:
    """A process executor's child: one torch and one BLAS thread, as each in-process fit runs."""
    torch.set_num_threads(1)
    threadpool_limits(limits=1, user_api="blas")


def fit_registries() -> dict[str, list[str]]:
    """The entries a chunk's fits look up by name: probe kinds, metrics and calibrators."""
    from crsbench.probes.calibration import CALIBRATORS
    from crsbench.probes.metrics import METRICS
    from crsbench.probes.registry import PROBES

    return {"probes": PROBES.names(), "metrics": METRICS.names(), "calibrators": CALIBRATORS.names()}


class ProcessExecutor(InProcessExecutor):
    """Chunks in child interpreters (`crsbench.core.ChildPool`), one per core, one thread each.

    A fit is many small torch ops, each taking the interpreter lock: threads in one process keep 2
    cores about two-thirds busy on the demo's grid, children keep both busy (1.63x, the same bits:
    each fit seeds its own generator and runs on one thread, in a child under the canonical
    numerics). An entry registered at run time in this process alone (a notebook's metric, a test's
    probe kind), which a fresh interpreter would not find, makes the sweep run on threads here."""

    def run(self, jobs: Iterable[Job]) -> Iterator[tuple[Job, ChunkResult]]:
        pool = ChildPool(self.workers, initializer=one_thread)
        try:
            if pool.submit(fit_registries).result() != fit_registries():
                yield from super().run(jobs)
                return
            yield from self._run_in(pool, iter(jobs))
        finally:
            pool.shutdown(cancel_futures=True)

    def _run_in(self, pool: ChildPool, source: Iterator[Job]) -> Iterator[tuple[Job, ChunkResult]]:
        for job, future in in_flight(pool.submit, self.workers, source):
            try:
                result = future.result()
            except ChildStopped as exc:
                raise CrsbenchError(
                    f"a probe worker process stopped (out of memory or killed: {exc}); the fits stored so "
                    "far stay, and a rerun computes the rest"
                ) from None
            yield job, result


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

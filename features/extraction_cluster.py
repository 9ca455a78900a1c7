"""Extraction over a dask.distributed cluster: `crsbench extract --scheduler tcp://host:8786`.

The unit of work is one store row chunk of one (encoder, dataset) feature set, with all of its
depths and conditions. Workers run `crsbench.features.extraction_dist` and write their chunks
straight to the shared fsspec store; this client claims, submits and completes the set
(crsbench.pipeline.extract writes the catalog rows).

Exactly once, with the file claims the probe grid's fit claims are made of
(`crsbench.core.claims.FileClaims`:
exclusive create, a lease refreshed by a heartbeat, takeover of a dead or silent holder): a
chunk is claimed by the client just before it is submitted and released after its progress
marker is in the store. A chunk already marked is skipped; a chunk another live client holds
is left to it and waited for (taken over if that client dies). The claims live beside the
store, in `<store>.claims/<dataset>/<encoder>/<regime>/claims/`. A killed worker's chunk is
rerun by the scheduler; a chunk that fails three times stops the run naming chunk and error.

Before any chunk starts, every worker is checked at once (weights, device, a shared writable
store), and with --device cuda the tasks ask for the worker resource GPU=1, so one GPU runs one
chunk at a time. A complete set is skipped once a worker confirms its weights are the set's
(as a local run checks); `repair` re-extracts a complete set's damaged or missing chunks over
the cluster, under the settings the set was made with (features.repair).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
import warnings
from typing import Any

import fsspec
import zarr

from crsbench.core import DEPTHS, FROZEN, CrsbenchError, ProgressFn, no_progress
from crsbench.core.claims import FileClaims
from crsbench.core.provenance import collect, to_json
from crsbench.features.degenerate import assess
from crsbench.features.extract_options import ExtractOptions
from crsbench.features.extraction import done_result, skipped_result
from crsbench.features.extraction_dist import (
    check_named_worker,
    compute_chunk,
    open_set,
    probe_path,
    progress_marks,
    same_weights,
)
from crsbench.features.extraction_dist import (
    weights_hash as worker_weights_hash,
)
from crsbench.features.extraction_result import ExtractionResult, StoredAttrs
from crsbench.features.extraction_sets import PROGRESS_ARRAY, finish_feature_set, present_arrays
from crsbench.features.integrity import DIGEST_ARRAY
from crsbench.features.registry import EncoderEntry
from crsbench.features.repair import RepairPlan, as_made, count_repair, plan_repair
from crsbench.features.store import FeatureSetRef, FeatureStore, depth_key
from crsbench.ingest.types import Dataset

CONNECT_TIMEOUT_S = 10.0
TRIES = 3  # a chunk that fails this many times stops the run
GROUP_CLAIM, FINISH_CLAIM = "set-open", "set-finish"
POLL_S = 0.2  # how often a client waiting for another client's claims looks again
WAIT_S = 1.0  # the longest a client with chunks in flight waits before looking at the others' progress


def connect(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> Any:
    """A `distributed.Client` of the scheduler at `address` (typed Any: distributed is untyped),
    or a one-line error within `timeout_s`."""
    from distributed import Client

    try:
        client: Any = Client
        return client(address, set_as_default=False, timeout=f"{timeout_s}s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise CrsbenchError(
            f"cannot reach the dask scheduler at {address} within {timeout_s:g} s ({type(exc).__name__}); "
            f"start it with 'dask scheduler' or fix --scheduler"
        ) from exc


def claims_url(store_url: str, ref: FeatureSetRef) -> str:
    return f"{store_url.rstrip('/')}.claims/{ref.path}"


class ClusterExtraction:
    """One connection to a scheduler; `extract` runs one feature set over its workers."""

    def __init__(self, address: str, options: ExtractOptions, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        self.address, self.options = address, options
        self.client: Any = connect(address, timeout_s)
        self.computed: list[int] = []  # the chunks this client submitted and saw written (tests count them)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> ClusterExtraction:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- checks ---------------------------------------------------------------------------
    def _resources(self) -> dict[str, float] | None:
        if not self.options.device.startswith("cuda"):
            return None
        workers = self.client.scheduler_info()["workers"]
        if not any(float(w.get("resources", {}).get("GPU", 0)) >= 1 for w in workers.values()):
            raise CrsbenchError(
                f"--device cuda, but no worker of {self.address} has the GPU resource; start GPU workers "
                f"with 'dask worker {self.address} --nthreads 1 --resources GPU=1'"
            )
        return {"GPU": 1}

    def check_workers(self, entry: EncoderEntry, store_url: str, options: ExtractOptions | None = None) -> None:
        """Every worker can build `entry` and reaches and writes `store_url`, or one line naming the first that cannot."""
        options = options or self.options
        workers = sorted(self.client.scheduler_info()["workers"])
        if not workers:
            raise CrsbenchError(f"the dask scheduler at {self.address} has no workers")
        token = uuid.uuid4().hex
        path = probe_path(store_url, token)
        try:
            with fsspec.open(path, "wb") as fh:
                fh.write(token.encode())
        except OSError as exc:
            raise CrsbenchError(f"cannot write the store {store_url}: {exc}") from exc
        names = {w: f"w{i}" for i, w in enumerate(workers)}
        try:  # every worker at once (each finds its probe reply's name by its address)
            answers: dict[str, str] = self.client.run(
                check_named_worker, entry, options, store_url, token, names, workers=workers
            )
            for worker in workers:
                if answers.get(worker):
                    raise CrsbenchError(f"worker {worker}: {answers[worker]}")
            for worker in workers:
                try:
                    with fsspec.open(f"{path}-{names[worker]}", "rb") as fh:
                        ok = fh.read().decode() == token
                except (FileNotFoundError, OSError):
                    ok = False
                if not ok:
                    raise CrsbenchError(
                        f"worker {worker} wrote a probe file to {store_url} that this machine cannot read: "
                        f"the store is not shared; use a store every worker reaches (s3://, gs://, or an NFS path)"
                    )
        finally:
            fs, root = fsspec.core.url_to_fs(path)
            for suffix in ["", *[f"-{n}" for n in names.values()]]:
                with contextlib.suppress(OSError):  # FileNotFoundError included
                    fs.rm_file(root + suffix)

    def weights_hash(self, entry: EncoderEntry, store_url: str) -> str:
        """The hash of the weights a worker extracts `entry` with (after every worker is checked)."""
        self.check_workers(entry, store_url)
        return str(self._submit(worker_weights_hash, entry, self.options, resources=self._resources()).result())

    # -- one feature set ------------------------------------------------------------------
    def extract(
        self,
        ds: Dataset,
        entry: EncoderEntry,
        store_url: str,
        progress: ProgressFn | None = None,
        regime: str = FROZEN,
    ) -> ExtractionResult:
        """Extract one (encoder, dataset) set over the cluster; the result, as `features.extract` returns it.

        A complete set is skipped once a worker confirms its weights are the set's (as a local
        run checks); with `repair`, only its damaged or missing chunks are re-extracted, under
        the settings it was made with (features.repair), and the result carries `repaired`."""
        progress = progress or no_progress
        store = FeatureStore(store_url)
        ref = FeatureSetRef(ds.name, entry.id, regime)
        if entry.chest_only and ds.domain != "rad":
            raise CrsbenchError(f"encoder {entry.id!r} is chest-only; dataset {ds.name!r} is not 'rad'")
        options, conditions, plan = self.options, None, None
        if options.repair:
            plan = plan_repair(store, ref, ds)  # read-only; names the extract command when the set is missing
            if not plan.chunks:
                return skipped_result(store.attrs(ref), store, ref, plan)
            options, conditions = as_made(options, store.attrs(ref))
        resources = self._resources()
        self.check_workers(entry, store_url, options)
        if plan is None and store.is_complete(ref) and not options.force:
            self._submit(same_weights, entry, store_url, ref, options, resources=resources).result()
            return skipped_result(store.attrs(ref), store, ref)
        started = time.perf_counter()
        before = len(self.computed)
        with FileClaims(claims_url(store_url, ref)) as claims:
            if options.force:
                self._exclusive(claims, GROUP_CLAIM, lambda: _drop(store, ref))
            settings: dict[str, Any] = {}

            def open_group() -> None:
                # A repair resets its chunks once: another client's repair may have reset them already.
                repair = plan.chunks if plan is not None and store.is_complete(ref) else None
                opened = self._submit(
                    open_set, ds, entry, store_url, options, regime, conditions, repair, resources=resources
                )
                settings.update(opened.result())

            self._exclusive(claims, GROUP_CLAIM, open_group)
            self._run_chunks(claims, ds, entry, store_url, options, settings, ref, resources, progress)
            attrs: dict[str, Any] = {}
            self._exclusive(
                claims, FINISH_CLAIM, lambda: attrs.update(_finish(store, ref, ds, settings, self.address, plan))
            )
        return done_result(
            StoredAttrs.from_attrs(attrs, f"feature set {ref.path} in {store.url}"),
            time.perf_counter() - started,
            plan,
            chunks_here=len(self.computed) - before,  # the rest came from another client
            n_chunks=-(-ds.n_images // int(settings["chunk_rows"])),
        )

    def _submit(self, fn: Any, *args: Any, resources: dict[str, float] | None) -> Any:
        return self.client.submit(fn, *args, pure=False, resources=resources)

    @staticmethod
    def _exclusive(claims: FileClaims, name: str, step: Any) -> None:
        """Run `step` while holding claim `name` (waiting for another client that holds it)."""
        while not claims.acquire([name]):
            time.sleep(POLL_S)
        try:
            step()
        finally:
            claims.release([name])

    def _run_chunks(
        self,
        claims: FileClaims,
        ds: Dataset,
        entry: EncoderEntry,
        store_url: str,
        options: ExtractOptions,
        settings: dict[str, Any],
        ref: FeatureSetRef,
        resources: dict[str, float] | None,
        progress: ProgressFn,
    ) -> None:
        read_marks = progress_marks(store_url, ref)
        marks = read_marks()
        total = int(marks.shape[0])
        slots = max(1, 2 * sum(self.client.nthreads().values()))
        label = f"extract {ref.key} on {ds.name}"
        remote_ds = self.client.submit(_identity, ds, pure=False)  # a task: recomputed if its worker dies
        pending: dict[Any, int] = {}
        finished = threading.Event()
        progress(label, int(marks.sum()), total)
        while True:
            marks = read_marks()
            todo = [k for k in range(total) if not marks[k] and k not in pending.values()]
            if not todo and not pending:
                break
            for k in todo:
                if len(pending) >= slots:
                    break
                if not claims.acquire([f"chunk-{k}"]):
                    continue  # another client holds it: done by it, or taken over once its lease lapses
                if read_marks()[k]:  # written meanwhile by another client
                    claims.release([f"chunk-{k}"])
                    continue
                future = self.client.submit(
                    compute_chunk,
                    remote_ds,
                    entry,
                    store_url,
                    options,
                    settings,
                    ref.regime,
                    k,
                    pure=False,
                    retries=TRIES - 1,
                    resources=resources,
                )
                future.add_done_callback(lambda _: finished.set())
                pending[future] = k
            if not pending:
                time.sleep(POLL_S)  # every remaining chunk is another client's: wait for it
                continue
            finished.wait(WAIT_S)  # set by the first chunk task to end
            finished.clear()
            for done in self._collect_done(pending, claims, ref):
                self.computed.append(done)
                progress(label, int(read_marks().sum()), total)

    def _collect_done(self, pending: dict[Any, int], claims: FileClaims, ref: FeatureSetRef) -> list[int]:
        """The chunks whose tasks ended, their claims released; a chunk that failed every try
        cancels the rest and fails the set, naming the chunk and the cause."""
        done = []
        for future in [f for f in pending if f.done()]:
            k = pending.pop(future)
            try:
                future.result()
            except Exception as exc:
                self._cancel(pending, claims)
                claims.release([f"chunk-{k}"])
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise CrsbenchError(
                    f"row chunk {k} of feature set {ref.path} failed {TRIES} times on the cluster: "
                    f"{type(exc).__name__}: {reason}"
                ) from exc
            claims.release([f"chunk-{k}"])
            done.append(k)
        return done

    def _cancel(self, pending: dict[Any, int], claims: FileClaims) -> None:
        self.client.cancel(list(pending))
        claims.release([f"chunk-{k}" for k in pending.values()])
        pending.clear()


def _identity(value: object) -> object:
    return value


def _drop(store: FeatureStore, ref: FeatureSetRef) -> None:
    root = store.root(writable=True)
    if ref.path in root:
        del root[ref.path]


def _finish(
    store: FeatureStore, ref: FeatureSetRef, ds: Dataset, settings: dict[str, Any], where: str, plan: RepairPlan | None
) -> dict[str, Any]:
    """Complete the set (every chunk checked present), once, whichever client gets here first."""
    group = store.root(writable=True)[ref.path]
    assert isinstance(group, zarr.Group)
    if group.attrs.get("complete"):
        return dict(group.attrs)
    conditions = list(settings["conditions"])
    # The depth keys the set was opened with (the protocol's four, plus `proj` for image-text encoders with a projector).
    stored = group.attrs.get("depths")
    keys = [str(k) for k in stored] if isinstance(stored, list) else [depth_key(d) for d in DEPTHS]
    names = [f"{key}/{c}" for key in keys for c in conditions] + [PROGRESS_ARRAY, DIGEST_ARRAY]
    arrays = present_arrays(group, names)
    test_mask = ds.images["split"].to_numpy() == "test"
    if plan is not None:
        count_repair(group, plan)  # before `complete` flips back on
    verdict = assess(group)
    finish_feature_set(group, arrays, ref, test_mask, settings, store.url)
    if verdict.reason:
        warnings.warn(
            f"feature set {ref.path} is degenerate: {verdict.reason}; confirm it with "
            f"crsbench feature-sets --confirm {ref.key} {ds.name}",
            stacklevel=2,
        )
    elif verdict.other_depths:  # a flagged set needs no second warning
        warnings.warn(verdict.other_depths_warning(ref.path), stacklevel=2)
    group.attrs["provenance"] = to_json(collect(device=f"dask {where}", threads=1))
    return dict(group.attrs)

"""The probe grid (METHODS.md §3): plan the fits, check the inputs, run them on Dask, hand off batches.

`plan_fits` lists the fits (default: the paper's grid), `run_grid` runs the ones not yet
done in a `GridContext` (datasets, store, sink, executor options) and passes each finished
chunk to its `sink(runs, predictions)` — one call per chunk, which the CLI wires to
`Warehouse.append_runs`, one atomic batch. A fit is in `runs`
either with all of its evaluations or not at all, so a killed sweep resumes by
skipping the fit ids already there; fit and run ids are hashes of their keys, so a
rerun writes nothing new.

Execution: chunks run in-process by default; given a scheduler address they are
submitted to that `dask.distributed` cluster and their frames gathered at the client,
which alone calls `sink`.

Concurrent sweeps: given `claims` (the CLI passes `crsbench.warehouse.claims.FitClaims`),
each chunk's fits are claimed just before the chunk is started and released after its
batch lands, so several sweeps over one warehouse split the fits and compute each once.
At most one chunk per worker is in flight, so a second sweep finds work left to claim.
Fits another sweep holds are waited for at the end (or taken over if it died).
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Protocol

import numpy as np

from crsbench.core import (
    CLEAN,
    DEPTHS,
    FRACTION_SEEDS,
    LABEL_FRACTIONS,
    PRIMARY_PROBE,
    CrsbenchError,
    EncoderKey,
    ProgressFn,
    __version__,
)
from crsbench.features.conditions import conditions_of, stored_conditions
from crsbench.features.store import Depth, FeatureSetRef, FeatureStore, depth_key
from crsbench.ingest.types import Dataset, Task
from crsbench.probes.chunking import DEFAULT_BATCH_SIZE, chunk_slices
from crsbench.probes.executors import DistributedExecutor, InProcessExecutor, Job, local_executor
from crsbench.probes.identity import identify, read_depth
from crsbench.probes.reader import ReadCheck, TrainStats, check_and_standardise, check_feature_set
from crsbench.probes.records import FitKey
from crsbench.probes.registry import get_probe, probe_names
from crsbench.probes.tasks import Chunk, eval_sets

# sink(runs, predictions), or sink(runs, predictions, coefficients) for a grid run with
# keep_coefficients; any return value is ignored.
Sink = Callable[..., object]


class Claims(Protocol):
    """Exclusive claims on fits, shared by every sweep over one warehouse."""

    def acquire(self, fit_ids: Sequence[str]) -> set[str]:
        """The fits now held by this sweep and not yet finished by anyone."""
        ...

    def release(self, fit_ids: Iterable[str]) -> None: ...

    def done(self, fit_ids: Iterable[str]) -> set[str]:
        """Those finished by any sweep."""
        ...


@dataclasses.dataclass
class GridSummary:
    planned: int
    skipped: int
    fitted: int
    runs: int
    batches: int
    by_others: int = 0  # fits another concurrent sweep computed meanwhile
    compacted: int = 0  # run parts folded into the warehouse file when the sweep ended
    pending_parts: int = 0  # run parts left as Parquet files (--no-compact, or another writer active)
    pending_reason: str = ""  # why they were left, and what folds them
    extra: int = 0  # planned fits outside their dataset's declared grid (stored, never scored)


def _dataset_name(d: str | Dataset) -> str:
    return d if isinstance(d, str) else d.name


def plan_fits(
    datasets: Iterable[str | Dataset],
    encoders: Iterable[str] | None,
    store: FeatureStore,
    *,
    probes: Sequence[str] | None = None,
    fractions: Sequence[float] = LABEL_FRACTIONS,
    seeds: Iterable[int] = FRACTION_SEEDS,
    depths: Sequence[float] | None = None,
) -> list[FitKey]:
    """The fits of a grid, sorted; defaults are the paper's grid.

    `encoders` are encoder keys (`vit_tiny`, or `vit_tiny@lora-s0` for an adapted
    variant); None takes every feature set the store holds for each dataset. `depths`
    None = the primary probe (logreg) at all four depths, the check probes (mlp, knn) at
    full depth; given depths apply to every probe.
    """
    probes = tuple(probes) if probes is not None else probe_names()
    for probe in probes:
        get_probe(probe)  # unknown name -> CrsbenchError
    seeds = tuple(int(s) for s in seeds)
    names = [_dataset_name(d) for d in datasets]
    fits: set[FitKey] = set()
    for dataset in names:
        if encoders is None:
            refs = [r for r in store.probe_sets() if r.dataset == dataset]
        else:
            refs = []
            for enc in encoders:
                key = EncoderKey.parse(enc)
                refs.append(FeatureSetRef(dataset, key.encoder_id, key.regime))
        for ref in refs:
            for probe in probes:
                probe_depths = depths if depths is not None else (DEPTHS if probe == PRIMARY_PROBE else (1.0,))
                for depth in probe_depths:
                    for fraction in fractions:
                        for seed in seeds:
                            fits.add(
                                FitKey(ref.encoder_id, dataset, float(depth), probe, float(fraction), seed, ref.regime)
                            )
    return sorted(fits)


# -- input checks ------------------------------------------------------------------------------


def _image_fits(fits: list[FitKey], datasets: Mapping[str, Dataset]) -> int:
    """The grid's work as `local_executor` weighs it: each fit's dataset size, summed."""
    return sum(datasets[f.dataset_id].n_images for f in fits)


def _check_training_subsets(fits: list[FitKey], datasets: Mapping[str, Dataset]) -> None:
    trained = [f for f in fits if not get_probe(f.probe).zero_shot]  # zero-shot reads no training rows
    for dataset_id, fraction, seed in sorted({(f.dataset_id, f.label_fraction, f.seed) for f in trained}):
        ds = datasets[dataset_id]
        train = ds.split_rows("train")
        rows = ds.fraction_rows(fraction, seed)
        if len(rows) == 0 or not np.isin(rows, train).all():
            raise CrsbenchError(
                f"dataset {dataset_id!r}: label fraction {fraction:g} (seed {seed}) "
                f"is empty or not part of the train split"
            )
        labels = ds.labels[rows]
        if Task(ds.task) is Task.MULTILABEL:
            positives = labels.sum(axis=0)
            bad = [j for j in range(labels.shape[1]) if positives[j] in (0, len(rows))]
        else:
            counts = np.bincount(labels.astype(np.int64), minlength=len(ds.label_names))
            bad = [j for j in range(len(ds.label_names)) if counts[j] == 0]
        if bad:
            which = "positive and negative" if Task(ds.task) is Task.MULTILABEL else "positive"
            raise CrsbenchError(
                f"dataset {dataset_id!r}: label fraction {fraction:g} (seed {seed}) has no "
                f"{which} example for {ds.label_names[bad[0]]!r}; a probe cannot be fitted"
            )


def _targets_of(
    dataset_id: str, shift_targets: Mapping[str, Sequence[str]], datasets: Mapping[str, Dataset]
) -> list[Dataset]:
    out = []
    source = datasets[dataset_id]
    for name in shift_targets.get(dataset_id, ()):
        if name not in datasets:
            raise CrsbenchError(f"shift target {name!r} of dataset {dataset_id!r} was not given")
        target = datasets[name]
        if Task(target.task) is not Task(source.task) or list(target.label_names) != list(source.label_names):
            raise CrsbenchError(f"shift target {name!r} does not share the task and labels of {dataset_id!r}")
        if len(target.split_rows("test")) == 0:
            raise CrsbenchError(f"shift target {name!r} has no test split")
        out.append(target)
    return out


def _read_checks(
    groups: Iterable[tuple[FeatureSetRef, Depth]],
    datasets: Mapping[str, Dataset],
    shift_targets: Mapping[str, Sequence[str]],
    store: FeatureStore,
) -> list[ReadCheck]:
    checks: list[ReadCheck] = []
    checked: set[tuple[FeatureSetRef, tuple[Depth, ...]]] = set()
    by_ref: dict[FeatureSetRef, list[Depth]] = defaultdict(list)
    for ref, depth in groups:
        by_ref[ref].append(depth)
    for ref, depths in by_ref.items():
        source = datasets[ref.dataset]
        targets = _targets_of(ref.dataset, shift_targets, datasets)
        conditions = stored_conditions(store.attrs(ref))  # what the set holds (features.conditions)
        check_feature_set(store, ref, source, depths, conditions)
        if len(source.split_rows("test")) == 0:
            raise CrsbenchError(f"dataset {ref.dataset!r} has no test split")
        for target in targets:
            target_ref = FeatureSetRef(target.name, ref.encoder_id, ref.regime)
            if (target_ref, tuple(depths)) not in checked:
                check_feature_set(store, target_ref, target, depths, (CLEAN,))
                checked.add((target_ref, tuple(depths)))
        for depth in depths:
            checks.append(ReadCheck(ref, depth, CLEAN, source.split_rows("train"), stats=True))
            checks.extend(
                ReadCheck(ev.ref, depth, ev.store_condition, ev.rows)
                for ev in eval_sets(source, ref, targets, conditions)
            )
    return checks


# -- execution ---------------------------------------------------------------------------------


def _chunks(
    fits: list[FitKey],
    batch_size: int,
    eval_rows: Callable[[FeatureSetRef], tuple[int, int]],
    depth_of: Callable[[FitKey], Depth],
) -> Iterator[tuple[FeatureSetRef, Depth, list[FitKey]]]:
    """Each (feature set, stored depth read, probe) group's fits in chunks (see `probes.chunking`);
    `eval_rows(ref)` is (train rows, eval rows) of the feature set's dataset."""
    groups: dict[tuple[FeatureSetRef, Depth, str, str], list[FitKey]] = defaultdict(list)
    for fit in fits:
        groups[(fit.feature_set, depth_of(fit), fit.probe, fit.suite)].append(fit)
    for (ref, depth, probe, _), members in sorted(
        groups.items(), key=lambda kv: (kv[0][0].path, kv[0][0].regime, depth_key(kv[0][1]), kv[0][2], kv[0][3])
    ):
        # Largest fraction first, seeds together: a chunk then holds the fraction-1.0 fits
        # that an unseeded probe shares across seeds.
        members.sort(key=lambda f: (-f.label_fraction, f.seed))
        n_train, n_eval = eval_rows(ref)
        fractions = [f.label_fraction for f in members]
        for part in chunk_slices(fractions, n_train, n_eval, get_probe(probe).deferred, batch_size):
            yield ref, depth, members[part]


@dataclasses.dataclass(frozen=True)
class GridContext:
    """Where a grid's fits run and where their batches go: everything `run_grid` needs besides the fits.

    `datasets` holds every dataset a fit or a shift target names, `store` their feature sets;
    `sink` is called once per chunk (see `Sink`); `shift_targets` maps a dataset to the datasets
    its fits are also evaluated on; `scheduler` is a dask.distributed address (None: in-process);
    `batch_size` bounds a chunk (`probes.chunking`); with `claims` a fit is computed only once it
    is claimed (see the module notes), another sweep's fits looked at every `poll_s` seconds;
    `keep_coefficients`: each batch also passes the full-label logreg fits' coefficients
    (`probes.tasks.coefficient_frame`) as a third argument, to land with its runs; `processes`:
    without a scheduler, chunks run in child processes (True), on threads here (False), or by
    their number (None, `probes.executors.local_executor`).
    """

    datasets: Mapping[str, Dataset]
    store: FeatureStore
    sink: Sink
    shift_targets: Mapping[str, Sequence[str]] = dataclasses.field(default_factory=dict)
    scheduler: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    progress: ProgressFn | None = None
    claims: Claims | None = None
    poll_s: float = 0.5
    keep_coefficients: bool = False
    processes: bool | None = None

    def targets_of(self, dataset_id: str) -> list[Dataset]:
        return _targets_of(dataset_id, self.shift_targets, self.datasets)

    def report(self, stage: str, done: int, total: int) -> None:
        if self.progress:
            self.progress(stage, done, total)


def run_grid(fits: Iterable[FitKey], ctx: GridContext, done: Collection[str] = frozenset()) -> GridSummary:
    """Run the fits whose ids are not in `done`; one `ctx.sink(runs, predictions)` call per chunk.

    Every input is checked before the first fit (feature sets complete and aligned with
    their datasets, no NaN in any array read, each training subset with every class,
    known probes); a bad input raises CrsbenchError with nothing passed to the sink.
    """
    given = sorted(set(fits))
    for fit in given:
        get_probe(fit.probe)
        if fit.dataset_id not in ctx.datasets:
            raise CrsbenchError(f"dataset {fit.dataset_id!r} of fit {fit} was not given")
    all_fits = identify(given, ctx.datasets, ctx.shift_targets, ctx.store)
    todo = [f for f in all_fits if f.fit_id not in done]
    summary = GridSummary(planned=len(all_fits), skipped=len(all_fits) - len(todo), fitted=0, runs=0, batches=0)
    if not todo:
        return summary
    _check_training_subsets(todo, ctx.datasets)
    executor = (
        DistributedExecutor(ctx.scheduler)
        if ctx.scheduler
        else local_executor(len(todo), ctx.batch_size, _image_fits(todo, ctx.datasets), ctx.processes)
    )
    try:
        _sweep(todo, ctx, executor, summary)
    finally:
        if ctx.claims is not None:
            ctx.claims.release([f.fit_id for f in todo])
        if isinstance(executor, DistributedExecutor):
            executor.close()
    return summary


def _standardise(
    groups: Iterable[tuple[FeatureSetRef, Depth]], ctx: GridContext, executor: InProcessExecutor | DistributedExecutor
) -> dict[tuple[FeatureSetRef, Depth], TrainStats]:
    """Check every array the fits read and the train statistics of each (feature set, depth)."""
    checks = _read_checks(groups, ctx.datasets, ctx.shift_targets, ctx.store)
    ctx.report("checking features", 0, 1)
    stats: dict[tuple[FeatureSetRef, Depth], TrainStats] = check_and_standardise(
        ctx.store, checks, compute=executor.compute
    )
    ctx.report("checking features", 1, 1)
    return stats


def _sweep(
    todo: list[FitKey], ctx: GridContext, executor: InProcessExecutor | DistributedExecutor, summary: GridSummary
) -> None:
    """Fit and evaluate `todo` chunk by chunk, handing each batch to the sink; `summary` counts them."""
    projected: dict[FeatureSetRef, bool] = {}

    def depth_of(fit: FitKey) -> Depth:
        return read_depth(fit, ctx.store, projected)

    groups = sorted({(f.feature_set, depth_of(f)) for f in todo}, key=lambda g: (g[0].path, depth_key(g[1])))
    stats = _standardise(groups, ctx, executor)
    waiting: list[FitKey] = []

    def jobs(chunks: Iterable[tuple[FeatureSetRef, Depth, list[FitKey]]]) -> Iterator[Job]:
        for ref, depth, members in chunks:
            if ctx.claims is not None:
                held = ctx.claims.acquire([f.fit_id for f in members])
                waiting.extend(f for f in members if f.fit_id not in held)
                members = [f for f in members if f.fit_id in held]
                if not members:
                    continue
            attrs = ctx.store.attrs(ref)
            pretrained = bool(attrs.get("pretrained", True))
            suite = members[0].suite
            conditions = conditions_of(stored_conditions(attrs), suite)
            chunk = Chunk(ref, depth, tuple(members), pretrained, __version__, conditions, suite)
            yield chunk, ctx.store, ctx.datasets[ref.dataset], ctx.targets_of(ref.dataset), stats[(ref, depth)]

    ctx.report("probe fits", 0, len(todo))

    def rows_of(ref: FeatureSetRef) -> tuple[int, int]:
        source = ctx.datasets[ref.dataset]
        conditions = stored_conditions(ctx.store.attrs(ref))
        eval_rows = sum(len(ev.rows) for ev in eval_sets(source, ref, ctx.targets_of(ref.dataset), conditions))
        return len(source.split_rows("train")), eval_rows

    pending = list(_chunks(todo, ctx.batch_size, rows_of, depth_of))
    while pending:
        for job, (runs, predictions, coefficients) in executor.run(jobs(pending)):
            if ctx.keep_coefficients:
                ctx.sink(runs, predictions, coefficients)
            else:
                ctx.sink(runs, predictions)
            fitted = [f.fit_id for f in job[0].fits]
            if ctx.claims is not None:
                ctx.claims.release(fitted)
            summary.fitted += len(fitted)
            summary.runs += len(runs)
            summary.batches += 1
            ctx.report("probe fits", summary.fitted + summary.by_others, len(todo))
        pending = []
        if waiting and ctx.claims is not None:
            # Fits another sweep holds: wait until they land, or claim them if it died.
            finished = ctx.claims.done([f.fit_id for f in waiting])
            summary.by_others += sum(f.fit_id in finished for f in waiting)
            left = [f for f in waiting if f.fit_id not in finished]
            waiting.clear()
            if left:
                time.sleep(ctx.poll_s)
                pending = list(_chunks(left, ctx.batch_size, rows_of, depth_of))

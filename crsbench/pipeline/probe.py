"""The probe grid over a warehouse's datasets and a store's feature sets (METHODS.md §3)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from crsbench.core import CrsbenchError
from crsbench.features.store import FeatureStore
from crsbench.ingest.types import FRACTION_SEEDS, LABEL_FRACTIONS, Dataset, ProgressFn
from crsbench.probes.chunking import DEFAULT_BATCH_SIZE
from crsbench.probes.records import FitKey
from crsbench.warehouse.connection import Warehouse

if TYPE_CHECKING:
    # The grid (torch, dask) is imported when a sweep runs, so `crsbench.bench` stays light.
    from crsbench.probes.grid import GridSummary


@dataclasses.dataclass(frozen=True)
class ProbeConfig:
    """Which part of the grid to fit, and how.

    An empty tuple means the protocol's default: every registered probe; logreg at all four
    depths and the other probes at full depth; fractions 0.01-1.0; seeds 0-4. `scheduler` is a dask.distributed address (None runs
    in-process); `batch_size` is the number of fits per atomic batch of run records. With
    `compact` (the default) the parts are folded into the file when the sweep ends, unless another
    sweep still writes (then they stay pending: `crsbench warehouse compact` folds them later).
    """

    probes: tuple[str, ...] = ()
    depths: tuple[float, ...] = ()
    fractions: tuple[float, ...] = ()
    seeds: tuple[int, ...] = ()
    scheduler: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    compact: bool = True


def choose_datasets(all_names: Sequence[str], requested: Sequence[str], pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The datasets to fit on: those requested, else every one that is not only a shift target."""
    for name in requested:
        if name not in all_names:
            raise CrsbenchError(f"no dataset {name!r} in the warehouse (datasets: {', '.join(all_names) or 'none'})")
    if requested:
        return list(dict.fromkeys(requested))
    targets = {t for _, t in pairs}
    return [n for n in all_names if n not in targets]


def plan(
    datasets: Sequence[str], encoders: Sequence[str], store: FeatureStore, named_datasets: bool, config: ProbeConfig
) -> list[FitKey]:
    """Every fit to run. Encoders and datasets both named: every pair (a missing feature set is
    an error); encoders alone: the datasets each was extracted on; neither: every feature set."""
    from crsbench.probes.grid import plan_fits

    probes = config.probes or None
    fractions = config.fractions or LABEL_FRACTIONS
    seeds = config.seeds or FRACTION_SEEDS
    depths = config.depths or None
    present = {(r.dataset, r.key) for r in store.feature_sets()}
    fits: list[FitKey] = []
    for name in datasets:
        if encoders:
            keys = [e for e in encoders if named_datasets or (name, e) in present]
            fits += (
                plan_fits([name], keys, store, probes=probes, fractions=fractions, seeds=seeds, depths=depths)
                if keys
                else []
            )
        else:
            fits += plan_fits([name], None, store, probes=probes, fractions=fractions, seeds=seeds, depths=depths)
    for enc in encoders:
        if not any(f.feature_set.key == enc for f in fits):
            raise CrsbenchError(
                f"encoder {enc!r} has no feature set for {', '.join(datasets)} in "
                f"{store.url}; run 'crsbench extract --encoder {enc} --dataset ...'"
            )
    if not fits:
        raise CrsbenchError(f"no feature sets for {', '.join(datasets)} in {store.url}; run 'crsbench extract' first")
    return fits


def probe_all(
    db: Path,
    store_url: str,
    encoders: Sequence[str],
    datasets: Sequence[str],
    config: ProbeConfig,
    progress: ProgressFn | None = None,
) -> GridSummary:
    """Fit the grid and record every evaluation (idempotent: done fits are skipped)."""
    from crsbench.probes.grid import run_grid
    from crsbench.warehouse.claims import FitClaims
    from crsbench.warehouse.datasets import list_datasets, read_dataset, shift_pairs, shift_targets
    from crsbench.warehouse.parts import append_run_parts

    def compacted_done() -> set[str]:
        with Warehouse.open(db, read_only=True) as reader:
            return reader.done_fit_ids()

    # The warehouse is held only while reading; run records are then added as Parquet parts
    # (no connection needed), so analysts can query during the sweep.
    with Warehouse.open(db) as wh:
        names = choose_datasets(list_datasets(wh), datasets, shift_pairs(wh))
        shifts = {name: shift_targets(wh, name) for name in names}
        needed = dict.fromkeys(names + [t for ts in shifts.values() for t in ts])
        loaded: dict[str, Dataset] = {name: read_dataset(wh, name) for name in needed}
        done = wh.done_fit_ids()
        wh.expect_appends()  # the persisted views read the parts folder the sweep writes to
        sink = functools.partial(append_run_parts, wh.parts_dir)
        # Claims let several sweeps share one warehouse, each fit computed once (warehouse/claims.py).
        # Made while the file's write lock is held, so another command's closing compaction either
        # sees this sweep and leaves the parts alone, or has finished before it starts.
        claims = FitClaims(wh.parts_dir, compacted_done=compacted_done)
    with claims:
        store = FeatureStore(store_url)
        fits = plan(names, encoders, store, bool(datasets), config)
        return run_grid(
            fits,
            loaded,
            store,
            shift_targets=shifts,
            done=done,
            sink=sink,
            scheduler=config.scheduler,
            batch_size=config.batch_size,
            progress=progress,
            claims=claims,
        )

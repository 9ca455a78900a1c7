"""The probe grid over a warehouse's datasets and a store's feature sets (METHODS.md §3).

With no probe, depth, fraction or seed option, the fits are exactly each dataset's declared grid
(`warehouse.grid`), for every encoder. Options choose a part of it: each fraction and seed given must be
one the dataset's grid declares (else a one-line error that says how to widen it); a probe and a
depth may pair off the grid, and those fits are extras (stored, never scored).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from crsbench.core import DEPTHS, FRACTION_SEEDS, LABEL_FRACTIONS, CrsbenchError, EncoderKey, ProgressFn
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.ingest.types import Dataset
from crsbench.probes.chunking import DEFAULT_BATCH_SIZE
from crsbench.probes.records import FitKey
from crsbench.warehouse.connection import Warehouse

if TYPE_CHECKING:
    # The grid (torch, dask) is imported when a sweep runs, so `crsbench.bench` stays light.
    from crsbench.probes.grid import GridSummary


@dataclasses.dataclass(frozen=True)
class ProbeConfig:
    """Which part of the grid to fit, and how.

    All four empty: each dataset's declared grid (the protocol's: logreg at all four depths and
    mlp, knn at full depth; fractions 0.01-1.0; seeds 0-4, unless widened by `crsbench grid
    extend`). Otherwise the declared fits matching the values given; each value must be declared
    for the dataset, and probes given with depths pair every probe with every depth (off-grid pairs
    are extras). `scheduler` is a dask.distributed address (None runs in-process); `batch_size` is
    the number of fits per atomic batch of run records. With
    `compact` (the default) the parts are folded into the file when the sweep ends, unless another
    sweep still writes (then they stay pending: `crsbench warehouse compact` folds them later).
    `processes`: without a scheduler, fit in child processes (True), on threads (False), or chosen
    by the grid's size (None: children from a few chunks and image-fits per core on, probes.executors).
    """

    probes: tuple[str, ...] = ()
    depths: tuple[float, ...] = ()
    fractions: tuple[float, ...] = ()
    seeds: tuple[int, ...] = ()
    scheduler: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    compact: bool = True
    processes: bool | None = None


def choose_datasets(all_names: Sequence[str], requested: Sequence[str], pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The datasets to fit on: those requested, else every one that is not only a shift target."""
    for name in requested:
        if name not in all_names:
            raise CrsbenchError(f"no dataset {name!r} in the warehouse (datasets: {', '.join(all_names) or 'none'})")
    if requested:
        return list(dict.fromkeys(requested))
    targets = {t for _, t in pairs}
    return [n for n in all_names if n not in targets]


def labelled_only(wh: Warehouse, names: list[str], requested: bool) -> list[str]:
    """Datasets with labels; one ingested with --unlabeled is refused when named, else left out."""
    unlabelled = {r[0] for r in wh.con.execute("select dataset_id from datasets where len(label_names) = 0").fetchall()}
    named = [n for n in names if n in unlabelled]
    if requested and named:
        raise CrsbenchError(
            f"dataset {named[0]!r} was ingested without labels (--unlabeled): there is nothing to fit a probe on; "
            f"extract it and compare encoders with 'crsbench successor' or 'crsbench analyze agreement'"
        )
    return [n for n in names if n not in unlabelled]


def _declared_values(name: str, declared: pd.DataFrame, config: ProbeConfig) -> None:
    """Fractions and seeds must be ones the dataset's grid declares (no --seed 99, no --fraction 2),
    depths ones the protocol reads; an off-grid probe x depth pair is allowed and becomes an extra."""
    for depth in config.depths:
        if not any(math.isclose(depth, d) for d in DEPTHS):
            raise CrsbenchError(
                f"--depth {depth:g} is not a supported depth; choose from {', '.join(map(str, DEPTHS))}"
            )
    for option, column, given in (("--fraction", "label_fraction", config.fractions), ("--seed", "seed", config.seeds)):
        have = sorted(set(declared[column].tolist()))
        for value in given:
            if not any(math.isclose(value, h) for h in have):
                shown = ", ".join(f"{h:g}" for h in have)
                raise CrsbenchError(
                    f"{option} {value:g} is outside the declared grid of dataset {name!r} ({shown}); "
                    f"widen it first: crsbench grid extend --dataset {name} {option} {value:g}"
                )


def _selected(declared: pd.DataFrame, config: ProbeConfig) -> list[tuple[str, float, float, int]]:
    """The (probe, depth, fraction, seed) fits an option set asks for on one dataset: the probes
    given (else the declared ones) at the depths given (else each probe's declared depths, full
    depth for a probe the grid lacks), at the fractions and seeds given (else the declared ones)."""
    declared_pairs = {(str(p), float(d)) for p, d in zip(declared["probe"], declared["depth"], strict=True)}
    probes = config.probes or tuple(sorted({p for p, _ in declared_pairs}))
    pairs: list[tuple[str, float]] = []
    for probe in probes:
        depths = config.depths or tuple(sorted(d for p, d in declared_pairs if p == probe)) or (1.0,)
        pairs += [(probe, float(d)) for d in depths]
    fractions = config.fractions or tuple(sorted(set(declared["label_fraction"].tolist())))
    seeds = config.seeds or tuple(sorted(set(declared["seed"].tolist())))
    return [(p, d, float(f), int(s)) for p, d in pairs for f in fractions for s in seeds]


def _refs(name: str, keys: Sequence[str] | None, store: FeatureStore) -> list[FeatureSetRef]:
    if keys is None:
        return [r for r in store.probe_sets() if r.dataset == name]  # screened-only sets are no grid input
    return [FeatureSetRef(name, EncoderKey.parse(k).encoder_id, EncoderKey.parse(k).regime) for k in keys]


def plan(
    datasets: Sequence[str],
    encoders: Sequence[str],
    store: FeatureStore,
    named_datasets: bool,
    config: ProbeConfig,
    grids: dict[str, pd.DataFrame],
    suites: dict[str, pd.DataFrame] | None = None,
) -> list[FitKey]:
    """Every fit to run. Encoders and datasets both named: every pair (a missing feature set is
    an error); encoders alone: the datasets each was extracted on; neither: every feature set.
    `grids` holds each dataset's declared fits (probe, depth, label_fraction, seed); `suites` the
    fits a corruption suite's conditions are declared for (`grid_suites.grid_suite_fits`), each a
    fit of its own (`suite_fits`)."""
    from crsbench.probes.grid import plan_fits
    from crsbench.probes.registry import get_probe

    for probe in config.probes:
        if get_probe(probe).zero_shot:  # an unknown name is named as such before any grid check
            raise CrsbenchError(f"probe {probe!r} trains nothing and needs prompts: run 'crsbench zeroshot' instead")
    present = {(r.dataset, r.key) for r in store.feature_sets()}
    fits: list[FitKey] = []
    options = bool(config.probes or config.depths or config.fractions or config.seeds)
    for name in datasets:
        declared = grids[name]
        if encoders:
            keys: list[str] | None = [e for e in encoders if named_datasets or (name, e) in present]
            if not keys:
                continue
        else:
            keys = None
        if declared.empty:  # no declared grid (a warehouse written by hand): the protocol's
            fits += plan_fits(
                [name],
                keys,
                store,
                probes=config.probes or None,
                fractions=config.fractions or LABEL_FRACTIONS,
                seeds=config.seeds or FRACTION_SEEDS,
                depths=config.depths or None,
            )
            continue
        if options:
            _declared_values(name, declared, config)
            wanted = _selected(declared, config)
        else:
            wanted = [
                (str(p), float(d), float(f), int(s))
                for p, d, f, s in declared[["probe", "depth", "label_fraction", "seed"]].itertuples(index=False)
            ]
        refs = _refs(name, keys, store)
        fits += [FitKey(ref.encoder_id, name, d, p, fr, s, ref.regime) for ref in refs for p, d, fr, s in wanted]
        if suites is not None and name in suites:
            fits += suite_fits(suites[name], refs, store, set(wanted))
    for enc in encoders:
        if not any(f.feature_set.key == enc for f in fits):
            raise CrsbenchError(
                f"encoder {enc!r} has no feature set for {', '.join(datasets)} in "
                f"{store.url}; run 'crsbench extract --encoder {enc} --dataset ...'"
            )
    if not fits:
        raise CrsbenchError(f"no feature sets for {', '.join(datasets)} in {store.url}; run 'crsbench extract' first")
    return sorted(set(fits))


def suite_fits(
    declared: pd.DataFrame,
    refs: Sequence[FeatureSetRef],
    store: FeatureStore,
    wanted: set[tuple[str, float, float, int]],
) -> list[FitKey]:
    """A corruption suite's fits among those wanted: one per declared (probe, depth, fraction, seed,
    suite), for each feature set that holds the suite's conditions (a set extracted before the grid
    gained them has none yet: 'crsbench extract' adds them, and `grid_missing` lists what is owed)."""
    from crsbench.features.conditions import conditions_of, stored_conditions

    fits = []
    for ref in refs:
        if not store.is_complete(ref):
            continue  # a missing set is named where the protocol's fits read it
        held = {suite for suite in set(declared["suite"]) if conditions_of(stored_conditions(store.attrs(ref)), suite)}
        fits += [
            FitKey(ref.encoder_id, ref.dataset, float(d), str(p), float(f), int(s), ref.regime, suite=str(suite))
            for p, d, f, s, suite in declared.itertuples(index=False, name=None)
            if suite in held and (str(p), float(d), float(f), int(s)) in wanted
        ]
    return fits


def extra_fits(fits: Sequence[FitKey], grids: dict[str, pd.DataFrame]) -> int:
    """How many of `fits` lie outside their dataset's declared grid."""
    declared = {
        name: {(p, round(d, 9), round(f, 9), int(s)) for p, d, f, s in g.itertuples(index=False, name=None)}
        for name, g in grids.items()
        if not g.empty
    }
    return sum(
        1
        for f in fits
        if f.dataset_id in declared
        and (f.probe, round(f.depth, 9), round(f.label_fraction, 9), f.seed) not in declared[f.dataset_id]
    )


def probe_all(
    db: Path,
    store_url: str,
    encoders: Sequence[str],
    datasets: Sequence[str],
    config: ProbeConfig,
    progress: ProgressFn | None = None,
) -> GridSummary:
    """Fit the grid and record every evaluation (idempotent: done fits are skipped)."""
    from crsbench.probes.grid import GridContext, run_grid
    from crsbench.warehouse.datasets import list_datasets, read_dataset, shift_pairs, shift_targets
    from crsbench.warehouse.grid import grid_fits
    from crsbench.warehouse.grid_suites import grid_suite_fits
    from crsbench.warehouse.integrity import recorded_manifests

    def compacted_done() -> set[str]:
        with Warehouse.open(db, read_only=True) as reader:
            return reader.done_fit_ids()

    # The warehouse is held only while reading; run records are then added as Parquet parts
    # (no connection needed), so analysts can query during the sweep.
    with Warehouse.open(db) as wh:
        names = labelled_only(wh, choose_datasets(list_datasets(wh), datasets, shift_pairs(wh)), bool(datasets))
        shifts = {name: shift_targets(wh, name) for name in names}
        needed = dict.fromkeys(names + [t for ts in shifts.values() for t in ts])
        loaded: dict[str, Dataset] = {name: read_dataset(wh, name) for name in needed}
        grids = {name: grid_fits(wh.con, name) for name in names}
        suites = {name: grid_suite_fits(wh.con, name) for name in names}
        done = wh.done_fit_ids()
        recorded = recorded_manifests(wh, store_url)  # every chunk read is checked against these too
        sink = wh.run_sink()  # the lone file: its persisted views now read the parts folder the sweep writes to
        # Claims let several sweeps share one warehouse, each fit computed once (warehouse/claims.py,
        # lake_claims.py). Made while the file's write lock is held, so another command's closing
        # compaction either sees this sweep and leaves the parts alone, or has finished before it starts.
        claims = wh.fit_claims(compacted_done)
    with claims:
        store = FeatureStore(store_url)
        store.recorded = recorded
        fits = plan(names, encoders, store, bool(datasets), config, grids, suites)
        extra = extra_fits(fits, grids)
        grid = GridContext(
            loaded,
            store,
            sink,
            shift_targets=shifts,
            scheduler=config.scheduler,
            batch_size=config.batch_size,
            progress=progress,
            claims=claims,
            keep_coefficients=True,
            processes=config.processes,
        )
        summary = run_grid(fits, grid, done)
    return dataclasses.replace(summary, extra=extra)

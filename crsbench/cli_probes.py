"""CLI: `crsbench probe` — run the probe grid over cached features (owned by the probes stage)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crsbench.cli import DbOption, app
from crsbench.cli_features import StoreOption, default_store
from crsbench.features.store import FeatureStore
from crsbench.ingest.types import FRACTION_SEEDS, LABEL_FRACTIONS, CrsbenchError, Dataset
from crsbench.output import emit, progress
from crsbench.probes.grid import DEFAULT_BATCH_SIZE, plan_fits, run_grid
from crsbench.probes.records import FitKey
from crsbench.warehouse.claims import FitClaims
from crsbench.warehouse.connection import Warehouse, default_db_path, parts_dir_for


def _chosen_datasets(all_names: list[str], requested: list[str], pairs: list[tuple[str, str]]) -> list[str]:
    for name in requested:
        if name not in all_names:
            raise CrsbenchError(f"no dataset {name!r} in the warehouse (datasets: {', '.join(all_names) or 'none'})")
    if requested:
        return list(dict.fromkeys(requested))
    # A dataset that is the shift target of another is evaluation-only unless named.
    targets = {t for _, t in pairs}
    return [n for n in all_names if n not in targets]


def _plan(datasets: list[str], encoders: list[str], store: FeatureStore, named_datasets: bool,
          **grid) -> list[FitKey]:
    present = {(r.dataset, r.key) for r in store.feature_sets()}
    fits: list[FitKey] = []
    for name in datasets:
        if encoders:
            # Both named: every pair is planned (a missing feature set is then an error);
            # encoders named alone: the datasets each was extracted on.
            keys = [e for e in encoders if named_datasets or (name, e) in present]
            fits += plan_fits([name], keys, store, **grid) if keys else []
        else:
            fits += plan_fits([name], None, store, **grid)
    for enc in encoders:
        if not any(f.feature_set.key == enc for f in fits):
            raise CrsbenchError(f"encoder {enc!r} has no feature set for {', '.join(datasets)} in "
                                f"{store.url}; run 'crsbench extract --encoder {enc} --dataset ...'")
    if not fits:
        raise CrsbenchError(f"no feature sets for {', '.join(datasets)} in {store.url}; "
                            "run 'crsbench extract' first")
    return fits


@app.command("probe")
def probe_command(
    encoder: Annotated[list[str], typer.Option("--encoder", "-e", help="Encoder key (e.g. vit_tiny or "
                                                "vit_tiny@lora-s0); repeatable; default every feature set.")] = [],
    dataset: Annotated[list[str], typer.Option("--dataset", "-d", help="Dataset to fit on; repeatable; "
                                                "default every dataset that is not only a shift target.")] = [],
    probe: Annotated[list[str], typer.Option("--probe", "-p", help="logreg, mlp or knn; repeatable; "
                                              "default all three.")] = [],
    depth: Annotated[list[float], typer.Option("--depth", help="Depths to fit (0.25 0.5 0.75 1.0); default "
                                               "logreg at all four, mlp and knn at 1.0.")] = [],
    fraction: Annotated[list[float], typer.Option("--fraction", help="Label fractions; default "
                                                  "0.01 0.05 0.1 0.25 1.0.")] = [],
    seed: Annotated[list[int], typer.Option("--seed", help="Fraction seeds; default 0-4.")] = [],
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="dask.distributed scheduler address, "
                                                  "e.g. tcp://host:8786; default in-process.")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Fits per atomic batch of run records.")]
    = DEFAULT_BATCH_SIZE,
    store: StoreOption = None,
    db: DbOption = default_db_path(),
) -> None:
    """Fit the probe grid on cached features and record every evaluation (idempotent, resumable)."""
    from crsbench.warehouse.datasets import list_datasets, read_dataset, shift_pairs, shift_targets

    # The warehouse connection is held only while reading; runs are then added as Parquet
    # parts (append_runs needs no connection), so analysts can query during the sweep.
    with Warehouse.open(db) as wh:
        names = _chosen_datasets(list_datasets(wh), dataset, shift_pairs(wh))
        shifts = {name: shift_targets(wh, name) for name in names}
        needed = dict.fromkeys(names + [t for ts in shifts.values() for t in ts])
        datasets: dict[str, Dataset] = {name: read_dataset(wh, name) for name in needed}
        done = wh.done_fit_ids()
    feature_store = FeatureStore(store or default_store(db))
    grid = {"probes": probe or None, "fractions": tuple(fraction) or LABEL_FRACTIONS,
            "seeds": tuple(seed) or FRACTION_SEEDS, "depths": tuple(depth) or None}
    fits = _plan(names, encoder, feature_store, bool(dataset), **grid)
    # Fit claims let several `probe` processes share one warehouse without repeating a fit.
    def compacted_done() -> set[str]:
        with Warehouse.open(db, read_only=True) as reader:
            return reader.done_fit_ids()

    with progress() as bar, FitClaims(parts_dir_for(Path(db)), compacted_done=compacted_done) as claims:
        summary = run_grid(fits, datasets, feature_store, shift_targets=shifts, done=done,
                           sink=wh.append_runs, scheduler=scheduler, batch_size=batch_size,
                           progress=bar, claims=claims)
    emit(
        {"db": str(db), "store": feature_store.url, "planned": summary.planned,
         "skipped": summary.skipped, "fitted": summary.fitted, "runs": summary.runs,
         "batches": summary.batches, "by_others": summary.by_others},
        f"probe grid: {summary.fitted} fits run ({summary.runs} run records in {summary.batches} "
        f"batches), {summary.skipped} of {summary.planned} already done"
        + (f", {summary.by_others} fitted meanwhile by another sweep" if summary.by_others else ""),
    )

"""Zero-shot classification over a warehouse's datasets and a store's feature sets (METHODS.md §3.5).

For each image-text encoder and dataset: load the text tower once, embed the dataset's prompt
set (the adapter's default or a `--prompts` file's table), keep the class embeddings beside the
image features, then run the zero-shot fits (probe 'zeroshot', depth 1.0, label fraction 0,
seed 0) through the ordinary grid: evaluated on the test split, every perturbed condition, the
calib split and each shift target, written as ordinary run records and predictions. The cells
run are declared zero-shot cells (`zeroshot_grid`) with the prompt set just run, so the grid's
completeness views account for them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crsbench.core import CrsbenchError, ProgressFn
from crsbench.features.lookup import get_encoder
from crsbench.features.registry import EncoderEntry
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.ingest.types import Dataset, Task
from crsbench.probes.records import FitKey
from crsbench.warehouse.connection import Warehouse

if TYPE_CHECKING:
    from crsbench.probes.grid import GridSummary

ZEROSHOT_DEPTH = 1.0
ZEROSHOT_FRACTION = 0.0
ZEROSHOT_SEED = 0


@dataclasses.dataclass(frozen=True)
class ZeroShotSummary:
    fits: int  # zero-shot fits planned
    fitted: int  # computed now (others were done already: same weights and prompts)
    runs: int
    prompt_sets: dict[str, str]  # "encoder x dataset" -> prompt hash
    compacted: int = 0
    pending_parts: int = 0
    pending_reason: str = ""


def zeroshot_all(
    db: Path,
    store_url: str,
    encoders: Sequence[str],
    datasets: Sequence[str],
    prompts_file: Path | None = None,
    progress: ProgressFn | None = None,
) -> ZeroShotSummary:
    """Zero-shot fits of the named image-text encoders (default: every one with projected features)
    on the chosen datasets, their prompt sets embedded first."""
    from crsbench.features.zeroshot import check_zero_shot_encoder
    from crsbench.ingest.prompts import read_prompt_file

    store = FeatureStore(store_url)
    present = {(r.dataset, r.encoder_id) for r in store.probe_sets() if r.regime == "frozen"}
    entries = [get_encoder(e) for e in encoders] if encoders else None
    for entry in entries or ():
        check_zero_shot_encoder(entry)
    overrides = read_prompt_file(prompts_file) if prompts_file is not None else None
    chosen = _read_datasets(db, store, store_url, datasets)
    if overrides:
        unknown = sorted(set(overrides) - set(chosen.loaded))
        if unknown:
            raise CrsbenchError(
                f"prompt file {prompts_file}: no dataset {unknown[0]!r} in the warehouse "
                f"(datasets: {', '.join(chosen.loaded)})"
            )
    if entries is None:
        entries = _image_text_encoders(store, store_url, present)
    cells = _cells_with_features(entries, chosen.names, present, store_url)
    prompt_rows = _embed_prompt_sets(store, entries, cells, chosen.loaded, overrides, str(prompts_file or ""))
    fits = [FitKey(e.id, n, ZEROSHOT_DEPTH, "zeroshot", ZEROSHOT_FRACTION, ZEROSHOT_SEED) for e, n in cells]
    summary = _run_fits(db, fits, chosen, store, prompt_rows, progress)
    hashes = {f"{e} x {n}": str(row["prompt_hash"]) for (e, n), row in prompt_rows.items()}
    return ZeroShotSummary(len(fits), summary.fitted, summary.runs, hashes)


@dataclasses.dataclass(frozen=True)
class _Datasets:
    names: list[str]  # the datasets chosen
    shifts: dict[str, list[str]]  # chosen dataset -> its shift targets
    loaded: dict[str, Dataset]  # the chosen datasets and their shift targets
    done: set[str]  # fit ids already in the warehouse


def _read_datasets(db: Path, store: FeatureStore, store_url: str, datasets: Sequence[str]) -> _Datasets:
    """The chosen datasets with their shift targets, and the fits already done; arms the store's checks."""
    from crsbench.pipeline.probe import choose_datasets
    from crsbench.warehouse.datasets import list_datasets, read_dataset, shift_pairs, shift_targets
    from crsbench.warehouse.integrity import recorded_manifests

    with Warehouse.open(db) as wh:  # read-write: an older file is migrated first
        store.recorded = recorded_manifests(wh, store_url)  # every chunk read is checked against these too
        names = choose_datasets(list_datasets(wh), datasets, shift_pairs(wh))
        shifts = {name: shift_targets(wh, name) for name in names}
        needed = dict.fromkeys(names + [t for ts in shifts.values() for t in ts])
        loaded: dict[str, Dataset] = {name: read_dataset(wh, name) for name in needed}
        done = wh.done_fit_ids()
    return _Datasets(names, shifts, loaded, done)


def _image_text_encoders(store: FeatureStore, store_url: str, present: set[tuple[str, str]]) -> list[EncoderEntry]:
    """Every image-text encoder with features here, when none is named."""
    ids = sorted({e for _, e in present})
    entries = [get_encoder(e) for e in ids if get_encoder(e).text_tower is not None]
    # Only sets holding a projected image embedding (projection pooling, or a stored `proj`)
    entries = [e for e in entries if any(_projected(store, e, n) for n, i in present if i == e.id)]
    if not entries:
        raise CrsbenchError(
            f"no feature sets of an image-text encoder in {store_url}; extract one first "
            "(e.g. crsbench extract --encoder tiny-clip --dataset all)"
        )
    return entries


def _cells_with_features(
    entries: list[EncoderEntry], names: list[str], present: set[tuple[str, str]], store_url: str
) -> list[tuple[EncoderEntry, str]]:
    """(encoder, dataset) cells with a frozen feature set; an encoder with none of them is an error."""
    cells = [(e, n) for e in entries for n in names if (n, e.id) in present]
    for entry in entries:
        if not any(c[0].id == entry.id for c in cells):
            raise CrsbenchError(
                f"encoder {entry.id!r} has no feature set for {', '.join(names)} in {store_url}; "
                f"run 'crsbench extract --encoder {entry.id} --dataset ...'"
            )
    return cells


def _embed_prompt_sets(
    store: FeatureStore,
    entries: list[EncoderEntry],
    cells: list[tuple[EncoderEntry, str]],
    loaded: dict[str, Dataset],
    overrides: dict[str, dict[str, Any]] | None,
    source: str,
) -> dict[tuple[str, str], dict[str, object]]:
    """Embed each cell's prompt set beside its image features; (encoder, dataset) -> its prompt record.

    The text tower is loaded once per encoder, for all of its datasets."""
    from crsbench.features.text import load_text_tower
    from crsbench.features.zeroshot import store_text_embeddings
    from crsbench.ingest.prompts import prompts_for

    prompt_rows: dict[tuple[str, str], dict[str, object]] = {}
    for entry in entries:
        mine = [n for e, n in cells if e.id == entry.id]
        sets = {n: prompts_for(loaded[n], overrides, source) for n in mine}
        tower = load_text_tower(entry)
        for n in mine:
            ref = FeatureSetRef(n, entry.id)
            digest = store_text_embeddings(store, ref, sets[n], Task(loaded[n].task), tower, entry)
            prompt_rows[(entry.id, n)] = {
                "encoder_id": entry.id,
                "dataset_id": n,
                "prompt_hash": digest,
                "prompts": sets[n].to_dict(),
                "logit_scale": tower.logit_scale,
                "logit_bias": tower.logit_bias,
            }
    return prompt_rows


def _run_fits(
    db: Path,
    fits: list[FitKey],
    chosen: _Datasets,
    store: FeatureStore,
    prompt_rows: dict[tuple[str, str], dict[str, object]],
    progress: ProgressFn | None,
) -> GridSummary:
    """Run the zero-shot fits through the ordinary grid and record each fit's prompts and the cells run."""
    from crsbench.probes.grid import GridContext, run_grid
    from crsbench.probes.identity import identify
    from crsbench.warehouse.zeroshot import declare_cells, record_prompts

    identified = identify(fits, chosen.loaded, chosen.shifts, store)
    with Warehouse.open(db) as wh:
        sink = wh.run_sink()
        context = GridContext(chosen.loaded, store, sink, shift_targets=chosen.shifts, progress=progress)
        summary = run_grid(fits, context, chosen.done)
        record_prompts(wh.con, [{"fit_id": f.fit_id, **prompt_rows[(f.encoder_id, f.dataset_id)]} for f in identified])
        # The cells run are declared (grid_declared_zeroshot), with the prompt set just run.
        declare_cells(wh.con, [(e, n, str(row["prompt_hash"])) for (e, n), row in prompt_rows.items()])
    return summary


def _projected(store: FeatureStore, entry: EncoderEntry, dataset: str) -> bool:
    from crsbench.features.zeroshot import image_depth

    return image_depth(store, FeatureSetRef(dataset, entry.id), entry) is not None

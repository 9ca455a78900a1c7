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
import functools
from collections.abc import Sequence
from pathlib import Path

from crsbench.core import CrsbenchError, ProgressFn
from crsbench.features.lookup import get_encoder
from crsbench.features.registry import EncoderEntry
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.ingest.types import Dataset, Task
from crsbench.probes.records import FitKey
from crsbench.warehouse.connection import Warehouse

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
    from crsbench.features.text import load_text_tower
    from crsbench.features.zeroshot import check_zero_shot_encoder, store_text_embeddings
    from crsbench.ingest.prompts import prompts_for, read_prompt_file
    from crsbench.pipeline.probe import choose_datasets
    from crsbench.probes.grid import GridContext, run_grid
    from crsbench.probes.identity import identify
    from crsbench.warehouse.datasets import list_datasets, read_dataset, shift_pairs, shift_targets
    from crsbench.warehouse.integrity import recorded_manifests
    from crsbench.warehouse.parts import append_run_parts
    from crsbench.warehouse.zeroshot import declare_cells, record_prompts

    store = FeatureStore(store_url)
    present = {(r.dataset, r.encoder_id) for r in store.feature_sets() if r.regime == "frozen"}
    entries = [get_encoder(e) for e in encoders] if encoders else None
    for entry in entries or ():
        check_zero_shot_encoder(entry)
    overrides = read_prompt_file(prompts_file) if prompts_file is not None else None
    with Warehouse.open(db) as wh:  # read-write: an older file is migrated first
        store.recorded = recorded_manifests(wh, store_url)  # every chunk read is checked against these too
        names = choose_datasets(list_datasets(wh), datasets, shift_pairs(wh))
        shifts = {name: shift_targets(wh, name) for name in names}
        needed = dict.fromkeys(names + [t for ts in shifts.values() for t in ts])
        loaded: dict[str, Dataset] = {name: read_dataset(wh, name) for name in needed}
        done = wh.done_fit_ids()
    if overrides:
        unknown = sorted(set(overrides) - set(loaded))
        if unknown:
            raise CrsbenchError(
                f"prompt file {prompts_file}: no dataset {unknown[0]!r} in the warehouse "
                f"(datasets: {', '.join(loaded)})"
            )
    if entries is None:  # every image-text encoder with features here
        ids = sorted({e for _, e in present})
        entries = [get_encoder(e) for e in ids if get_encoder(e).text_tower is not None]
        # Only sets holding a projected image embedding (projection pooling, or a stored `proj`)
        entries = [e for e in entries if any(_projected(store, e, n) for n, i in present if i == e.id)]
        if not entries:
            raise CrsbenchError(
                f"no feature sets of an image-text encoder in {store_url}; extract one first "
                "(e.g. crsbench extract --encoder tiny-clip --dataset all)"
            )
    cells = [(e, n) for e in entries for n in names if (n, e.id) in present]
    for entry in entries:
        if not any(c[0].id == entry.id for c in cells):
            raise CrsbenchError(
                f"encoder {entry.id!r} has no feature set for {', '.join(names)} in {store_url}; "
                f"run 'crsbench extract --encoder {entry.id} --dataset ...'"
            )
    hashes: dict[str, str] = {}
    prompt_rows: dict[tuple[str, str], dict[str, object]] = {}
    for entry in entries:
        mine = [n for e, n in cells if e.id == entry.id]
        sets = {n: prompts_for(loaded[n], overrides, str(prompts_file or "")) for n in mine}
        tower = load_text_tower(entry)
        for n in mine:
            ref = FeatureSetRef(n, entry.id)
            digest = store_text_embeddings(store, ref, sets[n], Task(loaded[n].task), tower, entry)
            hashes[f"{entry.id} x {n}"] = digest
            prompt_rows[(entry.id, n)] = {
                "encoder_id": entry.id,
                "dataset_id": n,
                "prompt_hash": digest,
                "prompts": sets[n].to_dict(),
                "logit_scale": tower.logit_scale,
                "logit_bias": tower.logit_bias,
            }
    fits = [FitKey(e.id, n, ZEROSHOT_DEPTH, "zeroshot", ZEROSHOT_FRACTION, ZEROSHOT_SEED) for e, n in cells]
    identified = identify(fits, loaded, shifts, store)
    with Warehouse.open(db) as wh:
        wh.expect_appends()
        sink = functools.partial(append_run_parts, wh.parts_dir)
        summary = run_grid(fits, GridContext(loaded, store, sink, shift_targets=shifts, progress=progress), done)
        record_prompts(wh.con, [{"fit_id": f.fit_id, **prompt_rows[(f.encoder_id, f.dataset_id)]} for f in identified])
        # The cells run are declared (grid_declared_zeroshot), with the prompt set just run.
        declare_cells(wh.con, [(e, n, str(row["prompt_hash"])) for (e, n), row in prompt_rows.items()])
    return ZeroShotSummary(len(fits), summary.fitted, summary.runs, hashes)


def _projected(store: FeatureStore, entry: EncoderEntry, dataset: str) -> bool:
    from crsbench.features.zeroshot import image_depth

    return image_depth(store, FeatureSetRef(dataset, entry.id), entry) is not None

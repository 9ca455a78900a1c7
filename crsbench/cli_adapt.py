"""CLI: `crsbench adapt` — LoRA-adapt an encoder per seed and extract the variant (METHODS.md §13).

Each seed: train (or reuse) the adapter, save it, reload it onto a fresh base and extract the
variant `encoder@lora-s<seed>` into the same feature store, on the dataset and on its shift
targets, through the same one-pass `extract`; the catalog then lists it beside the frozen set,
and `crsbench probe --encoder ENC@lora-s0` gives it the same probe grid and views.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pandas as pd
import typer

from crsbench.cli import DbOption, app
from crsbench.cli_features import StoreOption, default_store
from crsbench.features.registry import get_encoder
from crsbench.features.store import FeatureSetRef
from crsbench.core import EncoderKey
from crsbench.ingest.types import CrsbenchError
from crsbench.output import emit, progress
from crsbench.warehouse.connection import Warehouse, default_db_path


def parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise CrsbenchError(f"--seeds expects comma-separated integers, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise CrsbenchError(f"--seeds expects non-negative integers, got {text!r}")
    return list(dict.fromkeys(seeds))


def default_adapter_root(store_url: str) -> Path:
    """`<store>.adapters` beside a local feature store."""
    if "://" in store_url and not store_url.startswith("file://"):
        raise CrsbenchError(f"feature store {store_url} is not local; give --out for the adapters")
    path = Path(store_url.removeprefix("file://"))
    return path.with_name(path.name + ".adapters")


@app.command("adapt")
def adapt_command(
    encoder: Annotated[str, typer.Option("--encoder", "-e", help="Encoder id to adapt (see 'crsbench encoders').")],
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset whose train split trains the adapter.")],
    seeds: Annotated[str, typer.Option("--seeds", help="Adaptation seeds, comma-separated.")] = "0,1,2",
    epochs: Annotated[int, typer.Option("--epochs", help="Training epochs (METHODS.md §13: 8).")] = 8,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Images per training step.")] = 32,
    max_steps: Annotated[int | None, typer.Option("--max-steps", help="Stop training after this many "
                                                  "steps (smoke runs).")] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda (cuda:N).")] = "cpu",
    out: Annotated[Path | None, typer.Option("--out", help="Adapter folder root (default "
                                             "<store>.adapters beside the store).")] = None,
    weights: Annotated[Path | None, typer.Option(help="Local base weights (file or model folder).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Retrain adapters and re-extract their features.")] = False,
    store: StoreOption = None,
    db: DbOption = default_db_path(),
) -> None:
    """Train LoRA adapters (one per seed), save them, and extract each variant as regime lora-s<seed>."""
    from crsbench.features.adapt import (ADAPTER_FILE, LoraSettings, adapt, adapter_dir, load_adapted,
                                         regime_name, save_adapter)
    from crsbench.features.extraction import extract
    from crsbench.warehouse import catalog
    from crsbench.warehouse.datasets import list_datasets, read_dataset, shift_targets

    seed_list = parse_seeds(seeds)
    settings = LoraSettings(epochs=epochs, batch_size=batch_size, max_steps=max_steps)
    entry = get_encoder(encoder)
    url = store or default_store(db)
    root = out or default_adapter_root(url)
    base_weights = str(weights) if weights else None
    with Warehouse.open(db, read_only=True) as wh:  # no write lock held while training
        if dataset not in list_datasets(wh):
            raise CrsbenchError(f"no dataset {dataset!r} in the warehouse {db}")
        source = read_dataset(wh, dataset)
        targets = [read_dataset(wh, t) for t in shift_targets(wh, dataset)]
    rows, notes = [], []
    with progress() as bar:
        for seed in seed_list:
            folder = adapter_dir(root, entry.id, dataset, seed)
            trained = force or not (folder / ADAPTER_FILE).exists()
            if trained:
                result = adapt(source, entry, seed=seed, settings=settings, device=device,
                               weights=base_weights, progress=bar)
                save_adapter(result, folder, {
                    "encoder_id": entry.id, "dataset": dataset, "seed": seed,
                    "regime": regime_name(seed), **{k: getattr(settings, k) for k in
                                                    ("rank", "alpha", "dropout", "lr", "epochs",
                                                     "batch_size", "max_steps")}})
                if result.adapter_norm == 0.0:
                    notes.append(f"seed {seed}: the adapters received no gradient (still at their "
                                 f"zero init); the variant equals the frozen encoder")
            # What is extracted is what was saved: always reload from the adapter folder.
            model = load_adapted(entry, folder, weights=base_weights)
            for ds in [source, *targets]:
                ref = FeatureSetRef(ds.name, entry.id, regime_name(seed))
                attrs = extract(ds, entry, url, regime=ref.regime, model=model, device=device,
                                force=trained, progress=bar)
                with Warehouse.open(db) as wh:
                    catalog.register_encoder(wh, entry)
                    catalog.record_feature_set(wh, url, ref, attrs)
                rows.append({"encoder": ref.key, "dataset": ds.name, "adapter": str(folder),
                             "trained": trained,
                             "features": "skipped (complete)" if attrs.get("skipped") else "extracted"})
    frame = pd.DataFrame(rows)
    emit({"store": url, "adapters": str(root), "variants": frame, "notes": notes},
         "\n".join([*notes, *(f"  {r['encoder']} x {r['dataset']}: adapter "
                   f"{'trained' if r['trained'] else 'reused'}, features {r['features']}" for r in rows)])
         + f"\nprobe them with: crsbench probe --encoder {EncoderKey(entry.id, regime_name(seed_list[0]))}")

"""CLI: `crsbench adapt` — LoRA-adapt an encoder per seed and extract the variant (METHODS.md §13)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crsbench.bench import AdaptConfig, Bench
from crsbench.cli.app import DbOption, StoreOption, app
from crsbench.cli.output import emit, progress
from crsbench.core import CrsbenchError, default_db_path

if TYPE_CHECKING:
    from crsbench.pipeline.adapt import AdaptResult

__all__ = ["adapt_command", "parse_seeds"]


def parse_seeds(text: str) -> tuple[int, ...]:
    """'0,1,2' -> (0, 1, 2): non-negative, duplicates dropped."""
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise CrsbenchError(f"--seeds expects comma-separated integers, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise CrsbenchError(f"--seeds expects non-negative integers, got {text!r}")
    return tuple(dict.fromkeys(seeds))


def render_adapt(bench: Bench, result: AdaptResult) -> None:
    rows = result.variants.to_dict("records")
    emit(
        {"store": bench.store, "adapters": str(result.root), "variants": result.variants, "notes": result.notes},
        "\n".join(
            [
                *result.notes,
                *(
                    f"  {r['encoder']} x {r['dataset']}: adapter "
                    f"{'trained' if r['trained'] else 'reused'}, features {r['features']}"
                    for r in rows
                ),
            ]
        )
        + f"\nprobe them with: crsbench probe --encoder {result.first_key}",
    )


@app.command("adapt")
def adapt_command(
    encoder: Annotated[str, typer.Option("--encoder", "-e", help="Encoder id to adapt (see 'crsbench encoders').")],
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset whose train split trains the adapter.")],
    seeds: Annotated[str, typer.Option("--seeds", help="Adaptation seeds, comma-separated.")] = "0,1,2",
    epochs: Annotated[int, typer.Option("--epochs", help="Training epochs (METHODS.md §13: 8).")] = 8,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Images per training step.")] = 32,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", help="Stop training after this many steps (smoke runs).")
    ] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda (cuda:N).")] = "cpu",
    out: Annotated[
        Path | None, typer.Option("--out", help="Adapter folder root (default <store>.adapters beside the store).")
    ] = None,
    weights: Annotated[Path | None, typer.Option(help="Local base weights (file or model folder).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Retrain adapters and re-extract their features.")] = False,
    store: StoreOption = None,
    db: DbOption = default_db_path(),
) -> None:
    """Train LoRA adapters (one per seed), save them, and extract each variant as regime lora-s<seed>."""
    bench = Bench(db, store)
    config = AdaptConfig(
        seeds=parse_seeds(seeds),
        epochs=epochs,
        batch_size=batch_size,
        max_steps=max_steps,
        device=device,
        out=out,
        weights=weights,
        force=force,
    )
    with progress() as bar:
        result = bench.adapt(encoder, dataset, config, progress=bar)
    render_adapt(bench, result)

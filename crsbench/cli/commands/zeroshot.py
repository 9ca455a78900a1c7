"""CLI: `crsbench zeroshot` — zero-shot classification of the image-text encoders (METHODS.md §3.5)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crsbench.bench import Bench
from crsbench.cli.app import DbOption, StoreOption, app
from crsbench.cli.output import emit, progress
from crsbench.core import default_db_path


@app.command("zeroshot")
def zeroshot_command(
    encoder: Annotated[
        list[str],
        typer.Option("--encoder", "-e", help="Image-text encoder id; repeatable; default every one with features."),
    ] = [],
    dataset: Annotated[
        list[str],
        typer.Option("--dataset", "-d", help="Dataset; repeatable; default every one that is not only a shift target."),
    ] = [],
    prompts: Annotated[
        Path | None,
        typer.Option("--prompts", help="TOML file of [dataset.<name>] classes and templates (default: the adapters')."),
    ] = None,
    no_compact: Annotated[
        bool, typer.Option("--no-compact", help="Leave the run records as Parquet parts (default: fold them in).")
    ] = False,
    store: StoreOption = None,
    db: DbOption = default_db_path(),
) -> None:
    """Zero-shot classification from each image-text encoder's text tower and stored image embeddings.

    Probe 'zeroshot' (label fraction 0, seed 0, depth 1.0), recorded as ordinary runs on the test
    split, every perturbed condition, the calib split and each shift target (idempotent)."""
    bench = Bench(db, store)
    with progress() as bar:
        summary = bench.zeroshot(encoder, dataset, prompts, progress=bar, compact=not no_compact)
    emit(
        {"fits": summary.fits, "fitted": summary.fitted, "runs": summary.runs, "prompt_sets": summary.prompt_sets},
        "\n".join(
            [
                f"zero-shot: {summary.fits} fits ({summary.fitted} new, {summary.runs} runs)",
                *(f"  {cell}: prompt set {digest}" for cell, digest in summary.prompt_sets.items()),
                'compare with the probes: crsbench sql "select * from zeroshot_vs_probe"',
            ]
        ),
    )

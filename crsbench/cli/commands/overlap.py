"""CLI: `crsbench overlap` — pretraining overlap, declared and measured (METHODS.md §20)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crsbench.bench import Bench
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit, print_frame
from crsbench.core import default_db_path


@app.command("overlap")
def overlap_command(
    manifest: Annotated[
        Path | None,
        typer.Option(
            "--manifest",
            help="File of image SHA-256 hashes (64 hex digits) from an encoder's pretraining set, one a line, "
            "'#' comments allowed; perceptual hashes are not supported (ingest stores SHA-256 only).",
        ),
    ] = None,
    encoder: Annotated[
        str | None,
        typer.Option(
            "--encoder",
            "-e",
            help="Encoder whose pretraining set the manifest lists: the shares are stored as its measured "
            "overlap (without it they are only reported).",
        ),
    ] = None,
    dataset: Annotated[
        list[str] | None, typer.Option("--dataset", "-d", help="Dataset to measure; repeatable; default every one.")
    ] = None,
    db: DbOption = default_db_path(),
) -> None:
    """Pretraining overlap: with --manifest, the share of each split of each dataset found in a list of
    pretraining image hashes; always, one row per (encoder, dataset) of view encoder_dataset_overlap:
    declared, measured, none or unknown."""
    report = Bench(db).overlap(manifest, encoder, dataset or ())
    if console.json_mode:
        emit(
            {
                "manifest": str(manifest) if manifest else None,
                "n_hashes": report.n_hashes,
                "stored_for": report.encoder,
                "shares": report.shares,
                "overlap": report.rows,
            }
        )
        return
    if report.shares is not None:
        shares = report.shares.assign(share=[f"{100 * s:.1f} %" for s in report.shares["share"]])
        stored = f"stored for {report.encoder}" if report.encoder else "not stored: name the encoder with --encoder"
        print_frame(shares, title=f"images found in {manifest} ({report.n_hashes} hashes; {stored})")
    print_frame(report.rows, title="pretraining overlap (view encoder_dataset_overlap)")

"""CLI: `crsbench overlap` — pretraining overlap, declared and measured (METHODS.md §20)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crsbench.bench import Bench
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit, print_frame, progress
from crsbench.core import default_db_path


@app.command("overlap")
def overlap_command(
    manifest: Annotated[
        Path | None,
        typer.Option(
            "--manifest",
            help="File of image hashes from an encoder's pretraining set, one a line: SHA-256 (64 hex "
            "digits, the same bytes) or perceptual dHash (16 hex digits, as imagehash.dhash writes it: "
            "the same picture re-encoded or resized); '#' comments allowed.",
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
    max_distance: Annotated[
        int,
        typer.Option(
            "--max-distance",
            help="Perceptual hashes: an image counts as found within this many differing bits of a listed "
            "dHash (0: equal hashes, which already match most re-encoded and resized copies).",
        ),
    ] = 0,
    db: DbOption = default_db_path(),
) -> None:
    """Pretraining overlap: with --manifest, the share of each split of each dataset found in a list of
    pretraining image hashes; always, one row per (encoder, dataset) of view encoder_dataset_overlap:
    declared, measured, none or unknown."""
    with progress() as bar:
        report = Bench(db).overlap(manifest, encoder, dataset or (), max_distance, bar)
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

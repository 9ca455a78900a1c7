"""CLI: `crsbench probe` — run the probe grid over cached features (owned by the probes stage)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from crsbench.bench import Bench, ProbeConfig
from crsbench.cli.app import DbOption, StoreOption, app
from crsbench.cli.output import emit, progress
from crsbench.core import default_db_path

if TYPE_CHECKING:
    from crsbench.probes.grid import GridSummary


def render_probe(bench: Bench, summary: GridSummary) -> None:
    emit(
        {
            "db": str(bench.db),
            "store": bench.store,
            "planned": summary.planned,
            "skipped": summary.skipped,
            "fitted": summary.fitted,
            "runs": summary.runs,
            "batches": summary.batches,
            "by_others": summary.by_others,
            "compacted": summary.compacted,
            "pending_parts": summary.pending_parts,
            "pending_reason": summary.pending_reason,
            "extra": summary.extra,
        },
        f"probe grid: {summary.fitted} fits run ({summary.runs} run records in {summary.batches} "
        f"batches), {summary.skipped} of {summary.planned} already done"
        + (f", {summary.by_others} fitted meanwhile by another sweep" if summary.by_others else "")
        + (f"; {summary.compacted} {folded_what(bench)}" if summary.compacted else "")
        + (
            f"; {summary.pending_parts} run parts left pending ({summary.pending_reason})"
            if summary.pending_parts
            else ""
        )
        + (
            f"\nwarning: {summary.extra} of these fits are outside the declared grid: stored as extra runs "
            "(runs_grid.in_grid = false), they enter no score; 'crsbench grid extend' declares them"
            if summary.extra
            else ""
        ),
    )


EncoderOption = Annotated[
    list[str],
    typer.Option(
        "--encoder",
        "-e",
        help="Encoder key (e.g. vit_tiny or vit_tiny@lora-s0); repeatable; default every feature set.",
    ),
]
DatasetOption = Annotated[
    list[str],
    typer.Option(
        "--dataset",
        "-d",
        help="Dataset to fit on; repeatable; default every dataset that is not only a shift target.",
    ),
]
ProbeOption = Annotated[
    list[str], typer.Option("--probe", "-p", help="logreg, mlp or knn; repeatable; default the declared grid's.")
]
DepthOption = Annotated[
    list[float],
    typer.Option("--depth", help="Depths to fit (0.25 0.5 0.75 1.0); default the declared grid's."),
]
FractionOption = Annotated[
    list[float], typer.Option("--fraction", help="Label fractions (declared ones); default the declared grid's.")
]
SeedOption = Annotated[
    list[int], typer.Option("--seed", help="Fraction seeds (declared ones); default the declared grid's.")
]
SchedulerOption = Annotated[
    str | None,
    typer.Option("--scheduler", help="dask.distributed scheduler address, e.g. tcp://host:8786; default in-process."),
]
BatchSizeOption = Annotated[int, typer.Option("--batch-size", help="Fits per atomic batch of run records.")]
NoCompactOption = Annotated[
    bool,
    typer.Option(
        "--no-compact",
        help="Leave the run records as Parquet parts (default: fold them into the file at the end, "
        "as 'crsbench warehouse compact' does, unless another sweep still writes).",
    ),
]


@app.command("probe")
def probe_command(
    encoder: EncoderOption = [],
    dataset: DatasetOption = [],
    probe: ProbeOption = [],
    depth: DepthOption = [],
    fraction: FractionOption = [],
    seed: SeedOption = [],
    scheduler: SchedulerOption = None,
    batch_size: BatchSizeOption = ProbeConfig.batch_size,
    no_compact: NoCompactOption = False,
    store: StoreOption = None,
    db: DbOption = default_db_path(),
) -> None:
    """Fit the probe grid on cached features and record every evaluation (idempotent, resumable).

    With no --probe/--depth/--fraction/--seed: exactly each dataset's declared grid ('crsbench grid
    show'), for every encoder. Values given must be declared; --probe with --depth may pair them off
    the grid, and those fits are extras (stored, never scored)."""
    bench = Bench(db, store)
    config = ProbeConfig(
        probes=tuple(probe),
        depths=tuple(depth),
        fractions=tuple(fraction),
        seeds=tuple(seed),
        scheduler=scheduler,
        batch_size=batch_size,
        compact=not no_compact,
    )
    with progress() as bar:
        summary = bench.probe(encoder, dataset, config, progress=bar)
    render_probe(bench, summary)


def folded_what(bench: Bench) -> str:
    """What the closing compaction did, in the warehouse's own terms."""
    return "small batch files merged" if bench.team else f"run parts folded into {bench.db}"

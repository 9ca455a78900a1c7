"""CLI: `crsbench report` (the HTML report) and `crsbench status` (what the warehouse holds)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from crsbench.bench import Bench
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit, print_frame, progress
from crsbench.core import default_db_path

if TYPE_CHECKING:
    from crsbench.reads.status import WarehouseStatus


@app.command("report")
def report(
    panel: Annotated[str | None, typer.Option("--panel", help="Frozen panel to report (default: the latest).")] = None,
    out: Annotated[Path, typer.Option("--out", help="HTML file to write (self-contained).")] = Path("report.html"),
    figures: Annotated[Path | None, typer.Option("--figures", help="Also write every figure as PNG here.")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing --out file and the PNGs in --figures.")
    ] = False,
    card_only: Annotated[
        bool, typer.Option("--card-only", help="Print only the reporting card, as markdown (writes no file).")
    ] = False,
    db: DbOption = default_db_path(),
) -> None:
    """Write the HTML report: CRS vs AUROC, profiles, rank reordering, per-dataset tables, analyses."""
    if card_only:
        card = Bench(db).card(panel)
        if console.json_mode:
            emit(card.as_dict())
        else:
            typer.echo(card.markdown(), nl=False)
        return
    report_and_render(Bench(db), out, panel, figures, force=force)


def report_and_render(bench: Bench, out: Path, panel: str | None, figures: Path | None, force: bool = False) -> None:
    """Write the report under a progress bar and say what was written and what is missing."""
    with progress() as bar:
        result = bench.report(out, panel=panel, figures=figures, progress=bar, force=force)
    gaps = {k: v for k, v in result.sections.items() if v != "ok"}
    lines = [f"wrote {out} ({len(result.figures)} figures" + (f", PNGs in {figures}" if figures else "") + ")"]
    if result.random_init:
        lines.append(f"random-init encoders (labelled in the report): {', '.join(result.random_init)}")
    lines += [f"  section {k}: no data yet; run: {v}" for k, v in gaps.items()]
    emit(
        {
            "out": str(out),
            "panel": result.panel,
            "sections": result.sections,
            "figures": {k: (str(v) if v else None) for k, v in result.figures.items()},
            "random_init": result.random_init,
        },
        "\n".join(lines),
    )


# (WarehouseStatus field, heading): the line lists `crsbench status` prints after its tables.
STATUS_LINES = (
    ("incomplete_cells", "incomplete cells (left out of the CRS until 'crsbench probe' fills them):"),
    ("outside", "encoders outside every panel, probed in part (no panel needs their missing runs):"),
    ("suites_owed", "corruption suite runs owed ('crsbench extract' then 'crsbench probe'; the CRS does not wait):"),
    ("flagged", "degenerate feature sets (their encoders get no rank until confirmed):"),
    ("shortcuts", "shortcut warnings (labels predictable without looking at the anatomy):"),
    ("stale", "stale stored results (computed from runs or images that have changed since):"),
)


def _status_payload(db: Path, state: WarehouseStatus) -> dict[str, Any]:
    return {
        "db": str(db),
        "schema_version": state.schema_version,
        "counts": state.counts(),
        "datasets": state.datasets,
        "encoders": state.encoders,
        "feature_sets": state.feature_sets,
        "runs": state.runs,
        "panels": state.panels,
        "analyses": state.analyses,
        "incomplete_cells": state.incomplete_cells,
        "outside_panels": state.outside,
        "suites_owed": state.suites_owed,
        "pending_parts": state.pending_parts,
        "sweeps_running": state.sweeps_running,
        "stale": state.stale,
        "flagged": state.flagged,
        "shortcuts": state.shortcuts,
    }


def _print_status_header(db: Path, state: WarehouseStatus) -> None:
    counts = state.counts()
    console.print(
        f"warehouse {db} (schema v{state.schema_version}): {counts['datasets']} datasets, "
        f"{counts['encoders']} encoders, feature sets {counts['feature_sets_complete']} complete / "
        f"{counts['feature_sets_incomplete']} incomplete, {counts['runs']:,} runs, "
        f"{counts['panels']} panels, {counts['analyses']} analyses"
    )
    if state.pending_parts:
        running = f"; {state.sweeps_running} probe sweep(s) still writing" if state.sweeps_running else ""
        console.print(
            escape(
                f"{state.pending_parts} run parts pending in {db}.parts{running}: crsbench reads them, a "
                f"plain duckdb client only from the file's folder; 'crsbench warehouse compact --db {db}' "
                f"folds them into the file"
            )
        )


@app.command("status")
def status(db: DbOption = default_db_path()) -> None:
    """Summarise the warehouse: datasets, encoders, feature sets, runs, panels, analyses."""
    state = Bench(db).status()
    if console.json_mode:
        emit(_status_payload(db, state))
        return
    _print_status_header(db, state)
    for title, frame in (
        ("datasets", state.datasets),
        ("encoders", state.encoders),
        ("runs by regime and probe", state.runs),
        ("panels", state.panels),
        ("analyses", state.analyses),
    ):
        if len(frame):
            print_frame(frame, title=title)
    incomplete = state.feature_sets[~state.feature_sets["complete"].fillna(False).astype(bool)]
    if len(incomplete):
        print_frame(incomplete, title="incomplete feature sets (rerun extraction to finish them)")
    for field, heading in STATUS_LINES:
        lines: list[str] = getattr(state, field)
        if lines:
            console.print(heading)
            for line in lines:
                console.print(f"  {escape(line)}")

"""CLI: `crsbench export NAME|QUERY --format ... [--out FILE] [--force]` (owned by the warehouse stage)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit
from crsbench.core import default_db_path

EXPORT_FORMATS = ("csv", "parquet", "json", "markdown", "latex")


@app.command("export")
def export_command(
    name: Annotated[str, typer.Argument(help="A view or table (see 'crsbench describe'), or a SELECT query.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help=f"One of {', '.join(EXPORT_FORMATS)}.")] = "csv",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="File to write (default: standard output; parquet needs a file).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out file.")] = False,
    db: DbOption = default_db_path(),
) -> None:
    """Export a view, table or read-only query as CSV, Parquet, JSON, Markdown or LaTeX."""
    from crsbench.bench import Bench

    rows, text = Bench(db).export(name, fmt, out, force=force)
    if text is not None:
        sys.stdout.write(text)
    elif console.json_mode:
        emit({"out": str(out), "format": fmt, "rows": rows})
    else:
        console.err(f"wrote {rows} rows to {out} ({fmt})")

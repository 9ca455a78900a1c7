"""`crsbench warehouse init|compact` and `crsbench sql`: create, compact and query the warehouse."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit
from crsbench.core import CrsbenchError, default_db_path

warehouse_app = typer.Typer(help="Create and inspect the DuckDB warehouse.", no_args_is_help=True)
app.add_typer(warehouse_app, name="warehouse")


@warehouse_app.command("init")
def warehouse_init(db: DbOption = default_db_path()) -> None:
    """Create an empty warehouse with every table and view (idempotent)."""
    from crsbench.bench import Bench

    version = Bench(db).init()
    emit({"db": str(db), "schema_version": version}, f"warehouse ready: {db} (schema v{version})")


@warehouse_app.command("compact")
def warehouse_compact(db: DbOption = default_db_path()) -> None:
    """Fold the Parquet parts a sweep wrote into the file: one file any DuckDB client opens, faster queries."""
    from crsbench.bench import Bench

    merged = Bench(db).compact()
    emit({"db": str(db), "parts_merged": merged}, f"compacted {merged} run parts into the file: {db}")


@app.command("sql")
def sql(
    query: Annotated[str, typer.Argument(help='SQL to run read-only, e.g. "select * from crs_encoder".')],
    fmt: Annotated[str, typer.Option("--format", "-f", help="table (default), csv, json or markdown.")] = "table",
    db: DbOption = default_db_path(),
) -> None:
    """Run a read-only SQL query on the warehouse and print the result.

    Read-only for real: nothing outside the warehouse's own files can be read or written.
    """
    from crsbench.bench import Bench
    from crsbench.cli.output import print_frame

    if fmt not in ("table", "csv", "json", "markdown"):
        raise CrsbenchError(f"unknown --format {fmt!r}; choose table, csv, json or markdown")
    if fmt == "table" or console.json_mode:
        print_frame(Bench(db).sql(query), title=None)
    else:  # the rows as `crsbench export` writes them
        sys.stdout.write(Bench(db).export(query, fmt)[1] or "")

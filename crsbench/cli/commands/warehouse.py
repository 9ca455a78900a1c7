"""`crsbench warehouse init|compact` and `crsbench sql`: create, compact and query the warehouse."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit
from crsbench.core import CrsbenchError, default_db_path

warehouse_app = typer.Typer(help="Create and inspect the DuckDB warehouse.", no_args_is_help=True)
app.add_typer(warehouse_app, name="warehouse")


@warehouse_app.command("init")
def warehouse_init(
    db: DbOption = default_db_path(),
    data_path: Annotated[
        str | None,
        typer.Option(
            "--data-path",
            envvar="CRSBENCH_DATA_PATH",
            help="Team warehouse (--db ducklake:...): where its Parquet files go, a shared folder or "
            "s3://bucket/prefix; given once, at creation.",
        ),
    ] = None,
) -> None:
    """Create an empty warehouse with every table and view (idempotent): a lone DuckDB file, or a team
    warehouse with --db ducklake:postgres:dbname=NAME host=HOST and --data-path."""
    from crsbench.bench import Bench

    version = Bench(db).init(data_path)
    emit({"db": str(db), "schema_version": version}, f"warehouse ready: {db} (schema v{version})")


@warehouse_app.command("history")
def warehouse_history(
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Show only the newest N snapshots.")] = None,
    db: DbOption = default_db_path(),
) -> None:
    """Team warehouse: list its snapshots, newest first, with who committed what and the tables it changed."""
    from crsbench.bench import Bench
    from crsbench.cli.output import print_frame

    print_frame(Bench(db).history(limit), title="snapshots", key="snapshots")


@warehouse_app.command("snapshot")
def warehouse_snapshot(
    out: Annotated[Path, typer.Option("--out", help="The lone DuckDB file to write (must not exist).")],
    at: Annotated[int | None, typer.Option("--at", help="Snapshot id (default: the latest).")] = None,
    db: DbOption = default_db_path(),
) -> None:
    """Team warehouse: copy it as of a snapshot into one DuckDB file that any DuckDB client opens."""
    from crsbench.bench import Bench

    copied = Bench(db).snapshot_to_file(out, at)
    emit({"db": str(db), "out": str(out), "snapshot_id": copied}, f"snapshot {copied} of {db} written to {out}")


@warehouse_app.command("attach-sql")
def warehouse_attach_sql(db: DbOption = default_db_path()) -> None:
    """Team warehouse: print the LOAD and ATTACH lines for your own DuckDB client (read-only)."""
    from crsbench.bench import Bench

    text = Bench(db).attach_sql()
    if console.json_mode:
        emit({"db": str(db), "sql": text})
    else:  # verbatim: paste-able lines, never wrapped to the terminal's width
        sys.stdout.write(text + "\n")


@warehouse_app.command("compact")
def warehouse_compact(db: DbOption = default_db_path()) -> None:
    """Fold the Parquet parts a sweep wrote into the file: one file any DuckDB client opens, faster queries
    (a team warehouse: its inlined rows flushed and its batch files merged)."""
    from crsbench.bench import Bench

    bench = Bench(db)
    merged = bench.compact()
    said = (
        f"merged {merged} small batch files of {db}"
        if bench.team
        else f"compacted {merged} run parts into the file: {db}"
    )
    emit({"db": str(db), "parts_merged": merged}, said)


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

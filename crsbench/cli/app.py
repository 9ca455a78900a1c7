"""The Typer app and the options every command module shares (imported by them, never the reverse).

`crsbench.cli` imports the command modules and runs the app; the command modules import only
this module, so no CLI module imports another in a cycle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crsbench.cli.lazy import LazyGroup
from crsbench.pipeline.stores import check_store_url

app = typer.Typer(
    name="crsbench",
    cls=LazyGroup,
    help="Feature store and analysis warehouse for choosing medical image encoders (CRS-Bench).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # help text renders literally: "[encoder.<id>]" is text, not markup
)

DbOption = Annotated[
    Path,
    typer.Option("--db", envvar="CRSBENCH_DB", help="Warehouse DuckDB file (default crsbench.duckdb or $CRSBENCH_DB)."),
]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        callback=check_store_url,
        help="Feature store URL, any fsspec URL (default $CRSBENCH_STORE or <db>.features.zarr); "
        "s3:// credentials and endpoint come from the standard AWS environment/config.",
    ),
]

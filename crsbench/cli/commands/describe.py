"""CLI: `crsbench describe [NAME]` — the data dictionary stored in the warehouse file."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import pandas as pd
import typer

from crsbench.bench import Bench
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit, frame_table
from crsbench.core import default_db_path


@app.command("describe")
def describe(
    name: Annotated[str | None, typer.Argument(help="A table, view or macro; omit to list them all.")] = None,
    db: DbOption = default_db_path(),
) -> None:
    """Print the data dictionary: every table, view and macro, or one NAME with its columns."""
    items = Bench(db).describe(name)
    if console.json_mode:
        emit({"objects": [dataclasses.asdict(e) for e in items]})
        return
    if name is None:
        frame = pd.DataFrame([(e.name, e.kind, e.comment) for e in items], columns=["name", "kind", "comment"])
    else:
        entry = items[0]
        console.print(f"[bold]{entry.name}[/] ({entry.kind})")
        console.print(entry.comment or "")
        if "macro" in entry.kind:
            frame = pd.DataFrame({"parameter": [f.name for f in entry.fields]})
        else:
            frame = pd.DataFrame(
                [(f.name, f.type, f.comment) for f in entry.fields], columns=["column", "type", "comment"]
            )
    console.print(frame_table(frame, max_rows=len(frame)))

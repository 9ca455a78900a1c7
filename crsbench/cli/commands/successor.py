"""`crsbench successor`: will the next encoder agree with this one? (METHODS.md §17)"""

from __future__ import annotations

from typing import Annotated

import typer

from crsbench.bench import Bench
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit, print_frame
from crsbench.core import default_db_path


@app.command("successor")
def successor_command(
    current: Annotated[str, typer.Option("--current", help="The encoder in use (id, or id@regime).")],
    candidate: Annotated[str, typer.Option("--candidate", help="The encoder that would replace it.")],
    dataset: Annotated[
        str | None, typer.Option("--dataset", "-d", help="One dataset (default: every one with features of both).")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="Nearest neighbours per image.")] = 10,
    depth: Annotated[float, typer.Option("--depth", help="Feature depth: 0.25, 0.5, 0.75 or 1.0.")] = 1.0,
    split: Annotated[
        str | None, typer.Option("--split", help="Only the images of one split (train, calib, test).")
    ] = None,
    replicates: Annotated[int, typer.Option("--replicates", help="Bootstrap replicates over images.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the image resamples.")] = 0,
    transfer: Annotated[
        bool | None,
        typer.Option(
            "--transfer/--no-transfer",
            help="Classifier transfer (default: on datasets with labels); --transfer refuses an unlabelled dataset.",
        ),
    ] = None,
    db: DbOption = default_db_path(),
) -> None:
    """Test a successor encoder on unlabelled images: does it return the current one's nearest neighbours?"""
    from crsbench.analyses.agreement.successor import SuccessorOptions

    options = SuccessorOptions(k=k, depth=depth, split=split, replicates=replicates, seed=seed, transfer=transfer)
    report = Bench(db).successor(current, candidate, dataset, options)
    if not console.json_mode:
        print_frame(report.table, title=f"successor: {report.candidate} replacing {report.current}")
    human = "\n".join([*report.readings, *report.notes])
    emit(
        {
            "current": report.current,
            "candidate": report.candidate,
            "datasets": report.table,
            "readings": report.readings,
            "notes": report.notes,
        },
        human,
    )

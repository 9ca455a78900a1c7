"""CLI: `crsbench grid show|extend` — each dataset's declared evaluation grid."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from crsbench.bench import Bench
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import emit, print_frame
from crsbench.core import default_db_path

grid_app = typer.Typer(
    help="Show or widen each dataset's declared evaluation grid (what makes a cell complete).", no_args_is_help=True
)
app.add_typer(grid_app, name="grid")


@grid_app.command("show")
def grid_show(db: DbOption = default_db_path()) -> None:
    """Show each dataset's declared grid: probe@depth pairs, fractions, seeds, conditions, and the
    image-text encoders with a declared zero-shot cell (from 'crsbench zeroshot')."""
    frame = Bench(db).grid()
    for column in ("probe_depths", "fractions", "seeds", "conditions", "zeroshot_encoders"):
        frame[column] = frame[column].map(
            lambda values: ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)
        )
    print_frame(
        frame, title="declared evaluation grids (runs outside them are extras: stored, never scored)", key="grids"
    )


@grid_app.command("extend")
def grid_extend(
    dataset: Annotated[
        list[str], typer.Option("--dataset", "-d", help="Dataset whose grid to widen; repeatable; default every one.")
    ] = [],
    probe: Annotated[
        list[str], typer.Option("--probe", "-p", help="Probe to add (logreg, mlp, knn); repeatable.")
    ] = [],
    depth: Annotated[list[float], typer.Option("--depth", help="Depth to add (0.25 0.5 0.75 1.0); repeatable.")] = [],
    fraction: Annotated[
        list[float], typer.Option("--fraction", help="Label fraction to add (one the dataset has subsets for).")
    ] = [],
    seed: Annotated[list[int], typer.Option("--seed", help="Subset seed to add (one the dataset has).")] = [],
    db: DbOption = default_db_path(),
) -> None:
    """Widen the declared grid for every encoder: each option named takes the values given, the
    others every value the grid has. Existing cells become incomplete until 'crsbench probe' fills them."""
    result = Bench(db).extend_grid(dataset, probes=probe, depths=depth, fractions=fraction, seeds=seed)
    lines = []
    for name, n in result.added.items():
        if not n:
            lines.append(f"{name}: nothing to add (already declared)")
            continue
        lines.append(f"{name}: {n} fits added to the declared grid")
        if result.encoders[name]:
            lines.append(
                f"warning: the {name} cells of {', '.join(result.encoders[name])} are incomplete (no CRS, no rank) "
                "until 'crsbench probe' fills the new fits"
            )
    emit({"added": result.added, "incomplete_encoders": result.encoders}, "\n".join(escape(line) for line in lines))


@grid_app.command("restrict")
def grid_restrict(
    dataset: Annotated[
        list[str], typer.Option("--dataset", "-d", help="Dataset whose grid to narrow; repeatable; default every one.")
    ] = [],
    probe: Annotated[list[str], typer.Option("--probe", "-p", help="Probe to keep; repeatable.")] = [],
    depth: Annotated[list[float], typer.Option("--depth", help="Depth to keep; repeatable.")] = [],
    fraction: Annotated[list[float], typer.Option("--fraction", help="Label fraction to keep; repeatable.")] = [],
    seed: Annotated[list[int], typer.Option("--seed", help="Subset seed to keep; repeatable.")] = [],
    db: DbOption = default_db_path(),
) -> None:
    """Narrow the declared grid for a small study, before any panel is frozen: keep only the fits
    matching every option named."""
    from crsbench.bench import ProbeConfig

    config = ProbeConfig(probes=tuple(probe), depths=tuple(depth), fractions=tuple(fraction), seeds=tuple(seed))
    removed = Bench(db).restrict_grid(config, dataset)
    emit(
        {"removed": removed},
        "\n".join(f"{name}: {n} fits removed from the declared grid" for name, n in removed.items()),
    )

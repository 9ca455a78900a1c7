"""CLI: `crsbench grid show|extend` — each dataset's declared evaluation grid."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from crsbench.bench import Bench
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import emit, print_frame
from crsbench.core import default_db_path

if TYPE_CHECKING:
    from crsbench.warehouse.grid_suites import SuiteAdded

grid_app = typer.Typer(
    help="Show or widen each dataset's declared evaluation grid (what makes a cell complete).", no_args_is_help=True
)
app.add_typer(grid_app, name="grid")


@grid_app.command("show")
def grid_show(db: DbOption = default_db_path()) -> None:
    """Show each dataset's declared grid: probe@depth pairs, fractions, seeds, conditions, corruption
    suites (their conditions on the full-label fits), and the image-text encoders with a declared
    zero-shot cell (from 'crsbench zeroshot')."""
    frame = Bench(db).grid()
    for column in ("probe_depths", "fractions", "seeds", "conditions", "suites", "zeroshot_encoders"):
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
    suite: Annotated[
        list[str],
        typer.Option(
            "--suite",
            help="Corruption suite whose conditions to add to the full-label fits, e.g. medmnistc-derm "
            "(datasets of its domain only); repeatable.",
        ),
    ] = [],
    db: DbOption = default_db_path(),
) -> None:
    """Widen the declared grid for every encoder: each option named takes the values given, the
    others every value the grid has. Existing cells become incomplete until 'crsbench probe' fills them.
    A suite's conditions get their own robustness view; the paper's axes and CRS never read them."""
    result = Bench(db).extend_grid(dataset, probes=probe, depths=depth, fractions=fraction, seeds=seed, suites=suite)
    lines = []
    for name, n in result.added.items():
        lines += suite_lines(name, result.suites.get(name, []))
        if not n:
            if not result.suites.get(name):
                lines.append(f"{name}: nothing to add (already declared)")
            continue
        lines.append(f"{name}: {n} fits added to the declared grid")
        if result.encoders[name]:
            lines.append(
                f"warning: the {name} cells of {', '.join(result.encoders[name])} are incomplete (no CRS, no rank) "
                "until 'crsbench probe' fills the new fits"
            )
    suites = {name: [dataclasses.asdict(a) for a in added] for name, added in result.suites.items()}
    emit(
        {"added": result.added, "incomplete_encoders": result.encoders, "suites": suites},
        "\n".join(escape(line) for line in lines),
    )


def suite_lines(dataset: str, added: list[SuiteAdded]) -> list[str]:
    """What declaring each suite added, the severity mapping, what was left out, and what to run next."""
    lines = []
    for a in added:
        mapping = ", ".join(f"s{grid} = its {own}" for grid, own in sorted(a.severities.items()))
        what = f"{a.conditions} conditions added" if a.conditions else "nothing to add (already declared)"
        lines.append(
            f"{dataset}: suite {a.suite} ({a.source}): {what} to {a.fits} full-label fits; severities {mapping}"
        )
        lines += [f"  left out: {name} ({why})" for name, why in sorted(a.unavailable.items())]
        if a.conditions:
            lines.append(
                "  next: 'crsbench extract' then 'crsbench probe' fill them; 'crsbench sql' view suite_robustness "
                "ranks the encoders (the paper's axes and CRS do not move)"
            )
    return lines


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

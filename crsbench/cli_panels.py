"""CLI: `crsbench panel freeze|list|show` and `crsbench leaderboard` (reference panels, CRS)."""

from __future__ import annotations

from typing import Annotated

import typer

from crsbench.bench import Bench, Leaderboard
from crsbench.cli_app import DbOption, app
from crsbench.output import console, emit, print_frame
from crsbench.warehouse import panels
from crsbench.core.constants import default_db_path

panel_app = typer.Typer(help="Freeze and inspect reference panels (fixed-reference CRS).",
                        no_args_is_help=True)
app.add_typer(panel_app, name="panel")


@panel_app.command("freeze")
def panel_freeze(
    name: Annotated[str, typer.Argument(help="Panel name (frozen panels are immutable).")],
    encoders: Annotated[str, typer.Option("--encoders", help="Comma-separated encoder ids.")],
    db: DbOption = default_db_path(),
) -> None:
    """Freeze a reference panel: store its members and anchors per dataset and `global`."""
    panel = Bench(db).freeze_panel(name, encoders.split(","))
    emit({"panel": panel.name, "members": list(panel.members), "anchors": panel.anchors},
         f"froze panel {panel.name}: {len(panel.members)} encoders, "
         f"{panel.anchors.scope.nunique()} scopes ({', '.join(sorted(panel.anchors.scope.unique()))})")


@panel_app.command("list")
def panel_list(db: DbOption = default_db_path()) -> None:
    """List the frozen panels."""
    frame = Bench(db).panels()
    frame["members"] = frame["members"].map(lambda m: ", ".join(m))
    print_frame(frame, title="reference panels", key="panels")


@panel_app.command("show")
def panel_show(name: Annotated[str, typer.Argument(help="Panel name.")],
               db: DbOption = default_db_path()) -> None:
    """Show a panel's members and anchors."""
    panel = Bench(db).panel(name)
    if console.json_mode:
        emit({"panel": panel.name, "mode": panel.mode, "frozen_at": str(panel.frozen_at),
              "members": list(panel.members), "anchors": panel.anchors})
        return
    console.print(f"panel {panel.name} ({panel.mode}, frozen {panel.frozen_at}): "
                  f"{', '.join(panel.members)}")
    print_frame(panel.anchors, title="anchors (lo = min, hi = max over the members)")


@app.command("leaderboard")
def leaderboard(
    panel: Annotated[str | None, typer.Option("--panel", help="Frozen panel (default: the latest).")] = None,
    db: DbOption = default_db_path(),
) -> None:
    """Print the CRS leaderboard next to the AUROC ranking, and the rank-agreement row."""
    render_leaderboard(Bench(db).leaderboard(panel))


def render_leaderboard(result: Leaderboard) -> None:
    used, board, agreement = result.panel, result.board, result.agreement
    if console.json_mode:
        emit({"panel": used, "leaderboard": board, "rank_agreement": agreement})
        return
    mode = "cohort mode: no frozen panel" if used == panels.COHORT else f"panel {used}"
    # The terminal view keeps the columns that fit 80 characters; --json has them all.
    short = board[["encoder_id", "crs", "crs_rank", "auroc", "auroc_rank", "in_panel", "pretrained"]]
    print_frame(short.rename(columns={"encoder_id": "encoder", "in_panel": "panel"}),
                title=f"CRS leaderboard ({mode}); AUROC = aggregate discrimination")
    # One column per population, one row per statistic: narrow enough for any terminal.
    agree = agreement.set_index("population").astype(object).T.rename_axis("statistic").reset_index()
    agree.columns = [str(c) for c in agree.columns]
    print_frame(agree, title="AUROC ranking vs CRS ranking (rank agreement)")

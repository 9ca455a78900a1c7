"""CLI: `crsbench panel freeze|list|show` and `crsbench leaderboard` (reference panels, CRS)."""

from __future__ import annotations

from typing import Annotated, Any

import pandas as pd
import typer
from rich.markup import escape

from crsbench.bench import Bench, Leaderboard
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit, print_frame
from crsbench.core import default_db_path
from crsbench.reads.leaderboard import NO_INTERVALS_EXCLUDED, OVERLAP_MARK, agreement_gaps

# The cell of an interval the bootstrap cannot move (crs_encoder_ci.crs_note / auroc_note).
NA_FIXED = "n/a (same in every replicate)"

panel_app = typer.Typer(help="Freeze and inspect reference panels (fixed-reference CRS).", no_args_is_help=True)
app.add_typer(panel_app, name="panel")


@panel_app.command("freeze")
def panel_freeze(
    name: Annotated[str, typer.Argument(help="Panel name (frozen panels are immutable).")],
    encoders: Annotated[str, typer.Option("--encoders", help="Comma-separated encoder ids (at least 4).")],
    allow_small: Annotated[
        bool,
        typer.Option(
            "--allow-small",
            help="Freeze a panel of 2 or 3 members: each axis is min-max normalised over the members, "
            "so so few give a CRS that says little (with 2, every axis is 0 or 1).",
        ),
    ] = False,
    db: DbOption = default_db_path(),
) -> None:
    """Freeze a reference panel: store its members and anchors per dataset and `global`."""
    bench = Bench(db)
    panel = bench.freeze_panel(name, encoders.split(","), allow_small=allow_small)
    # Axis intervals do not depend on the panel: an earlier bootstrap of the members counts.
    noise_known, warnings = bench.anchor_noise(panel.name)
    hint = (
        []
        if noise_known
        else [
            f"anchor noise not checked yet: run 'crsbench analyze bootstrap --panel {panel.name}', "
            "then 'crsbench leaderboard' warns where an anchor range is below 2x its noise"
        ]
    )
    emit(
        {"panel": panel.name, "members": list(panel.members), "anchors": panel.anchors, "warnings": warnings},
        "\n".join(
            [
                f"froze panel {panel.name}: {len(panel.members)} encoders, "
                f"{panel.anchors.scope.nunique()} scopes "
                f"({', '.join(sorted(panel.anchors.scope.unique()))})",
                *(f"warning: {escape(w)}" for w in warnings),
                *(escape(h) for h in hint),
            ]
        ),
    )


@panel_app.command("list")
def panel_list(db: DbOption = default_db_path()) -> None:
    """List the frozen panels."""
    frame = Bench(db).panels()
    frame["members"] = frame["members"].map(lambda m: ", ".join(m))
    print_frame(frame, title="reference panels", key="panels")


@panel_app.command("show")
def panel_show(name: Annotated[str, typer.Argument(help="Panel name.")], db: DbOption = default_db_path()) -> None:
    """Show a panel's members and anchors."""
    panel = Bench(db).panel(name)
    if console.json_mode:
        emit(
            {
                "panel": panel.name,
                "mode": panel.mode,
                "frozen_at": str(panel.frozen_at),
                "members": list(panel.members),
                "anchors": panel.anchors,
            }
        )
        return
    console.print(f"panel {panel.name} ({panel.mode}, frozen {panel.frozen_at}): {', '.join(panel.members)}")
    print_frame(panel.anchors, title="anchors (lo = min, hi = max over the members)")


@app.command("leaderboard")
def leaderboard(
    panel: Annotated[str | None, typer.Option("--panel", help="Frozen panel (default: the latest).")] = None,
    resample: Annotated[
        str | None,
        typer.Option(
            "--resample", help="Bootstrap whose intervals to show (default: images+seeds if stored, else seeds)."
        ),
    ] = None,
    allow_partial: Annotated[
        bool,
        typer.Option(
            "--allow-partial",
            help="Rank encoders whose complete cells miss some of the panel's datasets, marked '*' (needs --panel).",
        ),
    ] = False,
    subgroup: Annotated[
        str | None,
        typer.Option(
            "--subgroup",
            help="Metadata key: show each encoder's worst-group AUROC beside its CRS "
            "(needs 'crsbench analyze subgroups --key KEY').",
        ),
    ] = None,
    exclude_overlap: Annotated[
        bool,
        typer.Option(
            "--exclude-overlap",
            help="Rank each encoder without its cells on datasets it was pretrained on (marked †; view "
            "encoder_dataset_overlap): such an encoder turns partial. Read-time only: the panel is unchanged.",
        ),
    ] = False,
    cost: Annotated[
        bool,
        typer.Option(
            "--cost",
            help="Add each encoder's cost measured at extraction: GFLOPs per image, images/s, parameters, peak "
            "memory, stored bytes per image, with the device and dtype (view encoder_cost).",
        ),
    ] = False,
    with_screen: Annotated[
        bool,
        typer.Option(
            "--with-screen",
            help="Show each encoder's overall pre-screen rank beside its CRS rank (needs 'crsbench screen').",
        ),
    ] = False,
    with_retrieval: Annotated[
        bool,
        typer.Option(
            "--with-retrieval",
            help="Show each encoder's mean clean retrieval mAP@R and its rank (needs 'crsbench analyze retrieval').",
        ),
    ] = False,
    as_published: Annotated[
        bool,
        typer.Option(
            "--as-published",
            help="Team warehouse: read every input as of the snapshot the panel was frozen at "
            "(the leaderboard exactly as published, whatever was added since).",
        ),
    ] = False,
    db: DbOption = default_db_path(),
) -> None:
    """Print the CRS leaderboard with 95 % intervals and ties next to the AUROC ranking, and the
    rank-agreement row; warn about noisy anchors, incomplete cells and partial coverage, and mark
    encoders pretrained on the evaluation data (†)."""
    render_leaderboard(
        Bench(db).leaderboard(
            panel,
            resample,
            allow_partial,
            subgroup,
            exclude_overlap,
            cost,
            with_screen,
            as_published=as_published,
            with_retrieval=with_retrieval,
        )
    )


def render_leaderboard(result: Leaderboard) -> None:
    used, board, agreement = result.panel, result.board, result.agreement
    boot, agree_ci = result.resample, result.agreement_intervals
    if console.json_mode:
        emit(
            {
                "panel": used,
                "verdict": result.verdict,
                "resample": boot,
                "leaderboard": board,
                "rank_agreement": agreement,
                "rank_agreement_intervals": agree_ci,
                "rank_agreement_na": agreement_gaps(agreement),
                "warnings": result.warnings,
                "incomplete": result.incomplete,
                "outside_panels": result.outside,
                "anchor_noise": result.anchor_noise,
                "partial": result.partial,
                "stale": result.stale,
                "flagged": result.flagged,
                "overlap": result.overlap,
                "exclude_overlap": result.exclude_overlap,
                "screen": result.screen,
                "retrieval": result.retrieval,
            }
        )
        return
    console.print(escape(result.verdict))
    _print_board(result)
    if result.cost:
        _print_cost(board)
    _print_agreement(agreement, agree_ci)
    for line in _leaderboard_notes(result):
        console.print(escape(line))


def _leaderboard_notes(result: Leaderboard) -> list[str]:
    """The lines under the tables: warnings, gaps in coverage, and why an interval is missing."""
    used, board, boot = result.panel, result.board, result.resample
    notes = [
        *(f"warning: {w}" for w in result.warnings),
        *(f"incomplete: {m}" for m in result.incomplete),
        *(f"note: {m}" for m in result.outside),
        *result.partial,
        *(f"stale: {s}" for s in result.stale),
        *result.flagged,
        *result.overlap,
        *(result.screen or []),
        *(result.retrieval or []),
    ]
    unbooted = board["crs_lo"].isna() & board["crs_note"].isna()
    if boot is not None and unbooted.any() and not result.stale:
        left = ", ".join(board.loc[unbooted, "encoder_id"])
        notes.append(f"not bootstrapped: {left}; run 'crsbench analyze bootstrap --panel {used}'")
    for label, column in (("CRS", "crs_note"), ("AUROC", "auroc_note")):
        for note, rows in board.dropna(subset=[column]).groupby(column, sort=False):
            ties = "; no tie with the leader is counted from it" if label == "CRS" and len(rows) == len(board) else ""
            notes.append(f"{label} interval n/a for {', '.join(rows['encoder_id'])}: {note}{ties}")
    if result.exclude_overlap:
        notes.append(
            "no intervals with --exclude-overlap: the stored bootstrap scored every cell; the rank-agreement "
            "row, too, is the one with every cell"
        )
    elif boot is None:
        notes.append(
            f"no bootstrap intervals for {used}: run 'crsbench analyze bootstrap"
            + ("" if result.cohort else f" --panel {used}")
            + "'"
        )
    return notes


def _print_board(result: Leaderboard) -> None:
    board, boot = result.board, result.resample
    mode = "cohort mode: no frozen panel" if result.cohort else f"panel {result.panel}"
    # The terminal view keeps the columns that fit 80 characters; --json has them all.
    short = pd.DataFrame(
        {
            "rank": [_rank(r) for r in board.to_dict("records")],
            "tier": [_tier(r) for r in board.to_dict("records")],
            "encoder": _marked_encoders(board),
            "datasets": [_coverage(r) for r in board.to_dict("records")],
            "crs": board["crs"],
            "crs 95% CI": [
                _ci(lo, hi, boot is not None, note)
                for lo, hi, note in zip(board["crs_lo"], board["crs_hi"], board["crs_note"], strict=True)
            ],
            "auroc": board["auroc"],
            "auroc 95% CI": [
                _ci(lo, hi, note=note)
                for lo, hi, note in zip(board["auroc_lo"], board["auroc_hi"], board["auroc_note"], strict=True)
            ],
            "auroc_rank": board["auroc_rank"],
            "panel": board["in_panel"],
        }
    )
    if result.screen is not None:
        short.insert(short.columns.get_loc("auroc_rank") + 1, "screen_rank", board["screen_rank"])
    if result.retrieval is not None:
        short.insert(short.columns.get_loc("auroc_rank") + 1, "retrieval_rank", board["retrieval_rank"])
        short.insert(short.columns.get_loc("retrieval_rank"), "map@r", board["retrieval_map_at_r"])
    for column in (c for c in board.columns if str(c).startswith("worst_auroc_")):
        short.insert(
            short.columns.get_loc("crs 95% CI") + 1, f"worst {column[len('worst_auroc_') :]} auroc", board[column]
        )
    ties = "; tier =1: tied with the leader (CRS-gap interval contains 0)" if boot else ""
    print_frame(
        short,
        title=f"CRS leaderboard ({mode}); AUROC = aggregate discrimination; "
        + (f"intervals: {boot} bootstrap{ties}" if boot else _no_intervals(result)),
    )


def _no_intervals(result: Leaderboard) -> str:
    return NO_INTERVALS_EXCLUDED if result.exclude_overlap else "no intervals yet"


def _print_cost(board: pd.DataFrame) -> None:
    """The board's cost columns as a second table (the first fills 80 characters)."""
    from crsbench.reads.cost import cost_text

    table = pd.DataFrame(
        {
            "encoder": board["encoder_id"],
            "crs": board["crs"],
            "GFLOPs/img": [cost_text(v) for v in board["gflops_per_image"]],
            "img/s": [cost_text(v) for v in board["images_per_s"]],
            "params (M)": [cost_text(v, 1e6) for v in board["params"]],
            "peak mem (MiB)": [cost_text(v, 2**20) for v in board["peak_memory_bytes"]],
            "stored B/img": [cost_text(v) for v in board["stored_bytes_per_image"]],
            "measured on": [
                cost_text(None) if pd.isna(d) else f"{d} {t}"
                for d, t in zip(board["cost_device"], board["cost_dtype"], strict=True)
            ],
        }
    )
    print_frame(table, title="cost measured at extraction (view encoder_cost; peak memory is CUDA-only)")


def _print_agreement(agreement: pd.DataFrame, agree_ci: pd.DataFrame | None) -> None:
    # One column per population, one row per statistic: narrow enough for any terminal.
    agree = agreement.set_index("population").astype(object).T.rename_axis("statistic").reset_index()
    agree.columns = [str(c) for c in agree.columns]
    for population, gaps in agreement_gaps(agreement).items():  # say why a statistic is blank
        for statistic, why in gaps.items():
            agree.loc[agree["statistic"] == statistic, population] = why
    if agree_ci is not None and len(agree_ci):
        ci = {r.statistic: _ci(r.lo, r.hi) for r in agree_ci.itertuples()}
        agree["95% CI"] = agree["statistic"].map(ci).fillna("")
    print_frame(agree, title="AUROC ranking vs CRS ranking (rank agreement)")


def _marked_encoders(board: pd.DataFrame) -> list[str]:
    """Encoder ids, with the overlap mark on those pretrained on the evaluation data."""
    overlap = board["overlap"] if "overlap" in board.columns else pd.Series([[]] * len(board))
    return [f"{e}{OVERLAP_MARK}" if len(d) else str(e) for e, d in zip(board["encoder_id"], overlap, strict=True)]


def _rank(row: dict[str, Any]) -> str:
    if row.get("flagged") is True:
        return "flagged"
    if pd.isna(row.get("crs_rank")):
        return "partial" if row.get("coverage") == "partial" else ""
    return f"{int(row['crs_rank'])}" + str(row.get("rank_marker") or "")


def _tier(row: dict[str, Any]) -> str:
    """'=1' (or '1' for a leader alone) when the bootstrap cannot separate the encoder from the
    leader; blank otherwise (the rank is in its own column)."""
    if row.get("coverage") == "partial" or row.get("flagged") is True or pd.isna(row.get("gap_lo")):
        return ""
    return str(row["tier"]) if str(row.get("tier")) in ("=1", "1") else ""


def _coverage(row: dict[str, Any]) -> str:
    if pd.isna(row.get("n_panel_datasets")):
        return "" if pd.isna(row.get("n_datasets")) else str(int(row["n_datasets"]))
    return f"{int(row['n_datasets'] or 0)}/{int(row['n_panel_datasets'])}"


def _ci(lo: float, hi: float, bootstrapped: bool = False, note: str | None = None) -> str:
    if isinstance(note, str):  # the bootstrap ran but cannot move this value: no interval to show
        return NA_FIXED
    if pd.isna(lo) or pd.isna(hi):
        return "not bootstrapped" if bootstrapped else ""
    if lo == hi:  # a rank statistic no replicate moved: a value, not an interval
        return f"{lo:.4f} in every replicate"
    if f"{lo:.4f}" == f"{hi:.4f}":  # it moved, below the printed digits: never shown as [x, x]
        return f"{lo:.4f} (every replicate within 0.0001)"
    return f"[{lo:.4f}, {hi:.4f}]"

"""`crsbench screen`: rank candidate encoders from cached features in seconds, and say how far that
ranking can be trusted here (METHODS.md §21)."""

from __future__ import annotations

from typing import Annotated

import pandas as pd
import typer

from crsbench.bench import Bench
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit, print_frame, progress
from crsbench.core import default_db_path
from crsbench.reads.screen import VERDICT_DEPTH, ScreenReport


@app.command("screen")
def screen_command(
    encoder: Annotated[
        list[str] | None,
        typer.Option(
            "--encoder", "-e", help="Encoder to screen; repeatable; default every one with screening features."
        ),
    ] = None,
    dataset: Annotated[
        str | None, typer.Option("--dataset", "-d", help="One dataset (default every one); replaces only its rows.")
    ] = None,
    rank_by: Annotated[
        str | None,
        typer.Option("--rank-by", help="Estimator the ranking follows: knn_loo (default), logme, hscore, gbc, ..."),
    ] = None,
    keep: Annotated[
        int | None, typer.Option("--keep", help="Keep the top k encoders; the rest are named as dropped.")
    ] = None,
    replicates: Annotated[
        int | None,
        typer.Option("--replicates", help="Image bootstrap replicates of the trust intervals (default 200; 0: none)."),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the image bootstrap.")] = None,
    db: DbOption = default_db_path(),
) -> None:
    """Pre-screen: every transferability estimator (LogME, H-score, GBC, TransRate, N-LEEP, leave-one-out
    k-NN) on each encoder's cached clean train features, ranked per dataset and overall, with the
    measured agreement with the full grid wherever the grid has run."""
    with progress() as bar:
        report = Bench(db).screen(encoder or (), dataset, rank_by, keep, replicates, seed, progress=bar)
    if console.json_mode:
        emit(
            {
                "ranking": report.ranking,
                "trust": report.trust,
                "dropped": report.dropped,
                "verdicts": report.verdicts,
                "notes": report.notes,
            }
        )
        return
    render_screen(report)


def _ranking_table(rows: pd.DataFrame, random_init: set[str]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "rank": rows["screen_rank"].astype("Int64"),
            "encoder": [f"{e} (random-init)" if e in random_init else e for e in rows["encoder_id"]],
            "best depth": rows["best_depth"],
            "score": rows["score"],
            "kept": ["yes" if k else "no" for k in rows["kept"]],
        }
    )


def render_screen(report: ScreenReport, per_dataset: bool = True) -> None:
    """The ranked tables (per dataset unless not `per_dataset`) and overall, what would be dropped,
    the trust and its verdicts."""
    ranking, random_init = report.ranking, set(report.random_init)
    shown = ranking[ranking["scope"] != "all"] if per_dataset else ranking.iloc[0:0]
    for scope, rows in shown.groupby("scope", sort=True):
        by = rows["rank_by"].iloc[0]
        print_frame(_ranking_table(rows, random_init), title=f"pre-screen on {scope} (by {by}, at each best depth)")
    overall = ranking[ranking["scope"] == "all"]
    if len(overall):
        table = pd.DataFrame(
            {
                "rank": overall["screen_rank"].astype("Int64"),
                "encoder": overall["encoder_id"],
                "mean rank": overall["mean_rank"],
                "datasets": overall["n_datasets"],
                "kept": ["yes" if k else "no" for k in overall["kept"]],
            }
        )
        print_frame(table, title="pre-screen over every dataset (mean of the per-dataset ranks)")
        keep = int(overall["keep"].max())
        dropped = ", ".join(report.dropped) or "none"
        console.print(f"Keeping the top {keep}, the pre-screen would drop: {dropped}.")
    trust = report.trust[(report.trust["target"] == "auroc") & (report.trust["depth"] == VERDICT_DEPTH)]
    if len(trust):
        cols = [
            "dataset_id",
            "estimator",
            "n_encoders",
            "tau",
            "tau_lo",
            "tau_hi",
            "weighted_tau",
            "top_k_recall",
            "regret",
        ]
        print_frame(trust[cols], title="can the pre-screen be trusted here? (against the full grid's AUROC, depth 1.0)")
    else:
        console.print("No full grid to compare with yet: run crsbench probe, then screen again to measure the trust.")
    best = report.best_estimator
    for r in best.itertuples(index=False):
        if r.tau > 0:
            console.print(
                f"{r.dataset_id}: the estimator that agrees best with the grid here is {r.estimator} (tau {r.tau:.2f})."
            )
        else:
            console.print(f"{r.dataset_id}: no estimator's ranking agrees with the grid's here (best tau {r.tau:.2f}).")
    for line in [*report.verdicts, *report.notes]:
        console.print(line)
    if random_init:
        console.print(
            f"random-init: {', '.join(sorted(random_init))} are random-initialised stand-ins, not pretrained models."
        )

"""Retrieval as users read it (METHODS.md §24): per dataset, each encoder's clean mAP@R at its best
depth and the share kept with corrupted queries (the analysis's summary), one plain sentence per
dataset, and the leaderboard's retrieval columns."""

from __future__ import annotations

import pandas as pd

from crsbench.analyses.retrieval.columns import SUMMARY_COLUMNS
from crsbench.reads.panel import relations
from crsbench.warehouse.connection import Warehouse

SUMMARY = "analysis_retrieval_summary"


def retrieval_summary(wh: Warehouse) -> pd.DataFrame:
    """The stored summary (empty before `crsbench analyze retrieval`, which creates it), ranked per dataset."""
    if SUMMARY not in relations(wh):
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    return wh.sql(f"select * from {SUMMARY} order by dataset_id, retrieval_rank, encoder_id")


def retrieval_verdicts(summary: pd.DataFrame) -> list[str]:
    """Per dataset: who retrieves best, how much of it survives corrupted queries, and who is close."""
    lines = []
    for dataset, rows in summary.groupby("dataset_id", sort=True):
        best = rows.sort_values(["retrieval_rank", "encoder_id"]).iloc[0]
        line = (
            f"{dataset}: {best['encoder_id']} retrieves similar cases best (mAP@R {best['map_at_r']:.3f} at depth "
            f"{best['depth']:g}, relevance {best['relevance']})"
        )
        if pd.notna(best["retained"]):
            line += f"; with corrupted queries it keeps {100 * float(best['retained']):.0f} % of that"
        close = rows[(rows["encoder_id"] != best["encoder_id"]) & (rows["map_at_r"] >= best["map_at_r"] - 0.01)]
        if len(close):
            line += f"; within 0.01 of it: {', '.join(close['encoder_id'])}"
        lines.append(line + ".")
    return lines


def with_retrieval(wh: Warehouse, board: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The leaderboard with columns retrieval_map_at_r (the mean over datasets of the encoder's clean
    mAP@R at its best depth, analysis retrieval's summary) and retrieval_rank among the board's
    encoders, and the lines that explain them."""
    summary = retrieval_summary(wh)
    if summary.empty:
        nan = pd.array([None] * len(board), dtype="Float64")
        out = board.assign(retrieval_map_at_r=nan, retrieval_rank=pd.array([None] * len(board), dtype="Int64"))
        return out, ["retrieval: none stored; run 'crsbench analyze retrieval'"]
    datasets = sorted(summary["dataset_id"].unique())
    per_encoder = summary.groupby("encoder_id")
    means = per_encoder["map_at_r"].mean()
    covered = per_encoder["dataset_id"].nunique()
    whole = [e for e in board["encoder_id"] if covered.get(e, 0) == len(datasets)]
    values = pd.array([means.get(e) if e in whole else None for e in board["encoder_id"]], dtype="Float64")
    ranks = pd.Series(values).rank(method="min", ascending=False).astype("Int64")
    out = board.assign(retrieval_map_at_r=values, retrieval_rank=ranks.to_numpy())
    lines = [
        f"retrieval: mean clean mAP@R over {', '.join(datasets)} at each encoder's best depth, and its rank "
        "(crsbench analyze retrieval; view retrieval_scores)"
    ]
    missing = [e for e in board["encoder_id"] if e not in whole]
    if missing:
        lines.append(f"retrieval not scored on every retrieval dataset: {', '.join(missing)}")
    return out, lines

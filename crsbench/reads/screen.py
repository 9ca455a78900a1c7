"""The pre-screen as users read it (METHODS.md §21): its ranking per dataset and overall (view
screen_ranking), its measured agreement with the full grid (view screen_trust) and one plain
sentence per dataset saying whether it can be trusted there."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd

from crsbench.warehouse.connection import Warehouse

# The comparison a verdict reads: the estimator the run ranked by, at full depth, against the
# grid's AUROC (the only target with bootstrap intervals), and the CRS regret where a panel exists.
VERDICT_DEPTH = 1.0


@dataclasses.dataclass(frozen=True)
class ScreenReport:
    ranking: pd.DataFrame  # view screen_ranking: per dataset and scope 'all'
    trust: pd.DataFrame  # view screen_trust
    notes: list[str]  # cells skipped, datasets without intervals
    verdicts: list[str]  # one sentence per dataset with a grid to compare with
    random_init: list[str] = dataclasses.field(default_factory=list)  # encoders screened on random-init features

    @property
    def dropped(self) -> list[str]:
        """The encoders the overall pre-screen would drop at its keep-top-k."""
        overall = self.ranking[self.ranking["scope"] == "all"]
        return [str(e) for e in overall.loc[~overall["kept"].astype(bool), "encoder_id"]]

    @property
    def best_estimator(self) -> pd.DataFrame:
        """Per dataset, the estimator whose full-depth ranking agrees best with the grid's AUROC."""
        rows = self.trust[(self.trust["target"] == "auroc") & (self.trust["depth"] == VERDICT_DEPTH)]
        rows = rows.dropna(subset=["tau"]).sort_values(
            ["dataset_id", "tau", "estimator"], ascending=[True, False, True]
        )
        return rows.drop_duplicates("dataset_id")[["dataset_id", "estimator", "tau", "tau_lo", "tau_hi"]]


def read_screen(wh: Warehouse, notes: list[str] | None = None) -> ScreenReport:
    """The stored pre-screen with its trust and verdicts."""
    ranking = wh.sql("select * from screen_ranking order by scope = 'all' desc, scope, screen_rank, encoder_id")
    trust = wh.sql("select * from screen_trust order by dataset_id, estimator, depth, target, panel")
    ranked_by = wh.sql("select distinct dataset_id, estimator from screen_scores where ranked_by")
    verdicts = [
        trust_verdict(str(d), str(e), trust[(trust["dataset_id"] == d) & (trust["estimator"] == e)])
        for d, e in ranked_by.sort_values("dataset_id").itertuples(index=False)
    ]
    random_init = wh.sql("select distinct encoder_id from screen_scores where not pretrained order by encoder_id")
    return ScreenReport(
        ranking, trust, list(notes or []), [v for v in verdicts if v], random_init["encoder_id"].tolist()
    )


def _num(value: object) -> float | None:
    return None if value is None or pd.isna(value) else float(value)  # type: ignore[arg-type]


def trust_verdict(dataset: str, estimator: str, rows: pd.DataFrame) -> str:
    """One sentence: how far `estimator`'s ranking on `dataset` agrees with the full grid (rows of
    screen_trust for that pair), and what that means for dropping encoders. Empty without a grid."""
    auroc = rows[(rows["target"] == "auroc") & (rows["depth"] == VERDICT_DEPTH)]
    if auroc.empty or _num(auroc.iloc[0]["tau"]) is None:
        return ""
    row = auroc.iloc[0]
    tau, lo, hi = _num(row["tau"]), _num(row["tau_lo"]), _num(row["tau_hi"])
    assert tau is not None
    interval = f" (95 % {lo:.2f} to {hi:.2f})" if lo is not None and hi is not None else " (no interval)"
    auroc_lost = _num(row["regret"]) or 0.0
    crs_lost = max(
        [v for v in (_num(r) for r in rows.loc[rows["target"] == "crs", "regret"]) if v is not None], default=0.0
    )
    head = (
        f"{dataset}: {estimator} ranks {int(row['n_encoders'])} encoders with Kendall tau {tau:.2f}{interval} against "
        f"the full grid's AUROC; keeping its top {int(row['keep'])} "
    )
    if auroc_lost <= 0 and crs_lost <= 0:
        kept = "keeps the grid's best"
    else:
        kept = f"loses {auroc_lost:.3f} AUROC and {crs_lost:.3f} CRS against the grid's best"
    return head + kept + ": " + _reading(tau, lo, max(auroc_lost, crs_lost))


def _reading(tau: float, lo: float | None, lost: float) -> str:
    """The plain-language reading of one comparison."""
    if tau <= 0 or math.isnan(tau):
        return "it does not agree with the grid here: do not drop encoders on it."
    if lo is not None and lo > 0 and lost <= 0:
        return "it can be trusted here as a first filter."
    return "it agrees only loosely here: use it to set aside the clearly worst, not to pick the best."


def with_screen_rank(wh: Warehouse, board: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The leaderboard with column screen_rank (the pre-screen's overall rank, view screen_ranking;
    missing for an encoder not screened on every screened dataset) and the lines that explain it."""
    overall = wh.sql("select encoder_id, screen_rank, rank_by from screen_ranking where scope = 'all'")
    ranks = dict(zip(overall["encoder_id"], overall["screen_rank"], strict=True))
    out = board.assign(screen_rank=pd.array([ranks.get(e) for e in board["encoder_id"]], dtype="Int64"))
    if overall.empty:
        return out, ["screen rank: no pre-screen stored; run 'crsbench screen'"]
    by = str(overall["rank_by"].iloc[0])
    lines = [
        f"screen rank: the pre-screen's overall rank by {by} among the {len(overall)} screened encoders "
        "(crsbench screen; view screen_ranking)"
    ]
    missing = [e for e in board["encoder_id"] if ranks.get(e) is None or pd.isna(ranks.get(e))]
    if missing:
        lines.append(f"not screened on every screened dataset: {', '.join(missing)}")
    return out, lines

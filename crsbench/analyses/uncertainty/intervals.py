"""Percentile intervals of a bootstrap's replicates, as rows of the `bootstrap_intervals` table.

One row per (encoder, dataset, metric), and per (encoder, metric) with dataset_id NULL for the
aggregate; estimate = replicate 0 (the point estimate), lo / hi = the 2.5 / 97.5 percentiles of
replicates 1..R, replicates = how many of them had a value. Metrics:
* `crs`, and the four raw axes `discrimination` (= AUROC), `calibration`, `label_efficiency`,
  `robustness`;
* `auroc_rank`: the rank by AUROC among the panel members (1 + members strictly higher);
* `crs_gap`: the leader's CRS minus the encoder's, paired within each replicate, the leader
  being the member with the highest point CRS (its own gap is 0). An interval with lo <= 0 means
  the data cannot tell the encoder from the leader: the encoder shares rank 1 ("=1");
* `kendall_tau`, `spearman_rho`, `reversals` (encoder_id NULL, aggregate only): how the CRS
  ranking agrees with the AUROC ranking, from `crs_rank_agreement`.

An interval that cannot vary is not an interval: where a metric takes the same value in every
replicate for every member of a scope (e.g. the AUROC under `--resample seeds`, whose 100 % fits
do not depend on the seed), the resampling does not reach it. Its rows get lo = hi = NULL and
`note` says why, never [x, x]; `auroc_rank` follows `discrimination`, `crs_gap` follows `crs`
(so no tie with the leader is counted), and the rank-agreement statistics follow both.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from crsbench.analyses.validity.criterion import GLOBAL, agreement
from crsbench.core import AXES
from crsbench.warehouse.connection import Warehouse

COLUMNS = [
    "panel",
    "resample",
    "encoder_id",
    "dataset_id",
    "metric",
    "estimate",
    "lo",
    "hi",
    "replicates",
    "input_digest",
    "note",
]
# The digest of the runs of `encoders` (bootstrap_freshness recomputes it to flag stale rows).
_DIGEST_SQL = """
    select md5(string_agg(encoder_id || '=' || digest, ',' order by encoder_id)) as digest
    from encoder_run_digest where list_contains(?, encoder_id)
"""


def runs_digest(wh: Warehouse, encoders: list[str]) -> str | None:
    """The digest of the current runs of `encoders` (None when none has a run)."""
    rows = wh.con.execute(_DIGEST_SQL, [sorted(set(encoders))]).fetchall()
    return rows[0][0] if rows else None


AGREEMENT = ("kendall_tau", "spearman_rho", "reversals")
# Metrics that cannot vary when the one they are derived from cannot (see the module docstring).
DERIVED = {
    "auroc_rank": ("discrimination",),
    "crs_gap": ("crs",),
    **dict.fromkeys(AGREEMENT, ("crs", "discrimination")),
}


FLAT = 1e-12  # a replicate spread at most this is no spread (identical inputs give identical floats)


def flat_members(values: np.ndarray) -> np.ndarray:
    """Per member (column) of bootstrap replicates (R, members): whether every replicate gives it
    one value (NaN ignored; a member with no value counts as flat)."""
    if not values.size:
        return np.zeros(values.shape[1] if values.ndim == 2 else 0, dtype=bool)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        spread = np.nanmax(values, axis=0) - np.nanmin(values, axis=0)
    flat: np.ndarray = np.isnan(spread) | (spread <= FLAT)
    return flat


def cannot_vary(values: np.ndarray) -> bool:
    """Whether no member's replicates move (flat_members for all): then the resampling does not
    reach the metric and it has no interval."""
    return bool(values.size) and bool(flat_members(values).all())


def fixed_note(resample: str) -> str:
    """Why a metric no member's replicates move is n/a (bootstrap_intervals.note)."""
    return f"cannot vary: the same value in every replicate for every member under {resample} resampling"


def pinned_note(resample: str) -> str:
    """Why one member's metric is n/a while others' vary (bootstrap_intervals.note)."""
    return (
        f"the same value in every replicate under {resample} resampling: pinned at a min-max anchor, "
        "or not reached by the resampling"
    )


def _notes(long: pd.DataFrame, rows: pd.DataFrame, resample: str) -> pd.Series:
    """The note of each of `rows` (scope, encoder_id, metric): a metric no member's replicates
    move, and what derives from it, is fixed; one member's CRS or axis alone is pinned."""
    boot = long[(long["replicate"] > 0) & long["value"].notna()]
    spread = boot.groupby(["scope", "encoder_id", "metric"])["value"].agg(lambda v: v.max() - v.min())
    flat = spread <= FLAT
    everyone = flat.groupby(level=["scope", "metric"]).all()
    fixed = {(str(s), str(m)) for (s, m), v in everyone.items() if v and m not in DERIVED}
    scopes = {str(s) for s in long["scope"].unique()}
    fixed |= {(s, m) for s in scopes for m, base in DERIVED.items() if all((s, b) in fixed for b in base)}
    pinned = {(str(s), str(e), str(m)) for (s, e, m), v in flat.items() if v and m in ("crs", *AXES)}
    notes = [
        fixed_note(resample) if (s, m) in fixed else pinned_note(resample) if (s, e, m) in pinned else None
        for s, e, m in zip(rows["scope"], rows["encoder_id"].astype(str), rows["metric"], strict=True)
    ]
    return pd.Series(notes, index=rows.index, dtype=object)


def _gap_and_rank(scores: pd.DataFrame) -> pd.DataFrame:
    out = scores.copy()
    out["auroc_rank"] = out.groupby(["replicate", "scope"])["discrimination"].rank(method="min", ascending=False)
    point = out[out["replicate"] == 0].sort_values(["crs", "encoder_id"], ascending=[False, True])
    leaders = point.dropna(subset=["crs"]).groupby("scope")["encoder_id"].first()
    lead = out[out["encoder_id"] == out["scope"].map(leaders)][["replicate", "scope", "crs"]]
    out = out.merge(lead.rename(columns={"crs": "leader_crs"}), on=["replicate", "scope"], how="left")
    out["crs_gap"] = out["leader_crs"] - out["crs"]
    return out.drop(columns=["leader_crs"])


def summarise_long(long: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """estimate / lo / hi / replicates per `keys` from (replicate, *keys, value) rows."""
    point = long[long["replicate"] == 0].set_index(keys)["value"].rename("estimate")
    boot = long[(long["replicate"] > 0) & long["value"].notna()]
    grouped = boot.groupby(keys)["value"]
    # numpy's default (linear) percentile, as everywhere else in crsbench
    stats = pd.DataFrame({"lo": grouped.quantile(0.025), "hi": grouped.quantile(0.975), "replicates": grouped.size()})
    return pd.concat([point, stats], axis=1).reset_index()


def interval_rows(wh: Warehouse, scores: pd.DataFrame, panel: str, resample: str) -> pd.DataFrame:
    """bootstrap_intervals rows from replicate scores (replicate, scope, encoder_id, crs, axes)."""
    metrics = ["crs", *AXES, "auroc_rank", "crs_gap"]
    long = _gap_and_rank(scores).melt(
        id_vars=["replicate", "scope", "encoder_id"], value_vars=metrics, var_name="metric"
    )
    rows = summarise_long(long, ["scope", "encoder_id", "metric"])
    pairs = scores[scores["scope"] == GLOBAL].rename(columns={"replicate": "grp", "discrimination": "auroc"})[
        ["grp", "encoder_id", "crs", "auroc"]
    ]
    agree = agreement(wh, pairs).rename(columns={"grp": "replicate"})
    agree_long = agree.melt(id_vars=["replicate"], value_vars=list(AGREEMENT), var_name="metric")
    agree_long["scope"] = GLOBAL
    agree_long["encoder_id"] = None
    panel_rows = summarise_long(agree_long.astype({"value": float}), ["scope", "metric"])
    panel_rows["encoder_id"] = None
    out = pd.concat([rows, panel_rows], ignore_index=True)
    out["note"] = _notes(long, out, resample)
    out.loc[out["note"].notna(), ["lo", "hi"]] = np.nan
    out["dataset_id"] = out["scope"].where(out["scope"] != GLOBAL, None)
    out["panel"], out["resample"] = panel, resample
    out["replicates"] = out["replicates"].fillna(0).astype(np.int64)
    out["input_digest"] = None
    order = {m: i for i, m in enumerate([*metrics, *AGREEMENT])}
    out = out.assign(_m=out["metric"].map(order), _d=out["dataset_id"].fillna(""), _e=out["encoder_id"].fillna(""))
    return out.sort_values(["_e", "_d", "_m"])[COLUMNS].reset_index(drop=True)


def store_intervals(wh: Warehouse, rows: pd.DataFrame, panel: str, resample: str, digest: str | None) -> None:
    """Replace this panel's rows for this resampling in bootstrap_intervals (one transaction),
    each carrying `digest`: that of the runs read (`runs_digest`, taken before reading them)."""
    rows = rows.assign(input_digest=digest)
    with wh.transaction() as con:
        con.execute("delete from bootstrap_intervals where panel = ? and resample = ?", [panel, resample])
        con.register("_new_intervals", rows[COLUMNS])
        try:
            con.execute(
                f"insert into bootstrap_intervals ({', '.join(COLUMNS)}) "
                f"select {', '.join(COLUMNS)} from _new_intervals"
            )
        finally:
            con.unregister("_new_intervals")

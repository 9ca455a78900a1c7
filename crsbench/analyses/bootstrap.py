"""Paired-seed bootstrap of the CRS ranking (METHODS.md §10.1).

A replicate draws, for every dataset, one multiset of that dataset's seeds with replacement
(as many draws as seeds, normally 5) and applies it to every encoder: the resampling is
paired, so encoders are compared on the same probe seeds. Inside the replicate everything
is recomputed from the run records by the one SQL definition: seed means (fn_exact_mean over the
drawn rows, a seed drawn twice counting twice), cell axes (`fn_axes_cell`), aggregate axes
(`fn_axes_aggregate`), anchors over the panel members (`fn_anchors`) and the CRS
(`fn_crs_scores`, grp = replicate id). Replicate 0 is the identity multiset (every seed once):
the point estimate, equal bit for bit to `crs_encoder` while the panel's runs are those it
was frozen on. Replicates 1..R are the random ones every probability and interval uses.

A replicate's cell axes depend only on the multiset drawn for that dataset, and a dataset
with 5 seeds has only C(9, 5) = 126 distinct multisets, so the cells are computed once per
distinct multiset and the R replicates reuse them: exact, not an approximation, and what
keeps 10,000 replicates to about a second.

A seed drawn for a dataset but missing for some encoder's cell adds nothing to that cell's
seed mean; a cell none of whose drawn seeds exist is incomplete in that replicate and the
encoder's aggregate uses its other cells (never imputed), as in axes_encoder.

Outputs (tables analysis_bootstrap_<part>):
* `encoders`: panel, encoder_id, crs (replicate 0), crs_median, crs_lo / crs_hi (2.5 / 97.5
  percentiles), auroc, auroc_lo, auroc_hi, rank (replicate 0), mean_rank, p_rank1, p_top3,
  n_replicates, leading_tier (bool). Rank = 1 + members with a strictly higher CRS, so tied encoders share
  a rank (P(rank 1) may then sum above 1).
* `pairs`: panel, encoder_a, encoder_b (a = the higher point CRS), diff = crs_a - crs_b at
  replicate 0, diff_median, diff_lo, diff_hi (95 % interval), p_a_better (share of replicates
  with crs_a > crs_b).
* `replicates` (when keep_replicates): replicate, encoder_id, crs, auroc, rank.
The leading tier: encoders with P(top 3) >= tier_threshold (0.5), plus the encoder(s) with the
highest P(rank 1) so the tier is never empty; `leading_tier()` reads it back.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core import FROZEN, PRIMARY_PROBE, CrsbenchError
from crsbench.analyses.criterion import registered, resolve_population
from crsbench.analyses.registry import AnalysisResult, register_analysis, table_name
from crsbench.warehouse.connection import Warehouse

ENCODER_COLUMNS = ["panel", "encoder_id", "crs", "crs_median", "crs_lo", "crs_hi", "auroc",
                   "auroc_lo", "auroc_hi", "rank", "mean_rank", "p_rank1", "p_top3",
                   "n_replicates", "leading_tier"]
PAIR_COLUMNS = ["panel", "encoder_a", "encoder_b", "diff", "diff_median", "diff_lo", "diff_hi",
                "p_a_better"]

_SEEDS_SQL = """
    select dataset_id, list(distinct seed order by seed) as seeds
    from runs
    where probe = ? and depth = 1.0 and regime = ? and list_contains(?, encoder_id)
    group by dataset_id order by dataset_id
"""

# One query for all replicates. $draws: (dataset_id, multiset, seed), one row per draw;
# $replicates: (replicate, dataset_id, multiset). The seed means below are metrics_seed's
# fn_exact_mean over the drawn rows, so the identity multiset reproduces axes_cell bit for bit.
_REPLICATES_SQL = """
with seed_means as (
    select d.multiset as grp, r.encoder_id, r.dataset_id, r.eval_dataset_id, r.regime, r.probe,
           r.depth, r.label_fraction, r.condition, fn_exact_mean(r.auroc) as auroc_mean,
           fn_exact_mean(r.ece) as ece_mean, bool_and(r.pretrained) as pretrained
    from runs r
    join {draws} d on d.dataset_id = r.dataset_id and d.seed = r.seed
    where r.probe = $probe and r.depth = 1.0 and r.regime = $regime
      and list_contains($members, r.encoder_id)
    group by all
),
cells as materialized (
    select * from fn_axes_cell('seed_means')
),
replicate_cells as (
    select b.replicate as grp, c.* exclude (grp)
    from {replicates} b
    join cells c on c.grp = b.multiset and c.dataset_id = b.dataset_id
),
aggregates as materialized (
    select * from fn_axes_aggregate('replicate_cells')
),
replicate_axes as (
    select grp, 'global' as scope, encoder_id, true as in_panel, discrimination, calibration,
           label_efficiency, robustness
    from aggregates
),
replicate_anchors as (
    select * from fn_anchors('replicate_axes')
)
select s.grp as replicate, s.encoder_id, s.crs, a.discrimination as auroc
from fn_crs_scores('replicate_axes', 'replicate_anchors') s
join aggregates a on a.grp = s.grp and a.encoder_id = s.encoder_id
order by replicate, encoder_id
"""


@dataclass(frozen=True)
class Resamples:
    """The paired seed multisets: `draws` (dataset_id, multiset, seed), one row per draw of each
    distinct multiset; `replicates` (replicate, dataset_id, multiset) for replicates 0..R."""

    draws: pd.DataFrame
    replicates: pd.DataFrame


def dataset_seeds(wh: Warehouse, members: Sequence[str]) -> dict[str, list[int]]:
    """The seeds observed per dataset in the members' primary-probe frozen runs."""
    frame = wh.sql(_SEEDS_SQL, [PRIMARY_PROBE, FROZEN, list(members)])
    return {row.dataset_id: [int(s) for s in row.seeds] for row in frame.itertuples()}


def draw_resamples(seeds: Mapping[str, Sequence[int]], replicates: int,
                   rng: np.random.Generator) -> Resamples:
    """Replicate 0 = every seed once; 1..R = per dataset one multiset drawn with replacement."""
    draws, maps, next_id = [], [], 0
    for dataset_id in sorted(seeds):
        values = np.asarray(sorted(seeds[dataset_id]))
        k = len(values)
        picks = np.sort(rng.integers(0, k, size=(replicates, k)), axis=1)
        picks = np.vstack([np.arange(k)[None, :], picks])
        distinct, which = np.unique(picks, axis=0, return_inverse=True)
        ids = next_id + np.arange(len(distinct))
        draws.append(pd.DataFrame({"dataset_id": dataset_id, "multiset": np.repeat(ids, k),
                                   "seed": values[distinct.ravel()]}))
        maps.append(pd.DataFrame({"replicate": np.arange(replicates + 1), "dataset_id": dataset_id,
                                  "multiset": ids[np.asarray(which).ravel()]}))
        next_id += len(distinct)
    return Resamples(pd.concat(draws, ignore_index=True), pd.concat(maps, ignore_index=True))


def replicate_scores(wh: Warehouse, members: Sequence[str], resamples: Resamples) -> pd.DataFrame:
    """(replicate, encoder_id, crs, auroc) for every replicate, from one SQL query."""
    with registered(wh, {"draws": resamples.draws, "replicates": resamples.replicates}) as n:
        # Relation names are generated identifiers; every value is a bound parameter.
        query = _REPLICATES_SQL.format(draws=n["draws"], replicates=n["replicates"])
        return wh.sql(query, {"probe": PRIMARY_PROBE, "regime": FROZEN, "members": list(members)})


def ranks(matrix: np.ndarray) -> np.ndarray:
    """1 + the number of strictly higher scores in the same row; NaN scores get NaN."""
    higher = (matrix[:, None, :] > matrix[:, :, None]).sum(axis=2)
    return np.where(np.isnan(matrix), np.nan, 1.0 + higher)


def _percentiles(values: np.ndarray) -> np.ndarray:
    # Columns that are NaN in every replicate give NaN without numpy's all-NaN warning.
    out = np.full((3, values.shape[1]), np.nan)
    ok = ~np.all(np.isnan(values), axis=0)
    if ok.any():
        out[:, ok] = np.nanpercentile(values[:, ok], [2.5, 50.0, 97.5], axis=0)
    return out


def summarise(scores: pd.DataFrame, panel: str, tier_threshold: float = 0.5
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-encoder and per-pair results from (replicate, encoder_id, crs, auroc) rows."""
    crs = scores.pivot(index="replicate", columns="encoder_id", values="crs").sort_index()
    auroc = scores.pivot(index="replicate", columns="encoder_id", values="auroc").reindex_like(crs)
    encoders = list(crs.columns)
    point, boot = crs.loc[0].to_numpy(float), crs.drop(index=0).to_numpy(float)
    boot_ranks = ranks(boot)
    c_lo, c_med, c_hi = _percentiles(boot)
    a_lo, _, a_hi = _percentiles(auroc.drop(index=0).to_numpy(float))
    valid = (~np.isnan(boot)).sum(axis=0)
    with np.errstate(invalid="ignore"):
        mean_rank = np.nanmean(np.where(np.isnan(boot_ranks), np.nan, boot_ranks), axis=0) \
            if len(boot) else np.full(len(encoders), np.nan)
    n = max(len(boot), 1)
    table = pd.DataFrame({
        "panel": panel, "encoder_id": encoders, "crs": point, "crs_median": c_med,
        "crs_lo": c_lo, "crs_hi": c_hi, "auroc": auroc.loc[0].to_numpy(float),
        "auroc_lo": a_lo, "auroc_hi": a_hi, "rank": ranks(point[None, :])[0],
        "mean_rank": mean_rank, "p_rank1": (boot_ranks == 1).sum(axis=0) / n,
        "p_top3": (boot_ranks <= 3).sum(axis=0) / n, "n_replicates": valid,
    })
    modal = table["p_rank1"] == table["p_rank1"].max()
    table["leading_tier"] = (table["p_top3"] >= tier_threshold) | modal
    table = table.sort_values(["crs", "encoder_id"], ascending=[False, True]).reset_index(drop=True)

    order = list(table["encoder_id"])
    rows = []
    for a, b in itertools.combinations(order, 2):
        diff = crs[a].to_numpy(float) - crs[b].to_numpy(float)
        d_boot = diff[1:][~np.isnan(diff[1:])]
        lo, med, hi = np.percentile(d_boot, [2.5, 50.0, 97.5]) if len(d_boot) else (np.nan,) * 3
        rows.append({"panel": panel, "encoder_a": a, "encoder_b": b, "diff": diff[0],
                     "diff_median": med, "diff_lo": lo, "diff_hi": hi,
                     "p_a_better": float((d_boot > 0).sum() / n)})
    return table[ENCODER_COLUMNS], pd.DataFrame(rows, columns=PAIR_COLUMNS)


@register_analysis("bootstrap", params={"panel": None, "replicates": 10_000, "seed": 0,
                                        "tier_threshold": 0.5, "keep_replicates": True},
                   outputs={"encoders": ENCODER_COLUMNS, "pairs": PAIR_COLUMNS,
                            "replicates": ("replicate", "encoder_id", "crs", "rank"),
                            "summary": ("encoder_id", "crs", "crs_lo", "crs_hi", "p_rank1", "p_top3", "leading_tier")})
def run_bootstrap(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Paired-seed bootstrap: P(rank 1), P(top 3) and 95 % CRS intervals per panel member."""
    replicates = int(params["replicates"])
    if replicates < 1:
        raise CrsbenchError(f"bootstrap: replicates must be >= 1, got {replicates}")
    panel, members = resolve_population(wh, params["panel"])
    seeds = dataset_seeds(wh, members)
    resamples = draw_resamples(seeds, replicates, np.random.default_rng(int(params["seed"])))
    scores = replicate_scores(wh, members, resamples)
    encoders, pairs = summarise(scores, panel, float(params["tier_threshold"]))
    tables = {"encoders": encoders, "pairs": pairs}
    if params["keep_replicates"]:
        scores = scores.copy()
        scores["rank"] = scores.groupby("replicate")["crs"].rank(method="min", ascending=False)
        tables["replicates"] = scores
    tier = encoders.loc[encoders["leading_tier"], "encoder_id"]
    separated = int((pairs["diff_lo"] > 0).sum())
    notes = [f"panel {panel}: {len(members)} members, {replicates} replicates over "
             + ", ".join(f"{d} ({len(s)} seeds)" for d, s in seeds.items()),
             f"leading tier (P(top 3) >= {params['tier_threshold']} or modal P(rank 1)): "
             + ", ".join(tier),
             f"{separated}/{len(pairs)} pairs have a 95 % CRS-difference interval above 0"]
    summary = encoders[["encoder_id", "crs", "crs_lo", "crs_hi", "p_rank1", "p_top3", "leading_tier"]]
    return AnalysisResult(tables=tables, summary=summary, notes=notes)


def leading_tier(wh: Warehouse, panel: str | None = None) -> pd.DataFrame:
    """The stored bootstrap's leading tier (encoder_id, crs, crs_lo, crs_hi, p_rank1, p_top3),
    best P(rank 1) first; `panel` filters when the table holds several."""
    name = table_name("bootstrap", "encoders")
    exists = wh.con.execute("select count(*) from information_schema.tables where table_name = ?",
                            [name]).fetchone()[0]
    if not exists:
        raise CrsbenchError("no bootstrap results in this warehouse; run 'crsbench analyze bootstrap'")
    query = (f'select encoder_id, crs, crs_lo, crs_hi, p_rank1, p_top3, panel from "{name}" '
             "where leading_tier and (? is null or panel = ?) order by p_rank1 desc, crs desc, encoder_id")
    return wh.sql(query, [panel, panel])

"""Bootstrap of the CRS ranking (METHODS.md §10): test images jointly with seeds, or seeds alone.

`resample`:
* `images+seeds` (default): each replicate draws, per dataset, a multiset of its label-fraction
  seeds and, per eval dataset, the test images (stratified by class, grouped by patient;
  `resample.py`), the same draws for every encoder, condition and fraction, so the comparison is
  paired. Run metrics are rescored from the stored predictions under the image draw (no refit;
  `rescore.py`); test images are the largest source of noise and the seeds alone miss it.
* `seeds`: the paper's paired-seed bootstrap; the stored run metrics, seeds resampled.
* `images`: test images alone, every seed once.

Inside a replicate everything is recomputed by the one SQL definition: seed means (exact_mean
over the drawn rows, a seed drawn twice counting twice), cell axes (`crs_axes_cell`), aggregate
axes (`crs_axes_aggregate`), anchors over the panel members (`crs_anchors`, per dataset and
global) and the CRS (`crs_scores`, grp = replicate). Replicate 0 is the identity (every seed
and image once): the point estimate, equal bit for bit to `crs_encoder` while the panel's runs
are those it was frozen on. Only cells `axes_cell` counts complete take part.

Outputs: the table `bootstrap_intervals` (rows of this panel and resample replaced; see
`intervals.py`) and the analysis tables analysis_bootstrap_<part>:
* `encoders`: panel, encoder_id, crs (replicate 0), crs_median, crs_lo / crs_hi (2.5 / 97.5
  percentiles), auroc, auroc_lo, auroc_hi, rank (replicate 0), mean_rank, p_rank1, p_top3,
  n_replicates, leading_tier (bool). Rank = 1 + members with a strictly higher CRS.
* `pairs`: panel, encoder_a, encoder_b (a = the higher point CRS), diff, diff_median, diff_lo,
  diff_hi (95 % interval of crs_a - crs_b), p_a_better.
* `replicates` (when keep_replicates): replicate, encoder_id, crs, auroc, rank.
* `dataset_crs_replicates` (when keep_replicates): panel, dataset_id, replicate, encoder_id, crs:
  each member's per-dataset CRS in every replicate (the pre-screen's CRS-target intervals, view
  screen_trust; replicate 0 equals crs_cell while the panel's runs are those it was frozen on).
The leading tier: encoders with P(top 3) >= tier_threshold (0.5), plus the encoder(s) with the
highest P(rank 1) so the tier is never empty; `leading_tier()` reads it back.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.registry import AnalysisResult, Param, panel_param, register_analysis, table_name
from crsbench.analyses.uncertainty.intervals import (
    cannot_vary,
    fixed_note,
    flat_members,
    interval_rows,
    pinned_note,
    runs_digest,
    store_intervals,
)
from crsbench.analyses.uncertainty.resample import SeedDraws, draw_images, draw_seeds, eval_images
from crsbench.analyses.uncertainty.rescore import rescore, scored_runs
from crsbench.analyses.validity.criterion import registered, resolve_population
from crsbench.core import FROZEN, PRIMARY_PROBE, CrsbenchError
from crsbench.warehouse.connection import Warehouse

RESAMPLE = ("images+seeds", "seeds", "images")
MIN_REPLICATES = 100
ENCODER_COLUMNS = [
    "panel",
    "encoder_id",
    "crs",
    "crs_median",
    "crs_lo",
    "crs_hi",
    "auroc",
    "auroc_lo",
    "auroc_hi",
    "rank",
    "mean_rank",
    "p_rank1",
    "p_top3",
    "n_replicates",
    "leading_tier",
]
PAIR_COLUMNS = ["panel", "encoder_a", "encoder_b", "diff", "diff_median", "diff_lo", "diff_hi", "p_a_better"]

_SEEDS_SQL = """
    select dataset_id, list(distinct seed order by seed) as seeds
    from runs_grid
    where in_grid and probe = ? and depth = 1.0 and regime = ? and list_contains(?, encoder_id)
    group by dataset_id order by dataset_id
"""

# One query for all replicates. $metrics: (version, key, auroc, ece), version 0 = the stored
# run metrics; $runs: the runs by key; $combos: (replicate, dataset_id, combo, version);
# $draws: (combo, seed), one row per seed drawn. Returns per replicate and scope (a dataset or
# 'global') each member's CRS and its four raw axes.
_REPLICATES_SQL = """
with metric_rows as (
    select m.version, r.encoder_id, r.dataset_id, r.eval_dataset_id, r.regime, r.probe, r.depth,
           r.label_fraction, r.seed, r.condition, m.auroc, m.ece, r.pretrained
    from {metrics} m
    join {runs} r on r.key = m.key
),
distinct_combos as (
    select distinct combo, dataset_id, version from {combos}
),
seed_means as (
    select c.combo as grp, r.encoder_id, r.dataset_id, r.eval_dataset_id, r.regime, r.probe,
           r.depth, r.label_fraction, r.condition, fn_exact_mean(r.auroc) as auroc_mean,
           fn_exact_mean(r.ece) as ece_mean, bool_and(r.pretrained) as pretrained
    from metric_rows r
    join distinct_combos c on c.dataset_id = r.dataset_id and c.version = r.version
    join {draws} d on d.combo = c.combo and d.seed = r.seed
    group by all
),
cells as materialized (
    select * from fn_axes_cell('seed_means')
),
replicate_cells as materialized (
    select b.replicate as grp, c.* exclude (grp)
    from {combos} b
    join cells c on c.grp = b.combo and c.dataset_id = b.dataset_id
),
aggregates as (
    select * from fn_axes_aggregate('replicate_cells')
),
scoped_axes as materialized (
    select grp, 'global' as scope, encoder_id, true as in_panel, discrimination, calibration,
           label_efficiency, robustness
    from aggregates
    union all
    select grp, dataset_id as scope, encoder_id, true as in_panel, discrimination, calibration,
           label_efficiency, robustness
    from replicate_cells
    where complete
),
scoped_anchors as (
    select * from fn_anchors('scoped_axes')
)
select a.grp as replicate, a.scope, a.encoder_id, s.crs, a.discrimination, a.calibration,
       a.label_efficiency, a.robustness
from scoped_axes a
left join fn_crs_scores('scoped_axes', 'scoped_anchors') s
       on s.grp = a.grp and s.scope = a.scope and s.encoder_id = a.encoder_id
order by replicate, scope, encoder_id
"""


def dataset_seeds(wh: Warehouse, members: Sequence[str]) -> dict[str, list[int]]:
    """The seeds observed per dataset in the members' primary-probe frozen runs."""
    frame = wh.sql(_SEEDS_SQL, [PRIMARY_PROBE, FROZEN, list(members)])
    return {row.dataset_id: [int(s) for s in row.seeds] for row in frame.itertuples()}


def stored_metrics(runs: pd.DataFrame) -> pd.DataFrame:
    """Version 0 of the metrics: the run records' own (what every view reads)."""
    return pd.DataFrame({"version": 0, "key": runs["key"], "auroc": runs["auroc"], "ece": runs["ece"]})


def rescored_metrics(auroc: np.ndarray, ece: np.ndarray, keys: np.ndarray) -> pd.DataFrame:
    """Versions 1..R from rescore's (n_runs, R + 1) matrices (column 0, the identity, is left
    out: version 0 is the stored metrics)."""
    n_runs, width = auroc.shape
    return pd.DataFrame(
        {
            "version": np.tile(np.arange(1, width), n_runs),
            "key": np.repeat(keys, width - 1),
            "auroc": auroc[:, 1:].ravel(),
            "ece": ece[:, 1:].ravel(),
        }
    )


def replicate_scores(wh: Warehouse, runs: pd.DataFrame, metrics: pd.DataFrame, draws: SeedDraws) -> pd.DataFrame:
    """(replicate, scope, encoder_id, crs, four axes) for every replicate, from one SQL query."""
    frames = {
        "metrics": metrics,
        "runs": runs.drop(columns=["auroc", "ece", "run_id"]),
        "combos": draws.combos,
        "draws": draws.draws,
    }
    with registered(wh, frames) as n:
        # Relation names are generated identifiers; every value travels in the frames.
        return wh.sql(_REPLICATES_SQL.format(**n))


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


def summarise(scores: pd.DataFrame, panel: str, tier_threshold: float = 0.5) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-encoder and per-pair results from (replicate, encoder_id, crs, auroc) rows."""
    crs = scores.pivot(index="replicate", columns="encoder_id", values="crs").sort_index()
    auroc = scores.pivot(index="replicate", columns="encoder_id", values="auroc").reindex_like(crs)
    # A CRS no replicate moves ranks nothing: no interval, P(rank 1), P(top 3) or tier (intervals.py).
    crs_fixed = cannot_vary(crs.drop(index=0).to_numpy(float))
    table = _encoder_results(crs, auroc, panel, crs_fixed, tier_threshold)
    return table[ENCODER_COLUMNS], _pair_results(crs, list(table["encoder_id"]), panel, crs_fixed)


def _intervals(values: np.ndarray) -> np.ndarray:
    """(lo, median, hi) per column; a member pinned at one value (e.g. at a min-max anchor) has no
    interval, never [x, x]."""
    out = _percentiles(values)
    flat = flat_members(values)
    out[0][flat], out[2][flat] = np.nan, np.nan
    return out


def _encoder_results(
    crs: pd.DataFrame, auroc: pd.DataFrame, panel: str, crs_fixed: bool, tier_threshold: float
) -> pd.DataFrame:
    """One row per encoder (replicate 0 is the point estimate), best CRS first: intervals, ranks, tier."""
    encoders = list(crs.columns)
    point, boot = crs.loc[0].to_numpy(float), crs.drop(index=0).to_numpy(float)
    boot_ranks = ranks(boot)
    c_lo, c_med, c_hi = _intervals(boot)
    a_lo, _, a_hi = _intervals(auroc.drop(index=0).to_numpy(float))
    if crs_fixed:
        boot_ranks[:] = np.nan
    valid = (~np.isnan(boot)).sum(axis=0)
    with np.errstate(invalid="ignore"):
        mean_rank = np.nanmean(boot_ranks, axis=0) if len(boot) and not crs_fixed else np.full(len(encoders), np.nan)
    n = max(len(boot), 1)
    table = pd.DataFrame(
        {
            "panel": panel,
            "encoder_id": encoders,
            "crs": point,
            "crs_median": c_med,
            "crs_lo": c_lo,
            "crs_hi": c_hi,
            "auroc": auroc.loc[0].to_numpy(float),
            "auroc_lo": a_lo,
            "auroc_hi": a_hi,
            "rank": ranks(point[None, :])[0],
            "mean_rank": mean_rank,
            "p_rank1": np.nan if crs_fixed else (boot_ranks == 1).sum(axis=0) / n,
            "p_top3": np.nan if crs_fixed else (boot_ranks <= 3).sum(axis=0) / n,
            "n_replicates": valid,
        }
    )
    modal = table["p_rank1"] == table["p_rank1"].max()  # never true for NaN
    table["leading_tier"] = (table["p_top3"] >= tier_threshold) | modal
    return table.sort_values(["crs", "encoder_id"], ascending=[False, True]).reset_index(drop=True)


def _pair_results(crs: pd.DataFrame, order: list[str], panel: str, crs_fixed: bool) -> pd.DataFrame:
    """One row per pair (a before b in `order`): the CRS difference a - b, its interval and P(a better)."""
    n = max(len(crs) - 1, 1)  # bootstrap replicates (replicate 0 is the point estimate)
    rows = []
    for a, b in itertools.combinations(order, 2):
        diff = crs[a].to_numpy(float) - crs[b].to_numpy(float)
        d_boot = diff[1:][~np.isnan(diff[1:])] if not crs_fixed else np.zeros(0)
        lo, med, hi = np.percentile(d_boot, [2.5, 50.0, 97.5]) if len(d_boot) else (np.nan,) * 3
        rows.append(
            {
                "panel": panel,
                "encoder_a": a,
                "encoder_b": b,
                "diff": diff[0],
                "diff_median": med,
                "diff_lo": lo,
                "diff_hi": hi,
                "p_a_better": np.nan if crs_fixed else float((d_boot > 0).sum() / n),
            }
        )
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def check_params(params: Mapping[str, Any]) -> tuple[int, str]:
    """(replicates, resample), validated before anything is read or written."""
    replicates = int(params["replicates"])
    if replicates < MIN_REPLICATES:
        raise CrsbenchError(
            f"bootstrap: --replicates must be >= {MIN_REPLICATES} for a 95 % percentile interval, got {replicates}"
        )
    resample = str(params["resample"])
    if resample not in RESAMPLE:
        raise CrsbenchError(f"bootstrap: --resample must be one of {', '.join(RESAMPLE)}, got {resample!r}")
    return replicates, resample


def bootstrap_scores(
    wh: Warehouse,
    members: Sequence[str],
    replicates: int,
    resample: str,
    rng: np.random.Generator,
    workers: int | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Every replicate's scores (see replicate_scores) under the chosen resampling, and notes on
    how small test strata were pooled."""
    runs = scored_runs(wh, members)
    if runs.empty:
        raise CrsbenchError("bootstrap: no member has a complete cell (see 'crsbench status')")
    images = "images" in resample
    seeds = {d: sorted(int(s) for s in g.unique()) for d, g in runs.groupby("dataset_id")["seed"]}
    draws = draw_seeds(seeds, replicates, rng, resample_seeds="seeds" in resample, resample_images=images)
    metrics, notes = [stored_metrics(runs)], []
    if images:
        tests = {e: eval_images(wh, e) for e in sorted(runs["eval_dataset_id"].unique())}
        weights = {e: draw_images(t, replicates, rng) for e, t in tests.items()}
        auroc, ece = rescore(wh, runs, tests, weights, workers=workers)
        metrics.append(rescored_metrics(auroc, ece, runs["key"].to_numpy()))
        notes = [n for t in tests.values() for n in t.notes]
    return replicate_scores(wh, runs, pd.concat(metrics, ignore_index=True), draws), notes


_POINT = "replicate 0: every seed and test image once"


_AUROC = "aggregate AUROC (the discrimination axis: mean over complete cells of the seed-mean clean full-label AUROC)"


def _percentile(which: str, of: str) -> str:
    return f"{which} of {of} over replicates 1..R (numpy linear percentile)"


DOCS = {
    "panel": "Reference panel whose members were bootstrapped ('cohort' = every frozen-regime encoder with "
    "aggregate axes, when no panel is frozen); anchors and Pareto reference are recomputed over its members "
    "in every replicate.",
    "crs": f"Point estimate of the aggregate CRS ({_POINT}; equals crs_encoder while the panel's runs are those it "
    "was frozen on); [0, 1], higher is better.",
    "crs_median": _percentile("Median (50th percentile)", "the aggregate CRS") + "; [0, 1].",
    "crs_lo": "Lower end of the 95 % percentile bootstrap interval of the encoder's CRS: "
    + _percentile("the 2.5th percentile", "its CRS")
    + "; [0, 1].",
    "crs_hi": "Upper end of the 95 % percentile bootstrap interval of the encoder's CRS: "
    + _percentile("the 97.5th percentile", "its CRS")
    + "; [0, 1].",
    "auroc": f"Point estimate ({_POINT}) of the {_AUROC}; [0, 1], higher is better.",
    "auroc_lo": "Lower end of the 95 % percentile bootstrap interval of the aggregate AUROC: "
    + _percentile("the 2.5th percentile", "it")
    + "; [0, 1].",
    "auroc_hi": "Upper end of the 95 % percentile bootstrap interval of the aggregate AUROC: "
    + _percentile("the 97.5th percentile", "it")
    + "; [0, 1].",
    "rank": "CRS rank at the point estimate: 1 + the number of members with a strictly higher CRS "
    "(tied encoders share a rank; 1 = best).",
    "mean_rank": "Mean CRS rank over the replicates 1..R in which the encoder has a CRS; ranks, 1 = best.",
    "p_rank1": "P(rank 1): share of replicates 1..R in which the encoder ranks first (ties included); [0, 1].",
    "p_top3": "P(top 3): share of replicates 1..R in which the encoder's CRS rank is 3 or better; [0, 1].",
    "n_replicates": "Number of replicates 1..R in which the encoder has a CRS; count.",
    "leading_tier": "True for the leading tier: P(top 3) >= tier_threshold (default 0.5), or the highest P(rank 1) "
    "of the panel (so the tier is never empty).",
    "encoder_a": "Encoder of the pair with the higher point CRS (ties broken by encoder_id).",
    "encoder_b": "Encoder of the pair with the lower or equal point CRS.",
    "diff": "Point CRS difference crs(encoder_a) - crs(encoder_b) at replicate 0; CRS points, >= 0 by the pair's order.",
    "diff_median": _percentile("Median", "the paired difference crs(encoder_a) - crs(encoder_b)") + "; CRS points.",
    "diff_lo": "Lower end of the 95 % interval of the paired difference crs(encoder_a) - crs(encoder_b): "
    + _percentile("the 2.5th percentile", "it")
    + "; above 0 = the pair is separated.",
    "diff_hi": "Upper end of the 95 % interval of the paired difference crs(encoder_a) - crs(encoder_b): "
    + _percentile("the 97.5th percentile", "it")
    + ".",
    "p_a_better": "Share of replicates 1..R in which encoder_a's CRS is strictly higher than encoder_b's; [0, 1].",
    "replicate": "Bootstrap replicate: 0 = the point estimate (every seed and test image once), 1..R = resampled.",
    "replicates.crs": "Aggregate CRS of the encoder in this replicate, anchors and Pareto reference recomputed over "
    "the members; [0, 1], higher is better.",
    "replicates.auroc": f"The encoder's {_AUROC} in this replicate; [0, 1], higher is better.",
    "replicates.rank": "CRS rank within the replicate: 1 + the number of members with a strictly higher CRS "
    "(ties share the better rank); NULL when the encoder has no CRS.",
    "dataset_crs_replicates.dataset_id": "Dataset of the per-dataset CRS (its own anchors, recomputed over the "
    "members in each replicate).",
    "dataset_crs_replicates.crs": "Per-dataset CRS of the encoder in this replicate; replicate 0 equals crs_cell "
    "while the panel's runs are those it was frozen on; [0, 1], higher is better; NULL where the cell is incomplete.",
}


@register_analysis(
    "bootstrap",
    columns=DOCS,
    section="§10",
    params={
        "panel": panel_param("members are bootstrapped"),
        "replicates": Param(1_000, "Bootstrap replicates; at least 100."),
        "seed": Param(0, "Random seed of the resamples."),
        "resample": Param(
            "images+seeds",
            "What is resampled: images+seeds (default), seeds (the paper's paired-seed bootstrap) or images.",
        ),
        "tier_threshold": Param(0.5, "P(top 3) from which an encoder is in the leading tier; [0, 1]."),
        "keep_replicates": Param(True, "Store every replicate's scores (parts replicates and dataset_crs_replicates)."),
        "workers": Param(None, "Threads rescoring the resampled predictions (default: one per CPU).", int),
    },
    outputs={
        "encoders": ENCODER_COLUMNS,
        "pairs": PAIR_COLUMNS,
        "replicates": ("replicate", "encoder_id", "crs", "auroc", "rank"),
        "dataset_crs_replicates": ("panel", "dataset_id", "replicate", "encoder_id", "crs"),
        "summary": (
            "encoder_id",
            "crs",
            "crs_lo",
            "crs_hi",
            "auroc",
            "auroc_lo",
            "auroc_hi",
            "p_rank1",
            "leading_tier",
        ),
    },
)
def run_bootstrap(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Bootstrap (test images + seeds by default): 95 % intervals, P(rank 1), ties with the leader."""
    replicates, resample = check_params(params)
    panel, members = resolve_population(wh, params["panel"])
    check_complete(wh, panel, members)
    digest = runs_digest(wh, list(members))  # before reading: a run landing meanwhile makes it stale
    scores, strata_notes = bootstrap_scores(
        wh, members, replicates, resample, np.random.default_rng(int(params["seed"])), params["workers"]
    )
    global_rows = scores[scores["scope"] == "global"].rename(columns={"discrimination": "auroc"})
    encoders, pairs = summarise(
        global_rows[["replicate", "encoder_id", "crs", "auroc"]], panel, float(params["tier_threshold"])
    )
    intervals = interval_rows(wh, scores, panel, resample)
    store_intervals(wh, intervals, panel, resample, digest)
    tables = {"encoders": encoders, "pairs": pairs}
    if params["keep_replicates"]:
        reps = global_rows[["replicate", "encoder_id", "crs", "auroc"]].copy()
        reps["rank"] = reps.groupby("replicate")["crs"].rank(method="min", ascending=False)
        tables["replicates"] = reps.reset_index(drop=True)
        tables["dataset_crs_replicates"] = dataset_crs_replicates(scores, panel)
    tier = encoders.loc[encoders["leading_tier"], "encoder_id"]
    tied = intervals[(intervals["metric"] == "crs_gap") & intervals["dataset_id"].isna() & (intervals["lo"] <= 0)][
        "encoder_id"
    ]
    separated = int((pairs["diff_lo"] > 0).sum())
    datasets = sorted(scores.loc[scores["scope"] != "global", "scope"].unique())
    notes = [
        f"panel {panel}: {len(members)} members, {replicates} replicates resampling "
        f"{resample} over {', '.join(datasets)}",
        f"tied with the leader (CRS-gap interval contains 0, shown '=1'): {', '.join(tied)}",
        f"leading tier (P(top 3) >= {params['tier_threshold']} or modal P(rank 1)): " + ", ".join(tier),
        f"{separated}/{len(pairs)} pairs have a 95 % CRS-difference interval above 0",
        *strata_notes,
        *na_notes(intervals, resample),
        f"stored: bootstrap_intervals (panel {panel}, resample {resample})",
    ]
    summary = encoders[
        ["encoder_id", "crs", "crs_lo", "crs_hi", "auroc", "auroc_lo", "auroc_hi", "p_rank1", "leading_tier"]
    ]
    return AnalysisResult(tables=tables, summary=summary, notes=notes)


def dataset_crs_replicates(scores: pd.DataFrame, panel: str) -> pd.DataFrame:
    """(panel, dataset_id, replicate, encoder_id, crs) of every per-dataset scope of `scores`."""
    per_dataset = scores[scores["scope"] != "global"]
    return pd.DataFrame(
        {
            "panel": panel,
            "dataset_id": per_dataset["scope"].astype(str).to_numpy(),
            "replicate": per_dataset["replicate"].astype("int64").to_numpy(),
            "encoder_id": per_dataset["encoder_id"].to_numpy(),
            "crs": per_dataset["crs"].astype(float).to_numpy(),
        }
    ).sort_values(["dataset_id", "replicate", "encoder_id"], ignore_index=True)


def na_notes(intervals: pd.DataFrame, resample: str) -> list[str]:
    """What is n/a among the aggregate intervals (intervals.py), and what it leaves uncounted."""
    aggregate = intervals[intervals["dataset_id"].isna()]
    fixed = list(aggregate.loc[aggregate["note"] == fixed_note(resample), "metric"].unique())
    pinned = aggregate.loc[(aggregate["note"] == pinned_note(resample)) & (aggregate["metric"] == "crs"), "encoder_id"]
    lines = []
    if fixed:
        uncounted = "; no tie, P(rank 1) or P(top 3) is counted" if "crs" in fixed else ""
        lines.append(f"n/a, no interval: {', '.join(fixed)} ({fixed_note(resample)}){uncounted}")
    if len(pinned):
        lines.append(f"n/a, no interval: the CRS of {', '.join(pinned)} ({pinned_note(resample)})")
    return lines


_GAPS_SQL = """
    select dataset_id, encoder_id, count(*) as n,
           list(probe || ' depth ' || depth::varchar || ' fraction ' || label_fraction::varchar || ' seed '
                || seed::varchar || ' ' || condition order by all)[1:2] as examples
    from grid_missing
    where regime = 'frozen' and list_contains(?, encoder_id)
    group by all order by dataset_id, encoder_id
"""


def check_complete(wh: Warehouse, panel: str, members: Sequence[str]) -> None:
    """Refuse a bootstrap whose members' cells lack runs of the declared grid: its intervals would
    describe a different run set than the panel's scores. One line naming the cells and runs."""
    gaps = wh.sql(_GAPS_SQL, [list(members)])
    if gaps.empty:
        return
    cells = "; ".join(
        f"{r.dataset_id} x {r.encoder_id}: {r.n} run(s) missing (e.g. {', '.join(r.examples)})"
        for r in gaps.head(5).itertuples()
    )
    more = f"; and {len(gaps) - 5} more cells" if len(gaps) > 5 else ""
    raise CrsbenchError(
        f"bootstrap of panel {panel}: member cells are incomplete: {cells}{more}; "
        "run 'crsbench probe' to fill them (crsbench status lists them)"
    )


def leading_tier(wh: Warehouse, panel: str | None = None) -> pd.DataFrame:
    """The stored bootstrap's leading tier (encoder_id, crs, crs_lo, crs_hi, p_rank1, p_top3),
    best P(rank 1) first; `panel` filters when the table holds several."""
    name = table_name("bootstrap", "encoders")
    count = wh.con.execute("select count(*) from information_schema.tables where table_name = ?", [name]).fetchone()
    assert count is not None  # count(*) always returns a row
    exists = count[0]
    if not exists:
        raise CrsbenchError("no bootstrap results in this warehouse; run 'crsbench analyze bootstrap'")
    query = (
        f'select encoder_id, crs, crs_lo, crs_hi, p_rank1, p_top3, panel from "{name}" '
        "where leading_tier and (? is null or panel = ?) order by p_rank1 desc, crs desc, encoder_id"
    )
    return wh.sql(query, [panel, panel])

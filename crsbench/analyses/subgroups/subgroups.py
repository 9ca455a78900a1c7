"""`crsbench analyze subgroups`: per-subgroup AUROC, ECE, Brier and accuracy of every run from its
stored predictions, the best-worst gap per key with image-level bootstrap intervals (METHODS.md §16.2).

Runs: the primary probe (logreg), frozen regime, in the declared grid, at `depth` and `fraction`
(default 1.0 each; 'all' for every one), conditions `clean` (own test split) and `shift` (the
shift target's test split) by default. Groups are the values of `image_metadata` keys (`keys`,
default every key the evaluated datasets carry). Outputs: `metrics` (one row per run, key and
group) and `gaps` (one row per run, key and metric), stored in the tables subgroup_metrics and
subgroup_gaps (sql/views/280-281; a rerun replaces their rows); `leaderboard --subgroup KEY`
reads subgroup_gaps. The registry stores the summary (seed means) as analysis_subgroups_summary.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.common import load_predictions
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis
from crsbench.analyses.side_tables import replace_rows
from crsbench.analyses.subgroups.metrics import METRICS, Gap, GroupScore, gaps, score_groups
from crsbench.analyses.uncertainty.resample import EvalImages, draw_images, eval_images
from crsbench.core import FROZEN, PRIMARY_PROBE, CrsbenchError
from crsbench.warehouse.connection import Warehouse

RUN_COLUMNS = [
    "run_id",
    "encoder_id",
    "dataset_id",
    "eval_dataset_id",
    "probe",
    "depth",
    "label_fraction",
    "seed",
    "condition",
]
METRIC_COLUMNS = [*RUN_COLUMNS, "key", "value", "n_images", "n_columns", "status", *METRICS]
GAP_COLUMNS = [
    *RUN_COLUMNS,
    "key",
    "metric",
    "n_groups",
    "worst_group",
    "worst",
    "best",
    "gap",
    "gap_lo",
    "gap_hi",
    "replicates",
]
SUMMARY_COLUMNS = [
    "encoder_id",
    "eval_dataset_id",
    "key",
    "metric",
    "n_runs",
    "worst_group",
    "worst",
    "gap",
    "gap_lo",
    "gap_hi",
]


def select_runs(wh: Warehouse, params: Mapping[str, Any]) -> pd.DataFrame:
    """The in-grid runs of the probe at the chosen depth / fraction and conditions."""
    conditions = listed(params["conditions"])
    runs = wh.sql(
        f"select {', '.join(RUN_COLUMNS)} from runs_grid where in_grid and probe = ? and regime = ? "
        "and list_contains(?, condition) order by encoder_id, dataset_id, eval_dataset_id, depth, "
        "label_fraction, seed, condition",
        [str(params["probe"]), FROZEN, conditions],
    )
    for column, value in (("depth", params["depth"]), ("label_fraction", params["fraction"])):
        if str(value) != "all":
            runs = runs[np.isclose(runs[column].to_numpy(float), float(value))]
    if runs.empty:
        raise CrsbenchError(
            f"no {params['probe']} runs at depth {params['depth']}, fraction {params['fraction']}, "
            f"conditions {', '.join(conditions)}: run 'crsbench probe' first"
        )
    runs = runs.reset_index(drop=True)
    runs.insert(0, "key", np.arange(len(runs), dtype=np.int64))
    return runs


def listed(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return [str(v).strip() for v in items if str(v).strip()]


def metadata_groups(wh: Warehouse, test: EvalImages, key: str) -> np.ndarray | None:
    """Group value per test image (None where the image has no value); None if the dataset lacks the key."""
    frame = wh.sql(
        "select i.row_index, m.value from image_metadata m join images i "
        "on i.dataset_id = m.dataset_id and i.image_id = m.image_id "
        "where m.dataset_id = ? and m.key = ?",
        [test.dataset_id, key],
    )
    if frame.empty:
        return None
    values = dict(zip(frame["row_index"].astype(np.int64), frame["value"].astype(str), strict=True))
    return np.array([values.get(int(r)) for r in test.row_index], dtype=object)


def check_keys(wh: Warehouse, keys: Sequence[str], datasets: Sequence[str]) -> list[str]:
    """The keys to analyse: the given ones (each present in some evaluated dataset), else all."""
    known = wh.sql(
        "select distinct key from image_metadata where list_contains(?, dataset_id) order by key", [list(datasets)]
    )["key"].tolist()
    if not known:
        raise CrsbenchError(
            f"no image metadata for {', '.join(datasets)}: datasets ingested before metadata was kept "
            "have none; re-ingest them (--replace) or add it with 'crsbench dataset metadata'"
        )
    for key in keys:
        if key not in known:
            raise CrsbenchError(
                f"subgroup key {key!r} is not in the metadata of the evaluated datasets (keys: {', '.join(known)})"
            )
    return list(keys) or known


DOCS = {
    "key": "Metadata key the groups come from (image_metadata.key).",
    "metric": "auroc, ece, brier or accuracy.",
    "n_runs": "Runs (seeds) averaged; count.",
    "worst_group": "The subgroup (metadata value) worst in most of the runs (ties: the first in sorted order).",
    "worst": "Seed mean of the worst subgroup's metric (lowest AUROC or accuracy, highest ECE or Brier).",
    "gap": "Seed mean of the best - worst gap over the scored subgroups; >= 0, lower is fairer.",
    "gap_lo": "Seed mean of the gap's 2.5th bootstrap percentile (image-level replicates).",
    "gap_hi": "Seed mean of the gap's 97.5th bootstrap percentile (image-level replicates).",
}


@register_analysis(
    "subgroups",
    columns=DOCS,
    section="§16",
    params={
        "keys": Param(None, "Metadata key to form subgroups by (repeatable; default all).", list[str], "--key"),
        "probe": Param(PRIMARY_PROBE, "Probe whose runs are scored."),
        "depth": Param(1.0, "Relative depth of the runs: 0.25, 0.5, 0.75 or 1.0 (--set depth=all for every one)."),
        "fraction": Param(1.0, "Label fraction of the runs (--set fraction=all for every one)."),
        "conditions": Param("clean,shift", "Conditions scored, comma-separated."),
        "min_positives": Param(3, "Positives a class needs within a subgroup to be scored."),
        "min_negatives": Param(3, "Negatives a class needs within a subgroup to be scored."),
        "replicates": Param(200, "Image-level bootstrap replicates of each gap's interval; 0 for none."),
        "seed": Param(0, "Random seed of the bootstrap."),
    },
    outputs={"summary": SUMMARY_COLUMNS},
)
def subgroups(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Per-subgroup AUROC, ECE, Brier, accuracy of each run and the worst group and gap per key, with intervals."""
    replicates = int(params["replicates"])
    if replicates < 0:
        raise CrsbenchError(f"replicates must be >= 0, got {replicates}")
    runs = select_runs(wh, params)
    keys = check_keys(wh, listed(params["keys"]), sorted(runs["eval_dataset_id"].unique()))
    rng = np.random.default_rng(int(params["seed"]))
    metric_rows: list[dict[str, Any]] = []
    gap_rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for eval_id, group in runs.groupby("eval_dataset_id", sort=True):
        test = eval_images(wh, str(eval_id))
        weights = _draw(test, replicates, rng)
        present = {k: g for k in keys if (g := metadata_groups(wh, test, k)) is not None}
        if not present:
            notes.append(f"{eval_id}: no metadata for {', '.join(keys)}; skipped")
            continue
        predictions = load_predictions(wh, group)
        cache: dict[tuple[bytes, str], list[GroupScore]] = {}
        for run in group.itertuples(index=False):
            if int(run.key) not in predictions:
                notes.append(f"run {run.run_id}: no stored predictions; skipped")
                continue
            rows, probs = predictions[int(run.key)]
            if not np.array_equal(rows, test.row_index):
                raise CrsbenchError(f"run {run.run_id}: predictions do not cover the test split of {eval_id}")
            digest = hashlib.blake2b(probs.tobytes(), digest_size=16).digest()
            base = {c: getattr(run, c) for c in RUN_COLUMNS}
            for key, values in present.items():
                scores = cache.get((digest, key))
                if scores is None:
                    mp, mn = int(params["min_positives"]), int(params["min_negatives"])
                    scores = score_groups(values, test.labels, probs, test.task, weights, mp, mn)
                    cache[(digest, key)] = scores
                metric_rows += [_metric_row(base, key, s) for s in scores]
                gap_rows += [_gap_row(base, key, g) for g in gaps(scores)]
    metrics = pd.DataFrame(metric_rows, columns=METRIC_COLUMNS)
    gap_frame = pd.DataFrame(gap_rows, columns=GAP_COLUMNS)
    named = set(listed(params["keys"]))
    for key in keys:
        rows = metrics[metrics["key"] == key]
        if len(rows) and not (rows["status"] == "scored").any():
            if key not in named:  # found, not asked for: say so and go on
                notes.append(f"subgroup key {key!r}: every group is too small to score")
                continue
            raise CrsbenchError(
                f"subgroup key {key!r}: every group is too small (fewer than {params['min_positives']} positives "
                f"or {params['min_negatives']} negatives for every class); lower --set min_positives=... or merge groups"
            )
    insufficient = metrics[metrics["status"] == "insufficient"]
    if len(insufficient):
        notes.append(
            f"{len(insufficient)} (run, group) rows insufficient (reported, not scored), e.g. "
            f"{insufficient.iloc[0]['eval_dataset_id']} {insufficient.iloc[0]['key']}={insufficient.iloc[0]['value']}"
        )
    notes.append(f"intervals: {replicates} image-level bootstrap replicates (seed {params['seed']})")
    replace_rows(wh, {"subgroup_metrics": metrics, "subgroup_gaps": gap_frame})
    notes.append(f"stored: subgroup_metrics ({len(metrics)} rows), subgroup_gaps ({len(gap_frame)} rows)")
    return AnalysisResult({}, _summary(gap_frame), notes)


def _draw(test: EvalImages, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """The image-level bootstrap's draw for one eval dataset (draw_images, as bootstrap_intervals)."""
    if replicates == 0:
        return np.ones((len(test.row_index), 1), dtype=np.int16)
    try:
        return draw_images(test, replicates, rng)
    except CrsbenchError as exc:
        raise CrsbenchError(f"{str(exc).split(' (use')[0]} (use --set replicates=0 for point estimates)") from None


def _metric_row(base: dict[str, Any], key: str, s: GroupScore) -> dict[str, Any]:
    return {
        **base,
        "key": key,
        "value": s.value,
        "n_images": s.n_images,
        "n_columns": s.n_columns,
        "status": "scored" if s.sufficient else "insufficient",
        **{m: float(s.scores[m][0]) for m in METRICS},
    }


def _gap_row(base: dict[str, Any], key: str, g: Gap) -> dict[str, Any]:
    return {
        **base,
        "key": key,
        "metric": g.metric,
        "n_groups": g.n_groups,
        "worst_group": g.worst_group,
        "worst": g.worst,
        "best": g.best,
        "gap": g.gap,
        "gap_lo": g.lo,
        "gap_hi": g.hi,
        "replicates": g.replicates,
    }


def _summary(gap_frame: pd.DataFrame) -> pd.DataFrame:
    """Seed means per (encoder, eval dataset, key, metric)."""
    if gap_frame.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    grouped = gap_frame.groupby(["encoder_id", "eval_dataset_id", "key", "metric"], sort=True)
    out = grouped.agg(
        n_runs=("run_id", "size"),
        worst_group=("worst_group", _most_often),
        worst=("worst", "mean"),
        gap=("gap", "mean"),
        gap_lo=("gap_lo", "mean"),
        gap_hi=("gap_hi", "mean"),
    ).reset_index()
    return out[SUMMARY_COLUMNS]


def _most_often(groups: pd.Series) -> str | None:
    """The group worst in most runs (ties: the first in sorted order); None when none was scored."""
    counts = groups.dropna().astype(str).value_counts()
    if counts.empty:
        return None
    return str(min(counts.index[counts == counts.max()]))


def worst_group_auroc(wh: Warehouse, key: str) -> pd.DataFrame:
    """(encoder_id, worst_auroc): per encoder, the mean over the datasets carrying `key` of the
    seed-mean worst-group AUROC on the clean test split, from the stored `subgroups` analysis."""
    frame = wh.sql(
        "select encoder_id, dataset_id, fn_exact_mean(worst) as worst from subgroup_gaps "
        "where key = ? and metric = 'auroc' and condition = 'clean' and worst is not null "
        "group by encoder_id, dataset_id order by encoder_id, dataset_id",  # the mean below sums in this order
        [key],
    )
    if frame.empty:
        raise CrsbenchError(
            f"no stored subgroup gaps for key {key!r}: run 'crsbench analyze subgroups --key {key}' first"
        )
    return frame.groupby("encoder_id", as_index=False)["worst"].mean().rename(columns={"worst": "worst_auroc"})


def with_worst_group(wh: Warehouse, board: pd.DataFrame, key: str | None) -> pd.DataFrame:
    """The leaderboard with column worst_auroc_<key> (NaN for encoders without it); unchanged if no key."""
    if key is None:
        return board
    worst = worst_group_auroc(wh, key).set_index("encoder_id")["worst_auroc"]
    return board.assign(**{f"worst_auroc_{key}": board["encoder_id"].map(worst).astype(float)})

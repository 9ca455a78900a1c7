"""Analysis `screen`: rank candidate encoders from cached features, no probe trained (METHODS.md §21).

Per dataset, encoder (every feature set whose clean condition is whole: complete, or made by
`crsbench extract --screen`) and extracted depth, every registered transferability estimator
(`probes.screening`: LogME, H-score, GBC, TransRate, N-LEEP, leave-one-out k-NN, and plugins) is
computed on the train split's standardised clean features and labels:

* scores: one row per (dataset, encoder, depth, estimator) with its rank among the encoders
  (1 + encoders with a strictly higher score); `ranked_by` marks the estimator the printed
  ranking follows and `keep` the keep-top-k the run was asked for (views screen_ranking and
  screen_trust read both);
* replicates: the full grid's answer under the image-level bootstrap (`replicates.py`), the
  intervals of screen_trust;
* summary: per dataset, each encoder's best depth by `rank_by` and its rank there.

A cell whose input an estimator cannot take (a class with one train example, constant or
non-finite features) gets one note naming encoder, dataset and depth, and no row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.agreement.inputs import FeatureSource, dataset_ids
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis, report_progress
from crsbench.analyses.screening import inputs, replicates
from crsbench.analyses.screening.columns import DOCS, REPLICATE_COLUMNS, SCORE_COLUMNS, SUMMARY_COLUMNS
from crsbench.core import CrsbenchError
from crsbench.features.store import key_depth
from crsbench.probes.screening.registry import estimator_names
from crsbench.probes.screening.score import score_cell
from crsbench.warehouse.connection import Warehouse

DEFAULT_RANK_BY = "knn_loo"  # plain k-NN led the largest comparison of estimators (arXiv 2503.18528)

PARAMS: dict[str, Param] = {
    "dataset": Param(None, "Dataset name (default every one): adds or replaces its rows only.", str, short="-d"),
    "encoders": Param(
        None,
        "Encoder to include (repeatable; default every one with screening features).",
        list[str],
        "--encoder",
        "-e",
    ),
    "rank_by": Param(DEFAULT_RANK_BY, "Estimator the ranking, best depth and keep-top-k follow."),
    "keep": Param(3, "Keep the pre-screen's top k encoders: the rest are named as dropped; at least 1."),
    "replicates": Param(200, "Image bootstrap replicates of the full grid's AUROC (the trust intervals); 0: none."),
    "seed": Param(0, "Random seed of the image bootstrap."),
}


def check_params(params: Mapping[str, Any]) -> tuple[str, int, int]:
    """(rank_by, keep, replicates), each checked, with a line naming the bad value."""
    names = estimator_names()
    rank_by = str(params["rank_by"])
    if rank_by not in names:
        raise CrsbenchError(f"--rank-by {rank_by!r} is not a registered estimator (registered: {', '.join(names)})")
    keep, reps = int(params["keep"]), int(params["replicates"])
    if keep < 1:
        raise CrsbenchError(f"--keep {keep}: keep at least 1 encoder")
    if reps < 0:
        raise CrsbenchError(f"--replicates {reps}: give 0 (no intervals) or more")
    return rank_by, keep, reps


def cell_rows(source: FeatureSource, labels: inputs.TrainLabels, depth_key: str) -> list[dict[str, Any]]:
    """Every estimator on one (encoder, dataset, depth); a CrsbenchError names the cell."""
    try:
        x = inputs.standardised_train(source, depth_key, labels.rows)
        scores = score_cell(x, labels.labels, labels.task, labels.n_outputs)
    except CrsbenchError as exc:
        raise CrsbenchError(
            f"encoder {source.key} on dataset {labels.dataset_id} at depth {key_depth(depth_key)}: {exc}; "
            "nothing is written for that cell"
        ) from exc
    base = {
        "dataset_id": labels.dataset_id,
        "encoder_id": source.key,
        "depth": float(key_depth(depth_key)),
        "n_train": len(labels.rows),
        "pretrained": source.pretrained,
    }
    return [{**base, "estimator": name, "score": float(value)} for name, value in scores.items()]


def dataset_scores(wh: Warehouse, dataset_id: str, encoders: list[str] | None, notes: list[str]) -> pd.DataFrame:
    """Every estimator's score on every cell of one dataset (cells that fail are noted and skipped)."""
    sources = inputs.screen_sources(wh, dataset_id, encoders)
    labels = inputs.train_labels(wh, dataset_id) if sources else None
    rows: list[dict[str, Any]] = []
    cells = [(source, depth_key) for source in sources for depth_key in source.depths]
    report_progress(f"pre-screen {dataset_id}", 0, len(cells))
    for done, (source, depth_key) in enumerate(cells, start=1):
        assert labels is not None
        try:
            rows.extend(cell_rows(source, labels, depth_key))
        except CrsbenchError as exc:
            notes.append(str(exc))
        report_progress(f"pre-screen {dataset_id}", done, len(cells))
    return pd.DataFrame(
        rows, columns=["dataset_id", "encoder_id", "depth", "n_train", "pretrained", "estimator", "score"]
    )


def ranked(scores: pd.DataFrame, rank_by: str, keep: int) -> pd.DataFrame:
    """Scores with `rank` (1 + encoders with a strictly higher score in the same dataset, depth and
    estimator), `ranked_by` and `keep`, in the declared column order."""
    out = scores.copy()
    out["rank"] = (
        out.groupby(["dataset_id", "depth", "estimator"])["score"].rank(method="min", ascending=False).astype("int64")
    )
    out["ranked_by"] = out["estimator"] == rank_by
    out["keep"] = keep
    return out[list(SCORE_COLUMNS)].sort_values(["dataset_id", "estimator", "depth", "rank", "encoder_id"])


def best_depths(scores: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, each encoder at its best depth by the ranked-by estimator (ties: the deeper),
    ranked among the encoders; kept = rank <= keep."""
    own = scores[scores["ranked_by"]].sort_values(["score", "depth"], ascending=False, kind="stable")
    best = own.drop_duplicates(["dataset_id", "encoder_id"]).copy()
    best["screen_rank"] = best.groupby("dataset_id")["score"].rank(method="min", ascending=False).astype("int64")
    best["kept"] = best["screen_rank"] <= best["keep"]
    best = best.rename(columns={"depth": "best_depth", "estimator": "rank_by"})
    return best[list(SUMMARY_COLUMNS)].sort_values(["dataset_id", "screen_rank", "encoder_id"]).reset_index(drop=True)


@register_analysis(
    "screen",
    columns=DOCS,
    section="§21",
    params=PARAMS,
    reads=("runs", "images"),
    outputs={"screen_scores": SCORE_COLUMNS, "screen_replicates": REPLICATE_COLUMNS, "summary": SUMMARY_COLUMNS},
)
def run_screen(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Pre-screen: transferability estimators per encoder, dataset and depth, from cached features alone."""
    rank_by, keep, reps = check_params(params)
    encoders = list(params["encoders"]) if params["encoders"] else None
    notes: list[str] = []
    frames, draws = [], []
    for dataset_id in dataset_ids(wh, params["dataset"]):
        scores = dataset_scores(wh, dataset_id, encoders, notes)
        if scores.empty:
            notes.append(f"{dataset_id}: no encoder has screening features; skipped")
            continue
        frames.append(scores)
        draws.append(replicates.grid_auroc(wh, dataset_id, sorted(scores["encoder_id"].unique()), reps, params, notes))
    scores = ranked(pd.concat(frames, ignore_index=True), rank_by, keep) if frames else _empty(SCORE_COLUMNS)
    reps_frame = pd.concat(draws, ignore_index=True) if draws else _empty(REPLICATE_COLUMNS)
    return AnalysisResult(
        tables={"screen_scores": scores, "screen_replicates": reps_frame[list(REPLICATE_COLUMNS)]},
        summary=best_depths(scores) if len(scores) else _empty(SUMMARY_COLUMNS),
        notes=notes,
    )


def _empty(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=np.float64 if c in ("score", "depth") else object) for c in columns})

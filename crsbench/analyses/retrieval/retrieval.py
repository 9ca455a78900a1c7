"""Analysis `retrieval`: similar-case retrieval from the stored embeddings (METHODS.md §24).

Per dataset, encoder (every complete feature set) and extracted depth, each test image is a query
against the clean train split as gallery, ranked by the exact float64 distance between
standardised features (`probes.retrieval`); precision@k, recall@k and mAP@R under every meaning of
relevance the task has, with image-bootstrap intervals over the queries. Every stored perturbed
condition of the test split is scored as well, its corrupted queries against the same clean
gallery: does retrieval survive acquisition changes?
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.agreement.inputs import FeatureSource, dataset_ids, feature_sources
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis, report_progress
from crsbench.analyses.retrieval import inputs
from crsbench.analyses.retrieval.columns import DOCS, SCORE_COLUMNS, SUMMARY_COLUMNS
from crsbench.analyses.uncertainty.resample import draw_images, eval_images
from crsbench.core import CLEAN, CrsbenchError, EncoderKey
from crsbench.features.store import key_depth
from crsbench.probes.retrieval.relevance import Relevance, relevances_for
from crsbench.warehouse.connection import Warehouse

PARAMS: dict[str, Param] = {
    "dataset": Param(None, "Dataset name (default every one): adds or replaces its rows only.", str, short="-d"),
    "encoders": Param(
        None, "Encoder to include (repeatable; default every one with complete features).", list[str], "--encoder", "-e"
    ),
    "cutoffs": Param(["1", "5", "10"], "Cut-off k of precision@k and recall@k (repeatable).", list[str], "--cutoff"),
    "replicates": Param(200, "Image bootstrap replicates of the queries (the intervals); 0: none."),
    "seed": Param(0, "Random seed of the image bootstrap."),
}


def check_params(params: Mapping[str, Any]) -> tuple[tuple[int, ...], int]:
    """(cut-offs, replicates), each checked, with a line naming the bad value."""
    ks = []
    for k in params["cutoffs"]:
        try:
            ks.append(int(k))
        except ValueError:
            raise CrsbenchError(f"--cutoff {k!r} is not a whole number") from None
    if not ks or min(ks) < 1:
        raise CrsbenchError(f"--cutoff {min(ks, default=0)}: give cut-offs of at least 1")
    reps = int(params["replicates"])
    if reps < 0:
        raise CrsbenchError(f"--replicates {reps}: give 0 (no intervals) or more")
    return tuple(sorted(set(ks))), reps


def summarised(values: np.ndarray, weights: np.ndarray) -> tuple[float, float | None, float | None, int]:
    """(mean over defined queries, 2.5th and 97.5th percentiles over the bootstrap replicates, queries)."""
    defined = ~np.isnan(values)
    w = weights[defined].astype(np.float64)
    totals = w.sum(axis=0)
    means = np.divide(values[defined] @ w, totals, out=np.full(w.shape[1], np.nan), where=totals > 0)
    if w.shape[1] < 2 or np.isnan(means[1:]).all():
        return float(means[0]), None, None, int(defined.sum())
    lo, hi = np.nanpercentile(means[1:], [2.5, 97.5])
    return float(means[0]), float(lo), float(hi), int(defined.sum())


def cell_rows(
    per_query: Mapping[str, Mapping[str, np.ndarray]], relevances: Sequence[Relevance], weights: np.ndarray
) -> list[dict[str, Any]]:
    """One row per (relevance, metric) of one (encoder, depth, condition)."""
    rows = []
    for rank, relevance in enumerate(relevances):
        for metric, values in per_query[relevance.name].items():
            if metric == "relevant":
                continue
            value, lo, hi, n = summarised(values, weights)
            rows.append(
                {
                    "relevance": relevance.name,
                    "primary_relevance": rank == 0,
                    "metric": metric,
                    "value": value,
                    "ci_low": lo,
                    "ci_high": hi,
                    "n_queries": n,
                }
            )
    return rows


def source_rows(
    source: FeatureSource, splits: inputs.RetrievalSplits, ks: tuple[int, ...], weights: np.ndarray
) -> list[dict[str, Any]]:
    """Every depth and stored condition of one encoder on one dataset."""
    from crsbench.probes.retrieval.score import query_metrics  # torch: loaded to rank, not with the registry

    relevances = relevances_for(splits.task)
    rows: list[dict[str, Any]] = []
    for depth_key in source.depths:
        gallery = inputs.gallery(source, depth_key, splits.gallery_rows)
        for condition in inputs.stored_conditions(source, depth_key):
            queries = inputs.queries(source, depth_key, condition, splits.query_rows, gallery)
            per_query = query_metrics(
                queries, gallery.features, splits.query_labels, splits.gallery_labels, relevances, ks
            )
            base = {"dataset_id": splits.dataset_id, "encoder_id": source.key, "depth": float(key_depth(depth_key)),
                    "condition": condition, "n_gallery": len(splits.gallery_rows), "pretrained": source.pretrained}  # fmt: skip
            rows.extend({**base, **r} for r in cell_rows(per_query, relevances, weights))
    return rows


def query_weights(wh: Warehouse, dataset_id: str, replicates: int, seed: int, notes: list[str]) -> np.ndarray:
    """(n_test, replicates + 1) image-bootstrap weights of the test images (column 0: every image once)."""
    test = eval_images(wh, dataset_id)
    try:
        return draw_images(test, replicates, np.random.default_rng(seed))
    except CrsbenchError as exc:
        notes.append(f"{dataset_id}: no retrieval intervals: {exc}")
        return np.ones((len(test.row_index), 1), dtype=np.int16)


def dataset_rows(wh: Warehouse, dataset_id: str, encoders: list[str] | None, ks: tuple[int, ...], params: Mapping[str, Any],
                 notes: list[str]) -> list[dict[str, Any]]:  # fmt: skip
    from crsbench.probes.retrieval.score import check_ks  # torch: loaded to rank, not with the registry

    sources = feature_sources(wh, dataset_id)
    names = sorted(sources) if not encoders else [str(EncoderKey.parse(e)) for e in encoders]
    chosen = [sources[n] for n in names if n in sources]
    notes.extend(f"{dataset_id}: encoder {n} has no complete features; skipped" for n in names if n not in sources)
    if not chosen:
        return []
    splits = inputs.retrieval_splits(wh, dataset_id)
    try:  # a cut-off the gallery cannot reach is the request's fault, not one encoder's: refuse it at once
        check_ks(ks, len(splits.gallery_rows))
    except CrsbenchError as exc:
        raise CrsbenchError(f"dataset {dataset_id}: {exc}") from exc
    weights = query_weights(wh, dataset_id, int(params["replicates"]), int(params["seed"]), notes)
    rows: list[dict[str, Any]] = []
    for done, source in enumerate(chosen, start=1):
        try:
            rows.extend(source_rows(source, splits, ks, weights))
        except CrsbenchError as exc:
            notes.append(f"{dataset_id}, encoder {source.key}: {exc}; nothing is written for it")
        report_progress(f"retrieval {dataset_id}", done, len(chosen))
    return rows


def summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and encoder: the best depth by clean mAP@R (primary relevance), the corrupted queries'
    mean there, the share retained and the encoder's rank."""
    own = scores[scores["primary_relevance"] & (scores["metric"] == "map@r")]
    clean = own[own["condition"] == CLEAN].sort_values(["value", "depth"], ascending=False, kind="stable")
    best = clean.drop_duplicates(["dataset_id", "encoder_id"])
    corrupted = (
        own[own["condition"] != CLEAN].groupby(["dataset_id", "encoder_id", "depth"], as_index=False)["value"].mean()
    )
    out = best.merge(corrupted, on=["dataset_id", "encoder_id", "depth"], how="left", suffixes=("", "_corrupted"))
    out = out.rename(columns={"value": "map_at_r", "value_corrupted": "map_at_r_corrupted"})
    out["retained"] = out["map_at_r_corrupted"] / out["map_at_r"]
    out["retrieval_rank"] = out.groupby("dataset_id")["map_at_r"].rank(method="min", ascending=False).astype("int64")
    return out[list(SUMMARY_COLUMNS)].sort_values(["dataset_id", "retrieval_rank", "encoder_id"]).reset_index(drop=True)


@register_analysis(
    "retrieval",
    columns=DOCS,
    section="§24",
    params=PARAMS,
    reads=("runs", "images"),
    outputs={"retrieval_scores": SCORE_COLUMNS, "summary": SUMMARY_COLUMNS},
)
def run_retrieval(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Similar-case retrieval: precision@k, recall@k and mAP@R of test queries against the train gallery."""
    ks, _ = check_params(params)
    encoders = list(params["encoders"]) if params["encoders"] else None
    notes: list[str] = []
    rows: list[dict[str, Any]] = []
    for dataset_id in dataset_ids(wh, params["dataset"]):
        found = dataset_rows(wh, dataset_id, encoders, ks, params, notes)
        if not found:
            notes.append(f"{dataset_id}: no encoder has complete features; skipped")
        rows.extend(found)
    scores = pd.DataFrame(rows, columns=list(SCORE_COLUMNS))
    return AnalysisResult(
        tables={"retrieval_scores": scores},
        summary=summary(scores) if len(scores) else pd.DataFrame(columns=list(SUMMARY_COLUMNS)),
        notes=notes,
    )

"""The declared output columns of analysis `retrieval` and what each holds (METHODS.md §24)."""

from __future__ import annotations

SCORE_COLUMNS = (
    "dataset_id",
    "encoder_id",
    "depth",
    "condition",
    "relevance",
    "primary_relevance",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n_queries",
    "n_gallery",
    "pretrained",
)
SUMMARY_COLUMNS = (
    "dataset_id",
    "encoder_id",
    "depth",
    "relevance",
    "map_at_r",
    "map_at_r_corrupted",
    "retained",
    "retrieval_rank",
)

DOCS = {
    "encoder_id": "Encoder key: the encoder id, or id@regime for an adapted variant.",
    "depth": "Relative depth of the features: 0.25, 0.5, 0.75 or 1.0.",
    "condition": "The queries' condition: clean, or a perturbation-severity (a corrupted query against the "
    "clean gallery).",
    "relevance": "What counts as a relevant gallery case (probes.retrieval.relevance registry): same_label "
    "(multiclass, ordinal), within_one (ordinal), any_shared or jaccard (multilabel).",
    "primary_relevance": "True for the task's first relevance (same_label, or any_shared for multilabel): the "
    "one the summary, the report's verdict and leaderboard --with-retrieval read.",
    "metric": "precision@k, recall@k (at least one relevant case among the first k; binary relevance only) or "
    "map@r (mAP@R; for jaccard divided by the ideal order's), k from --cutoff.",
    "value": "The metric's mean over the test queries that have at least one relevant gallery case.",
    "ci_low": "2.5th percentile of the metric over the image-bootstrap replicates of the test queries "
    "(stratified by class, grouped by patient); NULL when the split cannot be resampled or --replicates 0.",
    "ci_high": "97.5th percentile of the same replicates.",
    "n_queries": "Test images scored as queries: those with at least one relevant gallery case; count.",
    "n_gallery": "Train images in the gallery (clean condition); count.",
    "pretrained": "False marks features of a random-initialised stand-in, never a pretrained model's.",
    "summary.depth": "The depth with the highest clean mAP@R under the primary relevance (ties: the deeper).",
    "summary.relevance": "The task's primary relevance.",
    "map_at_r": "Clean mAP@R at that depth under the primary relevance.",
    "map_at_r_corrupted": "The mean over the stored perturbed conditions of mAP@R with corrupted queries "
    "against the clean gallery, same depth and relevance; NULL when no perturbed condition is stored.",
    "retained": "map_at_r_corrupted / map_at_r: the share of clean retrieval quality that survives the "
    "acquisition changes.",
    "retrieval_rank": "1 + encoders of the dataset with a strictly higher clean mAP@R in this summary.",
}

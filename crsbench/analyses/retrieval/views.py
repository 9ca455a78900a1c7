"""The public view over analysis `retrieval`'s scores (sql/views/350..351_*.sql are generated from this
and the analysis's registration: `crsbench.analyses.views`). docs/METHODS.md §24."""

from __future__ import annotations

from crsbench.analyses.views import declare_view

TYPES = {
    **dict.fromkeys(("dataset_id", "encoder_id", "condition", "relevance", "metric"), "VARCHAR"),
    **dict.fromkeys(("depth", "value", "ci_low", "ci_high"), "DOUBLE"),
    **dict.fromkeys(("n_queries", "n_gallery"), "BIGINT"),
    **dict.fromkeys(("primary_relevance", "pretrained"), "BOOLEAN"),
}

declare_view(
    "retrieval_scores",
    analysis="retrieval",
    numbers=(350, 351),
    doc="One row per (dataset, encoder, depth, query condition, relevance, metric): similar-case retrieval "
    "of the test images (queries) among the clean train images (gallery) by the encoder's stored embeddings, "
    "with its image-bootstrap interval. The stored output of `crsbench analyze retrieval` (empty until it "
    "runs). docs/METHODS.md §24.",
    types=TYPES,
)

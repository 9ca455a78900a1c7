"""The public views over analysis `screen`'s tables (sql/views/330..333_*.sql are generated from these
and the analysis's registration: `crsbench.analyses.views`). docs/METHODS.md §21."""

from __future__ import annotations

from crsbench.analyses.views import declare_view

TYPES = {
    **dict.fromkeys(("dataset_id", "encoder_id", "estimator"), "VARCHAR"),
    **dict.fromkeys(("depth", "score", "auroc"), "DOUBLE"),
    **dict.fromkeys(("rank", "keep", "n_train", "replicate"), "BIGINT"),
    **dict.fromkeys(("ranked_by", "pretrained"), "BOOLEAN"),
}

_STORED = (
    "The stored output of `crsbench screen` (analysis screen; empty until it runs), with the column names "
    "of the rest of the warehouse. docs/METHODS.md §21."
)

declare_view(
    "screen_scores",
    analysis="screen",
    numbers=(330, 332),
    doc="One row per (dataset, encoder, depth, transferability estimator): the estimator's score on the train "
    "split's clean features and labels, and the encoder's rank by it. " + _STORED,
    types=TYPES,
)
declare_view(
    "screen_replicates",
    analysis="screen",
    numbers=(331, 333),
    doc="One row per (dataset, encoder, depth, bootstrap replicate): the full grid's full-label logreg AUROC on "
    "the clean test split under one image-level draw (replicate 0: every image once). " + _STORED,
    types=TYPES,
)

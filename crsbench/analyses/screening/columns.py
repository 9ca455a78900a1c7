"""The declared output columns of analysis `screen` and what each holds (METHODS.md §21)."""

from __future__ import annotations

SCORE_COLUMNS = (
    "dataset_id",
    "encoder_id",
    "depth",
    "estimator",
    "score",
    "rank",
    "ranked_by",
    "keep",
    "n_train",
    "pretrained",
)
REPLICATE_COLUMNS = ("dataset_id", "encoder_id", "depth", "replicate", "auroc")
SUMMARY_COLUMNS = ("dataset_id", "encoder_id", "best_depth", "rank_by", "score", "screen_rank", "kept", "keep")

DOCS = {
    "encoder_id": "Encoder key: the encoder id, or id@regime for an adapted variant.",
    "depth": "Relative depth of the features scored: 0.25, 0.5, 0.75 or 1.0; clean condition, train split.",
    "estimator": "Transferability estimator (probes.screening registry): logme, hscore, gbc, transrate, nleep, "
    "knn_loo or a plugin.",
    "score": "The estimator's score on the train split's standardised clean features and labels; higher is "
    "better, comparable across encoders of one dataset and depth only.",
    "rank": "1 + encoders with a strictly higher score on the same dataset, depth and estimator.",
    "ranked_by": "True for the estimator the run ranked by (--rank-by): the one views screen_ranking and "
    "screen_trust follow.",
    "keep": "The keep-top-k the run was asked for (--keep): the pre-screen keeps encoders of rank <= keep.",
    "n_train": "Train images scored; count.",
    "pretrained": "False marks features of a random-initialised stand-in, never a pretrained model's.",
    "replicate": "Bootstrap replicate: 0 is every test image once (the grid's own AUROC), 1.. one stratified "
    "draw of test images by patient group each, the same draw for every encoder and depth of the dataset.",
    "auroc": "The full grid's answer under the replicate's draw: macro AUROC of the logreg probe fitted on all "
    "labels, clean test split, mean over seeds, rescored from the stored predictions (no refit).",
    "best_depth": "The depth at which the ranked-by estimator scores this encoder highest (ties: the deeper).",
    "rank_by": "The estimator the ranking follows (--rank-by).",
    "summary.score": "The ranked-by estimator's score at the best depth.",
    "screen_rank": "The pre-screen's rank of the encoder on the dataset: 1 + encoders whose best-depth score is "
    "strictly higher.",
    "kept": "True when screen_rank <= keep: the pre-screen would keep the encoder for the full grid.",
}

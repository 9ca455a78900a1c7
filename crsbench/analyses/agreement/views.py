"""The public views over analysis `agreement`'s tables (sql/views/270..275_*.sql are generated from these
and the analysis's registration: `crsbench.analyses.views`). docs/METHODS.md §17."""

from __future__ import annotations

from crsbench.analyses.views import declare_view

# Every column of the three parts, with the type the views fix it to.
TYPES = {
    **dict.fromkeys(("dataset_id", "encoder_a", "encoder_b", "encoder_id", "measure", "field"), "VARCHAR"),
    **dict.fromkeys(("depth", "estimate", "lo", "hi", "chance"), "DOUBLE"),
    **dict.fromkeys(("auroc_b", "auroc_mapped", "retention", "ece_b", "ece_mapped"), "DOUBLE"),
    **dict.fromkeys(("k", "n_images", "seed", "m_images", "n_test"), "BIGINT"),
}


def _stored(view: str) -> str:
    return (
        f"The stored output of `crsbench analyze agreement` (table analysis_agreement_{view}; empty until the "
        "analysis runs), with the column names of the rest of the warehouse (dataset_id for the dataset). "
        "docs/METHODS.md §17."
    )


declare_view(
    "encoder_agreement",
    analysis="agreement",
    numbers=(270, 273),
    doc="One row per (dataset, unordered encoder pair, depth, measure): mutual k-NN overlap of the two encoders' "
    "neighbour lists with its 95 % bootstrap interval over images and chance level k / (n - 1), or linear CKA. "
    + _stored("encoder_agreement"),
    types=TYPES,
)
declare_view(
    "neighbour_composition",
    analysis="agreement",
    numbers=(271, 274),
    doc="One row per (dataset, depth, encoder, field): the mean share of an image's k nearest neighbours with "
    "the same label, the same patient or lesion group, or the same value of a metadata key (view, site, sex, "
    "...; images without a value left out), with its 95 % bootstrap interval and chance level. "
    + _stored("neighbour_composition"),
    types=TYPES,
)
declare_view(
    "classifier_transfer",
    analysis="agreement",
    numbers=(272, 275),
    doc="One row per (labelled dataset, ordered encoder pair, depth, seed): AUROC retention and ECE of "
    "encoder_b's stored full-label logreg probe applied to encoder_a's test features mapped into encoder_b's "
    "space by a ridge map fitted on unlabelled training images. " + _stored("classifier_transfer"),
    types=TYPES,
)

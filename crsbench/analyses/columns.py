"""What each column of an analysis output table holds: the text `store_result` writes as its
COMMENT ON COLUMN, so `crsbench describe analysis_<name>_<part>` explains every value.

A column name means one thing in one analysis but not across them: `n` is a count of encoders in
one table and of answers in another, `crs` a point estimate in one part and a replicate's score
in the next. So each analysis declares its descriptions where it is registered
(`register_analysis(..., columns={...}, section="§11")`), keyed by column or by 'part.column' where
parts differ. `GENERIC` holds only names that mean the same everywhere, the fallback for every
analysis; one without a section (a plugin) gets no METHODS.md reference, since its sections
describe the built-in ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

GENERIC: Mapping[str, str] = {
    "encoder_id": "Encoder id (registry name).",
    "dataset_id": "Dataset id (the name given at ingest); for probe results, the dataset the probe was trained on.",
    "eval_dataset_id": "Dataset evaluated: the probe's training dataset itself, or a shift target (condition shift).",
    "condition": "Evaluation condition: clean, <perturbation>-s<severity 1..3>, calib or shift (as runs.condition).",
    "depth": "Relative encoder depth of the features: 0.25, 0.5, 0.75 or 1.0 (the last block).",
    "label_fraction": "Fraction of the training split the probe was fitted on: 0.01, 0.05, 0.10, 0.25 or 1.0.",
    "seed": "Seed of the label-fraction subset and of a seeded probe: 0..4.",
    "fit_id": "The probe fit (runs.fit_id).",
    "row_index": "Row of the image in its dataset's image table (images.row_index).",
    "image_id": "Stable image id within its dataset (images.image_id).",
    "n_seeds": "Number of distinct seeds averaged; count (5 in the protocol).",
    "kendall_tau": "Kendall tau-b between the two rankings compared, ties corrected (as scipy.stats.kendalltau); "
    "[-1, 1], 1 = identical order.",
    "spearman_rho": "Spearman rho between the two rankings compared (Pearson correlation of the average ranks); "
    "[-1, 1], 1 = identical order.",
    "top3_overlap": "|top 3 of one ranking and top 3 of the other| / min(3, n), ties at the cut broken by encoder_id; "
    "[0, 1], 1 = same top 3.",
}


def column_doc(
    part: str,
    column: str,
    declared: Mapping[str, str] | None = None,
    section: str | None = None,
) -> str | None:
    """The COMMENT of column `column` of an analysis's table of part `part`, or None if undescribed.

    `declared` and `section` are what the analysis gave `register_analysis` (`columns=`,
    `section=`). The most specific entry wins: this part's, then the analysis's, then `GENERIC`.
    """
    own = declared or {}
    text = own.get(f"{part}.{column}") or own.get(column) or GENERIC.get(column)
    if text is None:
        return None
    return f"{text} docs/METHODS.md {section}." if section else text


def in_parts(parts: Iterable[str], docs: Mapping[str, str]) -> dict[str, str]:
    """The same descriptions keyed 'part.column' for each of `parts`."""
    return {f"{part}.{column}": text for part in parts for column, text in docs.items()}


def rank_agreement_docs(ranking: str, reference: str) -> dict[str, str]:
    """kendall_tau / spearman_rho / top3_overlap (fn_rank_agreement) said of `ranking` against `reference`."""
    return {
        "kendall_tau": f"Kendall tau-b between {ranking} and {reference}, ties corrected; [-1, 1], 1 = same order.",
        "spearman_rho": f"Spearman rho between {ranking} and {reference}; [-1, 1], 1 = same order.",
        "top3_overlap": f"|top 3 of {ranking} and top 3 of {reference}| / min(3, n), ties at the cut broken by "
        "encoder_id; [0, 1], 1 = same top 3.",
    }

"""What each column of an analysis output table holds: the text `store_result` writes as its
COMMENT ON COLUMN, so `crsbench describe analysis_<name>_<part>` explains every value.

A column name means one thing in one analysis but not across them: `n` is a count of encoders in
one table and of answers in another, `crs` a point estimate in one part and a replicate's score
in the next. So descriptions are kept per analysis, keyed by column or by 'part.column' where parts differ.
A new analysis declares them next to its function (`register_analysis(..., columns={...},
section="§11")`), so adding one is one module; those of the earlier built-in analyses are kept
here (`columns_validation.py`, §10-§11, and `columns_encoders.py`, §12), and an entry here
still applies (the analysis's own declaration wins). `GENERIC` holds only names that mean the
same everywhere, the fallback for every analysis; one without a section (a plugin) gets no
METHODS.md reference, since its sections describe the built-in ones.
"""

from __future__ import annotations

from collections.abc import Mapping

from crsbench.analyses.agreement.columns import AGREEMENT_COLUMNS
from crsbench.analyses.experiments.columns import ENCODER_COLUMNS
from crsbench.analyses.subgroups.columns import SUBGROUP_COLUMNS
from crsbench.analyses.validity.columns import VALIDATION_COLUMNS

# Analysis -> the docs/METHODS.md section that defines its outputs.
SECTIONS: Mapping[str, str] = {
    "bootstrap": "§10",
    "construct": "§9.3, §11",
    "estimators": "§11",
    "external": "§11",
    "insertion": "§11",
    "stability": "§11",
    "weights": "§11",
    **{name: "§12" for name in ENCODER_COLUMNS},
    **{name: "§16" for name in SUBGROUP_COLUMNS},
    **{name: "§17" for name in AGREEMENT_COLUMNS},
}

# Analysis -> {column or 'part.column': one-sentence description}.
BY_ANALYSIS: Mapping[str, Mapping[str, str]] = {
    **VALIDATION_COLUMNS,
    **ENCODER_COLUMNS,
    **SUBGROUP_COLUMNS,
    **AGREEMENT_COLUMNS,
}

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
    analysis: str,
    part: str,
    column: str,
    declared: Mapping[str, str] | None = None,
    section: str | None = None,
) -> str | None:
    """The COMMENT of column `column` of table analysis_<analysis>_<part>, or None if undescribed.

    `declared` and `section` are what the analysis gave `register_analysis` (`columns=`,
    `section=`); they come before the central entries here. The most specific entry wins: this
    part's, then the analysis's, then `GENERIC`.
    """
    own = {**BY_ANALYSIS.get(analysis, {}), **(declared or {})}
    text = own.get(f"{part}.{column}") or own.get(column) or GENERIC.get(column)
    if text is None:
        return None
    section = section or SECTIONS.get(analysis)
    return f"{text} docs/METHODS.md {section}." if section else text

"""Column descriptions of the encoder analyses' tables, E1-E6 (METHODS.md §12); see `columns.py`.
Keys are a column name, or 'part.column' where one part differs.

Unless a description says otherwise, a value is a seed mean of the primary probe (logreg) on
frozen features at full depth (1.0) and full labels, on the dataset's own test split.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

_SCOPE = "Encoder's pretraining scope: general, broad_medical or specialty."
_CELL_AUROC = "seed-mean clean full-label AUROC of the logreg probe at depth 1.0 on the dataset's own test split"


def _in_parts(parts: Iterable[str], docs: Mapping[str, str]) -> dict[str, str]:
    """The same descriptions keyed 'part.column' for each part."""
    return {f"{part}.{column}": text for part in parts for column, text in docs.items()}


E1 = {
    "scope": _SCOPE,
    "domain": "Encoder's matched clinical domain: derm, eye or rad (encoders without one are left out).",
    "auroc": f"Cell AUROC = the discrimination axis: {_CELL_AUROC}; [0, 1], higher is better.",
    "crs": "Per-dataset CRS of the cell from crs_cell of the panel (crs_cohort_cell in cohort mode), frozen regime; "
    "[0, 1], higher is better.",
    "dataset_domain": "Clinical domain of the dataset: derm, eye, rad or none.",
    "in_domain": "True when the dataset's domain is the encoder's (an in-domain cell).",
    "panel": "Reference panel whose crs_cell gives the cell CRS ('cohort' = cohort mode, crs_cohort_cell, when no "
    "panel is frozen).",
    "in_datasets": "In-domain datasets (domain equal to the encoder's), comma-separated and sorted.",
    "n_out": "Number of the encoder's out-of-domain cells; count.",
    "auroc_in": "AUROC_in: mean cell AUROC over the in-domain datasets; [0, 1]; NULL without one.",
    "auroc_out": "AUROC_out: mean cell AUROC over the out-of-domain datasets; [0, 1]; NULL without one.",
    "crs_in": "CRS_in: mean per-dataset CRS over the in-domain cells; [0, 1].",
    "crs_out": "CRS_out: mean per-dataset CRS over the out-of-domain cells; [0, 1].",
    "dspec": "Specialisation Dspec = auroc_in - auroc_out; AUROC points, positive = better in its own domain.",
    "dood": "Dood = crs_in - crs_out; CRS points, positive = more reliable in its own domain.",
    "source_id": "Shift pair source: the dataset the probe was trained on.",
    "target_id": "Shift pair target: evaluated with condition shift by the source-trained probe (same fits).",
    "source_auroc": "Seed-mean clean AUROC on the source's own test split (logreg, depth 1.0, full labels); [0, 1].",
    "target_auroc": "Seed-mean AUROC on the target (condition shift, the same fits); [0, 1].",
    "gap": "source_auroc - target_auroc; AUROC points, positive = lost under shift.",
    "relative_gap": "(source_auroc - target_auroc) / source_auroc; fraction of the source AUROC lost, lower is better.",
    "retention": "target_auroc / source_auroc; ratio, 1 = nothing lost, higher is better.",
    "shift_scope.scope": "Scope group: general, broad_medical, specialty, or medical (broad_medical and specialty "
    "together).",
    "n_encoders": "Encoders of the group with this shift pair; count.",
    "shift_scope.source_auroc": "Mean source_auroc over the group's encoders; [0, 1].",
    "shift_scope.target_auroc": "Mean target_auroc over the group's encoders; [0, 1].",
    "shift_scope.relative_gap": "Mean relative_gap over the group's encoders; fraction, lower is better.",
    "metric": "Per-encoder quantity compared (a column of analysis_e1_shift): target_auroc or relative_gap.",
    "group_a": "First group of the comparison: general or broad_medical.",
    "group_b": "Second group: broad_medical, specialty, or medical (broad_medical and specialty together).",
    "n_a": "Encoders of group_a with a value; count.",
    "n_b": "Encoders of group_b with a value; count.",
    "mean_a": "Mean of metric over group_a's encoders.",
    "mean_b": "Mean of metric over group_b's encoders.",
    "t": "Welch t statistic of group_a against group_b (scipy.stats.ttest_ind, unequal variances); NaN when a group "
    "has fewer than 2 encoders.",
    "p_value": "Two-sided Welch t-test p-value; [0, 1]; NaN when a group has fewer than 2 encoders.",
}

_E2_SCORES = {
    "ece": (
        "ECE",
        "15 equal-width bins, top-label (mean per-label binary ECE for multilabel); [0, 1], lower is better",
    ),
    "brier": ("Brier score", "[0, 2] multiclass, [0, 1] multilabel; lower is better"),
    "auroc": ("macro AUROC", "[0, 1], higher is better"),
}
_E2_WHEN = {"before": "before recalibration", "after": "after recalibration"}
_E2_FITS = {
    f"{s}_{w}": f"{name} of the fit's test predictions {when}; {unit}."
    for s, (name, unit) in _E2_SCORES.items()
    for w, when in _E2_WHEN.items()
}
_E2_SEED_MEANS = {
    f"{s}_{w}": f"Seed mean of the {name} of the test predictions {when}; {unit}."
    for s, (name, unit) in _E2_SCORES.items()
    for w, when in _E2_WHEN.items()
}
_E2_CELL_MEANS = {  # the summary averages ECE only; Brier and AUROC appear as changes
    f"ece_{w}": f"Mean over the cells of the seed-mean {_E2_SCORES['ece'][0]} {when}; {_E2_SCORES['ece'][1]}."
    for w, when in _E2_WHEN.items()
}
E2 = {
    "fit_id": "The recalibrated probe fit (runs.fit_id): logreg, frozen, depth 1.0, full labels, one seed.",
    "condition": "Condition of the test predictions: clean, <perturbation>-s<severity 1..3> or shift.",
    "method": "Recalibration map fitted on the fit's calib predictions: temperature, vector, isotonic or dirichlet.",
    "reliability.method": "Recalibration map (temperature, vector, isotonic, dirichlet), or uncalibrated for the "
    "predictions before recalibration.",
    "kind": "Condition kind: clean, corruption (one of the perturbations) or shift.",
    **_E2_SEED_MEANS,
    **_in_parts(["fits"], _E2_FITS),
    **_in_parts(["summary"], _E2_CELL_MEANS),
    "fits.top_label_changed": "Share of test images whose argmax class the map changes; [0, 1]; NaN for multilabel.",
    "top_label_changed": "Seed mean of the share of test images whose argmax class the map changes; [0, 1]; NaN for "
    "multilabel.",
    "n_seeds": "Seeds (fits) averaged in the cell; count.",
    "ece_reduction": "ece_before - ece_after (seed means); ECE points, positive = recalibration helped.",
    "relative_ece_reduction": "ece_reduction / ece_before; fraction of the ECE removed, negative = worse.",
    "brier_change": "Change of the Brier score (mean squared error of the predicted probabilities) that "
    "recalibration brings: brier_after - brier_before, seed means; negative = recalibration helped.",
    "auroc_change": "auroc_after - auroc_before (seed means); AUROC points, 0 = ranking of the images unchanged.",
    "summary.relative_ece_reduction": "Mean relative_ece_reduction over the cells; fraction of the ECE removed.",
    "summary.brier_change": "Mean over the cells of the Brier-score change brier_after - brier_before (mean "
    "squared error of the probabilities); negative = recalibration helped.",
    "summary.auroc_change": "Mean auroc_change over the cells; AUROC points.",
    "n_cells": "Cells (encoder, dataset, eval dataset, condition) of this method and kind; count.",
    "max_abs_auroc_change": "Largest |auroc_change| over the cells; AUROC points.",
    "reliability.condition": "Condition diagrammed: clean or shift.",
    "bin": "Confidence bin 0..14: bin i holds confidences in [i/15, (i+1)/15), the last also 1.0.",
    "confidence": "Mean confidence in the bin (max p; p(label = 1) pooled over labels for multilabel), sums over "
    "seeds divided by count; [0, 1].",
    "accuracy": "Observed frequency in the bin: share correct (argmax = label), or share positive for multilabel; "
    "[0, 1], equal to confidence when calibrated.",
    "count": "Predictions in the bin summed over seeds (image x label pairs for multilabel); count; empty bins are "
    "left out.",
}

_DEPTH = "ties go to the deeper layer"
E3 = {
    "depth": "Relative encoder depth of the features: 0.25, 0.5, 0.75 or 1.0 (the last block).",
    "auroc": "Seed-mean clean full-label AUROC at this depth (logreg, frozen); [0, 1], higher is better.",
    "ece": "Seed-mean clean full-label ECE at this depth (logreg, frozen); [0, 1], lower is better.",
    "n_seeds": "Seeds averaged; count.",
    "n_depths": "Depths with an AUROC in the sweep; count (4 with the full grid).",
    "best_depth": f"Depth with the highest seed-mean AUROC; {_DEPTH}.",
    "best_auroc": "Seed-mean AUROC at best_depth; [0, 1].",
    "final_auroc": "Seed-mean AUROC at depth 1.0 (the final block); [0, 1].",
    "auroc_gain": "best_auroc - final_auroc; AUROC points, > 0 only when an intermediate depth wins.",
    "intermediate_wins": "True when an intermediate depth is strictly better than the final block (best_depth < 1).",
    "best_ece_depth": f"Depth with the lowest seed-mean ECE; {_DEPTH}.",
    "best_ece": "Seed-mean ECE at best_ece_depth; [0, 1], lower is better.",
    "final_ece": "Seed-mean ECE at depth 1.0 (the final block); [0, 1], lower is better.",
}

_E4_EFFECTS = {
    "auroc_drop": "AUROC drop auroc_clean - auroc; AUROC points, positive = lost under the condition",
    "ece_rise": "ECE rise ece - ece_clean; ECE points, positive = worse calibrated",
    "confidence_shift": "confidence shift: mean confidence under the condition minus clean; positive = more confident",
    "overconfidence": "overconfidence: mean confidence minus accuracy under the condition; positive = overconfident",
}
_E4_BY_CONDITION = {e: f"Mean over the cells of the {text}." for e, text in _E4_EFFECTS.items()}
E4 = {
    "condition": "Non-clean condition: <perturbation>-s<severity 1..3>, or shift (the shift target).",
    "kind": "corruption (a perturbation), or shift (listed, left out of the correlations).",
    "n_seeds": "Seeds averaged under this condition; count.",
    "auroc_clean": "Seed-mean clean AUROC of the cell; [0, 1].",
    "auroc": "Seed-mean AUROC under the condition; [0, 1].",
    "ece_clean": "Seed-mean clean ECE of the cell; [0, 1], lower is better.",
    "ece": "Seed-mean ECE under the condition; [0, 1], lower is better.",
    **{e: text[0].upper() + text[1:] + " (seed means)." for e, text in _E4_EFFECTS.items()},
    "overconfidence_clean": "Mean confidence minus accuracy on the clean test split (seed means); positive = "
    "overconfident.",
    **{
        f"mean_{e}": f"Mean over the cell's corruption conditions (shift excluded) of the {t}."
        for e, t in _E4_EFFECTS.items()
    },
    "max_ece_rise": "Largest ECE rise over the cell's corruption conditions; ECE points.",
    **_in_parts(["by_condition", "summary"], _E4_BY_CONDITION),
    "n_cells": "Cells (encoder x dataset) with this condition; count.",
    "level": "'cells' (each cell's mean drop and rise over its corruptions) or 'cell_conditions' (every cell x "
    "corruption row).",
    "x": "First variable correlated: auroc_drop.",
    "y": "Second variable correlated: ece_rise.",
    "n": "Pairs with both values; count.",
    "pearson_r": "Pearson r between AUROC drop and ECE rise; [-1, 1]; NaN with fewer than 3 pairs or a constant "
    "variable.",
    "p_value": "Two-sided p-value of pearson_r (scipy.stats.pearsonr); [0, 1].",
}

E5 = {
    "model_id": "Generative vision-language model that answered: a local folder or a cached Hugging Face hub id.",
    "dataset_id": "Dataset whose test images the model was asked about.",
    "style": "Prompt style: simple, multiple_choice, chain_of_thought, refined or few_shot.",
    "prompt": "The question sent with the image (few-shot examples go before it as separate turns).",
    "answer": "The model's answer text (greedy decoding).",
    "option_probs": "Softmax of the first generated token's logits over the option letters (multiple_choice); "
    "NULL for the other styles.",
    "parsed_idx": "Label index the parser read from the answer; NULL when unparsed.",
    "parsed_label": "Label name of parsed_idx, or 'unparsed'.",
    "correct": "True when the parsed label is the image's class (multilabel: one of its positive labels); an "
    "unparsed answer is false.",
    "n": "Answers of this model, dataset and style; count.",
    "n_parsed": "Answers the parser mapped to a label; count.",
    "coverage": "n_parsed / n; [0, 1].",
    "accuracy": "Share of answers correct, an unparsed one counting as wrong; [0, 1], higher is better.",
    "accuracy_parsed": "Share correct among the parsed answers; [0, 1]; NaN when none parsed.",
    "macro_auroc": "Macro one-vs-rest AUROC of option_probs (multiple_choice only); [0, 1]; NaN otherwise or when a "
    "class is absent.",
    "probe_encoder": "Encoder whose frozen probe has the best seed-mean clean full-label AUROC on this dataset.",
    "probe_auroc": "That probe's seed-mean clean AUROC (logreg, depth 1.0, full labels); [0, 1].",
    "probe_accuracy": "That probe's seed-mean clean accuracy (argmax; multilabel: per label at 0.5); [0, 1].",
}

_FRACTION = "Seed-mean clean AUROC (logreg, depth 1.0) at {} of the labels; [0, 1]; NULL when not run."
E6 = {
    "label_fraction": "Fraction of the training split the probe was fitted on: 0.01, 0.05, 0.10, 0.25 or 1.0.",
    "auroc": "Seed-mean clean AUROC at this label fraction (logreg, depth 1.0); [0, 1], higher is better.",
    "n_seeds": "Seeds averaged; count.",
    "auroc_1pct": _FRACTION.format("1 %"),
    "auroc_10pct": _FRACTION.format("10 %"),
    "auroc_full": _FRACTION.format("100 %"),
    "reference_id": "Reference encoder: the reference param, by default ViT-B/16 (else the first probed id "
    "containing 'vit').",
    "reference_auroc_full": "The reference encoder's full-label AUROC on this dataset; [0, 1].",
    "crossover_fraction": "Smallest label fraction at which the encoder's AUROC reaches (>=) reference_auroc_full; "
    "NULL if it never does.",
}

ENCODER_COLUMNS: dict[str, dict[str, str]] = {"e1": E1, "e2": E2, "e3": E3, "e4": E4, "e5": E5, "e6": E6}

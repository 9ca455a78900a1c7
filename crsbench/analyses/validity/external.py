"""External validity (METHODS.md §11): does the CRS predict what it was not computed from?

Leave one dataset out (`lodo`): for each dataset h, the members' aggregate axes over their other
datasets (`fn_axes_aggregate`), anchors over the members (`fn_anchors`) and the CRS
(`fn_crs_scores`), grp = h. Two predictors, the LODO CRS and the LODO aggregate AUROC, each against
two rankings of the held-out dataset: its AUROC (the discrimination axis) and its per-dataset
CRS (anchors over the members observed on h). Reported: Spearman rho, Kendall tau-b, Top-3
overlap (`fn_rank_agreement`) and whether the predictor's top encoder is among the held-out
ranking's top ones (ties count as recovered).

Shift (`shift`): for each shift pair (source -> target) the target AUROC (condition 'shift',
the source-trained probe, no retraining) is the ranking to predict; predictors: the aggregate CRS
with corruption-only robustness (no shift term, so the target never enters it), the same CRS on
the source dataset alone, and the source AUROC.
Population: the panel members with both numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from crsbench.analyses.columns import rank_agreement_docs
from crsbench.analyses.registry import AnalysisResult, panel_param, register_analysis
from crsbench.analyses.validity.criterion import GLOBAL, agreement, resolve_population
from crsbench.analyses.validity.estimators import VARIANTS, score_cells, variant_cells
from crsbench.core import FROZEN, PRIMARY_PROBE
from crsbench.warehouse.connection import Warehouse

DEFAULT_VARIANT = next(v for v in VARIANTS if v.name == "default")
NO_SHIFT_VARIANT = next(v for v in VARIANTS if v.name == "robustness_corruption_only")
RESULT_COLUMNS = [
    "n",
    "spearman_rho",
    "kendall_tau",
    "top3_overlap",
    "winner_recovered",
    "predicted_winner",
    "actual_winner",
]

_SHIFT_SQL = """
    select encoder_id, dataset_id as source, eval_dataset_id as target, auroc_mean as target_auroc
    from metrics_seed
    where condition = 'shift' and eval_dataset_id <> dataset_id and probe = ? and depth = 1.0
      and regime = ? and label_fraction = 1.0 and auroc_mean is not null
      and list_contains(?, encoder_id)
    order by source, target, encoder_id
"""


def compare(wh: Warehouse, pairs: pd.DataFrame) -> pd.DataFrame:
    """Per grp: rank agreement of predictor (crs column) and outcome (auroc column), and whether
    the predictor's winner (ties broken by encoder id) is among the outcome's best."""
    pairs = pairs.dropna(subset=["crs", "auroc"])
    ranks = agreement(wh, pairs).set_index("grp")
    rows = []
    for grp, group in pairs.groupby("grp", sort=True):
        predicted = group.sort_values(["crs", "encoder_id"], ascending=[False, True])["encoder_id"].iloc[0]
        best = group.loc[group["auroc"] == group["auroc"].max(), "encoder_id"]
        rows.append(
            {
                "grp": grp,
                "n": int(ranks.loc[grp, "n"]),
                "spearman_rho": ranks.loc[grp, "spearman_rho"],
                "kendall_tau": ranks.loc[grp, "kendall_tau"],
                "top3_overlap": ranks.loc[grp, "top3_overlap"],
                "winner_recovered": bool(predicted in set(best)),
                "predicted_winner": predicted,
                "actual_winner": ",".join(sorted(best)),
            }
        )
    return pd.DataFrame(rows, columns=["grp", *RESULT_COLUMNS])


def _pairs(predictor: pd.Series, outcome: pd.Series, grp: str) -> pd.DataFrame:
    frame = pd.DataFrame({"crs": predictor, "auroc": outcome}).rename_axis("encoder_id").reset_index()
    return frame.assign(grp=grp)


def leave_one_dataset_out(wh: Warehouse, members: tuple[str, ...]) -> pd.DataFrame:
    cells = variant_cells(wh, members, [DEFAULT_VARIANT])
    cells = cells[cells["complete"]]
    datasets = sorted(cells["dataset_id"].unique())
    if len(datasets) < 2:
        return pd.DataFrame(columns=["held_out", "predictor", "outcome", *RESULT_COLUMNS])
    lodo = pd.concat([cells[cells["dataset_id"] != h].assign(grp=h) for h in datasets], ignore_index=True)
    predicted = score_cells(wh, lodo, per_dataset=False).set_index(["grp", "encoder_id"])
    held = score_cells(wh, cells).set_index(["scope", "encoder_id"])
    frames, meta = [], []
    for h in datasets:
        pred = predicted.loc[h]
        outcome = held.loc[h]
        for p_name, p_col in (("crs", "crs"), ("auroc", "discrimination")):
            for o_name, o_col in (("auroc", "discrimination"), ("crs", "crs")):
                grp = f"{h}|{p_name}|{o_name}"
                frames.append(_pairs(pred[p_col], outcome[o_col], grp))
                meta.append({"grp": grp, "held_out": h, "predictor": p_name, "outcome": o_name})
    result = pd.DataFrame(meta).merge(compare(wh, pd.concat(frames, ignore_index=True)), on="grp")
    return result.drop(columns="grp")


def shift_validity(wh: Warehouse, members: tuple[str, ...]) -> pd.DataFrame:
    shift = wh.sql(_SHIFT_SQL, [PRIMARY_PROBE, FROZEN, list(members)])
    if shift.empty:
        return pd.DataFrame(columns=["source", "target", "predictor", *RESULT_COLUMNS])
    cells = variant_cells(wh, members, [NO_SHIFT_VARIANT])
    scores = score_cells(wh, cells).set_index(["scope", "encoder_id"])
    frames, meta = [], []
    for (source, target), group in shift.groupby(["source", "target"], sort=True):
        outcome = group.set_index("encoder_id")["target_auroc"]
        predictors = {
            "crs_no_shift": scores.loc[GLOBAL, "crs"],
            "crs_no_shift_source": scores.loc[source, "crs"]
            if source in scores.index.levels[0]
            else pd.Series(dtype=float),
            "auroc_source": scores.loc[source, "discrimination"]
            if source in scores.index.levels[0]
            else pd.Series(dtype=float),
        }
        for name, values in predictors.items():
            grp = f"{source}|{target}|{name}"
            frames.append(_pairs(values.reindex(outcome.index), outcome, grp))
            meta.append({"grp": grp, "source": source, "target": target, "predictor": name})
    result = pd.DataFrame(meta).merge(compare(wh, pd.concat(frames, ignore_index=True)), on="grp")
    return result.drop(columns="grp")


_EXTERNAL_RESULT = {
    "n": "Members with both a predictor and an outcome value; count.",
    **rank_agreement_docs("the predictor ranking", "the outcome ranking"),
    "winner_recovered": "True when the predictor's top encoder (ties broken by encoder_id) is among the best by the "
    "outcome (ties count as recovered).",
    "predicted_winner": "Encoder ranked first by the predictor (ties broken by encoder_id).",
    "actual_winner": "Encoder(s) with the best outcome value, comma-separated when tied.",
}


DOCS = {
    **_EXTERNAL_RESULT,
    "held_out": "Dataset left out: predictors use the members' other datasets, the outcome is this dataset's ranking.",
    "lodo.predictor": "Predictor ranking: crs (the members' CRS over their other datasets, anchors over the members) "
    "or auroc (their aggregate AUROC over those datasets).",
    "lodo.outcome": "Ranking predicted: auroc (the held-out dataset's AUROC) or crs (its per-dataset CRS, anchors "
    "over the members observed on it).",
    "source": "Shift pair source: the dataset the probe was trained on.",
    "target": "Shift pair target: the dataset evaluated with condition shift (source-trained probe, no retraining); "
    "its AUROC is the outcome ranking.",
    "shift.predictor": "Predictor ranking: crs_no_shift (aggregate CRS with corruption-only robustness), "
    "crs_no_shift_source (that CRS on the source dataset alone) or auroc_source (the source AUROC).",
    "part": "Where the row comes from: 'lodo (mean over held-out datasets)', or a shift pair as 'source -> target'.",
    "summary.predictor": "Predictor ranking, as in analysis_external_lodo or analysis_external_shift.",
    "summary.outcome": "Outcome ranking: auroc or crs of the held-out dataset (lodo), target_auroc (shift).",
    "summary.spearman_rho": "Spearman rho between predictor and outcome rankings: mean over the held-out datasets "
    "(lodo) or the pair's own (shift); [-1, 1].",
    "summary.top3_overlap": "Top-3 overlap of predictor and outcome rankings: mean over the held-out datasets (lodo) "
    "or the pair's own (shift); [0, 1].",
    "summary.winner_recovered": "Share of held-out datasets whose winner the predictor recovered (lodo), or 1 / 0 "
    "for a shift pair; [0, 1].",
}


@register_analysis(
    "external",
    columns=DOCS,
    section="§11",
    params={"panel": panel_param("members are compared")},
    outputs={
        "lodo": ("held_out", "predictor", "outcome", *RESULT_COLUMNS),
        "shift": ("source", "target", "predictor", *RESULT_COLUMNS),
        "summary": ("part", "predictor", "outcome", "spearman_rho", "top3_overlap", "winner_recovered"),
    },
)
def run_external(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """External validity: leave-one-dataset-out CRS and shift-target AUROC vs CRS without shift."""
    panel, members = resolve_population(wh, params["panel"])
    lodo = leave_one_dataset_out(wh, members)
    shift = shift_validity(wh, members)
    lodo_summary = (
        lodo.groupby(["predictor", "outcome"], sort=False)
        .agg(
            n_held_out=("held_out", "size"),
            spearman_rho=("spearman_rho", "mean"),
            top3_overlap=("top3_overlap", "mean"),
            winner_recovered=("winner_recovered", "mean"),
        )
        .reset_index()
        .assign(part="lodo (mean over held-out datasets)")
    )
    shift_summary = shift.assign(part=shift["source"] + " -> " + shift["target"], outcome="target_auroc")
    columns = ["part", "predictor", "outcome", "spearman_rho", "top3_overlap", "winner_recovered"]
    summary = pd.concat(
        [lodo_summary[columns], shift_summary[columns].astype({"winner_recovered": float})], ignore_index=True
    )
    notes = [
        f"panel {panel}: {len(members)} members; {lodo['held_out'].nunique()} held-out datasets, "
        f"{shift[['source', 'target']].drop_duplicates().shape[0]} shift pair(s)"
    ]
    return AnalysisResult(tables={"lodo": lodo, "shift": shift}, summary=summary, notes=notes)

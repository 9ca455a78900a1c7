"""Scalarisation sensitivity (METHODS.md §11): does the CRS ranking survive other weights?

The panel members are scored on their aggregate axes against the panel's frozen global anchors
(cohort anchors without a panel) under many weightings in one query: `fn_crs_scores_weighted`
with grp = weighting, the same definition `fn_crs_scores` applies with the protocol defaults (METHODS.md §14).
* `axis` draws: axis weights (w_d, w_c, w_le, w_r) ~ Dirichlet(alpha, alpha, alpha, alpha),
  component weights at their defaults (0.60, 0.25, 0.15);
* `component` draws: (w_dom, w_ideal, w_worst) ~ Dirichlet(alpha, alpha, alpha), axis weights
  at 1/4 each;
* `alternative`: axis weights (0.30, 0.30, 0.15, 0.25), components at their defaults.
Each ranking is compared with the default weighting's by Kendall tau-b and Top-3
(`fn_rank_agreement`); "Top-3 unchanged" means the same three encoders (in any order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.columns import rank_agreement_docs
from crsbench.analyses.registry import AnalysisResult, Param, panel_param, register_analysis
from crsbench.analyses.validity.criterion import (
    DEFAULT_WEIGHTS,
    GLOBAL,
    member_axes,
    panel_anchors,
    rank_agreement,
    resolve_population,
    score_groups,
)
from crsbench.core import AXIS_WEIGHTS, TERM_WEIGHTS
from crsbench.warehouse.connection import Warehouse

DEFAULT = "default"
ALTERNATIVE_AXIS_WEIGHTS = (0.30, 0.30, 0.15, 0.25)
DRAW_COLUMNS = [
    "grp",
    "family",
    *AXIS_WEIGHTS,
    *TERM_WEIGHTS,
    "n",
    "kendall_tau",
    "spearman_rho",
    "top3_overlap",
    "top3_unchanged",
]


def weight_draws(draws: int, alpha: float, rng: np.random.Generator) -> pd.DataFrame:
    """The alternative axis weights and the Dirichlet draws: grp, family, w_*, one row per grp."""
    default = dict(DEFAULT_WEIGHTS)
    rows = [
        {
            "grp": "alternative",
            "family": "alternative",
            **default,
            **dict(zip(AXIS_WEIGHTS, ALTERNATIVE_AXIS_WEIGHTS, strict=True)),
        }
    ]
    for i, w in enumerate(rng.dirichlet([alpha] * len(AXIS_WEIGHTS), size=draws)):
        rows.append({"grp": f"axis:{i}", "family": "axis", **default, **dict(zip(AXIS_WEIGHTS, w, strict=True))})
    for i, w in enumerate(rng.dirichlet([alpha] * len(TERM_WEIGHTS), size=draws)):
        rows.append(
            {"grp": f"component:{i}", "family": "component", **default, **dict(zip(TERM_WEIGHTS, w, strict=True))}
        )
    return pd.DataFrame(rows)


def weight_sensitivity(
    wh: Warehouse, members: Sequence[str], anchors: pd.DataFrame, weights: pd.DataFrame
) -> pd.DataFrame:
    """Rank agreement of each weighting (weights: grp, family, w_*) with the protocol defaults (METHODS.md §14).

    anchors: the global (axis, lo, hi) every weighting uses. Returns DRAW_COLUMNS per grp.
    """
    weights = weights[weights["grp"] != DEFAULT]
    grps = [DEFAULT, *weights["grp"]]
    table = pd.concat(
        [pd.DataFrame([{"grp": DEFAULT, "family": DEFAULT, **DEFAULT_WEIGHTS}]), weights], ignore_index=True
    )
    axes = member_axes(wh, members)
    stacked = pd.concat([axes.assign(grp=g) for g in grps], ignore_index=True)
    stacked = stacked.assign(scope=GLOBAL, in_panel=True)
    stacked_anchors = pd.concat([anchors[["axis", "lo", "hi"]].assign(grp=g) for g in grps], ignore_index=True).assign(
        scope=GLOBAL
    )
    scores = score_groups(wh, stacked, stacked_anchors, table)
    reference = scores[scores["grp"] == DEFAULT].set_index("encoder_id")["crs"]
    agreement = rank_agreement(wh, scores[scores["grp"] != DEFAULT], reference)
    out = table[table["grp"] != DEFAULT].merge(agreement, on="grp", how="left")
    out["top3_unchanged"] = out["top3_overlap"] == 1.0
    return out[DRAW_COLUMNS].reset_index(drop=True)


_AXIS = "Weight of the {} axis in the ideal-point term; [0, 1], the four sum to 1 (default 0.25)."


_TERM = "Weight of the {} term of the CRS; [0, 1], the three sum to 1 (default {})."


DOCS = {
    "grp": "Weighting key: 'alternative', 'axis:<i>' or 'component:<i>'.",
    "family": "alternative (axis weights 0.30, 0.30, 0.15, 0.25), axis (Dirichlet axis weights, default terms) or "
    "component (Dirichlet term weights, equal axes).",
    "w_d": _AXIS.format("discrimination"),
    "w_c": _AXIS.format("calibration"),
    "w_le": _AXIS.format("label-efficiency"),
    "w_r": _AXIS.format("robustness"),
    "w_dom": _TERM.format("Pareto dominance", "0.60"),
    "w_ideal": _TERM.format("ideal-point", "0.25"),
    "w_worst": _TERM.format("worst-axis", "0.15"),
    "n": "Members ranked under both this weighting and the default weights; count.",
    **rank_agreement_docs(
        "the members' CRS ranking under this weighting (the panel's global anchors)",
        "their ranking under the default weights",
    ),
    "top3_unchanged": "True when this weighting's top 3 is the default's (top3_overlap = 1), in any order.",
    "n_weightings": "Weightings of this family; count.",
    "mean_tau": "Mean kendall_tau over the weightings of this family; [-1, 1].",
    "min_tau": "Smallest kendall_tau over the weightings of this family; [-1, 1].",
    "share_top3_unchanged": "Share of the weightings of this family that keep the default's top 3; [0, 1].",
}


@register_analysis(
    "weights",
    columns=DOCS,
    section="§11",
    params={
        "panel": panel_param("members are compared"),
        "draws": Param(500, "Dirichlet draws of each family (axis weights, term weights)."),
        "alpha": Param(1.0, "Concentration of the Dirichlet draws."),
        "seed": Param(0, "Random seed of the draws."),
    },
    outputs={
        "draws": DRAW_COLUMNS,
        "summary": ("family", "n_weightings", "mean_tau", "min_tau", "share_top3_unchanged"),
    },
)
def run_weights(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Scalarisation: Dirichlet axis / component weights; Kendall tau and Top-3 vs the default."""
    panel, members = resolve_population(wh, params["panel"])
    rng = np.random.default_rng(int(params["seed"]))
    weights = weight_draws(int(params["draws"]), float(params["alpha"]), rng)
    table = weight_sensitivity(wh, members, panel_anchors(wh, panel, members), weights)
    summary = (
        table.groupby("family", sort=False)
        .agg(
            n_weightings=("grp", "size"),
            mean_tau=("kendall_tau", "mean"),
            min_tau=("kendall_tau", "min"),
            share_top3_unchanged=("top3_unchanged", "mean"),
        )
        .reset_index()
    )
    notes = [
        f"panel {panel}: {len(members)} members, {params['draws']} Dirichlet(alpha="
        f"{params['alpha']}) draws each of axis and component weights"
    ]
    return AnalysisResult(tables={"draws": table}, summary=summary, notes=notes)

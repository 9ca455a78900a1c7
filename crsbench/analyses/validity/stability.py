"""Reference stability and insertion (METHODS.md §11): how much the CRS ranking depends on who is in
the reference panel, and what adding encoders does to existing scores.

`stability`: every member of the panel (n of them) is scored on its aggregate axes against
sub-panels: the n leave-one-out panels and `random_panels` random panels of each of two sizes,
with the anchors and the Pareto reference recomputed over the sub-panel (`fn_anchors`,
`fn_crs_scores`, one query with grp = sub-panel). Each sub-panel's ranking of all n members is
compared with the full panel's (anchors over all members) by Kendall tau-b and Top-3 overlap
(`fn_rank_agreement`). Sizes: 12 and 10 for the paper's 15 members; for other n they scale as
round(n * 12 / 15) and round(n * 10 / 15), clipped to [min(3, n - 1), n - 1].

`insertion`: `trials` times, a random base of n - 3 members (n - k with k = min(3, n - 2))
is scored, then the other k are added one at a time. After each insertion, the displacement
|CRS after - CRS before| of every base encoder is measured in two modes, both computed:
* cohort: anchors and Pareto reference recomputed over everyone scored so far;
* fixed: the base's anchors (fn_anchors over the base, computed once) and the base as the
  Pareto reference; the inserted encoders are scored but are not members. METHODS.md §8.5 promises 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.columns import rank_agreement_docs
from crsbench.analyses.registry import AnalysisResult, Param, panel_param, register_analysis
from crsbench.analyses.validity.criterion import (
    AXES_COLUMNS,
    GLOBAL,
    anchors_of,
    member_axes,
    rank_agreement,
    resolve_population,
    score_groups,
)
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse

FULL = "full"
PANEL_COLUMNS = ["grp", "kind", "size", "left_out", "n", "kendall_tau", "spearman_rho", "top3_overlap"]
INSERTION_COLUMNS = [
    "mode",
    "trial",
    "step",
    "inserted",
    "n_base",
    "mean_displacement",
    "median_displacement",
    "max_displacement",
]


def random_panel_sizes(n: int) -> tuple[int, int]:
    """The two random sub-panel sizes for an n-member panel (12 and 10 when n = 15)."""
    low, high = min(3, n - 1), n - 1
    return tuple(int(np.clip(round(n * k / 15), low, high)) for k in (12, 10))  # type: ignore[return-value]


def _group_axes(axes: pd.DataFrame, groups: Mapping[str, tuple[Sequence[str], Sequence[str]]]) -> pd.DataFrame:
    """Stack one copy of the axes per group: groups maps grp -> (scored ids, member ids)."""
    parts = []
    by_id = axes.set_index("encoder_id")
    for grp, (scored, panel) in groups.items():
        part = by_id.loc[list(scored)].reset_index()
        part["grp"], part["scope"] = grp, GLOBAL
        part["in_panel"] = part["encoder_id"].isin(list(panel))
        parts.append(part)
    return pd.concat(parts, ignore_index=True)[AXES_COLUMNS]


def sub_panels(
    members: Sequence[str], random_panels: int, rng: np.random.Generator
) -> dict[str, tuple[str, int, str | None, tuple[str, ...]]]:
    """grp -> (kind, size, left-out member, sub-panel): 'full', the LOO panels, the random ones."""
    n = len(members)
    out: dict[str, tuple[str, int, str | None, tuple[str, ...]]] = {FULL: (FULL, n, None, tuple(members))}
    for m in members:
        out[f"loo:{m}"] = ("leave_one_out", n - 1, m, tuple(x for x in members if x != m))
    for size in random_panel_sizes(n):
        for i in range(random_panels):
            pick = sorted(rng.choice(n, size=size, replace=False))
            out[f"random{size}:{i}"] = (f"random_{size}", size, None, tuple(members[j] for j in pick))
    return out


STABILITY_DOCS = {
    "grp": "Sub-panel key: 'loo:<member>' or 'random<size>:<i>'.",
    "kind": "Sub-panel kind: leave_one_out, or random_<size> (random sub-panels of that many members).",
    "size": "Members in the sub-panel(s); count.",
    "left_out": "The member left out (leave_one_out rows); NULL for random sub-panels.",
    "n": "Members ranked both against this sub-panel and against the full panel; count.",
    **rank_agreement_docs(
        "the members' CRS ranking against this sub-panel (anchors and Pareto reference over it)",
        "their ranking against the full panel",
    ),
    "n_panels": "Sub-panels of this kind; count.",
    "mean_tau": "Mean kendall_tau over the sub-panels of this kind; [-1, 1].",
    "min_tau": "Smallest kendall_tau over the sub-panels of this kind; [-1, 1].",
    "mean_top3": "Mean top3_overlap over the sub-panels of this kind; [0, 1].",
    "share_top3_unchanged": "Share of the sub-panels whose top 3 is the full panel's (top3_overlap = 1); [0, 1].",
}


@register_analysis(
    "stability",
    columns=STABILITY_DOCS,
    section="§11",
    params={
        "panel": panel_param("sub-panels are drawn"),
        "random_panels": Param(200, "Random sub-panels of each size."),
        "seed": Param(0, "Random seed of the sub-panels."),
    },
    outputs={
        "panels": PANEL_COLUMNS,
        "summary": ("kind", "size", "n_panels", "mean_tau", "min_tau", "mean_top3", "share_top3_unchanged"),
    },
)
def run_stability(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Reference stability: LOO and random sub-panels; Kendall tau and Top-3 vs the full panel."""
    panel, members = resolve_population(wh, params["panel"])
    if len(members) < 3:
        raise CrsbenchError(f"stability: panel {panel!r} has {len(members)} members; needs >= 3")
    axes = member_axes(wh, members)
    plan = sub_panels(members, int(params["random_panels"]), np.random.default_rng(int(params["seed"])))
    scores = score_groups(wh, _group_axes(axes, {g: (members, p[3]) for g, p in plan.items()}))
    reference = scores[scores["grp"] == FULL].set_index("encoder_id")["crs"]
    agreement = rank_agreement(wh, scores[scores["grp"] != FULL], reference)
    meta = pd.DataFrame(
        [(g, k, s, lo) for g, (k, s, lo, _) in plan.items() if g != FULL], columns=["grp", "kind", "size", "left_out"]
    )
    table = meta.merge(agreement, on="grp", how="left")[PANEL_COLUMNS]
    summary = (
        table.groupby(["kind", "size"], sort=False)
        .agg(
            n_panels=("grp", "size"),
            mean_tau=("kendall_tau", "mean"),
            min_tau=("kendall_tau", "min"),
            mean_top3=("top3_overlap", "mean"),
            share_top3_unchanged=("top3_overlap", lambda x: float((x == 1).mean())),
        )
        .reset_index()
    )
    incomplete = int((table["n"].fillna(0) < len(members)).sum())
    notes = [
        f"panel {panel}: {len(members)} members; random sub-panel sizes "
        f"{random_panel_sizes(len(members))}, {params['random_panels']} each"
    ]
    if incomplete:
        notes.append(f"{incomplete} sub-panel(s) left some encoder unscored (a degenerate anchor)")
    return AnalysisResult(tables={"panels": table}, summary=summary, notes=notes)


def insertion_plan(
    members: Sequence[str], trials: int, rng: np.random.Generator
) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Per trial (base, inserted in order): a random base of n - k members, k = min(3, n - 2)."""
    k = min(3, len(members) - 2)
    plans = []
    for _ in range(trials):
        order = [members[i] for i in rng.permutation(len(members))]
        plans.append((tuple(order[:-k]), tuple(order[-k:])))
    return plans


def insertion_scores(
    wh: Warehouse, axes: pd.DataFrame, plans: Sequence[tuple[tuple[str, ...], tuple[str, ...]]]
) -> pd.DataFrame:
    """CRS of everyone scored at each step, grp = 'mode:trial:step', in both modes."""
    cohort, fixed = {}, {}
    for t, (base, added) in enumerate(plans):
        for step in range(len(added) + 1):
            scored = (*base, *added[:step])
            cohort[f"cohort:{t}:{step}"] = (scored, scored)
            fixed[f"fixed:{t}:{step}"] = (scored, base)
    fixed_axes = _group_axes(axes, fixed)
    # The base's anchors, computed once per trial from step 0 and reused at every step.
    base_anchors = anchors_of(wh, fixed_axes[fixed_axes["grp"].str.endswith(":0")])
    base_anchors["trial"] = base_anchors["grp"].str.split(":").str[1]
    steps = pd.DataFrame({"grp": list(fixed)})
    steps["trial"] = steps["grp"].str.split(":").str[1]
    frozen = steps.merge(base_anchors.drop(columns="grp"), on="trial")
    return pd.concat(
        [score_groups(wh, _group_axes(axes, cohort)), score_groups(wh, fixed_axes, anchors=frozen)], ignore_index=True
    )


def displacements(
    scores: pd.DataFrame, plans: Sequence[tuple[tuple[str, ...], tuple[str, ...]]]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per insertion: |CRS after - CRS before| of the base encoders; and every single value."""
    crs = scores.set_index(["grp", "encoder_id"])["crs"]
    rows, values = [], []
    for mode in ("cohort", "fixed"):
        for t, (base, added) in enumerate(plans):
            for step in range(1, len(added) + 1):
                before = crs.loc[f"{mode}:{t}:{step - 1}"].reindex(list(base)).to_numpy(float)
                after = crs.loc[f"{mode}:{t}:{step}"].reindex(list(base)).to_numpy(float)
                moved = np.abs(after - before)
                values.append(pd.DataFrame({"mode": mode, "displacement": moved}))
                rows.append(
                    {
                        "mode": mode,
                        "trial": t,
                        "step": step,
                        "inserted": added[step - 1],
                        "n_base": len(base),
                        "mean_displacement": float(np.mean(moved)),
                        "median_displacement": float(np.median(moved)),
                        "max_displacement": float(np.max(moved)),
                    }
                )
    return pd.DataFrame(rows, columns=INSERTION_COLUMNS), pd.concat(values, ignore_index=True)


_DISPLACEMENT = "|CRS after - CRS before| of the base encoders"


INSERTION_DOCS = {
    "mode": "cohort (anchors and Pareto reference recomputed over everyone scored so far) or fixed (the base's "
    "anchors and the base as Pareto reference, where the displacement is promised to be 0).",
    "trial": "Trial number, 0..trials - 1: one random base and insertion order.",
    "step": "Insertion step within the trial, 1..k (k = min(3, n - 2) encoders inserted one at a time).",
    "inserted": "Encoder inserted at this step.",
    "n_base": "Base members whose displacement is measured; count (n - k).",
    "mean_displacement": f"Mean over the base of {_DISPLACEMENT} at this insertion; CRS points, 0 = unmoved.",
    "median_displacement": f"Median over the base of {_DISPLACEMENT} at this insertion; CRS points.",
    "max_displacement": f"Largest {_DISPLACEMENT} at this insertion; CRS points.",
    "n_insertions": "Insertions (trials x steps) in this mode; count.",
    "n_scores": "Displacements measured in this mode (insertions x base encoders); count.",
    "mean": f"Mean of {_DISPLACEMENT} over every insertion of this mode; CRS points.",
    "median": f"Median of {_DISPLACEMENT} over every insertion of this mode; CRS points.",
    "max": f"Largest {_DISPLACEMENT} over every insertion of this mode; CRS points, exactly 0 in fixed mode.",
}


@register_analysis(
    "insertion",
    columns=INSERTION_DOCS,
    section="§11",
    params={
        "panel": panel_param("members are inserted"),
        "trials": Param(30, "Random bases and insertion orders."),
        "seed": Param(0, "Random seed of the trials."),
    },
    outputs={"insertions": INSERTION_COLUMNS, "summary": ("mode", "n_insertions", "n_scores", "mean", "median", "max")},
)
def run_insertion(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Insertion: displacement of existing CRS under cohort renormalisation vs fixed reference."""
    panel, members = resolve_population(wh, params["panel"])
    if len(members) < 3:
        raise CrsbenchError(f"insertion: panel {panel!r} has {len(members)} members; needs >= 3")
    plans = insertion_plan(members, int(params["trials"]), np.random.default_rng(int(params["seed"])))
    table, values = displacements(insertion_scores(wh, member_axes(wh, members), plans), plans)
    summary = (
        values.groupby("mode", sort=False)["displacement"]
        .agg(n_scores="size", mean="mean", median="median", max="max")
        .reset_index()
    )
    summary.insert(1, "n_insertions", summary["mode"].map(table.groupby("mode").size()))
    fixed_max = float(summary.loc[summary["mode"] == "fixed", "max"].iloc[0])
    notes = [
        f"panel {panel}: {len(plans)} trials, base of {len(plans[0][0])}, {len(plans[0][1])} insertions each",
        f"fixed reference: largest displacement {fixed_max!r} "
        + ("(exactly 0, as METHODS.md §8.5 promises)" if fixed_max == 0.0 else "(NOT 0: invariance broken)"),
    ]
    return AnalysisResult(tables={"insertions": table}, summary=summary, notes=notes)

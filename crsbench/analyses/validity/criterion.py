"""Shared plumbing of the criterion-validation analyses (METHODS.md §11): which panel, its members'
axes, and scoring many groups at once through the one SQL CRS definition.

Nothing here computes an axis or a score: axes come from the `fn_axes_cell` /
`fn_axes_aggregate` macros, anchors from `fn_anchors`, scores from `fn_crs_scores` /
`fn_crs_scores_weighted`, rank agreement from `fn_rank_agreement`. This module only shapes the
relations those macros read (grp = replicate, sub-panel, weighting, variant, ...).

The population every analysis ranks is the panel's members (frozen regime), scored on their
aggregate axes; without a frozen panel it is the cohort: every frozen-regime encoder with
aggregate axes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import pandas as pd

from crsbench.core import AXES, AXIS_WEIGHTS, CRS_WEIGHTS, FROZEN, TERM_WEIGHTS, CrsbenchError
from crsbench.warehouse import panels
from crsbench.warehouse.connection import Warehouse

GLOBAL = "global"
DEFAULT_WEIGHTS: dict[str, float] = dict(CRS_WEIGHTS)
AXES_COLUMNS = ["grp", "scope", "encoder_id", "in_panel", *AXES]


@contextmanager
def registered(wh: Warehouse, frames: Mapping[str, pd.DataFrame]) -> Iterator[dict[str, str]]:
    """Register frames as uniquely named DuckDB views for one query; yields {key: view name}.

    Unique names keep two analyses on one connection (or a re-entrant call) apart.
    """
    names = {key: f"_crit_{key}_{uuid.uuid4().hex[:8]}" for key in frames}
    for key, frame in frames.items():
        wh.con.register(names[key], frame)
    try:
        yield names
    finally:
        for name in names.values():
            wh.con.unregister(name)


def resolve_population(wh: Warehouse, panel: str | None) -> tuple[str, tuple[str, ...]]:
    """(panel name, members): the given panel, else the latest frozen one, else the cohort."""
    name = panel if panel is not None else panels.default_panel(wh)
    if name is None:
        members = tuple(
            wh.sql("select encoder_id from axes_encoder where regime = ? order by encoder_id", [FROZEN]).encoder_id
        )
        name = panels.COHORT
    else:
        members = panels.get_panel(wh, name).members
    scored = set(wh.sql("select encoder_id from axes_encoder where regime = ?", [FROZEN]).encoder_id)
    members = tuple(m for m in members if m in scored)
    if len(members) < 2:
        raise CrsbenchError(
            f"panel {name!r}: {len(members)} encoder(s) with complete frozen-regime axes; "
            "the validation analyses need at least 2 (probe more encoders or freeze a panel)"
        )
    return name, members


def member_axes(wh: Warehouse, members: Sequence[str]) -> pd.DataFrame:
    """Aggregate axes of the members (axes_encoder, frozen regime), one row per encoder."""
    return wh.sql(
        f"select encoder_id, {', '.join(AXES)} from axes_encoder "
        "where regime = ? and list_contains(?, encoder_id) order by encoder_id",
        [FROZEN, list(members)],
    )


def panel_anchors(wh: Warehouse, panel: str, members: Sequence[str]) -> pd.DataFrame:
    """Global anchors (axis, lo, hi): the panel's frozen ones, or fn_anchors over the cohort."""
    if panel != panels.COHORT:
        return wh.sql(
            "select axis, lo, hi from reference_anchors where panel = ? and scope = ? order by axis", [panel, GLOBAL]
        )
    axes = member_axes(wh, members).assign(grp="cohort", scope=GLOBAL, in_panel=True)[AXES_COLUMNS]
    with registered(wh, {"axes": axes}) as n:
        return wh.sql(f"select axis, lo, hi from fn_anchors('{n['axes']}') order by axis")


def score_groups(
    wh: Warehouse, axes: pd.DataFrame, anchors: pd.DataFrame | None = None, weights: pd.DataFrame | None = None
) -> pd.DataFrame:
    """fn_crs_scores over many groups in one query.

    axes: (grp, scope, encoder_id, in_panel, four raw axes). anchors: (grp, scope, axis, lo, hi),
    or None for fn_anchors over each (grp, scope)'s in_panel rows. weights: None for the protocol
    defaults (METHODS.md §14), else (grp, w_d, w_c, w_le, w_r, w_dom, w_ideal, w_worst) for fn_crs_scores_weighted.
    Returns (grp, scope, encoder_id, dominance, ideal, worst, crs).
    """
    frames = {"axes": axes[AXES_COLUMNS]}
    if anchors is not None:
        frames["anchors"] = anchors[["grp", "scope", "axis", "lo", "hi"]]
    if weights is not None:
        frames["weights"] = weights[["grp", *AXIS_WEIGHTS, *TERM_WEIGHTS]]
    with registered(wh, frames) as n:
        anchor_rel = n.get("anchors", "_crit_computed_anchors")
        scores = (
            f"fn_crs_scores_weighted('{n['axes']}', '{anchor_rel}', '{n['weights']}')"
            if weights is not None
            else f"fn_crs_scores('{n['axes']}', '{anchor_rel}')"
        )
        # Relation names are generated identifiers (never user input); values travel in frames.
        query = f"with _crit_computed_anchors as (select * from fn_anchors('{n['axes']}')) select * from {scores}"
        return wh.sql(query)


def anchors_of(wh: Warehouse, axes: pd.DataFrame) -> pd.DataFrame:
    """fn_anchors over each (grp, scope)'s in_panel rows: (grp, scope, axis, lo, hi, n_members)."""
    with registered(wh, {"axes": axes[AXES_COLUMNS]}) as n:
        return wh.sql(f"select * from fn_anchors('{n['axes']}') order by grp, scope, axis")


def rank_agreement(wh: Warehouse, scores: pd.DataFrame, reference: pd.Series) -> pd.DataFrame:
    """fn_rank_agreement of each grp's ranking (scores: grp, encoder_id, crs) against one
    reference ranking (reference: encoder_id -> score); see `agreement`."""
    frame = scores[["grp", "encoder_id", "crs"]].copy()
    frame["auroc"] = frame["encoder_id"].map(reference).astype(float)
    return agreement(wh, frame)


def agreement(wh: Warehouse, pairs: pd.DataFrame) -> pd.DataFrame:
    """fn_rank_agreement per grp of two scores of the same encoders (grp, encoder_id, crs, auroc).

    The macro compares a `crs` column with an `auroc` column; the validation analyses put the
    ranking under test in `crs` and the ranking it is compared with in `auroc`, so kendall_tau /
    spearman_rho / top3_overlap say how far apart the two are. Rows with a NULL in either are left
    out. Returns (grp, n, kendall_tau, spearman_rho, reversals, pairs, mean_abs_displacement,
    top3_overlap, top5_overlap).
    """
    with registered(wh, {"scores": pairs[["grp", "encoder_id", "crs", "auroc"]]}) as n:
        return wh.sql(f"select * from fn_rank_agreement('{n['scores']}') order by grp")

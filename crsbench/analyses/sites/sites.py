"""Does the ranking hold at another hospital? (docs/METHODS.md §22.4)

From the imported bundles (views site_scores and site_replicate_scores: every site scored against
this warehouse's frozen anchors of one panel), for every pair of sites and each of two measures,
CRS and AUROC: Kendall's tau-b (macro fn_rank_agreement, the definition rank_agreement uses)
between the two sites' rankings of the encoders both hold, its
percentile interval over the sites' bootstrap replicates (replicate r of one site paired with
replicate r of the other: independent draws), and the encoder pairs whose order reverses. The
summary answers the CRS-Bench review's question on the user's own sites: which measure ranks
more consistently across sites (mean tau over site pairs, and the share of replicates in which
it is the higher).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.registry import AnalysisResult, panel_param, register_analysis
from crsbench.analyses.validity.criterion import registered
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import default_panel

MEASURES = ("crs", "auroc")
PAIR_COLUMNS = (
    "panel", "site_a", "site_b", "measure", "n_encoders", "tau", "tau_lo", "tau_hi", "n_replicates", "n_reversals",
    "reversals",
)  # fmt: skip
SUMMARY_COLUMNS = (
    "panel", "measure", "n_site_pairs", "mean_tau", "mean_tau_lo", "mean_tau_hi", "p_more_consistent", "more_consistent",
)  # fmt: skip
DOCS = {
    "panel": "Frozen panel whose anchors here score every site.",
    "site_a": "First site of the pair (sorted by name).",
    "site_b": "Second site of the pair.",
    "measure": "crs or auroc: the score both sites' rankings are taken by.",
    "n_encoders": "Encoders both sites score (complete cells at each); count.",
    "tau": "Kendall tau-b between the two sites' rankings (replicate 0, the point estimates); [-1, 1].",
    "tau_lo": "2.5th percentile of tau over the paired bootstrap replicates 1..R (NULL without replicates).",
    "tau_hi": "97.5th percentile of tau over the paired bootstrap replicates 1..R.",
    "n_replicates": "Paired bootstrap replicates behind the interval; count.",
    "n_reversals": "Encoder pairs ranked one way at site_a and the other way at site_b (ties excluded); count.",
    "reversals": "Those pairs, '<better at a> > <worse at a>' separated by '; ' (empty: none).",
    "n_site_pairs": "Site pairs the mean is over; count.",
    "mean_tau": "Mean over site pairs of tau (point estimates).",
    "mean_tau_lo": "2.5th percentile over replicates of the mean tau over site pairs.",
    "mean_tau_hi": "97.5th percentile over replicates of the mean tau over site pairs.",
    "p_more_consistent": "Share of replicates in which this measure's mean tau exceeds the other measure's; [0, 1].",
    "more_consistent": "True for the measure whose point mean tau is higher (both false on a tie).",
}


def reversals(a: pd.Series, b: pd.Series) -> list[str]:
    """Encoder pairs ordered strictly one way by `a` and strictly the other way by `b`."""
    out = []
    for e1, e2 in combinations(sorted(a.index), 2):
        if (a[e1] - a[e2]) * (b[e1] - b[e2]) < 0:
            hi, lo = (e1, e2) if a[e1] > a[e2] else (e2, e1)
            out.append(f"{hi} > {lo}")
    return out


def _percentiles(values: list[float]) -> tuple[float | None, float | None]:
    finite = [v for v in values if np.isfinite(v)]
    if not finite:
        return None, None
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return float(lo), float(hi)


def _pair_scores(table: pd.DataFrame, measure: str, site_a: str, site_b: str) -> pd.DataFrame:
    """(replicate, encoder_id, a, b): both sites' scores over the encoders both score at replicate 0,
    in the replicates that hold every one of them."""
    wide = table.pivot_table(index=["replicate", "encoder_id"], columns="site", values=measure)
    wide = wide[[site_a, site_b]].dropna().set_axis(["a", "b"], axis=1).reset_index()
    common = set(wide.loc[wide["replicate"] == 0, "encoder_id"])
    wide = wide[wide["encoder_id"].isin(common)]
    whole = wide.groupby("replicate")["encoder_id"].transform("size") == len(common)
    return wide[whole]


def replicate_taus(wh: Warehouse, table: pd.DataFrame) -> pd.DataFrame:
    """(measure, site_a, site_b, replicate, n, tau) for every pair of sites, measure and replicate:
    Kendall's tau-b by fn_rank_agreement, the one definition (as scipy.stats.kendalltau), with site_a's
    scores as one ranking and site_b's as the other."""
    frames = []
    for measure in MEASURES:
        for site_a, site_b in combinations(sorted(table["site"].unique()), 2):
            scores = _pair_scores(table, measure, site_a, site_b)
            frames.append(scores.assign(measure=measure, site_a=site_a, site_b=site_b))
    keyed = pd.concat(frames, ignore_index=True)
    keys = ["measure", "site_a", "site_b", "replicate"]
    keyed["grp"] = keyed.groupby(keys, sort=True).ngroup()
    pairs = keyed[["grp", "encoder_id", "a", "b"]].rename(columns={"a": "crs", "b": "auroc"})
    with registered(wh, {"scores": pairs}) as names:
        taus = wh.sql(f"select grp, n, kendall_tau as tau from fn_rank_agreement('{names['scores']}')")
    return keyed[[*keys, "grp"]].drop_duplicates().merge(taus, on="grp").drop(columns="grp")


def _pairs(wh: Warehouse, table: pd.DataFrame, panel: str) -> tuple[list[dict[str, Any]], dict[str, pd.DataFrame]]:
    rows, by_measure = [], {}
    taus = replicate_taus(wh, table)
    point = table[table["replicate"] == 0]
    for measure in MEASURES:
        per_pair = {}
        for (site_a, site_b), pair in taus[taus["measure"] == measure].groupby(["site_a", "site_b"], sort=True):
            series = pair.set_index("replicate")["tau"].astype(float)
            both = point.pivot(index="encoder_id", columns="site", values=measure)[[site_a, site_b]].dropna()
            flips = reversals(both[site_a], both[site_b])
            lo, hi = _percentiles(list(series.drop(0, errors="ignore")))
            rows.append(
                {"panel": panel, "site_a": site_a, "site_b": site_b, "measure": measure, "n_encoders": len(both),
                 "tau": series.get(0, np.nan), "tau_lo": lo, "tau_hi": hi,
                 "n_replicates": int((series.index > 0).sum()), "n_reversals": len(flips), "reversals": "; ".join(flips)}
            )  # fmt: skip
            per_pair[(site_a, site_b)] = series
        by_measure[measure] = pd.DataFrame(per_pair)
    return rows, by_measure


def _summary(by_measure: dict[str, pd.DataFrame], panel: str) -> pd.DataFrame:
    means = {m: frame.mean(axis=1) for m, frame in by_measure.items()}  # mean tau over site pairs per replicate
    point = {m: float(s.get(0, np.nan)) for m, s in means.items()}
    rows = []
    for measure, other in (("crs", "auroc"), ("auroc", "crs")):
        reps = means[measure].drop(0, errors="ignore")
        versus = means[other].reindex(reps.index)
        lo, hi = _percentiles(list(reps))
        rows.append(
            {"panel": panel, "measure": measure, "n_site_pairs": by_measure[measure].shape[1], "mean_tau": point[measure],
             "mean_tau_lo": lo, "mean_tau_hi": hi,
             "p_more_consistent": float((reps > versus).mean()) if len(reps) else None,
             "more_consistent": bool(point[measure] > point[other])}
        )  # fmt: skip
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


@register_analysis(
    "sites",
    params={"panel": panel_param("anchors score every imported site")},
    outputs={"pairs": PAIR_COLUMNS, "summary": SUMMARY_COLUMNS},
    columns=DOCS,
    section="§22.4",
)
def sites(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Across imported sites: Kendall tau of the CRS and AUROC rankings, reversals, and which ranks more consistently."""
    panel = params["panel"] or default_panel(wh)
    if panel is None:
        raise CrsbenchError("sites: no frozen panel here; the sites are scored against one (crsbench panel freeze)")
    table = wh.sql(
        "select site, replicate, encoder_id, crs, auroc from site_replicate_scores where panel = ? order by all",
        [panel],
    )
    n_sites = table["site"].nunique()
    if n_sites < 2:
        raise CrsbenchError(
            f"sites: {n_sites} site(s) imported for panel {panel!r}; import at least two bundles "
            "(crsbench results import FILE) to compare rankings across sites"
        )
    rows, by_measure = _pairs(wh, table, str(panel))
    pairs = pd.DataFrame(rows, columns=list(PAIR_COLUMNS)).astype({"n_encoders": "int64", "n_replicates": "int64"})
    summary = _summary(by_measure, str(panel))
    best = summary.loc[summary["more_consistent"], "measure"]
    notes = [
        f"{n_sites} sites under panel {panel!r}; "
        + (f"{best.iloc[0].upper()} ranks more consistently across them" if len(best) else "CRS and AUROC tie")
    ]
    return AnalysisResult(tables={"pairs": pairs}, summary=summary, notes=notes)

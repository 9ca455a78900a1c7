"""Does the ranking hold at another hospital? (docs/METHODS.md §22.4)

From the imported bundles (views site_scores and site_replicate_scores: every site scored against
this warehouse's frozen anchors of one panel), for every pair of sites and each of two measures,
CRS and AUROC: Kendall's tau-b between the two sites' rankings of the encoders both hold, its
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


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b over all pairs (ties in either variable counted as in tau-b); NaN when undefined."""
    i, j = np.triu_indices(len(x), k=1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    untied_x, untied_y = np.count_nonzero(dx), np.count_nonzero(dy)
    if untied_x == 0 or untied_y == 0:
        return float("nan")
    return float(np.sum(dx * dy) / np.sqrt(untied_x * untied_y))


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


def _pair_taus(table: pd.DataFrame, site_a: str, site_b: str, measure: str) -> tuple[pd.Series, int]:
    """tau per replicate (index) between the two sites over their common encoders, and that count."""
    wide = table.pivot_table(index=["replicate", "encoder_id"], columns="site", values=measure)[[site_a, site_b]]
    wide = wide.dropna()
    point = wide.loc[0] if 0 in wide.index.get_level_values(0) else wide.iloc[:0]
    common = set(point.index)
    taus = {}
    for replicate, group in wide.groupby(level=0):
        group = group.droplevel(0)
        group = group.loc[sorted(common & set(group.index))]
        if len(group) == len(common):
            taus[int(replicate)] = kendall_tau_b(group[site_a].to_numpy(), group[site_b].to_numpy())
    return pd.Series(taus, dtype=float), len(common)


def _pairs(table: pd.DataFrame, panel: str) -> tuple[list[dict[str, Any]], dict[str, pd.DataFrame]]:
    rows, by_measure = [], {}
    for measure in MEASURES:
        per_pair = {}
        for site_a, site_b in combinations(sorted(table["site"].unique()), 2):
            taus, n = _pair_taus(table, site_a, site_b, measure)
            point = table[table["replicate"] == 0].pivot(index="encoder_id", columns="site", values=measure)
            point = point[[site_a, site_b]].dropna()
            flips = reversals(point[site_a], point[site_b])
            lo, hi = _percentiles(list(taus.drop(0, errors="ignore")))
            rows.append(
                {"panel": panel, "site_a": site_a, "site_b": site_b, "measure": measure, "n_encoders": n,
                 "tau": taus.get(0, np.nan), "tau_lo": lo, "tau_hi": hi, "n_replicates": int((taus.index > 0).sum()),
                 "n_reversals": len(flips), "reversals": "; ".join(flips)}
            )  # fmt: skip
            per_pair[(site_a, site_b)] = taus
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
    rows, by_measure = _pairs(table, str(panel))
    pairs = pd.DataFrame(rows, columns=list(PAIR_COLUMNS)).astype({"n_encoders": "int64", "n_replicates": "int64"})
    summary = _summary(by_measure, str(panel))
    best = summary.loc[summary["more_consistent"], "measure"]
    notes = [
        f"{n_sites} sites under panel {panel!r}; "
        + (f"{best.iloc[0].upper()} ranks more consistently across them" if len(best) else "CRS and AUROC tie")
    ]
    return AnalysisResult(tables={"pairs": pairs}, summary=summary, notes=notes)

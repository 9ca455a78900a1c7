"""Which encoders a report section covers, which it leaves out, and why.

Every analysis section ends with one coverage line: the encoders it shows, and for each
registered encoder it does not show, the first reason that applies:
no runs; not in the panel; partial coverage (the panel datasets it lacks); no runs at
the depths or label fractions the section compares; not in the stored analysis results
(rerun the analysis if the encoder's runs are newer). Encoders it shows on only some
datasets are named with the datasets they lack there and why (no features, or no runs).
The line carries the sets as data attributes (`data-covered`, `data-left-out`), one
comma-separated list each, so the page says the same thing to a reader and to a test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from crsbench.core import FROZEN, PRIMARY_PROBE
from crsbench.reads.report_data import ReportData
from crsbench.report.html import esc

# What a section compares, for the reason an encoder lacks it: need -> (SQL predicate on runs, reason)
NEEDS: dict[str, tuple[str, str]] = {
    "depths": ("depth < 1.0 and label_fraction = 1.0", "no primary-probe runs below full depth"),
    "fractions": ("label_fraction < 1.0 and depth = 1.0", "no primary-probe runs below 100 % labels"),
}


def _runs_by_encoder(data: ReportData, where: str = "true") -> dict[str, set[str]]:
    """encoder -> the datasets it has frozen primary-probe runs on (matching `where`)."""
    if not data.has("runs"):
        return {}
    rows = data.wh.sql(
        f"select distinct encoder_id, dataset_id from runs where probe = ? and regime = ? and ({where})",
        [PRIMARY_PROBE, FROZEN],
    )
    out: dict[str, set[str]] = {}
    for encoder, dataset in rows.itertuples(index=False):
        out.setdefault(str(encoder), set()).add(str(dataset))
    return out


def _featured(data: ReportData) -> dict[str, set[str]] | None:
    if not data.has("feature_sets"):
        return None
    rows = data.wh.sql("select distinct encoder_id, dataset_id from feature_sets")
    if rows.empty:  # runs written without feature sets (imported, or a test): features say nothing
        return None
    out: dict[str, set[str]] = {}
    for encoder, dataset in rows.itertuples(index=False):
        out.setdefault(str(encoder), set()).add(str(dataset))
    return out


def left_out_reasons(
    data: ReportData,
    covered: Iterable[str],
    analysis: str | None = None,
    scored: bool = False,
    panel_only: bool = False,
    need: str = "",
) -> dict[str, str]:
    """Every registered encoder not in `covered`, with the first reason that applies (see the module doc).

    `scored`: the section shows encoders scored against the panel (partial coverage is a reason);
    `panel_only`: it shows panel members only; `need`: a key of NEEDS.
    """
    shown = set(covered)
    runs = _runs_by_encoder(data)
    registered = {str(e) for e in data.encoders["encoder_id"]} | set(runs)
    needed = _runs_by_encoder(data, NEEDS[need][0]) if need else {}
    board = data.crs_encoder if data.crs_encoder is not None else pd.DataFrame(columns=["encoder_id"])
    partial = {
        str(r.encoder_id): ", ".join(r.missing_datasets)
        for r in board.itertuples()
        if getattr(r, "coverage", "full") == "partial"
    }
    on_board = set(board["encoder_id"].astype(str))
    reasons = {}
    for encoder in sorted(registered - shown):
        if encoder not in runs:
            reasons[encoder] = "no runs"
        elif need and encoder not in needed:
            reasons[encoder] = NEEDS[need][1]
        elif panel_only and data.panel is not None and encoder not in data.members:
            reasons[encoder] = f"not in panel {data.panel}"
        elif scored and encoder in partial:
            reasons[encoder] = f"partial coverage: no complete cell on {partial[encoder]}"
        elif scored and encoder not in on_board:
            reasons[encoder] = "no complete cell on any panel dataset"
        elif analysis is not None:
            reasons[encoder] = (
                f"not in the stored {analysis} results: rerun 'crsbench analyze {analysis}' if its runs are newer"
            )
        else:
            reasons[encoder] = "no complete cell"
    return reasons


def partial_datasets(data: ReportData, frame: pd.DataFrame) -> dict[str, str]:
    """Shown encoders absent from some of the section's datasets: encoder -> 'ds (why); ...'."""
    if "dataset_id" not in frame.columns or frame.empty:
        return {}
    datasets = set(frame["dataset_id"].astype(str))
    featured, runs = _featured(data), _runs_by_encoder(data)
    out = {}
    for encoder, part in frame.groupby("encoder_id", sort=True):
        lacking = sorted(datasets - set(part["dataset_id"].astype(str)))
        if not lacking:
            continue

        def why(dataset: str, encoder: str = str(encoder)) -> str:
            if featured is not None and dataset not in featured.get(encoder, set()):
                return "no features"
            return "no runs" if dataset not in runs.get(encoder, set()) else "not in the results"

        out[str(encoder)] = "; ".join(f"{d}: {why(d)}" for d in lacking)
    return out


def coverage_line(covered: Iterable[str], left_out: Mapping[str, str], partial: Mapping[str, str] | None = None) -> str:
    """The section's coverage line (see the module doc)."""
    shown = sorted(set(covered))
    text = f"<strong>Covers</strong> {len(shown)} encoder(s): {esc(', '.join(shown)) or 'none'}."
    if partial:
        text += " On some datasets only: " + "; ".join(f"{esc(e)} (not on {esc(w)})" for e, w in partial.items()) + "."
    if left_out:
        text += " <strong>Leaves out</strong> " + "; ".join(f"{esc(e)} ({esc(w)})" for e, w in left_out.items()) + "."
    else:
        text += " Leaves out none."
    return (
        f'<p class="note coverage" data-covered="{esc(",".join(shown))}" '
        f'data-left-out="{esc(",".join(sorted(left_out)))}">{text}</p>'
    )


def section_coverage(
    data: ReportData,
    frame: pd.DataFrame,
    analysis: str | None = None,
    scored: bool = False,
    panel_only: bool = False,
    need: str = "",
) -> str:
    """The coverage line of a section showing `frame` (its column encoder_id, and dataset_id if any);
    the other arguments as for `left_out_reasons`."""
    covered = set(frame["encoder_id"].astype(str))
    return coverage_line(
        covered,
        left_out_reasons(data, covered, analysis, scored, panel_only, need),
        partial_datasets(data, frame),
    )

"""The sites section: imported sites' scores and whether the ranking holds across them (METHODS.md §22).

Reads view site_scores (every imported site against this warehouse's anchors) and the `sites`
analysis's stored parts; without imported bundles it shows the commands that bring them in.
"""

from __future__ import annotations

from crsbench.reads.report_data import ReportData
from crsbench.report.html import FigureSink, esc
from crsbench.report.sections import FILL, Missing, section
from crsbench.report.sections_curves import generic_table

FILL["sites"] = (
    "crsbench results import BUNDLE (from another site's crsbench results export), then crsbench analyze sites"
)


@section("sites", "Does the ranking hold at another site?", order=150)
def sites(data: ReportData, sink: FigureSink) -> str | Missing:
    if "site_scores" not in data.relations:
        return Missing("No results imported from other sites.", FILL["sites"])
    scores = data.wh.sql(
        "select panel, site, encoder_id, auroc, crs, auroc_rank, crs_rank from site_scores order by panel, site, crs_rank"
    )
    if scores.empty:
        return Missing("No results imported from other sites.", FILL["sites"])
    out = [
        "<p>Each site's AUROC and CRS, scored against this warehouse's frozen anchors of the panel "
        "(view site_scores).</p>",
        generic_table(scores, data),
    ]
    summary = data.analysis("sites", "summary", "measure", "mean_tau", "mean_tau_lo", "mean_tau_hi", "more_consistent")
    pairs = data.analysis("sites", "pairs", "site_a", "site_b", "measure", "tau", "tau_lo", "tau_hi", "reversals")
    if summary is None or pairs is None:
        out.append(f"<p>Rank agreement between sites: run <code>{esc('crsbench analyze sites')}</code>.</p>")
        return "".join(out)
    best = summary.loc[summary["more_consistent"], "measure"]
    verdict = (
        f"{best.iloc[0].upper()} ranks the encoders more consistently across these sites."
        if len(best)
        else "CRS and AUROC rank the encoders equally consistently across these sites."
    )
    out += [
        f"<p><strong>{esc(verdict)}</strong></p>",
        "<h3>Kendall's tau between sites (95 % interval over the sites' bootstrap replicates)</h3>",
        generic_table(pairs, data),
        generic_table(summary, data),
    ]
    return "".join(out)

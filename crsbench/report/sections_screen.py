"""The report's pre-screen section: can a ranking from cached features alone be trusted on this
warehouse's data? (METHODS.md §21.5)

The pre-screen's ranking per dataset (view screen_ranking) beside its measured agreement with the
full grid (view screen_trust): Kendall and weighted tau with image-bootstrap intervals against the
grid's AUROC, top-k recall and regret, and one plain-language verdict per dataset.
"""

from __future__ import annotations

import pandas as pd

from crsbench.reads.report_data import ReportData
from crsbench.reads.screen import VERDICT_DEPTH, read_screen
from crsbench.report.html import FigureSink, bullet_list, esc
from crsbench.report.sections import FILL, Missing, section
from crsbench.report.sections_curves import generic_table

FILL["screen"] = "crsbench screen (after crsbench extract --screen, or on complete feature sets)"

TRUST_COLUMNS = [
    "dataset_id", "estimator", "target", "panel", "n_encoders", "tau", "tau_lo", "tau_hi",
    "weighted_tau", "top_k_recall", "regret",
]  # fmt: skip


@section("screen", "Can the pre-screen be trusted here?", order=77)
def screen(data: ReportData, sink: FigureSink) -> str | Missing:
    report = read_screen(data.wh)
    if report.ranking.empty:
        return Missing("No pre-screen stored.", FILL["screen"])
    out = [
        "<p>The pre-screen ranks encoders from their cached clean train features and labels alone, with no "
        "probe trained (LogME, H-score, GBC, TransRate, N-LEEP and leave-one-out k-NN). Published comparisons "
        "find such rankings agree only moderately with fine-tuned results, and less on medical images, so its "
        "agreement with this warehouse's full grid is measured here, where both exist.</p>"
    ]
    verdicts = report.verdicts or ["No full grid to compare with yet: run crsbench probe, then crsbench screen."]
    out.append(bullet_list(verdicts))
    trust = report.trust[report.trust["depth"] == VERDICT_DEPTH]
    if len(trust):
        out.append(
            "<p>Every estimator at depth 1.0 against the grid's AUROC (intervals: image bootstrap) and each "
            "frozen panel's per-dataset CRS (view screen_trust):</p>"
        )
        table = trust[TRUST_COLUMNS].reset_index(drop=True).astype(object)
        out.append(generic_table(table.where(table.notna(), None), data))
    overall = report.ranking[report.ranking["scope"] == "all"]
    if len(overall):
        table = overall[["encoder_id", "screen_rank", "mean_rank", "n_datasets", "kept"]].reset_index(drop=True)
        out.append(
            f"<p>The pre-screen over every dataset, by {esc(str(overall['rank_by'].iloc[0]))} "
            "(view screen_ranking):</p>"
        )
        out.append(generic_table(table, data))
        dropped = ", ".join(report.dropped) or "none"
        out.append(
            f"<p>Keeping its top {int(pd.to_numeric(overall['keep']).max())}, it would drop: {esc(dropped)}.</p>"
        )
    return "".join(out)

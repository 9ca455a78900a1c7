"""The report's corruption-suite section: robustness to the modality's own corruptions (MedMNIST-C),
beside the paper's robustness axis, which never reads them (METHODS.md §25).

One sentence per suite and dataset, then each suite's view under its own title, e.g.
"robustness (MedMNIST-C, derm)" (view suite_robustness).
"""

from __future__ import annotations

from crsbench.reads.report_data import ReportData
from crsbench.reads.suites import COLUMNS, suite_robustness, suite_verdicts
from crsbench.report.html import FigureSink, bullet_list, esc
from crsbench.report.sections import FILL, Missing, section
from crsbench.report.sections_curves import nullable_table

FILL["suites"] = "crsbench grid extend --suite medmnistc-<domain>, then crsbench extract and crsbench probe"


@section("suites", "Modality-specific corruptions (MedMNIST-C)", order=147)
def suites(data: ReportData, sink: FigureSink) -> str | Missing:
    frame = suite_robustness(data.wh)
    if frame.empty:
        return Missing("No corruption suite is declared.", FILL["suites"])
    out = [
        "<p>Each suite applies the corruptions MedMNIST-C defines for the dataset's modality, at three "
        "severities. Its robustness is the paper's formula (1 - (0.5 mean + 0.5 max) of the AUROC drops) over "
        "the suite's conditions alone; the CRS and the paper's robustness axis never read them.</p>",
        bullet_list(suite_verdicts(frame)),
    ]
    shown = [c for c in COLUMNS if c != "suite"]
    for title, rows in frame.groupby("title", sort=True):
        out.append(f"<h3>{esc(title)}</h3>")
        out.append(nullable_table(rows[shown], data))
    return "".join(out)

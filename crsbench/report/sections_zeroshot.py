"""Section: zero-shot classification against probing (view `zeroshot_vs_probe`, METHODS.md §3.5)."""

from __future__ import annotations

from crsbench.report.data import ReportData
from crsbench.report.html import FigureSink, encoder_cell, esc, fmt_number, number_cell, table
from crsbench.report.sections import FILL, Missing, section


@section("zeroshot", "Zero-shot versus probing (image-text encoders)")
def zeroshot(data: ReportData, sink: FigureSink) -> str | Missing:
    if data.n_runs == 0:
        return Missing("No runs yet.", FILL["runs"])
    frame = None
    if data.has("zeroshot_vs_probe"):
        frame = data.wh.con.execute("select * from zeroshot_vs_probe order by encoder_id, dataset_id").df()
    if frame is None or frame.empty:
        # Not a gap of the warehouse: most encoders have no text tower.
        return (
            '<p class="note">No image-text encoder has been run zero-shot here '
            "(<code>crsbench zeroshot</code> after extracting one, e.g. tiny-clip).</p>"
        )
    intro = (
        '<p class="note">Zero-shot AUROC and ECE on the clean test split (no training label; the '
        "latest prompt set) beside the logreg probe at full depth with 1 % and 100 % of the labels, "
        "and the smallest label fraction at which the probe beats zero-shot. Zero-shot runs never "
        "enter the CRS.</p>"
    )
    columns = {
        "encoder": lambda r: encoder_cell(r["encoder_id"], data.random_init),
        "dataset": lambda r: esc(r["dataset_id"]),
        "zero-shot AUROC": number_cell("zeroshot_auroc"),
        "zero-shot ECE": number_cell("zeroshot_ece"),
        "logreg 1 % AUROC": number_cell("logreg_auroc_1pct"),
        "logreg 100 % AUROC": number_cell("logreg_auroc_100pct"),
        "logreg 100 % ECE": number_cell("logreg_ece_100pct"),
        "probe beats zero-shot at": lambda r: fmt_number(r["probe_beats_zeroshot_at"], 2),
        "prompt set": lambda r: f"<code>{esc(r['prompt_hash'])}</code>",
    }
    return intro + table(frame, columns, text_columns=("encoder", "dataset", "prompt set"))

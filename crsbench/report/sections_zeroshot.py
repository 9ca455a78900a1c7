"""Section: zero-shot classification and prompting generative models against probing.

Zero-shot rows come from view `zeroshot_vs_probe` (METHODS.md §3.5); prompting rows from
analysis e5's summary (`analysis_e5_summary`, METHODS.md §12), each beside the best zero-shot
AUROC and the best frozen logreg probe on the same dataset.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.reads.report_data import ReportData
from crsbench.report import figures as figs
from crsbench.report.html import FigureSink, encoder_cell, esc, fmt_number, number_cell, table
from crsbench.report.sections import FILL, Missing, section

E5_COMMAND = "crsbench analyze e5 --model <local model folder> --dataset <name>"
E5_COLUMNS = (
    "model_id",
    "dataset_id",
    "style",
    "n",
    "coverage",
    "accuracy",
    "macro_auroc",
    "probe_encoder",
    "probe_auroc",
)
# the bars of the comparison figure, in this order
ZEROSHOT_BAR, PROBE_BAR, E5_BAR = "zero-shot (best encoder)", "logreg probe, 100 % labels", "E5 prompting"


def _zeroshot_frame(data: ReportData) -> pd.DataFrame:
    if not data.has("zeroshot_vs_probe"):
        return pd.DataFrame()
    return data.wh.con.execute("select * from zeroshot_vs_probe order by encoder_id, dataset_id").df()


def _e5_frame(data: ReportData) -> pd.DataFrame:
    frame = data.analysis("e5", "summary", *E5_COLUMNS)
    return pd.DataFrame() if frame is None else frame


def _zeroshot_table(data: ReportData, frame: pd.DataFrame) -> str:
    if frame.empty:
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


def best_zeroshot(zs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset: the image-text encoder with the highest zero-shot AUROC (ties: by name)."""
    if zs.empty:
        return pd.DataFrame(columns=["dataset_id", "zeroshot_encoder", "zeroshot_auroc"])
    ranked = zs.sort_values(["dataset_id", "zeroshot_auroc", "encoder_id"], ascending=[True, False, True])
    best = ranked.groupby("dataset_id", sort=True).head(1)
    return best.rename(columns={"encoder_id": "zeroshot_encoder"})[["dataset_id", "zeroshot_encoder", "zeroshot_auroc"]]


def e5_beside_zeroshot(e5: pd.DataFrame, zs: pd.DataFrame) -> pd.DataFrame:
    """E5 summary rows with the dataset's best zero-shot AUROC joined on (NaN where none ran)."""
    return e5.merge(best_zeroshot(zs), on="dataset_id", how="left")


def comparison(e5: pd.DataFrame, zs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset with E5 rows: best zero-shot AUROC, best frozen logreg probe AUROC, best E5 AUROC."""
    joined = e5_beside_zeroshot(e5, zs)
    out = joined.groupby("dataset_id", sort=True).agg(
        zeroshot=("zeroshot_auroc", "max"), probe=("probe_auroc", "max"), e5=("macro_auroc", "max")
    )
    out = out.reset_index().rename(columns={"dataset_id": "label", "zeroshot": ZEROSHOT_BAR})
    return out.rename(columns={"probe": PROBE_BAR, "e5": E5_BAR})


def _e5_part(data: ReportData, e5: pd.DataFrame, zs: pd.DataFrame, sink: FigureSink) -> str:
    if e5.empty:
        return (
            '<p class="note">E5 (prompting a generative vision-language model) has not been run on '
            f"this warehouse: <code>{esc(E5_COMMAND)}</code> (offline model), then rebuild the report.</p>"
        )
    joined = e5_beside_zeroshot(e5, zs)
    intro = (
        '<p class="note">E5: a generative vision-language model prompted on the clean test images '
        "(analysis e5, one row per model, dataset and prompt style). Accuracy counts an unparsed "
        "answer as wrong; AUROC is defined for the multiple-choice style only (option-letter "
        "probabilities). Beside it: the best zero-shot AUROC on the dataset (above) and the best "
        "frozen logreg probe there (full depth, all labels, any encoder).</p>"
    )
    columns = {
        "model": lambda r: esc(r["model_id"]),
        "dataset": lambda r: esc(r["dataset_id"]),
        "prompt style": lambda r: esc(r["style"]),
        "images": lambda r: str(int(r["n"])),
        "parsed": number_cell("coverage"),
        "E5 accuracy": number_cell("accuracy"),
        "E5 AUROC": number_cell("macro_auroc"),
        "best zero-shot AUROC": number_cell("zeroshot_auroc"),
        "zero-shot encoder": lambda r: "" if pd.isna(r["zeroshot_encoder"]) else esc(r["zeroshot_encoder"]),
        "best logreg AUROC": number_cell("probe_auroc"),
        "probe encoder": lambda r: "" if pd.isna(r["probe_encoder"]) else esc(r["probe_encoder"]),
    }
    out = [
        intro,
        table(joined, columns, text_columns=("model", "dataset", "prompt style", "zero-shot encoder", "probe encoder")),
    ]
    bars = comparison(e5, zs)
    if np.isfinite(bars[[ZEROSHOT_BAR, PROBE_BAR, E5_BAR]].to_numpy(float)).any():
        fig = figs.grouped_bars(
            bars, [ZEROSHOT_BAR, PROBE_BAR, E5_BAR], "Clean test AUROC per dataset (best of each approach)", "AUROC"
        )
        out.append(sink.embed("zeroshot_prompting_probe", fig, "Zero-shot, probing and E5 prompting per dataset"))
    return "".join(out)


@section("zeroshot", "Zero-shot, prompting and probing (image-text and generative models)", order=140)
def zeroshot(data: ReportData, sink: FigureSink) -> str | Missing:
    if data.n_runs == 0:
        return Missing("No runs yet.", FILL["runs"])
    zs, e5 = _zeroshot_frame(data), _e5_frame(data)
    return _zeroshot_table(data, zs) + _e5_part(data, e5, zs, sink)

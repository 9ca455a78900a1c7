"""Sections beyond the paper's protocol: subgroup gaps and operating points (METHODS.md §16).

Both read the tables their analyses write (subgroup_gaps, operating_points); an empty or absent
table shows the command that fills it.
"""

from __future__ import annotations

import pandas as pd

from crsbench.reads.report_data import ReportData
from crsbench.report import figures as figs
from crsbench.report.html import FigureSink, esc
from crsbench.report.sections import FILL, Missing, section
from crsbench.report.sections_curves import generic_table

FILL.update(
    {
        "subgroups": "crsbench analyze subgroups (needs image metadata: crsbench dataset metadata)",
        "operating_points": "crsbench analyze operating_points",
    }
)


def _rows(data: ReportData, table: str, where: str) -> pd.DataFrame | None:
    if table not in data.relations:
        return None
    frame = data.wh.sql(f"select * from {table} where {where}")  # fixed names, no user input
    return frame if len(frame) else None


@section("subgroups", "Subgroup performance (worst group and gap per metadata key)", order=120)
def subgroups(data: ReportData, sink: FigureSink) -> str | Missing:
    gaps = _rows(data, "subgroup_gaps", "metric = 'auroc' and condition = 'clean' and gap is not null")
    if gaps is None:
        return Missing("No subgroup analysis stored.", FILL["subgroups"])
    out = []
    for key, part in gaps.groupby("key", sort=True):
        seed = part.groupby(["encoder_id", "dataset_id"])[["gap", "gap_lo", "gap_hi", "worst"]].mean()
        means = seed.groupby("encoder_id").mean().reset_index()
        means["label"] = [data.label(e) for e in means["encoder_id"]]
        colors = figs.palette(means["label"].tolist())
        title = f"AUROC gap between {key} groups (best - worst; mean over datasets, 95 % image bootstrap)"
        fig = figs.interval_chart(means, "gap", "gap_lo", "gap_hi", title, colors)
        out.append(sink.embed(f"subgroup_gap_{key}", fig, f"AUROC gap across {key} groups per encoder"))
    table = gaps.groupby(["encoder_id", "eval_dataset_id", "key"], sort=True).agg(
        worst_group=("worst_group", lambda s: s.mode().iloc[0] if len(s.mode()) else None),
        worst_auroc=("worst", "mean"),
        gap=("gap", "mean"),
        gap_lo=("gap_lo", "mean"),
        gap_hi=("gap_hi", "mean"),
    )
    out.append("<h3>Worst-group AUROC and gap (seed means)</h3>" + generic_table(table.reset_index(), data))
    return "".join(out)


@section("operating-points", "Operating points chosen on the calibration split", order=130)
def operating_points(data: ReportData, sink: FigureSink) -> str | Missing:
    points = _rows(data, "operating_points", "balanced_accuracy is not null")
    if points is None:
        return Missing("No operating points stored.", FILL["operating_points"])
    kind = points["condition"].where(points["condition"].isin(["clean", "shift"]), "perturbed")
    points = points.assign(condition_kind=kind)
    clean = points[points["condition_kind"] == "clean"]
    wide = clean.groupby(["encoder_id", "rule"])["balanced_accuracy"].mean().unstack("rule").reset_index()
    wide.insert(0, "label", [data.label(e) for e in wide["encoder_id"]])
    rules = [c for c in wide.columns if c not in ("label", "encoder_id")]
    fig = figs.grouped_bars(
        wide, rules, "Balanced accuracy at the calibration-chosen threshold (clean test, mean)", "balanced accuracy"
    )
    out = [sink.embed("operating_points_ba", fig, "Balanced accuracy per threshold rule")]
    gap = points.groupby(["encoder_id", "condition_kind"])["transfer_gap"].mean().unstack("condition_kind")
    gap = gap.reset_index()
    gap.insert(0, "label", [data.label(e) for e in gap["encoder_id"]])
    kinds = [c for c in ("clean", "perturbed", "shift") if c in gap.columns]
    fig = figs.grouped_bars(
        gap, kinds, "Threshold transfer gap (test-optimal minus calibration-chosen balanced accuracy)", "gap"
    )
    out.append(sink.embed("operating_points_gap", fig, "Threshold transfer gap by kind of condition"))
    summary = points.groupby(["encoder_id", "condition_kind", "rule"], sort=True)[
        ["sensitivity", "specificity", "balanced_accuracy", "ppv", "npv", "transfer_gap"]
    ].mean()
    out.append(
        f'<p class="note">Thresholds from each fit\'s stored calib predictions; see <code>{esc("operating_points")}'
        "</code>.</p>" + generic_table(summary.reset_index(), data)
    )
    return "".join(out)

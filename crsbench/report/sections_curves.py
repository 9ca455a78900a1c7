"""Sections drawn from the encoder analyses: recalibration (E2), depth (E3), label scarcity (E6).

Curves come from the analysis tables when the analysis has run, otherwise straight from
the seed-mean view `metrics_seed`, so a freshly probed warehouse already shows them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.core import CLEAN
from crsbench.reads.report_data import ReportData
from crsbench.report import figures as figs
from crsbench.report.coverage import section_coverage
from crsbench.report.html import Cell, FigureSink, encoder_cell, esc, fmt_number, number_cell, table
from crsbench.report.sections import FILL, Missing, section


def _note(text: str) -> str:
    return f'<p class="note">{text}</p>'


def _labelled(data: ReportData, frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame["label"] = [data.label(e) for e in frame["encoder_id"]]
    return frame


def _curve_source(
    data: ReportData, analysis: str, part: str, fixed: str, value: float, x: str
) -> tuple[pd.DataFrame | None, bool]:
    """(encoder_id, dataset_id, x, auroc) from the analysis table, else from metrics_seed."""
    table_ = data.analysis(analysis, part, "encoder_id", "dataset_id", x, "auroc")
    if table_ is not None:
        return table_[["encoder_id", "dataset_id", x, "auroc"]].dropna(subset=["auroc"]), True
    if data.curves is None:
        return None, False
    at = data.curves[np.isclose(data.curves[fixed].astype(float), value)]
    return at[["encoder_id", "dataset_id", x, "auroc"]].dropna(subset=["auroc"]), False


def _varies(frame: pd.DataFrame, x: str) -> bool:
    return bool(len(frame)) and int(frame.groupby(["encoder_id", "dataset_id"])[x].nunique().max()) > 1


def _curves_only(frame: pd.DataFrame, x: str) -> pd.DataFrame:
    """The (encoder, dataset) pairs with more than one `x`: a single point is no curve."""
    spread = frame.groupby(["encoder_id", "dataset_id"])[x].transform("nunique")
    return frame[spread > 1].reset_index(drop=True)


@section("recalibration", "Calibration before and after recalibration (E2)", order=90)
def recalibration(data: ReportData, sink: FigureSink) -> str | Missing:
    cells = data.analysis("e2", "cells", "encoder_id", "method", "condition", "ece_before", "ece_after")
    if cells is None or cells.empty:
        return Missing("Recalibration (E2) has not been run.", FILL["e2"])
    out = []
    bins = data.analysis(
        "e2", "reliability", "encoder_id", "dataset_id", "condition", "method", "confidence", "accuracy"
    )
    if bins is not None:
        bins = bins[bins["condition"] == CLEAN]
        for dataset, part in bins.groupby("dataset_id", sort=True):
            part = _labelled(data, part)
            fig = figs.reliability_chart(
                part,
                "label",
                "method",
                f"Reliability diagrams on {dataset} (clean test set)",
                data.roles(part["encoder_id"].unique()),
            )
            out.append(
                sink.embed(
                    f"reliability_{dataset}",
                    fig,
                    f"Reliability before (uncalibrated) and after each recalibration method, {dataset}",
                )
            )
    else:
        out.append(
            _note(
                "Reliability diagrams need per-bin confidence and accuracy (table "
                "<code>analysis_e2_reliability</code>); showing ECE before and after instead."
            )
        )
    clean = cells[cells["condition"] == CLEAN]
    if len(clean):
        means = clean.groupby(["encoder_id", "method"], sort=True)[["ece_before", "ece_after"]].mean().reset_index()
        before = means.groupby("encoder_id")["ece_before"].mean().rename("uncalibrated")
        after = means.pivot(index="encoder_id", columns="method", values="ece_after")
        wide = pd.concat([before, after], axis=1).reset_index()
        wide.insert(0, "label", [data.label(e) for e in wide["encoder_id"]])
        series = [c for c in wide.columns if c not in ("label", "encoder_id")]
        fig = figs.grouped_bars(
            wide,
            series,
            "ECE on the clean test set (mean over datasets)",
            "ECE (lower is better)",
            data.roles(wide["encoder_id"]),
        )
        out.append(sink.embed("recalibration_ece", fig, "ECE before and after each recalibration method"))
        columns: dict[str, Cell] = {"Encoder": lambda r: encoder_cell(r["encoder_id"], data.random_init)}
        columns |= {str(c): number_cell(c) for c in series}
        out.append(table(wide, columns, text_columns=["Encoder"]))
    out.append(section_coverage(data, cells[["encoder_id", "dataset_id"]] if "dataset_id" in cells else cells, "e2"))
    summary = data.analysis("e2", "summary")
    if summary is not None and len(summary):
        out.append("<h3>By method and condition kind</h3>" + generic_table(summary))
    return "".join(out)


@section("depth", "Representation depth (E3)", order=100)
def depth(data: ReportData, sink: FigureSink) -> str | Missing:
    frame, from_analysis = _curve_source(data, "e3", "depths", "label_fraction", 1.0, "depth")
    if frame is None or frame.empty:
        return Missing("No primary-probe runs at full labels yet.", FILL["runs"])
    if not _varies(frame, "depth"):
        return Missing("Runs exist at a single depth only.", FILL["depths"])
    frame = _labelled(data, _curves_only(frame, "depth"))
    roles = data.roles(frame["encoder_id"].unique())
    colors = figs.palette(frame["label"].unique().tolist(), roles)
    fig = figs.curves_chart(
        frame,
        "depth",
        "auroc",
        "depth (fraction of blocks)",
        "clean AUROC",
        "AUROC by representation depth (full labels, logreg probe)",
        colors,
        roles=roles,
    )
    out = [
        sink.embed("depth", fig, "Clean AUROC at 25/50/75/100 % depth"),
        section_coverage(data, frame, "e3" if from_analysis else None, need="depths"),
    ]
    sweeps = data.analysis("e3", "sweeps")
    if sweeps is not None and len(sweeps):
        out.append("<h3>Best depth per encoder and dataset</h3>" + generic_table(sweeps, data))
    elif not from_analysis:
        out.append(
            _note(
                f"Curves from <code>metrics_seed</code>; run <code>{esc(FILL['e3'])}</code> for the best-depth table."
            )
        )
    return "".join(out)


@section("label-efficiency", "Label efficiency and crossover (E6)", order=110)
def label_efficiency(data: ReportData, sink: FigureSink) -> str | Missing:
    frame, from_analysis = _curve_source(data, "e6", "curve", "depth", 1.0, "label_fraction")
    if frame is None or frame.empty:
        return Missing("No primary-probe runs at full depth yet.", FILL["runs"])
    if not _varies(frame, "label_fraction"):
        return Missing("Runs exist at a single label fraction only.", FILL["runs"])
    frame = _labelled(data, _curves_only(frame, "label_fraction"))
    roles = data.roles(frame["encoder_id"].unique())
    colors = figs.palette(frame["label"].unique().tolist(), roles)
    scarcity = data.analysis(
        "e6", "scarcity", "encoder_id", "dataset_id", "reference_id", "reference_auroc_full", "crossover_fraction"
    )
    references, markers, title = None, None, "AUROC by label fraction (full depth, logreg probe)"
    if scarcity is not None and len(scarcity):
        references = (
            scarcity.dropna(subset=["reference_auroc_full"])
            .groupby("dataset_id")["reference_auroc_full"]
            .first()
            .to_dict()
        )
        if scarcity["reference_id"].notna().any():
            title += f"; dotted: reference {scarcity['reference_id'].dropna().iloc[0]} at 100 %"
        hits = scarcity.dropna(subset=["crossover_fraction"])
        hits = hits.assign(x=hits["crossover_fraction"].astype(float))
        markers = hits.merge(
            frame,
            left_on=["encoder_id", "dataset_id", "x"],
            right_on=["encoder_id", "dataset_id", "label_fraction"],
            how="inner",
        )
        markers = markers.rename(columns={"auroc": "y"})[["dataset_id", "x", "y"]]
    fig = figs.curves_chart(
        frame,
        "label_fraction",
        "auroc",
        "fraction of training labels (log)",
        "clean AUROC",
        title,
        colors,
        log_x=True,
        references=references,
        markers=markers,
        roles=roles,
    )
    out = [
        sink.embed(
            "label_efficiency", fig, "Clean AUROC by label fraction; stars mark each crossover with the reference"
        ),
        section_coverage(data, frame, "e6" if from_analysis else None, need="fractions"),
    ]
    if scarcity is not None and len(scarcity):
        out.append("<h3>AUROC at scarce labels and crossover fraction</h3>" + generic_table(scarcity, data))
    else:
        out.append(_note(f"Run <code>{esc(FILL['e6'])}</code> for the crossover fractions."))
    return "".join(out)


def nullable_table(frame: pd.DataFrame, data: ReportData | None = None) -> str:
    """`generic_table` of a frame whose missing values (NaN, NA) show as a dash."""
    return generic_table(frame.astype(object).where(frame.notna(), None), data)


def generic_table(frame: pd.DataFrame, data: ReportData | None = None, max_rows: int = 200) -> str:
    """Any analysis table as HTML; encoders get their random-init badge."""
    frame = frame.head(max_rows)
    text = [
        c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])
    ]

    def cell(column: str) -> Cell:
        if column == "encoder_id" and data is not None:
            return lambda r: encoder_cell(r[column], data.random_init)
        if column in text:
            return lambda r: "&ndash;" if r[column] is None or r[column] is pd.NA else esc(r[column])
        return lambda r: fmt_number(r[column])

    return table(frame, {str(c): cell(c) for c in frame.columns}, text_columns=[str(c) for c in text])

"""The report's cost section: reliability against what an encoder costs to run (METHODS.md §2.8).

CRS (the panel's crs_encoder) against GFLOPs per image and against measured images/s (view
encoder_cost), each with its Pareto front: the encoders no other beats on both cost and CRS.
An encoder whose feature sets were extracted before cost was measured is listed as "not measured",
never drawn at zero.
"""

from __future__ import annotations

import pandas as pd

from crsbench.reads.cost import cost_text, pareto_front, with_cost
from crsbench.reads.report_data import ReportData
from crsbench.report import figures as figs
from crsbench.report.html import FigureSink, esc
from crsbench.report.sections import FILL, Missing, section
from crsbench.report.sections_curves import generic_table

FILL["cost"] = "crsbench extract (cost is measured when a feature set is created)"

# (cost column, axis label, front column); images/s is a cost read backwards: higher is cheaper.
PANELS = (
    ("gflops_per_image", "GFLOPs per image (lower is cheaper)", "front_flops"),
    ("images_per_s", "measured images/s (higher is cheaper)", "front_speed"),
)


def cost_board(data: ReportData) -> pd.DataFrame | None:
    """The panel's encoders with a CRS, their measured cost and whether each is on the Pareto front
    of CRS against GFLOPs (`front_flops`) and against images/s (`front_speed`); None without any."""
    if data.crs_encoder is None or not data.has("encoder_cost"):
        return None
    board = data.crs_encoder[data.crs_encoder["crs"].notna()][["encoder_id", "crs"]]
    board = with_cost(data.wh, board.reset_index(drop=True))
    if board.empty or board["gflops_per_image"].isna().all():
        return None
    board["front_flops"] = pareto_front(board["gflops_per_image"], board["crs"])
    board["front_speed"] = pareto_front(-board["images_per_s"].astype(float), board["crs"])
    board["label"] = [data.label(e) for e in board["encoder_id"]]
    return board


@section("cost", "Reliability vs cost", order=75)
def cost(data: ReportData, sink: FigureSink) -> str | Missing:
    board = cost_board(data)
    if board is None:
        return Missing("No measured cost for the panel's encoders.", FILL["cost"])
    title = f"CRS against cost, panel {data.panel} (ringed: the Pareto front)"
    fig = figs.cost_chart(board, PANELS, title, data.roles(board["encoder_id"]))
    out = [
        sink.embed("reliability_vs_cost", fig, "CRS against GFLOPs per image and measured images/s"),
        "<p>An encoder is on the Pareto front when no other has both a lower cost and a higher CRS. "
        "GFLOPs are counted by torch's FlopCounterMode on one image at the encoder's input size (a "
        "multiply-add is 2 FLOPs); images/s times the model's forward alone on the device and dtype "
        "shown. Both were measured once, when each feature set was extracted.</p>",
    ]
    unmeasured = board.loc[board["gflops_per_image"].isna(), "encoder_id"].tolist()
    if unmeasured:
        out.append(f"<p>Not measured (extracted before cost was): {esc(', '.join(unmeasured))}.</p>")
    table = pd.DataFrame(
        {
            "encoder_id": board["encoder_id"],
            "crs": board["crs"],
            "gflops_per_image": [cost_text(v) for v in board["gflops_per_image"]],
            "images_per_s": [cost_text(v) for v in board["images_per_s"]],
            "params_millions": [cost_text(v, 1e6) for v in board["params"]],
            "on_front_flops": [
                cost_text(None) if pd.isna(g) else ("yes" if f else "no")
                for g, f in zip(board["gflops_per_image"], board["front_flops"], strict=True)
            ],
            "measured_on": [
                cost_text(None) if pd.isna(d) else f"{d} {t}"
                for d, t in zip(board["cost_device"], board["cost_dtype"], strict=True)
            ],
        }
    )
    out.append(generic_table(table, data))
    return "".join(out)

"""Report section: representation agreement (METHODS.md §17), from analysis `agreement`.

Per dataset, a heat-map of the mutual k-NN overlap of every encoder pair, encoders ordered by CRS
(best first; encoders without a CRS after, by id), beside a heat-map of classifier-transfer
retention (the column encoder's stored probe reading the row encoder's mapped features).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crsbench.reads.report_data import ReportData
from crsbench.report import figures as figs
from crsbench.report.html import FigureSink, esc
from crsbench.report.sections import Missing, section

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

COMMAND = "crsbench analyze agreement"


def crs_order(data: ReportData, encoders: list[str]) -> list[str]:
    """Encoders by CRS, best first; those without one after them, by id."""
    crs: dict[str, float] = {}
    if data.crs_encoder is not None and "crs" in data.crs_encoder.columns:
        frame = data.crs_encoder.dropna(subset=["crs"])
        if "regime" in frame.columns:
            frame = frame[frame["regime"].isin(["frozen", None])]
        crs = dict(zip(frame["encoder_id"], frame["crs"].astype(float), strict=True))
    return sorted(encoders, key=lambda e: (e not in crs, -crs.get(e, 0.0), e))


def _matrix(pairs: pd.DataFrame, order: list[str], value: str, symmetric: bool, diagonal: float) -> np.ndarray:
    index = {e: i for i, e in enumerate(order)}
    out = np.full((len(order), len(order)), np.nan)
    np.fill_diagonal(out, diagonal)
    for a, b, v in zip(pairs["encoder_a"], pairs["encoder_b"], pairs[value], strict=True):
        if a in index and b in index:
            out[index[a], index[b]] = v
            if symmetric:
                out[index[b], index[a]] = v
    return out


def colour_range(matrix: np.ndarray) -> tuple[float, float]:
    """The colour bar's range: 0 to 1, widened to every value shown (a retention can pass 1)."""
    finite = matrix[np.isfinite(matrix)]
    if finite.size == 0:
        return 0.0, 1.0
    return min(0.0, float(finite.min())), max(1.0, float(finite.max()))


def _heat(ax: Axes, matrix: np.ndarray, labels: list[str], title: str, xlabel: str, ylabel: str) -> None:
    vmin, vmax = colour_range(matrix)
    image = ax.imshow(matrix, vmin=vmin, vmax=vmax, cmap=figs.colormap("viridis"))
    ax.set_xticks(range(len(labels)), labels, rotation=90, ha="center", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    for (i, j), v in np.ndenumerate(matrix):
        if np.isfinite(v):
            shade = (v - vmin) / (vmax - vmin)  # where the value sits on the colour bar
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color="white" if shade < 0.6 else "black")
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)


def agreement_figure(knn: np.ndarray, retention: np.ndarray | None, labels: list[str], subtitle: str) -> Figure:
    panels = 2 if retention is not None else 1
    side = 1.2 + 0.55 * len(labels)
    fig = figs.new_figure(figsize=(side * panels + 1.0, side + 0.6))
    ax = fig.add_subplot(1, panels, 1)
    _heat(ax, knn, labels, f"Mutual k-NN overlap ({subtitle})", "encoder", "encoder")
    if retention is not None:
        _heat(
            fig.add_subplot(1, panels, 2),
            retention,
            labels,
            "Transfer retention: column's probe on row's mapped features",
            "probe of",
            "features of",
        )
    fig.tight_layout()
    return fig


@section("agreement", "Representation agreement: will the next encoder agree?", order=80)
def agreement(data: ReportData, sink: FigureSink) -> str | Missing:
    pairs = data.analysis(
        "agreement",
        "encoder_agreement",
        "dataset_id",
        "encoder_a",
        "encoder_b",
        "depth",
        "measure",
        "estimate",
        "chance",
    )
    if pairs is None or pairs.empty:
        return Missing("Encoder agreement has not been computed.", COMMAND)
    moved = data.analysis(
        "agreement", "classifier_transfer", "dataset_id", "encoder_a", "encoder_b", "depth", "retention"
    )
    out = [
        '<p class="note">Share of each image\'s nearest neighbours two encoders have in common (cosine, '
        "L2-normalised features, clean images), encoders ordered by CRS. Chance is k / (n - 1). "
        "Retention: AUROC of a stored probe reading another encoder's features through a linear map, "
        "as a share of its own AUROC; above 1, the mapped features serve that probe better than its own "
        "encoder's (the colour bar then reaches the largest value).</p>"
    ]
    knn = pairs[pairs["measure"] == "mutual_knn"]
    for (dataset, depth), part in knn.groupby(["dataset_id", "depth"], sort=True):
        order = crs_order(data, sorted(set(part["encoder_a"]) | set(part["encoder_b"])))
        labels = [data.label(e) for e in order]
        retention = None
        if moved is not None and len(moved):
            here = moved[(moved["dataset_id"] == dataset) & np.isclose(moved["depth"].astype(float), float(depth))]
            if len(here):
                means = here.groupby(["encoder_a", "encoder_b"], as_index=False)["retention"].mean()
                retention = _matrix(means, order, "retention", symmetric=False, diagonal=np.nan)
        chance = float(part["chance"].iloc[0])
        subtitle = f"{dataset}, depth {float(depth):g}, chance {chance:.3f}"
        fig = agreement_figure(_matrix(part, order, "estimate", True, 1.0), retention, labels, subtitle)
        out.append(f"<h3>{esc(str(dataset))}</h3>")
        out.append(sink.embed(f"agreement_{dataset}_{float(depth):g}", fig, f"Encoder agreement on {dataset}"))
    return "".join(out)

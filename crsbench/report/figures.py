"""The report's figures, drawn with matplotlib's object API (no pyplot state, Agg canvas).

Each function takes plain frames and returns a `Figure`; `png_bytes` renders one.
Random-init encoders are drawn dashed and carry "(random-init)" in their label.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure

RANDOM_INIT_COLOR = "#c0392b"
UP, DOWN, SAME = "#1e8449", "#c0392b", "#95a5a6"
UNCALIBRATED = ("uncalibrated", "none", "before")


# matplotlib is imported when a figure is drawn, so the modules that import this one for
# their names (the report's data and sections) cost nothing to commands that draw none.
def new_figure(**kwargs: Any) -> Figure:
    """An Agg-backed matplotlib Figure (`Figure(**kwargs)`)."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def colormap(name: str) -> Colormap:
    from matplotlib import colormaps

    return colormaps[name]


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    """The figure as PNG (no timestamp or version metadata, so reruns are byte-stable)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    return buffer.getvalue()


def palette(labels: Sequence[str]) -> dict[str, str]:
    """One stable colour per label across every figure."""
    # Reds are kept for random-init encoders, so no pretrained encoder is drawn in one.
    from matplotlib.colors import to_hex

    cmap = colormap("tab20" if len(labels) > 9 else "tab10")
    reds = {6, 7} if cmap.N == 20 else {3}
    colors = [to_hex(cmap(i)) for i in range(cmap.N) if i not in reds]
    return {label: colors[i % len(colors)] for i, label in enumerate(sorted(labels))}


def _line_style(label: str) -> str:
    return "--" if label.endswith("(random-init)") else "-"


def profile_chart(
    norm: pd.DataFrame, axes: Sequence[str], axis_labels: Mapping[str, str], colors: Mapping[str, str]
) -> Figure:
    """Small-multiple radar charts of the normalised axes, one per encoder (column `label`)."""
    n = len(norm)
    cols = min(5, max(n, 1))
    rows = math.ceil(n / cols)
    fig = new_figure(figsize=(2.6 * cols, 2.8 * rows + 0.2))
    angles = np.linspace(0, 2 * np.pi, len(axes), endpoint=False)
    closed = np.concatenate([angles, angles[:1]])
    for i, row in enumerate(norm.itertuples(index=False)):
        ax = fig.add_subplot(rows, cols, i + 1, projection="polar")
        values = np.array([getattr(row, a) for a in axes], dtype=float)
        values = np.concatenate([values, values[:1]])
        label = str(row.label)
        random_init = label.endswith("(random-init)")
        color = RANDOM_INIT_COLOR if random_init else colors.get(label, "#34495e")
        ax.plot(closed, np.nan_to_num(values), color=color, linestyle=_line_style(label), linewidth=1.8)
        ax.fill(closed, np.nan_to_num(values), color=color, alpha=0.25)
        ax.set_ylim(0, 1)
        ax.set_yticks([0.5, 1.0])
        ax.set_yticklabels([])
        ax.set_xticks(angles)
        ax.set_xticklabels([axis_labels[a].replace(" ", "\n") for a in axes], fontsize=7)
        ax.set_title(
            label.replace(" (random-init)", "\n(random-init)"),
            fontsize=9,
            color=RANDOM_INIT_COLOR if random_init else "black",
            pad=12,
        )
    fig.suptitle("Four normalised axes per encoder (panel anchors: 0 = panel min, 1 = panel max)", fontsize=10)
    fig.tight_layout()
    return fig


def slope_chart(ranks: pd.DataFrame, subtitle: str) -> Figure:
    """AUROC rank (left) to CRS rank (right); encoders that move are coloured (columns label, auroc_rank, crs_rank)."""
    n = len(ranks)
    fig = new_figure(figsize=(7.5, max(3.0, 0.38 * n + 1.4)))
    ax = fig.add_subplot(1, 1, 1)
    left, right = _spread(ranks["auroc_rank"]), _spread(ranks["crs_rank"])
    for i, row in enumerate(ranks.itertuples(index=False)):
        a, c = float(row.auroc_rank), float(row.crs_rank)
        color = UP if c < a else DOWN if c > a else SAME
        width = 2.4 if c != a else 1.2
        ax.plot(
            [0, 1],
            [a, c],
            color=color,
            linewidth=width,
            linestyle=_line_style(str(row.label)),
            marker="o",
            markersize=4,
        )
        ax.text(
            -0.03,
            left[i],
            f"{row.label}  {a:g}",
            ha="right",
            va="center",
            fontsize=8,
            color=RANDOM_INIT_COLOR if str(row.label).endswith("(random-init)") else "black",
        )
        ax.text(
            1.03,
            right[i],
            f"{c:g}  {row.label}",
            ha="left",
            va="center",
            fontsize=8,
            color=RANDOM_INIT_COLOR if str(row.label).endswith("(random-init)") else "black",
        )
    ax.set_xlim(-0.9, 1.9)
    ax.set_ylim(n + 0.7, 0.3)
    ax.set_xticks([0, 1])
    ax.set_xticklabels(["AUROC rank", "CRS rank"], fontsize=10)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(
        f"AUROC rank -> CRS rank  ({subtitle})\ngreen: rises under CRS, red: falls, grey: unchanged", fontsize=9
    )
    fig.tight_layout()
    return fig


def _spread(ranks: pd.Series, gap: float = 0.42) -> list[float]:
    """Label positions: tied ranks are fanned out around the rank so their names stay legible."""
    positions = [float(r) for r in ranks]
    for value in set(positions):
        tied = [i for i, p in enumerate(positions) if p == value]
        for k, i in enumerate(tied):
            positions[i] = value + (k - (len(tied) - 1) / 2) * gap
    return positions


def interval_chart(frame: pd.DataFrame, value: str, lo: str, hi: str, title: str, colors: Mapping[str, str]) -> Figure:
    """Point estimate with its interval per encoder (column `label`), best at the top."""
    frame = frame.sort_values(value, ascending=True).reset_index(drop=True)
    fig = new_figure(figsize=(6.5, max(2.5, 0.34 * len(frame) + 1.0)))
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(len(frame))
    for i, row in frame.iterrows():
        color = (
            RANDOM_INIT_COLOR if str(row["label"]).endswith("(random-init)") else colors.get(row["label"], "#34495e")
        )
        ax.plot([row[lo], row[hi]], [i, i], color=color, linewidth=2)
        ax.plot([row[value]], [i], "o", color=color)
    ax.set_yticks(y)
    ax.set_yticklabels(frame["label"], fontsize=8)
    ax.set_xlabel(value.upper() if len(value) <= 5 else value)
    ax.set_title(title, fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def rank_probability_chart(frame: pd.DataFrame, p_first: str, p_top3: str) -> Figure:
    """Bootstrap P(rank 1) and P(top 3) per encoder (column `label`)."""
    frame = frame.sort_values([p_top3, p_first], ascending=True).reset_index(drop=True)
    fig = new_figure(figsize=(6.5, max(2.5, 0.34 * len(frame) + 1.0)))
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(len(frame))
    ax.barh(y + 0.2, frame[p_top3], height=0.4, color="#5dade2", label="P(top 3)")
    ax.barh(y - 0.2, frame[p_first], height=0.4, color="#1f618d", label="P(rank 1)")
    ax.set_yticks(y)
    ax.set_yticklabels(frame["label"], fontsize=8)
    for tick, label in zip(ax.get_yticklabels(), frame["label"]):
        if str(label).endswith("(random-init)"):
            tick.set_color(RANDOM_INIT_COLOR)
    ax.set_xlim(0, 1)
    ax.set_xlabel("probability over bootstrap replicates")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def _facets(keys: Sequence[str], width: float = 4.2, height: float = 3.2, cols: int = 3) -> tuple[Figure, list]:
    cols = min(cols, max(len(keys), 1))
    rows = math.ceil(len(keys) / cols)
    fig = new_figure(figsize=(width * cols, height * rows + 0.6))
    return fig, [fig.add_subplot(rows, cols, i + 1) for i in range(len(keys))]


def curves_chart(
    frame: pd.DataFrame,
    x: str,
    y: str,
    xlabel: str,
    ylabel: str,
    title: str,
    colors: Mapping[str, str],
    log_x: bool = False,
    references: Mapping[str, float] | None = None,
    markers: pd.DataFrame | None = None,
) -> Figure:
    """One panel per dataset, one line per encoder (columns dataset_id, label, x, y).

    `references` draws a horizontal line per dataset (e.g. the reference encoder's
    full-label AUROC); `markers` (dataset_id, label, x) marks points such as crossovers.
    """
    datasets = sorted(frame["dataset_id"].unique())
    fig, axes = _facets(datasets)
    for ax, dataset in zip(axes, datasets):
        part = frame[frame["dataset_id"] == dataset]
        for label, line in part.groupby("label", sort=True):
            line = line.sort_values(x)
            color = RANDOM_INIT_COLOR if str(label).endswith("(random-init)") else colors.get(label, "#34495e")
            ax.plot(
                line[x],
                line[y],
                marker="o",
                markersize=3,
                linewidth=1.4,
                color=color,
                linestyle=_line_style(str(label)),
                label=label,
            )
        if references and dataset in references:
            ax.axhline(
                references[dataset], color="black", linestyle=":", linewidth=1, label="reference full-label AUROC"
            )
        if markers is not None:
            for row in markers[markers["dataset_id"] == dataset].itertuples(index=False):
                ax.plot([row.x], [row.y], marker="*", markersize=12, color="black", zorder=5)
        if log_x:
            ax.set_xscale("log")
        ax.set_title(dataset, fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(alpha=0.3)
    if axes:
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(4, max(len(labels), 1)), fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=10)
    rows = math.ceil(len(datasets) / 3) if datasets else 1
    legend_rows = math.ceil(len(frame["label"].unique()) / 4)
    fig.tight_layout(rect=(0, (0.05 + 0.035 * legend_rows) / rows, 1, 1 - 0.07 / rows))
    return fig


def reliability_chart(frame: pd.DataFrame, panel_key: str, series_key: str, title: str) -> Figure:
    """Reliability diagrams: one panel per `panel_key`, one line per `series_key` (columns confidence, accuracy)."""
    keys = sorted(frame[panel_key].unique())
    fig, axes = _facets(keys, width=2.9, height=2.8, cols=5)
    cmap = colormap("tab10")
    series = sorted(frame[series_key].unique(), key=lambda s: (s not in UNCALIBRATED, str(s)))
    for ax, key in zip(axes, keys):
        part = frame[frame[panel_key] == key]
        ax.plot([0, 1], [0, 1], color="black", linestyle=":", linewidth=1, label="perfect calibration")
        for i, name in enumerate(series):
            line = part[part[series_key] == name].sort_values("confidence")
            if len(line):
                before = name in UNCALIBRATED
                ax.plot(
                    line["confidence"],
                    line["accuracy"],
                    marker="o",
                    markersize=3,
                    color="#7f8c8d" if before else cmap(i % 10),
                    linestyle="--" if before else "-",
                    label=str(name),
                )
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_title(str(key), fontsize=8, color=RANDOM_INIT_COLOR if "(random-init)" in str(key) else "black")
        ax.set_xlabel("confidence", fontsize=8)
        ax.set_ylabel("observed frequency", fontsize=8)
    if axes:
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(5, len(labels)), fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=10)
    rows = math.ceil(len(keys) / 5) if keys else 1
    fig.tight_layout(rect=(0, 0.12 / rows, 1, 1 - 0.08 / rows))
    return fig


def grouped_bars(frame: pd.DataFrame, series: Sequence[str], title: str, ylabel: str) -> Figure:
    """One group of bars per row (column `label`), one bar per column in `series`."""
    n, k = len(frame), max(len(series), 1)
    fig = new_figure(figsize=(max(6.0, 0.9 * n * k / 3 + 2), 3.6))
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(n)
    width = 0.8 / k
    cmap = colormap("tab10")
    for i, name in enumerate(series):
        ax.bar(
            x + (i - (k - 1) / 2) * width, frame[name].astype(float), width=width, color=cmap(i % 10), label=str(name)
        )
    ax.set_xticks(x)
    ax.set_xticklabels(
        [str(v).replace(" (random-init)", "\n(random-init)") for v in frame["label"]], fontsize=7, rotation=0
    )
    for tick, label in zip(ax.get_xticklabels(), frame["label"]):
        if str(label).endswith("(random-init)"):
            tick.set_color(RANDOM_INIT_COLOR)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=min(k, 5))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig

"""The report's figures, drawn with matplotlib's object API (no pyplot state, Agg canvas).

Each function takes plain frames and returns a `Figure`; `png_bytes` renders one.
Encoders are named by label; `roles` maps a label to its role (crsbench.report.roles:
random-init, candidate or member; without it a label ending in "(random-init)" is random-init).
Each role and the direction of a rank change has its own colour, and every figure where one
appears carries its colour key. Encoder series are tagged (`tag_series`) for the layout map.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from crsbench.report.layout import declutter, tag_series
from crsbench.report.roles import (
    DIRECTION_COLORS,
    DIRECTION_KEYS,
    FALLS,
    RISES,
    ROLE_COLORS,
    ROLE_KEYS,
    UNCHANGED,
    add_key,
    categorical,
    linestyle,
    palette,
    role_key,
    role_of,
    roles_present,
    text_color,
)
from crsbench.report.roles import (
    markers as role_markers,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure

__all__ = ["new_figure", "palette", "png_bytes"]  # palette lives in roles; kept importable here

RANDOM_INIT_COLOR = ROLE_COLORS["random-init"]
UP, DOWN, SAME = DIRECTION_COLORS[RISES], DIRECTION_COLORS[FALLS], DIRECTION_COLORS[UNCHANGED]
Roles = Mapping[str, str] | None
UNCALIBRATED = ("uncalibrated", "none", "before")
MAX_WIDTH_IN = 10.5  # 1155 px at the report's 110 dpi: the page's content column shows it unscaled


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


def profile_chart(
    norm: pd.DataFrame,
    axes: Sequence[str],
    axis_labels: Mapping[str, str],
    colors: Mapping[str, str],
    roles: Roles = None,
) -> Figure:
    """Small-multiple radar charts of the normalised axes, one per encoder (column `label`)."""
    n = len(norm)
    cols = min(5, max(n, 1))
    rows = math.ceil(n / cols)
    fig = new_figure(figsize=(2.9 * cols, 2.9 * rows + 0.2))
    angles = np.linspace(0, 2 * np.pi, len(axes), endpoint=False)
    closed = np.concatenate([angles, angles[:1]])
    for i, row in enumerate(norm.itertuples(index=False)):
        ax = fig.add_subplot(rows, cols, i + 1, projection="polar")
        values = np.array([getattr(row, a) for a in axes], dtype=float)
        values = np.concatenate([values, values[:1]])
        label = str(row.label)
        color = colors.get(label, "#34495e")
        (line,) = ax.plot(closed, np.nan_to_num(values), color=color, linestyle=linestyle(label, roles), linewidth=1.8)
        tag_series(line, role_of(label, roles), label)
        ax.fill(closed, np.nan_to_num(values), color=color, alpha=0.25)
        ax.set_ylim(0, 1)
        ax.set_yticks([0.5, 1.0])
        ax.set_yticklabels([])
        ax.set_xticks(angles)
        ax.set_xticklabels([])
        for angle, axis in zip(angles, axes, strict=True):
            # names beside the circle start at its edge instead of straddling it
            cos, sin = math.cos(angle), math.sin(angle)
            ax.text(
                angle,
                1.12,
                axis_labels[axis].replace(" ", "\n"),
                fontsize=7,
                ha="left" if cos > 0.3 else "right" if cos < -0.3 else "center",
                va="bottom" if sin > 0.3 else "top" if sin < -0.3 else "center",
            )
        ax.set_title(
            label.replace(" (random-init)", "\n(random-init)"), fontsize=9, color=text_color(label, roles), pad=20
        )
    fig.suptitle("Four normalised axes per encoder (panel anchors: 0 = panel min, 1 = panel max)", fontsize=10)
    fig.tight_layout(w_pad=1.0)
    role_key(fig, norm["label"].astype(str), roles)
    return fig


def slope_chart(ranks: pd.DataFrame, subtitle: str, roles: Roles = None) -> Figure:
    """AUROC rank (left) to CRS rank (right); line colour: direction of the change, name colour: role.

    Columns label, auroc_rank, crs_rank. Names are spread apart where ranks tie or crowd.
    """
    n = len(ranks)
    fig = new_figure(figsize=(7.5, max(3.0, 0.38 * n + 1.4)))
    ax = fig.add_subplot(1, 1, 1)
    gap = 0.45 if n >= 5 else 0.45 * 5 / max(n, 1) * 0.6
    left, right = declutter(ranks["auroc_rank"], gap), declutter(ranks["crs_rank"], gap)
    directions = set()
    for i, row in enumerate(ranks.itertuples(index=False)):
        a, c = float(row.auroc_rank), float(row.crs_rank)
        label = str(row.label)
        direction = RISES if c < a else FALLS if c > a else UNCHANGED
        directions.add(direction)
        (line,) = ax.plot(
            [0, 1],
            [a, c],
            color=DIRECTION_COLORS[direction],
            linewidth=2.4 if c != a else 1.2,
            linestyle=linestyle(label, roles),
            marker="o",
            markersize=4,
        )
        tag_series(line, direction, label)
        for x, y, text, ha in (
            (-0.03, left[i], f"{label}  {a:g}", "right"),
            (1.03, right[i], f"{c:g}  {label}", "left"),
        ):
            name = ax.text(x, y, text, ha=ha, va="center", fontsize=8, color=text_color(label, roles))
            tag_series(name, role_of(label, roles), label)
    low = min([*left, *right, 1.0]) - 0.7
    high = max([*left, *right, float(n)]) + 0.7
    ax.set_xlim(-0.9, 1.9)
    ax.set_ylim(high, low)
    ax.set_xticks([0, 1])
    ax.set_xticklabels(["AUROC rank", "CRS rank"], fontsize=10)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"AUROC rank -> CRS rank  ({subtitle})", fontsize=9)
    fig.tight_layout()
    keys = [(DIRECTION_KEYS[d], DIRECTION_COLORS[d]) for d in (RISES, FALLS, UNCHANGED) if d in directions]
    keys += [(ROLE_KEYS[r], ROLE_COLORS[r]) for r in roles_present(ranks["label"].astype(str), roles)]
    add_key(fig, keys, ncol=min(len(keys), 3))
    return fig


def _tag_ticks(ticks: Sequence[Any], labels: Sequence[str], roles: Roles) -> None:
    for tick, label in zip(ticks, labels, strict=True):
        tick.set_color(text_color(str(label), roles))
        tag_series(tick, role_of(str(label), roles), str(label))


def interval_chart(
    frame: pd.DataFrame, value: str, lo: str, hi: str, title: str, colors: Mapping[str, str], roles: Roles = None
) -> Figure:
    """Point estimate with its interval per encoder (column `label`), best at the top."""
    frame = frame.sort_values(value, ascending=True).reset_index(drop=True)
    fig = new_figure(figsize=(6.5, max(2.5, 0.34 * len(frame) + 1.0)))
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(len(frame))
    for i, row in frame.iterrows():
        label = str(row["label"])
        color = colors.get(label, "#34495e")
        (line,) = ax.plot([row[lo], row[hi]], [i, i], color=color, linewidth=2, linestyle=linestyle(label, roles))
        tag_series(line, role_of(label, roles), label)
        ax.plot([row[value]], [i], "o", color=color)
    ax.set_yticks(y)
    ax.set_yticklabels(frame["label"], fontsize=8)
    _tag_ticks(ax.get_yticklabels(), frame["label"].tolist(), roles)
    ax.set_xlabel(value.upper() if len(value) <= 5 else value)
    ax.set_title(title, fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    role_key(fig, frame["label"].astype(str), roles)
    return fig


def rank_probability_chart(frame: pd.DataFrame, p_first: str, p_top3: str, roles: Roles = None) -> Figure:
    """Bootstrap P(rank 1) and P(top 3) per encoder (column `label`)."""
    frame = frame.sort_values([p_top3, p_first], ascending=True).reset_index(drop=True)
    fig = new_figure(figsize=(6.5, max(2.5, 0.34 * len(frame) + 1.0)))
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(len(frame))
    ax.barh(y + 0.2, frame[p_top3], height=0.4, color="#5dade2", label="P(top 3)")
    ax.barh(y - 0.2, frame[p_first], height=0.4, color="#1f618d", label="P(rank 1)")
    ax.set_yticks(y)
    ax.set_yticklabels(frame["label"], fontsize=8)
    _tag_ticks(ax.get_yticklabels(), frame["label"].tolist(), roles)
    ax.set_xlim(0, 1)
    ax.set_xlabel("probability over bootstrap replicates")
    # beside the bars, never over them
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    role_key(fig, frame["label"].astype(str), roles)
    return fig


def _facets(keys: Sequence[str], width: float = 4.2, height: float = 3.2, cols: int = 3) -> tuple[Figure, list[Axes]]:
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
    roles: Roles = None,
) -> Figure:
    """One panel per dataset, one line per encoder (columns dataset_id, label, x, y).

    `references` draws a horizontal line per dataset (e.g. the reference encoder's
    full-label AUROC); `markers` (dataset_id, label, x) marks points such as crossovers.
    The encoder legend lists every encoder drawn in any panel, under the panels.
    """
    datasets = sorted(frame["dataset_id"].unique())
    fig, axes = _facets(datasets)
    legend: dict[str, Any] = {}
    shapes = role_markers(frame["label"].astype(str).tolist(), roles)
    for ax, dataset in zip(axes, datasets, strict=True):
        legend |= _encoder_lines(ax, frame[frame["dataset_id"] == dataset], x, y, colors, shapes, roles, legend)
        if references and dataset in references:
            legend["reference full-label AUROC"] = ax.axhline(
                references[dataset], color="black", linestyle=":", linewidth=1
            )
        if markers is not None:
            for row in markers[markers["dataset_id"] == dataset].itertuples(index=False):
                ax.plot([row.x], [row.y], marker="*", markersize=12, color="black", zorder=5)
        _label_panel(ax, dataset, xlabel, ylabel, log_x)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    if legend:
        _legend_below(fig, legend)
    role_key(fig, frame["label"].astype(str), roles)  # under the encoder legend
    return fig


def _encoder_lines(
    ax: Axes,
    part: pd.DataFrame,
    x: str,
    y: str,
    colors: Mapping[str, str],
    shapes: Mapping[str, str],
    roles: Roles,
    legend: Mapping[str, Any],
) -> dict[str, Any]:
    """One line per encoder of one panel; returns the legend handles of labels `legend` lacks yet."""
    new: dict[str, Any] = {}
    for label, line in part.groupby("label", sort=True):
        line = line.sort_values(x)
        (drawn,) = ax.plot(
            line[x],
            line[y],
            marker=shapes[str(label)],
            markersize=3.5,
            linewidth=1.4,
            color=colors.get(str(label), "#34495e"),
            linestyle=linestyle(str(label), roles),
            label=label,
        )
        tag_series(drawn, role_of(str(label), roles), str(label))
        if str(label) not in legend:
            new.setdefault(str(label), drawn)
    return new


def _label_panel(ax: Axes, dataset: str, xlabel: str, ylabel: str, log_x: bool) -> None:
    if log_x:
        ax.set_xscale("log")
    ax.set_title(dataset, fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.grid(alpha=0.3)


def _legend_below(fig: Figure, legend: Mapping[str, Any]) -> None:
    """The encoder legend under the panels, up to four columns."""
    fig.legend(
        list(legend.values()),
        list(legend),
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=min(4, len(legend)),
        fontsize=7,
        frameon=False,
    )


def reliability_chart(frame: pd.DataFrame, panel_key: str, series_key: str, title: str, roles: Roles = None) -> Figure:
    """Reliability diagrams: one panel per `panel_key`, one line per `series_key` (columns confidence, accuracy)."""
    keys = sorted(frame[panel_key].unique())
    fig, axes = _facets(keys, width=2.9, height=2.8, cols=5)
    series = sorted(frame[series_key].unique(), key=lambda s: (s not in UNCALIBRATED, str(s)))
    method_colors = categorical(len(series))
    legend: dict[str, Any] = {}
    for ax, key in zip(axes, keys, strict=True):
        part = frame[frame[panel_key] == key]
        legend["perfect calibration"] = ax.plot([0, 1], [0, 1], color="black", linestyle=":", linewidth=1)[0]
        for i, name in enumerate(series):
            line = part[part[series_key] == name].sort_values("confidence")
            if len(line):
                before = name in UNCALIBRATED
                legend.setdefault(
                    str(name),
                    ax.plot(
                        line["confidence"],
                        line["accuracy"],
                        marker="o",
                        markersize=3,
                        color="#7f8c8d" if before else method_colors[i % len(method_colors)],
                        linestyle="--" if before else "-",
                    )[0],
                )
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        title_text = ax.set_title(
            str(key).replace(" (random-init)", "\n(random-init)"), fontsize=8, color=text_color(str(key), roles)
        )
        tag_series(title_text, role_of(str(key), roles), str(key))
        ax.set_xlabel("confidence", fontsize=8)
        ax.set_ylabel("observed frequency", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    if legend:
        fig.legend(
            list(legend.values()),
            list(legend),
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            ncol=len(legend),
            fontsize=7,
            frameon=False,
        )
    role_key(fig, [str(k) for k in keys], roles)  # under the method legend
    return fig


def grouped_bars(frame: pd.DataFrame, series: Sequence[str], title: str, ylabel: str, roles: Roles = None) -> Figure:
    """One group of bars per row (column `label`), one bar per column in `series`."""
    n, k = len(frame), max(len(series), 1)
    # no wider than the page shows at full size, so the labels keep their size on screen
    fig = new_figure(figsize=(min(MAX_WIDTH_IN, max(6.0, 0.9 * n * k / 3 + 2)), 3.6))
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(n)
    width = 0.8 / k
    bar_colors = categorical(k)
    for i, name in enumerate(series):
        ax.bar(
            x + (i - (k - 1) / 2) * width,
            frame[name].astype(float),
            width=width,
            color=bar_colors[i % len(bar_colors)],
            label=str(name),
        )
    ax.set_xticks(x)
    names = [str(v).replace(" (random-init)", "\n(random-init)") for v in frame["label"]]
    widest = max((len(line) for name in names for line in name.split("\n")), default=0) * 7 * 0.62 / 72
    slot = (fig.get_figwidth() - 1.6) / max(n, 1)
    if widest > 0.9 * slot:  # the names would run into each other: stand them upright
        ax.set_xticklabels(names, fontsize=7, rotation=90)
    else:
        ax.set_xticklabels(names, fontsize=7)
    _tag_ticks(ax.get_xticklabels(), frame["label"].astype(str).tolist(), roles)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    # beside the bars, never over them
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    role_key(fig, frame["label"].astype(str), roles)
    return fig


def cost_chart(frame: pd.DataFrame, panels: Sequence[tuple[str, str, str]], title: str, roles: Roles = None) -> Figure:
    """CRS (column `crs`, y) against a cost per encoder (column `label`): one panel per
    (x column, x label, front column). The points whose boolean front column is true, the Pareto
    front, are ringed and joined in x order; x is on a log scale (costs span orders of magnitude)."""
    fig, axes = _facets([p[0] for p in panels], width=5.0, height=3.8, cols=2)
    labels = frame["label"].astype(str).tolist()
    colors, shapes = palette(labels, roles), role_markers(labels, roles)
    legend: dict[str, Any] = {}
    for ax, (x, xlabel, front) in zip(axes, panels, strict=True):
        drawn = frame[frame[x].notna() & (frame[x] > 0)]
        for row in drawn.itertuples(index=False):
            label = str(row.label)
            (point,) = ax.plot(
                [getattr(row, x)], [row.crs], marker=shapes[label], markersize=6, linestyle="none",
                color=colors.get(label, "#34495e"), label=label,
            )  # fmt: skip
            tag_series(point, role_of(label, roles), label)
            legend.setdefault(label, point)
        on_front = drawn[drawn[front].astype(bool)].sort_values(x)
        (line,) = ax.plot(
            on_front[x], on_front["crs"], marker="o", markersize=11, markerfacecolor="none",
            color="black", linewidth=0.8, linestyle="--",
        )  # fmt: skip
        legend["Pareto front (no other encoder is both cheaper and more reliable)"] = line
        _label_panel(ax, xlabel, xlabel, "CRS", log_x=True)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    _legend_below(fig, legend)
    role_key(fig, labels, roles)
    return fig

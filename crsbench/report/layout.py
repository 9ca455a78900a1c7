"""Where a figure's text landed in its PNG, and what its legend says: the figure's layout map.

`figure_layout` draws the figure once more at the PNG's resolution, records every text the
renderer actually drew (titles, tick labels, annotations, legend entries) with its box in
the saved image, as fractions of the image's width and height (0 = left/top), and reads
every legend's entries (text and colour) and the encoder series tagged with a role.
The report stores the map on each <img> (`data-layout`), so a browser can check, at the
size the page shows the image, that no two labels overlap and that every role drawn has
its legend entry. Series are tagged with `tag_series`: the artist's gid is "role|label".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure
    from matplotlib.text import Text

PAD_INCHES = 0.1  # savefig's pad around bbox_inches="tight"
ROLE_SEPARATOR = "|"


def tag_series(artist: Artist, role: str, label: str) -> None:
    """Mark `artist` as the series of encoder `label`, drawn in the colour of `role`."""
    artist.set_gid(f"{role}{ROLE_SEPARATOR}{label}")


def _color(value: Any) -> str:
    from matplotlib.colors import to_hex

    try:
        return to_hex(value)
    except (TypeError, ValueError):
        return to_hex(value[0]) if len(value) else "none"


def _artist_color(artist: Any) -> str:
    for getter in ("get_color", "get_facecolor", "get_edgecolor"):
        if hasattr(artist, getter):
            return _color(getattr(artist, getter)())
    return "none"


Box = Callable[[Any], list[float]]  # a display-space extent -> [x0, y0, x1, y1] as fractions of the PNG


def figure_layout(fig: Figure, dpi: int) -> dict[str, Any]:
    """The layout map of `fig` saved at `dpi` with bbox_inches="tight" (see the module doc)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    original_dpi = fig.dpi
    fig.set_dpi(dpi)
    try:
        renderer = canvas.get_renderer()
        drawn = _draw_recording_texts(fig, renderer)
        tight = fig.get_tightbbox(renderer)
        x0, y0 = tight.x0 - PAD_INCHES, tight.y0 - PAD_INCHES
        width, height = tight.width + 2 * PAD_INCHES, tight.height + 2 * PAD_INCHES

        def box(extent: Any) -> list[float]:
            return [
                round((extent.x0 / dpi - x0) / width, 5),
                round(1 - (extent.y1 / dpi - y0) / height, 5),
                round((extent.x1 / dpi - x0) / width, 5),
                round(1 - (extent.y0 / dpi - y0) / height, 5),
            ]

        return {
            "width_px": round(width * dpi),
            "height_px": round(height * dpi),
            "texts": _texts(drawn, renderer, box, dpi),
            "legends": _legends(fig, renderer, box),
            "series": _series(fig),
        }
    finally:
        fig.set_dpi(original_dpi)


def _draw_recording_texts(fig: Figure, renderer: Any) -> list[Text]:
    """Draw `fig` with `renderer`, returning every non-blank text artist drawn, in drawing order."""
    drawn: list[Text] = []
    draw_text = renderer.draw_text

    # matplotlib's renderer arguments (graphics context, font properties) are its own untyped objects.
    def recording(
        gc: Any, x: float, y: float, s: str, prop: Any, angle: float, ismath: Any = False, mtext: Text | None = None
    ) -> None:
        if mtext is not None and s.strip():
            drawn.append(mtext)
        draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = recording
    fig.draw(renderer)
    renderer.draw_text = draw_text
    return drawn


def _texts(drawn: list[Text], renderer: Any, box: Box, dpi: int) -> list[dict[str, Any]]:
    """Each drawn text once (first drawing order): its string, box, colour and size in pixels."""
    texts = []
    seen: set[int] = set()
    for text in drawn:
        if id(text) in seen:
            continue
        seen.add(id(text))
        texts.append(
            {
                "text": text.get_text(),
                "box": box(text.get_window_extent(renderer)),
                "color": _color(text.get_color()),
                "size_px": round(float(text.get_fontsize()) * dpi / 72, 2),
            }
        )
    return texts


def _legends(fig: Figure, renderer: Any, box: Box) -> list[dict[str, Any]]:
    """Each visible legend (the figure's, then each axes'): its box and its entries' text, colour and handle."""
    legends = []
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if legend is None or not legend.get_visible():
            continue
        handles = getattr(legend, "legend_handles", None) or getattr(legend, "legendHandles", [])
        legends.append(
            {
                "box": box(legend.get_window_extent(renderer)),
                "entries": [
                    {
                        "text": t.get_text(),
                        "color": _artist_color(h),
                        "handle_box": box(h.get_window_extent(renderer)),
                    }
                    for t, h in zip(legend.get_texts(), handles, strict=True)
                ],
            }
        )
    return legends


def _series(fig: Figure) -> list[dict[str, Any]]:
    """Each artist tagged with `tag_series`: its role, label and colour."""
    series = []
    for artist in fig.findobj(lambda a: ROLE_SEPARATOR in str(a.get_gid() or "")):
        role, label = str(artist.get_gid()).split(ROLE_SEPARATOR, 1)
        series.append({"role": role, "label": label, "color": _artist_color(artist)})
    return series


def declutter(ranks: Iterable[float], gap: float) -> list[float]:
    """Label positions at least `gap` apart, each group of crowded labels centred on its ranks' mean."""
    desired = [float(r) for r in ranks]
    order = sorted(range(len(desired)), key=lambda i: (desired[i], i))
    clusters: list[list[int]] = []
    for i in order:
        clusters.append([i])
        while len(clusters) > 1:
            prev, cur = clusters[-2], clusters[-1]
            if _top(prev, desired, gap) + len(prev) * gap <= _top(cur, desired, gap) + 1e-9:
                break
            clusters[-2:] = [prev + cur]
    positions = [0.0] * len(desired)
    for cluster in clusters:
        top = _top(cluster, desired, gap)
        for k, i in enumerate(cluster):
            positions[i] = top + k * gap
    return positions


def _top(cluster: list[int], desired: list[float], gap: float) -> float:
    return float(np.mean([desired[i] for i in cluster])) - (len(cluster) - 1) * gap / 2

"""HTML building blocks: the page shell, escaped tables, badges and embedded figures.

The page is one file with inline CSS and figures as base64 PNG data URIs. Its
Content-Security-Policy allows nothing else (no scripts, no network), so a report that
tried to fetch anything would show it as a console error in the browser test.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from crsbench.core import FROZEN
from crsbench.report.figures import png_bytes
from crsbench.report.layout import figure_layout

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 0 auto; max-width: 1180px; padding: 0 24px 48px; color: #1b2631; line-height: 1.45; }
header { border-bottom: 2px solid #1f618d; margin-bottom: 12px; padding: 16px 0 8px; }
header h1 { margin: 0 0 4px; font-size: 26px; }
.meta { color: #566573; font-size: 13px; }
nav { font-size: 13px; margin: 8px 0 16px; }
nav a { margin-right: 12px; color: #1f618d; text-decoration: none; }
section { margin: 26px 0; }
h2 { font-size: 20px; border-bottom: 1px solid #d5d8dc; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 12px; }
th, td { padding: 3px 9px; border-bottom: 1px solid #e5e8e8; text-align: right; white-space: nowrap; }
th { background: #f4f6f7; position: sticky; top: 0; }
td.text, th.text { text-align: left; }
tr:nth-child(even) td { background: #fbfcfc; }
tr.random-init td { background: #fdedec; }
figure { margin: 10px 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eaeded; box-sizing: border-box; }
figcaption { font-size: 12px; color: #566573; }
.badge { display: inline-block; font-size: 11px; font-weight: 600; border-radius: 3px;
         padding: 0 5px; margin-left: 6px; vertical-align: 1px; }
.badge-random, .key-random { background: #c0392b; color: white; }
.badge-panel, .key-panel { background: #d6eaf8; color: #1f618d; }
.badge-candidate, .key-candidate { background: #7d3c98; color: white; }
.banner { background: #fdedec; border: 1px solid #c0392b; color: #78281f; border-radius: 4px;
          padding: 10px 14px; margin: 12px 0; font-size: 14px; }
.missing { background: #fef9e7; border: 1px dashed #b7950b; border-radius: 4px; padding: 10px 14px;
           font-size: 14px; }
code { background: #f4f6f7; padding: 1px 4px; border-radius: 3px; font-size: 13px; }
.up { color: #1e8449; font-weight: 600; } .down { color: #e67e22; font-weight: 600; }
.note { font-size: 13px; color: #566573; }
.verdict { font-size: 16px; margin: 8px 0 10px; padding: 6px 12px; border-left: 4px solid #1f618d;
           background: #eaf2f8; }
table.leaderboard th { white-space: normal; vertical-align: bottom; }
table.leaderboard th, table.leaderboard td { padding: 3px 6px; }
table.leaderboard .interval { display: block; white-space: nowrap; }
table.leaderboard .interval-na { display: block; white-space: normal; font-size: 12px; }
table.leaderboard .badges { display: block; }
table.leaderboard .badges .badge:first-child { margin-left: 0; }
table.card td.card-text { white-space: normal; max-width: 900px; }
table.card ul { margin: 0; padding-left: 18px; }
table.card li.not-run { list-style: none; margin: 4px 0 4px -18px; padding: 4px 10px; background: #fef9e7;
                        border: 1px dashed #b7950b; border-radius: 4px; }
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def bullet_list(lines: Iterable[str]) -> str:
    """Plain-language lines (verdicts) as an escaped HTML list."""
    return "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul>"


def badge_random() -> str:
    return (
        '<span class="badge badge-random" title="random-initialised checkpoint '
        '(pretrained = false): not a pretrained representation">random-init</span>'
    )


def encoder_cell(
    encoder_id: str, random_init: set[str], regime: str | None = None, in_panel: bool = False, candidate: bool = False
) -> str:
    name = esc(encoder_id if regime in (None, FROZEN) else f"{encoder_id} [{regime}]")
    marks = badge_random() if encoder_id in random_init else ""
    if in_panel:
        marks += '<span class="badge badge-panel" title="member of the reference panel">panel</span>'
    elif candidate:
        marks += (
            '<span class="badge badge-candidate" title="scored against the panel, not a member of it">candidate</span>'
        )
    # in a span of their own, so a narrow table can put them under the name
    return name + (f'<span class="badges">{marks}</span>' if marks else "")


def colour_key(directions: bool = False) -> str:
    """What the table's badges and colours mean (the figures use the same colours)."""
    text = (
        '<p class="note key">Key: <span class="badge key-random">random-init</span> random-init checkpoint '
        '(red in figures); <span class="badge key-candidate">candidate</span> scored against the panel, not a '
        'member (purple in figures); <span class="badge key-panel">panel</span> member of the panel'
    )
    if directions:
        text += '; rank change <span class="up">+1 rises</span> / <span class="down">-1 falls</span> under CRS'
    return text + ".</p>"


def fmt_number(value: object, digits: int = 3) -> str:
    """A number for a table cell: a dash for missing, fixed decimals for floats."""
    if value is None or value is pd.NA:
        return "&ndash;"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return esc(int(value))
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return esc(value)
    return "&ndash;" if math.isnan(number) else esc(f"{number:.{digits}f}")


Cell = Callable[[pd.Series], str]


def number_cell(column: str, digits: int = 3) -> Cell:
    """A cell showing the row's `column` with `fmt_number`."""
    return lambda r: fmt_number(r[column], digits)


def table(
    frame: pd.DataFrame,
    columns: Mapping[str, Cell],
    text_columns: Sequence[str] = (),
    row_class: Callable[[pd.Series], str] | None = None,
    css_class: str = "",
) -> str:
    """An HTML table; `columns` maps a header to a function returning the cell's (escaped) HTML."""
    head = "".join(f'<th class="{"text" if h in text_columns else ""}">{esc(h)}</th>' for h in columns)
    rows = []
    for _, row in frame.iterrows():
        css = row_class(row) if row_class else ""
        cells = "".join(
            f'<td class="{"text" if h in text_columns else ""}">{cell(row)}</td>' for h, cell in columns.items()
        )
        rows.append(f'<tr class="{css}">{cells}</tr>')
    # wide tables (intervals, provenance) scroll inside their box instead of widening the page
    table_tag = f'<table class="{esc(css_class)}">' if css_class else "<table>"
    return f'<div class="scroll">{table_tag}<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


class FigureSink:
    """Renders figures once: embedded in the page and kept for `--figures DIR`.

    Each <img> carries its layout map (`data-layout`, see crsbench.report.layout): where every
    label sits in the image and what the legends say, so a browser can check the figure as shown.
    """

    def __init__(self, dpi: int = 110) -> None:
        self.dpi = dpi
        self.pngs: dict[str, bytes] = {}
        self.layouts: dict[str, dict[str, Any]] = {}

    def embed(self, figure_id: str, fig: Figure, caption: str) -> str:
        # The id doubles as a file name under --figures.
        figure_id = re.sub(r"[^A-Za-z0-9_.-]+", "_", figure_id)
        png = png_bytes(fig, self.dpi)
        self.pngs[figure_id] = png
        self.layouts[figure_id] = layout = figure_layout(fig, self.dpi)
        data = base64.b64encode(png).decode("ascii")
        return (
            f'<figure><img data-figure="{esc(figure_id)}" alt="{esc(caption)}" '
            f'data-layout="{esc(json.dumps(layout, separators=(",", ":")))}" '
            f'src="data:image/png;base64,{data}"><figcaption>{esc(caption)}</figcaption></figure>'
        )


def missing(reason: str, command: str) -> str:
    return (
        f'<div class="missing"><strong>Not available yet.</strong> {esc(reason)} '
        f"Run <code>{esc(command)}</code> to fill this section.</div>"
    )


def page(title: str, meta: str, banner: str, sections: Sequence[tuple[str, str, str, bool]], footer: str = "") -> str:
    """The whole document; `sections` are (id, title, body html, is_missing)."""
    nav = " ".join(f'<a href="#{esc(sid)}">{esc(stitle)}</a>' for sid, stitle, _, _ in sections)
    body = "\n".join(
        f'<section id="{esc(sid)}" data-section="{esc(sid)}" data-missing="{str(gap).lower()}">'
        f"<h2>{esc(stitle)}</h2>\n{content}</section>"
        for sid, stitle, content, gap in sections
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{CSS}</style>
</head>
<body>
<header><h1>{esc(title)}</h1><div class="meta">{meta}</div></header>
{banner}
<nav>{nav}</nav>
{body}
{footer}
</body>
</html>
"""

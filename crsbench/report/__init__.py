"""The HTML report: figures and tables from the warehouse in one self-contained file.

with Warehouse.open(db, read_only=True) as wh:
    result = build_report(wh, out=Path("report.html"), panel=None, figures_dir=None)
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pkgutil
from pathlib import Path

import pandas as pd

from crsbench.core import ProgressFn, __version__, check_write_target, no_progress
from crsbench.reads.report_data import ReportData, gather
from crsbench.report import sections
from crsbench.report.html import FigureSink, badge_random, esc, missing, page
from crsbench.warehouse.connection import Warehouse

__all__ = ["SECTION_IDS", "ReportResult", "build_report", "render_html"]

# Every `sections*` module of this package registers its sections on import, each at its declared
# place; discovering them means adding a section module never touches a list here.
for _module in pkgutil.iter_modules(__path__, f"{__name__}."):
    if _module.name.rpartition(".")[2].startswith("sections"):
        importlib.import_module(_module.name)

SECTION_IDS: tuple[str, ...] = tuple(s.id for s in sections.SECTIONS)


@dataclasses.dataclass
class ReportResult:
    out: Path
    panel: str | None
    sections: dict[str, str]  # section id -> "ok" or the command that fills it
    figures: dict[str, Path | None]  # figure id -> PNG path (None without --figures)
    random_init: list[str]


def _banner(data: ReportData) -> str:
    if not data.random_init:
        return ""
    names = ", ".join(sorted(data.random_init))
    return (
        f'<div class="banner" role="alert">{badge_random()} <strong>{len(data.random_init)} '
        f"encoder(s) come from random-init checkpoints</strong> (pretrained = false): {esc(names)}. "
        "Their scores test the pipeline, not pretrained representations; do not read them as "
        "evidence about any published model.</div>"
    )


def render_html(data: ReportData, sink: FigureSink, progress: ProgressFn = no_progress) -> tuple[str, dict[str, str]]:
    """The page and each section's state ("ok" or the command that fills it)."""
    rendered, states = [], {}
    for done, sec in enumerate(sections.SECTIONS):
        progress("report sections", done, len(sections.SECTIONS))
        body = sec.render(data, sink)
        if isinstance(body, sections.Missing):
            rendered.append((sec.id, sec.title, missing(body.reason, body.command), True))
            states[sec.id] = body.command
        else:
            rendered.append((sec.id, sec.title, body, False))
            states[sec.id] = "ok"
    meta = (
        f"warehouse <code>{esc(data.db)}</code> &middot; generated {esc(data.generated_at)} "
        f"&middot; crsbench {esc(__version__)}"
        + (f" &middot; panel <code>{esc(data.panel)}</code>" if data.panel else " &middot; no frozen panel")
    )
    progress("report sections", len(sections.SECTIONS), len(sections.SECTIONS))
    return page("CRS-Bench report", meta, _banner(data), rendered, footer=_footer(data)), states


_PROVENANCE = (
    "crsbench_version",
    "git_commit",
    "torch",
    "timm",
    "transformers",
    "duckdb",
    "numpy",
    "scikit_learn",
    "cpu_capability",
    "threads",
    "device",
)


def _footer(data: ReportData) -> str:
    """What computed the numbers: each distinct software/machine setting with how much it computed."""
    if not data.has("provenance"):
        return ""
    columns = ", ".join(_PROVENANCE)
    rows = data.wh.sql(f"select kind, {columns}, count(*) as n from provenance group by all order by kind, n desc")
    if rows.empty:
        return "<footer><p>No provenance recorded (no probe batch or feature set yet).</p></footer>"
    head = "".join(f"<th>{esc(c)}</th>" for c in ["kind", *_PROVENANCE, "n"])
    body = "".join(
        "<tr>" + "".join(f"<td>{esc('' if pd.isna(v) else v)}</td>" for v in row) + "</tr>"
        for row in rows.itertuples(index=False, name=None)
    )
    return (
        f'<footer id="provenance"><h2>Provenance</h2><p>The software and machine that computed the '
        f"probe batches and feature sets in this warehouse (view <code>provenance</code>).</p>"
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div></footer>'
    )


def build_report(
    wh: Warehouse,
    out: Path,
    panel: str | None = None,
    figures_dir: Path | None = None,
    dpi: int = 110,
    progress: ProgressFn = no_progress,
) -> ReportResult:
    """Write the report to `out` (atomically) and, with `figures_dir`, every figure as PNG."""
    data = gather(wh, panel)
    sink = FigureSink(dpi)
    text, states = render_html(data, sink, progress)
    _atomic_write(out, text.encode("utf-8"))
    written: dict[str, Path | None] = {name: None for name in sink.pngs}
    if figures_dir is not None:
        figures_dir.mkdir(parents=True, exist_ok=True)
        for name, png in sink.pngs.items():
            path = figures_dir / f"{name}.png"
            written[name] = path
            _atomic_write(path, png)
    return ReportResult(
        out=out, panel=data.panel, sections=states, figures=written, random_init=sorted(data.random_init)
    )


def _atomic_write(path: Path, payload: bytes) -> None:
    # Checked again as written: rendering takes a while, and the rename replaces whatever is there.
    check_write_target(path, force=True, option="report file")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    tmp.write_bytes(payload)
    os.replace(tmp, path)

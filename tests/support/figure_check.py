"""Check a report's figures as Chromium shows them: no overlapping labels, every colour keyed.

Any section's test can call it on a report it built:

    from support.figure_check import check_figures, assert_figures_clean
    problems = check_figures(tmp_path / "report.html")            # list of strings, [] when clean
    assert_figures_clean(tmp_path / "report.html", figures=["agreement_heatmap"])

It opens the page in headless Chromium at the default width (1280 px), reads each figure's
layout map (the <img>'s `data-layout`, written by crsbench.report.layout) and maps every
label's box onto the image as laid out in the page. In the page it checks:
- no two labels overlap (boxes intersect by more than `TOLERANCE_PX` in both directions),
  and no label overlaps a legend it does not belong to;
- every label lies inside the image (nothing cut off) and is at least `MIN_TEXT_PX` tall as shown;
- the image is no wider than the page's content column;
- colours: every series tagged random-init / candidate is drawn in its role's shades, every
  direction-of-change series in its direction's colour, members in neither, and each role or
  direction drawn has a legend entry in its key colour (crsbench.report.roles).
Figures that are not crsbench's (no `data-layout`) are reported as problems too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.browser_support import inspect_page

from crsbench.report.roles import DIRECTION_COLORS, ROLE_COLORS, ROLE_SHADES

TOLERANCE_PX = 1.0
MIN_TEXT_PX = 7.0
DEFAULT_WIDTH = 1280

# Runs in the page: each figure's labels in page coordinates and the overlaps among them.
FIGURE_PROBE = """
(async () => {
  const TOL = %(tol)s, MIN_PX = %(min_px)s;
  const images = Array.from(document.querySelectorAll('img'));
  await Promise.all(images.map(img => img.decode().catch(() => null)));
  const inter = (a, b) => Math.min(a[2], b[2]) - Math.max(a[0], b[0]) > TOL &&
                          Math.min(a[3], b[3]) - Math.max(a[1], b[1]) > TOL;
  const inside = (a, b) => a[0] >= b[0] - TOL && a[1] >= b[1] - TOL && a[2] <= b[2] + TOL && a[3] <= b[3] + TOL;
  return images.map(img => {
    const r = img.getBoundingClientRect();
    const column = (img.closest('section') || document.body).getBoundingClientRect();
    const out = {id: img.dataset.figure || img.id || img.alt || '?', width: r.width, height: r.height,
                 left: r.left + window.scrollX, top: r.top + window.scrollY, problems: [], layout: null};
    if (!img.dataset.layout) { out.problems.push('no layout map (data-layout)'); return out; }
    const layout = JSON.parse(img.dataset.layout);
    out.layout = layout;
    const page = b => [r.left + window.scrollX + b[0] * r.width, r.top + window.scrollY + b[1] * r.height,
                       r.left + window.scrollX + b[2] * r.width, r.top + window.scrollY + b[3] * r.height];
    const whole = page([0, 0, 1, 1]);
    const scale = r.width / layout.width_px;
    if (r.width > column.width + TOL) out.problems.push(`image ${r.width}px wider than its column ${column.width}px`);
    const texts = layout.texts.map(t => ({...t, page: page(t.box)}));
    const legends = layout.legends.map(l => ({...l, page: page(l.box)}));
    texts.forEach((t, i) => {
      if (!inside(t.page, whole)) out.problems.push(`label ${JSON.stringify(t.text)} is cut off the image`);
      if (t.size_px * scale < MIN_PX)
        out.problems.push(`label ${JSON.stringify(t.text)} is ${(t.size_px * scale).toFixed(1)}px tall as shown`);
      for (const u of texts.slice(i + 1))
        if (inter(t.page, u.page)) out.problems.push(`labels ${JSON.stringify(t.text)} and ${JSON.stringify(u.text)} overlap`);
      for (const l of legends)
        if (!inside(t.page, l.page) && inter(t.page, l.page))
          out.problems.push(`label ${JSON.stringify(t.text)} overlaps a legend`);
    });
    legends.forEach((l, i) => {
      for (const m of legends.slice(i + 1))
        if (inter(l.page, m.page)) out.problems.push('two legends overlap');
    });
    return out;
  });
})()
""" % {"tol": TOLERANCE_PX, "min_px": MIN_TEXT_PX}


def inspect_figures(html: Path, width: int = DEFAULT_WIDTH, screenshot: Path | None = None) -> list[dict[str, Any]]:
    """Per figure of the page: id, shown size and place (page px), layout map and the layout problems found in the page."""
    page = inspect_page(Path(html), screenshot, width=width, probe=FIGURE_PROBE, timeout_s=120)
    if page.errors:
        raise AssertionError(f"the page has errors: {page.errors}")
    return list(page.dom or [])


def color_problems(figure_id: str, layout: dict[str, Any]) -> list[str]:
    """What is wrong with a figure's colours: a role or direction drawn off its colour or with no key."""
    problems = []
    keyed = {e["color"] for legend in layout["legends"] for e in legend["entries"]}
    reserved = {c for shades in ROLE_SHADES.values() for c in shades} | set(DIRECTION_COLORS.values())
    for series in layout["series"]:
        role, color, label = series["role"], series["color"], series["label"]
        if role in ROLE_SHADES:
            if color not in ROLE_SHADES[role]:
                problems.append(f"{label} ({role}) drawn in {color}, not a {role} shade")
            if ROLE_COLORS[role] not in keyed:
                problems.append(f"{label} is {role} but no legend entry has the {role} colour")
        elif role in DIRECTION_COLORS:
            if color != DIRECTION_COLORS[role]:
                problems.append(f"{label} ({role}) drawn in {color}, not {DIRECTION_COLORS[role]}")
            if DIRECTION_COLORS[role] not in keyed:
                problems.append(f"{label} {role} but no legend entry has that colour")
        elif color in reserved:
            problems.append(f"{label} ({role}) drawn in {color}, a colour reserved for roles and directions")
    return [f"{figure_id}: {p}" for p in problems]


def check_figures(
    html: Path, figures: list[str] | None = None, width: int = DEFAULT_WIDTH, screenshot: Path | None = None
) -> list[str]:
    """Every layout and colour problem of the page's figures (only those in `figures` when given)."""
    found = inspect_figures(html, width, screenshot)
    if figures is not None:
        missing = set(figures) - {f["id"] for f in found}
        if missing:
            return [f"figure {m} is not in the page" for m in sorted(missing)]
        found = [f for f in found if f["id"] in figures]
    problems = [f"{f['id']}: {p}" for f in found for p in f["problems"]]
    for f in found:
        if f["layout"] is not None:
            problems += color_problems(f["id"], f["layout"])
    return problems


def assert_figures_clean(html: Path, figures: list[str] | None = None, width: int = DEFAULT_WIDTH) -> None:
    problems = check_figures(html, figures, width)
    assert problems == [], "figure problems:\n" + "\n".join(problems)


def layout_of(html: Path, figure_id: str) -> dict[str, Any]:
    """A figure's layout map read straight from the HTML (no browser)."""
    import html as html_lib
    import re

    text = Path(html).read_text(encoding="utf-8")
    match = re.search(rf'data-figure="{re.escape(figure_id)}"[^>]*data-layout="([^"]*)"', text)
    assert match, f"figure {figure_id} has no layout map"
    return json.loads(html_lib.unescape(match.group(1)))

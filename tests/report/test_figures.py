"""The report's figures as Chromium shows them, their colours, and each section's coverage line.

The warehouse is test_report's (five encoders, two datasets, panel 'main' of four) plus three
encoders that each section must account for: foxtrot (a candidate with every run on derm and
none on cxr: partial coverage), golf (runs on derm at full depth only: incomplete) and hotel
(registered, no runs). Layout and colour checks go through figure_check, the helper any
section's test can call.
"""

from __future__ import annotations

import io
import re
import warnings
from html import unescape
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.browser_support import find_chromium
from support.figure_check import check_figures, color_problems, inspect_figures

from crsbench.report import build_report
from crsbench.report import figures as figs
from crsbench.report.html import FigureSink, page
from crsbench.report.layout import declutter, figure_layout
from crsbench.report.roles import DIRECTION_COLORS, DIRECTION_KEYS, ROLE_COLORS, ROLE_KEYS, ROLE_SHADES, role_of
from crsbench.warehouse.connection import Warehouse
from tests.report.test_report import _run_rows, build_warehouse

needs_chromium = pytest.mark.skipif(find_chromium() is None, reason="CHROMIUM NOT INSTALLED (scripts/test-deps.sh)")
if find_chromium() is None:
    warnings.warn("CHROMIUM NOT INSTALLED: the figure checks in the browser are SKIPPED", stacklevel=1)

EXTRA = {"foxtrot": "partial", "golf": "full depth only", "hotel": "no runs"}


def _copy_runs(rows: pd.DataFrame, source: str, target: str) -> pd.DataFrame:
    out = rows[(rows["encoder_id"] == source) & (rows["dataset_id"] == "derm")].copy()
    for column in ("run_id", "fit_id"):
        out[column] = out[column].str.replace(f"{source}|", f"{target}|", regex=False)
    out["encoder_id"] = target
    out["auroc"] = out["auroc"] + 0.03
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("figures")
    rows = _run_rows()

    def add_encoders(wh: Warehouse) -> None:
        for encoder in EXTRA:
            wh.con.execute(
                "insert into encoders (encoder_id, family, scope, domain, pretrained) "
                "values (?, ?, 'general', 'none', true)",
                [encoder, encoder.title()],
            )
        golf = _copy_runs(rows, "delta", "golf")
        wh.append_runs(pd.concat([_copy_runs(rows, "bravo", "foxtrot"), golf[golf["depth"] == 1.0]]))

    db = build_warehouse(root / "wh.duckdb", before_analyses=add_encoders)
    with Warehouse.open(db, read_only=True) as wh:
        build_report(wh, root / "report.html")
    return root / "report.html", db


@needs_chromium
def test_every_figure_passes_the_layout_and_colour_check(report, tmp_path):
    html, _ = report
    shot = tmp_path / "shot.png"
    found = inspect_figures(html, screenshot=shot)
    ids = {f["id"] for f in found}
    assert {"profiles", "reordering", "bootstrap_ranks", "bootstrap_intervals", "depth", "label_efficiency"} <= ids
    assert {"recalibration_ece", "reliability_derm", "reliability_cxr"} <= ids
    assert check_figures(html) == []
    # every key swatch shows its colour in the screenshot, where the page put it
    from PIL import Image

    image = Image.open(io.BytesIO(shot.read_bytes())).convert("RGB")
    checked = 0
    for figure in found:
        for legend in figure["layout"]["legends"]:
            for entry in legend["entries"]:
                if entry["text"] in ROLE_KEYS.values() or entry["text"] in DIRECTION_KEYS.values():
                    x0, y0, x1, y1 = entry["handle_box"]
                    left, top = figure["left"], figure["top"]
                    pixel = image.getpixel(
                        (int(left + (x0 + x1) / 2 * figure["width"]), int(top + (y0 + y1) / 2 * figure["height"]))
                    )
                    want = tuple(int(entry["color"][i : i + 2], 16) for i in (1, 3, 5))
                    assert max(abs(a - b) for a, b in zip(pixel, want, strict=True)) <= 12, (figure["id"], entry, pixel)
                    checked += 1
    assert checked >= 8


@needs_chromium
def test_roles_and_directions_have_their_colours_and_keys(report):
    html, db = report
    found = {f["id"]: f["layout"] for f in inspect_figures(html)}
    with Warehouse.open(db, read_only=True) as wh:
        members = set(wh.sql("select encoder_id from reference_panels where panel = 'main'")["encoder_id"])
        random_init = set(wh.sql("select encoder_id from encoders where not pretrained")["encoder_id"])
        moves = wh.sql("select encoder_id, auroc_rank, crs_rank from crs_encoder where panel = 'main'").dropna()
    depth = found["depth"]
    roles = {s["label"]: s["role"] for s in depth["series"]}
    # the role of each line, from the warehouse: random-init first, then not-a-member
    for label, role in roles.items():
        encoder = label.replace(" (random-init)", "")
        expected = "random-init" if encoder in random_init else "member" if encoder in members else "candidate"
        assert role == expected, label
    assert set(roles.values()) == {"random-init", "candidate", "member"}
    for s in depth["series"]:
        if s["role"] in ROLE_SHADES:
            assert s["color"] in ROLE_SHADES[s["role"]]
    keys = {e["text"]: e["color"] for legend in depth["legends"] for e in legend["entries"]}
    assert keys[ROLE_KEYS["random-init"]] == ROLE_COLORS["random-init"]
    assert keys[ROLE_KEYS["candidate"]] == ROLE_COLORS["candidate"]
    # the slope chart: one colour per direction, keyed, matching the ranks in crs_encoder
    slope = found["reordering"]
    direction = {
        s["label"].replace(" (random-init)", ""): s["role"] for s in slope["series"] if s["role"] in DIRECTION_COLORS
    }
    expected = {
        r.encoder_id: "rises" if r.crs_rank < r.auroc_rank else "falls" if r.crs_rank > r.auroc_rank else "unchanged"
        for r in moves.itertuples()
    }
    assert direction == expected and {"rises", "falls"} <= set(direction.values())
    slope_keys = {e["text"]: e["color"] for legend in slope["legends"] for e in legend["entries"]}
    for d in set(direction.values()):
        assert slope_keys[DIRECTION_KEYS[d]] == DIRECTION_COLORS[d]
    # no figure reuses a role or direction colour for anything else
    assert [p for fid, layout in found.items() for p in color_problems(fid, layout)] == []


def _bad_page(tmp_path: Path) -> Path:
    """A page with one figure whose labels overlap, one cut off, and a random-init line in blue with no key."""
    sink = FigureSink()
    fig = figs.new_figure(figsize=(4, 3))
    ax = fig.add_subplot(1, 1, 1)
    ax.text(0.5, 0.5, "first label", fontsize=10)
    ax.text(0.52, 0.5, "second label", fontsize=10)
    from crsbench.report.layout import tag_series

    (line,) = ax.plot([0, 1], [0, 1], color="#1f77b4")
    tag_series(line, "random-init", "echo (random-init)")
    body = sink.embed("overlapping", fig, "deliberately overlapping labels")
    out = tmp_path / "bad.html"
    out.write_text(page("bad", "", "", [("s", "S", body, False)]), encoding="utf-8")
    return out


@needs_chromium
def test_the_check_fails_on_overlapping_labels_and_unkeyed_colours(tmp_path):
    problems = check_figures(_bad_page(tmp_path))
    assert any("'first label'" in p.replace('"', "'") and "overlap" in p for p in problems), problems
    assert any("drawn in #1f77b4, not a random-init shade" in p for p in problems)
    assert any("no legend entry has the random-init colour" in p for p in problems)
    # asking for a figure the page lacks is a problem too
    assert check_figures(_bad_page(tmp_path), figures=["missing_one"]) == ["figure missing_one is not in the page"]


def test_layout_map_matches_the_png():
    from PIL import Image

    fig = figs.slope_chart(
        pd.DataFrame({"label": list("abcdef"), "auroc_rank": [1, 2, 2, 2, 2, 6], "crs_rank": [3, 3, 3, 3, 1, 1]}), "t"
    )
    png = figs.png_bytes(fig, 110)
    layout = figure_layout(fig, 110)
    size = Image.open(io.BytesIO(png)).size
    assert abs(size[0] - layout["width_px"]) <= 1 and abs(size[1] - layout["height_px"]) <= 1
    # tied ranks: every name readable, none on another
    boxes = [t["box"] for t in layout["texts"]]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert min(a[2], b[2]) <= max(a[0], b[0]) or min(a[3], b[3]) <= max(a[1], b[1]), (a, b)


def test_declutter_spreads_crowded_ranks_around_their_mean():
    positions = declutter([1, 2, 2, 2, 3, 7], gap=0.5)
    crowded = sorted(positions[:5])
    assert all(b - a >= 0.5 - 1e-9 for a, b in pairwise(crowded))
    assert sum(crowded) / 5 == pytest.approx(2.0)  # centred on the ranks' mean
    assert positions[5] == 7.0  # a label with room keeps its place
    assert declutter([1, 2, 3], gap=0.5) == [1.0, 2.0, 3.0]


SECTION_QUERIES = {
    "profiles": "select n.encoder_id from axes_normalised n join crs_encoder c using (panel, encoder_id) "
    "where panel = 'main' and scope = 'global'",
    "reordering": "select encoder_id from crs_encoder where panel = 'main' and crs_rank is not null",
    "bootstrap": "select encoder_id from analysis_bootstrap_encoders where panel = 'main'",
    "recalibration": "select encoder_id from analysis_e2_cells",
    "depth": "select encoder_id from analysis_e3_depths group by encoder_id, dataset_id having count(distinct depth) > 1",
    "label-efficiency": "select encoder_id from analysis_e6_curve group by encoder_id, dataset_id "
    "having count(distinct label_fraction) > 1",
}


def _coverage(html: str, section: str) -> tuple[set[str], set[str], str]:
    body = re.search(rf'data-section="{section}".*?</section>', html, re.S).group(0)
    line = re.search(r'<p class="note coverage" data-covered="([^"]*)" data-left-out="([^"]*)">(.*?)</p>', body, re.S)
    assert line, section
    split = lambda s: set(filter(None, unescape(s).split(",")))  # noqa: E731
    return split(line.group(1)), split(line.group(2)), re.sub(r"<[^>]+>", "", unescape(line.group(3)))


def test_sections_list_what_they_cover_and_what_they_leave_out(report):
    html_path, db = report
    html = html_path.read_text(encoding="utf-8")
    with Warehouse.open(db, read_only=True) as wh:
        registered = set(wh.sql("select encoder_id from encoders")["encoder_id"])
        expected = {s: set(wh.sql(q)["encoder_id"]) for s, q in SECTION_QUERIES.items()}
    texts = {}
    for section, covered in expected.items():
        shown, left_out, text = _coverage(html, section)
        assert shown == covered, section
        assert left_out == registered - covered, section
        texts[section] = text
    assert "hotel" not in expected["depth"] and all("hotel (no runs)" in t for t in texts.values())
    assert "golf (no primary-probe runs below full depth)" in texts["depth"]
    assert "foxtrot (partial coverage: no complete cell on cxr)" in texts["reordering"]
    assert "foxtrot (not in panel main)" in texts["bootstrap"]
    assert "foxtrot (not on cxr: no runs)" in texts["depth"]  # shown, on derm only
    assert "golf (no complete cell on any panel dataset)" in texts["profiles"]


TABLE_PROBE = """
(() => {
  const rgb = el => getComputedStyle(el).backgroundColor;
  const rows = Array.from(document.querySelectorAll('section[data-section="leaderboard"] tbody tr'));
  return {
    rows: rows.map(tr => ({name: tr.querySelector('td.text').firstChild.textContent.trim(),
                           marks: Array.from(tr.querySelectorAll('.badge')).map(b => [b.innerText, rgb(b)])})),
    key: Array.from(document.querySelectorAll('section[data-section="leaderboard"] .key .badge'))
           .map(b => [b.innerText, rgb(b)]),
    down: Array.from(document.querySelectorAll('section[data-section="leaderboard"] .down'))
            .map(d => getComputedStyle(d).color),
  };
})()
"""


def _rgb(hex_color: str) -> str:
    return "rgb({}, {}, {})".format(*(int(hex_color[i : i + 2], 16) for i in (1, 3, 5)))


@needs_chromium
def test_leaderboard_badges_and_key_use_the_figure_colours(report):
    from support.browser_support import inspect_page

    html, db = report
    dom = inspect_page(html, probe=TABLE_PROBE).dom
    with Warehouse.open(db, read_only=True) as wh:
        members = set(wh.sql("select encoder_id from reference_panels where panel = 'main'")["encoder_id"])
        scored = set(wh.sql("select encoder_id from crs_encoder where panel = 'main'")["encoder_id"])
    marks = {r["name"]: dict(r["marks"]) for r in dom["rows"]}
    assert set(marks) == scored
    for name, badges in marks.items():
        assert ("panel" in badges) == (name in members) and ("candidate" in badges) == (name not in members), name
        if "candidate" in badges:
            assert badges["candidate"] == _rgb(ROLE_COLORS["candidate"])
        if "random-init" in badges:
            assert badges["random-init"] == _rgb(ROLE_COLORS["random-init"])
    key = dict(dom["key"])
    assert key["random-init"] == _rgb(ROLE_COLORS["random-init"]) and key["candidate"] == _rgb(ROLE_COLORS["candidate"])
    assert dom["down"] and set(dom["down"]) == {_rgb(DIRECTION_COLORS["falls"])}


@needs_chromium
def test_crowded_figures_pass_the_check(tmp_path):
    # twelve encoders with long names, ties at the top of the AUROC ranks: the figures that
    # place names by hand (slope chart, bars, intervals) keep every name clear and readable
    import numpy as np

    names = [f"timm:vit_base_patch16_{i}" if i % 3 else f"tiny-efficientnet-{i} (random-init)" for i in range(12)]
    roles = {n: "candidate" if i % 4 == 1 and i % 3 else role_of(n) for i, n in enumerate(names)}
    rng = np.random.default_rng(0)
    ranks = pd.DataFrame({"label": names, "auroc_rank": rng.integers(1, 4, 12), "crs_rank": rng.integers(1, 12, 12)})
    bars = pd.DataFrame({"label": names, **{m: rng.random(12) for m in ("uncalibrated", "temperature", "isotonic")}})
    crs = pd.DataFrame({"label": names, "crs": rng.random(12)}).assign(
        lo=lambda f: f.crs - 0.1, hi=lambda f: f.crs + 0.1
    )
    sink = FigureSink()
    body = sink.embed("slope", figs.slope_chart(ranks, "crowded", roles), "slope")
    body += sink.embed(
        "bars", figs.grouped_bars(bars, ["uncalibrated", "temperature", "isotonic"], "t", "y", roles), "b"
    )
    body += sink.embed(
        "intervals", figs.interval_chart(crs, "crs", "lo", "hi", "t", figs.palette(names, roles), roles), "i"
    )
    out = tmp_path / "crowded.html"
    out.write_text(page("crowded", "", "", [("s", "S", body, False)]), encoding="utf-8")
    assert check_figures(out) == []


@pytest.mark.parametrize(
    ("auroc_rank", "crs_rank"),
    [
        ([1, 2], [1, 1]),  # a two-member panel: both on one CRS
        ([1, 2, 3, 4], [1, 1, 1, 1]),  # four tied (the narrower spacing of small charts)
        ([1, 1, 1, 4, 5, 6], [1, 1, 3, 3, 3, 6]),  # ties on both sides
        (list(range(1, 11)), [1] * 10),  # ten tied at the top
        ([1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 1, 1, 1, 1, 3, 3, 3, 3]),  # two crowds that merge
    ],
)
def test_slope_chart_names_of_tied_ranks_never_overlap(auroc_rank, crs_rank):
    # every label the renderer drew, boxed where it landed in the PNG: no two intersect
    labels = [f"tiny-encoder-{i} (random-init)" for i in range(len(auroc_rank))]
    frame = pd.DataFrame({"label": labels, "auroc_rank": auroc_rank, "crs_rank": crs_rank})
    layout = figure_layout(figs.slope_chart(frame, "panel p; Kendall tau = 0.50, 3 of 10 pairs reversed"), 110)
    texts = layout["texts"]
    assert sum(t["text"].endswith(label) or t["text"].startswith(label) for t in texts for label in labels) == 2 * len(
        labels
    )
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            (a0, a1, a2, a3), (b0, b1, b2, b3) = a["box"], b["box"]
            assert min(a2, b2) <= max(a0, b0) or min(a3, b3) <= max(a1, b1), (a["text"], b["text"])


def test_retention_colour_bar_covers_every_value_shown():
    from crsbench.report.sections_agreement import agreement_figure

    knn = np.array([[1.0, 0.4, 0.2], [0.4, 1.0, 0.3], [0.2, 0.3, 1.0]])
    retention = np.array([[np.nan, 0.81, 1.22], [1.05, np.nan, 0.9], [0.7, 0.95, np.nan]])
    fig = agreement_figure(knn, retention, ["a", "b", "c"], "derm, depth 1, chance 0.1")
    heat_axes = [ax for ax in fig.axes if ax.images]
    assert len(heat_axes) == 2
    for ax, matrix in zip(heat_axes, (knn, retention), strict=True):
        low, high = ax.images[0].get_clim()
        shown = [float(t.get_text()) for t in ax.texts]
        assert sorted(shown) == sorted(round(v, 2) for v in matrix[np.isfinite(matrix)].tolist())
        assert all(low <= v <= high for v in shown), (low, high, shown)
        assert (low, high) == (0.0, max(1.0, float(np.nanmax(matrix))))
    # the colour bars show those ranges: retention's reaches 1.22, not 1.0
    bars = [ax for ax in fig.axes if not ax.images]
    assert sorted(round(max(ax.get_ylim()), 2) for ax in bars) == [1.0, 1.22]

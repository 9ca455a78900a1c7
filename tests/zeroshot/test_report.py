"""The report's zero-shot section beside probing and E5 prompting, on test_report's hand-made
warehouse plus hand-made zero-shot runs (bravo on derm, AUROC 0.75) and hand-made E5 summary rows:
the E5 rows appear with the dataset's best zero-shot and probe AUROC beside them, the comparison
figure passes the figure check in Chromium, and without E5 the section says how to run it."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from support.browser_support import find_chromium
from support.figure_check import assert_figures_clean, layout_of

from crsbench.analyses.registry import ANALYSES, AnalysisResult, store_result
from crsbench.report import build_report
from crsbench.report.sections_zeroshot import E5_BAR, E5_COMMAND, PROBE_BAR, ZEROSHOT_BAR, comparison
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.zeroshot import record_prompts
from tests.report.test_report import _run_rows, build_warehouse

ZS_AUROC = 0.75
E5_ROWS = pd.DataFrame(
    [
        # model, dataset, style, n, n_parsed, coverage, accuracy, accuracy_parsed, macro_auroc, probe enc, auroc, acc
        ("tiny-vlm", "derm", "simple", 40, 30, 0.75, 0.55, 0.7333, float("nan"), "alpha", 0.931, 0.83),
        ("tiny-vlm", "derm", "multiple_choice", 40, 40, 1.0, 0.6, 0.6, 0.68, "alpha", 0.931, 0.83),
        ("tiny-vlm", "cxr", "simple", 40, 20, 0.5, 0.3, 0.6, float("nan"), "alpha", 0.912, 0.81),
    ],
    columns=list(ANALYSES.get("e5").outputs["summary"]),  # as E5 declares its summary
)


def _add_zeroshot(wh: Warehouse) -> None:
    rows = _run_rows()
    zs = rows[
        (rows["encoder_id"] == "bravo")
        & (rows["dataset_id"] == "derm")
        & (rows["depth"] == 1.0)
        & (rows["label_fraction"] == 1.0)
        & (rows["seed"] == 0)
        & (rows["condition"] == "clean")
    ].copy()
    assert len(zs) == 1
    zs["fit_id"] = "bravo|derm|zeroshot|p0"
    zs["run_id"] = zs["fit_id"] + "|clean|derm"
    zs["probe"], zs["label_fraction"], zs["auroc"], zs["n_train"] = "zeroshot", 0.0, ZS_AUROC, 0
    wh.append_runs(zs)
    prompt = {"classes": {"a": "a", "b": "b", "c": "c"}, "templates": ["a photo of {}"]}
    row = {"fit_id": "bravo|derm|zeroshot|p0", "encoder_id": "bravo", "dataset_id": "derm", "prompt_hash": "p0"}
    record_prompts(wh.con, [{**row, "prompts": prompt, "logit_scale": 100.0, "logit_bias": 0.0}])


def _section(html: Path) -> str:
    text = html.read_text(encoding="utf-8")
    match = re.search(r'<section[^>]*data-section="zeroshot".*?</section>', text, re.S)
    assert match
    return match.group(0)


def _cells(section: str, first: str, second: str) -> list[list[str]]:
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", section, re.S)
    out = [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)] for r in rows]
    return [r for r in out if r[:2] == [first, second] or r[:3] == ["tiny-vlm", first, second]]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("zsreport")
    db = build_warehouse(root / "wh.duckdb", analyses=False, before_analyses=_add_zeroshot)
    with Warehouse.open(db) as wh:
        build_report(wh, root / "without.html")
        store_result(wh, "e5", AnalysisResult({}, summary=E5_ROWS), {})
        build_report(wh, root / "with.html")
    return root / "without.html", root / "with.html"


def test_without_e5_the_section_says_how_to_run_it(reports: tuple[Path, Path]) -> None:
    section = _section(reports[0])
    assert "has not been run" in section and E5_COMMAND.replace("<", "&lt;").replace(">", "&gt;") in section
    assert "data-figure" not in section
    # the zero-shot row is there with its probe beside it
    (row,) = _cells(section, "bravo", "derm")
    assert row[2] == f"{ZS_AUROC:.3f}"


def test_e5_rows_beside_zero_shot_and_probe(reports: tuple[Path, Path]) -> None:
    section = _section(reports[1])
    assert "has not been run" not in section
    simple, mc = _cells(section, "derm", "simple"), _cells(section, "derm", "multiple_choice")
    # model, dataset, style, images, parsed, accuracy, E5 AUROC, zero-shot AUROC, its encoder, probe AUROC, encoder
    assert mc == [
        ["tiny-vlm", "derm", "multiple_choice", "40", "1.000", "0.600", "0.680", "0.750", "bravo", "0.931", "alpha"]
    ]
    assert simple[0][5:8] == ["0.550", "&ndash;", "0.750"]  # no AUROC without option probabilities
    (cxr,) = _cells(section, "cxr", "simple")
    assert cxr[6:] == ["&ndash;", "&ndash;", "", "0.912", "alpha"]  # no zero-shot run on cxr


def test_comparison_is_the_best_of_each_approach() -> None:
    zs = pd.DataFrame({"encoder_id": ["bravo", "kilo"], "dataset_id": ["derm", "derm"], "zeroshot_auroc": [0.75, 0.7]})
    bars = comparison(E5_ROWS, zs).set_index("label")
    assert bars.loc["derm", ZEROSHOT_BAR] == 0.75 and bars.loc["derm", E5_BAR] == 0.68
    assert bars.loc["derm", PROBE_BAR] == 0.931 and bars.loc["cxr", PROBE_BAR] == 0.912
    assert math.isnan(bars.loc["cxr", ZEROSHOT_BAR]) and math.isnan(bars.loc["cxr", E5_BAR])


@pytest.mark.skipif(find_chromium() is None, reason="CHROMIUM NOT INSTALLED (scripts/test-deps.sh)")
def test_comparison_figure_is_clean_in_chromium(reports: tuple[Path, Path]) -> None:
    html = reports[1]
    layout = layout_of(html, "zeroshot_prompting_probe")
    keyed = {e["text"] for legend in layout["legends"] for e in legend["entries"]}
    assert {ZEROSHOT_BAR, PROBE_BAR, E5_BAR} <= keyed
    assert_figures_clean(html, figures=["zeroshot_prompting_probe"])

"""The reporting card (crsbench/reads/card.py): eight items, each number an aggregate of one relation.

The warehouse is the report tests' (hand-built runs, a frozen panel, E2, operating points), plus
LoRA variants of three encoders, a seed bootstrap, the suite's isic2019 images with a real shortcut
audit, and partition_shift / resplit_selection rows in the columns their analyses write. Each
number is checked against its own SQL query; the card is checked as shown in headless Chromium.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from support.browser_support import find_chromium, inspect_page

from crsbench import Bench
from crsbench.analyses import run_analysis
from crsbench.ingest import Dataset
from crsbench.probes.metrics import METRICS
from crsbench.reads.card import card_for
from crsbench.report import SECTION_IDS
from crsbench.report.html import page
from crsbench.report.sections_card import render_card
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset
from tests.report.test_report import build_warehouse

KEYS = ("split", "training", "threshold", "metrics", "calibration", "uncertainty", "shortcuts", "provenance")
CARD_PROBE = """
(() => Array.from(document.querySelectorAll('section[data-section="card"] tr[data-card-item]')).map(r => ({
  key: r.dataset.cardItem, status: r.dataset.status, text: r.innerText,
  visible: r.getBoundingClientRect().height > 0,
  first: document.querySelector('section[data-section]').dataset.section,
})))()
"""


def _analyses_of_issue_29(wh: Warehouse) -> None:
    """Hand-made rows in the tables `crsbench analyze partition` and `resplit` write (declared empty by
    sql/views/290, 291; the card reads only these columns; the analyses are tested in tests/analyses/)."""
    wh.con.execute(
        "insert into partition_shift values ('isic2019', 'alpha', 'pool_vs_test', null, 0.52, 0.40, 0.64, 160, 41, 5),"
        "('isic2019', 'bravo', 'pool_vs_test', null, 0.58, 0.46, 0.70, 160, 41, 5)"
    )
    wh.con.execute(
        "insert into resplit_selection values ('derm', 'calib_auroc', 'alpha', 0.6, 5, 0.9, 0.01, 0.88, 0.91),"
        "('derm', 'calib_auroc', 'bravo', 0.4, 5, 0.89, 0.03, 0.85, 0.93),"
        "('derm', 'calib_crs', 'bravo', 1.0, 5, 0.89, 0.02, 0.86, 0.92)"
    )


def _lora_runs(wh: Warehouse) -> None:
    """LoRA variants (lora-s0) of every panel member, their AUROC reordered, scored by the same panel."""
    runs = wh.sql("select * from runs where encoder_id in ('alpha', 'bravo', 'charlie', 'delta')")
    bump = {"alpha": -0.15, "bravo": -0.10, "charlie": 0.0, "delta": 0.12}
    runs["auroc"] = runs["auroc"] + runs["encoder_id"].map(bump)
    runs["regime"] = "lora-s0"
    runs["run_id"] = runs["run_id"] + "|lora"
    runs["fit_id"] = runs["fit_id"] + "|lora"
    wh.append_runs(runs)


@pytest.fixture(scope="module")
def card_db(tmp_path_factory: pytest.TempPathFactory, suite_datasets: dict[str, Dataset]) -> Path:
    db = build_warehouse(tmp_path_factory.mktemp("card") / "wh.duckdb")
    with Warehouse.open(db) as wh:
        _lora_runs(wh)
        load_dataset(wh, suite_datasets["isic2019"])
        run_analysis(wh, "bootstrap", {"resample": "seeds", "replicates": 100})
        run_analysis(wh, "shortcuts")
        _analyses_of_issue_29(wh)
    return db


def test_every_item_is_filled_and_each_number_is_its_relation_s_aggregate(card_db: Path) -> None:
    with Warehouse.open(card_db, read_only=True) as wh:
        card = card_for(wh)
        q = wh.sql
        assert card.panel == "main"
        assert [i.key for i in card.items] == list(KEYS)
        assert {i.key: i.status for i in card.items} == dict.fromkeys(KEYS, "measured")
        v = {i.key: i.values for i in card.items}
        # 1. split: partition classifier mean over encoders; no group crosses splits.
        assert v["split"]["isic2019.pool_vs_test.partition_auroc"] == pytest.approx(0.55)
        assert v["split"]["isic2019.groups_crossing_splits"] == 0
        crossing = q(
            "select count(*) as n from (select group_id from images where dataset_id = 'isic2019' "
            "group by group_id having count(distinct split) > 1)"
        )["n"][0]
        assert crossing == 0
        # 2. training: the frozen-to-LoRA Kendall tau of the CRS ranking (the seed family's mean).
        tau = q(
            "select kendall_tau from rank_agreement_regime where panel = 'main' and metric = 'crs' and regime = 'lora'"
        )["kendall_tau"][0]
        assert v["training"]["lora.kendall_tau"] == pytest.approx(tau) and tau < 1
        assert v["training"]["lora-s0.encoders"] == 4
        # 3. threshold: clean balanced accuracy per rule, transfer gap per kind of condition.
        ba = q(
            "select rule, avg(balanced_accuracy) as ba from operating_points where condition = 'clean' group by rule"
        )
        for r in ba.itertuples():
            assert v["threshold"][f"{r.rule}.balanced_accuracy"] == pytest.approx(r.ba)
        gap = q("select avg(transfer_gap) as g from operating_points where condition = 'gaussian_blur-s1'")["g"][0]
        assert v["threshold"]["transfer_gap.perturbed"] == pytest.approx(gap)
        # 4. metrics: AUROC spread across frozen encoders.
        spread = q("select max(discrimination) - min(discrimination) as s from axes_encoder where regime = 'frozen'")
        assert v["metrics"]["auroc_spread_encoders"] == pytest.approx(spread["s"][0])
        # 5. calibration: E2 before / after on clean cells.
        e2 = q("select method, avg(ece_before) as b, avg(ece_after) as a from analysis_e2_cells group by method")
        for r in e2.itertuples():
            assert v["calibration"][f"{r.method}.ece_after"] == pytest.approx(r.a)
            assert v["calibration"]["ece_before"] == pytest.approx(r.b)
        # 6. uncertainty: the seed bootstrap's mean aggregate CRS interval width; split-level sd.
        width = q(
            "select avg(hi - lo) as w from bootstrap_intervals where panel = 'main' and metric = 'crs' "
            "and encoder_id is not null and dataset_id is null"
        )["w"][0]
        assert v["uncertainty"]["resample"] == "seeds"
        assert v["uncertainty"]["crs.interval_width"] == pytest.approx(width)
        assert v["uncertainty"]["resplit.calib_auroc.test_auroc_sd"] == pytest.approx(0.02)
        # 7. shortcuts: the audit's header pool_cv AUROC.
        auroc = q(
            "select estimate from shortcut_audit where dataset = 'isic2019' and properties = 'header' "
            "and split = 'pool_cv' and metric = 'auroc'"
        )["estimate"][0]
        assert v["shortcuts"]["isic2019.pool_cv.auroc"] == pytest.approx(auroc)
        assert card.item("shortcuts").warn is None
        # 8. provenance: per dataset, the encoders of each status in encoder_dataset_overlap.
        status = q("select status, count(*) as n from encoder_dataset_overlap where dataset_id = 'isic2019' group by 1")
        for r in status.itertuples():
            assert v["provenance"][f"isic2019.{r.status}"] == r.n
        assert q("select source from datasets where dataset_id = 'isic2019'")["source"][0] == "isic2019"
        assert any(t.startswith("isic2019: is isic2019; ") for t in card.item("provenance").statements)


def test_the_metrics_item_lists_every_registered_metric_some_run_recorded(card_db: Path) -> None:
    with Warehouse.open(card_db, read_only=True) as wh:
        item = card_for(wh).item("metrics")
        counts = {m: int(wh.sql(f'select count("{m}") as n from runs')["n"][0]) for m in METRICS.names()}
    recorded = [m for m in METRICS.names() if counts[m] > 0]
    # the built-ins the report's runs fill (qwk and ordinal_mae are ordinal-only: NULL here, left out)
    assert {"auroc", "ece", "ece_adaptive", "brier", "nll", "accuracy", "mean_confidence"} <= set(recorded)
    assert {k: v for k, v in item.values.items() if k.startswith("runs_with.")} == {
        f"runs_with.{m}": counts[m] for m in recorded
    }
    assert item.statements[0].startswith("per run: " + ", ".join(recorded) + " (")


def test_card_renders_in_chromium_with_all_eight_items(card_db: Path, tmp_path: Path) -> None:
    # The card as the report renders it, in the report's page shell (tests/report/test_browser.py
    # loads the whole report, where it follows the verdict and the leaderboard: SECTION_IDS[1]).
    if find_chromium() is None:
        pytest.skip("CHROMIUM NOT INSTALLED: install it with `bash scripts/test-deps.sh`")
    assert SECTION_IDS[:2] == ("leaderboard", "card")
    with Warehouse.open(card_db, read_only=True) as wh:
        body = render_card(card_for(wh))
    (tmp_path / "card.html").write_text(page("card", "", "", [("card", "Reporting card", body, False)]))
    shown = inspect_page(tmp_path / "card.html", timeout_s=120, probe=CARD_PROBE)
    assert shown.errors == [] and shown.network_urls == []
    rows = shown.dom
    assert [r["key"] for r in rows] == list(KEYS)
    assert all(r["visible"] and r["status"] == "measured" and r["first"] == "card" for r in rows)
    text = {r["key"]: r["text"] for r in rows}
    assert "partition classifier AUROC (pool vs test) 0.550" in text["split"]
    assert "Kendall tau" in text["training"] and "interval width" in text["uncertainty"]


def test_items_not_run_name_their_command(tmp_path: Path) -> None:
    with Warehouse.open(tmp_path / "bare.duckdb") as wh:
        card = card_for(wh)
    commands = {i.key: " ".join(i.not_run) for i in card.items}
    assert commands == {
        "split": "datasets: crsbench ingest",
        "training": "runs: crsbench probe",
        "threshold": "operating points: crsbench analyze operating_points",
        "metrics": "runs: crsbench probe",
        "calibration": "recalibration (E2): crsbench analyze e2",
        "uncertainty": "image/seed bootstrap: crsbench analyze bootstrap split-level uncertainty: "
        "crsbench analyze resplit --repeats 5",
        "shortcuts": "file-property classifier: crsbench analyze shortcuts",
        "provenance": "datasets: crsbench ingest",
    }
    assert {i.status for i in card.items} == {"not run"}
    assert "Not run: recalibration (E2): crsbench analyze e2." in card.markdown()


def test_card_only_prints_the_markdown_and_writes_no_file(
    card_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from crsbench.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["report", "--card-only", "--db", str(card_db)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## Reporting card")
    rows = [line for line in out.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [line.split(" | ")[1] for line in rows] == [i.title for i in Bench(card_db).card().items]
    assert list(tmp_path.iterdir()) == []
    assert pd.notna(Bench(card_db).card().item("split").values["isic2019.groups_crossing_splits"])

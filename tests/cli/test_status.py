"""`crsbench status`: what the warehouse holds, in JSON, as tables, or not at all (--quiet)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsbench.cli import main
from crsbench.warehouse.connection import Warehouse
from tests.report.test_report import DATASETS, PROFILES, RANDOM_INIT, _run_rows, build_warehouse


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = build_warehouse(tmp_path_factory.mktemp("status") / "wh.duckdb")
    with Warehouse.open(db) as wh:
        for dataset, complete in (("derm", True), ("cxr", False)):
            wh.con.execute(
                "insert into feature_sets (dataset_id, encoder_id, regime, complete) values (?, 'alpha', 'frozen', ?)",
                [dataset, complete],
            )
    return db


def _json(capsys: pytest.CaptureFixture, argv: list[str]) -> dict:
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1, "--json prints exactly one JSON document"
    return json.loads(out)


def test_status_json_counts_what_was_put_in(warehouse: Path, capsys):
    doc = _json(capsys, ["--json", "status", "--db", str(warehouse)])
    runs = _run_rows()
    assert doc["counts"] == {
        "datasets": len(DATASETS) + 1,  # + the shift target
        "encoders": len(PROFILES),
        "feature_sets_complete": 1,
        "feature_sets_incomplete": 1,
        "runs": len(runs),
        "panels": 1,
        "analyses": 8,  # e2, e3, e6, agreement, screen, retrieval, bootstrap and sites in build_warehouse
    }
    per_encoder = {e["encoder_id"]: e for e in doc["encoders"]}
    assert per_encoder["alpha"]["feature_sets_complete"] == 1
    assert per_encoder["alpha"]["feature_sets_incomplete"] == 1
    assert {e for e, row in per_encoder.items() if not row["pretrained"]} == RANDOM_INIT
    expected_runs = runs.groupby("encoder_id").size().to_dict()
    assert {e: row["runs"] for e, row in per_encoder.items()} == expected_runs
    assert doc["runs"] == [{"regime": "frozen", "probe": "logreg", "fits": runs["fit_id"].nunique(), "runs": len(runs)}]
    assert [p["panel"] for p in doc["panels"]] == ["main"] and doc["panels"][0]["n_members"] == 4
    assert {a["analysis"] for a in doc["analyses"]} == {
        "agreement", "bootstrap", "e2", "e3", "e6", "retrieval", "screen", "sites"
    }  # fmt: skip


def test_status_human_and_quiet(warehouse: Path, capsys):
    assert main(["status", "--db", str(warehouse)]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert "3 datasets" in first and "5 encoders" in first and "1 complete / 1 incomplete" in first
    assert "incomplete feature sets" in out
    assert main(["--quiet", "status", "--db", str(warehouse)]) == 0
    assert capsys.readouterr().out == ""


def test_status_of_an_empty_warehouse(tmp_path: Path, capsys):
    db = tmp_path / "w.duckdb"
    assert main(["warehouse", "init", "--db", str(db)]) == 0
    capsys.readouterr()
    doc = _json(capsys, ["--json", "status", "--db", str(db)])
    assert doc["counts"] == {
        "datasets": 0,
        "encoders": 0,
        "feature_sets_complete": 0,
        "feature_sets_incomplete": 0,
        "runs": 0,
        "panels": 0,
        "analyses": 0,
    }

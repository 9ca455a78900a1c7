"""A run restricted to datasets replaces only their rows (`merge.py`, METHODS.md §11)."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from crsbench.analyses import AnalysisResult, register_analysis, registry
from crsbench.warehouse.connection import Warehouse


@pytest.fixture
def toy():
    """Rows per dataset (a and b unless restricted) holding `value`; a summary without a dataset column."""

    @register_analysis("toy_ds", params={"dataset": None, "value": 1, "extra": False})
    def toy_ds(wh, params):
        """A toy per-dataset analysis."""
        datasets = [params["dataset"]] if params["dataset"] else ["a", "b"]
        rows = pd.DataFrame(
            {"dataset_id": [d for d in datasets for _ in range(2)], "encoder_id": "e", "i": [0, 1] * len(datasets)}
        )
        rows["value"] = float(params["value"]) + rows["i"] / 10
        if params["extra"]:
            rows["extra"] = 1
        return AnalysisResult(tables={"rows": rows}, summary=pd.DataFrame({"n": [len(rows)]}))

    yield
    registry.ANALYSES.remove("toy_ds")


def run(wh, params, digests, replace_all=False):
    spec = registry.get_analysis("toy_ds")
    resolved = registry.resolve_params(spec, params)
    result = spec.fn(wh, resolved)
    digest = registry.input_digest(digests, result)
    registry.store_result(wh, "toy_ds", result, resolved, digest, replace_all=replace_all, digests=digests)
    return result


def record(wh, table="analysis_toy_ds_rows"):
    row = wh.con.execute("select params, input_digest from analyses where table_name = ?", [table]).fetchone()
    return json.loads(row[0]), row[1]


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def test_a_restricted_run_keeps_other_datasets_rows_and_replace_all_does_not(tmp_path, toy):
    now = {"e": "d1"}
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        run(wh, {"value": 1}, now)
        before = wh.sql("select * from analysis_toy_ds_rows")
        result = run(wh, {"dataset": "b", "value": 5}, now)
        after = wh.sql("select * from analysis_toy_ds_rows")
        kept = after[after["dataset_id"] == "a"].reset_index(drop=True)
        assert kept.equals(before[before["dataset_id"] == "a"].reset_index(drop=True))
        assert after.loc[after["dataset_id"] == "b", "value"].tolist() == [5.0, 5.1]
        assert any("kept the stored rows of a; replaced those of b" in n for n in result.notes)
        # The summary has no dataset column: it is this run's, and the note says so.
        assert wh.sql("select n from analysis_toy_ds_summary")["n"].tolist() == [2]
        assert any(n.startswith("analysis_toy_ds_summary: replaced whole") for n in result.notes)
        params, digest = record(wh)
        assert params["dataset"] == "b"
        assert {d: e["params"]["value"] for d, e in params["stored_datasets"].items()} == {"a": 1, "b": 5}
        assert digest == md5("e=d1")  # every entry current: the table is fresh
        run(wh, {"dataset": "a", "value": 7}, now, replace_all=True)
        assert wh.sql("select distinct dataset_id from analysis_toy_ds_rows")["dataset_id"].tolist() == ["a"]
        assert "stored_datasets" not in record(wh)[0]


def test_a_merged_table_is_stale_while_any_dataset_rows_read_old_runs(tmp_path, toy):
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        run(wh, {"value": 1}, {"e": "d1"})
        run(wh, {"dataset": "a", "value": 2}, {"e": "d2"})  # the runs changed: b's rows read old ones
        assert record(wh)[1] != md5("e=d2")  # what analysis_freshness compares with: stale
        run(wh, {"dataset": "b", "value": 3}, {"e": "d2"})  # now every dataset's rows read the current runs
        params, digest = record(wh)
        assert digest == md5("e=d2")
        assert {d: e["input_digest"] for d, e in params["stored_datasets"].items()} == {
            "a": md5("e=d2"),
            "b": md5("e=d2"),
        }


def test_different_columns_replace_the_table_with_a_note(tmp_path, toy):
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        run(wh, {"value": 1}, {})
        result = run(wh, {"dataset": "b", "extra": True}, {})
        stored = wh.sql("select * from analysis_toy_ds_rows")
        assert stored["dataset_id"].unique().tolist() == ["b"] and "extra" in stored.columns
        assert any("analysis_toy_ds_rows: replaced whole" in n and "columns differ" in n for n in result.notes)

"""scripts/compare_warehouses.py: equal tables read as equal, one changed value as a difference."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import duckdb

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "compare_warehouses.py"


def _module():
    spec = importlib.util.spec_from_file_location("compare_warehouses", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_changed_value_is_found_and_volatile_columns_are_not(tmp_path):
    before = tmp_path / "before.duckdb"
    with duckdb.connect(str(before)) as con:
        con.execute("create table crs_encoder as select * from (values ('a', 0.5), ('b', 0.25)) t(encoder_id, crs)")
        con.execute("create table analysis_x_summary as select 'a' as encoder_id, 1 as n, now() as computed_at")
    after = tmp_path / "after.duckdb"
    shutil.copy(before, after)
    compare = _module().compare
    assert compare(before, after) == [("crs_encoder", "equal"), ("analysis_x_summary", "equal")]
    with duckdb.connect(str(after)) as con:
        con.execute("update analysis_x_summary set computed_at = computed_at + interval 1 day")  # volatile
        con.execute("update crs_encoder set crs = 0.5000000001 where encoder_id = 'b'")
    assert compare(before, after) == [("crs_encoder", "differs (2 vs 2 rows)"), ("analysis_x_summary", "equal")]

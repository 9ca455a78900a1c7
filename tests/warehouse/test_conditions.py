"""Condition sets: a panel records its members' perturbed conditions per dataset at freeze, refuses
members whose sets differ, and a cell scored over another set is flagged by name."""

from __future__ import annotations

import pytest
from support.runs_factory import PERTURBED, encoder_runs, frame, run_row

from crsbench.core import CrsbenchError
from crsbench.warehouse.conditions import condition_warnings, member_condition_sets
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel


@pytest.fixture()
def db(tmp_path):
    rows = [r for e in ("e1", "e3", "e5") for r in encoder_runs(e)]
    path = tmp_path / "w.duckdb"
    with Warehouse.open(path) as wh:
        wh.append_runs(frame(rows))
    return path


def test_freeze_records_the_members_condition_set_per_dataset(db):
    with Warehouse.open(db) as wh:
        freeze_panel(wh, "main", ["e1", "e3", "e5"], allow_small=True)
        stored = wh.sql("select scope, conditions from panel_conditions where panel = 'main' order by scope")
        assert condition_warnings(wh.con, "main") == []
    assert list(stored.scope) == ["cxr", "derm", "fundus"]  # e5 has no fundus cell; e1 and e3 do
    assert all(list(c) == sorted(PERTURBED) for c in stored.conditions)


def test_a_cell_over_another_condition_set_is_flagged_by_name(db):
    with Warehouse.open(db) as wh:
        freeze_panel(wh, "main", ["e1", "e3"], allow_small=True)
        # e7 is probed later with a plugin perturbation as well (one more condition on derm).
        extra = [run_row("e7", "derm", "derm", "invert-s1", 1.0, seed, 0.6, 0.2) for seed in range(5)]
        wh.append_runs(frame([*encoder_runs("e7"), *extra]))
        lines = condition_warnings(wh.con, "main")
        cell = wh.sql("select n_conditions from cell_conditions where encoder_id = 'e7' and dataset_id = 'derm'")
    assert int(cell.n_conditions[0]) == len(PERTURBED) + 1
    assert lines == [
        "condition set: e7 on derm adds invert-s1 against panel main's members; its robustness and CRS are "
        "not comparable with theirs"
    ]


def test_members_with_different_condition_sets_are_refused(db):
    with Warehouse.open(db) as wh:
        # Two complete cells of one dataset over different sets (one grid prevents it; a stand-in here).
        wh.con.execute(
            "create temp table cell_conditions as select * from (values "
            "('a', 'derm', 'frozen', ['jpeg-s1', 'x-s1']), ('b', 'derm', 'frozen', ['jpeg-s1'])) "
            "t(encoder_id, dataset_id, regime, conditions)"
        )
        wh.con.execute(
            "create temp table axes_cell as select * from (values ('a', 'derm', 'frozen', true), "
            "('b', 'derm', 'frozen', true)) t(encoder_id, dataset_id, regime, complete)"
        )
        with pytest.raises(CrsbenchError) as err:
            member_condition_sets(wh.con, "p", ["a", "b"])
    assert str(err.value) == (
        "panel 'p' mixes condition sets on dataset 'derm': a (2; also x-s1); b (1; also none); robustness and "
        "CRS compare encoders only over one set: extract and probe them with the same perturbations"
    )

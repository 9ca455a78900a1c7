"""Column comments of the analysis tables: every output column is described (crsbench/analyses/
columns.py), and storing an analysis writes those descriptions into the file, where `crsbench
describe` and duckdb_columns() show them."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from support.analyses_support import add_encoder, add_labels, append, prediction_rows, run_row
from support.criterion_support import build, scenario_runs

from crsbench.analyses import analyses, run_analysis
from crsbench.analyses.columns import BY_ANALYSIS, SECTIONS, column_doc
from crsbench.cli import main
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.shipped_sql import sql_files

MEMBERS = ["e1", "e2", "e3", "e4", "e5", "e6", "e7"]
# Every built-in analysis with small params. e5 needs an ingested dataset and a VLM (or stored
# answers); its tables hold exactly its declared columns, which the first test covers.
EXERCISED = {
    "bootstrap": {"resample": "seeds", "replicates": 100},
    "construct": {},
    "e1": {},
    "e2": {"methods": "temperature,isotonic"},
    "e3": {},
    "e4": {},
    "e6": {"reference": "e1"},
    "estimators": {},
    "external": {},
    "insertion": {"trials": 2},
    "stability": {"random_panels": 2},
    "weights": {"draws": 3},
}
# subgroups and operating_points need image metadata and calib predictions this scenario lacks;
# tests/analyses/test_subgroups.py and test_operating_points.py store and check them.
# agreement, partition and resplit read features, shortcuts the image files: tests/analyses/test_agreement.py,
# test_partition.py, test_resplit.py and test_shortcuts.py.
NOT_EXERCISED = {"e5", "subgroups", "operating_points", "agreement", "partition", "resplit", "shortcuts"}
# Analysis tables the shipped SQL declares empty, so the views over them exist before the analysis
# runs (sql/views/270_..272_, generated from crsbench/analyses/agreement/views.py); they are in `analyses` only once it ran.
SHIPPED_TABLES = {t for _, text in sql_files() for t in re.findall(r"^create table if not exists (\w+)", text, re.M)}


def test_every_declared_output_column_has_a_description():
    missing = [
        f"{name}.{part}.{column}"
        for name, spec in analyses().items()
        for part, columns in spec.outputs.items()
        for column in columns
        if not spec.column_doc(part, column)
    ]
    assert missing == [], f"describe these in register_analysis(columns=...): {missing}"


def test_overrides_name_registered_analyses_and_declared_parts():
    specs = analyses()
    assert set(BY_ANALYSIS) <= set(specs) and set(SECTIONS) == set(BY_ANALYSIS)
    bad = [
        f"{name}: {key}"
        for name, docs in BY_ANALYSIS.items()
        for key in docs
        if "." in key and key.split(".")[0] not in specs[name].outputs
    ]
    assert bad == []
    for name, docs in [*BY_ANALYSIS.items(), *((n, s.column_docs) for n, s in specs.items())]:
        for key, text in docs.items():
            assert text.endswith(".") and "docs/METHODS.md" not in text, (name, key)


def test_the_most_specific_description_wins():
    point, replicate = column_doc("bootstrap", "encoders", "crs"), column_doc("bootstrap", "replicates", "crs")
    assert point is not None and replicate is not None
    assert point.startswith("Point estimate") and "in this replicate" in replicate
    assert column_doc("bootstrap", "summary", "crs") == point  # the analysis-wide entry
    assert "2.5th percentile" in (column_doc("bootstrap", "encoders", "crs_lo") or "")
    assert column_doc("e5", "summary", "n") != column_doc("stability", "panels", "n")
    # An analysis registered elsewhere: only names that mean the same everywhere, no METHODS.md section.
    assert column_doc("plugin", "out", "encoder_id") == "Encoder id (registry name)."
    assert column_doc("plugin", "out", "n") is None


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The criterion scenario (seven encoders, three datasets, a shift pair, a frozen panel) plus
    encoder scopes/domains for E1 and one fit with calib and test predictions for E2; every
    analysis of EXERCISED run and stored on it."""
    db = build(tmp_path_factory.mktemp("columns") / "w.duckdb", scenario_runs(), MEMBERS)
    rng = np.random.default_rng(0)
    with Warehouse.open(db) as wh:
        for i, encoder_id in enumerate(MEMBERS):
            add_encoder(wh, encoder_id, ("general", "broad_medical", "specialty")[i % 3], ("derm", "none")[i % 2])
        wh.con.execute("update datasets set domain = 'derm' where dataset_id = 'derm'")
        wh.con.execute("insert into shift_pairs values ('cxr', 'mimic', current_timestamp)")
        runs, preds = [], []
        for condition in ("calib", "clean"):
            ids = [f"x-{condition}-{i}" for i in range(60)]
            y = np.arange(60) % 8
            p = np.full((60, 8), 0.02)
            p[np.arange(60), np.where(rng.random(60) < 0.7, y, (y + 1) % 8)] = 0.86
            add_labels(wh, "derm", ids, y, 8)
            run = run_row("zz", "derm", condition=condition, fit_id="zz-fit", auroc=0.8, ece=0.1)
            runs.append(run)
            preds.append(prediction_rows(run, ids, p))
        append(wh, runs, pd.concat(preds, ignore_index=True))
        written = {name: run_analysis(wh, name, params) for name, params in EXERCISED.items()}
    return db, written


def test_every_builtin_analysis_is_exercised_or_named():
    assert set(EXERCISED) | NOT_EXERCISED == set(analyses())


def test_stored_tables_carry_a_comment_on_every_column(stored):
    db, written = stored
    assert not written["e2"].tables["fits"].empty and not written["e1"].tables["specialisation"].empty
    with Warehouse.open(db, read_only=True) as wh:
        columns = wh.sql(
            "select table_name, column_name, comment from duckdb_columns() where starts_with(table_name, 'analysis_') "
            "and table_name in (select table_name from duckdb_tables())"  # not the view analysis_freshness
        )
        tables = set(wh.sql("select table_name from analyses").table_name)
    assert {t for t in SHIPPED_TABLES if t.startswith("analysis_")} <= set(columns["table_name"])
    assert set(columns["table_name"]) - SHIPPED_TABLES == tables
    assert {t.split("_")[1] for t in tables} == set(EXERCISED)
    bare = columns[columns["comment"].fillna("") == ""]
    assert bare.empty, f"uncommented: {(bare['table_name'] + '.' + bare['column_name']).tolist()}"
    assert columns["comment"].str.contains("docs/METHODS.md §").all()
    # columns added to a declaration late are described too (e2 cells: top_label_changed)
    comment = columns.set_index(["table_name", "column_name"])["comment"]
    assert "argmax class" in comment[("analysis_e2_cells", "top_label_changed")]
    assert comment[("analysis_bootstrap_encoders", "crs")] != comment[("analysis_bootstrap_replicates", "crs")]


def test_stored_tables_hold_exactly_the_declared_columns_in_order(stored):
    db, written = stored
    specs = analyses()
    for name, result in written.items():
        for part, frame in {**result.tables, "summary": result.summary}.items():
            assert frame.columns.tolist() == list(specs[name].outputs[part]), f"{name}.{part}"
    with Warehouse.open(db, read_only=True) as wh:
        tables = wh.sql(
            "select a.analysis, a.table_name, list(c.column_name order by c.column_index) as names "
            "from analyses a join duckdb_columns() c using (table_name) group by all"
        )
    assert len(tables) == sum(len(r.tables) + 1 for r in written.values())
    for name, table, names in tables.itertuples(index=False):
        part = table.removeprefix(f"analysis_{name}_")
        assert list(names) == list(specs[name].outputs[part]), table


def test_describe_shows_the_column_comments_of_an_analysis_table(stored, capsys):
    db, _ = stored
    assert main(["--json", "describe", "analysis_bootstrap_encoders", "--db", str(db)]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["objects"]
    fields = {f["name"]: f["comment"] for f in entry["fields"]}
    assert list(fields) == list(analyses()["bootstrap"].outputs["encoders"])
    assert fields["p_rank1"] == column_doc("bootstrap", "encoders", "p_rank1")
    assert "ranks first" in fields["p_rank1"]

"""Column comments of the analysis tables: every output column is described (each analysis's
register_analysis(columns=...), crsbench/analyses/columns.py for the generic names), and storing
an analysis writes those descriptions into the file, where `crsbench describe` and
duckdb_columns() show them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from support.analyses_support import add_encoder, add_predicted_derm_fit
from support.criterion_support import build, scenario_runs

from crsbench.analyses import analyses, run_analysis
from crsbench.analyses.columns import GENERIC, column_doc
from crsbench.cli import main
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.shipped_sql import sql_files

MEMBERS = ["e1", "e2", "e3", "e4", "e5", "e6", "e7"]
# Small values of the params that make a run slow, keyed by param name (not by analysis), so every
# registered analysis runs on the scenario with whichever of them it declares; e6's reference is
# one of the scenario's encoders.
QUICK = {
    "replicates": 100,
    "resample": "seeds",
    "methods": "temperature,isotonic",
    "reference": "e1",
    "trials": 2,
    "random_panels": 2,
    "draws": 3,
    "repeats": 2,
    "folds": 2,
}
# Analysis tables the shipped SQL declares empty, so the views over them exist before the analysis
# runs (sql/views/270_..272_, generated from crsbench/analyses/agreement/views.py); they are in `analyses` only once it ran.
SHIPPED_TABLES = {t for _, text in sql_files() for t in re.findall(r"^create table if not exists (\w+)", text, re.M)}
TESTS = Path(__file__).parent


def test_every_declared_output_column_has_a_description():
    missing = [
        f"{name}.{part}.{column}"
        for name, spec in analyses().items()
        for part, columns in spec.outputs.items()
        for column in columns
        if not spec.column_doc(part, column)
    ]
    assert missing == [], f"describe these in register_analysis(columns=...): {missing}"


def test_descriptions_are_sentences_that_leave_the_section_to_the_lookup():
    for name, spec in analyses().items():
        assert spec.section, f"{name}: declare its docs/METHODS.md section (register_analysis(section=...))"
        for key, text in [*spec.column_docs.items(), *GENERIC.items()]:
            assert text.endswith(".") and "docs/METHODS.md" not in text, (name, key)


def test_the_most_specific_description_wins():
    bootstrap = analyses()["bootstrap"]
    point, replicate = bootstrap.column_doc("encoders", "crs"), bootstrap.column_doc("replicates", "crs")
    assert point is not None and replicate is not None
    assert point.startswith("Point estimate") and "in this replicate" in replicate
    assert bootstrap.column_doc("summary", "crs") == point  # the analysis-wide entry
    assert "2.5th percentile" in (bootstrap.column_doc("encoders", "crs_lo") or "")
    assert analyses()["e5"].column_doc("summary", "n") != analyses()["stability"].column_doc("panels", "n")
    assert point == bootstrap.column_docs["crs"] + " docs/METHODS.md §10."
    # An analysis registered elsewhere: only names that mean the same everywhere, no METHODS.md section.
    assert column_doc("out", "encoder_id") == "Encoder id (registry name)."
    assert column_doc("out", "n") is None
    assert (
        column_doc("out", "n", {"out.n": "Rows; count.", "n": "Other."}, "§11") == "Rows; count. docs/METHODS.md §11."
    )


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The criterion scenario (seven encoders, three datasets, a shift pair, a frozen panel) plus
    encoder scopes/domains for E1 and one fit with calib and test predictions for E2; every
    registered analysis run on it with its QUICK params: (stored results, user errors of those the
    scenario cannot feed)."""
    db = build(tmp_path_factory.mktemp("columns") / "w.duckdb", scenario_runs(), MEMBERS)
    rng = np.random.default_rng(0)
    with Warehouse.open(db) as wh:
        for i, encoder_id in enumerate(MEMBERS):
            add_encoder(wh, encoder_id, ("general", "broad_medical", "specialty")[i % 3], ("derm", "none")[i % 2])
        wh.con.execute("update datasets set domain = 'derm' where dataset_id = 'derm'")
        wh.con.execute("insert into shift_pairs values ('cxr', 'mimic', current_timestamp)")
        add_predicted_derm_fit(wh, rng)
        written, refused = {}, {}
        for name, spec in analyses().items():
            try:
                written[name] = run_analysis(wh, name, {k: v for k, v in QUICK.items() if k in spec.params})
            except CrsbenchError as error:  # the scenario lacks its inputs (features, image files, metadata, a VLM)
                refused[name] = str(error)
    return db, written, refused


def test_an_analysis_this_scenario_cannot_feed_is_run_by_a_test_of_its_own(stored):
    _, _, refused = stored
    sources = [p.read_text() for p in TESTS.glob("test_*.py") if p.name != Path(__file__).name]
    for name, why in refused.items():
        call = re.compile(rf'(run_analysis\(wh, |analyze\(|"analyze", )"{name}"')
        assert any(call.search(text) for text in sources), f"{name} ({why}): no test runs it"


def test_stored_tables_carry_a_comment_on_every_column(stored):
    db, written, _ = stored
    assert not written["e2"].tables["fits"].empty and not written["e1"].tables["specialisation"].empty
    with Warehouse.open(db, read_only=True) as wh:
        columns = wh.sql(
            "select table_name, column_name, comment from duckdb_columns() where starts_with(table_name, 'analysis_') "
            "and table_name in (select table_name from duckdb_tables())"  # not the view analysis_freshness
        )
        stored_tables = wh.sql("select analysis, table_name from analyses")
    shipped = {t for t in SHIPPED_TABLES if t.startswith("analysis_")}
    assert set(columns["table_name"]) == set(stored_tables["table_name"]) | shipped
    assert set(stored_tables["analysis"]) == set(written)
    bare = columns[columns["comment"].fillna("") == ""]
    assert bare.empty, f"uncommented: {(bare['table_name'] + '.' + bare['column_name']).tolist()}"
    assert columns["comment"].str.contains("docs/METHODS.md §").all()
    # columns added to a declaration late are described too (e2 cells: top_label_changed)
    comment = columns.set_index(["table_name", "column_name"])["comment"]
    assert "argmax class" in comment[("analysis_e2_cells", "top_label_changed")]
    assert comment[("analysis_bootstrap_encoders", "crs")] != comment[("analysis_bootstrap_replicates", "crs")]


def test_stored_tables_hold_exactly_the_declared_columns_in_order(stored):
    db, written, _ = stored
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
    db, _, _ = stored
    assert main(["--json", "describe", "analysis_bootstrap_encoders", "--db", str(db)]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["objects"]
    fields = {f["name"]: f["comment"] for f in entry["fields"]}
    assert list(fields) == list(analyses()["bootstrap"].outputs["encoders"])
    assert fields["p_rank1"] == analyses()["bootstrap"].column_doc("encoders", "p_rank1")
    assert "ranks first" in fields["p_rank1"]

"""The declared schemas: DDL, Arrow and comments generated from one declaration, and a metric
added by one registration reaching the run record, the Parquet part and the warehouse."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.synthetic import make_dataset, write_features

from crsbench.core.schema import PREDICTIONS, Column, Schema
from crsbench.probes import metrics
from crsbench.probes.grid import GridContext, plan_fits, run_grid
from crsbench.probes.metrics import register_metric
from crsbench.probes.records import runs_schema
from crsbench.warehouse.connection import Warehouse


def test_one_declaration_gives_ddl_arrow_and_comments():
    schema = Schema(
        "t",
        "One row per thing.",
        (
            Column("k", "VARCHAR", "The key.", primary_key=True),
            Column("x", "DOUBLE", "It's a value; higher is better."),
            Column("probs", "FLOAT[]", "Probabilities."),
            Column("at", "TIMESTAMPTZ", "When."),
            Column("late", "INTEGER", "Added in version 2.", since=2),
        ),
    )
    assert schema.arrow() == pa.schema(
        [
            ("k", pa.string()),
            ("x", pa.float64()),
            ("probs", pa.list_(pa.float32())),
            ("at", pa.timestamp("us", tz="UTC")),
            ("late", pa.int32()),
        ]
    )
    con = duckdb.connect()
    con.execute(schema.create_sql(version=1))
    assert [r[0] for r in con.execute("describe t").fetchall()] == ["k", "x", "probs", "at"]
    for statement in schema.add_column_sql(2):
        con.execute(statement)
    for statement in schema.comment_sql("table"):
        con.execute(statement)
    got = con.execute(
        "select column_name, data_type, comment from duckdb_columns() where table_name = 't' order by column_index"
    ).fetchall()
    assert got == [
        ("k", "VARCHAR", "The key."),
        ("x", "DOUBLE", "It's a value; higher is better."),
        ("probs", "FLOAT[]", "Probabilities."),
        ("at", "TIMESTAMP WITH TIME ZONE", "When."),
        ("late", "INTEGER", "Added in version 2."),
    ]
    assert (
        con.execute("select comment from duckdb_tables() where table_name = 't'").fetchone()[0] == "One row per thing."
    )
    with pytest.raises(duckdb.ConstraintException):
        con.execute("insert into t (k) values ('a'), ('a')")
    with pytest.raises(ValueError, match="twice"):
        Schema("u", "dup", (Column("a", "DOUBLE", "a"), Column("a", "DOUBLE", "again")))
    with pytest.raises(ValueError, match="documentation"):
        Column("b", "DOUBLE", " ")


def test_run_record_parts_keep_the_types_they_always_had():
    # The Arrow schema the parts were written with before the declaration existed, by hand:
    # old parts and new parts must read back as one table.
    before = pa.schema(
        [
            ("run_id", pa.string()),
            ("fit_id", pa.string()),
            ("encoder_id", pa.string()),
            ("dataset_id", pa.string()),
            ("eval_dataset_id", pa.string()),
            ("regime", pa.string()),
            ("probe", pa.string()),
            ("depth", pa.float64()),
            ("label_fraction", pa.float64()),
            ("seed", pa.int32()),
            ("condition", pa.string()),
            ("auroc", pa.float64()),
            ("ece", pa.float64()),
            ("ece_adaptive", pa.float64()),
            ("brier", pa.float64()),
            ("nll", pa.float64()),
            ("accuracy", pa.float64()),
            ("mean_confidence", pa.float64()),
            ("qwk", pa.float64()),
            ("ordinal_mae", pa.float64()),
            ("n_train", pa.int32()),
            ("n_test", pa.int32()),
            ("fit_seconds", pa.float64()),
            ("pretrained", pa.bool_()),
            ("code_version", pa.string()),
            ("created_at", pa.timestamp("us", tz="UTC")),
        ]
    )
    now = runs_schema().arrow()
    # every column they had keeps its type and place; any other is a metric registered since (DOUBLE)
    assert [f for f in now if f.name in before.names] == list(before)
    assert {f.name for f in now} - set(before.names) == set(metrics.METRICS.names()) - set(before.names)
    assert all(f.type == pa.float64() for f in now if f.name not in before.names)
    assert PREDICTIONS.arrow() == pa.schema(
        [
            ("run_id", pa.string()),
            ("fit_id", pa.string()),
            ("eval_dataset_id", pa.string()),
            ("condition", pa.string()),
            ("row_index", pa.int32()),
            ("image_id", pa.string()),
            ("probs", pa.list_(pa.float32())),
        ]
    )


@pytest.fixture
def fake_metric():
    before = set(metrics.METRICS)
    yield
    for name in set(metrics.METRICS) - before:
        metrics.METRICS.remove(name)


def test_a_metric_is_one_function_and_one_registration(fake_metric, tmp_path):
    # The two lines: a metric function and its registration. Its value here is the number of
    # evaluated images, so the expected value is the run's own n_test.
    @register_metric("n_scored", "Images scored; count. Test-only metric.")
    def n_scored(y, p, task):
        return float(len(p))

    ds = make_dataset("derm", "multiclass", 90, 3, seed=1)
    url = str(tmp_path / "features.zarr")
    write_features(url, ds, "enc", 8, depths=(1.0,), chunk_rows=64)
    from crsbench.features.store import FeatureStore

    store = FeatureStore(url)
    fits = plan_fits(["derm"], ["enc"], store, probes=("logreg",), fractions=(1.0,), seeds=(0,), depths=(1.0,))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        frames = []

        def sink(runs, preds):
            frames.append(runs)
            wh.append_runs(runs, preds)

        run_grid(fits, GridContext({"derm": ds}, store, sink))
        record = frames[0]
        assert record["n_scored"].tolist() == record["n_test"].astype(float).tolist()
        parts = (tmp_path / "w.duckdb.parts" / "runs").glob("part-*.parquet")
        part = next(p for p in parts if "empty" not in p.name)
        assert pq.read_schema(part).field("n_scored").type == pa.float64()
        stored = wh.sql("select n_scored, n_test from runs")
        np.testing.assert_array_equal(stored["n_scored"], stored["n_test"].astype(float))
    # the next read-write open documents the new column from its registration
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        comment = wh.con.execute(
            "select comment from duckdb_columns() where table_name = 'runs' and column_name = 'n_scored'"
        ).fetchone()[0]
    assert comment == "Images scored; count. Test-only metric."

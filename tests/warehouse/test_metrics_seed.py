"""The metric columns of view metrics_seed, generated from the metric registry
(crsbench/warehouse/metrics_seed.py): every registered metric's mean, sd and n over the finite seed
values, as pandas computes them, and a newly registered metric gets its three columns with their
comments and no SQL edit."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import numpy as np
import pandas as pd
import pytest

from crsbench.core.schema import sql_literal
from crsbench.probes.metrics import METRICS
from crsbench.probes.records import runs_schema
from crsbench.warehouse import metrics_seed
from crsbench.warehouse.shipped_sql import sql_files

# The metrics registered by crsbench itself, in registration order (the run record's column order):
# a registered metric adds to these, it never replaces or reorders them.
BUILT_INS = ("auroc", "ece", "ece_adaptive", "brier", "nll", "accuracy", "mean_confidence", "qwk", "ordinal_mae")
GROUP = ["encoder_id", "dataset_id", "eval_dataset_id", "regime", "probe", "depth", "label_fraction", "condition"]
# The view's context columns after the metric aggregates (sql/views/010_metrics_seed.sql), by hand.
CONTEXT = ["fit_seconds_mean", "n_train_min", "n_train_max", "n_test_min", "n_test_max", "pretrained"]


def _runs_grid(con: duckdb.DuckDBPyConnection) -> None:
    """A table runs_grid of 2 encoders x 2 conditions x 3 seeds (and one off-grid run) with
    random metric values, some NaN, some infinite and some NULL."""
    rng = np.random.default_rng(0)
    rows = []
    for e in ("a", "b"):
        for condition in ("clean", "blur-s1"):
            for seed in range(3):
                row = {
                    "encoder_id": e,
                    "dataset_id": "d",
                    "eval_dataset_id": "d",
                    "regime": "frozen",
                    "probe": "logreg",
                    "depth": 1.0,
                    "label_fraction": 1.0,
                    "condition": condition,
                    "seed": seed,
                    "n_train": 10 + seed,
                    "n_test": 5,
                    "fit_seconds": float(rng.random()),
                    "pretrained": seed != 2 or e == "a",
                    "in_grid": True,
                }
                row.update({m: float(v) for m, v in zip(METRICS.names(), rng.random(len(METRICS)), strict=True)})
                rows.append(row)
    rows[0]["auroc"], rows[1]["ece"], rows[4]["qwk"] = np.nan, np.inf, None
    rows.append({**rows[2], "seed": 7, "auroc": 0.0, "in_grid": False})
    frame = pd.DataFrame(rows)
    con.register("runs_frame", frame)
    con.execute("create table runs_grid as select * from runs_frame")


def _seed_view(con: duckdb.DuckDBPyConnection) -> None:
    shipped = dict(sql_files())
    con.execute(shipped["macros/010_fn_exact_mean.sql"])
    _runs_grid(con)
    con.execute(shipped[metrics_seed.FILE])


def test_the_built_in_metrics_lead_the_registry():
    assert METRICS.names()[: len(BUILT_INS)] == list(BUILT_INS)


def test_the_view_has_mean_sd_and_n_of_every_registered_metric_in_order():
    con = duckdb.connect()
    _seed_view(con)
    described = con.execute("describe metrics_seed").df()
    types = dict(zip(described["column_name"], described["column_type"], strict=True))
    metric_columns = [f"{m}_{s}" for m in METRICS.names() for s in ("mean", "sd", "n")]
    assert list(types) == [*GROUP, "n_seeds", *metric_columns, *CONTEXT]
    for name in METRICS.names():
        # fn_exact_mean sums as DECIMAL; DuckDB's avg of a DECIMAL returns a DOUBLE
        assert [types[f"{name}_{s}"] for s in ("mean", "sd", "n")] == ["DOUBLE", "DOUBLE", "BIGINT"]
    assert {f"{m}_mean" for m in BUILT_INS} <= set(types)


def _finite(values: pd.Series) -> np.ndarray:
    x = values.to_numpy(dtype=np.float64, na_value=np.nan)
    return x[np.isfinite(x)]


def test_every_registered_metric_s_seed_aggregates_match_pandas():
    con = duckdb.connect()
    _seed_view(con)
    got = con.execute("select * from metrics_seed order by all").df()
    grid = con.execute("select * from runs_grid where in_grid").df()
    # rows (a, blur-s1), (a, clean), (b, blur-s1), (b, clean); the off-grid seed 7 is left out
    assert len(got) == 4 and got["n_seeds"].tolist() == [3, 3, 3, 3]
    assert got["auroc_n"].tolist() == [3, 2, 3, 3] and got["ece_n"].tolist() == [3, 2, 3, 3]
    assert got["qwk_n"].tolist() == [2, 3, 3, 3]
    for row in got.itertuples(index=False):
        seeds = grid[(grid["encoder_id"] == row.encoder_id) & (grid["condition"] == row.condition)]
        for name in METRICS.names():
            x = _finite(seeds[name])
            assert getattr(row, f"{name}_n") == len(x)
            assert getattr(row, f"{name}_mean") == pytest.approx(x.mean(), rel=1e-15, abs=1e-17)
            assert getattr(row, f"{name}_sd") == pytest.approx(x.std(ddof=1), rel=1e-12)
        assert row.fit_seconds_mean == pytest.approx(seeds["fit_seconds"].mean(), rel=1e-15)
        assert (row.n_train_min, row.n_train_max) == (seeds["n_train"].min(), seeds["n_train"].max())
        assert (row.n_test_min, row.n_test_max) == (5, 5) and row.pretrained == seeds["pretrained"].all()


def test_every_registered_metric_has_commented_columns():
    text = dict(sql_files())[metrics_seed.FILE]
    for name, metric in METRICS.items():
        assert f'fn_exact_mean("{name}") as "{name}_mean"' in text
        mean_comment = sql_literal(f"of runs.{name}: {metric.column.doc}")[1:]
        assert f'comment on column metrics_seed."{name}_mean" is' in text and mean_comment in text
        for suffix in ("sd", "n"):
            assert f'comment on column metrics_seed."{name}_{suffix}" is' in text
    assert metrics_seed.MARKER not in [line.strip() for line in text.splitlines()]


def test_a_file_without_the_marker_is_refused():
    with pytest.raises(RuntimeError, match="@metric_aggregates"):
        metrics_seed.render("create view metrics_seed as select 1")


_THROWAWAY = """
import json, sys
from crsbench.probes.metrics import register_metric

@register_metric("n_scored", "Images scored, a throwaway metric; count, neither direction is better.")
def n_scored(y, p, task):
    return float(len(p))

from crsbench.warehouse.connection import Warehouse

with Warehouse.open(sys.argv[1]) as wh:
    columns = wh.sql(
        "select column_name, data_type, comment from duckdb_columns() where table_name = 'metrics_seed' "
        "order by column_index"
    )
    print(json.dumps(columns.to_dict("records")))
"""


def test_a_registered_metric_reaches_the_seed_means(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", _THROWAWAY, str(tmp_path / "w.duckdb")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    columns = {c["column_name"]: c for c in json.loads(out)}
    names = list(columns)
    # the new metric's three columns follow the built-in ones', before the context columns
    at = names.index("n_scored_mean")
    assert names[at : at + 3] == ["n_scored_mean", "n_scored_sd", "n_scored_n"]
    assert names[at - 1] == f"{METRICS.names()[-1]}_n" and names[at + 3] == "fit_seconds_mean"
    assert [columns[f"n_scored_{s}"]["data_type"] for s in ("mean", "sd", "n")] == ["DOUBLE", "DOUBLE", "BIGINT"]
    assert columns["n_scored_mean"]["comment"].endswith(
        "of runs.n_scored: Images scored, a throwaway metric; count, neither direction is better."
    )
    assert "runs.n_scored values" in columns["n_scored_sd"]["comment"]
    assert "finite runs.n_scored value behind n_scored_mean" in columns["n_scored_n"]["comment"]
    assert "n_scored" not in runs_schema().names  # registered in the subprocess only


def test_the_seed_aggregates_do_not_depend_on_the_row_order():
    con = duckdb.connect()
    _seed_view(con)
    con.execute("set threads = 4")
    first = con.execute("select * from metrics_seed order by all").df()
    con.execute("select setseed(0.25)")
    for _ in range(6):
        con.execute("create or replace temp table shuffled as select * from runs_grid order by random()")
        con.execute("create or replace table runs_grid as select * from shuffled")
        assert con.execute("select * from metrics_seed order by all").df().equals(first)

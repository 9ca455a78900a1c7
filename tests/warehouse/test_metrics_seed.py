"""The metric columns of view metrics_seed, generated from the metric registry
(crsbench/warehouse/metrics_seed.py): the same view as the SQL once written by hand, and a
newly registered metric gets its mean, sd and n with their comments and no SQL edit."""

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

# The select list of sql/views/010_metrics_seed.sql as it was written by hand, before the
# metric columns were generated: the generated view must equal it.
HAND_WRITTEN = """
create view metrics_seed_by_hand as
select
    encoder_id, dataset_id, eval_dataset_id, regime, probe, depth, label_fraction, condition,
    count(distinct seed) as n_seeds,
    fn_exact_mean(auroc) as auroc_mean,
    stddev_samp(case when isfinite(auroc) then auroc end) as auroc_sd,
    count(case when isfinite(auroc) then auroc end) as auroc_n,
    fn_exact_mean(ece) as ece_mean,
    stddev_samp(case when isfinite(ece) then ece end) as ece_sd,
    count(case when isfinite(ece) then ece end) as ece_n,
    fn_exact_mean(ece_adaptive) as ece_adaptive_mean,
    stddev_samp(case when isfinite(ece_adaptive) then ece_adaptive end) as ece_adaptive_sd,
    count(case when isfinite(ece_adaptive) then ece_adaptive end) as ece_adaptive_n,
    fn_exact_mean(brier) as brier_mean,
    stddev_samp(case when isfinite(brier) then brier end) as brier_sd,
    count(case when isfinite(brier) then brier end) as brier_n,
    fn_exact_mean(nll) as nll_mean,
    stddev_samp(case when isfinite(nll) then nll end) as nll_sd,
    count(case when isfinite(nll) then nll end) as nll_n,
    fn_exact_mean(accuracy) as accuracy_mean,
    stddev_samp(case when isfinite(accuracy) then accuracy end) as accuracy_sd,
    count(case when isfinite(accuracy) then accuracy end) as accuracy_n,
    fn_exact_mean(mean_confidence) as mean_confidence_mean,
    stddev_samp(case when isfinite(mean_confidence) then mean_confidence end) as mean_confidence_sd,
    count(case when isfinite(mean_confidence) then mean_confidence end) as mean_confidence_n,
    fn_exact_mean(qwk) as qwk_mean,
    stddev_samp(case when isfinite(qwk) then qwk end) as qwk_sd,
    count(case when isfinite(qwk) then qwk end) as qwk_n,
    fn_exact_mean(ordinal_mae) as ordinal_mae_mean,
    stddev_samp(case when isfinite(ordinal_mae) then ordinal_mae end) as ordinal_mae_sd,
    count(case when isfinite(ordinal_mae) then ordinal_mae end) as ordinal_mae_n,
    fn_exact_mean(fit_seconds) as fit_seconds_mean,
    min(n_train) as n_train_min,
    max(n_train) as n_train_max,
    min(n_test) as n_test_min,
    max(n_test) as n_test_max,
    bool_and(pretrained) as pretrained
from runs_grid
where in_grid
group by encoder_id, dataset_id, eval_dataset_id, regime, probe, depth, label_fraction, condition
"""


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


def test_the_generated_view_equals_the_hand_written_one():
    con = duckdb.connect()
    con.execute("set threads = 1")  # stddev_samp is exact only in one thread schedule
    shipped = dict(sql_files())
    con.execute(shipped["macros/010_fn_exact_mean.sql"])
    _runs_grid(con)
    con.execute(shipped[metrics_seed.FILE])
    con.execute(HAND_WRITTEN)
    generated = con.execute("describe metrics_seed").df()
    by_hand = con.execute("describe metrics_seed_by_hand").df()
    pd.testing.assert_frame_equal(generated[["column_name", "column_type"]], by_hand[["column_name", "column_type"]])
    got = con.execute("select * from metrics_seed order by all").df()
    want = con.execute("select * from metrics_seed_by_hand order by all").df()
    assert len(got) == 4 and got.equals(want)
    # rows (a, blur-s1), (a, clean), (b, blur-s1), (b, clean); the off-grid seed 7 is left out
    assert got["n_seeds"].tolist() == [3, 3, 3, 3] and got["auroc_n"].tolist() == [3, 2, 3, 3]
    assert got["ece_n"].tolist() == [3, 2, 3, 3] and got["qwk_n"].tolist() == [2, 3, 3, 3]


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

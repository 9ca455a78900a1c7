"""Several analyses at once (`Bench.analyze_many`, crsbench/analyses/processes.py): computed in child
processes on a read-only warehouse, stored in the order asked, they leave every table exactly as the
same analyses run one after the other do. An analysis writing its own way (bootstrap's intervals)
is computed by the caller; one registered at run time in this process alone runs here. Side tables
recorded under `deferring_writes` are written as `replace_rows` writes them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.analyses_support import add_predicted_derm_fit
from support.criterion_support import build, scenario_runs

from crsbench.analyses.processes import findable_in_a_fresh_process, run_many
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse

MEMBERS = ["e1", "e2", "e3", "e4", "e5", "e6", "e7"]
REQUESTS = [
    ("e1", {}),
    ("e2", {"methods": "temperature,isotonic"}),
    ("bootstrap", {"replicates": 100, "resample": "seeds"}),  # writes bootstrap_intervals itself
    ("e3", {}),
    ("e4", {}),
]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Path:
    """The criterion scenario with a frozen panel and one fit with calib and test predictions."""
    db = build(tmp_path_factory.mktemp("processes") / "w.duckdb", scenario_runs(), MEMBERS)
    rng = np.random.default_rng(0)
    with Warehouse.open(db) as wh:
        add_predicted_derm_fit(wh, rng)
    return db


def _copy(db: Path, folder: Path) -> Path:
    """A copy of the warehouse with its Parquet parts (the folder holds nothing else)."""
    shutil.copytree(db.parent, folder)
    return folder / db.name


def _tables(db: Path) -> dict[str, pd.DataFrame]:
    """Every table, sorted, less the columns that hold when a row was written."""
    with Warehouse.open(db, read_only=True) as wh:
        names = wh.sql("select table_name from duckdb_tables() order by 1")["table_name"]
        out = {}
        for name in names:
            columns = wh.sql(
                "select column_name from duckdb_columns() where table_name = ? and data_type not like 'TIMESTAMP%'",
                [name],
            )["column_name"]
            listed = ", ".join(f'"{c}"' for c in columns)
            out[name] = wh.sql(f'select {listed} from "{name}" order by all').reset_index(drop=True)
        return out


ONE_BY_ONE = "for name, params in requests:\n    bench.analyze(name, **params)\n"
AT_ONCE = (
    "seen = []\n"
    "bench.analyze_many(requests, workers=2, progress=lambda _, done, n: seen.append((done, n)))\n"
    "print(json.dumps(seen))\n"
)


def _fresh(db: Path, body: str) -> str:
    """`body` run in a fresh interpreter, as a command runs: crsbench imported first, so under canonical
    numerics in every process (this test process may have loaded numpy before crsbench set them)."""
    head = (
        "import json, sys\nfrom crsbench import Bench\nbench, requests = Bench(sys.argv[1]), json.loads(sys.argv[2])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", head + body, str(db), json.dumps(REQUESTS)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_stored_tables_equal_the_same_analyses_run_one_after_the_other(scenario, tmp_path):
    one_by_one, at_once = _copy(scenario, tmp_path / "a"), _copy(scenario, tmp_path / "b")
    _fresh(one_by_one, ONE_BY_ONE)
    seen = json.loads(_fresh(at_once, AT_ONCE).splitlines()[-1])
    a, b = _tables(one_by_one), _tables(at_once)
    assert sorted(a) == sorted(b) and len(a["bootstrap_intervals"]) and len(a["analysis_e2_fits"])
    for name in a:  # bit for bit (bootstrap's spearman_rho too, since fn_rank_correlation replaced corr())
        pd.testing.assert_frame_equal(a[name], b[name], check_exact=True, obj=name)
    assert seen[0] == [0, len(REQUESTS)] and seen[-1] == [len(REQUESTS), len(REQUESTS)]


def test_a_failing_analysis_raises_its_own_error_in_the_order_asked(scenario, tmp_path):
    db = _copy(scenario, tmp_path / "c")
    with pytest.raises(CrsbenchError, match="reference"):
        run_many(db, [("e3", {}), ("e6", {"reference": "no-such-encoder"}), ("e4", {})], workers=2)
    with pytest.raises(CrsbenchError, match="no-such-analysis"):
        run_many(db, [("e3", {}), ("no-such-analysis", {})], workers=2)


def test_an_analysis_registered_here_alone_runs_in_this_process(scenario, tmp_path):
    from crsbench.analyses import AnalysisResult, register_analysis
    from crsbench.analyses.registry import ANALYSES

    @register_analysis("zz_local_count", description="Runs per encoder, registered by this test only.")
    def zz_local_count(wh, params):
        frame = wh.sql("select encoder_id, count(*) as n from runs group by all order by all")
        return AnalysisResult({}, frame, [])

    try:
        assert findable_in_a_fresh_process("e3") and not findable_in_a_fresh_process("zz_local_count")
        db = _copy(scenario, tmp_path / "d")
        results = run_many(db, [("zz_local_count", {}), ("e3", {})], workers=2)
        with Warehouse.open(db, read_only=True) as wh:
            counted = wh.sql("select encoder_id, count(*) as n from runs group by all order by all")
            stored = wh.sql("select * from analysis_zz_local_count_summary order by all")
        assert results[0].summary.equals(counted) and stored.equals(counted)
    finally:
        ANALYSES.remove("zz_local_count")


def test_deferred_side_tables_are_written_as_replace_rows_writes_them(tmp_path):
    from crsbench.analyses.side_tables import deferring_writes, replace_rows, write_deferred

    frames = {"side_a": pd.DataFrame({"dataset_id": ["x", "y"], "v": [1.0, 2.0]})}
    later = {"side_a": pd.DataFrame({"dataset_id": ["y"], "v": [5.0]})}
    dbs = [tmp_path / "direct.duckdb", tmp_path / "deferred.duckdb"]
    for db in dbs:
        with Warehouse.open(db) as wh:
            wh.con.execute("create table side_a (dataset_id varchar, v double)")
    with Warehouse.open(dbs[0]) as wh:
        replace_rows(wh, frames)
        replace_rows(wh, later, ["y"])
    with Warehouse.open(dbs[1]) as wh:
        with deferring_writes() as recorded:
            replace_rows(wh, frames)
            replace_rows(wh, later, ["y"])
        assert wh.sql("select count(*) as n from side_a")["n"].item() == 0  # recorded, not written
        write_deferred(wh, recorded)
    tables = []
    for db in dbs:
        with Warehouse.open(db, read_only=True) as wh:
            tables.append(wh.sql("select * from side_a order by all"))
    assert tables[0].equals(tables[1]) and tables[0]["v"].tolist() == [1.0, 5.0]

"""`crsbench sql`: read-only for real (no file written or read outside the warehouse's parts, no
extension installed, configuration locked), each refusal one line with exit 1."""

from __future__ import annotations

import pytest
from runs_factory import encoder_runs, frame

from crsbench.cli import main
from crsbench.warehouse.connection import Warehouse


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("sql") / "w.duckdb"
    with Warehouse.open(path) as wh:
        wh.append_runs(frame(encoder_runs("e1")))  # pending parts: the views read Parquet files
    return path


def test_views_over_parts_answer_with_external_access_off(db, capsys):
    assert main(["--json", "sql", "--db", str(db), "select count(*) as n from runs"]) == 0
    assert f'"n": {len(encoder_runs("e1"))}' in capsys.readouterr().out


@pytest.mark.parametrize(
    "query",
    [
        "copy (select 1) to '{out}'",
        "select * from read_csv('/etc/passwd')",
        "select * from glob('/etc/*')",
        "install httpfs",
        "attach '{out}' as other",
        "set enable_external_access = true",
        "set allowed_directories = ['/']",
    ],
)
def test_writes_reads_elsewhere_and_installs_are_refused(db, tmp_path, capsys, query):
    out = tmp_path / "x.csv"
    assert main(["sql", "--db", str(db), query.format(out=out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: query failed")
    assert not out.exists()

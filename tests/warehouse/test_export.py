"""`crsbench export`: any view, table or query as csv, parquet, json, markdown or latex; an existing
file is refused unless --force; `crsbench sql --format` renders the same formats."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from support.runs_factory import PROFILES, encoder_runs, frame

from crsbench.cli import main
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

# e5 lacks a fundus cell: partial coverage, its place among the panel is in crs_rank_partial
QUERY = (
    "select encoder_id, crs, auroc, coalesce(crs_rank, crs_rank_partial) as crs_rank from crs_encoder "
    "where panel = 'p' order by encoder_id"
)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "w.duckdb"
    with Warehouse.open(path) as wh:
        wh.append_runs(frame([r for e in PROFILES for r in encoder_runs(e)]))
        freeze_panel(wh, "p", ["e1", "e2", "e3", "e4"])
    return path


@pytest.fixture(scope="module")
def want(db):
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql(QUERY)


def test_every_format_round_trips(db, want, tmp_path):
    for fmt in ("csv", "parquet", "json", "markdown", "latex"):
        out = tmp_path / f"crs.{fmt}"
        assert main(["export", QUERY, "--format", fmt, "--out", str(out), "--db", str(db)]) == 0, fmt
        if fmt == "csv":
            got = pd.read_csv(out)
        elif fmt == "parquet":
            got = pq.read_table(out).to_pandas()
        elif fmt == "json":
            got = pd.DataFrame(json.loads(out.read_text()))
        elif fmt == "markdown":
            lines = out.read_text().splitlines()
            assert lines[0] == "| encoder_id | crs | auroc | crs_rank |" and lines[1] == "|---|---:|---:|---:|"
            got = pd.DataFrame(
                [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]], columns=want.columns
            ).astype({"crs": float, "auroc": float, "crs_rank": int})
        else:
            text = out.read_text()
            assert text.startswith("\\begin{tabular}{lrrr}") and "encoder\\_id & crs" in text
            rows = [r.rstrip(" \\").split(" & ") for r in text.splitlines()[4:-2]]
            got = pd.DataFrame(rows, columns=want.columns).astype({"crs": float, "auroc": float, "crs_rank": int})
        assert list(got.encoder_id) == list(want.encoder_id), fmt
        assert np.allclose(got.crs.astype(float), want.crs, rtol=1e-5), fmt
        assert list(got.crs_rank.astype(int)) == list(want.crs_rank), fmt


def test_a_view_by_name_and_stdout(db, want, capsys):
    assert main(["export", "crs_encoder", "--format", "csv", "--db", str(db)]) == 0
    got = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(got) == len(want) and {"encoder_id", "crs", "panel"} <= set(got.columns)
    assert main(["export", "crs_encodr", "--format", "csv", "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "crs_encodr" in err and "crs_encoder" in err


def test_an_existing_file_is_refused_unless_forced(db, tmp_path, capsys):
    out = tmp_path / "keep.csv"
    out.write_text("precious\n")
    assert main(["export", "crs_encoder", "--format", "csv", "--out", str(out), "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out) in err and "--force" in err
    assert out.read_text() == "precious\n"
    assert main(["export", "crs_encoder", "--format", "csv", "--out", str(out), "--force", "--db", str(db)]) == 0
    assert out.read_text().startswith("panel,") or "encoder_id" in out.read_text().splitlines()[0]


def test_export_is_sandboxed(db, tmp_path, capsys):
    target = tmp_path / "x.csv"
    query = f"select * from read_csv('{target}')"
    target.write_text("a\n1\n")
    assert main(["export", query, "--format", "csv", "--db", str(db)]) == 1
    assert "query failed" in capsys.readouterr().err


def test_sql_formats(db, want, capsys):
    assert main(["sql", "--format", "csv", "--db", str(db), QUERY]) == 0
    got = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(got.encoder_id) == list(want.encoder_id)
    assert main(["sql", "--format", "json", "--db", str(db), QUERY]) == 0
    assert [r["encoder_id"] for r in json.loads(capsys.readouterr().out)] == list(want.encoder_id)
    assert main(["sql", "--format", "markdown", "--db", str(db), QUERY]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "| encoder_id | crs | auroc | crs_rank |"
    assert main(["sql", "--db", str(db), QUERY]) == 0
    table = capsys.readouterr().out
    assert all(e in table for e in want.encoder_id) and "crs_rank" in table

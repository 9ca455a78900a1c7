"""`crsbench probe` end to end on a warehouse with synthetic datasets and feature sets."""

from __future__ import annotations

import json

import pytest
import torch

from crsbench.cli import main
from crsbench.output import console
from crsbench.probes.synthetic import make_dataset, write_features
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import declare_shift, load_dataset, read_dataset

torch.set_num_threads(1)


@pytest.fixture()
def warehouse(tmp_path):
    db = tmp_path / "bench.duckdb"
    with Warehouse.open(db) as wh:
        for ds in (make_dataset("derm", "multiclass", 120, 3, seed=1),
                   make_dataset("cxr", "multilabel", 120, 3, seed=2),
                   make_dataset("cxr2", "multilabel", 80, 3, seed=3)):
            load_dataset(wh, ds)
        declare_shift(wh, "cxr", "cxr2")
        stored = {n: read_dataset(wh, n) for n in ("derm", "cxr", "cxr2")}
    store = str(tmp_path / "bench.duckdb.features.zarr")  # the default store beside the DB
    for ds in stored.values():
        write_features(store, ds, "enc", 8, depths=(1.0,), chunk_rows=64)
    return db


def _probe(db, *extra):
    console.configure(json_mode=True)
    try:
        return main(["--json", "probe", "--db", str(db), "--probe", "logreg", "--depth", "1.0",
                     "--fraction", "1.0", "--seed", "0", "--seed", "1", *extra])
    finally:
        console.configure()


def test_probe_command_fits_sources_only_and_is_idempotent(warehouse, capsys):
    assert _probe(warehouse) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["fitted"] == 4 and first["runs"] == 2 * 17 + 2 * 18  # cxr2 is evaluation-only
    with Warehouse.open(warehouse, read_only=True) as wh:
        runs = wh.sql("select dataset_id, eval_dataset_id, condition, count(*) n from runs group by all")
    assert set(runs["dataset_id"]) == {"derm", "cxr"}
    assert runs.loc[runs.condition == "shift", "eval_dataset_id"].tolist() == ["cxr2"]
    assert (runs["n"] == 2).all()
    assert _probe(warehouse) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["fitted"] == 0 and again["skipped"] == 4


def test_probe_command_errors(warehouse, capsys):
    assert _probe(warehouse, "--probe", "svm") == 1
    assert "unknown probe 'svm'" in capsys.readouterr().err
    assert _probe(warehouse, "--encoder", "nope") == 1
    assert "encoder 'nope' has no feature set" in capsys.readouterr().err
    assert _probe(warehouse, "--dataset", "cxr", "--encoder", "nope") == 1
    assert "cxr/nope is missing" in capsys.readouterr().err
    with Warehouse.open(warehouse, read_only=True) as wh:
        assert wh.sql("select count(*) n from runs")["n"].item() == 0

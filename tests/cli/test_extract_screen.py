"""`crsbench extract --screen` end to end on the generated suite: the set is catalogued screened,
`feature-sets` tells it from a complete one, `probe` leaves it out, a plain extract completes it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from crsbench.bench import Bench, ExtractConfig, ExtractOptions
from crsbench.cli import main
from crsbench.core import CrsbenchError
from crsbench.features import FeatureSetRef, FeatureStore
from crsbench.warehouse import catalog
from crsbench.warehouse.connection import Warehouse

torch.set_num_threads(1)
SIZES = ["--chunk-rows", "64", "--batch-size", "32"]


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    capsys.readouterr()
    rc = main(["--json", *args])
    out = capsys.readouterr().out
    return rc, json.loads(out) if rc == 0 else None


@pytest.fixture()
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    rc, out = _json(["make-suite", str(tmp_path / "s"), "--scale", "0.2", "--image-size", "32"], capsys)
    assert rc == 0
    db = tmp_path / "w.duckdb"
    assert main(["ingest", "aptos2019", out["datasets"]["aptos2019"], "--name", "aptos", "--db", str(db)]) == 0
    return db


def test_extract_screen_end_to_end(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--db", str(db), "-d", "aptos", *SIZES]
    rc, out = _json(["extract", "--screen", "-e", "tiny-resnet18", *base], capsys)
    assert rc == 0 and [r["status"] for r in out["feature_sets"]] == ["screened"]
    rc, out = _json(["extract", "--screen", "-e", "tiny-resnet18", *base], capsys)
    assert rc == 0 and [r["status"] for r in out["feature_sets"]] == ["skipped (screened)"]
    assert _json(["extract", "-e", "tiny-convnext", *base], capsys)[0] == 0
    rc, out = _json(["feature-sets", "--db", str(db)], capsys)
    rows = {r["encoder_id"]: (r["complete"], r["screened"]) for r in out["feature_sets"]}
    assert rows == {"tiny-resnet18": (False, True), "tiny-convnext": (True, True)}
    with Warehouse.open(db, read_only=True) as wh:
        sets = catalog.screened_sets(wh, "aptos")
        assert catalog.screened_sets(wh, "isic").empty
    assert sets["encoder_id"].tolist() == ["tiny-convnext", "tiny-resnet18"]
    assert sets["depths"].tolist() == [["d025", "d050", "d075", "d100"]] * 2
    store = FeatureStore(sets["store_url"][1])
    clean = store.array(FeatureSetRef("aptos", "tiny-resnet18"), 1.0, "clean")[:]
    assert np.isfinite(clean).all()  # every row, train and test alike
    hint = catalog.screen_hint("tiny-vit", "aptos")
    assert "crsbench extract --screen --encoder tiny-vit --dataset aptos" in hint
    probe = ["probe", "--db", str(db), "--probe", "logreg", "--depth", "1.0", "--fraction", "1.0", "--seed", "0"]
    assert _json(probe, capsys)[0] == 0
    with Warehouse.open(db, read_only=True) as wh:
        fitted = wh.sql("select distinct encoder_id from runs")["encoder_id"].tolist()
    assert fitted == ["tiny-convnext"]  # the screened set never enters the grid
    rc, out = _json(["screen", "--db", str(db), "--replicates", "0"], capsys)
    assert rc == 0  # the pre-screen reads the screened set's clean features beside the complete one's
    assert {r["encoder_id"] for r in out["ranking"] if r["scope"] == "aptos"} == {"tiny-convnext", "tiny-resnet18"}
    assert out["verdicts"] == []  # one encoder with a grid: nothing to compare a ranking with
    rc, out = _json(["extract", "-e", "tiny-resnet18", *base], capsys)
    assert rc == 0 and [r["status"] for r in out["feature_sets"]] == ["extracted"]
    rc, out = _json(["feature-sets", "--db", str(db)], capsys)
    assert all(r["complete"] and r["screened"] for r in out["feature_sets"])


def test_bench_screens_and_refuses_a_cluster(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = Bench(db)
    config = ExtractConfig(ExtractOptions(chunk_rows=64, batch_size=32))
    frame = bench.extract(["tiny-resnet18"], ["aptos"], config, screen=True)
    assert frame["status"].tolist() == ["screened"]
    assert FeatureStore(bench.store).is_screened(FeatureSetRef("aptos", "tiny-resnet18"))
    with pytest.raises(CrsbenchError, match="--screen runs on this machine only"):
        bench.extract(
            ["tiny-resnet18"], ["aptos"], dataclasses.replace(config, scheduler="tcp://127.0.0.1:1"), screen=True
        )
    args = ["extract", "--screen", "--scheduler", "tcp://127.0.0.1:1", "-e", "tiny-resnet18", "--db", str(db)]
    assert main([*args, "-d", "aptos"]) == 1
    err = capsys.readouterr().err.strip()
    assert "--screen runs on this machine only" in err and len(err.splitlines()) == 1

"""The cost axis as read (crsbench.reads.cost): leaderboard --cost columns, "not measured" for a
set extracted before cost was measured, and the Pareto front against a brute-force computation."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from support.runs_factory import encoder_runs, frame

import crsbench
from crsbench.cli import main
from crsbench.core import NOT_MEASURED
from crsbench.features.store import FeatureSetRef
from crsbench.reads.cost import cost_text, pareto_front
from crsbench.warehouse import catalog
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

MEMBERS = ["e1", "e2", "e3", "e4"]
DATASETS = ("isic2019", "aptos2019")


def _attrs(encoder_id: str, flops: int | None) -> dict:
    attrs = {"image_digest": "d", "dim": 8, "n_images": 10, "complete": True, "encoder_id": encoder_id}
    if flops is not None:  # e4's sets were extracted before cost was measured
        attrs["cost"] = {
            "params": flops // 10,
            "flops_per_image": flops,
            "images_per_s": 1e12 / flops,
            "peak_memory_bytes": None,
            "peak_memory_note": "not measured on cpu",
            "stored_bytes_per_image": 64.0,
            "widths": {"d100": 8},
            "device": "cpu",
            "dtype": "float32",
        }
    return attrs


FLOPS = {"e1": 4_000_000_000, "e2": 12_000_000_000, "e3": 25_000_000, "e4": None}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("cost") / "w.duckdb"
    with Warehouse.open(path) as wh:
        wh.append_runs(frame([r for e in MEMBERS for r in encoder_runs(e, datasets=DATASETS)]))
        freeze_panel(wh, "p", MEMBERS)
        for e in MEMBERS:
            for ds in DATASETS:
                catalog.record_attrs(wh, "store.zarr", FeatureSetRef(ds, e), _attrs(e, FLOPS[e]))
    return path


def test_leaderboard_cost_columns(db):
    board = crsbench.Bench(db).leaderboard("p", cost=True).board.set_index("encoder_id")
    for e in ("e1", "e2", "e3"):
        assert board.loc[e, "gflops_per_image"] == pytest.approx(FLOPS[e] / 1e9)
        assert board.loc[e, "params"] == FLOPS[e] // 10
        assert board.loc[e, "images_per_s"] == pytest.approx(1e12 / FLOPS[e])
        assert (board.loc[e, "cost_device"], board.loc[e, "cost_dtype"]) == ("cpu", "float32")
    # not measured: missing, never zero
    assert board.loc["e4", ["gflops_per_image", "params", "images_per_s"]].isna().all()
    assert "gflops_per_image" not in crsbench.Bench(db).leaderboard("p").board.columns


def test_cli_cost_table_reads_not_measured(db, capsys):
    assert main(["--json", "leaderboard", "--panel", "p", "--cost", "--db", str(db)]) == 0
    rows = {r["encoder_id"]: r for r in json.loads(capsys.readouterr().out)["leaderboard"]}
    assert rows["e3"]["gflops_per_image"] == pytest.approx(0.025) and rows["e4"]["gflops_per_image"] is None
    assert main(["leaderboard", "--panel", "p", "--cost", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "GFLOPs/img" in out and "0.025" in out  # e3: 25 MFLOPs
    assert NOT_MEASURED.split()[0] in out and "e4" in out  # e4's cost is the only one not measured


def test_the_best_crs_under_a_flop_budget(db):
    # the analyst guide's question, against the board
    with Warehouse.open(db, read_only=True) as wh:
        best = wh.sql(
            "select encoder_id from crs_cost where panel = 'p' and gflops_per_image < 10 order by crs desc limit 1"
        )
        crs = wh.sql("select encoder_id, crs from crs_encoder where panel = 'p'").set_index("encoder_id")["crs"]
    under = [e for e, f in FLOPS.items() if f is not None and f < 10e9]
    assert best.encoder_id[0] == max(under, key=lambda e: crs[e])


def test_cost_text():
    assert cost_text(None) == cost_text(float("nan")) == cost_text(pd.NA) == NOT_MEASURED
    assert cost_text(2_500_000, 1e6) == "2.5"
    assert cost_text(0.0) == "0"  # a measured zero stays zero; only a missing value reads not measured


def test_pareto_front_against_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 9))
        cost = rng.integers(0, 4, n).astype(float)  # small integers: ties happen
        score = rng.integers(0, 4, n).astype(float)
        if n > 2:
            cost[0] = np.nan
        front = pareto_front(cost, score)
        for i in range(n):
            others = [j for j in range(n) if j != i and not np.isnan(cost[j]) and not np.isnan(cost[i])]
            beaten = any(
                (cost[j], -score[j]) != (cost[i], -score[i]) and cost[j] <= cost[i] and score[j] >= score[i]
                for j in others
            )
            assert front[i] == (not np.isnan(cost[i]) and not beaten), (cost, score, i)
    # a worked case: (1, 0.5) and (3, 0.9) are on the front; (2, 0.4) is beaten by (1, 0.5)
    assert pareto_front([1, 3, 2], [0.5, 0.9, 0.4]) == [True, True, False]
    assert list(itertools.compress("abc", pareto_front([1, 1, 2], [0.5, 0.5, 0.6]))) == ["a", "b", "c"]

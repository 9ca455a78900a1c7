"""Every query of docs/ANALYST_GUIDE.md (scripts/analyst_guide.py) runs on a small warehouse and
answers what pandas computes from the same run records."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.runs_factory import DATASETS, encoder_runs, frame, run_row

import crsbench
from crsbench.analyses.registry import run_analysis
from crsbench.warehouse.panels import freeze_panel

ROOT = Path(__file__).resolve().parent.parent
ENCODERS = ("e1", "e2", "e3", "e4")


def _guide():
    spec = importlib.util.spec_from_file_location("analyst_guide", ROOT / "scripts" / "analyst_guide.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module


def _half_depth_runs(rng: np.random.Generator) -> list[dict]:
    # Clean and blurred evaluations of features taken at 50 % depth (the factory has none).
    rows = []
    for encoder, dataset, seed in itertools.product(ENCODERS, DATASETS, range(3)):
        clean = float(rng.uniform(0.7, 0.9))
        rows.append(run_row(encoder, dataset, dataset, "clean", 1.0, seed, clean, 0.1, depth=0.5))
        for severity in (1, 2, 3):
            drop = float(rng.uniform(0.0, 0.05 * severity))
            rows.append(
                run_row(
                    encoder, dataset, dataset, f"gaussian_blur-s{severity}", 1.0, seed, clean - drop, 0.1, depth=0.5
                )
            )
    return rows


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    path = tmp_path_factory.mktemp("guide") / "w.duckdb"
    runs = frame([r for e in ENCODERS for r in encoder_runs(e)] + _half_depth_runs(np.random.default_rng(7)))
    with crsbench.Warehouse.open(path) as wh:
        wh.append_runs(runs)
        freeze_panel(wh, "p", list(ENCODERS))
        run_analysis(wh, "bootstrap", {"panel": "p", "replicates": 100, "resample": "seeds", "keep_replicates": False})
    return path, runs


def test_every_question_runs_and_answers(warehouse):
    guide = _guide()
    path, _ = warehouse
    assert len(guide.QUESTIONS) == 10
    with crsbench.Warehouse.open(path, read_only=True) as wh:
        for question in guide.QUESTIONS:
            assert not guide.answer(wh, question).empty, question.title
    text = guide.render(path)
    assert text.count("```sql") == 10 and "(no rows)" not in text
    with crsbench.Warehouse.open(path, read_only=True) as wh:  # stored analyses are in the dictionary
        comment = wh.con.execute(
            "select comment from duckdb_tables() where table_name = 'analysis_bootstrap_summary'"
        ).fetchone()[0]
    assert comment.startswith("Output 'summary' of analysis bootstrap (crsbench analyze bootstrap)")


def test_blur_at_half_depth_matches_pandas(warehouse):
    guide = _guide()
    path, runs = warehouse
    half = runs[(runs.probe == "logreg") & (runs.depth == 0.5) & (runs.label_fraction == 1.0)]
    means = half.groupby(["encoder_id", "dataset_id", "condition"]).auroc.mean().unstack("condition")
    drops = pd.DataFrame({c: means["clean"] - means[c] for c in means if c.startswith("gaussian_blur")})
    want = drops.stack().groupby("encoder_id").agg(["mean", "max"]).sort_values("mean")
    with crsbench.Warehouse.open(path, read_only=True) as wh:
        got = guide.answer(wh, guide.QUESTIONS[1]).set_index("encoder_id")
    assert list(got.index) == list(want.index)
    np.testing.assert_allclose(got.mean_auroc_drop, want["mean"], atol=1e-4)
    np.testing.assert_allclose(got.worst_auroc_drop, want["max"], atol=1e-4)


def test_disagreements_are_the_reversed_pairs(warehouse):
    guide = _guide()
    path, _ = warehouse
    with crsbench.Warehouse.open(path, read_only=True) as wh:
        got = guide.answer(wh, guide.QUESTIONS[2]).set_index("encoder_id")
        board = wh.sql("select encoder_id, crs, auroc from crs_encoder where panel = 'p' and in_panel")
    scores = board.set_index("encoder_id")
    for a in scores.index:
        want = sorted(
            b for b in scores.index if (scores.crs[a] - scores.crs[b]) * (scores.auroc[a] - scores.auroc[b]) < 0
        )
        assert list(got.reversed_with[a]) == want, a
        auroc_rank = 1 + (scores.auroc > scores.auroc[a]).sum()
        crs_rank = 1 + (scores.crs > scores.crs[a]).sum()
        assert got.places_gained[a] == auroc_rank - crs_rank
    assert any(len(v) for v in got.reversed_with)  # the factory's encoders do swap places

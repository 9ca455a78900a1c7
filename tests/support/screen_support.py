"""A warehouse holding analysis `screen`'s stored tables written by hand (random scores and grid
replicates) beside a complete grid of runs and a frozen panel: views screen_ranking and screen_trust,
the leaderboard and the report read it (tests/sql/test_screen_trust.py, tests/cli/test_screen.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
from support.runs_factory import DATASETS, encoder_runs, frame

import crsbench
from crsbench.warehouse.panels import freeze_panel

ENCODERS = ("e1", "e2", "e3", "e4", "e5", "e6")
ESTIMATORS = ("est_a", "est_b")
DEPTHS = (0.5, 1.0)
REPLICATES = 40
KEEP = 2


def _scores(rng: np.random.Generator) -> pd.DataFrame:
    rows = [
        {"dataset_id": d, "encoder_id": e, "depth": depth, "estimator": est, "score": float(rng.normal())}
        for d, e, depth, est in itertools.product(DATASETS, ENCODERS, DEPTHS, ESTIMATORS)
    ]
    scores = pd.DataFrame(rows)
    scores.loc[scores.index[5], "score"] = scores.loc[scores.index[1], "score"]  # e1 and e2 tie (d0, 0.5, est_b)
    scores["rank"] = scores.groupby(["dataset_id", "depth", "estimator"])["score"].rank("min", ascending=False)
    scores["ranked_by"] = scores["estimator"] == "est_a"
    return scores.assign(keep=KEEP, n_train=100, pretrained=False)


def _replicates(rng: np.random.Generator) -> pd.DataFrame:
    rows = [
        {"dataset_id": d, "encoder_id": e, "depth": depth, "replicate": r, "auroc": float(rng.uniform(0.5, 1.0))}
        for d, e, depth, r in itertools.product(DATASETS, ENCODERS, DEPTHS, range(REPLICATES + 1))
    ]
    return pd.DataFrame(rows)


def screened_warehouse(path: Path) -> tuple[Path, pd.DataFrame, pd.DataFrame]:
    """The warehouse at `path` with runs, panel p (e1..e4) and the screen tables; returns them too."""
    rng = np.random.default_rng(11)
    scores, reps = _scores(rng), _replicates(rng)
    with crsbench.Warehouse.open(path) as wh:
        wh.append_runs(frame([r for e in ENCODERS for r in encoder_runs(e)]))
        freeze_panel(wh, "p", list(ENCODERS[:4]))
        wh.con.register("s", scores)
        wh.con.register("r", reps)
        wh.con.execute("insert into analysis_screen_screen_scores by name select * from s")
        wh.con.execute("insert into analysis_screen_screen_replicates by name select * from r")
    return path, scores, reps

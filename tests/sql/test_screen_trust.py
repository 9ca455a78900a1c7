"""Views screen_ranking and screen_trust (METHODS.md §21.1, §21.5) against scipy and brute force:
the analysis's stored tables are written here by hand, beside a complete grid of runs and a frozen
panel, so every number the views derive is recomputed from its definition."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from support.runs_factory import DATASETS
from support.screen_support import DEPTHS, ENCODERS, ESTIMATORS, KEEP, REPLICATES, screened_warehouse

import crsbench


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    return screened_warehouse(tmp_path_factory.mktemp("screen") / "w.duckdb")


def _grid_positions(values: np.ndarray, encoders: np.ndarray) -> np.ndarray:
    """0-based position of each encoder in the grid's ranking: value descending, ties by encoder id."""
    order = sorted(range(len(values)), key=lambda i: (-values[i], encoders[i]))
    pos = np.empty(len(values), dtype=np.int64)
    pos[order] = np.arange(len(values))
    return pos


def _expected(x: np.ndarray, y: np.ndarray, encoders: np.ndarray) -> dict[str, float]:
    """tau, weighted tau, top-k recall and regret from their definitions (scipy for the taus)."""
    pos = _grid_positions(y, encoders)
    est_order = sorted(range(len(x)), key=lambda i: (-x[i], encoders[i]))[:KEEP]
    grid_top = set(np.flatnonzero(pos < KEEP))
    return {
        "tau": stats.kendalltau(x, y).statistic,
        "weighted_tau": stats.weightedtau(x, y, rank=pos).statistic,
        "top_k_recall": len(grid_top & set(est_order)) / min(KEEP, len(x)),
        "regret": y.max() - y[est_order].max(),
    }


def test_trust_against_the_auroc_equals_scipy_and_brute_force(warehouse):
    path, scores, reps = warehouse
    with crsbench.Warehouse.open(path, read_only=True) as wh:
        trust = wh.sql("select * from screen_trust where target = 'auroc'")
    assert len(trust) == len(DATASETS) * len(ESTIMATORS) * len(DEPTHS)
    for row in trust.itertuples(index=False):
        s = scores[
            (scores.dataset_id == row.dataset_id) & (scores.estimator == row.estimator) & (scores.depth == row.depth)
        ]
        s = s.sort_values("encoder_id")
        cell = reps[(reps.dataset_id == row.dataset_id) & (reps.depth == row.depth)]
        point = cell[cell.replicate == 0].sort_values("encoder_id")
        want = _expected(s.score.to_numpy(), point.auroc.to_numpy(), s.encoder_id.to_numpy())
        for key, value in want.items():
            assert getattr(row, key) == pytest.approx(value, abs=1e-12), key
        taus = [
            stats.kendalltau(s.score.to_numpy(), g.sort_values("encoder_id").auroc.to_numpy()).statistic
            for _, g in cell[cell.replicate > 0].groupby("replicate")
        ]
        assert row.tau_lo == pytest.approx(np.percentile(taus, 2.5), abs=1e-12)
        assert row.tau_hi == pytest.approx(np.percentile(taus, 97.5), abs=1e-12)
        assert row.n_replicates == REPLICATES and row.n_encoders == len(ENCODERS)


def test_trust_against_each_dataset_crs_reads_the_panel_cells(warehouse):
    path, scores, _ = warehouse
    with crsbench.Warehouse.open(path, read_only=True) as wh:
        trust = wh.sql("select * from screen_trust where target = 'crs'")
        cells = wh.sql("select dataset_id, encoder_id, crs from crs_cell where panel = 'p' and crs is not null")
    assert set(trust.depth) == {1.0} and set(trust.panel) == {"p"}
    for row in trust.itertuples(index=False):
        c = cells[cells.dataset_id == row.dataset_id].sort_values("encoder_id")
        s = scores[(scores.dataset_id == row.dataset_id) & (scores.estimator == row.estimator) & (scores.depth == 1.0)]
        s = s.set_index("encoder_id").loc[c.encoder_id]
        want = _expected(s.score.to_numpy(), c.crs.to_numpy(), c.encoder_id.to_numpy())
        assert row.n_encoders == len(c) and np.isnan(row.tau_lo) and row.n_replicates == 0
        for key, value in want.items():
            assert getattr(row, key) == pytest.approx(value, abs=1e-12), key


def test_ranking_takes_each_encoder_at_its_best_depth_and_ranks_the_mean(warehouse):
    path, scores, _ = warehouse
    with crsbench.Warehouse.open(path, read_only=True) as wh:
        ranking = wh.sql("select * from screen_ranking")
    own = scores[scores.ranked_by]
    best = own.sort_values(["score", "depth"], ascending=False).drop_duplicates(["dataset_id", "encoder_id"])
    per_rank = {}
    for row in ranking[ranking.scope != "all"].itertuples(index=False):
        b = best[(best.dataset_id == row.scope) & (best.encoder_id == row.encoder_id)].iloc[0]
        others = best[best.dataset_id == row.scope]
        assert row.best_depth == b.depth and row.score == b.score
        assert row.screen_rank == 1 + int((others.score > b.score).sum())
        assert row.kept == (row.screen_rank <= KEEP)
        per_rank.setdefault(row.encoder_id, []).append(row.screen_rank)
    overall = ranking[ranking.scope == "all"].set_index("encoder_id")
    means = {e: np.mean(r) for e, r in per_rank.items()}
    for encoder, mean in means.items():
        assert overall.loc[encoder, "mean_rank"] == pytest.approx(mean)
        assert overall.loc[encoder, "screen_rank"] == 1 + sum(m < mean for m in means.values())
        assert overall.loc[encoder, "n_datasets"] == len(DATASETS)


def test_crs_intervals_come_from_the_panels_bootstrap_replicates(tmp_path):
    path, scores, _ = screened_warehouse(tmp_path / "w.duckdb")
    full, partial = DATASETS[0], DATASETS[1]
    with crsbench.Warehouse.open(path) as wh:
        cells = wh.sql("select dataset_id, encoder_id from crs_cell where panel = 'p' and crs is not null")
    assert set(cells[cells.dataset_id == full].encoder_id) == set(ENCODERS)  # the point compares all six
    outside = sorted(cells[cells.dataset_id == partial].encoder_id)[0]  # compared, but not bootstrapped
    rng = np.random.default_rng(5)
    rows = [
        {"panel": "p", "dataset_id": d, "replicate": r, "encoder_id": e, "crs": float(rng.uniform())}
        for d in (full, partial)
        for r in range(1, REPLICATES + 1)
        for e in ENCODERS
        if not (d == partial and e == outside)
    ]
    replicates = pd.DataFrame(rows)
    with crsbench.Warehouse.open(path) as wh:
        wh.con.register("reps", replicates)
        wh.con.execute("insert into analysis_bootstrap_dataset_crs_replicates by name select * from reps")
        trust = wh.sql("select * from screen_trust where target = 'crs'")
    for row in trust[trust.dataset_id == full].itertuples(index=False):
        s = scores[(scores.dataset_id == full) & (scores.estimator == row.estimator) & (scores.depth == 1.0)]
        s = s.sort_values("encoder_id")
        taus, weighted = [], []
        for _, g in replicates[replicates.dataset_id == full].groupby("replicate"):
            y = g.sort_values("encoder_id").crs.to_numpy()
            taus.append(stats.kendalltau(s.score.to_numpy(), y).statistic)
            weighted.append(
                stats.weightedtau(s.score.to_numpy(), y, rank=_grid_positions(y, s.encoder_id.to_numpy())).statistic
            )
        assert row.n_replicates == REPLICATES
        assert row.tau_lo == pytest.approx(np.percentile(taus, 2.5), abs=1e-12)
        assert row.tau_hi == pytest.approx(np.percentile(taus, 97.5), abs=1e-12)
        assert row.weighted_tau_lo == pytest.approx(np.percentile(weighted, 2.5), abs=1e-12)
        assert row.weighted_tau_hi == pytest.approx(np.percentile(weighted, 97.5), abs=1e-12)
    uncovered = trust[trust.dataset_id == partial]
    assert len(uncovered) and (uncovered.n_replicates == 0).all() and uncovered.tau_lo.isna().all()

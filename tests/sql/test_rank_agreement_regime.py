"""rank_agreement_regime: frozen vs adapted rankings (METHODS.md §13) against scipy on crs_encoder's scores."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau, rankdata
from support.runs_factory import encoder_runs, frame

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

BASE = ["e1", "e2", "e3", "e4", "e5"]
# adaptation reshuffles the qualities: the frozen order e3 > e5 > e2 > e4 > e1 does not survive
ADAPTED = {
    "lora-s0": {"e1": 0.92, "e2": 0.70, "e3": 0.80, "e4": 0.88},
    "lora-s1": {"e1": 0.90, "e2": 0.72, "e3": 0.85, "e4": 0.86},
}


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    db = tmp_path_factory.mktemp("regime") / "w.duckdb"
    with Warehouse.open(db) as wh:
        for e in BASE:
            wh.append_runs(frame(encoder_runs(e)))
        freeze_panel(wh, "p", BASE)
        for regime, qualities in ADAPTED.items():
            for e, q in qualities.items():
                wh.append_runs(frame(encoder_runs(e, quality=q, regime=regime)))
    with Warehouse.open(db, read_only=True) as wh:
        return (
            wh.sql("select * from crs_encoder where panel = 'p'"),
            wh.sql("select * from rank_agreement_regime where panel = 'p'"),
        )


def _expected(frozen: np.ndarray, adapted: np.ndarray) -> dict[str, float]:
    shift = np.abs(rankdata(-frozen) - rankdata(-adapted))
    top = lambda v: set(np.argsort(-v, kind="stable")[:3])  # noqa: E731  (no ties here)
    return {
        "n": len(frozen),
        "kendall_tau": kendalltau(frozen, adapted).statistic,
        "mean_abs_displacement": float(shift.mean()),
        "top3_overlap": len(top(frozen) & top(adapted)) / 3,
    }


@pytest.mark.parametrize("regime", ["lora-s0", "lora-s1", "lora"])
@pytest.mark.parametrize("metric", ["crs", "auroc"])
def test_frozen_vs_adapted_ranking_matches_scipy(views, regime, metric):
    enc, agree = views
    frozen = enc[enc.regime == "frozen"].set_index("encoder_id")[metric]
    if regime == "lora":  # the seed mean of the adapted scores
        adapted = enc[enc.regime.str.startswith("lora-s")].groupby("encoder_id")[metric].mean()
    else:
        adapted = enc[enc.regime == regime].set_index("encoder_id")[metric]
    ids = sorted(adapted.index)  # only encoders with an adapted variant are ranked
    want = _expected(frozen.loc[ids].to_numpy(float), adapted.loc[ids].to_numpy(float))
    row = agree[(agree.regime == regime) & (agree.metric == metric)]
    assert len(row) == 1
    for key, value in want.items():
        assert row.iloc[0][key] == pytest.approx(value, abs=1e-9), key


def test_adaptation_changes_the_ranking_in_this_scenario(views):
    _, agree = views
    assert set(agree.regime) == {"lora-s0", "lora-s1", "lora"}
    assert (agree.n == 4).all() and (agree.kendall_tau < 1).all()

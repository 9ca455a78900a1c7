"""E3 depth sweep on a hand-built warehouse with known best layers."""

from __future__ import annotations

import pytest
from support.analyses_support import append, run_row

from crsbench.analyses import run_analysis
from crsbench.warehouse.connection import Warehouse

# (encoder, dataset) -> depth -> (AUROC seed 0, AUROC seed 1, ECE)
SWEEPS = {
    ("mid", "d1"): {
        0.25: (0.70, 0.70, 0.20),
        0.5: (0.79, 0.81, 0.05),
        0.75: (0.76, 0.74, 0.10),
        1.0: (0.72, 0.72, 0.12),
    },
    ("final", "d1"): {
        0.25: (0.60, 0.60, 0.10),
        0.5: (0.65, 0.65, 0.10),
        0.75: (0.70, 0.70, 0.10),
        1.0: (0.80, 0.80, 0.15),
    },
    # 75 % ties the final block: the final block keeps the win.
    ("tie", "d1"): {0.25: (0.5, 0.5, 0.3), 0.5: (0.6, 0.6, 0.3), 0.75: (0.75, 0.75, 0.02), 1.0: (0.75, 0.75, 0.3)},
}


def _warehouse(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    rows = [
        run_row(enc, ds, depth=depth, seed=seed, auroc=values[seed], ece=values[2])
        for (enc, ds), sweep in SWEEPS.items()
        for depth, values in sweep.items()
        for seed in (0, 1)
    ]
    # Runs that must be ignored: another probe, a label fraction, a perturbed condition.
    rows += [
        run_row("final", "d1", depth=0.25, probe="mlp", auroc=0.99, ece=0.0),
        run_row("final", "d1", depth=0.25, fraction=0.1, auroc=0.99, ece=0.0),
        run_row("final", "d1", depth=0.25, condition="jpeg-s1", auroc=0.99, ece=0.0),
    ]
    append(wh, rows)
    return wh


def test_depth_sweep_finds_the_known_best_layer(tmp_path):
    wh = _warehouse(tmp_path)
    result = run_analysis(wh, "e3")
    sweeps = result.tables["sweeps"].set_index("encoder_id")
    assert sweeps.loc["mid", "best_depth"] == 0.5
    assert sweeps.loc["mid", "best_auroc"] == pytest.approx(0.80)  # mean of 0.79 and 0.81
    assert sweeps.loc["mid", "auroc_gain"] == pytest.approx(0.80 - 0.72)
    assert sweeps.loc["mid", "best_ece_depth"] == 0.5
    assert sweeps.loc["final", "best_depth"] == 1.0 and not sweeps.loc["final", "intermediate_wins"]
    assert sweeps.loc["tie", "best_depth"] == 1.0 and not sweeps.loc["tie", "intermediate_wins"]
    assert sweeps.loc["tie", "best_ece_depth"] == 0.75
    assert sweeps["intermediate_wins"].tolist() == [False, True, False]  # final, mid, tie
    assert "1/3 sweeps" in result.notes[0]
    depths = result.tables["depths"]
    assert len(depths) == 12 and set(depths["n_seeds"]) == {2}
    stored = wh.sql("select * from analysis_e3_sweeps order by encoder_id")
    assert stored["best_depth"].tolist() == [1.0, 0.5, 1.0]
    wh.close()

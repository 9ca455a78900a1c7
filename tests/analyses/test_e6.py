"""E6 label scarcity: crossover fractions worked out by hand."""

from __future__ import annotations

import pandas as pd
import pytest
from support.analyses_support import add_encoder, append, run_row

from crsbench.analyses import run_analysis
from crsbench.analyses.experiments.e6_label_scarcity import default_reference
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse

# encoder -> fraction -> AUROC per seed (dyadic values so seed means are exact)
CURVES = {
    "vit_tiny": {
        0.01: (0.5, 0.5),
        0.05: (0.5625, 0.5625),
        0.1: (0.625, 0.625),
        0.25: (0.6875, 0.6875),
        1.0: (0.625, 0.875),
    },  # full-label mean 0.75: the reference bar
    # mean at 5 % is exactly 0.75 -> reaches the bar (>=) at 0.05
    "fast": {0.01: (0.5, 0.625), 0.05: (0.6875, 0.8125), 0.1: (0.875, 0.875), 0.25: (0.9, 0.9), 1.0: (0.95, 0.95)},
    # 1 % already above the bar
    "instant": {0.01: (0.8, 0.8), 0.05: (0.8, 0.8), 0.1: (0.8, 0.8), 0.25: (0.8, 0.8), 1.0: (0.8, 0.8)},
    # never reaches 0.75
    "slow": {0.01: (0.5, 0.5), 0.05: (0.55, 0.55), 0.1: (0.6, 0.6), 0.25: (0.7, 0.7), 1.0: (0.74, 0.74)},
    # non-monotone: dips after first reaching the bar at 10 %
    "bumpy": {0.01: (0.6, 0.6), 0.05: (0.7, 0.7), 0.1: (0.76, 0.76), 0.25: (0.7, 0.7), 1.0: (0.8, 0.8)},
}
EXPECTED_CROSSOVER = {"vit_tiny": 1.0, "fast": 0.05, "instant": 0.01, "slow": None, "bumpy": 0.1}


def _warehouse(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    for encoder_id in CURVES:
        add_encoder(wh, encoder_id)
    add_encoder(wh, "resnet18")
    rows = [
        run_row(enc, "d1", fraction=f, seed=s, auroc=values[s])
        for enc, curve in CURVES.items()
        for f, values in curve.items()
        for s in (0, 1)
    ]
    rows.append(run_row("resnet18", "d1", fraction=1.0, auroc=0.99, depth=0.5))  # not full depth: ignored
    append(wh, rows)
    return wh


def test_crossover_fraction_matches_hand_computation(tmp_path):
    wh = _warehouse(tmp_path)
    result = run_analysis(wh, "e6")  # default reference: the only probed id containing 'vit'
    table = result.tables["scarcity"].set_index("encoder_id")
    assert set(table["reference_id"]) == {"vit_tiny"}
    assert table["reference_auroc_full"].iloc[0] == pytest.approx(0.75)
    for encoder_id, expected in EXPECTED_CROSSOVER.items():
        got = table.loc[encoder_id, "crossover_fraction"]
        assert pd.isna(got) if expected is None else got == pytest.approx(expected), encoder_id
    assert table.loc["fast", "auroc_1pct"] == pytest.approx(0.5625)
    assert table.loc["fast", "auroc_10pct"] == pytest.approx(0.875)
    stored = wh.sql("select encoder_id, crossover_fraction from analysis_e6_scarcity where crossover_fraction is null")
    assert stored["encoder_id"].tolist() == ["slow"]  # NULL in SQL, not NaN
    wh.close()


def test_explicit_reference_and_unknown_reference(tmp_path):
    wh = _warehouse(tmp_path)
    table = run_analysis(wh, "e6", {"reference": "slow"}).tables["scarcity"].set_index("encoder_id")
    # bar = slow's full-label 0.74: vit_tiny first reaches it at 100 % (0.75), bumpy at 10 % (0.76)
    assert table.loc["vit_tiny", "crossover_fraction"] == pytest.approx(1.0)
    assert table.loc["bumpy", "crossover_fraction"] == pytest.approx(0.1)
    assert table.loc["fast", "crossover_fraction"] == pytest.approx(0.05)
    with pytest.raises(CrsbenchError, match="no primary-probe runs"):
        run_analysis(wh, "e6", {"reference": "resnet18"})
    wh.close()


def test_default_reference_prefers_the_vit_b16_entry():
    encoders = pd.DataFrame(
        {"encoder_id": ["a_vit_tiny", "vit-b16", "clip"], "family": ["ViT-Tiny", "ViT-B/16", "CLIP"]}
    )
    assert default_reference(encoders, {"a_vit_tiny", "vit-b16", "clip"}) == "vit-b16"
    assert default_reference(encoders, {"a_vit_tiny", "clip"}) == "a_vit_tiny"
    assert default_reference(encoders, {"clip"}) is None

"""E1 specialisation and shift retention: numbers worked out by hand on a tiny panel."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from support.analyses_support import add_dataset, add_encoder, append, complete_cell

from crsbench.analyses import run_analysis
from crsbench.analyses.experiments.e1_specialisation import specialisation
from crsbench.core import CrsbenchError
from crsbench.warehouse import panels
from crsbench.warehouse.connection import Warehouse

ENCODERS = {  # id: (scope, domain)
    "panderm": ("specialty", "derm"),
    "retfound": ("specialty", "eye"),
    "raddino": ("specialty", "rad"),
    "vit": ("general", "none"),
    "resnet": ("general", "none"),
    "medsig": ("broad_medical", "none"),
    "biomed": ("broad_medical", "none"),
}
AUROC = {  # full-label clean AUROC on isic (derm), aptos (eye), chex (rad)
    "panderm": (0.95, 0.80, 0.70),
    "retfound": (0.75, 0.90, 0.72),
    "raddino": (0.70, 0.78, 0.85),
    "vit": (0.80, 0.82, 0.76),
    "resnet": (0.78, 0.79, 0.74),
    "medsig": (0.88, 0.87, 0.82),
    "biomed": (0.84, 0.83, 0.80),
}
SHIFT = {
    "panderm": 0.60,
    "retfound": 0.62,
    "raddino": 0.80,
    "vit": 0.55,
    "resnet": 0.52,
    "medsig": 0.78,
    "biomed": 0.74,
}  # chex -> mimic target AUROC


def _warehouse(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    for encoder_id, (scope, domain) in ENCODERS.items():
        add_encoder(wh, encoder_id, scope, domain)
    for dataset_id, task, n, domain in [
        ("isic", "multiclass", 8, "derm"),
        ("aptos", "ordinal", 5, "eye"),
        ("chex", "multilabel", 14, "rad"),
        ("mimic", "multilabel", 14, "rad"),
    ]:
        add_dataset(wh, dataset_id, task, n, domain)
    wh.con.execute("insert into shift_pairs values ('chex', 'mimic', current_timestamp)")
    rows = []
    for k, (encoder_id, values) in enumerate(AUROC.items()):
        for dataset_id, auroc in zip(("isic", "aptos", "chex"), values, strict=True):
            shift = dict(shift_target="mimic", shift_auroc=SHIFT[encoder_id]) if dataset_id == "chex" else {}
            rows += complete_cell(encoder_id, dataset_id, auroc, k, **shift)
    append(wh, rows)
    return wh


def test_dspec_and_shift_retention_by_hand(tmp_path):
    wh = _warehouse(tmp_path)
    result = run_analysis(wh, "e1")
    spec = result.tables["specialisation"].set_index("encoder_id")
    assert sorted(spec.index) == ["panderm", "raddino", "retfound"]  # domain 'none' has no in/out
    assert spec.loc["panderm", "dspec"] == pytest.approx(0.95 - (0.80 + 0.70) / 2)
    assert spec.loc["retfound", "dspec"] == pytest.approx(0.90 - (0.75 + 0.72) / 2)
    assert spec.loc["raddino", "dspec"] == pytest.approx(0.85 - (0.70 + 0.78) / 2)
    assert spec.loc["raddino", "in_datasets"] == "chex" and spec.loc["raddino", "n_out"] == 2
    assert set(spec["panel"]) == {"cohort"}  # nothing frozen yet

    shift = result.tables["shift"].set_index("encoder_id")
    assert shift.loc["raddino", "target_auroc"] == pytest.approx(0.80)
    assert shift.loc["raddino", "relative_gap"] == pytest.approx((0.85 - 0.80) / 0.85)
    assert shift.loc["vit", "retention"] == pytest.approx(0.55 / 0.76)

    medical = [SHIFT[e] for e in ("panderm", "retfound", "raddino", "medsig", "biomed")]
    general = [SHIFT["vit"], SHIFT["resnet"]]
    # Welch's t by its formula, independent of the scipy call in the analysis.
    t_hand = (np.mean(general) - np.mean(medical)) / np.sqrt(np.var(general, ddof=1) / 2 + np.var(medical, ddof=1) / 5)
    welch = result.tables["welch"].set_index(["metric", "group_a", "group_b"])
    row = welch.loc[("target_auroc", "general", "medical")]
    assert row["t"] == pytest.approx(t_hand)
    assert row["p_value"] == pytest.approx(stats.ttest_ind(general, medical, equal_var=False).pvalue)
    assert (row["n_a"], row["n_b"]) == (2, 5)
    scope = result.tables["shift_scope"].set_index("scope")
    assert scope.loc["broad_medical", "target_auroc"] == pytest.approx((0.78 + 0.74) / 2)
    assert any("Welch p" in note for note in result.notes)
    wh.close()


def test_dood_uses_the_frozen_panel_crs(tmp_path):
    wh = _warehouse(tmp_path)
    panels.freeze_panel(wh, "p", list(ENCODERS))
    result = run_analysis(wh, "e1")  # the latest frozen panel by default
    spec = result.tables["specialisation"].set_index("encoder_id")
    crs = wh.sql("select encoder_id, dataset_id, crs from crs_cell where panel = 'p' and regime = 'frozen'")
    crs = crs.set_index(["encoder_id", "dataset_id"])["crs"]
    expected = crs[("panderm", "isic")] - (crs[("panderm", "aptos")] + crs[("panderm", "chex")]) / 2
    assert spec.loc["panderm", "dood"] == pytest.approx(expected)
    assert spec.loc["panderm", "panel"] == "p" and np.isfinite(spec["dood"]).all()
    with pytest.raises(CrsbenchError, match="no panel named"):
        run_analysis(wh, "e1", {"panel": "missing"})
    wh.close()


def test_specialisation_on_a_hand_table():
    cells = pd.DataFrame(
        {
            "encoder_id": ["s"] * 4 + ["g"] * 2,
            "dataset_id": ["a", "b", "c", "d", "a", "b"],
            "auroc": [0.9, 0.8, 0.6, 0.7, 0.8, 0.8],
            "crs": [0.7, 0.5, 0.2, np.nan, 0.4, 0.4],
        }
    )
    encoders = pd.DataFrame({"encoder_id": ["s", "g"], "scope": ["specialty", "general"], "domain": ["rad", "none"]})
    datasets = pd.DataFrame({"dataset_id": list("abcd"), "domain": ["rad", "rad", "eye", "derm"]})
    flagged, per_encoder = specialisation(cells, encoders, datasets)
    row = per_encoder.set_index("encoder_id").loc["s"]
    # in = a, b (both rad); out = c, d; CRS of d missing -> out CRS is c's alone
    assert row["auroc_in"] == pytest.approx(0.85) and row["auroc_out"] == pytest.approx(0.65)
    assert row["dspec"] == pytest.approx(0.20)
    assert row["dood"] == pytest.approx(0.6 - 0.2)
    assert list(per_encoder["encoder_id"]) == ["s"] and flagged["in_domain"].sum() == 2

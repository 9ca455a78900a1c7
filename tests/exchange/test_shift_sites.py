"""The shift pair as two sites: CheXpert at one hospital, the MIMIC-CXR stand-in at the other, the
same panel encoders at both, scored against a hub's frozen anchors. `analyze sites` reports Kendall's
tau with an interval; recomputed here with scipy from the views (docs/METHODS.md §22.4)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau
from support.exchange_support import build_sites

from crsbench.analyses.registry import run_analysis
from crsbench.bench import Bench
from crsbench.warehouse.connection import Warehouse

PANEL = "bp"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("shift")
    dbs = build_sites(root, {"chexpert-site": "chexpert", "mimic-site": "mimic-cxr", "hub": "chexpert,mimic-cxr"})
    for site in ("chexpert-site", "mimic-site"):
        Bench(dbs[site]).results_export(PANEL, site, root / f"{site}.zip", replicates=40, seed=7)
        Bench(dbs["hub"]).results_import(root / f"{site}.zip", allow_unsigned=True)
    return dbs["hub"]


def test_tau_and_its_interval_equal_scipys_over_the_views(hub):
    with Warehouse.open(hub, read_only=True) as wh:
        result = run_analysis(wh, "sites", {"panel": PANEL}, store=False)
        reps = wh.sql("select site, replicate, encoder_id, crs, auroc from site_replicate_scores order by all")
    pairs = result.tables["pairs"].set_index("measure")
    assert set(pairs["site_a"]) == {"chexpert-site"} and set(pairs["site_b"]) == {"mimic-site"}
    for measure in ("crs", "auroc"):
        wide = reps.pivot_table(index=["replicate", "encoder_id"], columns="site", values=measure)
        taus = [kendalltau(g["chexpert-site"], g["mimic-site"]).statistic for _, g in wide.groupby(level="replicate")]
        assert pairs.loc[measure, "tau"] == pytest.approx(taus[0], abs=1e-12)
        lo, hi = np.percentile([t for t in taus[1:] if np.isfinite(t)], [2.5, 97.5])
        assert pairs.loc[measure, "tau_lo"] == pytest.approx(lo, abs=1e-12)
        assert pairs.loc[measure, "tau_hi"] == pytest.approx(hi, abs=1e-12)
        assert pairs.loc[measure, "n_replicates"] == 40
        assert pairs.loc[measure, "tau_lo"] <= pairs.loc[measure, "tau"] <= pairs.loc[measure, "tau_hi"]


def test_each_site_is_scored_on_the_hubs_global_anchors(hub):
    with Warehouse.open(hub, read_only=True) as wh:
        scores = wh.sql(
            "select site, encoder_id, discrimination, calibration, label_efficiency, robustness, crs from site_scores"
        )
        anchors = wh.sql("select axis, lo, hi from reference_anchors where panel = ? and scope = 'global'", [PANEL])
        cells = wh.sql("select site, encoder_id, discrimination from site_cells")
    # one dataset per site: the site's aggregate is its one cell, normalised by the hub's anchors
    merged = scores.merge(cells, on=["site", "encoder_id"], suffixes=("", "_cell"))
    assert np.array_equal(merged["discrimination"], merged["discrimination_cell"])
    d = anchors.set_index("axis").loc["discrimination"]
    assert d.hi > d.lo and scores["crs"].notna().all()
    assert set(scores["site"]) == {"chexpert-site", "mimic-site"}

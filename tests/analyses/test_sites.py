"""analysis `sites` (docs/METHODS.md §22.4): its tau-b against scipy, its reversals by hand, and the
refusal with fewer than two sites."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from crsbench.analyses.registry import run_analysis
from crsbench.analyses.sites.sites import replicate_taus, reversals
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse


@pytest.mark.parametrize("seed", range(6))
def test_replicate_taus_equal_scipys_with_and_without_ties(tmp_path, seed):
    rng = np.random.default_rng(seed)
    encoders = [f"e{i}" for i in range(9)]
    rows = [
        {"site": site, "replicate": r, "encoder_id": e, "crs": float(rng.integers(0, 4 if seed % 2 else 100)),
         "auroc": float(rng.integers(0, 5))}
        for site in ("a", "b", "c") for r in range(3) for e in encoders
    ]  # fmt: skip
    table = pd.DataFrame(rows)
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        taus = replicate_taus(wh, table)
    assert len(taus) == 2 * 3 * 3  # measures x site pairs x replicates
    for t in taus.itertuples():
        pick = table[table["replicate"] == t.replicate].pivot(index="encoder_id", columns="site", values=t.measure)
        want = kendalltau(pick[t.site_a], pick[t.site_b]).statistic
        assert (np.isnan(want) and np.isnan(t.tau)) or t.tau == pytest.approx(want, abs=1e-12)
        assert t.n == 9


def test_tau_is_undefined_when_one_ranking_is_all_ties(tmp_path):
    table = pd.DataFrame(
        [{"site": s, "replicate": 0, "encoder_id": f"e{i}", "crs": 0.5 if s == "a" else float(i), "auroc": float(i)}
         for s in ("a", "b") for i in range(4)]
    )  # fmt: skip
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        taus = replicate_taus(wh, table).set_index("measure")
    assert np.isnan(taus.loc["crs", "tau"]) and taus.loc["auroc", "tau"] == 1.0


def test_reversals_are_the_pairs_ordered_both_ways():
    a = pd.Series({"e1": 0.9, "e2": 0.8, "e3": 0.7, "e4": 0.7})
    b = pd.Series({"e1": 0.5, "e2": 0.6, "e3": 0.4, "e4": 0.1})
    # e1 > e2 at a but e2 > e1 at b; e3 = e4 at a is a tie, never a reversal
    assert reversals(a, b) == ["e1 > e2"]


def test_fewer_than_two_sites_is_refused_with_the_command_to_run(tmp_path):
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.con.execute("insert into panels values ('p', 'fixed', now()::timestamp, 'x')")
        with pytest.raises(CrsbenchError, match=r"0 site\(s\) imported for panel 'p'; import at least two"):
            run_analysis(wh, "sites", {"panel": "p"}, store=False)

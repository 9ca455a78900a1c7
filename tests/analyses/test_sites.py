"""analysis `sites` (docs/METHODS.md §22.4): its tau-b against scipy, its reversals by hand, and the
refusal with fewer than two sites."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from crsbench.analyses.registry import run_analysis
from crsbench.analyses.sites.sites import kendall_tau_b, reversals
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse


@pytest.mark.parametrize("seed", range(6))
def test_tau_b_equals_scipys_with_and_without_ties(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0, 4 if seed % 2 else 100, 9).astype(float), rng.integers(0, 5, 9).astype(float)
    assert kendall_tau_b(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)


def test_tau_is_nan_when_one_ranking_is_all_ties():
    assert np.isnan(kendall_tau_b(np.ones(4), np.arange(4.0)))


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

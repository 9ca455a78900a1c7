"""fn_rank_agreement / rank_agreement against scipy and hand-worked rank statistics."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau, rankdata, spearmanr
from support.runs_factory import PROFILES, clone_encoder, encoder_runs, frame

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel
from crsbench.warehouse.schema import MIGRATIONS, SCHEMA_INFO
from crsbench.warehouse.shipped_sql import sql_files


@pytest.fixture(scope="module")
def macro_con():
    con = duckdb.connect()
    con.execute(SCHEMA_INFO.create_sql(1))
    for statement in [s for migration in MIGRATIONS for s in migration]:  # DuckDB binds macros to tables
        con.execute(statement)
    for name, text in sql_files():
        if name.startswith("macros/"):  # macros only, on an empty schema
            con.execute(text)
    return con


def _agreement(con, scores: pd.DataFrame) -> pd.DataFrame:
    con.register("scores_df", scores)
    con.execute("create or replace temp table scores as select * from scores_df")
    return con.execute("select * from fn_rank_agreement('scores') order by grp").df().set_index("grp")


def _expected(crs: np.ndarray, auroc: np.ndarray, ids: list[str]) -> dict:
    n = len(crs)
    r_crs, r_auroc = rankdata(-crs), rankdata(-auroc)  # average ranks, 1 = best
    order_crs = sorted(range(n), key=lambda i: (-crs[i], ids[i]))
    order_auroc = sorted(range(n), key=lambda i: (-auroc[i], ids[i]))
    discordant = sum(
        np.sign(crs[i] - crs[j]) * np.sign(auroc[i] - auroc[j]) < 0 for i in range(n) for j in range(i + 1, n)
    )
    return {
        "n": n,
        "kendall_tau": kendalltau(crs, auroc, variant="b").statistic,
        "spearman_rho": spearmanr(crs, auroc).statistic,
        "reversals": discordant,
        "pairs": n * (n - 1) // 2,
        "mean_abs_displacement": float(np.mean(np.abs(r_crs - r_auroc))),
        "top3_overlap": len(set(order_crs[:3]) & set(order_auroc[:3])) / min(3, n),
        "top5_overlap": len(set(order_crs[:5]) & set(order_auroc[:5])) / min(5, n),
    }


def test_untied_rankings_match_scipy_and_the_reversal_identity(macro_con):
    rng = np.random.default_rng(7)
    frames = []
    for grp, n in (("a", 15), ("b", 8), ("c", 4)):
        frames.append(
            pd.DataFrame(
                {
                    "grp": grp,
                    "encoder_id": [f"m{i:02d}" for i in range(n)],
                    "crs": rng.random(n),
                    "auroc": rng.random(n),
                }
            )
        )
    scores = pd.concat(frames, ignore_index=True)
    got = _agreement(macro_con, scores)
    for grp, g in scores.groupby("grp"):
        want = _expected(g.crs.to_numpy(), g.auroc.to_numpy(), list(g.encoder_id))
        row = got.loc[grp]
        for key, value in want.items():
            assert row[key] == pytest.approx(value, abs=1e-12), (grp, key)
        assert row.kendall_tau == pytest.approx(1 - 2 * row.reversals / row.pairs, abs=1e-12)


def test_tied_rankings_use_tau_b_and_average_ranks(macro_con):
    crs = np.array([0.9, 0.9, 0.5, 0.5, 0.5, 0.1, 0.3])
    auroc = np.array([0.8, 0.7, 0.7, 0.9, 0.6, 0.6, 0.6])
    ids = [f"e{i}" for i in range(len(crs))]
    got = _agreement(macro_con, pd.DataFrame({"grp": "t", "encoder_id": ids, "crs": crs, "auroc": auroc})).loc["t"]
    want = _expected(crs, auroc, ids)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key
    assert got.kendall_tau != pytest.approx(1 - 2 * got.reversals / got.pairs)  # ties break the identity


def test_rank_agreement_view_matches_scipy_on_crs_encoder(tmp_path):
    rows = [r for e in PROFILES for r in encoder_runs(e)]
    rows += clone_encoder(rows, "e2", "e6") + encoder_runs("x1", quality=0.95)
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        wh.append_runs(frame(rows))
        freeze_panel(wh, "p", ["e1", "e2", "e3", "e4", "e5", "e6"])
        enc = wh.sql("select * from crs_encoder where panel = 'p'")
        view = wh.sql("select * from rank_agreement where panel = 'p'").set_index("population")
    # 'all': every encoder scored against the panel with full coverage (e5 has no fundus cell)
    for population, sub in (("panel", enc[enc.in_panel]), ("all", enc[enc.coverage == "full"])):
        want = _expected(sub.crs.to_numpy(), sub.auroc.to_numpy(), list(sub.encoder_id))
        for key, value in want.items():
            assert view.loc[population, key] == pytest.approx(value, abs=1e-12), (population, key)
    assert view.loc["panel", "n"] == 6 and view.loc["all", "n"] == 6  # x1 in, partial e5 out

"""What `crsbench screen` stored, as the leaderboard (`--with-screen`) and the report show it
(METHODS.md §21): on a warehouse whose screen tables are written by hand (support.screen_support)."""

from __future__ import annotations

import pandas as pd
import pytest
from support.screen_support import ENCODERS, KEEP, screened_warehouse
from typer.testing import CliRunner

from crsbench import Bench
from crsbench.cli import app
from crsbench.reads.screen import trust_verdict


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    return screened_warehouse(tmp_path_factory.mktemp("screen-cli") / "w.duckdb")


def test_leaderboard_with_screen_puts_the_overall_screen_rank_beside_the_crs_rank(warehouse):
    path, *_ = warehouse
    board = Bench(path).leaderboard(panel="p", with_screen=True)
    ranks = Bench(path).sql("select encoder_id, screen_rank from screen_ranking where scope = 'all'")
    want = dict(zip(ranks.encoder_id, ranks.screen_rank, strict=True))
    assert board.board.screen_rank.tolist() == [want[e] for e in board.board.encoder_id]
    assert board.screen and f"among the {len(ENCODERS)} screened encoders" in board.screen[0]
    plain = Bench(path).leaderboard(panel="p")
    assert "screen_rank" not in plain.board.columns and plain.screen is None
    out = CliRunner().invoke(app, ["leaderboard", "--db", str(path), "--panel", "p", "--with-screen"])
    assert out.exit_code == 0, out.output
    assert "screen_rank" in out.output and "screen rank: the pre-screen's overall rank by est_a" in out.output


def test_the_report_answers_whether_the_pre_screen_can_be_trusted(warehouse, tmp_path):
    path, *_ = warehouse
    Bench(path).report(tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    section = html[html.index('id="screen"') :]
    section = section[: section.index("</section>")]
    assert 'data-missing="false"' in section[:200]
    assert "Can the pre-screen be trusted here?" in section and "est_a ranks 6 encoders with Kendall tau" in section
    assert f"Keeping its top {KEEP}, it would drop:" in section


def _trust(tau, lo, regret_auroc, regret_crs=None):
    rows = [{"target": "auroc", "depth": 1.0, "tau": tau, "tau_lo": lo, "tau_hi": 0.9, "n_encoders": 5, "keep": 2,
             "regret": regret_auroc}]  # fmt: skip
    if regret_crs is not None:
        rows.append({"target": "crs", "depth": 1.0, "tau": tau, "tau_lo": None, "tau_hi": None, "n_encoders": 5,
                     "keep": 2, "regret": regret_crs})  # fmt: skip
    return pd.DataFrame(rows)


def test_the_verdict_reads_the_interval_and_the_regret():
    assert trust_verdict("d", "knn_loo", _trust(0.6, 0.2, 0.0, 0.0)).endswith(
        "it can be trusted here as a first filter."
    )
    loose = trust_verdict("d", "knn_loo", _trust(0.6, -0.1, 0.0))
    assert loose.endswith("use it to set aside the clearly worst, not to pick the best.")
    lost = trust_verdict("d", "knn_loo", _trust(0.6, 0.2, 0.01, 0.12))
    assert "loses 0.010 AUROC and 0.120 CRS against the grid's best" in lost and "loosely" in lost
    assert trust_verdict("d", "knn_loo", _trust(-0.2, -0.5, 0.0)).endswith("do not drop encoders on it.")
    assert trust_verdict("d", "knn_loo", _trust(None, None, None)) == ""

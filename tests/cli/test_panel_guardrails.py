"""Thin panels: `panel freeze` refuses fewer than 4 members in one line saying why (exit 1, the
warehouse unchanged) unless --allow-small, and a rank-agreement statistic left blank says why."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from support.fault_support import env
from support.runs_factory import PROFILES, encoder_runs, frame

from crsbench import Bench
from crsbench.cli.commands.panels import render_leaderboard
from crsbench.core import CrsbenchError
from crsbench.reads.leaderboard import Leaderboard, agreement_gaps
from crsbench.warehouse.connection import Warehouse

RUN_CLI = "import sys\nfrom crsbench.cli import main\nsys.exit(main())\n"


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "w.duckdb"
    with Warehouse.open(path) as wh:
        wh.append_runs(frame([r for e in PROFILES for r in encoder_runs(e)]))
    return path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUN_CLI, *args], env=env(), capture_output=True, text=True, timeout=300
    )


def _panels(db) -> list[str]:
    with Warehouse.open(db, read_only=True) as wh:
        return list(wh.sql("select panel from panels")["panel"])


def test_freezing_two_members_is_refused_in_one_line_saying_why(db):
    proc = _cli("panel", "freeze", "ref", "--encoders", "e1,e2", "--db", str(db))
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr == (
        "error: panel 'ref' has 2 members, fewer than 4: each axis is min-max normalised over the 2 members, "
        "so each member scores exactly 0 or 1 on every axis and the CRS cannot tell them apart; add members, "
        "or pass --allow-small to freeze it anyway\n"
    )
    assert _panels(db) == []
    proc = _cli("panel", "freeze", "ref", "--encoders", "e1,e2,e3", "--db", str(db))
    assert proc.returncode == 1 and "has 3 members, fewer than 4" in proc.stderr and _panels(db) == []


def test_allow_small_freezes_and_four_members_need_nothing(db):
    proc = _cli("panel", "freeze", "small", "--encoders", "e1,e2", "--allow-small", "--db", str(db))
    assert proc.returncode == 0, proc.stderr[-2000:]
    with pytest.raises(CrsbenchError, match="has 3 members, fewer than 4"):
        Bench(db).freeze_panel("lib", ["e1", "e2", "e3"])  # the library refuses as the CLI does
    assert Bench(db).freeze_panel("four", ["e1", "e2", "e3", "e4"]).members == ("e1", "e2", "e3", "e4")
    assert sorted(_panels(db)) == ["four", "small"]


def test_a_blank_rank_agreement_says_why(capsys):
    agreement = pd.DataFrame(
        {
            "population": ["panel", "all"],
            "n": [2, 1],
            "kendall_tau": [float("nan"), float("nan")],
            "spearman_rho": [float("nan"), float("nan")],
            "reversals": [0, 0],
        }
    )
    gaps = agreement_gaps(agreement)
    assert gaps == {
        "panel": dict.fromkeys(
            ("kendall_tau", "spearman_rho"), "n/a (every pair of the 2 encoders is tied on CRS or on AUROC)"
        ),
        "all": dict.fromkeys(("kendall_tau", "spearman_rho"), "n/a (needs >= 2 ranked encoders, has 1)"),
    }
    assert agreement_gaps(agreement.assign(kendall_tau=0.5, spearman_rho=0.4)) == {}
    board = pd.DataFrame(
        {
            "encoder_id": ["e1", "e2"],
            "crs": [0.0732, 0.0732],
            "crs_rank": [1, 1],
            "auroc": [0.8, 0.7],
            "auroc_rank": [1, 2],
            "in_panel": [True, True],
            "tier": ["1", "1"],
            **{c: [float("nan")] * 2 for c in ["crs_lo", "crs_hi", "auroc_lo", "auroc_hi", "gap_lo", "gap_hi"]},
            **{c: [None, None] for c in ["crs_note", "auroc_note"]},
        }
    )
    render_leaderboard(Leaderboard("small", board, agreement))
    out = capsys.readouterr().out
    assert out.count("n/a (every pair of the 2 encoders is tied on CRS or on AUROC)") == 2
    assert out.count("n/a (needs >= 2 ranked encoders, has 1)") == 2


def _record_numerics(db, kinds: dict[str, str | None]) -> None:
    """One frozen feature set per encoder, its provenance naming the numerics it ran under."""
    with Warehouse.open(db) as wh:
        for encoder, kind in kinds.items():
            provenance = None if kind is None else f'{{"numerics": "{kind}"}}'
            wh.con.execute(
                "insert into feature_sets (dataset_id, encoder_id, regime, complete, provenance) "
                "values ('d0', ?, 'frozen', true, ?)",
                [encoder, provenance],
            )


def test_a_panel_mixing_canonical_and_native_numerics_is_refused_naming_both(db):
    _record_numerics(db, {"e1": "canonical", "e2": "native", "e3": "canonical", "e4": None})
    proc = _cli("panel", "freeze", "mixed", "--encoders", "e1,e2,e3,e4", "--db", str(db))
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr[-2000:]
    assert "canonical: e1, e3; native: e2" in proc.stderr and "CRSBENCH_NATIVE_NUMERICS" in proc.stderr
    assert _panels(db) == []
    # A set recorded before numerics was (e4: no provenance) is not judged; one kind freezes.
    assert Bench(db).freeze_panel("one_kind", ["e1", "e3", "e4", "e5"]).members == ("e1", "e3", "e4", "e5")

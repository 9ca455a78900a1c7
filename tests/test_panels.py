"""Reference panels: anchors at freeze, immutability, degenerate axes, and the panel CLI."""

from __future__ import annotations

import json

import pytest
from support.runs_factory import (
    AXES,
    PROFILES,
    clone_encoder,
    encoder_runs,
    frame,
    reference_axes_cell,
    reference_axes_encoder,
)

from crsbench.cli import main
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel, get_panel, leaderboard, list_panels


@pytest.fixture()
def db(tmp_path):
    rows = [r for e in PROFILES for r in encoder_runs(e)]
    rows += clone_encoder(rows, "e2", "e6")
    path = tmp_path / "w.duckdb"
    with Warehouse.open(path) as wh:
        wh.append_runs(frame(rows))
    return path, frame(rows)


def test_freeze_stores_members_and_min_max_anchors_per_scope(db):
    path, runs = db
    members = ["e1", "e3", "e5"]
    with Warehouse.open(path) as wh:
        panel = freeze_panel(wh, "main", [*members, "e3"], allow_small=True)  # duplicates are ignored
        stored = get_panel(wh, "main")
    assert stored.members == ("e1", "e3", "e5") == panel.members
    cells = reference_axes_cell(runs)
    scopes = {"global": reference_axes_encoder(cells)} | {d: t for d, t in cells.groupby("dataset_id")}
    anchors = stored.anchors.set_index(["scope", "axis"])
    assert sorted(anchors.index.get_level_values(0).unique()) == ["cxr", "derm", "fundus", "global"]
    for scope, table in scopes.items():
        sub = table[table.encoder_id.isin(members)]
        for axis in AXES:
            lo, hi = anchors.loc[(scope, axis), ["lo", "hi"]]
            assert lo == pytest.approx(sub[axis].min(), abs=1e-12)
            assert hi == pytest.approx(sub[axis].max(), abs=1e-12)
    assert len(anchors) == 4 * 4


def test_refreezing_a_name_is_refused_and_changes_nothing(db):
    path, _ = db
    with Warehouse.open(path) as wh:
        freeze_panel(wh, "main", ["e1", "e2"], allow_small=True)
        before = wh.sql("select * from reference_anchors order by all")
        with pytest.raises(CrsbenchError, match="immutable"):
            freeze_panel(wh, "main", ["e1", "e2"], allow_small=True)
        with pytest.raises(CrsbenchError, match="immutable"):
            freeze_panel(wh, "main", ["e3", "e4"], allow_small=True)
        after = wh.sql("select * from reference_anchors order by all")
        assert after.equals(before)
        assert list(wh.sql("select encoder_id from reference_panels order by 1").encoder_id) == ["e1", "e2"]


def test_degenerate_axis_is_an_error_naming_scope_and_axis(db):
    path, _ = db
    with Warehouse.open(path) as wh:
        # e2 and e6 are identical; e5 has no fundus cell, so on fundus only the twins remain
        with pytest.raises(CrsbenchError, match=r"degenerate anchor for axis 'discrimination' in scope 'fundus'"):
            freeze_panel(wh, "twins", ["e2", "e5", "e6"], allow_small=True)
        with pytest.raises(CrsbenchError, match=r"in scope 'cxr'"):
            freeze_panel(wh, "twins", ["e2", "e6"], allow_small=True)
        assert list_panels(wh).empty  # nothing half-written
        assert wh.sql("select count(*) as n from reference_anchors").n[0] == 0


@pytest.mark.parametrize(
    "members, message",
    [
        (["e1"], "at least 2"),
        (["e1", "nope"], "no complete frozen-regime cell .* nope"),
    ],
)
def test_bad_membership_is_refused(db, members, message):
    path, _ = db
    with Warehouse.open(path) as wh, pytest.raises(CrsbenchError, match=message):
        freeze_panel(wh, "bad", members, allow_small=True)


def test_leaderboard_falls_back_to_cohort_mode_without_a_panel(db):
    path, _ = db
    with Warehouse.open(path, read_only=True) as wh:
        used, board, agreement = leaderboard(wh)
    assert used == "cohort" and len(board) == 6 and agreement.n[0] == 6
    assert board.crs.is_monotonic_decreasing


def _cli(capsys, *args):
    code = main(["--json", *args])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out.strip() else None)


def test_panel_cli_freeze_list_show_leaderboard(db, capsys):
    path, _ = db
    code, payload = _cli(capsys, "panel", "freeze", "ref", "--encoders", "e1,e2,e3,e4", "--db", str(path))
    assert code == 0 and payload["members"] == ["e1", "e2", "e3", "e4"]
    code, _ = _cli(capsys, "panel", "freeze", "ref", "--encoders", "e1,e2", "--allow-small", "--db", str(path))
    assert code == 1
    code, payload = _cli(capsys, "panel", "list", "--db", str(path))
    assert code == 0 and [p["panel"] for p in payload["panels"]] == ["ref"]
    code, payload = _cli(capsys, "panel", "show", "ref", "--db", str(path))
    assert code == 0 and len(payload["anchors"]) == 16
    code, payload = _cli(capsys, "leaderboard", "--db", str(path))
    assert code == 0 and payload["panel"] == "ref"
    board = payload["leaderboard"]
    assert [r["encoder_id"] for r in board][:1] and len(board) == 6
    crs = [r["crs"] for r in board]
    assert crs == sorted(crs, reverse=True)
    assert {r["population"] for r in payload["rank_agreement"]} == {"panel", "all"}
    assert _cli(capsys, "leaderboard", "--panel", "nope", "--db", str(path))[0] == 1
    # human output prints both tables
    assert main(["leaderboard", "--db", str(path)]) == 0
    text = capsys.readouterr().out
    assert "CRS leaderboard" in text and "kendall_tau" in text and "reversals" in text
    assert "no intervals yet" in text and "crsbench analyze bootstrap --panel ref" in text

"""An interval the bootstrap cannot move is n/a with its reason, never [x, x]: not stored as an
interval, not counted in ties or P(rank 1), shown 'n/a (...)' by the leaderboard and left out of
the card's mean width (the AUROC under --resample seeds, whose 100 % fits do not depend on the seed;
and the whole CRS where no seed changes any prediction)."""

from __future__ import annotations

import re

import pytest
from support.bootstrap_support import ENCODERS, PANEL, build_world
from support.synthetic import make_dataset

from crsbench.analyses import run_analysis
from crsbench.cli import main
from crsbench.reads.card import reporting_card
from crsbench.warehouse.connection import Warehouse

SEEDS = {"replicates": 100, "seed": 2, "resample": "seeds"}


def _derm():
    return {"derm": make_dataset("derm", "multiclass", 300, 3, seed=5, split_share=(0.4, 0.1))}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    db = build_world(tmp_path_factory.mktemp("seeded"), datasets=_derm())
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, "bootstrap", SEEDS)
    return db, result


@pytest.fixture(scope="module")
def flat(tmp_path_factory):
    db = build_world(tmp_path_factory.mktemp("flat"), datasets=_derm(), seeded=False)
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, "bootstrap", SEEDS)
    return db, result


def _rows(db, metric):
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql(
            "select * from bootstrap_intervals where panel = ? and resample = 'seeds' and metric = ?", [PANEL, metric]
        )


def _equal_bounds(text: str) -> list[str]:
    return [m for m in re.findall(r"\[(\d\.\d{4}), (\d\.\d{4})\]", text) if m[0] == m[1]]


def test_auroc_under_seeds_is_na_and_the_crs_keeps_its_interval(seeded):
    db, result = seeded
    with Warehouse.open(db, read_only=True) as wh:  # the premise: every seed's 100 % fit scores the same
        spread = wh.sql(
            "select max(auroc) - min(auroc) as d from runs where label_fraction = 1.0 and condition = 'clean' "
            "group by encoder_id, dataset_id"
        )
    assert (spread["d"] == 0).all()
    for metric in ("discrimination", "calibration", "robustness", "auroc_rank"):  # all read at 100 % labels
        rows = _rows(db, metric)
        assert len(rows) == 2 * len(ENCODERS)  # derm and the aggregate
        assert rows["lo"].isna().all() and rows["hi"].isna().all()
        assert rows["note"].str.startswith("cannot vary: the same value in every replicate").all()
    crs = _rows(db, "crs")
    varied = crs["note"].isna()
    assert varied.sum() >= 2 and (crs[varied]["hi"] > crs[varied]["lo"]).all()
    # A member at a min-max anchor on every axis the seeds move has one CRS in every replicate: n/a too.
    pinned = crs[~varied]
    assert pinned["lo"].isna().all() and pinned["note"].str.contains("pinned at a min-max anchor").all()
    encoders = result.tables["encoders"].set_index("encoder_id")
    assert encoders["auroc_lo"].isna().all()
    assert encoders["crs_lo"].notna().sum() == varied[crs["dataset_id"].isna()].sum()
    assert encoders["p_rank1"].notna().all()  # the ranking does vary
    assert (
        "n/a, no interval: discrimination, calibration, robustness, auroc_rank (cannot vary: the same value in "
        in "\n".join(result.notes)
    )


def test_the_leaderboard_shows_na_with_its_reason_never_equal_bounds(seeded, capsys):
    db, _ = seeded
    assert main(["leaderboard", "--panel", PANEL, "--resample", "seeds", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    crs = _rows(db, "crs")
    pinned = crs[crs["dataset_id"].isna() & crs["note"].notna()]["encoder_id"]
    assert out.count("n/a (same in every replicate)") == len(ENCODERS) + len(pinned)  # every AUROC, pinned CRS
    assert f"CRS interval n/a for {', '.join(sorted(pinned))}: the same value in every replicate" in out
    assert _equal_bounds(out) == []
    line = next(x for x in out.splitlines() if x.startswith("AUROC interval n/a for "))
    assert line.endswith(": cannot vary: the same value in every replicate for every member under seeds resampling")
    assert sorted(line[len("AUROC interval n/a for ") :].split(":")[0].split(", ")) == sorted(ENCODERS)
    assert "not bootstrapped" not in out


def test_a_crs_no_replicate_moves_counts_in_no_tie_or_rank_probability(flat, capsys):
    db, result = flat
    gap = _rows(db, "crs_gap")
    assert gap["lo"].isna().all() and gap["note"].notna().all()
    encoders = result.tables["encoders"]
    assert encoders[["crs_lo", "crs_hi", "p_rank1", "p_top3", "mean_rank"]].isna().all().all()
    assert not encoders["leading_tier"].any()
    pairs = result.tables["pairs"]
    assert pairs[["diff_lo", "diff_hi", "p_a_better"]].isna().all().all()
    with Warehouse.open(db, read_only=True) as wh:
        ci = wh.sql("select * from crs_encoder_ci where panel = ? and resample = 'seeds'", [PANEL])
    assert set(ci["tier"]) == {str(r) for r in range(1, len(ENCODERS) + 1)}  # ranks, no '=1' / '1' tie
    assert ci["crs_note"].notna().all() and ci["crs_lo"].isna().all()
    assert main(["leaderboard", "--panel", PANEL, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "│ =1" not in out and "│ 1    │ 1 " not in out and _equal_bounds(out) == []  # no tier cell
    assert out.count("n/a (same in every replicate)") == 2 * len(ENCODERS)


def test_the_card_leaves_na_intervals_out_of_the_mean_width(seeded, flat):
    with Warehouse.open(seeded[0], read_only=True) as wh:
        item = reporting_card(wh, PANEL).item("uncertainty")
        crs = _rows(seeded[0], "crs")
    expected = (crs[crs["dataset_id"].isna()]["hi"] - crs[crs["dataset_id"].isna()]["lo"]).mean()
    assert item.values["crs.interval_width"] == pytest.approx(expected)
    assert "discrimination.interval_width" not in item.values
    assert "AUROC n/a (the same in every replicate: seeds resampling does not move it)" in item.text
    with Warehouse.open(flat[0], read_only=True) as wh:
        item = reporting_card(wh, PANEL).item("uncertainty")
    assert "CRS n/a (" in item.text and "0.000" not in item.text

"""Paired-seed bootstrap: replicates against an independent resampling of the runs, and the
known answers (a dominating encoder, identical seeds, replicate 0 = crs_encoder)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from support.criterion_support import build, reference_scores, scenario_runs
from support.runs_factory import PERTURBED, frame, run_row

from crsbench.analyses import run_analysis
from crsbench.analyses.uncertainty.bootstrap import dataset_seeds, leading_tier, ranks, replicate_scores, stored_metrics
from crsbench.analyses.uncertainty.resample import draw_seeds
from crsbench.analyses.uncertainty.rescore import scored_runs
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse

MEMBERS = ["e1", "e2", "e3", "e4", "e5", "e6", "e7"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    runs = scenario_runs()
    return build(tmp_path_factory.mktemp("boot") / "w.duckdb", runs, MEMBERS), runs


def test_replicate_zero_is_crs_encoder_bit_for_bit(world):
    db, _ = world
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, "bootstrap", {"replicates": 200, "seed": 1, "resample": "seeds"})
        view = wh.sql("select encoder_id, crs, auroc from crs_encoder where panel = 'p' and in_panel")
    got = result.tables["encoders"].set_index("encoder_id")
    view = view.set_index("encoder_id").loc[got.index]
    assert got["crs"].tolist() == view["crs"].tolist()  # ==, not approx: one definition
    assert got["auroc"].tolist() == view["auroc"].tolist()
    assert set(got["panel"]) == {"p"} and (got["n_replicates"] == 200).all()
    reps = result.tables["replicates"]
    assert sorted(reps["replicate"].unique()) == list(range(201))


def test_replicates_equal_an_independent_resampling_of_the_runs(world):
    db, runs = world
    with Warehouse.open(db) as wh:
        seeds = dataset_seeds(wh, MEMBERS)
        resamples = draw_seeds(seeds, 5, np.random.default_rng(7))
        keyed = scored_runs(wh, MEMBERS)
        got = replicate_scores(wh, keyed, stored_metrics(keyed), resamples)
    got = got[got["scope"] == "global"].rename(columns={"discrimination": "auroc"})
    assert seeds == {"cxr": [0, 1, 2, 3, 4], "derm": [0, 1, 2, 3, 4], "fundus": [0, 1, 2, 3, 4]}
    for replicate in range(6):
        chosen = resamples.combos[resamples.combos["replicate"] == replicate]
        parts = []
        for dataset_id, combo in zip(chosen["dataset_id"], chosen["combo"], strict=True):
            drawn = resamples.draws.loc[resamples.draws["combo"] == combo, "seed"].tolist()
            assert len(drawn) == 5 and set(drawn) <= set(range(5))
            if replicate == 0:
                assert drawn == [0, 1, 2, 3, 4]
            # a seed drawn twice contributes its runs twice; every encoder gets the same draw
            parts += [runs[(runs["dataset_id"] == dataset_id) & (runs["seed"] == s)] for s in drawn]
        want = reference_scores(pd.concat(parts), MEMBERS)
        have = got[got["replicate"] == replicate].set_index("encoder_id").loc[want.index]
        np.testing.assert_allclose(have["crs"], want["crs"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(have["auroc"], want["discrimination"], rtol=0, atol=1e-12)
    # the draws really resample: some replicate differs from the point estimate
    assert got.groupby("replicate")["crs"].apply(tuple).nunique() > 1


def _cells(
    encoder: str, auroc: float, ece: float, ratio: float, drop: float, noise: float, datasets=("derm", "cxr")
) -> list[dict]:
    """Clean runs at every fraction (AUROC(f) = ratio * AUROC(100 %) below full labels) and the
    15 perturbations (AUROC - drop), with seed-dependent noise of +-noise."""
    rows = []
    for dataset in datasets:
        for seed in range(5):
            jitter = noise * (seed - 2) / 2
            a = auroc + jitter
            for f in (0.01, 0.05, 0.1, 0.25, 1.0):
                rows.append(
                    run_row(encoder, dataset, dataset, "clean", f, seed, a if f == 1.0 else ratio * a, ece + jitter / 2)
                )
            rows += [run_row(encoder, dataset, dataset, c, 1.0, seed, a - drop - jitter, ece) for c in PERTURBED]
    return rows


def test_an_encoder_dominating_every_axis_is_always_first(tmp_path):
    rows = _cells("top", 0.95, 0.02, 0.98, 0.01, 0.004)
    for i, e in enumerate(["a", "b", "c", "d"]):
        rows += _cells(
            e,
            0.75 + 0.03 * i,
            0.10 - 0.01 * ((i * 3) % 4),
            0.85 + 0.02 * ((i + 1) % 4),
            0.05 + 0.01 * ((i + 2) % 4),
            0.01,
        )
    db = build(tmp_path / "w.duckdb", frame(rows), ["top", "a", "b", "c", "d"])
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, "bootstrap", {"replicates": 200, "resample": "seeds"})
        tier = leading_tier(wh)
    got = result.tables["encoders"].set_index("encoder_id")
    assert got.loc["top", "p_rank1"] == 1.0 and got.loc["top", "p_top3"] == 1.0
    assert got.loc["top", "crs_median"] == 1.0  # Dom = S = W = 1 in every replicate
    # pinned at 1.0 while the others vary: n/a, never the interval [1, 1]
    assert np.isnan(got.loc["top", "crs_lo"]) and np.isnan(got.loc["top", "crs_hi"])
    assert got.drop(index="top")["crs_lo"].notna().all()
    assert (got.drop(index="top")["p_rank1"] == 0).all()
    assert "top" in set(tier["encoder_id"])
    pairs = result.tables["pairs"]
    assert (pairs.loc[pairs["encoder_a"] == "top", "diff_lo"] > 0).all()


def test_identical_seeds_leave_every_interval_and_rank_probability_na(tmp_path):
    rows = []
    for i, e in enumerate(["a", "b", "c", "d", "e"]):
        rows += _cells(
            e,
            0.72 + 0.04 * i,
            0.03 + 0.02 * ((i * 2) % 5),
            0.80 + 0.03 * ((i + 3) % 5),
            0.02 + 0.015 * ((i + 1) % 5),
            noise=0.0,
        )
    db = build(tmp_path / "w.duckdb", frame(rows), ["a", "b", "c", "d", "e"])
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, "bootstrap", {"replicates": 200, "resample": "seeds"})
    enc = result.tables["encoders"]
    # Nothing the seeds draw moves a score: no interval, no rank probability, no tier (never [x, x]).
    assert (enc["crs_median"] == enc["crs"]).all()
    assert enc[["crs_lo", "crs_hi", "auroc_lo", "auroc_hi", "p_rank1", "p_top3", "mean_rank"]].isna().all().all()
    assert not enc["leading_tier"].any()
    pairs = result.tables["pairs"]
    assert pairs[["diff_lo", "diff_hi", "p_a_better"]].isna().all().all() and pairs["diff"].notna().all()


def test_probabilities_and_intervals_summarise_the_stored_replicates(world):
    db, _ = world
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, "bootstrap", {"replicates": 200, "seed": 2, "resample": "seeds"})
        stored = wh.sql("select * from analysis_bootstrap_encoders")
        params = wh.sql("select params from analyses where table_name = 'analysis_bootstrap_encoders'")
    assert '"replicates": 200' in params["params"].iloc[0]
    reps = result.tables["replicates"]
    reps = reps[reps["replicate"] > 0]
    wide = reps.pivot(index="replicate", columns="encoder_id", values="crs")
    # ranks: 1 + strictly higher, i.e. scipy's 'min' rank of the negated scores
    want_rank = np.vstack([stats.rankdata(-row, method="min") for row in wide.to_numpy()])
    np.testing.assert_array_equal(ranks(wide.to_numpy()), want_rank)
    enc = stored.set_index("encoder_id")
    for e in wide.columns:
        assert enc.loc[e, "p_rank1"] == pytest.approx(np.mean(want_rank[:, wide.columns.get_loc(e)] == 1))
        assert enc.loc[e, "p_top3"] == pytest.approx(np.mean(want_rank[:, wide.columns.get_loc(e)] <= 3))
        if wide[e].min() == wide[e].max():  # pinned at one value (a min-max anchor): n/a, never [x, x]
            assert np.isnan(enc.loc[e, "crs_lo"]) and np.isnan(enc.loc[e, "crs_hi"])
            continue
        assert enc.loc[e, "crs_lo"] == pytest.approx(np.percentile(wide[e], 2.5))
        assert enc.loc[e, "crs_hi"] == pytest.approx(np.percentile(wide[e], 97.5))
    assert (wide.max() > wide.min()).sum() >= 5
    assert enc["p_rank1"].sum() == pytest.approx(1.0)  # no ties in this scenario
    assert enc["p_top3"].sum() == pytest.approx(3.0)
    pairs = result.tables["pairs"].set_index(["encoder_a", "encoder_b"])
    assert len(pairs) == 7 * 6 // 2
    (a, b), row = next(iter(pairs.iterrows()))
    diff = wide[a] - wide[b]
    assert row["diff_lo"] == pytest.approx(np.percentile(diff, 2.5))
    assert row["p_a_better"] == pytest.approx(np.mean(diff > 0))
    assert enc.loc[a, "crs"] >= enc.loc[b, "crs"]
    # leading tier: P(top 3) >= 0.5, plus the modal winner
    tier = set(enc.index[(enc["p_top3"] >= 0.5) | (enc["p_rank1"] == enc["p_rank1"].max())])
    assert set(enc.index[enc["leading_tier"]]) == tier


def test_same_seed_same_result_and_errors(world, tmp_path):
    db, _ = world
    with Warehouse.open(db) as wh:
        one = run_analysis(wh, "bootstrap", {"replicates": 100, "seed": 5, "resample": "seeds"}, store=False)
        two = run_analysis(wh, "bootstrap", {"replicates": 100, "seed": 5, "resample": "seeds"}, store=False)
        other = run_analysis(wh, "bootstrap", {"replicates": 100, "seed": 6, "resample": "seeds"}, store=False)
        with pytest.raises(CrsbenchError, match="replicates must be >= 100"):
            run_analysis(wh, "bootstrap", {"replicates": 99})
        with pytest.raises(CrsbenchError, match="resample must be one of"):
            run_analysis(wh, "bootstrap", {"resample": "patients"})
        with pytest.raises(CrsbenchError, match="no panel named"):
            run_analysis(wh, "bootstrap", {"panel": "nope"})
    pd.testing.assert_frame_equal(one.tables["encoders"], two.tables["encoders"])
    assert not one.tables["encoders"]["crs_lo"].equals(other.tables["encoders"]["crs_lo"])
    with Warehouse.open(tmp_path / "empty.duckdb") as wh, pytest.raises(CrsbenchError, match="analyze bootstrap"):
        leading_tier(wh)


def test_cli_analyze_bootstrap_takes_replicates_and_seed(world, capsys):
    import json

    from crsbench.cli import main

    db, _ = world
    assert (
        main(
            [
                "--json",
                "analyze",
                "bootstrap",
                "--panel",
                "p",
                "--replicates",
                "100",
                "--seed",
                "9",
                "--resample",
                "seeds",
                "--db",
                str(db),
            ]
        )
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert "analysis_bootstrap_encoders" in payload["tables"]
    assert {row["encoder_id"] for row in payload["summary"]} == set(MEMBERS)
    assert any(note.startswith("leading tier") for note in payload["notes"])
    with Warehouse.open(db) as wh:
        params = json.loads(
            wh.sql("select params from analyses where analysis = 'bootstrap' limit 1")["params"].iloc[0]
        )
        assert (params["replicates"], params["seed"], params["panel"]) == (100, 9, "p")
        assert wh.sql("select max(replicate) as r from analysis_bootstrap_replicates")["r"].iloc[0] == 100
    assert main(["analyze", "e3", "--seed", "1", "--db", str(db)]) == 1
    assert "does not take seed" in capsys.readouterr().err


def test_dataset_crs_replicates_start_from_crs_cell(world):
    db, _ = world
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, "bootstrap", {"replicates": 100, "seed": 3, "resample": "seeds"})
        cells = wh.sql(
            "select c.dataset_id, c.encoder_id, c.crs from crs_cell c join reference_panels m "
            "on m.panel = c.panel and m.encoder_id = c.encoder_id where c.panel = 'p' and c.regime = 'frozen'"
        )
        stored = wh.sql("select * from dataset_crs_replicates")
    reps = result.tables["dataset_crs_replicates"]
    assert set(reps["panel"]) == {"p"} and sorted(reps["replicate"].unique()) == list(range(101))
    point = reps[reps["replicate"] == 0].set_index(["dataset_id", "encoder_id"])["crs"]
    want = cells.set_index(["dataset_id", "encoder_id"])["crs"]
    assert sorted(point.index) == sorted(want.index)
    assert point.loc[want.index].tolist() == pytest.approx(want.tolist(), abs=1e-12)
    assert len(stored) == len(reps)  # the public view reads the stored part
    moved = reps[reps["replicate"] > 0].groupby(["dataset_id", "encoder_id"])["crs"].std()
    assert (moved > 0).any()  # the seeds' resampling moves per-dataset CRS

"""Image-level bootstrap: intervals against an independent bootstrap of the stored predictions,
wider than seeds-only, ties with the leader, rank-agreement intervals, and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score
from support.bootstrap_support import ENCODERS, PANEL, build_world, cell_batches, copy_world
from support.synthetic import make_dataset

from crsbench.analyses import run_analysis
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

REPLICATES = 500


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    db = build_world(tmp_path_factory.mktemp("boot_images"))
    with Warehouse.open(db) as wh:
        run_analysis(wh, "bootstrap", {"replicates": REPLICATES, "seed": 3})
        replicates = wh.sql("select * from analysis_bootstrap_replicates")
        run_analysis(wh, "bootstrap", {"replicates": REPLICATES, "seed": 3, "resample": "seeds"})
    return db, replicates


def _intervals(wh: Warehouse, resample: str) -> pd.DataFrame:
    return wh.sql("select * from bootstrap_intervals where panel = ? and resample = ?", [PANEL, resample])


def _independent_interval(
    y: np.ndarray, p: np.ndarray, multilabel: bool, rng: np.random.Generator
) -> tuple[float, float]:
    """Percentile bootstrap of the macro AUROC, resampling images within each class stratum
    (multilabel: the lowest-index positive label, or none), scored by scikit-learn."""
    strata = np.where(y.any(axis=1), np.argmax(y > 0, axis=1), y.shape[1]) if multilabel else y
    groups = [np.flatnonzero(strata == s) for s in np.unique(strata)]
    values = []
    for _ in range(REPLICATES):
        idx = np.concatenate([rng.choice(g, size=len(g), replace=True) for g in groups])
        if multilabel:
            values.append(roc_auc_score(y[idx], p[idx], average="macro"))
        else:
            values.append(np.mean([roc_auc_score(y[idx] == k, p[idx][:, k]) for k in range(p.shape[1])]))
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def test_clean_auroc_interval_matches_an_independent_bootstrap_of_the_predictions(world):
    db, _ = world
    rng = np.random.default_rng(0)
    datasets = {
        "derm": make_dataset("derm", "multiclass", 400, 4, seed=11, split_share=(0.4, 0.1)),
        "cxr": make_dataset("cxr", "multilabel", 400, 3, seed=12, split_share=(0.4, 0.1)),
    }
    with Warehouse.open(db, read_only=True) as wh:
        got = _intervals(wh, "images+seeds")
        # two cells per dataset keep the test short; every cell is computed the same way
        for (name, ds), encoder in [(d, e) for d in datasets.items() for e in ("enc_a", "enc_d")]:
            rows = ds.split_rows("test")
            stored = wh.sql(
                "select p.row_index, p.probs from predictions p join runs r using (run_id) "
                "where r.encoder_id = ? and r.dataset_id = ? and r.condition = 'clean' "
                "and r.label_fraction = 1.0 and r.seed = 0 order by p.row_index",
                [encoder, name],
            )
            assert stored["row_index"].tolist() == rows.tolist()
            p = np.vstack(stored["probs"].to_numpy()).astype(np.float64)
            lo, hi = _independent_interval(ds.labels[rows], p, ds.task.value == "multilabel", rng)
            row = got[
                (got["encoder_id"] == encoder) & (got["dataset_id"] == name) & (got["metric"] == "discrimination")
            ].iloc[0]
            assert row["lo"] == pytest.approx(lo, abs=0.01), (name, encoder)
            assert row["hi"] == pytest.approx(hi, abs=0.01), (name, encoder)
            assert row["hi"] - row["lo"] > 0.02  # the test set's noise is really there


def test_image_level_crs_interval_is_wider_than_seeds_only_for_every_encoder(world):
    db, _ = world
    with Warehouse.open(db, read_only=True) as wh:
        both = _intervals(wh, "images+seeds")
        seeds = _intervals(wh, "seeds")
    width = {}
    for name, frame in (("both", both), ("seeds", seeds)):
        crs = frame[(frame["metric"] == "crs") & frame["dataset_id"].isna()].set_index("encoder_id")
        # n/a (a member pinned at one CRS in every replicate) has width 0
        assert (crs["lo"].notna() | crs["note"].str.startswith("the same value in every replicate")).all()
        width[name] = (crs["hi"] - crs["lo"]).fillna(0.0)
    assert set(width["both"].index) == set(ENCODERS) and (width["both"] > 0).all()
    assert (width["both"] > width["seeds"].loc[width["both"].index]).all()


def test_point_estimates_are_the_views_and_ties_follow_the_gap_interval(world):
    db, replicates = world
    with Warehouse.open(db, read_only=True) as wh:
        got = _intervals(wh, "images+seeds")
        view = wh.sql("select encoder_id, crs, auroc from crs_encoder where panel = ?", [PANEL])
        ci = wh.sql("select * from crs_encoder_ci where panel = ? and resample = 'images+seeds'", [PANEL]).set_index(
            "encoder_id"
        )
    agg = got[got["dataset_id"].isna() & got["encoder_id"].notna()]
    crs = agg[agg["metric"] == "crs"].set_index("encoder_id")["estimate"]
    assert crs.to_dict() == view.set_index("encoder_id")["crs"].to_dict()  # one definition
    # the gap interval, recomputed from the stored replicates
    wide = replicates[replicates["replicate"] > 0].pivot(index="replicate", columns="encoder_id", values="crs")
    leader = view.sort_values(["crs", "encoder_id"], ascending=[False, True])["encoder_id"].iloc[0]
    for encoder in ENCODERS:
        gap = wide[leader] - wide[encoder]
        lo, hi = np.percentile(gap, [2.5, 97.5])
        row = agg[(agg["metric"] == "crs_gap") & (agg["encoder_id"] == encoder)].iloc[0]
        assert (row["lo"], row["hi"]) == pytest.approx((lo, hi), abs=1e-12)
        assert ci.loc[encoder, "crs_lo"] == pytest.approx(np.percentile(wide[encoder], 2.5))
        tied = lo <= 0
        assert ci.loc[encoder, "tier"] == ("=1" if tied else str(ci.loc[encoder, "crs_rank"]))
    assert (ci["tier"] == "=1").sum() >= 2 and ci.loc[leader, "tier"] == "=1"
    assert (ci["auroc_lo"] < ci["auroc"]).all() and (ci["auroc"] < ci["auroc_hi"]).all()


def test_rank_agreement_statistics_carry_intervals(world):
    db, replicates = world
    with Warehouse.open(db, read_only=True) as wh:
        got = _intervals(wh, "images+seeds")
    panel_rows = got[got["encoder_id"].isna()].set_index("metric")
    taus, rhos, reversals = [], [], []
    for _, rep in replicates[replicates["replicate"] > 0].groupby("replicate"):
        taus.append(stats.kendalltau(rep["crs"], rep["auroc"]).statistic)
        rhos.append(stats.spearmanr(rep["crs"], rep["auroc"]).statistic)
        c, a = rep["crs"].to_numpy(), rep["auroc"].to_numpy()
        reversals.append(sum((c[i] - c[j]) * (a[i] - a[j]) < 0 for i in range(len(c)) for j in range(i + 1, len(c))))
    for metric, values in (("kendall_tau", taus), ("spearman_rho", rhos), ("reversals", reversals)):
        lo, hi = np.nanpercentile(np.asarray(values, float), [2.5, 97.5])
        assert (panel_rows.loc[metric, "lo"], panel_rows.loc[metric, "hi"]) == pytest.approx((lo, hi))


def test_bad_input_is_one_line_and_writes_nothing(world, tmp_path):
    db = copy_world(world[0], tmp_path)
    ds = make_dataset("derm", "multiclass", 400, 4, seed=11, split_share=(0.4, 0.1))
    with Warehouse.open(db) as wh:
        runs, _ = cell_batches(ds, "ghost", 1.0, 9)
        wh.append_runs(runs)  # run records without their predictions
        freeze_panel(wh, "gp", ["enc_a", "enc_d", "ghost"], allow_small=True)
        before = wh.sql("select count(*) as n from bootstrap_intervals")["n"].iloc[0]
        with pytest.raises(CrsbenchError, match=r"predictions missing for derm x ghost: 55 runs"):
            run_analysis(wh, "bootstrap", {"panel": "gp", "replicates": 100})
        with pytest.raises(CrsbenchError, match="replicates must be >= 100"):
            run_analysis(wh, "bootstrap", {"panel": PANEL, "replicates": 50})
        assert wh.sql("select count(*) as n from bootstrap_intervals")["n"].iloc[0] == before
        assert wh.sql("select count(*) as n from analyses where params like '%\"gp\"%'")["n"].iloc[0] == 0


def test_leaderboard_shows_intervals_ties_and_agreement_intervals(world, capsys):
    import json

    from crsbench.cli import main

    db, _ = world
    assert main(["leaderboard", "--panel", PANEL, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "crs 95% CI" in out and "=1" in out and "images+seeds" in out
    assert main(["--json", "leaderboard", "--panel", PANEL, "--resample", "seeds", "--db", str(db)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["resample"] == "seeds"
    # The verdict names the leader and the "=1" encoders, with the mean CRS interval width.
    rows = sorted(payload["leaderboard"], key=lambda r: (r["crs_rank"], r["encoder_id"]))
    tied = [r["encoder_id"] for r in rows[1:] if r["tier"] == "=1"]
    varying = [r for r in rows if r["crs_lo"] is not None and r["crs_hi"] is not None]  # n/a rows have none
    verdict = payload["verdict"]
    assert verdict.startswith(f"{rows[0]['encoder_id']} leads on CRS (panel {PANEL}); ")
    assert (f"tied with it within the 95 % intervals: {', '.join(tied)};" if tied else "no other encoder") in verdict
    if varying:
        width = sum(r["crs_hi"] - r["crs_lo"] for r in varying) / len(varying)
        assert f"mean CRS interval width {width:.2f} (" in verdict
    assert main(["leaderboard", "--panel", PANEL, "--db", str(db)]) == 0
    assert capsys.readouterr().out.lstrip().split(" leads on CRS")[0] in {r["encoder_id"] for r in rows}
    board = {row["encoder_id"]: row for row in payload["leaderboard"]}
    assert set(board) == set(ENCODERS)
    assert all(row["crs_lo"] <= row["crs"] <= row["crs_hi"] for row in board.values() if row["crs_note"] is None)
    assert all(row["crs_lo"] is None for row in board.values() if row["crs_note"] is not None)
    assert {row["statistic"] for row in payload["rank_agreement_intervals"]} == {
        "kendall_tau",
        "spearman_rho",
        "reversals",
    }


def test_report_leaderboard_shows_tiers_intervals_and_anchor_noise(world, tmp_path):
    from crsbench.bench import Bench

    db, _ = world
    Bench(db).report(tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text()
    board = html[html.find("CRS leaderboard next to AUROC</h2>") :]
    assert ">=1<" in board and "AUROC [95% interval]" in board
    assert "images+seeds bootstrap" in board and "kendall_tau" in board
    with Warehouse.open(db, read_only=True) as wh:
        flagged = wh.sql("select * from panel_anchor_noise where panel = ? and amplifies_noise", [PANEL])
    assert len(flagged) > 0 and board.count("amplifies noise") == 1  # one line for the panel
    assert "docs/METHODS.md §10.3" in board
    detail = board[board.find("Anchor range and noise per scope and axis") :]
    for row in flagged.itertuples():  # every flagged axis is listed with its range and noise
        cells = f'<td class="text">{row.scope}</td><td class="text">{row.axis}</td>'
        assert f'{cells}<td class="">{row.anchor_range:.4f}</td><td class="">{row.noise:.4f}</td>' in detail


def test_the_demo_interval_check_script_agrees_on_every_cell(world, capsys):
    """scripts/check_demo_intervals.py (run on the demo for README) runs and passes on every cell here."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "check_demo_intervals.py"
    spec = importlib.util.spec_from_file_location("check_demo_intervals", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    db, _ = world
    # 200 replicates keep it short; the interval accuracy itself is the test above (500, 0.01)
    assert module.main(["--db", str(db), "--panel", PANEL, "--replicates", "200", "--tolerance", "0.025"]) == 0
    out = capsys.readouterr().out
    assert f"{2 * len(ENCODERS)} cells" in out and "OK" in out

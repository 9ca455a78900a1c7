"""Operating points (METHODS.md §16.3): thresholds chosen on calib equal a brute force over every
threshold, the rates equal scikit-learn, every in-grid run gets its rows, and bad input is one line."""

from __future__ import annotations

import shutil
from fractions import Fraction

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, confusion_matrix, roc_curve
from support.subgroups_support import GRID, build

from crsbench.analyses import run_analysis
from crsbench.analyses.common import fit_predictions
from crsbench.analyses.subgroups.thresholds import (
    best_balanced_accuracy,
    rates,
    sensitivity_threshold,
    youden_threshold,
)
from crsbench.cli import main
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for


def brute(positive, score):
    """Every observed score as threshold: (J, sensitivity) per threshold, by counting in exact fractions."""
    out = {}
    for t in np.unique(score):
        called = score >= t
        sens = Fraction(int((called & positive).sum()), int(positive.sum()))
        spec = Fraction(int((~called & ~positive).sum()), int((~positive).sum()))
        out[float(t)] = (sens + spec - 1, sens)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_thresholds_equal_a_brute_force_and_sklearn(seed):
    rng = np.random.default_rng(seed)
    positive = rng.random(90) < 0.3
    score = np.round(np.clip(positive * 0.25 + rng.random(90) * 0.75, 0, 1), 2)  # ties
    table = brute(positive, score)
    best_j = max(j for j, _ in table.values())
    assert youden_threshold(positive, score) == max(t for t, (j, _) in table.items() if j == best_j)
    fpr, tpr, thr = roc_curve(positive, score, drop_intermediate=False)
    j = tpr - fpr
    assert j[thr == youden_threshold(positive, score)][0] == pytest.approx(j.max(), abs=1e-12)
    assert sensitivity_threshold(positive, score, 0.9) == max(t for t, (_, s) in table.items() if s >= 0.9)
    opt_t, opt_ba = best_balanced_accuracy(positive, score)
    assert opt_ba == pytest.approx(max(balanced_accuracy_score(positive, score >= t) for t in table))
    called = score >= opt_t
    r = rates(positive, called)
    tn, fp, fn, tp = confusion_matrix(positive, called).ravel()
    assert r["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(positive, called))
    assert (r["sensitivity"], r["specificity"]) == pytest.approx((tp / (tp + fn), tn / (tn + fp)))
    assert (r["ppv"], r["npv"]) == pytest.approx((tp / (tp + fp), tn / (tn + fn)))


def test_an_exact_tie_of_youdens_j_goes_to_the_highest_threshold():
    # 2 positives, 10 negatives. At t = 0.9: tp 1, fp 2, J = 1/2 - 2/10 = 3/10. At t = 0.5: tp 2,
    # fp 7, J = 1 - 7/10 = 3/10 too, but 1.0 - 0.7 is 0.30000000000000004 in floating point, so
    # tpr - fpr would pick 0.5; the documented rule (METHODS §16.3) picks the higher, 0.9.
    positive = np.array([True, True] + [False] * 10)
    score = np.array([0.9, 0.5, 0.95, 0.92, 0.8, 0.75, 0.7, 0.65, 0.6, 0.3, 0.2, 0.1])
    table = brute(positive, score)
    best_j = max(j for j, _ in table.values())
    assert best_j == Fraction(3, 10)
    assert sorted(t for t, (j, _) in table.items() if j == best_j) == [0.5, 0.9]
    assert (1.0 - 0.7) > (0.5 - 0.2)  # the float comparison that broke the tie the wrong way
    assert youden_threshold(positive, score) == 0.9
    assert best_balanced_accuracy(positive, score) == (0.9, pytest.approx(0.65, abs=1e-15))


def test_undefined_columns_give_nan():
    assert np.isnan(youden_threshold(np.ones(5, bool), np.linspace(0, 1, 5)))
    assert np.isnan(rates(np.array([True, False]), np.array([False, False]))["ppv"])


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    db = build(tmp_path_factory.mktemp("op"))
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, "operating_points", {})
        points = wh.sql("select * from operating_points")
        calib = wh.sql(
            "select i.row_index, l.label_idx, l.value, i.dataset_id from labels l join images i "
            "using (dataset_id, image_id)"
        )
        preds = {f: fit_predictions(wh, f) for f in points["fit_id"].unique()}
        runs = wh.sql(
            "select run_id, condition from runs_grid where in_grid and label_fraction = 1.0 and condition <> 'calib'"
        )
    return db, result, points, calib, preds, runs


def _truth(calib, dataset, rows, j):
    sub = calib[(calib["dataset_id"] == dataset) & (calib["label_idx"] == j)].set_index("row_index")["value"]
    return sub.loc[rows].to_numpy() == 1


def test_every_grid_run_has_rows_for_each_rule_and_label(stored):
    _, result, points, _, _, runs = stored
    assert set(points["run_id"]) == set(runs["run_id"])
    per_run = points.groupby(["dataset_id", "run_id"]).size().groupby("dataset_id").unique()
    assert {d: list(v) for d, v in per_run.items()} == {"bin": [2], "cxr": [6], "derm": [6]}  # rules x labels
    assert set(points.loc[points["dataset_id"] == "derm", "rule"]) == {"argmax", "youden_ovr"}
    assert set(points.loc[points["dataset_id"] == "cxr", "rule"]) == {"youden", "sens90"}
    assert set(result.summary["condition_kind"]) == {"clean", "perturbed"}
    thresholded = points[points["rule"] != "argmax"]  # argmax calls are no threshold on p_k: its gap may be < 0
    assert len(GRID) and (thresholded["transfer_gap"] >= -1e-12).all()


@pytest.mark.parametrize("dataset", ["bin", "cxr", "derm"])
def test_thresholds_and_balanced_accuracy_equal_an_independent_computation(stored, dataset):
    _, _, points, labels, preds, _ = stored
    mine = points[(points["dataset_id"] == dataset) & (points["condition"] == "clean")]
    with Warehouse.open(stored[0], read_only=True) as wh:
        rows_of = dict(wh.sql("select image_id, row_index from images where dataset_id = ?", [dataset]).values)
    for row in mine.itertuples():
        ids_c, p_c = preds[row.fit_id][("calib", dataset)]
        ids_t, p_t = preds[row.fit_id][("clean", dataset)]
        pos_c = _truth(labels, dataset, [rows_of[i] for i in ids_c], row.label_idx)
        pos_t = _truth(labels, dataset, [rows_of[i] for i in ids_t], row.label_idx)
        table = brute(pos_c, p_c[:, row.label_idx])
        if row.rule == "argmax":
            called = p_t.argmax(axis=1) == row.label_idx
            assert np.isnan(row.threshold)
        else:
            if row.rule == "sens90":
                expected = max(t for t, (_, s) in table.items() if s >= 0.9)
            else:
                best = max(j for j, _ in table.values())
                expected = max(t for t, (j, _) in table.items() if j == best)
            assert row.threshold == pytest.approx(expected)
            called = p_t[:, row.label_idx] >= row.threshold
        assert row.balanced_accuracy == pytest.approx(balanced_accuracy_score(pos_t, called))
        oracle = max(
            balanced_accuracy_score(pos_t, p_t[:, row.label_idx] >= t) for t in np.unique(p_t[:, row.label_idx])
        )
        assert row.transfer_gap == pytest.approx(oracle - row.balanced_accuracy)


def test_bad_operating_point_input_is_one_line_and_writes_nothing(stored, tmp_path, capsys):
    db = tmp_path / "w.duckdb"
    shutil.copy(stored[0], db)
    shutil.copytree(parts_dir_for(stored[0]), parts_dir_for(db))
    with Warehouse.open(db, read_only=True) as wh:
        before = wh.sql("select * from operating_points order by all").to_csv()
    cases = [
        (["--rule", "f1max"], "unknown threshold rule 'f1max' (rules: youden, sens90, argmax, youden_ovr, fixed)"),
        (["--set", "sensitivity=1.5"], "sensitivity must be in (0, 1]"),
    ]
    for args, message in cases:
        capsys.readouterr()
        assert main(["analyze", "operating_points", *args, "--db", str(db)]) == 1
        err = capsys.readouterr().err.strip()
        assert message in " ".join(err.split()) and len(err.splitlines()) == 1, err
    with Warehouse.open(db) as wh:
        wh.con.execute("update images set split = 'train' where dataset_id = 'bin' and split = 'calib'")
    capsys.readouterr()
    assert main(["analyze", "operating_points", "--db", str(db)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "dataset bin has no 'calib' split: operating points are chosen on the calibration split" in err
    with Warehouse.open(db, read_only=True) as wh:
        assert wh.sql("select * from operating_points order by all").to_csv() == before


def test_every_new_column_carries_a_comment(stored):
    with Warehouse.open(stored[0], read_only=True) as wh:
        cols = wh.sql(
            "select table_name, column_name, comment from duckdb_columns() where table_name in "
            "('operating_points', 'subgroup_metrics', 'subgroup_gaps', 'image_metadata', "
            "'analysis_operating_points_summary')"
        )
        tables = wh.sql(
            "select table_name, comment from duckdb_tables() where table_name in "
            "('operating_points', 'subgroup_metrics', 'subgroup_gaps', 'image_metadata')"
        )
    assert set(cols["table_name"]) == {
        "operating_points",
        "subgroup_metrics",
        "subgroup_gaps",
        "image_metadata",
        "analysis_operating_points_summary",
    }
    assert cols["comment"].notna().all() and (cols["comment"].str.len() > 20).all(), cols[cols["comment"].isna()]
    assert len(tables) == 4 and tables["comment"].str.contains("docs/METHODS.md §16").all()


def test_a_fixed_threshold_gives_per_subgroup_rates_equal_to_sklearn(stored, tmp_path, capsys):
    db = tmp_path / "w.duckdb"
    shutil.copy(stored[0], db)
    shutil.copytree(parts_dir_for(stored[0]), parts_dir_for(db))
    args = ["analyze", "operating_points", "--threshold", "0.3", "--key", "sex", "--db", str(db)]
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "at p >= 0.3, by sex: F sens" in out  # metadata values keep their case
    with Warehouse.open(db, read_only=True) as wh:
        groups = wh.sql("select * from analysis_operating_points_subgroups where rule = 'fixed'")
        points = wh.sql("select * from operating_points where rule = 'fixed'")
        sex = dict(
            wh.sql("select image_id, value from image_metadata where key = 'sex' and dataset_id = 'derm'").values
        )
        rows_of = dict(wh.sql("select image_id, row_index from images where dataset_id = 'derm'").values)
    assert (points["threshold"] == 0.3).all() and set(groups["condition"]) == {"clean"}
    assert set(groups["key"]) == {"sex"} and set(groups["eval_dataset_id"]) == {"bin", "cxr", "derm"}
    _, _, _, labels, preds, _ = stored
    derm = groups[groups["dataset_id"] == "derm"]
    assert len(derm) == derm["run_id"].nunique() * 3 * 2  # classes x {f, m}
    for row in derm.itertuples():
        fit = points.loc[points["run_id"] == row.run_id, "fit_id"].iloc[0]
        ids, p = preds[fit][("clean", "derm")]
        mask = np.array([sex[i] == row.value for i in ids])
        truth = _truth(labels, "derm", [rows_of[i] for i in np.asarray(ids)[mask]], row.label_idx)
        tn, fp, fn, tp = confusion_matrix(truth, p[mask, row.label_idx] >= 0.3, labels=[False, True]).ravel()
        assert (row.n_images, row.n_positive) == (mask.sum(), tp + fn)
        assert (row.sensitivity, row.specificity) == pytest.approx((tp / (tp + fn), tn / (tn + fp)))
    assert main(["analyze", "operating_points", "--rule", "fixed", "--db", str(db)]) == 1
    assert "rule fixed needs a threshold" in capsys.readouterr().err

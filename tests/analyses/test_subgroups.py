"""Subgroup performance from the stored predictions (METHODS.md §16.2): per-group AUROC and ECE
equal scikit-learn / torchmetrics and a hand-binned ECE on each subset, insufficient groups are
reported and never scored, the gap intervals come from the image-level bootstrap's draws, the
leaderboard shows the worst-group AUROC beside an unchanged CRS, and bad input is one line."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import accuracy_score, roc_auc_score
from support.subgroups_support import build
from torchmetrics.functional.classification import multiclass_calibration_error

from crsbench.analyses import run_analysis
from crsbench.analyses.common import fit_predictions
from crsbench.analyses.subgroups.metrics import gaps, score_groups
from crsbench.analyses.uncertainty.resample import draw_images, eval_images
from crsbench.bench import Bench
from crsbench.cli import main
from crsbench.ingest.types import Task
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for


def hand_ece(conf: np.ndarray, hit: np.ndarray, n_bins: int = 15) -> float:
    """Equal-width bins [k/15, (k+1)/15), the last closed; sum of n_b / n |acc_b - conf_b|."""
    total = 0.0
    for k in range(n_bins):
        lo, hi = k / n_bins, (k + 1) / n_bins
        inside = (conf >= lo) & ((conf < hi) if k < n_bins - 1 else (conf <= hi))
        if inside.any():
            total += inside.sum() / len(conf) * abs(hit[inside].mean() - conf[inside].mean())
    return total


def _multiclass(rng, n, k):
    p = rng.dirichlet(np.ones(k), size=n)
    y = np.where(rng.random(n) < 0.6, p.argmax(axis=1), rng.integers(0, k, n))
    return y, p


@pytest.mark.parametrize("seed", [0, 1])
def test_group_metrics_equal_sklearn_and_hand_ece_on_each_subset(seed):
    rng = np.random.default_rng(seed)
    y, p = _multiclass(rng, 150, 4)
    groups = np.array([("a", "b", "c")[i % 3] if i % 11 else None for i in range(150)], dtype=object)
    scores = score_groups(groups, y, p, Task.MULTICLASS, np.ones((150, 1), np.int16), 1, 1)
    assert [s.value for s in scores] == ["a", "b", "c"]
    for s in scores:
        m = groups == s.value
        ys, ps = y[m], p[m]
        present = [k for k in range(4) if 0 < (ys == k).sum() < len(ys)]
        assert s.scores["auroc"][0] == pytest.approx(np.mean([roc_auc_score(ys == k, ps[:, k]) for k in present]))
        ece = hand_ece(ps.max(axis=1), (ps.argmax(axis=1) == ys).astype(float))
        ref = multiclass_calibration_error(torch.tensor(ps), torch.tensor(ys), num_classes=4, n_bins=15, norm="l1")
        assert s.scores["ece"][0] == pytest.approx(ece, abs=1e-12) == pytest.approx(float(ref), abs=1e-6)
        assert s.scores["accuracy"][0] == pytest.approx(accuracy_score(ys, ps.argmax(axis=1)))
        assert s.scores["brier"][0] == pytest.approx(np.mean(np.sum((ps - np.eye(4)[ys]) ** 2, axis=1)))
    # multilabel: AUROC per label as sklearn's macro, ECE the mean of per-label binary ECEs
    yl = (rng.random((150, 3)) < 0.4).astype(int)
    pl = np.clip(yl * 0.3 + rng.random((150, 3)) * 0.7, 0, 1)
    for s in score_groups(groups, yl, pl, Task.MULTILABEL, np.ones((150, 1), np.int16), 1, 1):
        m = groups == s.value
        assert s.scores["auroc"][0] == pytest.approx(roc_auc_score(yl[m], pl[m], average="macro"))
        expected = np.mean([hand_ece(pl[m][:, j], yl[m][:, j].astype(float)) for j in range(3)])
        assert s.scores["ece"][0] == pytest.approx(expected, abs=1e-12)


def test_small_groups_are_insufficient_and_columns_below_the_minimum_are_left_out():
    rng = np.random.default_rng(4)
    y, p = _multiclass(rng, 60, 3)
    y[:3] = 2  # group 'few' (rows 0-2) has only class 2 ...
    groups = np.array(["few"] * 3 + ["many"] * 57, dtype=object)
    few, many = score_groups(groups, y, p, Task.MULTICLASS, np.ones((60, 1), np.int16), 3, 3)
    assert not few.sufficient and np.isnan(few.scores["auroc"][0]) and np.isnan(few.scores["ece"][0])
    ym, pm = y[3:], p[3:]
    kept = [k for k in range(3) if (ym == k).sum() >= 3 and (ym != k).sum() >= 3]
    assert many.sufficient and many.n_columns == len(kept)
    assert many.scores["auroc"][0] == pytest.approx(np.mean([roc_auc_score(ym == k, pm[:, k]) for k in kept]))
    assert all(np.isnan(g.gap) and g.worst_group is None for g in gaps([few, many]))  # one scored group: no gap


def test_weighted_scores_equal_the_metric_on_the_repeated_sample():
    rng = np.random.default_rng(5)
    y, p = _multiclass(rng, 80, 3)
    groups = np.array(["a", "b"] * 40, dtype=object)
    w = np.column_stack([np.ones(80, np.int16), rng.integers(0, 3, 80).astype(np.int16)])
    scores = score_groups(groups, y, p, Task.MULTICLASS, w, 1, 1)
    for s in scores:
        rows = np.flatnonzero(groups == s.value)
        rep = np.repeat(rows, w[rows, 1])
        ys, ps = y[rep], p[rep]
        present = [k for k in range(3) if 0 < (ys == k).sum() < len(ys)]
        assert s.scores["auroc"][1] == pytest.approx(np.mean([roc_auc_score(ys == k, ps[:, k]) for k in present]))
        assert s.scores["ece"][1] == pytest.approx(hand_ece(ps.max(axis=1), (ps.argmax(axis=1) == ys).astype(float)))
    (auroc_gap,) = [g for g in gaps(scores) if g.metric == "auroc"]
    a, b = (s.scores["auroc"] for s in scores)
    assert auroc_gap.gap == pytest.approx(abs(a[0] - b[0])) and auroc_gap.worst == min(a[0], b[0])
    assert auroc_gap.lo == pytest.approx(abs(a[1] - b[1])) == pytest.approx(auroc_gap.hi)  # one replicate


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build(tmp_path_factory.mktemp("subgroups"))


@pytest.fixture
def db(world, tmp_path):
    target = tmp_path / world.name
    shutil.copy(world, target)
    shutil.copytree(parts_dir_for(world), parts_dir_for(target))
    return target


def test_stored_rows_match_an_independent_computation(db):
    with Warehouse.open(db) as wh:
        run_analysis(wh, "subgroups", {"keys": ["sex", "age"], "replicates": 50, "seed": 3})
        metrics = wh.sql("select * from subgroup_metrics")
        gap_rows = wh.sql("select * from subgroup_gaps")
        # Independent: the same draws (one per eval dataset, sorted), scored on repeated samples.
        rng = np.random.default_rng(3)
        draws = {d: draw_images(eval_images(wh, d), 50, rng) for d in ("bin", "cxr", "derm")}
        run = metrics[(metrics["eval_dataset_id"] == "derm") & (metrics["condition"] == "clean")].iloc[0]
        images = eval_images(wh, "derm")
        ids, p = fit_predictions(wh, wh.sql("select fit_id from runs where run_id = ?", [run.run_id])["fit_id"][0])[
            ("clean", "derm")
        ]
        sex = wh.sql("select image_id, value from image_metadata where dataset_id = 'derm' and key = 'sex'")
    assert (
        set(metrics["condition"]) == {"clean"} and len(metrics.run_id.unique()) == 3 * 2 * 2
    )  # datasets x enc x seeds
    sex_of = dict(zip(sex["image_id"], sex["value"], strict=True))
    groups = np.array([sex_of[i] for i in ids], dtype=object)
    mine = metrics[(metrics["run_id"] == run.run_id) & (metrics["key"] == "sex")].set_index("value")
    per_group = {}
    for value in ("F", "M"):  # as the metadata spells them
        m = groups == value
        ys, ps = images.labels[m], p[m]
        per_group[value] = np.mean([roc_auc_score(ys == k, ps[:, k]) for k in range(3)])
        assert mine.loc[value, "auroc"] == pytest.approx(per_group[value])
        assert mine.loc[value, "ece"] == pytest.approx(hand_ece(ps.max(axis=1), (ps.argmax(axis=1) == ys) * 1.0))
        assert mine.loc[value, "n_images"] == m.sum() and mine.loc[value, "status"] == "scored"
    gap = gap_rows[(gap_rows["run_id"] == run.run_id) & (gap_rows["key"] == "sex") & (gap_rows["metric"] == "auroc")]
    gap = gap.iloc[0]
    assert gap.gap == pytest.approx(abs(per_group["F"] - per_group["M"]))
    assert gap.worst_group == min(per_group, key=per_group.get) and gap.replicates == 50
    spread = []
    for r in range(1, 51):
        values = []
        for value in ("F", "M"):  # as the metadata spells them
            rows = np.flatnonzero(groups == value)
            rep = np.repeat(rows, draws["derm"][rows, r])
            ys, ps = images.labels[rep], p[rep]
            values.append(
                np.mean([roc_auc_score(ys == k, ps[:, k]) for k in range(3) if 0 < (ys == k).sum() < len(ys)])
            )
        spread.append(abs(values[0] - values[1]))
    assert (gap.gap_lo, gap.gap_hi) == pytest.approx(tuple(np.percentile(spread, [2.5, 97.5])))


def test_leaderboard_shows_worst_group_auroc_beside_an_unchanged_crs(db, capsys):
    bench = Bench(db)
    bench.analyze("subgroups", keys=["sex"], replicates=0)
    plain, shown = bench.leaderboard(), bench.leaderboard(subgroup="sex")
    pd.testing.assert_series_equal(plain.board["crs"], shown.board["crs"])
    with Warehouse.open(db, read_only=True) as wh:
        gaps_ = wh.sql("select * from subgroup_gaps where key = 'sex' and metric = 'auroc'")
    expected = gaps_.groupby(["encoder_id", "dataset_id"])["worst"].mean().groupby("encoder_id").mean()
    got = shown.board.set_index("encoder_id")["worst_auroc_sex"]
    pd.testing.assert_series_equal(got.sort_index(), expected.sort_index(), check_names=False)
    assert main(["leaderboard", "--subgroup", "sex", "--db", str(db)]) == 0
    assert "worst sex" in capsys.readouterr().out


def _run(capsys, *args):
    capsys.readouterr()
    rc = main(list(args))
    return rc, capsys.readouterr().err.strip()


def _tables(db):
    with Warehouse.open(db, read_only=True) as wh:
        return [
            wh.sql(f"select * from {t} order by all").to_csv()
            for t in ("subgroup_metrics", "subgroup_gaps", "analyses")
        ]


BAD = [
    (("--key", "height"), "subgroup key 'height' is not in the metadata of the evaluated datasets"),
    (("--key", "sex", "--set", "min_positives=500"), "subgroup key 'sex': every group is too small"),
    (("--key", "sex", "--set", "replicates=-1"), "replicates must be >= 0"),
]


def test_bad_subgroup_input_is_one_line_and_writes_nothing(db, capsys):
    assert main(["analyze", "subgroups", "--key", "sex", "--set", "replicates=0", "--db", str(db)]) == 0
    before = _tables(db)
    for args, message in BAD:
        rc, err = _run(capsys, "analyze", "subgroups", *args, "--db", str(db))
        assert rc == 1 and message in " ".join(err.split()) and len(err.splitlines()) == 1, err
    assert _tables(db) == before
    with Warehouse.open(db) as wh:
        wh.con.execute("delete from image_metadata")
    rc, err = _run(capsys, "analyze", "subgroups", "--db", str(db))
    assert rc == 1 and "crsbench dataset metadata" in err


def test_the_summary_names_the_worst_group_most_often_worst(db, capsys):
    import json
    from collections import Counter

    assert main(["--json", "analyze", "subgroups", "--key", "sex", "--set", "replicates=0", "--db", str(db)]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    with Warehouse.open(db, read_only=True) as wh:
        gap_rows = wh.sql("select * from subgroup_gaps")
    assert summary and all(row["worst_group"] in {"F", "M"} for row in summary if row["metric"] == "auroc")
    for row in summary:
        mine = gap_rows[
            (gap_rows["encoder_id"] == row["encoder_id"])
            & (gap_rows["eval_dataset_id"] == row["eval_dataset_id"])
            & (gap_rows["metric"] == row["metric"])
        ]
        counts = Counter(mine["worst_group"].dropna())
        top = max(counts.values(), default=0)
        assert row["worst_group"] == (min(g for g, c in counts.items() if c == top) if counts else None)
    assert main(["analyze", "subgroups", "--key", "sex", "--set", "replicates=0", "--db", str(db)]) == 0
    assert "worst_group" in capsys.readouterr().out

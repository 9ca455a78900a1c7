"""Analysis `retrieval` (METHODS.md §24) end to end on synthetic feature sets of known signal strength,
one dataset per task: every stored metric equals the brute force of tests/support/retrieval_support.py
on features read and standardised here, clean and corrupted queries alike; the intervals are the
weighted means under the image bootstrap's draws; the summary ranks the encoders by their signal; the
leaderboard and the report carry it; bad requests fail in one line."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from support.one_model_support import cli
from support.retrieval_support import brute_metrics
from support.synthetic import make_dataset, write_features

from crsbench import Bench
from crsbench.analyses.uncertainty.resample import draw_images, eval_images
from crsbench.features.store import FeatureStore
from crsbench.probes.retrieval.relevance import relevances_for
from crsbench.warehouse.catalog import sync_catalog
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset, read_dataset

SIGNALS = {"weak": 0.2, "strong": 3.0}  # encoder -> class signal in its features
DATASETS = {"derm": ("multiclass", 4), "grade": ("ordinal", 5), "cxr": ("multilabel", 3)}
DEPTHS = (0.5, 1.0)
KS = (1, 5, 10)
REPLICATES = 25


@pytest.fixture(scope="module")
def bench_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("retrieval")
    db = root / "bench.duckdb"
    store = str(root / "bench.duckdb.features.zarr")
    stored = {}
    with Warehouse.open(db) as wh:
        for seed, (name, (task, n_out)) in enumerate(DATASETS.items()):
            load_dataset(wh, make_dataset(name, task, 160, n_out, seed=seed))
            stored[name] = read_dataset(wh, name)
    for name, ds in stored.items():
        for k, (encoder, signal) in enumerate(SIGNALS.items()):
            write_features(store, ds, encoder, 8, seed=k, signal=signal, depths=DEPTHS, chunk_rows=64)
            zarr.open_group(store, mode="a")[f"{name}/{encoder}"].attrs.update(
                {"n_images": ds.n_images, "depths": ["d050", "d100"]}
            )
    with Warehouse.open(db) as wh:
        sync_catalog(wh, FeatureStore(store))
    result = Bench(db).analyze("retrieval", replicates=REPLICATES, seed=3)
    return db, store, stored, result


def _features(store, dataset, encoder, depth_key, condition, rows) -> np.ndarray:
    x = zarr.open_group(store, mode="r")[f"{dataset}/{encoder}/{depth_key}/{condition}"][:]
    return np.asarray(x, dtype=np.float64)[rows]


def _brute_cell(store, ds, encoder, depth_key, condition):
    train, test = ds.split_rows("train"), ds.split_rows("test")
    gallery = _features(store, ds.name, encoder, depth_key, "clean", train)
    mean, std = gallery.mean(axis=0), gallery.std(axis=0)
    scale = np.where(std > 0, std, 1.0)
    queries = (_features(store, ds.name, encoder, depth_key, condition, test) - mean) / scale
    labels = ds.labels.astype(np.int64)
    return {
        r.name: brute_metrics(queries, (gallery - mean) / scale, labels[test], labels[train], r.name, r.graded, KS)
        for r in relevances_for(ds.task)
    }


@pytest.mark.parametrize("condition", ["clean", "gaussian_blur-s2"])
def test_every_stored_metric_equals_the_brute_force(bench_db, condition):
    db, store, stored, _ = bench_db
    with Warehouse.open(db, read_only=True) as wh:
        scores = wh.sql("select * from retrieval_scores where condition = ?", [condition])
    checked = 0
    for name, ds in stored.items():
        for encoder in SIGNALS:
            for depth, key in zip(DEPTHS, ("d050", "d100"), strict=True):
                want = _brute_cell(store, ds, encoder, key, condition)
                cell = scores[(scores.dataset_id == name) & (scores.encoder_id == encoder) & (scores.depth == depth)]
                for relevance, metrics in want.items():
                    for metric, values in metrics.items():
                        row = cell[(cell.relevance == relevance) & (cell.metric == metric)]
                        assert len(row) == 1, (name, encoder, depth, relevance, metric)
                        assert row.value.iloc[0] == pytest.approx(np.nanmean(values), abs=1e-12)
                        assert row.n_queries.iloc[0] == int(np.sum(~np.isnan(values)))
                        checked += 1
    # per cell: a binary relevance has 3 precision@k, 3 recall@k and mAP@R; jaccard 3 precision@k and mAP@R
    assert checked == len(SIGNALS) * len(DEPTHS) * (7 + 2 * 7 + 7 + 4)  # derm, grade (2 relevances), cxr (2)


def test_the_intervals_are_the_bootstrap_draws_weighted_means(bench_db):
    db, store, stored, _ = bench_db
    with Warehouse.open(db, read_only=True) as wh:
        row = wh.sql(
            "select * from retrieval_scores where dataset_id = 'derm' and encoder_id = 'strong' and depth = 1.0 "
            "and condition = 'clean' and metric = 'map@r'"
        ).iloc[0]
        weights = draw_images(eval_images(wh, "derm"), REPLICATES, np.random.default_rng(3)).astype(np.float64)
    values = np.array(_brute_cell(store, stored["derm"], "strong", "d100", "clean")["same_label"]["map@r"])
    means = (values @ weights) / weights.sum(axis=0)
    assert means[0] == pytest.approx(row.value, abs=1e-12)
    lo, hi = np.percentile(means[1:], [2.5, 97.5])
    assert (row.ci_low, row.ci_high) == pytest.approx((lo, hi), abs=1e-12)
    assert row.ci_low < row.value < row.ci_high


def test_the_summary_ranks_the_stronger_signal_first_and_measures_what_corruption_keeps(bench_db):
    db, *_ = bench_db
    with Warehouse.open(db, read_only=True) as wh:
        summary = wh.sql("select * from analysis_retrieval_summary order by dataset_id, retrieval_rank")
        own = wh.sql(
            "select dataset_id, encoder_id, depth, condition, value from retrieval_scores "
            "where primary_relevance and metric = 'map@r'"
        )
    assert list(summary.groupby("dataset_id")["encoder_id"].first()) == ["strong"] * len(DATASETS)
    for r in summary.itertuples():
        cell = own[(own.dataset_id == r.dataset_id) & (own.encoder_id == r.encoder_id) & (own.depth == r.depth)]
        assert (
            r.map_at_r
            == cell[cell.condition == "clean"].value.max()
            == own[
                (own.dataset_id == r.dataset_id) & (own.encoder_id == r.encoder_id) & (own.condition == "clean")
            ].value.max()
        )
        corrupted = cell[cell.condition != "clean"].value
        assert len(corrupted) == 15 and r.map_at_r_corrupted == pytest.approx(corrupted.mean(), abs=1e-12)
        assert r.retained == pytest.approx(r.map_at_r_corrupted / r.map_at_r)
    assert set(summary.relevance) == {"same_label", "any_shared"}


def test_leaderboard_with_retrieval_and_the_report_section(bench_db, tmp_path):
    db, *_ = bench_db
    code, out, err = cli("leaderboard", "--with-retrieval", "--db", str(db))
    assert code == 0, err
    assert "retrieval_rank" in out and "crsbench analyze retrieval" in out
    board = Bench(db).leaderboard(with_retrieval=True).board
    if len(board):
        strong = board[board.encoder_id == "strong"]
        assert strong.retrieval_rank.iloc[0] == 1
    code, _, err = cli("report", "--out", str(tmp_path / "r.html"), "--db", str(db))
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert "Similar-case retrieval" in html and "strong retrieves similar cases best" in html


def test_k_beyond_the_gallery_and_a_bad_k_are_one_line(bench_db):
    db, *_ = bench_db
    code, _, err = cli("analyze", "retrieval", "-d", "derm", "--cutoff", "100000", "--db", str(db))
    assert code == 1 and err.count("\n") == 1, err
    assert "k = 100000 is larger than the gallery (96 train images)" in err
    code, _, err = cli("analyze", "retrieval", "--cutoff", "five", "--db", str(db))
    assert code == 1 and "--cutoff 'five' is not a whole number" in err and err.count("\n") == 1, err

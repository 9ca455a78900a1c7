"""Analysis `screen` (METHODS.md §21) end to end on synthetic feature sets of known signal strength:
its scores equal the estimators on features read and standardised here, its replicate 0 equals the
grid's own seed-mean AUROC, the ranking follows the signal, and bad cells or requests fail with the
line METHODS.md promises."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from support.synthetic import make_dataset, write_features
from typer.testing import CliRunner

from crsbench import Bench
from crsbench.analyses import run_analysis
from crsbench.core import CrsbenchError
from crsbench.features.store import FeatureStore
from crsbench.pipeline.probe import ProbeConfig
from crsbench.probes.screening.registry import estimator_names
from crsbench.probes.screening.score import score_cell
from crsbench.warehouse.catalog import sync_catalog
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset, read_dataset

SIGNALS = {"sig-0": 0.0, "sig-1": 0.5, "sig-2": 1.5, "sig-3": 4.0}  # encoder -> class signal in its features
DEPTHS = (0.5, 1.0)


@pytest.fixture(scope="module")
def bench_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("screen")
    db = root / "bench.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, make_dataset("derm", "multiclass", 240, 3, seed=3))
        ds = read_dataset(wh, "derm")
    store = str(root / "bench.duckdb.features.zarr")
    for k, (encoder, signal) in enumerate(SIGNALS.items()):
        write_features(store, ds, encoder, 12, seed=k, signal=signal, depths=DEPTHS, chunk_rows=64)
        group = zarr.open_group(store, mode="a")[f"derm/{encoder}"]
        group.attrs.update({"n_images": ds.n_images, "depths": ["d050", "d100"]})
    with Warehouse.open(db) as wh:
        sync_catalog(wh, FeatureStore(store))
    config = ProbeConfig(probes=("logreg",), depths=DEPTHS, fractions=(1.0,), seeds=(0, 1))
    Bench(db).probe(list(SIGNALS), ["derm"], config=config)
    report = Bench(db).screen(replicates=30)
    return db, store, ds, report


def _standardised(store: str, encoder: str, depth: str, rows: np.ndarray) -> np.ndarray:
    x = np.asarray(zarr.open_group(store, mode="r")[f"derm/{encoder}/{depth}/clean"][:], dtype=np.float64)[rows]
    std = x.std(axis=0)
    return (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)


def test_scores_equal_the_estimators_on_features_read_here(bench_db):
    db, store, ds, _ = bench_db
    train = ds.split_rows("train")
    with Warehouse.open(db, read_only=True) as wh:
        scores = wh.sql("select * from screen_scores")
    assert len(scores) == len(SIGNALS) * len(DEPTHS) * len(estimator_names())
    for encoder in SIGNALS:
        for depth, key in zip(DEPTHS, ("d050", "d100"), strict=True):
            want = score_cell(_standardised(store, encoder, key, train), ds.labels[train], ds.task, 3)
            got = scores[(scores.encoder_id == encoder) & (scores.depth == depth)].set_index("estimator")["score"]
            for name, value in want.items():
                assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-12), (encoder, depth, name)
    assert set(scores.n_train) == {len(train)} and not scores.pretrained.any()


def test_replicate_zero_is_the_grid_seed_mean_auroc(bench_db):
    db, *_ = bench_db
    with Warehouse.open(db, read_only=True) as wh:
        both = wh.sql(
            "select r.auroc, m.auroc_mean from screen_replicates r join metrics_seed m "
            "on m.encoder_id = r.encoder_id and m.dataset_id = r.dataset_id and m.depth = r.depth "
            "where r.replicate = 0 and m.probe = 'logreg' and m.condition = 'clean' and m.label_fraction = 1.0 "
            "and m.eval_dataset_id = m.dataset_id"
        )
        n_reps = wh.sql("select count(distinct replicate) as n from screen_replicates").n[0]
    assert len(both) == len(SIGNALS) * len(DEPTHS) and n_reps == 31
    np.testing.assert_allclose(both.auroc, both.auroc_mean, rtol=0, atol=1e-12)


def test_the_ranking_follows_the_signal_and_the_trust_says_so(bench_db):
    *_, report = bench_db
    per_dataset = report.ranking[report.ranking.scope == "derm"].set_index("encoder_id")
    assert per_dataset.loc["sig-3", "screen_rank"] == 1 and per_dataset.loc["sig-0", "screen_rank"] == len(SIGNALS)
    assert report.dropped == ["sig-0"]  # keep 3 of 4
    trust = report.trust[(report.trust.target == "auroc") & (report.trust.depth == 1.0)]
    assert (trust.tau > 0).all() and len(report.verdicts) == 1 and report.verdicts[0].startswith("derm: knn_loo")


def test_a_cell_with_non_finite_features_is_noted_and_writes_nothing(bench_db, tmp_path):
    db, store, ds, _ = bench_db
    array = zarr.open_group(store, mode="a")["derm/sig-1/d050/clean"]
    saved = array[:]
    try:
        broken = saved.copy()
        broken[ds.split_rows("train")[0]] = np.nan
        array[:] = broken
        with Warehouse.open(db, read_only=True) as wh:
            result = run_analysis(wh, "screen", {"replicates": 0}, store=False)
    finally:
        array[:] = saved
    cells = result.tables["screen_scores"]
    assert cells[(cells.encoder_id == "sig-1") & (cells.depth == 0.5)].empty
    assert len(cells[(cells.encoder_id == "sig-1") & (cells.depth == 1.0)]) == len(estimator_names())
    assert any(n.startswith("encoder sig-1 on dataset derm at depth 0.5: ") and "NaN" in n for n in result.notes)


def test_bad_requests_fail_with_one_line_naming_what_to_do(bench_db):
    db, *_ = bench_db
    with pytest.raises(CrsbenchError, match=r"crsbench extract --screen --encoder nope --dataset derm"):
        Bench(db).screen(encoders=["nope"])
    with pytest.raises(CrsbenchError, match=r"--rank-by 'vibes' is not a registered estimator \(registered: .*knn_loo"):
        Bench(db).screen(rank_by="vibes")
    with pytest.raises(CrsbenchError, match="--keep 0"):
        Bench(db).screen(keep=0)


def test_the_command_prints_rankings_drops_and_verdicts(bench_db):
    from crsbench.cli import app

    db, *_ = bench_db
    out = CliRunner().invoke(app, ["screen", "--db", str(db), "--replicates", "20"])
    assert out.exit_code == 0, out.output
    assert "pre-screen on derm (by knn_loo" in out.output
    assert "the pre-screen would drop: sig-0." in out.output
    assert "derm: knn_loo ranks 4 encoders with Kendall tau" in out.output
    assert "random-init" in out.output


def test_progress_hears_of_every_cell(bench_db):
    db, *_ = bench_db
    heard: list[tuple[str, int, int]] = []
    # the fixture's own call again (deterministic): the stored tables other tests read stay as they were
    Bench(db).screen(replicates=30, progress=lambda d, done, total: heard.append((d, done, total)))
    cells = len(SIGNALS) * len(DEPTHS)
    assert heard == [("pre-screen derm", k, cells) for k in range(cells + 1)]

"""`crsbench successor` / `Bench.successor` on an unlabelled folder: agreement only, with the
random-init floor; every bad input is one line, exit 1, and nothing is written."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from PIL import Image
from support.synthetic import write_features

from crsbench.analyses.agreement.successor import SuccessorOptions
from crsbench.bench import Bench
from crsbench.cli import main
from crsbench.features.store import FeatureStore
from crsbench.ingest import ingest
from crsbench.warehouse.catalog import sync_catalog
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset, read_dataset
from tests.analyses.test_agreement import brute_overlap, catalogued, closed_form_cka

ENCODERS = {"cur": (12, 0, True), "cand": (10, 1, True), "rand": (8, 2, False)}  # dim, seed, pretrained


@pytest.fixture(scope="module")
def unlabelled(tmp_path_factory):
    root = tmp_path_factory.mktemp("successor")
    images = root / "images"
    images.mkdir()
    rng = np.random.default_rng(0)
    for i in range(30):
        Image.fromarray((rng.random((8, 8, 3)) * 255).astype("uint8")).save(images / f"im{i:02d}.png")
    db = root / "w.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, ingest("folder", images, "scans", unlabeled=True))
        ds = read_dataset(wh, "scans")
    store = str(root / "w.duckdb.features.zarr")
    for enc, (dim, seed, pretrained) in ENCODERS.items():
        write_features(store, ds, enc, dim, seed=seed, depths=(1.0,), chunk_rows=16, pretrained=pretrained)
        catalogued(store, ds, enc)
    with Warehouse.open(db) as wh:
        sync_catalog(wh, FeatureStore(store))
    return db, store


def _x(store: str, encoder: str) -> np.ndarray:
    import zarr

    return np.asarray(zarr.open_group(store, mode="r")[f"scans/{encoder}/d100/clean"][:], dtype=np.float64)


def test_successor_on_an_unlabelled_folder(unlabelled, capsys):
    db, store = unlabelled
    report = Bench(db).successor("cur", "cand", options=SuccessorOptions(k=5, replicates=200))
    (row,) = report.table.to_dict("records")
    assert row["mutual_knn"] == brute_overlap(_x(store, "cur"), _x(store, "cand"), 5)
    assert row["random_init"] == brute_overlap(_x(store, "cur"), _x(store, "rand"), 5)
    assert row["chance"] == 5 / 29 and row["lo"] <= row["mutual_knn"] <= row["hi"]
    assert row["cka"] == pytest.approx(closed_form_cka(_x(store, "cur"), _x(store, "cand")), abs=1e-9)
    assert row["retention"] is None  # no labels: agreement only
    assert main(["successor", "--current", "cur", "--candidate", "cand", "--k", "5", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "scans: cand returns " in out and "of cur's 5 nearest neighbours" in out and "random-init" in out
    assert "linear map" not in out
    # Random features: the interval reaches the random-init floor, and the reading says so.
    assert row["lo"] <= row["random_init"]
    assert "it agrees with cur no more than a random network does" in " ".join(out.split())


ROW = {"dataset_id": "d", "k": 10, "mutual_knn": 0.5, "lo": 0.4, "hi": 0.6, "chance": 0.05, "cka": 0.7}


@pytest.mark.parametrize(
    ("changes", "said", "unsaid"),
    [
        ({"random_init": 0.45}, "no more than a random network", "no more than chance"),
        ({"random_init": 0.2}, "(95 % CI 0.400-0.600; chance 0.050; random-init 0.200); CKA", "no more than"),
        ({"random_init": None, "lo": 0.04}, "no more than chance", "random network"),
        (
            {"random_init": None, "retention": 1.108, "retention_lo": 1.02, "retention_hi": 1.19},
            "keeps 1.108 of cur's AUROC (95 % CI 1.020-1.190); above 1: cur's own probe scores better on "
            "the candidate's features mapped into cur's space",
            "within noise",
        ),
        (
            {"random_init": None, "retention": 1.01, "retention_lo": 0.97, "retention_hi": 1.05},
            "above 1 but within noise of 1",
            "scores better",
        ),
        ({"random_init": None, "retention": 0.9, "retention_lo": 0.85, "retention_hi": 0.95}, "keeps 0.900", "above 1"),
    ],
)
def test_the_reading_says_what_the_numbers_mean(changes, said, unsaid):
    from crsbench.analyses.agreement.successor import reading

    text = reading("cur", "cand", {**ROW, "retention": None, **changes})
    assert said in text and unsaid not in text


def test_every_bad_input_is_one_line_exit_1_and_writes_nothing(unlabelled, capsys):
    db, _ = unlabelled
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    base = ["successor", "--db", str(db)]
    cases = [
        (
            ["--current", "cur", "--candidate", "other", "-d", "scans"],
            "encoder other has no complete features on dataset 'scans' (encoders with features there: cand, cur, rand)",
        ),
        (["--current", "cur", "--candidate", "other"], "encoder other has no complete features on any dataset"),
        (["--current", "cur", "--candidate", "cand", "--k", "30"], "k = 30 is not below the 30 images"),
        (["--current", "cur", "--candidate", "cand", "--k", "20"], "has 30 images, fewer than 2k = 40"),
        (["--current", "cur", "--candidate", "cur"], "--candidate cur is the --current encoder"),
        (
            ["--current", "cur", "--candidate", "cand", "--transfer"],
            "has no labels, so there is no probe to transfer; agreement (mutual k-NN, CKA) still works without labels",
        ),
        (["--current", "cur", "--candidate", "cand", "--depth", "0.5"], "depth 0.5 was not extracted for encoder cur"),
    ]
    for args, message in cases:
        assert main([*base, *args]) == 1, args
        err = capsys.readouterr().err.strip()
        assert message in err and "\n" not in err, (args, err)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before

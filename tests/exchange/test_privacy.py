"""A default bundle carries no image id, path, per-image prediction, embedding or label, and does not
grow with the number of test images beyond the replicate vectors (docs/METHODS.md §22.1)."""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest
from support.bootstrap_support import build_world
from support.exchange_support import entries, part
from support.synthetic import make_dataset

from crsbench.bench import Bench
from crsbench.warehouse.connection import Warehouse

FORBIDDEN = {"image_id", "rel_path", "path", "sha256", "group_id", "row_index", "probs", "prob", "y_true", "y_pred",
             "label", "labels", "label_idx", "value", "embedding", "features", "run_id", "fit_id"}  # fmt: skip


def _world(folder, n):
    datasets = {
        "derm": make_dataset("derm", "multiclass", n, 4, seed=11, split_share=(0.4, 0.1)),
        "cxr": make_dataset("cxr", "multilabel", n, 3, seed=12, split_share=(0.4, 0.1)),
    }
    return build_world(folder, datasets=datasets)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory):
    out = {}
    for n in (400, 1600):
        folder = tmp_path_factory.mktemp(f"n{n}")
        db = _world(folder, n)
        Bench(db).results_export("bp", "site", folder / "b.zip", replicates=20)
        out[n] = (db, folder / "b.zip")
    return out


def test_no_file_of_a_default_bundle_holds_an_image_id_path_prediction_embedding_or_label(bundles):
    db, bundle = bundles[400]
    files = entries(bundle)
    assert set(files) == {
        "manifest.json",
        *(f"{p}.parquet" for p in ("runs", "cells", "scores", "anchors", "replicates")),
    }
    with Warehouse.open(db, read_only=True) as wh:
        images = wh.sql("select image_id, rel_path from images")
    blob = b"".join(files.values())
    for name, data in files.items():
        if name.endswith(".parquet"):
            columns = set(pq.read_table(io.BytesIO(data)).column_names)
            assert not columns & FORBIDDEN, (name, columns & FORBIDDEN)
    manifest = json.loads(files["manifest.json"])
    assert not manifest["includes_predictions"]
    for image_id, rel_path in images.sample(50, random_state=0).itertuples(index=False):
        assert image_id.encode() not in blob and str(rel_path).encode() not in blob


def test_the_bundle_does_not_grow_with_the_test_images(bundles):
    small, large = bundles[400][1], bundles[1600][1]
    for name in ("runs", "cells", "scores", "anchors", "replicates"):
        assert len(part(small, name)) == len(part(large, name)), name
    with Warehouse.open(bundles[1600][0], read_only=True) as wh:
        assert wh.sql("select count(*) as n from images")["n"][0] == 3200  # four times the images
    assert large.stat().st_size < 1.25 * small.stat().st_size


def test_include_predictions_adds_them_and_says_what_it_added(bundles, tmp_path):
    db, _ = bundles[400]
    summary = Bench(db).results_export("bp", "site", tmp_path / "p.zip", include_predictions=True, replicates=5)
    assert summary.added_by_predictions and "image ids" in summary.added_by_predictions
    with Warehouse.open(db, read_only=True) as wh:
        n = wh.sql("select count(*) as n from predictions")["n"][0]
    assert len(part(tmp_path / "p.zip", "predictions")) == n

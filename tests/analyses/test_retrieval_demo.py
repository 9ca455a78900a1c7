"""Analysis `retrieval` on the real demo (METHODS.md §24): on a copy of a demo that just finished, every
stored metric of every encoder, dataset (multiclass, ordinal, multilabel) and depth, clean and corrupted,
equals the brute force of tests/support/retrieval_support.py to 1e-12.

`make demo-check` (run by CI after the tests) runs it with CRSBENCH_DEMO_OUT naming the demo's folder;
without it the test is skipped, as tests/cli/test_demo_clean.py is."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr
from support.retrieval_support import brute_metrics

from crsbench import Bench
from crsbench.probes.retrieval.relevance import relevances_for
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import read_dataset

pytestmark = pytest.mark.demo
CONDITIONS = ("clean", "jpeg-s3")
KS = (1, 5, 10)


@pytest.fixture(scope="module")
def demo_copy(tmp_path_factory) -> Path:
    """A copy of the demo's warehouse and feature store, so the demo itself stays as it finished."""
    out = Path(os.environ["CRSBENCH_DEMO_OUT"])
    copy = tmp_path_factory.mktemp("demo-retrieval")
    for name in ("crsbench.duckdb", "crsbench.duckdb.features.zarr", "crsbench.duckdb.parts"):
        source = out / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, copy / name)
    Bench(copy / "crsbench.duckdb").analyze("retrieval", replicates=0)
    return copy


def test_retrieval_on_the_demo_equals_the_brute_force(demo_copy):
    db = demo_copy / "crsbench.duckdb"
    store = zarr.open_group(str(demo_copy / "crsbench.duckdb.features.zarr"), mode="r")
    with Warehouse.open(db, read_only=True) as wh:
        scores = wh.sql("select * from retrieval_scores")
        datasets = {d: read_dataset(wh, d) for d in sorted(scores.dataset_id.unique())}
    assert len(datasets) == 4 and scores.encoder_id.nunique() == 6
    checked = 0
    for name, ds in datasets.items():
        train, test = ds.split_rows("train"), ds.split_rows("test")
        labels = ds.labels.astype(np.int64)
        for (encoder, depth), cell in scores[scores.dataset_id == name].groupby(["encoder_id", "depth"]):
            key = f"d{round(depth * 100):03d}"
            gallery = np.asarray(store[f"{name}/{encoder}/{key}/clean"][:], dtype=np.float64)[train]
            mean, std = gallery.mean(axis=0), gallery.std(axis=0)
            scale = np.where(std > 0, std, 1.0)
            for condition in CONDITIONS:
                raw = np.asarray(store[f"{name}/{encoder}/{key}/{condition}"][:], dtype=np.float64)[test]
                for r in relevances_for(ds.task):
                    want = brute_metrics((raw - mean) / scale, (gallery - mean) / scale, labels[test], labels[train],
                                         r.name, r.graded, KS)  # fmt: skip
                    got = cell[(cell.condition == condition) & (cell.relevance == r.name)].set_index("metric")
                    for metric, values in want.items():
                        assert got.loc[metric, "value"] == pytest.approx(np.nanmean(values), abs=1e-12), (
                            name, encoder, depth, condition, r.name, metric)  # fmt: skip
                        checked += 1
    assert checked > 1000

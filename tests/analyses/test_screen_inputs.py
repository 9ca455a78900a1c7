"""What the pre-screen reads (crsbench.analyses.screening.inputs): the train rows standardised as
numpy standardises them, read a block at a time, with no second whole copy of the rows in memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import zarr
from support.synthetic import make_dataset, write_features

from crsbench.analyses.agreement.inputs import FeatureSource
from crsbench.analyses.screening import inputs
from crsbench.features.store import FeatureStore

N, D, BLOCK = 20_000, 24, 1_000


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("screen-inputs")
    ds = make_dataset("big", "multiclass", N, 3, seed=4)
    store = str(root / "features.zarr")
    ref = write_features(store, ds, "enc", D, depths=(1.0,), chunk_rows=1024)
    group = zarr.open_group(store, mode="a")[ref.path]
    group.attrs.update({"n_images": ds.n_images, "depths": ["d100"]})
    return FeatureSource("enc", FeatureStore(store), ref, ("d100",), False), store, ref, ds


def test_standardised_train_equals_numpy_on_the_rows_read_whole(source, monkeypatch):
    monkeypatch.setattr(inputs, "READ_ROWS", BLOCK)  # several blocks, the last one short
    src, store, ref, ds = source
    rows = ds.split_rows("train")
    got = inputs.standardised_train(src, "d100", rows)
    raw = np.asarray(zarr.open_group(store, mode="r")[f"{ref.path}/d100/clean"][:], dtype=np.float64)[rows]
    want = (raw - raw.mean(axis=0)) / raw.std(axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert got.shape == (len(rows), D) and len(rows) > 3 * BLOCK


def test_standardised_train_holds_one_copy_of_the_rows_and_one_block(source, monkeypatch):
    monkeypatch.setattr(inputs, "READ_ROWS", BLOCK)
    src, _, _, ds = source
    rows = ds.split_rows("train")
    inputs.standardised_train(src, "d100", rows)  # warm: the store's metadata and dask's imports
    tracemalloc.start()
    try:
        x = inputs.standardised_train(src, "d100", rows)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The result plus a few blocks in flight (decoded float16, its float64 copy, the finite check);
    # reading the rows whole, or numpy's std on them, adds a second copy of x.
    # Measured: x + 3 blocks; reading whole and numpy's std measured x + 12 blocks here.
    assert peak < x.nbytes + 4 * BLOCK * D * 8 + 2**18, (peak, x.nbytes)

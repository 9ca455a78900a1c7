"""Fixtures of the distributed-extraction tests: the suite's ISIC at scale 0.05 (80 images, five
row chunks), its local extraction, a moto S3 bucket and a LocalCluster of two worker processes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.dist_support import ENCODER, N_CHUNKS, OPTIONS
from support.scale_support import BUCKET, moto_server, s3_environment

from crsbench.features.extraction import extract
from crsbench.features.lookup import get_encoder
from crsbench.features.store import FeatureStore
from crsbench.ingest import Dataset, ingest, make_suite


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("dist-suite")
    make_suite(root, scale=0.05, image_size=32, seed=0)
    ds = ingest("isic2019", root / "isic2019", "isic2019")
    assert -(-ds.n_images // OPTIONS.chunk_rows) == N_CHUNKS
    return ds


@pytest.fixture(scope="module")
def local_store(tmp_path_factory: pytest.TempPathFactory, dataset: Dataset) -> FeatureStore:
    store = FeatureStore(str(tmp_path_factory.mktemp("dist-local") / "features.zarr"))
    extract(dataset, get_encoder(ENCODER), store, OPTIONS)
    return store


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with moto_server(tmp_path_factory.mktemp("moto") / "moto.log") as endpoint, s3_environment(endpoint):
        yield f"s3://{BUCKET}"


@pytest.fixture(scope="module")
def cluster(s3: str) -> Iterator[str]:
    from distributed import LocalCluster

    with LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None) as lc:
        yield lc.scheduler_address

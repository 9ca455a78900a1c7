"""Extraction over dask.distributed (`extract --scheduler`): a LocalCluster of two CPU worker
processes writing a moto S3 store. The stored bytes equal a local run's; a killed worker loses and
duplicates nothing; two clients on one set compute each chunk once (counted); bad setups fail
before any chunk starts, with one line naming the cause."""

from __future__ import annotations

import functools
import http.server
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import zarr
from support.scale_support import BUCKET, free_port, moto_server, s3_environment

from crsbench.core import CrsbenchError
from crsbench.features.extract_options import ExtractOptions
from crsbench.features.extraction import extract
from crsbench.features.extraction_dist import check_worker, models_built, probe_path
from crsbench.features.lookup import get_encoder
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.ingest import Dataset, ingest, make_suite
from crsbench.pipeline.extract_dist import ClusterExtraction, claims_url

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ENCODER = "tiny-resnet18"
OPTIONS = ExtractOptions(batch_size=8, chunk_rows=16, threads=1)
N_CHUNKS = 5  # 80 images at scale 0.05


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


def _arrays(store: FeatureStore, ref: FeatureSetRef) -> dict[str, bytes]:
    group = store.group(ref)
    out: dict[str, bytes] = {}

    def visit(node: zarr.Group, prefix: str) -> None:
        for name, child in node.members():
            if isinstance(child, zarr.Group):
                visit(child, f"{prefix}{name}/")
            else:
                out[prefix + name] = np.ascontiguousarray(child[:]).tobytes()

    visit(group, "")
    return out


def _assert_same_bytes(local: FeatureStore, remote: FeatureStore, ref: FeatureSetRef) -> None:
    want, got = _arrays(local, ref), _arrays(remote, ref)
    assert sorted(got) == sorted(want) and len(want) > 4 * 16
    assert [name for name in want if got[name] != want[name]] == []
    assert remote.attrs(ref)["complete"] is True


def _leftover_claims(store_url: str, ref: FeatureSetRef) -> list[str]:
    import fsspec

    fs, root = fsspec.core.url_to_fs(claims_url(store_url, ref) + "/claims")
    return [p for p in fs.ls(root, detail=False) if "/.clock-" not in p] if fs.exists(root) else []


def test_stored_bytes_equal_a_local_run_and_each_worker_builds_once(cluster, s3, dataset, local_store):
    from distributed import Client

    url = f"{s3}/equal/features.zarr"
    ref = FeatureSetRef(dataset.name, ENCODER)
    with ClusterExtraction(cluster, OPTIONS) as cx:
        attrs = cx.extract(dataset, get_encoder(ENCODER), url)
        again = cx.extract(dataset, get_encoder(ENCODER), url)
    assert attrs["skipped"] is False and sorted(cx.computed) == list(range(N_CHUNKS))
    assert again["skipped"] is True
    _assert_same_bytes(local_store, FeatureStore(url), ref)
    assert _leftover_claims(url, ref) == []
    with Client(cluster) as client:  # one model per worker process, whatever the chunks it ran
        built = client.run(models_built)
    assert set(built.values()) <= {0, 1} and sum(built.values()) >= 1, built


def test_two_clients_on_one_set_compute_each_chunk_once(cluster, s3, dataset, local_store):
    url = f"{s3}/two/features.zarr"
    ref = FeatureSetRef(dataset.name, ENCODER)
    clients = [ClusterExtraction(cluster, OPTIONS) for _ in range(2)]
    errors: list[BaseException] = []

    def run(cx: ClusterExtraction) -> None:
        try:
            cx.extract(dataset, get_encoder(ENCODER), url)
        except BaseException as exc:  # re-raised below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(cx,)) for cx in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for cx in clients:
        cx.close()
    assert errors == []
    counted = clients[0].computed + clients[1].computed
    assert sorted(counted) == list(range(N_CHUNKS)), counted  # no chunk computed twice, none left out
    _assert_same_bytes(local_store, FeatureStore(url), ref)
    assert _leftover_claims(url, ref) == []


def test_a_worker_without_the_weights_fails_before_any_chunk(cluster, s3, dataset, tmp_path):
    url = f"{s3}/noweights/features.zarr"
    missing = tmp_path / "absent" / "tiny.safetensors"
    started = time.monotonic()
    with (
        ClusterExtraction(cluster, ExtractOptions(chunk_rows=16, weights=missing)) as cx,
        pytest.raises(CrsbenchError, match=r"^worker tcp://127\.0\.0\.1:\d+: weights: .*absent"),
    ):
        cx.extract(dataset, get_encoder(ENCODER), url)
    assert time.monotonic() - started < 20
    assert cx.computed == []
    assert not FeatureStore(url).root(writable=True).__contains__(dataset.name)  # nothing written


def test_cuda_without_a_gpu_worker_is_one_line(cluster, s3, dataset):
    with (
        ClusterExtraction(cluster, ExtractOptions(device="cuda")) as cx,
        pytest.raises(CrsbenchError, match=r"--device cuda, but no worker of tcp://\S+ has the GPU resource"),
    ):
        cx.extract(dataset, get_encoder(ENCODER), f"{s3}/cuda/features.zarr")


def test_a_store_the_workers_do_not_share_is_refused(cluster, dataset):
    # memory:// lives in this process only: the workers cannot read the client's probe file.
    with (
        ClusterExtraction(cluster, OPTIONS) as cx,
        pytest.raises(CrsbenchError, match=r"^worker tcp://\S+: the store memory://local\.zarr is not shared"),
    ):
        cx.extract(dataset, get_encoder(ENCODER), "memory://local.zarr")


def test_an_unreachable_scheduler_fails_within_the_timeout():
    address = f"tcp://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(CrsbenchError, match=rf"cannot reach the dask scheduler at {address} within 1 s"):
        ClusterExtraction(address, OPTIONS, timeout_s=1.0)
    assert time.monotonic() - started < 10


def test_a_store_a_worker_can_read_but_not_write_is_named(tmp_path):
    # A read-only http:// view of a folder: the probe file is readable, the reply cannot be written.
    token = "t0ken"
    Path(probe_path(str(tmp_path / "features.zarr"), token)).write_text(token)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/features.zarr"
        reason = check_worker(get_encoder(ENCODER), OPTIONS, url, token, "w0")
    finally:
        server.shutdown()
    assert reason.startswith(f"cannot write the store {url} from this worker")


def test_the_cli_extracts_over_the_cluster_and_catalogs_the_set(cluster, s3, dataset, local_store, tmp_path, capsys):
    import json

    from crsbench.cli import main
    from crsbench.output import console
    from crsbench.warehouse.connection import Warehouse
    from crsbench.warehouse.datasets import load_dataset

    db = tmp_path / "crsbench.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, dataset)
    url = f"{s3}/cli/features.zarr"
    args = ["extract", "-e", ENCODER, "-d", dataset.name, "--store", url, "--db", str(db), "--chunk-rows", "16"]
    console.configure(json_mode=True)
    try:
        code = main(["--json", *args, "--batch-size", "8", "--threads", "1", "--scheduler", cluster])
    finally:
        console.configure()
    assert code == 0
    rows = json.loads(capsys.readouterr().out)["feature_sets"]
    assert [r["status"] for r in rows] == [f"extracted ({N_CHUNKS} of {N_CHUNKS} chunks here)"]
    with Warehouse.open(db, read_only=True) as wh:
        stored = wh.sql("select count(*) as n from feature_sets where encoder_id = ?", [ENCODER])["n"].iloc[0]
    assert stored == 1
    _assert_same_bytes(local_store, FeatureStore(url), FeatureSetRef(dataset.name, ENCODER))
    bad = main([*args, "--scheduler", f"tcp://127.0.0.1:{free_port()}"])  # exit 1, one line
    assert bad == 1
    assert "cannot reach the dask scheduler at tcp://127.0.0.1:" in capsys.readouterr().err


def test_a_killed_worker_loses_and_duplicates_nothing(cluster, s3, dataset, local_store):
    # Last in the file: it kills one of the module cluster's workers (its nanny restarts it).
    from distributed import Client

    url = f"{s3}/killed/features.zarr"
    ref = FeatureSetRef(dataset.name, ENCODER)
    killed: dict[str, object] = {}
    with Client(cluster) as client, ClusterExtraction(cluster, OPTIONS) as cx:

        def kill_a_busy_worker(what: str, done: int, total: int) -> None:
            if killed or done == 0 or done >= total:
                return
            busy = {w: keys for w, keys in client.processing().items() if keys}
            if busy:
                worker = sorted(busy)[0]
                pid = client.run(os.getpid, workers=[worker])[worker]
                os.kill(pid, signal.SIGKILL)  # a worker process this test's cluster started
                killed.update(worker=worker, tasks=list(busy[worker]))

        cx.extract(dataset, get_encoder(ENCODER), url, progress=kill_a_busy_worker)
    assert killed, "no worker was busy after the first chunk; nothing was killed"
    assert sorted(cx.computed) == list(range(N_CHUNKS))  # each chunk claimed and counted once
    _assert_same_bytes(local_store, FeatureStore(url), ref)
    assert _leftover_claims(url, ref) == []

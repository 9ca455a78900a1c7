"""Extraction over dask.distributed (`extract --scheduler`): a LocalCluster of two CPU worker
processes writing a moto S3 store. The stored bytes equal a local run's; a killed worker loses and
duplicates nothing; bad setups fail before any chunk starts, with one line naming the cause. Two
clients on one set, repeated failures, the GPU resource and complete sets:
test_distributed_protocol.py."""

from __future__ import annotations

import functools
import http.server
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from support.dist_support import ENCODER, N_CHUNKS, OPTIONS, assert_same_bytes, leftover_claims
from support.scale_support import free_port

from crsbench.core import CrsbenchError
from crsbench.features.extract_options import ExtractOptions
from crsbench.features.extraction_cluster import ClusterExtraction
from crsbench.features.extraction_dist import check_worker, models_built, probe_path
from crsbench.features.lookup import get_encoder
from crsbench.features.store import FeatureSetRef, FeatureStore

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.slow]


def test_stored_bytes_equal_a_local_run_and_each_worker_builds_once(cluster, s3, dataset, local_store):
    from distributed import Client

    url = f"{s3}/equal/features.zarr"
    ref = FeatureSetRef(dataset.name, ENCODER)
    with ClusterExtraction(cluster, OPTIONS) as cx:
        attrs = cx.extract(dataset, get_encoder(ENCODER), url)
        again = cx.extract(dataset, get_encoder(ENCODER), url)
    assert attrs.skipped is False and sorted(cx.computed) == list(range(N_CHUNKS))
    assert again.skipped is True
    assert_same_bytes(local_store, FeatureStore(url), ref)
    assert leftover_claims(url, ref) == []
    with Client(cluster) as client:  # one model per worker process, whatever the chunks it ran
        built = client.run(models_built)
    assert set(built.values()) <= {0, 1} and sum(built.values()) >= 1, built


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
    from crsbench.cli.output import console
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
    assert_same_bytes(local_store, FeatureStore(url), FeatureSetRef(dataset.name, ENCODER))
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
    assert_same_bytes(local_store, FeatureStore(url), ref)
    assert leftover_claims(url, ref) == []


def test_the_cluster_completes_a_set_screened_here_to_the_local_bytes(cluster, s3, dataset, local_store):
    # `--screen` runs on one machine (extract refuses it with --scheduler); a distributed plain run
    # may complete such a set: its workers recompute the clean part to the same bytes, and the
    # screening marker array and attribute are gone once the set is complete.
    from crsbench.features.extraction import extract

    url = f"{s3}/screened/features.zarr"
    ref = FeatureSetRef(dataset.name, ENCODER)
    screened = extract(dataset, get_encoder(ENCODER), url, OPTIONS, screen=True)
    assert screened.stored.screened and not screened.stored.complete
    with ClusterExtraction(cluster, OPTIONS) as cx:
        done = cx.extract(dataset, get_encoder(ENCODER), url)
    assert done.stored.complete and "screened" not in FeatureStore(url).attrs(ref)
    assert_same_bytes(local_store, FeatureStore(url), ref)

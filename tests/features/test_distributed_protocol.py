"""The protocol of distributed extraction beyond the happy path: two `crsbench extract --scheduler`
OS processes on one set, a chunk that fails three times, the GPU resource request, and complete
sets (their weights checked before a skip; `--repair` over the cluster).

Chunk executions are counted on the workers (`extraction_dist.chunk_runs`), independently of
what each client reports about itself."""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest
import torch
from support.dist_support import ENCODER, N_CHUNKS, OPTIONS, assert_same_bytes, leftover_claims

from crsbench.core import CrsbenchError
from crsbench.core.claims import MARKER_PREFIX, FileClaims
from crsbench.features.extraction import extract
from crsbench.features.extraction_cluster import GROUP_CLAIM, ClusterExtraction, claims_url
from crsbench.features.extraction_dist import chunk_runs
from crsbench.features.loaders import build_model
from crsbench.features.lookup import get_encoder
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.ingest import Dataset

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.slow]

EIGHT = dataclasses.replace(OPTIONS, chunk_rows=8)  # ten chunks: room for two clients to split them


def _runs(cluster: str, url: str) -> list[tuple[int, str]]:
    """(chunk, outcome) of every chunk task the workers ran for stores at `url`, sorted."""
    from distributed import Client

    with Client(cluster) as client:
        logs = client.run(chunk_runs)
    return sorted((k, outcome) for log in logs.values() for store, _, k, outcome in log if store == url)


@pytest.fixture(scope="module")
def local_eight(tmp_path_factory: pytest.TempPathFactory, dataset: Dataset) -> FeatureStore:
    store = FeatureStore(str(tmp_path_factory.mktemp("dist-local8") / "features.zarr"))
    extract(dataset, get_encoder(ENCODER), store, EIGHT)
    return store


def _sweeps(claims: FileClaims) -> int:
    """How many clients (sweeps) hold `claims`' folder open, `claims` included."""
    claims.fs.invalidate_cache(claims.folder)  # s3fs keeps a listing until this process writes beside it
    return sum(1 for p in claims.fs.ls(claims.folder, detail=False) if p.rsplit("/", 1)[-1].startswith(MARKER_PREFIX))


def test_two_extract_processes_on_one_set_compute_each_chunk_once(cluster, s3, dataset, local_eight, tmp_path):
    from crsbench.warehouse.connection import Warehouse
    from crsbench.warehouse.datasets import load_dataset

    url = f"{s3}/processes/features.zarr"
    ref = FeatureSetRef(dataset.name, ENCODER)
    db = tmp_path / "crsbench.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, dataset)
    argv = [sys.executable, "-m", "crsbench.cli", "--json", "extract", "-e", ENCODER, "-d", dataset.name]
    argv += ["--store", url, "--db", str(db), "--chunk-rows", "8", "--batch-size", "8", "--threads", "1"]
    argv += ["--scheduler", cluster]
    # The test holds the set's open claim until both processes wait at it, so they reach the
    # chunks together; the claim files are the processes' own sweep markers.
    with FileClaims(claims_url(url, ref)) as gate:
        assert gate.acquire([GROUP_CLAIM])
        procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        deadline = time.monotonic() + 120
        while _sweeps(gate) < 3:
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), [
                p.communicate() for p in procs
            ]
            time.sleep(0.2)
        gate.release([GROUP_CLAIM])
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    statuses = [json.loads(out)["feature_sets"][0]["status"] for out, _ in outs]
    here = [int(s.split("(")[1].split()[0]) for s in statuses]  # "extracted (K of 10 chunks here)"
    assert sum(here) == 10 and min(here) >= 1, statuses  # both computed, and together each chunk once
    assert _runs(cluster, url) == [(k, "written") for k in range(10)]  # what the workers ran
    assert_same_bytes(local_eight, FeatureStore(url), ref)
    assert leftover_claims(url, ref) == []
    with Warehouse.open(db, read_only=True) as wh:  # both recorded the one set, idempotently
        assert wh.sql("select count(*) as n from feature_sets")["n"].iloc[0] == 1


def _spoil_one_image(dataset: Dataset, root: Path, row: int) -> Dataset:
    """A copy of the dataset whose image at `row` no longer has the bytes ingest hashed."""
    shutil.copytree(dataset.root, root)
    path = root / str(dataset.images["rel_path"].iloc[row])
    path.write_bytes(path.read_bytes()[:-7] + b"spoiled")
    return dataclasses.replace(dataset, root=root)


def test_a_chunk_that_fails_three_times_stops_the_run_naming_it(cluster, s3, dataset, tmp_path):
    spoiled = _spoil_one_image(dataset, tmp_path / "isic", row=20)  # row 20: chunk 1 of five
    url = f"{s3}/fails/features.zarr"
    ref = FeatureSetRef(dataset.name, ENCODER)
    with (
        ClusterExtraction(cluster, OPTIONS) as cx,
        pytest.raises(CrsbenchError) as err,
    ):
        cx.extract(spoiled, get_encoder(ENCODER), url)
    message = str(err.value)
    assert message.startswith(f"row chunk 1 of feature set {ref.path} failed 3 times on the cluster: InputError: ")
    assert "\n" not in message and str(dataset.images["rel_path"].iloc[20]) in message
    assert [r for r in _runs(cluster, url) if r[0] == 1] == [(1, "failed: InputError")] * 3
    assert 1 not in cx.computed  # the client never counted the failed chunk as written
    assert not FeatureStore(url).is_complete(ref)  # and the set was not completed without it
    assert leftover_claims(url, ref) == []  # the failed chunk's claim and the cancelled ones released


@pytest.fixture
def gpu_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """A scheduler with two in-process workers: 'gpu' (2 threads, resource GPU=1) and 'cpu' (none).

    This machine has no CUDA device, so the workers' device resolution maps cuda to the CPU: what
    is tested is the scheduling (which worker, how many at once), not the device."""
    from distributed import Scheduler, SpecCluster, Worker

    import crsbench.features.extraction_dist as worker_side

    monkeypatch.setattr(worker_side, "resolve_device", lambda device: torch.device("cpu"))
    workers = {
        "gpu": {"cls": Worker, "options": {"nthreads": 2, "resources": {"GPU": 1}, "name": "gpu"}},
        "cpu": {"cls": Worker, "options": {"nthreads": 2, "name": "cpu"}},
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": ":0", "host": "127.0.0.1"}}
    with SpecCluster(workers=workers, scheduler=scheduler) as sc:
        info = sc.scheduler_info["workers"]
        gpu = next(address for address, w in info.items() if w["name"] == "gpu")
        yield sc.scheduler_address, gpu


def test_with_cuda_each_chunk_asks_for_the_gpu_resource_one_at_a_time(gpu_cluster, s3, dataset, local_store):
    from distributed import get_task_stream

    address, gpu = gpu_cluster
    url = f"{s3}/gpu/features.zarr"
    with (
        ClusterExtraction(address, dataclasses.replace(OPTIONS, device="cuda")) as cx,
        get_task_stream(client=cx.client) as stream,
    ):
        cx.extract(dataset, get_encoder(ENCODER), url)
    chunks = [t for t in stream.data if str(t["key"]).startswith("compute_chunk")]
    assert len(chunks) == N_CHUNKS
    assert {t["worker"] for t in chunks} == {gpu}  # the worker without the resource ran none
    spans = sorted((s["start"], s["stop"]) for t in chunks for s in t["startstops"] if s["action"] == "compute")
    # One at a time: each chunk starts as the one before stops (to the worker clock's few ms), where
    # two running side by side would overlap by most of a chunk's ~1 s.
    assert all(later[0] > earlier[1] - 0.05 for earlier, later in itertools.pairwise(spans)), spans
    assert_same_bytes(local_store, FeatureStore(url), FeatureSetRef(dataset.name, ENCODER))


def _flip_a_stored_chunk(url: str, ref: FeatureSetRef, array: str, chunk: str) -> None:
    fs, root = fsspec.core.url_to_fs(f"{url}/{ref.path}/{array}/c/{chunk}")
    data = bytearray(fs.cat_file(root))
    data[len(data) // 2] ^= 0x40
    fs.pipe_file(root, bytes(data))


def test_a_complete_set_checks_its_weights_and_repairs_over_the_cluster(cluster, s3, dataset, local_store, tmp_path):
    url = f"{s3}/complete/features.zarr"
    ref = FeatureSetRef(dataset.name, ENCODER)
    entry = get_encoder(ENCODER)
    with ClusterExtraction(cluster, OPTIONS) as cx:
        cx.extract(dataset, entry, url)
    own, other = tmp_path / "own.pth", tmp_path / "other.pth"
    torch.save(build_model(entry).state_dict(), own)  # the entry's own random init: the set's weights
    state = build_model(entry).state_dict()
    torch.save({k: v + 1 if v.is_floating_point() else v for k, v in state.items()}, other)
    with ClusterExtraction(cluster, dataclasses.replace(OPTIONS, weights=own)) as cx:
        assert cx.extract(dataset, entry, url).skipped is True
    with (
        ClusterExtraction(cluster, dataclasses.replace(OPTIONS, weights=other)) as cx,
        pytest.raises(CrsbenchError, match=rf"feature set {ref.path} in {url} was extracted with weights \w{{16}}, "),
    ):
        cx.extract(dataset, entry, url)
    before = _runs(cluster, url)
    _flip_a_stored_chunk(url, ref, "d100/clean", "3/0")
    repair = dataclasses.replace(OPTIONS, repair=True, batch_size=4, chunk_rows=32)  # the set's own settings win
    with ClusterExtraction(cluster, repair) as cx:
        attrs = cx.extract(dataset, entry, url)
        again = cx.extract(dataset, entry, url)
    assert attrs.repaired == (3,) and attrs.repaired_depths == ("d100",) and attrs.stored.repairs == {"d100": 1}
    assert Counter(_runs(cluster, url)) - Counter(before) == Counter({(3, "written"): 1})  # chunk 3 alone
    assert again.repaired == () and again.skipped is True
    assert_same_bytes(local_store, FeatureStore(url), ref)
    assert leftover_claims(url, ref) == []


def test_a_repair_of_a_missing_set_fails_as_a_local_repair_does(cluster, s3, dataset):
    url = f"{s3}/never/features.zarr"
    with pytest.raises(CrsbenchError) as local:
        extract(dataset, get_encoder(ENCODER), url, dataclasses.replace(OPTIONS, repair=True))
    with (
        ClusterExtraction(cluster, dataclasses.replace(OPTIONS, repair=True)) as cx,
        pytest.raises(CrsbenchError) as remote,
    ):
        cx.extract(dataset, get_encoder(ENCODER), url)
    assert str(remote.value) == str(local.value) and url in str(local.value)

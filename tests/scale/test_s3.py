"""Feature stores on object storage: extraction, resume after a killed upload, concurrent
readers and the probe grid against `s3://` on a real S3 server (moto, loopback only)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest
import torch
import zarr
from support.scale_support import BUCKET, SECRET, SECRET_KEY_ID, moto_server, s3_environment
from support.store_files import store_files, untimed_files

from crsbench.cli import main
from crsbench.cli.output import console
from crsbench.core import CrsbenchError
from crsbench.features import FeatureSetRef, FeatureStore, extract, get_encoder
from crsbench.probes.grid import GridContext, plan_fits, run_grid
from crsbench.probes.reader import check_feature_set, read_rows
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for

torch.set_num_threads(1)
ENCODER = "tiny-convnext"
CHUNK = 16  # aptos has 99 images: 7 row chunks, test rows (all 16 conditions) in the last two
# Array creation dominates small uploads (each array is a few requests), so the resume and
# concurrency tests use two conditions; the CLI test extracts the full set once.
TWO = ("clean", "jpeg-s2")
VOLATILE = ["fit_seconds", "created_at"]
GRID = dict(probes=("logreg",), fractions=(0.25, 1.0), seeds=(0,), depths=(1.0,))


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    """The moto endpoint and the file it logs every request to."""
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with moto_server(log) as endpoint, s3_environment(endpoint):
        yield endpoint, log


@pytest.fixture(scope="module")
def s3(s3_server):
    return s3_server[0]


@pytest.fixture(scope="module")
def local_store(tmp_path_factory, suite_datasets):
    """The reference: a local-disk extraction of aptos with the conditions in TWO."""
    url = str(tmp_path_factory.mktemp("local") / "features.zarr")
    extract(suite_datasets["aptos2019"], get_encoder(ENCODER), url, chunk_rows=CHUNK, threads=1, conditions=TWO)
    return url


def _s3_objects(prefix: str) -> dict[str, bytes]:
    import s3fs

    fs = s3fs.S3FileSystem()
    fs.invalidate_cache()
    keys = fs.find(f"{BUCKET}/{prefix}")
    return {k.split(f"{prefix}/", 1)[1]: fs.cat_file(k) for k in keys}


CHILD = textwrap.dedent(
    """
    import os, signal, sys, torch, zarr
    torch.set_num_threads(1)
    from crsbench.ingest import ingest
    from crsbench.features import extract, get_encoder
    suite, url, markers_before, writes_after = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    ds = ingest("aptos2019", suite, "aptos2019")
    count = {"markers": 0, "since": 0}
    original = zarr.Array.__setitem__
    def counting(self, key, value):
        original(self, key, value)
        if self.path.endswith("_chunks_done"):
            count["markers"] += 1
            count["since"] = 0
        else:
            count["since"] += 1
        # SIGKILL with row chunk `markers_before` partly uploaded: `writes_after` of its arrays
        # are on the server, the rest and its progress marker are not
        if (count["markers"], count["since"]) == (markers_before, writes_after):
            os.kill(os.getpid(), signal.SIGKILL)
    zarr.Array.__setitem__ = counting
    extract(ds, get_encoder(%r), url, chunk_rows=%d, threads=1, conditions=%r)
"""
    % (ENCODER, CHUNK, TWO)
)


@pytest.mark.slow
def test_killed_upload_resumes_to_the_bytes_of_a_local_run(s3, suite_dir, suite_datasets, local_store):
    prefix = "resume/features.zarr"
    url = f"s3://{BUCKET}/{prefix}"
    ref = FeatureSetRef("aptos2019", ENCODER)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # the AWS_* variables are all it gets
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(suite_dir / "aptos2019"), url, "5", "5"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    store = FeatureStore(url)
    assert not store.is_complete(ref)
    marks = np.asarray(store.root()[f"{ref.path}/_chunks_done"][:])
    assert marks.tolist() == [1, 1, 1, 1, 1, 0, 0]
    uploaded = [k for k in _s3_objects(prefix) if k.endswith("/c/5/0")]
    assert len(uploaded) == 5  # an interrupted upload: 5 of chunk 5's 8 arrays, no marker
    with pytest.raises(CrsbenchError, match="incomplete"):
        check_feature_set(store, ref, suite_datasets["aptos2019"], [1.0], ["clean"])

    calls: list[tuple[int, int]] = []
    attrs = extract(
        suite_datasets["aptos2019"],
        get_encoder(ENCODER),
        store,
        chunk_rows=CHUNK,
        threads=1,
        conditions=TWO,
        progress=lambda _, done, total: calls.append((done, total)),
    )
    assert attrs.stored.complete is True and attrs.skipped is False
    # it resumed from the server's markers: rows 0-79 (no test rows, one item each) were not redone
    assert calls[0] == (80, 99 + 19)
    local, remote = store_files(local_store), untimed_files(_s3_objects(prefix))
    assert sorted(remote) == sorted(local)
    assert [k for k in local if local[k] != remote[k]] == []


WRITER = textwrap.dedent("""
    import sys, torch
    torch.set_num_threads(1)
    from crsbench.ingest import ingest
    from crsbench.features import extract, get_encoder
    ds = ingest("isic2019", sys.argv[1], "isic2019")
    extract(ds, get_encoder("tiny-resnet18"), sys.argv[2], chunk_rows=8, threads=1, conditions=["clean"])
""")


@pytest.mark.slow
def test_readers_of_complete_sets_run_while_another_set_is_uploaded(s3, suite_dir, suite_datasets, local_store):
    import s3fs

    prefix = "concurrent/features.zarr"
    url = f"s3://{BUCKET}/{prefix}"
    s3fs.S3FileSystem().put(local_store, f"{BUCKET}/{prefix}", recursive=True)
    store = FeatureStore(url)
    aptos, ref = suite_datasets["aptos2019"], FeatureSetRef("aptos2019", ENCODER)
    growing = FeatureSetRef("isic2019", "tiny-resnet18")
    rows = aptos.split_rows("test")
    expected = {c: read_rows(FeatureStore(local_store), ref, 0.5, c, rows) for c in TWO}

    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(suite_dir / "isic2019"), url],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    reads, seen_partial, errors = 0, 0, []
    try:
        deadline = time.monotonic() + 120
        while writer.poll() is None and time.monotonic() < deadline:
            try:
                for cond, want in expected.items():
                    np.testing.assert_array_equal(read_rows(store, ref, 0.5, cond, rows), want)
                    reads += 1
                # by path, not by listing: s3fs caches listings for the life of its instance
                if _exists(store, growing) and not store.is_complete(growing):
                    # a reader asking for the half-written set gets the clear refusal, no partial
                    # rows; the writer may finish between the two calls, and then it is complete
                    try:
                        check_feature_set(store, growing, suite_datasets["isic2019"], [1.0], ["clean"])
                    except CrsbenchError as exc:
                        assert "incomplete" in str(exc)
                        seen_partial += 1
                    else:
                        assert store.is_complete(growing)
            except AssertionError:
                raise
            except Exception as exc:  # any read failure is what we are looking for
                errors.append(repr(exc))
            time.sleep(0.05)  # two cores: leave the writer and the server room
    finally:
        if writer.poll() is None:
            writer.kill()
        _, stderr = writer.communicate(timeout=30)
    assert writer.returncode == 0, stderr[-2000:]
    assert errors == []
    assert reads >= 4 and seen_partial >= 1
    assert store.is_complete(growing)
    check_feature_set(store, growing, suite_datasets["isic2019"], [1.0], ["clean"])


def _exists(store: FeatureStore, ref: FeatureSetRef) -> bool:
    try:
        store.attrs(ref)
        return True
    except CrsbenchError:
        return False


def _cli(*argv: str) -> int:
    console.configure(json_mode=True)
    try:
        return main(["--json", *argv])
    finally:
        console.configure()


@pytest.mark.slow
def test_cli_extract_and_probe_on_s3_match_local_and_record_no_secret(
    s3, ingested_db, suite_datasets, tmp_path, capsys, caplog
):
    url = f"s3://{BUCKET}/cli/features.zarr"
    code = _cli(
        "extract",
        "--db",
        str(ingested_db),
        "--encoder",
        ENCODER,
        "--dataset",
        "aptos2019",
        "--store",
        url,
        "--chunk-rows",
        "128",
    )
    extracted = capsys.readouterr()
    assert code == 0, extracted.err
    code = _cli(
        "probe",
        "--db",
        str(ingested_db),
        "--encoder",
        ENCODER,
        "--dataset",
        "aptos2019",
        "--probe",
        "logreg",
        "--depth",
        "1.0",
        "--fraction",
        "0.25",
        "--fraction",
        "1.0",
        "--seed",
        "0",
        "--store",
        url,
    )
    probed = capsys.readouterr()
    assert code == 0, probed.err
    assert json.loads(probed.out)["fitted"] == 2

    with Warehouse.open(ingested_db, read_only=True) as wh:
        catalog = wh.sql("select dataset_id, encoder_id, store_url, complete from feature_sets")
        remote = wh.sql("select * from runs").drop(columns=VOLATILE).sort_values("run_id")
    assert catalog.values.tolist() == [["aptos2019", ENCODER, url, True]]

    # the same grid in-process on the local store gives the same run records
    store = FeatureStore(str(tmp_path / "local.zarr"))
    extract(suite_datasets["aptos2019"], get_encoder(ENCODER), store, chunk_rows=128, threads=1)
    fits = plan_fits(["aptos2019"], [ENCODER], store, **GRID)
    batches: list[pd.DataFrame] = []
    run_grid(
        fits, GridContext({"aptos2019": suite_datasets["aptos2019"]}, store, lambda runs, preds: batches.append(runs))
    )
    local = pd.concat(batches).drop(columns=VOLATILE).sort_values("run_id")
    pd.testing.assert_frame_equal(remote.reset_index(drop=True), local.reset_index(drop=True), check_dtype=False)

    # credentials were only in the environment: nowhere in the warehouse, outputs or logs
    texts = [extracted.out, extracted.err, probed.out, probed.err, caplog.text]
    files = [ingested_db, *sorted(p for p in parts_dir_for(ingested_db).rglob("*") if p.is_file())]
    for secret in (SECRET, SECRET_KEY_ID):
        assert not any(secret in t for t in texts)
        assert not any(secret.encode() in f.read_bytes() for f in files)


def test_store_url_with_embedded_credentials_is_refused(ingested_db, capsys):
    code = _cli(
        "extract",
        "--db",
        str(ingested_db),
        "--encoder",
        ENCODER,
        "--dataset",
        "aptos2019",
        "--store",
        f"s3://{SECRET_KEY_ID}:{SECRET}@{BUCKET}/f.zarr",
    )
    err = capsys.readouterr().err
    assert code == 1 and "embeds credentials" in err
    assert SECRET not in err and SECRET_KEY_ID not in err


def _requests_for(log, prefix: str) -> list[str]:
    """The methods of the requests the server logged for keys under `prefix`, in order."""
    time.sleep(0.3)  # the server writes a request's line after answering it
    return [line.split('"', 1)[1].split()[0] for line in log.read_text(errors="replace").splitlines()
            if f" /{BUCKET}/{prefix}/" in line]  # fmt: skip


def test_a_store_read_is_one_get_per_object(s3_server):
    """s3fs asks an object's size (a HEAD) before reading it whole, so that it could split a large
    object into ranged GETs; a store opens S3 with one GET per read (features.store.S3_STORE_DEFAULTS).
    The control opens with s3fs's own default and pays the HEADs."""
    _, log = s3_server
    reads = {}
    for prefix, options in (("one-get", None), ("s3fs-default", {"max_concurrency": 10})):
        url = f"s3://{BUCKET}/{prefix}/features.zarr"
        values = np.arange(64 * 4, dtype="float32").reshape(64, 4)
        FeatureStore(url, options).root(writable=True).create_array(
            "a", shape=(64, 4), chunks=(16, 4), dtype="float32"
        )[:] = values
        before = len(_requests_for(log, prefix))
        fresh = FeatureStore(url, options)  # opened anew: root and array metadata, then the 4 chunks
        node = fresh.root()["a"]
        assert isinstance(node, zarr.Array) and np.array_equal(node[:], values)
        reads[prefix] = _requests_for(log, prefix)[before:]
    assert reads["one-get"] == ["GET"] * 6, reads["one-get"]
    assert reads["s3fs-default"].count("HEAD") >= 4 and reads["s3fs-default"].count("GET") == 6, reads["s3fs-default"]

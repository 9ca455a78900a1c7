"""Digests known anywhere are checked everywhere, and only parts crsbench wrote are read (issue 40,
points 4 and 5). Each command runs in a subprocess, against a private copy of a small warehouse.

A feature set's digests are recorded three times: the arrays' `chunk_crc32c` attribute, the set's
`_chunk_digests` array and the warehouse's `feature_chunks`. Here they are written by hand (CRC-32C
straight from `google_crc32c`) onto the synthetic store, then rows are swapped through zarr and
the records deleted one after the other. Parts are planted with pyarrow straight into the folder.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import google_crc32c
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zarr
from support.bootstrap_support import build_world, copy_world
from support.fault_support import env, one_line_user_error, raw_runs, synthetic_warehouse
from zarr.codecs import BloscCodec, Crc32cCodec

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for

RUN_CLI = "import sys\nfrom crsbench.cli import main\nsys.exit(main())\n"
SET = "derm/enc"
ARRAY = "d100/clean"
CHUNK0 = f"{SET}/{ARRAY}/c/0/0"
ROWS = 64  # synthetic_warehouse's chunk_rows


def _cli(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", RUN_CLI, *args],
        env={k: v for k, v in env().items() if k != "CRSBENCH_DEBUG"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _crc(block: np.ndarray) -> int:
    return int(google_crc32c.value(np.ascontiguousarray(block).tobytes()))


def _record_digests(db: Path) -> None:
    """Give the synthetic `derm/enc` set its three records, as a checksummed extraction would."""
    from crsbench.features.store import FeatureSetRef
    from crsbench.warehouse.integrity import record_chunk_manifest

    url = str(db) + ".features.zarr"
    group = zarr.open_group(url, mode="a")[SET]
    names = sorted(f"{d}/{c}" for d, sub in group.groups() for c, _ in sub.arrays())
    for name in names:  # rewritten with the crc32c codec after compression, as extraction writes them
        values, old = np.asarray(group[name][:]), group[name]
        again = group.create_array(
            name,
            shape=old.shape,
            chunks=old.chunks,
            dtype=old.dtype,
            fill_value=np.nan,
            compressors=[BloscCodec(cname="zstd"), Crc32cCodec()],
            overwrite=True,
        )
        again[:] = values
    n_chunks = -(-int(group[ARRAY].shape[0]) // ROWS)
    digests = [[_crc(np.asarray(group[n][k * ROWS : (k + 1) * ROWS])) for n in names] for k in range(n_chunks)]
    group.attrs["digest_arrays"] = names
    group.create_array("_chunk_digests", shape=(n_chunks, len(names)), chunks=(1, len(names)), dtype="uint32")[:] = (
        np.asarray(digests, dtype=np.uint32)
    )
    for j, name in enumerate(names):
        group[name].attrs["chunk_crc32c"] = [row[j] for row in digests]
    manifest = {name: [row[j] for row in digests] for j, name in enumerate(names)}
    with Warehouse.open(db) as wh:
        record_chunk_manifest(wh, url, FeatureSetRef("derm", "enc"), manifest)


@pytest.fixture(scope="module")
def checksummed(tmp_path_factory) -> Path:
    db = synthetic_warehouse(tmp_path_factory.mktemp("digests"))
    _record_digests(db)
    return db


@pytest.fixture
def db(checksummed, tmp_path) -> Path:
    shutil.copytree(checksummed.parent, tmp_path / "w")
    return tmp_path / "w" / checksummed.name


def _swap_rows_and_drop_the_attr(db: Path) -> None:
    arr = zarr.open_array(str(db) + ".features.zarr", path=f"{SET}/{ARRAY}", mode="a")
    arr[[0, 1]] = arr[[1, 0]]  # a valid write in chunk 0: the crc32c codec cannot see it
    arr.attrs.put({k: v for k, v in arr.attrs.asdict().items() if k != "chunk_crc32c"})
    assert "chunk_crc32c" not in zarr.open_array(str(db) + ".features.zarr", path=f"{SET}/{ARRAY}").attrs


def _verify(db: Path) -> tuple[int, dict]:
    rc, out, err = _cli("--json", "verify", "--db", str(db))
    assert rc in (0, 1), err
    return rc, json.loads(out)


def _assert_caught(db: Path, records_left: str) -> None:
    rc, doc = _verify(db)
    damage = {(d["object"], d["damage"]) for d in doc["damaged"]}
    assert rc == 1, doc
    assert (CHUNK0, "its values differ from the manifest written at extraction") in damage
    removed = [what for obj, what in damage if obj == f"{SET}/{ARRAY}"]
    assert removed == [f"its manifest attribute chunk_crc32c was removed ({records_left} still records its digests)"]
    status = {(s["dataset"], s["encoder"]): s["status"] for s in doc["feature_sets"]}
    assert status[("derm", "enc")] == "damaged" and status[("cxr", "enc")].startswith("unverifiable")
    before = len(raw_runs(db))
    rc, _, err = _cli(
        "probe", "--probe", "logreg", "--depth", "1.0", "--fraction", "1.0", "-d", "derm", "--db", str(db)
    )
    one_line_user_error(rc, err, f"damaged feature chunk {CHUNK0}", "crsbench extract --repair -e enc -d derm")
    assert len(raw_runs(db)) == before  # no fit ran on the swapped rows


def test_a_removed_manifest_attr_does_not_hide_swapped_rows(db):
    _, doc = _verify(db)
    assert [s["status"] for s in doc["feature_sets"] if s["dataset"] == "derm"] == ["ok"]  # the records agree
    _swap_rows_and_drop_the_attr(db)
    _assert_caught(db, "the store's _chunk_digests array and the warehouse's feature_chunks table")


def test_the_warehouse_record_alone_still_catches_them(db):
    _swap_rows_and_drop_the_attr(db)
    group = zarr.open_group(str(db) + ".features.zarr", mode="a")[SET]
    del group["_chunk_digests"]
    _assert_caught(db, "the warehouse's feature_chunks table")


# -- parts crsbench did not write ---------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """A frozen panel over pending run parts (build_world)."""
    return build_world(tmp_path_factory.mktemp("planted"))


def _views(db: Path) -> tuple[pd.DataFrame, pd.DataFrame, tuple[int, int]]:
    with Warehouse.open(db, read_only=True) as wh:
        runs = wh.sql("select * from runs order by run_id")
        crs = wh.sql("select * from crs_encoder order by all")
        counts = wh.con.execute("select count(*), count(distinct run_id) from runs").fetchone()
    assert counts is not None
    return runs, crs, (int(counts[0]), int(counts[1]))


def _plant(db: Path) -> list[Path]:
    """A copy of a runs part with every AUROC 0.999 (named to sort first), and a part of new run
    ids with its batches part: the attack of issue 40 point 5, without `export`."""
    folder = parts_dir_for(db)
    source = next(p for p in sorted((folder / "runs").glob("part-*.parquet")) if "empty" not in p.name)
    table = pq.read_table(source)
    high = pa.array([0.999] * len(table), type=table.schema.field("auroc").type)
    duplicate = table.set_column(table.schema.get_field_index("auroc"), "auroc", high)
    fresh_ids = pa.array([uuid.uuid4().hex for _ in range(len(table))], type=table.schema.field("run_id").type)
    fresh = duplicate.set_column(table.schema.get_field_index("run_id"), "run_id", fresh_ids)
    batch_source = pq.read_table(folder / "batches" / source.name)
    planted = [
        folder / "runs" / "part-00000000000000000001-forged00.parquet",
        folder / "runs" / "part-99999999999999999999-forged01.parquet",
        folder / "batches" / "part-99999999999999999999-forged01.parquet",
    ]
    pq.write_table(duplicate, planted[0])
    pq.write_table(fresh, planted[1])
    batch = batch_source.set_column(
        batch_source.schema.get_field_index("batch"), "batch", pa.array([planted[1].name] * len(batch_source))
    )
    pq.write_table(batch, planted[2])
    return planted


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_planted_parts_are_never_read_folded_or_deleted(world, tmp_path):
    db = copy_world(world, tmp_path)
    runs, crs, counts = _views(db)
    assert counts[0] == counts[1] and len(crs)
    planted = _plant(db)
    after_runs, after_crs, after_counts = _views(db)
    assert after_counts == counts  # count(*) = count(distinct run_id), as before
    assert after_runs.equals(runs) and after_crs.equals(crs)
    assert (after_runs["auroc"] != 0.999).all()

    zarr.open_group(str(db) + ".features.zarr", mode="w")  # an empty store: verify checks the parts
    rc, out, err = _cli("--json", "verify", "--db", str(db))
    assert out, err
    foreign = {d["object"] for d in json.loads(out)["damaged"] if d["kind"] == "foreign parquet part"}
    assert rc == 1 and foreign == {f"{p.parent.name}/{p.name}" for p in planted}, err

    file_before = _digest(db)
    rc, _, err = _cli("warehouse", "compact", "--db", str(db))
    one_line_user_error(rc, err, "not written by crsbench", planted[0].name, "move them out")
    assert _digest(db) == file_before and all(p.exists() for p in planted)  # refused before the file opened

    with Warehouse.open(db) as wh:  # a read-write open never records them in the ledger
        ledgered = {name for (name,) in wh.con.execute("select part from parts_ledger").fetchall()}
    assert not ledgered & {p.name for p in planted} and all(p.exists() for p in planted)
    again_runs, again_crs, again_counts = _views(db)
    assert again_counts == counts and again_runs.equals(runs) and again_crs.equals(crs)

    for p in planted:  # the way out the refusal gives
        shutil.move(p, tmp_path / p.name)
    rc, _, err = _cli("warehouse", "compact", "--db", str(db))
    assert rc == 0, err
    final_runs, final_crs, _ = _views(db)
    assert final_runs.equals(runs) and final_crs.equals(crs)

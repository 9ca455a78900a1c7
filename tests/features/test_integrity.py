"""Data at rest: checksummed feature chunks, the content manifest, `verify`, `extract --repair`.

Each test damages a private copy of one small extracted store, as disks, copies and sync tools
do, and checks that the damage is named (never silently read) and that a repair restores the
bytes of the undamaged store.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import zarr
from support.synthetic import write_features

from crsbench.cli import main
from crsbench.cli.output import console
from crsbench.core import CrsbenchError
from crsbench.features import FeatureSetRef, FeatureStore, extract, get_encoder
from crsbench.features.integrity import ChunkDamage, block_digest, scan_set
from crsbench.ingest import ingest, make_suite
from crsbench.probes.reader import read_rows
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset
from crsbench.warehouse.parts import data_parts

torch.set_num_threads(1)
ENTRY = dataclasses.replace(get_encoder("tiny-convnext"), input_size=32)
CONDS = ("clean", "jpeg-s2")
REF = FeatureSetRef("aptos", ENTRY.id)
CHUNK0 = "aptos/tiny-convnext/d100/clean/c/0/0"


@pytest.fixture(scope="module")
def aptos(tmp_path_factory):
    out = tmp_path_factory.mktemp("suite")
    return ingest("aptos2019", make_suite(out, scale=0.05, image_size=32)["aptos2019"], "aptos")


@pytest.fixture(scope="module")
def pristine(aptos, tmp_path_factory) -> Path:
    url = tmp_path_factory.mktemp("store") / "f.zarr"
    extract(aptos, ENTRY, str(url), chunk_rows=16, batch_size=24, conditions=CONDS)
    return url


@pytest.fixture
def store(pristine, tmp_path) -> Path:
    copy = tmp_path / "copy.zarr"
    shutil.copytree(pristine, copy)
    return copy


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _read_all(url: Path, aptos, condition="clean") -> np.ndarray:
    rows = aptos.split_rows("test") if condition != "clean" else np.arange(aptos.n_images)
    return read_rows(FeatureStore(str(url)), REF, 1.0, condition, rows)


def _flip(path: Path, byte: int) -> None:
    data = bytearray(path.read_bytes())
    data[byte] ^= 0x01
    path.write_bytes(bytes(data))


def test_the_manifest_matches_an_independent_digest_and_a_pristine_store_scans_clean(store, aptos):
    group = zarr.open_group(str(store), mode="r")[REF.path]
    arr = group["d100/clean"]
    values = np.asarray(arr[16:32])
    assert arr.attrs["chunk_crc32c"][1] == block_digest(values)
    assert any(c.to_dict()["name"] == "crc32c" for c in arr.metadata.codecs)
    scan = scan_set(group, REF)
    assert scan.verifiable and not scan.damage and scan.chunks == 4 * 2 * 4  # depths x conditions x chunks
    expected = np.asarray(arr[:], dtype=np.float64)
    np.testing.assert_array_equal(_read_all(store, aptos), expected)  # checked reads change no value


@pytest.mark.parametrize(
    ("damage", "what"),
    [
        (lambda p: _flip(p, len(p.read_bytes()) // 2), "fails to decode"),
        (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "fails to decode"),
        (lambda p: p.unlink(), "stored chunk is missing"),
    ],
    ids=["bit-flip", "truncated", "deleted"],
)
def test_damaged_chunk_fails_the_read_in_one_line_naming_it(store, aptos, damage, what):
    damage(store / CHUNK0)
    with pytest.raises(ChunkDamage) as info:
        _read_all(store, aptos)
    msg = str(info.value)
    assert "\n" not in msg and what in msg and CHUNK0 in msg
    assert "dataset aptos, encoder tiny-convnext, depth d100, condition clean, chunk 0" in msg
    assert "crsbench extract --repair -e tiny-convnext -d aptos" in msg


def test_rows_swapped_through_the_zarr_api_are_caught(store, aptos):
    arr = zarr.open_array(str(store), path=f"{REF.path}/d050/jpeg-s2", mode="a")
    test = aptos.split_rows("test")
    a, b = int(test[0]), int(test[1])
    assert a // 16 == b // 16  # same chunk: a valid write the codec cannot see
    arr[[a, b]] = arr[[b, a]]
    with pytest.raises(ChunkDamage, match="differ from the manifest"):
        read_rows(FeatureStore(str(store)), REF, 0.5, "jpeg-s2", test)
    scan = scan_set(zarr.open_group(str(store), mode="r")[REF.path], REF)
    assert [(d.name, d.chunk) for d in scan.damage] == [("d050/jpeg-s2", a // 16)]


def test_a_store_written_before_checksums_reads_and_scans_as_unverifiable(aptos, tmp_path):
    url = str(tmp_path / "old.zarr")
    ref = write_features(url, aptos, "enc", 4, depths=(1.0,), chunk_rows=16)
    scan = scan_set(zarr.open_group(url, mode="r")[ref.path], ref)
    assert not scan.verifiable and not scan.damage
    assert read_rows(FeatureStore(url), ref, 1.0, "clean", np.arange(5)).shape == (5, 4)


def test_repair_restores_the_bytes_of_the_undamaged_store(pristine, store, aptos):
    _flip(store / CHUNK0, 10)
    (store / "aptos/tiny-convnext/d025/jpeg-s2/c/2/0").unlink(missing_ok=False)
    arr = zarr.open_array(str(store), path=f"{REF.path}/d075/clean", mode="a")
    arr[40:42] = arr[40:42][::-1]
    attrs = extract(aptos, ENTRY, str(store), repair=True)  # batch size and conditions come from the set
    assert attrs.repaired == (0, 2) and attrs.repaired_depths == ("d025", "d075", "d100")
    before, after = _files(pristine), _files(store)
    group_meta = "aptos/tiny-convnext/zarr.json"
    assert sorted(before) == sorted(after)
    assert [k for k in before if before[k] != after[k]] == [group_meta]  # only the set's attrs differ
    old, new = (json.loads(f[group_meta])["attributes"] for f in (before, after))
    assert new.pop("repairs") == {"d025": 1, "d075": 1, "d100": 1}
    assert {k: v for k, v in new.items() if k != "provenance"} == {k: v for k, v in old.items() if k != "provenance"}
    assert not scan_set(zarr.open_group(str(store), mode="r")[REF.path], REF).damage


def test_repair_with_nothing_damaged_or_other_images_writes_nothing(store, aptos):
    before = {p: p.stat().st_mtime_ns for p in store.rglob("*")}
    attrs = extract(aptos, ENTRY, str(store), repair=True)
    assert attrs.repaired == () and attrs.skipped
    _flip(store / CHUNK0, 10)
    before = {p: p.stat().st_mtime_ns for p in store.rglob("*")}
    changed = dataclasses.replace(aptos, images=aptos.images.assign(sha256="0" * 64))
    with pytest.raises(CrsbenchError, match="ingest --replace"):
        extract(changed, ENTRY, str(store), repair=True)
    assert {p: p.stat().st_mtime_ns for p in store.rglob("*")} == before


# -- the commands end to end: probe, verify, extract --repair ----------------------------------------


@pytest.fixture(scope="module")
def bench_template(aptos, tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("bench") / "b.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, aptos)
    assert (
        main(["extract", "--db", str(db), "-e", ENTRY.id, "-d", "aptos", "--chunk-rows", "16", "--threads", "1"]) == 0
    )
    assert _probe(db) == 0
    return db


def _probe(db: Path) -> int:
    # --no-compact: the run parts stay files, which verify checks against their recorded digests
    args = ["--probe", "logreg", "--depth", "1.0", "--fraction", "1.0", "--seed", "0", "--no-compact"]
    return main(["probe", "--db", str(db), *args])


def _json(capsys, *argv: str) -> tuple[int, dict]:
    capsys.readouterr()
    console.configure(json_mode=True)
    try:
        code = main(["--json", *argv])
    finally:
        console.configure()
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.fixture
def bench(bench_template, tmp_path) -> Path:
    for name in ("b.duckdb", "b.duckdb.parts", "b.duckdb.features.zarr"):
        source = bench_template.with_name(name)
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, tmp_path / name)
    return tmp_path / "b.duckdb"


def test_probe_verify_and_repair_commands(bench, capsys):
    store = bench.with_name("b.duckdb.features.zarr")
    code, doc = _json(capsys, "verify", "--db", str(bench))
    assert (
        code == 0 and doc["damaged"] == [] and doc["feature_sets"][0]["status"] == "ok" and doc["parts"] == 4
    )  # runs, predictions, batches, coefficients
    _flip(store / "aptos/tiny-convnext/d100/clean/c/3/0", 12)
    capsys.readouterr()
    assert main(["probe", "--db", str(bench), "--probe", "knn", "--depth", "1.0", "--fraction", "1.0"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "c/3/0" in err and "extract --repair" in err
    code, doc = _json(capsys, "verify", "--db", str(bench), "-e", ENTRY.id)
    assert code == 1 and [d["object"] for d in doc["damaged"]] == ["aptos/tiny-convnext/d100/clean/c/3/0"]
    assert doc["damaged"][0]["fits"] == 1  # the logreg fit read the set at d100
    code, doc = _json(capsys, "extract", "--db", str(bench), "-e", ENTRY.id, "-d", "aptos", "--repair")
    assert code == 0 and "repaired 1 chunks (3); retired 1 fits" in doc["feature_sets"][0]["status"]
    with Warehouse.open(bench, read_only=True) as wh:
        assert wh.sql("select count(*) n from runs")["n"][0] == 0  # retired, kept in retired_runs
        assert wh.sql("select count(*) n from retired_runs")["n"][0] == 17
    code, doc = _json(capsys, "extract", "--db", str(bench), "-e", ENTRY.id, "-d", "aptos", "--repair")
    assert code == 0 and doc["feature_sets"][0]["status"] == "nothing to repair"
    assert _probe(bench) == 0  # the repaired depth's fits are refit under new ids
    with Warehouse.open(bench, read_only=True) as wh:
        assert wh.sql("select count(distinct fit_id) n from runs")["n"][0] == 1
    assert _json(capsys, "verify", "--db", str(bench))[0] == 0


def test_verify_names_a_damaged_parquet_part_and_a_missing_store(bench, capsys, tmp_path):
    part = data_parts(bench.with_name("b.duckdb.parts") / "predictions")[0]
    _flip(part, 100)
    _flip(bench.with_name("b.duckdb.features.zarr") / "aptos/image_ids/c/0", 3)
    code, doc = _json(capsys, "verify", "--db", str(bench))
    assert code == 1 and [(d["object"], d["kind"]) for d in doc["damaged"]] == [
        ("aptos/image_ids", "row order"),
        (f"predictions/{part.name}", "parquet part"),
    ]
    with Warehouse.open(bench) as wh:  # as a ledger written before digests
        wh.con.execute("update parts_ledger set digest = null")
    for sidecar in bench.with_name("b.duckdb.parts").rglob("*.sha256"):
        sidecar.unlink()
    code, doc = _json(capsys, "verify", "--db", str(bench))
    assert [d["object"] for d in doc["damaged"]] == ["aptos/image_ids"] and doc["parts_unverifiable"] == 4
    capsys.readouterr()
    assert main(["verify", "--db", str(bench), "--store", str(tmp_path / "nowhere.zarr")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nowhere.zarr does not exist" in err

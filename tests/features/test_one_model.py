"""An encoder id means one model (features/one_model.py): every feature set of an id holds one
weights hash. Other weights on another dataset are refused in one line, before any work, naming
both hashes, the dataset holding the other one and the ways out (a new id, or --force naming
every dataset of the id); the CLI cases run in a subprocess and leave the warehouse byte-identical."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import timm
import torch
import zarr
from safetensors.torch import save_file
from support.one_model_support import cli, one_line_user_error, warehouse_digest

from crsbench.core import CrsbenchError
from crsbench.features.extract_options import ExtractOptions
from crsbench.features.loaders import build_model, state_dict_hash
from crsbench.features.lookup import get_encoder
from crsbench.features.one_model import HeldSet, check_one_model
from crsbench.ingest import ingest, make_suite
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset

ENC = "tiny-resnet18"


def _weights(path: Path, seed: int) -> Path:
    """resnet18 weights as timm publishes them (classifier included), as a safetensors file."""
    torch.manual_seed(seed)
    save_file(timm.create_model("resnet18", pretrained=False).state_dict(), str(path))
    return path


def _hash(weights: Path) -> str:
    return state_dict_hash(build_model(get_encoder(ENC), weights))


def _extract(db: Path, *args: str) -> tuple[int, str, str]:
    return cli("--json", "extract", "--db", str(db), "-e", ENC, "--batch-size", "16", "--threads", "1", *args)


def _set_hashes(db: Path) -> dict[str, str]:
    root = zarr.open_group(str(db) + ".features.zarr", mode="r")
    return {ds: str(root[f"{ds}/{ENC}"].attrs["weights_hash"]) for ds in ("aptos", "isic") if f"{ds}/{ENC}" in root}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Two datasets; aptos extracted with weights A. Returns (db, A, B)."""
    root = tmp_path_factory.mktemp("suite")
    paths = make_suite(root, scale=0.05, image_size=32)
    files = tmp_path_factory.mktemp("weights")
    a, b = _weights(files / "A.safetensors", 1), _weights(files / "B.safetensors", 2)
    db = tmp_path_factory.mktemp("wh") / "bench.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, ingest("aptos2019", paths["aptos2019"], "aptos"))
        load_dataset(wh, ingest("isic2019", paths["isic2019"], "isic"))
    rc, _, err = _extract(db, "-d", "aptos", "--weights", str(a))
    assert rc == 0, err
    return db, a, b


@pytest.fixture
def db(made, tmp_path):
    shutil.copytree(made[0].parent, tmp_path / "w")
    return tmp_path / "w" / made[0].name


@pytest.mark.slow
def test_other_weights_on_another_dataset_are_refused_and_nothing_changes(made, db):
    _, a, b = made
    old, new = _hash(a), _hash(b)
    assert _set_hashes(db) == {"aptos": old} and old != new
    before = warehouse_digest(db)
    rc, _, err = _extract(db, "-d", "isic", "--weights", str(b))
    one_line_user_error(rc, err, f"'{ENC}' names one model", "on aptos", old[:16], new[:16], str(b))
    assert "new encoder id" in err and "--force" in err and "-d aptos" in err
    assert warehouse_digest(db) == before  # no new feature set, no catalog row, nothing touched

    # A random-init build is a model too: its deterministic init hash is not A's.
    rc, _, err = _extract(db, "-d", "isic")
    one_line_user_error(rc, err, "on aptos", old[:16], _hash_init()[:16])
    assert warehouse_digest(db) == before


def _hash_init() -> str:
    return state_dict_hash(build_model(get_encoder(ENC)))


@pytest.mark.slow
def test_force_must_name_every_dataset_of_the_id(made, db):
    _, _, b = made
    before = warehouse_digest(db)
    rc, _, err = _extract(db, "-d", "isic", "--weights", str(b), "--force")
    one_line_user_error(rc, err, "on aptos", "-d aptos", "-d all")
    assert warehouse_digest(db) == before


@pytest.mark.slow
def test_the_same_weights_extend_the_id_and_force_across_all_sets_replaces_them(made, db):
    _, a, b = made
    rc, out, err = _extract(db, "-d", "isic", "--weights", str(a))
    assert rc == 0, err
    assert _set_hashes(db) == {"aptos": _hash(a), "isic": _hash(a)}

    rc, out, err = _extract(db, "-d", "all", "--weights", str(b), "--force")
    assert rc == 0, err
    assert [r["status"] for r in json.loads(out)["feature_sets"]] == ["extracted", "extracted"]
    assert _set_hashes(db) == {"aptos": _hash(b), "isic": _hash(b)}
    with Warehouse.open(db, read_only=True) as wh:
        sets = wh.sql(f"select distinct weights_hash from feature_sets where encoder_id = '{ENC}'")
        row = wh.sql(f"select weights_hash from encoders where encoder_id = '{ENC}'")
    assert sets.weights_hash.tolist() == [_hash(b)] and row.weights_hash.tolist() == [_hash(b)]


# -- the rule itself (no extraction) ---------------------------------------------------------------


def _never() -> str:
    raise AssertionError("the weights were hashed although their files are the sets' own")


def test_the_files_the_sets_were_made_with_are_not_rebuilt(tmp_path):
    entry = get_encoder(ENC)
    weights = _weights(tmp_path / "A.safetensors", 1)
    from crsbench.features.weights import fingerprint

    held = [HeldSet("aptos", "a" * 64, "store", fingerprint(weights.resolve()))]
    check_one_model(entry, held, ExtractOptions(weights=weights), ["isic"], "store", _never)


def test_a_set_catalogued_in_another_store_cannot_be_forced_away():
    entry = get_encoder(ENC)
    held = [HeldSet("aptos", "a" * 64, "store"), HeldSet("isic", "a" * 64, "/elsewhere/other.zarr")]
    with pytest.raises(CrsbenchError) as info:
        check_one_model(entry, held, ExtractOptions(force=True), ["aptos", "isic"], "store", lambda: "b" * 64)
    text = str(info.value)
    assert "on isic in store /elsewhere/other.zarr holds weights " + "a" * 16 in text and "b" * 16 in text
    assert "new encoder id" in text and "\n" not in text
    # Forcing every set of this store is enough when no other store holds one.
    check_one_model(entry, held[:1], ExtractOptions(force=True), ["aptos", "isic"], "store", lambda: "b" * 64)
    # Weights that are not here (and may not be fetched) extract nothing new: nothing to refuse.
    check_one_model(entry, held, ExtractOptions(), ["isic"], "store", lambda: None)
